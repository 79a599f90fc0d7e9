//! Creating, adopting, waiting for and cleaning up node Jobs in a sliding window.

use super::*;

pub(super) struct Ctx<'a> {
    pub(super) cluster: &'a Cluster,
    pub(super) ns: &'a str,
    pub(super) jobs: Api<Job>,
    pub(super) pods: Api<Pod>,
    pub(super) events_api: Api<Event>,
    pub(super) registry: &'a Registry,
    pub(super) opts: &'a RunJobsOptions,
    pub(super) events: &'a (dyn Fn(JobEvent) + Send + Sync),
    pub(super) sweep: &'a Sweep,
}

/// Runs one Job per spec with a sliding window of `opts.concurrency` and returns one result
/// per spec started, in spec order (every spec, unless `opts.stop_after_failures` stopped it). Fails as a whole only when the Jobs cannot be watched (or a spec
/// is invalid); per-node problems are in the results.
pub async fn run_jobs(
    cluster: &Cluster,
    ns: &str,
    specs: Vec<NodeJob>,
    opts: &RunJobsOptions,
    events: &(dyn Fn(JobEvent) + Send + Sync),
) -> Result<Vec<NodeJobResult>, ClusterError> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let mut names = HashSet::new();
    for s in &specs {
        check_action(&s.action, &s.node)?;
        if !names.insert(s.name()) {
            return Err(ClusterError::InvalidObject {
                object: format!("Job {ns}/{}", s.name()),
                message: format!("node {} appears twice for action {}", s.node, s.action),
            });
        }
    }
    let actions: BTreeSet<&str> = specs.iter().map(|s| s.action.as_str()).collect();
    let actions: Vec<&str> = actions.into_iter().collect();
    let runner = JobRunner::start(cluster, ns, &actions, opts.clone()).await?;
    let runner = &runner;
    // checked as each spec is taken, i.e. when a place in the window frees
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let failed = &failed;
    let may_start = |_: &(usize, NodeJob)| {
        let go = opts
            .stop_after_failures
            .is_none_or(|n| failed.load(std::sync::atomic::Ordering::Relaxed) <= n);
        std::future::ready(go)
    };
    let mut results: Vec<(usize, NodeJobResult)> =
        futures::stream::iter(specs.into_iter().enumerate())
            .take_while(may_start)
            .map(|(i, spec)| async move {
                let mut r = runner.run(spec, events).await;
                if let (true, Some(within)) = (r.succeeded(), opts.hold_until_ready) {
                    let late = crate::cluster::wait::nodes_ready(
                        cluster,
                        std::slice::from_ref(&r.node),
                        within,
                    )
                    .await;
                    if !late.is_empty() {
                        r.outcome = JobOutcome::NodeNotReady(within);
                    }
                }
                if !r.succeeded() {
                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                (i, r)
            })
            .buffer_unordered(opts.concurrency.get())
            .collect()
            .await;
    runner.finish().await;
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

pub(super) fn check_action(action: &str, node: &str) -> Result<(), ClusterError> {
    if valid_action(action) {
        Ok(())
    } else {
        Err(ClusterError::InvalidObject {
            object: format!("Job for node {node}"),
            message: format!("action {action:?} must be 1-40 lower-case letters, digits or '-'"),
        })
    }
}

/// Node Jobs of some actions over ONE label-selected watch, run one at a time by whoever
/// decides when (run_jobs' sliding window, or the static-pod rollout machine). Dropping it
/// stops the watch.
pub struct JobRunner {
    cluster: Cluster,
    ns: String,
    actions: Vec<String>,
    jobs: Api<Job>,
    pods: Api<Pod>,
    events_api: Api<Event>,
    registry: Arc<Registry>,
    opts: RunJobsOptions,
    selector: String,
    sweep: Arc<Sweep>,
    _watch: AbortOnDrop,
    _sweeper: AbortOnDrop,
}

impl JobRunner {
    /// Starts the watch on Jobs labelled with one of `actions` and waits for its first list.
    pub async fn start(
        cluster: &Cluster,
        ns: &str,
        actions: &[&str],
        opts: RunJobsOptions,
    ) -> Result<JobRunner, ClusterError> {
        for a in actions {
            check_action(a, "(any)")?;
        }
        let selector = match actions {
            [one] => format!("{LABEL_ACTION}={one}"),
            many => format!("{LABEL_ACTION} in ({})", many.join(",")),
        };
        let client = cluster.client().clone();
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let registry = Arc::new(Registry::default());
        let (state_tx, mut state_rx) = watch::channel(WatchState::Listing { last_error: None });
        cluster.throttle().await;
        let watch_task = AbortOnDrop(tokio::spawn(watch_jobs(
            jobs.clone(),
            selector.clone(),
            registry.clone(),
            state_tx,
        )));
        let what = format!("Jobs in {ns} with {selector}");
        let ready = tokio::time::timeout(
            opts.init_timeout,
            state_rx.wait_for(|s| matches!(s, WatchState::Ready)),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        if !ready {
            let last = match &*state_rx.borrow() {
                WatchState::Listing {
                    last_error: Some(e),
                } => e.clone(),
                _ => format!("no answer within {}s", opts.init_timeout.as_secs_f64()),
            };
            return Err(ClusterError::Watch {
                what,
                message: last,
            });
        }
        let sweep = Arc::new(Sweep::default());
        let sweeper = AbortOnDrop(tokio::spawn(sweep_loop(
            cluster.clone(),
            jobs.clone(),
            selector.clone(),
            registry.clone(),
            sweep.clone(),
        )));
        Ok(JobRunner {
            cluster: cluster.clone(),
            ns: ns.to_string(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            jobs,
            pods: Api::namespaced(client.clone(), ns),
            events_api: Api::namespaced(client, ns),
            registry,
            opts,
            selector,
            sweep,
            _watch: watch_task,
            _sweeper: sweeper,
        })
    }

    /// Deletes the succeeded Jobs not swept yet ([`final_sweep`]).
    pub async fn finish(&self) {
        final_sweep(
            &self.cluster,
            &self.jobs,
            &self.selector,
            &self.registry,
            &self.sweep,
        )
        .await
    }

    /// Runs one node's Job to its end (creating, replacing or adopting it as run_jobs does).
    /// A spec whose action this runner does not watch ends in `JobOutcome::Error`.
    pub async fn run(
        &self,
        spec: NodeJob,
        events: &(dyn Fn(JobEvent) + Send + Sync),
    ) -> NodeJobResult {
        if !self.actions.contains(&spec.action) {
            let e = ClusterError::InvalidObject {
                object: format!("Job for node {}", spec.node),
                message: format!("action {:?} is not watched by this runner", spec.action),
            };
            return NodeJobResult {
                node: spec.node.clone(),
                job: spec.name(),
                outcome: JobOutcome::Error(e),
                elapsed: Duration::ZERO,
                adopted: false,
                log: None,
            };
        }
        let ctx = Ctx {
            cluster: &self.cluster,
            ns: &self.ns,
            jobs: self.jobs.clone(),
            pods: self.pods.clone(),
            events_api: self.events_api.clone(),
            registry: &self.registry,
            opts: &self.opts,
            events,
            sweep: &self.sweep,
        };
        run_one(&ctx, spec).await
    }
}

/// What to wait for after the leftover check.
pub(super) enum Start {
    /// Create our Job.
    Create,
    /// Watch this Job (adopted) to its end.
    Watch(String),
}

pub(super) async fn run_one(ctx: &Ctx<'_>, spec: NodeJob) -> NodeJobResult {
    let started = Instant::now();
    let deadline = started + ctx.opts.per_job_timeout;
    let name = spec.name();
    let emit = |phase: JobPhase| {
        (ctx.events)(JobEvent {
            node: spec.node.clone(),
            job: name.clone(),
            phase,
        })
    };
    let mut result = NodeJobResult {
        node: spec.node.clone(),
        job: name.clone(),
        outcome: JobOutcome::Succeeded,
        elapsed: Duration::ZERO,
        adopted: false,
        log: None,
    };
    let mut job_uid = None;
    // before the Job can succeed: the sweep must not take its pod before its log is read
    let log_read = ctx
        .opts
        .success_log_lines
        .map(|_| super::sweep::LogRead::hold(ctx.sweep));
    let mut rx = ctx.registry.subscribe(&name);
    let outcome = async {
        let mut start = match leftover(ctx, &name, &mut rx, deadline, &emit).await? {
            Some(uid) => {
                result.adopted = true;
                emit(JobPhase::Adopted);
                Start::Watch(uid)
            }
            None => Start::Create,
        };
        let uid = loop {
            match start {
                Start::Watch(uid) => break uid,
                Start::Create => {}
            }
            match create(ctx, &spec, &name, &mut rx, deadline, &emit).await? {
                Created::New(uid) => {
                    emit(JobPhase::Created);
                    break uid;
                }
                Created::Existing(uid) => {
                    result.adopted = true;
                    emit(JobPhase::Adopted);
                    break uid;
                }
                Created::Retry => start = Start::Create,
            }
        };
        job_uid = Some(uid.clone());
        wait(ctx, &name, &uid, &mut rx, deadline, started, &emit).await
    }
    .await;
    result.outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            emit(JobPhase::Error(e.clone()));
            JobOutcome::Error(e)
        }
    };
    if let (JobOutcome::Succeeded, Some(lines), Some(uid)) =
        (&result.outcome, ctx.opts.success_log_lines, &job_uid)
    {
        result.log = super::logs::tail(ctx.cluster, &ctx.pods, uid, lines).await;
    }
    drop(log_read);
    result.elapsed = started.elapsed();
    result
}

/// Handles a Job of our name that existed before this run: returns the uid to adopt when it is
/// still running, or clears the way (deletes it and waits until it is gone).
pub(super) async fn leftover(
    ctx: &Ctx<'_>,
    name: &str,
    rx: &mut watch::Receiver<Slot>,
    deadline: Instant,
    emit: &impl Fn(JobPhase),
) -> Result<Option<String>, ClusterError> {
    let Some(job) = rx.borrow_and_update().clone() else {
        return Ok(None);
    };
    let uid = uid_of(&job).to_string();
    let previous = if job.metadata.deletion_timestamp.is_some() {
        "terminating"
    } else {
        match finished(&job) {
            None => return Ok(Some(uid)),
            Some(Finished::Succeeded) => "succeeded",
            Some(Finished::Failed { .. }) => "failed",
        }
    };
    emit(JobPhase::Replacing { previous });
    if previous != "terminating" {
        delete_job(ctx, name, &uid).await?;
    }
    wait_gone(ctx, name, &uid, rx, deadline).await?;
    Ok(None)
}

pub(super) async fn delete_job(ctx: &Ctx<'_>, name: &str, uid: &str) -> Result<(), ClusterError> {
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    let what = format!("Job {}/{name}", ctx.ns);
    match delete_with(ctx.cluster, &ctx.jobs, name, &dp, &what).await {
        Ok(_) => Ok(()),
        // The uid precondition failed: that Job is already gone and another took its name.
        Err(e) if e.status_code() == Some(409) => Ok(()),
        Err(e) => Err(e),
    }
}

pub(super) async fn wait_gone(
    ctx: &Ctx<'_>,
    name: &str,
    uid: &str,
    rx: &mut watch::Receiver<Slot>,
    deadline: Instant,
) -> Result<(), ClusterError> {
    let gone = |s: &Slot| s.as_ref().is_none_or(|j| uid_of(j) != uid);
    match tokio::time::timeout_at(deadline, rx.wait_for(gone)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(_)) => Err(watch_ended(ctx)),
        Err(_) => Err(ClusterError::Timeout {
            what: format!("the earlier Job {}/{name} to be deleted", ctx.ns),
            after: ctx.opts.per_job_timeout,
        }),
    }
}

