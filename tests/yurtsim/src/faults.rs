//! Fault injection and request counters, driven through `/yurtsim/v1/…` or the in-process handle.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// "Fail (or delay) the next `count` requests matching verb and resource" — or, with a
/// `probability`, each matching request with that chance until `count` have been hit.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestFault {
    /// get, list, watch, create, update, patch, delete, deletecollection; `write` = any of
    /// create, update, patch, delete; empty = any.
    #[serde(default)]
    pub verb: String,
    /// `pods`, `jobs.batch`, `pods/log`; empty = any.
    #[serde(default)]
    pub resource: String,
    pub count: u32,
    /// HTTP status to answer with; 0 = do not fail (only delay).
    #[serde(default)]
    pub status: u16,
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub message: Option<String>,
    /// Chance (0..=1) that a matching request is hit; absent = every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Carry the request out, then answer with the error anyway (a lost response, as when
    /// etcd commits but the API server times out).
    #[serde(default)]
    pub after: bool,
}

impl RequestFault {
    /// Fail the next `count` requests matching `verb` and `resource` with `status`.
    pub fn fail(verb: &str, resource: &str, count: u32, status: u16) -> Self {
        RequestFault {
            verb: verb.into(),
            resource: resource.into(),
            count,
            status,
            delay_ms: 0,
            message: None,
            probability: None,
            after: false,
        }
    }
}

fn verb_matches(rule: &str, verb: &str) -> bool {
    rule.is_empty()
        || rule == verb
        || (rule == "write" && matches!(verb, "create" | "update" | "patch" | "delete"))
}

#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<RequestFault>>,
    /// verb + group-resource that SelfSubjectAccessReview and the authorizer deny.
    denied: Mutex<HashSet<(String, String)>>,
    /// node → (exit code, Job-name prefixes; empty: every Job).
    pub(crate) failing_job_nodes: Mutex<HashMap<String, (i32, Vec<String>)>>,
    pub(crate) never_ready_images: Mutex<HashSet<String>>,
    /// (registry host, node; None: every node) that cannot be reached.
    unreachable_registries: Mutex<HashSet<(String, Option<String>)>>,
}

pub enum Decision {
    Pass,
    Delay(Duration),
    Fail {
        status: u16,
        message: Option<String>,
        delay: Duration,
        after: bool,
    },
}

fn resource_matches(rule: &str, resource: &str, group: &str, sub: Option<&str>) -> bool {
    if rule.is_empty() {
        return true;
    }
    let (r, rs) = match rule.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (rule, None),
    };
    let name_ok = r == resource || (!group.is_empty() && r == format!("{resource}.{group}"));
    name_ok && (rs.is_none() || rs == sub)
}

impl Faults {
    pub fn add(&self, f: RequestFault) {
        self.rules.lock().unwrap().push(f);
    }

    pub fn clear(&self) {
        self.rules.lock().unwrap().clear();
        self.denied.lock().unwrap().clear();
        self.failing_job_nodes.lock().unwrap().clear();
        self.never_ready_images.lock().unwrap().clear();
        self.reachable_again();
    }

    pub fn decide(&self, verb: &str, group: &str, resource: &str, sub: Option<&str>) -> Decision {
        let mut rules = self.rules.lock().unwrap();
        for rule in rules.iter_mut() {
            if rule.count == 0
                || !verb_matches(&rule.verb, verb)
                || !resource_matches(&rule.resource, resource, group, sub)
                || rule.probability.is_some_and(|p| rand::random::<f64>() >= p)
            {
                continue;
            }
            rule.count -= 1;
            let delay = Duration::from_millis(rule.delay_ms);
            let d = if rule.status == 0 {
                Decision::Delay(delay)
            } else {
                Decision::Fail {
                    status: rule.status,
                    message: rule.message.clone(),
                    delay,
                    after: rule.after,
                }
            };
            rules.retain(|r| r.count > 0);
            return d;
        }
        Decision::Pass
    }

    pub fn deny(&self, verb: &str, group_resource: &str) {
        self.denied
            .lock()
            .unwrap()
            .insert((verb.to_string(), group_resource.to_string()));
    }

    pub fn is_denied(&self, verb: &str, group: &str, resource: &str) -> bool {
        let gr = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        let d = self.denied.lock().unwrap();
        d.contains(&(verb.to_string(), gr.clone()))
            || d.contains(&("*".to_string(), gr))
            || d.contains(&(verb.to_string(), "*".to_string()))
    }

