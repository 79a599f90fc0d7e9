//! The node Job runner (design §3, §7).
//!
//! One Job per node, named `yurtctl-<action>-<node>` (shortened with a stable hash to 63
//! characters), run with a sliding window of `concurrency`: the next Job is created as soon as
//! one finishes. Completion and failure come from ONE label-selected watch on Jobs (no polling,
//! no GET per Job). A Job whose `Failed` condition appears is reported at once with its pod's
//! log tail and events; a Job that outlives its timeout is reported `TimedOut`. Succeeded Jobs
//! are deleted (Background, so their pods go too); failed ones are kept for diagnosis. A
//! leftover Job of the same name from an earlier run is deleted and replaced when it finished,
//! or adopted (watched to its end) while it still runs.
//!
//! Happy path cost: one list and one watch for the whole run, then a create and a delete per
//! node.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Event, Pod, PodTemplateSpec};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use tokio::sync::watch;
use tokio::time::Instant;

use super::apply::delete_with;
use super::error::{ClusterError, error_chain, kube_code};
use super::{ANNOTATION_NODE, Cluster, LABEL_ACTION, LABEL_MANAGED_BY, LABEL_NODE, MANAGED_BY};
pub use crate::naming::{MAX_NAME, job_name, label_value};

/// One node's Job: what the caller decides (action, node, pod template); the runner adds the
/// name, labels, node pinning and defaults.
#[derive(Clone, Debug)]
pub struct NodeJob {
    /// `convert`, `revert`, `staticpod-upgrade`, …: lower-case letters, digits and `-`.
    pub action: String,
    pub node: String,
    /// The pod template (command, image, mounts, security). `nodeName` is set by the runner.
    pub template: PodTemplateSpec,
    /// Retries of the pod before the Job fails (default 0: fail fast, the user re-runs).
    pub backoff_limit: i32,
    /// `activeDeadlineSeconds`; defaults to the run's per-job timeout plus a minute, so the
    /// cluster stops a Job we have given up on.
    pub active_deadline: Option<Duration>,
}

impl NodeJob {
    pub fn new(
        action: impl Into<String>,
        node: impl Into<String>,
        template: PodTemplateSpec,
    ) -> Self {
        NodeJob {
            action: action.into(),
            node: node.into(),
            template,
            backoff_limit: 0,
            active_deadline: None,
        }
    }

    pub fn name(&self) -> String {
        job_name(&self.action, &self.node)
    }

    /// The labels every such Job (and its pods) carries.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (LABEL_ACTION.to_string(), self.action.clone()),
            (LABEL_NODE.to_string(), label_value(&self.node)),
            (LABEL_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
        ])
    }

    /// The Job object as the runner creates it.
    pub fn to_job(&self, namespace: &str, per_job_timeout: Duration) -> Job {
        let labels = self.labels();
        let mut template = self.template.clone();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .extend(labels.clone());
        let spec = template.spec.get_or_insert_with(Default::default);
        spec.node_name = Some(self.node.clone());
        if spec.restart_policy.is_none() {
            spec.restart_policy = Some("Never".into());
        }
        harden(spec);
        let deadline = self
            .active_deadline
            .unwrap_or(per_job_timeout + Duration::from_secs(60));
        Job {
            metadata: kube::api::ObjectMeta {
                name: Some(self.name()),
                namespace: Some(namespace.to_string()),
                labels: Some(labels),
                annotations: Some(BTreeMap::from([(
                    ANNOTATION_NODE.to_string(),
                    self.node.clone(),
                )])),
                ..Default::default()
            },
            spec: Some(JobSpec {
                template,
                backoff_limit: Some(self.backoff_limit),
                active_deadline_seconds: Some(deadline.as_secs_f64().ceil().max(1.0) as i64),
                ..Default::default()
            }),
            status: None,
        }
    }
}

/// Resources of a node Job container that sets none: small requests so the pod is admitted on
/// a busy node, limits that stop a runaway servant from starving the node. The servant edits a
/// few files and waits on HTTP and systemctl: it needs a few MiB and almost no CPU.
pub const JOB_CPU_REQUEST: &str = "10m";
pub const JOB_MEMORY_REQUEST: &str = "32Mi";
pub const JOB_CPU_LIMIT: &str = "500m";
pub const JOB_MEMORY_LIMIT: &str = "256Mi";

