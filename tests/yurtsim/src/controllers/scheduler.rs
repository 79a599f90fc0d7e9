//! kube-scheduler: taints and tolerations, node selectors and affinity, why a node does not
//! fit, and binding a pod to a node that does.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::api::Ctx;
use crate::api::store::Filter;
use crate::util;

use super::*;

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

pub(super) fn node_fits(node: &Value, pod_spec: &Value, extra_tolerations: &[Value]) -> bool {
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
pub(super) fn schedule(cluster: &Cluster, ns: &str, name: &str) {
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
