//! Convert's phase table (docs/architecture.md#layers): one row per phase, in run order — id,
//! description, permissions and the function that plans its steps. `app::convert::phases`
//! runs the same phases, keyed by [`ConvertPhase`].

use super::phases::{
    APPLY_COMPONENTS, Access, JOURNAL, LEASE, NODE_JOBS, PATCH_NODES, PhaseRow, READ_NODES,
    lock_steps, phase_enum,
};
use super::*;
use crate::cluster::SYSTEM_NAMESPACE;

/// What convert's step functions plan from.
pub struct ConvertInputs<'a> {
    pub snap: &'a ClusterSnapshot,
    pub opts: &'a ConvertOptions,
    pub profile: &'a Profile,
    pub nodes: &'a [NodeDecision],
    pub kcm_nodes: &'a [String],
    pub warnings: &'a [Finding],
}

/// A convert phase's step function.
pub type ConvertSteps = fn(&ConvertInputs<'_>) -> Vec<Step>;

phase_enum! {
    /// Convert's phases, in run order.
    ConvertPhase, steps: ConvertSteps {
        Lock,
        Preflight,
        /// Node-side preflight: a `node-servant preflight` Job on every node this run
        /// converts, after the lock is held (so two runs never race on the Jobs) and before
        /// anything is changed.
        PreflightNodes,
        LabelNodes,
        Components,
        Kcm,
        NodesEdge,
        NodesCloud,
        Verify,
    }
}

impl ConvertPhase {
    /// The phase's row: every phase has one (a `match` without a wildcard).
    pub const fn row(self) -> PhaseRow<ConvertSteps> {
        match self {
            ConvertPhase::Lock => PhaseRow {
                id: "lock",
                about: "take the run lock before the cluster is read; renew it while running",
                needs: &[LEASE],
                steps: |_| lock_steps(),
            },
            ConvertPhase::Preflight => PhaseRow {
                id: "preflight",
                about: "check the cluster and the options, decide each node's role, check \
                        permissions",
                needs: &[READ_NODES, JOURNAL],
                steps: preflight_steps,
            },
            ConvertPhase::PreflightNodes => PhaseRow {
                id: "preflight/nodes",
                about: "run node-servant preflight in a Job on every node to convert",
                needs: &[NODE_JOBS],
                steps: preflight_nodes_steps,
            },
            ConvertPhase::LabelNodes => PhaseRow {
                id: "label-nodes",
                about: "label the nodes edge or cloud (and their NodePool), annotate autonomy",
                needs: &[PATCH_NODES, JOURNAL],
                steps: label_nodes_steps,
            },
            ConvertPhase::Components => PhaseRow {
                id: "components",
                about: "apply the profile's components and the YurtHub bootstrap Secret",
                needs: &[APPLY_COMPONENTS, JOURNAL],
                steps: components_steps,
            },
            ConvertPhase::Kcm => PhaseRow {
                id: "kcm",
                about: "disable nodelifecycle in kube-controller-manager where the profile \
                        needs it",
                needs: &[NODE_JOBS, JOURNAL],
                steps: kcm_steps,
            },
            ConvertPhase::NodesEdge => PhaseRow {
                id: "nodes/edge",
                about: "convert the edge nodes, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Edge),
            },
            ConvertPhase::NodesCloud => PhaseRow {
                id: "nodes/cloud",
                about: "convert the cloud nodes, a Job each",
                needs: &[NODE_JOBS, JOURNAL],
                steps: |x| node_steps(x, Role::Cloud),
            },
            ConvertPhase::Verify => PhaseRow {
                id: "verify",
                about: "wait until every converted node is Ready",
                needs: &[READ_NODES],
                steps: verify_steps,
            },
        }
    }
}

/// Every (verb, group, resource, namespace) convert uses with `profile` and these options, for
/// the access check: what its phases need, and the kinds the profile adds (YurtStaticSets and
/// DaemonSets among the components, NodePools before the labels).
pub fn convert_access(profile: &Profile, opts: &ConvertOptions) -> Vec<Access<'static>> {
    let mut checks = phases::needs::<ConvertPhase>();
    if profile.yurthub.mode() == crate::render::YurtHubMode::YurtStaticSet {
        checks.push((
            "patch",
            "apps.openyurt.io",
            "yurtstaticsets",
            Some(SYSTEM_NAMESPACE),
        ));
    }
    if profile.node_pools.is_some() {
        checks.push(("patch", "apps.openyurt.io", "nodepools", None));
    }
    if profile
        .enabled_components(&opts.features)
        .flat_map(|c| &c.templates)
        .any(|t| {
            profile
                .template_text(t)
                .is_some_and(|x| x.contains("kind: DaemonSet"))
        })
    {
        checks.push(("patch", "apps", "daemonsets", Some(SYSTEM_NAMESPACE)));
    }
    checks
}

impl ConvertInputs<'_> {
    fn converting(&self) -> impl Iterator<Item = &NodeDecision> {
        self.nodes
            .iter()
            .filter(|n| n.action == NodeAction::Convert)
    }
}

