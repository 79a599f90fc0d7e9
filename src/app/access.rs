//! What each command needs to be allowed to do, checked before it changes anything
//! (SelfSubjectAccessReviews through `cluster::access`).

use crate::cluster::SYSTEM_NAMESPACE;
use crate::cluster::access::Access;

const NS: Option<&str> = Some(SYSTEM_NAMESPACE);

/// Every run of convert or revert: nodes, node Jobs and their diagnostics, the lock.
const RUN: &[Access<'static>] = &[
    ("list", "", "nodes", None),
    ("watch", "", "nodes", None),
    ("patch", "", "nodes", None),
    ("create", "batch", "jobs", NS),
    ("delete", "batch", "jobs", NS),
    ("deletecollection", "batch", "jobs", NS),
    ("list", "batch", "jobs", NS),
    ("watch", "batch", "jobs", NS),
    ("list", "", "pods", NS),
    ("list", "", "events", NS),
    ("get", "coordination.k8s.io", "leases", NS),
    ("create", "coordination.k8s.io", "leases", NS),
    ("update", "coordination.k8s.io", "leases", NS),
    ("delete", "coordination.k8s.io", "leases", NS),
];

/// What convert uses whatever the profile, besides [`RUN`].
const CONVERT: &[Access<'static>] = &[
    ("get", "", "configmaps", Some("kube-public")),
    ("get", "", "configmaps", NS),
    ("list", "", "configmaps", NS),
    ("create", "", "configmaps", NS),
    ("update", "", "configmaps", NS),
    ("patch", "", "configmaps", NS),
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

/// What revert uses whatever it deletes, besides [`RUN`] (the journal).
const REVERT: &[Access<'static>] = &[
    ("get", "", "configmaps", NS),
    ("list", "", "configmaps", NS),
    ("create", "", "configmaps", NS),
    ("update", "", "configmaps", NS),
    ("patch", "", "configmaps", NS),
    ("delete", "", "configmaps", NS),
];

/// Convert's fixed permissions; the profile adds its own.
pub fn convert() -> Vec<Access<'static>> {
    [RUN, CONVERT].concat()
}

/// Revert's fixed permissions; the objects it deletes add theirs.
pub fn revert() -> Vec<Access<'static>> {
    [RUN, REVERT].concat()
}
