//! Deleting succeeded Jobs in batches.

use super::*;

/// How long succeeded Jobs wait to be deleted together.
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How many sweeps a runner's end makes at most (a quarter of SWEEP_EVERY apart).
pub(super) const FINISH_SWEEPS: usize = 12;

/// Succeeded Jobs are deleted in batches, one `deletecollection` (the runner's actions, field
/// selector `status.successful=1`, background propagation so their pods go too) a second
/// while any succeeded and once at the end ([`JobRunner::finish`]), rather than one delete per
/// Job before its node counts as done: at 1,000 nodes that was 2,000 requests, each holding a
/// window slot. Failed Jobs are kept for diagnosis.
#[derive(Default)]
pub(super) struct Sweep {
    pub(super) pending: std::sync::atomic::AtomicUsize,
    wake: tokio::sync::Notify,
    /// Held (written) while a sweep is in flight: a node's task that sees its Job vanish
    /// waits for the sweep's answer, which names the Jobs it deleted.
    pub(super) in_flight: tokio::sync::RwLock<()>,
    /// Jobs whose pod log is still to be read (`success_log_lines`): the sweep selects every
    /// succeeded Job on the server, also one whose success its task has not seen yet, and its
    /// background deletion takes the pod and the log with it. The loop waits for none
    /// (the runner's end sweeps the rest).
    pub(super) log_reads: std::sync::atomic::AtomicUsize,
}

/// One Job's pending log read, counted in [`Sweep::log_reads`] while it lives.
pub(super) struct LogRead<'s>(&'s Sweep);

impl<'s> LogRead<'s> {
    pub(super) fn hold(sweep: &'s Sweep) -> Self {
        sweep
            .log_reads
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        LogRead(sweep)
    }
}

impl Drop for LogRead<'_> {
    fn drop(&mut self) {
        self.0
            .log_reads
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Sweep {
    pub(super) fn succeeded(&self) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.wake.notify_one();
    }
}

/// Deletes every succeeded Job with one of the runner's actions; the registry learns which
/// (the answer lists the deleted Jobs).
pub(super) async fn sweep_succeeded(
    cluster: &Cluster,
    jobs: &Api<Job>,
    selector: &str,
    registry: &Registry,
    sweep: &Sweep,
) -> Result<(), ClusterError> {
    let _busy = sweep.in_flight.write().await;
    let lp = ListParams::default()
        .labels(selector)
        .fields("status.successful=1");
    let dp = DeleteParams::background();
    let deleted = cluster
        .call(|| jobs.delete_collection(&dp, &lp))
        .await
        .map_err(|e| {
            ClusterError::from_kube(
                format!("delete the succeeded Jobs with {selector} (status.successful=1)"),
                e,
            )
        })?;
    if let Some(list) = deleted.left() {
        for j in &list.items {
            registry.swept(j.metadata.name.as_deref().unwrap_or(""), uid_of(j));
        }
    }
    Ok(())
}

pub(super) async fn sweep_loop(
    cluster: Cluster,
    jobs: Api<Job>,
    selector: String,
    registry: Arc<Registry>,
    sweep: Arc<Sweep>,
) {
    use std::sync::atomic::Ordering;
    loop {
        sweep.wake.notified().await;
        tokio::time::sleep(SWEEP_EVERY).await;
        let n = sweep.pending.swap(0, Ordering::Relaxed);
        if n == 0 {
            continue;
        }
        if sweep.log_reads.load(Ordering::SeqCst) > 0 {
            // kept for a later sweep, or the runner's end
            sweep.pending.fetch_add(n, Ordering::Relaxed);
            continue;
        }
        if let Err(e) = sweep_succeeded(&cluster, &jobs, &selector, &registry, &sweep).await {
            tracing::warn!(error = %e, "deleting succeeded Jobs failed; retrying");
            sweep.pending.fetch_add(n, Ordering::Relaxed);
            sweep.wake.notify_one();
        }
    }
}

/// A runner's end: deletes the succeeded Jobs not swept yet, after a sweep in flight. The Job
/// controller may mark a Job succeeded (`SuccessCriteriaMet`) before it counts the pod in
/// `status.succeeded`, which the sweep selects on (kubernetes/kubernetes@v1.37.2
/// pkg/controller/job/job_controller.go, `uncountedTerminatedPods`): such Jobs are swept
/// again, for a few seconds. A failure only leaves them for the next run to replace; it is
/// logged with the command that deletes them.
pub(super) async fn final_sweep(
    cluster: &Cluster,
    jobs: &Api<Job>,
    selector: &str,
    registry: &Registry,
    sweep: &Sweep,
) {
    use std::sync::atomic::Ordering;
    for attempt in 0..FINISH_SWEEPS {
        // a sweep the loop started ends first
        drop(sweep.in_flight.read().await);
        let pending = sweep.pending.swap(0, Ordering::Relaxed);
        if pending == 0 && registry.succeeded_present() == 0 {
            return;
        }
        if attempt > 0 {
            tokio::time::sleep(SWEEP_EVERY / 4).await;
        }
        if let Err(e) = sweep_succeeded(cluster, jobs, selector, registry, sweep).await {
            let ns = jobs.namespace().unwrap_or("kube-system");
            tracing::warn!(
                "{e}; the next run replaces them, or: kubectl -n {ns} delete jobs -l '{selector}' --field-selector status.successful=1"
            );
            return;
        }
    }
}
