//! What the child does between fork and exec, stage by stage (namespaces, mounts, `/proc`,
//! the program), and how it reports a failed stage to the parent.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;

use super::*;

pub(super) struct ChildMount {
    pub(super) source: CString,
    /// O_PATH fd of `source`, opened by the child before any mount.
    pub(super) source_fd: libc::c_int,
    pub(super) target: CString,
    pub(super) read_only: bool,
}

pub(super) enum ExeCheck {
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
pub(super) struct ChildPlan {
    pub(super) report_fd: RawFd,
    pub(super) node_netns: Option<RawFd>,
    pub(super) unshare_flags: libc::c_int,
    pub(super) loopback: Option<IfFlagsReq>,
    pub(super) mounts: Vec<ChildMount>,
    pub(super) hostname: Vec<u8>,
    pub(super) workdir: CString,
    pub(super) exe: ExeCheck,
}

/// Turns a -1/non-zero syscall result into the errno.
pub(super) fn check(rc: libc::c_int) -> io::Result<()> {
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
    pub(super) fn run(&mut self) -> io::Result<()> {
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
    pub(super) fn new(fd: libc::c_int) -> FdPath {
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

pub(super) fn stat(path: &CString) -> io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid C string and a buffer of the right type for stat(2).
    check(unsafe { libc::stat(path.as_ptr(), st.as_mut_ptr()) })?;
    // SAFETY: stat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() })
}

pub(super) struct ChildReport {
    stage: Stage,
    index: usize,
    errno: i32,
}

impl ChildReport {
    pub(super) fn decode(buf: &[u8]) -> Option<ChildReport> {
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

    pub(super) fn into_error(
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