/// The taints a node Job must tolerate: its own work restarts the node's kubelet, so the node
/// goes NotReady (or, if the kubelet cannot reach its server for a while, Unknown) for a
/// moment, and the node lifecycle controller adds these `NoExecute` taints, which would evict
/// the pod halfway through (and make the kubelet refuse to admit a retry). `NoSchedule`
/// taints (control-plane, unschedulable, pressure) need no toleration: the Job pins
/// `nodeName`, which bypasses the scheduler. Nothing else is tolerated on purpose; a node
/// carrying another `NoExecute` taint is one an operator is draining, and converting it would
/// be a surprise.
pub const JOB_TOLERATED_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// The least-privilege defaults every node Job gets, whatever its caller wrote (design §3): no
/// service-account token (the servant never calls the API), no service links in the
/// environment, the tolerations of [`JOB_TOLERATED_TAINTS`] (no blanket `operator: Exists`),
/// and [`JOB_CPU_REQUEST`]… resources on containers that set none.
fn harden(spec: &mut k8s_openapi::api::core::v1::PodSpec) {
    use k8s_openapi::api::core::v1::{ResourceRequirements, Toleration};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    spec.automount_service_account_token = Some(false);
    spec.enable_service_links = Some(false);
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    // a blanket toleration (no key, Exists) is replaced by the deliberate ones
    tolerations.retain(|t| t.key.as_deref().is_some_and(|k| !k.is_empty()));
    for key in JOB_TOLERATED_TAINTS {
        if !tolerations.iter().any(|t| t.key.as_deref() == Some(key)) {
            tolerations.push(Toleration {
                key: Some((*key).to_string()),
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                ..Default::default()
            });
        }
    }
    let q = |s: &str| Quantity(s.to_string());
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        c.resources.get_or_insert_with(|| ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), q(JOB_CPU_REQUEST)),
                ("memory".to_string(), q(JOB_MEMORY_REQUEST)),
            ])),
            limits: Some(BTreeMap::from([
                ("cpu".to_string(), q(JOB_CPU_LIMIT)),
                ("memory".to_string(), q(JOB_MEMORY_LIMIT)),
            ])),
            ..Default::default()
        });
    }
}

fn valid_action(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 40
        && a.chars().all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
        && !a.starts_with('-')
        && !a.ends_with('-')
}

/// Options of one [`run_jobs`] call.
#[derive(Clone, Debug)]
pub struct RunJobsOptions {
    /// Jobs in flight at once (the sliding window); at least 1.
    pub concurrency: usize,
    /// Time allowed per Job from its creation (or adoption) to its end.
    pub per_job_timeout: Duration,
    /// Lines of pod log kept for a failed or timed-out Job.
    pub log_tail_lines: i64,
    /// Time allowed for the initial list of existing Jobs.
    pub init_timeout: Duration,
}

impl Default for RunJobsOptions {
    fn default() -> Self {
        RunJobsOptions {
            concurrency: 10,
            per_job_timeout: Duration::from_secs(300),
            log_tail_lines: 20,
            init_timeout: Duration::from_secs(30),
        }
    }
}

/// Why a Job did not succeed, with what the user needs to see.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFailure {
    /// The Job condition's reason (`BackoffLimitExceeded`, `DeadlineExceeded`) or `Timeout`.
    pub reason: String,
    pub message: String,
    /// The container's exit code, when it terminated.
    pub exit_code: Option<i32>,
    /// The pod the diagnostics come from.
    pub pod: Option<String>,
    /// The last lines of the pod's log.
    pub logs_tail: String,
    /// Events of the Job and its pod, oldest first: `Warning BackoffLimitExceeded: …`.
    pub events: Vec<String>,
}

/// Progress of one node's Job.
#[derive(Clone, Debug)]
pub enum JobPhase {
    /// A leftover Job of this name (`previous`: succeeded, failed, terminating) is being
    /// deleted before ours is created.
    Replacing {
        previous: &'static str,
    },
    Created,
    /// A Job of this name from an earlier run was still running; we wait for it instead.
    Adopted,
    /// A pod of the Job exists.
    Running,
    Succeeded {
        elapsed: Duration,
    },
    Failed(Box<JobFailure>),
    TimedOut(Box<JobFailure>),
    /// An API error ended this node's Job handling.
    Error(ClusterError),
}

