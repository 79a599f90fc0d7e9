//! Running one phase's node Jobs, for convert and revert alike: the sliding window of
//! `cluster::jobs::run_jobs` over one watch, every event reported, each node's end journaled as
//! it happens (saves batched while one is in flight) so an interrupted run resumes exactly
//! where it stopped, and each outcome turned into the node's result line.

use std::time::Duration;

use crate::cluster::jobs::{
    JobOutcome, JobPhase, NodeJob, NodeJobResult, RunJobsOptions, not_ready_message, run_jobs,
};
use crate::cluster::journal::{Journal, JournalError, JournalStore};
use crate::cluster::{Cluster, ClusterError, Concurrency, SYSTEM_NAMESPACE};
use crate::output::{Event, NodeOutcome, NodeResult, Reporter, failure_summary};

/// Journals a node's end: `None` on success, `Some(error)` when it failed.
pub type Mark<'a> = &'a (dyn Fn(&mut Journal, &str, Option<String>) + Sync);

/// Saves in a row that may fail before the run stops starting nodes (each save is itself
/// retried on transient errors by `Cluster::call`).
const SAVE_FAILURES_TO_STOP: u32 = 3;

/// Runs `specs` as `run_opts` say ([`run_options`]: at most `concurrency` at once, each within
/// `job_timeout`), journaling every node's end with `mark` and saving the journal once more
/// at the end.
///
/// A save runs beside the Jobs, so the window is refilled while it is in flight; ends that
/// come meanwhile go with the next save. A failed save is retried after a back-off; when
/// [`SAVE_FAILURES_TO_STOP`] saves in a row fail, the phase stops starting nodes and fails.
/// Nothing is lost: every node was journaled Running before its Job was created, so a re-run
/// re-does (or adopts) the Jobs whose end was not saved and revert knows every node touched.
#[allow(clippy::too_many_arguments)]
pub async fn run_journaled(
    cluster: &Cluster,
    phase: &'static str,
    specs: Vec<NodeJob>,
    run_opts: RunJobsOptions,
    rep: &dyn Reporter,
    journal: &mut Journal,
    store: &JournalStore,
    mark: Mark<'_>,
) -> Result<Vec<NodeJobResult>, ClusterError> {
    // A node's end is marked in the journal before its line is reported: whatever the user saw
    // finish is in the journal that an interrupted run saves on its way out.
    let (end_tx, mut end_rx) = tokio::sync::mpsc::unbounded_channel();
    let on_event = move |e: crate::cluster::jobs::JobEvent| {
        let end = match &e.phase {
            JobPhase::Succeeded { .. } => None,
            JobPhase::Failed(f) | JobPhase::TimedOut(f) => Some(failure_summary(f)),
            JobPhase::Error(err) => Some(err.to_string()),
            _ => return rep.event(Event::Job { phase, event: &e }),
        };
        let _ = end_tx.send((e, end));
    };
    let record = |journal: &mut Journal, (e, error): (crate::cluster::jobs::JobEvent, _)| {
        mark(journal, &e.node, error);
        rep.event(Event::Job { phase, event: &e });
    };
    let jobs = run_jobs(cluster, SYSTEM_NAMESPACE, specs, &run_opts, &on_event);
    tokio::pin!(jobs);
    let mut saving: Option<std::pin::Pin<Box<dyn Future<Output = _> + '_>>> = None;
    let mut failures = 0u32;
    let mut retry_at: Option<tokio::time::Instant> = None;
    let outcomes = loop {
        let may_save = retry_at.is_none_or(|t| t <= tokio::time::Instant::now());
        if saving.is_none() && may_save && journal.is_dirty() {
            let delta = journal.take_delta();
            saving = Some(Box::pin(async move {
                let r = store.send(&delta).await;
                (delta, r)
            }));
        }
        let wait_until = retry_at.filter(|_| saving.is_none());
        let backoff = async {
            match wait_until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            Some(end) = end_rx.recv() => {
                record(journal, end);
                while let Ok(end) = end_rx.try_recv() {
                    record(journal, end);
                }
            }
            (delta, r) = async { saving.as_mut().expect("guarded").await }, if saving.is_some() => {
                saving = None;
                match r {
                    Ok(sent) => {
                        journal.sent(&delta, sent);
                        failures = 0;
                        retry_at = None;
                    }
                    Err(e) => {
                        failures += 1;
                        if failures >= SAVE_FAILURES_TO_STOP {
                            return Err(JournalError::Unsaved {
                                saves: failures,
                                message: e.to_string(),
                            }
                            .into());
                        }
                        rep.event(Event::Note {
                            phase,
                            message: format!("warning: cannot save the journal yet (retrying): {e}"),
                        });
                        retry_at = Some(
                            tokio::time::Instant::now() + Duration::from_secs(1 << failures),
                        );
                    }
                }
            }
            () = backoff => retry_at = None,
            r = &mut jobs => break r?,
        }
    };
    if let Some(save) = saving.take() {
        let (delta, r) = save.await;
        // a failed one leaves its changes to the save after the Jobs
        if let Ok(sent) = r {
            journal.sent(&delta, sent);
        }
    }
    while let Ok(end) = end_rx.try_recv() {
        record(journal, end);
    }
    for r in &outcomes {
        let error =
            (!r.succeeded()).then(|| job_node_result(r, "", NodeOutcome::Failed, "", "").message);
        mark(journal, &r.node, error);
    }
    store.save(journal).await?;
    Ok(outcomes)
}

