//! `yurtctl node-servant …`: one function per subcommand over the pure `servant` library.
//!
//! Every subcommand plans first (nothing written if planning fails: exit 3), then applies
//! the plan file by file, logging each change on stderr. `--dry-run` stops after planning
//! and prints the plan. With `-o json` (and always for `preflight`) one result object is
//! printed on stdout as a single line, also when the command fails.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::node::{self, HostCommandError, YURTHUB_PORTS, YURTHUB_SERVER_PORT};
use crate::cli::{
    ConvertArgs, GlobalArgs, HostArgs, HubArgs, NodeServantCommand, OutputFormat, StaticPodArgs,
};
use crate::exit::Exit;
use crate::servant::edit::ChangeSummary;
use crate::servant::hostfs::HostFs;
use crate::servant::journal::OperationRecord;
use crate::servant::kubelet::{DEFAULT_KUBELET_KUBECONFIG, OPENYURT_KUBECONFIG};
use crate::servant::plan::CONVERT_OPERATION;
use crate::servant::runtime::KeepPods;
use crate::servant::yurthub::{HUB_BINARY, HUB_UNIT, HUB_UNIT_FILE};
use crate::servant::{
    self, Change, HubCredential, HubInstall, HubService, NodeChanges, NodeConvertOptions,
    PreflightReport, YurtHubOptions,
};

pub use crate::naming::API_VERSION;
pub const RESULT_KIND: &str = "NodeServantResult";

mod convert;
mod diagnose;
pub mod error;
mod host;
mod preflight;
mod pull;
mod revert;
pub mod upgrade;

pub use error::NodeServantError;

use convert::convert;
use diagnose::diagnose;
use host::*;
use preflight::preflight;
pub use pull::ImagePull;
use pull::{pull_images, pulled};
use revert::revert;
use upgrade::upgrade;

type Result<T, E = NodeServantError> = std::result::Result<T, E>;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub message: String,
    pub exit_code: u8,
    pub reason: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub message: String,
}

/// The result object printed on stdout (`-o json`, and always by `preflight`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServantResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub subcommand: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub host_root: String,
    pub dry_run: bool,
    pub ok: bool,
    /// Whether any file on the node was (or, with dry-run, would be) changed.
    pub changed: bool,
    /// The file changes made (or planned, with dry-run), in order.
    pub changes: Vec<ChangeSummary>,
    /// Commands run on the host (`systemctl daemon-reload`, `systemctl restart kubelet`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_commands: Vec<String>,
    /// Containers stopped for the kubelet to start again (`namespace/pod/container`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restarted_containers: Vec<String>,
    /// The kubelet's --kubeconfig afterwards (convert, revert); after a change, the running
    /// process was seen to use it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_kubeconfig: Option<String>,
    /// upgrade: how long YurtHub's address (127.0.0.1:10261) went unserved while the old
    /// YurtHub gave way to the new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_unavailable_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightReport>,
    /// diagnose: what the node's files, processes and YurtHub's port say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_facts: Option<servant::facts::NodeFacts>,
    /// pull-images: each image, pulled or why not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pulls: Vec<ImagePull>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl ServantResult {
    fn new(subcommand: &'static str, host_root: &Path, dry_run: bool) -> Self {
        ServantResult {
            header: crate::naming::ResultHeader::of(RESULT_KIND),
            subcommand,
            node: None,
            host_root: host_root.display().to_string(),
            dry_run,
            ok: false,
            changed: false,
            changes: Vec::new(),
            host_commands: Vec::new(),
            restarted_containers: Vec::new(),
            kubelet_kubeconfig: None,
            yurthub_unavailable_seconds: None,
            checks: Vec::new(),
            preflight: None,
            node_facts: None,
            image_pulls: Vec::new(),
            message: String::new(),
            error: None,
        }
    }
}

