//! `yurtctl staticpod …`: flags, validation at the edge and help text.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::duration::parse_duration;
use super::values::{
    image_ref, max_unavailable, node_name, node_selector, partition, positive, priority, revision,
};
use crate::plan::staticpod::{ImageSpec, check_manifest_name};
use crate::rollout::{MaxUnavailable, Partition, PriorityTerm};
use crate::selector::Selector;

/// The default servant image for node Jobs that have no convert's choice to follow (static-pod
/// upgrades, diagnose on a cluster yurtctl did not convert).
pub const DEFAULT_SERVANT_IMAGE: &str =
    concat!("openyurt/yurtctl-servant:", env!("CARGO_PKG_VERSION"));

fn manifest_name(s: &str) -> Result<String, String> {
    check_manifest_name(s).map(|()| s.to_owned())
}

/// A static pod's name (the manifest's `metadata.name`): a DNS-1123 subdomain.
fn static_pod_name(s: &str) -> Result<String, String> {
    node_name(s).map_err(|_| {
        format!("{s:?} is not a valid static pod name (lower-case letters, digits, '-' and '.')")
    })
}

fn image(s: &str) -> Result<ImageSpec, String> {
    s.parse()
}

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|_| format!("{s:?} is not a whole number of seconds"))
}

#[derive(Debug, Subcommand)]
pub enum StaticPodCommand {
    /// Roll a new revision of a static pod out to the nodes that run it
    ///
    /// Targets are the nodes with a mirror pod NAME-<node> (narrowed by --selector). The new
    /// revision is stored in ConfigMap yurt-static-set-NAME (as OpenYurt's YurtHub and yurtadm
    /// expect). advanced-rolling-update upgrades nodes through node Jobs in a sliding window of
    /// --max-unavailable; ota marks mirror pods with PodNeedUpgrade for YurtHub's OTA endpoint.
    /// Re-running the same command resumes; Ctrl-C stops cleanly.
    Upgrade(Box<StaticPodUpgradeCmd>),
    /// Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)
    Status(StatusCmd),
    /// Roll a previous revision out again, with the same controls as upgrade
    Rollback(Box<RollbackCmd>),
    /// OTA: upgrade chosen nodes now, from the client side
    #[command(subcommand)]
    Ota(OtaCommand),
    /// Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs
    ///
    /// The set's template is the stored revision, else what the nodes run; yurt-manager then
    /// renders ConfigMap yurt-static-set-NAME from it and manages the pod from then on
    /// (yurtctl's upgrade, rollback and status work through the set). Needs the YurtStaticSet
    /// CRD and a running yurt-manager (`yurtctl convert`).
    Adopt(AdoptCmd),
}

#[derive(Debug, Clone, Args)]
pub struct AdoptCmd {
    #[arg(value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    /// The manifest file's base name on nodes (spec.staticPodManifest) [default: the stored
    /// one, else NAME]
    #[arg(long, value_name = "FILE_NAME", value_parser = manifest_name)]
    pub manifest: Option<String>,

    /// The set's upgradeStrategy: how yurt-manager rolls out later template changes
    #[arg(
        long,
        value_enum,
        value_name = "STRATEGY",
        default_value = "advanced-rolling-update"
    )]
    pub strategy: SetStrategy,

    /// The set's maxUnavailable (advanced-rolling-update)
    #[arg(long, value_name = "N|P%", default_value = "10%", allow_negative_numbers = true, value_parser = max_unavailable)]
    pub max_unavailable: MaxUnavailable,
}

#[derive(Debug, Subcommand)]
pub enum OtaCommand {
    /// Upgrade the static pod on these nodes to the stored revision (a node Job on each)
    Apply(OtaApplyCmd),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// Upgrade nodes from the client, a sliding window of --max-unavailable at a time
    AdvancedRollingUpdate,
    /// Mark mirror pods PodNeedUpgrade; each node upgrades when its owner chooses
    Ota,
}

/// A YurtStaticSet's `spec.upgradeStrategy.type`, as yurt-manager carries it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SetStrategy {
    /// yurt-manager upgrades the nodes itself, --max-unavailable at a time
    AdvancedRollingUpdate,
    /// yurt-manager only marks pods PodNeedUpgrade; nodes upgrade through YurtHub's OTA endpoint
    Ota,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::AdvancedRollingUpdate => "advanced-rolling-update",
            Strategy::Ota => "ota",
        }
    }
}

/// The new template: new images, or a whole new pod.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct TemplateArgs {
    /// New image, `IMAGE` for a single-container pod or `CONTAINER=IMAGE` (repeatable)
    #[arg(long, value_name = "[CONTAINER=]IMAGE", value_parser = image)]
    pub image: Vec<ImageSpec>,

    /// The new pod (one v1 Pod document)
    #[arg(short = 'f', long = "filename", value_name = "NEW_POD.yaml")]
    pub file: Option<PathBuf>,
}

