//! The one lock sequence of every mutating command: `--force-unlock` (if asked) → take the
//! Lease → read the cluster and decide → run (the runner stops when the lock is lost or a stop
//! is asked for) → release, whatever happened ([`run_section`]). Dry runs take no lock.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use tokio::sync::watch;

use crate::cluster::lock::{self, LockGuard, LockOptions};
use crate::cluster::{Cluster, ClusterError};
use crate::exec::dry_run::{self, Write};
use crate::exec::stop;
use crate::exit::Exit;
use crate::output::{Event, Reporter};

/// The id of the phase that takes the run lock.
const LOCK_PHASE: &str = "lock";

/// A held run lock.
pub struct Held {
    guard: LockGuard,
    lease: String,
}

impl Held {
    /// Fires when the lock is lost (another run took it over, or renewing failed).
    pub fn lost(&self) -> watch::Receiver<Option<ClusterError>> {
        self.guard.lost_signal()
    }

    /// Gives the lock back; a failure is a warning line (the lease expires on its own).
    pub async fn release(self) -> Option<String> {
        self.guard.release().await.err().map(|e| {
            format!(
                "cannot release the lock {}: {e} (it expires on its own)",
                self.lease
            )
        })
    }
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    #[error("--force-unlock: {0}")]
    ForceUnlock(ClusterError),
    /// Held by another run (the message names the holder), or the API failed.
    #[error("{0}")]
    Acquire(ClusterError),
}

/// Takes the lock `opts` names for a run reported under `phase`; with `force_unlock`, first
/// deletes it whoever holds it (and says whose it was).
pub async fn take(
    cluster: &Cluster,
    opts: LockOptions,
    force_unlock: bool,
    rep: &dyn Reporter,
    phase: &'static str,
) -> Result<Held, TakeError> {
    let lease = opts.lease();
    if force_unlock
        && let Some(h) = lock::force_unlock_of(cluster, &opts.namespace, &opts.name)
            .await
            .map_err(TakeError::ForceUnlock)?
    {
        rep.event(Event::Note {
            phase,
            message: format!(
                "--force-unlock: removed the lock {lease} held by {}",
                h.identity
            ),
        });
    }
    let guard = lock::acquire(cluster, opts)
        .await
        .map_err(TakeError::Acquire)?;
    Ok(Held { guard, lease })
}

/// The run lock of convert and revert (`kube-system/yurtctl-lock`), taken before the cluster
/// is read: what a run decides ("already converted", "nothing to revert", the nodes left) is
/// then read from a cluster no other run is changing, and a held lock is exit 6 before any
/// write, whatever the journal says. Not `wanted` (a dry run, `--skip-phases lock`): no lock.
pub async fn take_for_run(
    cluster: &Cluster,
    wanted: bool,
    force_unlock: bool,
    rep: &dyn Reporter,
    command: &str,
) -> Result<Option<Held>, TakeError> {
    if !wanted {
        return Ok(None);
    }
    let opts = LockOptions {
        command: command.into(),
        ..Default::default()
    };
    rep.event(Event::PhaseStarted(LOCK_PHASE));
    let held = take(cluster, opts, force_unlock, rep, LOCK_PHASE).await?;
    rep.event(Event::PhaseDone(LOCK_PHASE));
    Ok(Some(held))
}

/// How a command's part under its lock ended ([`run_section`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// It ran to its end; `stopped`: a stop was asked for on the way (the run then ended at
    /// its next safe point, its journal or progress saved).
    Ran { exit: Exit, stopped: bool },
    /// A stop came before it began to change the cluster (while it read, planned or asked):
    /// it was dropped there, and nothing was changed.
    StoppedBeforeChanges,
}

tokio::task_local! {
    /// Set once the section's work begins to change the cluster.
    static CHANGING: Rc<Cell<bool>>;
}

/// The work of a section is about to change the cluster (the phase runner starts): from now
/// on a stop no longer drops it; it ends the run at its next safe point instead.
pub fn changes_begin() {
    let _ = CHANGING.try_with(|c| c.set(true));
}

/// Runs `work` (a command's part under the lock `held`, or under none) and then releases the
/// lock, whatever happened: a stop (Ctrl-C, SIGTERM) before [`changes_begin`] drops the work;
/// one after it is the phase runner's, and the work ends with its journal or progress saved
/// before the lock goes. A failed release is a warning note.
pub async fn run_section<F: Future<Output = Exit>>(
    held: Option<Held>,
    rep: &dyn Reporter,
    work: F,
) -> Section {
    let _handling = stop::handling();
    let changing = Rc::new(Cell::new(false));
    let before_changes = {
        let changing = changing.clone();
        async move {
            stop::asked().await;
            if changing.get() {
                std::future::pending::<()>().await;
            }
        }
    };
    let section = tokio::select! {
        exit = CHANGING.scope(changing, work) => Section::Ran {
            exit,
            stopped: stop::requested(),
        },
        () = before_changes => Section::StoppedBeforeChanges,
    };
    if let Some(held) = held
        && let Some(w) = held.release().await
    {
        rep.event(Event::Note {
            phase: LOCK_PHASE,
            message: format!("warning: {w}"),
        });
    }
    section
}

/// `--dry-run=server` of taking the run lock: the Lease created (or a stale one taken over).
pub async fn take_writes(cluster: &Cluster) -> Result<Vec<Write>, ClusterError> {
    let (verb, what, r) = lock::dry_run_take(cluster, &LockOptions::default()).await?;
    Ok(vec![Write::of(verb, what, r)])
}

/// `--dry-run=server` of releasing the run lock at the end (not there yet: the run takes it
/// first, and the delete is still authorized).
pub async fn release_write(cluster: &Cluster) -> Write {
    let (what, r) = lock::dry_run_release(cluster, &LockOptions::default()).await;
    dry_run::deleted(
        "delete",
        what,
        r,
        "not there before the run takes it; the delete is authorized",
    )
}