/// One event for the reporter.
#[derive(Clone, Debug)]
pub struct JobEvent {
    pub node: String,
    pub job: String,
    pub phase: JobPhase,
}

/// How a node's Job ended.
#[derive(Clone, Debug)]
pub enum JobOutcome {
    Succeeded,
    Failed(Box<JobFailure>),
    TimedOut(Box<JobFailure>),
    Error(ClusterError),
}

/// The result for one node, in the order the specs were given.
#[derive(Clone, Debug)]
pub struct NodeJobResult {
    pub node: String,
    pub job: String,
    pub outcome: JobOutcome,
    /// From the start of this node's handling to its end.
    pub elapsed: Duration,
    /// The Job was a running leftover we waited for.
    pub adopted: bool,
    /// Deleting the succeeded Job failed (the node itself succeeded).
    pub cleanup_error: Option<ClusterError>,
}

impl NodeJobResult {
    pub fn succeeded(&self) -> bool {
        matches!(self.outcome, JobOutcome::Succeeded)
    }
}

enum Finished {
    Succeeded,
    Failed { reason: String, message: String },
}

fn finished(job: &Job) -> Option<Finished> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    let is = |t: &str| conds.iter().find(|c| c.type_ == t && c.status == "True");
    if is("Complete")
        .or_else(|| is("SuccessCriteriaMet"))
        .is_some()
    {
        return Some(Finished::Succeeded);
    }
    is("Failed")
        .or_else(|| is("FailureTarget"))
        .map(|c| Finished::Failed {
            reason: c.reason.clone().unwrap_or_else(|| "Failed".into()),
            message: c.message.clone().unwrap_or_default(),
        })
}

fn uid_of(job: &Job) -> &str {
    job.metadata.uid.as_deref().unwrap_or("")
}

type Slot = Option<Arc<Job>>;

/// The latest state of every Job the watch has seen, by name; one `watch` channel each so a
/// node's task wakes only for its own Job.
#[derive(Default)]
struct Registry {
    map: Mutex<HashMap<String, watch::Sender<Slot>>>,
}

impl Registry {
    fn with<R>(&self, name: &str, f: impl FnOnce(&watch::Sender<Slot>) -> R) -> R {
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let tx = m
            .entry(name.to_string())
            .or_insert_with(|| watch::channel(None).0);
        f(tx)
    }

    fn subscribe(&self, name: &str) -> watch::Receiver<Slot> {
        self.with(name, |tx| tx.subscribe())
    }

    fn set(&self, name: &str, v: Slot) {
        self.with(name, |tx| {
            tx.send_replace(v);
        })
    }

    fn remove_if_uid(&self, name: &str, uid: &str) {
        self.with(name, |tx| {
            tx.send_if_modified(|cur| {
                if cur.as_ref().is_some_and(|j| uid_of(j) == uid) {
                    *cur = None;
                    true
                } else {
                    false
                }
            });
        })
    }

