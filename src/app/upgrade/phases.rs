//! Upgrade's executor table: per phase of `plan::upgrade::UpgradePhase`, one function (what it
//! runs) and one for its `--dry-run=server` writes.

use std::collections::BTreeMap;

use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use crate::app::convert::components;
use crate::app::convert::phases::{label_plan_nodes, label_plan_writes};
use crate::app::convert::{HubJob, kcm_job, node_job};
use crate::app::node_servant::upgrade::gap_in_log;
use crate::cluster::apply::{Applier, ApplyOptions};
use crate::cluster::jobs::{NodeJob, NodeJobResult};
use crate::cluster::journal::{Journal, JournalStore, ObjectRef, PhaseState};
use crate::cluster::{Cluster, ClusterError, crd};
use crate::exec::dry_run;
use crate::exec::node_jobs::{job_node_result, mark_not_ready, run_journaled, run_options};
use crate::exec::phases::{
    Flow, PhaseDef, PhaseFuture, RunContext, Stop, Work, WritesFuture, no_writes,
};
use crate::exec::servant_job::servant_job;
use crate::exit::Exit;
use crate::output::{NodeOutcome, NodeResult, Reporter, UpgradeResult};
use crate::plan::revert::ENABLE_NODELIFECYCLE_ACTION;
use crate::plan::upgrade::{
    Decision, KcmChange, ObjectKey, RouteKind, StorageBridge, UpgradePhase, UpgradePlan,
};
use crate::plan::{self, Plan, Role, UPGRADE_ACTION};
use crate::render::Profile;

/// Lines of a succeeded upgrade Job's log read back: its last lines report the gap.
const GAP_LOG_LINES: i64 = 5;

/// Everything one upgrade run works with.
pub(super) struct UpgradeRun<'a> {
    pub cluster: &'a Cluster,
    pub plan: &'a UpgradePlan,
    pub decision: &'a Decision,
    pub to: &'a Profile,
    /// The target's convert plan (components, labels and node Jobs are made from it).
    pub target: &'a Plan,
    /// A rollback's CRDs stored at the target's version first (`components`).
    pub bridges: &'a [StorageBridge],
    pub rep: &'a dyn Reporter,
    pub journal: Journal,
    pub store: JournalStore,
    pub lock_lost: Option<watch::Receiver<Option<ClusterError>>>,
    /// A phase that changes the cluster has started (the journal is saved at the end).
    pub began: bool,
    /// Per node, as the run goes.
    pub results: BTreeMap<String, NodeResult>,
    /// Objects deleted, storage migrated.
    pub result: UpgradeResult,
}

impl UpgradeRun<'_> {
    fn opts(&self) -> &plan::ConvertOptions {
        &self.decision.target_options
    }

    fn rollback(&self) -> bool {
        self.decision.route.kind == RouteKind::Rollback
    }

    /// The nodes of `role` this run moves, in the order it moves them.
    fn to_move(&self, role: Role) -> impl Iterator<Item = &plan::NodeDecision> {
        let by_name: std::collections::HashMap<&str, &plan::NodeDecision> = self
            .target
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n))
            .collect();
        self.decision
            .order
            .order
            .iter()
            .filter_map(move |n| by_name.get(n.as_str()).copied())
            .filter(move |n| n.role == role)
    }

    /// Whether every node runs the target once this run's Jobs succeeded.
    fn all_moved(&self) -> bool {
        let d = self.decision;
        d.nodes
            .iter()
            .all(|n| d.moved.contains(&n.name) || d.to_move.contains(&n.name))
    }

    /// Whether a node Job of this run failed or timed out.
    fn nodes_failed(&self) -> bool {
        !self.failed_nodes().is_empty()
    }

    /// The nodes whose Job failed or timed out in this run, or that stayed NotReady after it.
    fn failed_nodes(&self) -> Vec<String> {
        self.results
            .values()
            .filter(|r| matches!(r.result, NodeOutcome::Failed | NodeOutcome::TimedOut))
            .map(|r| r.name.clone())
            .collect()
    }
}