    /// Job pods on this node exit with `code` instead of running their command.
    pub fn fail_jobs_on(&self, node: &str, code: i32) {
        self.fail_jobs_named(node, &[], code);
    }

    /// Like [`Faults::fail_jobs_on`], only for Jobs whose name starts with one of `prefixes`
    /// (e.g. `yurtctl-convert-`: the conversion fails, the preflight Job before it passes).
    pub fn fail_jobs_named(&self, node: &str, prefixes: &[&str], code: i32) {
        let prefixes = prefixes.iter().map(|p| p.to_string()).collect();
        self.failing_job_nodes
            .lock()
            .unwrap()
            .insert(node.to_string(), (code, prefixes));
    }

    pub fn clear_failing_jobs(&self, node: &str) {
        self.failing_job_nodes.lock().unwrap().remove(node);
    }

    /// The exit code Job `job`'s pods on `node` fail with, if a fault says so.
    pub fn job_failure_for(&self, node: &str, job: &str) -> Option<i32> {
        let f = self.failing_job_nodes.lock().unwrap();
        let (code, prefixes) = f.get(node)?;
        (prefixes.is_empty() || prefixes.iter().any(|p| job.starts_with(p.as_str())))
            .then_some(*code)
    }

    /// Containers with this image never become Ready.
    pub fn never_ready(&self, image: &str) {
        self.never_ready_images
            .lock()
            .unwrap()
            .insert(image.to_string());
    }

    pub fn is_never_ready(&self, image: &str) -> bool {
        self.never_ready_images.lock().unwrap().contains(image)
    }

    /// `node` (every node for None) cannot reach registry host `registry` (`docker.io`,
    /// `registry.k8s.io`, `reg.example:5000`): pulls of its images fail there, as on an
    /// air-gapped node.
    pub fn unreachable_registry(&self, registry: &str, node: Option<&str>) {
        self.unreachable_registries
            .lock()
            .unwrap()
            .insert((registry.to_string(), node.map(str::to_string)));
    }

    /// Every registry is reachable again from every node.
    pub fn reachable_again(&self) {
        self.unreachable_registries.lock().unwrap().clear();
    }

    /// The error containerd's CRI returns for a pull of `image` on `node`, if its registry
    /// (Docker's normalization: `nginx` is on `docker.io`) is unreachable there
    /// (see `nodes::image_pull::pull_error`).
    pub fn cannot_pull(&self, node: &str, image: &str) -> Option<String> {
        let registry = crate::nodes::image_pull::normalize(image).domain;
        let blocked = self
            .unreachable_registries
            .lock()
            .unwrap()
            .iter()
            .any(|(r, n)| *r == registry && n.as_deref().is_none_or(|n| n == node));
        blocked.then(|| crate::nodes::image_pull::pull_error(image))
    }
}

impl crate::nodes::cluster::NodeFaults for Faults {
    fn job_failure_for(&self, node: &str, job: &str) -> Option<i32> {
        Faults::job_failure_for(self, node, job)
    }

    fn is_never_ready(&self, image: &str) -> bool {
        Faults::is_never_ready(self, image)
    }

    fn cannot_pull(&self, node: &str, image: &str) -> Option<String> {
        Faults::cannot_pull(self, node, image)
    }
}

/// Request counts by user agent, verb and resource.
#[derive(Default)]
pub struct Metrics {
    counts: Mutex<BTreeMap<(String, String, String), u64>>,
    /// Request body bytes of writes to ConfigMaps, by user agent and object name.
    configmap_bytes: Mutex<BTreeMap<(String, String), u64>>,
}

pub const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

impl Metrics {
    pub fn record(&self, agent: &str, verb: &str, resource: &str) {
        *self
            .counts
            .lock()
            .unwrap()
            .entry((agent.to_string(), verb.to_string(), resource.to_string()))
            .or_default() += 1;
    }

    /// A write's body to ConfigMap `name` (its Content-Length).
    pub fn record_configmap_write(&self, agent: &str, name: &str, bytes: u64) {
        *self
            .configmap_bytes
            .lock()
            .unwrap()
            .entry((agent.to_string(), name.to_string()))
            .or_default() += bytes;
    }

    /// Body bytes `agent` wrote to ConfigMaps whose name starts with `prefix`.
    pub fn configmap_bytes(&self, agent: &str, prefix: &str) -> u64 {
        self.configmap_bytes
            .lock()
            .unwrap()
            .iter()
            .filter(|((a, n), _)| a == agent && n.starts_with(prefix))
            .map(|(_, b)| b)
            .sum()
    }

