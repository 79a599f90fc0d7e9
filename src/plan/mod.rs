//! The planner (design §2): PURE functions from a cluster snapshot and the user's options to a
//! [`Plan`] of phases with stable ids. `--dry-run=client` prints exactly this; the executor
//! (`app::convert`) runs it. Nothing here talks to the API or prints.

pub mod staticpod;

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::journal::PhaseState;
use crate::cluster::snapshot::{ClusterSnapshot, NodeInfo};
use crate::render::Profile;

/// Phase ids of `convert`, in execution order; usable in `--skip-phases` and named in errors.
pub const CONVERT_PHASES: [&str; 8] = [
    PREFLIGHT,
    LOCK,
    LABEL_NODES,
    COMPONENTS,
    KCM,
    NODES_EDGE,
    NODES_CLOUD,
    VERIFY,
];
pub const PREFLIGHT: &str = "preflight";
pub const LOCK: &str = "lock";
pub const LABEL_NODES: &str = "label-nodes";
pub const COMPONENTS: &str = "components";
pub const KCM: &str = "kcm";
pub const NODES_EDGE: &str = "nodes/edge";
pub const NODES_CLOUD: &str = "nodes/cloud";
pub const VERIFY: &str = "verify";

/// The Job action of node conversion (`yurtctl-convert-<node>`).
pub const CONVERT_ACTION: &str = "convert";

/// What the user asked for, validated at the CLI edge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvertOptions {
    pub cloud_nodes: Vec<String>,
    pub edge_nodes: Vec<String>,
    pub all_edge: bool,
    pub profile: String,
    pub servant_image: Option<String>,
    pub concurrency: usize,
    #[serde(serialize_with = "ser_duration")]
    pub job_timeout: Duration,
    pub skip_phases: BTreeSet<String>,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs()))
}

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
}

/// A phase with a stable id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub id: String,
    /// Named in `--skip-phases`.
    pub skipped: bool,
    pub steps: Vec<Step>,
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub profile: String,
    pub server_version: String,
    pub nodes: Vec<NodeDecision>,
    pub phases: Vec<Phase>,
}

impl Plan {
    /// Nodes a Job converts in this run, for one role.
    pub fn to_convert(&self, role: Role) -> impl Iterator<Item = &NodeDecision> {
        self.nodes
            .iter()
            .filter(move |n| n.role == role && n.action == NodeAction::Convert)
    }

    /// No node needs converting: the cluster is already converted (or nothing was selected).
    pub fn nothing_to_do(&self) -> bool {
        !self.nodes.iter().any(|n| n.action == NodeAction::Convert)
    }

    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// Whether phase `id` runs (present and not skipped).
    pub fn runs(&self, id: &str) -> bool {
        self.phase(id).is_some_and(|p| !p.skipped)
    }
}

/// Why no plan could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Bad options (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The cluster does not allow the conversion (exit 3); every finding, not just the first.
    #[error("preflight failed:\n  - {}", .0.join("\n  - "))]
    Preflight(Vec<String>),
}

/// Whether the journal records `node` as converted in its role's phase.
fn journal_done(snap: &ClusterSnapshot, node: &str) -> bool {
    let Some(j) = &snap.journal else { return false };
    [NODES_EDGE, NODES_CLOUD].iter().any(|p| {
        j.phase(node, p)
            .is_some_and(|s| s.state == PhaseState::Done)
    })
}

/// Minor version number from `/version` (`"30"`, `"30+"`) or `gitVersion` (`v1.30.2`).
fn server_minor(snap: &ClusterSnapshot) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    digits(&snap.server_minor).or_else(|| {
        let v = snap.server_version.trim_start_matches('v');
        v.split('.').nth(1).and_then(digits)
    })
}

