//! The rollout lock of one static pod: Lease `<ns>/yurtctl-staticpod-<name>` (the run lock of
//! `exec::lock`, narrowed to one static pod so rollouts of different static pods never block
//! each other). Taken by the mutating commands after the confirmation, never by a dry run.

use crate::cluster::lock::LockOptions;
use crate::cluster::{Cluster, staticset};
use crate::exec::lock::{self, Held, TakeError};
use crate::exit::Exit;
use crate::output::PlainReporter;

/// Takes the lock (after `--force-unlock` deleted it, if asked); a held lock is exit 6 with a
/// message naming the holder.
pub(super) async fn take(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    force_unlock: bool,
) -> Result<Held, Exit> {
    let opts = LockOptions {
        namespace: ns.into(),
        name: staticset::lock_name(name),
        ..Default::default()
    };
    let rep = PlainReporter::stderr();
    lock::take(cluster, opts, force_unlock, &rep, "lock")
        .await
        .map_err(|e| {
            match &e {
                TakeError::ForceUnlock(_) => eprintln!("error: {e}"),
                TakeError::Acquire(_) => {
                    eprintln!("error: another rollout of static pod {ns}/{name} is running: {e}")
                }
            }
            e.exit()
        })
}

/// Gives the lock back; a failure only warns (the lease expires on its own).
pub(super) async fn release(held: Held) {
    if let Some(w) = held.release().await {
        eprintln!("warning: {w}");
    }
}
