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

mod crictl_stub;
mod namespaces;
mod net;
mod pid;
mod spawn;
mod tools;

pub use namespaces::NodeNamespaces;
pub use pid::{HostProcess, Pid};
pub use tools::{NodeTools, ToolCall};

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use net::IfFlagsReq;

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

const FORBIDDEN_TARGETS: &[&str] = &[
    "/",
    "/proc",
    "/sys",
    "/dev",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib64",
];

/// Mount with a normalized target, in application order.
#[derive(Debug)]
struct PreparedMount {
    source: PathBuf,
    target: PathBuf,
    read_only: bool,
}

struct Prepared {
    mounts: Vec<PreparedMount>,
    claims: MountPointClaims,
}

/// Mount targets this machine did not have, created for containers and removed again when the
/// last container using them ends (only while empty), so running pods leave no `/host` or
/// `/etc/yurtctl/...` behind on the real file system.
///
/// Within this process, paths are reference-counted by the claims that use them. Containers of
/// other processes (parallel test binaries, several sims) use the same paths without seeing
/// these counts, so a process with live claims holds a shared `flock` on a machine-wide lock
/// file, and a path is removed only while that lock can be made exclusive (no other process has
/// containers). Paths whose removal had to wait are retried whenever a claim ends.
#[derive(Debug, Default)]
struct MountPointClaims {
    paths: Vec<PathBuf>,
}

#[derive(Default)]
struct MountPointRegistry {
    /// Created path → claims using it.
    paths: HashMap<PathBuf, usize>,
    /// Live claims in this process.
    active: usize,
    /// The lock file, held shared while `active > 0`.
    lock: Option<std::fs::File>,
}

fn mount_point_registry() -> std::sync::MutexGuard<'static, MountPointRegistry> {
    static REGISTRY: OnceLock<Mutex<MountPointRegistry>> = OnceLock::new();
    REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn flock(f: &std::fs::File, op: libc::c_int) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscall on an open descriptor.
    unsafe { libc::flock(f.as_raw_fd(), op) == 0 }
}

impl MountPointClaims {
    /// A claim; the process holds the shared lock from now until its last claim ends.
    fn begin() -> Self {
        let mut r = mount_point_registry();
        if r.active == 0 {
            r.lock = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(std::env::temp_dir().join("yurtsim-mount-points.lock"))
                .ok()
                .filter(|f| flock(f, libc::LOCK_SH));
        }
        r.active += 1;
        MountPointClaims::default()
    }

    /// Creates `target` if missing and claims it and the ancestors we created (shallowest
    /// first); atomic with respect to other claims ending.
    fn create(&mut self, target: &Path, dir: bool) -> Result<(), RuntimeError> {
        let mut r = mount_point_registry();
        for p in create_target(target, dir)? {
            r.paths.insert(p, 0);
        }
        let mut chain: Vec<PathBuf> = target
            .ancestors()
            .filter(|a| r.paths.contains_key(*a))
            .map(Path::to_path_buf)
            .collect();
        chain.reverse();
        for p in chain {
            *r.paths.get_mut(&p).unwrap() += 1;
            self.paths.push(p);
        }
        Ok(())
    }
}

impl Drop for MountPointClaims {
    fn drop(&mut self) {
        let mut r = mount_point_registry();
        for p in &self.paths {
            if let Some(n) = r.paths.get_mut(p) {
                *n = n.saturating_sub(1);
            }
        }
        r.active = r.active.saturating_sub(1);
        let mut unused: Vec<PathBuf> = r
            .paths
            .iter()
            .filter(|(_, n)| **n == 0)
            .map(|(p, _)| p.clone())
            .collect();
        let active = r.active;
        let Some(lock) = r.lock.take() else { return };
        if !unused.is_empty() && flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
            // Deepest first, so a parent can go once its child has.
            unused.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
            for p in unused {
                r.paths.remove(&p);
                match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => {
                        let _ = std::fs::remove_dir(&p);
                    }
                    Ok(m) if m.is_file() && m.len() == 0 => {
                        let _ = std::fs::remove_file(&p);
                    }
                    _ => {}
                }
            }
        }
        // Converting a flock may drop it on the way: take it shared again while claims live.
        if active > 0 && flock(&lock, libc::LOCK_SH) {
            r.lock = Some(lock);
        }
    }
}

