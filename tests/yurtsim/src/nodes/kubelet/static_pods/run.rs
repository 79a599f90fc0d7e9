//! A static pod's containers as the kubelet runs any pod's (nodes/containers.rs): a real
//! process in the node's (hostNetwork) or its pod's network, with its hostPath volumes from the
//! node's root, or the model of a component yurtsim models, or nothing where the image's binary
//! is not on this machine (simulated, as for API pods). The kubelet runs static pods from
//! files, with the manifest's config hash as their UID (kubernetes/kubernetes@v1.37.2
//! pkg/kubelet/config/common.go `applyDefaults`). A container that ends is restarted after the
//! crash back-off (cri/statics.rs), as under `restartPolicy: Always`, the default
//! (pkg/apis/core/v1/defaults.go `SetDefaults_PodSpec`); a static pod's `Never` or `OnFailure`
//! is not modelled (the policy only decides whether a command this machine lacks fails to start
//! or runs simulated, as for API pods).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::nodes::Cluster;
use crate::nodes::containers::Started;
use crate::nodes::cri::statics::{Ended, Start};

use super::super::*;

/// Starts container `c` of the static pod `pod` (its `metadata.uid` the config hash) with its
/// output in `log`: the previous instance's log kept beside it (logs.rs `previous_log_file`).
/// Err with the runtime's message when it cannot start; the message is the container's log
/// and a `Failed` event, as for API pods (pod_sync.rs `start_failed`).
pub(in crate::nodes::kubelet) fn start_static_container(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    pod: &Value,
    c: &Value,
    attempt: u32,
    log: &Path,
) -> Result<Start, String> {
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if attempt > 0 {
        let _ = std::fs::rename(log, previous_log_file(log));
    }
    let policy = pod["spec"]["restartPolicy"].as_str().unwrap_or("Always");
    let started = prepare_volumes(shared, k, pod).and_then(|volumes| {
        crate::nodes::containers::start(shared, k, pod, c, &volumes, policy, log)
    });
    match started {
        Ok(s) => {
            let pgid = match &s {
                Started::Process(r) => Some(r.pid()),
                _ => None,
            };
            Ok((s, pgid))
        }
        Err(msg) => {
            let _ = std::fs::write(log, format!("{msg}\n"));
            Err(msg)
        }
    }
}

/// Waits on a started static container in a task of its own: how it ended goes to the
/// runtime (`exited`) and to the receiver. A runtime stop (`crictl stop`) or the pod's removal
/// (its manifest changed or gone: the runtime drops its stop) ends it within the kubelet's
/// grace (pod_sync.rs `STOP_GRACE`), reported as killed (137).
pub(in crate::nodes::kubelet) fn watch_static_container(
    k: &Arc<NodeKubelet>,
    started: Started,
    id: String,
    mut stop: watch::Receiver<bool>,
) -> watch::Receiver<Option<Ended>> {
    let (tx, rx) = watch::channel(None);
    let k = k.clone();
    tokio::spawn(async move {
        // a simulated container (no binary here) runs until stopped
        let forever = std::time::Duration::from_secs(365 * 86_400);
        let ended =
            match crate::nodes::containers::wait(started, &mut stop, STOP_GRACE, forever).await {
                Some(code) => {
                    let reason = if code == 0 { "Completed" } else { "Error" };
                    k.cri.exited(&id, code, reason);
                    (code, reason)
                }
                None => (137, "Error"),
            };
        let _ = tx.send(Some(ended));
    });
    rx
}

/// The static pod as the runtime sees it: the manifest named and placed as its mirror pod,
/// with the config hash as UID (common.go `applyDefaults`).
pub(in crate::nodes::kubelet) fn runtime_pod(
    manifest: &Value,
    ns: &str,
    name: &str,
    node: &str,
    hash: &str,
) -> Value {
    let mut pod = manifest.clone();
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["namespace"] = json!(ns);
    pod["metadata"]["uid"] = json!(hash);
    pod["spec"]["nodeName"] = json!(node);
    pod
}
