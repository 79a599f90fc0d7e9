//! The node Job that runs one `yurtctl node-servant` subcommand on one node
//! (docs/architecture.md#talking-to-the-cluster-and-to-nodes):
//! pinned by the runner, privileged, hostPID, hostNetwork, host `/` at /host, no
//! service-account token, a deadline. Convert, revert, the kcm phases and the staticpod
//! rollout all build theirs here.

use std::time::Duration;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use crate::cluster::jobs::NodeJob;

/// A volume mounted read-only into the servant container (a Secret or ConfigMap the Job
/// needs), besides the host root.
pub struct ServantVolume<'a> {
    pub name: &'a str,
    pub mount_path: &'a str,
    /// The volume's source, e.g. `{"secret": {"secretName": …}}`.
    pub source: Value,
}

/// The Job running `yurtctl node-servant <subcommand> --host-root /host <args…>` on `node`.
pub fn servant_job(
    action: &str,
    node: &str,
    servant_image: &str,
    subcommand: &str,
    args: &[&str],
    job_timeout: Duration,
    extra: &[ServantVolume<'_>],
) -> NodeJob {
    let mut command = vec![
        "yurtctl",
        "node-servant",
        subcommand,
        "--host-root",
        "/host",
    ];
    command.extend_from_slice(args);
    let mut mounts = vec![json!({"name": "host", "mountPath": "/host"})];
    let mut volumes = vec![json!({"name": "host", "hostPath": {"path": "/"}})];
    for v in extra {
        mounts.push(json!({"name": v.name, "mountPath": v.mount_path, "readOnly": true}));
        let mut volume = v.source.clone();
        volume["name"] = json!(v.name);
        volumes.push(volume);
    }
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "spec": {
            "restartPolicy": "Never",
            "hostNetwork": true,
            "hostPID": true,
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "servant",
                "image": servant_image,
                "command": command,
                "securityContext": {"privileged": true},
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    // a workload restart leaves the servant's own pod alone
                    {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                ],
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        }
    }))
    .expect("a valid pod template");
    let mut job = NodeJob::new(action, node, template);
    job.backoff_limit = 0;
    job.active_deadline = Some(job_timeout);
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revert_job_follows_the_contract() {
        let j = servant_job(
            "revert",
            "worker-1",
            "img:1",
            "revert",
            &[],
            Duration::from_secs(60),
            &[],
        )
        .to_job("kube-system", Duration::from_secs(60));
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["metadata"]["name"], "yurtctl-revert-worker-1");
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
        let pod = &v["spec"]["template"]["spec"];
        assert_eq!(pod["nodeName"], "worker-1");
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["hostPID"], true);
        assert_eq!(
            pod["containers"][0]["command"],
            json!(["yurtctl", "node-servant", "revert", "--host-root", "/host"])
        );
        assert_eq!(pod["volumes"].as_array().unwrap().len(), 1);
    }
}
