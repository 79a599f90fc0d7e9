//! `yurtctl node-servant …`: the node-side subcommands run inside node Jobs.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::duration::parse_duration;

#[derive(Debug, Subcommand)]
pub enum NodeServantCommand {
    /// Check this node and report what convert would find; changes nothing. Prints the
    /// report as JSON on stdout
    Preflight {
        #[command(flatten)]
        host: HostArgs,
        /// A port YurtHub binds on the node's IP besides its loopback ports (v1.7's
        /// multiplexer, 10269); checked free on every address of the node. Repeatable
        #[arg(long = "yurthub-node-ip-port", value_name = "PORT")]
        yurthub_node_ip_ports: Vec<u16>,
        /// An image to pull with the node's container runtime first (repeatable); one that
        /// cannot be pulled fails the check `image-pull`
        #[arg(long = "pull-image", value_name = "IMAGE")]
        pull_images: Vec<String>,
        /// How long one pull may take
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
        pull_timeout: Duration,
    },
    /// Read what `yurtctl diagnose` needs from this node: how YurtHub runs and whether it is
    /// ready, the kubelet's kubeconfig and the server it names, YurtHub's certificate and the
    /// CA it trusts; changes nothing. Prints the result as JSON on stdout
    Diagnose {
        #[command(flatten)]
        host: HostArgs,
        /// YurtHub's readiness endpoint on 127.0.0.1:10267 (the profile's)
        #[arg(long, value_name = "PATH", default_value = crate::naming::YURTHUB_READYZ_PATH, value_parser = http_path)]
        yurthub_ready_path: String,
    },
    /// Pull each image with the node's container runtime (`crictl pull`), as the kubelet
    /// would before starting it, without running it; reports each image pulled or why not.
    /// Prints the result as JSON on stdout
    PullImages {
        #[command(flatten)]
        host: HostArgs,
        /// An image to pull (repeatable)
        #[arg(long = "image", value_name = "IMAGE", required = true)]
        images: Vec<String>,
        /// How long one pull may take
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
        pull_timeout: Duration,
    },
    /// Install YurtHub as a static pod, wait until it is ready, then point the kubelet at it
    /// and restart the kubelet
    Convert(Box<ConvertArgs>),
    /// Move this converted node's YurtHub to another release, or from its static pod to the
    /// systemd service (or back, for a rollback); the kubelet keeps its kubeconfig, and
    /// YurtHub its certificate and cache
    Upgrade(Box<HubArgs>),
    /// Undo what convert did on this node and restart the kubelet on its original kubeconfig
    Revert {
        #[command(flatten)]
        host: HostArgs,
        /// How long to wait for `systemctl` (daemon-reload, restart kubelet) to finish
        #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
        kubelet_restart_timeout: Duration,
        /// Leave the node's running containers alone: by default they are stopped once the
        /// kubelet talks to the API server directly again, so the kubelet starts them again
        /// with the real KUBERNETES_SERVICE_HOST/PORT
        #[arg(long)]
        skip_workload_restart: bool,
    },
    /// Disable kube-controller-manager's nodelifecycle controller (its static-pod manifest on
    /// this node gets `-nodelifecycle` in `--controllers`)
    DisableNodelifecycle {
        #[command(flatten)]
        host: HostArgs,
    },
    /// Undo disable-nodelifecycle: remove exactly what it added to the manifest
    EnableNodelifecycle {
        #[command(flatten)]
        host: HostArgs,
    },
    /// Install a new manifest for a static pod (atomically; the previous one is kept outside
    /// the manifest directory), or put the previous one back with --restore
    StaticPodUpgrade(StaticPodArgs),
}

/// Where the node's file system is.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// The node's `/` as this process sees it (`/host` inside a node Job)
    #[arg(long, value_name = "DIR")]
    pub host_root: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub hub: HubArgs,

    /// Leave the node's running containers alone: by default they are stopped once the kubelet
    /// uses its new API server address, so the kubelet starts them again with the matching
    /// KUBERNETES_SERVICE_HOST/PORT (pods and the servant's own pod excepted, see docs)
    #[arg(long)]
    pub skip_workload_restart: bool,
}

/// The YurtHub a node gets (convert) or moves to (upgrade), and how long to wait for it.
#[derive(Debug, Clone, Args)]
pub struct HubArgs {
    #[command(flatten)]
    pub host: HostArgs,