/// Plans `yurtctl convert`.
///
/// Roles: nodes in `--cloud-nodes` are cloud; with `--edge-nodes`, exactly those are edge and
/// control-plane nodes not named anywhere are cloud (other nodes are left alone); otherwise
/// (`--all-edge`, the default) every node is edge except control-plane nodes and
/// `--cloud-nodes`. A node is already converted when it carries the profile's edge-worker label
/// and the journal records its conversion; a NotReady node is skipped (and reported).
pub fn plan_convert(
    snap: &ClusterSnapshot,
    opts: &ConvertOptions,
    profile: &Profile,
) -> Result<Plan, PlanError> {
    for p in &opts.skip_phases {
        if !CONVERT_PHASES.contains(&p.as_str()) {
            return Err(PlanError::Usage(format!(
                "--skip-phases: unknown phase {p:?}; phases are {}",
                CONVERT_PHASES.join(", ")
            )));
        }
    }
    if let Some(n) = opts
        .cloud_nodes
        .iter()
        .find(|n| opts.edge_nodes.contains(n))
    {
        return Err(PlanError::Usage(format!(
            "node {n} is named in both --cloud-nodes and --edge-nodes"
        )));
    }
    if opts.all_edge && !opts.edge_nodes.is_empty() {
        return Err(PlanError::Usage(
            "--all-edge and --edge-nodes exclude each other".into(),
        ));
    }

    let mut findings = Vec::new();
    match server_minor(snap) {
        Some(m) if profile.supports_minor(m) => {}
        Some(m) => findings.push(format!(
            "Kubernetes {} (1.{m}) is not supported by profile {} (1.{}-1.{})",
            snap.server_version,
            profile.name,
            profile.kubernetes.min_minor,
            profile.kubernetes.max_minor
        )),
        None => findings.push(format!(
            "cannot tell the Kubernetes minor version from {:?}",
            snap.server_version
        )),
    }
    for n in opts.cloud_nodes.iter().chain(&opts.edge_nodes) {
        if !snap.nodes.iter().any(|x| &x.name == n) {
            findings.push(format!("node {n} does not exist"));
        }
    }
    if profile.disable_node_lifecycle
        && !opts.skip_phases.contains(KCM)
        && !snap.nodes.iter().any(|n| n.kcm_static_pod)
    {
        findings.push(format!(
            "profile {} disables kube-controller-manager's nodelifecycle controller, but no \
             kube-controller-manager static pod was found; skip phase {KCM} to go on without it",
            profile.name
        ));
    }
    if !findings.is_empty() {
        return Err(PlanError::Preflight(findings));
    }

    let edge_key = &profile.labels.edge_worker.key;
    let nodes: Vec<NodeDecision> = snap
        .nodes
        .iter()
        .filter_map(|n| {
            let role = role_of(n, opts)?;
            let action = if n.labels.contains_key(edge_key) && journal_done(snap, &n.name) {
                NodeAction::AlreadyConverted
            } else if !n.ready {
                NodeAction::SkipNotReady
            } else {
                NodeAction::Convert
            };
            Some(NodeDecision {
                name: n.name.clone(),
                role,
                action,
            })
        })
        .collect();

    let phases = CONVERT_PHASES
        .iter()
        .map(|id| Phase {
            id: (*id).to_string(),
            skipped: opts.skip_phases.contains(*id),
            steps: steps(id, snap, opts, profile, &nodes),
        })
        .collect();
    Ok(Plan {
        profile: profile.name.clone(),
        server_version: snap.server_version.clone(),
        nodes,
        phases,
    })
}

fn role_of(n: &NodeInfo, opts: &ConvertOptions) -> Option<Role> {
    if opts.cloud_nodes.contains(&n.name) {
        return Some(Role::Cloud);
    }
    if opts.edge_nodes.contains(&n.name) {
        return Some(Role::Edge);
    }
    if n.is_control_plane() {
        return Some(Role::Cloud);
    }
    opts.edge_nodes.is_empty().then_some(Role::Edge)
}

