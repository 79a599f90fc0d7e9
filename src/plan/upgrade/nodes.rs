//! What an upgrade does on each node: its files, and kube-controller-manager's flags.

use serde::Serialize;

use super::Route;
use crate::render::{Profile, YurtHubCredential, YurtHubDecl};
use crate::servant::kcm::KCM_FILE;
use crate::servant::kubelet::OPENYURT_KUBECONFIG;
use crate::servant::yurthub::{
    BOOTSTRAP_FILE, HUB_BINARY, HUB_CACHE_DIR, HUB_DIR, HUB_DROP_IN_FILE, HUB_UNIT_FILE,
    JOIN_TOKEN_FILE,
};

/// What happens to one file (or directory) on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    Create,
    Replace,
    Delete,
    Keep,
}

impl FileAction {
    /// The plan's mark: `+`, `~`, `-` or `=`.
    pub fn mark(self) -> char {
        match self {
            FileAction::Create => '+',
            FileAction::Replace => '~',
            FileAction::Delete => '-',
            FileAction::Keep => '=',
        }
    }
}

/// One file of a node and what the upgrade does to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFile {
    /// The host path; a static pod's as `<static-pod dir>/NAME` (the kubelet's flag decides).
    pub path: String,
    pub action: FileAction,
    pub why: String,
}

/// The static-pod directory, as the plan names it (each node's kubelet decides where it is).
pub const STATIC_POD_DIR: &str = "<static-pod dir>";

fn credential_path(c: YurtHubCredential) -> &'static str {
    match c {
        YurtHubCredential::BootstrapFile => BOOTSTRAP_FILE,
        YurtHubCredential::JoinToken => JOIN_TOKEN_FILE,
    }
}

fn file(path: impl Into<String>, action: FileAction, why: impl Into<String>) -> NodeFile {
    NodeFile {
        path: path.into(),
        action,
        why: why.into(),
    }
}

/// The files the upgrade changes and keeps on every converted node, from how the two
/// profiles run YurtHub: a static pod's manifest gives way to the systemd service's binary,
/// unit and drop-in (or is replaced, or the binary is), the credential follows the target's
/// kind, and YurtHub's certificates, its cache and the kubelet's redirect stay.
pub fn node_files(from: &Profile, to: &Profile, route: &Route) -> Vec<NodeFile> {
    use FileAction::*;
    let hub = format!("YurtHub {}", route.to.openyurt_version);
    let mut out = Vec::new();
    match (&from.yurthub, &to.yurthub) {
        (
            YurtHubDecl::StaticPod(a) | YurtHubDecl::YurtStaticSet(a),
            YurtHubDecl::StaticPod(b) | YurtHubDecl::YurtStaticSet(b),
        ) => {
            let old = format!("{STATIC_POD_DIR}/{}", a.manifest_file);
            let new = format!("{STATIC_POD_DIR}/{}", b.manifest_file);
            if old == new {
                out.push(file(new, Replace, format!("the {hub} static pod")));
            } else {
                out.push(file(old, Delete, "the old YurtHub static pod"));
                out.push(file(new, Create, format!("the {hub} static pod")));
            }
        }
        (YurtHubDecl::StaticPod(a) | YurtHubDecl::YurtStaticSet(a), YurtHubDecl::Systemd(_)) => {
            out.push(file(
                format!("{STATIC_POD_DIR}/{}", a.manifest_file),
                Delete,
                "the YurtHub static pod, stopped just before the service starts",
            ));
            out.push(file(HUB_BINARY, Create, format!("the {hub} binary")));
            out.push(file(
                HUB_UNIT_FILE,
                Create,
                "YurtHub's systemd unit, enabled",
            ));
            out.push(file(HUB_DROP_IN_FILE, Create, "its flags (drop-in)"));
        }
        (YurtHubDecl::Systemd(_), YurtHubDecl::Systemd(_)) => {
            out.push(file(HUB_BINARY, Replace, format!("the {hub} binary")));
            out.push(file(HUB_UNIT_FILE, Replace, "when the unit changed"));
            out.push(file(HUB_DROP_IN_FILE, Replace, "when the flags changed"));
        }
        // only a rollback moves YurtHub from the service back into a static pod
        (YurtHubDecl::Systemd(_), YurtHubDecl::StaticPod(b) | YurtHubDecl::YurtStaticSet(b)) => {
            out.push(file(
                HUB_UNIT_FILE,
                Delete,
                "YurtHub's systemd unit, stopped and disabled first",
            ));
            out.push(file(HUB_DROP_IN_FILE, Delete, "its flags (drop-in)"));
            out.push(file(HUB_BINARY, Delete, "the YurtHub binary"));
            out.push(file(
                format!("{STATIC_POD_DIR}/{}", b.manifest_file),
                Create,
                format!("the {hub} static pod, once the service has stopped"),
            ));
        }
    }
    let (ca, cb) = (from.yurthub.credential(), to.yurthub.credential());
    if ca != cb {
        out.push(file(
            credential_path(ca),
            Delete,
            "the old bootstrap credential",
        ));
        out.push(file(
            credential_path(cb),
            Create,
            "YurtHub's bootstrap credential (used only when its certificate is missing)",
        ));
    }
    out.push(file(
        HUB_DIR,
        Keep,
        "YurtHub's client certificate and state",
    ));
    out.push(file(
        HUB_CACHE_DIR,
        Keep,
        "YurtHub's cache of the API objects",
    ));
    out.push(file(
        OPENYURT_KUBECONFIG,
        Keep,
        "the kubelet's kubeconfig through YurtHub (127.0.0.1:10261 in both releases)",
    ));
    out
}

/// What happens to kube-controller-manager's `nodelifecycle` controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KcmChange {
    /// The target needs it off and the cluster's profile left it on.
    Disable,
    /// The cluster's profile turned it off and the target does not need that: convert's edit
    /// is undone (before the old profile's replacement controller goes, so some controller
    /// always watches the nodes).
    Enable,
}

impl KcmChange {
    pub fn of(from: &Profile, to: &Profile) -> Option<KcmChange> {
        KcmChange::between(from.disable_node_lifecycle, to.disable_node_lifecycle)
    }

    /// The change from nodelifecycle off (`before`) or on, to off (`after`) or on.
    pub fn between(before: bool, after: bool) -> Option<KcmChange> {
        match (before, after) {
            (false, true) => Some(KcmChange::Disable),
            (true, false) => Some(KcmChange::Enable),
            _ => None,
        }
    }

    /// The plan's line for it.
    pub fn describe(self) -> String {
        match self {
            KcmChange::Disable => {
                format!("~ {STATIC_POD_DIR}/{KCM_FILE}: -nodelifecycle added to --controllers")
            }
            KcmChange::Enable => format!(
                "~ {STATIC_POD_DIR}/{KCM_FILE}: convert's -nodelifecycle taken out of \
                 --controllers"
            ),
        }
    }
}
