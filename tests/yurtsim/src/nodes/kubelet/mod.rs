//! Simulated kubelets. Each node computes its kubelet's effective flags from its own unit files
//! (like systemd, on start and on every `systemctl restart kubelet` made by a pod on that node),
//! decides whether it can reach its API server, heartbeats, turns static-pod manifests into
//! mirror pods, and runs the pods bound to it as real processes in that node's network and with
//! its hostPath volumes mapped into the node's root.
//!
//! This file holds the kubelets' state and a node's start; the rest is by what it does:
//! - `node_loop`: restarts, reachability, the Node's status and heartbeat, the tick loop;
//! - `static_pods`: the manifest directory's mirror pods and the hub model;
//! - `pod_sync`: the pods bound to the node, their status, deletion and runs;
//! - `pod_env`: what a pod's containers are given (tools, logs, environment, volumes);
//! - `endpoints`: YurtHub's endpoints and the sim's `pods/log`;
//! - `logs`: a container's log as the kubelet reads it (both tiers).

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::nodes::Cluster;
use crate::nodes::kubelet_config::KubeletView;
use crate::nodes::layout::Role;
use crate::nodes::runtime::{NodeNamespaces, NodeTools};
use crate::nodes::systemd::LoadedUnit;

mod endpoints;
mod logs;
mod node_loop;
mod pod_env;
mod pod_sync;
mod static_hub;
mod static_pods;

pub use endpoints::*;
pub use logs::*;
pub use node_loop::*;
pub(crate) use pod_env::*;
pub use pod_sync::*;
use static_hub::*;
pub(crate) use static_pods::*;

/// Where the kubelet reaches YurtHub once redirected (`--kubeconfig=/var/lib/openyurt/kubelet.conf`).
pub const YURTHUB_SERVERS: &[&str] = &[
    "http://127.0.0.1:10261",
    "https://127.0.0.1:10268",
    "https://169.254.2.1:10268",
    "http://169.254.2.1:10261",
];
pub const YURTHUB_PORT: u16 = 10267;
pub const ANNOTATION_PREFIX: &str = "yurtsim.openyurt.io/";

#[derive(Default)]
pub struct Kubelets {
    nodes: Mutex<BTreeMap<String, Arc<NodeKubelet>>>,
}

