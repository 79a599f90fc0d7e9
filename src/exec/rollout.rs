//! Drives the pure rollout machine (`rollout::Rollout`) with the cluster: node Jobs running
//! `yurtctl node-servant static-pod-upgrade` (one JobRunner, ONE Job watch), one watch on the
//! namespace's pods (mirror pods: revision and Ready) and one on Nodes (Ready). A node counts
//! as upgraded when its Job succeeded and its mirror pod carries the target revision and is
//! Ready (for `--min-ready-seconds`). A failed or timed-out node is restored by a second Job
//! (`--restore`), and its Job log and mirror-pod state are kept for the report.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;

use crate::cluster::jobs::{JobImage, JobRunner, NodeJob, NodeJobResult, RunJobsOptions};
use crate::cluster::nodes::node_state_changes;
use crate::cluster::staticset::{self, MirrorPod, StaticSet};
use crate::cluster::watch::Change;
use crate::cluster::{Cluster, ClusterError};
use crate::exec::servant_job::{ServantVolume, servant_job};
use crate::output::Reporter;
use crate::output::staticpod::RolloutNode;
use crate::rollout::{Completion, HaltReason, NodeInput, Options};

#[path = "rollout_driver.rs"]
mod driver;
#[path = "rollout_report.rs"]
mod report;

const MANIFEST_MOUNT: &str = "/yurtctl/manifest";

/// The node Job that installs (or with `restore`, puts back) the static pod's manifest: the
/// servant Job every command runs, with the store's ConfigMap mounted for an upgrade.
pub fn static_pod_job(
    action: &str,
    node: &str,
    set: &StaticSet,
    image: &JobImage,
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
        &image.image,
        "static-pod-upgrade",
        &args,
        timeout,
        &volumes,
    )
    .pulling_with(&image.pull_secrets);
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

/// What the watches, the Jobs and the background saves tell the drive's loop.
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
    pub servant_image: JobImage,
    /// Where progress goes: a node's start and end as
    /// [`Event::Node`](crate::output::Event::Node) of `phase` (what the
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

/// Aborts the watches when the drive ends, however it ends.
struct Abort(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Abort {
    fn drop(&mut self) {
        for h in &self.0 {
            h.abort();
        }
    }
}

impl Drive<'_> {
    /// Starts the Job runner and the watches, then the loop (`driver::Driver`).
    pub async fn run(self) -> Result<DriveOutcome, ClusterError> {
        let (up, restore) = crate::naming::static_pod_actions(&self.set.name);
        let runner = JobRunner::start(
            self.cluster,
            &self.set.namespace,
            &[up.as_str(), restore.as_str()],
            RunJobsOptions {
                concurrency: crate::cluster::Concurrency::ONE,
                per_job_timeout: self.node_timeout,
                ..Default::default()
            },
        )
        .await?;
        let (tx, rx) = mpsc::unbounded_channel::<Msg>();
        let _abort = Abort(spawn_watchers(
            self.cluster,
            &self.set.namespace,
            &self.set.name,
            tx,
        ));
        driver::Driver::new(self, &runner, rx, (up, restore))
            .run()
            .await
    }
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
