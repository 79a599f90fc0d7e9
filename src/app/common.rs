//! What every cluster-facing command does the same way: the async runtime, the connection
//! (kubectl's kubeconfig precedence from the global flags), the confirmation gate and the
//! printing of `-o json|yaml` results.

use std::io::IsTerminal;

use serde::Serialize;

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::snapshot::ClusterSnapshot;
use crate::cluster::{ClientOptions, Cluster, ClusterError, connect};
use crate::exit::Exit;
use crate::output::Reporter;
use crate::output::terminal::{Display, Surroundings, resolve};
use crate::plan::PlanError;

use super::error::CommandError;

/// Runs `f` to completion on a small multi-threaded runtime.
pub fn block_on<F: std::future::Future<Output = Exit>>(f: F) -> Exit {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(f),
        Err(e) => CommandError::Local(format!("cannot start the async runtime: {e}")).report(),
    }
}

/// The client options the global flags ask for.
pub fn client_options(g: &GlobalArgs) -> ClientOptions {
    ClientOptions {
        kubeconfig: g.kubeconfig.clone(),
        context: g.context.clone(),
        qps: g.qps,
        burst: g.burst,
        ..Default::default()
    }
}

/// Connects as the global flags say; on failure prints the error and returns its exit code.
pub async fn connect_from(g: &GlobalArgs) -> Result<Cluster, Exit> {
    connect(&client_options(g)).await.map_err(|e| fail(&e))
}

/// Reads the snapshot every planner starts from; on failure prints the error and returns its
/// exit code.
pub async fn snapshot(cluster: &Cluster) -> Result<ClusterSnapshot, Exit> {
    let options = crate::cluster::snapshot::SnapshotOptions::default();
    crate::cluster::snapshot::snapshot(cluster, &options)
        .await
        .map_err(|e| fail(&e))
}

/// Connects as the global flags say and reads the snapshot (read-only commands).
pub async fn connect_and_snapshot(g: &GlobalArgs) -> Result<(Cluster, ClusterSnapshot), Exit> {
    let cluster = connect_from(g).await?;
    let snap = snapshot(&cluster).await?;
    Ok((cluster, snap))
}

/// Prints why the planner refused and returns the exit code (2 for usage, 3 for preflight).
pub fn refuse(e: &PlanError) -> Exit {
    CommandError::Plan(e.clone()).report()
}

/// The start of convert and revert when they run for real (`wanted`): input the cluster shows
/// wrong (an unknown node, an unsupported version) is refused by `plan` from a read-only look,
/// with no write, not even the lock's; then the run lock is taken, and the caller decides again
/// under it. Not `wanted` (a dry run, `--skip-phases lock`): no look, no lock.
async fn look_then_lock<P>(
    cluster: &Cluster,
    wanted: bool,
    force_unlock: bool,
    rep: &dyn Reporter,
    command: &str,
    plan: impl FnOnce(&ClusterSnapshot) -> Result<P, PlanError>,
) -> Result<Option<crate::exec::lock::Held>, Exit> {
    if wanted {
        let look = snapshot(cluster).await?;
        // with --force-unlock the holder is declared dead: what it left is the state
        if let Err(e) = plan(&look) {
            return Err(if force_unlock {
                refuse(&e)
            } else {
                refuse_unless_running(&look, &e)
            });
        }
    }
    crate::exec::lock::take_for_run(cluster, wanted, force_unlock, rep, command)
        .await
        .map_err(|e| CommandError::at(format!("[{}] ", crate::plan::LOCK), e).report())
}

/// A convert or revert from its read-only look to the end: [`look_then_lock`], then `decide`
/// under the lock (told when it is lost) in the lock's section (`exec::lock::run_section`:
/// a stop before its phase runner starts drops it, the lock is released whatever happened).
#[allow(clippy::too_many_arguments)]
pub async fn run_under_lock<P>(
    cluster: &Cluster,
    wanted: bool,
    force_unlock: bool,
    rep: &dyn Reporter,
    command: &str,
    plan: impl FnOnce(&ClusterSnapshot) -> Result<P, PlanError>,
    decide: impl AsyncFnOnce(Option<tokio::sync::watch::Receiver<Option<ClusterError>>>) -> Exit,
) -> Exit {
    let lock = match look_then_lock(cluster, wanted, force_unlock, rep, command, plan).await {
        Ok(l) => l,
        Err(exit) => return exit,
    };
    let lock_lost = lock.as_ref().map(crate::exec::lock::Held::lost);
    let section = crate::exec::lock::run_section(lock, rep, decide(lock_lost)).await;
    section_exit(section, command)
}

