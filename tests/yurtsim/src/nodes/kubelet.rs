//! Simulated kubelets. Each node computes its kubelet's effective flags from its own unit files
//! (like systemd, on start and on every `systemctl restart kubelet` made by a pod on that node),
//! decides whether it can reach its API server, heartbeats, turns static-pod manifests into
//! mirror pods, and runs the pods bound to it as real processes in that node's network and with
//! its hostPath volumes mapped into the node's root.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::bail;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::error::ApiResult;
use crate::api::store::{EventType, Filter};
use crate::api::{Ctx, DeleteOptions};
use crate::http::{Body, json_response, text_response};
use crate::nodes::Cluster;
use crate::nodes::kubelet_config::{KubeletView, kubelet_view};
use crate::nodes::layout::Role;
use crate::nodes::runtime::{NodeNamespaces, NodeTools};
use crate::nodes::systemd::{LoadedUnit, load_unit};
use crate::util;

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
    /// systemd services other than the kubelet (systemd/services.rs).
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

fn daemon_reload(k: &NodeKubelet) {
    let mut st = k.state.lock().unwrap();
    match load_unit(&k.root, "kubelet.service") {
        Ok(u) => {
            st.unit = Some(u);
            st.unit_error = None;
        }
        Err(e) => {
            st.unit = None;
            st.unit_error = Some(e.to_string());
        }
    }
}

/// (Re)starts the kubelet: EnvironmentFiles are read now, the unit as of the last daemon-reload.
fn restart_kubelet(shared: &Cluster, k: &NodeKubelet) {
    let mut st = k.state.lock().unwrap();
    st.active = true;
    st.restarts += 1;
    st.view = None;
    if let Some(u) = &st.unit {
        match kubelet_view(&k.root, u) {
            Ok(v) => st.view = Some(v),
            Err(e) => st.unit_error = Some(e.to_string()),
        }
    }
    st.static_dir_sig = None;
    drop(st);
    if let NodeApi::Real(api) = &k.api {
        // a restarted kubelet reads its kubeconfig again
        api.reset();
    }
    annotate(shared, k);
    crate::nodes::host_processes::kubelet_changed(shared, k);
}

/// Why the kubelet cannot post to its API server right now, if it cannot.
fn unreachable_reason(shared: &Cluster, k: &NodeKubelet, st: &NodeState) -> Option<String> {
    if !st.active {
        return Some("kubelet.service is not running".into());
    }
    if let Some(e) = &st.unit_error {
        return Some(format!("kubelet.service cannot start: {e}"));
    }
    let Some(view) = &st.view else {
        return Some("kubelet.service is not loaded".into());
    };
    if matches!(k.api, NodeApi::Real(_)) {
        // a real API server: whether it can be reached shows when the kubelet calls it
        return None;
    }
    let server = match &view.server {
        Ok(s) => normalize_server(s),
        Err(e) => return Some(e.clone()),
    };
    if server == normalize_server(&shared.internal_endpoint) {
        return None;
    }
    if YURTHUB_SERVERS.contains(&server.as_str()) {
        return if hub_running(shared, &k.name, st) {
            None
        } else {
            Some(format!(
                "{server} is not serving: no yurt-hub static pod is running on this node"
            ))
        };
    }
    Some(format!("dial {server}: no route to host"))
}

fn is_hub(e: &StaticEntry) -> bool {
    e.pod_name.starts_with("yurt-hub")
        || e.manifest["metadata"]["labels"]["k8s-app"] == json!("yurt-hub")
}

/// How long a static pod on `node` takes to start (`static_pod_ready_delays`, else the default).
fn static_delay(shared: &Cluster, node: &str) -> Duration {
    shared
        .cfg
        .static_pod_ready_delays
        .get(node)
        .copied()
        .unwrap_or(shared.cfg.pod_ready_delay)
}

fn container_ready_after_delay(
    shared: &Cluster,
    node: &str,
    manifest: &Value,
    since: Instant,
) -> bool {
    let never = manifest["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            shared
                .faults
                .is_never_ready(c["image"].as_str().unwrap_or(""))
        });
    !never && since.elapsed() >= static_delay(shared, node)
}

/// Whether YurtHub's proxy serves the kubelet: a modelled hub once its `/v1/readyz` is OK
/// (the same check gates its proxy), any other hub image once started.
fn hub_running(shared: &Cluster, node: &str, st: &NodeState) -> bool {
    if service_hub(shared, node).is_some_and(|(_, ready)| ready) {
        return true;
    }
    match &st.hub_model {
        Some(m) => *m.run.ready.borrow() && !m.run.exit.is_finished(),
        None => st
            .statics
            .values()
            .any(|e| is_hub(e) && container_ready_after_delay(shared, node, &e.manifest, e.seen)),
    }
}

/// (serving, ready) of a YurtHub that runs as a systemd service on `node` (yurthub.service).
fn service_hub(shared: &Cluster, node: &str) -> Option<(bool, bool)> {
    shared
        .kubelets
        .get(node)
        .and_then(|k| crate::nodes::systemd::services::hub(&k))
}

/// Whether YurtHub's own server (port 10267) listens.
fn hub_serving(shared: &Cluster, node: &str, st: &NodeState) -> bool {
    if service_hub(shared, node).is_some_and(|(serving, _)| serving) {
        return true;
    }
    match &st.hub_model {
        Some(m) => *m.run.serving.borrow() && !m.run.exit.is_finished(),
        None => hub_running(shared, node, st),
    }
}

/// Starts, restarts (after the crash back-off) or stops the YurtHub model so that it runs the
/// current YurtHub static pod.
fn ensure_hub_model(shared: &Arc<Cluster>, k: &Arc<NodeKubelet>) {
    let mut st = k.state.lock().unwrap();
    let Some((hash, manifest, pod_name, namespace)) =
        st.statics.values().find(|e| is_hub(e)).map(|e| {
            (
                e.hash.clone(),
                e.manifest.clone(),
                e.pod_name.clone(),
                e.namespace.clone(),
            )
        })
    else {
        if let Some(m) = st.hub_model.take() {
            m.run.exit.abort();
        }
        return;
    };
    let Some((model, c)) = manifest["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            crate::nodes::programs::for_image(c["image"].as_str().unwrap_or("")).map(|m| (m, c))
        })
    else {
        if let Some(m) = st.hub_model.take() {
            m.run.exit.abort();
        }
        return;
    };
    let last_exit = st.hub_model.as_ref().and_then(|m| *m.run.exited.borrow());
    let restarts = match st.hub_model.as_mut() {
        Some(m) if m.hash == hash => {
            if !m.run.exit.is_finished() {
                return;
            }
            let ended = *m.ended.get_or_insert_with(Instant::now);
            let backoff = shared
                .cfg
                .crash_backoff
                .saturating_mul(1 << m.restarts.min(16))
                .min(shared.cfg.crash_backoff_max);
            if ended.elapsed() < backoff {
                return;
            }
            m.restarts + 1
        }
        _ => 0,
    };
    let mut pod = manifest.clone();
    pod["metadata"]["name"] = json!(pod_name);
    pod["metadata"]["namespace"] = json!(namespace);
    pod["spec"]["nodeName"] = json!(k.name);
    let cname = c["name"].as_str().unwrap_or("yurt-hub").to_string();
    let mut argv: Vec<String> = c["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(c["args"].as_array().into_iter().flatten())
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect();
    let has_command = c["command"].as_array().is_some_and(|a| !a.is_empty());
    let env = container_env_with(shared, k, &pod, c, "", service_view_of(k, &st));
    argv = crate::nodes::programs::expand_args(&argv, &env);
    // `sh -c "exec yurthub ..."` (the legacy manifest): the line the shell execs, its files
    // read through the pod's hostPath mounts
    let read = |p: &str| std::fs::read_to_string(static_container_path(k, &manifest, c, p)?).ok();
    match crate::nodes::shell::exec_line(&argv, &read) {
        Some((_, args)) => argv = args,
        None if has_command => {
            argv.remove(0);
        }
        None => {}
    }
    let container = crate::nodes::programs::Container {
        node: k.name.clone(),
        namespace: namespace.clone(),
        pod: pod_name.clone(),
        service_account: None,
        args: argv,
        log: static_log_path(shared, &namespace, &pod_name, &cname),
        append_log: false,
        mounts: c["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let mp = m["mountPath"].as_str()?;
                Some((mp.to_string(), static_container_path(k, &manifest, c, mp)?))
            })
            .collect(),
        env,
    };
    if let Some(old) = st.hub_model.take() {
        old.run.exit.abort();
    }
    if restarts > 0 {
        // the kubelet keeps the ended instance's log for `logs --previous`
        let _ = std::fs::rename(&container.log, container.log.with_extension("previous.log"));
    }
    st.hub_model = Some(HubModel {
        hash,
        component: model.component,
        last_exit: if restarts > 0 { last_exit } else { None },
        run: (shared.start_model)(shared, model, container),
        restarts,
        ended: None,
    });
}

/// Where a path inside a static pod's container lives on the node: under the hostPath
/// volume mounted at (a parent of) it. None for paths no hostPath mount covers.
fn static_container_path(
    k: &NodeKubelet,
    pod: &Value,
    c: &Value,
    path: &str,
) -> Option<std::path::PathBuf> {
    let path = util::clean_path(path);
    c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let mount = util::clean_path(m["mountPath"].as_str()?);
            let rest = if path == mount {
                ""
            } else {
                path.strip_prefix(&format!("{}/", mount.trim_end_matches('/')))?
            };
            let vol = pod["spec"]["volumes"]
                .as_array()?
                .iter()
                .find(|v| v["name"] == m["name"])?;
            let host = vol["hostPath"]["path"].as_str()?;
            Some((
                mount.len(),
                format!("{}/{rest}", host.trim_end_matches('/')),
            ))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, p)| k.host_path(p.trim_end_matches('/')))
}