impl RunContext for UpgradeRun<'_> {
    fn runs(&self, id: &str) -> bool {
        self.plan.phases.iter().any(|p| p.id == id && !p.skipped)
    }
    fn reporter(&self) -> &dyn Reporter {
        self.rep
    }
    fn lock_lost(&self) -> Option<watch::Receiver<Option<ClusterError>>> {
        self.lock_lost.clone()
    }
    fn phase_nodes(&self, id: &str) -> Option<usize> {
        let p = self.plan.phases.iter().find(|p| p.id == id)?;
        p.node_jobs()
    }
    /// The journal records the upgrade before anything changes: a run stopped from here on
    /// resumes towards the same target. A new upgrade forgets the last one's node records.
    fn begin_changes(&mut self) -> LocalBoxFuture<'_, Result<(), ClusterError>> {
        self.began = true;
        // a rollback finds the nodes to move back by their upgrade records
        if !self.decision.start.resuming && !self.rollback() {
            self.journal.forget_phase(UPGRADE_ACTION);
        }
        self.journal.command = "upgrade".into();
        self.journal.upgrade = Some(self.decision.start.record());
        Box::pin(async { self.store.save(&mut self.journal).await })
    }
}

/// Upgrade's phases in run order: the executor's row of every phase of `UpgradePhase`.
pub(super) fn table<'a>() -> Vec<PhaseDef<UpgradeRun<'a>>> {
    UpgradePhase::ALL.into_iter().map(row).collect()
}

/// What phase `p` runs and sends in a server dry run (a `match` without a wildcard).
fn row<'a>(p: UpgradePhase) -> PhaseDef<UpgradeRun<'a>> {
    let id = p.id();
    let def = |changes, work, run, dry_run| PhaseDef {
        id,
        changes,
        stops_itself: false,
        work,
        run,
        dry_run,
    };
    match p {
        // taken before the cluster is read (exec::lock::take_for_run)
        UpgradePhase::Lock => def(
            false,
            |_| Work::None,
            |_| Box::pin(async { Ok(Flow::Continue) }),
            |c| Box::pin(crate::exec::lock::take_writes(c.cluster)),
        ),
        // the decision's refusals and the access review run before the confirmation
        UpgradePhase::Preflight => def(
            false,
            |_| Work::None,
            |_| Box::pin(async { Ok(Flow::Continue) }),
            no_writes,
        ),
        UpgradePhase::Kcm => def(
            true,
            |c| Work::when(!c.decision.kcm_nodes.is_empty()),
            kcm,
            |c| dry_run::create_jobs(c.cluster, kcm_jobs(c), c.opts().job_timeout),
        ),
        UpgradePhase::Components => def(
            true,
            |_| Work::Some,
            apply_components,
            |c| {
                Box::pin(components::dry_run_writes(
                    c.cluster,
                    c.target,
                    c.to,
                    c.opts(),
                ))
            },
        ),
        UpgradePhase::LabelNodes => def(true, |_| Work::Some, label_nodes, label_writes),
        UpgradePhase::NodesEdge => node_phase::<true>(),
        UpgradePhase::NodesCloud => node_phase::<false>(),
        UpgradePhase::Cleanup => def(true, cleanup_work, cleanup, no_writes),
        UpgradePhase::Migrate => def(
            true,
            |c| Work::when(!c.rollback() && c.plan.crds.iter().any(|x| x.migrate)),
            migrate,
            no_writes,
        ),
        UpgradePhase::Verify => def(false, |_| Work::Some, verify, no_writes),
    }
}

/// `nodes/edge` (`EDGE`) or `nodes/cloud`.
fn node_phase<'a, const EDGE: bool>() -> PhaseDef<UpgradeRun<'a>> {
    PhaseDef {
        id: Role::edge_if(EDGE).phase(),
        changes: true,
        stops_itself: false,
        work: |c| Work::when(c.to_move(Role::edge_if(EDGE)).next().is_some()),
        run: |c| Box::pin(move_nodes(c, Role::edge_if(EDGE))),
        dry_run: |c| {
            dry_run::create_jobs(
                c.cluster,
                node_jobs(c, Role::edge_if(EDGE)),
                c.opts().job_timeout,
            )
        },
    }
}

