//! yurt-manager's webhook server as the API server calls it: the admission handlers
//! (`admission_webhooks.rs` for v1.7.0; the other handlers allow) and `/convert`, the CRD
//! conversion webhook. `/convert` is registered once a webhook of a convertible type is
//! (openyurtio/openyurt@V pkg/yurtmanager/webhook/util/util.go RegisterWebhook:
//! conversion.IsConvertible, for V = v1.6.1 and v1.7.0): with the nodepool-controller's
//! NodePool handler, the yurt-app-set-controller's or the gateway-pickup-controller's.
//!
//! The handler is sigs.k8s.io/controller-runtime@v0.19.5 pkg/webhook/conversion/conversion.go
//! (both tags): each object decoded into its Go type (unknown fields dropped), the desired
//! type allocated from the scheme, then ConvertTo the hub, ConvertFrom it, or both; the
//! result encoded from the Go type (`omitempty` fields left out when zero); any error fails
//! the whole review with its text. Modelled: NodePool, whose types and conversions are
//! openyurtio/openyurt@V pkg/apis/apps/{v1alpha1,v1beta1,v1beta2}/nodepool_types.go and
//! nodepool_conversion.go — the hub is v1beta2 at v1.7.0 (v1alpha1 and v1beta1 spokes) and
//! v1beta1 at v1.6.1 (v1alpha1 spoke; no v1beta2 in its scheme). Other kinds fail the review.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::admission_webhooks::Handlers;
use crate::api::admission::{Review, Verdict, WebhookServer};
use crate::version::Version;

const GROUP: &str = "apps.openyurt.io";
/// apps.NodePoolHostNetworkLabel (pkg/apis/apps/well_known_labels_annotations.go)
const HOST_NETWORK: &str = "nodepool.openyurt.io/hostnetwork";

pub(super) struct Server {
    /// v1.7.0's modelled admission handlers; without them every served path allows.
    pub admission: Option<Handlers>,
    pub paths: BTreeSet<String>,
    /// `/convert` is served
    pub converts: bool,
    pub release: Version,
}

impl WebhookServer for Server {
    fn review(&self, path: &str, r: &Review) -> Option<Verdict> {
        match &self.admission {
            Some(h) => h.review(path, r),
            None => self.paths.contains(path).then(|| Verdict::Allowed(vec![])),
        }
    }

    fn convert(
        &self,
        path: &str,
        objects: &[Value],
        desired: &str,
    ) -> Option<Result<Vec<Value>, String>> {
        (self.converts && path == "/convert").then(|| {
            objects
                .iter()
                .map(|o| Scheme(self.release).convert(o, desired))
                .collect()
        })
    }
}

/// The NodePool versions of a release's scheme.
#[derive(Clone, Copy)]
struct Scheme(Version);

impl Scheme {
    fn v17(self) -> bool {
        self.0 >= Version::new(1, 7, 0)
    }

    fn hub(self) -> &'static str {
        if self.v17() { "v1beta2" } else { "v1beta1" }
    }

    fn has(self, version: &str) -> bool {
        matches!(version, "v1alpha1" | "v1beta1") || (self.v17() && version == "v1beta2")
    }

    /// runtime.NewScheme's name: the call site in k8s.io/apimachinery's scheme.go, trimmed
    /// to `pkg/...` (pkg/util/naming/from_stack.go) — line 110 at v0.34.0 (openyurt v1.7.0's
    /// go.mod), line 100 at v0.31.5 (v1.6.1's).
    fn name(self) -> &'static str {
        if self.v17() {
            "pkg/runtime/scheme.go:110"
        } else {
            "pkg/runtime/scheme.go:100"
        }
    }

    fn not_registered(self, kind: &str, gv: &str) -> String {
        format!(
            "no kind {kind:?} is registered for version {gv:?} in scheme {:?}",
            self.name()
        )
    }

    fn convert(self, obj: &Value, desired: &str) -> Result<Value, String> {
        let api_version = obj["apiVersion"].as_str().unwrap_or("");
        let kind = obj["kind"].as_str().unwrap_or("");
        let (group, from) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let to = desired.rsplit_once('/').map_or(desired, |(_, v)| v);
        if group != GROUP || kind != "NodePool" {
            return Err(format!(
                "yurtsim models the conversion of NodePools only, not of {api_version}, Kind={kind}"
            ));
        }
        if !self.has(from) {
            return Err(self.not_registered(kind, api_version));
        }
        if !self.has(to) {
            return Err(self.not_registered(kind, desired));
        }
        if from == to {
            return Err(format!(
                "conversion is not allowed between same type *{from}.NodePool"
            ));
        }
        let src = Pool::decode(obj, from);
        let hub = if from == self.hub() {
            src
        } else {
            src.convert_to(self.hub())
        };
        let dst = if to == self.hub() {
            hub
        } else {
            hub.convert_from()
        };
        Ok(dst.encode(desired, to))
    }
}