fn annotate(shared: &Cluster, k: &NodeKubelet) {
    let st = k.state.lock().unwrap();
    let reason = unreachable_reason(shared, k, &st);
    let view = st.view.as_ref();
    let ann = json!({
        format!("{ANNOTATION_PREFIX}kubelet-kubeconfig"): view.and_then(|v| v.kubeconfig.clone()).unwrap_or_default(),
        format!("{ANNOTATION_PREFIX}kubelet-server"): view.and_then(|v| v.server.clone().ok()).unwrap_or_default(),
        format!("{ANNOTATION_PREFIX}kubelet-restarts"): st.restarts.to_string(),
        format!("{ANNOTATION_PREFIX}kubelet-args"): view.map(|v| v.argv.join(" ")).unwrap_or_default(),
        format!("{ANNOTATION_PREFIX}kubelet-error"): reason.unwrap_or_default(),
    });
    // yurtsim's own record for its tests; a real API server gets what a kubelet writes only
    if st.annotated.as_ref() == Some(&ann) || matches!(k.api, NodeApi::Real(_)) {
        return;
    }
    drop(st);
    let nodes = shared.api.info("", "nodes");
    let _ = shared
        .api
        .modify(&nodes, "", &k.name, None, "yurtsim", &|o| {
            for (key, v) in ann.as_object().unwrap() {
                o["metadata"]["annotations"][key] = v.clone();
            }
            true
        });
    k.state.lock().unwrap().annotated = Some(ann);
}

/// Whether a kube-controller-manager static pod runs on a control plane with the
/// `nodelifecycle` controller enabled (`--controllers` absent, or listing `*` or
/// `nodelifecycle`, and not `-nodelifecycle`). Locks each control plane's node state in turn:
/// never call it holding one.
pub fn nodelifecycle_enabled(shared: &Cluster) -> bool {
    // yurt-controller-manager v0.6's fork of the controller marks silent nodes the same way
    // (openyurtio/openyurt@v0.6.1 pkg/controller/nodelifecycle/node_lifecycle_controller.go
    // monitorNodeHealth; its autonomy annotation spares only the node's pods)
    if shared
        .model_node_lifecycles
        .load(std::sync::atomic::Ordering::SeqCst)
        > 0
    {
        return true;
    }
    shared
        .kubelets
        .all()
        .iter()
        .filter(|k| k.role == Role::ControlPlane)
        .any(|k| {
            let Some(dir) = static_dir(k) else {
                return false;
            };
            let Ok(text) = std::fs::read_to_string(dir.join("kube-controller-manager.yaml")) else {
                return false;
            };
            let Ok(pod) = serde_saphyr::from_str::<Value>(&text) else {
                return false;
            };
            let args = pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| {
                    c["command"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .chain(c["args"].as_array().into_iter().flatten())
                });
            let mut controllers: Option<Vec<String>> = None;
            for a in args.filter_map(Value::as_str) {
                if let Some(v) = a.strip_prefix("--controllers=") {
                    controllers = Some(v.split(',').map(|x| x.trim().to_string()).collect());
                }
            }
            match controllers {
                None => true,
                Some(list) => {
                    !list.iter().any(|c| c == "-nodelifecycle")
                        && list.iter().any(|c| c == "*" || c == "nodelifecycle")
                }
            }
        })
}

/// `systemctl start|stop kubelet` typed on `node` by its operator (outside any pod).
pub fn operator_kubelet(shared: &Cluster, node: &str, start: bool) -> anyhow::Result<()> {
    let k = shared
        .kubelets
        .get(node)
        .ok_or_else(|| anyhow::anyhow!("no node {node}"))?;
    if start {
        restart_kubelet(shared, &k);
    } else {
        k.state.lock().unwrap().active = false;
        annotate(shared, &k);
        crate::nodes::host_processes::kubelet_changed(shared, &k);
    }
    post_status(shared, &k, false);
    Ok(())
}

pub fn force_ready(shared: &Cluster, node: &str, forced: Option<bool>) -> anyhow::Result<()> {
    let Some(k) = shared.kubelets.get(node) else {
        bail!("no node named {node:?}")
    };
    k.state.lock().unwrap().forced_ready = forced;
    post_status(shared, &k, true);
    Ok(())
}

