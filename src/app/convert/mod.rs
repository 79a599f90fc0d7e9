//! `yurtctl convert`: context → snapshot → plan → (dry-run: print) → confirm → execute →
//! result (docs/architecture.md#data-flow-of-yurtctl-convert). Execution is the phase table of
//! [`phases`] run by `exec::phases`: lock → node preflight Jobs → label nodes → components →
//! kube-controller-manager → node Jobs (edge, then cloud) → verify, with the journal written
//! as the run goes and the lock released at the end whatever happened.

pub(crate) mod components;
pub mod jobs;
pub(crate) mod phases;

use std::collections::BTreeMap;

use crate::app::common::{
    block_on, confirm, connect_from, fail, print_dry_run, print_structured, refuse, reporter,
    run_under_lock, save_journal, snapshot_to_decide, stopped, wide,
};
use crate::app::error::CommandError;
use crate::cli::{ConvertCmd, DryRun, GlobalArgs, OutputFormat};
use crate::cluster::access;
use crate::cluster::journal::{Journal, JournalStore};
use crate::cluster::{Cluster, ClusterError};
use crate::exec::dry_run::PlanDocument;
use crate::exec::phases::{self as runner, Ended};
use crate::exit::Exit;
use crate::output::{ConvertResult, NodeOutcome, NodeResult, Reporter};
use crate::plan::{self, NodeAction, Plan, PlanError, Role};
use crate::render::Profile;

pub use jobs::{BOOTSTRAP_KEY, BOOTSTRAP_SECRET, HubJob, JOIN_TOKEN_KEY, kcm_job, node_job};
use phases::ConvertRun;

/// `--pull-images`: what each node's preflight pulls: the images the conversion runs there,
/// optional components' only when enabled; not the servant's, which the Job itself runs.
fn preflight_pulls(
    opts: &plan::ConvertOptions,
    profile: &Profile,
) -> Result<Vec<String>, crate::render::RenderError> {
    if !opts.pull_images {
        return Ok(Vec::new());
    }
    let settings = plan::ConvertSettings::resolve(opts, profile);
    let images = crate::render::pulled_images(profile, &settings.images)?;
    Ok(crate::render::node_pulls(&images, &opts.features))
}

/// Runs `yurtctl convert`; prints progress on stderr and the result on stdout.
pub fn run(g: &GlobalArgs, cmd: &ConvertCmd) -> Exit {
    if let Err(m) = cmd.validate() {
        return CommandError::Usage(m).report();
    }
    let reporter = reporter(g);
    block_on(convert(g, cmd, reporter.as_ref()))
}

async fn convert(g: &GlobalArgs, cmd: &ConvertCmd, rep: &dyn Reporter) -> Exit {
    let opts = cmd.options();
    let profile = match Profile::load(&opts.profile) {
        Ok(p) => p,
        Err(e) => return CommandError::from(e).report(),
    };
    if let Err(e) = plan::check_options(&opts, &profile) {
        return CommandError::from(e).report();
    }
    let pulls = match preflight_pulls(&opts, &profile) {
        Ok(p) => p,
        Err(e) => return CommandError::from(e).report(),
    };
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let wanted = !g.dry_run.enabled() && !opts.skip_phases.contains(plan::LOCK);
    let force = cmd.run.force_unlock;
    let planner =
        |s: &crate::cluster::snapshot::ClusterSnapshot| plan::plan_convert(s, &opts, &profile);
    let decide = async |lost| decide_and_run(g, &cluster, &opts, &profile, &pulls, lost, rep).await;
    run_under_lock(&cluster, wanted, force, rep, "convert", planner, decide).await
}

