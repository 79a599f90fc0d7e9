//! A command's phases as one table (kubeadm's workflow): one [`PhaseRow`] per phase — its id,
//! what it does, the permissions it needs and the function that plans its steps — in run
//! order. Every walk comes from the table: the plan ([`plan_phases`]), `--skip-phases` and its
//! help ([`parse`], [`id_list`]) and the access check ([`needs`]). The executor runs the same
//! phases from a table of its own keyed by the same enum (`app::convert::phases`,
//! `app::revert::phases`), a `match` without a wildcard: a phase added to the enum does not
//! compile until the planner's row and the executor's row are both written.

use std::collections::BTreeSet;

use super::{Phase, Step};
use crate::cluster::SYSTEM_NAMESPACE;
pub use crate::cluster::access::Access;

/// One phase: what the planner and every walk of the table know of it.
#[derive(Clone, Copy)]
pub struct PhaseRow<S> {
    /// The stable id: `--skip-phases`, messages, the plan, the journal. Never changes.
    pub id: &'static str,
    /// What the phase does, in a line.
    pub about: &'static str,
    /// The permissions it needs, in groups (checked before anything changes).
    pub needs: &'static [&'static [Access<'static>]],
    /// Plans its steps (PURE).
    pub steps: S,
}

/// A command's phase enum: every phase in run order and the row of each.
pub trait PhaseId: Copy + Eq + std::fmt::Debug + 'static {
    /// The planner's step function of this command.
    type Steps: Copy;
    /// Every phase, in run order.
    fn all() -> &'static [Self];
    fn row(self) -> PhaseRow<Self::Steps>;
}

/// Declares a command's phase enum, in run order, with `ALL` (the same order), `COUNT`, `IDS`
/// and `id`, from one list, so no phase can be left out of any of them; `row` (a `const fn`
/// with a `match`) is the command's.
macro_rules! phase_enum {
    ($(#[$m:meta])* $name:ident, steps: $steps:ty { $($(#[$vm:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl $name {
            pub const COUNT: usize = [$(stringify!($variant)),+].len();
            /// Every phase, in run order.
            pub const ALL: [Self; Self::COUNT] = [$(Self::$variant),+];
            /// Their ids, in run order.
            pub const IDS: [&'static str; Self::COUNT] = {
                let mut ids = [""; Self::COUNT];
                let mut i = 0;
                while i < Self::COUNT {
                    ids[i] = Self::ALL[i].id();
                    i += 1;
                }
                ids
            };

            /// The stable id (`--skip-phases`, messages, the plan, the journal).
            pub const fn id(self) -> &'static str {
                self.row().id
            }
        }

        impl $crate::plan::phases::PhaseId for $name {
            type Steps = $steps;
            fn all() -> &'static [Self] {
                &Self::ALL
            }
            fn row(self) -> $crate::plan::phases::PhaseRow<$steps> {
                $name::row(self)
            }
        }
    };
}
pub(crate) use phase_enum;

/// The ids in run order, comma-separated (help text, errors).
pub fn id_list<P: PhaseId>() -> String {
    let ids: Vec<&str> = P::all().iter().map(|p| p.row().id).collect();
    ids.join(", ")
}

/// The phase `id` names, or why none does (a `--skip-phases` value).
pub fn parse<P: PhaseId>(id: &str) -> Result<P, String> {
    P::all()
        .iter()
        .copied()
        .find(|p| p.row().id == id)
        .ok_or_else(|| format!("unknown phase {id:?}; phases are {}", id_list::<P>()))
}

/// Every permission of every phase, each once, in run order (the access check asks them all,
/// whichever phases are skipped).
pub fn needs<P: PhaseId>() -> Vec<Access<'static>> {
    let mut seen = BTreeSet::new();
    P::all()
        .iter()
        .flat_map(|p| p.row().needs.iter().copied().flatten().copied())
        .filter(|a| seen.insert(*a))
        .collect()
}

