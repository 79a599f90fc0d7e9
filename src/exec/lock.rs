//! The one lock sequence of every mutating command: `--force-unlock` (if asked) → take the
//! Lease → check the state the plan was made from is still current → run (the runner stops
//! when the lock is lost) → release, whatever happened.

use tokio::sync::watch;

use crate::cluster::lock::{self, LockGuard, LockOptions};
use crate::cluster::{Cluster, ClusterError};
use crate::output::{Event, Reporter};

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