/// The Jobs that change kube-controller-manager's nodelifecycle where the profiles differ.
fn kcm_jobs(c: &UpgradeRun<'_>) -> Vec<NodeJob> {
    let (image, timeout) = (&c.target.settings.servant_image, c.opts().job_timeout);
    c.decision
        .kcm_nodes
        .iter()
        .map(|n| {
            match c.decision.kcm {
                Some(KcmChange::Enable) => servant_job(
                    ENABLE_NODELIFECYCLE_ACTION,
                    n,
                    image,
                    "enable-nodelifecycle",
                    &[],
                    timeout,
                    &[],
                ),
                _ => kcm_job(n, image, timeout),
            }
            .pulling_with(&c.target.settings.pull_secrets)
        })
        .collect()
}

/// `kcm`: before the old controllers go, so that some node-lifecycle controller always runs.
/// The journal's `kcm` entry follows: done where nodelifecycle is off (revert turns it back
/// on), pending where it is on again.
fn kcm<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let specs = kcm_jobs(c);
        let enable = c.decision.kcm == Some(KcmChange::Enable);
        let mark = move |j: &mut Journal, node: &str, error: Option<String>| {
            let state = match (&error, enable) {
                (Some(_), _) => PhaseState::Failed,
                (None, true) => PhaseState::Pending,
                (None, false) => PhaseState::Done,
            };
            j.set_phase(node, plan::KCM, state, error);
        };
        let outcomes = run_journaled(
            c.cluster,
            plan::KCM,
            specs,
            run_options(c.opts().concurrency, c.opts().job_timeout),
            c.rep,
            &mut c.journal,
            &c.store,
            &mark,
        )
        .await?;
        let failed: Vec<&NodeJobResult> = outcomes.iter().filter(|r| !r.succeeded()).collect();
        if failed.is_empty() {
            return Ok(Flow::Continue);
        }
        for r in &failed {
            let n = job_node_result(r, Role::Cloud.as_str(), NodeOutcome::Failed, "", "kcm: ");
            c.results.insert(n.name.clone(), n);
        }
        Err(Stop::Halt {
            exit: Exit::Partial,
            message: format!(
                "[{}] kube-controller-manager could not be changed on {}; nothing else was \
                 changed: fix what its Job says and re-run the same upgrade",
                plan::KCM,
                failed
                    .iter()
                    .map(|r| r.node.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    })
}

/// `components`: the journal names the target's profile and options from here on (revert
/// then undoes with it), and the target's objects are applied as convert applies them.
fn apply_components<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        c.journal.profile = c.to.name.clone();
        c.journal.options = c.opts().journal_record(&c.target.settings);
        c.store.save(&mut c.journal).await?;
        store_at_target_versions(c).await?;
        let d = c.decision;
        let created = components::apply_components(
            c.cluster,
            c.target,
            c.to,
            &d.target_options,
            &mut c.journal,
            c.rep,
        )
        .await?;
        for r in created {
            c.journal.record_created(r);
        }
        c.store.save(&mut c.journal).await?;
        Ok(Flow::Continue)
    })
}

/// A rollback's bridges (`plan::upgrade::StorageBridge`): each CRD whose storage version goes
/// back is applied as it runs now with the target's storage version, and its objects are
/// written again there, before the target's CRD is applied.
async fn store_at_target_versions(c: &mut UpgradeRun<'_>) -> Result<(), ClusterError> {
    let applier = Applier::new(
        c.cluster.clone(),
        ApplyOptions {
            force: c.opts().force_conflicts,
            ..Default::default()
        },
    );
    for b in c.bridges {
        applier.apply(&b.crd.object).await?;
        let name = b.crd.name();
        let n = crd::migrate_storage(c.cluster, name, &b.version).await?;
        c.result.migrated.insert(name.to_owned(), n);
        c.rep.event(crate::output::Event::Note {
            phase: UpgradePhase::Components.id(),
            message: format!("{n} object(s) of {name} stored at {} again", b.version),
        });
    }
    Ok(())
}

