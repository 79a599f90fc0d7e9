//! The exit codes themselves (docs/exit-codes.md), a leaf: which error means which code is
//! decided in `app/error.rs` alone.

/// A process exit status with a meaning (docs/exit-codes.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success, including "nothing to do".
    Ok = 0,
    /// Unexpected error (something may have changed; the message says what).
    Unexpected = 1,
    /// Usage error (bad flags).
    Usage = 2,
    /// Preflight failed or bad input; nothing changed.
    Preflight = 3,
    /// Partial failure: some nodes failed.
    Partial = 4,
    /// Timed out.
    Timeout = 5,
    /// Lock held by another run.
    Locked = 6,
    /// `diagnose` found a problem (an error, not only warnings).
    Problems = 7,
    /// Confirmation declined.
    Declined = 10,
    /// Interrupted.
    Interrupted = 130,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// A stable word for JSON results (`"timeout"`, `"preflight"`, …).
    pub fn reason(self) -> &'static str {
        match self {
            Exit::Ok => "ok",
            Exit::Unexpected => "unexpected",
            Exit::Usage => "usage",
            Exit::Preflight => "preflight",
            Exit::Partial => "partial",
            Exit::Timeout => "timeout",
            Exit::Locked => "locked",
            Exit::Problems => "problems",
            Exit::Declined => "declined",
            Exit::Interrupted => "interrupted",
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}