fn host_of(cmd: &NodeServantCommand) -> (&'static str, &HostArgs) {
    match cmd {
        NodeServantCommand::Preflight { host, .. } => ("preflight", host),
        NodeServantCommand::Diagnose { host, .. } => ("diagnose", host),
        NodeServantCommand::PullImages { host, .. } => ("pull-images", host),
        NodeServantCommand::Convert(a) => ("convert", &a.hub.host),
        NodeServantCommand::Upgrade(a) => ("upgrade", &a.host),
        NodeServantCommand::Revert { host, .. } => ("revert", host),
        NodeServantCommand::DisableNodelifecycle { host } => ("disable-nodelifecycle", host),
        NodeServantCommand::EnableNodelifecycle { host } => ("enable-nodelifecycle", host),
        NodeServantCommand::StaticPodUpgrade(a) => ("static-pod-upgrade", &a.host),
    }
}

/// Runs one node-servant subcommand; prints the result; returns the exit code.
pub fn run(global: &GlobalArgs, cmd: NodeServantCommand) -> Exit {
    let dry_run = global.dry_run.enabled();
    let (name, host) = host_of(&cmd);
    let mut r = ServantResult::new(name, &host.host_root, dry_run);
    let json = match global.output {
        None => matches!(name, "preflight" | "diagnose" | "pull-images"),
        Some(OutputFormat::Json) => true,
        Some(other) => {
            let e = NodeServantError::Output {
                format: format!("{other:?}").to_lowercase(),
            };
            tracing::error!("{e}");
            return crate::app::error::servant_exit(&e);
        }
    };
    tracing::debug!("node-servant {name} on host root {}", r.host_root);
    let res = match cmd {
        NodeServantCommand::Preflight {
            host,
            yurthub_node_ip_ports,
            pull_images,
            pull_timeout,
        } => preflight(
            &mut r,
            &host.host_root,
            &yurthub_node_ip_ports,
            &pull_images,
            pull_timeout,
        ),
        NodeServantCommand::Diagnose {
            host,
            yurthub_ready_path,
        } => diagnose(&mut r, &host.host_root, &yurthub_ready_path),
        NodeServantCommand::PullImages {
            host,
            images,
            pull_timeout,
        } => pull_images(&mut r, &host.host_root, &images, pull_timeout),
        NodeServantCommand::Convert(a) => convert(&mut r, &a, dry_run),
        NodeServantCommand::Upgrade(a) => upgrade(&mut r, &a, dry_run),
        NodeServantCommand::Revert {
            host,
            kubelet_restart_timeout,
            skip_workload_restart,
        } => revert(
            &mut r,
            &host.host_root,
            kubelet_restart_timeout,
            !skip_workload_restart,
            dry_run,
        ),
        NodeServantCommand::DisableNodelifecycle { host } => simple(
            &mut r,
            &host.host_root,
            dry_run,
            servant::disable_nodelifecycle,
            "kube-controller-manager's nodelifecycle controller disabled",
            "nothing to do: the nodelifecycle controller is already disabled in kube-controller-manager's manifest",
        ),
        NodeServantCommand::EnableNodelifecycle { host } => simple(
            &mut r,
            &host.host_root,
            dry_run,
            servant::enable_nodelifecycle,
            "kube-controller-manager's manifest restored (nodelifecycle enabled as before)",
            "nothing to do: yurtctl has no record of disabling the nodelifecycle controller on this node",
        ),
        NodeServantCommand::StaticPodUpgrade(a) => static_pod(&mut r, &a, dry_run),
    };
    let exit = match &res {
        Ok(()) => {
            r.ok = true;
            tracing::info!("{}", r.message);
            Exit::Ok
        }
        Err(e) => {
            let exit = crate::app::error::servant_exit(e);
            tracing::error!("{e}");
            r.message = e.to_string();
            r.error = Some(ErrorBody {
                message: e.to_string(),
                exit_code: exit.code(),
                reason: exit.reason(),
            });
            exit
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string(&r).expect("the result serialises")
        );
    } else if dry_run {
        for c in &r.changes {
            println!("{}\t{}", c.action, c.path);
        }
    }
    exit
}

/// Planning, before anything is written: a failure changed nothing.
fn plan<T>(res: servant::Result<T>) -> Result<T> {
    res.map_err(NodeServantError::Plan)
}