    fn names(&self) -> Vec<String> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

#[derive(Clone, Debug)]
enum WatchState {
    Listing { last_error: Option<String> },
    Ready,
}

async fn watch_jobs(
    api: Api<Job>,
    selector: String,
    registry: Arc<Registry>,
    state: watch::Sender<WatchState>,
) {
    let cfg = watcher::Config::default().labels(&selector);
    let mut listing: Option<HashSet<String>> = None;
    loop {
        let mut stream = watcher(api.clone(), cfg.clone()).default_backoff().boxed();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::Init) => listing = Some(HashSet::new()),
                Ok(watcher::Event::InitApply(j)) => {
                    let name = j.metadata.name.clone().unwrap_or_default();
                    if let Some(l) = listing.as_mut() {
                        l.insert(name.clone());
                    }
                    registry.set(&name, Some(Arc::new(j)));
                }
                Ok(watcher::Event::InitDone) => {
                    // A re-list replaces what we knew: Jobs it did not return are gone.
                    let seen = listing.take().unwrap_or_default();
                    for n in registry.names() {
                        if !seen.contains(&n) {
                            registry.set(&n, None);
                        }
                    }
                    state.send_replace(WatchState::Ready);
                }
                Ok(watcher::Event::Apply(j)) => {
                    let name = j.metadata.name.clone().unwrap_or_default();
                    registry.set(&name, Some(Arc::new(j)));
                }
                Ok(watcher::Event::Delete(j)) => {
                    let name = j.metadata.name.clone().unwrap_or_default();
                    registry.remove_if_uid(&name, uid_of(&j));
                }
                Err(e) => {
                    let msg = error_chain(&e);
                    tracing::warn!(selector = %selector, error = %msg, "watching Jobs failed; retrying");
                    state.send_if_modified(|s| match s {
                        WatchState::Listing { last_error } => {
                            *last_error = Some(msg);
                            true
                        }
                        WatchState::Ready => false,
                    });
                    // An apiserver reports an expired resourceVersion as an ERROR event in the
                    // watch stream, and kube's watcher then re-lists. Some servers (proxies,
                    // yurtsim) answer the watch request itself with HTTP 410 instead, which
                    // the watcher would retry forever with the same resourceVersion: start
                    // over with a fresh list.
                    if let watcher::Error::WatchStartFailed(kube::Error::Api(s)) = &e
                        && s.code == 410
                    {
                        break;
                    }
                }
            }
        }
        listing = None;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Ctx<'a> {
    cluster: &'a Cluster,
    ns: &'a str,
    jobs: Api<Job>,
    pods: Api<Pod>,
    events_api: Api<Event>,
    registry: &'a Registry,
    opts: &'a RunJobsOptions,
    events: &'a (dyn Fn(JobEvent) + Send + Sync),
}

/// Runs one Job per spec with a sliding window of `opts.concurrency` and returns one result
/// per spec, in spec order. Fails as a whole only when the Jobs cannot be watched (or a spec
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
    let mut results: Vec<(usize, NodeJobResult)> =
        futures::stream::iter(specs.into_iter().enumerate())
            .map(|(i, spec)| async move { (i, runner.run(spec, events).await) })
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

fn check_action(action: &str, node: &str) -> Result<(), ClusterError> {
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
    _watch: AbortOnDrop,
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
        Ok(JobRunner {
            cluster: cluster.clone(),
            ns: ns.to_string(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            jobs,
            pods: Api::namespaced(client.clone(), ns),
            events_api: Api::namespaced(client, ns),
            registry,
            opts,
            _watch: watch_task,
        })
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
                cleanup_error: None,
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
        };
        run_one(&ctx, spec).await
    }
}

/// What to wait for after the leftover check.
enum Start {
    /// Create our Job.
    Create,
    /// Watch this Job (adopted) to its end.
    Watch(String),
}

async fn run_one(ctx: &Ctx<'_>, spec: NodeJob) -> NodeJobResult {
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
        cleanup_error: None,
    };
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
        wait(
            ctx,
            &name,
            &uid,
            &mut rx,
            deadline,
            started,
            &emit,
            &mut result,
        )
        .await
    }
    .await;
    result.outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            emit(JobPhase::Error(e.clone()));
            JobOutcome::Error(e)
        }
    };
    result.elapsed = started.elapsed();
    result
}

