//! A node's network and PID namespaces, held by its init process.
//!
//! On a real machine PID 1 lives in the host's network and PID namespaces, and the namespaces
//! live as long as it does. The sim does the same: a node's init (a stand-in for systemd) is
//! forked into a fresh network namespace (with `lo` UP) and a fresh PID namespace, and is the
//! only thing keeping them. Whoever needs to enter one opens `/proc/<init>/ns/{net,pid}` for
//! that moment, so a node costs no open descriptor between uses: ten thousand nodes share one
//! process whose open-files limit may be as low as 20,000 (hard).
//!
//! init and the node processes started here get the sim's lifeline as their stdin: the read end
//! of a pipe whose write end only the sim holds (close-on-exec, so no child inherits it). When
//! the sim ends, however it ends, the stand-ins read the end of their input and exit, and init's
//! exit ends its PID namespace: a killed sim leaves no process behind.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use super::net::{enter, loopback_up, run_on_thread, socket_in};
use super::pid::{HostProcess, PidTarget, busy_retried, forked_in};

/// A node's namespaces. Dropping it kills init, and with it every process left in its PID
/// namespace; the network namespace goes with the last socket bound in it.
#[derive(Debug)]
pub struct NodeNamespaces {
    init: Child,
}

impl NodeNamespaces {
    /// Starts `init` (an executable file, run without arguments) as PID 1 of a new PID
    /// namespace, inside a new network namespace holding only `lo` (UP).
    pub fn create(init: &Path) -> io::Result<NodeNamespaces> {
        let init = busy_retried(|| {
            run_on_thread(|| -> io::Result<Child> {
                // SAFETY: plain syscall; only this throw-away thread moves into the new
                // network namespace, and the PID namespace is its children's.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                loopback_up()?;
                forked_in(PidTarget::Fresh, || {
                    Command::new(init)
                        .stdin(lifeline()?)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                })?
            })?
        })?;
        Ok(NodeNamespaces { init })
    }

    /// An fd of the node's network namespace, for `setns` (open only as long as it is held).
    pub fn net_fd(&self) -> io::Result<OwnedFd> {
        self.ns_fd("net")
    }

    /// An fd of the node's PID namespace, for `setns` by a thread that forks into it.
    pub fn pid_fd(&self) -> io::Result<OwnedFd> {
        self.ns_fd("pid")
    }

    fn ns_fd(&self, kind: &str) -> io::Result<OwnedFd> {
        // init is our unreaped child: its pid cannot name another process meanwhile
        File::open(format!("/proc/{}/ns/{kind}", self.init.id()))
            .map(OwnedFd::from)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("the node's {kind} namespace (its init has ended?): {e}"),
                )
            })
    }

    /// Binds a TCP listener inside the node's network (the socket stays in the namespace it
    /// was created in, wherever it is used afterwards). The listener is non-blocking, ready
    /// for `tokio::net::TcpListener::from_std`.
    pub fn bind_tcp(&self, addr: SocketAddr) -> io::Result<TcpListener> {
        let listener = self.run_in(move || TcpListener::bind(addr))??;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    /// Connects to `addr` as seen from inside the node (e.g. its own `127.0.0.1`), without
    /// holding a thread while the connection is made.
    pub async fn connect_tcp(&self, addr: SocketAddr) -> io::Result<tokio::net::TcpStream> {
        socket_in(self.net_fd()?, addr.is_ipv6())
            .await?
            .connect(addr)
            .await
    }

    /// Runs `f` on a fresh thread that has joined the node's network and waits for it
    /// (blocking the caller; use `spawn_blocking` for long closures). A panic in `f` is
    /// propagated to the caller.
    pub fn run_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        let ns = self.net_fd()?;
        let ns = ns.as_fd();
        run_on_thread(move || -> io::Result<T> {
            enter(ns)?;
            Ok(f())
        })?
    }

    /// Starts `program args` as a process of the node (its PID namespace and network, its own
    /// process group), output appended to `log`.
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
        let (pid_ns, net_ns) = (self.pid_fd()?, self.net_fd()?);
        let child = busy_retried(|| {
            forked_in(PidTarget::Join(pid_ns.as_raw_fd()), || {
                use std::os::unix::process::CommandExt;
                // the forking thread's network is its child's
                enter(net_ns.as_fd())?;
                Command::new(program)
                    .args(args)
                    .stdin(lifeline()?)
                    .stdout(out.try_clone()?)
                    .stderr(err.try_clone()?)
                    .process_group(0)
                    .spawn()
            })?
        })?;
        Ok(HostProcess::new(child))
    }

    /// The host PID of the namespaces' init (what `ip link … netns PID` takes).
    pub fn init_pid(&self) -> u32 {
        self.init.id()
    }
}