/// `label-nodes`: every node the upgrade moves gets the target's labels (its NodePool), as
/// one apply of yurtctl's field manager, so labels the old profile had and the target has
/// not are given up in the same write.
fn label_nodes<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        label_plan_nodes(c.cluster, c.target, c.to, c.opts().concurrency).await?;
        Ok(Flow::Continue)
    })
}

fn label_writes<'r>(c: &'r UpgradeRun<'_>) -> WritesFuture<'r> {
    Box::pin(label_plan_writes(
        c.cluster,
        c.target,
        c.to,
        c.opts().concurrency,
    ))
}

fn node_jobs(c: &UpgradeRun<'_>, role: Role) -> Vec<NodeJob> {
    let s = &c.target.settings;
    crate::cluster::jobs::share_templates(c.to_move(role).map(|n| {
        node_job(
            n,
            &s.servant_image,
            &s.images,
            c.to,
            c.opts().job_timeout,
            HubJob::Upgrade,
        )
        .pulling_with(&s.pull_secrets)
    }))
}

/// `nodes/edge`, `nodes/cloud`: a `node-servant upgrade` Job per node, in the plan's order,
/// each journaled (`upgrade`) as it starts and ends, in a sliding window of `--max-unavailable`
/// nodes: a node holds its place from its Job's start until it is Ready again on the new
/// release. Once more nodes than `--max-failures` failed or stayed NotReady, no other node is
/// touched and the upgrade halts (kubeadm and keadm move nodes one by one for the same reason:
/// a broken release stops at the nodes it broke).
async fn move_nodes(c: &mut UpgradeRun<'_>, role: Role) -> Result<Flow, Stop> {
    let specs = node_jobs(c, role);
    let tolerated = c.decision.order.max_failures;
    let failed_before = c.failed_nodes().len();
    let names: Vec<String> = specs.iter().map(|s| s.node.clone()).collect();
    for n in &names {
        c.journal
            .set_phase(n, UPGRADE_ACTION, PhaseState::Running, None);
    }
    c.store.save(&mut c.journal).await?;
    // a node a rollback moved back is as the upgrade never touched it
    let rollback = c.rollback();
    let mark = move |j: &mut Journal, node: &str, error: Option<String>| match error {
        None if rollback => j.forget_node_phase(node, UPGRADE_ACTION),
        None => j.set_phase(node, UPGRADE_ACTION, PhaseState::Done, None),
        Some(e) => j.set_phase(node, UPGRADE_ACTION, PhaseState::Failed, Some(e)),
    };
    let window =
        crate::cluster::Concurrency::new(c.decision.order.budget.max(1)).expect("at least 1");
    let mut opts = run_options(window, c.opts().job_timeout);
    // the end of each servant's log says how long YurtHub's address went unserved
    opts.success_log_lines = Some(GAP_LOG_LINES);
    opts.hold_until_ready = Some(c.opts().job_timeout);
    opts.stop_after_failures = Some(tolerated.saturating_sub(failed_before));
    let outcomes = run_journaled(
        c.cluster,
        role.phase(),
        specs,
        opts,
        c.rep,
        &mut c.journal,
        &c.store,
        &mark,
    )
    .await?;
    let (moved, said) = if rollback {
        (NodeOutcome::RolledBack, "rolled back")
    } else {
        (NodeOutcome::Upgraded, "upgraded")
    };
    for r in &outcomes {
        let mut n = job_node_result(r, role.as_str(), moved, said, "");
        n.yurthub_unavailable_ms = r.log.as_deref().and_then(gap_in_log);
        c.results.insert(r.node.clone(), n);
    }
    let bad = c.failed_nodes();
    if bad.len() <= tolerated {
        return Ok(Flow::Continue);
    }
    // the nodes the window never reached stay as they were, and not in the journal
    let mut rest: Vec<String> = names
        .into_iter()
        .filter(|n| !c.results.contains_key(n))
        .collect();
    if role == Role::Edge {
        rest.extend(c.to_move(Role::Cloud).map(|n| n.name.clone()));
    }
    for n in &rest {
        c.journal.forget_node_phase(n, UPGRADE_ACTION);
        c.results.insert(
            n.clone(),
            NodeResult {
                name: n.clone(),
                role: role.as_str().into(),
                result: NodeOutcome::NotStarted,
                message: "not moved: the upgrade halted before it".into(),
                logs: None,
                pool: None,
                yurthub_unavailable_ms: None,
            },
        );
    }
    c.store.save(&mut c.journal).await?;
    Err(Stop::Halt {
        exit: Exit::Partial,
        message: format!(
            "[{}] halted: {} did not come back healthy on the new release (--max-failures \
             {tolerated}; {} node(s) left as they were); fix what their result says and re-run \
             the same upgrade (the nodes moved so far stay moved)",
            role.phase(),
            bad.join(", "),
            rest.len()
        ),
    })
}

