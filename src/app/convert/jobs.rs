//! The node Jobs of convert: node-side preflight, the node conversion (YurtHub and the kubelet
//! redirect) and kube-controller-manager's nodelifecycle flag, each a servant Job.

use std::time::Duration;

use serde_json::json;

use crate::cluster::jobs::NodeJob;
use crate::exec::servant_job::{ServantVolume, servant_job};
use crate::plan::{self, NodeAction, Plan, Role};
use crate::render::{Profile, YurtHubCredential};

/// The Secret that carries YurtHub's bootstrap kubeconfig into node Jobs (a volume, never an
/// argument or an environment variable).
pub const BOOTSTRAP_SECRET: &str = "yurtctl-yurthub-bootstrap";
pub const BOOTSTRAP_KEY: &str = "bootstrap-hub.conf";
/// The key of the same Secret holding the bare token, for YurtHub's legacy `--join-token`.
pub const JOIN_TOKEN_KEY: &str = "join-token";
const BOOTSTRAP_MOUNT: &str = "/etc/yurtctl/bootstrap";
const MANIFEST_MOUNT: &str = "/etc/yurtctl/yurthub";

/// The `preflight/nodes` Jobs: one per node a node phase of this run converts.
pub fn preflight_jobs(plan: &Plan, servant_image: &str, job_timeout: Duration) -> Vec<NodeJob> {
    if !plan.runs(plan::PREFLIGHT_NODES) {
        return Vec::new();
    }
    plan.nodes
        .iter()
        .filter(|n| n.action == NodeAction::Convert && plan.runs(n.role.phase()))
        .map(|n| {
            servant_job(
                plan::PREFLIGHT_ACTION,
                &n.name,
                servant_image,
                "preflight",
                &[],
                job_timeout,
                &[],
            )
        })
        .collect()
}

/// The node Job running `yurtctl node-servant convert` (design §3): pinned by the runner,
/// privileged, hostPID, hostNetwork, host `/` at /host, no service-account token; the YurtHub
/// manifest from the profile's ConfigMap for the node's working mode, the credential from the
/// bootstrap Secret (volumes, never arguments or environment variables).
/// The runner adds the least-privilege defaults (deliberate tolerations, resources;
/// `NodeJob::to_job`). Host `/` rather than narrower paths: the servant follows the kubelet's
/// unit, drop-ins and EnvironmentFiles wherever they are, and privileged + hostPID is root on
/// the node anyway.
pub fn node_job(
    node: &str,
    role: Role,
    servant_image: &str,
    profile: &Profile,
    job_timeout: Duration,
) -> NodeJob {
    // leave the servant time to report before the Job's deadline
    let hub_timeout = format!("{}s", (job_timeout.as_secs() * 3 / 5).max(1));
    let mode = role.working_mode();
    let hub = &profile.yurthub;
    let (credential_flag, credential_key) = match hub.credential {
        YurtHubCredential::BootstrapFile => ("--bootstrap-file", BOOTSTRAP_KEY),
        YurtHubCredential::JoinToken => ("--join-token-file", JOIN_TOKEN_KEY),
    };
    let credential = format!("{BOOTSTRAP_MOUNT}/{credential_key}");
    let manifest = format!("{MANIFEST_MOUNT}/{}", hub.manifest_file);
    let args = [
        "--yurthub-manifest",
        &manifest,
        "--manifest-file",
        &hub.manifest_file,
        credential_flag,
        &credential,
        "--yurthub-timeout",
        &hub_timeout,
    ];
    servant_job(
        plan::CONVERT_ACTION,
        node,
        servant_image,
        "convert",
        &args,
        job_timeout,
        &[
            ServantVolume {
                name: "bootstrap",
                mount_path: BOOTSTRAP_MOUNT,
                source: json!({"secret": {
                    "secretName": BOOTSTRAP_SECRET,
                    "defaultMode": 0o400,
                    "items": [{"key": credential_key, "path": credential_key}]
                }}),
            },
            ServantVolume {
                name: "yurthub-manifest",
                mount_path: MANIFEST_MOUNT,
                source: json!({"configMap": {
                    "name": profile.yurthub_manifest_config_map(mode),
                    "items": [{"key": hub.manifest_name, "path": hub.manifest_file}]
                }}),
            },
        ],
    )
}

/// The node Job that disables nodelifecycle in the node's kube-controller-manager manifest.
pub fn kcm_job(node: &str, servant_image: &str, job_timeout: Duration) -> NodeJob {
    servant_job(
        plan::KCM_ACTION,
        node,
        servant_image,
        plan::KCM_ACTION,
        &[],
        job_timeout,
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::SYSTEM_NAMESPACE;

    #[test]
    fn node_job_follows_the_contract() {
        let profile = Profile::load(Profile::DEFAULT).unwrap();
        let j = node_job(
            "worker-1",
            Role::Edge,
            "img:1",
            &profile,
            Duration::from_secs(300),
        )
        .to_job(SYSTEM_NAMESPACE, Duration::from_secs(300));
        let v = serde_json::to_value(&j).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["backoffLimit"], 0);
        assert_eq!(spec["activeDeadlineSeconds"], 300);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["nodeName"], "worker-1");
        assert_eq!(pod["hostNetwork"], true);
        assert_eq!(pod["hostPID"], true);
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(c["securityContext"]["privileged"], true);
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "spec.nodeName"
        );
        assert_eq!(pod["volumes"][0]["hostPath"]["path"], "/");
        assert_eq!(pod["volumes"][1]["secret"]["secretName"], BOOTSTRAP_SECRET);
        let args = c["command"].to_string();
        assert!(args.contains("--bootstrap-file"), "{args}");
        assert!(!args.contains("token"), "no credential in args: {args}");
        assert_eq!(v["metadata"]["name"], "yurtctl-convert-worker-1");
    }
}
