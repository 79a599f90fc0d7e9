//! Phases as data, one runner (kubeadm's workflow; docs/architecture.md#layers). A command is a
//! table of [`PhaseDef`]s in run order; [`run`] walks it for the real run and [`dry_run`] for
//! `--dry-run=server`, so a phase added to the table is in both, in the same place.
//!
//! The runner checks `--skip-phases`, reports started/skipped/done, stops at Ctrl-C or when
//! the run's lock is lost, and tells the command where and why it stopped. What a phase does
//! is the command's: one function per phase.

use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use crate::cluster::ClusterError;
use crate::exec::dry_run::Write;
pub use crate::exec::dry_run::WritesFuture;
use crate::exit::Exit;
use crate::output::{Event, Reporter};

/// How a phase that ran lets the run go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Done; the next phase runs.
    Continue,
    /// The run ends here as planned (the phase is not reported done; results say why).
    Finish,
}

/// Why a phase stopped the run.
#[derive(Debug)]
pub enum Stop {
    /// A cluster error: `[phase] error`, exit code from the error.
    Cluster(ClusterError),
    /// The phase decided the run cannot go on (it reported the details).
    Halt { exit: Exit, message: String },
}

impl From<ClusterError> for Stop {
    fn from(e: ClusterError) -> Self {
        Stop::Cluster(e)
    }
}

/// Whether a phase that is not skipped has anything to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    Some,
    /// Nothing to do: nothing is reported.
    None,
    /// Nothing to do, and the user is told why.
    Note(String),
}

impl Work {
    /// Something to do when `yes`, else nothing (and nothing reported).
    pub fn when(yes: bool) -> Work {
        if yes { Work::Some } else { Work::None }
    }
}

pub type PhaseFuture<'r> = LocalBoxFuture<'r, Result<Flow, Stop>>;

/// One row of a command's phase table.
pub struct PhaseDef<C> {
    /// The stable id (`--skip-phases`, messages, the plan).
    pub id: &'static str,
    /// Whether it changes the cluster: the command journals before the first such phase.
    pub changes: bool,
    /// Whether it watches stops and the lock itself (the rollout driver), so that it ends in
    /// a state of its own (results, progress recorded) instead of being dropped by the runner.
    pub stops_itself: bool,
    /// Whether there is anything to do in this run.
    pub work: fn(&C) -> Work,
    /// What it runs.
    pub run: for<'r> fn(&'r mut C) -> PhaseFuture<'r>,
    /// The writes it would send, for `--dry-run=server` (`dryRun=All`).
    pub dry_run: for<'r> fn(&'r C) -> WritesFuture<'r>,
}

/// A phase with nothing to send in a server dry run (checks, waits).
pub fn no_writes<C>(_: &C) -> WritesFuture<'_> {
    Box::pin(async { Ok(Vec::new()) })
}

/// What the runner needs from a command's run context.
pub trait RunContext {
    /// Whether phase `id` is in the plan and not skipped.
    fn runs(&self, id: &str) -> bool;
    fn reporter(&self) -> &dyn Reporter;
    /// Fires when the run's lock is lost (None until a lock is held).
    fn lock_lost(&self) -> Option<watch::Receiver<Option<ClusterError>>>;
    /// How many nodes phase `id` runs node Jobs on, when it runs any (the bars' totals).
    fn phase_nodes(&self, _id: &str) -> Option<usize> {
        None
    }
    /// Called once, before the first phase that changes the cluster (save the journal).
    fn begin_changes(&mut self) -> LocalBoxFuture<'_, Result<(), ClusterError>>;
}

/// Where and why a run ended.
#[derive(Debug)]
pub enum Ended {
    /// Every phase ran (or was skipped), or one finished the run as planned.
    Completed,
    Stopped {
        phase: &'static str,
        stop: Stop,
    },
    /// A stop (Ctrl-C, SIGTERM); `changed`: a phase that changes the cluster had started.
    Interrupted {
        phase: &'static str,
        changed: bool,
    },
    LockLost(ClusterError),
}