impl Kubelets {
    pub fn names(&self) -> Vec<String> {
        self.nodes.lock().unwrap().keys().cloned().collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<NodeKubelet>> {
        self.nodes.lock().unwrap().get(name).cloned()
    }

    fn all(&self) -> Vec<Arc<NodeKubelet>> {
        self.nodes.lock().unwrap().values().cloned().collect()
    }
}

struct StaticEntry {
    sig: (SystemTime, u64, u64),
    pod_name: String,
    namespace: String,
    hash: String,
    manifest: Value,
    seen: Instant,
    mirrored: bool,
    /// Its containers' images pulled before they start (nodes/image_pull.rs).
    pull: crate::nodes::image_pull::StaticPull,
}

struct PodRun {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct NodeState {
    unit: Option<LoadedUnit>,
    unit_error: Option<String>,
    view: Option<KubeletView>,
    active: bool,
    restarts: u32,
    forced_ready: Option<bool>,
    last_posted: Option<Instant>,
    last_status_report: Option<Instant>,
    static_dir_sig: Option<SystemTime>,
    statics: BTreeMap<String, StaticEntry>,
    pods: HashMap<String, PodRun>,
    hub: Option<JoinHandle<()>>,
    /// The YurtHub static pod's model, when its image has one.
    hub_model: Option<HubModel>,
    /// (serving, ready) of the hub as last published in the node's status and annotations.
    hub_published: (bool, bool),
    annotated: Option<Value>,
}

/// A YurtHub model run for one version of the static pod (its config hash), restarted after
/// the kubelet's crash back-off when it exits.
struct HubModel {
    hash: String,
    component: crate::nodes::programs::Component,
    run: crate::nodes::programs::Run,
    restarts: u32,
    ended: Option<Instant>,
    /// The previous instance's exit code (the container's lastState).
    last_exit: Option<i32>,
}

/// Where a node's kubelet reads and writes the API: yurtsim's own store, or a real
/// kube-apiserver as the node's identity (nodes/real_api.rs; real/kubelet_api.rs has the client).
pub enum NodeApi {
    Sim,
    Real(Arc<dyn crate::nodes::real_api::RealApi>),
}

pub struct NodeKubelet {
    pub name: String,
    pub(crate) api: NodeApi,
    pub root: PathBuf,
    pub role: Role,
    pub ip: String,
    state: Mutex<NodeState>,
    /// The node's network and PID namespaces, from their first use on (host_processes.rs).
    pub(crate) namespaces: Mutex<Option<Arc<NodeNamespaces>>>,
    tools: Mutex<Option<NodeTools>>,
    /// The node's PID namespace and kubelet process, from its first `hostPID` pod on.
    pub(crate) processes: Mutex<Option<crate::nodes::host_processes::NodeProcesses>>,
    /// Which YurtHub process holds the hub's ports on this node (one listener per address:
    /// a second hub's bind fails with EADDRINUSE).
    pub(crate) hub_ports: Mutex<Option<u64>>,
    /// Pods' network sandboxes by pod uid, on a real tier's pod network (nodes/pod_network.rs).
    sandboxes: Mutex<HashMap<String, Arc<crate::nodes::pod_network::PodSandbox>>>,
    /// systemd services other than the kubelet (systemd/services/).
    pub(crate) services: Mutex<crate::nodes::systemd::services::Services>,
    /// The container runtime behind the node's CRI socket.
    pub cri: crate::nodes::cri::NodeRuntime,
    /// What the YurtHub that serves this node filters (set by the hub model when ready).
    pub(crate) hub_filters: Mutex<Option<crate::nodes::cri::HubFilters>>,
}

impl NodeKubelet {
    /// Runs `f` while holding this node's state, as a node task wedged on it would
    /// (sim.rs's shutdown test).
    #[cfg(test)]
    pub(crate) fn with_state_locked(&self, f: impl FnOnce()) {
        let _st = self.state.lock().unwrap();
        f();
    }

    /// kubelet.service is running.
    pub(crate) fn active(&self) -> bool {
        self.state.lock().unwrap().active
    }

    /// The kubelet's command line as last (re)started; None while it is stopped or its unit
    /// could not give one.
    pub(crate) fn running_kubelet_argv(&self) -> Option<Vec<String>> {
        let st = self.state.lock().unwrap();
        st.active
            .then(|| st.view.as_ref().map(|v| v.argv.clone()))
            .flatten()
    }

    /// The CRI endpoint of the kubelet as last (re)started (kubelet_config.rs), if it loaded.
    pub fn runtime_endpoint(&self) -> Option<String> {
        let st = self.state.lock().unwrap();
        st.view.as_ref().map(|v| v.runtime_endpoint.clone())
    }

    /// The API server the running kubelet talks to, from the kubeconfig it loaded at its last
    /// start; None while it is stopped or could not load one.
    pub fn server(&self) -> Option<String> {
        let st = self.state.lock().unwrap();
        if !st.active {
            return None;
        }
        st.view.as_ref()?.server.clone().ok()
    }

    /// A core/v1 object as this node's kubelet reads it from its API server.
    pub(crate) fn read(
        &self,
        shared: &Cluster,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        match &self.api {
            NodeApi::Sim => shared.api.get_opt("", resource, ns, name),
            NodeApi::Real(api) => api.get(resource, ns, name).ok().map(Arc::new),
        }
    }

