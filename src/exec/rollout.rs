//! Drives the pure rollout machine (`rollout::Rollout`) with the cluster: node Jobs running
//! `yurtctl node-servant static-pod-upgrade` (one JobRunner, ONE Job watch), one watch on the
//! namespace's pods (mirror pods: revision and Ready) and one on Nodes (Ready). A node counts
//! as upgraded when its Job succeeded and its mirror pod carries the target revision and is
//! Ready (for `--min-ready-seconds`). A failed or timed-out node is restored by a second Job
//! (`--restore`), and its Job log and mirror-pod state are kept for the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cluster::jobs::{JobRunner, NodeJob, NodeJobResult, RunJobsOptions};
use crate::cluster::nodes::node_state_changes;
use crate::cluster::staticset::{self, MirrorPod, StaticSet};
use crate::cluster::watch::Change;
use crate::cluster::{Cluster, ClusterError};
use crate::exec::servant_job::{ServantVolume, servant_job};
use crate::output::staticpod::RolloutNode;
use crate::output::{Event, NodeStep, Reporter};
use crate::rollout::{
    Action, Completion, HaltReason, LogicalTime, NodeEvent, NodeInput, NodePhase, NodeResult,
    Options, Rollout,
};

#[path = "rollout_report.rs"]
mod report;
use report::{failure_line, failure_logs, pod_state};

const MANIFEST_MOUNT: &str = "/yurtctl/manifest";

/// The node Job that installs (or with `restore`, puts back) the static pod's manifest: the
/// servant Job every command runs, with the store's ConfigMap mounted for an upgrade.
pub fn static_pod_job(
    action: &str,
    node: &str,
    set: &StaticSet,
    image: &str,
    restore: bool,
    timeout: Duration,
) -> NodeJob {
    let manifest_file = format!("{MANIFEST_MOUNT}/manifest.yaml");
    let mut args = vec!["--name", set.manifest_key.as_str()];
    let mut volumes = Vec::new();
    if restore {
        args.push("--restore");
    } else {
        args.extend(["--manifest-file", manifest_file.as_str()]);
        volumes.push(ServantVolume {
            name: "manifest",
            mount_path: MANIFEST_MOUNT,
            source: json!({"configMap": {
                "name": staticset::configmap_name(&set.name),
                "items": [{"key": set.manifest_key, "path": "manifest.yaml"}]
            }}),
        });
    }
    let mut job = servant_job(
        action,
        node,
        image,
        "static-pod-upgrade",
        &args,
        timeout,
        &volumes,
    );
    // The revision the Job installs, as yurt-manager marks its upgrade workers.
    std::sync::Arc::make_mut(&mut job.template)
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            crate::naming::revision::HASH_ANNOTATION.into(),
            set.current.hash.clone(),
        );
    job
}

/// How the drive ended.
#[derive(Debug, Clone)]
pub enum End {
    Done(Completion),
    Halt(HaltReason),
    Interrupted,
    /// Another run took the rollout lock from us (the error says who).
    LockLost(ClusterError),
}

/// Turns `Some` when the rollout lock is lost (`LockGuard::lost_signal`); None: no lock.
pub type LostSignal = Option<tokio::sync::watch::Receiver<Option<ClusterError>>>;

/// Resolves when the lock is lost; never without a lock.
async fn lock_lost_of(signal: &mut LostSignal) -> ClusterError {
    if let Some(rx) = signal
        && let Ok(v) = rx.wait_for(|l| l.is_some()).await
        && let Some(e) = v.clone()
    {
        return e;
    }
    std::future::pending().await
}

pub struct DriveOutcome {
    pub end: End,
    pub nodes: Vec<RolloutNode>,
    pub budget: usize,
    /// Most nodes upgrading or settling at once.
    pub peak_in_flight: usize,
}

enum Msg {
    Pod(MirrorPod),
    PodGone(String),
    NodeReady(String, bool),
    UpgradeJob(String, Box<NodeJobResult>),
    RestoreJob(String, Box<NodeJobResult>),
    WatchError(String),
    Saved(Option<ClusterError>),
}

/// Parameters of one drive.
pub struct Drive<'a> {
    pub cluster: &'a Cluster,
    pub set: &'a mut StaticSet,
    pub nodes: Vec<NodeInput>,
    pub options: Options,
    pub node_timeout: Duration,
    pub servant_image: String,
    /// Where progress goes: a node's start and end as [`Event::Node`] of `phase` (what the
    /// bars count), the rest as notes.
    pub rep: &'a dyn Reporter,
    pub phase: &'a str,
    /// Stops the drive when the rollout lock is lost.
    pub lock_lost: LostSignal,
}