/// Runs `table` in order on `ctx`.
pub async fn run<C: RunContext>(table: &[PhaseDef<C>], ctx: &mut C) -> Ended {
    let _handling = crate::exec::stop::handling();
    crate::exec::lock::changes_begin();
    let mut changed = false;
    for def in table {
        if !ctx.runs(def.id) {
            ctx.reporter().event(Event::PhaseSkipped(def.id));
            continue;
        }
        match (def.work)(ctx) {
            Work::Some => {}
            Work::None => continue,
            Work::Note(message) => {
                ctx.reporter().event(Event::Note {
                    phase: def.id,
                    message,
                });
                continue;
            }
        }
        if def.changes && !changed {
            changed = true;
            if let Err(e) = ctx.begin_changes().await {
                return Ended::Stopped {
                    phase: def.id,
                    stop: Stop::Cluster(e),
                };
            }
        }
        ctx.reporter().event(Event::PhaseStarted(def.id));
        if let Some(total) = ctx.phase_nodes(def.id) {
            ctx.reporter().event(Event::PhaseNodes {
                phase: def.id,
                total,
            });
        }
        let lost = ctx.lock_lost();
        let lost = async move {
            match lost {
                Some(mut rx) => loop {
                    if let Some(e) = rx.borrow_and_update().clone() {
                        return e;
                    }
                    if rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                },
                None => std::future::pending().await,
            }
        };
        let outcome = if def.stops_itself {
            (def.run)(ctx).await
        } else {
            tokio::select! {
                r = (def.run)(ctx) => r,
                () = crate::exec::stop::asked() => {
                    return Ended::Interrupted { phase: def.id, changed };
                }
                e = lost => return Ended::LockLost(e),
            }
        };
        match outcome {
            Ok(Flow::Continue) => ctx.reporter().event(Event::PhaseDone(def.id)),
            Ok(Flow::Finish) => return Ended::Completed,
            Err(stop) => {
                return Ended::Stopped {
                    phase: def.id,
                    stop,
                };
            }
        }
    }
    Ended::Completed
}

/// `--dry-run=server`: every write of the phases that would run, in run order.
pub async fn dry_run<C: RunContext>(
    table: &[PhaseDef<C>],
    ctx: &C,
) -> Result<Vec<Write>, ClusterError> {
    let mut writes = Vec::new();
    for def in table.iter().filter(|d| ctx.runs(d.id)) {
        writes.extend((def.dry_run)(ctx).await?);
    }
    Ok(writes)
}

