//! The controllers layer: kube-controller-manager's and kube-scheduler's work, as clients of
//! the API layer ([`endpoints`]: the endpoints controller).
//!
//! The controllers clients depend on: scheduler, Job, ReplicaSet, Deployment, DaemonSet,
//! namespace deletion and Job TTL. Level-triggered from a de-duplicating work queue, so bursts
//! of pod updates (thousands of DaemonSet pods) collapse into a few reconciles.

pub mod endpoints;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::api::Api;
use crate::api::registry::ResourceInfo;
use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions, Propagation};
use crate::util;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Job(String, String),
    ReplicaSet(String, String),
    Deployment(String, String),
    DaemonSet(String, String),
    Namespace(String),
    Schedule(String, String),
    /// kube-controller-manager's bootstrapsigner and tokencleaner (kubeadm enables both).
    BootstrapTokens,
    /// kube-controller-manager's csrsigning: signs approved requests.
    Csr(String),
    /// kube-controller-manager's endpoints controller: a Service's Endpoints (endpoints.rs).
    Endpoints(String, String),
}

#[derive(Default)]
struct Queue {
    pending: Mutex<BTreeSet<Key>>,
    notify: Notify,
    /// Pods waiting for a node: retried when a node's labels, taints or readiness change, as the
    /// scheduler moves unschedulable pods back to its active queue on node events.
    unscheduled: Mutex<BTreeSet<(String, String)>>,
}

impl Queue {
    fn add(&self, k: Key) {
        if self.pending.lock().unwrap().insert(k) {
            self.notify.notify_one();
        }
    }

    fn add_after(self: &Arc<Self>, k: Key, d: Duration) {
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            q.add(k);
        });
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn controller_of(obj: &Value) -> Option<(String, String)> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == json!(true))
        .map(|r| (s(&r["kind"]), s(&r["name"])))
}

/// What the controllers are handed: the API they are clients of, and the one setting they
/// read (the layers above keep the rest; docs/yurtsim.md#layers).
pub struct Cluster {
    pub api: Arc<Api>,
    /// The first back-off of a failed Job's next pod (`SimConfig::job_backoff`).
    pub job_backoff: Duration,
}