/// Controls shared by upgrade and rollback.
#[derive(Debug, Clone, Args)]
pub struct RolloutArgs {
    /// Only nodes whose labels match this selector (kubectl syntax)
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = node_selector)]
    pub selector: Option<Selector>,

    /// Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes,
    /// rounded up
    #[arg(long, value_name = "N|P%", default_value = "10%", allow_negative_numbers = true, value_parser = max_unavailable)]
    pub max_unavailable: MaxUnavailable,

    /// A node counts as upgraded once its new pod has been Ready this long
    #[arg(long, value_name = "SECONDS", default_value = "0", value_parser = seconds)]
    pub min_ready_seconds: Duration,

    /// Time allowed per node (Job and new pod Ready); then it is restored and counts as failed
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub node_timeout: Duration,

    /// Failed nodes tolerated before the rollout stops (0: stop at the first)
    #[arg(long, value_name = "N", default_value = "0")]
    pub max_failures: usize,

    /// Nodes kept on the old revision (the last ones in rollout order): integer or
    /// percentage, rounded down
    #[arg(long, value_name = "N|P%", default_value = "0", allow_negative_numbers = true, value_parser = partition)]
    pub partition: Partition,

    /// Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties
    /// by node name)
    #[arg(long, value_name = "LABEL=VALUE:WEIGHT", value_parser = priority)]
    pub priority: Vec<PriorityTerm>,

    /// Upgrade only N nodes in this run, then stop (re-run to continue)
    #[arg(long, value_name = "N", value_parser = positive)]
    pub canary: Option<usize>,

    /// Store the new revision but start no node (re-run without --pause to resume)
    #[arg(long)]
    pub pause: bool,

    /// Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_SERVANT_IMAGE, value_parser = image_ref)]
    pub servant_image: String,

    /// A Secret of type kubernetes.io/dockerconfigjson in the static pod's namespace the node
    /// Jobs pull the servant image with (repeatable)
    #[arg(long = "image-pull-secret", value_name = "NAME", value_parser = super::values::secret_name)]
    pub image_pull_secrets: Vec<String>,

    /// Delete this static pod's rollout lock (Lease yurtctl-staticpod-NAME) first, whoever
    /// holds it (only when that run is known to be dead)
    #[arg(long)]
    pub force_unlock: bool,
}

#[derive(Debug, Clone, Args)]
pub struct StaticPodUpgradeCmd {
    /// The static pod (its mirror pods are NAME-<node>)
    #[arg(value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    #[command(flatten)]
    pub template: TemplateArgs,

    /// The manifest file's base name on nodes and the ConfigMap key [default: the stored one,
    /// else NAME]
    #[arg(long, value_name = "FILE_NAME", value_parser = manifest_name)]
    pub manifest: Option<String>,

    /// How nodes get the new revision
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub strategy: Strategy,

    #[command(flatten)]
    pub rollout: RolloutArgs,
}

#[derive(Debug, Clone, Args)]
pub struct RollbackCmd {
    #[arg(value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    /// The revision number to go back to (see `status -o yaml`) [default: the previous one]
    #[arg(long, value_name = "R", value_parser = revision)]
    pub to_revision: Option<u64>,

    /// How nodes get the old revision
    #[arg(
        long,
        value_enum,
        value_name = "STRATEGY",
        default_value = "advanced-rolling-update"
    )]
    pub strategy: Strategy,

    #[command(flatten)]
    pub rollout: RolloutArgs,
}

#[derive(Debug, Clone, Args)]
pub struct StatusCmd {
    #[arg(value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    /// Print again whenever the status changes (a mirror pod or the stored revision; with
    /// -o json|yaml one document per change); runs until Ctrl-C
    #[arg(short = 'w', long)]
    pub watch: bool,
}

#[derive(Debug, Clone, Args)]
pub struct OtaApplyCmd {
    #[arg(value_name = "NAME", value_parser = static_pod_name)]
    pub name: String,

    /// Nodes to upgrade now (repeatable or comma-separated)
    #[arg(long = "node", value_name = "NODE", required = true, value_delimiter = ',', value_parser = node_name)]
    pub nodes: Vec<String>,

    /// Time allowed per node (Job and new pod Ready); then it is restored
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub node_timeout: Duration,

    /// Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_SERVANT_IMAGE, value_parser = image_ref)]
    pub servant_image: String,

    /// A Secret of type kubernetes.io/dockerconfigjson in the static pod's namespace the node
    /// Jobs pull the servant image with (repeatable)
    #[arg(long = "image-pull-secret", value_name = "NAME", value_parser = super::values::secret_name)]
    pub image_pull_secrets: Vec<String>,

    /// Delete this static pod's rollout lock (Lease yurtctl-staticpod-NAME) first, whoever
    /// holds it (only when that run is known to be dead)
    #[arg(long)]
    pub force_unlock: bool,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn selectors_are_kubectl_label_selectors_and_never_empty() {
        let l: BTreeMap<String, String> = [
            ("zone".to_string(), "a".to_string()),
            ("edge".to_string(), "".to_string()),
        ]
        .into();
        for (sel, want) in [
            ("zone=a", true),
            ("zone==b", false),
            ("zone!=b", true),
            ("edge", true),
            ("!edge", false),
            ("zone in (a,b)", true),
            ("zone notin (a, b)", false),
            ("zone=a,edge", true),
        ] {
            assert_eq!(node_selector(sel).unwrap().matches(&l), want, "{sel}");
        }
        for bad in ["", "zone=a,", "=a", "zone in a", "Zone Space=x", "k=v v"] {
            assert!(node_selector(bad).is_err(), "{bad}");
        }
    }
}
