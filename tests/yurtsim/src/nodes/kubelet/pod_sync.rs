//! Pods bound to the node: the pod loop, deletion and shutdown, the kubelet's writes of a pod's
//! status and events, and a pod's run.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::error::ApiResult;
use crate::api::store::{EventType, Filter};
use crate::api::{Ctx, DeleteOptions};
use crate::nodes::Cluster;
use crate::util;

use super::*;

// ---------------------------------------------------------------------------------------------
// Pods bound to nodes.

pub(super) async fn pod_loop(shared: Arc<Cluster>) {
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
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
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
    // The app containers' images (nodes/image_pull.rs); the pod stays Pending until they are
    // on the node.
    if crate::nodes::image_pull::ensure_app_images(shared, k, p, &first_start, stop).await {
        return PodEnd::Stopped;
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
