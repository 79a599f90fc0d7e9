//! Per-node network namespaces (each simulated node has its own loopback).

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// A node's network namespace.
///
/// Created by a short-lived thread that `unshare(CLONE_NEWNET)`s, brings `lo`
/// up and opens `/proc/thread-self/ns/net`; the namespace then lives exactly
/// as long as this value (the owned fd is its only reference once the thread
/// has exited and no process runs inside).
#[derive(Debug)]
pub struct NodeNetwork {
    ns: OwnedFd,
}

impl NodeNetwork {
    /// Creates a fresh network namespace containing only `lo`, which is UP.
    pub fn create() -> io::Result<NodeNetwork> {
        let ns = run_on_thread(|| -> io::Result<OwnedFd> {
            // SAFETY: plain syscall without pointers. Namespaces are per task,
            // so only this throw-away thread moves into the new namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            loopback_up()?;
            Ok(OwnedFd::from(File::open("/proc/thread-self/ns/net")?))
        })??;
        Ok(NodeNetwork { ns })
    }

    /// Binds a TCP listener inside this namespace (the socket stays in the
    /// namespace it was created in, wherever it is used afterwards). The
    /// listener is non-blocking, ready for `tokio::net::TcpListener::from_std`.
    pub fn bind_tcp(&self, addr: SocketAddr) -> io::Result<TcpListener> {
        let listener = self.run_in(move || TcpListener::bind(addr))??;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    /// Connects to `addr` as seen from inside this namespace (e.g. the node's
    /// own `127.0.0.1`). The stream is non-blocking, ready for
    /// `tokio::net::TcpStream::from_std`. The connect itself blocks the
    /// calling thread (instant on loopback).
    pub fn connect_tcp(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = self.run_in(move || TcpStream::connect(addr))??;
        stream.set_nonblocking(true)?;
        Ok(stream)
    }

    /// Runs `f` on a fresh thread that has joined this namespace and waits
    /// for it (blocking the caller; use `spawn_blocking` for long closures).
    /// A panic in `f` is propagated to the caller.
    pub fn run_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        let ns = self.ns.as_fd();
        run_on_thread(move || -> io::Result<T> {
            enter(ns)?;
            Ok(f())
        })?
    }

    /// The namespace fd, for `setns` in a child between fork and exec.
    pub(super) fn raw_fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }
}

/// Runs `f` on a scoped helper thread: namespace changes die with the thread.
fn run_on_thread<T: Send>(f: impl FnOnce() -> T + Send) -> io::Result<T> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("yurtsim-netns".into())
            .spawn_scoped(s, f)?;
        match handle.join() {
            Ok(v) => Ok(v),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

fn enter(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `ns` is a valid, open namespace fd for the duration of the call;
    // only the calling (helper) thread changes namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `struct ifreq` restricted to the name and flags members (same size and
/// layout as the kernel's 40-byte struct). libc's `ifreq` holds a raw pointer
/// in its union, which would make the pre_exec closure `!Send`.
#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct IfFlagsReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

const _: () = assert!(std::mem::size_of::<IfFlagsReq>() == 40);

impl IfFlagsReq {
    pub(super) const fn loopback() -> IfFlagsReq {
        let mut name = [0u8; libc::IFNAMSIZ];
        name[0] = b'l';
        name[1] = b'o';
        IfFlagsReq {
            name,
            flags: 0,
            _pad: [0; 22],
        }
    }
}

/// Sets `lo` UP in the calling thread's network namespace.
///
/// Async-signal-safe (socket, ioctl, close; no allocation), so the forked
/// child of `spawn` uses it too.
pub(super) fn loopback_up_with(mut req: IfFlagsReq) -> io::Result<()> {
    // SAFETY: plain syscall; the returned fd is closed below on every path.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the pointer is to a live, writable 40-byte ifreq with a
    // NUL-terminated name, as SIOCGIFFLAGS expects.
    let mut rc = unsafe { libc::ioctl(sock, libc::SIOCGIFFLAGS as _, &mut req as *mut IfFlagsReq) };
    if rc == 0 {
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        // SAFETY: as above, for SIOCSIFFLAGS (which only reads it).
        rc = unsafe { libc::ioctl(sock, libc::SIOCSIFFLAGS as _, &mut req as *mut IfFlagsReq) };
    }
    let err = (rc != 0).then(io::Error::last_os_error);
    // SAFETY: `sock` is an fd we own and close exactly once.
    unsafe { libc::close(sock) };
    err.map_or(Ok(()), Err)
}

fn loopback_up() -> io::Result<()> {
    loopback_up_with(IfFlagsReq::loopback())
}