fn steps(
    id: &str,
    snap: &ClusterSnapshot,
    opts: &ConvertOptions,
    profile: &Profile,
    nodes: &[NodeDecision],
) -> Vec<Step> {
    let converting = || nodes.iter().filter(|n| n.action == NodeAction::Convert);
    let labels = &profile.labels;
    match id {
        PREFLIGHT => {
            let mut s = vec![Step::new(
                "check",
                "cluster",
                format!(
                    "Kubernetes {} is supported by profile {}",
                    snap.server_version, profile.name
                ),
            )];
            for n in nodes {
                let detail = match n.action {
                    NodeAction::Convert => format!("convert as {}", n.role),
                    NodeAction::AlreadyConverted => format!("already converted ({})", n.role),
                    NodeAction::SkipNotReady => format!("skip: NotReady ({})", n.role),
                };
                s.push(Step::new("check", format!("node/{}", n.name), detail));
            }
            s
        }
        LOCK => vec![Step::new(
            "lock",
            "lease/kube-system/yurtctl-lock",
            "acquire and renew while running",
        )],
        LABEL_NODES => converting()
            .map(|n| {
                let value = match n.role {
                    Role::Edge => &labels.edge_worker.edge,
                    Role::Cloud => &labels.edge_worker.cloud,
                };
                let mut d = format!("label {}={value}", labels.edge_worker.key);
                if n.role == Role::Edge {
                    d.push_str(&format!(
                        ", annotate {}={}",
                        labels.autonomy.key, labels.autonomy.value
                    ));
                }
                Step::new("label", format!("node/{}", n.name), d)
            })
            .collect(),
        COMPONENTS => {
            if converting().next().is_none() {
                return Vec::new();
            }
            let features = BTreeSet::new();
            let mut s: Vec<Step> = profile
                .enabled_components(&features)
                .map(|c| Step::new("apply", c.id.clone(), c.templates.join(", ")))
                .collect();
            s.push(Step::new(
                "apply",
                "yurthub-bootstrap",
                "Secret kube-system/yurtctl-yurthub-bootstrap (bootstrap-hub.conf)",
            ));
            s
        }
        KCM => {
            if !profile.disable_node_lifecycle {
                return Vec::new();
            }
            snap.nodes
                .iter()
                .filter(|n| n.kcm_static_pod)
                .map(|n| {
                    Step::new(
                        "job",
                        format!("node/{}", n.name),
                        "node-servant disable-nodelifecycle",
                    )
                })
                .collect()
        }
        NODES_EDGE | NODES_CLOUD => {
            let role = if id == NODES_EDGE {
                Role::Edge
            } else {
                Role::Cloud
            };
            converting()
                .filter(|n| n.role == role)
                .map(|n| {
                    Step::new(
                        "job",
                        format!("node/{}", n.name),
                        format!(
                            "Job {}: node-servant convert --working-mode {role} (timeout {}s, \
                             {} at a time)",
                            crate::cluster::jobs::job_name(CONVERT_ACTION, &n.name),
                            opts.job_timeout.as_secs(),
                            opts.concurrency.max(1)
                        ),
                    )
                })
                .collect()
        }
        VERIFY => converting()
            .map(|n| Step::new("wait", format!("node/{}", n.name), "Ready"))
            .collect(),
        _ => Vec::new(),
    }
}

/// The plan as text, one line per step (for `--dry-run=client` without `-o json`).
pub fn render_text(plan: &Plan) -> String {
    let mut out = format!(
        "Plan: convert to {} (Kubernetes {})\n",
        plan.profile, plan.server_version
    );
    for p in &plan.phases {
        let note = if p.skipped {
            " (skipped)"
        } else if p.steps.is_empty() {
            " (nothing to do)"
        } else {
            ""
        };
        out.push_str(&format!("phase {}{note}\n", p.id));
        for s in &p.steps {
            out.push_str(&format!(
                "  {:<6} {:<28} {}\n",
                s.action, s.target, s.detail
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
