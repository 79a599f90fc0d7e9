//! The revert planner: PURE, from a cluster snapshot (journal included) and the user's options
//! to a [`RevertPlan`] whose phases mirror convert's. `--dry-run=client` prints exactly this;
//! `app::revert` runs it.
//!
//! Which nodes: every node the journal names for a node phase (`nodes/edge`, `nodes/cloud`,
//! `kcm`), every node carrying the profile's edge-worker label or autonomy annotation, and
//! every node a leftover convert Job is pinned to. The servant's revert is idempotent, so a
//! node that was never really converted costs one cheap Job.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;

use super::{
    CONVERT_ACTION, Check, Finding, KCM, NODES_CLOUD, NODES_EDGE, Phase, PlanError, Role, Step,
};
use crate::cluster::Concurrency;
use crate::cluster::journal::{JOURNAL_NAME, ObjectRef, PhaseState};
use crate::cluster::snapshot::ClusterSnapshot;
use crate::render::Profile;

#[path = "revert_phases.rs"]
mod phases;
pub use phases::{RevertInputs, RevertPhase, RevertSteps};

/// Deletes the node Jobs convert left behind (failed, or running after a Ctrl-C).
pub const CLEANUP_JOBS: &str = RevertPhase::CleanupJobs.id();

/// Phase ids of `revert`, in execution order (convert's, mirrored).
pub const REVERT_PHASES: [&str; RevertPhase::COUNT] = RevertPhase::IDS;

/// The Job action of node revert (`yurtctl-revert-<node>`).
pub const REVERT_ACTION: &str = "revert";
/// The Job action that re-enables kube-controller-manager's nodelifecycle controller.
pub const ENABLE_NODELIFECYCLE_ACTION: &str = "enable-nodelifecycle";
/// The Job action that disabled it (convert, legacy profile).
pub const DISABLE_NODELIFECYCLE_ACTION: &str = "disable-nodelifecycle";
/// The journal's per-node key for revert progress.
pub const REVERTED: &str = "revert";

/// What the user asked for, validated at the CLI edge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertOptions {
    /// Only these nodes (empty: all, and the components too).
    pub nodes: Vec<String>,
    pub concurrency: Concurrency,
    #[serde(serialize_with = "super::ser_duration")]
    pub job_timeout: Duration,
    pub skip_phases: BTreeSet<String>,
    /// Leave the nodes' containers running as they are after the kubelet's revert.
    pub skip_workload_restart: bool,
}

/// What happens to one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevertAction {
    /// A Job runs `node-servant revert` there, then its labels go.
    Revert,
    /// The journal records it reverted: only leftover labels are removed.
    AlreadyReverted,
    /// Not Ready now: left alone this run (a later run reverts it).
    SkipNotReady,
}

/// One node's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RevertNode {
    pub name: String,
    pub role: Role,
    pub action: RevertAction,
    /// The journal records nodelifecycle disabled here: `enable-nodelifecycle` runs.
    pub kcm: bool,
    /// Why the node is included: `journal`, `label`, `job`.
    pub found_by: Vec<&'static str>,
}

/// The whole revert plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertPlan {
    pub profile: String,
    pub server_version: String,
    /// All nodes: the components, the journal and the lock go at the end.
    pub complete: bool,
    /// A complete revert with a journal: it is deleted at the end (even when nothing else
    /// is left, for example after a run that could not delete it).
    pub delete_journal: bool,
    pub nodes: Vec<RevertNode>,
    /// Leftover node Jobs of convert, deleted first.
    pub leftover_jobs: Vec<String>,
    /// Objects convert created, in deletion order.
    pub objects: Vec<ObjectRef>,
    /// Objects that existed before convert: kept, only yurtctl's fields are given up.
    pub adopted_objects: Vec<ObjectRef>,
    /// Objects the components wrote themselves, deleted after the components' pods are gone.
    pub component_objects: Vec<crate::render::ComponentObject>,
    /// The certificate requests YurtHub made on the nodes (a complete revert that deletes
    /// convert's bootstrap token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_csrs: Option<HubCsrs>,
    pub phases: Vec<Phase>,
}

/// YurtHub's CertificateSigningRequests: its client certificate's, requested with convert's
/// bootstrap token, and its serving certificate's, requested by the node's YurtHub, whose
/// client certificate puts it in group `openyurt:yurthub` (openyurtio/openyurt@v1.7.0
/// pkg/yurthub/certificate/token/token.go `YurtHubCSROrg`, the same at v0.6.1). The kubelet's
/// own requests match neither. kube-controller-manager's csrcleaner would delete them only an
/// hour after they were approved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HubCsrs {
    /// `system:bootstrap:<token id>`.
    pub bootstrap_user: String,
    /// `system:node:<name>` of every node of the plan.
    pub node_users: Vec<String>,
}

