//! Starting a container's process without copying the sim's address space.
//!
//! `fork` copies the parent's page tables and makes every page copy-on-write; for a sim holding
//! thousands of nodes that is milliseconds of kernel time per container, and most of the sim's
//! CPU at scale (perf: `copy_page_range`/`unmap_page_range` in the forking thread, then
//! `do_wp_page` faults in the runtime's workers). So the child is created as `posix_spawn`
//! creates it, with `clone(CLONE_VM | CLONE_VFORK)`: it runs on its own stack in the parent's
//! memory, the forking thread waits until it has exec'd or exited, and nothing is copied. The
//! child may only make syscalls on data prepared before the clone (as after `fork`), and must
//! not change memory the parent relies on (the parent's other threads keep running).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The exec half of a container start: argv, envp, the candidates for the program (`PATH`
/// searched as execvp does, or the one path given) and the three standard descriptors.
pub(super) struct Exec {
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

impl Exec {
    pub(super) fn new(
        candidates: Vec<CString>,
        argv: Vec<CString>,
        envp: Vec<CString>,
        stdout: OwnedFd,
        stderr: OwnedFd,
    ) -> io::Result<Exec> {
        let stdin = OwnedFd::from(std::fs::File::open("/dev/null")?);
        Ok(Exec {
            candidates,
            argv,
            envp,
            stdin,
            stdout,
            stderr,
        })
    }
}

/// What the child does between the clone and the exec (mounts, namespaces, ...), reporting a
/// failure on its own; async-signal-safe and allocation-free.
pub(super) trait Setup {
    fn run(&mut self) -> io::Result<()>;
    /// Reports that no candidate could be exec'd (errno of the last attempt).
    fn exec_failed(&self, err: io::Error);
}

struct ChildArgs<'a, S> {
    setup: &'a mut S,
    exec: &'a Exec,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    /// `/bin/sh FILE ARGS...`, for a file execve refused with ENOEXEC (execvp's fallback).
    sh_argv: &'a mut [*const libc::c_char],
}

const CHILD_STACK: usize = 256 * 1024;

