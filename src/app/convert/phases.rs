//! Convert's executor table: per phase of `plan::ConvertPhase`, one function (what it runs)
//! and one for its `--dry-run=server` writes.

use std::collections::BTreeMap;

use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use super::components;
use super::jobs::{kcm_job, node_job, preflight_jobs};
use super::{not_started, skipped_result};
use crate::app::error::CommandError;
use crate::cluster::jobs::{NodeJob, NodeJobResult};
use crate::cluster::journal::{Journal, JournalStore, PhaseState};
use crate::cluster::{Cluster, ClusterError, SYSTEM_NAMESPACE, nodes};
use crate::exec::dry_run::{self, Write};
use crate::exec::node_jobs::{
    job_node_result, mark_not_ready, run_journaled, run_options, run_reported,
};
use crate::exec::phases::{
    Flow, PhaseDef, PhaseFuture, RunContext, Stop, Work, WritesFuture, no_writes,
};
use crate::exit::Exit;
use crate::output::{NodeOutcome, NodeResult, Reporter};
use crate::plan::{self, ConvertPhase, NodeAction, Plan, Role};
use crate::render::Profile;

/// Everything one convert run works with.
pub(super) struct ConvertRun<'a> {
    pub cluster: &'a Cluster,
    pub plan: &'a Plan,
    pub profile: &'a Profile,
    pub opts: &'a plan::ConvertOptions,
    pub rep: &'a dyn Reporter,
    pub journal: Journal,
    pub store: JournalStore,
    /// Fires when the run lock (taken before the cluster was read) is lost.
    pub lock_lost: Option<watch::Receiver<Option<ClusterError>>>,
    /// A phase that changes the cluster has started (the journal is saved at the end).
    pub began: bool,
    /// Per node, as the run goes.
    pub results: BTreeMap<String, NodeResult>,
    /// `--pull-images`: what the node-side preflight pulls on each node.
    pub pulls: &'a [String],
}

impl RunContext for ConvertRun<'_> {
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
        self.began = true;
        Box::pin(async { self.store.save(&mut self.journal).await })
    }
}

/// Convert's phases in run order: the executor's row of every phase of `plan::ConvertPhase`.
pub(super) fn table<'a>() -> Vec<PhaseDef<ConvertRun<'a>>> {
    ConvertPhase::ALL.into_iter().map(row).collect()
}

/// What phase `p` runs, and sends in a server dry run (a `match` without a wildcard: a phase
/// added to `plan::ConvertPhase` does not compile until it has a row here).
fn row<'a>(p: ConvertPhase) -> PhaseDef<ConvertRun<'a>> {
    let id = p.id();
    match p {
        // taken before the cluster is read (exec::lock::take_for_run), so that what the run
        // decides is read under it
        ConvertPhase::Lock => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |_| Work::None,
            run: |_| Box::pin(async { Ok(Flow::Continue) }),
            dry_run: |c| Box::pin(crate::exec::lock::take_writes(c.cluster)),
        },
        // the planner's checks and the access review run before the confirmation
        ConvertPhase::Preflight => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |_| Work::None,
            run: |_| Box::pin(async { Ok(Flow::Continue) }),
            dry_run: no_writes,
        },
        ConvertPhase::PreflightNodes => PhaseDef {
            id,
            changes: false,
            stops_itself: false,
            work: |c| {
                Work::when(
                    !preflight_jobs(c.plan, c.profile, c.opts.job_timeout, c.pulls).is_empty(),
                )
            },
            run: node_preflight,
            dry_run: |c| {
                let jobs = preflight_jobs(c.plan, c.profile, c.opts.job_timeout, c.pulls);
                dry_run::create_jobs(c.cluster, jobs, c.opts.job_timeout)
            },
        },
        ConvertPhase::LabelNodes => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: |_| Work::Some,
            run: label_nodes,
            dry_run: label_writes,
        },
        ConvertPhase::Components => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: |_| Work::Some,
            run: apply_components,
            dry_run: |c| {
                Box::pin(components::dry_run_writes(
                    c.cluster, c.plan, c.profile, c.opts,
                ))
            },
        },
        ConvertPhase::Kcm => PhaseDef {
            id,
            changes: true,
            stops_itself: false,
            work: kcm_work,
            run: kcm,
            dry_run: |c| dry_run::create_jobs(c.cluster, kcm_jobs(c), c.opts.job_timeout),
        },
        ConvertPhase::NodesEdge => node_phase::<true>(),
        ConvertPhase::NodesCloud => node_phase::<false>(),
        ConvertPhase::Verify => PhaseDef {
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
fn node_phase<'a, const EDGE: bool>() -> PhaseDef<ConvertRun<'a>> {
    PhaseDef {
        id: Role::edge_if(EDGE).phase(),
        changes: true,
        stops_itself: false,
        work: |c| Work::when(c.plan.to_convert(Role::edge_if(EDGE)).next().is_some()),
        run: |c| Box::pin(convert_nodes(c, Role::edge_if(EDGE))),
        dry_run: |c| {
            dry_run::create_jobs(
                c.cluster,
                node_jobs(c, Role::edge_if(EDGE)),
                c.opts.job_timeout,
            )
        },
    }
}

/// `preflight/nodes`: a `node-servant preflight` Job on every node this run converts; any
/// failure stops the run before anything is changed.
fn node_preflight<'r>(c: &'r mut ConvertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let phase = plan::PREFLIGHT_NODES;
        let specs = preflight_jobs(c.plan, c.profile, c.opts.job_timeout, c.pulls);
        let outcomes = run_reported(
            c.cluster,
            phase,
            specs,
            c.opts.concurrency,
            c.opts.job_timeout,
            c.rep,
        )
        .await?;
        let roles: BTreeMap<&str, Role> = c
            .plan
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.role))
            .collect();
        let failed: Vec<NodeResult> = outcomes
            .iter()
            .filter(|r| !r.succeeded())
            .map(|r| {
                let role = roles.get(r.node.as_str()).copied().unwrap_or(Role::Edge);
                job_node_result(r, role.as_str(), NodeOutcome::Failed, "", "preflight: ")
            })
            .collect();
        if failed.is_empty() {
            return Ok(Flow::Continue);
        }
        let message = format!(
            "[{phase}] node-side preflight failed on {} node(s): {}; nothing was changed. \
             Fix what each node's Job says (kubectl logs -n {SYSTEM_NAMESPACE} job/<Job>) and \
             re-run convert",
            failed.len(),
            failed
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for n in &failed {
            CommandError::Refused(format!("[{phase}] node {}: {}", n.name, n.message)).print();
        }
        c.results = not_started(c.plan, failed, phase);
        Err(Stop::Halt {
            exit: Exit::Preflight,
            message,
        })
    })
}

