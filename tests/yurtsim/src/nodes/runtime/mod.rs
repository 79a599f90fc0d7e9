//! OS-level process sandbox for the simulated kubelet.
//!
//! Every container is a real local process, started by [`spawn`] as its own
//! session and process-group leader, in fresh mount, UTS and IPC namespaces,
//! and either in its node's network namespace ([`Network::Node`], i.e.
//! `hostNetwork: true`) or a fresh one holding only an UP loopback
//! ([`Network::Isolated`]); likewise in its node's PID namespace
//! ([`Pid::Node`], `hostPID: true`) or as PID 1 of its own ([`Pid::Own`]),
//! with a `/proc` of that namespace (pid.rs). Volumes are bind mounts over the host's file
//! system view (there is no chroot): the container sees the machine's `/`
//! with the spec's mounts laid on top. stdout and stderr are appended to the
//! container log file.
//!
//! [`NodeTools`] installs the `nsenter` / `systemctl` stubs that node-scoped
//! Jobs call to restart the kubelet, and lets the sim observe and acknowledge
//! those calls.
//!
//! Linux only; needs root (CAP_SYS_ADMIN) and a Tokio runtime.
//!
//! This file holds the container spec, its exit and [`spawn`]; `prepare.rs` checks and claims
//! its mounts in the parent, `child.rs` is what the child does between fork and exec (the
//! low-level fork and exec are `spawn.rs`'s).

mod child;
mod crictl_stub;
mod namespaces;
mod net;
mod pid;
mod prepare;
mod spawn;
mod tools;

pub use namespaces::NodeNamespaces;
pub use pid::{HostProcess, Pid};
pub use tools::{NodeTools, ToolCall};

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use child::*;
use net::IfFlagsReq;
use prepare::*;

/// Which network namespace a container joins.
#[derive(Debug, Clone, Copy)]
pub enum Network<'a> {
    /// The node's namespace (`hostNetwork: true`): shares the node's loopback.
    Node(&'a NodeNamespaces),
    /// A fresh namespace of its own with only `lo` (UP), like a pod network
    /// without any connectivity.
    Isolated,
}

/// A bind mount into the container's private mount namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Real path on this machine (file or directory); must exist.
    pub source: PathBuf,
    /// Absolute path the container sees.
    pub target: PathBuf,
    /// Remount the bind read-only (the top mount only, not submounts under
    /// the source).
    pub read_only: bool,
}

/// What to run and how to isolate it.
#[derive(Debug)]
pub struct ContainerSpec<'a> {
    /// `command[0]`; looked up in the `PATH` of `env` (after the mounts are in
    /// place) unless it contains a `/`.
    pub program: String,
    pub args: Vec<String>,
    /// The complete environment; nothing is inherited. Without a `PATH`
    /// entry, `/bin:/usr/bin` is searched (glibc's default).
    pub env: Vec<(String, String)>,
    /// Absolute; `/` when `None` (as for an image without WORKDIR).
    pub working_dir: Option<PathBuf>,
    /// Hostname inside the container's own UTS namespace.
    pub hostname: String,
    pub network: Network<'a>,
    /// The container sees this namespace's processes in a `/proc` of its own.
    pub pid: Pid<'a>,
    /// Bind mounts, applied shallowest target first (stable for equal
    /// depth), so a volume nested in another one is not hidden by it.
    ///
    /// Side effect: a target that does not exist is created on the real file
    /// system before the process starts — a directory, or an empty file when
    /// the source is a file — at the place the container would see it: under
    /// the source of an enclosing mount of this spec if there is one,
    /// otherwise at the target path itself.
    ///
    /// Targets that would shadow the system as a whole (`/`, `/proc`, `/sys`,
    /// `/dev`, `/usr`, `/bin`, `/sbin`, `/lib`, `/lib64`, `/etc`, and the
    /// merged-usr `/usr/bin`, `/usr/sbin`, `/usr/lib`, `/usr/lib64`) are
    /// refused, also when reached through `..` or symlinks.
    pub mounts: Vec<Mount>,
    /// stdout and stderr are both appended here (O_APPEND); parent
    /// directories are created.
    pub log_path: PathBuf,
}

/// How a container process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit status, or 128 + signal number when killed by a signal.
    pub exit_code: i32,
    /// The signal that terminated the process, if any.
    pub signal: Option<i32>,
    /// `"Completed"` (exit 0), `"Error"` (non-zero exit) or `"Killed"`
    /// (terminated by a signal).
    pub reason: &'static str,
}

impl ExitInfo {
    fn from_status(status: ExitStatus) -> ExitInfo {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(0), _) => ExitInfo {
                exit_code: 0,
                signal: None,
                reason: "Completed",
            },
            (Some(code), _) => ExitInfo {
                exit_code: code,
                signal: None,
                reason: "Error",
            },
            (None, Some(sig)) => ExitInfo {
                exit_code: 128 + sig,
                signal: Some(sig),
                reason: "Killed",
            },
            // Stopped/continued are not reported by wait(); be defensive.
            (None, None) => ExitInfo {
                exit_code: 255,
                signal: None,
                reason: "Error",
            },
        }
    }

    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

/// Why a container could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("invalid container spec: {0}")]
    InvalidSpec(String),
    #[error("executable file not found in $PATH: {0}")]
    NotFound(String),
    #[error("stat {0}: no such file or directory")]
    NoSuchFile(String),
    #[error("{context}: {source}")]
    Prepare {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("container setup failed: {step}: {source}")]
    Setup {
        step: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot start {program:?}: {source}")]
    Exec {
        program: String,
        #[source]
        source: io::Error,
    },
}

