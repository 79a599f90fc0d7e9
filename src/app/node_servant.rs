//! `yurtctl node-servant …`: one function per subcommand over the pure `servant` library.
//!
//! Every subcommand plans first (nothing written if planning fails: exit 3), then applies
//! the plan file by file, logging each change on stderr. `--dry-run` stops after planning
//! and prints the plan. With `-o json` (and always for `preflight`) one result object is
//! printed on stdout as a single line, also when the command fails.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::node::{
    self, HostCommandError, YURTHUB_PORTS, YURTHUB_READYZ_PATH, YURTHUB_SERVER_PORT,
};
use crate::cli::{
    ConvertArgs, GlobalArgs, HostArgs, NodeServantCommand, OutputFormat, StaticPodArgs,
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
    PreflightReport, ServantError, YurtHubOptions,
};

pub use crate::naming::API_VERSION;
pub const RESULT_KIND: &str = "NodeServantResult";

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
        "YurtHub on node {node} did not report ready within {waited:?} (GET http://127.0.0.1:{YURTHUB_SERVER_PORT}{YURTHUB_READYZ_PATH}: {last}). The kubelet was NOT redirected: it still uses {kubeconfig}. {left}, then re-run convert, or run revert to remove it"
    )]
    HubTimeout {
        node: String,
        waited: Duration,
        last: String,
        kubeconfig: String,
        /// What stays on the node (the manifest or the service) and how to look at it.
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
}

impl NodeServantError {
    pub fn exit(&self) -> Exit {
        use crate::app::node::HostCommandError;
        use NodeServantError as E;
        match self {
            E::Output { .. } => Exit::Usage,
            E::Plan(_)
            | E::Input { .. }
            | E::NotRoot { .. }
            | E::OwnPidNamespace { .. }
            | E::PreflightFailed { .. } => Exit::Preflight,
            E::HubTimeout { .. }
            | E::Host {
                source: HostCommandError::Timeout { .. },
                ..
            } => Exit::Timeout,
            E::Apply { .. } | E::Host { .. } | E::Verify(_) => Exit::Unexpected,
        }
    }
}

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
    pub api_version: &'static str,
    pub kind: &'static str,
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightReport>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl ServantResult {
    fn new(subcommand: &'static str, host_root: &Path, dry_run: bool) -> Self {
        ServantResult {
            api_version: API_VERSION,
            kind: RESULT_KIND,
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
            checks: Vec::new(),
            preflight: None,
            message: String::new(),
            error: None,
        }
    }
}

