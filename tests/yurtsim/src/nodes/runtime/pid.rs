//! PID namespaces: a node's own (its processes, and `hostPID: true` containers) and each
//! container's (the default).
//!
//! kubernetes/kubernetes@v1.33.0 pkg/kubelet/kuberuntime/util/util.go `PidNamespaceForPod`:
//! `hostPID: true` → NamespaceMode_NODE, `shareProcessNamespace: true` → NamespaceMode_POD,
//! otherwise NamespaceMode_CONTAINER: the container's first process is PID 1 of a namespace of
//! its own (runc), so it sees only its own processes in `/proc`, and signals it has no handler
//! for (SIGTERM included) do not reach it from outside, SIGKILL aside (pid_namespaces(7)).
//! The sim gives POD mode a namespace per container too: such a pod sees less, never more.

use std::io;
use std::os::fd::RawFd;
use std::process::Child;

use super::NodeNamespaces;

/// The PID namespace a container's first process is forked into.
#[derive(Debug, Clone, Copy)]
pub enum Pid<'a> {
    /// The node's (`hostPID: true`): sees the node's kubelet and other host processes.
    Node(&'a NodeNamespaces),
    /// A fresh namespace in which the container's process is PID 1.
    Own,
}

/// A process of a node (not a container), such as its kubelet.
#[derive(Debug)]
pub struct HostProcess {
    child: Child,
}

impl HostProcess {
    pub(super) fn new(child: Child) -> HostProcess {
        HostProcess { child }
    }

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
pub(super) fn busy_retried<T>(mut spawn: impl FnMut() -> io::Result<T>) -> io::Result<T> {
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