    /// The pod's network sandbox on a real tier's pod network, made on first use; None where
    /// pods get an isolated network of their own (the sim's).
    pub(crate) fn pod_sandbox(
        &self,
        uid: &str,
    ) -> Result<Option<Arc<crate::nodes::pod_network::PodSandbox>>, String> {
        let NodeApi::Real(api) = &self.api else {
            return Ok(None);
        };
        let mut sandboxes = self.sandboxes.lock().unwrap();
        if let Some(s) = sandboxes.get(uid) {
            return Ok(Some(s.clone()));
        }
        let s = Arc::new(
            api.pod_network()
                .sandbox()
                .map_err(|e| format!("failed to set up the pod's network: {e:#}"))?,
        );
        sandboxes.insert(uid.to_string(), s.clone());
        Ok(Some(s))
    }

    /// Maps a host path of this node into the sim's file system, never leaving the node root.
    pub fn host_path(&self, p: &str) -> PathBuf {
        resolve_under(&self.root, p)
    }
}

pub fn resolve_under(root: &Path, p: &str) -> PathBuf {
    let mut out = root.to_path_buf();
    let mut depth = 0usize;
    for c in Path::new(p).components() {
        match c {
            Component::Normal(x) => {
                out.push(x);
                depth += 1;
            }
            Component::ParentDir if depth > 0 => {
                out.pop();
                depth -= 1;
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn state_dir_of(shared: &Cluster, parts: &[&str]) -> PathBuf {
    let mut p = shared.cfg.state_dir.join("sim");
    for x in parts {
        p.push(x);
    }
    p
}

fn normalize_server(s: &str) -> String {
    s.trim_end_matches('/').to_string()
}

/// Starts every node's kubelet; returns the background tasks.
pub fn start(shared: Arc<Cluster>, names: &[(String, Role)]) -> Vec<JoinHandle<()>> {
    for (i, (name, role)) in names.iter().enumerate() {
        add_node(
            &shared,
            name,
            *role,
            shared.cfg.layout.node_ip(i),
            NodeApi::Sim,
            None,
        );
    }
    vec![
        tokio::spawn(pod_loop(shared.clone())),
        tokio::spawn(tick_loop(shared.clone())),
        tokio::spawn(heartbeat_loop(shared)),
    ]
}

/// Adds a node's kubelet, loads its unit and starts it (`namespaces`: the node's network
/// and PID namespaces when they exist already).
pub fn add_node(
    shared: &Cluster,
    name: &str,
    role: Role,
    ip: String,
    api: NodeApi,
    namespaces: Option<Arc<NodeNamespaces>>,
) -> Arc<NodeKubelet> {
    let root = shared.node_root(name);
    let (flavor, sockets) = shared.cfg.layout.runtime_sockets();
    let k = Arc::new(NodeKubelet {
        cri: crate::nodes::cri::NodeRuntime::new(&root, flavor, sockets),
        hub_filters: Mutex::new(None),
        name: name.to_string(),
        api,
        root,
        role,
        ip,
        state: Mutex::new(NodeState::default()),
        namespaces: Mutex::new(namespaces),
        sandboxes: Mutex::new(HashMap::new()),
        tools: Mutex::new(None),
        processes: Mutex::new(None),
        hub_ports: Mutex::new(None),
        services: Mutex::new(Default::default()),
    });
    shared
        .kubelets
        .nodes
        .lock()
        .unwrap()
        .insert(name.to_string(), k.clone());
    daemon_reload(&k);
    restart_kubelet(shared, &k);
    k
}

#[cfg(test)]
mod go_duration_tests {
    #[test]
    fn durations_print_as_go_does() {
        for (ms, want) in [
            (100, "100ms"),
            (1600, "1.6s"),
            (10_000, "10s"),
            (300_000, "5m0s"),
            (90_500, "1m30.5s"),
        ] {
            assert_eq!(
                crate::util::go_duration(std::time::Duration::from_millis(ms)),
                want
            );
        }
    }
}
