//! Preparing a container's start in the parent: its mounts checked, normalized and claimed
//! (one container per mount point), its targets created, its log opened.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};

use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::*;

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
pub(super) struct PreparedMount {
    pub(super) source: PathBuf,
    pub(super) target: PathBuf,
    read_only: bool,
}

pub(super) struct Prepared {
    pub(super) mounts: Vec<PreparedMount>,
    pub(super) claims: MountPointClaims,
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
pub(super) struct MountPointClaims {
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

pub(super) fn flock(f: &std::fs::File, op: libc::c_int) -> bool {
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
    pub(super) fn create(&mut self, target: &Path, dir: bool) -> Result<(), RuntimeError> {
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
    pub(super) fn new(spec: &ContainerSpec<'_>) -> Result<Prepared, RuntimeError> {
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
    pub(super) fn child_plan(
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

pub(super) fn cstring(s: impl AsRef<OsStr>) -> Result<CString, RuntimeError> {
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

pub(super) fn open_log(path: &Path) -> Result<File, RuntimeError> {
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
