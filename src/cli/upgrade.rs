//! `yurtctl upgrade`: flags, validation at the edge and help text.

use std::time::Duration;

use clap::Args;

use crate::rollout::{MaxUnavailable, Partition, Priority, PriorityTerm};

use super::duration::parse_duration;
use super::values::{max_unavailable, partition, positive, priority};

fn skip_phases_help() -> String {
    format!(
        "Phases to skip (comma-separated ids, in run order: {})",
        crate::plan::phases::id_list::<crate::plan::upgrade::UpgradePhase>()
    )
}

fn phase_id(s: &str) -> Result<String, String> {
    crate::plan::phases::parse::<crate::plan::upgrade::UpgradePhase>(s).map(|_| s.to_owned())
}

/// `upgrade --help`: the phase ids come from upgrade's phase table.
pub(super) fn upgrade_long_about() -> String {
    format!(
        "Move a cluster yurtctl converted to a newer OpenYurt, in place\n\n\
         Phases (ids for --skip-phases, in order): {}. The target is --profile (one that \
         upgrades from the cluster's, as its profile.yaml says) at --openyurt-version; the same \
         profile at a newer patch release is an upgrade too. The plan names every change before \
         the prompt: objects created, changed and deleted, CRD versions and the storage \
         migration of their objects (the user's included, kept as they are), each node's files, \
         kube-controller-manager's flags. Each node's Job moves its YurtHub to the target's \
         (a static pod becomes the systemd service where the target runs one), keeping \
         YurtHub's certificates and cache and the kubelet's kubeconfig, so workload pods keep \
         their API address and are not restarted. A run stopped anywhere resumes where it \
         stopped when run again; `yurtctl revert` after an upgrade restores every node as it \
         was before convert. `--rollback` returns a partly or fully upgraded cluster to the \
         release it came from: CRD objects are stored at that release's versions again first, \
         its components are applied, each moved node's YurtHub moves back, and what only the \
         newer release had is deleted.",
        crate::plan::phases::id_list::<crate::plan::upgrade::UpgradePhase>()
    )
}

/// Flags of `yurtctl upgrade` (the help text is on the subcommand).
#[derive(Debug, Clone, Args)]
pub struct UpgradeCmd {
    /// The profile to upgrade to (one whose profile.yaml names the cluster's in upgradeFrom)
    #[arg(long, value_name = "PROFILE", default_value = crate::render::Profile::DEFAULT)]
    pub profile: String,

    #[command(flatten)]
    pub images: super::ImageFlags,

    /// A Secret in kube-system the node Jobs and the components pull their images with
    /// (repeatable) [default: the ones convert was given]
    #[arg(long = "image-pull-secret", value_name = "NAME", value_parser = super::values::secret_name)]
    pub image_pull_secrets: Vec<String>,

    /// Nodes moving at once: an integer or a percentage of the targeted nodes, rounded up. A
    /// node holds its place from its Job's start until it is Ready again
    #[arg(long, value_name = "N|P%", default_value = "10%", allow_negative_numbers = true, value_parser = max_unavailable)]
    pub max_unavailable: MaxUnavailable,

    /// Nodes kept on the old release (the last ones in upgrade order): an integer or a
    /// percentage of the targeted nodes, rounded down; a later run with a smaller one moves
    /// them
    #[arg(long, value_name = "N|P%", default_value = "0", allow_negative_numbers = true, value_parser = partition)]
    pub partition: Partition,

    /// Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties
    /// by node name; edge nodes move before cloud nodes)
    #[arg(long, value_name = "LABEL=VALUE:WEIGHT", value_parser = priority)]
    pub priority: Vec<PriorityTerm>,

    /// Move only the first N nodes in this run, then stop (re-run to continue)
    #[arg(long, value_name = "N", value_parser = positive)]
    pub canary: Option<usize>,

    /// Nodes that may fail (or stay NotReady) before the upgrade halts (0: at the first)
    #[arg(long, value_name = "N", default_value = "0")]
    pub max_failures: usize,

    /// Change the components and labels but move no node (re-run without --pause to
    /// resume)
    #[arg(long)]
    pub pause: bool,

    /// Time allowed for each node's Job, and then for the node to be Ready again
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub job_timeout: Duration,

    /// Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is
    /// known to be dead)
    #[arg(long)]
    pub force_unlock: bool,

    #[arg(
        long,
        value_name = "PHASES",
        value_delimiter = ',',
        value_parser = phase_id,
        help = skip_phases_help()
    )]
    pub skip_phases: Vec<String>,

    /// Preflight checks whose errors become warnings (comma-separated, any case:
    /// KubernetesVersion, or all)
    #[arg(
        long,
        value_name = "CHECKS",
        value_delimiter = ',',
        value_parser = crate::plan::Check::parse_ignorable
    )]
    pub ignore_preflight_errors: Vec<Option<crate::plan::Check>>,

    /// Take over fields of our objects that other field managers own (server-side apply)
    #[arg(long)]
    pub force_conflicts: bool,

    /// Move only the nodes whose labels match (kubectl syntax), e.g. a canary; the components
    /// change for every node, the old release's objects stay until a run without -l has
    /// moved the rest
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = super::values::node_selector)]
    pub selector: Option<crate::selector::Selector>,

    /// Return the cluster to the release and options the last upgrade came from, from any mix
    /// of moved and unmoved nodes (the rollout flags apply; the target is the journal's)
    #[arg(long, conflicts_with_all = ["profile", "openyurt_version", "image_repository", "images"])]
    pub rollback: bool,
}

impl UpgradeCmd {
    /// What only the raw flags can tell; the checks against the profiles run before connecting.
    pub fn validate(&self) -> Result<(), String> {
        super::values::known_profile(&self.profile)?;
        crate::plan::Check::ignored(&self.ignore_preflight_errors)?;
        Priority::new(self.priority.clone()).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The planner's view of these flags.
    pub fn options(&self) -> crate::plan::upgrade::UpgradeOptions {
        crate::plan::upgrade::UpgradeOptions {
            profile: self.profile.clone(),
            openyurt_version: self.images.openyurt_version.clone(),
            servant_image: self.images.servant_image.clone(),
            image_repository: self.images.image_repository.clone(),
            images: self.images.images.iter().cloned().collect(),
            image_pull_secrets: self.image_pull_secrets.clone(),
            rollout: crate::rollout::Options {
                max_unavailable: self.max_unavailable,
                partition: self.partition,
                // validate() refused a repeated term
                priority: Priority::new(self.priority.clone()).unwrap_or_default(),
                canary: self.canary,
                max_failures: self.max_failures,
                min_ready: Duration::ZERO,
            },
            pause: self.pause,
            job_timeout: self.job_timeout,
            skip_phases: self.skip_phases.iter().cloned().collect(),
            // validate() refused a mixed `all`
            ignore_preflight_errors: crate::plan::Check::ignored(&self.ignore_preflight_errors)
                .unwrap_or_default(),
            force_conflicts: self.force_conflicts,
            selector: self.selector.clone(),
            rollback: self.rollback,
        }
    }
}