/// The node's Ready condition and taints, as the kubelet (or, when it is silent, the node
/// lifecycle controller) would set them.
fn post_status(shared: &Cluster, k: &NodeKubelet, force_report: bool) {
    // A snapshot, not the guard: the node lifecycle check below locks every control plane's
    // state, this node's too (issue 18: a silent control plane deadlocked on itself).
    let (reason, forced_ready, last_posted) = {
        let st = k.state.lock().unwrap();
        (
            unreachable_reason(shared, k, &st),
            st.forced_ready,
            st.last_posted,
        )
    };
    let now = Instant::now();
    let (status, why, msg): (&str, &str, String) = match (reason, forced_ready) {
        (None, Some(false)) => (
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false (yurtsim fault)".into(),
        ),
        (None, _) => (
            "True",
            "KubeletReady",
            "kubelet is posting ready status".into(),
        ),
        (Some(_), _) => {
            let silent_for = last_posted
                .map(|t| now.duration_since(t))
                .unwrap_or(Duration::MAX);
            // Only kube-controller-manager's node lifecycle controller marks silent nodes; with
            // it disabled (OpenYurt's legacy conversion) the last posted status stays.
            if silent_for < shared.cfg.node_monitor_grace || !nodelifecycle_enabled(shared) {
                return;
            }
            (
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.".into(),
            )
        }
    };
    let report_due = {
        let mut st = k.state.lock().unwrap();
        if status != "Unknown" {
            st.last_posted = Some(now);
        }
        st.last_status_report
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(300))
    };
    let nodes = shared.api.info("", "nodes");
    let Ok(node) = shared.api.get(&nodes, "", &k.name) else {
        return;
    };
    let cur = node["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == json!("Ready")).cloned())
        .unwrap_or(json!({}));
    if cur["status"] == json!(status) && cur["reason"] == json!(why) && !report_due && !force_report
    {
        return;
    }
    let nowt = util::now();
    let _ = shared.api.modify(
        &nodes,
        "",
        &k.name,
        Some("status"),
        if status == "Unknown" {
            "kube-controller-manager"
        } else {
            "kubelet"
        },
        &|o| {
            for c in o["status"]["conditions"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if status == "Unknown" {
                    let was = c["status"].clone();
                    c["status"] = json!("Unknown");
                    c["reason"] = json!("NodeStatusUnknown");
                    c["message"] = json!("Kubelet stopped posting node status.");
                    if was != json!("Unknown") {
                        c["lastTransitionTime"] = json!(nowt);
                    }
                    continue;
                }
                if c["type"] == json!("Ready") {
                    if c["status"] != json!(status) {
                        c["lastTransitionTime"] = json!(nowt);
                    }
                    c["status"] = json!(status);
                    c["reason"] = json!(why);
                    c["message"] = json!(msg);
                } else if c["status"] == json!("Unknown") {
                    c["status"] = json!("False");
                    c["lastTransitionTime"] = json!(nowt);
                }
                c["lastHeartbeatTime"] = json!(nowt);
            }
            true
        },
    );
    // Taints the node lifecycle controller manages.
    let taints: Vec<(&str, &str)> = match status {
        "False" => vec![
            ("node.kubernetes.io/not-ready", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
        ],
        "Unknown" => vec![
            ("node.kubernetes.io/unreachable", "NoSchedule"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
        ],
        _ => vec![],
    };
    let _ = shared
        .api
        .modify(&nodes, "", &k.name, None, "kube-controller-manager", &|o| {
            let mut list: Vec<Value> = o["spec"]["taints"].as_array().cloned().unwrap_or_default();
            let before = list.clone();
            list.retain(|t| {
                !matches!(
                    t["key"].as_str(),
                    Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
                )
            });
            for (key, effect) in &taints {
                let mut t = json!({"key": key, "effect": effect});
                if *effect == "NoExecute" {
                    t["timeAdded"] = json!(nowt);
                }
                if let Some(old) = before
                    .iter()
                    .find(|b| b["key"] == t["key"] && b["effect"] == t["effect"])
                {
                    t = old.clone();
                }
                list.push(t);
            }
            if list == before {
                return false;
            }
            if list.is_empty() {
                o["spec"].as_object_mut().map(|m| m.remove("taints"));
            } else {
                o["spec"]["taints"] = json!(list);
            }
            true
        });
    k.state.lock().unwrap().last_status_report = Some(Instant::now());
}

async fn heartbeat_loop(shared: Arc<Cluster>) {
    let leases = shared.api.info("coordination.k8s.io", "leases");
    let mut stop = shared.shutting_down();
    let interval = shared.cfg.heartbeat_interval;
    loop {
        let nodes = shared.kubelets.all();
        let step = interval / (nodes.len().max(1) as u32);
        for k in nodes {
            let reachable = {
                let st = k.state.lock().unwrap();
                unreachable_reason(&shared, &k, &st).is_none()
            };
            if reachable {
                let _ =
                    shared
                        .api
                        .modify(&leases, "kube-node-lease", &k.name, None, "kubelet", &|o| {
                            o["spec"]["renewTime"] = json!(util::now_micro());
                            true
                        });
            }
            post_status(&shared, &k, false);
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                _ = stop.changed() => return,
            }
        }
    }
}

/// Static pods, tool calls (systemctl), and node status changes that follow from them.
/// The kubelets' periodic work: the node's tool calls (`systemctl`, `crictl`), its systemd
/// services, and its static pods.
pub(crate) async fn tick_loop(shared: Arc<Cluster>) {
    let mut stop = shared.shutting_down();
    let n = shared.kubelets.names().len().max(1);
    let period = shared.cfg.static_pod_poll * (n as u32).div_ceil(500).max(1);
    loop {
        for k in shared.kubelets.all() {
            process_tool_calls(&shared, &k);
            crate::nodes::systemd::services::tick(&shared, &k);
            // in front of a real API server, real/nodes.rs keeps the mirror pods
            if matches!(k.api, NodeApi::Sim) {
                sync_static_pods(&shared, &k);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = stop.changed() => return,
        }
    }
}

fn process_tool_calls(shared: &Arc<Cluster>, k: &Arc<NodeKubelet>) {
    let calls = {
        let mut t = k.tools.lock().unwrap();
        let Some(tools) = t.as_mut() else { return };
        tools.take_new_calls().unwrap_or_default()
    };
    if calls.is_empty() {
        return;
    }
    let mut last = 0;
    let is_kubelet = |u: &str| u.trim_end_matches(".service") == "kubelet";
    for c in &calls {
        last = last.max(c.seq);
        let argv: Vec<&str> = c.argv.iter().map(String::as_str).collect();
        let units: Vec<&str> = argv
            .iter()
            .skip(2)
            .copied()
            .filter(|a| !a.starts_with('-'))
            .collect();
        match argv.as_slice() {
            ["systemctl", "daemon-reload" | "daemon-reexec", ..] => {
                daemon_reload(k);
                crate::nodes::systemd::services::systemctl(shared, k, &c.argv[1..]);
            }
            [
                "systemctl",
                "restart" | "start" | "reload" | "try-restart" | "reload-or-restart",
                unit,
                ..,
            ] if is_kubelet(unit) => restart_kubelet(shared, k),
            ["systemctl", "stop", unit, ..] if is_kubelet(unit) => {
                k.state.lock().unwrap().active = false;
                annotate(shared, k);
                crate::nodes::host_processes::kubelet_changed(shared, k);
            }
            ["crictl", ..] => {
                let a = crate::nodes::cri::crictl::answer(&k.root, &k.cri, &c.argv);
                if let Some(t) = k.tools.lock().unwrap().as_ref() {
                    let _ = t.write_result(c.seq, a.rc, &a.out, &a.err);
                }
            }
            // every other unit: systemd's answer, printed by the stub
            ["systemctl", _, ..] if !units.iter().any(|u| is_kubelet(u)) => {
                let a = crate::nodes::systemd::services::systemctl(shared, k, &c.argv[1..]);
                if let Some(t) = k.tools.lock().unwrap().as_ref() {
                    let _ = t.write_result(c.seq, a.rc, &a.out, &a.err);
                }
            }
            _ => {}
        }
    }
    let active = k.state.lock().unwrap().active;
    if let Some(t) = k.tools.lock().unwrap().as_ref() {
        let _ = t.set_unit_state(if active { "active" } else { "inactive" });
        let _ = t.ack(last);
    }
    post_status(shared, k, false);
}

fn static_dir(k: &NodeKubelet) -> Option<PathBuf> {
    let st = k.state.lock().unwrap();
    st.view
        .as_ref()
        .and_then(|v| v.static_pod_path.clone())
        .map(|p| k.host_path(&p))
}

fn file_sig(md: &std::fs::Metadata) -> (SystemTime, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (
        md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        md.len(),
        md.ino(),
    )
}

/// The kubelet's file source: every non-dot file in the static-pod directory is a pod.
fn sync_static_pods(shared: &Cluster, k: &Arc<NodeKubelet>) {
    let active = k.state.lock().unwrap().active;
    if !active {
        return;
    }
    let Some(dir) = static_dir(k) else { return };
    let dir_sig = std::fs::metadata(&dir).ok().and_then(|m| m.modified().ok());
    let mut files: BTreeMap<String, (SystemTime, u64, u64)> = BTreeMap::new();
    {
        let st = k.state.lock().unwrap();
        if dir_sig.is_some()
            && st.static_dir_sig == dir_sig
            && st.statics.values().all(|e| {
                std::fs::metadata(dir.join(file_name_of(&st, e)))
                    .map(|m| file_sig(&m))
                    .ok()
                    == Some(e.sig)
            })
            && st.statics.values().all(|e| e.mirrored)
        {
            drop(st);
            refresh_static_status(shared, k);
            return;
        }
    }
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            if let Ok(md) = e.metadata()
                && md.is_file()
            {
                files.insert(name, file_sig(&md));
            }
        }
    }
    let reachable = {
        let st = k.state.lock().unwrap();
        unreachable_reason(shared, k, &st).is_none()
    };
    let mut st = k.state.lock().unwrap();
    st.static_dir_sig = dir_sig;
    let mut to_delete: Vec<(String, String)> = Vec::new();
    let gone: Vec<String> = st
        .statics
        .keys()
        .filter(|f| !files.contains_key(*f))
        .cloned()
        .collect();
    for f in gone {
        if let Some(e) = st.statics.remove(&f) {
            to_delete.push((e.namespace, e.pod_name));
        }
    }
    for (f, sig) in &files {
        if st.statics.get(f).is_some_and(|e| e.sig == *sig) {
            continue;
        }
        let bytes = std::fs::read(dir.join(f)).unwrap_or_default();
        // The kubelet logs and skips files it cannot decode.
        let Some(StaticManifest {
            pod_name,
            namespace,
            hash,
            manifest,
        }) = static_manifest(&bytes, &k.name, f)
        else {
            continue;
        };
        if let Some(old) = st.statics.remove(f) {
            to_delete.push((old.namespace, old.pod_name));
        }
        st.statics.insert(
            f.clone(),
            StaticEntry {
                sig: *sig,
                pod_name,
                namespace,
                hash,
                manifest,
                seen: Instant::now(),
                mirrored: false,
            },
        );
    }
    let pending: Vec<(String, Value, String, String, Instant)> = st
        .statics
        .values()
        .filter(|e| !e.mirrored)
        .map(|e| {
            (
                e.pod_name.clone(),
                e.manifest.clone(),
                e.hash.clone(),
                e.namespace.clone(),
                e.seen,
            )
        })
        .collect();
    drop(st);
    if !reachable {
        return;
    }
    let pods = shared.api.info("", "pods");
    let ctx = Ctx::system("kubelet");
    for (ns, name) in to_delete {
        if !pending.iter().any(|p| p.0 == name) {
            delete_mirror_pod(shared, &ns, &name);
        }
    }
    for (name, manifest, hash, ns, _) in pending {
        if let Some(existing) = shared.api.get_opt("", "pods", &ns, &name) {
            if existing["metadata"]["annotations"]["kubernetes.io/config.hash"] == json!(hash) {
                mark_mirrored(k, &name);
                continue;
            }
            delete_mirror_pod(shared, &ns, &name);
        }
        let node_uid = shared
            .api
            .get_opt("", "nodes", "", &k.name)
            .map(|n| n["metadata"]["uid"].clone())
            .unwrap_or_default();
        let m = StaticManifest {
            pod_name: name.clone(),
            namespace: ns.clone(),
            hash,
            manifest,
        };
        let pod = m.mirror_pod(&k.name, node_uid);
        match shared.api.create(&pods, &ns, pod, &ctx) {
            Ok(_) => mark_mirrored(k, &name),
            Err(e) => tracing::debug!(node = %k.name, pod = %name, "mirror pod not created: {e}"),
        }
    }
    refresh_static_status(shared, k);
}

/// A static pod manifest as the kubelet reads it from its static pod directory.
pub(crate) struct StaticManifest {
    /// `<name>-<node>`: the mirror pod's name.
    pub pod_name: String,
    pub namespace: String,
    /// `kubernetes.io/config.hash`: changes with the file's bytes.
    pub hash: String,
    pub manifest: Value,
}

/// Parses the static pod file `file` of `node`; None for what the kubelet skips (not a Pod,
/// no name, not YAML).
pub(crate) fn static_manifest(bytes: &[u8], node: &str, file: &str) -> Option<StaticManifest> {
    let manifest: Value = serde_saphyr::from_slice::<Value>(bytes).ok()?;
    if manifest["kind"] != json!("Pod") || !manifest["metadata"]["name"].is_string() {
        return None;
    }
    let pod_name = format!(
        "{}-{node}",
        manifest["metadata"]["name"].as_str().unwrap_or_default()
    );
    let namespace = manifest["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let hash = format!(
        "{:08x}",
        util::fnv32a(&[bytes, node.as_bytes(), file.as_bytes()].concat())
    );
    Some(StaticManifest {
        pod_name,
        namespace,
        hash,
        manifest,
    })
}

impl StaticManifest {
    /// The mirror pod the kubelet creates for it (pkg/kubelet/pod/mirror_client.go
    /// `CreateMirrorPod`: the config annotations, owned by the Node).
    pub(crate) fn mirror_pod(&self, node: &str, node_uid: Value) -> Value {
        let mut meta = self.manifest["metadata"].clone();
        meta["name"] = json!(self.pod_name);
        meta["namespace"] = json!(self.namespace);
        meta["annotations"]["kubernetes.io/config.hash"] = json!(self.hash);
        meta["annotations"]["kubernetes.io/config.mirror"] = json!(self.hash);
        meta["annotations"]["kubernetes.io/config.seen"] = json!(util::now());
        meta["annotations"]["kubernetes.io/config.source"] = json!("file");
        meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": true}]);
        let mut spec = self.manifest["spec"].clone();
        spec["nodeName"] = json!(node);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    }
}

