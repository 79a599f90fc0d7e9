//! The rollout driver's loop: its state, a handler per kind of message or event, and a `run`
//! that only waits for the next one and hands it on.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::report::{failure_line, failure_logs, pod_state};
use super::{Drive, DriveOutcome, End, LostSignal, Msg, lock_lost_of, static_pod_job};
use crate::cluster::jobs::{JobEvent, JobImage, JobRunner, NodeJobResult};
use crate::cluster::staticset::{self, MirrorPod, StaticSet};
use crate::cluster::{Cluster, ClusterError};
use crate::output::staticpod::RolloutNode;
use crate::output::{Event, NodeStep, Reporter};
use crate::rollout::{Action, LogicalTime, NodeEvent, NodePhase, NodeResult, Rollout, SkipReason};

/// Saves progress at most this often while nodes finish.
const SAVE_EVERY: Duration = Duration::from_millis(500);

fn ignore_job_event(_: JobEvent) {}

/// What wakes the loop besides a message.
enum Wake {
    Msg(Msg),
    /// A deadline, the machine's wake-up or a due save (the loop checks all of them), or the
    /// watches' channel closing.
    Timer,
    /// A stop (Ctrl-C, SIGTERM) or a lost lock.
    Stop(End),
}

/// Progress is saved in the background, one save at a time, so the window never waits for
/// the ConfigMap.
struct Saving {
    last: Instant,
    /// Progress changed since the last save began.
    dirty: bool,
    running: bool,
}

/// One drive's state, from the first action to the results.
pub(super) struct Driver<'d> {
    cluster: &'d Cluster,
    set: &'d mut StaticSet,
    /// The revision as it was when the drive began: every Job is built from it.
    job_set: StaticSet,
    target: String,
    min_ready: Duration,
    node_timeout: Duration,
    servant_image: JobImage,
    rep: &'d dyn Reporter,
    phase: &'d str,
    lock_lost: LostSignal,
    runner: &'d JobRunner,
    up_action: String,
    restore_action: String,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// Jobs and saves: polled here (not spawned), next to the watches.
    tasks: FuturesUnordered<LocalBoxFuture<'d, Msg>>,
    machine: Rollout,
    /// The targets; other nodes' readiness is ignored.
    names: HashSet<String>,
    /// The nodes the phase's bar counts (`RolloutPlan::nodes`); skips of the others are notes.
    planned: HashSet<String>,
    t0: Instant,
    pods: HashMap<String, MirrorPod>,
    node_ready: HashMap<String, bool>,
    /// Nodes upgrading: when they time out.
    deadlines: HashMap<String, Instant>,
    /// Nodes whose upgrade Job succeeded (their mirror pod decides).
    job_done: HashSet<String>,
    /// Restore Jobs running; the drive waits for them.
    restoring: usize,
    details: BTreeMap<String, RolloutNode>,
    wake: Option<Instant>,
    end: Option<End>,
    saving: Saving,
    /// Most nodes upgrading or settling at once.
    peak: usize,
}

impl<'d> Driver<'d> {
    pub(super) fn new(
        drive: Drive<'d>,
        runner: &'d JobRunner,
        rx: mpsc::UnboundedReceiver<Msg>,
        (up_action, restore_action): (String, String),
    ) -> Self {
        let target = drive.set.current.hash.clone();
        let names = drive.nodes.iter().map(|n| n.name.clone()).collect();
        let machine = Rollout::new(drive.nodes, &drive.options, &target);
        let planned = machine
            .planned_order()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Driver {
            cluster: drive.cluster,
            job_set: drive.set.clone(),
            set: drive.set,
            target,
            min_ready: drive.options.min_ready,
            node_timeout: drive.node_timeout,
            servant_image: drive.servant_image,
            rep: drive.rep,
            phase: drive.phase,
            lock_lost: drive.lock_lost,
            runner,
            up_action,
            restore_action,
            rx,
            tasks: FuturesUnordered::new(),
            machine,
            names,
            planned,
            t0: Instant::now(),
            pods: HashMap::new(),
            node_ready: HashMap::new(),
            deadlines: HashMap::new(),
            job_done: HashSet::new(),
            restoring: 0,
            details: BTreeMap::new(),
            wake: None,
            end: None,
            saving: Saving {
                last: Instant::now(),
                dirty: false,
                running: false,
            },
            peak: 0,
        }
    }