    pub fn reset(&self) {
        self.counts.lock().unwrap().clear();
        self.configmap_bytes.lock().unwrap().clear();
    }

    /// Total requests, optionally only from one user agent and only writes.
    pub fn total(&self, agent: Option<&str>, writes_only: bool) -> u64 {
        self.counts
            .lock()
            .unwrap()
            .iter()
            .filter(|((a, v, _), _)| {
                agent.is_none_or(|x| x == a) && (!writes_only || WRITE_VERBS.contains(&v.as_str()))
            })
            .map(|(_, c)| c)
            .sum()
    }

    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        self.counts
            .lock()
            .unwrap()
            .iter()
            .filter(|((_, v, r), _)| v == verb && r == resource)
            .map(|(_, c)| c)
            .sum()
    }

    /// [`Metrics::count`] of one user agent's requests.
    pub fn count_by(&self, agent: &str, verb: &str, resource: &str) -> u64 {
        self.counts
            .lock()
            .unwrap()
            .get(&(agent.to_string(), verb.to_string(), resource.to_string()))
            .copied()
            .unwrap_or(0)
    }

    pub fn to_json(&self) -> Value {
        let counts = self.counts.lock().unwrap();
        let mut by_vr: BTreeMap<String, u64> = BTreeMap::new();
        let mut writes = 0;
        for ((_, v, r), c) in counts.iter() {
            *by_vr.entry(format!("{v} {r}")).or_default() += c;
            if WRITE_VERBS.contains(&v.as_str()) {
                writes += c;
            }
        }
        json!({
            "total": counts.values().sum::<u64>(),
            "writes": writes,
            "byVerbResource": by_vr,
            "requests": counts.iter().map(|((a, v, r), c)| json!({"userAgent": a, "verb": v, "resource": r, "count": c})).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_verb_and_resource_and_run_out() {
        let f = Faults::default();
        f.add(RequestFault {
            verb: "create".into(),
            resource: "jobs.batch".into(),
            count: 2,
            status: 500,
            delay_ms: 0,
            message: None,
            probability: None,
            after: false,
        });
        assert!(matches!(
            f.decide("get", "batch", "jobs", None),
            Decision::Pass
        ));
        assert!(matches!(
            f.decide("create", "", "pods", None),
            Decision::Pass
        ));
        assert!(matches!(
            f.decide("create", "batch", "jobs", None),
            Decision::Fail { status: 500, .. }
        ));
        assert!(matches!(
            f.decide("create", "batch", "jobs", None),
            Decision::Fail { status: 500, .. }
        ));
        assert!(matches!(
            f.decide("create", "batch", "jobs", None),
            Decision::Pass
        ));
    }

    #[test]
    fn subresource_rules() {
        let f = Faults::default();
        f.add(RequestFault {
            verb: String::new(),
            resource: "pods/log".into(),
            count: 1,
            status: 429,
            delay_ms: 0,
            message: None,
            probability: None,
            after: false,
        });
        assert!(matches!(f.decide("get", "", "pods", None), Decision::Pass));
        assert!(matches!(
            f.decide("get", "", "pods", Some("log")),
            Decision::Fail { status: 429, .. }
        ));
    }

    #[test]
    fn unreachable_registries_per_node() {
        let f = Faults::default();
        f.unreachable_registry("docker.io", Some("worker-1"));
        f.unreachable_registry("registry.k8s.io", None);
        assert!(f.cannot_pull("worker-1", "nginx:1.27").is_some());
        assert!(f.cannot_pull("worker-2", "nginx:1.27").is_none());
        assert!(f.cannot_pull("worker-1", "quay.io/x/y:1").is_none());
        assert!(
            f.cannot_pull("worker-2", "registry.k8s.io/pause:3.10")
                .is_some()
        );
        f.reachable_again();
        assert!(f.cannot_pull("worker-1", "nginx:1.27").is_none());
    }

    #[test]
    fn metrics_filter_writes_by_agent() {
        let m = Metrics::default();
        m.record("yurtctl", "create", "jobs.batch");
        m.record("yurtctl", "list", "nodes");
        m.record("kubectl", "patch", "nodes");
        assert_eq!(m.total(Some("yurtctl"), true), 1);
        assert_eq!(m.total(None, true), 2);
        assert_eq!(m.to_json()["byVerbResource"]["list nodes"], json!(1));
    }
}
