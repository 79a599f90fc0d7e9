//! Revert's executor table: per phase of `plan::revert::RevertPhase`, one function (what it
//! runs) and one for its `--dry-run=server` writes.

use std::collections::{BTreeMap, HashMap};

use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use super::components;
use crate::cluster::jobs::{self, NodeJob};
use crate::cluster::journal::{Journal, JournalStore, PhaseState};
use crate::cluster::{Cluster, ClusterError, SYSTEM_NAMESPACE, nodes};
use crate::exec::dry_run::{self, Write};
use crate::exec::node_jobs::{job_node_result, mark_not_ready, run_journaled, run_options};
use crate::exec::phases::{
    Flow, PhaseDef, PhaseFuture, RunContext, Stop, Work, WritesFuture, no_writes,
};
use crate::exec::servant_job::servant_job;
use crate::output::{Event, NodeOutcome, NodeResult, Reporter, RevertResult};
use crate::plan::revert::{
    CLEANUP_JOBS, ENABLE_NODELIFECYCLE_ACTION, REVERT_ACTION, REVERTED, RevertAction, RevertNode,
    RevertOptions, RevertPhase, RevertPlan,
};
use crate::plan::{self, Role};
use crate::render::Profile;

/// Everything one revert run works with.
pub(super) struct RevertRun<'a> {
    pub cluster: &'a Cluster,
    pub plan: &'a RevertPlan,
    pub profile: &'a Profile,
    pub opts: &'a RevertOptions,
    pub servant_image: String,
    /// The Secrets convert's node Jobs pulled the servant with (`--image-pull-secret`).
    pub pull_secrets: Vec<String>,
    pub rep: &'a dyn Reporter,
    pub journal: Journal,
    /// The journal as the plan saw it (None: there was none).
    pub planned_journal: Option<Journal>,
    pub store: JournalStore,
    /// Fires when the run lock (taken before the cluster was read) is lost.
    pub lock_lost: Option<watch::Receiver<Option<ClusterError>>>,
    /// A phase that changes the cluster has started (the journal is saved at the end).
    pub began: bool,
    pub results: BTreeMap<String, NodeResult>,
    pub result: RevertResult,
}

impl RunContext for RevertRun<'_> {
    fn runs(&self, id: &str) -> bool {
        self.plan.runs(id)
    }
    fn reporter(&self) -> &dyn Reporter {
        self.rep
    }
    fn lock_lost(&self) -> Option<watch::Receiver<Option<ClusterError>>> {
        self.lock_lost.clone()
    }
    fn phase_nodes(&self, id: &str) -> Option<usize> {
        self.plan.phase(id)?.node_jobs()
    }
    fn begin_changes(&mut self) -> LocalBoxFuture<'_, Result<(), ClusterError>> {
        // revert journals per phase; an untouched cluster keeps no journal
        self.began = true;
        Box::pin(async { Ok(()) })
    }
}

/// Revert's phases in run order: the executor's row of every phase of `RevertPhase`.
pub(super) fn table<'a>() -> Vec<PhaseDef<RevertRun<'a>>> {
    RevertPhase::ALL.into_iter().map(row).collect()
}