    pub(super) async fn run(mut self) -> Result<DriveOutcome, ClusterError> {
        // the runner handles stops around this phase; the drive ends on one in its own state
        let stop = crate::exec::stop::asked();
        tokio::pin!(stop);
        // the watches' channel, until both watch tasks end (then it would wake every pass)
        let mut watching = true;
        loop {
            if self.end.is_none() {
                self.act()?;
            }
            if self.end.is_some() && self.restoring == 0 {
                break;
            }
            self.save_in_background();
            let timer = self.next_timer();
            let wake = tokio::select! {
                m = self.rx.recv(), if watching => match m {
                    Some(m) => Wake::Msg(m),
                    None => {
                        watching = false;
                        Wake::Timer
                    }
                },
                Some(m) = self.tasks.next(), if !self.tasks.is_empty() => Wake::Msg(m),
                _ = sleep_until(timer) => Wake::Timer,
                () = &mut stop => {
                    crate::exec::stop::acted_on();
                    Wake::Stop(End::Interrupted)
                }
                e = lock_lost_of(&mut self.lock_lost) => Wake::Stop(End::LockLost(e)),
            };
            self.wake = None;
            let t = self.now();
            match wake {
                Wake::Msg(m) => self.on_msg(m),
                Wake::Timer => {}
                Wake::Stop(end) => {
                    self.end = Some(end);
                    break;
                }
            }
            self.on_time(t);
        }
        self.finish().await
    }

    fn now(&self) -> LogicalTime {
        LogicalTime::from_millis(self.t0.elapsed().as_millis() as u64)
    }

