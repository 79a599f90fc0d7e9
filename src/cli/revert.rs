//! `yurtctl revert` and `yurtctl status`: flags, validation at the edge and help text.

use std::time::Duration;

use clap::Args;

use crate::cluster::Concurrency;

use super::duration::parse_duration;
use super::values::{concurrency, node_name};

/// `--skip-phases` help, listing the phase ids in run order.
fn skip_phases_help() -> String {
    format!(
        "Phases to skip (comma-separated ids, in run order: {})",
        crate::plan::phases::id_list::<crate::plan::revert::RevertPhase>()
    )
}

fn phase_id(s: &str) -> Result<String, String> {
    crate::plan::phases::parse::<crate::plan::revert::RevertPhase>(s).map(|_| s.to_owned())
}

/// Flags of every command that runs node Jobs under the run lock (convert and revert).
#[derive(Debug, Clone, Args)]
pub struct RunFlags {
    /// Node Jobs running at once
    #[arg(long, value_name = "N", default_value = "10", value_parser = concurrency)]
    pub concurrency: Concurrency,

    /// Time allowed for each node's Job
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub job_timeout: Duration,

    /// Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is
    /// known to be dead)
    #[arg(long)]
    pub force_unlock: bool,

    /// Do not restart the nodes' workload containers after the kubelet changes API server
    /// address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)
    #[arg(long)]
    pub skip_workload_restart: bool,
}

/// Flags of `yurtctl revert` (the help text is on the subcommand).
#[derive(Debug, Clone, Args)]
pub struct RevertCmd {
    /// Only these nodes (comma-separated); the components, the journal and the lock stay
    /// until a revert of all nodes
    #[arg(long, value_name = "NODES", value_delimiter = ',', value_parser = node_name)]
    pub nodes: Vec<String>,

    #[command(flatten)]
    pub run: RunFlags,

    #[arg(
        long,
        value_name = "PHASES",
        value_delimiter = ',',
        value_parser = phase_id,
        help = skip_phases_help()
    )]
    pub skip_phases: Vec<String>,
}

impl RevertCmd {
    /// The planner's view of these flags.
    pub fn options(&self) -> crate::plan::revert::RevertOptions {
        crate::plan::revert::RevertOptions {
            nodes: self.nodes.clone(),
            concurrency: self.run.concurrency,
            job_timeout: self.run.job_timeout,
            skip_phases: self.skip_phases.iter().cloned().collect(),
            skip_workload_restart: self.run.skip_workload_restart,
        }
    }
}

/// Flags of `yurtctl status` (only the global ones: -o json|yaml).
#[derive(Debug, Clone, Args)]
pub struct StatusCmd {}