pub(super) fn watch_ended(ctx: &Ctx<'_>) -> ClusterError {
    ClusterError::Watch {
        what: format!("Jobs in {}", ctx.ns),
        message: "the watch ended".into(),
    }
}

pub(super) enum Created {
    New(String),
    /// A Job of our name exists (our own create went through before an error, or it raced).
    Existing(String),
    Retry,
}

pub(super) async fn create(
    ctx: &Ctx<'_>,
    spec: &NodeJob,
    name: &str,
    rx: &mut watch::Receiver<Slot>,
    deadline: Instant,
    emit: &impl Fn(JobPhase),
) -> Result<Created, ClusterError> {
    let job = spec.to_job(ctx.ns, ctx.opts.per_job_timeout);
    let pp = PostParams::default();
    let what = format!("create Job {}/{name} for node {}", ctx.ns, spec.node);
    let mut conflicts = 0;
    loop {
        match ctx.cluster.call(|| ctx.jobs.create(&pp, &job)).await {
            Ok(j) => return Ok(Created::New(uid_of(&j).to_string())),
            Err(e) if kube_code(&e) == Some(409) && conflicts < 5 => {
                conflicts += 1;
                let existing = ctx
                    .cluster
                    .call(|| ctx.jobs.get_opt(name))
                    .await
                    .map_err(|e| {
                        ClusterError::from_kube(format!("get Job {}/{name}", ctx.ns), e)
                    })?;
                match existing {
                    None => {
                        tokio::time::sleep(Duration::from_millis(50 * conflicts)).await;
                    }
                    Some(j) if j.metadata.deletion_timestamp.is_some() => {
                        emit(JobPhase::Replacing {
                            previous: "terminating",
                        });
                        wait_gone(ctx, name, uid_of(&j), rx, deadline).await?;
                        return Ok(Created::Retry);
                    }
                    Some(j) => {
                        let ours = j
                            .metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(LABEL_ACTION))
                            .is_some_and(|a| *a == spec.action);
                        if !ours {
                            return Err(ClusterError::InvalidObject {
                                object: format!("Job {}/{name}", ctx.ns),
                                message: format!(
                                    "it exists but was not created by yurtctl (no {LABEL_ACTION}={} label); delete it and re-run",
                                    spec.action
                                ),
                            });
                        }
                        // Make sure the watch has it before waiting on it.
                        ctx.registry.with(name, |tx| {
                            tx.send_if_modified(|cur| {
                                if cur.is_none() {
                                    *cur = Some(Arc::new(j.clone()));
                                    true
                                } else {
                                    false
                                }
                            });
                        });
                        return Ok(Created::Existing(uid_of(&j).to_string()));
                    }
                }
            }
            Err(e) => return Err(ClusterError::from_kube(what, e)),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn wait(
    ctx: &Ctx<'_>,
    name: &str,
    uid: &str,
    rx: &mut watch::Receiver<Slot>,
    deadline: Instant,
    started: Instant,
    emit: &impl Fn(JobPhase),
) -> Result<JobOutcome, ClusterError> {
    let mut seen = false;
    let mut running = false;
    loop {
        let cur = rx.borrow_and_update().clone();
        match cur {
            Some(j) if uid_of(&j) == uid => {
                seen = true;
                match finished(&j) {
                    Some(Finished::Succeeded) => {
                        ctx.sweep.succeeded();
                        emit(JobPhase::Succeeded {
                            elapsed: started.elapsed(),
                        });
                        return Ok(JobOutcome::Succeeded);
                    }
                    Some(Finished::Failed { reason, message }) => {
                        let f = Box::new(super::logs::diagnose(ctx, &j, reason, message).await);
                        emit(JobPhase::Failed(f.clone()));
                        return Ok(JobOutcome::Failed(f));
                    }
                    None => {
                        let active = j.status.as_ref().and_then(|s| s.active).unwrap_or(0);
                        if !running && active > 0 {
                            running = true;
                            emit(JobPhase::Running);
                        }
                    }
                }
            }
            None if seen => {
                // a sweep deleted it after it succeeded, before this task saw the success
                drop(ctx.sweep.in_flight.read().await);
                if ctx.registry.succeeded_before_deletion(name, uid) {
                    emit(JobPhase::Succeeded {
                        elapsed: started.elapsed(),
                    });
                    return Ok(JobOutcome::Succeeded);
                }
                return Err(ClusterError::Watch {
                    what: format!("Job {}/{name}", ctx.ns),
                    message: "it was deleted by someone else before it finished".into(),
                });
            }
            // Not seen yet (our create outran the watch), or an older Job still listed.
            _ => {}
        }
        tokio::select! {
            r = rx.changed() => if r.is_err() { return Err(watch_ended(ctx)) },
            _ = tokio::time::sleep_until(deadline) => {
                let job = rx.borrow().clone().filter(|j| uid_of(j) == uid);
                let mut f = match job {
                    Some(j) => super::logs::diagnose(ctx, &j, String::new(), String::new()).await,
                    None => JobFailure::default(),
                };
                f.reason = "Timeout".into();
                f.message = format!(
                    "the Job did not finish within {}s; it is kept for diagnosis (kubectl -n {} describe job {name})",
                    ctx.opts.per_job_timeout.as_secs_f64(),
                    ctx.ns
                );
                let f = Box::new(f);
                emit(JobPhase::TimedOut(f.clone()));
                return Ok(JobOutcome::TimedOut(f));
            }
        }
    }
}