/// Handles a Job of our name that existed before this run: returns the uid to adopt when it is
/// still running, or clears the way (deletes it and waits until it is gone).
async fn leftover(
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

async fn delete_job(ctx: &Ctx<'_>, name: &str, uid: &str) -> Result<(), ClusterError> {
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

async fn wait_gone(
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

fn watch_ended(ctx: &Ctx<'_>) -> ClusterError {
    ClusterError::Watch {
        what: format!("Jobs in {}", ctx.ns),
        message: "the watch ended".into(),
    }
}

enum Created {
    New(String),
    /// A Job of our name exists (our own create went through before an error, or it raced).
    Existing(String),
    Retry,
}

async fn create(
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
async fn wait(
    ctx: &Ctx<'_>,
    name: &str,
    uid: &str,
    rx: &mut watch::Receiver<Slot>,
    deadline: Instant,
    started: Instant,
    emit: &impl Fn(JobPhase),
    result: &mut NodeJobResult,
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
                        if let Err(e) = delete_job(ctx, name, uid).await {
                            result.cleanup_error = Some(e);
                        }
                        emit(JobPhase::Succeeded {
                            elapsed: started.elapsed(),
                        });
                        return Ok(JobOutcome::Succeeded);
                    }
                    Some(Finished::Failed { reason, message }) => {
                        let f = Box::new(diagnose(ctx, &j, reason, message).await);
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
                    Some(j) => diagnose(ctx, &j, String::new(), String::new()).await,
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

fn format_event(e: &Event) -> String {
    format!(
        "{} {}: {}",
        e.type_.as_deref().unwrap_or("Normal"),
        e.reason.as_deref().unwrap_or(""),
        e.message.as_deref().unwrap_or("").trim_end()
    )
}

/// The newest pod of the Job, its exit code and log tail, and the Job's and pod's events.
/// Best effort: what cannot be fetched is described in place.
async fn diagnose(ctx: &Ctx<'_>, job: &Job, reason: String, message: String) -> JobFailure {
    let uid = uid_of(job);
    let mut f = JobFailure {
        reason,
        message,
        ..Default::default()
    };
    let lp = ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}"));
    let pods = ctx.cluster.call(|| ctx.pods.list(&lp)).await;
    let pod = match pods {
        Ok(list) => list
            .items
            .into_iter()
            .max_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0)),
        Err(e) => {
            f.events.push(format!("(pods unavailable: {e})"));
            None
        }
    };
    let mut uids = vec![uid.to_string()];
    if let Some(p) = &pod {
        let pod_name = p.metadata.name.clone().unwrap_or_default();
        f.exit_code = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .find_map(|c| {
                c.state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .or_else(|| c.last_state.as_ref().and_then(|s| s.terminated.as_ref()))
                    .map(|t| t.exit_code)
            });
        let logp = LogParams {
            tail_lines: Some(ctx.opts.log_tail_lines),
            ..Default::default()
        };
        f.logs_tail = match ctx.cluster.call(|| ctx.pods.logs(&pod_name, &logp)).await {
            Ok(l) => l,
            Err(e) => format!("(logs unavailable: {e})"),
        };
        if let Some(u) = &p.metadata.uid {
            uids.push(u.clone());
        }
        f.pod = Some(pod_name);
    }
    let lists = uids.iter().map(|u| {
        let lp = ListParams::default().fields(&format!("involvedObject.uid={u}"));
        async move { ctx.cluster.call(|| ctx.events_api.list(&lp)).await }
    });
    let mut evs: Vec<Event> = Vec::new();
    match futures::stream::iter(lists)
        .buffered(2)
        .try_collect::<Vec<_>>()
        .await
    {
        Ok(ls) => evs.extend(ls.into_iter().flat_map(|l| l.items)),
        Err(e) => f.events.push(format!("(events unavailable: {e})")),
    }
    evs.sort_by_key(|e| {
        e.last_timestamp
            .clone()
            .or(e.first_timestamp.clone())
            .map(|t| t.0)
    });
    f.events.extend(evs.iter().map(format_event));
    f
}

/// Creates the Job of `spec` with `dryRun=All` (admission, validation and RBAC answer; nothing
/// is stored). A Job of that name already there is a leftover of an earlier run, which the
/// real run adopts or replaces: accepted.
pub async fn create_dry_run(
    cluster: &Cluster,
    namespace: &str,
    spec: &NodeJob,
    per_job_timeout: Duration,
) -> Result<(), ClusterError> {
    let api: Api<Job> = Api::namespaced(cluster.client().clone(), namespace);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let job = spec.to_job(namespace, per_job_timeout);
    match cluster.call(|| api.create(&pp, &job)).await {
        Ok(_) => Ok(()),
        Err(e) if kube_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(ClusterError::from_kube(
            format!("create Job {namespace}/{}", spec.name()),
            e,
        )),
    }
}

/// Deletes the named Jobs (Foreground: their pods go first; `dry_run`: only asked) and, unless
/// a dry run, waits until each is gone. One row per Job: whether it was there to delete.
pub async fn delete_named(
    cluster: &Cluster,
    namespace: &str,
    names: &[String],
    timeout: Duration,
    dry_run: bool,
) -> Vec<(String, Result<super::apply::Deleted, ClusterError>)> {
    use kube::runtime::wait::{await_condition, conditions};
    let api: Api<Job> = Api::namespaced(cluster.client().clone(), namespace);
    let dp = DeleteParams {
        dry_run,
        ..DeleteParams::foreground()
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let what = format!("Job {namespace}/{name}");
        let r = async {
            if dry_run {
                return delete_with(cluster, &api, name, &dp, &what).await;
            }
            let Some(job) = cluster
                .call(|| api.get_opt(name))
                .await
                .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?
            else {
                return Ok(super::apply::Deleted::AlreadyGone);
            };
            let deleted = delete_with(cluster, &api, name, &dp, &what).await?;
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let gone = await_condition(api.clone(), name, conditions::is_deleted(&uid));
            match tokio::time::timeout(timeout, gone).await {
                Ok(Ok(_)) => Ok(deleted),
                Ok(Err(e)) => Err(ClusterError::InvalidObject {
                    object: what.clone(),
                    message: format!("watching its deletion: {e}"),
                }),
                Err(_) => Err(ClusterError::Timeout {
                    what: format!("{what} to be deleted"),
                    after: timeout,
                }),
            }
        }
        .await;
        let failed = r.is_err();
        out.push((what, r));
        if failed && !dry_run {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_job_gets_the_least_privilege_defaults() {
        // a template asking for a token and tolerating everything, as OpenYurt's did
        let template: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "spec": {
                "automountServiceAccountToken": true,
                "tolerations": [{"operator": "Exists"}, {"key": "dedicated", "operator": "Equal", "value": "edge", "effect": "NoExecute"}],
                "containers": [
                    {"name": "a", "image": "x"},
                    {"name": "b", "image": "x", "resources": {"limits": {"memory": "1Gi"}}}
                ]
            }
        }))
        .unwrap();
        let job =
            NodeJob::new("convert", "n1", template).to_job("kube-system", Duration::from_secs(60));
        let v = serde_json::to_value(&job).unwrap();
        let pod = &v["spec"]["template"]["spec"];
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["enableServiceLinks"], false);
        assert_eq!(pod["nodeName"], "n1");
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 120);
        let tolerations = pod["tolerations"].as_array().unwrap();
        let keys: Vec<&str> = tolerations
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "dedicated",
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable"
            ]
        );
        for t in &tolerations[1..] {
            assert_eq!(t["effect"], "NoExecute");
            assert!(t.get("tolerationSeconds").is_none());
        }
        let a = &pod["containers"][0]["resources"];
        assert_eq!(a["requests"]["cpu"], JOB_CPU_REQUEST);
        assert_eq!(a["requests"]["memory"], JOB_MEMORY_REQUEST);
        assert_eq!(a["limits"]["cpu"], JOB_CPU_LIMIT);
        assert_eq!(a["limits"]["memory"], JOB_MEMORY_LIMIT);
        // a caller's own resources are kept
        assert_eq!(pod["containers"][1]["resources"]["limits"]["memory"], "1Gi");
        assert!(pod["containers"][1]["resources"].get("requests").is_none());
    }

    #[test]
    fn short_names_stay_as_they_are() {
        assert_eq!(job_name("convert", "worker-1"), "yurtctl-convert-worker-1");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let node = "a-very-long-node-name-that-goes-on-and-on.region-1.example.internal";
        let n = job_name("convert", node);
        assert!(n.len() <= 63, "{n}");
        assert!(n.starts_with("yurtctl-convert-a-very-long-node-name"));
        assert_eq!(n, job_name("convert", node), "stable");
        assert_ne!(n, job_name("convert", &format!("{node}x")));
        assert!(
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }

    #[test]
    fn invalid_characters_are_replaced_and_hashed() {
        let a = job_name("convert", "node.a");
        let b = job_name("convert", "node-a");
        assert_ne!(a, b, "distinct nodes keep distinct Jobs");
        assert!(a.starts_with("yurtctl-convert-node-a-"));
        assert!(!a.contains('.'));
    }

    #[test]
    fn label_values_fit() {
        assert_eq!(label_value("worker-1"), "worker-1");
        let long = "n".repeat(100) + ".example.com";
        let v = label_value(&long);
        assert!(v.len() <= 63);
        assert_eq!(v, label_value(&long));
    }

    #[test]
    fn actions_are_checked() {
        assert!(valid_action("convert"));
        assert!(valid_action("staticpod-upgrade"));
        assert!(!valid_action("Convert"));
        assert!(!valid_action(""));
        assert!(!valid_action("a,b"));
    }
}