/// What phase `p` runs, and sends in a server dry run (a `match` without a wildcard: a phase
/// added to `RevertPhase` does not compile until it has a row here).
fn row<'a>(p: RevertPhase) -> PhaseDef<RevertRun<'a>> {
    let id = p.id();
    match p {
        // taken before the cluster is read (exec::lock::take_for_run), so that what the run
        // decides is read under it
        RevertPhase::Lock => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |_| Work::None,
            run: |_| Box::pin(async { Ok(Flow::Continue) }),
            dry_run: |c| {
                Box::pin(async move {
                    let mut rows = crate::exec::lock::take_writes(c.cluster).await?;
                    // the journal: saved after every phase
                    if c.planned_journal.is_some()
                        && let Some((what, r)) = c.store.dry_run_update().await?
                    {
                        rows.push(Write::of("update", what, r));
                    }
                    Ok(rows)
                })
            },
        },
        // the planner's checks and the access review run before the confirmation
        RevertPhase::Preflight => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |_| Work::None,
            run: |_| Box::pin(async { Ok(Flow::Continue) }),
            dry_run: no_writes,
        },
        RevertPhase::CleanupJobs => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: |c| Work::when(!c.plan.leftover_jobs.is_empty()),
            run: cleanup_jobs,
            dry_run: |c| {
                Box::pin(async move {
                    let rows = jobs::delete_named(
                        c.cluster,
                        SYSTEM_NAMESPACE,
                        &c.plan.leftover_jobs,
                        c.opts.job_timeout,
                        true,
                    )
                    .await;
                    Ok(rows
                        .into_iter()
                        .map(|(what, r)| dry_run::deleted("delete", what, r, "already gone"))
                        .collect())
                })
            },
        },
        RevertPhase::NodesCloud => node_phase::<false>(),
        RevertPhase::NodesEdge => node_phase::<true>(),
        RevertPhase::Kcm => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: |c| Work::when(!kcm_nodes(c, true).is_empty()),
            run: kcm,
            // as if every node Job succeeded
            dry_run: |c| {
                dry_run::create_jobs(
                    c.cluster,
                    kcm_jobs(c, &kcm_nodes(c, false)),
                    c.opts.job_timeout,
                )
            },
        },
        RevertPhase::Components => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: components_work,
            run: delete_components,
            dry_run: |c| {
                Box::pin(async move {
                    if !c.plan.complete {
                        return Ok(Vec::new());
                    }
                    components::dry_run_writes(c.cluster, c.plan).await
                })
            },
        },
        RevertPhase::LabelNodes => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: |_| Work::Some,
            run: unlabel_nodes,
            dry_run: unlabel_writes,
        },
        RevertPhase::Verify => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |_| Work::Some,
            run: verify,
            dry_run: no_writes,
        },
    }
}

/// `nodes/edge` (`EDGE`) or `nodes/cloud`.
fn node_phase<'a, const EDGE: bool>() -> PhaseDef<RevertRun<'a>> {
    PhaseDef {
        id: Role::edge_if(EDGE).phase(),
        changes: true,
        stops_itself: false,
        work: |c| Work::when(c.plan.to_revert(Role::edge_if(EDGE)).next().is_some()),
        run: |c| Box::pin(revert_nodes(c, Role::edge_if(EDGE))),
        dry_run: |c| {
            dry_run::create_jobs(
                c.cluster,
                revert_jobs(c, Role::edge_if(EDGE)),
                c.opts.job_timeout,
            )
        },
    }
}

/// Every planned node's result before any Job ran.
pub(super) fn planned_results(plan: &RevertPlan) -> BTreeMap<String, NodeResult> {
    plan.nodes
        .iter()
        .map(|n| {
            let r = match n.action {
                RevertAction::AlreadyReverted => {
                    node_result(n, NodeOutcome::AlreadyReverted, "already reverted")
                }
                RevertAction::SkipNotReady => node_result(
                    n,
                    NodeOutcome::Skipped,
                    "NotReady: skipped; re-run revert once it is Ready",
                ),
                RevertAction::Revert => node_result(
                    n,
                    NodeOutcome::PhaseSkipped,
                    "not reverted: its phase is in --skip-phases",
                ),
            };
            (n.name.clone(), r)
        })
        .collect()
}

fn node_result(n: &RevertNode, result: NodeOutcome, message: impl Into<String>) -> NodeResult {
    NodeResult {
        name: n.name.clone(),
        role: n.role.as_str().into(),
        result,
        message: message.into(),
        logs: None,
        pool: None,
        yurthub_unavailable_ms: None,
    }
}

fn cleanup_jobs<'r>(c: &'r mut RevertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let rows = jobs::delete_named(
            c.cluster,
            SYSTEM_NAMESPACE,
            &c.plan.leftover_jobs,
            c.opts.job_timeout,
            false,
        )
        .await;
        for (_, r) in rows {
            r?;
        }
        c.rep.event(Event::Note {
            phase: CLEANUP_JOBS,
            message: format!("deleted {}", c.plan.leftover_jobs.join(", ")),
        });
        Ok(Flow::Continue)
    })
}

/// The Job that runs `node-servant revert` on `node`.
fn revert_job(node: &str, image: &str, opts: &RevertOptions) -> NodeJob {
    let args: &[&str] = if opts.skip_workload_restart {
        &["--skip-workload-restart"]
    } else {
        &[]
    };
    servant_job(
        REVERT_ACTION,
        node,
        image,
        "revert",
        args,
        opts.job_timeout,
        &[],
    )
}