fn preflight_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    let (snap, profile, warnings) = (x.snap, x.profile, x.warnings);
    let mut s = Vec::new();
    if !warnings.iter().any(|w| w.check == Check::KubernetesVersion) {
        s.push(Step::new(
            "check",
            "cluster",
            format!(
                "Kubernetes {} is supported by profile {}",
                snap.server_version, profile.name
            ),
        ));
    }
    // a supported but uncertified version is a warning of its own, not an ignored error
    let uncertified = server_minor(snap)
        .is_some_and(|m| profile.supports_minor(m) && m > profile.certified_max_minor());
    for w in warnings {
        let ignored = !(uncertified && w.check == Check::KubernetesVersion);
        s.push(Step::new(
            "warn",
            "cluster",
            if ignored {
                format!("{w} (ignored: --ignore-preflight-errors)")
            } else {
                w.to_string()
            },
        ));
    }
    for n in x.nodes {
        let detail = match n.action {
            NodeAction::Convert => format!("convert as {}", n.role),
            NodeAction::AlreadyConverted => format!("already converted ({})", n.role),
            NodeAction::SkipNotReady => format!("skip: NotReady ({})", n.role),
        };
        s.push(Step::new("check", format!("node/{}", n.name), detail));
    }
    s
}

fn preflight_nodes_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    x.converting()
        .filter(|n| !x.opts.skip_phases.contains(n.role.phase()))
        .map(|n| {
            Step::job(
                &n.name,
                &crate::cluster::jobs::job_name(PREFLIGHT_ACTION, &n.name),
                "node-servant preflight (changes nothing)",
            )
        })
        .collect()
}

fn label_nodes_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    let (profile, labels) = (x.profile, &x.profile.labels);
    x.converting()
        .map(|n| {
            let value = match n.role {
                Role::Edge => &labels.edge_worker.edge,
                Role::Cloud => &labels.edge_worker.cloud,
            };
            let mut d = format!("label {}={value}", labels.edge_worker.key);
            if let (Some(decl), Some(pool)) = (&profile.node_pools, &n.pool) {
                d.push_str(&format!(" and {}={pool}", decl.label));
            }
            if n.autonomous {
                d.push_str(&format!(
                    ", annotate {}={}",
                    labels.autonomy.key, labels.autonomy.value
                ));
            }
            Step::new("label", format!("node/{}", n.name), d)
        })
        .collect()
}

fn components_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    if x.converting().next().is_none() {
        return Vec::new();
    }
    let mut s: Vec<Step> = x
        .profile
        .enabled_components(&x.opts.features)
        .map(|c| Step::new("apply", c.id.clone(), c.templates.join(", ")))
        .collect();
    s.extend(plan_pools(x.nodes).into_iter().map(|(pool, role)| {
        Step::new(
            "apply",
            format!("nodepool/{pool}"),
            format!("NodePool {pool} (type {})", role.pool_type()),
        )
    }));
    s.push(Step::new(
        "apply",
        "yurthub-bootstrap",
        "Secret kube-system/yurtctl-yurthub-bootstrap (bootstrap-hub.conf)",
    ));
    s
}

fn kcm_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    x.kcm_nodes
        .iter()
        .flat_map(|n| {
            [
                Step::job(
                    n,
                    &crate::cluster::jobs::job_name(KCM_ACTION, n),
                    "node-servant disable-nodelifecycle",
                ),
                Step::new(
                    "files",
                    format!("node/{n}"),
                    format!(
                        "~ <static-pod dir>/{}: -nodelifecycle added to --controllers \
                         (that line only; backup in {})",
                        crate::servant::kcm::KCM_FILE,
                        crate::servant::journal::BACKUP_DIR
                    ),
                ),
            ]
        })
        .collect()
}

/// `nodes/edge`, `nodes/cloud`: a conversion Job per node of `role`.
fn node_steps(x: &ConvertInputs<'_>, role: Role) -> Vec<Step> {
    let (opts, profile) = (x.opts, x.profile);
    x.converting()
        .filter(|n| n.role == role)
        .flat_map(|n| {
            [
                Step::job(
                    &n.name,
                    &crate::cluster::jobs::job_name(CONVERT_ACTION, &n.name),
                    format!(
                        "node-servant convert, YurtHub from ConfigMap {} \
                         (timeout {}s, {} at a time)",
                        profile.yurthub.config_map(role.working_mode()),
                        opts.job_timeout.as_secs(),
                        opts.concurrency
                    ),
                ),
                Step::new(
                    "files",
                    format!("node/{}", n.name),
                    node_files(profile, restarts_workloads(opts, role)),
                ),
            ]
        })
        .collect()
}

fn verify_steps(x: &ConvertInputs<'_>) -> Vec<Step> {
    x.converting()
        .map(|n| Step::new("wait", format!("node/{}", n.name), "Ready"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_check_adds_what_the_profile_uses_to_the_phases_needs() {
        let pools = ("patch", "apps.openyurt.io", "nodepools", None);
        let v17 = Profile::load("openyurt-v1.7").unwrap();
        let with = convert_access(&v17, &ConvertOptions::default());
        assert!(with.starts_with(&phases::needs::<ConvertPhase>()));
        assert!(with.contains(&pools));
        let legacy = Profile::load("legacy-v0.6").unwrap();
        assert!(!convert_access(&legacy, &ConvertOptions::default()).contains(&pools));
    }
}
