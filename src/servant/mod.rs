//! The node-side half of yurtctl: pure file edits on a host root.
//!
//! Everything here takes the node's `/` as a directory (`host_root`), computes changes in
//! memory first and writes them atomically only in [`plan::apply`]. Nothing spawns
//! processes or talks to the network; the hidden `node-servant` subcommand wraps it.

pub mod error;
pub mod hostfs;
pub mod systemd;

pub use error::{Result, ServantError};
pub mod edit;
pub mod facts;
pub mod journal;
pub mod kcm;
pub mod kubeconfig;
pub mod kubelet;
pub mod plan;
pub mod runtime;
pub mod staticpod;
pub mod yurthub;

pub use edit::{Change, NodeChanges, apply};
pub use kcm::{disable_nodelifecycle, enable_nodelifecycle};
pub use plan::{
    NodeConvertOptions, PreflightReport, convert, preflight, recorded_hub_service, revert, upgrade,
};
pub use staticpod::{static_pod_restore, static_pod_upgrade};
pub use yurthub::{HubCredential, HubInstall, HubService, WorkingMode, YurtHubOptions};
