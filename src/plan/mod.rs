//! The planner (docs/architecture.md#layers): PURE functions from a cluster snapshot and the user's
//! options to a [`Plan`] of phases with stable ids. `--dry-run=client` prints exactly this; the
//! executor (`app::convert`) runs it. Nothing here talks to the API or prints.

pub mod staticpod;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cluster::Concurrency;
use crate::cluster::journal::PhaseState;
use crate::cluster::snapshot::{ClusterSnapshot, NodeInfo};
use crate::render::Profile;

pub mod diagnose;
pub mod diagnose_node;
pub mod phases;
pub mod revert;
pub mod upgrade;

mod convert;
mod convert_phases;
mod findings;
mod options;
mod summary;

pub use convert::*;
pub use convert_phases::{ConvertInputs, ConvertPhase, ConvertSteps, convert_access};
pub use findings::*;
pub use options::*;
pub use summary::*;

/// Phase ids of `convert`, in execution order; usable in `--skip-phases` and named in errors.
pub const CONVERT_PHASES: [&str; ConvertPhase::COUNT] = ConvertPhase::IDS;
// The ids by name: what the journal keys node progress by, and what messages name.
pub const LOCK: &str = ConvertPhase::Lock.id();
pub const PREFLIGHT: &str = ConvertPhase::Preflight.id();
pub const PREFLIGHT_NODES: &str = ConvertPhase::PreflightNodes.id();
pub const LABEL_NODES: &str = ConvertPhase::LabelNodes.id();
pub const COMPONENTS: &str = ConvertPhase::Components.id();
pub const KCM: &str = ConvertPhase::Kcm.id();
pub const NODES_EDGE: &str = ConvertPhase::NodesEdge.id();
pub const NODES_CLOUD: &str = ConvertPhase::NodesCloud.id();
pub const VERIFY: &str = ConvertPhase::Verify.id();

/// The Job action of node-side preflight (`yurtctl-preflight-<node>`).
pub const PREFLIGHT_ACTION: &str = "preflight";
/// The Job action of node conversion (`yurtctl-convert-<node>`).
pub const CONVERT_ACTION: &str = "convert";
/// The Job action of a node's YurtHub upgrade (`yurtctl-upgrade-<node>`).
pub const UPGRADE_ACTION: &str = "upgrade";
/// The Job action that disables nodelifecycle in kube-controller-manager's manifest.
pub const KCM_ACTION: &str = "disable-nodelifecycle";

/// A node's role after conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Edge,
    Cloud,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Edge => "edge",
            Role::Cloud => "cloud",
        }
    }

    /// YurtHub's working mode on nodes of this role.
    pub fn working_mode(self) -> crate::render::WorkingMode {
        match self {
            Role::Edge => crate::render::WorkingMode::Edge,
            Role::Cloud => crate::render::WorkingMode::Cloud,
        }
    }

    /// The NodePool `spec.type` of a pool of nodes of this role.
    pub fn pool_type(self) -> &'static str {
        match self {
            Role::Edge => "Edge",
            Role::Cloud => "Cloud",
        }
    }

    /// The role named by a compile-time flag: phase tables hold plain `fn` pointers, so one
    /// generic node phase per role stands for a closure over the role.
    pub const fn edge_if(edge: bool) -> Role {
        if edge { Role::Edge } else { Role::Cloud }
    }

    /// The role a node phase (`nodes/edge`, `nodes/cloud`) is about; None for any other
    /// phase (`kcm` runs Jobs too, on nodes of either role).
    pub fn of_phase(id: &str) -> Option<Role> {
        match id {
            NODES_EDGE => Some(Role::Edge),
            NODES_CLOUD => Some(Role::Cloud),
            _ => None,
        }
    }

    /// The phase that converts nodes of this role.
    pub fn phase(self) -> &'static str {
        match self {
            Role::Edge => NODES_EDGE,
            Role::Cloud => NODES_CLOUD,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The role a node was converted in, when its conversion is recorded as done.
pub fn converted_role(journal: &crate::cluster::journal::Journal, node: &str) -> Option<Role> {
    [(NODES_EDGE, Role::Edge), (NODES_CLOUD, Role::Cloud)]
        .into_iter()
        .find(|(phase, _)| {
            journal
                .phase(node, phase)
                .is_some_and(|s| s.state == PhaseState::Done)
        })
        .map(|(_, role)| role)
}

/// What happens to one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeAction {
    /// Labelled, then converted by a node Job.
    Convert,
    /// Labelled and recorded as converted by an earlier run: nothing to do.
    AlreadyConverted,
    /// Not Ready now: left alone this run (a later run converts it).
    SkipNotReady,
}

/// One node's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeDecision {
    pub name: String,
    pub role: Role,
    pub action: NodeAction,
    /// Gets the profile's autonomy annotation (edge nodes only).
    pub autonomous: bool,
    /// The NodePool the node joins (profiles with NodePools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

