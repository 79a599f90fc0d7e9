//! `spec.initContainers`, run as the real kubelet runs them (kubernetes/kubernetes@v1.33.1
//! pkg/kubelet/kuberuntime/kuberuntime_manager.go `computeInitContainerActions`): one after
//! another, each to completion, before any app container starts. A failed init container fails
//! the pod when `restartPolicy` is Never; otherwise that same container is restarted after the
//! crash back-off (CrashLoopBackOff) and the ones before it are not run again. While they run,
//! the pod is Pending with `Initialized=False` (pkg/kubelet/status/generate.go
//! `GeneratePodInitializedCondition`: reason ContainersNotInitialized, "containers with
//! incomplete status: [...]") and its app containers wait with reason PodInitializing
//! (pkg/kubelet/kubelet_pods.go `convertToAPIContainerStatuses`). `kubectl get pod` derives
//! `Init:N/M`, `Init:Error`, `Init:CrashLoopBackOff` from these statuses (see api/table.rs).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::nodes::Cluster;
use crate::nodes::containers::{self, Volumes};
use crate::nodes::kubelet::{
    NodeKubelet, log_path, pod_event, pod_status, set_pod_status, start_failed,
};
use crate::util;

/// How the init phase ended.
pub(crate) enum InitEnd {
    /// Every init container succeeded: start the app containers.
    Done,
    /// An init container failed with restartPolicy Never; the pod's Failed status is written.
    Failed,
    /// The pod was deleted meanwhile.
    Stopped,
}

/// Runs the pod's init containers; `Done` at once when it has none.
pub(crate) async fn run(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    p: &Value,
    volumes: &Volumes,
    restart_policy: &str,
    stop: &mut watch::Receiver<bool>,
    first_start: &str,
) -> InitEnd {
    let inits: Vec<Value> = p["spec"]["initContainers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if inits.is_empty() {
        return InitEnd::Done;
    }
    let image_id = |c: &Value| {
        let image = c["image"].as_str().unwrap_or("");
        format!(
            "{image}@sha256:{:064x}",
            util::fnv32a(c["image"].to_string().as_bytes())
        )
    };
    let mut states: Vec<Value> = inits
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": false,
                "restartCount": 0, "started": false,
                "state": {"waiting": {"reason": "PodInitializing"}}})
        })
        .collect();
    let write = |states: &[Value], phase: &str| {
        if let Some(cur) = crate::nodes::kubelet::current_pod(shared, p) {
            let status = init_status(k, &cur, phase, states, first_start);
            let _ = set_pod_status(shared, &cur, status);
        }
    };
    let grace = Duration::from_secs(
        p["spec"]["terminationGracePeriodSeconds"]
            .as_u64()
            .unwrap_or(30)
            .min(30),
    );
    for (i, c) in inits.iter().enumerate() {
        let cname = c["name"].as_str().unwrap_or("init").to_string();
        let mut restarts: u32 = 0;
        loop {
            let lp = log_path(shared, p, &cname);
            let _ = std::fs::create_dir_all(lp.parent().unwrap());
            if restarts > 0 {
                let _ = std::fs::rename(&lp, lp.with_extension("previous.log"));
            }
            // The image first (image_pull.rs), each time the container starts.
            let mut show = |state: Value| {
                states[i]["state"] = state;
                states[i]["started"] = json!(false);
                write(&states, "Pending");
            };
            if crate::nodes::image_pull::ensure(shared, k, p, c, stop, &mut show).await {
                return InitEnd::Stopped;
            }
            let started_at = util::now();
            let (code, reason) =
                match containers::start(shared, k, p, c, volumes, restart_policy, &lp) {
                    Err(msg) => {
                        start_failed(shared, p, &lp, &msg);
                        (128, "StartError")
                    }
                    Ok(run) => {
                        pod_event(
                            shared,
                            p,
                            "Normal",
                            "Started",
                            &format!("Started container {cname}"),
                        );
                        states[i]["state"] = json!({"running": {"startedAt": started_at}});
                        states[i]["started"] = json!(true);
                        states[i]["imageID"] = json!(image_id(c));
                        write(&states, "Pending");
                        match containers::wait(run, stop, grace, shared.cfg.pod_ready_delay).await {
                            None => return InitEnd::Stopped,
                            Some(0) => (0, "Completed"),
                            Some(code) => (code, "Error"),
                        }
                    }
                };
            let terminated = json!({"terminated": {"exitCode": code, "reason": reason,
                "startedAt": started_at, "finishedAt": util::now(),
                "containerID": format!("containerd://{:016x}", util::fnv32a(format!("{}{cname}{restarts}", p["metadata"]["uid"]).as_bytes()))}});
            states[i]["state"] = terminated.clone();
            states[i]["started"] = json!(false);
            if code == 0 {
                // a completed init container reports ready (convertToAPIContainerStatuses)
                states[i]["ready"] = json!(true);
                break;
            }
            if restart_policy == "Never" {
                write(&states, "Failed");
                return InitEnd::Failed;
            }
            // The same init container again, after the crash back-off (kubelet.go
            // backOffPeriod, MaxContainerBackOff, scaled by the sim's config).
            let backoff = shared
                .cfg
                .crash_backoff
                .saturating_mul(1 << restarts.min(16))
                .min(shared.cfg.crash_backoff_max);
            restarts += 1;
            let (ns, name) = crate::api::store::key_of(p);
            let uid = p["metadata"]["uid"].as_str().unwrap_or("");
            states[i]["restartCount"] = json!(restarts);
            states[i]["lastState"] = terminated;
            states[i]["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": format!("back-off {} restarting failed container={cname} pod={name}_{ns}({uid})", util::go_duration(backoff))}});
            write(&states, "Pending");
            pod_event(
                shared,
                p,
                "Warning",
                "BackOff",
                &format!("Back-off restarting failed container {cname} in pod {name}_{ns}({uid})"),
            );
            let stopped = tokio::select! {
                _ = tokio::time::sleep(backoff) => false,
                _ = containers::stopped(stop) => true,
            };
            if stopped {
                return InitEnd::Stopped;
            }
        }
    }
    write(&states, "Pending");
    InitEnd::Done
}

