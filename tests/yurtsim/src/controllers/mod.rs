//! The controllers layer: kube-controller-manager's and kube-scheduler's work, as clients of
//! the API layer, one file per controller ([`endpoints`]: the endpoints controller); this file
//! holds the work queue and the loop that feeds it.
//!
//! The controllers clients depend on: scheduler, Job, ReplicaSet, Deployment, DaemonSet,
//! namespace deletion and Job TTL. Level-triggered from a de-duplicating work queue, so bursts
//! of pod updates (thousands of DaemonSet pods) collapse into a few reconciles.

mod bootstrap_tokens;
mod csr_signing;
mod daemonset;
mod deployment;
pub mod endpoints;
mod job;
mod namespace;
mod replicaset;
mod scheduler;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::api::Api;
use crate::api::registry::ResourceInfo;
use crate::api::store::Filter;

use bootstrap_tokens::*;
use csr_signing::*;
use daemonset::*;
use deployment::*;
use job::*;
use namespace::*;
use replicaset::*;
use scheduler::*;

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
