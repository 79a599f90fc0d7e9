//! The node Jobs of convert: node-side preflight, the node conversion (YurtHub and the kubelet
//! redirect) and kube-controller-manager's nodelifecycle flag, each a servant Job.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::cluster::jobs::NodeJob;
use crate::exec::servant_job::{ServantVolume, servant_job};
use crate::plan::{self, NodeAction, NodeDecision, Plan};
use crate::render::{Profile, ServiceHub, YurtHubCredential, YurtHubDecl};

/// The Secret that carries YurtHub's bootstrap kubeconfig into node Jobs (a volume, never an
/// argument or an environment variable).
pub const BOOTSTRAP_SECRET: &str = "yurtctl-yurthub-bootstrap";
pub const BOOTSTRAP_KEY: &str = "bootstrap-hub.conf";
/// The key of the same Secret holding the bare token, for YurtHub's legacy `--join-token`.
pub const JOIN_TOKEN_KEY: &str = "join-token";
const BOOTSTRAP_MOUNT: &str = "/etc/yurtctl/bootstrap";
const HUB_CONFIG_MOUNT: &str = "/etc/yurtctl/yurthub";
const HUB_BINARY_MOUNT: &str = "/opt/yurtctl/yurthub";

/// The `preflight/nodes` Jobs: one per node a node phase of this run converts, checking also
/// the ports the profile's YurtHub binds on the node's IP.
pub fn preflight_jobs(
    plan: &Plan,
    profile: &Profile,
    job_timeout: Duration,
    pulls: &[String],
) -> Vec<NodeJob> {
    if !plan.runs(plan::PREFLIGHT_NODES) {
        return Vec::new();
    }
    let port_args: Vec<String> = profile
        .yurthub
        .node_ip_ports()
        .iter()
        .map(|p| format!("--yurthub-node-ip-port={p}"))
        .chain(pulls.iter().map(|i| format!("--pull-image={i}")))
        .collect();
    let port_args: Vec<&str> = port_args.iter().map(String::as_str).collect();
    let jobs = plan
        .nodes
        .iter()
        .filter(|n| n.action == NodeAction::Convert && plan.runs(n.role.phase()))
        .map(|n| {
            servant_job(
                plan::PREFLIGHT_ACTION,
                &n.name,
                &plan.settings.servant_image,
                "preflight",
                &port_args,
                job_timeout,
                &[],
            )
            .pulling_with(&plan.settings.pull_secrets)
        });
    crate::cluster::jobs::share_templates(jobs)
}

/// What a YurtHub node Job does on its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HubJob {
    /// `node-servant convert`: YurtHub, then the kubelet's redirect, then (unless false) the
    /// workload containers started again with YurtHub's address.
    Convert { restart_workloads: bool },
    /// `node-servant upgrade`: the node's YurtHub moved to the profile's; the kubelet and the
    /// workloads keep their address.
    Upgrade,
}

impl HubJob {
    /// The Job's action (its name, `yurtctl-<action>-<node>`) and the servant's subcommand.
    fn action(self) -> &'static str {
        match self {
            HubJob::Convert { .. } => plan::CONVERT_ACTION,
            HubJob::Upgrade => plan::UPGRADE_ACTION,
        }
    }
}

/// The node Job running `yurtctl node-servant convert` or `upgrade`
/// (docs/architecture.md#talking-to-the-cluster-and-to-nodes): pinned by the runner,
/// privileged, hostPID, hostNetwork, host `/` at /host, no service-account token; YurtHub's
/// files from the profile's ConfigMap for the node's working mode, the credential from the
/// bootstrap Secret (volumes, never arguments or environment variables). With YurtHub as a
/// service, an init container of the pinned upstream image copies the yurthub binary into an
/// emptyDir the servant installs it from, so the host gets exactly the released binary.
/// The runner adds the least-privilege defaults (deliberate tolerations, resources;
/// `NodeJob::to_job`). Host `/` rather than narrower paths: the servant follows the kubelet's
/// unit, drop-ins and EnvironmentFiles wherever they are, and privileged + hostPID is root on
/// the node anyway.
pub fn node_job(
    node: &NodeDecision,
    servant_image: &str,
    images: &BTreeMap<String, String>,
    profile: &Profile,
    job_timeout: Duration,
    what: HubJob,
) -> NodeJob {
    // leave the servant time to report before the Job's deadline
    let hub_timeout = format!("{}s", (job_timeout.as_secs() * 3 / 5).max(1));
    let mode = node.role.working_mode();
    let hub = &profile.yurthub;
    let (credential_flag, credential_key) = match hub.credential() {
        YurtHubCredential::BootstrapFile => ("--bootstrap-file", BOOTSTRAP_KEY),
        YurtHubCredential::JoinToken => ("--join-token-file", JOIN_TOKEN_KEY),
    };
    let credential = format!("{BOOTSTRAP_MOUNT}/{credential_key}");
    let mut args: Vec<String> = Vec::new();
    let items = match hub {
        YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => {
            args.extend([
                "--yurthub-manifest".into(),
                format!("{HUB_CONFIG_MOUNT}/{}", s.manifest_file),
                "--manifest-file".into(),
                s.manifest_file.clone(),
            ]);
            json!([{"key": s.manifest_name, "path": s.manifest_file}])
        }
        YurtHubDecl::Systemd(_) => {
            args.extend([
                "--yurthub-unit".into(),
                format!("{HUB_CONFIG_MOUNT}/{}", ServiceHub::UNIT_KEY),
                "--yurthub-drop-in".into(),
                format!("{HUB_CONFIG_MOUNT}/{}", ServiceHub::DROP_IN_KEY),
                "--yurthub-binary".into(),
                format!("{HUB_BINARY_MOUNT}/yurthub"),
            ]);
            if let Some(pool) = &node.pool {
                args.extend(["--nodepool-name".into(), pool.clone()]);
            }
            json!([
                {"key": ServiceHub::UNIT_KEY, "path": ServiceHub::UNIT_KEY},
                {"key": ServiceHub::DROP_IN_KEY, "path": ServiceHub::DROP_IN_KEY}
            ])
        }
    };
    args.extend([
        credential_flag.into(),
        credential,
        "--yurthub-timeout".into(),
        hub_timeout,
    ]);
    if hub.ready_path() != crate::naming::YURTHUB_READYZ_PATH {
        args.extend(["--yurthub-ready-path".into(), hub.ready_path().into()]);
    }
    if what
        == (HubJob::Convert {
            restart_workloads: false,
        })
    {
        args.push("--skip-workload-restart".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut job = servant_job(
        what.action(),
        &node.name,
        servant_image,
        what.action(),
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
                name: "yurthub-config",
                mount_path: HUB_CONFIG_MOUNT,
                source: json!({"configMap": {"name": hub.config_map(mode), "items": items}}),
            },
        ],
    );
    if let YurtHubDecl::Systemd(s) = hub {
        let image = images.get(&s.binary_image).cloned().unwrap_or_default();
        add_binary_copy(&mut job, &image, &s.binary_path);
    }
    job
}