/// One step of a phase: what is done, to what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `check`, `lock`, `label`, `apply`, `job`, `wait`.
    pub action: String,
    /// The node, object or component the step is about.
    pub target: String,
    pub detail: String,
}

impl Step {
    fn new(action: &str, target: impl Into<String>, detail: impl Into<String>) -> Self {
        Step {
            action: action.into(),
            target: target.into(),
            detail: detail.into(),
        }
    }

    /// A node's Job `job` doing `what`.
    fn job(node: &str, job: &str, what: impl Into<String>) -> Self {
        Step {
            action: "job".into(),
            target: format!("node/{node}"),
            detail: format!("Job {job}: {}", what.into()),
        }
    }

    /// What the step does without naming its target (the detail, less a Job's name): steps of
    /// many nodes that share it are one line of the plan summary. Derived, not stored: a plan
    /// of 10,000 nodes holds tens of thousands of steps.
    pub fn gist(&self) -> std::borrow::Cow<'_, str> {
        // a Job name is a DNS-1123 label, so the first ": " ends it
        match self
            .detail
            .strip_prefix("Job ")
            .and_then(|d| d.split_once(": "))
        {
            Some((_, what)) if self.action == "job" => format!("a Job each: {what}").into(),
            _ => self.detail.as_str().into(),
        }
    }
}

/// A phase with a stable id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub id: String,
    /// Named in `--skip-phases`.
    pub skipped: bool,
    pub steps: Vec<Step>,
}

impl Phase {
    /// How many node Jobs the phase runs, if any (what its progress bar counts to).
    pub fn node_jobs(&self) -> Option<usize> {
        let n = self.steps.iter().filter(|s| s.action == "job").count();
        (n > 0).then_some(n)
    }
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub profile: String,
    pub server_version: String,
    pub nodes: Vec<NodeDecision>,
    /// Control-plane nodes whose kube-controller-manager gets nodelifecycle disabled this run.
    pub kcm_nodes: Vec<String>,
    /// Preflight findings `--ignore-preflight-errors` turned into warnings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Finding>,
    pub phases: Vec<Phase>,
    /// What the options and the profile resolve to (not part of the printed plan).
    #[serde(skip)]
    pub settings: ConvertSettings,
}

impl Plan {
    /// Nodes a Job converts in this run, for one role.
    pub fn to_convert(&self, role: Role) -> impl Iterator<Item = &NodeDecision> {
        self.nodes
            .iter()
            .filter(move |n| n.role == role && n.action == NodeAction::Convert)
    }

    /// No node needs converting and no kube-controller-manager needs changing: the cluster is
    /// already converted (or nothing was selected).
    pub fn nothing_to_do(&self) -> bool {
        !self.nodes.iter().any(|n| n.action == NodeAction::Convert) && self.kcm_nodes.is_empty()
    }

    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// Whether phase `id` runs (present and not skipped).
    pub fn runs(&self, id: &str) -> bool {
        self.phase(id).is_some_and(|p| !p.skipped)
    }
}

/// The plan as text, one line per step (for `--dry-run=client` without `-o json`).
pub fn render_text(plan: &Plan) -> String {
    let mut out = format!(
        "Plan: convert to {} (Kubernetes {})\n",
        plan.profile, plan.server_version
    );
    out.push_str(&render_phases(&plan.phases, 6, 28));
    out
}

/// The plan summary (the confirmation prompt's): like [`render_text`] with the steps of many
/// nodes summarized ([`summarize_phases`]).
pub fn render_summary(plan: &Plan) -> String {
    let mut out = format!(
        "Plan: convert to {} (Kubernetes {}; {} node(s) to convert)\n",
        plan.profile,
        plan.server_version,
        plan.nodes
            .iter()
            .filter(|n| n.action == NodeAction::Convert)
            .count()
    );
    out.push_str(&summarize_phases(&plan.phases, 6, 28));
    out.push_str(FULL_PLAN_HINT);
    out
}

/// The summary's last line: where the full plan is.
pub const FULL_PLAN_HINT: &str = "(every step: --dry-run, or -o wide)\n";

/// `phase ID`, noting a skipped or empty phase.
fn phase_line(p: &Phase) -> String {
    let note = if p.skipped {
        " (skipped)"
    } else if p.steps.is_empty() {
        " (nothing to do)"
    } else {
        ""
    };
    format!("phase {}{note}\n", p.id)
}

/// Phases as text: a `phase ID` line each (noting skipped or empty ones), then one line per
/// step in columns of the given widths.
pub fn render_phases(phases: &[Phase], action_width: usize, target_width: usize) -> String {
    let mut out = String::new();
    for p in phases {
        out.push_str(&phase_line(p));
        for s in &p.steps {
            out.push_str(&format!(
                "  {:<action_width$} {:<target_width$} {}\n",
                s.action, s.target, s.detail
            ));
        }
    }
    out
}

#[cfg(test)]
mod phase_tests;
#[cfg(test)]
mod pool_tests;
#[cfg(test)]
mod preflight_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