/// What convert puts on one node.
pub(crate) struct NodeMetadata {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// The profile's edge-worker label, the NodePool label of profiles with pools (one apply, so
/// yurt-manager's node-conversion controller never sees one without the other and has nothing
/// to do on our nodes; docs/profiles.md) and, on autonomous edge nodes, the autonomy
/// annotation, on every node this run converts.
pub(crate) fn node_metadata(plan: &Plan, profile: &Profile) -> Vec<NodeMetadata> {
    let l = &profile.labels;
    plan.nodes
        .iter()
        .filter(|n| n.action == NodeAction::Convert)
        .map(|n| {
            let value = match n.role {
                Role::Edge => &l.edge_worker.edge,
                Role::Cloud => &l.edge_worker.cloud,
            };
            let mut labels = BTreeMap::from([(l.edge_worker.key.clone(), value.clone())]);
            if let (Some(decl), Some(pool)) = (&profile.node_pools, &n.pool) {
                labels.insert(decl.label.clone(), pool.clone());
            }
            let mut annotations = BTreeMap::new();
            if n.autonomous {
                annotations.insert(l.autonomy.key.clone(), l.autonomy.value.clone());
            }
            NodeMetadata {
                name: n.name.clone(),
                labels,
                annotations,
            }
        })
        .collect()
}

fn label_nodes<'r>(c: &'r mut ConvertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        components::pools_before_labels(
            c.cluster,
            c.plan,
            c.profile,
            c.opts,
            &mut c.journal,
            c.rep,
        )
        .await?;
        if c.journal.is_dirty() {
            c.store.save(&mut c.journal).await?;
        }
        label_plan_nodes(c.cluster, c.plan, c.profile, c.opts.concurrency).await?;
        Ok(Flow::Continue)
    })
}

fn label_writes<'r>(c: &'r ConvertRun<'_>) -> WritesFuture<'r> {
    Box::pin(label_plan_writes(
        c.cluster,
        c.plan,
        c.profile,
        c.opts.concurrency,
    ))
}

/// [`node_metadata`] applied to every node `plan` converts, as the profile's label writer
/// (convert's and upgrade's `label-nodes`).
pub(crate) async fn label_plan_nodes(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    concurrency: crate::cluster::Concurrency,
) -> Result<(), ClusterError> {
    let writer = nodes::label_writer(cluster, profile.label_writer_account()).await?;
    let writer = &writer;
    crate::cluster::each_concurrently(node_metadata(plan, profile), concurrency, |m| async move {
        nodes::apply_metadata(cluster, writer, &m.name, &m.labels, &m.annotations, false).await
    })
    .await
}

/// [`label_plan_nodes`] sent with `dryRun=All`: one write row for them all.
pub(crate) async fn label_plan_writes(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    concurrency: crate::cluster::Concurrency,
) -> Result<Vec<Write>, ClusterError> {
    let writer = nodes::label_writer(cluster, profile.label_writer_account()).await?;
    let writer = &writer;
    let answers = crate::cluster::map_concurrently(
        node_metadata(plan, profile),
        concurrency,
        |m| async move {
            nodes::apply_metadata(cluster, writer, &m.name, &m.labels, &m.annotations, true).await
        },
    )
    .await;
    let r = answers.into_iter().find(Result::is_err).unwrap_or(Ok(()));
    Ok(vec![Write::of(
        "patch",
        "node labels and annotations".into(),
        r,
    )])
}