fn revert_jobs(c: &RevertRun<'_>, role: Role) -> Vec<NodeJob> {
    crate::cluster::jobs::share_templates(
        c.plan
            .to_revert(role)
            .map(|n| revert_job(&n.name, &c.servant_image, c.opts).pulling_with(&c.pull_secrets)),
    )
}

/// `nodes/cloud`, `nodes/edge`: a revert Job per node, in a sliding window.
async fn revert_nodes(c: &mut RevertRun<'_>, role: Role) -> Result<Flow, Stop> {
    let phase = role.phase();
    let specs = revert_jobs(c, role);
    for s in &specs {
        c.journal
            .set_phase(&s.node, REVERTED, PhaseState::Running, None);
    }
    c.store.save(&mut c.journal).await?;
    for (node, r) in node_jobs(c, specs, phase, mark_reverted).await? {
        mark_reverted(
            &mut c.journal,
            &node,
            (r.result != NodeOutcome::Reverted).then(|| r.message.clone()),
        );
        c.results.insert(node, r);
    }
    c.store.save(&mut c.journal).await?;
    Ok(Flow::Continue)
}

/// Nodes whose kube-controller-manager convert changed; `reverted_only`: only those whose
/// revert Job succeeded in this run.
fn kcm_nodes(c: &RevertRun<'_>, reverted_only: bool) -> Vec<String> {
    c.plan
        .nodes
        .iter()
        .filter(|n| n.kcm && n.action == RevertAction::Revert)
        .filter(|n| {
            !reverted_only
                || c.results
                    .get(&n.name)
                    .is_some_and(|r| r.result == NodeOutcome::Reverted)
        })
        .map(|n| n.name.clone())
        .collect()
}

/// The Jobs that re-enable nodelifecycle in kube-controller-manager.
fn kcm_jobs(c: &RevertRun<'_>, nodes: &[String]) -> Vec<NodeJob> {
    nodes
        .iter()
        .map(|n| {
            servant_job(
                ENABLE_NODELIFECYCLE_ACTION,
                n,
                &c.servant_image,
                "enable-nodelifecycle",
                &[],
                c.opts.job_timeout,
                &[],
            )
            .pulling_with(&c.pull_secrets)
        })
        .collect()
}

/// `kcm`: nodelifecycle back on where convert disabled it.
fn kcm<'r>(c: &'r mut RevertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let specs = kcm_jobs(c, &kcm_nodes(c, true));
        for (node, r) in node_jobs(c, specs, plan::KCM, mark_kcm).await? {
            let failed = r.result != NodeOutcome::Reverted;
            mark_kcm(&mut c.journal, &node, failed.then(|| r.message.clone()));
            if failed {
                c.results.insert(node, r);
            }
        }
        c.store.save(&mut c.journal).await?;
        Ok(Flow::Continue)
    })
}

/// The components go only with a revert of all nodes, once every node is reverted (a node
/// still on YurtHub needs them).
fn components_work(c: &RevertRun<'_>) -> Work {
    let all_reverted = c.results.values().all(|r| {
        matches!(
            r.result,
            NodeOutcome::Reverted | NodeOutcome::AlreadyReverted
        )
    });
    if !c.plan.complete {
        Work::Note("kept: --nodes reverts only those nodes".into())
    } else if !all_reverted {
        Work::Note("kept: not every node is reverted yet".into())
    } else {
        Work::Some
    }
}

fn delete_components<'r>(c: &'r mut RevertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        components::delete_components(
            c.cluster,
            c.plan,
            c.opts,
            &mut c.journal,
            &mut c.result,
            c.rep,
        )
        .await?;
        c.store.save(&mut c.journal).await?;
        Ok(Flow::Continue)
    })
}