/// Clones the calling thread into a child that runs `setup`, then execs. Returns its pid once
/// it has exec'd or exited (a failing child reported through `setup` and exits 127).
pub(super) fn spawn<S: Setup>(setup: &mut S, exec: &Exec) -> io::Result<libc::pid_t> {
    fn ptrs(v: &[CString]) -> Vec<*const libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    }
    let argv = ptrs(&exec.argv);
    let envp = ptrs(&exec.envp);
    let mut sh_argv: Vec<*const libc::c_char> = std::iter::once(c"/bin/sh".as_ptr())
        .chain(std::iter::once(std::ptr::null())) // the file, set by the child
        .chain(argv.iter().skip(1).copied())
        .collect();
    let mut args = ChildArgs {
        setup,
        exec,
        argv: &argv,
        envp: &envp,
        sh_argv: &mut sh_argv,
    };
    let mut stack = vec![0u8; CHILD_STACK];
    // The stack grows down; its top must be 16-byte aligned.
    let top = (stack.as_mut_ptr() as usize + CHILD_STACK) & !15;

    // No signal handler may run in the child (it would run on the parent's memory): block them
    // all for the clone; the child resets dispositions before unblocking.
    // SAFETY: sigset_t buffers initialised by sigfillset/pthread_sigmask.
    let mut all = unsafe { std::mem::zeroed::<libc::sigset_t>() };
    let mut old = unsafe { std::mem::zeroed::<libc::sigset_t>() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: `child::<S>` gets a pointer to `args`, which outlives the child's use of it: with
    // CLONE_VFORK this thread is suspended until the child exec'd or exited.
    let pid = unsafe {
        libc::clone(
            child::<S>,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut args as *mut ChildArgs<'_, S>).cast(),
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 { Err(err) } else { Ok(pid) }
}

extern "C" fn child<S: Setup>(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: the pointer `spawn` passed; the parent thread waits while we use it.
    let args = unsafe { &mut *arg.cast::<ChildArgs<'_, S>>() };
    // SAFETY: plain syscalls on descriptors and a signal set owned by this child.
    unsafe {
        // Handlers would run on the parent's memory; ignored signals stay ignored, as across
        // exec, except SIGPIPE, which the Rust runtime ignores for itself.
        for sig in 1..=64 {
            let mut current = std::mem::zeroed::<libc::sigaction>();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            if sig == libc::SIGPIPE || current.sa_sigaction > libc::SIG_IGN {
                let mut dfl = std::mem::zeroed::<libc::sigaction>();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        let mut none = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for (fd, target) in [
            (args.exec.stdin.as_raw_fd(), 0),
            (args.exec.stdout.as_raw_fd(), 1),
            (args.exec.stderr.as_raw_fd(), 2),
        ] {
            if libc::dup2(fd, target) < 0 {
                args.setup.exec_failed(io::Error::last_os_error());
                libc::_exit(127);
            }
        }
    }
    if args.setup.run().is_err() {
        // SAFETY: ends the child without running anything of the parent's (atexit, buffers).
        unsafe { libc::_exit(127) };
    }
    let mut last = libc::ENOENT;
    for c in &args.exec.candidates {
        // SAFETY: NUL-terminated strings and null-terminated arrays prepared before the clone.
        unsafe { libc::execve(c.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr()) };
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if errno == libc::ENOEXEC {
            args.sh_argv[1] = c.as_ptr();
            // SAFETY: as above; slot 1 now names the file.
            unsafe {
                libc::execve(
                    c"/bin/sh".as_ptr(),
                    args.sh_argv.as_ptr(),
                    args.envp.as_ptr(),
                )
            };
            last = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            break;
        }
        // execvp goes on past a missing or inaccessible candidate and stops at other errors.
        if errno != libc::ENOENT && errno != libc::ENOTDIR && errno != libc::EACCES {
            last = errno;
            break;
        }
        if last != libc::EACCES {
            last = errno;
        }
    }
    args.setup.exec_failed(io::Error::from_raw_os_error(last));
    // SAFETY: as above.
    unsafe { libc::_exit(127) }
}

/// A child started by [`spawn`], waited for through a pidfd (tokio's own reaper only reaps the
/// children it started).
#[derive(Debug)]
pub(super) struct Child {
    pid: libc::pid_t,
    pidfd: Option<AsyncFd<OwnedFd>>,
    reaped: bool,
}

impl Child {
    /// Takes over `pid`, a child of this process that nobody else waits for.
    pub(super) fn adopt(pid: libc::pid_t) -> io::Result<Child> {
        // SAFETY: plain syscall; the pid cannot be reused before we reap it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that only we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        // SAFETY: the AsyncFd owns the descriptor, so it stays open and the same while registered.
        let pidfd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE)? };
        Ok(Child {
            pid,
            pidfd: Some(pidfd),
            reaped: false,
        })
    }

    /// Reaps a child that is known to have ended (a failed start), blocking.
    pub(super) fn reap_now(pid: libc::pid_t) {
        let mut status = 0;
        // SAFETY: plain syscall on our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }

    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.reaped {
            return Err(io::Error::other("child already reaped"));
        }
        let mut status = 0;
        // SAFETY: plain syscall on our own child.
        match unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } {
            0 => Ok(None),
            pid if pid == self.pid => {
                self.reaped = true;
                Ok(Some(ExitStatus::from_raw(status)))
            }
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Waits for the child to exit (cancel-safe).
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let pidfd = self.pidfd.as_ref().expect("pidfd kept until drop");
            // A pidfd is readable once its process has exited.
            let mut ready = pidfd.readable().await?;
            ready.clear_ready();
        }
    }
}

impl Drop for Child {
    /// Reaps in the background a child that was not waited for (its owner killed it).
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        let pid = self.pid;
        let pidfd = self.pidfd.take();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if let Some(fd) = &pidfd {
                        let _ = fd.readable().await;
                    }
                    Child::reap_now(pid);
                });
            }
            Err(_) => {
                std::thread::spawn(move || Child::reap_now(pid));
            }
        }
    }
}
