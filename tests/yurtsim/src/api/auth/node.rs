//! The Node authorizer: its static rules, and the objects a node may reach through the pods
//! bound to it (the graph). kubernetes/kubernetes v1.33
//! `plugin/pkg/auth/authorizer/node/node_authorizer.go` (graph-checked Secrets/ConfigMaps, "no
//! relationship found between node … and this object") and its static rules
//! `bootstrappolicy.NodeRules()`.

use crate::api::Api;
use crate::api::store::Filter;
use crate::version::Version;

use super::*;

pub(super) enum NodeDecision {
    Allow,
    NoOpinion(String),
}

/// The static part of the Node authorizer (`bootstrappolicy.NodeRules()`, v1.33) for what a
/// node identity may do anywhere, as RBAC-style rules (group, resources, verbs).
const NODE_RULES: &[(&str, &[&str], &[&str])] = &[
    ("authentication.k8s.io", &["tokenreviews"], &["create"]),
    (
        "authorization.k8s.io",
        &["subjectaccessreviews", "localsubjectaccessreviews"],
        &["create"],
    ),
    ("", &["services"], &["get", "list", "watch"]),
    (
        "",
        &["nodes"],
        &["create", "get", "list", "watch", "patch", "update"],
    ),
    ("", &["nodes/status"], &["patch", "update"]),
    ("", &["events"], &["create", "update", "patch"]),
    ("events.k8s.io", &["events"], &["create", "update", "patch"]),
    ("", &["pods"], &["get", "list", "watch", "create", "delete"]),
    ("", &["pods/status"], &["update", "patch"]),
    ("", &["pods/eviction"], &["create"]),
    (
        "certificates.k8s.io",
        &["certificatesigningrequests"],
        &["create", "get", "list", "watch"],
    ),
    (
        "coordination.k8s.io",
        &["leases"],
        &["get", "create", "update", "patch", "delete"],
    ),
    ("storage.k8s.io", &["csidrivers"], &["get", "list", "watch"]),
    (
        "node.k8s.io",
        &["runtimeclasses"],
        &["get", "list", "watch"],
    ),
];

pub(super) fn node_authorize(api: &Api, node: &str, attrs: &Attributes) -> NodeDecision {
    if attrs.path.is_some() {
        return NodeDecision::NoOpinion(String::new());
    }
    let no_relationship = || {
        NodeDecision::NoOpinion(format!(
            "no relationship found between node '{node}' and this object"
        ))
    };
    // Graph-checked kinds: only `get`, only of objects a pod bound to this node uses.
    if attrs.group.is_empty()
        && attrs.subresource.is_empty()
        && matches!(attrs.resource.as_str(), "secrets" | "configmaps")
    {
        if attrs.verb != "get" || attrs.name.is_empty() {
            return NodeDecision::NoOpinion(format!(
                "can only read individual {} (get), not {}",
                attrs.resource, attrs.verb
            ));
        }
        let kind = if attrs.resource == "secrets" {
            "secret"
        } else {
            "configMap"
        };
        return if pod_on_node_uses(api, node, &attrs.namespace, kind, &attrs.name) {
            NodeDecision::Allow
        } else {
            no_relationship()
        };
    }
    if attrs.group == "coordination.k8s.io" && attrs.resource == "leases" {
        // A node may only touch its own Lease in kube-node-lease.
        return if attrs.namespace == "kube-node-lease"
            && (attrs.name == node || (attrs.verb == "create" && attrs.name.is_empty()))
        {
            NodeDecision::Allow
        } else {
            NodeDecision::NoOpinion(String::new())
        };
    }
    // `get` of any Endpoints ("Needed for glusterfs volumes", NodeRules in
    // plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, as read at the v1.20/v1.21
    // state of that file); kept to the releases it was read at: whether v1.22+ still grants
    // it is not checked here, so those get the stricter answer.
    if attrs.group.is_empty()
        && attrs.resource == "endpoints"
        && attrs.subresource.is_empty()
        && attrs.verb == "get"
        && api.version < Version::new(1, 22, 0)
    {
        return NodeDecision::Allow;
    }
    let combined = attrs.combined_resource();
    let allowed = NODE_RULES.iter().any(|(g, rs, vs)| {
        *g == attrs.group && rs.contains(&combined.as_str()) && vs.contains(&attrs.verb.as_str())
    });
    if allowed {
        NodeDecision::Allow
    } else {
        NodeDecision::NoOpinion(String::new())
    }
}

fn pod_on_node_uses(api: &Api, node: &str, ns: &str, kind: &str, name: &str) -> bool {
    let pods = api.info("", "pods");
    let filter = Filter {
        namespace: Some(ns.into()),
        ..Default::default()
    };
    let key = if kind == "secret" {
        "secretName"
    } else {
        "name"
    };
    api.list(&pods, &filter).0.iter().any(|p| {
        if p["spec"]["nodeName"].as_str() != Some(node) {
            return false;
        }
        let spec = &p["spec"];
        let in_volumes = spec["volumes"].as_array().into_iter().flatten().any(|v| {
            v[kind][key].as_str() == Some(name)
                || v["projected"]["sources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| s[kind]["name"].as_str() == Some(name))
        });
        let ref_key = if kind == "secret" {
            "secretKeyRef"
        } else {
            "configMapKeyRef"
        };
        let from_key = if kind == "secret" {
            "secretRef"
        } else {
            "configMapRef"
        };
        let in_env = ["containers", "initContainers"].iter().any(|f| {
            spec[*f].as_array().into_iter().flatten().any(|c| {
                c["env"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| e["valueFrom"][ref_key]["name"].as_str() == Some(name))
                    || c["envFrom"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|e| e[from_key]["name"].as_str() == Some(name))
            })
        });
        let pull = kind == "secret"
            && spec["imagePullSecrets"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["name"].as_str() == Some(name));
        in_volumes || in_env || pull
    })
}