/// A read once the node was changed (the kubelet restarted): a failure says how it is left.
fn after_changes<T>(res: servant::Result<T>, state: &str) -> Result<T> {
    res.map_err(|source| NodeServantError::AfterChanges {
        source,
        state: state.into(),
    })
}

/// The kubelet's effective --kubeconfig as the unit files say now.
fn effective_kubeconfig(root: &Path) -> servant::Result<Option<String>> {
    let fs = HostFs::new(root)?;
    Ok(servant::kubelet::effective_argv(&fs)?.flag_value("kubeconfig"))
}

fn record_plan(r: &mut ServantResult, changes: &NodeChanges) {
    for s in changes.summary() {
        tracing::info!("would {} {}", s.action, s.path);
        r.changes.push(s);
    }
    r.changed |= !changes.is_empty();
}

/// Writes `changes` one by one, logging each. A failure says how far it got and `next`.
fn apply(r: &mut ServantResult, root: &Path, changes: &NodeChanges, next: &str) -> Result<()> {
    let total = changes.len();
    for (done, (c, s)) in changes.changes.iter().zip(changes.summary()).enumerate() {
        let one = NodeChanges {
            changes: vec![c.clone()],
        };
        servant::apply(root, &one).map_err(|source| NodeServantError::Apply {
            source,
            done,
            total,
            next: next.to_owned(),
        })?;
        tracing::info!("{} {}", s.action, s.path);
        r.changes.push(s);
        r.changed = true;
    }
    Ok(())
}

/// Root, to restart the kubelet; the host's PID namespace, to see what the kubelet runs with.
fn require_host_access(subcommand: &'static str) -> Result<()> {
    match node::euid() {
        Some(0) => {}
        other => {
            return Err(NodeServantError::NotRoot {
                subcommand,
                euid: other.map_or("unknown".into(), |u| u.to_string()),
            });
        }
    }
    // PID 1 is the node's init in the host's namespace; being PID 1 means a namespace of our own
    if std::process::id() == 1 {
        return Err(NodeServantError::OwnPidNamespace { subcommand });
    }
    Ok(())
}

fn simple(
    r: &mut ServantResult,
    root: &Path,
    dry_run: bool,
    planner: fn(&Path) -> servant::Result<NodeChanges>,
    done: &str,
    nothing: &str,
) -> Result<()> {
    let changes = plan(planner(root))?;
    finish_changes(r, root, &changes, dry_run, nothing.into(), done)
}

/// The shared tail of the file-editing subcommands: nothing to do, a dry run, or apply.
fn finish_changes(
    r: &mut ServantResult,
    root: &Path,
    changes: &NodeChanges,
    dry_run: bool,
    nothing: String,
    done: &str,
) -> Result<()> {
    if changes.is_empty() {
        r.message = nothing;
        return Ok(());
    }
    if dry_run {
        record_plan(r, changes);
        r.message = format!(
            "dry run: {} file changes planned; nothing was written",
            changes.len()
        );
        return Ok(());
    }
    apply(r, root, changes, "Fix the cause and re-run this command")?;
    r.message = format!("{done} ({} changes)", r.changes.len());
    Ok(())
}

fn static_pod(r: &mut ServantResult, a: &StaticPodArgs, dry_run: bool) -> Result<()> {
    let root = a.host.host_root.as_path();
    let changes = match &a.manifest_file {
        Some(f) if !a.restore => {
            let bytes = std::fs::read(f).map_err(|e| NodeServantError::Input {
                what: "--manifest-file",
                path: f.display().to_string(),
                reason: format!("cannot read it: {e}"),
            })?;
            plan(servant::static_pod_upgrade(root, &a.name, &bytes))?
        }
        _ => plan(servant::static_pod_restore(root, &a.name))?,
    };
    let (nothing, done) = if a.restore {
        (
            format!(
                "nothing to do: no upgrade of static pod {} is recorded on this node",
                a.name
            ),
            format!("static pod {} manifest restored", a.name),
        )
    } else {
        (
            format!(
                "nothing to do: the manifest of static pod {} is already this one",
                a.name
            ),
            format!("static pod {} manifest installed", a.name),
        )
    };
    finish_changes(r, root, &changes, dry_run, nothing, &done)
}