/// The group YurtHub's client certificate carries.
pub const YURTHUB_CSR_GROUP: &str = "openyurt:yurthub";

impl HubCsrs {
    /// Whether a request by `username` in `groups` is one of YurtHub's on our nodes.
    pub fn matches(&self, username: &str, groups: &[String]) -> bool {
        username == self.bootstrap_user
            || (groups.iter().any(|g| g == YURTHUB_CSR_GROUP)
                && self.node_users.iter().any(|u| u == username))
    }
}

impl RevertPlan {
    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// Whether phase `id` runs (present and not skipped).
    pub fn runs(&self, id: &str) -> bool {
        self.phase(id).is_some_and(|p| !p.skipped)
    }

    /// Nothing of ours was found.
    pub fn nothing_to_do(&self) -> bool {
        !self.delete_journal
            && self.nodes.is_empty()
            && self.leftover_jobs.is_empty()
            && self.objects.is_empty()
            && self.adopted_objects.is_empty()
    }

    /// Nodes a Job reverts in this run, for one role.
    pub fn to_revert(&self, role: Role) -> impl Iterator<Item = &RevertNode> {
        self.nodes
            .iter()
            .filter(move |n| n.role == role && n.action == RevertAction::Revert)
    }
}

/// Deletion order: admission webhooks first (they would refuse writes once their service is
/// gone), then custom resources (before the CRDs and the controller that may finalise them),
/// workloads, services, RBAC, service accounts, ConfigMaps and Secrets, CRDs last.
pub fn deletion_rank(r: &ObjectRef) -> u8 {
    let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    match (group, r.kind.as_str()) {
        ("admissionregistration.k8s.io", _) => 0,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 9,
        ("apps" | "batch", _) => 2,
        ("", "Service") => 3,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => 4,
        ("rbac.authorization.k8s.io", _) => 5,
        ("", "ServiceAccount") => 6,
        ("", "ConfigMap" | "Secret") => 7,
        ("", _) => 8,
        // any other group: a custom resource of a CRD we installed
        _ => 1,
    }
}

fn journal_has(snap: &ClusterSnapshot, node: &str, phase: &str) -> Option<PhaseState> {
    Some(snap.journal.as_ref()?.phase(node, phase)?.state)
}

/// A node phase state that means convert touched (or may have touched) the node.
fn touched(s: Option<PhaseState>) -> bool {
    matches!(
        s,
        Some(PhaseState::Running | PhaseState::Done | PhaseState::Failed)
    )
}