/// The plan's phases: every phase in run order, marked skipped as `skip` says, with the steps
/// `plan` gives its row's step function.
pub fn plan_phases<P: PhaseId>(
    skip: &BTreeSet<String>,
    plan: impl Fn(P::Steps) -> Vec<Step>,
) -> Vec<Phase> {
    P::all()
        .iter()
        .map(|p| {
            let row = p.row();
            Phase {
                id: row.id.to_string(),
                skipped: skip.contains(row.id),
                steps: plan(row.steps),
            }
        })
        .collect()
}

const NS: Option<&str> = Some(SYSTEM_NAMESPACE);

/// The run lock, Lease `kube-system/yurtctl-lock`: taken, renewed, taken over when stale,
/// released.
pub const LEASE: &[Access<'static>] = &[
    ("get", "coordination.k8s.io", "leases", NS),
    ("create", "coordination.k8s.io", "leases", NS),
    ("update", "coordination.k8s.io", "leases", NS),
    ("delete", "coordination.k8s.io", "leases", NS),
];

/// The nodes the run decides about, and their watch (Ready).
pub const READ_NODES: &[Access<'static>] =
    &[("list", "", "nodes", None), ("watch", "", "nodes", None)];

/// yurtctl's labels and annotations on nodes (server-side apply).
pub const PATCH_NODES: &[Access<'static>] = &[("patch", "", "nodes", None)];

/// Node Jobs: created, watched through one label-selected watch, succeeded ones deleted in
/// batches, a failed one's pod logs and events read.
pub const NODE_JOBS: &[Access<'static>] = &[
    ("create", "batch", "jobs", NS),
    ("delete", "batch", "jobs", NS),
    ("deletecollection", "batch", "jobs", NS),
    ("list", "batch", "jobs", NS),
    ("watch", "batch", "jobs", NS),
    ("list", "", "pods", NS),
    ("list", "", "events", NS),
];

/// The journal: ConfigMap `kube-system/yurtctl-state` and its node shards.
pub const JOURNAL: &[Access<'static>] = &[
    ("get", "", "configmaps", NS),
    ("list", "", "configmaps", NS),
    ("create", "", "configmaps", NS),
    ("update", "", "configmaps", NS),
    ("patch", "", "configmaps", NS),
];

/// YurtHub's certificate requests, deleted by a complete revert (cluster-scoped).
pub const CSRS: &[Access<'static>] = &[
    (
        "list",
        "certificates.k8s.io",
        "certificatesigningrequests",
        None,
    ),
    (
        "delete",
        "certificates.k8s.io",
        "certificatesigningrequests",
        None,
    ),
];

/// The journal deleted at the end of a complete revert.
pub const JOURNAL_DELETE: &[Access<'static>] = &[("delete", "", "configmaps", NS)];

/// What convert applies whatever the profile (the profile adds its own kinds).
pub const APPLY_COMPONENTS: &[Access<'static>] = &[
    ("get", "", "configmaps", Some("kube-public")),
    ("get", "", "secrets", NS),
    ("patch", "", "secrets", NS),
    ("patch", "", "serviceaccounts", NS),
    ("patch", "", "services", NS),
    ("patch", "apps", "deployments", NS),
    ("watch", "apps", "deployments", NS),
    (
        "patch",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    ),
    ("patch", "rbac.authorization.k8s.io", "clusterroles", None),
    (
        "patch",
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
    ),
    ("patch", "rbac.authorization.k8s.io", "roles", NS),
    ("patch", "rbac.authorization.k8s.io", "rolebindings", NS),
    (
        "patch",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        None,
    ),
    (
        "patch",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
    ),
];

/// The lock's step, the same in convert and revert.
pub(super) fn lock_steps() -> Vec<Step> {
    vec![Step::new(
        "lock",
        "lease/kube-system/yurtctl-lock",
        "taken before the cluster is read, renewed while running",
    )]
}
