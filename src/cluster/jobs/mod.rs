//! The node Job runner (docs/architecture.md#talking-to-the-cluster-and-to-nodes).
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
use super::{
    ANNOTATION_NODE, Cluster, Concurrency, LABEL_ACTION, LABEL_MANAGED_BY, LABEL_NODE, MANAGED_BY,
};
pub use crate::naming::{MAX_NAME, job_name, label_value};

mod job_watch;
mod logs;
mod named;
mod run;
mod sweep;

use job_watch::*;
pub use named::*;
pub use run::*;
use sweep::*;

/// The image a node Job runs and the Secrets (in the Job's namespace) it pulls it with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobImage {
    pub image: String,
    /// `--image-pull-secret`; empty: the node's runtime pulls on its own.
    pub pull_secrets: Vec<String>,
}

/// One node's Job: what the caller decides (action, node, pod template); the runner adds the
/// name, labels, node pinning and defaults.
#[derive(Clone, Debug)]
pub struct NodeJob {
    /// `convert`, `revert`, `staticpod-upgrade`, …: lower-case letters, digits and `-`.
    pub action: String,
    pub node: String,
    /// The pod template (command, image, mounts, security). `nodeName` is set by the runner.
    /// Shared: the nodes of a phase mostly have the same one ([`share_templates`]), and a
    /// k8s-openapi `Volume` alone is kilobytes.
    pub template: Arc<PodTemplateSpec>,
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
            template: Arc::new(template),
            backoff_limit: 0,
            active_deadline: None,
        }
    }

    /// The Job's pod pulls its images with these Secrets of its namespace
    /// (`--image-pull-secret`); none leaves the template as it is.
    pub fn pulling_with(mut self, secrets: &[String]) -> Self {
        if !secrets.is_empty() {
            let spec = Arc::make_mut(&mut self.template)
                .spec
                .get_or_insert_with(Default::default);
            spec.image_pull_secrets = Some(
                secrets
                    .iter()
                    .map(|name| k8s_openapi::api::core::v1::LocalObjectReference {
                        name: name.clone(),
                    })
                    .collect(),
            );
        }
        self
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
        let mut template = PodTemplateSpec::clone(&self.template);
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
///
/// The tolerations name no effect (so they match the key's `NoExecute` and `NoSchedule` taints
/// alike): yurt-manager's pod-binding controller rewrites the `tolerationSeconds` of
/// not-ready/unreachable tolerations with effect `NoExecute` on pods of autonomous edge nodes,
/// and one without seconds makes it dereference nil, panic and retry for as long as the pod
/// exists (openyurtio/openyurt v1.6.1 and v1.7.0
/// `pkg/yurtmanager/controller/yurtcoordinator/podbinding/pod_binding_controller.go`
/// `reconcilePod`).
pub const JOB_TOLERATED_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// The least-privilege defaults every node Job gets, whatever its caller wrote
/// (docs/architecture.md#talking-to-the-cluster-and-to-nodes): no
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

/// The specs with equal pod templates sharing one: collected from a lazy iterator, a phase of
/// 5,000 nodes holds a handful of templates instead of 5,000 (each ~20 KB in memory).
pub fn share_templates(specs: impl IntoIterator<Item = NodeJob>) -> Vec<NodeJob> {
    let mut distinct: Vec<Arc<PodTemplateSpec>> = Vec::new();
    specs
        .into_iter()
        .map(|mut spec| {
            match distinct.iter().find(|t| **t == spec.template) {
                Some(t) => spec.template = t.clone(),
                None => distinct.push(spec.template.clone()),
            }
            spec
        })
        .collect()
}

/// Options of one [`run_jobs`] call.
#[derive(Clone, Debug)]
pub struct RunJobsOptions {
    /// Jobs in flight at once (the sliding window).
    pub concurrency: Concurrency,
    /// Time allowed per Job from its creation (or adoption) to its end.
    pub per_job_timeout: Duration,
    /// Lines of pod log kept for a failed or timed-out Job.
    pub log_tail_lines: i64,
    /// Time allowed for the initial list of existing Jobs.
    pub init_timeout: Duration,
    /// Lines of pod log read from a Job that succeeded (its servant's result), when set.
    pub success_log_lines: Option<i64>,
    /// When set, a Job that succeeded keeps its place in the window until its node is Ready,
    /// for at most this long (then it ends [`JobOutcome::NodeNotReady`]): a window of nodes
    /// that may be unavailable, as `maxUnavailable` is, rather than of Jobs.
    pub hold_until_ready: Option<Duration>,
    /// When set, no Job starts once more than this many nodes did not succeed; the specs not
    /// started have no result.
    pub stop_after_failures: Option<usize>,
}

impl Default for RunJobsOptions {
    fn default() -> Self {
        RunJobsOptions {
            concurrency: Concurrency::new(10).expect("not 0"),
            per_job_timeout: Duration::from_secs(300),
            log_tail_lines: 20,
            init_timeout: Duration::from_secs(30),
            success_log_lines: None,
            hold_until_ready: None,
            stop_after_failures: None,
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
    /// Why the container has not started, when it waits (`ImagePullBackOff: Back-off pulling
    /// image …`).
    pub waiting: Option<String>,
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
    /// The Job succeeded but its node was not Ready within this long after
    /// ([`RunJobsOptions::hold_until_ready`]).
    NodeNotReady(Duration),
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
    /// The end of its pod's log, for a Job that succeeded when
    /// [`RunJobsOptions::success_log_lines`] asked for it (best effort).
    pub log: Option<String>,
}

/// What a node that stayed NotReady after its Job says: `JobOutcome::NodeNotReady`, and the
/// wait for Ready after a phase's Jobs.
pub fn not_ready_message(within: Duration) -> String {
    format!(
        "its Job succeeded but the node was not Ready within {}s",
        within.as_secs()
    )
}

impl NodeJobResult {
    pub fn succeeded(&self) -> bool {
        matches!(self.outcome, JobOutcome::Succeeded)
    }
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
            // every effect of the key, and no NoExecute one yurt-manager's pod binding would
            // rewrite (and panic on without seconds)
            assert!(t.get("effect").is_none(), "{t}");
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
