//! The DaemonSet controller: which nodes a DaemonSet places a pod on, its pods created in
//! bursts, and its status.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions};

use super::*;

/// Queues the DaemonSets for which a node event changes whether the node should run their
/// pod, as kubernetes/kubernetes@v1.33.0 pkg/controller/daemon/daemon_controller.go `updateNode`
/// (and `addNode`/`deleteNode`: the sets the node should run) do, rather than every set.
pub(super) fn daemonsets_placing(
    cluster: &Cluster,
    queue: &Queue,
    before: Option<&Value>,
    now: &Value,
) {
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

pub(super) fn daemonset(cluster: &Cluster, queue: &Arc<Queue>, ns: &str, name: &str) {
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
