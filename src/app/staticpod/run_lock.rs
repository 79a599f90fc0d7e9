//! The rollout lock of one static pod: Lease `<ns>/yurtctl-staticpod-<name>` (the run lock of
//! `exec::lock`, narrowed to one static pod so rollouts of different static pods never block
//! each other). Taken by the mutating commands before they read the static pod's state, never
//! by a dry run.

use crate::app::error::CommandError;
use crate::cluster::lock::{self, LockOptions};
use crate::cluster::{Cluster, staticset};
use crate::exec::lock::{self as run, Held, TakeError};
use crate::exit::Exit;
use crate::output::PlainReporter;

/// Takes the lock (after `--force-unlock` deleted it, if asked); a held lock is exit 6 with a
/// message naming the holder.
pub(super) async fn take(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    force_unlock: bool,
    command: &str,
) -> Result<Held, Exit> {
    let opts = LockOptions {
        namespace: ns.into(),
        name: staticset::lock_name(name),
        command: command.into(),
        ..Default::default()
    };
    let rep = PlainReporter::stderr(crate::app::common::count_period());
    run::take(cluster, opts, force_unlock, &rep, "lock")
        .await
        .map_err(|e| match e {
            TakeError::ForceUnlock(_) => CommandError::from(e).report(),
            TakeError::Acquire(_) => CommandError::at(running(ns, name), e).report(),
        })
}

/// A refusal found on the read-only look: exit 6 naming the run when another run holds the
/// lock (its half-way state may be why), else the refusal itself.
pub(super) async fn refuse_unless_running(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    refusal: super::Refusal,
) -> Exit {
    let lease = staticset::lock_name(name);
    match lock::holder_of(cluster, ns, &lease).await {
        Ok(Some(h)) if h.is_live() => {
            let held = h.held_error(format!("{ns}/{lease}"));
            CommandError::at(running(ns, name), held).report()
        }
        _ => refusal.report(),
    }
}

/// What a dry run or `status` says while a rollout of the static pod holds its lock: the
/// state it read may be half-way through that run.
pub(super) async fn warn_if_held(cluster: &Cluster, ns: &str, name: &str) {
    match lock::holder_of(cluster, ns, &staticset::lock_name(name)).await {
        Ok(Some(h)) => eprintln!(
            "warning: {}",
            crate::output::status::RunInProgress::of(&h).line()
        ),
        Ok(None) => {}
        Err(e) => eprintln!("warning: cannot tell whether a rollout is running: {e}"),
    }
}

/// What a lock held by another rollout of the same static pod is called in messages.
fn running(ns: &str, name: &str) -> String {
    format!("another rollout of static pod {ns}/{name} is running: ")
}
