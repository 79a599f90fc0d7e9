//! The one error edge (cargo-nextest's `ExpectedError`): every error a command ends on is a
//! [`CommandError`], built with `?`/`From` from the modules' own error types, and this file
//! alone decides its exit code (docs/exit-codes.md) and prints it.

use crate::app::node::HostCommandError;
use crate::app::node_servant::error::NodeServantError;
use crate::cluster::ClusterError;
use crate::cluster::lock::LockError;
use crate::exec::lock::TakeError;
use crate::exec::phases::{Ended, Stop};
use crate::exit::Exit;
use crate::plan::PlanError;
use crate::render::RenderError;

/// Why a command stops.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Flags or values that are wrong on their face (exit 2).
    #[error("{0}")]
    Usage(String),

    /// A profile that cannot be loaded is a bad `--profile` (exit 2).
    #[error(transparent)]
    Profile(#[from] RenderError),

    /// The planner refused: a usage error (2) or preflight findings (3).
    #[error("{}", plan_message(.0))]
    Plan(#[from] PlanError),

    /// What the cluster shows wrong for this input, found before anything changed (exit 3).
    #[error("{0}")]
    Refused(String),

    #[error(transparent)]
    Cluster(#[from] ClusterError),

    /// The run lock could not be taken (held: exit 6).
    #[error(transparent)]
    Lock(#[from] TakeError),

    /// Where an error happened: a phase (`[lock] `), or what the command was doing.
    #[error("{context}{source}")]
    At {
        context: String,
        source: Box<CommandError>,
    },

    /// A run that stopped part-way; its message says where, and the phase that stopped it
    /// chose the exit (its node results say the rest).
    #[error("{message}")]
    Stopped { message: String, exit: Exit },

    #[error("{0}")]
    Interrupted(String),

    /// The user said no (a plain line, exit 10).
    #[error("{0}")]
    Declined(String),

    /// No confirmation could be asked for (no terminal, or the prompt failed): exit 10.
    #[error("{0}")]
    NoConfirmation(String),

    #[error(transparent)]
    Servant(#[from] NodeServantError),

    /// This machine failed us (the async runtime, a file, a child process): exit 1.
    #[error("{0}")]
    Local(String),
}

/// Preflight findings say which phase found them.
fn plan_message(e: &PlanError) -> String {
    match e {
        PlanError::Usage(_) => e.to_string(),
        PlanError::Preflight(_) => format!("[{}] {e}", crate::plan::PREFLIGHT),
    }
}

impl CommandError {
    /// `source` with where it happened in front: `[phase] ` or `what: `.
    pub fn at(context: impl Into<String>, source: impl Into<CommandError>) -> CommandError {
        CommandError::At {
            context: context.into(),
            source: Box::new(source.into()),
        }
    }

    /// The exit code (docs/exit-codes.md): the one mapping from errors to codes.
    pub fn exit(&self) -> Exit {
        use CommandError as E;
        match self {
            E::Usage(_) | E::Profile(_) | E::Plan(PlanError::Usage(_)) => Exit::Usage,
            E::Plan(PlanError::Preflight(_)) | E::Refused(_) => Exit::Preflight,
            E::Cluster(e) => cluster_exit(e),
            E::Lock(TakeError::ForceUnlock(e) | TakeError::Acquire(e)) => cluster_exit(e),
            E::At { source, .. } => source.exit(),
            E::Stopped { exit, .. } => *exit,
            E::Interrupted(_) => Exit::Interrupted,
            E::Declined(_) | E::NoConfirmation(_) => Exit::Declined,
            E::Servant(e) => servant_exit(e),
            E::Local(_) => Exit::Unexpected,
        }
    }

    /// Prints `error: …` on stderr (an interruption or a "no" is not an error: its line is
    /// plain) and returns the exit code.
    pub fn report(&self) -> Exit {
        self.print();
        self.exit()
    }

    /// Prints it as [`CommandError::report`] does, for an error among several (each failed
    /// node of a phase) whose run decides the exit code.
    pub fn print(&self) {
        match self {
            CommandError::Interrupted(m) | CommandError::Declined(m) => eprintln!("{m}"),
            e => eprintln!("error: {e}"),
        }
    }

    /// The error of a phase run that did not complete (`command` names what to re-run);
    /// `None` for one that completed, whose node results say how it went.
    pub fn of_run(ended: &Ended, command: &str) -> Option<CommandError> {
        Some(match ended {
            Ended::Completed => return None,
            Ended::Stopped {
                phase,
                stop: Stop::Cluster(e),
            } => CommandError::at(format!("[{phase}] "), e.clone()),
            Ended::Stopped {
                stop: Stop::Halt { exit, message },
                ..
            } => CommandError::Stopped {
                message: message.clone(),
                exit: *exit,
            },
            Ended::Interrupted {
                phase,
                changed: false,
            } => CommandError::Interrupted(format!(
                "interrupted during {phase}; nothing was changed"
            )),
            Ended::Interrupted { changed: true, .. } => CommandError::Interrupted(format!(
                "interrupted; progress is journaled: re-run {command} to resume"
            )),
            Ended::LockLost(e) => CommandError::at("stopped: ", e.clone()),
        })
    }
}

/// What a cluster error means for the run.
fn cluster_exit(e: &ClusterError) -> Exit {
    use ClusterError as E;
    match e {
        E::Lock(LockError::Held { .. }) => Exit::Locked,
        E::Timeout { .. } => Exit::Timeout,
        // Permissions are checked up front (SelfSubjectAccessReview) and credentials at
        // connect, so these stop a run at a read, before anything changed.
        E::Connect(_) | E::Unauthorized { .. } | E::Forbidden { .. } => Exit::Preflight,
        _ => Exit::Unexpected,
    }
}

/// A run's exit code from its nodes (convert, revert, upgrade): `partial` when one failed,
/// else `timeout` when one timed out, else `partial` when one was skipped, `ok` otherwise.
pub fn nodes_exit(f: &crate::output::NodeFailures) -> Exit {
    if f.failed > 0 {
        Exit::Partial
    } else if f.timed_out > 0 {
        Exit::Timeout
    } else if f.skipped > 0 {
        Exit::Partial
    } else {
        Exit::Ok
    }
}

/// What a node servant's failure means for its Job (yurtctl reads the Job's exit code); the
/// servant prints its errors as log lines and in its JSON result.
pub fn servant_exit(e: &NodeServantError) -> Exit {
    use NodeServantError as E;
    match e {
        E::Output { .. } => Exit::Usage,
        E::Plan(_)
        | E::Input { .. }
        | E::NotRoot { .. }
        | E::OwnPidNamespace { .. }
        | E::PreflightFailed { .. }
        | E::ConvertedByOther { .. } => Exit::Preflight,
        E::HubTimeout { .. }
        | E::HubSwitch { .. }
        | E::Host {
            source: HostCommandError::Timeout { .. },
            ..
        } => Exit::Timeout,
        E::Apply { .. } | E::Host { .. } | E::Verify(_) | E::AfterChanges { .. } => {
            Exit::Unexpected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_error_has_its_documented_exit_code() {
        let timeout = ClusterError::Timeout {
            what: "Deployment kube-system/yurt-manager available".into(),
            after: Duration::from_secs(5),
        };
        let held = ClusterError::from(LockError::Held {
            lease: "kube-system/yurtctl-lock".into(),
            holder: "eve".into(),
            run: "a revert run by eve".into(),
            renew_time: None,
            expires_in: Duration::from_secs(3),
        });
        let forbidden = ClusterError::Forbidden {
            action: "list Nodes".into(),
            verb: "list".into(),
            resource: "nodes".into(),
            message: "no".into(),
        };
        let api = ClusterError::Api {
            action: "create Job".into(),
            code: 500,
            reason: "InternalError".into(),
            message: "boom".into(),
        };
        let rows: Vec<(CommandError, Exit)> = vec![
            (CommandError::Usage("bad".into()), Exit::Usage),
            (PlanError::Usage("bad".into()).into(), Exit::Usage),
            (PlanError::Preflight(Vec::new()).into(), Exit::Preflight),
            (CommandError::Refused("no pod".into()), Exit::Preflight),
            (timeout.clone().into(), Exit::Timeout),
            (held.clone().into(), Exit::Locked),
            (TakeError::Acquire(held.clone()).into(), Exit::Locked),
            (CommandError::at("[lock] ", held), Exit::Locked),
            (forbidden.into(), Exit::Preflight),
            (api.clone().into(), Exit::Unexpected),
            (CommandError::at("[verify] ", timeout), Exit::Timeout),
            (CommandError::Interrupted("x".into()), Exit::Interrupted),
            (CommandError::Declined("x".into()), Exit::Declined),
            (CommandError::NoConfirmation("x".into()), Exit::Declined),
            (CommandError::Local("x".into()), Exit::Unexpected),
            (
                NodeServantError::Output {
                    format: "yaml".into(),
                }
                .into(),
                Exit::Usage,
            ),
            (
                NodeServantError::PreflightFailed { failed: Vec::new() }.into(),
                Exit::Preflight,
            ),
        ];
        for (e, want) in rows {
            assert_eq!(e.exit(), want, "{e:?}");
        }
    }

    #[test]
    fn a_stopped_run_says_where_and_keeps_its_exit() {
        let e = ClusterError::Timeout {
            what: "Node w1 Ready".into(),
            after: Duration::from_secs(2),
        };
        let stopped = Ended::Stopped {
            phase: "verify",
            stop: Stop::Cluster(e),
        };
        let err = CommandError::of_run(&stopped, "convert").unwrap();
        assert_eq!(
            err.to_string(),
            "[verify] timed out after 2s waiting for Node w1 Ready"
        );
        assert_eq!(err.exit(), Exit::Timeout);
        let resumable = Ended::Interrupted {
            phase: "nodes/edge",
            changed: true,
        };
        let err = CommandError::of_run(&resumable, "revert").unwrap();
        assert_eq!(
            err.to_string(),
            "interrupted; progress is journaled: re-run revert to resume"
        );
        assert_eq!(err.exit(), Exit::Interrupted);
        assert!(CommandError::of_run(&Ended::Completed, "convert").is_none());
    }
}
