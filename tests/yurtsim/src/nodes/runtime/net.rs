//! Entering network namespaces and bringing their loopback up.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, OnceLock, mpsc};

/// Runs `f` on a scoped helper thread: namespace changes die with the thread.
pub(super) fn run_on_thread<T: Send>(f: impl FnOnce() -> T + Send) -> io::Result<T> {
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

/// A TCP socket made inside the network namespace `ns`, not yet connected: it stays in that
/// namespace wherever it is used, so `TcpSocket::connect` then waits on Tokio's reactor and
/// not on a thread. One long-lived thread makes every node's sockets (a `setns` and a
/// `socket` each), instead of a new thread per connection.
pub(super) async fn socket_in(ns: OwnedFd, v6: bool) -> io::Result<tokio::net::TcpSocket> {
    type Request = (
        OwnedFd,
        bool,
        tokio::sync::oneshot::Sender<io::Result<tokio::net::TcpSocket>>,
    );
    static MAKER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let maker = MAKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("yurtsim-netns-sockets".into())
            .spawn(move || {
                for (ns, v6, reply) in rx {
                    let made = enter(ns.as_fd()).and_then(|()| match v6 {
                        true => tokio::net::TcpSocket::new_v6(),
                        false => tokio::net::TcpSocket::new_v4(),
                    });
                    let _ = reply.send(made);
                }
            })
            .expect("the socket-making thread starts");
        Mutex::new(tx)
    });
    let (reply, made) = tokio::sync::oneshot::channel();
    maker
        .lock()
        .unwrap()
        .send((ns, v6, reply))
        .map_err(|_| io::Error::other("the socket-making thread has ended"))?;
    made.await
        .map_err(|_| io::Error::other("the socket-making thread has ended"))?
}

pub(super) fn enter(ns: BorrowedFd<'_>) -> io::Result<()> {
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

pub(super) fn loopback_up() -> io::Result<()> {
    loopback_up_with(IfFlagsReq::loopback())
}
