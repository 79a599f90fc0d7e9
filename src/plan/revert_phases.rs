//! Revert's phase table: one row per phase, in run order (convert's, mirrored) — id,
//! description, permissions and the function that plans its steps. `app::revert::phases`
//! runs the same phases, keyed by [`RevertPhase`].

use super::super::phases::{
    CSRS, JOURNAL, JOURNAL_DELETE, LEASE, NODE_JOBS, PATCH_NODES, PhaseRow, READ_NODES, lock_steps,
    phase_enum,
};
use super::{
    ENABLE_NODELIFECYCLE_ACTION, JOURNAL_NAME, ObjectRef, REVERT_ACTION, RevertAction,
    RevertOptions, RevertPlan, Role, Step,
};
use crate::render::Profile;

/// What revert's step functions plan from.
pub struct RevertInputs<'a> {
    pub plan: &'a RevertPlan,
    pub opts: &'a RevertOptions,
    pub profile: &'a Profile,
}

/// A revert phase's step function.
pub type RevertSteps = fn(&RevertInputs<'_>) -> Vec<Step>;

phase_enum! {
    /// Revert's phases, in run order (convert's, mirrored).
    RevertPhase, steps: RevertSteps {
        Lock,
        Preflight,
        /// Deletes the node Jobs convert left behind (failed, or running after a Ctrl-C).
        CleanupJobs,
        NodesCloud,
        NodesEdge,
        Kcm,
        Components,
        LabelNodes,
        Verify,
    }
}

impl RevertPhase {
    /// The phase's row: every phase has one (a `match` without a wildcard). The ids are
    /// convert's where the phase mirrors one of convert's.
    pub const fn row(self) -> PhaseRow<RevertSteps> {
        match self {
            RevertPhase::Lock => PhaseRow {
                id: "lock",
                about: "take the run lock before the cluster is read; renew it while running",
                needs: &[LEASE],
                steps: |_| lock_steps(),
            },
            RevertPhase::Preflight => PhaseRow {
                id: "preflight",
                about: "find what convert left from the journal, labels and Jobs; check \
                        permissions",
                needs: &[READ_NODES, JOURNAL],
                steps: preflight_steps,
            },
            RevertPhase::CleanupJobs => PhaseRow {
                id: "cleanup-jobs",
                about: "delete the node Jobs convert left behind and wait until they are gone",
                needs: &[NODE_JOBS],
                steps: cleanup_jobs_steps,
            },
            RevertPhase::NodesCloud => PhaseRow {
                id: "nodes/cloud",
                about: "revert the cloud nodes, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Cloud),
            },
            RevertPhase::NodesEdge => PhaseRow {
                id: "nodes/edge",
                about: "revert the edge nodes, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Edge),
            },
            RevertPhase::Kcm => PhaseRow {
                id: "kcm",
                about: "enable nodelifecycle again where convert disabled it",
                needs: &[NODE_JOBS, JOURNAL],
                steps: kcm_steps,
            },
            RevertPhase::Components => PhaseRow {
                id: "components",
                about: "delete what convert created, give up what it adopted (the objects add \
                        their own permissions)",
                needs: &[JOURNAL, CSRS],
                steps: components_steps,
            },
            RevertPhase::LabelNodes => PhaseRow {
                id: "label-nodes",
                about: "remove yurtctl's labels and annotations from the reverted nodes",
                needs: &[PATCH_NODES, JOURNAL],
                steps: label_nodes_steps,
            },
            RevertPhase::Verify => PhaseRow {
                id: "verify",
                about: "wait until every reverted node is Ready; delete the journal at the end \
                        of a complete revert",
                needs: &[READ_NODES, JOURNAL_DELETE],
                steps: verify_steps,
            },
        }
    }
}

impl RevertInputs<'_> {
    fn reverting(&self) -> impl Iterator<Item = &super::RevertNode> {
        self.plan
            .nodes
            .iter()
            .filter(|n| n.action == RevertAction::Revert)
    }
}

fn describe(r: &ObjectRef) -> String {
    crate::cluster::apply::describe(&r.kind, r.namespace.as_deref(), &r.name)
}

fn preflight_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    let mut s = Vec::new();
    for n in &x.plan.nodes {
        let detail = match n.action {
            RevertAction::Revert => {
                format!("revert ({}; found by {})", n.role, n.found_by.join(", "))
            }
            RevertAction::AlreadyReverted => "already reverted".to_string(),
            RevertAction::SkipNotReady => format!("skip: NotReady ({})", n.role),
        };
        s.push(Step::new("check", format!("node/{}", n.name), detail));
    }
    s
}

fn cleanup_jobs_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    x.plan
        .leftover_jobs
        .iter()
        .map(|j| {
            Step::new(
                "delete",
                format!("job/{j}"),
                "leftover of convert; wait until gone",
            )
        })
        .collect()
}

/// `nodes/cloud`, `nodes/edge`: a revert Job per node of `role`.
fn node_steps(x: &RevertInputs<'_>, role: Role) -> Vec<Step> {
    x.reverting()
        .filter(|n| n.role == role)
        .map(|n| {
            Step::job(
                &n.name,
                &crate::cluster::jobs::job_name(REVERT_ACTION, &n.name),
                format!(
                    "node-servant revert (timeout {}s, {} at a time)",
                    x.opts.job_timeout.as_secs(),
                    x.opts.concurrency
                ),
            )
        })
        .collect()
}

fn kcm_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    x.reverting()
        .filter(|n| n.kcm)
        .map(|n| {
            Step::job(
                &n.name,
                &crate::cluster::jobs::job_name(ENABLE_NODELIFECYCLE_ACTION, &n.name),
                "node-servant enable-nodelifecycle",
            )
        })
        .collect()
}

fn components_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    let plan = x.plan;
    let mut s: Vec<Step> = plan
        .objects
        .iter()
        .map(|r| Step::new("delete", describe(r), "created by convert"))
        .collect();
    s.extend(plan.adopted_objects.iter().map(|r| {
        Step::new(
            "release",
            describe(r),
            "existed before convert: keep, drop yurtctl's fields",
        )
    }));
    s.extend(plan.component_objects.iter().map(|o| {
        Step::new(
            "delete",
            crate::cluster::apply::describe(&o.kind, Some(&o.namespace), &o.name),
            format!("{}: once its pods ({}) are gone", o.why, o.written_by),
        )
    }));
    if let Some(c) = &plan.yurthub_csrs {
        s.push(Step::new(
            "delete",
            "YurtHub's CertificateSigningRequests",
            format!(
                "those requested as {} or by a reverted node's YurtHub (group {})",
                c.bootstrap_user,
                super::YURTHUB_CSR_GROUP
            ),
        ));
    }
    s
}

fn label_nodes_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    let labels = &x.profile.labels;
    x.plan
        .nodes
        .iter()
        .filter(|n| n.action != RevertAction::SkipNotReady)
        .map(|n| {
            Step::new(
                "label",
                format!("node/{}", n.name),
                format!(
                    "remove yurtctl's {} label and {} annotation",
                    labels.edge_worker.key, labels.autonomy.key
                ),
            )
        })
        .collect()
}

fn verify_steps(x: &RevertInputs<'_>) -> Vec<Step> {
    let mut s: Vec<Step> = x
        .reverting()
        .map(|n| Step::new("wait", format!("node/{}", n.name), "Ready"))
        .collect();
    if x.plan.delete_journal {
        s.push(Step::new(
            "delete",
            format!("configmap/kube-system/{JOURNAL_NAME}"),
            "the journal, once every node is reverted",
        ));
    }
    s
}
