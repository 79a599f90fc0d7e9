//! The rollout lock of one static pod: Lease `<ns>/yurtctl-staticpod-<name>` (the run lock of
//! `cluster::lock`, narrowed to one static pod so rollouts of different static pods never block
//! each other). Taken by the mutating commands after the confirmation, never by a dry run.

use crate::cluster::lock::{self, LockGuard, LockOptions};
use crate::cluster::{Cluster, staticset};
use crate::exit::Exit;

/// Takes the lock (after `--force-unlock` deleted it, if asked); a held lock is exit 6 with a
/// message naming the holder.
pub(super) async fn take(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    force_unlock: bool,
) -> Result<LockGuard, Exit> {
    let lease = staticset::lock_name(name);
    if force_unlock {
        match lock::force_unlock_of(cluster, ns, &lease).await {
            Ok(Some(h)) => eprintln!(
                "--force-unlock: removed the lock {ns}/{lease} held by {}",
                h.identity
            ),
            Ok(None) => {}
            Err(e) => {
                eprintln!("error: --force-unlock: {e}");
                return Err(e.exit());
            }
        }
    }
    let opts = LockOptions {
        namespace: ns.into(),
        name: lease,
        ..Default::default()
    };
    lock::acquire(cluster, opts).await.map_err(|e| {
        eprintln!("error: another rollout of static pod {ns}/{name} is running: {e}");
        e.exit()
    })
}

/// Gives the lock back; a failure only warns (the lease expires on its own).
pub(super) async fn release(guard: LockGuard, ns: &str, name: &str) {
    if let Err(e) = guard.release().await {
        eprintln!(
            "warning: cannot release the lock {ns}/{}: {e} (it expires on its own)",
            staticset::lock_name(name)
        );
    }
}
