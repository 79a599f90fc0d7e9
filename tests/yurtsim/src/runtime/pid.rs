//! PID namespaces: a node's own (its processes, and `hostPID: true` containers) and each
//! container's (the default).
//!
//! kubernetes/kubernetes@v1.33.0 pkg/kubelet/kuberuntime/util/util.go `PidNamespaceForPod`:
//! `hostPID: true` → NamespaceMode_NODE, `shareProcessNamespace: true` → NamespaceMode_POD,
//! otherwise NamespaceMode_CONTAINER: the container's first process is PID 1 of a namespace of
//! its own (runc), so it sees only its own processes in `/proc`, and signals it has no handler
//! for (SIGTERM included) do not reach it from outside, SIGKILL aside (pid_namespaces(7)).
//! The sim gives POD mode a namespace per container too: such a pod sees less, never more.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The PID namespace a container's first process is forked into.
#[derive(Debug, Clone, Copy)]
pub enum Pid<'a> {
    /// The node's (`hostPID: true`): sees the node's kubelet and other host processes.
    Node(&'a NodePids),
    /// A fresh namespace in which the container's process is PID 1.
    Own,
}

/// A node's PID namespace, kept alive by its init (PID 1). Dropping it kills init, and with it
/// every process left in the namespace.
#[derive(Debug)]
pub struct NodePids {
    ns: OwnedFd,
    init: Child,
}

impl NodePids {
    /// Starts `init` (an executable file, run without arguments) as PID 1 of a new namespace.
    pub fn create(init: &Path) -> io::Result<NodePids> {
        let init = busy_retried(|| {
            forked_in(PidTarget::Fresh, || {
                Command::new(init)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
            })?
        })?;
        let ns = File::open(format!("/proc/{}/ns/pid", init.id()))?;
        Ok(NodePids {
            ns: OwnedFd::from(ns),
            init,
        })
    }

    /// Starts `program args` as a process of the node (its own process group), output appended
    /// to `log`.
    pub fn spawn_process(
        &self,
        program: &Path,
        args: &[String],
        log: &Path,
    ) -> io::Result<HostProcess> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let err = out.try_clone()?;
        let child = busy_retried(|| {
            forked_in(PidTarget::Join(self.raw_fd()), || {
                use std::os::unix::process::CommandExt;
                Command::new(program)
                    .args(args)
                    .stdin(Stdio::null())
                    .stdout(out.try_clone()?)
                    .stderr(err.try_clone()?)
                    .process_group(0)
                    .spawn()
            })?
        })?;
        Ok(HostProcess { child })
    }

    /// The namespace fd, for `setns` by the thread that forks a `hostPID` container.
    pub(super) fn raw_fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }
}

impl Drop for NodePids {
    /// Kills init, and with it the namespace's processes. Not reaped here: init ends only once
    /// their parents (the sim) have reaped them, which may be later.
    fn drop(&mut self) {
        let _ = self.init.kill();
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while matches!(self.init.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// A process of a node (not a container), such as its kubelet.
#[derive(Debug)]
pub struct HostProcess {
    child: Child,
}

impl HostProcess {
    /// Process id as this machine sees it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Ok(pgid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: plain syscall; the group is the one `process_group(0)` created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

/// Runs `spawn` again (a few times, briefly) while it fails with ETXTBSY: a stand-in just
/// written may still be open for writing in a child another thread forked meanwhile, until
/// that child's exec closes it.
fn busy_retried<T>(mut spawn: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    for _ in 0..20 {
        match spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
    spawn()
}

/// Where the next fork of a thread lands.
#[derive(Clone, Copy)]
pub(super) enum PidTarget {
    Fresh,
    Join(RawFd),
}

impl From<Pid<'_>> for PidTarget {
    fn from(p: Pid<'_>) -> PidTarget {
        match p {
            Pid::Node(n) => PidTarget::Join(n.raw_fd()),
            Pid::Own => PidTarget::Fresh,
        }
    }
}

/// Runs `fork` (which forks once) on a throw-away thread whose children are created in
/// `target`: a namespace's "PID namespace for children" is per thread, and a fork's child
/// lands in its forking thread's.
pub(super) fn forked_in<T: Send>(
    target: PidTarget,
    fork: impl FnOnce() -> T + Send,
) -> io::Result<T> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("yurtsim-pidns".into())
            .spawn_scoped(s, move || -> io::Result<T> {
                // SAFETY: plain syscalls; they change only this thread's namespace for children.
                let rc = match target {
                    PidTarget::Fresh => unsafe { libc::unshare(libc::CLONE_NEWPID) },
                    PidTarget::Join(fd) => unsafe { libc::setns(fd, libc::CLONE_NEWPID) },
                };
                if rc != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(fork())
            })?;
        match handle.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn ns_of(pid: u32) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/{pid}/ns/pid")).unwrap()
    }

    #[test]
    fn a_node_process_lives_in_the_node_namespace_and_dies_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let init = script(dir.path(), "systemd", "exec sleep 600");
        let node = NodePids::create(&init).unwrap();
        let other = NodePids::create(&init).unwrap();
        let p = node
            .spawn_process(
                &script(dir.path(), "kubelet", "exec sleep 600"),
                &[],
                &dir.path().join("log"),
            )
            .unwrap();
        assert_eq!(ns_of(p.pid()), ns_of(node.init.id()));
        assert_ne!(ns_of(p.pid()), ns_of(other.init.id()));
        assert_ne!(ns_of(p.pid()), ns_of(std::process::id()));
        let status = format!("/proc/{}/status", p.pid());
        drop(node);
        // killed with its namespace's init: a zombie until its Drop reaps it
        let state = std::fs::read_to_string(&status).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains("State:\tZ"),
            "still running: {state}"
        );
        drop(p);
        drop(other);
    }
}
