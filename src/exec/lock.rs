//! The one lock sequence of every mutating command: `--force-unlock` (if asked) → take the
//! Lease → read the cluster and decide → run (the runner stops when the lock is lost) →
//! release, whatever happened. Dry runs take no lock.

use tokio::sync::watch;

use crate::cluster::lock::{self, LockGuard, LockOptions};
use crate::cluster::{Cluster, ClusterError};
use crate::exec::dry_run::{self, Write};
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

/// Runs `work` (a command's part under its lock) so that a Ctrl-C before its phase runner
/// starts (while it reads the cluster, plans or asks) ends it with exit 130 and "nothing was
/// changed", and the caller still releases the lock; once `running` is set, the runner's own
/// handling (journal, resume) takes over.
pub async fn interruptible<F: std::future::Future<Output = Exit>>(
    running: &std::cell::Cell<bool>,
    work: F,
) -> Exit {
    let _handled = crate::output::terminal::handles_interrupt();
    let before_run = async {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                return std::future::pending().await;
            }
            if !running.get() {
                return;
            }
        }
    };
    tokio::select! {
        exit = work => exit,
        () = before_run => {
            eprintln!("\ninterrupted; nothing was changed");
            Exit::Interrupted
        }
    }
}

/// Gives a run's lock back at its end; a failure is a warning line.
pub async fn release_for_run(held: Option<Held>) {
    if let Some(held) = held
        && let Some(w) = held.release().await
    {
        eprintln!("warning: {w}");
    }
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