/// A NodePool as its Go types hold it: the fields of every version (each version decodes
/// and encodes only its own).
#[derive(Default, Clone)]
struct Pool {
    meta: Value,
    type_: String,
    host_network: bool,
    selector: Option<Value>,
    labels: Map<String, Value>,
    annotations: Map<String, Value>,
    taints: Vec<Value>,
    inter_connectivity: bool,
    leader_election_strategy: String,
    leader_node_label_selector: Map<String, Value>,
    enable_leader_election: bool,
    pool_scope_metadata: Vec<Value>,
    leader_replicas: i64,
    ready_node_num: i64,
    unready_node_num: i64,
    nodes: Vec<Value>,
    leader_endpoints: Vec<Value>,
    leader_num: i64,
    leader_last_elected_time: Option<String>,
    conditions: Vec<Value>,
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn map(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn list(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// A field of a Go struct: set unless `omitempty` and zero.
fn put(m: &mut Map<String, Value>, k: &str, v: Value, omitempty: bool) {
    let zero = match &v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    if !(omitempty && zero) {
        m.insert(k.into(), v);
    }
}

/// metav1.Time: RFC 3339, or null when zero (a struct: `omitempty` does not drop it).
fn time(v: &Value) -> Value {
    v.as_str()
        .filter(|t| !t.is_empty())
        .map_or(Value::Null, |t| json!(t))
}

/// k8s.io/api core/v1 Taint.
fn taint(t: &Value) -> Value {
    let mut m = Map::new();
    put(&mut m, "key", json!(s(&t["key"])), false);
    put(&mut m, "value", json!(s(&t["value"])), true);
    put(&mut m, "effect", json!(s(&t["effect"])), false);
    if t["timeAdded"].is_string() {
        m.insert("timeAdded".into(), time(&t["timeAdded"]));
    }
    Value::Object(m)
}

/// metav1.LabelSelector.
fn selector(v: &Value) -> Value {
    let mut m = Map::new();
    put(
        &mut m,
        "matchLabels",
        Value::Object(map(&v["matchLabels"])),
        true,
    );
    let exprs: Vec<Value> = list(&v["matchExpressions"])
        .iter()
        .map(|e| {
            let mut x = Map::new();
            put(&mut x, "key", json!(s(&e["key"])), false);
            put(&mut x, "operator", json!(s(&e["operator"])), false);
            put(&mut x, "values", Value::Array(list(&e["values"])), true);
            Value::Object(x)
        })
        .collect();
    put(&mut m, "matchExpressions", Value::Array(exprs), true);
    Value::Object(m)
}

impl Pool {
    fn decode(obj: &Value, version: &str) -> Pool {
        let (spec, status) = (&obj["spec"], &obj["status"]);
        let mut p = Pool {
            meta: obj["metadata"].clone(),
            type_: s(&spec["type"]),
            labels: map(&spec["labels"]),
            annotations: map(&spec["annotations"]),
            taints: list(&spec["taints"]).iter().map(taint).collect(),
            ready_node_num: status["readyNodeNum"].as_i64().unwrap_or(0),
            unready_node_num: status["unreadyNodeNum"].as_i64().unwrap_or(0),
            nodes: list(&status["nodes"]),
            ..Default::default()
        };
        match version {
            "v1alpha1" => {
                p.selector = spec["selector"]
                    .is_object()
                    .then(|| selector(&spec["selector"]))
            }
            "v1beta1" => p.host_network = spec["hostNetwork"] == json!(true),
            _ => {
                p.host_network = spec["hostNetwork"] == json!(true);
                p.inter_connectivity = spec["interConnectivity"] == json!(true);
                p.leader_election_strategy = s(&spec["leaderElectionStrategy"]);
                p.leader_node_label_selector = map(&spec["leaderNodeLabelSelector"]);
                p.enable_leader_election = spec["enableLeaderElection"] == json!(true);
                p.pool_scope_metadata = list(&spec["poolScopeMetadata"])
                    .iter()
                    .map(|g| json!({"group": s(&g["group"]), "version": s(&g["version"]), "resource": s(&g["resource"])}))
                    .collect();
                p.leader_replicas = spec["leaderReplicas"].as_i64().unwrap_or(0);
                p.leader_endpoints = list(&status["leaderEndpoints"])
                    .iter()
                    .map(|l| json!({"nodeName": s(&l["nodeName"]), "address": s(&l["address"])}))
                    .collect();
                p.leader_num = status["leaderNum"].as_i64().unwrap_or(0);
                p.leader_last_elected_time =
                    status["leaderLastElectedTime"].as_str().map(str::to_string);
                p.conditions = list(&status["conditions"]);
            }
        }
        p
    }

    /// The metadata annotation of `key`.
    fn annotation(&self, key: &str) -> &str {
        self.meta["annotations"][key].as_str().unwrap_or("")
    }

    /// A spoke's ConvertTo (the same in every spoke of both tags): ObjectMeta, type, labels,
    /// annotations, taints; hostNetwork from the annotation; the node counts and names; to
    /// v1beta2 also interConnectivity false, leader election "random" with one replica.
    fn convert_to(&self, hub: &str) -> Pool {
        let mut dst = Pool {
            meta: self.meta.clone(),
            type_: self.type_.clone(),
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            taints: self.taints.clone(),
            host_network: self.annotation(HOST_NETWORK).eq_ignore_ascii_case("true"),
            ready_node_num: self.ready_node_num,
            unready_node_num: self.unready_node_num,
            nodes: self.nodes.clone(),
            ..Default::default()
        };
        if hub == "v1beta2" {
            dst.inter_connectivity = false;
            dst.leader_election_strategy = "random".into();
            dst.leader_replicas = 1;
        }
        dst
    }

    /// A spoke's ConvertFrom the hub: the same fields back, hostNetwork as the annotation.
    fn convert_from(&self) -> Pool {
        let mut dst = Pool {
            meta: self.meta.clone(),
            type_: self.type_.clone(),
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            taints: self.taints.clone(),
            ready_node_num: self.ready_node_num,
            unready_node_num: self.unready_node_num,
            nodes: self.nodes.clone(),
            ..Default::default()
        };
        if self.host_network {
            if !dst.meta["annotations"].is_object() {
                dst.meta["annotations"] = json!({});
            }
            dst.meta["annotations"][HOST_NETWORK] = json!("true");
        }
        dst
    }

    fn encode(&self, api_version: &str, version: &str) -> Value {
        let mut spec = Map::new();
        put(&mut spec, "type", json!(self.type_), true);
        if version == "v1alpha1" {
            if let Some(sel) = &self.selector {
                spec.insert("selector".into(), sel.clone());
            }
        } else {
            put(&mut spec, "hostNetwork", json!(self.host_network), true);
        }
        put(
            &mut spec,
            "labels",
            Value::Object(self.labels.clone()),
            true,
        );
        put(
            &mut spec,
            "annotations",
            Value::Object(self.annotations.clone()),
            true,
        );
        put(&mut spec, "taints", Value::Array(self.taints.clone()), true);
        let mut status = Map::new();
        put(
            &mut status,
            "readyNodeNum",
            json!(self.ready_node_num),
            false,
        );
        put(
            &mut status,
            "unreadyNodeNum",
            json!(self.unready_node_num),
            false,
        );
        put(&mut status, "nodes", Value::Array(self.nodes.clone()), true);
        if version == "v1beta2" {
            put(
                &mut spec,
                "interConnectivity",
                json!(self.inter_connectivity),
                true,
            );
            put(
                &mut spec,
                "leaderElectionStrategy",
                json!(self.leader_election_strategy),
                true,
            );
            put(
                &mut spec,
                "leaderNodeLabelSelector",
                Value::Object(self.leader_node_label_selector.clone()),
                true,
            );
            put(
                &mut spec,
                "enableLeaderElection",
                json!(self.enable_leader_election),
                true,
            );
            put(
                &mut spec,
                "poolScopeMetadata",
                Value::Array(self.pool_scope_metadata.clone()),
                true,
            );
            put(
                &mut spec,
                "leaderReplicas",
                json!(self.leader_replicas),
                true,
            );
            put(
                &mut status,
                "leaderEndpoints",
                Value::Array(self.leader_endpoints.clone()),
                true,
            );
            put(&mut status, "leaderNum", json!(self.leader_num), true);
            status.insert(
                "leaderLastElectedTime".into(),
                time(&json!(self.leader_last_elected_time)),
            );
            put(
                &mut status,
                "conditions",
                Value::Array(self.conditions.clone()),
                true,
            );
        }
        // ObjectMeta's labels and annotations are `omitempty` maps
        let mut meta = self.meta.clone();
        if let Some(m) = meta.as_object_mut() {
            for f in ["labels", "annotations"] {
                if m.get(f)
                    .and_then(Value::as_object)
                    .is_some_and(Map::is_empty)
                {
                    m.remove(f);
                }
            }
        }
        json!({"apiVersion": api_version, "kind": "NodePool", "metadata": meta,
            "spec": spec, "status": status})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V17: Scheme = Scheme(Version::new(1, 7, 0));
    const V16: Scheme = Scheme(Version::new(1, 6, 1));

    #[test]
    fn v1beta1_to_v1beta2_sets_upstreams_leader_defaults_and_reads_the_annotation() {
        let p = json!({"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool",
            "metadata": {"name": "hz", "annotations": {"nodepool.openyurt.io/hostnetwork": "True"}},
            "spec": {"type": "Edge", "hostNetwork": false, "labels": {"a": "b"}}});
        let out = V17.convert(&p, "apps.openyurt.io/v1beta2").unwrap();
        assert_eq!(
            out["spec"],
            json!({"type": "Edge", "hostNetwork": true, "labels": {"a": "b"},
                "leaderElectionStrategy": "random", "leaderReplicas": 1})
        );
        assert_eq!(
            out["status"],
            json!({"readyNodeNum": 0, "unreadyNodeNum": 0, "leaderLastElectedTime": null})
        );
    }

    #[test]
    fn v1beta2_to_v1beta1_keeps_only_v1beta1_fields_and_annotates_host_network() {
        let p = json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool",
            "metadata": {"name": "hn"},
            "spec": {"type": "Edge", "hostNetwork": true, "leaderElectionStrategy": "mark",
                "leaderReplicas": 3, "poolScopeMetadata": [{"group": "", "version": "v1", "resource": "services"}]},
            "status": {"readyNodeNum": 2, "unreadyNodeNum": 1, "nodes": ["a", "b", "c"], "leaderNum": 1}});
        let out = V17.convert(&p, "apps.openyurt.io/v1beta1").unwrap();
        assert_eq!(out["spec"], json!({"type": "Edge"}));
        assert_eq!(
            out["status"],
            json!({"readyNodeNum": 2, "unreadyNodeNum": 1, "nodes": ["a", "b", "c"]})
        );
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"nodepool.openyurt.io/hostnetwork": "true"})
        );
        // spoke to spoke goes through the hub: v1alpha1's selector does not survive
        let a = json!({"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "x"}, "spec": {"type": "Cloud", "selector": {"matchLabels": {"k": "v"}}}});
        let out = V17.convert(&a, "apps.openyurt.io/v1beta1").unwrap();
        assert_eq!(out["spec"], json!({"type": "Cloud"}));
    }

    #[test]
    fn v161_has_no_v1beta2() {
        let p = json!({"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool", "metadata": {"name": "x"}});
        assert_eq!(
            V16.convert(&p, "apps.openyurt.io/v1beta2").unwrap_err(),
            "no kind \"NodePool\" is registered for version \"apps.openyurt.io/v1beta2\" in scheme \"pkg/runtime/scheme.go:100\""
        );
        let out = V16.convert(&p, "apps.openyurt.io/v1alpha1").unwrap();
        assert_eq!(out["spec"], json!({}));
    }
}