/// Plans `yurtctl revert`.
pub fn plan_revert(
    snap: &ClusterSnapshot,
    opts: &RevertOptions,
    profile: &Profile,
) -> Result<RevertPlan, PlanError> {
    for p in &opts.skip_phases {
        super::phases::parse::<RevertPhase>(p)
            .map_err(|e| PlanError::Usage(format!("--skip-phases: {e}")))?;
    }
    let missing: Vec<Finding> = opts
        .nodes
        .iter()
        .filter(|n| !snap.nodes.iter().any(|x| &x.name == *n))
        .map(|n| Finding::new(Check::NodeExists, format!("node {n} does not exist")))
        .collect();
    if !missing.is_empty() {
        return Err(PlanError::Preflight(missing));
    }
    let selected = |n: &str| opts.nodes.is_empty() || opts.nodes.iter().any(|x| x == n);
    let labels = &profile.labels;
    let convert_jobs: BTreeMap<&str, &str> = snap
        .jobs
        .iter()
        .filter(|j| {
            matches!(
                j.action.as_deref(),
                Some(CONVERT_ACTION | DISABLE_NODELIFECYCLE_ACTION)
            )
        })
        .filter_map(|j| Some((j.node.as_deref()?, j.name.as_str())))
        .collect();

    let mut nodes = Vec::new();
    for n in snap.nodes.iter().filter(|n| selected(&n.name)) {
        let edge = journal_has(snap, &n.name, NODES_EDGE);
        let cloud = journal_has(snap, &n.name, NODES_CLOUD);
        let kcm = touched(journal_has(snap, &n.name, KCM));
        let labelled = n.labels.contains_key(&labels.edge_worker.key)
            || n.annotations.contains_key(&labels.autonomy.key);
        let job = convert_jobs.contains_key(n.name.as_str());
        let mut found_by = Vec::new();
        let revert = journal_has(snap, &n.name, REVERTED);
        if touched(edge) || touched(cloud) || kcm || revert.is_some() {
            found_by.push("journal");
        }
        if labelled {
            found_by.push("label");
        }
        if job {
            found_by.push("job");
        }
        if found_by.is_empty() {
            continue;
        }
        // A node this revert already finished has lost its label but keeps its journal entry
        // (Pending), which still says what convert made of it.
        let role = if touched(edge) {
            Role::Edge
        } else if touched(cloud) {
            Role::Cloud
        } else if edge.is_some() {
            Role::Edge
        } else if cloud.is_some() {
            Role::Cloud
        } else if n.labels.get(&labels.edge_worker.key) == Some(&labels.edge_worker.edge) {
            Role::Edge
        } else {
            Role::Cloud
        };
        let reverted =
            revert == Some(PhaseState::Done) && !touched(edge) && !touched(cloud) && !kcm && !job;
        let action = if reverted {
            RevertAction::AlreadyReverted
        } else if !n.ready {
            RevertAction::SkipNotReady
        } else {
            RevertAction::Revert
        };
        nodes.push(RevertNode {
            name: n.name.clone(),
            role,
            action,
            kcm,
            found_by,
        });
    }

    let complete = opts.nodes.is_empty();
    let (mut objects, adopted_objects) = if !complete {
        (Vec::new(), Vec::new())
    } else if let Some(j) = &snap.journal {
        (j.created_objects.clone(), j.adopted_objects.clone())
    } else {
        // No journal: what carries our label is all we can know.
        let objects = snap
            .managed_objects
            .iter()
            .filter(|o| !(o.kind == "ConfigMap" && o.name == JOURNAL_NAME))
            .map(|o| ObjectRef {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                namespace: o.namespace.clone(),
                name: o.name.clone(),
            })
            .collect();
        (objects, Vec::new())
    };
    objects.sort_by_key(deletion_rank);
    let leftover_jobs: Vec<String> = convert_jobs
        .iter()
        .filter(|(node, _)| selected(node))
        .map(|(_, job)| (*job).to_string())
        .collect();

    // what the components wrote goes with them
    let component_objects = if complete && !objects.is_empty() {
        profile.component_objects.clone()
    } else {
        Vec::new()
    };
    // the bootstrap token's Secret names its id (bootstrap-token-<id>, kubeadm's format)
    let yurthub_csrs = objects
        .iter()
        .filter(|_| complete)
        .find_map(|o| {
            (o.kind == "Secret" && o.namespace.as_deref() == Some("kube-system"))
                .then(|| o.name.strip_prefix("bootstrap-token-"))
                .flatten()
        })
        .map(|id| HubCsrs {
            bootstrap_user: format!("system:bootstrap:{id}"),
            node_users: nodes
                .iter()
                .map(|n| format!("system:node:{}", n.name))
                .collect(),
        });
    let mut plan = RevertPlan {
        component_objects,
        yurthub_csrs,
        profile: profile.name.clone(),
        server_version: snap.server_version.clone(),
        complete,
        delete_journal: complete && snap.journal.is_some(),
        nodes,
        leftover_jobs,
        objects,
        adopted_objects,
        phases: Vec::new(),
    };
    let inputs = RevertInputs {
        plan: &plan,
        opts,
        profile,
    };
    plan.phases =
        super::phases::plan_phases::<RevertPhase>(&opts.skip_phases, |steps| steps(&inputs));
    Ok(plan)
}

/// The plan as text, one line per step (for `--dry-run=client` without `-o json`).
pub fn render_text(plan: &RevertPlan) -> String {
    let mut out = header(plan);
    out.push_str(&super::render_phases(&plan.phases, 7, 40));
    out
}

/// The plan summary the confirmation prompt follows ([`super::summarize_phases`]).
pub fn render_summary(plan: &RevertPlan) -> String {
    let mut out = header(plan);
    out.push_str(&super::summarize_phases(&plan.phases, 7, 40));
    out.push_str(super::FULL_PLAN_HINT);
    out
}

fn header(plan: &RevertPlan) -> String {
    let scope = if plan.complete {
        "all nodes"
    } else {
        "selected nodes; components kept"
    };
    format!(
        "Plan: revert {} ({scope}; Kubernetes {})\n",
        plan.profile, plan.server_version
    )
}

#[cfg(test)]
#[path = "revert_tests.rs"]
mod tests;
