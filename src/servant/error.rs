//! Typed errors of the node-side servant. Every message names the file (host path, as seen
//! on the node), says what is wrong, and what the operator can do about it.

use std::path::PathBuf;

/// Result alias for the servant.
pub type Result<T, E = ServantError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ServantError {
    #[error(
        "host root {path} is not a directory: {reason}; pass the directory where the node's / is mounted (e.g. --host-root /host)"
    )]
    HostRoot { path: PathBuf, reason: String },

    #[error("{path}: cannot {op}: {source}; check that the host root is mounted read-write")]
    Io {
        path: String,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error("{path}: path leaves the host root; refusing to follow it (check the symlink)")]
    EscapesRoot { path: String },

    #[error("invalid name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },

    #[error(
        "unit {unit} not found in any systemd unit directory under the host root; is the kubelet installed with systemd on this node?"
    )]
    UnitNotFound { unit: String },

    #[error(
        "unit {unit} is masked by {path}; unmask it (systemctl unmask {unit}) before converting"
    )]
    UnitMasked { unit: String, path: String },

    #[error("{path}:{line}: {message}; fix the unit file, then run `systemctl daemon-reload`")]
    UnitSyntax {
        path: String,
        line: usize,
        message: String,
    },

    #[error(
        "unit {unit} has no usable ExecStart= (after resets, {count} commands); the kubelet unit must start exactly one command"
    )]
    ExecStart { unit: String, count: usize },

    #[error(
        "unit {unit}: EnvironmentFile={path} cannot be read: {reason}; create it or mark it optional with '-'"
    )]
    EnvironmentFile {
        unit: String,
        path: String,
        reason: String,
    },

    #[error("{path}: invalid YAML: {message}")]
    Yaml { path: String, message: String },

    #[error("{path}: {message}")]
    Kubeconfig { path: String, message: String },

    #[error("{path}: {message}")]
    KubeletConfig { path: String, message: String },

    #[error("cannot read the output of `{command}`: {message}")]
    RuntimeOutput { command: String, message: String },

    #[error(
        "the kubelet's effective flags do not allow a redirect: {message}; edit the kubelet unit by hand or report the layout"
    )]
    Redirect { message: String },

    #[error("{path}: {message}")]
    Manifest { path: String, message: String },

    #[error(
        "{path}: cannot revert our edit: {message}; nothing was written. Restore the file from {backup} by hand if needed"
    )]
    RevertConflict {
        path: String,
        backup: String,
        message: String,
    },

    #[error("{path}: backup record is unusable: {message}; inspect or remove it by hand")]
    OperationRecord { path: String, message: String },

    #[error("{path}: {message}")]
    Credential { path: String, message: String },

    #[error("{path}: {message}")]
    Conflict { path: String, message: String },
}

impl ServantError {
    pub(crate) fn io(path: impl Into<String>, op: &'static str, source: std::io::Error) -> Self {
        ServantError::Io {
            path: path.into(),
            op,
            source,
        }
    }
}