/// The exit of a command's section under its lock. A stop before the run changed anything
/// says so; one that came while the run was ending (saving its journal, settling) still makes
/// it an interrupted run, once that end is done and the lock released.
pub fn section_exit(section: crate::exec::lock::Section, command: &str) -> Exit {
    use crate::exec::lock::Section;
    match section {
        Section::StoppedBeforeChanges => {
            CommandError::Interrupted("\ninterrupted; nothing was changed".into()).report()
        }
        // the runner said so when it stopped
        Section::Ran {
            exit: exit @ Exit::Interrupted,
            ..
        }
        | Section::Ran {
            exit,
            stopped: false,
        } => exit,
        Section::Ran { stopped: true, .. } => CommandError::Interrupted(format!(
            "interrupted; the run's progress is saved and its lock released: re-run {command} to resume"
        ))
        .report(),
    }
}

/// A refusal from the read-only look a locked run takes before its lock: while another run
/// holds the lock, the state read may be half-way through it, so that run is named instead
/// (exit 6); otherwise the refusal stands and nothing was written, not even the lock.
pub fn refuse_unless_running(snap: &ClusterSnapshot, e: &PlanError) -> Exit {
    match snap.lock.as_ref().filter(|h| h.is_live()) {
        Some(h) => {
            let held = h.held_error(crate::cluster::lock::LockOptions::default().lease());
            CommandError::at(format!("[{}] ", crate::plan::LOCK), held).report()
        }
        None => refuse(e),
    }
}

/// The snapshot convert and revert decide on; a dry run (which holds no lock) warns when
/// another run holds it: the state it read may be half-way through that run.
pub async fn snapshot_to_decide(
    g: &GlobalArgs,
    cluster: &Cluster,
) -> Result<ClusterSnapshot, Exit> {
    let snap = snapshot(cluster).await?;
    if g.dry_run.enabled()
        && let Some(h) = &snap.lock
    {
        eprintln!(
            "warning: {}",
            crate::output::status::RunInProgress::of(h).line()
        );
    }
    Ok(snap)
}

/// Prints a cluster error and maps it to its exit code.
pub fn fail(e: &ClusterError) -> Exit {
    CommandError::Cluster(e.clone()).report()
}

/// The progress reporter every command uses: bars on a terminal, plain lines in CI and pipes,
/// nothing with `--progress=none` or `-q` (the table is at `output::terminal::resolve`).
pub fn reporter(g: &GlobalArgs) -> Box<dyn Reporter> {
    match resolve(g.progress, g.quiet, Surroundings::of_process()) {
        Display::Bars => Box::new(crate::output::TtyReporter::stderr(g.verbose > 0)),
        Display::Lines => Box::new(crate::output::PlainReporter::stderr(count_period())),
        Display::Silent => Box::new(crate::output::SilentReporter),
    }
}

/// How often plain progress prints its count lines: `YURTCTL_PROGRESS_PERIOD` (a duration such
/// as `30s`), else every 10 s. A value that is not a duration is named in a warning and the
/// default kept: progress is no reason to stop a run.
pub fn count_period() -> std::time::Duration {
    let default = crate::output::progress::COUNT_PERIOD;
    match std::env::var("YURTCTL_PROGRESS_PERIOD") {
        Ok(v) if !v.is_empty() => crate::cli::parse_duration(&v).unwrap_or_else(|e| {
            eprintln!("warning: YURTCTL_PROGRESS_PERIOD={v}: {e}; counting every {default:?}");
            default
        }),
        _ => default,
    }
}