/// The old release's objects go only once every node is moved: a node still on it may need
/// them.
fn cleanup_work(c: &UpgradeRun<'_>) -> Work {
    let o = &c.plan.objects;
    if o.delete.is_empty() && o.release.is_empty() {
        Work::None
    } else if c.nodes_failed() || !c.all_moved() {
        Work::Note(
            "the old release's objects stay until every node is moved: re-run the same upgrade"
                .into(),
        )
    } else {
        Work::Some
    }
}

/// `cleanup`: what convert created that the target has no use for is deleted (webhooks first,
/// CRDs last), what it adopted is given back; the journal forgets each as it goes.
fn cleanup<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let o = &c.plan.objects;
        let of = |refs: &[ObjectRef], keys: &[ObjectKey]| -> Vec<ObjectRef> {
            refs.iter()
                .filter(|r| keys.contains(&ObjectKey::of_ref(r)))
                .cloned()
                .collect()
        };
        let mut delete = of(&c.journal.created_objects, &o.delete);
        delete.sort_by_key(plan::revert::deletion_rank);
        let release = of(&c.journal.adopted_objects, &o.release);
        let applier = Applier::new(c.cluster.clone(), ApplyOptions::default());
        let gone = crate::app::revert::components::delete_and_release(
            &applier,
            &delete,
            &release,
            c.opts().job_timeout,
            &mut c.journal,
            c.rep,
            plan::upgrade::UpgradePhase::Cleanup.id(),
        )
        .await?;
        c.result.deleted_objects.extend(gone.deleted);
        c.store.save(&mut c.journal).await?;
        Ok(Flow::Continue)
    })
}

/// `migrate`: the objects of each CRD whose storage version moved, written again at it.
fn migrate<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        for x in c.plan.crds.iter().filter(|x| x.migrate) {
            let Some(version) = x.after.iter().find(|v| v.storage) else {
                continue;
            };
            let n = crd::migrate_storage(c.cluster, &x.name, &version.name).await?;
            c.result.migrated.insert(x.name.clone(), n);
        }
        Ok(Flow::Continue)
    })
}

/// `verify`: every node moved in this run is Ready.
fn verify<'r>(c: &'r mut UpgradeRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let moved: Vec<String> = c
            .results
            .values()
            .filter(|n| matches!(n.result, NodeOutcome::Upgraded | NodeOutcome::RolledBack))
            .map(|n| n.name.clone())
            .collect();
        let timeout = c.opts().job_timeout;
        mark_not_ready(c.cluster, &mut c.results, &moved, timeout).await;
        Ok(Flow::Continue)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_runs_the_planned_phases_in_the_planned_order() {
        let ids = crate::exec::phases::ids(&table());
        assert_eq!(ids, UpgradePhase::IDS);
    }
}
