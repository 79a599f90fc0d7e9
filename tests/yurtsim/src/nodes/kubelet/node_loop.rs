//! The kubelet's node loop: its restarts as its unit files say, whether it reaches its API
//! server, the Node's annotations and status, the heartbeat and tick loops, and the calls its
//! node's tools made.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

use crate::nodes::Cluster;
use crate::nodes::kubelet_config::kubelet_view;
use crate::nodes::layout::Role;
use crate::nodes::systemd::load_unit;
use crate::util;

use super::*;

pub(super) fn daemon_reload(k: &NodeKubelet) {
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
pub(super) fn restart_kubelet(shared: &Cluster, k: &NodeKubelet) {
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
pub(super) fn unreachable_reason(
    shared: &Cluster,
    k: &NodeKubelet,
    st: &NodeState,
) -> Option<String> {
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

pub(super) fn annotate(shared: &Cluster, k: &NodeKubelet) {
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
pub(super) fn post_status(shared: &Cluster, k: &NodeKubelet, force_report: bool) {
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

pub(super) async fn heartbeat_loop(shared: Arc<Cluster>) {
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
///
/// On threads of its own, not the runtime's workers, and nodes side by side: every node's
/// systemd and kubelet answer through it, and a real node's answer waits neither for the API
/// server nor for other nodes. On one worker, 200 busy nodes on two cores starved it for 50 s
/// at a time, and one node's kubelet restart (its stand-in process killed and spawned again)
/// held up every other node for up to 12 s; `systemctl` on the nodes then timed out waiting
/// for its answer (the 200-node terminal test).
pub(crate) async fn tick_loop(shared: Arc<Cluster>) {
    let _ = tokio::task::spawn_blocking(move || ticks(&shared)).await;
}

/// Threads handling nodes side by side in each pass. A pass ends with its slowest thread, and a
/// node's kubelet restart (its stand-in process killed and spawned) took up to 12 s under load:
/// with 8 threads, 50 nodes converting at once still left some `systemctl` calls unanswered
/// for a minute (the 200-node terminal test, one CI run in three); 32 leave one or two
/// restarts per thread.
const TICK_WORKERS: usize = 32;

fn ticks(shared: &Arc<Cluster>) {
    let stop = shared.shutting_down();
    // a shutdown, or the sim dropped without one (its sender gone)
    let stopping = || *stop.borrow() || stop.has_changed().is_err();
    let n = shared.kubelets.names().len().max(1);
    let period = shared.cfg.static_pod_poll * (n as u32).div_ceil(500).max(1);
    let runtime = tokio::runtime::Handle::current();
    loop {
        let kubelets = shared.kubelets.all();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..TICK_WORKERS.min(kubelets.len()) {
                s.spawn(|| {
                    // services run their models as tasks of the sim's runtime
                    let _rt = runtime.enter();
                    while let Some(k) =
                        kubelets.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        process_tool_calls(shared, k);
                        crate::nodes::systemd::services::tick(shared, k);
                        // both tiers: the mirror pods go through the node's API (static_pods.rs)
                        sync_static_pods(shared, k);
                    }
                });
            }
        });
        let until = std::time::Instant::now() + period;
        loop {
            if stopping() {
                return;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
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
                let a = crate::nodes::cri::crictl::answer(&k.root, &k.cri, &c.argv, &|image| {
                    shared.faults.cannot_pull(&k.name, image)
                });
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
