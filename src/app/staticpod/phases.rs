//! The phase table of `staticpod upgrade`, `rollback` and `ota apply`, run by `exec::phases`
//! as convert's and revert's are: publish (a YurtStaticSet gets the template, held at OTA) →
//! store (the revision in ConfigMap `yurt-static-set-NAME`) → nodes (the strategy) →
//! conditions (`ota apply` marks the new mirror pods). The real run and `--dry-run=server`
//! walk the same rows. The YurtStaticSet's own strategy is put back after the table, whatever
//! happened (`roll::settle`).

use std::time::Duration;

use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use super::*;
use crate::cluster::apply::describe;
use crate::cluster::jobs::JobImage;
use crate::exec::dry_run::{Write, create_job};
use crate::exec::phases::{
    Flow, PhaseDef, PhaseFuture, RunContext, Stop, Work, WritesFuture, no_writes,
};
use crate::exec::rollout::static_pod_job;
use crate::output::{Event, Reporter};
use crate::rollout::NodeResult;

pub(super) const PUBLISH: &str = "publish";
pub(super) const STORE: &str = "store";
pub(super) const NODES: &str = "nodes";
pub(super) const CONDITIONS: &str = "conditions";
/// After the table, whatever happened: a YurtStaticSet gets its own strategy back.
pub(super) const SETTLE: &str = "settle";

/// What the `nodes` phase does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NodeWork {
    /// advanced-rolling-update: node Jobs in the rollout machine's order.
    Roll,
    /// advanced-rolling-update with `--pause`: the revision is stored, no node starts.
    Paused,
    /// ota: `PodNeedUpgrade` on every mirror pod, True where the revision differs.
    Mark,
    /// `ota apply`: node Jobs on the named nodes, then every mirror pod marked again.
    Apply,
}

/// The run context every phase function gets.
pub(super) struct RolloutRun<'a> {
    pub ctx: &'a Context,
    /// The store as the run saves it (its current revision is the target).
    pub set: StaticSet,
    pub strategy: Strategy,
    pub work: NodeWork,
    /// The nodes the run starts first (what `--dry-run=server` sends Jobs for).
    pub plan: RolloutPlan,
    pub targets: Vec<NodeInput>,
    pub opts: Options,
    pub node_timeout: Duration,
    pub servant_image: &'a JobImage,
    pub rep: &'a dyn Reporter,
    pub lost: LostSignal,
    pub result: RolloutResult,
    /// What the node work came to; the result says why.
    pub exit: Exit,
}

/// How a rollout reaches its nodes: the servant's image and each node's time.
pub(super) struct NodeJobs<'a> {
    pub servant_image: &'a JobImage,
    pub node_timeout: Duration,
}

impl<'a> RolloutRun<'a> {
    /// A run towards `set`'s current revision over `targets`, reporting to `rep`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        ctx: &'a Context,
        set: StaticSet,
        strategy: Strategy,
        work: NodeWork,
        targets: Vec<NodeInput>,
        opts: Options,
        jobs: NodeJobs<'a>,
        rep: &'a dyn Reporter,
        lost: LostSignal,
    ) -> Self {
        let target = set.current.hash.clone();
        let (name, ns) = (&ctx.name, &ctx.ns);
        let plan = plan::rollout_plan(name, ns, strategy.as_str(), targets.clone(), &opts, &target);
        let mut result = RolloutResult::new(name, ns, strategy.as_str());
        result.revision = target;
        result.revision_number = set.current.number;
        RolloutRun {
            ctx,
            set,
            strategy,
            work,
            plan,
            targets,
            opts,
            node_timeout: jobs.node_timeout,
            servant_image: jobs.servant_image,
            rep,
            lost,
            result,
            exit: Exit::Ok,
        }
    }
}

impl RunContext for RolloutRun<'_> {
    // staticpod has no --skip-phases
    fn runs(&self, _id: &str) -> bool {
        true
    }

    fn reporter(&self) -> &dyn Reporter {
        self.rep
    }

    fn lock_lost(&self) -> Option<watch::Receiver<Option<ClusterError>>> {
        self.lost.clone()
    }

    /// The nodes the run starts (node Jobs), what the `nodes` bar counts to.
    fn phase_nodes(&self, id: &str) -> Option<usize> {
        let jobs = matches!(self.work, NodeWork::Roll | NodeWork::Apply);
        (id == NODES && jobs).then_some(self.plan.nodes.len())
    }

    // progress is recorded in the store itself, by the phases
    fn begin_changes(&mut self) -> LocalBoxFuture<'_, Result<(), ClusterError>> {
        Box::pin(async { Ok(()) })
    }
}