/// The confirmation gate of mutating commands: `-y` passes; without a terminal the command
/// refuses (it must never hang on a prompt); otherwise the user is asked. A stop while the
/// prompt waits (Ctrl-C before the prompt reads its key, SIGTERM) ends the wait: the prompt's
/// read cannot be woken, so it is left on a thread of its own.
pub async fn confirm(g: &GlobalArgs, prompt: &str) -> Result<(), Exit> {
    if g.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(CommandError::NoConfirmation(
            "refusing to change the cluster without confirmation: no terminal to ask on; \
             pass -y/--yes"
                .into(),
        )
        .report());
    }
    let interrupted = || {
        crate::output::terminal::give_back();
        Err(CommandError::Interrupted("\ninterrupted; nothing changed".into()).report())
    };
    let prompting = crate::output::terminal::prompting();
    let (tx, answer) = tokio::sync::oneshot::channel();
    let prompt = prompt.to_owned();
    std::thread::spawn(move || {
        let answer = dialoguer::Confirm::new()
            .with_prompt(prompt)
            .default(false)
            .interact();
        tx.send(answer)
    });
    let answer = tokio::select! {
        answer = answer => answer,
        () = crate::exec::stop::asked() => return interrupted(),
    };
    prompting.answered();
    match answer {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err(CommandError::Declined("declined; nothing changed".into()).report()),
        // Ctrl-C read as a key: dialoguer returns without showing the cursor again
        Ok(Err(dialoguer::Error::IO(e))) if e.kind() == std::io::ErrorKind::Interrupted => {
            interrupted()
        }
        Ok(Err(e)) => {
            crate::output::terminal::give_back();
            Err(CommandError::NoConfirmation(format!(
                "cannot ask for confirmation ({e}); nothing changed; pass -y/--yes"
            ))
            .report())
        }
        Err(_) => {
            crate::output::terminal::give_back();
            Err(CommandError::NoConfirmation(
                "the prompt ended without an answer; nothing changed; pass -y/--yes".into(),
            )
            .report())
        }
    }
}

/// `-o wide`: the full plan before the prompt and the per-node table at the end, where other
/// runs print summaries (at 10,000 nodes the full forms are tens of thousands of lines).
pub fn wide(g: &GlobalArgs) -> bool {
    g.output == Some(OutputFormat::Wide)
}

/// Prints a result object on stdout when `-o json|yaml` asks for one; returns whether it did.
pub fn print_structured<T: Serialize>(g: &GlobalArgs, v: &T) -> bool {
    match g.output {
        Some(OutputFormat::Json) => {
            crate::output::print_json(v);
            true
        }
        Some(OutputFormat::Yaml) => {
            print!("{}", serde_saphyr::to_string(v).unwrap_or_default());
            true
        }
        _ => false,
    }
}

/// Prints a dry run's plan: the document with `-o json|yaml`, else `text` and, under
/// `=server`, the count of accepted writes; each refused write is an error line (exit 3),
/// `refusal_prefix` naming where it would have failed.
pub fn print_dry_run<P: Serialize>(
    g: &GlobalArgs,
    doc: &crate::exec::dry_run::PlanDocument<'_, P>,
    text: &str,
    refusal_prefix: &str,
) -> Exit {
    if !print_structured(g, doc) {
        print!("{text}");
        if let Some(writes) = doc.server_dry_run {
            println!("{}", crate::exec::dry_run::summary_line(writes));
        }
    }
    let mut exit = Exit::Ok;
    for w in doc
        .server_dry_run
        .unwrap_or_default()
        .iter()
        .filter(|w| w.refused())
    {
        let refusal = format!(
            "{refusal_prefix}the API server would refuse {}",
            w.describe()
        );
        exit = CommandError::Refused(refusal).report();
    }
    exit
}

/// The message and exit code of a run that did not complete, its error line printed (an
/// interruption is not an error); `None` when it completed.
pub fn stopped(ended: &crate::exec::phases::Ended, command: &str) -> Option<(String, Exit)> {
    let e = CommandError::of_run(ended, command)?;
    let exit = match e {
        // the runner said so when it stopped
        CommandError::Interrupted(_) => e.exit(),
        _ => e.report(),
    };
    Some((e.to_string(), exit))
}

/// The end of every journaled run, whatever happened (before the lock is given back): the
/// journal saved when `save`; a failure is a warning.
pub async fn save_journal(
    store: &crate::cluster::journal::JournalStore,
    journal: &mut crate::cluster::journal::Journal,
    save: bool,
) {
    if save && let Err(e) = store.save(journal).await {
        eprintln!("warning: cannot save the journal kube-system/yurtctl-state: {e}");
    }
}