/// The ids of a table, in order (help text, `--skip-phases`, the plan).
pub fn ids<C>(table: &[PhaseDef<C>]) -> Vec<&'static str> {
    table.iter().map(|d| d.id).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::output::Event;

    /// Records what a run reports, as the plain reporter would print it.
    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Reporter for Lines {
        fn event(&self, e: Event<'_>) {
            let line = match e {
                Event::PhaseStarted(p) => format!("start {p}"),
                Event::PhaseSkipped(p) => format!("skip {p}"),
                Event::PhaseDone(p) => format!("done {p}"),
                Event::Note { phase, message } => format!("note {phase}: {message}"),
                Event::Job { phase, .. } | Event::Node { phase, .. } => format!("job {phase}"),
                Event::PhaseNodes { phase, total } => format!("nodes {phase}: {total}"),
            };
            self.0.lock().unwrap().push(line);
        }
    }

    struct Toy {
        skip: Vec<&'static str>,
        ran: Vec<&'static str>,
        began: usize,
        rep: Lines,
        lost: Option<watch::Receiver<Option<ClusterError>>>,
    }

    impl RunContext for Toy {
        fn runs(&self, id: &str) -> bool {
            !self.skip.contains(&id)
        }
        fn reporter(&self) -> &dyn Reporter {
            &self.rep
        }
        fn lock_lost(&self) -> Option<watch::Receiver<Option<ClusterError>>> {
            self.lost.clone()
        }
        // a phase of node Jobs: its total follows its start
        fn phase_nodes(&self, id: &str) -> Option<usize> {
            (id == "apply").then_some(200)
        }
        fn begin_changes(&mut self) -> LocalBoxFuture<'_, Result<(), ClusterError>> {
            self.began += 1;
            Box::pin(async { Ok(()) })
        }
    }

    fn row(id: &'static str, changes: bool) -> PhaseDef<Toy> {
        PhaseDef {
            id,
            changes,
            stops_itself: false,
            work: |_| Work::Some,
            run: |t| {
                Box::pin(async move {
                    t.ran.push(t.ran.len().to_string().leak());
                    Ok(Flow::Continue)
                })
            },
            dry_run: |_| Box::pin(async { Ok(vec![Write::of("create", "x".into(), Ok(()))]) }),
        }
    }

    fn toy(skip: &[&'static str]) -> Toy {
        Toy {
            skip: skip.to_vec(),
            ran: Vec::new(),
            began: 0,
            rep: Lines::default(),
            lost: None,
        }
    }

    fn block<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_new_phase_appears_in_the_run_and_in_the_server_dry_run_in_its_place() {
        let mut table = vec![row("check", false), row("apply", true)];
        table.insert(1, row("new", true));
        let mut t = toy(&[]);
        let ended = block(run(&table, &mut t));
        assert!(matches!(ended, Ended::Completed));
        assert_eq!(
            t.rep.0.lock().unwrap().clone(),
            [
                "start check",
                "done check",
                "start new",
                "done new",
                "start apply",
                "nodes apply: 200",
                "done apply"
            ]
        );
        assert_eq!(t.began, 1, "journaled once, before the first change");
        let rows = block(dry_run(&table, &t)).unwrap();
        assert_eq!(rows.len(), 3, "one write per phase that runs");
        let mut skipping = toy(&["new"]);
        assert_eq!(block(dry_run(&table, &skipping)).unwrap().len(), 2);
        block(run(&table, &mut skipping));
        assert_eq!(skipping.rep.0.lock().unwrap()[2], "skip new");
    }

    #[test]
    fn work_decides_what_is_reported() {
        let mut table = vec![row("a", false), row("b", true), row("c", true)];
        table[0].work = |_| Work::None;
        table[1].work = |_| Work::Note("nothing to change".into());
        let mut t = toy(&[]);
        block(run(&table, &mut t));
        assert_eq!(
            t.rep.0.lock().unwrap().clone(),
            ["note b: nothing to change", "start c", "done c"]
        );
    }

    #[test]
    fn a_stop_names_its_phase_and_a_finish_ends_quietly() {
        let mut table = vec![row("a", false), row("b", true), row("c", true)];
        table[1].run = |_| {
            Box::pin(async {
                Err(Stop::Halt {
                    exit: Exit::Preflight,
                    message: "no".into(),
                })
            })
        };
        let mut t = toy(&[]);
        match block(run(&table, &mut t)) {
            Ended::Stopped { phase, .. } => assert_eq!(phase, "b"),
            other => panic!("{other:?}"),
        }
        table[1].run = |_| Box::pin(async { Ok(Flow::Finish) });
        let mut t = toy(&[]);
        assert!(matches!(block(run(&table, &mut t)), Ended::Completed));
        assert_eq!(t.rep.0.lock().unwrap().last().unwrap(), "start b");
    }

    #[test]
    fn a_phase_that_stops_itself_ends_its_own_way_when_the_lock_is_lost() {
        let lost = crate::cluster::lock::LockError::Lost {
            lease: "kube-system/yurtctl-lock".into(),
            holder: "eve".into(),
        };
        let (_tx, rx) = watch::channel(Some(ClusterError::from(lost)));
        let mut table = vec![row("roll", true)];
        table[0].run = |t| {
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                t.ran.push("roll");
                Ok(Flow::Continue)
            })
        };
        // the runner drops an ordinary phase the moment the lock is lost
        let mut t = toy(&[]);
        t.lost = Some(rx.clone());
        assert!(matches!(block(run(&table, &mut t)), Ended::LockLost(_)));
        assert!(t.ran.is_empty());
        // the rollout driver watches the lock itself and ends in its own state
        table[0].stops_itself = true;
        let mut t = toy(&[]);
        t.lost = Some(rx);
        assert!(matches!(block(run(&table, &mut t)), Ended::Completed));
        assert_eq!(t.ran, ["roll"]);
    }
}
