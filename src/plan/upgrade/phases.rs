//! Upgrade's phase table (docs/architecture.md#layers), one row per phase in run order, and
//! the plan it gives: every change named before anything is made — objects created, changed,
//! deleted, CRD versions and their storage migration, each node's files, kube-controller-
//! manager's flags.

use serde::Serialize;

use super::super::phases::{
    APPLY_COMPONENTS, Access, JOURNAL, LEASE, NODE_JOBS, PATCH_NODES, PhaseRow, READ_NODES,
    lock_steps, phase_enum,
};
use super::{CrdChange, KcmChange, NodeFile, ObjectChanges, Route, RouteKind, UpgradeNode};
use crate::cluster::jobs::job_name;
use crate::plan::revert::ENABLE_NODELIFECYCLE_ACTION;
use crate::plan::{KCM_ACTION, Phase, Role, Step, UPGRADE_ACTION, render_phases};
use crate::render::Profile;

/// What upgrade's step functions plan from.
pub struct UpgradeInputs<'a> {
    pub route: &'a Route,
    pub to: &'a Profile,
    pub server_version: &'a str,
    pub nodes: &'a [UpgradeNode],
    pub objects: &'a ObjectChanges,
    pub crds: &'a [CrdChange],
    pub node_files: &'a [NodeFile],
    pub kcm: Option<KcmChange>,
    /// The control-plane nodes whose kube-controller-manager manifest changes.
    pub kcm_nodes: &'a [String],
    /// Nodes that get the target's NodePool label (they have none yet).
    pub unlabelled: &'a [String],
    /// The nodes whose YurtHub this run moves, in order (the others moved in an earlier run
    /// of the same upgrade, or are left out by `-l`, `--partition`, `--canary`, `--pause`).
    pub order: &'a super::NodeOrder,
    /// `--skip-phases`.
    pub skip_phases: &'a std::collections::BTreeSet<String>,
}

/// An upgrade phase's step function.
pub type UpgradeSteps = fn(&UpgradeInputs<'_>) -> Vec<Step>;

phase_enum! {
    /// Upgrade's phases, in run order.
    UpgradePhase, steps: UpgradeSteps {
        Lock,
        Preflight,
        /// Before the old controllers go: some node-lifecycle controller always runs.
        Kcm,
        Components,
        LabelNodes,
        NodesEdge,
        NodesCloud,
        Cleanup,
        Migrate,
        Verify,
    }
}

/// Objects the target adds, changes and leaves in place, and the CRDs' storage (the phases'
/// kinds come from the two profiles, as convert's and revert's do).
const UPGRADE_OBJECTS: &[Access<'static>] = &[
    (
        "list",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    ),
    (
        "update",
        "apiextensions.k8s.io",
        "customresourcedefinitions/status",
        None,
    ),
];

impl UpgradePhase {
    /// The phase's row: every phase has one (a `match` without a wildcard).
    pub const fn row(self) -> PhaseRow<UpgradeSteps> {
        match self {
            UpgradePhase::Lock => PhaseRow {
                id: "lock",
                about: "take the run lock before the cluster is read; renew it while running",
                needs: &[LEASE],
                steps: |_| lock_steps(),
            },
            UpgradePhase::Preflight => PhaseRow {
                id: "preflight",
                about: "check the route, the Kubernetes version, that convert finished and \
                        which nodes move; check permissions",
                needs: &[READ_NODES, JOURNAL],
                steps: preflight_steps,
            },
            UpgradePhase::Kcm => PhaseRow {
                id: "kcm",
                about: "change kube-controller-manager's nodelifecycle where the profiles differ",
                needs: &[NODE_JOBS, JOURNAL],
                steps: kcm_steps,
            },
            UpgradePhase::Components => PhaseRow {
                id: "components",
                about: "apply the target's components: new objects created, changed ones \
                        updated, CRDs with their new versions",
                needs: &[APPLY_COMPONENTS, JOURNAL],
                steps: components_steps,
            },
            UpgradePhase::LabelNodes => PhaseRow {
                id: "label-nodes",
                about: "put the nodes in the NodePools the target needs",
                needs: &[PATCH_NODES, JOURNAL],
                steps: label_nodes_steps,
            },
            UpgradePhase::NodesEdge => PhaseRow {
                id: "nodes/edge",
                about: "move each edge node's YurtHub to the target's, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Edge),
            },
            UpgradePhase::NodesCloud => PhaseRow {
                id: "nodes/cloud",
                about: "move each cloud node's YurtHub to the target's, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Cloud),
            },
            UpgradePhase::Cleanup => PhaseRow {
                id: "cleanup",
                about: "delete what convert created that the target has no use for; give up \
                        what it adopted",
                needs: &[JOURNAL],
                steps: cleanup_steps,
            },
            UpgradePhase::Migrate => PhaseRow {
                id: "migrate",
                about: "store every object of a CRD whose storage version moved at the new \
                        one, then record only that version as stored",
                needs: &[UPGRADE_OBJECTS],
                steps: migrate_steps,
            },
            UpgradePhase::Verify => PhaseRow {
                id: "verify",
                about: "wait until every moved node is Ready",
                needs: &[READ_NODES],
                steps: verify_steps,
            },
        }
    }
}

fn preflight_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let mut s = vec![
        Step::new(
            "check",
            "cluster",
            format!(
                "Kubernetes {} is supported by profile {}",
                x.server_version, x.to.name
            ),
        ),
        Step::new(
            "check",
            "cluster",
            format!("{} to {}", x.route.from, x.route.to),
        ),
    ];
    s.extend(x.nodes.iter().map(|n| {
        let pool = n
            .pool
            .as_deref()
            .map(|p| format!(", NodePool {p}"))
            .unwrap_or_default();
        Step::new(
            "check",
            format!("node/{}", n.name),
            format!("upgrade as {}{pool}", n.role),
        )
    }));
    s
}