/// Mirror pods have no containers of their own to stop: they go at once.
fn delete_mirror_pod(shared: &Cluster, ns: &str, name: &str) {
    let pods = shared.api.info("", "pods");
    let opts = DeleteOptions {
        grace_period: Some(0),
        ..Default::default()
    };
    let _ = shared
        .api
        .delete(&pods, ns, name, &opts, &Ctx::system("kubelet"));
}

fn file_name_of(st: &NodeState, e: &StaticEntry) -> String {
    st.statics
        .iter()
        .find(|(_, v)| v.pod_name == e.pod_name)
        .map(|(k, _)| k.clone())
        .unwrap_or_default()
}

fn mark_mirrored(k: &NodeKubelet, pod: &str) {
    let mut st = k.state.lock().unwrap();
    for e in st.statics.values_mut() {
        if e.pod_name == pod {
            e.mirrored = true;
        }
    }
}

/// Static pods' containers in the runtime once started; a runtime-stopped one is restarted after
/// the back-off (a stopped YurtHub container also ends its model). The pods whose restart state
/// changed.
#[allow(clippy::type_complexity)]
fn static_containers(
    shared: &Cluster,
    k: &Arc<NodeKubelet>,
    entries: &[(String, String, Value, Instant, bool, String)],
    hub_pod: Option<&str>,
) -> Vec<String> {
    let backoff = |n: u32| {
        shared
            .cfg
            .crash_backoff
            .saturating_mul(1 << n.min(16))
            .min(shared.cfg.crash_backoff_max)
    };
    let mut changed = Vec::new();
    let mut statics = k.cri.statics.lock().unwrap();
    let names: Vec<String> = entries.iter().map(|e| e.1.clone()).collect();
    statics.retain(&k.cri, &names);
    for (ns, name, manifest, seen, _, hash) in entries {
        if seen.elapsed() < static_delay(shared, &k.name) {
            continue;
        }
        let mut pod = manifest.clone();
        pod["metadata"]["name"] = json!(name);
        pod["metadata"]["namespace"] = json!(ns);
        pod["spec"]["nodeName"] = json!(k.name);
        let env = |c: &Value| {
            container_env(
                shared,
                k,
                &pod,
                c,
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
        };
        let (c, stopped) = statics.sync(&k.cri, &pod, hash, &env, &backoff);
        if c {
            changed.push(name.clone());
        }
        if stopped
            && hub_pod == Some(name.as_str())
            && let Some(m) = &k.state.lock().unwrap().hub_model
        {
            m.run.exit.abort();
        }
    }
    changed
}

/// Mirror pods follow the static pod's life: Pending, then Running (and Ready unless the image is
/// configured never to become ready). A deleted mirror pod is recreated.
fn refresh_static_status(shared: &Cluster, k: &Arc<NodeKubelet>) {
    ensure_hub_model(&shared.self_arc(), k);
    let (entries, reachable) = {
        let st = k.state.lock().unwrap();
        let e: Vec<(String, String, Value, Instant, bool, String)> = st
            .statics
            .values()
            .map(|e| {
                (
                    e.namespace.clone(),
                    e.pod_name.clone(),
                    e.manifest.clone(),
                    e.seen,
                    e.mirrored,
                    e.hash.clone(),
                )
            })
            .collect();
        (e, unreachable_reason(shared, k, &st).is_none())
    };
    // the modelled hub's container: (restarts, exit code of the ended instance, last exit)
    let hub_container = {
        let st = k.state.lock().unwrap();
        st.hub_model
            .as_ref()
            .map(|m| (m.restarts, *m.run.exited.borrow(), m.last_exit))
    };
    let (hub, changed, modelled_hub) = {
        let mut st = k.state.lock().unwrap();
        let now = (
            hub_serving(shared, &k.name, &st),
            hub_running(shared, &k.name, &st),
        );
        let changed = now != st.hub_published || now.0 != st.hub.is_some();
        st.hub_published = now;
        let modelled = st.hub_model.as_ref().and_then(|_| {
            st.statics
                .values()
                .find(|e| is_hub(e))
                .map(|e| e.pod_name.clone())
        });
        (now, changed, modelled)
    };
    if changed {
        set_hub(shared, k, hub.0);
        annotate(shared, k);
        post_status(shared, k, false);
    }
    let restarted = static_containers(shared, k, &entries, modelled_hub.as_deref());
    if !reachable {
        return;
    }
    let pods = shared.api.info("", "pods");
    for (ns, name, manifest, seen, mirrored, _) in entries {
        let Some(pod) = shared.api.get_opt("", "pods", &ns, &name) else {
            if mirrored {
                // Someone deleted the mirror pod: the kubelet recreates it on its next sync.
                let mut st = k.state.lock().unwrap();
                for e in st.statics.values_mut() {
                    if e.pod_name == name {
                        e.mirrored = false;
                    }
                }
                st.static_dir_sig = None;
            }
            continue;
        };
        let running = seen.elapsed() >= static_delay(shared, &k.name);
        let ready = match &modelled_hub {
            Some(hub_pod) if *hub_pod == name => hub.1,
            _ => container_ready_after_delay(shared, &k.name, &manifest, seen),
        };
        let want_phase = if running { "Running" } else { "Pending" };
        let cur_ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"));
        let is_hub_model = modelled_hub.as_deref() == Some(name.as_str());
        let hub_view = hub_container.filter(|_| is_hub_model);
        let hub_stale = hub_view.is_some_and(|(restarts, ended, _)| {
            let cs = &pod["status"]["containerStatuses"][0];
            cs["restartCount"] != json!(restarts)
                || cs["state"]["waiting"].is_object() != ended.is_some()
        });
        if pod["status"]["phase"] == json!(want_phase)
            && cur_ready == ready
            && !restarted.contains(&name)
            && !hub_stale
        {
            continue;
        }
        let mut status = pod_status(
            k,
            &pod,
            want_phase,
            ready,
            &manifest["spec"]["containers"],
            None,
            started_at(seen),
        );
        k.cri
            .statics
            .lock()
            .unwrap()
            .apply(&k.cri, &name, &mut status);
        // a modelled hub's process ends like a container's: CrashLoopBackOff while the kubelet
        // backs off, the ended instance as lastState, restartCount
        if let Some((restarts, ended, last)) = hub_view
            && let Some(cs) = status["containerStatuses"].get_mut(0)
        {
            cs["restartCount"] = json!(restarts);
            let term = |code: i32| {
                json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" },
                    "finishedAt": util::now()}})
            };
            if let Some(code) = ended {
                cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                    "message": format!("back-off restarting failed container {} in pod {name}", cs["name"].as_str().unwrap_or(""))}});
                cs["lastState"] = term(code);
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            } else if let Some(code) = last {
                cs["lastState"] = term(code);
            }
        }
        let _ = shared
            .api
            .modify(&pods, &ns, &name, Some("status"), "kubelet", &|o| {
                o["status"] = status.clone();
                true
            });
    }
}

fn started_at(seen: Instant) -> String {
    util::rfc3339(SystemTime::now() - seen.elapsed())
}

pub(crate) fn pod_status(
    k: &NodeKubelet,
    pod: &Value,
    phase: &str,
    ready: bool,
    containers: &Value,
    terminated: Option<(i32, &str)>,
    started: String,
) -> Value {
    let now = util::now();
    let b = |x: bool| if x { "True" } else { "False" };
    let statuses: Vec<Value> = containers
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let state = match (phase, terminated) {
                (_, Some((code, reason))) => json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now, "containerID": format!("containerd://{:016x}", util::fnv32a(pod["metadata"]["uid"].to_string().as_bytes()))}}),
                ("Running", _) => json!({"running": {"startedAt": started}}),
                _ => json!({"waiting": {"reason": "ContainerCreating"}}),
            };
            json!({"name": c["name"], "image": c["image"], "imageID": format!("{}@sha256:{:064x}", c["image"].as_str().unwrap_or(""), util::fnv32a(c["image"].to_string().as_bytes())),
                "ready": ready && terminated.is_none(), "restartCount": 0, "started": phase == "Running", "state": state})
        })
        .collect();
    let mut conds = vec![
        json!({"type": "PodReadyToStartContainers", "status": b(phase != "Pending"), "lastTransitionTime": now}),
        json!({"type": "Initialized", "status": "True", "lastTransitionTime": now}),
        json!({"type": "Ready", "status": b(ready && phase == "Running"), "lastTransitionTime": now}),
        json!({"type": "ContainersReady", "status": b(ready && phase == "Running"), "lastTransitionTime": now}),
        json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": now}),
    ];
    // Conditions written by others (e.g. PodNeedUpgrade) survive kubelet status updates.
    for c in pod["status"]["conditions"].as_array().into_iter().flatten() {
        if !conds.iter().any(|x| x["type"] == c["type"]) {
            conds.push(c.clone());
        }
    }
    let host_network = pod["spec"]["hostNetwork"] == json!(true);
    let sandbox_ip = pod["metadata"]["uid"]
        .as_str()
        .and_then(|uid| k.sandboxes.lock().unwrap().get(uid).map(|s| s.ip));
    let pod_ip = if host_network {
        k.ip.clone()
    } else if let Some(ip) = sandbox_ip {
        ip.to_string()
    } else {
        format!(
            "10.244.{}.{}",
            util::fnv32a(k.name.as_bytes()) % 256,
            util::fnv32a(pod["metadata"]["name"].to_string().as_bytes()) % 250 + 2
        )
    };
    let mut st = json!({"phase": phase, "conditions": conds, "hostIP": k.ip, "hostIPs": [{"ip": k.ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": started, "containerStatuses": statuses, "qosClass": pod["status"]["qosClass"].as_str().unwrap_or("BestEffort")});
    if phase == "Pending" {
        st.as_object_mut().unwrap().remove("podIP");
        st.as_object_mut().unwrap().remove("podIPs");
    }
    st
}

fn set_hub(shared: &Cluster, k: &Arc<NodeKubelet>, running: bool) {
    let mut st = k.state.lock().unwrap();
    if running && st.hub.is_none() {
        let net = match crate::nodes::host_processes::node_namespaces(shared, k) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(node = %k.name, "cannot create the node's network namespace: {e}");
                return;
            }
        };
        match net.bind_tcp(([127, 0, 0, 1], YURTHUB_PORT).into()) {
            Ok(l) => {
                let sh = shared.self_arc();
                let node = k.name.clone();
                st.hub = Some(tokio::spawn(serve_hub(sh, node, l)));
            }
            Err(e) => {
                tracing::warn!(node = %k.name, "yurthub endpoint: cannot bind 127.0.0.1:{YURTHUB_PORT}: {e}")
            }
        }
    } else if !running && let Some(h) = st.hub.take() {
        h.abort();
    }
}

async fn serve_hub(shared: Arc<Cluster>, node: String, l: std::net::TcpListener) {
    let Ok(listener) = tokio::net::TcpListener::from_std(l) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let sh = shared.clone();
        let node = node.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let sh = sh.clone();
                    let node = node.clone();
                    async move {
                        let method = req.method().clone();
                        let path = req.uri().path().to_string();
                        Ok::<_, std::convert::Infallible>(yurthub_endpoint(
                            &sh, &node, &method, &path,
                        ))
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await;
        });
    }
}

