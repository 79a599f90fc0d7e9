//! `yurtctl revert`: context → snapshot → plan → (dry-run: print) → confirm → execute →
//! result. Execution is the phase table of [`phases`] run by `exec::phases`, mirroring
//! convert: lock → delete leftover convert Jobs → node Jobs (cloud, then edge) → kcm → delete
//! the components convert created → remove yurtctl's labels → verify; the journal records
//! progress after every phase (an interrupted revert resumes), and a revert of all nodes ends
//! by deleting the journal and the lock.

pub(crate) mod components;
mod phases;

use crate::app::common::{
    block_on, confirm, connect_from, fail, print_dry_run, print_structured, refuse, reporter,
    run_under_lock, save_journal, snapshot_to_decide, stopped,
};
use crate::app::error::CommandError;
use crate::cli::{DryRun, GlobalArgs, RevertCmd};
use crate::cluster::access::{self, Access};
use crate::cluster::apply::{Applier, ApplyOptions};
use crate::cluster::journal::{Journal, JournalStore};
use crate::cluster::snapshot::ClusterSnapshot;
use crate::cluster::{Cluster, ClusterError};
use crate::exec::dry_run::{self, PlanDocument};
use crate::exec::phases as runner;
use crate::exit::Exit;
use crate::output::{NodeOutcome, Reporter, RevertResult, result_lines};
use crate::plan::revert::{RevertOptions, RevertPlan, plan_revert, render_summary, render_text};
use crate::plan::{self, PlanError};
use crate::render::Profile;
use phases::RevertRun;
use std::rc::Rc;

/// Runs `yurtctl revert`; prints progress on stderr and the result on stdout.
pub fn run(g: &GlobalArgs, cmd: &RevertCmd) -> Exit {
    let reporter = reporter(g);
    block_on(revert(g, cmd, reporter.as_ref()))
}

async fn revert(g: &GlobalArgs, cmd: &RevertCmd, rep: &dyn Reporter) -> Exit {
    let opts = cmd.options();
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let wanted = !g.dry_run.enabled() && !opts.skip_phases.contains(plan::LOCK);
    let force = cmd.run.force_unlock;
    let profiles = Profiles::default();
    let planner =
        |s: &crate::cluster::snapshot::ClusterSnapshot| profile_and_plan(s, &opts, &profiles);
    let decide = async |lost| decide_and_run(g, &cluster, &opts, &profiles, lost, rep).await;
    run_under_lock(&cluster, wanted, force, rep, "revert", planner, decide).await
}