fn kcm_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let Some(change) = x.kcm else {
        return Vec::new();
    };
    let (action, what) = match change {
        KcmChange::Enable => (
            ENABLE_NODELIFECYCLE_ACTION,
            "node-servant enable-nodelifecycle",
        ),
        KcmChange::Disable => (KCM_ACTION, "node-servant disable-nodelifecycle"),
    };
    x.kcm_nodes
        .iter()
        .flat_map(|n| {
            [
                Step::job(n, &job_name(action, n), what),
                Step::new("files", format!("node/{n}"), change.describe()),
            ]
        })
        .collect()
}

fn components_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let crd = |name: &str| x.crds.iter().find(|c| c.name == name);
    let mut s: Vec<Step> = Vec::new();
    if x.route.kind == RouteKind::Rollback {
        s.extend(x.crds.iter().filter_map(|c| {
            let v = c.bridge_version()?;
            Some(Step::new(
                "migrate",
                format!("customresourcedefinition/{}", c.name),
                format!(
                    "first the running CRD with {v} as storage; {} object(s) written again at \
                     {v}; status.storedVersions [{v}]",
                    c.objects
                ),
            ))
        }));
    }
    s.extend(
        x.objects
            .create
            .iter()
            .map(|k| Step::new("apply", k.to_string(), "create")),
    );
    // yurtctl's own labels (the profile, the version) change on every object: one line for
    // the objects where nothing else does
    let mut relabelled = 0;
    for u in &x.objects.update {
        let mut fields: Vec<&str> = u
            .fields
            .iter()
            .map(String::as_str)
            .filter(|f| !f.starts_with("metadata.labels."))
            .collect();
        let mut detail = Vec::new();
        if let Some(c) = crd(&u.key.name) {
            fields.retain(|f| *f != "spec.versions");
            detail.push(format!(
                "versions {} → {}",
                versions(&c.before),
                versions(&c.after)
            ));
        }
        if !fields.is_empty() {
            detail.push(format!("change {}", fields.join(", ")));
        }
        if detail.is_empty() {
            relabelled += 1;
            continue;
        }
        s.push(Step::new("apply", u.key.to_string(), detail.join("; ")));
    }
    if relabelled > 0 {
        s.push(Step::new(
            "apply",
            format!("{relabelled} more object(s)"),
            format!(
                "only yurtctl's labels change (yurtctl.openyurt.io/profile={})",
                x.to.name
            ),
        ));
    }
    s
}

fn versions(v: &[super::CrdVersion]) -> String {
    let all: Vec<String> = v.iter().map(ToString::to_string).collect();
    all.join(", ")
}

fn label_nodes_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let Some(decl) = &x.to.node_pools else {
        return Vec::new();
    };
    x.nodes
        .iter()
        .filter(|n| x.unlabelled.contains(&n.name))
        .filter_map(|n| {
            let pool = n.pool.as_deref()?;
            Some(Step::new(
                "label",
                format!("node/{}", n.name),
                format!("label {}={pool}", decl.label),
            ))
        })
        .collect()
}

