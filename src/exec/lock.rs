//! The one lock sequence of every mutating command: `--force-unlock` (if asked) → take the
//! Lease → check the state the plan was made from is still current → run (the runner stops
//! when the lock is lost) → release, whatever happened.

use tokio::sync::watch;

use crate::cluster::journal::{JOURNAL_NAME, Journal, JournalStore};
use crate::cluster::lock::{self, LockGuard, LockOptions};
use crate::cluster::{Cluster, ClusterError, SYSTEM_NAMESPACE};
use crate::exec::dry_run::{self, Write};
use crate::exec::phases::Stop;
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

impl TakeError {
    pub fn exit(&self) -> crate::exit::Exit {
        match self {
            TakeError::ForceUnlock(e) | TakeError::Acquire(e) => e.exit(),
        }
    }
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

/// The run lock of convert and revert (`kube-system/yurtctl-lock`) as their `lock` phase
/// takes it: [`take`], then a check that the journal is still the one the plan was made from
/// (`planned`: None when there was none), so two runs that planned at once never both act.
pub async fn take_for_run(
    cluster: &Cluster,
    force_unlock: bool,
    rep: &dyn Reporter,
    store: &JournalStore,
    planned: Option<&Journal>,
    command: &str,
) -> Result<Held, Stop> {
    let held = take(
        cluster,
        LockOptions::default(),
        force_unlock,
        rep,
        LOCK_PHASE,
    )
    .await
    .map_err(|e| Stop::Halt {
        exit: e.exit(),
        message: format!("[{LOCK_PHASE}] {e}"),
    })?;
    let now = store.load().await?;
    let version = |j: Option<&Journal>| j.and_then(|j| j.resource_version.clone());
    if version(now.as_ref()) == version(planned) {
        return Ok(held);
    }
    if let Some(w) = held.release().await {
        rep.event(Event::Note {
            phase: LOCK_PHASE,
            message: format!("warning: {w}"),
        });
    }
    Err(Stop::Halt {
        exit: Exit::Preflight,
        message: format!(
            "[{LOCK_PHASE}] ConfigMap {SYSTEM_NAMESPACE}/{JOURNAL_NAME} changed while this run \
             was planning (another run just ended?); nothing was changed: re-run {command} to \
             plan again"
        ),
    })
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
