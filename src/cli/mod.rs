//! Command-line surface: clap derive only (flags, validation, help text). No behaviour here;
//! `app/` runs what is parsed.

mod convert;
mod docs;
mod duration;
mod images;
mod invocation;
#[cfg(feature = "playground")]
mod playground;
mod revert;
mod servant;
mod staticpod;
mod upgrade;
mod values;

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

pub use convert::ConvertCmd;
pub use docs::{CompletionCmd, ManCmd, Shell};
pub use duration::parse_duration;
pub use images::{ImageFlags, ImagesCommand, ImagesListCmd, ImagesPullCmd};
pub use invocation::{bin_name_for, parse_from_env};
#[cfg(feature = "playground")]
pub use playground::{PlaygroundApiServer, PlaygroundCmd, PlaygroundLayout};
pub use revert::{RevertCmd, RunFlags, StatusCmd};
pub use servant::{
    ConvertArgs, CredentialArgs, HostArgs, HubArgs, NodeServantCommand, StaticPodArgs,
};
pub use staticpod::{
    AdoptCmd, DEFAULT_SERVANT_IMAGE, OtaApplyCmd, OtaCommand, RollbackCmd, RolloutArgs,
    SetStrategy, StaticPodCommand, StaticPodUpgradeCmd, StatusCmd as StaticPodStatusCmd, Strategy,
    TemplateArgs,
};
pub use upgrade::UpgradeCmd;
pub use values::{
    config_key, dns1123_label, image_ref, label_key, label_selector, label_value, node_name,
    positive,
};

/// Convert Kubernetes clusters to OpenYurt and roll out static pods, from the client side.
#[derive(Debug, Parser)]
#[command(
    name = "yurtctl",
    version,
    about,
    max_term_width = 100,
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts (kubectl-style; docs/architecture.md#layers).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// More log detail on stderr (-v debug, -vv trace)
    #[arg(short, long, global = true, action = ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Only warnings and errors on stderr
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Output format of the result on stdout
    #[arg(short, long, global = true, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,

    /// Show what would change without changing anything: none|client|server (a bare
    /// --dry-run means client)
    #[arg(
        long,
        global = true,
        value_enum,
        hide_possible_values = true,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "client",
        default_value = "none",
        hide_default_value = true
    )]
    pub dry_run: DryRun,

    /// Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Namespace of namespaced objects a command names (static pods)
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", value_parser = values::dns1123_label)]
    pub namespace: Option<String>,

    /// Do not ask for confirmation (required when stdin is not a terminal)
    #[arg(short = 'y', long, global = true)]
    pub yes: bool,

    /// Client-side limit of API requests per second (0: no limit; requests in flight are
    /// bounded by --concurrency and the server's API Priority and Fairness)
    #[arg(long, global = true, value_name = "QPS", default_value_t = crate::cluster::DEFAULT_QPS, value_parser = values::qps)]
    pub qps: f64,

    /// API requests allowed in a burst above a --qps limit
    #[arg(long, global = true, value_name = "N", default_value_t = crate::cluster::DEFAULT_BURST)]
    pub burst: u32,

    /// Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars,
    /// plain or none
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "MODE",
        default_value = "auto",
        hide_possible_values = true
    )]
    pub progress: Progress,

    /// No colours (also when the NO_COLOR environment variable is set)
    #[arg(long, global = true)]
    pub no_color: bool,
}

/// `yurtctl diagnose [NODE…]`.
#[derive(Debug, clap::Args)]
pub struct DiagnoseCmd {
    /// Nodes whose node checks to run (default: every node, from the cluster's side only).
    /// A named node's files are read too, by a read-only node Job deleted afterwards
    #[arg(value_name = "NODE", value_parser = values::node_name)]
    pub nodes: Vec<String>,

    /// Image of the read-only node Jobs [default: the one convert used, else yurtctl's own]
    #[arg(long, value_name = "IMAGE", value_parser = values::image_ref)]
    pub servant_image: Option<String>,

    /// Time allowed for each node's read-only Job
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = duration::parse_duration)]
    pub job_timeout: std::time::Duration,

    /// Also write what a bug report needs into one .tar.gz in DIR, secrets and tokens redacted:
    /// the findings, versions, kube-system's events, the logs of yurtctl's node Job pods and
    /// of yurt-manager, the journal
    #[arg(long, value_name = "DIR")]
    pub collect: Option<PathBuf>,
}

/// `--progress` (owned by `output`, which decides what it means).
pub use crate::output::terminal::Progress;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Json,
    Yaml,
    Wide,
    Name,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DryRun {
    /// Change things
    #[default]
    None,
    /// Compute and print the plan locally
    Client,
    /// Ask the server to validate (for node-servant the same as client)
    Server,
}