/// A new descriptor of the lifeline's read end, for a child's stdin.
fn lifeline() -> io::Result<Stdio> {
    static PIPE: OnceLock<io::Result<(OwnedFd, OwnedFd)>> = OnceLock::new();
    let pipe = PIPE.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors we then own; O_CLOEXEC keeps both out of every
        // child (a child's stdin is a dup2 of the read end, which clears the flag on fd 0).
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        // SAFETY: both just created and owned by nobody else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    });
    match pipe {
        Ok((read, _write)) => Ok(Stdio::from(read.try_clone()?)),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("the sim's lifeline pipe: {e}"),
        )),
    }
}

impl Drop for NodeNamespaces {
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

    fn ns_of(pid: u32, kind: &str) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).unwrap()
    }

    /// What this process's open descriptors refer to.
    fn open_fd_targets() -> Vec<std::path::PathBuf> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .collect()
    }

    /// A process of `node` that sleeps, from a script written into `dir`.
    fn sleeping_process(node: &NodeNamespaces, dir: &Path) -> HostProcess {
        node.spawn_process(
            &script(dir, "kubelet", "exec sleep 600"),
            &[],
            &dir.join("log"),
        )
        .unwrap()
    }

    #[test]
    fn a_node_process_lives_in_the_node_namespaces_and_dies_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let init = script(dir.path(), "systemd", "exec sleep 600");
        let node = NodeNamespaces::create(&init).unwrap();
        let other = NodeNamespaces::create(&init).unwrap();
        let p = sleeping_process(&node, dir.path());
        for kind in ["pid", "net"] {
            assert_eq!(ns_of(p.pid(), kind), ns_of(node.init_pid(), kind), "{kind}");
            assert_ne!(
                ns_of(p.pid(), kind),
                ns_of(other.init_pid(), kind),
                "{kind}"
            );
            assert_ne!(
                ns_of(p.pid(), kind),
                ns_of(std::process::id(), kind),
                "{kind}"
            );
        }
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

    #[test]
    fn init_and_node_processes_read_the_sims_lifeline() {
        let dir = tempfile::tempdir().unwrap();
        let init = script(dir.path(), "systemd", "exec sleep 600");
        let node = NodeNamespaces::create(&init).unwrap();
        let p = sleeping_process(&node, dir.path());
        let open = open_fd_targets();
        for pid in [node.init_pid(), p.pid()] {
            let stdin = std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap();
            assert!(stdin.to_string_lossy().starts_with("pipe:"), "{stdin:?}");
            // the sim holds the pipe (its write end): the process sees EOF only once it ends
            assert!(
                open.contains(&stdin),
                "{stdin:?} not held by the sim: {open:?}"
            );
            let theirs = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap();
            let held = theirs
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|t| *t == stdin)
                .count();
            assert_eq!(held, 1, "only its stdin, no inherited write end");
        }
    }

    #[test]
    fn nodes_hold_no_descriptor_between_uses() {
        let dir = tempfile::tempdir().unwrap();
        let init = script(dir.path(), "systemd", "exec sleep 600");
        let nodes: Vec<NodeNamespaces> = (0..20)
            .map(|_| NodeNamespaces::create(&init).unwrap())
            .collect();
        for n in &nodes {
            let inside = n.run_in(|| std::fs::read_link("/proc/thread-self/ns/net").unwrap());
            assert_eq!(inside.unwrap(), ns_of(n.init_pid(), "net"));
        }
        let open = open_fd_targets();
        for n in &nodes {
            for kind in ["pid", "net"] {
                let ns = ns_of(n.init_pid(), kind);
                assert!(!open.contains(&ns), "{ns:?} held open: {open:?}");
            }
        }
    }
}