impl Prepared {
    fn new(spec: &ContainerSpec<'_>) -> Result<Prepared, RuntimeError> {
        let invalid = |msg: String| Err(RuntimeError::InvalidSpec(msg));
        if spec.program.is_empty() {
            return invalid("empty program".into());
        }
        if spec.hostname.is_empty() || spec.hostname.len() > 64 {
            return invalid(format!(
                "hostname {:?} must be 1 to 64 bytes",
                spec.hostname
            ));
        }
        let strings = std::iter::once(&spec.program)
            .chain(&spec.args)
            .chain(std::iter::once(&spec.hostname))
            .chain(spec.env.iter().flat_map(|(k, v)| [k, v]));
        if let Some(s) = strings.into_iter().find(|s| s.contains('\0')) {
            return invalid(format!("NUL byte in {s:?}"));
        }
        if let Some((k, _)) = spec
            .env
            .iter()
            .find(|(k, _)| k.is_empty() || k.contains('='))
        {
            return invalid(format!("bad environment variable name {k:?}"));
        }
        if let Some(dir) = &spec.working_dir
            && !dir.is_absolute()
        {
            return invalid(format!("working_dir {} is not absolute", dir.display()));
        }

        let mut mounts = Vec::with_capacity(spec.mounts.len());
        for m in &spec.mounts {
            let target = normalize_target(&m.target)?;
            if !m.source.is_absolute() {
                return invalid(format!(
                    "mount source {} is not absolute",
                    m.source.display()
                ));
            }
            mounts.push(PreparedMount {
                source: m.source.clone(),
                target,
                read_only: m.read_only,
            });
        }
        mounts.sort_by_key(|m| m.target.components().count());

        let mut claims = MountPointClaims::begin();
        for (i, m) in mounts.iter().enumerate() {
            let source_meta = std::fs::metadata(&m.source)
                .map_err(prepare_err(format!("mount source {}", m.source.display())))?;
            // Where the container will look for the target: inside the source
            // of the deepest enclosing directory mount, if any.
            let host_target = mounts[..i]
                .iter()
                .filter(|outer| m.target.starts_with(&outer.target) && outer.target != m.target)
                .max_by_key(|outer| outer.target.components().count())
                .map_or_else(
                    || m.target.clone(),
                    |outer| {
                        outer
                            .source
                            .join(m.target.strip_prefix(&outer.target).unwrap_or(&m.target))
                    },
                );
            // A target inside another mount's source is created there for good, as runc does
            // on a real node; only the sim's own traces on this machine are cleaned up.
            if host_target == m.target {
                claims.create(&host_target, source_meta.is_dir())?;
            } else {
                create_target(&host_target, source_meta.is_dir())?;
            }
        }
        Ok(Prepared { mounts, claims })
    }

