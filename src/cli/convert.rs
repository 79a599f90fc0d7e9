//! `yurtctl convert`: flags, validation at the edge and help text.

use std::time::Duration;

use clap::Args;

use super::duration::parse_duration;
use super::values::node_name;

/// `--skip-phases` help, listing the phase ids in run order.
fn skip_phases_help() -> String {
    format!(
        "Phases to skip (comma-separated ids, in run order: {})",
        crate::plan::phases::id_list::<crate::plan::ConvertPhase>()
    )
}

fn phase_id(s: &str) -> Result<String, String> {
    crate::plan::phases::parse::<crate::plan::ConvertPhase>(s).map(|_| s.to_owned())
}

/// `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderArg {
    /// Whatever the nodes say (kind's provider ID, minikube's labels, kubeadm's annotation)
    Auto,
    Kubeadm,
    Kind,
    Minikube,
}

/// `--disable-nodelifecycle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Toggle {
    /// What the profile needs
    Auto,
    True,
    False,
}

/// Flags of `yurtctl convert` (the help text is on the subcommand).
#[derive(Debug, Clone, Args)]
pub struct ConvertCmd {
    /// Nodes that become cloud nodes (comma-separated; control-plane nodes are cloud nodes
    /// unless named in --edge-nodes)
    #[arg(long, value_name = "NODES", value_delimiter = ',', value_parser = node_name)]
    pub cloud_nodes: Vec<String>,

    /// Only these nodes become edge nodes (comma-separated); other workers are left alone
    #[arg(
        long,
        value_name = "NODES",
        value_delimiter = ',',
        value_parser = node_name,
        conflicts_with = "all_edge"
    )]
    pub edge_nodes: Vec<String>,

    /// Every node that is not a cloud node becomes an edge node (the default)
    #[arg(long)]
    pub all_edge: bool,

    /// Component set to install
    #[arg(long, value_name = "PROFILE", default_value = crate::render::Profile::DEFAULT)]
    pub profile: String,

    #[command(flatten)]
    pub images: super::ImageFlags,

    /// A kube-system Secret of type kubernetes.io/dockerconfigjson the node Jobs and the
    /// components pull their images with (repeatable; a static-pod YurtHub cannot use one)
    #[arg(long = "image-pull-secret", value_name = "NAME", value_parser = super::values::secret_name)]
    pub image_pull_secrets: Vec<String>,

    /// In the node-side preflight, each node first pulls every image the conversion runs
    /// (`yurtctl images pull`'s list) with its container runtime; a node that cannot pull one
    /// refuses the conversion before anything changes (kubeadm's preflight pulls too)
    #[arg(long)]
    pub pull_images: bool,

    #[command(flatten)]
    pub run: super::RunFlags,

    #[arg(
        long,
        value_name = "PHASES",
        value_delimiter = ',',
        value_parser = phase_id,
        help = skip_phases_help()
    )]
    pub skip_phases: Vec<String>,

    /// Edge nodes that get the autonomy annotation (comma-separated) [default: every edge node]
    #[arg(long, value_name = "NODES", value_delimiter = ',', value_parser = node_name)]
    pub autonomous_nodes: Vec<String>,

    /// The kind of cluster; convert refuses when the nodes say otherwise
    #[arg(long, value_enum, value_name = "PROVIDER", default_value = "auto")]
    pub provider: ProviderArg,

    /// Disable kube-controller-manager's nodelifecycle controller on control-plane nodes
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub disable_nodelifecycle: Toggle,

    /// Refuse to start while any selected node is NotReady (by default such a node is only
    /// skipped and reported)
    #[arg(long)]
    pub require_all_ready: bool,

    /// Preflight checks whose errors become warnings (comma-separated, any case:
    /// KubernetesVersion, Provider, or all)
    #[arg(
        long,
        value_name = "CHECKS",
        value_delimiter = ',',
        value_parser = crate::plan::Check::parse_ignorable
    )]
    pub ignore_preflight_errors: Vec<Option<crate::plan::Check>>,

    /// The NodePool every edge node joins (profiles with NodePools) [default: the profile's,
    /// edge]
    #[arg(
        long,
        value_name = "NAME",
        value_parser = super::values::nodepool_name,
        conflicts_with = "nodepools_from_label"
    )]
    pub nodepool: Option<String>,

    /// One edge NodePool per value of this node label, e.g. topology.kubernetes.io/zone
    /// (profiles with NodePools)
    #[arg(long, value_name = "KEY", value_parser = super::values::label_key)]
    pub nodepools_from_label: Option<String>,

    /// The NodePool cloud nodes join (profiles with NodePools) [default: the profile's, cloud]
    #[arg(long, value_name = "NAME", value_parser = super::values::nodepool_name)]
    pub cloud_nodepool: Option<String>,

    /// Deploy yurt-tunnel-server and yurt-tunnel-agent (profiles that have them)
    #[arg(long)]
    pub deploy_yurttunnel: bool,

    /// Deploy yurt-app-manager (profiles that have it)
    #[arg(long)]
    pub enable_app_manager: bool,

    /// Lifetime of the bootstrap token convert creates for YurtHub
    #[arg(long, value_name = "DURATION", default_value = "6h", value_parser = parse_duration)]
    pub token_ttl: Duration,

    /// Take over fields of our objects that other field managers own (server-side apply)
    #[arg(long)]
    pub force_conflicts: bool,
}