pub(super) fn table<'a>() -> Vec<PhaseDef<RolloutRun<'a>>> {
    vec![
        PhaseDef {
            id: PUBLISH,
            changes: true,
            stops_itself: false,
            work: |r| Work::when(r.ctx.yss.is_some() && r.work != NodeWork::Apply),
            run: publish,
            // yurt-manager renders the template; nothing of ours to send before it has
            dry_run: no_writes,
        },
        PhaseDef {
            id: STORE,
            changes: true,
            stops_itself: false,
            // `ota apply` records its progress in the store as its nodes end
            work: |r| Work::when(r.work != NodeWork::Apply),
            run: store,
            dry_run: store_writes,
        },
        PhaseDef {
            id: NODES,
            changes: true,
            stops_itself: true,
            work: |_| Work::Some,
            run: nodes,
            dry_run: node_writes,
        },
        PhaseDef {
            id: CONDITIONS,
            changes: true,
            stops_itself: false,
            work: |r| Work::when(r.work == NodeWork::Apply),
            run: |r| {
                Box::pin(async move {
                    // the new mirror pods carry no condition yet
                    let target = r.set.current.hash.clone();
                    mark_pods(r.ctx, &target).await?;
                    Ok(Flow::Continue)
                })
            },
            // the pods it marks do not exist before the run
            dry_run: no_writes,
        },
    ]
}

/// The YurtStaticSet gets the revision's template and is held at OTA (so the controller
/// upgrades no node itself); the revision becomes the one the controller rendered.
fn publish<'r>(r: &'r mut RolloutRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        if let Some(yss) = &r.ctx.yss {
            super::publish(r.ctx, yss, &mut r.set, r.strategy).await?;
            r.result.revision = r.set.current.hash.clone();
            r.result.revision_number = r.set.current.number;
        }
        Ok(Flow::Continue)
    })
}

fn store<'r>(r: &'r mut RolloutRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        staticset::save(&r.ctx.cluster, &r.set).await?;
        r.rep.event(Event::Note {
            phase: STORE,
            message: format!(
                "static pod {}/{}: revision {} ({}) stored in ConfigMap {}",
                r.ctx.ns,
                r.ctx.name,
                r.set.current.number,
                r.set.current.hash,
                staticset::configmap_name(&r.ctx.name)
            ),
        });
        Ok(Flow::Continue)
    })
}

fn store_writes<'r>(r: &'r RolloutRun<'_>) -> WritesFuture<'r> {
    Box::pin(async move {
        let cm = staticset::configmap_name(&r.ctx.name);
        let answer = staticset::apply_store(&r.ctx.cluster, &r.set, true).await;
        Ok(vec![Write::of(
            "apply",
            describe("ConfigMap", Some(&r.ctx.ns), &cm),
            answer,
        )])
    })
}

fn nodes<'r>(r: &'r mut RolloutRun<'_>) -> PhaseFuture<'r> {
    Box::pin(async move {
        match r.work {
            NodeWork::Mark => {
                let target = r.set.current.hash.clone();
                match mark_pods(r.ctx, &target).await {
                    Ok(nodes) => {
                        let need = nodes
                            .iter()
                            .filter(|n| n.result == NodeResult::NeedsUpgrade)
                            .count();
                        let (ns, name) = (&r.ctx.ns, &r.ctx.name);
                        r.result.message = format!(
                            "OTA: {need} of {} node(s) marked PodNeedUpgrade=True; upgrade them with `yurtctl staticpod ota apply {name} -n {ns} --node NODE` or YurtHub's POST /openyurt.io/v1/namespaces/{ns}/pods/{name}-<node>/upgrade",
                            nodes.len(),
                        );
                        r.result.nodes = nodes;
                        r.exit = Exit::Ok;
                    }
                    Err(e) => {
                        r.result.message = e.to_string();
                        r.exit = CommandError::from(e).exit();
                    }
                }
                Ok(Flow::Continue)
            }
            NodeWork::Paused => {
                r.result.message = format!(
                    "paused: revision {} is stored and no node was started; re-run without --pause to roll it out",
                    r.set.current.hash
                );
                r.exit = Exit::Ok;
                Ok(Flow::Continue)
            }
            NodeWork::Roll | NodeWork::Apply => {
                drive(r).await.map_err(Stop::Cluster)?;
                // a halted roll-out ends here; `ota apply` marks the pods whatever happened
                Ok(if r.exit == Exit::Ok || r.work == NodeWork::Apply {
                    Flow::Continue
                } else {
                    Flow::Finish
                })
            }
        }
    })
}