/// Everything revert decides and does, under the run lock when it runs for real.
async fn decide_and_run(
    g: &GlobalArgs,
    cluster: &Cluster,
    opts: &RevertOptions,
    profiles: &Profiles,
    lock_lost: Option<tokio::sync::watch::Receiver<Option<ClusterError>>>,
    rep: &dyn Reporter,
) -> Exit {
    let (profile, plan, planned_journal) = {
        let snap = match snapshot_to_decide(g, cluster).await {
            Ok(s) => s,
            Err(exit) => return exit,
        };
        match profile_and_plan(&snap, opts, profiles) {
            Ok((profile, plan)) => (profile, plan, snap.journal),
            Err(e) => return refuse(&e),
        }
        // the rest of the snapshot (every node's labels and annotations) is not kept for the run
    };
    let mut journal = planned_journal
        .clone()
        .unwrap_or_else(|| Journal::new("revert", &plan.profile));
    journal.command = "revert".into();
    let mut run = RevertRun {
        cluster,
        plan: &plan,
        profile: &profile,
        opts,
        servant_image: servant_image(planned_journal.as_ref(), &profile),
        pull_secrets: planned_journal
            .as_ref()
            .and_then(|j| plan::ConvertOptions::from_journal(&j.options))
            .map(|o| o.image_pull_secrets)
            .unwrap_or_default(),
        rep,
        journal,
        planned_journal,
        store: JournalStore::new(cluster),
        lock_lost,
        began: false,
        results: phases::planned_results(&plan),
        result: RevertResult::new(&plan.profile),
    };

    if g.dry_run.enabled() {
        let mut doc = PlanDocument::of(&plan, Some("revert"));
        let writes;
        if g.dry_run == DryRun::Server && !plan.nothing_to_do() {
            writes = match server_dry_run(&run).await {
                Ok(w) => w,
                Err(e) => return fail(&e),
            };
            doc.server_dry_run = Some(&writes);
        }
        let refused_in = format!("[{}] ", plan::PREFLIGHT);
        return print_dry_run(g, &doc, &render_text(&plan), &refused_in);
    }

    if plan.nothing_to_do() {
        let mut result = RevertResult::new(&plan.profile);
        result.complete = plan.complete && run.planned_journal.is_none();
        result.message = if run.planned_journal.is_some() {
            "nothing to revert on the selected nodes".into()
        } else {
            "nothing to revert: no journal and nothing of yurtctl's found".into()
        };
        return finish(g, result, Exit::Ok);
    }

    if plan.runs(plan::PREFLIGHT) {
        match access(cluster, &plan).await {
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
    if crate::app::common::wide(g) {
        eprint!("{}", render_text(&plan));
    } else {
        eprint!("{}", render_summary(&plan));
    }
    if let Err(exit) = confirm(g, "Revert this cluster?").await {
        return exit;
    }
    let ended = runner::run(&phases::table(), &mut run).await;
    let mut result = std::mem::replace(&mut run.result, RevertResult::new(&plan.profile));
    let mut exit = match stopped(&ended, "revert") {
        None => {
            result.nodes = std::mem::take(&mut run.results).into_values().collect();
            outcome_exit(&mut result)
        }
        Some((message, exit)) => {
            result.message = message;
            exit
        }
    };
    let finished = exit == Exit::Ok && plan.complete && plan.runs(plan::COMPONENTS);
    if finished {
        match run.store.delete().await {
            Ok(_) => result.complete = true,
            Err(e) => {
                let e =
                    CommandError::at(format!("[{}] cannot delete the journal: ", plan::VERIFY), e);
                result.message = e.to_string();
                exit = e.report();
            }
        }
    }
    let save =
        !finished && run.began && (run.planned_journal.is_some() || !run.journal.nodes.is_empty());
    save_journal(&run.store, &mut run.journal, save).await;
    finish(g, result, exit)
}

/// The profiles a run loaded: the look before the lock and the decision under it load the
/// journal's profile once (again only if another run changed the journal in between).
#[derive(Default)]
struct Profiles(std::cell::RefCell<Option<Rc<Profile>>>);

impl Profiles {
    fn load(&self, name: &str) -> Result<Rc<Profile>, crate::render::RenderError> {
        if let Some(p) = self.0.borrow().as_ref().filter(|p| p.name == name) {
            return Ok(p.clone());
        }
        let p = Rc::new(Profile::load(name)?);
        *self.0.borrow_mut() = Some(p.clone());
        Ok(p)
    }
}

/// The profile the journal names (the default without one) and the plan made with it.
fn profile_and_plan(
    snap: &ClusterSnapshot,
    opts: &RevertOptions,
    profiles: &Profiles,
) -> Result<(Rc<Profile>, RevertPlan), PlanError> {
    let name = snap
        .journal
        .as_ref()
        .map_or(Profile::DEFAULT, |j| j.profile.as_str());
    let profile = profiles.load(name).map_err(|e| {
        PlanError::Preflight(vec![plan::Finding::new(
            plan::Check::JournalProfile,
            format!("the journal names profile {name}: {e}"),
        )])
    })?;
    let plan = plan_revert(snap, opts, &profile)?;
    Ok((profile, plan))
}

/// `--dry-run=server`: every write this revert would make, in run order, sent with
/// `dryRun=All`, as if every node Job succeeded (so the components, the labels, the journal
/// and the lock go as in a complete run).
async fn server_dry_run(run: &RevertRun<'_>) -> Result<Vec<dry_run::Write>, ClusterError> {
    let mut writes = runner::dry_run(&phases::table(), run).await?;
    // the end of a complete revert: the journal and the lock go
    if run.plan.complete && run.plan.runs(plan::COMPONENTS) && run.planned_journal.is_some() {
        for (what, r) in run.store.dry_run_delete().await? {
            writes.push(dry_run::deleted("delete", what, r, "already gone"));
        }
    }
    if run.plan.runs(plan::LOCK) {
        writes.push(crate::exec::lock::release_write(run.cluster).await);
    }
    Ok(writes)
}

/// Preflight permissions: what revert's phases need plus get and delete of every kind of object
/// the plan deletes (patch for the ones it keeps), resources as the server names them.
async fn access(cluster: &Cluster, plan: &RevertPlan) -> Result<Vec<String>, ClusterError> {
    use std::collections::BTreeSet;
    let applier = Applier::new(cluster.clone(), ApplyOptions::default());
    let mut wanted: BTreeSet<(&'static str, String, String, Option<String>)> = BTreeSet::new();
    let kinds = plan
        .objects
        .iter()
        .map(|r| (r, ["get", "delete"].as_slice()))
        .chain(
            plan.adopted_objects
                .iter()
                .map(|r| (r, ["get", "patch"].as_slice())),
        );
    for (r, verbs) in kinds {
        let gvk = crate::cluster::apply::gvk_of(&components::dynamic(r)?)?;
        let (ar, _) = match applier.resource(&gvk).await {
            Ok(found) => found,
            // its CRD is gone: nothing of that kind is left to delete
            Err(ClusterError::UnknownKind { .. }) => continue,
            Err(e) => return Err(e),
        };
        for v in verbs {
            wanted.insert((v, ar.group.clone(), ar.plural.clone(), r.namespace.clone()));
        }
    }
    let mut table: Vec<Access<'_>> = plan::phases::needs::<plan::revert::RevertPhase>();
    table.extend(
        wanted
            .iter()
            .map(|(v, g, p, ns)| (*v, g.as_str(), p.as_str(), ns.as_deref())),
    );
    access::denied(cluster, &table).await
}

fn finish(g: &GlobalArgs, mut result: RevertResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    for l in result_lines(&result.nodes, &result.message, crate::app::common::wide(g)) {
        eprintln!("{l}");
    }
    print_structured(g, &result);
    exit
}

fn outcome_exit(result: &mut RevertResult) -> Exit {
    let reverted = result
        .nodes
        .iter()
        .filter(|n| n.result == NodeOutcome::Reverted)
        .count();
    let f = crate::output::node_failures(&result.nodes);
    let exit = crate::app::error::nodes_exit(&f);
    result.message = format!(
        "reverted {reverted} node(s), deleted {} object(s){}",
        result.deleted_objects.len(),
        f.tail
    );
    if exit != Exit::Ok {
        result
            .message
            .push_str("; components and journal kept: re-run revert to finish the rest");
    }
    exit
}

/// The servant image convert recorded, else the profile's.
fn servant_image(journal: Option<&Journal>, profile: &Profile) -> String {
    journal
        .and_then(|j| plan::ConvertOptions::from_journal(&j.options))
        .and_then(|o| o.servant_image)
        .or_else(|| profile.images.get("servant").cloned())
        .unwrap_or_default()
}