/// `label-nodes`: only nodes reverted now or before keep no label of ours.
fn unlabel_nodes<'r>(c: &'r mut RevertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let names: Vec<String> = c
            .results
            .values()
            .filter(|r| {
                matches!(
                    r.result,
                    NodeOutcome::Reverted | NodeOutcome::AlreadyReverted
                )
            })
            .map(|r| r.name.clone())
            .collect();
        let writer = nodes::label_writer(c.cluster, c.profile.label_writer_account()).await?;
        let (cluster, writer) = (c.cluster, &writer);
        crate::cluster::each_concurrently(names, c.opts.concurrency, |name| async move {
            nodes::give_up_metadata(cluster, writer, &name, false).await
        })
        .await?;
        Ok(Flow::Continue)
    })
}

fn unlabel_writes<'r>(c: &'r RevertRun<'_>) -> WritesFuture<'r> {
    Box::pin(async move {
        let writer = nodes::label_writer(c.cluster, c.profile.label_writer_account()).await?;
        let (cluster, writer) = (c.cluster, &writer);
        let reverting = c.plan.nodes.iter().filter(|n| {
            matches!(
                n.action,
                RevertAction::Revert | RevertAction::AlreadyReverted
            )
        });
        Ok(
            crate::cluster::map_concurrently(reverting, c.opts.concurrency, |n| async move {
                let what = format!("Node {} (yurtctl's labels and annotations)", n.name);
                let r = nodes::give_up_metadata(cluster, writer, &n.name, true).await;
                Write::of("patch", what, r)
            })
            .await,
        )
    })
}

/// `verify`: every node reverted now is Ready again.
fn verify<'r>(c: &'r mut RevertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let reverted: Vec<String> = c
            .results
            .values()
            .filter(|n| n.result == NodeOutcome::Reverted)
            .map(|n| n.name.clone())
            .collect();
        let timeout = c.opts.job_timeout;
        mark_not_ready(c.cluster, &mut c.results, &reverted, timeout).await;
        Ok(Flow::Continue)
    })
}

/// Journals a node's revert Job's end (`Some(error)` when it failed). On success convert's
/// entries become "not converted" (Pending): a newer entry wins any merge, so a conflicting
/// save cannot resurrect them.
fn mark_reverted(journal: &mut Journal, node: &str, error: Option<String>) {
    match error {
        None => {
            for p in [plan::NODES_EDGE, plan::NODES_CLOUD] {
                if journal.phase(node, p).is_some() {
                    journal.set_phase(node, p, PhaseState::Pending, None);
                }
            }
            journal.set_phase(node, REVERTED, PhaseState::Done, None);
        }
        Some(e) => journal.set_phase(node, REVERTED, PhaseState::Failed, Some(e)),
    }
}

/// Journals the end of an `enable-nodelifecycle` Job.
fn mark_kcm(journal: &mut Journal, node: &str, error: Option<String>) {
    match error {
        None => journal.set_phase(node, plan::KCM, PhaseState::Pending, None),
        Some(e) => journal.set_phase(node, plan::KCM, PhaseState::Failed, Some(e)),
    }
}

/// Runs one Job per spec and maps the outcomes to node results (`Reverted` for success, each
/// with its node's role in the plan), journaling each node's end with `mark` as it happens.
async fn node_jobs(
    c: &mut RevertRun<'_>,
    specs: Vec<NodeJob>,
    phase: &'static str,
    mark: fn(&mut Journal, &str, Option<String>),
) -> Result<Vec<(String, NodeResult)>, ClusterError> {
    let outcomes = run_journaled(
        c.cluster,
        phase,
        specs,
        run_options(c.opts.concurrency, c.opts.job_timeout),
        c.rep,
        &mut c.journal,
        &c.store,
        &mark,
    )
    .await?;
    let roles: HashMap<&str, Role> = c
        .plan
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.role))
        .collect();
    Ok(outcomes
        .iter()
        .map(|r| {
            let role = (roles.get(r.node.as_str()).copied())
                .or(Role::of_phase(phase))
                .map_or("", Role::as_str);
            let nr = job_node_result(r, role, NodeOutcome::Reverted, "reverted", "");
            (r.node.clone(), nr)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_runs_the_planned_phases_in_the_planned_order() {
        let ids = crate::exec::phases::ids(&table());
        assert_eq!(ids, crate::plan::revert::REVERT_PHASES);
    }

    #[test]
    fn each_row_runs_its_own_phase() {
        for p in RevertPhase::ALL {
            assert_eq!(row(p).id, p.id(), "{p:?}");
        }
    }
}