/// The node Jobs of the nodes the run starts first, or the `PodNeedUpgrade` patches the
/// marks would send.
fn node_writes<'r>(r: &'r RolloutRun<'_>) -> WritesFuture<'r> {
    Box::pin(async move {
        let ctx = r.ctx;
        let mut out = Vec::new();
        match r.work {
            NodeWork::Paused => {}
            NodeWork::Mark => {
                for m in ctx.mirrors.values() {
                    let need = m.revision.as_deref() != Some(r.plan.revision.as_str());
                    let answer =
                        staticset::set_need_upgrade(&ctx.cluster, &ctx.ns, m, need, true).await;
                    // false: the condition already says so and the run would not write
                    if !matches!(answer, Ok(false)) {
                        out.push(Write::of(
                            "patch",
                            format!("{} on pod {}/{}", staticset::NEED_UPGRADE, ctx.ns, m.pod),
                            answer.map(drop),
                        ));
                    }
                }
            }
            NodeWork::Roll | NodeWork::Apply => {
                let (up, _) = crate::naming::static_pod_actions(&ctx.name);
                for n in &r.plan.nodes {
                    let job = static_pod_job(
                        &up,
                        &n.name,
                        &r.set,
                        r.servant_image,
                        false,
                        r.node_timeout,
                    );
                    out.push(create_job(&ctx.cluster, &ctx.ns, &job, r.node_timeout).await);
                }
            }
        }
        Ok(out)
    })
}

/// Runs the rollout machine over the targets; its end becomes the result's message and exit.
async fn drive(r: &mut RolloutRun<'_>) -> Result<(), ClusterError> {
    let outcome = Drive {
        cluster: &r.ctx.cluster,
        set: &mut r.set,
        nodes: std::mem::take(&mut r.targets),
        options: r.opts.clone(),
        node_timeout: r.node_timeout,
        servant_image: r.servant_image.clone(),
        rep: r.rep,
        phase: NODES,
        lock_lost: r.lost.clone(),
    }
    .run()
    .await?;
    let result = &mut r.result;
    result.max_unavailable = outcome.budget;
    result.nodes = outcome.nodes;
    let upgraded = result.count(NodeResult::Upgraded) + result.count(NodeResult::AlreadyUpdated);
    let skipped = result.count(NodeResult::SkippedNotReady);
    let total = result.nodes.len();
    let on = format!(
        "{upgraded} of {total} node(s) on revision {}",
        result.revision
    );
    let rerun = "re-run the same command to continue";
    let (message, exit) = match &outcome.end {
        End::LockLost(e) => {
            let stopped = CommandError::at("stopped: ", e.clone());
            (format!("{stopped}; {on}"), stopped.exit())
        }
        End::Interrupted => (
            format!("interrupted: {on}; progress is recorded, {rerun}"),
            Exit::Interrupted,
        ),
        End::Halt(h) => {
            let next = match h {
                HaltReason::TooManyFailures { .. } => {
                    "Failed nodes were restored to their previous manifest; fix the cause (see the Job logs and pod state above) and re-run, or roll back with `yurtctl staticpod rollback`."
                }
                _ => "Check the node, then re-run or roll back with `yurtctl staticpod rollback`.",
            };
            (format!("rollout stopped: {h}; {on}. {next}"), Exit::Partial)
        }
        End::Done(Completion::Canary { remaining }) => (
            format!(
                "canary done: {on}; {remaining} node(s) left — check them, then re-run without --canary (or with a larger one) to continue"
            ),
            Exit::Ok,
        ),
        End::Done(Completion::All) if skipped > 0 => (
            format!("{on}; {skipped} NotReady node(s) skipped — {rerun} once they are Ready"),
            Exit::Partial,
        ),
        End::Done(Completion::All) => (on, Exit::Ok),
    };
    result.message = message;
    r.exit = exit;
    Ok(())
}

/// OTA: `PodNeedUpgrade` on every mirror pod of the static pod — True where the revision
/// differs from `target`, False where it matches (also after a template went back, which
/// YurtStaticSet leaves stale).
pub(super) async fn mark_pods(
    ctx: &Context,
    target: &str,
) -> Result<Vec<RolloutNode>, ClusterError> {
    let mirrors = staticset::mirror_pods(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    let mut out = Vec::new();
    for (node, m) in mirrors.by_node {
        let need = m.revision.as_deref() != Some(target);
        staticset::set_need_upgrade(&ctx.cluster, &ctx.ns, &m, need, false).await?;
        let result = if need {
            NodeResult::NeedsUpgrade
        } else {
            NodeResult::UpToDate
        };
        out.push(RolloutNode {
            message: format!("PodNeedUpgrade={}", if need { "True" } else { "False" }),
            ..RolloutNode::new(&node, result)
        });
    }
    Ok(out)
}