/// An emptyDir the servant reads the binary from, filled by an init container of `image`
/// copying `path` (the image's own `cp`; the upstream images are alpine-based).
fn add_binary_copy(job: &mut NodeJob, image: &str, path: &str) {
    let spec = std::sync::Arc::make_mut(&mut job.template)
        .spec
        .get_or_insert_with(Default::default);
    let volume = "yurthub-binary";
    spec.volumes.get_or_insert_with(Vec::new).push(
        serde_json::from_value(json!({"name": volume, "emptyDir": {}})).expect("a valid volume"),
    );
    for c in &mut spec.containers {
        c.volume_mounts.get_or_insert_with(Vec::new).push(
            serde_json::from_value(
                json!({"name": volume, "mountPath": HUB_BINARY_MOUNT, "readOnly": true}),
            )
            .expect("a valid mount"),
        );
    }
    spec.init_containers = Some(vec![
        serde_json::from_value(json!({
            "name": "copy-yurthub",
            "image": image,
            "command": ["cp", path, format!("{HUB_BINARY_MOUNT}/yurthub")],
            "volumeMounts": [{"name": volume, "mountPath": HUB_BINARY_MOUNT}],
        }))
        .expect("a valid init container"),
    ]);
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
    use crate::plan::Role;

    fn edge_node(pool: Option<&str>) -> NodeDecision {
        NodeDecision {
            name: "worker-1".into(),
            role: Role::Edge,
            action: NodeAction::Convert,
            autonomous: true,
            pool: pool.map(str::to_owned),
        }
    }

    #[test]
    fn node_job_follows_the_contract() {
        let profile = Profile::load("openyurt-v1.6").unwrap();
        let j = node_job(
            &edge_node(None),
            "img:1",
            &profile.images,
            &profile,
            Duration::from_secs(300),
            HubJob::Convert {
                restart_workloads: true,
            },
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
        assert!(!args.contains("--skip-workload-restart"), "{args}");
        // the servant keeps its own pod's containers when it restarts the node's workloads
        assert_eq!(c["env"][1]["name"], "POD_UID");
        assert_eq!(
            c["env"][1]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.uid"
        );
        assert_eq!(v["metadata"]["name"], "yurtctl-convert-worker-1");
        let skipping = node_job(
            &edge_node(None),
            "img:1",
            &profile.images,
            &profile,
            Duration::from_secs(300),
            HubJob::Convert {
                restart_workloads: false,
            },
        )
        .to_job(SYSTEM_NAMESPACE, Duration::from_secs(300));
        let v = serde_json::to_value(&skipping).unwrap();
        let args = v["spec"]["template"]["spec"]["containers"][0]["command"].to_string();
        assert!(args.contains("--skip-workload-restart"), "{args}");
        // an upgrade moves YurtHub only: same volumes and hub flags, its own subcommand
        let v17 = Profile::load("openyurt-v1.7").unwrap();
        let upgrade = node_job(
            &edge_node(Some("edge")),
            "img:1",
            &v17.images,
            &v17,
            Duration::from_secs(300),
            HubJob::Upgrade,
        )
        .to_job(SYSTEM_NAMESPACE, Duration::from_secs(300));
        let v = serde_json::to_value(&upgrade).unwrap();
        assert_eq!(v["metadata"]["name"], "yurtctl-upgrade-worker-1");
        let pod = &v["spec"]["template"]["spec"];
        let command: Vec<&str> = pod["containers"][0]["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(command[..3], ["yurtctl", "node-servant", "upgrade"]);
        for flag in [
            "--yurthub-unit",
            "--yurthub-binary",
            "--nodepool-name",
            "--bootstrap-file",
        ] {
            assert!(command.contains(&flag), "{flag}: {command:?}");
        }
        assert!(!command.contains(&"--skip-workload-restart"), "{command:?}");
        assert_eq!(pod["initContainers"][0]["image"], "openyurt/yurthub:v1.7.0");
    }
}