    /// The YurtHub static-pod manifest to install, as `yurtctl convert` rendered it from the
    /// profile (in a node Job: a key of the mounted yurt-static-set ConfigMap)
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "yurthub_unit",
        conflicts_with = "yurthub_unit",
        requires = "CredentialArgs"
    )]
    pub yurthub_manifest: Option<PathBuf>,

    /// Run YurtHub as a systemd service instead: the unit to install as
    /// /etc/systemd/system/yurthub.service (in a node Job: from the profile's ConfigMap)
    #[arg(
        long,
        value_name = "FILE",
        requires_all = ["yurthub_drop_in", "yurthub_binary", "nodepool_name"]
    )]
    pub yurthub_unit: Option<PathBuf>,

    /// The service's drop-in with YurtHub's command line, installed as
    /// /etc/systemd/system/yurthub.service.d/10-yurthub.conf; $(NODE_NAME) and
    /// $(NODEPOOL_NAME) are filled in
    #[arg(long, value_name = "FILE", requires = "yurthub_unit")]
    pub yurthub_drop_in: Option<PathBuf>,

    /// The yurthub binary to install as /usr/local/bin/yurthub (in a node Job: copied out of
    /// the pinned upstream image by an init container)
    #[arg(long, value_name = "FILE", requires = "yurthub_unit")]
    pub yurthub_binary: Option<PathBuf>,

    /// The NodePool this node belongs to (YurtHub's --nodepool-name)
    #[arg(
        long,
        value_name = "NAME",
        requires = "yurthub_unit",
        value_parser = super::values::node_name
    )]
    pub nodepool_name: Option<String>,

    /// The manifest's file name in the kubelet's static-pod directory (the profile's; a
    /// YurtStaticSet manages the file of that name)
    #[arg(long, value_name = "NAME", default_value = "yurthub.yaml", value_parser = static_pod_name)]
    pub manifest_file: String,

    #[command(flatten)]
    pub credential: CredentialArgs,

    /// This node's name
    #[arg(long, env = "NODE_NAME", value_name = "NAME", value_parser = super::values::node_name)]
    pub node_name: String,

    /// How long to wait for YurtHub to report ready before giving up (the kubelet is
    /// not redirected then)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub yurthub_timeout: Duration,

    /// YurtHub's endpoint to wait on before the kubelet is redirected (the profile's: YurtHub
    /// v0.6 has no /v1/readyz, so its profile waits on /v1/healthz)
    #[arg(long, value_name = "PATH", default_value = crate::naming::YURTHUB_READYZ_PATH, value_parser = http_path)]
    pub yurthub_ready_path: String,

    /// How long to wait for `systemctl` (daemon-reload, restart kubelet) to finish
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    pub kubelet_restart_timeout: Duration,
}

/// YurtHub's bootstrap credential: a file in this process's file system (a mounted Secret).
/// Required for the static pod; a service may reuse the kubelet's certificate instead.
#[derive(Debug, Clone, Args)]
#[group(required = false, multiple = false)]
pub struct CredentialArgs {
    /// Bootstrap kubeconfig for YurtHub (installed as /var/lib/yurthub/bootstrap-hub.conf)
    #[arg(long, value_name = "PATH")]
    pub bootstrap_file: Option<PathBuf>,

    /// File holding a bootstrap token, for YurtHub versions that only know --join-token
    #[arg(long, value_name = "PATH")]
    pub join_token_file: Option<PathBuf>,
}

fn static_pod_name(s: &str) -> Result<String, String> {
    crate::servant::hostfs::validate_file_name(s)
        .map(|()| s.to_owned())
        .map_err(|e| e.to_string())
}

#[derive(Debug, Clone, Args)]
pub struct StaticPodArgs {
    #[command(flatten)]
    pub host: HostArgs,

    /// The static pod's manifest name (`<staticPodPath>/<NAME>.yaml`)
    #[arg(long, value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    /// The new manifest (a file in this process's file system)
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "restore",
        conflicts_with = "restore"
    )]
    pub manifest_file: Option<PathBuf>,

    /// Put back the manifest the last upgrade replaced (or remove it if there was none)
    #[arg(long)]
    pub restore: bool,
}

/// A path of YurtHub's local health server: `/` and URL path characters only.
fn http_path(s: &str) -> Result<String, String> {
    let ok = s.starts_with('/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-._~".contains(c));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a path like /v1/readyz (a leading /, then letters, digits and /-._~)"
        ))
    }
}