/// The pod's status while (or after) its init containers run: `phase`, the init containers'
/// `states`, app containers waiting with PodInitializing until every init container completed.
pub(crate) fn init_status(
    k: &NodeKubelet,
    p: &Value,
    phase: &str,
    states: &[Value],
    first_start: &str,
) -> Value {
    let mut st = pod_status(
        k,
        p,
        "Pending",
        false,
        &p["spec"]["containers"],
        None,
        first_start.to_string(),
    );
    let incomplete: Vec<&str> = states
        .iter()
        .filter(|s| s["state"]["terminated"]["exitCode"] != json!(0))
        .filter_map(|s| s["name"].as_str())
        .collect();
    let apps: Vec<&str> = p["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    st["phase"] = json!(phase);
    st["initContainerStatuses"] = json!(states);
    for cs in st["containerStatuses"].as_array_mut().into_iter().flatten() {
        cs["state"] = json!({"waiting": {"reason": "PodInitializing"}});
        cs["started"] = json!(false);
    }
    for c in st["conditions"].as_array_mut().into_iter().flatten() {
        match c["type"].as_str() {
            Some("Initialized") if !incomplete.is_empty() => {
                c["status"] = json!("False");
                c["reason"] = json!("ContainersNotInitialized");
                c["message"] = json!(format!(
                    "containers with incomplete status: [{}]",
                    incomplete.join(" ")
                ));
            }
            Some("Ready" | "ContainersReady") => {
                c["reason"] = json!("ContainersNotReady");
                c["message"] = json!(format!(
                    "containers with unready status: [{}]",
                    apps.join(" ")
                ));
            }
            Some("PodReadyToStartContainers") => c["status"] = json!("True"),
            _ => {}
        }
    }
    st
}
