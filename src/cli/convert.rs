//! `yurtctl convert`: flags, validation at the edge and help text.

use std::time::Duration;

use clap::Args;

use super::duration::parse_duration;
use super::values::{node_name, positive};

fn phase_id(s: &str) -> Result<String, String> {
    if crate::plan::CONVERT_PHASES.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "unknown phase {s:?}; phases are {}",
            crate::plan::CONVERT_PHASES.join(", ")
        ))
    }
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

    /// Image of the node Jobs (yurtctl's own image) [default: the profile's]
    #[arg(long, value_name = "IMAGE")]
    pub servant_image: Option<String>,

    /// Node Jobs running at once
    #[arg(long, value_name = "N", default_value = "10", value_parser = positive)]
    pub concurrency: usize,

    /// Time allowed for each node's Job
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub job_timeout: Duration,

    /// Phases to skip (comma-separated ids)
    #[arg(long, value_name = "PHASES", value_delimiter = ',', value_parser = phase_id)]
    pub skip_phases: Vec<String>,
}

impl ConvertCmd {
    /// Checks across flags that clap cannot express; the message is a usage error.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(n) = self
            .cloud_nodes
            .iter()
            .find(|n| self.edge_nodes.contains(n))
        {
            return Err(format!(
                "node {n} is named in both --cloud-nodes and --edge-nodes"
            ));
        }
        if !crate::render::Profile::names().contains(&self.profile) {
            return Err(format!(
                "unknown profile {:?}; profiles are {}",
                self.profile,
                crate::render::Profile::names().join(", ")
            ));
        }
        Ok(())
    }

    /// The planner's view of these flags.
    pub fn options(&self) -> crate::plan::ConvertOptions {
        crate::plan::ConvertOptions {
            cloud_nodes: self.cloud_nodes.clone(),
            edge_nodes: self.edge_nodes.clone(),
            all_edge: self.all_edge,
            profile: self.profile.clone(),
            servant_image: self.servant_image.clone(),
            concurrency: self.concurrency,
            job_timeout: self.job_timeout,
            skip_phases: self.skip_phases.iter().cloned().collect(),
        }
    }
}