fn node_steps(x: &UpgradeInputs<'_>, role: Role) -> Vec<Step> {
    let files: Vec<String> = x
        .node_files
        .iter()
        .map(|f| format!("{} {}: {}", f.action.mark(), f.path, f.why))
        .collect();
    let files = files.join("; ");
    let roles: std::collections::HashMap<&str, Role> =
        x.nodes.iter().map(|n| (n.name.as_str(), n.role)).collect();
    let of_role = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .filter(|n| roles.get(n.as_str()) == Some(&role))
            .cloned()
            .collect()
    };
    let mut steps: Vec<Step> = of_role(&x.order.order)
        .iter()
        .flat_map(|n| {
            [
                Step::job(
                    n,
                    &job_name(UPGRADE_ACTION, n),
                    format!(
                        "node-servant upgrade to YurtHub {} (the kubelet keeps its kubeconfig), \
                         in this order, {} at a time until Ready again (--max-unavailable)",
                        x.route.to.openyurt_version, x.order.budget
                    ),
                ),
                Step::new("files", format!("node/{n}"), files.clone()),
            ]
        })
        .collect();
    steps.extend(of_role(&x.order.kept).iter().map(|n| {
        Step::new(
            "keep",
            format!("node/{n}"),
            format!("stays on {} (--partition)", x.route.from),
        )
    }));
    steps.extend(of_role(&x.order.later).iter().map(|n| {
        Step::new(
            "later",
            format!("node/{n}"),
            "left for a later run (--canary, --pause)",
        )
    }));
    steps
}

fn cleanup_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let o = x.objects;
    let mut s: Vec<Step> = o
        .delete
        .iter()
        .map(|k| {
            Step::new(
                "delete",
                k.to_string(),
                "convert created it; the target has none",
            )
        })
        .collect();
    s.extend(o.release.iter().map(|k| {
        Step::new(
            "release",
            k.to_string(),
            "it was there before convert: left in place, yurtctl's fields given up",
        )
    }));
    s.extend(o.keep.iter().map(|k| {
        Step::new(
            "keep",
            k.key.to_string(),
            format!(
                "{} object(s) of it exist: kept, and deleted by revert once they are gone",
                k.objects
            ),
        )
    }));
    s
}

/// An upgrade's storage migration, once every object can be read at the new version; a
/// rollback's comes first, in `components`.
fn migrate_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    if x.route.kind == RouteKind::Rollback {
        return Vec::new();
    }
    x.crds
        .iter()
        .filter(|c| c.migrate)
        .map(|c| {
            let to = c
                .after
                .iter()
                .find(|v| v.storage)
                .map_or("?", |v| v.name.as_str());
            Step::new(
                "migrate",
                format!("customresourcedefinition/{}", c.name),
                format!(
                    "{} object(s) written again, stored at {to}; status.storedVersions [{to}]",
                    c.objects
                ),
            )
        })
        .collect()
}

fn verify_steps(x: &UpgradeInputs<'_>) -> Vec<Step> {
    let moving: std::collections::HashSet<&String> = x.order.order.iter().collect();
    x.nodes
        .iter()
        .filter(|n| moving.contains(&n.name))
        .map(|n| Step::new("wait", format!("node/{}", n.name), "Ready"))
        .collect()
}

/// The upgrade's plan: what `--dry-run` prints and the executor runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradePlan {
    pub route: Route,
    pub server_version: String,
    pub objects: ObjectChanges,
    pub crds: Vec<CrdChange>,
    pub node_files: Vec<NodeFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kcm: Option<KcmChange>,
    /// The nodes this run moves, in order, and those it leaves.
    pub nodes: super::NodeOrder,
    pub phases: Vec<Phase>,
}

impl UpgradePlan {
    /// Every phase in run order, with its steps.
    pub fn new(x: &UpgradeInputs<'_>) -> UpgradePlan {
        UpgradePlan {
            route: x.route.clone(),
            server_version: x.server_version.to_owned(),
            objects: x.objects.clone(),
            crds: x.crds.to_vec(),
            node_files: x.node_files.to_vec(),
            kcm: x.kcm,
            nodes: x.order.clone(),
            phases: super::super::phases::plan_phases::<UpgradePhase>(x.skip_phases, |f| f(x)),
        }
    }

    /// The plan as text, one line per step.
    pub fn render_text(&self) -> String {
        let what = match self.route.kind {
            RouteKind::Rollback => "roll back",
            RouteKind::Patch | RouteKind::Profile => "upgrade",
        };
        format!(
            "Plan: {what} {} to {} (Kubernetes {})\n{}",
            self.route.from,
            self.route.to,
            self.server_version,
            render_phases(&self.phases, 7, 40)
        )
    }
}

#[cfg(test)]
#[path = "phases_tests.rs"]
mod tests;