fn host_of(cmd: &NodeServantCommand) -> (&'static str, &HostArgs) {
    match cmd {
        NodeServantCommand::Preflight { host } => ("preflight", host),
        NodeServantCommand::Convert(a) => ("convert", &a.host),
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
        None => name == "preflight",
        Some(OutputFormat::Json) => true,
        Some(other) => {
            let e = NodeServantError::Output {
                format: format!("{other:?}").to_lowercase(),
            };
            tracing::error!("{e}");
            return e.exit();
        }
    };
    tracing::debug!("node-servant {name} on host root {}", r.host_root);
    let res = match cmd {
        NodeServantCommand::Preflight { host } => preflight(&mut r, &host.host_root),
        NodeServantCommand::Convert(a) => convert(&mut r, &a, dry_run),
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
            let exit = e.exit();
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

fn plan<T>(res: servant::Result<T>) -> Result<T> {
    res.map_err(NodeServantError::Plan)
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

/// Loads the YurtHub unit, enables it (it starts at boot) and starts it; restarts it when
/// this run changed its files, so a running hub picks them up.
fn start_hub_service(r: &mut ServantResult, timeout: Duration, changed: bool) -> Result<()> {
    let start = if changed { "restart" } else { "start" };
    host_commands(
        r,
        &[
            &["daemon-reload"],
            &["enable", HUB_UNIT],
            &[start, HUB_UNIT],
        ],
        timeout,
        "starting YurtHub's service failed; its files are installed, so fix the cause and re-run convert, or run revert to remove them",
    )
}

/// Stops and disables the YurtHub unit before revert removes its files. A unit systemd does
/// not know (removed by hand) is already stopped: upstream ignores "not loaded", "not found"
/// and "does not exist" the same way (openyurtio/openyurt@v1.7.0
/// pkg/yurtadm/util/yurthub/yurthub.go, runSystemctlWithIgnoredErrors).
fn stop_hub_service(r: &mut ServantResult, unit: &str, timeout: Duration) -> Result<()> {
    for args in [["stop", unit], ["disable", unit]] {
        match host_commands(
            r,
            &[&args],
            timeout,
            "stopping YurtHub's service failed; the kubelet is already back on its original kubeconfig, so fix the cause and re-run revert",
        ) {
            Err(NodeServantError::Host {
                source: HostCommandError::Failed { stderr, .. },
                ..
            }) if ["not loaded", "not found", "does not exist"]
                .iter()
                .any(|m| stderr.contains(m)) =>
            {
                tracing::info!("{unit} is not loaded: nothing to stop ({})", stderr.trim());
            }
            other => other?,
        }
    }
    Ok(())
}

/// Runs `systemctl` commands on the host in order, recording each; stops at the first failure.
fn host_commands(
    r: &mut ServantResult,
    commands: &[&[&str]],
    timeout: Duration,
    context: &str,
) -> Result<()> {
    for args in commands {
        let shown = format!("systemctl {}", args.join(" "));
        tracing::info!("{shown}");
        node::host_systemctl(args, timeout).map_err(|source| NodeServantError::Host {
            context: context.into(),
            source,
        })?;
        r.host_commands.push(shown);
    }
    Ok(())
}

fn restart_kubelet(r: &mut ServantResult, timeout: Duration, why: &str) -> Result<()> {
    tracing::info!("restarting the kubelet ({why})");
    host_commands(
        r,
        &[&["daemon-reload"], &["restart", "kubelet"]],
        timeout,
        &format!(
            "restarting the kubelet ({why}) failed; its unit files are already changed, so fix the cause and re-run this command, or run `systemctl daemon-reload && systemctl restart kubelet` on the node"
        ),
    )
}

/// How long a restarted kubelet may take to show in `/proc` (systemd has forked it when
/// `systemctl restart` returns; this covers a slow exec).
const KUBELET_SHOWS_UP: Duration = Duration::from_secs(10);

/// What the running kubelet uses, in words, for messages.
fn running_in_words(running: &Option<Option<String>>) -> String {
    match running {
        None => "cannot be seen (no kubelet process in /proc: the node servant needs the host's PID namespace, hostPID)".into(),
        Some(None) => "runs without --kubeconfig".into(),
        Some(Some(k)) => format!("runs with --kubeconfig={k}"),
    }
}

/// Brings the running kubelet onto `--kubeconfig=want`, which its unit files already give:
/// restarts it when the files changed just now or when the running process cannot be shown to
/// use `want` (an earlier run may have been killed between the files and the restart), then
/// waits until the process shows it.
fn kubelet_runs_on(
    r: &mut ServantResult,
    want: &str,
    files_changed: bool,
    timeout: Duration,
    why: &str,
    then: &str,
) -> Result<()> {
    let running = node::running_kubelet_kubeconfig();
    let on_want = |k: &Option<Option<String>>| k.as_ref().and_then(|k| k.as_deref()) == Some(want);
    if files_changed {
        restart_kubelet(r, timeout, why)?;
    } else if !on_want(&running) {
        restart_kubelet(
            r,
            timeout,
            &format!("the running kubelet {}", running_in_words(&running)),
        )?;
    } else {
        return Ok(());
    }
    let deadline = std::time::Instant::now() + KUBELET_SHOWS_UP;
    loop {
        let now = node::running_kubelet_kubeconfig();
        if on_want(&now) {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(NodeServantError::Verify(format!(
                "the kubelet was restarted, but {}s later the running kubelet {}, not --kubeconfig={want}; {then}",
                KUBELET_SHOWS_UP.as_secs(),
                running_in_words(&now)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn preflight(r: &mut ServantResult, root: &Path) -> Result<()> {
    let report = plan(servant::preflight(root))?;
    let mut failed = Vec::new();
    let mut check = |name: &'static str, ok: bool, message: String| {
        if ok {
            tracing::info!("ok    {name}: {message}");
        } else {
            tracing::warn!("FAIL  {name}: {message}");
            failed.push(format!("{name}: {message}"));
        }
        r.checks.push(Check { name, ok, message });
    };
    match node::euid() {
        Some(0) => check("root", true, "running as root".into()),
        other => check(
            "root",
            false,
            format!(
                "effective uid {}; convert and revert restart the kubelet through nsenter and need root (a privileged Job)",
                other.map_or("unknown".into(), |u| u.to_string())
            ),
        ),
    }
    match node::running_kubelet_kubeconfig() {
        _ if std::process::id() == 1 => check(
            "host-pid",
            false,
            "running as PID 1 of a PID namespace of its own; convert and revert read the running kubelet's flags from /proc and need hostPID".into(),
        ),
        Some(running) => check(
            "host-pid",
            true,
            format!(
                "the kubelet process is visible: it {}",
                running_in_words(&Some(running))
            ),
        ),
        None => check(
            "host-pid",
            true,
            "in the host's PID namespace; no kubelet process is running (convert and revert start it)".into(),
        ),
    }
    let mut busy = Vec::new();
    let mut port_errors = Vec::new();
    for p in YURTHUB_PORTS {
        match node::port_free(p) {
            Ok(true) => {}
            Ok(false) => busy.push(p.to_string()),
            Err(e) => port_errors.push(e),
        }
    }
    if !port_errors.is_empty() {
        check("ports", false, port_errors.join("; "));
    } else if busy.is_empty() {
        check(
            "ports",
            true,
            "127.0.0.1:10261, :10267 and :10268 are free for YurtHub".into(),
        );
    } else if report.converted {
        check(
            "ports",
            true,
            format!(
                "127.0.0.1 port(s) {} in use, by the YurtHub of an earlier convert",
                busy.join(", ")
            ),
        );
    } else {
        check(
            "ports",
            false,
            format!(
                "127.0.0.1 port(s) {} already in use on this node; YurtHub needs them. Find the listener (ss -ltnp) and stop it",
                busy.join(", ")
            ),
        );
    }
    check(
        "kubelet-unit",
        !report.kubelet_argv.is_empty(),
        if report.kubelet_argv.is_empty() {
            "cannot compute the kubelet's command line from its systemd unit".into()
        } else {
            format!(
                "layout {}, --kubeconfig={} (from {})",
                report.layout,
                report.kubeconfig.as_deref().unwrap_or("(none)"),
                report.kubeconfig_source.as_deref().unwrap_or("?")
            )
        },
    );
    check(
        "kubelet-redirect",
        report.redirect_possible,
        if report.redirect_possible {
            format!("the kubelet can be pointed at {OPENYURT_KUBECONFIG}")
        } else {
            "the kubelet's flags cannot be rewritten safely (see problems)".into()
        },
    );
    check(
        "static-pods",
        report.static_pod_dir.is_some(),
        match &report.static_pod_dir {
            Some(d) => format!("static-pod directory {d}"),
            None => "the kubelet runs no static pods (see problems)".into(),
        },
    );
    check(
        "api-server",
        report.api_server.is_some(),
        match &report.api_server {
            Some(u) => format!("API server {}", u.url),
            None => {
                "cannot tell the API server from the kubelet's kubeconfig (see problems)".into()
            }
        },
    );
    for p in &report.problems {
        tracing::warn!("problem: {p}");
    }
    r.kubelet_kubeconfig = report.kubeconfig.clone();
    r.message = if failed.is_empty() {
        format!(
            "preflight passed: layout {}, {}",
            report.layout,
            if report.converted {
                "already converted by yurtctl"
            } else {
                "not converted"
            }
        )
    } else {
        String::new()
    };
    r.preflight = Some(report);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(NodeServantError::PreflightFailed { failed })
    }
}

fn hub_options(a: &ConvertArgs) -> Result<HubInstall> {
    let credential = match (&a.credential.bootstrap_file, &a.credential.join_token_file) {
        (Some(p), _) => Some(HubCredential::BootstrapFile { source: p.clone() }),
        (None, Some(p)) => Some(HubCredential::JoinTokenFile { source: p.clone() }),
        (None, None) => None,
    };
    match (&a.yurthub_manifest, &a.yurthub_unit) {
        (Some(manifest), _) => {
            let Some(credential) = credential else {
                unreachable!("clap requires a credential with --yurthub-manifest")
            };
            plan(YurtHubOptions::from_file(
                a.manifest_file.clone(),
                manifest,
                credential,
            ))
            .map(HubInstall::from)
        }
        (None, Some(unit)) => {
            // clap: --yurthub-unit requires the drop-in, the binary and the pool
            let (Some(drop_in), Some(binary), Some(pool)) =
                (&a.yurthub_drop_in, &a.yurthub_binary, &a.nodepool_name)
            else {
                unreachable!("clap requires them with --yurthub-unit")
            };
            plan(HubService::from_files(
                binary,
                unit,
                drop_in,
                &a.node_name,
                pool,
                credential,
            ))
            .map(HubInstall::from)
        }
        (None, None) => unreachable!("clap requires --yurthub-manifest or --yurthub-unit"),
    }
}

fn hub_manifest_path(root: &Path, file: &str) -> String {
    HostFs::new(root)
        .and_then(|fs| {
            let argv = servant::kubelet::effective_argv(&fs)?;
            servant::kubelet::static_pod_dir(&fs, &argv)
        })
        .map(|d| format!("{}/{file}", d.trim_end_matches('/')))
        .unwrap_or_else(|_| format!("<static-pod directory>/{file}"))
}

fn convert(r: &mut ServantResult, a: &ConvertArgs, dry_run: bool) -> Result<()> {
    let root = a.host.host_root.as_path();
    r.node = Some(a.node_name.clone());
    let hub = hub_options(a)?;
    let full = NodeConvertOptions {
        yurthub: Some(hub.clone()),
        redirect_kubelet: true,
        restart_workloads: !a.skip_workload_restart,
    };
    // Plan the whole conversion first: if any of it cannot be done, nothing is written.
    let whole = plan(servant::convert(root, &full))?;
    if dry_run {
        record_plan(r, &whole);
        let running = node::running_kubelet_kubeconfig();
        r.message = if whole.is_empty()
            && running.as_ref().and_then(|k| k.as_deref()) == Some(OPENYURT_KUBECONFIG)
        {
            "dry run: nothing to do, the node is already converted".into()
        } else if whole.is_empty() {
            format!(
                "dry run: the node's files are converted, but the running kubelet {}; convert would restart it",
                running_in_words(&running)
            )
        } else {
            format!(
                "dry run: {} file changes planned; convert would then wait for YurtHub to be ready and restart the kubelet; nothing was written",
                whole.len()
            )
        };
        return Ok(());
    }
    require_host_access("convert")?;
    let before = plan(effective_kubeconfig(root))?;

    // 1. YurtHub: static pod or service, and its credential; kubelet untouched
    let hub_only = plan(servant::convert(
        root,
        &NodeConvertOptions {
            yurthub: Some(hub.clone()),
            redirect_kubelet: false,
            restart_workloads: false,
        },
    ))?;
    apply(
        r,
        root,
        &hub_only,
        "The kubelet was not touched; fix the cause and re-run convert (or run revert)",
    )?;
    if matches!(hub, HubInstall::Service(_)) {
        start_hub_service(r, a.kubelet_restart_timeout, !hub_only.is_empty())?;
    }

    // 2. wait until the hub serves, so the kubelet never points at a hub that does not
    tracing::info!(
        "waiting up to {:?} for YurtHub to report ready on 127.0.0.1:{YURTHUB_SERVER_PORT}{YURTHUB_READYZ_PATH}",
        a.yurthub_timeout
    );
    let took = node::wait_ready(YURTHUB_SERVER_PORT, a.yurthub_timeout).map_err(|last| {
        let left = match &hub {
            HubInstall::StaticPod(_) => format!(
                "The YurtHub manifest {} stays installed on the node; check the pod (kubectl -n kube-system describe pod yurt-hub-{}; its logs)",
                hub_manifest_path(root, &a.manifest_file),
                a.node_name
            ),
            HubInstall::Service(_) => format!(
                "The service {HUB_UNIT} ({HUB_UNIT_FILE}, {HUB_BINARY}) stays installed on the node; check it there (systemctl status {HUB_UNIT}; journalctl -u {HUB_UNIT})"
            ),
        };
        NodeServantError::HubTimeout {
            node: a.node_name.clone(),
            waited: a.yurthub_timeout,
            last,
            kubeconfig: before.clone().unwrap_or_else(|| "(none)".into()),
            left,
        }
    })?;
    tracing::info!("YurtHub is ready (after {:.1}s)", took.as_secs_f64());

    // 3. redirect the kubelet and restart it
    let redirect = servant::convert(root, &full).map_err(|source| NodeServantError::Apply {
        source,
        done: 0,
        total: 0,
        next: "YurtHub is installed and ready but the kubelet was not redirected; fix the cause and re-run convert (or run revert)".into(),
    })?;
    apply(
        r,
        root,
        &redirect,
        "The kubelet was not restarted, so it still runs with its old flags; fix the cause and re-run convert (or run revert)",
    )?;
    let after = plan(effective_kubeconfig(root)).ok().flatten();
    if after.as_deref() != Some(OPENYURT_KUBECONFIG) {
        return Err(NodeServantError::Verify(format!(
            "after the redirect the kubelet's unit files give --kubeconfig={after:?}, not {OPENYURT_KUBECONFIG}; the kubelet was not restarted. Inspect the kubelet unit and its drop-ins, then run revert"
        )));
    }
    kubelet_runs_on(
        r,
        OPENYURT_KUBECONFIG,
        !redirect.is_empty(),
        a.kubelet_restart_timeout,
        "redirecting it to YurtHub",
        "check it on the node (systemctl status kubelet; journalctl -u kubelet), then re-run convert (or run revert)",
    )?;
    r.kubelet_kubeconfig = after;

    // 4. the containers the kubelet started before it used YurtHub, started again
    let pending = plan(OperationRecord::load(
        &plan(HostFs::new(root))?,
        CONVERT_OPERATION,
    ))?
    .is_some_and(|rec| servant::plan::workloads_restart_pending(&rec));
    if pending && !a.skip_workload_restart {
        restart_workloads(
            r,
            root,
            &a.node_name,
            a.kubelet_restart_timeout,
            "through YurtHub",
        )?;
        apply(
            r,
            root,
            &plan(servant::plan::workloads_restarted(root))?,
            "The workload containers were restarted; re-run convert to record it",
        )?;
    }
    let runs_as = match hub {
        HubInstall::StaticPod(_) => "a static pod".to_string(),
        HubInstall::Service(_) => format!("the systemd service {HUB_UNIT}"),
    };
    r.message = if r.changed {
        format!(
            "node {} converted: YurtHub runs as {runs_as} and the kubelet uses {OPENYURT_KUBECONFIG} ({} changes)",
            a.node_name,
            r.changes.len()
        )
    } else if !r.host_commands.is_empty() {
        format!(
            "node {} converted: its files already were (an earlier run stopped before the restart), and the kubelet now runs on {OPENYURT_KUBECONFIG}",
            a.node_name
        )
    } else {
        format!(
            "nothing to do: node {} is already converted and YurtHub is ready",
            a.node_name
        )
    };
    Ok(())
}

fn revert(
    r: &mut ServantResult,
    root: &Path,
    timeout: Duration,
    restart_workloads_after: bool,
    dry_run: bool,
) -> Result<()> {
    let fs = plan(HostFs::new(root))?;
    let journal = plan(OperationRecord::load(&fs, CONVERT_OPERATION))?;
    let changes = plan(servant::revert(root))?;
    let original = journal
        .as_ref()
        .and_then(|j| j.extra.get("kubelet_kubeconfig"))
        .and_then(|v| v.as_str())
        .unwrap_or(DEFAULT_KUBELET_KUBECONFIG)
        .to_owned();
    if changes.is_empty() {
        r.kubelet_kubeconfig = plan(effective_kubeconfig(root))?;
        r.message = if journal.is_some() {
            "nothing to do: the node is already reverted".into()
        } else {
            "nothing to do: yurtctl has no record of converting this node".into()
        };
        return Ok(());
    }
    if dry_run {
        record_plan(r, &changes);
        r.message = format!(
            "dry run: {} file changes planned; revert would restart the kubelet on {original}; nothing was written",
            changes.len()
        );
        return Ok(());
    }
    require_host_access("revert")?;
    // kubelet files first, restart, verify; only then remove YurtHub, its files and records
    let (restore, rest): (Vec<Change>, Vec<Change>) = changes
        .changes
        .into_iter()
        .partition(|c| matches!(c, Change::Write { .. }));
    let restore = NodeChanges { changes: restore };
    let rest = NodeChanges { changes: rest };
    apply(r, root, &restore, "Fix the cause and re-run revert")?;
    let now = plan(effective_kubeconfig(root)).ok().flatten();
    if now.as_deref() != Some(original.as_str()) {
        return Err(NodeServantError::Verify(format!(
            "after restoring the kubelet's files its unit gives --kubeconfig={now:?}, expected the original {original}; the kubelet was not restarted and YurtHub was left in place. Inspect the kubelet unit and its drop-ins"
        )));
    }
    // convert recorded the kubelet's kubeconfig when it redirected it; without that record the
    // kubelet was never touched and is left alone
    let redirected = journal
        .as_ref()
        .is_some_and(|j| j.extra.contains_key("kubelet_kubeconfig"));
    if redirected || !restore.is_empty() {
        kubelet_runs_on(
            r,
            &original,
            !restore.is_empty(),
            timeout,
            "restoring its original flags",
            "YurtHub was left in place; check the kubelet on the node (systemctl status kubelet; journalctl -u kubelet), then re-run revert",
        )?;
    }
    // YurtHub is still there: the containers convert restarted through it get the real API
    // server again (again, should an interrupted revert have restarted them already)
    let touched_workloads = journal
        .as_ref()
        .is_some_and(|j| j.extra.contains_key(servant::plan::WORKLOADS_KEY));
    if restart_workloads_after && touched_workloads {
        let node = std::env::var("NODE_NAME").unwrap_or_default();
        restart_workloads(r, root, &node, timeout, "directly")?;
    }
    let service = journal
        .as_ref()
        .and_then(servant::recorded_hub_service)
        .map(str::to_owned);
    if let Some(unit) = &service {
        stop_hub_service(r, unit, timeout)?;
    }
    apply(
        r,
        root,
        &rest,
        "The kubelet is back on its original kubeconfig; re-run revert to remove the rest",
    )?;
    if service.is_some() {
        // systemd forgets the removed unit only on a reload
        host_commands(
            r,
            &[&["daemon-reload"]],
            timeout,
            "the YurtHub service's files are removed but systemd was not reloaded; run `systemctl daemon-reload` on the node",
        )?;
    }
    r.kubelet_kubeconfig = Some(original.clone());
    r.message = if restore.is_empty() {
        format!(
            "node reverted: YurtHub removed; the kubelet was never redirected and still uses {original} ({} changes)",
            r.changes.len()
        )
    } else {
        format!(
            "node reverted: the kubelet uses {original} again, YurtHub removed ({} changes)",
            r.changes.len()
        )
    };
    Ok(())
}

/// Stops every Kubernetes container on `node` but this servant's own and the static pods', one
/// `crictl stop` each, so the kubelet (now talking to the API server `how`) starts them again
/// with the matching KUBERNETES_SERVICE_HOST/PORT. A container gone meanwhile is fine.
fn restart_workloads(
    r: &mut ServantResult,
    root: &Path,
    node: &str,
    timeout: Duration,
    how: &str,
) -> Result<()> {
    let fs = plan(HostFs::new(root))?;
    let argv = plan(servant::kubelet::effective_argv(&fs))?;
    let endpoint = plan(servant::runtime::cri_endpoint(&fs, &argv))?;
    // without its own pod's UID the servant could stop itself
    let own_pod_uid = std::env::var("POD_UID")
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            NodeServantError::Verify(format!(
                "restarting the node's containers needs this pod's UID in POD_UID (env from fieldRef metadata.uid), or pass --skip-workload-restart; the kubelet already reaches the API server {how}"
            ))
        })?;
    let keep = &KeepPods {
        own_pod_uid,
        pods: plan(servant::runtime::static_pods(&fs, &argv, node))?,
    };
    let failed = |what: String| {
        move |source| NodeServantError::Host {
            context: format!(
                "{what} failed; the kubelet already reaches the API server {how}. Fix the cause and re-run, or delete the node's pods yourself so they are recreated"
            ),
            source,
        }
    };
    let shown = format!("crictl -r {endpoint} ps -o json");
    let ps = node::host_crictl(&endpoint, &["ps", "-o", "json"], timeout)
        .map_err(failed(format!("listing the node's containers (`{shown}`)")))?;
    r.host_commands.push(shown);
    let containers = plan(servant::runtime::containers_to_restart(&ps, keep))?;
    tracing::info!(
        "restarting {} container(s) so they reach the API server {how}",
        containers.len()
    );
    for c in containers {
        let shown = format!("crictl -r {endpoint} stop {}", c.id);
        match node::host_crictl(&endpoint, &["stop", &c.id], timeout) {
            Ok(_) => {}
            // it exited or its pod went away since the listing
            Err(HostCommandError::Failed { stderr, .. })
                if stderr.contains("NotFound") || stderr.contains("No such container") => {}
            Err(e) => return Err(failed(format!("stopping {} (`{shown}`)", c.shown()))(e)),
        }
        r.host_commands.push(shown);
        r.restarted_containers.push(c.shown());
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