fn spawn_watchers(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    tx: mpsc::UnboundedSender<Msg>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut pods = staticset::mirror_pod_changes(cluster, ns, name);
    let mut nodes = node_state_changes(cluster);
    let ptx = tx.clone();
    let p = tokio::spawn(async move {
        while let Some(ev) = pods.next().await {
            match ev {
                Ok(Change::Apply(m)) | Ok(Change::InitApply(m)) => {
                    let _ = ptx.send(Msg::Pod(m));
                }
                Ok(Change::Delete(m)) => {
                    let _ = ptx.send(Msg::PodGone(m.node));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = ptx.send(Msg::WatchError(format!("pods: {e}")));
                }
            }
        }
    });
    let n = tokio::spawn(async move {
        while let Some(ev) = nodes.next().await {
            match ev {
                Ok(Change::Apply(n)) | Ok(Change::InitApply(n)) => {
                    let _ = tx.send(Msg::NodeReady(n.name, n.ready));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Msg::WatchError(format!("nodes: {e}")));
                }
            }
        }
    });
    vec![p, n]
}

fn ignore_job_event(_: crate::cluster::jobs::JobEvent) {}

/// Saves progress at most this often while nodes finish.
const SAVE_EVERY: Duration = Duration::from_millis(500);

impl Drive<'_> {
    pub async fn run(self) -> Result<DriveOutcome, ClusterError> {
        let Drive {
            cluster,
            set,
            nodes,
            options,
            node_timeout,
            servant_image,
            rep,
            phase,
            mut lock_lost,
        } = self;
        let note = |message: String| rep.event(Event::Note { phase, message });
        let report = |node: &str, step: NodeStep, message: String, details: Vec<String>| {
            rep.event(Event::Node {
                phase,
                node,
                step,
                message,
                details,
            })
        };
        let ns = set.namespace.clone();
        let target = set.current.hash.clone();
        let names: HashSet<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let mut machine = Rollout::new(nodes, &options, &target);
        // the nodes the phase's bar counts (`RolloutPlan::nodes`); skips of the others are notes
        let planned: HashSet<String> = machine
            .planned_order()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let (up_action, restore_action) = crate::naming::static_pod_actions(&set.name);
        let runner = JobRunner::start(
            cluster,
            &ns,
            &[up_action.as_str(), restore_action.as_str()],
            RunJobsOptions {
                concurrency: 1,
                per_job_timeout: node_timeout,
                ..Default::default()
            },
        )
        .await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        let watchers = spawn_watchers(cluster, &ns, &set.name, tx);
        struct Abort(Vec<tokio::task::JoinHandle<()>>);
        impl Drop for Abort {
            fn drop(&mut self) {
                for h in &self.0 {
                    h.abort();
                }
            }
        }
        let _abort = Abort(watchers);

        let t0 = Instant::now();
        let now = || LogicalTime::from_millis(t0.elapsed().as_millis() as u64);
        let mut pods: HashMap<String, MirrorPod> = HashMap::new();
        let mut node_ready: HashMap<String, bool> = HashMap::new();
        let mut deadlines: HashMap<String, Instant> = HashMap::new();
        let mut job_done: HashSet<String> = HashSet::new();
        let mut restoring = 0usize;
        let mut details: BTreeMap<String, RolloutNode> = BTreeMap::new();
        let mut wake: Option<Instant> = None;
        let mut end: Option<End> = None;
        let mut last_save = Instant::now();
        let mut dirty = false;
        let mut saving = false;
        let mut peak = 0usize;
        // Ctrl-C is ours to handle (on a terminal the cursor guard would otherwise exit 130
        // before the progress is saved).
        let _handled = crate::output::terminal::handles_interrupt();
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);

        // Jobs are built from the revision as it was when the drive began. Their futures are
        // polled here (not spawned), next to the watches.
        let job_set = set.clone();
        let runner = &runner;
        let mut tasks: FuturesUnordered<Pin<Box<dyn Future<Output = Msg> + '_>>> =
            FuturesUnordered::new();
        let restore = |node: &str| -> Pin<Box<dyn Future<Output = Msg> + '_>> {
            let job = static_pod_job(
                &restore_action,
                node,
                &job_set,
                &servant_image,
                true,
                node_timeout,
            );
            let node = node.to_string();
            Box::pin(async move {
                let r = runner.run(job, &ignore_job_event).await;
                Msg::RestoreJob(node, Box::new(r))
            })
        };

        loop {
            // 1. Act on what the machine proposes.
            if end.is_none() {
                let t = now();
                for a in machine.next_actions(t) {
                    match a {
                        Action::Start(n) => {
                            machine.apply(NodeEvent::Started(n.clone())).map_err(|e| {
                                ClusterError::InvalidObject {
                                    object: format!("rollout of {}", set.name),
                                    message: e.to_string(),
                                }
                            })?;
                            report(&n, NodeStep::Started, "upgrading".into(), Vec::new());
                            deadlines.insert(n.clone(), Instant::now() + node_timeout);
                            let job = static_pod_job(
                                &up_action,
                                &n,
                                &job_set,
                                &servant_image,
                                false,
                                node_timeout,
                            );
                            tasks.push(Box::pin(async move {
                                let r = runner.run(job, &ignore_job_event).await;
                                Msg::UpgradeJob(n, Box::new(r))
                            }));
                        }
                        Action::Skip(n, reason) => {
                            let _ = machine.apply(NodeEvent::Skipped(n.clone()));
                            let result = NodeResult::from(reason);
                            if planned.contains(&n) {
                                report(&n, NodeStep::Skipped, reason.to_string(), Vec::new());
                            } else {
                                note(format!("node {n}: {reason}"));
                            }
                            set.progress.nodes.insert(n.clone(), result);
                            details.insert(
                                n.clone(),
                                RolloutNode {
                                    message: reason.to_string(),
                                    ..RolloutNode::new(&n, result)
                                },
                            );
                            dirty = true;
                        }
                        Action::Settled(n) => {
                            let _ = machine.apply(NodeEvent::ReadyFor {
                                node: n.clone(),
                                duration: options.min_ready,
                            });
                        }
                        Action::WakeAt(w) => {
                            wake = Some(t0 + Duration::from_millis(w.as_millis()));
                        }
                        Action::Halt(h) => end = Some(End::Halt(h)),
                        Action::Done(c) => end = Some(End::Done(c)),
                    }
                }
                peak = peak.max(machine.occupied());
            }
            if end.is_some() && restoring == 0 {
                break;
            }
            // Progress is saved in the background (one save at a time), so the window never
            // waits for the ConfigMap.
            if dirty && !saving && last_save.elapsed() >= SAVE_EVERY {
                let snapshot = set.clone();
                tasks.push(Box::pin(async move {
                    Msg::Saved(staticset::save(cluster, &snapshot).await.err())
                }));
                saving = true;
                last_save = Instant::now();
                dirty = false;
            }
            // 2. Wait for the next fact.
            let next_deadline = deadlines.values().min().copied();
            let timer = [
                next_deadline,
                wake,
                (dirty && !saving).then_some(last_save + SAVE_EVERY),
            ]
            .into_iter()
            .flatten()
            .min();
            let msg = tokio::select! {
                m = rx.recv() => m,
                Some(m) = tasks.next(), if !tasks.is_empty() => Some(m),
                _ = async { match timer { Some(t) => tokio::time::sleep_until(t).await, None => std::future::pending().await } } => None,
                _ = &mut ctrl_c => {
                    end = Some(End::Interrupted);
                    break;
                }
                e = lock_lost_of(&mut lock_lost) => {
                    end = Some(End::LockLost(e));
                    break;
                }
            };
            wake = None;
            let t = now();
            match msg {
                Some(Msg::Pod(p)) => {
                    // The new pod must stay Ready through --min-ready-seconds.
                    if !p.ready
                        && matches!(machine.phase(&p.node), Some(NodePhase::Settling { .. }))
                    {
                        let _ = machine.apply(NodeEvent::BecameNotReady(p.node.clone()));
                        report(
                            &p.node,
                            NodeStep::Regressed,
                            "its new pod stopped being Ready within --min-ready-seconds".into(),
                            Vec::new(),
                        );
                    }
                    pods.insert(p.node.clone(), p);
                }
                Some(Msg::PodGone(n)) => {
                    pods.remove(&n);
                }
                Some(Msg::NodeReady(n, ready))
                    if names.contains(&n) && node_ready.insert(n.clone(), ready) != Some(ready) =>
                {
                    let ev = if ready {
                        NodeEvent::BecameReady(n.clone())
                    } else {
                        NodeEvent::BecameNotReady(n.clone())
                    };
                    // a node whose new pod stopped being Ready regressed already
                    let was = machine.phase(&n);
                    if let Err(e) = machine.apply(ev) {
                        tracing::debug!("{e}");
                    }
                    let regressed = Some(NodePhase::Regressed);
                    if !ready && was != regressed && machine.phase(&n) == regressed {
                        let why = "went NotReady after its upgrade".to_string();
                        report(&n, NodeStep::Regressed, why, Vec::new());
                    }
                }
                Some(Msg::UpgradeJob(n, r)) if machine.phase(&n) == Some(NodePhase::InFlight) => {
                    if r.succeeded() {
                        job_done.insert(n.clone());
                    } else {
                        deadlines.remove(&n);
                        let _ = machine.apply(NodeEvent::Failed(n.clone()));
                        let (why, mut lines) = failure_line(&r);
                        lines.push(format!("  mirror pod: {}", pod_state(pods.get(&n))));
                        let message = format!(
                            "the upgrade Job failed: {why}; restoring the previous manifest"
                        );
                        report(&n, NodeStep::Failed, message, lines);
                        details.insert(
                            n.clone(),
                            RolloutNode {
                                message: format!(
                                    "the upgrade Job failed ({why}); the previous manifest was restored"
                                ),
                                logs: failure_logs(&r),
                                pod_state: Some(pod_state(pods.get(&n))),
                                ..RolloutNode::new(&n, NodeResult::Failed)
                            },
                        );
                        restoring += 1;
                        tasks.push(restore(&n));
                    }
                }
                Some(Msg::RestoreJob(n, r)) => {
                    restoring -= 1;
                    if !r.succeeded() {
                        note(format!(
                            "warning: node {n}: restoring the previous manifest failed too: {}",
                            failure_line(&r).0
                        ));
                    }
                    if !r.succeeded()
                        && let Some(d) = details.get_mut(&n)
                    {
                        d.message = format!(
                            "{}; RESTORING FAILED too: {}",
                            d.message,
                            failure_logs(&r).unwrap_or_default()
                        );
                    }
                }
                Some(Msg::WatchError(e)) => tracing::debug!("watch: {e}; retrying"),
                Some(Msg::Saved(err)) => {
                    saving = false;
                    if let Some(e) = err {
                        tracing::warn!("saving the rollout progress failed (retried later): {e}");
                        dirty = true;
                    }
                }
                // a late Job result, a node we do not target, a repeated readiness
                Some(_) | None => {}
            }
            // 3. Timeouts and upgrades visible on mirror pods.
            let in_flight: Vec<String> = deadlines.keys().cloned().collect();
            for n in in_flight {
                let p = pods.get(&n);
                if job_done.contains(&n)
                    && let Some(p) = p.filter(|p| p.ready && p.revision.as_deref() == Some(&target))
                {
                    // started when its deadline was set
                    let left = deadlines.remove(&n).map(|d| d - Instant::now());
                    let took = node_timeout.saturating_sub(left.unwrap_or_default());
                    let _ = machine.apply(NodeEvent::Upgraded {
                        node: n.clone(),
                        ready_at: t,
                    });
                    let how = format!("upgraded in {:.1}s ({} Ready)", took.as_secs_f64(), p.pod);
                    report(&n, NodeStep::Succeeded, how, Vec::new());
                    set.progress.nodes.insert(n.clone(), NodeResult::Upgraded);
                    dirty = true;
                } else if deadlines[&n] <= Instant::now() {
                    deadlines.remove(&n);
                    let _ = machine.apply(NodeEvent::TimedOut(n.clone()));
                    report(
                        &n,
                        NodeStep::Failed,
                        format!(
                            "not upgraded within --node-timeout {}s; restoring the previous manifest",
                            node_timeout.as_secs_f64()
                        ),
                        vec![format!("  mirror pod: {}", pod_state(p))],
                    );
                    details.insert(
                        n.clone(),
                        RolloutNode {
                            message: format!(
                                "the new pod was not Ready on revision {target} within {}s; the previous manifest was restored",
                                node_timeout.as_secs_f64()
                            ),
                            pod_state: Some(pod_state(p)),
                            ..RolloutNode::new(&n, NodeResult::TimedOut)
                        },
                    );
                    set.progress.nodes.insert(n.clone(), NodeResult::TimedOut);
                    dirty = true;
                    restoring += 1;
                    tasks.push(restore(&n));
                }
            }
        }
        drop(tasks);
        // Results in rollout order.
        let mut out = Vec::new();
        for (n, phase) in machine.nodes() {
            let result = NodeResult::of_phase(phase);
            if result.is_final() {
                set.progress.nodes.insert(n.to_string(), result);
            }
            let d = details
                .remove(n)
                .unwrap_or_else(|| RolloutNode::new(n, result));
            out.push(RolloutNode { result, ..d });
        }
        // After a lost lock the store belongs to the run that took it over.
        if !matches!(end, Some(End::LockLost(_))) {
            runner.finish().await;
            staticset::save(cluster, set).await?;
        }
        Ok(DriveOutcome {
            end: end.unwrap_or(End::Interrupted),
            nodes: out,
            budget: machine.budget(),
            peak_in_flight: peak,
        })
    }
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