    /// `node_netns`: the node's network namespace for a `hostNetwork` container.
    fn child_plan(
        &self,
        report_fd: RawFd,
        node_netns: Option<RawFd>,
        spec: &ContainerSpec<'_>,
    ) -> Result<ChildPlan, RuntimeError> {
        let mut unshare_flags = libc::CLONE_NEWNS | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;
        let loopback = match spec.network {
            Network::Node(_) => None,
            Network::Isolated => {
                unshare_flags |= libc::CLONE_NEWNET;
                Some(IfFlagsReq::loopback())
            }
        };
        let mounts = self
            .mounts
            .iter()
            .map(|m| {
                Ok(ChildMount {
                    source: cstring(m.source.as_os_str())?,
                    source_fd: -1,
                    target: cstring(m.target.as_os_str())?,
                    read_only: m.read_only,
                })
            })
            .collect::<Result<Vec<_>, RuntimeError>>()?;
        let workdir = cstring(
            spec.working_dir
                .as_deref()
                .unwrap_or(Path::new("/"))
                .as_os_str(),
        )?;
        let exe = if spec.program.contains('/') {
            ExeCheck::Path(cstring(spec.program.as_str())?)
        } else {
            let path = spec
                .env
                .iter()
                .rev()
                .find(|(k, _)| k == "PATH")
                .map_or("/bin:/usr/bin", |(_, v)| v.as_str());
            let candidates = path
                .split(':')
                .map(|dir| match dir {
                    "" => cstring(spec.program.as_str()),
                    dir => cstring(format!("{}/{}", dir.trim_end_matches('/'), spec.program)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            ExeCheck::Search(candidates)
        };
        Ok(ChildPlan {
            report_fd,
            node_netns,
            unshare_flags,
            loopback,
            mounts,
            hostname: spec.hostname.as_bytes().to_vec(),
            workdir,
            exe,
        })
    }
}

fn cstring(s: impl AsRef<OsStr>) -> Result<CString, RuntimeError> {
    CString::new(s.as_ref().as_bytes())
        .map_err(|_| RuntimeError::InvalidSpec(format!("NUL byte in {:?}", s.as_ref())))
}

/// Lexically normalizes an absolute target and refuses system paths (also
/// after resolving symlinks, when the target exists).
fn normalize_target(target: &Path) -> Result<PathBuf, RuntimeError> {
    if !target.is_absolute() {
        return Err(RuntimeError::InvalidSpec(format!(
            "mount target {} is not absolute",
            target.display()
        )));
    }
    let mut norm = PathBuf::from("/");
    for c in target.components() {
        match c {
            Component::Normal(part) => norm.push(part),
            Component::ParentDir => {
                norm.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let resolved = std::fs::canonicalize(&norm).ok();
    for candidate in std::iter::once(&norm).chain(resolved.as_ref()) {
        if FORBIDDEN_TARGETS.iter().any(|f| candidate == Path::new(f)) {
            return Err(RuntimeError::InvalidSpec(format!(
                "mount target {} would shadow the system directory {}",
                target.display(),
                candidate.display()
            )));
        }
    }
    Ok(norm)
}

/// Creates a missing mount target; returns what did not exist before, shallowest first.
fn create_target(path: &Path, dir: bool) -> Result<Vec<PathBuf>, RuntimeError> {
    let ctx = || format!("create mount target {}", path.display());
    let missing: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = path
            .ancestors()
            .take_while(|a| std::fs::symlink_metadata(a).is_err())
            .map(Path::to_path_buf)
            .collect();
        v.reverse();
        v
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() == dir => Ok(vec![]),
        Ok(_) => Err(RuntimeError::InvalidSpec(format!(
            "mount target {} is a {} but the source is not",
            path.display(),
            if dir { "file" } else { "directory" }
        ))),
        Err(_) if dir => std::fs::create_dir_all(path)
            .map(|_| missing)
            .map_err(prepare_err(ctx())),
        Err(_) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(prepare_err(ctx()))?;
            }
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map(|_| missing)
                .map_err(prepare_err(ctx()))
        }
    }
}

fn open_log(path: &Path) -> Result<File, RuntimeError> {
    let ctx = || format!("open container log {}", path.display());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(prepare_err(ctx()))?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(prepare_err(ctx()))
}

struct ChildMount {
    source: CString,
    /// O_PATH fd of `source`, opened by the child before any mount.
    source_fd: libc::c_int,
    target: CString,
    read_only: bool,
}

enum ExeCheck {
    /// Program given as a path: it must exist.
    Path(CString),
    /// Candidates `dir/program` for each `PATH` entry: one must be an
    /// executable regular file (what execvp will then pick).
    Search(Vec<CString>),
}

/// Setup steps, reported by a failing child as one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Stage {
    Setsid = 1,
    JoinNodeNetwork,
    Unshare,
    MakePrivate,
    OpenSource,
    BindMount,
    RemountReadOnly,
    Hostname,
    Loopback,
    Chdir,
    NotFound,
    NoSuchFile,
    MountProc,
    Exec,
}

const STAGES: [Stage; 14] = [
    Stage::Setsid,
    Stage::JoinNodeNetwork,
    Stage::Unshare,
    Stage::MakePrivate,
    Stage::OpenSource,
    Stage::BindMount,
    Stage::RemountReadOnly,
    Stage::Hostname,
    Stage::Loopback,
    Stage::Chdir,
    Stage::NotFound,
    Stage::NoSuchFile,
    Stage::MountProc,
    Stage::Exec,
];

/// Everything the forked child needs, built before fork.
struct ChildPlan {
    report_fd: RawFd,
    node_netns: Option<RawFd>,
    unshare_flags: libc::c_int,
    loopback: Option<IfFlagsReq>,
    mounts: Vec<ChildMount>,
    hostname: Vec<u8>,
    workdir: CString,
    exe: ExeCheck,
}

/// Turns a -1/non-zero syscall result into the errno.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl spawn::Setup for ChildPlan {
    fn run(&mut self) -> io::Result<()> {
        ChildPlan::run(self)
    }

    fn exec_failed(&self, err: io::Error) {
        self.report(Stage::Exec, 0, err);
    }
}

impl ChildPlan {
    /// Runs in the cloned child before exec: async-signal-safe only.
    fn run(&mut self) -> io::Result<()> {
        let null = std::ptr::null::<libc::c_char>();
        // SAFETY: plain syscall; makes the child a session and group leader.
        check(unsafe { libc::setsid() }).map_err(|e| self.report(Stage::Setsid, 0, e))?;
        if let Some(ns) = self.node_netns {
            // SAFETY: `ns` is the node's namespace fd, open in the parent for the whole spawn
            // and so inherited by this child.
            check(unsafe { libc::setns(ns, libc::CLONE_NEWNET) })
                .map_err(|e| self.report(Stage::JoinNodeNetwork, 0, e))?;
        }
        // SAFETY: plain syscall; the child is a process of its own (no CLONE_THREAD).
        check(unsafe { libc::unshare(self.unshare_flags) })
            .map_err(|e| self.report(Stage::Unshare, 0, e))?;
        // SAFETY: NUL-terminated literal and null pointers as mount(2) allows;
        // keeps our bind mounts from propagating back to the host.
        check(unsafe {
            libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })
        .map_err(|e| self.report(Stage::MakePrivate, 0, e))?;
        // Open every source before mounting anything, so a source is not
        // re-resolved through a mount made just before it. (An fd opened
        // before unshare would point into the old namespace: EINVAL.)
        for i in 0..self.mounts.len() {
            // SAFETY: CString owned by the plan; the fd is close-on-exec.
            let fd = unsafe {
                libc::open(
                    self.mounts[i].source.as_ptr(),
                    libc::O_PATH | libc::O_CLOEXEC,
                )
            };
            check(fd).map_err(|e| self.report(Stage::OpenSource, index(i), e))?;
            self.mounts[i].source_fd = fd;
        }
        for (i, m) in self.mounts.iter().enumerate() {
            let idx = index(i);
            let source = FdPath::new(m.source_fd);
            // SAFETY: the fd path and target are NUL-terminated buffers that
            // outlive the call.
            check(unsafe {
                libc::mount(
                    source.as_ptr(),
                    m.target.as_ptr(),
                    null,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                )
            })
            .map_err(|e| self.report(Stage::BindMount, idx, e))?;
            if m.read_only {
                // SAFETY: as above; a bind remount only changes per-mount flags.
                check(unsafe {
                    libc::mount(
                        null,
                        m.target.as_ptr(),
                        null,
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                        std::ptr::null(),
                    )
                })
                .map_err(|e| self.report(Stage::RemountReadOnly, idx, e))?;
            }
        }
        // SAFETY: pointer/length of a buffer owned by the plan.
        check(unsafe { libc::sethostname(self.hostname.as_ptr().cast(), self.hostname.len()) })
            .map_err(|e| self.report(Stage::Hostname, 0, e))?;
        // The child was forked into its PID namespace: a `/proc` of that namespace, as runc
        // mounts for every container.
        // SAFETY: NUL-terminated literals; mount(2) with no data.
        check(unsafe {
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        })
        .map_err(|e| self.report(Stage::MountProc, 0, e))?;
        if let Some(req) = self.loopback {
            net::loopback_up_with(req).map_err(|e| self.report(Stage::Loopback, 0, e))?;
        }
        // SAFETY: CString owned by the plan. Done here rather than through
        // Command::current_dir, which would run before the mounts.
        check(unsafe { libc::chdir(self.workdir.as_ptr()) })
            .map_err(|e| self.report(Stage::Chdir, 0, e))?;
        match &self.exe {
            ExeCheck::Path(path) => {
                if let Err(e) = stat(path)
                    && matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))
                {
                    return Err(self.report(Stage::NoSuchFile, 0, e));
                }
            }
            ExeCheck::Search(candidates) => {
                let found = candidates.iter().any(|c| {
                    // SAFETY: CString owned by the plan.
                    let executable = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
                    executable && stat(c).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
                });
                if !found {
                    return Err(self.report(
                        Stage::NotFound,
                        0,
                        io::Error::from_raw_os_error(libc::ENOENT),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Writes `stage`, `index` and the errno to the report pipe (one 9-byte
    /// write, atomic for pipes) and hands the error back.
    fn report(&self, stage: Stage, index: u32, err: io::Error) -> io::Error {
        let mut msg = [0u8; 9];
        msg[0] = stage as u8;
        msg[1..5].copy_from_slice(&index.to_le_bytes());
        msg[5..9].copy_from_slice(&err.raw_os_error().unwrap_or(0).to_le_bytes());
        // SAFETY: valid buffer and length; a failed write only loses detail.
        unsafe { libc::write(self.report_fd, msg.as_ptr().cast(), msg.len()) };
        err
    }
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// `/proc/self/fd/N` as a C string on the stack (no allocation after fork).
struct FdPath {
    buf: [u8; 32],
}

impl FdPath {
    fn new(fd: libc::c_int) -> FdPath {
        const PREFIX: &[u8] = b"/proc/self/fd/";
        let mut buf = [0u8; 32];
        buf[..PREFIX.len()].copy_from_slice(PREFIX);
        let mut digits = [0u8; 10];
        let (mut n, mut len) = (fd.unsigned_abs(), 0);
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for (k, d) in digits[..len].iter().rev().enumerate() {
            buf[PREFIX.len() + k] = *d;
        }
        FdPath { buf }
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }
}

fn stat(path: &CString) -> io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid C string and a buffer of the right type for stat(2).
    check(unsafe { libc::stat(path.as_ptr(), st.as_mut_ptr()) })?;
    // SAFETY: stat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() })
}

struct ChildReport {
    stage: Stage,
    index: usize,
    errno: i32,
}

impl ChildReport {
    fn decode(buf: &[u8]) -> Option<ChildReport> {
        let buf: &[u8; 9] = buf.get(..9)?.try_into().ok()?;
        let stage = *STAGES.iter().find(|s| **s as u8 == buf[0])?;
        let index = u32::from_le_bytes(buf[1..5].try_into().ok()?) as usize;
        let errno = i32::from_le_bytes(buf[5..9].try_into().ok()?);
        Some(ChildReport {
            stage,
            index,
            errno,
        })
    }

    fn into_error(
        self,
        program: &str,
        spec: &ContainerSpec<'_>,
        mounts: &[PreparedMount],
    ) -> RuntimeError {
        let mount = |what: &str| match mounts.get(self.index) {
            Some(m) => format!("{what} {} on {}", m.source.display(), m.target.display()),
            None => what.to_string(),
        };
        let step = match self.stage {
            Stage::NotFound => return RuntimeError::NotFound(program.to_string()),
            Stage::NoSuchFile => return RuntimeError::NoSuchFile(program.to_string()),
            Stage::Exec => {
                return RuntimeError::Exec {
                    program: program.to_string(),
                    source: io::Error::from_raw_os_error(self.errno),
                };
            }
            Stage::Setsid => "setsid".to_string(),
            Stage::JoinNodeNetwork => "join the node's network namespace".to_string(),
            Stage::Unshare => "create mount/UTS/IPC/network namespaces".to_string(),
            Stage::MakePrivate => "make mounts private".to_string(),
            Stage::OpenSource => mount("open mount source of"),
            Stage::BindMount => mount("bind mount"),
            Stage::RemountReadOnly => mount("read-only remount of"),
            Stage::Hostname => format!("set hostname {:?}", spec.hostname),
            Stage::Loopback => "bring up loopback".to_string(),
            Stage::MountProc => "mount /proc".to_string(),
            Stage::Chdir => format!(
                "chdir to working dir {}",
                spec.working_dir
                    .as_deref()
                    .unwrap_or(Path::new("/"))
                    .display()
            ),
        };
        RuntimeError::Setup {
            step,
            source: io::Error::from_raw_os_error(self.errno),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::io::AsyncReadExt;

    pub(crate) const SYS_PATH: &str =
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    pub(crate) fn spec<'a>(log: &Path, program: &str, args: &[&str]) -> ContainerSpec<'a> {
        ContainerSpec {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: vec![("PATH".into(), SYS_PATH.into())],
            working_dir: None,
            hostname: "test-pod".into(),
            network: Network::Isolated,
            pid: Pid::Own,
            mounts: Vec::new(),
            log_path: log.to_path_buf(),
        }
    }

    /// Runs to completion (5 s cap) and returns the exit and the log.
    pub(crate) async fn run(spec: ContainerSpec<'_>) -> (ExitInfo, String) {
        let log = spec.log_path.clone();
        let mut running = spawn(spec).expect("spawn");
        let exit = tokio::time::timeout(Duration::from_secs(5), running.wait())
            .await
            .expect("container did not exit in time")
            .expect("wait");
        (exit, std::fs::read_to_string(log).unwrap_or_default())
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A node whose init sleeps.
    fn node(dir: &Path) -> NodeNamespaces {
        let init = dir.join("systemd");
        if !init.exists() {
            std::fs::write(&init, "#!/bin/sh\nexec sleep 100\n").unwrap();
            std::fs::set_permissions(&init, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        NodeNamespaces::create(&init).unwrap()
    }

    const PERL_LISTEN: &str = r#"use IO::Socket::INET; $| = 1;
        my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 1)
            or die "bind: $!\n";
        print "bound\n"; sleep $ARGV[1];"#;

    #[tokio::test]
    async fn processes_on_different_nodes_bind_the_same_port() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (node(dir.path()), node(dir.path()));
        let port = free_port().to_string();

        let mut on_a = spec(
            &dir.path().join("a.log"),
            "perl",
            &["-e", PERL_LISTEN, &port, "30"],
        );
        on_a.network = Network::Node(&a);
        let mut holder = spawn(on_a).unwrap();
        let a_log = dir.path().join("a.log");
        wait_for("listener on node A", || {
            std::fs::read_to_string(&a_log).is_ok_and(|l| l.contains("bound"))
        })
        .await;

        let mut on_b = spec(
            &dir.path().join("b.log"),
            "perl",
            &["-e", PERL_LISTEN, &port, "0"],
        );
        on_b.network = Network::Node(&b);
        let (exit, log) = run(on_b).await;
        assert_eq!(
            (exit.exit_code, log.as_str()),
            (0, "bound\n"),
            "node B must have its own port space"
        );

        // Same node, same port: must collide (shows both really listen).
        let mut again_a = spec(
            &dir.path().join("a2.log"),
            "perl",
            &["-e", PERL_LISTEN, &port, "0"],
        );
        again_a.network = Network::Node(&a);
        let (exit, log) = run(again_a).await;
        assert_ne!(exit.exit_code, 0);
        assert!(log.contains("Address already in use"), "{log}");
        holder.stop(Duration::from_secs(1)).await.unwrap();

        // The same through bind_tcp.
        let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let _la = a.bind_tcp(addr).unwrap();
        let _lb = b.bind_tcp(addr).unwrap();
        assert_eq!(
            a.bind_tcp(addr).unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
    }

    #[tokio::test]
    async fn node_listener_is_reachable_only_from_that_node() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (node(dir.path()), node(dir.path()));
        let port = free_port();
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let listener = tokio::net::TcpListener::from_std(a.bind_tcp(addr).unwrap()).unwrap();
        let script = format!("echo hello > /dev/tcp/127.0.0.1/{port}");

        let mut from_a = spec(&dir.path().join("a.log"), "bash", &["-c", &script]);
        from_a.network = Network::Node(&a);
        let (exit, log) = run(from_a).await;
        assert_eq!(exit.exit_code, 0, "{log}");
        let (mut conn, _) = tokio::time::timeout(Duration::from_secs(2), listener.accept())
            .await
            .unwrap()
            .unwrap();
        let mut got = String::new();
        conn.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "hello\n");

        let mut from_b = spec(&dir.path().join("b.log"), "bash", &["-c", &script]);
        from_b.network = Network::Node(&b);
        let (exit, log) = run(from_b).await;
        assert_ne!(exit.exit_code, 0);
        assert!(log.contains("Connection refused"), "{log}");

        // "refused" rather than "Network is unreachable": the pod's lo is UP.
        let (exit, log) = run(spec(&dir.path().join("i.log"), "bash", &["-c", &script])).await;
        assert_ne!(exit.exit_code, 0);
        assert!(log.contains("Connection refused"), "{log}");

        // Not on the host either; but the sim can reach it through the node.
        assert!(std::net::TcpStream::connect(addr).is_err());
        let stream = a.connect_tcp(addr).unwrap();
        assert!(b.connect_tcp(addr).is_err());
        drop(stream);
        let peer = a
            .run_in(move || std::net::TcpStream::connect(addr).map(|s| s.peer_addr().unwrap()))
            .unwrap();
        assert_eq!(peer.unwrap(), addr);
    }

    #[tokio::test]
    async fn isolated_pods_have_a_working_loopback() {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port().to_string();
        // Listen and connect inside the same fresh namespace.
        let script = format!(
            "perl -e '{PERL_LISTEN}' {port} 5 > /dev/null & \
             for i in $(seq 100); do echo hi 2>/dev/null > /dev/tcp/127.0.0.1/{port} && exit 0; sleep 0.02; done; exit 7"
        );
        let (exit, log) = run(spec(&dir.path().join("log"), "bash", &["-c", &script])).await;
        assert_eq!(exit.exit_code, 0, "{log}");
    }

    #[tokio::test]
    async fn bind_mounts_are_private_and_honor_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (src, ro_src, nested_src) = (d.join("src"), d.join("ro-src"), d.join("nested-src"));
        for p in [&src, &ro_src, &nested_src] {
            std::fs::create_dir(p).unwrap();
        }
        std::fs::write(src.join("greeting"), "hi from src\n").unwrap();
        std::fs::write(ro_src.join("ro.txt"), "read me\n").unwrap();
        std::fs::write(nested_src.join("x"), "nested\n").unwrap();
        std::fs::write(d.join("single.conf"), "single file\n").unwrap();
        let (t, ro_t, file_t) = (
            d.join("c/data"),
            d.join("c/ro"),
            d.join("c/etc/single.conf"),
        );
        let nested_t = t.join("sub");

        let script = format!(
            "cat {t}/greeting {t}/sub/x {f} {r}/ro.txt && echo written > {t}/new && echo nope > {r}/w",
            t = t.display(),
            f = file_t.display(),
            r = ro_t.display()
        );
        let mut s = spec(&d.join("log"), "bash", &["-c", &script]);
        s.mounts = vec![
            // Deliberately deepest first: spawn orders them.
            Mount {
                source: nested_src.clone(),
                target: nested_t,
                read_only: false,
            },
            Mount {
                source: src.clone(),
                target: t.clone(),
                read_only: false,
            },
            Mount {
                source: ro_src.clone(),
                target: ro_t.clone(),
                read_only: true,
            },
            Mount {
                source: d.join("single.conf"),
                target: file_t.clone(),
                read_only: true,
            },
        ];
        let (exit, log) = run(s).await;
        assert_eq!(
            log.lines().take(4).collect::<Vec<_>>(),
            ["hi from src", "nested", "single file", "read me"],
            "{log}"
        );
        assert!(log.contains("Read-only file system"), "{log}");
        assert_eq!(exit.exit_code, 1);

        // Writes went to the source; the host never saw the mounts.
        assert_eq!(
            std::fs::read_to_string(src.join("new")).unwrap(),
            "written\n"
        );
        assert!(!ro_src.join("w").exists());
        assert!(
            src.join("sub").is_dir(),
            "nested target is created inside the enclosing source"
        );
        // Mount points the runtime had to create on this machine are gone once the container is
        // (unless another process's sim has containers right now: then removal waits for it).
        let lock =
            std::fs::File::open(std::env::temp_dir().join("yurtsim-mount-points.lock")).unwrap();
        if !flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
            eprintln!("another process holds the mount-point lock: removal is deferred");
            return;
        }
        assert!(!t.exists(), "created target dir removed after the run");
        assert!(
            !ro_t.exists(),
            "created read-only target removed after the run"
        );
        assert!(
            !file_t.exists(),
            "created file target removed after the run"
        );
    }

    #[tokio::test]
    async fn program_is_looked_up_after_mounting() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir(&tools).unwrap();
        let tool = tools.join("hello-tool");
        std::fs::write(&tool, "#!/bin/sh\necho tool ran\n").unwrap();
        std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let target = dir.path().join("mnt/bin");
        let mut s = spec(&dir.path().join("log"), "hello-tool", &[]);
        s.env = vec![("PATH".into(), format!("{}:{SYS_PATH}", target.display()))];
        s.mounts = vec![Mount {
            source: tools,
            target,
            read_only: true,
        }];
        let (exit, log) = run(s).await;
        assert_eq!((exit.exit_code, log.as_str()), (0, "tool ran\n"));
    }

    #[tokio::test]
    async fn system_targets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for target in [
            "/",
            "/etc",
            "/proc/",
            "/usr/../usr",
            "/bin",
            "/tmp/../sys",
            "/usr/lib",
            "relative/path",
        ] {
            let mut s = spec(&dir.path().join("log"), "true", &[]);
            s.mounts = vec![Mount {
                source: dir.path().into(),
                target: target.into(),
                read_only: true,
            }];
            match spawn(s) {
                Err(RuntimeError::InvalidSpec(msg)) => {
                    assert!(msg.contains("mount target"), "{msg}")
                }
                other => panic!("{target}: expected InvalidSpec, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn environment_hostname_and_working_dir() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(&dir.path().join("env.log"), "/usr/bin/env", &[]);
        s.env.push(("FOO".into(), "bar baz".into()));
        s.env.push(("EMPTY".into(), String::new()));
        let (exit, log) = run(s).await;
        assert_eq!(exit.exit_code, 0);
        let mut lines: Vec<_> = log.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            ["EMPTY=", "FOO=bar baz", &format!("PATH={SYS_PATH}")]
        );

        let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let mut s = spec(
            &dir.path().join("uts.log"),
            "bash",
            &["-c", "hostname; pwd"],
        );
        s.hostname = "worker-7".into();
        s.working_dir = Some(dir.path().into());
        let (exit, log) = run(s).await;
        assert_eq!(exit.exit_code, 0, "{log}");
        assert_eq!(log, format!("worker-7\n{}\n", dir.path().display()));
        assert_eq!(
            std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
            host_name
        );
    }

    #[tokio::test]
    async fn exit_codes_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("pods/p/c.log");
        let (exit, _) = run(spec(&log, "bash", &["-c", "exit 3"])).await;
        assert_eq!(
            exit,
            ExitInfo {
                exit_code: 3,
                signal: None,
                reason: "Error"
            }
        );
        let (exit, text) = run(spec(&log, "bash", &["-c", "echo out; echo err >&2"])).await;
        assert_eq!(
            exit,
            ExitInfo {
                exit_code: 0,
                signal: None,
                reason: "Completed"
            }
        );
        assert_eq!(
            text, "out\nerr\n",
            "both streams, appended after the silent first run"
        );
    }

    /// Whether the container's process group has no member left (as seen from this machine).
    fn group_gone(running: &Running) -> bool {
        // SAFETY: signal 0 only checks the group exists.
        unsafe { libc::kill(-(running.pid() as libc::pid_t), 0) != 0 }
    }

    #[tokio::test]
    async fn stop_terminates_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        // PID 1 of its namespace: SIGTERM reaches it only through a handler
        let script = format!(
            "trap 'exit 143' TERM; sleep 100 & touch {}; wait",
            marker.display()
        );
        let mut running = spawn(spec(&dir.path().join("log"), "bash", &["-c", &script])).unwrap();
        wait_for("background sleep", || marker.exists()).await;
        let started = Instant::now();
        let exit = running.stop(Duration::from_secs(5)).await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM should suffice"
        );
        assert_eq!(
            exit,
            ExitInfo {
                exit_code: 143,
                signal: None,
                reason: "Error"
            }
        );
        wait_for("background sleep to die", || group_gone(&running)).await;
        assert_eq!(running.wait().await.unwrap(), exit, "cached");
    }

    #[tokio::test]
    async fn stop_kills_after_grace() {
        let dir = tempfile::tempdir().unwrap();
        // no TERM handler: as PID 1 of its namespace it does not get the SIGTERM (as with
        // `docker stop` on a plain `sleep`)
        let mut running = spawn(spec(&dir.path().join("log"), "sleep", &["100"])).unwrap();
        let started = Instant::now();
        let exit = running.stop(Duration::from_millis(300)).await.unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert_eq!(
            exit,
            ExitInfo {
                exit_code: 137,
                signal: Some(libc::SIGKILL),
                reason: "Killed"
            }
        );
        wait_for("the container to be gone", || group_gone(&running)).await;
    }

    #[tokio::test]
    async fn a_container_sees_its_own_processes_and_a_host_pid_one_the_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let node = node(dir.path());
        let ps = "for p in /proc/[0-9]*; do echo \"${p#/proc/} $(cat $p/comm)\"; done";
        let (_, own) = run(spec(&dir.path().join("own"), "sh", &["-c", ps])).await;
        assert_eq!(own.trim(), "1 sh", "its own process only: {own}");
        let mut host = spec(&dir.path().join("host"), "sh", &["-c", ps]);
        host.pid = Pid::Node(&node);
        let (_, seen) = run(host).await;
        let lines: Vec<&str> = seen.lines().collect();
        assert!(lines.contains(&"1 sleep"), "the node's init: {seen}");
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with(" sh") && !l.starts_with("1 ")),
            "{seen}"
        );
        assert!(
            !seen.contains("yurtsim"),
            "not this machine's processes: {seen}"
        );
    }

    #[tokio::test]
    async fn start_failures_have_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let err = spawn(spec(&log, "definitely-not-a-program-xyz", &[])).unwrap_err();
        assert!(matches!(err, RuntimeError::NotFound(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "executable file not found in $PATH: definitely-not-a-program-xyz"
        );

        let err = spawn(spec(&log, "/nonexistent/prog", &[])).unwrap_err();
        assert!(matches!(err, RuntimeError::NoSuchFile(_)), "{err:?}");

        let mut s = spec(&log, "true", &[]);
        s.working_dir = Some(dir.path().join("missing"));
        let err = spawn(s).unwrap_err();
        assert!(
            matches!(&err, RuntimeError::Setup { step, .. } if step.contains("chdir")),
            "{err:?}"
        );

        // Found but not executable: exec itself fails.
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let err = spawn(spec(&log, plain.to_str().unwrap(), &[])).unwrap_err();
        assert!(
            matches!(&err, RuntimeError::Exec { source, .. } if source.kind() == io::ErrorKind::PermissionDenied),
            "{err:?}"
        );
    }
}
