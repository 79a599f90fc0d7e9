//! The ReplicaSet controller: pods from the template up or down to the replicas.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::{Ctx, DeleteOptions};
use crate::util;

use super::*;

pub(super) fn template_hash(template: &Value) -> String {
    util::short_hash(template.to_string().as_bytes())
}

pub(super) fn replicaset(cluster: &Cluster, ns: &str, name: &str) {
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