fn prepare_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> RuntimeError {
    let context = context.into();
    move |source| RuntimeError::Prepare { context, source }
}

/// A started container process (the leader of its own process group).
///
/// Dropping it without `wait`/`stop` SIGKILLs the whole group; the leader is
/// reaped in the background.
#[derive(Debug)]
pub struct Running {
    child: spawn::Child,
    pid: u32,
    exit: Option<ExitInfo>,
    /// Released (and the mount points removed when unused) when this is dropped.
    _mount_points: MountPointClaims,
}

impl Running {
    /// Process id, which is also the process group and session id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the process to exit (cancel-safe). Like a container's PID
    /// namespace going away, processes left in its group are then SIGKILLed.
    pub async fn wait(&mut self) -> io::Result<ExitInfo> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let status = self.child.wait().await?;
        Ok(self.exited(status))
    }

    /// Non-blocking check; `Some` once the process has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitInfo>> {
        if let Some(exit) = self.exit {
            return Ok(Some(exit));
        }
        Ok(self.child.try_wait()?.map(|status| self.exited(status)))
    }

    /// SIGTERM to the whole process group, SIGKILL after `grace` if the
    /// leader is still alive; returns how it ended (at once if it already had).
    pub async fn stop(&mut self, grace: Duration) -> io::Result<ExitInfo> {
        if let Some(exit) = self.try_wait()? {
            return Ok(exit);
        }
        self.signal_group(libc::SIGTERM);
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status?,
            Err(_elapsed) => {
                self.signal_group(libc::SIGKILL);
                self.child.wait().await?
            }
        };
        Ok(self.exited(status))
    }

    fn exited(&mut self, status: ExitStatus) -> ExitInfo {
        let exit = ExitInfo::from_status(status);
        self.exit = Some(exit);
        // Sweep stragglers (daemonized children, TERM-ignorers). The leader is
        // reaped, so in theory its pid could have been recycled as another
        // group's id in between; with a just-reaped pid that is negligible.
        self.signal_group(libc::SIGKILL);
        exit
    }

    fn signal_group(&self, signal: libc::c_int) {
        let Ok(pgid) = libc::pid_t::try_from(self.pid) else {
            return;
        };
        // SAFETY: plain syscall. Negative pid = the process group we created
        // with setsid; ESRCH (group gone) is fine to ignore.
        unsafe { libc::kill(-pgid, signal) };
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.signal_group(libc::SIGKILL);
        }
    }
}

/// Starts a container process. Must be called within a Tokio runtime.
///
/// Blocks briefly (until the child has exec'd: creating mount targets, namespaces and the log).
pub fn spawn(spec: ContainerSpec<'_>) -> Result<Running, RuntimeError> {
    let program = spec.program.clone();
    let plan = Prepared::new(&spec)?;

    let log = open_log(&spec.log_path)?;
    let log2 = log.try_clone().map_err(prepare_err("duplicate log fd"))?;
    // The child reports which step failed through this pipe (both ends are close-on-exec, so a
    // successful exec leaves it empty).
    let (mut report_rx, report_tx) = io::pipe().map_err(prepare_err("create pipe"))?;

    // the node's namespaces are entered through fds open only for this start
    let node_netns = match spec.network {
        Network::Node(n) => Some(
            n.net_fd()
                .map_err(prepare_err("enter the node's network"))?,
        ),
        Network::Isolated => None,
    };
    let (node_pidns, pid_target) = match spec.pid {
        Pid::Node(n) => {
            let fd = n
                .pid_fd()
                .map_err(prepare_err("enter the node's PID namespace"))?;
            let target = pid::PidTarget::Join(fd.as_raw_fd());
            (Some(fd), target)
        }
        Pid::Own => (None, pid::PidTarget::Fresh),
    };
    let mut child_plan = plan.child_plan(
        report_tx.as_raw_fd(),
        node_netns.as_ref().map(AsRawFd::as_raw_fd),
        &spec,
    )?;
    let argv = std::iter::once(spec.program.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .map(cstring)
        .collect::<Result<Vec<_>, _>>()?;
    let envp = spec
        .env
        .iter()
        .map(|(k, v)| cstring(format!("{k}={v}")))
        .collect::<Result<Vec<_>, _>>()?;
    let candidates = match &child_plan.exe {
        ExeCheck::Path(p) => vec![p.clone()],
        ExeCheck::Search(c) => c.clone(),
    };
    let exec = spawn::Exec::new(candidates, argv, envp, log.into(), log2.into())
        .map_err(prepare_err("open /dev/null"))?;
    let spawned =
        pid::forked_in(pid_target, || spawn::spawn(&mut child_plan, &exec)).and_then(|r| r);
    drop((report_tx, node_netns, node_pidns));
    let pid = spawned.map_err(|source| RuntimeError::Exec {
        program: program.clone(),
        source,
    })?;
    // EOF at once when the child exec'd; its report when it failed (and exited).
    let mut buf = Vec::new();
    let _ = report_rx.read_to_end(&mut buf);
    if let Some(report) = ChildReport::decode(&buf) {
        spawn::Child::reap_now(pid);
        return Err(report.into_error(&program, &spec, &plan.mounts));
    }
    let child = spawn::Child::adopt(pid).map_err(|source| RuntimeError::Exec {
        program: program.clone(),
        source,
    })?;
    let pid = pid as u32;
    tracing::debug!(pid, program = %program, hostname = %spec.hostname, "container started");
    Ok(Running {
        child,
        pid,
        exit: None,
        _mount_points: plan.claims,
    })
}

#[cfg(test)]
pub(super) mod tests;