/// Everything convert decides and does, under the run lock when it runs for real.
async fn decide_and_run(
    g: &GlobalArgs,
    cluster: &Cluster,
    opts: &plan::ConvertOptions,
    profile: &Profile,
    pulls: &[String],
    lock_lost: Option<tokio::sync::watch::Receiver<Option<ClusterError>>>,
    rep: &dyn Reporter,
) -> Exit {
    let (plan, journal) = {
        let mut snap = match snapshot_to_decide(g, cluster).await {
            Ok(s) => s,
            Err(exit) => return exit,
        };
        if !opts.image_pull_secrets.is_empty() {
            match crate::cluster::bootstrap::secret_types(
                cluster,
                crate::cluster::SYSTEM_NAMESPACE,
                &opts.image_pull_secrets,
            )
            .await
            {
                Ok(found) => snap.pull_secrets = found,
                Err(e) => return fail(&e),
            }
        }
        match plan::plan_convert(&snap, opts, profile) {
            Ok(p) => (p, snap.journal),
            Err(e) => return refuse(&e),
        }
        // the rest of the snapshot (every node's labels and annotations) is not kept for the run
    };
    let mut run = ConvertRun {
        cluster,
        plan: &plan,
        profile,
        opts,
        rep,
        journal: journal_for(journal, &plan, opts),
        store: JournalStore::new(cluster),
        lock_lost,
        began: false,
        results: phases::planned_results(&plan),
        pulls,
    };

    if g.dry_run.enabled() {
        let structured = matches!(g.output, Some(OutputFormat::Json | OutputFormat::Yaml));
        let mut doc = PlanDocument::of(&plan, None);
        if structured && plan.runs(plan::COMPONENTS) && !plan.nothing_to_do() {
            match components::dry_run_objects(cluster, &plan, profile, opts).await {
                Ok(objects) => doc.objects = Some(objects),
                Err(e) => return fail(&e),
            }
        }
        let mut writes;
        if g.dry_run == DryRun::Server && !plan.nothing_to_do() {
            writes = match runner::dry_run(&phases::table(), &run).await {
                Ok(w) => w,
                Err(e) => return fail(&e),
            };
            if plan.runs(plan::LOCK) {
                writes.push(crate::exec::lock::release_write(cluster).await);
            }
            doc.server_dry_run = Some(&writes);
        }
        let refused_in = format!("[{}] ", plan::PREFLIGHT);
        return print_dry_run(g, &doc, &plan::render_text(&plan), &refused_in);
    }

    if plan.nothing_to_do() {
        let mut result = ConvertResult::new(&plan.profile);
        result.nodes = run.results.into_values().collect();
        let not_ready = result
            .nodes
            .iter()
            .filter(|n| n.result == NodeOutcome::Skipped)
            .count();
        let exit = if not_ready > 0 {
            result.message = format!(
                "{not_ready} node(s) not Ready were skipped; the others are already converted"
            );
            Exit::Partial
        } else {
            result.message = "already converted: nothing to do".into();
            Exit::Ok
        };
        return finish(g, &plan, result, exit);
    }

    if plan.runs(plan::PREFLIGHT) {
        match access::denied(cluster, &plan::convert_access(profile, opts)).await {
            Ok(f) if f.is_empty() => {}
            Ok(f) => {
                let f = f
                    .into_iter()
                    .map(|m| plan::Finding::new(plan::Check::Permissions, m))
                    .collect();
                return refuse(&PlanError::Preflight(f));
            }
            Err(e) => return fail(&e),
        }
    }

    // the full plan is for --dry-run and -o wide; a summary keeps 10,000 nodes readable
    if wide(g) {
        eprint!("{}", plan::render_text(&plan));
    } else {
        eprint!("{}", plan::render_summary(&plan));
    }
    if let Err(exit) = confirm(g, "Convert this cluster?").await {
        return exit;
    }

    let ended = runner::run(&phases::table(), &mut run).await;
    let mut result = ConvertResult::new(&plan.profile);
    let exit = match stopped(&ended, "convert") {
        None => {
            result.nodes = std::mem::take(&mut run.results).into_values().collect();
            outcome_exit(&mut result)
        }
        Some((message, exit)) => {
            // a halted run says what became of each node
            if let Ended::Stopped {
                stop: runner::Stop::Halt { .. },
                ..
            } = ended
            {
                result.nodes = std::mem::take(&mut run.results).into_values().collect();
            }
            result.message = message;
            exit
        }
    };
    // a run that changed nothing writes no journal
    save_journal(&run.store, &mut run.journal, run.began).await;
    finish(g, &plan, result, exit)
}

/// The journal this run continues (an earlier run's, if any), with this run's options.
fn journal_for(journal: Option<Journal>, plan: &Plan, opts: &plan::ConvertOptions) -> Journal {
    let mut journal = journal.unwrap_or_else(|| Journal::new("convert", &plan.profile));
    journal.command = "convert".into();
    journal.profile = plan.profile.clone();
    journal.options = opts.journal_record(&plan.settings);
    journal
}

fn skipped_result(name: String, role: Role, action: NodeAction) -> NodeResult {
    let (result, message) = match action {
        NodeAction::AlreadyConverted => (NodeOutcome::AlreadyConverted, "already converted"),
        NodeAction::SkipNotReady => (
            NodeOutcome::Skipped,
            "NotReady: skipped; re-run convert once it is Ready",
        ),
        NodeAction::Convert => (
            NodeOutcome::PhaseSkipped,
            "not converted: its phase is in --skip-phases",
        ),
    };
    NodeResult {
        name,
        role: role.as_str().into(),
        result,
        message: message.into(),
        logs: None,
        pool: None,
        yurthub_unavailable_ms: None,
    }
}

fn finish(g: &GlobalArgs, plan: &Plan, mut result: ConvertResult, exit: Exit) -> Exit {
    let pools: BTreeMap<&str, &str> = plan
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), n.pool.as_deref()?)))
        .collect();
    for n in &mut result.nodes {
        n.pool = pools.get(n.name.as_str()).map(|p| p.to_string());
    }
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    for l in crate::output::summary_lines(&result, wide(g)) {
        eprintln!("{l}");
    }
    print_structured(g, &result);
    exit
}

/// Every node's result when the run stopped in `phase` before converting any: `failed` as
/// they are, the other nodes to convert not started, the rest as planned.
fn not_started(plan: &Plan, failed: Vec<NodeResult>, phase: &str) -> BTreeMap<String, NodeResult> {
    let mut results: BTreeMap<String, NodeResult> = plan
        .nodes
        .iter()
        .map(|n| {
            let r = if n.action == NodeAction::Convert {
                NodeResult {
                    name: n.name.clone(),
                    role: n.role.as_str().into(),
                    result: NodeOutcome::PhaseSkipped,
                    message: format!("not converted: phase {phase} failed"),
                    logs: None,
                    pool: None,
                    yurthub_unavailable_ms: None,
                }
            } else {
                skipped_result(n.name.clone(), n.role, n.action)
            };
            (n.name.clone(), r)
        })
        .collect();
    for f in failed {
        results.insert(f.name.clone(), f);
    }
    results
}

/// The exit code and message from the per-node results.
fn outcome_exit(result: &mut ConvertResult) -> Exit {
    let converted = result
        .nodes
        .iter()
        .filter(|n| n.result == NodeOutcome::Converted)
        .count();
    let f = crate::output::node_failures(&result.nodes);
    let exit = crate::app::error::nodes_exit(&f);
    result.message = format!("converted {converted} node(s){}", f.tail);
    if exit != Exit::Ok {
        result
            .message
            .push_str("; re-run convert to finish the rest");
    }
    exit
}
