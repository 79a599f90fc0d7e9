//! Why a workload is not available, in the words `kubectl get pods` / `kubectl logs` would
//! give an operator: each pod's phase or waiting reason, restarts, last exit code, and the
//! last log line of the container that exited.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::api::{Api, ListParams, LogParams};

use super::Cluster;

/// One line per pod of Deployment `namespace/name` (best effort: what cannot be read is left
/// out, the caller is already reporting a failure).
pub async fn deployment_pods(cluster: &Cluster, namespace: &str, name: &str) -> Vec<String> {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client().clone(), namespace);
    let Ok(d) = cluster.call(|| deployments.get(name)).await else {
        return Vec::new();
    };
    let labels = d
        .spec
        .and_then(|s| s.selector.match_labels)
        .unwrap_or_default();
    if labels.is_empty() {
        return Vec::new();
    }
    let selector = labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(cluster.client().clone(), namespace);
    let lp = ListParams::default().labels(&selector);
    let Ok(list) = cluster.call(|| pods.list(&lp)).await else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in list.items {
        let pod = p.metadata.name.clone().unwrap_or_default();
        let mut line = format!("pod {pod}: {}", pod_state(&p));
        if let Some(c) = exited_container(&p) {
            let lp = LogParams {
                container: Some(c.name.clone()),
                previous: c
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .is_none(),
                tail_lines: Some(1),
                ..Default::default()
            };
            if let Ok(log) = cluster.call(|| pods.logs(&pod, &lp)).await
                && let Some(last) = log.lines().last()
            {
                line.push_str(&format!("; last log line: {}", last.trim()));
            }
        }
        out.push(line);
    }
    out
}

fn statuses(p: &Pod) -> &[ContainerStatus] {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
}

/// `Pending (0/1 nodes are available: …)`, `CrashLoopBackOff (restarts 3, last exit 1)`,
/// `Running, not ready`.
fn pod_state(p: &Pod) -> String {
    let status = p.status.as_ref();
    let phase = status.and_then(|s| s.phase.clone()).unwrap_or_default();
    if let Some(c) = statuses(p).iter().find(|c| !c.ready) {
        let waiting = c
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone());
        let last_exit = c
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code);
        let mut s = waiting.unwrap_or_else(|| format!("{phase}, not ready"));
        if c.restart_count > 0 {
            s.push_str(&format!(" (restarts {}", c.restart_count));
            if let Some(e) = last_exit {
                s.push_str(&format!(", last exit {e}"));
            }
            s.push(')');
        }
        return s;
    }
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.message.clone());
    match unscheduled {
        Some(m) => format!("{phase} ({m})"),
        None => phase,
    }
}

/// The container that exited (now or before its restart), whose log says why.
fn exited_container(p: &Pod) -> Option<&ContainerStatus> {
    statuses(p).iter().find(|c| {
        c.restart_count > 0
            || c.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_some()
    })
}

/// The pin of the cluster's CA (`ca.crt` of ConfigMap kube-system/kube-root-ca.crt, which
/// kube-controller-manager's root-ca-cert-publisher keeps in every namespace), or why it
/// cannot be read.
pub async fn cluster_ca_pin(cluster: &Cluster) -> Result<String, String> {
    use base64::Engine as _;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(cluster.client().clone(), super::SYSTEM_NAMESPACE);
    let cm = cluster
        .call(|| cms.get("kube-root-ca.crt"))
        .await
        .map_err(|e| format!("ConfigMap kube-system/kube-root-ca.crt: {e}"))?;
    let pem = cm
        .data
        .and_then(|d| d.get("ca.crt").cloned())
        .ok_or("ConfigMap kube-system/kube-root-ca.crt has no ca.crt")?;
    crate::render::ca_cert_hash(&base64::engine::general_purpose::STANDARD.encode(pem))
}

/// The ClusterIP of Service `default/kubernetes` (best effort).
pub async fn api_service_ip(cluster: &Cluster) -> Option<String> {
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(cluster.client().clone(), "default");
    let s = cluster.call(|| services.get("kubernetes")).await.ok()?;
    s.spec?
        .cluster_ip
        .filter(|ip| !ip.is_empty() && ip != "None")
}

/// Deletes node Jobs by name in kube-system, with their pods (best effort: diagnose's own
/// read-only Jobs, which must not be left for the next run to take as leftovers).
pub async fn delete_jobs(cluster: &Cluster, names: &[String]) {
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(cluster.client().clone(), super::SYSTEM_NAMESPACE);
    let dp = kube::api::DeleteParams::background();
    for n in names {
        let _ = cluster.call(|| jobs.delete(n, &dp)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_read_like_kubectl() {
        let pod = |status: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status})).unwrap()
        };
        let crash = pod(json!({"phase": "Running", "containerStatuses": [{
            "name": "m", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1}}}]}));
        assert_eq!(
            pod_state(&crash),
            "CrashLoopBackOff (restarts 3, last exit 1)"
        );
        assert!(exited_container(&crash).is_some());
        let pending = pod(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "message": "0/3 nodes are available"}]}),
        );
        assert_eq!(pod_state(&pending), "Pending (0/3 nodes are available)");
        assert!(exited_container(&pending).is_none());
        let unready = pod(json!({"phase": "Running", "containerStatuses": [{
            "name": "m", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"running": {}}}]}));
        assert_eq!(pod_state(&unready), "Running, not ready");
    }
}