    fn on_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Pod(p) => self.on_pod(p),
            Msg::PodGone(n) => {
                self.pods.remove(&n);
            }
            Msg::NodeReady(n, ready) => self.on_node_ready(n, ready),
            Msg::UpgradeJob(n, r) => self.on_upgrade_job(n, *r),
            Msg::RestoreJob(n, r) => self.on_restore_job(n, *r),
            Msg::WatchError(e) => tracing::debug!("watch: {e}; retrying"),
            Msg::Saved(err) => self.on_saved(err),
        }
    }

    fn note(&self, message: String) {
        self.rep.event(Event::Note {
            phase: self.phase,
            message,
        });
    }

    fn report(&self, node: &str, step: NodeStep, message: String, details: Vec<String>) {
        self.rep.event(Event::Node {
            phase: self.phase,
            node,
            step,
            message,
            details,
        });
    }

    /// Acts on what the machine proposes now.
    fn act(&mut self) -> Result<(), ClusterError> {
        for a in self.machine.next_actions(self.now()) {
            match a {
                Action::Start(n) => self.start(n)?,
                Action::Skip(n, reason) => self.skip(n, reason),
                Action::Settled(n) => {
                    let _ = self.machine.apply(NodeEvent::ReadyFor {
                        node: n,
                        duration: self.min_ready,
                    });
                }
                Action::WakeAt(w) => {
                    self.wake = Some(self.t0 + Duration::from_millis(w.as_millis()));
                }
                Action::Halt(h) => self.end = Some(End::Halt(h)),
                Action::Done(c) => self.end = Some(End::Done(c)),
            }
        }
        self.peak = self.peak.max(self.machine.occupied());
        Ok(())
    }

    fn start(&mut self, n: String) -> Result<(), ClusterError> {
        self.machine
            .apply(NodeEvent::Started(n.clone()))
            .map_err(|e| ClusterError::InvalidObject {
                object: format!("rollout of {}", self.set.name),
                message: e.to_string(),
            })?;
        self.report(&n, NodeStep::Started, "upgrading".into(), Vec::new());
        self.deadlines
            .insert(n.clone(), Instant::now() + self.node_timeout);
        let job = static_pod_job(
            &self.up_action,
            &n,
            &self.job_set,
            &self.servant_image,
            false,
            self.node_timeout,
        );
        let runner = self.runner;
        self.tasks.push(Box::pin(async move {
            let r = runner.run(job, &ignore_job_event).await;
            Msg::UpgradeJob(n, Box::new(r))
        }));
        Ok(())
    }

    fn skip(&mut self, n: String, reason: SkipReason) {
        let _ = self.machine.apply(NodeEvent::Skipped(n.clone()));
        let result = NodeResult::from(reason);
        if self.planned.contains(&n) {
            self.report(&n, NodeStep::Skipped, reason.to_string(), Vec::new());
        } else {
            self.note(format!("node {n}: {reason}"));
        }
        self.record(&n, result);
        let detail = RolloutNode {
            message: reason.to_string(),
            ..RolloutNode::new(&n, result)
        };
        self.details.insert(n, detail);
    }

    /// A node's result goes into the progress the next save writes.
    fn record(&mut self, n: &str, result: NodeResult) {
        self.set.progress.nodes.insert(n.to_string(), result);
        self.saving.dirty = true;
    }

    fn on_pod(&mut self, p: MirrorPod) {
        // The new pod must stay Ready through --min-ready-seconds.
        if !p.ready
            && matches!(
                self.machine.phase(&p.node),
                Some(NodePhase::Settling { .. })
            )
        {
            let _ = self
                .machine
                .apply(NodeEvent::BecameNotReady(p.node.clone()));
            self.report(
                &p.node,
                NodeStep::Regressed,
                "its new pod stopped being Ready within --min-ready-seconds".into(),
                Vec::new(),
            );
        }
        self.pods.insert(p.node.clone(), p);
    }

    fn on_node_ready(&mut self, n: String, ready: bool) {
        // not a target, or a repeated readiness
        if !self.names.contains(&n) || self.node_ready.insert(n.clone(), ready) == Some(ready) {
            return;
        }
        let ev = if ready {
            NodeEvent::BecameReady(n.clone())
        } else {
            NodeEvent::BecameNotReady(n.clone())
        };
        // a node whose new pod stopped being Ready regressed already
        let was = self.machine.phase(&n);
        if let Err(e) = self.machine.apply(ev) {
            tracing::debug!("{e}");
        }
        let regressed = Some(NodePhase::Regressed);
        if !ready && was != regressed && self.machine.phase(&n) == regressed {
            let why = "went NotReady after its upgrade".to_string();
            self.report(&n, NodeStep::Regressed, why, Vec::new());
        }
    }

    fn on_upgrade_job(&mut self, n: String, r: NodeJobResult) {
        // a late result (the node timed out already)
        if self.machine.phase(&n) != Some(NodePhase::InFlight) {
            return;
        }
        if r.succeeded() {
            self.job_done.insert(n);
            return;
        }
        self.deadlines.remove(&n);
        let _ = self.machine.apply(NodeEvent::Failed(n.clone()));
        let pod = pod_state(self.pods.get(&n));
        let (why, mut lines) = failure_line(&r);
        lines.push(format!("  mirror pod: {pod}"));
        let message = format!("the upgrade Job failed: {why}; restoring the previous manifest");
        self.report(&n, NodeStep::Failed, message, lines);
        let detail = RolloutNode {
            message: format!("the upgrade Job failed ({why}); the previous manifest was restored"),
            logs: failure_logs(&r),
            pod_state: Some(pod),
            ..RolloutNode::new(&n, NodeResult::Failed)
        };
        self.details.insert(n.clone(), detail);
        self.restore(n);
    }

    /// Puts the node's previous manifest back with a restore Job.
    fn restore(&mut self, n: String) {
        let job = static_pod_job(
            &self.restore_action,
            &n,
            &self.job_set,
            &self.servant_image,
            true,
            self.node_timeout,
        );
        let runner = self.runner;
        self.restoring += 1;
        self.tasks.push(Box::pin(async move {
            let r = runner.run(job, &ignore_job_event).await;
            Msg::RestoreJob(n, Box::new(r))
        }));
    }

    fn on_restore_job(&mut self, n: String, r: NodeJobResult) {
        self.restoring -= 1;
        if r.succeeded() {
            return;
        }
        self.note(format!(
            "warning: node {n}: restoring the previous manifest failed too: {}",
            failure_line(&r).0
        ));
        if let Some(d) = self.details.get_mut(&n) {
            d.message = format!(
                "{}; RESTORING FAILED too: {}",
                d.message,
                failure_logs(&r).unwrap_or_default()
            );
        }
    }

    fn save_in_background(&mut self) {
        let s = &mut self.saving;
        if !s.dirty || s.running || s.last.elapsed() < SAVE_EVERY {
            return;
        }
        let (cluster, snapshot) = (self.cluster, self.set.clone());
        self.tasks.push(Box::pin(async move {
            Msg::Saved(staticset::save(cluster, &snapshot).await.err())
        }));
        *s = Saving {
            last: Instant::now(),
            dirty: false,
            running: true,
        };
    }

    fn on_saved(&mut self, err: Option<ClusterError>) {
        self.saving.running = false;
        if let Some(e) = err {
            tracing::warn!("saving the rollout progress failed (retried later): {e}");
            self.saving.dirty = true;
        }
    }

    /// The earliest of the nodes' deadlines, the machine's wake-up and a due save.
    fn next_timer(&self) -> Option<Instant> {
        let s = &self.saving;
        [
            self.deadlines.values().min().copied(),
            self.wake,
            (s.dirty && !s.running).then_some(s.last + SAVE_EVERY),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// After every wake-up: nodes whose mirror pod shows the upgrade, and nodes past their
    /// deadline.
    fn on_time(&mut self, t: LogicalTime) {
        let in_flight: Vec<String> = self.deadlines.keys().cloned().collect();
        for n in in_flight {
            let ready_pod = self
                .pods
                .get(&n)
                .filter(|p| p.ready && p.revision.as_deref() == Some(self.target.as_str()))
                .map(|p| p.pod.clone());
            if let Some(pod) = ready_pod.filter(|_| self.job_done.contains(&n)) {
                self.on_upgraded(n, &pod, t);
            } else if self.deadlines[&n] <= Instant::now() {
                self.on_timed_out(n);
            }
        }
    }

    fn on_upgraded(&mut self, n: String, pod: &str, t: LogicalTime) {
        // started when its deadline was set
        let left = self.deadlines.remove(&n).map(|d| d - Instant::now());
        let took = self.node_timeout.saturating_sub(left.unwrap_or_default());
        let _ = self.machine.apply(NodeEvent::Upgraded {
            node: n.clone(),
            ready_at: t,
        });
        let how = format!("upgraded in {:.1}s ({pod} Ready)", took.as_secs_f64());
        self.report(&n, NodeStep::Succeeded, how, Vec::new());
        self.record(&n, NodeResult::Upgraded);
    }

    fn on_timed_out(&mut self, n: String) {
        self.deadlines.remove(&n);
        let _ = self.machine.apply(NodeEvent::TimedOut(n.clone()));
        let secs = self.node_timeout.as_secs_f64();
        let pod = pod_state(self.pods.get(&n));
        self.report(
            &n,
            NodeStep::Failed,
            format!("not upgraded within --node-timeout {secs}s; restoring the previous manifest"),
            vec![format!("  mirror pod: {pod}")],
        );
        let detail = RolloutNode {
            message: format!(
                "the new pod was not Ready on revision {} within {secs}s; the previous manifest was restored",
                self.target
            ),
            pod_state: Some(pod),
            ..RolloutNode::new(&n, NodeResult::TimedOut)
        };
        self.details.insert(n.clone(), detail);
        self.record(&n, NodeResult::TimedOut);
        self.restore(n);
    }

    /// The results in rollout order; the progress saved unless another run took the lock
    /// (then the store is the new holder's).
    async fn finish(mut self) -> Result<DriveOutcome, ClusterError> {
        self.tasks.clear();
        let mut nodes = Vec::new();
        for (n, phase) in self.machine.nodes() {
            let result = NodeResult::of_phase(phase);
            if result.is_final() {
                self.set.progress.nodes.insert(n.to_string(), result);
            }
            let d = self
                .details
                .remove(n)
                .unwrap_or_else(|| RolloutNode::new(n, result));
            nodes.push(RolloutNode { result, ..d });
        }
        if !matches!(self.end, Some(End::LockLost(_))) {
            self.runner.finish().await;
            staticset::save(self.cluster, self.set).await?;
        }
        Ok(DriveOutcome {
            end: self.end.unwrap_or(End::Interrupted),
            nodes,
            budget: self.machine.budget(),
            peak_in_flight: self.peak,
        })
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
