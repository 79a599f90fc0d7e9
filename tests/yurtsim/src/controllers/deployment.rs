//! The Deployment controller: a ReplicaSet per pod template (named by its hash), scaled to the
//! replicas, the old ones down.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::Ctx;
use crate::util;

use super::*;

pub(super) fn deployment(cluster: &Cluster, ns: &str, name: &str) {
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