/// Runs `specs` like [`run_journaled`] but records nothing: for node checks that change
/// nothing (node-side preflight).
pub async fn run_reported(
    cluster: &Cluster,
    phase: &'static str,
    specs: Vec<NodeJob>,
    concurrency: Concurrency,
    job_timeout: Duration,
    rep: &dyn Reporter,
) -> Result<Vec<NodeJobResult>, ClusterError> {
    let on_event = |e: crate::cluster::jobs::JobEvent| rep.event(Event::Job { phase, event: &e });
    run_jobs(
        cluster,
        SYSTEM_NAMESPACE,
        specs,
        &run_options(concurrency, job_timeout),
        &on_event,
    )
    .await
}

/// The Job runner's options for `concurrency` Jobs at once, each within `job_timeout`.
pub fn run_options(concurrency: Concurrency, job_timeout: Duration) -> RunJobsOptions {
    RunJobsOptions {
        concurrency,
        per_job_timeout: job_timeout,
        ..Default::default()
    }
}

/// A node's result line from its Job's outcome: `done` and "`done_verb` in 2.1s" on success;
/// `prefix` says which part of the node the Job was about.
pub fn job_node_result(
    r: &NodeJobResult,
    role: &str,
    done: NodeOutcome,
    done_verb: &str,
    prefix: &str,
) -> NodeResult {
    let (result, message, logs) = match &r.outcome {
        JobOutcome::Succeeded => (
            done,
            format!("{prefix}{done_verb} in {:.1}s", r.elapsed.as_secs_f64()),
            None,
        ),
        JobOutcome::Failed(f) => (
            NodeOutcome::Failed,
            format!("{prefix}Job {} failed: {}", r.job, failure_summary(f)),
            Some(f.logs_tail.clone()),
        ),
        JobOutcome::TimedOut(f) => (
            NodeOutcome::TimedOut,
            format!("{prefix}Job {} timed out: {}", r.job, failure_summary(f)),
            Some(f.logs_tail.clone()),
        ),
        JobOutcome::Error(e) => (
            NodeOutcome::Failed,
            format!("{prefix}Job {}: {e}", r.job),
            None,
        ),
        JobOutcome::NodeNotReady(d) => (NodeOutcome::TimedOut, not_ready_message(*d), None),
    };
    NodeResult {
        name: r.node.clone(),
        role: role.into(),
        result,
        message,
        logs: logs.filter(|l| !l.trim().is_empty()),
        pool: None,
        yurthub_unavailable_ms: None,
    }
}

/// Waits until each node of `names` is Ready; one that is not within `timeout` becomes
/// `timed-out` in `results` (its Job succeeded). Returns those nodes. Every command's `verify`.
pub async fn mark_not_ready(
    cluster: &Cluster,
    results: &mut std::collections::BTreeMap<String, NodeResult>,
    names: &[String],
    timeout: Duration,
) -> Vec<String> {
    let late = crate::cluster::wait::nodes_ready(cluster, names, timeout).await;
    for n in &late {
        if let Some(r) = results.get_mut(n) {
            r.result = NodeOutcome::TimedOut;
            r.message = not_ready_message(timeout);
        }
    }
    late
}