/// YurtHub's node-local endpoints (port 10267), with the status codes and plain-text bodies of
/// the real hub (see reference/staticpod-rollout.md §4).
pub fn yurthub_endpoint(
    shared: &Cluster,
    node: &str,
    method: &hyper::Method,
    path: &str,
) -> hyper::Response<Body> {
    let Some(k) = shared.kubelets.get(node) else {
        return text_response(404, format!("no node {node}"));
    };
    let (serving, ready, legacy) = {
        let st = k.state.lock().unwrap();
        (
            hub_serving(shared, &k.name, &st),
            hub_running(shared, &k.name, &st),
            st.hub_model.as_ref().map(|m| m.component)
                == Some(crate::nodes::programs::Component::YurtHubV06),
        )
    };
    if !serving {
        return text_response(
            503,
            format!("yurthub is not running on node {node} (connection refused)"),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["v1", "healthz"]) => text_response(200, "OK"),
        // v0.6 registers no readyz, /pods or OTA handler (openyurtio/openyurt@v0.6.1
        // pkg/yurthub/server/server.go registerHandlers): gorilla/mux's 404
        _ if legacy => text_response(404, "404 page not found\n"),
        ("GET", ["v1", "readyz"]) if ready => text_response(200, "OK"),
        // pkg/yurthub/server/server.go (readyz): net/http Error text, status 500
        ("GET", ["v1", "readyz"]) => text_response(
            500,
            "yurthub is not ready: certificates or informers are not synced yet\n",
        ),
        ("GET", ["pods"]) => {
            let filter = Filter {
                field: crate::api::selector::FieldSelector::parse(&format!("spec.nodeName={node}"))
                    .unwrap(),
                ..Default::default()
            };
            let (items, rv) = shared.api.list(&shared.api.info("", "pods"), &filter);
            json_response(
                200,
                &shared
                    .api
                    .list_object(&shared.api.info("", "pods"), items, rv, None, None),
            )
        }
        (
            "POST",
            [
                "openyurt.io",
                "v1",
                "namespaces",
                ns,
                "pods",
                pod,
                "upgrade",
            ],
        ) => ota_upgrade(shared, &k, ns, pod),
        _ => text_response(404, "404 page not found\n"),
    }
}

