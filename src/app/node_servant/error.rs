//! node-servant's error: what went wrong on the node and what was left changed. A leaf: the
//! exit code each one gives is decided in `app::error`.

use std::time::Duration;

use crate::app::node::HostCommandError;
use crate::servant::ServantError;

#[derive(Debug, thiserror::Error)]
pub enum NodeServantError {
    /// Planning failed: nothing was written.
    #[error("{0}; nothing was changed")]
    Plan(ServantError),

    #[error("{what} {path}: {reason}; nothing was changed")]
    Input {
        what: &'static str,
        path: String,
        reason: String,
    },

    #[error(
        "node-servant {subcommand} must run as root to restart the kubelet through nsenter (effective uid {euid}); run the Job privileged as user 0; nothing was changed"
    )]
    NotRoot {
        subcommand: &'static str,
        euid: String,
    },

    #[error(
        "node-servant {subcommand} runs as PID 1 of a PID namespace of its own, so it cannot see the node's kubelet process and what it runs with; run the Job with hostPID: true, as yurtctl's Jobs do; nothing was changed"
    )]
    OwnPidNamespace { subcommand: &'static str },

    #[error("-o {format}: node-servant prints its result only as JSON; use -o json or no -o")]
    Output { format: String },

    #[error("preflight failed on this node: {}; nothing was changed", failed.join("; "))]
    PreflightFailed { failed: Vec<String> },

    #[error("{source}; {done} of {total} planned file changes were written before this. {next}")]
    Apply {
        #[source]
        source: ServantError,
        done: usize,
        total: usize,
        next: String,
    },

    #[error(
        "YurtHub on node {node} did not report ready within {waited:?} ({last}). The kubelet was NOT redirected: it still uses {kubeconfig}. {left}, then re-run convert, or run revert to remove it"
    )]
    HubTimeout {
        node: String,
        waited: Duration,
        /// The last answer, with the endpoint waited on (the profile's).
        last: String,
        kubeconfig: String,
        /// What stays on the node (the manifest or the service) and how to look at it.
        left: String,
    },

    /// An upgrade's switch of YurtHubs stalled: the old one kept its port, or the new one did
    /// not report ready. The kubelet's kubeconfig was not touched.
    #[error(
        "YurtHub on node {node}: {what} within {waited:?} ({last}). The kubelet still points at YurtHub's address, which nothing may serve now. {left}, then re-run the upgrade, or roll it back"
    )]
    HubSwitch {
        node: String,
        what: &'static str,
        waited: Duration,
        last: String,
        left: String,
    },

    #[error("{context}: {source}")]
    Host {
        context: String,
        #[source]
        source: HostCommandError,
    },

    #[error("{0}")]
    Verify(String),

    /// The kubelet talks through YurtHub, but not by yurtctl's doing.
    #[error(
        "the kubelet talks through YurtHub (--kubeconfig={kubeconfig}, {from}), but yurtctl has no record of putting it there: another tool converted this node (yurtadm join, or yurt-manager's node-conversion controller running upstream's node-servant). yurtctl reverts only what it converted: revert this node with that tool first, or leave it out of this revert (yurtctl revert --nodes with the other nodes); nothing was changed"
    )]
    ConvertedByOther { kubeconfig: String, from: String },

    /// Reading the node failed after this run had changed it (`state` says how it is left).
    #[error("{source}; {state}")]
    AfterChanges {
        #[source]
        source: ServantError,
        state: String,
    },
}