impl ConvertCmd {
    /// What only the raw flags can tell (the profile name, how `--ignore-preflight-errors` was
    /// spelled); the checks across options are `plan::check_options`, run before connecting.
    pub fn validate(&self) -> Result<(), String> {
        super::values::known_profile(&self.profile)?;
        crate::plan::Check::ignored(&self.ignore_preflight_errors)?;
        Ok(())
    }

    /// The planner's view of these flags.
    pub fn options(&self) -> crate::plan::ConvertOptions {
        let mut o = crate::plan::ConvertOptions {
            cloud_nodes: self.cloud_nodes.clone(),
            edge_nodes: self.edge_nodes.clone(),
            all_edge: self.all_edge,
            profile: self.profile.clone(),
            concurrency: self.run.concurrency,
            job_timeout: self.run.job_timeout,
            skip_phases: self.skip_phases.iter().cloned().collect(),
            skip_workload_restart: self.run.skip_workload_restart,
            autonomous_nodes: self.autonomous_nodes.clone(),
            provider: match self.provider {
                ProviderArg::Auto => None,
                ProviderArg::Kubeadm => Some(crate::plan::Provider::Kubeadm),
                ProviderArg::Kind => Some(crate::plan::Provider::Kind),
                ProviderArg::Minikube => Some(crate::plan::Provider::Minikube),
            },
            disable_nodelifecycle: match self.disable_nodelifecycle {
                Toggle::Auto => None,
                Toggle::True => Some(true),
                Toggle::False => Some(false),
            },
            require_all_ready: self.require_all_ready,
            // validate() refused a mixed `all`
            ignore_preflight_errors: crate::plan::Check::ignored(&self.ignore_preflight_errors)
                .unwrap_or_default(),
            features: [
                (self.deploy_yurttunnel, "deploy-yurttunnel"),
                (self.enable_app_manager, "enable-app-manager"),
            ]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, f)| f.to_owned())
            .collect(),
            token_ttl: self.token_ttl,
            force_conflicts: self.force_conflicts,
            nodepool: self.nodepool.clone(),
            nodepools_from_label: self.nodepools_from_label.clone(),
            cloud_nodepool: self.cloud_nodepool.clone(),
            image_pull_secrets: self.image_pull_secrets.clone(),
            pull_images: self.pull_images,
            ..Default::default()
        };
        self.images.apply(&mut o);
        o
    }
}