pub async fn run(cluster: Arc<Cluster>, mut stop: watch::Receiver<bool>) {
    let queue = Arc::new(Queue::default());
    let mut events = cluster.api.store.subscribe();
    // Existing objects (created during bootstrap) get a first reconcile.
    for (g, r) in [
        ("batch", "jobs"),
        ("apps", "deployments"),
        ("apps", "daemonsets"),
        ("apps", "replicasets"),
    ] {
        let info = cluster.api.info(g, r);
        for o in cluster.api.list(&info, &Filter::default()).0 {
            let (ns, name) = crate::api::store::key_of(&o);
            queue.add(match r {
                "jobs" => Key::Job(ns, name),
                "deployments" => Key::Deployment(ns, name),
                "daemonsets" => Key::DaemonSet(ns, name),
                _ => Key::ReplicaSet(ns, name),
            });
        }
    }
    // the endpoints controller's first sync: every Service, and every Endpoints object (those
    // left without a Service are deleted: checkLeftoverEndpoints)
    for r in ["services", "endpoints"] {
        let info = cluster.api.info("", r);
        for o in cluster.api.list(&info, &Filter::default()).0 {
            let (ns, name) = crate::api::store::key_of(&o);
            queue.add(Key::Endpoints(ns, name));
        }
    }
    let q2 = queue.clone();
    let cluster2 = cluster.clone();
    tokio::spawn(async move {
        while let Some(ev) = events.recv().await {
            let obj = &ev.obj;
            let (ns, name) = crate::api::store::key_of(obj);
            match (ev.gr.group.as_str(), ev.gr.resource.as_str()) {
                ("batch", "jobs") => q2.add(Key::Job(ns, name)),
                ("apps", "replicasets") => {
                    q2.add(Key::ReplicaSet(ns.clone(), name));
                    if let Some((k, n)) = controller_of(obj)
                        && k == "Deployment"
                    {
                        q2.add(Key::Deployment(ns, n));
                    }
                }
                ("apps", "deployments") => q2.add(Key::Deployment(ns, name)),
                ("", "services") => q2.add(Key::Endpoints(ns, name)),
                ("", "endpoints") if ev.typ == crate::api::store::EventType::Deleted => {
                    q2.add(Key::Endpoints(ns, name))
                }
                // a managed EndpointSlice deleted by someone is put back (onEndpointSliceDelete)
                ("discovery.k8s.io", "endpointslices")
                    if ev.typ == crate::api::store::EventType::Deleted =>
                {
                    if let Some(svc) =
                        obj["metadata"]["labels"]["kubernetes.io/service-name"].as_str()
                    {
                        q2.add(Key::Endpoints(ns, svc.to_string()))
                    }
                }
                ("apps", "daemonsets") => q2.add(Key::DaemonSet(ns, name)),
                ("certificates.k8s.io", "certificatesigningrequests")
                    if ev.typ != crate::api::store::EventType::Deleted =>
                {
                    q2.add(Key::Csr(name))
                }
                ("", "secrets") if obj["type"] == json!("bootstrap.kubernetes.io/token") => {
                    q2.add(Key::BootstrapTokens)
                }
                ("", "namespaces") if obj["metadata"]["deletionTimestamp"].is_string() => {
                    q2.add(Key::Namespace(name))
                }
                ("", "nodes") => {
                    // Only changes that affect placement matter to DaemonSets (not heartbeats).
                    fn placement(o: &Value) -> (&Value, &Value, &Value) {
                        (
                            &o["metadata"]["labels"],
                            &o["spec"]["taints"],
                            &o["spec"]["unschedulable"],
                        )
                    }
                    let moved = ev.prev.as_deref().map(placement) != Some(placement(obj));
                    if ev.typ == crate::api::store::EventType::Deleted {
                        daemonsets_placing(&cluster2, &q2, None, obj);
                    } else if moved {
                        daemonsets_placing(&cluster2, &q2, ev.prev.as_deref(), obj);
                    }
                    let ready = |o: &Value| conditions_ready(&o["status"]);
                    if moved || ev.prev.as_deref().map(ready) != Some(ready(obj)) {
                        let waiting = q2.unscheduled.lock().unwrap().clone();
                        for (ns, name) in waiting {
                            q2.add(Key::Schedule(ns, name));
                        }
                    }
                }
                ("", "pods") => {
                    // the Services the pod was or is selected by (updatePod, deletePod)
                    let labels = &obj["metadata"]["labels"];
                    let before = ev.prev.as_deref().map(|p| &p["metadata"]["labels"]);
                    let sets: Vec<&Value> = std::iter::once(labels).chain(before).collect();
                    for svc in
                        crate::controllers::endpoints::services_selecting(&cluster2.api, &ns, &sets)
                    {
                        q2.add(Key::Endpoints(ns.clone(), svc));
                    }
                    let waiting = obj["spec"]["nodeName"].as_str().is_none_or(str::is_empty)
                        && ev.typ != crate::api::store::EventType::Deleted;
                    if waiting {
                        q2.unscheduled
                            .lock()
                            .unwrap()
                            .insert((ns.clone(), name.clone()));
                        q2.add(Key::Schedule(ns.clone(), name.clone()));
                    } else {
                        q2.unscheduled
                            .lock()
                            .unwrap()
                            .remove(&(ns.clone(), name.clone()));
                    }
                    if let Some((k, n)) = controller_of(obj) {
                        match k.as_str() {
                            "Job" => q2.add(Key::Job(ns, n)),
                            "ReplicaSet" => q2.add(Key::ReplicaSet(ns, n)),
                            "DaemonSet" => q2.add(Key::DaemonSet(ns, n)),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    });
    loop {
        tokio::select! {
            _ = queue.notify.notified() => {}
            _ = stop.changed() => return,
        }
        loop {
            let batch: Vec<Key> = std::mem::take(&mut *queue.pending.lock().unwrap())
                .into_iter()
                .collect();
            if batch.is_empty() {
                break;
            }
            for k in batch {
                reconcile(&cluster, &queue, k);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// Queues the DaemonSets for which a node event changes whether the node should run their
/// pod, as kubernetes/kubernetes@v1.33.0 pkg/controller/daemon/daemon_controller.go `updateNode`
/// (and `addNode`/`deleteNode`: the sets the node should run) do, rather than every set.
fn daemonsets_placing(cluster: &Cluster, queue: &Queue, before: Option<&Value>, now: &Value) {
    let info = cluster.api.info("apps", "daemonsets");
    let extra = daemonset_tolerations();
    for d in cluster.api.list(&info, &Filter::default()).0 {
        let spec = &d["spec"]["template"]["spec"];
        let fits = |n: &Value| node_fits(n, spec, &extra);
        let changed = match before {
            Some(b) => fits(b) != fits(now),
            None => fits(now),
        };
        if changed {
            let (ns, name) = crate::api::store::key_of(&d);
            queue.add(Key::DaemonSet(ns, name));
        }
    }
}

fn reconcile(cluster: &Cluster, queue: &Arc<Queue>, k: Key) {
    match k {
        Key::Job(ns, name) => job(cluster, queue, &ns, &name),
        Key::ReplicaSet(ns, name) => replicaset(cluster, &ns, &name),
        Key::Deployment(ns, name) => deployment(cluster, &ns, &name),
        Key::DaemonSet(ns, name) => daemonset(cluster, queue, &ns, &name),
        Key::Namespace(name) => namespace(cluster, queue, &name),
        Key::Schedule(ns, name) => schedule(cluster, &ns, &name),
        Key::BootstrapTokens => bootstrap_tokens(cluster, queue),
        Key::Csr(name) => sign_csr(cluster, &name),
        Key::Endpoints(ns, name) => crate::controllers::endpoints::sync(&cluster.api, &ns, &name),
    }
}

fn pods_owned_by(cluster: &Cluster, ns: &str, uid: &str) -> Vec<Arc<Value>> {
    let pods = cluster.api.info("", "pods");
    cluster
        .api
        .store
        .dependents_of(uid)
        .into_iter()
        .filter(|(gr, (pns, _))| gr.resource == "pods" && gr.group.is_empty() && pns == ns)
        .filter_map(|(_, (pns, pname))| cluster.api.store.get(&pods.key(), &pns, &pname))
        .collect()
}

fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("Pending")
}

fn is_ready(p: &Value) -> bool {
    conditions_ready(&p["status"])
}

/// A status (pod's or node's) whose Ready condition is True.
fn conditions_ready(status: &Value) -> bool {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn deleting(o: &Value) -> bool {
    o["metadata"]["deletionTimestamp"].is_string()
}

fn event(
    cluster: &Cluster,
    involved: &Value,
    res: &ResourceInfo,
    typ: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    cluster
        .api
        .record_event(involved, res, typ, reason, message, component)
}

fn owner_ref(res: &ResourceInfo, o: &Value) -> Value {
    json!({"apiVersion": res.api_version(), "kind": res.kind, "name": o["metadata"]["name"], "uid": o["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true})
}

fn pod_from_template(
    template: &Value,
    generate_name: &str,
    owner: Value,
    extra_labels: &[(&str, String)],
) -> Value {
    let mut meta = template["metadata"].clone();
    if !meta.is_object() {
        meta = json!({});
    }
    for (k, v) in extra_labels {
        meta["labels"][*k] = json!(v);
    }
    meta["generateName"] = json!(generate_name);
    meta["ownerReferences"] = json!([owner]);
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
        m.remove("creationTimestamp");
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"].clone()})
}

fn has_condition(o: &Value, typ: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == json!(typ) && c["status"] == json!("True"))
}

fn job(cluster: &Cluster, queue: &Arc<Queue>, ns: &str, name: &str) {
    let jobs = cluster.api.info("batch", "jobs");
    let pods_info = cluster.api.info("", "pods");
    let Ok(job) = cluster.api.get(&jobs, ns, name) else {
        return;
    };
    if deleting(&job) {
        return;
    }
    let uid = s(&job["metadata"]["uid"]);
    let now = SystemTime::now();
    let finished = has_condition(&job, "Complete") || has_condition(&job, "Failed");
    if finished {
        if let Some(ttl) = job["spec"]["ttlSecondsAfterFinished"].as_u64() {
            let done = job["status"]["completionTime"].as_str().or_else(|| {
                job["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == json!("Failed"))?["lastTransitionTime"]
                    .as_str()
            });
            let done = done.and_then(util::parse_rfc3339).unwrap_or(now);
            let due = done + Duration::from_secs(ttl);
            if now >= due {
                let _ = cluster.api.delete(
                    &jobs,
                    ns,
                    name,
                    &DeleteOptions {
                        propagation: Some(Propagation::Background),
                        ..Default::default()
                    },
                    &Ctx::system("ttl-after-finished-controller"),
                );
            } else {
                queue.add_after(
                    Key::Job(ns.into(), name.into()),
                    due.duration_since(now).unwrap_or_default() + Duration::from_millis(50),
                );
            }
        }
        return;
    }
    let pods = pods_owned_by(cluster, ns, &uid);
    let active: Vec<&Arc<Value>> = pods
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed") && !deleting(p))
        .collect();
    let succeeded_now = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed_now = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let succeeded = succeeded_now.max(job["status"]["succeeded"].as_i64().unwrap_or(0));
    let failed = failed_now.max(job["status"]["failed"].as_i64().unwrap_or(0));
    let completions = job["spec"]["completions"].as_i64().unwrap_or(1);
    let parallelism = job["spec"]["parallelism"].as_i64().unwrap_or(1);
    let backoff_limit = job["spec"]["backoffLimit"].as_i64().unwrap_or(6);
    let start = job["status"]["startTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(util::now);
    let started_at = util::parse_rfc3339(&start).unwrap_or(now);
    let mut fail: Option<(&str, String)> = None;
    if let Some(ads) = job["spec"]["activeDeadlineSeconds"].as_u64() {
        let deadline = started_at + Duration::from_secs(ads);
        if now >= deadline {
            fail = Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline".into(),
            ));
        } else {
            queue.add_after(
                Key::Job(ns.into(), name.into()),
                deadline.duration_since(now).unwrap_or_default() + Duration::from_millis(20),
            );
        }
    }
    if fail.is_none() && failed > backoff_limit {
        fail = Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".into(),
        ));
    }
    let ctx = Ctx::system("job-controller");
    let mut created = 0;
    if fail.is_some() {
        for p in &active {
            let (pns, pname) = crate::api::store::key_of(p);
            let _ = cluster
                .api
                .delete(&pods_info, &pns, &pname, &DeleteOptions::default(), &ctx);
        }
    } else if succeeded < completions {
        let want = (parallelism.min(completions - succeeded) - active.len() as i64).max(0);
        if want > 0 {
            // Exponential back-off after failures, as the Job controller does (scaled down for the sim).
            let last_failure = pods
                .iter()
                .filter(|p| phase(p) == "Failed")
                .filter_map(|p| {
                    p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
                        .as_str()
                        .and_then(util::parse_rfc3339)
                })
                .max();
            let backoff = if failed > 0 {
                cluster.job_backoff * 2u32.saturating_pow((failed - 1).min(6) as u32)
            } else {
                Duration::ZERO
            };
            let ready_at = last_failure.map(|t| t + backoff).unwrap_or(now);
            if now < ready_at {
                queue.add_after(
                    Key::Job(ns.into(), name.into()),
                    ready_at.duration_since(now).unwrap_or_default() + Duration::from_millis(10),
                );
            } else {
                for _ in 0..want {
                    let pod = pod_from_template(
                        &job["spec"]["template"],
                        &format!("{name}-"),
                        owner_ref(&jobs, &job),
                        &[],
                    );
                    match cluster.api.create(&pods_info, ns, pod, &ctx) {
                        Ok(out) => {
                            created += 1;
                            event(
                                cluster,
                                &job,
                                &jobs,
                                "Normal",
                                "SuccessfulCreate",
                                &format!("Created pod: {}", s(&out.body["metadata"]["name"])),
                                "job-controller",
                            );
                        }
                        Err(e) => event(
                            cluster,
                            &job,
                            &jobs,
                            "Warning",
                            "FailedCreate",
                            &format!("Error creating: {}", e.message),
                            "job-controller",
                        ),
                    }
                }
            }
        }
    }
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let nowt = util::now();
    let mut status = job["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    status["startTime"] = json!(start);
    status["active"] = json!(if fail.is_some() {
        0
    } else {
        active.len() + created
    });
    status["ready"] = json!(ready);
    status["terminating"] = json!(0);
    status["uncountedTerminatedPods"] = json!({});
    if succeeded > 0 {
        status["succeeded"] = json!(succeeded);
    }
    if failed > 0 {
        status["failed"] = json!(failed);
    }
    let mut conds = status["conditions"].as_array().cloned().unwrap_or_default();
    if let Some((reason, msg)) = &fail {
        for t in ["FailureTarget", "Failed"] {
            conds.push(json!({"type": t, "status": "True", "reason": reason, "message": msg, "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        }
        event(
            cluster,
            &job,
            &jobs,
            "Warning",
            reason,
            msg,
            "job-controller",
        );
    } else if succeeded >= completions {
        conds.push(json!({"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        conds.push(json!({"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        status["completionTime"] = json!(nowt);
        status["active"] = json!(0);
        event(
            cluster,
            &job,
            &jobs,
            "Normal",
            "Completed",
            "Job completed",
            "job-controller",
        );
        if job["spec"]["ttlSecondsAfterFinished"].is_u64() {
            queue.add_after(Key::Job(ns.into(), name.into()), Duration::from_millis(10));
        }
    }
    if !conds.is_empty() {
        status["conditions"] = json!(conds);
    }
    if status != job["status"] {
        let _ = cluster
            .api
            .modify(&jobs, ns, name, Some("status"), "job-controller", &|o| {
                o["status"] = status.clone();
                true
            });
    }
}

fn tolerates(tolerations: &[&Value], taint: &Value) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok = t["effect"]
            .as_str()
            .is_none_or(|e| e.is_empty() || Some(e) == taint["effect"].as_str());
        let key_ok = match t["operator"].as_str().unwrap_or("Equal") {
            "Exists" => t["key"]
                .as_str()
                .is_none_or(|k| k.is_empty() || Some(k) == taint["key"].as_str()),
            _ => {
                t["key"] == taint["key"]
                    && t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or("")
            }
        };
        effect_ok && key_ok
    })
}

fn node_fits(node: &Value, pod_spec: &Value, extra_tolerations: &[Value]) -> bool {
    unfit_reason(node, pod_spec, extra_tolerations).is_none()
}

/// `NodeSelectorRequirement` of a required node affinity term (`matchExpressions` against the
/// labels, `matchFields` against `metadata.name`), as
/// kubernetes/kubernetes@v1.33 `staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity`.
fn requirement_matches(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let num = |s: &str| s.parse::<i64>().ok();
    match req["operator"].as_str().unwrap_or("") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(num), values.first().and_then(|v| num(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(num), values.first().and_then(|v| num(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// `nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution` (terms ORed, the
/// requirements of a term ANDed; a term with no requirement matches nothing).
fn affinity_matches(node: &Value, pod_spec: &Value) -> bool {
    let labels = node["metadata"]["labels"].as_object();
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let selector_ok = pod_spec["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let required =
        &pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let affinity_ok = match required["nodeSelectorTerms"].as_array() {
        None => true,
        Some(terms) => terms.iter().any(|term| {
            let exprs = term["matchExpressions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let fields = term["matchFields"].as_array().cloned().unwrap_or_default();
            (!exprs.is_empty() || !fields.is_empty())
                && exprs
                    .iter()
                    .all(|e| requirement_matches(e, label(e["key"].as_str().unwrap_or(""))))
                && fields.iter().all(|f| {
                    f["key"] == json!("metadata.name")
                        && requirement_matches(f, node["metadata"]["name"].as_str())
                })
        }),
    };
    selector_ok && affinity_ok
}

/// Why the default scheduler's filters reject this node for the pod, in the order its filter
/// plugins run (NodeUnschedulable, TaintToleration, NodeAffinity), with their reason strings
/// (kubernetes/kubernetes@v1.33 `pkg/scheduler/framework/plugins/{nodeunschedulable,
/// tainttoleration,nodeaffinity}`). A NotReady node without its condition taint gets
/// `node.kubernetes.io/not-ready`, as TaintNodesByCondition would put there.
fn unfit_reason(node: &Value, pod_spec: &Value, extra_tolerations: &[Value]) -> Option<String> {
    let tols: Vec<&Value> = pod_spec["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(extra_tolerations)
        .collect();
    if node["spec"]["unschedulable"] == true
        && !tolerates(
            &tols,
            &json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}),
        )
    {
        return Some("node(s) were unschedulable".into());
    }
    let taints = node["spec"]["taints"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let conditioned = taints.iter().any(|t| {
        matches!(
            t["key"].as_str(),
            Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
        )
    });
    let not_ready = (!conditions_ready(&node["status"]) && !conditioned)
        .then(|| json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}));
    if let Some(t) = taints
        .iter()
        .chain(not_ready.as_ref())
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .find(|t| !tolerates(&tols, t))
    {
        return Some(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t["key"].as_str().unwrap_or(""),
            t["value"].as_str().unwrap_or("")
        ));
    }
    if !affinity_matches(node, pod_spec) {
        return Some("node(s) didn't match Pod's node affinity/selector".into());
    }
    None
}

/// The FitError text: reasons counted per node, "N reason" sorted, then the preemption
/// post-filter's verdict (none of these reasons is resolvable by preemption).
fn fit_error(total: usize, reasons: &[String]) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".into();
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in reasons {
        *counts.entry(r.as_str()).or_default() += 1;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
        parts.join(", ")
    )
}

/// The default scheduler, reduced to its filters (unschedulable, taints, node affinity and
/// selector) and least-loaded placement; an unschedulable pod gets `PodScheduled=False` and a
/// `FailedScheduling` event with the real message.
fn schedule(cluster: &Cluster, ns: &str, name: &str) {
    let pods = cluster.api.info("", "pods");
    let Ok(pod) = cluster.api.get(&pods, ns, name) else {
        return;
    };
    if pod["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
        || deleting(&pod)
    {
        return;
    }
    let nodes = cluster
        .api
        .list(&cluster.api.info("", "nodes"), &Filter::default())
        .0;
    let (all_pods, _) = cluster.api.list(&pods, &Filter::default());
    let mut load: HashMap<String, usize> = HashMap::new();
    for p in &all_pods {
        if let Some(n) = p["spec"]["nodeName"].as_str() {
            *load.entry(n.to_string()).or_default() += 1;
        }
    }
    let mut reasons = Vec::new();
    let best = nodes
        .iter()
        .filter(|n| match unfit_reason(n, &pod["spec"], &[]) {
            None => true,
            Some(r) => {
                reasons.push(r);
                false
            }
        })
        .min_by_key(|n| {
            (
                load.get(n["metadata"]["name"].as_str().unwrap_or(""))
                    .copied()
                    .unwrap_or(0),
                s(&n["metadata"]["name"]),
            )
        });
    match best {
        Some(n) => {
            let node = s(&n["metadata"]["name"]);
            let _ = cluster
                .api
                .bind(ns, name, &node, &Ctx::system("default-scheduler"));
        }
        None => {
            let message = fit_error(nodes.len(), &reasons);
            let updated = cluster.api.modify(&pods, ns, name, Some("status"), "default-scheduler", &|o: &mut Value| {
                let same = o["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
                    c["type"] == json!("PodScheduled") && c["status"] == json!("False") && c["message"] == json!(message)
                });
                if same {
                    return false;
                }
                o["status"]["phase"] = json!("Pending");
                o["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message, "lastProbeTime": null, "lastTransitionTime": util::now()}]);
                true
            });
            if matches!(updated, Ok(Some(_))) {
                event(
                    cluster,
                    &pod,
                    &pods,
                    "Warning",
                    "FailedScheduling",
                    &message,
                    "default-scheduler",
                );
            }
        }
    }
}

fn template_hash(template: &Value) -> String {
    util::short_hash(template.to_string().as_bytes())
}

fn replicaset(cluster: &Cluster, ns: &str, name: &str) {
    let rsi = cluster.api.info("apps", "replicasets");
    let pods_info = cluster.api.info("", "pods");
    let Ok(rs) = cluster.api.get(&rsi, ns, name) else {
        return;
    };
    if deleting(&rs) {
        return;
    }
    let pods: Vec<Arc<Value>> = pods_owned_by(cluster, ns, &s(&rs["metadata"]["uid"]))
        .into_iter()
        .filter(|p| !deleting(p) && !matches!(phase(p), "Succeeded" | "Failed"))
        .collect();
    let want = rs["spec"]["replicas"].as_i64().unwrap_or(1) as usize;
    let ctx = Ctx::system("replicaset-controller");
    if pods.len() < want {
        for _ in pods.len()..want {
            let pod = pod_from_template(
                &rs["spec"]["template"],
                &format!("{name}-"),
                owner_ref(&rsi, &rs),
                &[],
            );
            let _ = cluster.api.create(&pods_info, ns, pod, &ctx);
        }
    } else if pods.len() > want {
        for p in pods.iter().skip(want) {
            let (pns, pname) = crate::api::store::key_of(p);
            let _ = cluster
                .api
                .delete(&pods_info, &pns, &pname, &DeleteOptions::default(), &ctx);
        }
    }
    let ready = pods.iter().filter(|p| is_ready(p)).count().min(want);
    let status = json!({"replicas": pods.len().min(want).max(if pods.len() < want { pods.len() } else { want }), "fullyLabeledReplicas": pods.len().min(want),
        "readyReplicas": ready, "availableReplicas": ready, "observedGeneration": rs["metadata"]["generation"]});
    if status != rs["status"] {
        let _ = cluster.api.modify(
            &rsi,
            ns,
            name,
            Some("status"),
            "replicaset-controller",
            &|o| {
                o["status"] = status.clone();
                true
            },
        );
    }
}

fn deployment(cluster: &Cluster, ns: &str, name: &str) {
    let di = cluster.api.info("apps", "deployments");
    let rsi = cluster.api.info("apps", "replicasets");
    let Ok(d) = cluster.api.get(&di, ns, name) else {
        return;
    };
    if deleting(&d) {
        return;
    }
    let hash = template_hash(&d["spec"]["template"]);
    let rs_name = format!("{name}-{hash}");
    let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1);
    let ctx = Ctx::system("deployment-controller");
    let owned: Vec<Arc<Value>> = cluster
        .api
        .store
        .dependents_of(&s(&d["metadata"]["uid"]))
        .into_iter()
        .filter(|(gr, _)| gr.resource == "replicasets")
        .filter_map(|(_, (rns, rname))| cluster.api.store.get(&rsi.key(), &rns, &rname))
        .collect();
    if !owned.iter().any(|r| s(&r["metadata"]["name"]) == rs_name) {
        let mut template = d["spec"]["template"].clone();
        template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        let mut selector = d["spec"]["selector"].clone();
        selector["matchLabels"]["pod-template-hash"] = json!(hash);
        let rs = json!({"metadata": {"name": rs_name, "labels": template["metadata"]["labels"], "ownerReferences": [owner_ref(&di, &d)],
            "annotations": {"deployment.kubernetes.io/desired-replicas": replicas.to_string(), "deployment.kubernetes.io/revision": (owned.len() + 1).to_string()}},
            "spec": {"replicas": replicas, "selector": selector, "template": template}});
        let _ = cluster.api.create(&rsi, ns, rs, &ctx);
    }
    let mut ready = 0;
    let mut total = 0;
    let mut updated = 0;
    for r in &owned {
        let rname = s(&r["metadata"]["name"]);
        let want = if rname == rs_name { replicas } else { 0 };
        if r["spec"]["replicas"].as_i64() != Some(want) {
            let _ = cluster
                .api
                .modify(&rsi, ns, &rname, None, "deployment-controller", &|o| {
                    o["spec"]["replicas"] = json!(want);
                    true
                });
        }
        total += r["status"]["replicas"].as_i64().unwrap_or(0);
        ready += r["status"]["readyReplicas"].as_i64().unwrap_or(0);
        if rname == rs_name {
            updated = r["status"]["replicas"].as_i64().unwrap_or(0);
        }
    }
    let now = util::now();
    let available = ready >= replicas;
    let status = json!({"observedGeneration": d["metadata"]["generation"], "replicas": total, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": ready,
        "unavailableReplicas": (replicas - ready).max(0),
        "conditions": [
            {"type": "Available", "status": if available { "True" } else { "False" }, "reason": if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
             "message": if available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." }},
            {"type": "Progressing", "status": "True", "reason": if available && updated == replicas { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
             "message": format!("ReplicaSet \"{rs_name}\" {}", if available && updated == replicas { "has successfully progressed." } else { "is progressing." })}]});
    let differs = {
        let strip = |v: &Value| {
            let mut v = v.clone();
            for c in v["conditions"].as_array_mut().into_iter().flatten() {
                c.as_object_mut().map(|m| {
                    m.remove("lastUpdateTime");
                    m.remove("lastTransitionTime")
                });
            }
            v
        };
        strip(&status) != strip(&d["status"])
    };
    if differs {
        let _ = cluster.api.modify(
            &di,
            ns,
            name,
            Some("status"),
            "deployment-controller",
            &|o| {
                let mut st = status.clone();
                for c in st["conditions"].as_array_mut().into_iter().flatten() {
                    c["lastUpdateTime"] = json!(now);
                    c["lastTransitionTime"] = json!(now);
                }
                o["status"] = st;
                true
            },
        );
    }
}

/// DaemonSet pods tolerate these by default (the DaemonSet controller adds them).
fn daemonset_tolerations() -> Vec<Value> {
    [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ]
    .iter()
    .map(|k| json!({"key": k, "operator": "Exists"}))
    .collect()
}

/// Pods a DaemonSet sync creates at most; the rest wait for the next sync, as upstream's
/// `BurstReplicas` (kubernetes/kubernetes@v1.33.0 pkg/controller/daemon/daemon_controller.go,
/// `syncNodes`). Thousands of creates in one sync also starved the event subscribers, whose
/// backlog kept ~100 MiB of superseded objects alive at 5,000 nodes.
const DAEMONSET_BURST_REPLICAS: usize = 250;

fn daemonset(cluster: &Cluster, queue: &Arc<Queue>, ns: &str, name: &str) {
    let dsi = cluster.api.info("apps", "daemonsets");
    let pods_info = cluster.api.info("", "pods");
    let Ok(ds) = cluster.api.get(&dsi, ns, name) else {
        return;
    };
    if deleting(&ds) {
        return;
    }
    let hash = template_hash(&ds["spec"]["template"]);
    let nodes = cluster
        .api
        .list(&cluster.api.info("", "nodes"), &Filter::default())
        .0;
    let extra = daemonset_tolerations();
    let eligible: Vec<String> = nodes
        .iter()
        .filter(|n| node_fits(n, &ds["spec"]["template"]["spec"], &extra))
        .map(|n| s(&n["metadata"]["name"]))
        .collect();
    // Creating thousands of pods takes seconds, in which heartbeats replace most nodes: held
    // here, their old versions (~40 KiB each) piled up as a transient the heap never returned.
    drop(nodes);
    let pods: Vec<Arc<Value>> = pods_owned_by(cluster, ns, &s(&ds["metadata"]["uid"]))
        .into_iter()
        .filter(|p| !deleting(p))
        .collect();
    let mut by_node: HashMap<String, Vec<&Arc<Value>>> = HashMap::new();
    for p in &pods {
        by_node
            .entry(s(&p["spec"]["nodeName"]))
            .or_default()
            .push(p);
    }
    let ctx = Ctx::system("daemonset-controller");
    let max_unavailable = ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"]
        .as_i64()
        .unwrap_or(1)
        .max(1) as usize;
    let on_delete = ds["spec"]["updateStrategy"]["type"] == json!("OnDelete");
    let mut unavailable = pods.iter().filter(|p| !is_ready(p)).count();
    let mut updated = 0;
    let mut ready = 0;
    let (mut created, mut deferred) = (0, false);
    for node in &eligible {
        match by_node.get(node) {
            None if created == DAEMONSET_BURST_REPLICAS => deferred = true,
            None => {
                created += 1;
                let mut pod = pod_from_template(
                    &ds["spec"]["template"],
                    &format!("{name}-"),
                    owner_ref(&dsi, &ds),
                    &[
                        ("controller-revision-hash", hash.clone()),
                        (
                            "pod-template-generation",
                            ds["metadata"]["generation"].to_string(),
                        ),
                    ],
                );
                pod["spec"]["nodeName"] = json!(node);
                let mut tols = pod["spec"]["tolerations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                tols.extend(extra.iter().map(|t| {
                    let mut t = t.clone();
                    t["effect"] = json!(if t["key"] == json!("node.kubernetes.io/not-ready")
                        || t["key"] == json!("node.kubernetes.io/unreachable")
                    {
                        "NoExecute"
                    } else {
                        "NoSchedule"
                    });
                    t
                }));
                pod["spec"]["tolerations"] = json!(tols);
                let _ = cluster.api.create(&pods_info, ns, pod, &ctx);
            }
            Some(ps) => {
                for p in ps {
                    let current =
                        p["metadata"]["labels"]["controller-revision-hash"] == json!(hash);
                    if current {
                        updated += 1;
                    }
                    if is_ready(p) {
                        ready += 1;
                    }
                    if !current && !on_delete && (unavailable < max_unavailable || !is_ready(p)) {
                        let (pns, pname) = crate::api::store::key_of(p);
                        let _ = cluster.api.delete(
                            &pods_info,
                            &pns,
                            &pname,
                            &DeleteOptions::default(),
                            &ctx,
                        );
                        if is_ready(p) {
                            unavailable += 1;
                        }
                    }
                }
            }
        }
    }
    let mut misscheduled = 0;
    for (node, ps) in &by_node {
        if !eligible.contains(node) {
            misscheduled += 1;
            for p in ps {
                let (pns, pname) = crate::api::store::key_of(p);
                let _ =
                    cluster
                        .api
                        .delete(&pods_info, &pns, &pname, &DeleteOptions::default(), &ctx);
            }
        }
    }
    if deferred {
        queue.add(Key::DaemonSet(ns.to_string(), name.to_string()));
    }
    let scheduled = eligible.iter().filter(|n| by_node.contains_key(*n)).count();
    let status = json!({"currentNumberScheduled": scheduled, "desiredNumberScheduled": eligible.len(), "numberMisscheduled": misscheduled,
        "numberReady": ready, "numberAvailable": ready, "numberUnavailable": eligible.len().saturating_sub(ready), "updatedNumberScheduled": updated,
        "observedGeneration": ds["metadata"]["generation"]});
    let mut st = status.clone();
    if ready == 0 {
        st.as_object_mut().unwrap().remove("numberAvailable");
    }
    if eligible.len().saturating_sub(ready) == 0 {
        st.as_object_mut().unwrap().remove("numberUnavailable");
    }
    if st != ds["status"] {
        let _ = cluster.api.modify(
            &dsi,
            ns,
            name,
            Some("status"),
            "daemonset-controller",
            &|o| {
                o["status"] = st.clone();
                true
            },
        );
    }
}

/// Namespace deletion: delete everything inside, then drop the `kubernetes` finalizer.
fn namespace(cluster: &Cluster, queue: &Arc<Queue>, name: &str) {
    let nsi = cluster.api.info("", "namespaces");
    let Ok(ns) = cluster.api.get(&nsi, "", name) else {
        return;
    };
    if !deleting(&ns) {
        return;
    }
    let ctx = Ctx::system("namespace-controller");
    let mut remaining = 0;
    for res in cluster.api.registry.all() {
        if !res.namespaced || res.create_only {
            continue;
        }
        let filter = Filter {
            namespace: Some(name.to_string()),
            ..Default::default()
        };
        for o in cluster.api.list(&res, &filter).0 {
            remaining += 1;
            if !deleting(&o) {
                let (_, oname) = crate::api::store::key_of(&o);
                let _ = cluster.api.delete(
                    &res,
                    name,
                    &oname,
                    &DeleteOptions {
                        propagation: Some(Propagation::Background),
                        grace_period: Some(0),
                        ..Default::default()
                    },
                    &ctx,
                );
            }
        }
    }
    if remaining == 0 {
        let _ = cluster
            .api
            .modify(&nsi, "", name, None, "namespace-controller", &|o| {
                o["spec"]["finalizers"] = json!([]);
                true
            });
        let _ = cluster
            .api
            .delete(&nsi, "", name, &DeleteOptions::default(), &ctx);
        let _ = cluster.api.store.write(&nsi.key(), "", name, false, |cur| {
            Ok(
                if cur.is_some_and(|c| {
                    c["spec"]["finalizers"]
                        .as_array()
                        .is_none_or(|f| f.is_empty())
                }) {
                    crate::api::store::WriteOp::Delete
                } else {
                    crate::api::store::WriteOp::Noop
                },
            )
        });
    } else {
        queue.add_after(Key::Namespace(name.to_string()), Duration::from_millis(100));
    }
}

/// Expired bootstrap tokens are deleted (tokencleaner), and `kube-public/cluster-info` carries a
/// `jws-kubeconfig-<token-id>` entry for every signing token (bootstrapsigner). The signature is
/// a stand-in: what matters to clients is that the key appears and disappears with the token.
fn bootstrap_tokens(cluster: &Cluster, queue: &Arc<Queue>) {
    let secrets = cluster.api.info("", "secrets");
    let filter = Filter {
        namespace: Some("kube-system".into()),
        field: crate::api::selector::FieldSelector::parse("type=bootstrap.kubernetes.io/token")
            .unwrap(),
        ..Default::default()
    };
    let now = SystemTime::now();
    let mut signing: Vec<String> = Vec::new();
    for t in cluster.api.list(&secrets, &filter).0 {
        let name = s(&t["metadata"]["name"]);
        let expiry = util::secret_field(&t, "expiration").and_then(|e| util::parse_rfc3339(&e));
        if let Some(exp) = expiry {
            if exp <= now {
                let _ = cluster.api.delete(
                    &secrets,
                    "kube-system",
                    &name,
                    &DeleteOptions::default(),
                    &Ctx::system("tokencleaner"),
                );
                continue;
            }
            queue.add_after(
                Key::BootstrapTokens,
                exp.duration_since(now).unwrap_or_default() + Duration::from_millis(50),
            );
        }
        if util::secret_field(&t, "usage-bootstrap-signing").as_deref() == Some("true")
            && let Some(id) = util::secret_field(&t, "token-id")
        {
            signing.push(id);
        }
    }
    let cms = cluster.api.info("", "configmaps");
    let _ = cluster.api.modify(
        &cms,
        "kube-public",
        "cluster-info",
        None,
        "bootstrapsigner",
        &|o| {
            let data = o["data"].as_object().cloned().unwrap_or_default();
            let mut next = data.clone();
            next.retain(|k, _| {
                !k.starts_with("jws-kubeconfig-")
                    || signing
                        .iter()
                        .any(|id| k == &format!("jws-kubeconfig-{id}"))
            });
            let kubeconfig = data
                .get("kubeconfig")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for id in &signing {
                let sig = format!(
                    "yurtsim..{:08x}",
                    util::fnv32a(format!("{id}{kubeconfig}").as_bytes())
                );
                next.insert(format!("jws-kubeconfig-{id}"), json!(sig));
            }
            if next == data {
                return false;
            }
            o["data"] = Value::Object(next);
            true
        },
    );
}

/// Signers kube-controller-manager's csrsigning controller serves (kubernetes/kubernetes
/// pkg/controller/certificates/signer/signer.go; kubeadm passes it the cluster CA). The
/// legacy-unknown one (NewLegacyUnknownCSRSigningController) signs what v1beta1 requests
/// without a better signer ask for — YurtHub v0.6 and yurt-tunnel v0.6 request it; the v1 API
/// refuses new requests for it, so only clusters serving v1beta1 (≤ 1.21) get such requests.
const SIGNERS: &[&str] = &[
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/legacy-unknown",
];

/// An approved, not yet issued request of a known signer gets a certificate from the
/// cluster CA, valid one year (kube-controller-manager's `--cluster-signing-duration`
/// default 8760h, kubernetes/kubernetes cmd/kube-controller-manager/app/options/csrsigningcontroller.go).
fn sign_csr(cluster: &Cluster, name: &str) {
    let csrs = cluster
        .api
        .info("certificates.k8s.io", "certificatesigningrequests");
    let Ok(csr) = cluster.api.get(&csrs, "", name) else {
        return;
    };
    let approved = csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == json!("Approved") && c["status"] == json!("True"));
    let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
    if !approved || !SIGNERS.contains(&signer) || csr["status"]["certificate"].is_string() {
        return;
    }
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let Some(cert) = csr["spec"]["request"]
        .as_str()
        .and_then(|r| b64.decode(r).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pem| crate::pki::sign(&pem, Duration::from_secs(365 * 24 * 3600)))
    else {
        return;
    };
    let cert = b64.encode(cert);
    let _ = cluster.api.modify(
        &csrs,
        "",
        name,
        Some("status"),
        "certificatesigningrequest-signing-controller",
        &|o| {
            o["status"]["certificate"] = json!(cert);
            true
        },
    );
}