fn ota_upgrade(shared: &Cluster, k: &NodeKubelet, ns: &str, pod: &str) -> hyper::Response<Body> {
    if k.state.lock().unwrap().forced_ready == Some(false) {
        return text_response(
            503,
            "OTA upgrade is not allowed when node is disconnected to cloud",
        );
    }
    let Some(p) = shared.api.get_opt("", "pods", ns, pod) else {
        return text_response(500, format!("Get pod failed, pods \"{pod}\" not found"));
    };
    let cond = |t: &str| {
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == json!(t))
            .cloned()
    };
    let precheck = if p["metadata"]["deletionTimestamp"].is_string() {
        Some("pod is deleting".to_string())
    } else if p["spec"]["nodeName"] != json!(k.name) {
        Some(format!("pod is not on node {}", k.name))
    } else if cond("PodNeedUpgrade").is_none_or(|c| c["status"] != json!("True")) {
        Some("pod condition PodNeedUpgrade is not true".to_string())
    } else {
        None
    };
    if let Some(why) = precheck {
        return text_response(403, format!("Pre check update pod failed, {why}"));
    }
    let Some(owner) = p["metadata"]["ownerReferences"]
        .as_array()
        .and_then(|o| o.first())
        .cloned()
    else {
        return text_response(400, "Pod has no owner references");
    };
    match owner["kind"].as_str() {
        Some("Node") => {
            let suffix = format!("-{}", k.name);
            let Some(static_name) = pod.strip_suffix(&suffix) else {
                return text_response(500, "Static pod pre-check failed");
            };
            let Some(cm) = shared.api.get_opt(
                "",
                "configmaps",
                ns,
                &format!("yurt-static-set-{static_name}"),
            ) else {
                return text_response(403, "Configmap for static pod does not exist");
            };
            let Some((key, manifest)) = cm["data"]
                .as_object()
                .and_then(|d| d.iter().next())
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            else {
                return text_response(500, "Apply update failed");
            };
            let Some(dir) = static_dir(k) else {
                return text_response(500, "Apply update failed");
            };
            let scratch = state_dir_of(shared, &["yurthub", &k.name, "tmp", "manifests"]);
            let target = dir.join(format!("{key}.yaml"));
            let ok = std::fs::create_dir_all(&scratch).is_ok()
                && std::fs::write(scratch.join(format!("{key}.upgrade")), &manifest).is_ok()
                && (!target.exists()
                    || std::fs::copy(&target, scratch.join(format!("{key}.bak"))).is_ok())
                && std::fs::write(&target, &manifest).is_ok();
            if !ok {
                return text_response(500, "Apply update failed");
            }
            text_response(200, format!("Start updating pod {ns}/{pod}"))
        }
        Some("DaemonSet") => {
            let _ = shared.api.delete(
                &shared.api.info("", "pods"),
                ns,
                pod,
                &DeleteOptions::default(),
                &Ctx::system("yurthub"),
            );
            text_response(200, format!("Start updating pod {ns}/{pod}"))
        }
        other => text_response(
            400,
            format!("Not support ota upgrade pod type {}", other.unwrap_or("")),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Pods bound to nodes.

async fn pod_loop(shared: Arc<Cluster>) {
    let pods = shared.api.info("", "pods");
    let mut events = shared.api.store.subscribe();
    for p in shared.api.list(&pods, &Filter::default()).0 {
        consider_pod(&shared, &p);
    }
    let mut stop = shared.shutting_down();
    loop {
        let ev = tokio::select! {
            ev = events.recv() => ev,
            _ = stop.changed() => return,
        };
        let Some(ev) = ev else { return };
        if ev.gr.resource != "pods" || !ev.gr.group.is_empty() {
            continue;
        }
        if ev.typ == EventType::Deleted {
            pod_gone(&shared, &ev.obj);
            continue;
        }
        consider_pod(&shared, &ev.obj);
    }
}

/// A pod bound to a node was deleted from the API: its containers stop and the runtime
/// forgets its sandbox.
pub(crate) fn pod_gone(shared: &Cluster, p: &Value) {
    let uid = p["metadata"]["uid"].as_str().unwrap_or_default();
    if let Some(k) = p["spec"]["nodeName"]
        .as_str()
        .and_then(|n| shared.kubelets.get(n))
    {
        if let Some(run) = k.state.lock().unwrap().pods.remove(uid) {
            let _ = run.stop.send(true);
        }
        k.cri.remove_pod(uid);
        k.sandboxes.lock().unwrap().remove(uid);
    }
}

fn is_mirror(p: &Value) -> bool {
    p["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string()
}

/// The node's pods that a fresh list of its API server no longer has (deleted while the watch
/// was down) stop, as if their deletion had been seen.
pub(crate) fn forget_pods_except(
    shared: &Cluster,
    k: &NodeKubelet,
    listed: &std::collections::HashSet<String>,
) {
    let gone: Vec<String> = k
        .state
        .lock()
        .unwrap()
        .pods
        .keys()
        .filter(|uid| !listed.contains(*uid))
        .cloned()
        .collect();
    for uid in gone {
        pod_gone(
            shared,
            &json!({"metadata": {"uid": uid}, "spec": {"nodeName": k.name}}),
        );
    }
}

/// A pod bound to a node was added or changed: its kubelet starts it, or stops it and
/// confirms its deletion.
pub(crate) fn consider_pod(shared: &Arc<Cluster>, p: &Value) {
    if is_mirror(p) {
        return;
    }
    let Some(node) = p["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) else {
        return;
    };
    let Some(k) = shared.kubelets.get(node) else {
        return;
    };
    let uid = p["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut st = k.state.lock().unwrap();
    if p["metadata"]["deletionTimestamp"].is_string() {
        let reachable = unreachable_reason(shared, &k, &st).is_none();
        // An unreachable kubelet never confirms deletion: the pod stays Terminating.
        if !reachable {
            return;
        }
        match st.pods.get(&uid) {
            Some(run) => {
                let _ = run.stop.send(true);
            }
            None => {
                drop(st);
                finalize_deletion(shared, p);
            }
        }
        return;
    }
    if st.pods.contains_key(&uid)
        || matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
    {
        return;
    }
    if unreachable_reason(shared, &k, &st).is_some() {
        return;
    }
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(run_pod(shared.clone(), k.clone(), kubelet_copy(p), rx));
    st.pods.insert(uid, PodRun { stop: tx, task });
}

/// The pod as its worker keeps it while it runs: without managedFields, which the kubelet
/// never reads and which are half of a pod's memory (5,000 running pods held ~80 MiB of them).
fn kubelet_copy(p: &Value) -> Value {
    let Some(obj) = p.as_object() else {
        return p.clone();
    };
    let copy = obj.iter().map(|(key, v)| {
        let v = match v.as_object() {
            Some(meta) if key == "metadata" => Value::Object(
                meta.iter()
                    .filter(|(f, _)| *f != "managedFields")
                    .map(|(f, x)| (f.clone(), x.clone()))
                    .collect(),
            ),
            _ => v.clone(),
        };
        (key.clone(), v)
    });
    Value::Object(copy.collect())
}

fn finalize_deletion(shared: &Cluster, p: &Value) {
    let (ns, name) = crate::api::store::key_of(p);
    let uid = p["metadata"]["uid"].as_str().map(str::to_string);
    if let Some(api) = real_api_of(shared, p) {
        let _ = api.delete_pod(&ns, &name, uid.as_deref());
        return;
    }
    let pods = shared.api.info("", "pods");
    let _ = shared.api.delete(
        &pods,
        &ns,
        &name,
        &DeleteOptions {
            grace_period: Some(0),
            precondition_uid: uid,
            ..Default::default()
        },
        &Ctx::system("kubelet"),
    );
}

/// How long shutdown waits, in all, for the nodes' pods to stop before aborting their tasks.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// Becomes true after `d` of wall-clock time. Not tokio's timer: a node task wedged on its
/// state lock (issue 18) soon wedges every worker, and then no worker drives the timer.
fn wall_deadline(d: Duration) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    std::thread::spawn(move || {
        std::thread::sleep(d);
        let _ = tx.send(true);
    });
    rx
}

async fn passed(deadline: &watch::Receiver<bool>) {
    let _ = deadline.clone().wait_for(|p| *p).await;
}

/// The node's pods (stopping) and YurtHub endpoint, taken out of its state; None if the state
/// stays locked until `deadline`. A contended lock is waited for on a thread of its own, so a
/// wedged node leaves at most that thread behind.
async fn take_runs(
    k: &Arc<NodeKubelet>,
    deadline: &watch::Receiver<bool>,
) -> Option<(Vec<PodRun>, Option<JoinHandle<()>>)> {
    fn take(st: &mut NodeState) -> (Vec<PodRun>, Option<JoinHandle<()>>) {
        (st.pods.drain().map(|(_, r)| r).collect(), st.hub.take())
    }
    if let Ok(mut st) = k.state.try_lock() {
        return Some(take(&mut st));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let k = k.clone();
    std::thread::spawn(move || {
        let mut st = k
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = tx.send(take(&mut st));
    });
    tokio::select! {
        r = rx => r.ok(),
        _ = passed(deadline) => None,
    }
}

/// Stops every node's pods, YurtHub endpoint and services within `STOP_GRACE`: pods still
/// running then are aborted, and a node whose state stays locked is left as it is.
pub async fn stop_all(shared: &Cluster) {
    let deadline = wall_deadline(STOP_GRACE);
    let mut runs: Vec<PodRun> = Vec::new();
    for k in shared.kubelets.all() {
        match take_runs(&k, &deadline).await {
            Some((pods, hub)) => {
                for r in &pods {
                    let _ = r.stop.send(true);
                }
                runs.extend(pods);
                if let Some(h) = hub {
                    h.abort();
                }
            }
            None => tracing::warn!(node = %k.name, "node state stays locked; not waiting for it"),
        }
        crate::nodes::systemd::services::stop_all(&k);
    }
    for mut r in runs {
        tokio::select! {
            _ = &mut r.task => {}
            _ = passed(&deadline) => r.task.abort(),
        }
    }
}

/// Installs the node's tool stubs (`systemctl`, `nsenter`, `journalctl`) once, for the first
/// process container that runs on the node.
pub(crate) fn ensure_tools(shared: &Cluster, k: &NodeKubelet, tools_dir: &Path) {
    let mut t = k.tools.lock().unwrap();
    if t.is_some() {
        return;
    }
    let call_log = k.host_path("/var/log/yurtsim/systemctl.log");
    let _ = std::fs::create_dir_all(call_log.parent().unwrap());
    let ack = state_dir_of(shared, &["nodes", &k.name, "systemctl.ack"]);
    let state = state_dir_of(shared, &["nodes", &k.name, "kubelet.state"]);
    match NodeTools::install(
        tools_dir,
        &call_log,
        &ack,
        &state,
        shared.cfg.yurtctl.as_deref(),
    ) {
        Ok(tools) => {
            let _ = tools.set_unit_state("active");
            let _ = tools.enable_results();
            *t = Some(tools);
        }
        Err(e) => tracing::warn!(node = %k.name, "installing node tools: {e}"),
    }
}

pub(crate) fn pod_dir(shared: &Cluster, p: &Value) -> PathBuf {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = p["metadata"]["name"].as_str().unwrap_or_default();
    let uid = p["metadata"]["uid"].as_str().unwrap_or_default();
    state_dir_of(shared, &["pods", &format!("{ns}_{name}_{uid}")])
}

pub(crate) fn log_path(shared: &Cluster, p: &Value, container: &str) -> PathBuf {
    if p["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
        let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        return static_log_path(shared, ns, name, container);
    }
    pod_dir(shared, p).join(format!("{container}.log"))
}

/// A static pod's container log: by the mirror pod's name, which is known before the mirror
/// pod exists (the kubelet runs static pods whether or not it reaches the API).
fn static_log_path(shared: &Cluster, ns: &str, pod: &str, container: &str) -> PathBuf {
    state_dir_of(shared, &["static-pods", &format!("{ns}_{pod}")]).join(format!("{container}.log"))
}

fn field_ref(k: &NodeKubelet, p: &Value, path: &str) -> String {
    match path {
        "spec.nodeName" => k.name.clone(),
        "status.hostIP" => k.ip.clone(),
        "status.podIP" if p["spec"]["hostNetwork"] == json!(true) => k.ip.clone(),
        "metadata.name" => p["metadata"]["name"].as_str().unwrap_or_default().into(),
        "metadata.namespace" => p["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .into(),
        "metadata.uid" => p["metadata"]["uid"].as_str().unwrap_or_default().into(),
        "spec.serviceAccountName" => p["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or_default()
            .into(),
        other => {
            if let Some(key) = other
                .strip_prefix("metadata.labels['")
                .and_then(|s| s.strip_suffix("']"))
            {
                return p["metadata"]["labels"][key]
                    .as_str()
                    .unwrap_or_default()
                    .into();
            }
            if let Some(key) = other
                .strip_prefix("metadata.annotations['")
                .and_then(|s| s.strip_suffix("']"))
            {
                return p["metadata"]["annotations"][key]
                    .as_str()
                    .unwrap_or_default()
                    .into();
            }
            String::new()
        }
    }
}

fn key_ref(shared: &Cluster, k: &NodeKubelet, ns: &str, kind: &str, r: &Value) -> Option<String> {
    let obj = k.read(shared, kind, ns, r["name"].as_str()?)?;
    let key = r["key"].as_str()?;
    if kind == "secrets" {
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(obj["data"][key].as_str()?)
            .ok()?;
        Some(String::from_utf8_lossy(&raw).into_owned())
    } else {
        obj["data"][key].as_str().map(str::to_string)
    }
}

/// A container's hostname: the node's on the host network, else the pod's name.
pub(crate) fn pod_hostname(k: &NodeKubelet, p: &Value) -> String {
    if p["spec"]["hostNetwork"] == json!(true) {
        k.name.clone()
    } else {
        p["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

pub(crate) fn container_env(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    c: &Value,
    path: &str,
) -> Vec<(String, String)> {
    container_env_with(shared, k, p, c, path, service_view(k))
}

fn container_env_with(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    c: &Value,
    path: &str,
    view: crate::nodes::cri::ServiceView,
) -> Vec<(String, String)> {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    let hostname = pod_hostname(k, p);
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path.to_string()),
        ("HOSTNAME".into(), hostname),
        ("HOME".into(), "/root".into()),
    ];
    // The Services as this kubelet sees them now (directly, or filtered by YurtHub).
    let services: Vec<Value> = match &k.api {
        NodeApi::Sim => shared
            .api
            .list(&shared.api.info("", "services"), &Filter::default())
            .0
            .iter()
            .map(|s| (**s).clone())
            .collect(),
        NodeApi::Real(api) => api.list("services").unwrap_or_default(),
    };
    let links = p["spec"]["enableServiceLinks"] != json!(false);
    env.extend(crate::nodes::cri::env::service_env(
        &services, ns, links, &view,
    ));
    let app_container = p["spec"]["containers"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|x| x["name"] == c["name"]));
    let mut set = |k: String, v: String| {
        env.retain(|(x, _)| x != &k);
        env.push((k, v));
    };
    for from in c["envFrom"].as_array().into_iter().flatten() {
        let prefix = from["prefix"].as_str().unwrap_or("");
        for (kind, field) in [("configmaps", "configMapRef"), ("secrets", "secretRef")] {
            if let Some(name) = from[field]["name"].as_str()
                && let Some(obj) = k.read(shared, kind, ns, name)
            {
                for (key, v) in obj["data"].as_object().into_iter().flatten() {
                    let val = if kind == "secrets" {
                        use base64::Engine;
                        base64::engine::general_purpose::STANDARD
                            .decode(v.as_str().unwrap_or(""))
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default()
                    } else {
                        v.as_str().unwrap_or_default().to_string()
                    };
                    set(format!("{prefix}{key}"), val);
                }
            }
        }
    }
    for e in c["env"].as_array().into_iter().flatten() {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let v = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else if let Some(f) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            field_ref(k, p, f)
        } else if e["valueFrom"]["configMapKeyRef"].is_object() {
            key_ref(
                shared,
                k,
                ns,
                "configmaps",
                &e["valueFrom"]["configMapKeyRef"],
            )
            .unwrap_or_default()
        } else if e["valueFrom"]["secretKeyRef"].is_object() {
            key_ref(shared, k, ns, "secrets", &e["valueFrom"]["secretKeyRef"]).unwrap_or_default()
        } else {
            String::new()
        };
        let v = crate::nodes::cri::env::explicit_override(&view, app_container, name).unwrap_or(v);
        set(name.to_string(), v);
    }
    env
}

/// How the kubelet reaches its API now: through YurtHub when its kubeconfig points at one.
pub(crate) fn service_view(k: &NodeKubelet) -> crate::nodes::cri::ServiceView {
    let st = k.state.lock().unwrap();
    service_view_of(k, &st)
}

fn service_view_of(k: &NodeKubelet, st: &NodeState) -> crate::nodes::cri::ServiceView {
    let via_hub = st
        .view
        .as_ref()
        .and_then(|v| v.server.as_ref().ok())
        .is_some_and(|s| YURTHUB_SERVERS.contains(&normalize_server(s).as_str()));
    if via_hub {
        let f = k.hub_filters.lock().unwrap().clone();
        crate::nodes::cri::ServiceView::Hub(
            f.unwrap_or_else(crate::nodes::cri::HubFilters::defaults),
        )
    } else {
        crate::nodes::cri::ServiceView::Direct
    }
}

/// Volumes as real directories/files: hostPath inside the node root; others under the pod dir.
fn prepare_volumes(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
) -> Result<HashMap<String, (PathBuf, bool)>, String> {
    let mut out = HashMap::new();
    let dir = pod_dir(shared, p).join("volumes");
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    for v in p["spec"]["volumes"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap_or_default().to_string();
        if let Some(hp) = v["hostPath"]["path"].as_str() {
            let real = k.host_path(hp);
            let typ = v["hostPath"]["type"].as_str().unwrap_or("");
            let check = match typ {
                "DirectoryOrCreate" => std::fs::create_dir_all(&real).map_err(|e| e.to_string()),
                "FileOrCreate" => {
                    if !real.exists() {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&real)
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    } else {
                        Ok(())
                    }
                }
                "Directory" if !real.is_dir() => Err(format!(
                    "hostPath type check failed: {hp} is not a directory"
                )),
                "File" if !real.is_file() => {
                    Err(format!("hostPath type check failed: {hp} is not a file"))
                }
                _ => Ok(()),
            };
            check.map_err(|e| format!("MountVolume.SetUp failed for volume \"{name}\" : {e}"))?;
            if !real.exists() {
                // An untyped hostPath that is missing is created as a directory, as the kubelet does.
                std::fs::create_dir_all(&real).map_err(|e| e.to_string())?;
            }
            out.insert(name, (real, false));
            continue;
        }
        let vdir = dir.join(&name);
        std::fs::create_dir_all(&vdir).map_err(|e| e.to_string())?;
        let write = |file: &str, data: &[u8]| -> Result<(), String> {
            let path = resolve_under(&vdir, file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&path, data).map_err(|e| e.to_string())
        };
        let source = |kind: &str, src: &Value| -> Result<(), String> {
            let obj_name = src["name"]
                .as_str()
                .or(src["secretName"].as_str())
                .unwrap_or_default();
            let Some(obj) = k.read(shared, kind, ns, obj_name) else {
                if src["optional"] == json!(true) {
                    return Ok(());
                }
                return Err(format!(
                    "MountVolume.SetUp failed for volume \"{name}\" : {} \"{obj_name}\" not found",
                    kind.trim_end_matches('s')
                ));
            };
            let decode = |v: &Value| -> Vec<u8> {
                if kind == "secrets" {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD
                        .decode(v.as_str().unwrap_or(""))
                        .unwrap_or_default()
                } else {
                    v.as_str().unwrap_or_default().as_bytes().to_vec()
                }
            };
            match src["items"].as_array() {
                Some(items) => {
                    for it in items {
                        let key = it["key"].as_str().unwrap_or_default();
                        let Some(v) = obj["data"].get(key) else {
                            if src["optional"] == json!(true) {
                                continue;
                            }
                            // the kubelet's own wording
                            let what = if kind == "secrets" {
                                "references non-existent secret key"
                            } else {
                                "configmap references non-existent config key"
                            };
                            return Err(format!(
                                "MountVolume.SetUp failed for volume \"{name}\" : {what}: {key}"
                            ));
                        };
                        write(it["path"].as_str().unwrap_or_default(), &decode(v))?;
                    }
                }
                None => {
                    for (key, v) in obj["data"].as_object().into_iter().flatten() {
                        write(key, &decode(v))?;
                    }
                }
            }
            Ok(())
        };
        if v["configMap"].is_object() {
            source("configmaps", &v["configMap"])?;
        } else if v["secret"].is_object() {
            source("secrets", &v["secret"])?;
        } else if let Some(srcs) = v["projected"]["sources"].as_array() {
            for s in srcs {
                if let Some(path) = s["serviceAccountToken"]["path"].as_str() {
                    // A real token for the pod's ServiceAccount, bound to the pod, as the
                    // kubelet's TokenRequest gets it: the API authenticates it as that SA.
                    let sa = p["spec"]["serviceAccountName"]
                        .as_str()
                        .unwrap_or("default");
                    let (pod_ns, pod_name) = crate::api::store::key_of(p);
                    let ttl = Duration::from_secs(
                        s["serviceAccountToken"]["expirationSeconds"]
                            .as_u64()
                            .unwrap_or(3607),
                    );
                    let failed = |why: String| {
                        format!(
                            "MountVolume.SetUp failed for volume \"{}\" : failed to fetch token: {why}",
                            v["name"].as_str().unwrap_or("")
                        )
                    };
                    let token = match &k.api {
                        NodeApi::Sim => shared
                            .api
                            .tokens
                            .issue(&shared.api, &pod_ns, sa, Some((&pod_ns, &pod_name)), ttl)
                            .ok_or_else(|| failed(format!("serviceaccounts \"{sa}\" not found")))?,
                        NodeApi::Real(api) => api
                            .pod_token(
                                p,
                                sa,
                                s["serviceAccountToken"]["audience"].as_str(),
                                ttl.as_secs(),
                            )
                            .map_err(|e| failed(e.message))?,
                    };
                    write(path, token.as_bytes())?;
                } else if s["configMap"].is_object() {
                    source("configmaps", &s["configMap"])?;
                } else if s["secret"].is_object() {
                    source("secrets", &s["secret"])?;
                } else if let Some(items) = s["downwardAPI"]["items"].as_array() {
                    for it in items {
                        let val = field_ref(
                            k,
                            p,
                            it["fieldRef"]["fieldPath"].as_str().unwrap_or_default(),
                        );
                        write(it["path"].as_str().unwrap_or_default(), val.as_bytes())?;
                    }
                }
            }
        }
        out.insert(
            name,
            (
                vdir,
                v["projected"].is_object() || v["secret"].is_object() || v["configMap"].is_object(),
            ),
        );
    }
    Ok(out)
}

/// The pod object as stored now, when it is still the same pod (same uid).
pub(crate) fn current_pod(shared: &Cluster, p: &Value) -> Option<Arc<Value>> {
    let (ns, name) = crate::api::store::key_of(p);
    let cur = match real_api_of(shared, p) {
        Some(api) => api.get("pods", &ns, &name).ok().map(Arc::new),
        None => shared.api.get_opt("", "pods", &ns, &name),
    };
    cur.filter(|c| c["metadata"]["uid"] == p["metadata"]["uid"])
}

/// The real API server the kubelet of the pod's node talks to, if its node is in front of one.
fn real_api_of(shared: &Cluster, p: &Value) -> Option<Arc<dyn crate::nodes::real_api::RealApi>> {
    let k = shared.kubelets.get(p["spec"]["nodeName"].as_str()?)?;
    match &k.api {
        NodeApi::Real(api) => Some(api.clone()),
        NodeApi::Sim => None,
    }
}

/// Why the kubelet of `node` cannot post anything now (stopped, or no way to its API
/// server), if it cannot.
pub(crate) fn cannot_post(shared: &Cluster, node: &str) -> Option<String> {
    let k = shared.kubelets.get(node)?;
    let st = k.state.lock().unwrap();
    unreachable_reason(shared, &k, &st)
}

/// The kubelet's pod status update. A kubelet that is stopped or cannot reach its API server
/// posts nothing: the pod keeps the status it last reported (a real kubelet's status manager
/// lives in the kubelet process and talks to the API server; containerd keeps the containers
/// running meanwhile). Err(503) then, for the caller to post again once it can.
pub(crate) fn set_pod_status(shared: &Cluster, p: &Value, status: Value) -> ApiResult<()> {
    if let Some(why) = p["spec"]["nodeName"]
        .as_str()
        .and_then(|n| cannot_post(shared, n))
    {
        return Err(crate::api::error::ApiError::new(
            503,
            "ServiceUnavailable",
            why,
        ));
    }
    let (ns, name) = crate::api::store::key_of(p);
    let uid = p["metadata"]["uid"].clone();
    let update = |o: &mut Value| {
        if o["metadata"]["uid"] != uid {
            return false;
        }
        let mut st = status.clone();
        // Init containers that completed keep their statuses once the app containers run.
        if st["initContainerStatuses"].is_null() && o["status"]["initContainerStatuses"].is_array()
        {
            st["initContainerStatuses"] = o["status"]["initContainerStatuses"].clone();
        }
        // Keep conditions others own (e.g. PodNeedUpgrade).
        for c in o["status"]["conditions"].as_array().into_iter().flatten() {
            if let Some(list) = st["conditions"].as_array_mut()
                && !list.iter().any(|x| x["type"] == c["type"])
            {
                list.push(c.clone());
            }
        }
        o["status"] = st;
        true
    };
    match real_api_of(shared, p) {
        Some(api) => api.modify("pods", &ns, &name, Some("status"), &update),
        None => shared
            .api
            .modify(
                &shared.api.info("", "pods"),
                &ns,
                &name,
                Some("status"),
                "kubelet",
                &update,
            )
            .map(|_| ()),
    }
}

/// A container the runtime could not start: its log says why and the pod gets containerd's
/// `Failed` event, as the real kubelet reports a StartError.
pub(crate) fn start_failed(shared: &Cluster, p: &Value, log: &Path, msg: &str) {
    let _ = std::fs::write(log, format!("{msg}\n"));
    pod_event(
        shared,
        p,
        "Warning",
        "Failed",
        &format!(
            "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: {msg}"
        ),
    );
}

pub(crate) fn pod_event(shared: &Cluster, p: &Value, typ: &str, reason: &str, msg: &str) {
    if let Some(api) = real_api_of(shared, p) {
        api.event(p, "Pod", typ, reason, msg);
        return;
    }
    shared
        .api
        .record_event(p, &shared.api.info("", "pods"), typ, reason, msg, "kubelet");
}

async fn run_pod(
    shared: Arc<Cluster>,
    k: Arc<NodeKubelet>,
    p: Value,
    mut stop: watch::Receiver<bool>,
) {
    let outcome = run_pod_inner(&shared, &k, p.clone(), &mut stop).await;
    let current = || current_pod(&shared, &p);
    let Some(cur) = current() else { return };
    match outcome {
        PodEnd::Exited(code, reason) => {
            let phase = if code == 0 { "Succeeded" } else { "Failed" };
            let started = cur["status"]["startTime"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(util::now);
            let status = pod_status(
                &k,
                &cur,
                phase,
                false,
                &cur["spec"]["containers"],
                Some((code, reason)),
                started,
            );
            // posted once the kubelet can again (it reports what the runtime kept)
            let mut cur = cur;
            while let Err(e) = set_pod_status(&shared, &cur, status.clone()) {
                if e.code != 503 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                match current() {
                    Some(c) => cur = c,
                    None => return,
                }
            }
        }
        PodEnd::StatusWritten => {}
        PodEnd::Stopped => finalize_deletion(&shared, &cur),
    }
    // A deletion that arrived while the pod was finishing is confirmed now.
    if let Some(cur) = current().filter(|c| c["metadata"]["deletionTimestamp"].is_string()) {
        finalize_deletion(&shared, &cur);
    }
}

enum PodEnd {
    Exited(i32, &'static str),
    /// The pod ended and its final status is already written (a failed init container).
    StatusWritten,
    Stopped,
}

/// Resolves once the pod is to be stopped (the guard from `wait_for` must not live across awaits).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

async fn wait_stop(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = stopped(stop) => true,
    }
}

async fn run_pod_inner(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    pod: Value,
    stop: &mut watch::Receiver<bool>,
) -> PodEnd {
    let p = &pod;
    let restart_policy = p["spec"]["restartPolicy"]
        .as_str()
        .unwrap_or("Always")
        .to_string();
    let containers: &[Value] = p["spec"]["containers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    // A failed mount is retried with the volume manager's backoff: 500 ms, doubling, at most
    // 2 min (kubernetes/kubernetes pkg/util/goroutinemap/exponentialbackoff
    // exponential_backoff.go, used by pkg/volume/util/nestedpendingoperations; the cap as read
    // in the indexed copy, its tag not checked: later releases may add 2 s). On the real
    // tier a token request can come before the Node authorizer's graph has the pod's binding.
    let mut retry_in = Duration::from_millis(500);
    let volumes = loop {
        match prepare_volumes(shared, k, p) {
            Ok(v) => break v,
            Err(e) => {
                pod_event(shared, p, "Warning", "FailedMount", &e);
                if wait_stop(stop, retry_in).await {
                    return PodEnd::Stopped;
                }
                retry_in = (retry_in * 2).min(Duration::from_secs(120));
            }
        }
    };
    // Image pull and container start take a moment on a real node.
    if wait_stop(stop, shared.cfg.pod_ready_delay).await {
        return PodEnd::Stopped;
    }
    let owning_job = p["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["kind"] == json!("Job"))
        .and_then(|o| o["name"].as_str());
    if let Some(job) = owning_job
        && let Some(code) = shared.faults.job_failure_for(&k.name, job)
    {
        let c0 = containers
            .first()
            .and_then(|c| c["name"].as_str())
            .unwrap_or("main");
        let lp = log_path(shared, p, c0);
        let _ = std::fs::create_dir_all(lp.parent().unwrap());
        let _ = std::fs::write(
            &lp,
            format!(
                "yurtsim: injected failure on node {}: exit code {code}\n",
                k.name
            ),
        );
        pod_event(
            shared,
            p,
            "Warning",
            "Failed",
            &format!("Error: container exited with code {code} (yurtsim fault)"),
        );
        return PodEnd::Exited(code, "Error");
    }
    let never_ready = containers.iter().any(|c| {
        shared
            .faults
            .is_never_ready(c["image"].as_str().unwrap_or(""))
    });
    let first_start = util::now();
    match crate::nodes::init_containers::run(
        shared,
        k,
        p,
        &volumes,
        &restart_policy,
        stop,
        &first_start,
    )
    .await
    {
        crate::nodes::init_containers::InitEnd::Done => {}
        crate::nodes::init_containers::InitEnd::Failed => return PodEnd::StatusWritten,
        crate::nodes::init_containers::InitEnd::Stopped => return PodEnd::Stopped,
    }
    match crate::nodes::pod_worker::run(
        shared,
        k,
        p,
        &volumes,
        &restart_policy,
        stop,
        &first_start,
        never_ready,
    )
    .await
    {
        crate::nodes::pod_worker::End::Exited(code, reason) => PodEnd::Exited(code, reason),
        crate::nodes::pod_worker::End::Stopped => PodEnd::Stopped,
    }
}

/// `GET pods/{name}/log`: the container's output, optionally followed while it runs.
pub async fn pod_log(
    shared: Arc<Cluster>,
    ns: &str,
    name: &str,
    q: &HashMap<String, String>,
) -> ApiResult<hyper::Response<Body>> {
    use http_body_util::BodyExt;
    let pods = shared.api.info("", "pods");
    let p = shared.api.get(&pods, ns, name)?;
    let names: Vec<String> = p["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    // init containers have logs too (kubernetes/kubernetes@v1.33.1
    // pkg/registry/core/pod/strategy.go LogLocation, podHasContainerWithName)
    let inits: Vec<String> = p["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    let container = match q.get("container").filter(|c| !c.is_empty()) {
        Some(c) if names.contains(c) || inits.contains(c) => c.clone(),
        Some(c) => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None if names.len() == 1 => names[0].clone(),
        None if inits.is_empty() => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                names.join(" ")
            )));
        }
        None => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}] or one of the init containers: [{}]",
                names.join(" "),
                inits.join(" ")
            )));
        }
    };
    let mut path = log_path(&shared, &p, &container);
    if q.get("previous").is_some_and(|v| v == "true") {
        // the kubelet keeps the last terminated instance's log beside the current one
        path = path.with_extension("previous.log");
        if !path.exists() {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )));
        }
    }
    let Ok(data) = std::fs::read(&path) else {
        return Err(crate::api::error::ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        )));
    };
    let mut data = data;
    if let Some(n) = q.get("tailLines").and_then(|t| t.parse::<usize>().ok()) {
        let text = String::from_utf8_lossy(&data).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(n);
        let mut s = lines[start..].join("\n");
        if !s.is_empty() {
            s.push('\n');
        }
        data = s.into_bytes();
    }
    if let Some(n) = q.get("limitBytes").and_then(|t| t.parse::<usize>().ok()) {
        data.truncate(n);
    }
    let follow = q.get("follow").is_some_and(|f| f == "true");
    let terminal =
        |p: &Value| matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    if !follow || terminal(&p) {
        return Ok(hyper::Response::builder()
            .status(200)
            .header("Content-Type", "text/plain")
            .body(http_body_util::Full::new(bytes::Bytes::from(data)).boxed())
            .unwrap());
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let (ns, name) = (ns.to_string(), name.to_string());
    let mut offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = tx.send(bytes::Bytes::from(data)).await;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len > offset {
                use std::io::{Read, Seek, SeekFrom};
                if let Ok(mut f) = std::fs::File::open(&path) {
                    let _ = f.seek(SeekFrom::Start(offset));
                    let mut buf = Vec::new();
                    let _ = f.read_to_end(&mut buf);
                    offset += buf.len() as u64;
                    if tx.send(bytes::Bytes::from(buf)).await.is_err() {
                        return;
                    }
                }
            }
            match shared.api.get_opt("", "pods", &ns, &name) {
                Some(p) if !terminal(&p) => {}
                _ => return,
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| {
            (
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)),
                rx,
            )
        })
    });
    Ok(hyper::Response::builder()
        .status(200)
        .header("Content-Type", "text/plain")
        .body(http_body_util::StreamBody::new(stream).boxed())
        .unwrap())
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
                super::util::go_duration(std::time::Duration::from_millis(ms)),
                want
            );
        }
    }
}
