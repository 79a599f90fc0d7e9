//! The part of the cluster the nodes are handed ([`Cluster`]): the `Api`, the kubelets, the
//! settings the nodes read, the node faults and how to start a modelled program. The top
//! (sim.rs) builds it and keeps it in its `Shared`; the models a kubelet starts and the real
//! tier's nodes are handed it too (docs/yurtsim.md#layers).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::api::Api;
use crate::nodes::kubelet::Kubelets;
use crate::nodes::layout::Layout;
use crate::nodes::programs::{Container, Model, Run};
use crate::nodes::real_api::ApiServerKind;

/// The parts of the cluster's configuration (sim.rs's `SimConfig`) the nodes read, and the
/// models they start.
#[derive(Clone, Debug)]
pub struct NodesConfig {
    pub layout: Layout,
    /// Node roots are under `nodes/`, the sim's own files (pod logs, tools) under `sim/`.
    pub state_dir: PathBuf,
    /// `yurtctl` in pod commands resolves to this binary.
    pub yurtctl: Option<PathBuf>,
    pub pod_ready_delay: Duration,
    /// Per-node ready delay of static pods (overrides `pod_ready_delay` for mirror pods on
    /// those nodes).
    pub static_pod_ready_delays: HashMap<String, Duration>,
    pub heartbeat_interval: Duration,
    pub node_monitor_grace: Duration,
    pub static_pod_poll: Duration,
    /// The kubelet's first restart back-off of a crashed container, doubled per restart up to
    /// `crash_backoff_max`.
    pub crash_backoff: Duration,
    pub crash_backoff_max: Duration,
    /// Scales the upstream durations the component models enforce (1.0 is real time).
    pub model_time_scale: f64,
    /// yurtsim's own API server, or a real control plane.
    pub apiserver: ApiServerKind,
    /// The kubelets' version (`v1.37.2`): its probes' User-Agent.
    pub kubernetes_version: String,
}

/// The faults injected on nodes (the top's `Faults` holds them, with the API server's).
pub trait NodeFaults: Send + Sync {
    /// The exit code Job `job`'s pods on `node` fail with, if a fault says so.
    fn job_failure_for(&self, node: &str, job: &str) -> Option<i32>;

    /// Containers with this image never become Ready.
    fn is_never_ready(&self, image: &str) -> bool;

    /// The error containerd's CRI returns for a pull of `image` on `node` (its registry is
    /// unreachable there), or None when the pull succeeds.
    fn cannot_pull(&self, node: &str, image: &str) -> Option<String>;
}

/// Starts `model` as `container` runs it: a node's kubelet or systemd, for a program the sim
/// models.
pub type StartModel = fn(&Arc<Cluster>, Model, Container) -> Run;

/// What the nodes are handed: their part of the cluster.
pub struct Cluster {
    pub cfg: NodesConfig,
    pub api: Arc<Api>,
    pub faults: Arc<dyn NodeFaults>,
    pub kubelets: Kubelets,
    /// The API endpoint as nodes know it (layout-specific), which kubelets can reach.
    pub internal_endpoint: String,
    /// yurt-controller-manager v0.6 models whose nodelifecycle controller runs (leading, caches
    /// synced): silent nodes go `Unknown` while one does, as with kube-controller-manager's.
    pub model_node_lifecycles: AtomicUsize,
    /// How a node starts a modelled program: `models::start`, handed down so the nodes layer
    /// runs the models without importing them (docs/yurtsim.md#layers).
    pub start_model: StartModel,
    shutdown: watch::Receiver<bool>,
    self_ref: OnceLock<Weak<Cluster>>,
}

impl Cluster {
    pub fn new(
        cfg: NodesConfig,
        api: Arc<Api>,
        faults: Arc<dyn NodeFaults>,
        internal_endpoint: String,
        start_model: StartModel,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<Cluster> {
        let cluster = Arc::new(Cluster {
            cfg,
            api,
            faults,
            kubelets: Kubelets::default(),
            internal_endpoint,
            model_node_lifecycles: Default::default(),
            start_model,
            shutdown,
            self_ref: OnceLock::new(),
        });
        let _ = cluster.self_ref.set(Arc::downgrade(&cluster));
        cluster
    }

    /// The owning Arc, for tasks started from code that only has `&Cluster`.
    pub fn self_arc(&self) -> Arc<Cluster> {
        self.self_ref
            .get()
            .and_then(Weak::upgrade)
            .expect("Cluster lives in an Arc")
    }

    pub fn shutting_down(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    pub fn node_root(&self, node: &str) -> PathBuf {
        self.cfg.state_dir.join("nodes").join(node)
    }
}