impl DryRun {
    pub fn enabled(self) -> bool {
        self != DryRun::None
    }
}

/// `convert --help`: the phase ids come from convert's phase table.
fn convert_long_about() -> String {
    format!(
        "Convert this Kubernetes cluster into an OpenYurt cluster\n\n\
         Phases (ids for --skip-phases, in order): {}. Control-plane nodes become cloud nodes, \
         the others edge nodes, unless --cloud-nodes/--edge-nodes say otherwise. Re-running \
         after success does nothing (\"already converted\"); after a failure it converts the \
         nodes still left.",
        crate::plan::phases::id_list::<crate::plan::ConvertPhase>()
    )
}

/// `revert --help`: the phase ids come from revert's phase table.
fn revert_long_about() -> String {
    format!(
        "Turn an OpenYurt cluster made by convert back into the original cluster\n\n\
         Phases (ids for --skip-phases, in order): {}. Works from any state convert left: \
         after success, after a failed node, after Ctrl-C, with or without the journal \
         (kube-system/yurtctl-state). Every node the journal names, every node carrying the \
         edge-worker label or autonomy annotation, and every node with a leftover convert Job \
         gets a `node-servant revert` Job (a no-op where nothing was changed). Then the \
         objects convert created are deleted (webhooks first, CRDs last); objects that existed \
         before are kept. Only the labels and annotations yurtctl set are removed. A revert of \
         all nodes ends by deleting the journal and the lock; with --nodes the components \
         stay. Nothing of ours found: \"nothing to revert\", exit 0.",
        crate::plan::phases::id_list::<crate::plan::revert::RevertPhase>()
    )
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert this Kubernetes cluster into an OpenYurt cluster
    #[command(long_about = convert_long_about())]
    Convert(Box<ConvertCmd>),
    /// Turn an OpenYurt cluster made by convert back into the original cluster
    #[command(long_about = revert_long_about())]
    Revert(Box<RevertCmd>),
    /// Move a cluster yurtctl converted to a newer OpenYurt, in place
    #[command(long_about = upgrade::upgrade_long_about())]
    Upgrade(Box<UpgradeCmd>),
    /// Show what convert did and where each node stands (read-only)
    ///
    /// From the journal (profile, options, when, objects created) and the cluster: per node
    /// its role, whether it is converted, whether its YurtHub mirror pod runs and is Ready,
    /// whether the node is Ready, and its last result. A table on stdout; -o json|yaml print
    /// a `kind: Status` object.
    Status(StatusCmd),
    /// Find what is wrong in a converted cluster, and what to do about it (read-only)
    ///
    /// Checks the cluster and its nodes (all, or the NODEs named): leftovers of runs that
    /// stopped (node Jobs, the run lock, unfinished journal entries), the bootstrap token convert
    /// made, YurtHub's certificate requests and whether anything approves them, yurt-manager and
    /// its webhook endpoints, kube-controller-manager's nodelifecycle where the profile needs it
    /// off, nodes whose NodePool label names no NodePool, yurt-manager's own node conversion
    /// failing, converted nodes that are NotReady. Each finding has a severity, what was seen and the fix. A block per finding
    /// on stdout; -o json|yaml print a `kind: DiagnoseResult`. Exit 0 when nothing is worse
    /// than a warning, 7 otherwise.
    Diagnose(DiagnoseCmd),
    /// Roll out, inspect and roll back static pods across nodes, from the client side
    #[command(subcommand)]
    Staticpod(StaticPodCommand),
    /// List the images a conversion pulls, to mirror them for air-gapped clusters
    #[command(subcommand)]
    Images(ImagesCommand),
    /// Print a shell completion script
    ///
    /// Install, for example: `yurtctl completion bash > /etc/bash_completion.d/yurtctl`,
    /// `yurtctl completion zsh > "${fpath[1]}/_yurtctl"`,
    /// `yurtctl completion fish > ~/.config/fish/completions/yurtctl.fish`.
    Completion(CompletionCmd),
    /// Write man pages (one per command) to a directory, or yurtctl(1) to stdout
    Man(ManCmd),
    /// Try yurtctl on an embedded simulated cluster (no Kubernetes needed)
    ///
    /// Starts a simulated cluster on this machine, prints the `export KUBECONFIG=…` line to
    /// look at it with kubectl, and runs yurtctl's commands against it one after the other,
    /// showing the nodes between steps.
    #[cfg(feature = "playground")]
    Playground(PlaygroundCmd),
    /// The node-side half of yurtctl; runs inside the Jobs that convert, revert and
    /// static-pod rollouts launch on each node
    #[command(name = "node-servant", hide = true, subcommand_required = true)]
    NodeServant {
        #[command(subcommand)]
        command: NodeServantCommand,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