fn apply_components<'r>(c: &'r mut ConvertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let created = components::apply_components(
            c.cluster,
            c.plan,
            c.profile,
            c.opts,
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

fn kcm_jobs(c: &ConvertRun<'_>) -> Vec<NodeJob> {
    c.plan
        .kcm_nodes
        .iter()
        .map(|n| {
            kcm_job(n, &c.plan.settings.servant_image, c.opts.job_timeout)
                .pulling_with(&c.plan.settings.pull_secrets)
        })
        .collect()
}

/// kube-controller-manager needs changing only where the plan says; otherwise say why not.
fn kcm_work(c: &ConvertRun<'_>) -> Work {
    if !c.plan.kcm_nodes.is_empty() {
        Work::Some
    } else if c.plan.settings.disable_nodelifecycle {
        Work::Note("kube-controller-manager already has nodelifecycle disabled".into())
    } else {
        Work::Note(format!(
            "kube-controller-manager is left unchanged (profile {} does not need it)",
            c.profile.name
        ))
    }
}

/// `kcm`: nodelifecycle off in kube-controller-manager before nodes go autonomous; a failure
/// ends the run here (the nodes are left as they are for the next run).
fn kcm<'r>(c: &'r mut ConvertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let specs = kcm_jobs(c);
        let outcomes = run_node_jobs(c, plan::KCM, specs).await?;
        let failed: Vec<NodeResult> = outcomes
            .iter()
            .filter(|r| !r.succeeded())
            .map(|r| job_result(r, Role::Cloud, "kube-controller-manager: "))
            .collect();
        if failed.is_empty() {
            return Ok(Flow::Continue);
        }
        c.results = not_started(c.plan, failed, plan::KCM);
        Ok(Flow::Finish)
    })
}

fn node_jobs(c: &ConvertRun<'_>, role: Role) -> Vec<NodeJob> {
    crate::cluster::jobs::share_templates(c.plan.to_convert(role).map(|n| {
        node_job(
            n,
            &c.plan.settings.servant_image,
            &c.plan.settings.images,
            c.profile,
            c.opts.job_timeout,
            super::HubJob::Convert {
                restart_workloads: plan::restarts_workloads(c.opts, n.role),
            },
        )
        .pulling_with(&c.plan.settings.pull_secrets)
    }))
}

/// `nodes/edge`, `nodes/cloud`: a conversion Job per node, in a sliding window.
async fn convert_nodes(c: &mut ConvertRun<'_>, role: Role) -> Result<Flow, Stop> {
    let specs = node_jobs(c, role);
    let outcomes = run_node_jobs(c, role.phase(), specs).await?;
    for r in &outcomes {
        c.results.insert(r.node.clone(), job_result(r, role, ""));
    }
    Ok(Flow::Continue)
}

/// `verify`: every node converted in this run is Ready.
fn verify<'r>(c: &'r mut ConvertRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        let converted: Vec<String> = c
            .results
            .values()
            .filter(|n| n.result == NodeOutcome::Converted)
            .map(|n| n.name.clone())
            .collect();
        let timeout = c.opts.job_timeout;
        mark_not_ready(c.cluster, &mut c.results, &converted, timeout).await;
        Ok(Flow::Continue)
    })
}

/// Runs one phase's node Jobs: each node is journaled Running first, then Done or Failed as
/// it ends.
async fn run_node_jobs(
    c: &mut ConvertRun<'_>,
    phase: &'static str,
    specs: Vec<NodeJob>,
) -> Result<Vec<NodeJobResult>, Stop> {
    for s in &specs {
        c.journal
            .set_phase(&s.node, phase, PhaseState::Running, None);
    }
    c.store.save(&mut c.journal).await?;
    let mark = move |j: &mut Journal, node: &str, error: Option<String>| {
        let state = if error.is_none() {
            PhaseState::Done
        } else {
            PhaseState::Failed
        };
        j.set_phase(node, phase, state, error);
    };
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
    Ok(outcomes)
}

/// A converted node's result from its Job's outcome.
fn job_result(r: &NodeJobResult, role: Role, prefix: &str) -> NodeResult {
    job_node_result(
        r,
        role.as_str(),
        NodeOutcome::Converted,
        "converted",
        prefix,
    )
}

/// The results of the nodes no Job of this run converts: already converted, NotReady, or
/// their phase skipped.
pub(super) fn planned_results(plan: &Plan) -> BTreeMap<String, NodeResult> {
    plan.nodes
        .iter()
        .filter(|n| n.action != NodeAction::Convert || !plan.runs(n.role.phase()))
        .map(|n| {
            (
                n.name.clone(),
                skipped_result(n.name.clone(), n.role, n.action),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_runs_the_planned_phases_in_the_planned_order() {
        let ids = crate::exec::phases::ids(&table());
        assert_eq!(ids, plan::CONVERT_PHASES);
    }

    #[test]
    fn each_row_runs_its_own_phase() {
        for p in ConvertPhase::ALL {
            assert_eq!(row(p).id, p.id(), "{p:?}");
        }
    }
}
