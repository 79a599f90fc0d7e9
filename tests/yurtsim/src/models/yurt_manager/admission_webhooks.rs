//! The node and NodePool webhooks yurt-manager v1.7.0 serves, run by the API server's
//! admission (`crate::api::admission`) when a ready yurt-manager pod backs the webhook Service.
//! Sources (openyurtio/openyurt@v1.7.0): pkg/yurtmanager/webhook/node/v1/node_default.go,
//! node_validation.go, node_handler.go; pkg/yurtmanager/webhook/nodepool/v1beta2/
//! nodepool_default.go, nodepool_validation.go, nodepool_handler.go. Responses are built as
//! sigs.k8s.io/controller-runtime@v0.19.5 pkg/webhook/admission/defaulter_custom.go and
//! validator_custom.go do (an error carrying an API status is sent as that status) from the
//! errors k8s.io/apimachinery@v0.34.0 pkg/api/errors NewInvalid / NewForbidden build.
//! Reads go through the manager's cache (the handlers' client is the nodepool-controller's,
//! whose reads the base identity's informers serve). Only v1.7.0's server (crd_conversion.rs)
//! runs them.

use std::collections::BTreeSet;

use super::*;
use crate::api::admission::{Review, Verdict};
use crate::api::error::ApiError;

const POOL_LABEL: &str = "apps.openyurt.io/nodepool";
const DESIRED_POOL_LABEL: &str = "apps.openyurt.io/desired-nodepool";
const HOST_NETWORK_LABEL: &str = "nodepool.openyurt.io/hostnetwork";
const POOL_TYPE_LABEL: &str = "nodepool.openyurt.io/type";
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";

pub(super) struct Handlers {
    pub paths: BTreeSet<String>,
    /// webhookutil.GetNamespace(): --working-namespace
    pub namespace: String,
    pub base: Caller,
}

/// A field.Error: (field path, type text for the cause, body as ErrorBody renders it).
type FieldError = (String, &'static str, String);

fn forbidden(field: &str, detail: &str) -> FieldError {
    (
        field.into(),
        "FieldValueForbidden",
        format!("Forbidden: {detail}"),
    )
}

fn invalid(field: &str, value: &Value, detail: &str) -> FieldError {
    // strings quoted (%q), bools and numbers bare (ErrorBody)
    (
        field.into(),
        "FieldValueInvalid",
        format!("Invalid value: {value}: {detail}"),
    )
}

fn aggregate(errs: &[FieldError]) -> String {
    let msgs: Vec<String> = errs.iter().map(|(f, _, b)| format!("{f}: {b}")).collect();
    match msgs.len() {
        1 => msgs[0].clone(),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

/// apierrors.NewInvalid(GroupKind, name, errs).
fn new_invalid(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut e = ApiError::new(
        422,
        "Invalid",
        format!("{qualified} \"{name}\" is invalid: {}", aggregate(errs)),
    );
    let causes: Vec<Value> = errs
        .iter()
        .map(|(f, t, b)| json!({"reason": t, "message": b, "field": f}))
        .collect();
    let mut d = json!({"name": name, "kind": kind, "causes": causes});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    e.details = Some(d);
    e
}

/// apierrors.NewForbidden(GroupResource, name, err).
fn new_forbidden(group: &str, resource: &str, name: &str, err: &FieldError) -> ApiError {
    let mut e = ApiError::new(
        403,
        "Forbidden",
        format!(
            "{resource}.{group} \"{name}\" is forbidden: {}",
            aggregate(std::slice::from_ref(err))
        ),
    );
    e.details = Some(json!({"name": name, "group": group, "kind": resource}));
    e
}

fn label<'a>(o: Option<&'a Value>, key: &str) -> &'a str {
    o.and_then(|o| o["metadata"]["labels"][key].as_str())
        .unwrap_or("")
}

fn pointer(key: &str) -> String {
    format!(
        "/metadata/labels/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

impl Handlers {
    pub(super) fn review(&self, path: &str, r: &Review) -> Option<Verdict> {
        if !self.paths.contains(path) {
            return None;
        }
        Some(match path {
            "/mutate-core-openyurt-io-v1-node" => self.default_node(r),
            "/validate-core-openyurt-io-v1-node" => self.validate_node(r),
            "/mutate-apps-openyurt-io-v1beta2-nodepool" => default_pool(r),
            "/validate-apps-openyurt-io-v1beta2-nodepool" => self.validate_pool(r),
            // the other webhooks' logic is not modelled: they allow
            _ => Verdict::Allowed(vec![]),
        })
    }
}

impl Handlers {
    /// NodeHandler.Default: the desired-nodepool label fills the pool label; the pool must
    /// exist (its NotFound is the answer); a hostNetwork pool adds the hostnetwork label.
    fn default_node(&self, r: &Review) -> Verdict {
        if r.operation == "DELETE" {
            return Verdict::Allowed(vec![]);
        }
        let mut patches = Vec::new();
        let mut pool = label(r.new, POOL_LABEL).to_string();
        if pool.is_empty() {
            pool = label(r.new, DESIRED_POOL_LABEL).to_string();
            if pool.is_empty() {
                return Verdict::Allowed(vec![]);
            }
            patches.push((pointer(POOL_LABEL), json!(pool)));
        }
        match self
            .base
            .cached_get("apps.openyurt.io", "v1beta2", "nodepools", "", &pool)
        {
            Ok(np) => {
                if np["spec"]["hostNetwork"] == json!(true) {
                    patches.push((pointer(HOST_NETWORK_LABEL), json!("true")));
                }
                Verdict::Allowed(patches)
            }
            Err(e) if e.code == 404 => Verdict::Denied(e),
            // an informer that cannot list blocks the handler until the call times out
            Err(_) => Verdict::CallFailed(
                "failed calling webhook \"mutate.core.v1.node.openyurt.io\": context deadline exceeded"
                    .into(),
            ),
        }
    }

    /// NodeHandler.ValidateUpdate (validateNodeUpdate).
    fn validate_node(&self, r: &Review) -> Verdict {
        if r.operation != "UPDATE" {
            return Verdict::Allowed(vec![]);
        }
        let (old_np, new_np) = (label(r.old, POOL_LABEL), label(r.new, POOL_LABEL));
        let (old_hn, new_hn) = (
            label(r.old, HOST_NETWORK_LABEL),
            label(r.new, HOST_NETWORK_LABEL),
        );
        let mut errs = Vec::new();
        if !old_np.is_empty() && !new_np.is_empty() && old_np != new_np {
            errs.push(forbidden(
                "metadata.labels.apps.openyurt.io/nodepool",
                "apps.openyurt.io/nodepool can only be added or removed, not modified in-place",
            ));
        }
        if !old_hn.is_empty() && old_hn != new_hn {
            errs.push(forbidden(
                "metadata.labels.nodepool.openyurt.io/hostnetwork",
                "nodepool.openyurt.io/hostnetwork can not be changed",
            ));
        }
        let conversion = format!(
            "system:serviceaccount:{}:yurt-manager-yurt-node-conversion-controller",
            self.namespace
        );
        if label(r.old, EDGE_LABEL) != label(r.new, EDGE_LABEL)
            && !(r.user.starts_with("system:node:") || r.user == conversion)
        {
            errs.push(forbidden(
                "metadata.labels.openyurt.io/is-edge-worker",
                "openyurt.io/is-edge-worker can only be modified by YurtNodeConversionController or the node certificate process",
            ));
        }
        if errs.is_empty() {
            return Verdict::Allowed(vec![]);
        }
        let name = r
            .new
            .and_then(|n| n["metadata"]["name"].as_str())
            .unwrap_or("");
        Verdict::Denied(new_invalid("", "Node", name, &errs))
    }

    /// NodePoolHandler.ValidateCreate / ValidateUpdate / ValidateDelete.
    fn validate_pool(&self, r: &Review) -> Verdict {
        let obj = r.new.or(r.old).unwrap_or(&Value::Null);
        let name = obj["metadata"]["name"].as_str().unwrap_or("");
        let deny = |e: &FieldError| {
            Verdict::Denied(new_forbidden("apps.openyurt.io", "nodepools", name, e))
        };
        match r.operation {
            "CREATE" => match validate_spec(&obj["spec"]) {
                Some(e) => Verdict::Denied(new_invalid("apps.openyurt.io", "NodePool", name, &[e])),
                None => Verdict::Allowed(vec![]),
            },
            "UPDATE" => {
                let (new, old) = (&obj["spec"], &r.old.unwrap_or(&Value::Null)["spec"]);
                if let Some(e) = validate_spec(new) {
                    return deny(&e);
                }
                for (field, what) in [
                    ("type", "pool type can't be changed"),
                    ("hostNetwork", "pool hostNetwork can't be changed"),
                    (
                        "interConnectivity",
                        "pool interConnectivity can't be changed",
                    ),
                ] {
                    // omitted means the Go zero value
                    let norm = |v: &Value| match v {
                        Value::Null if field == "type" => json!(""),
                        Value::Null => json!(false),
                        v => v.clone(),
                    };
                    if norm(&new[field]) != norm(&old[field]) {
                        return deny(&forbidden(&format!("spec.{field}"), what));
                    }
                }
                Verdict::Allowed(vec![])
            }
            "DELETE" => match self.base.list_watch("", "v1", "nodes", "", "") {
                Err(_) => deny(&forbidden(
                    "metadata.name",
                    "could not get nodes associated to the pool",
                )),
                Ok(nodes) => {
                    if nodes
                        .iter()
                        .any(|n| n["metadata"]["labels"][POOL_LABEL] == json!(name))
                    {
                        deny(&forbidden(
                            "metadata.name",
                            "cannot remove nonempty pool, please drain the pool before deleting",
                        ))
                    } else {
                        Verdict::Allowed(vec![])
                    }
                }
            },
            _ => Verdict::Allowed(vec![]),
        }
    }
}

/// apivalidation.ValidateAnnotations (k8s.io/apimachinery@v0.34.0 pkg/api/validation/
/// objectmeta.go): every key, lower-cased, a qualified name; keys and values at most 256 KiB.
fn annotations_ok(a: &serde_json::Map<String, Value>) -> bool {
    let size: usize = a
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    size <= 256 * 1024
        && a.keys()
            .all(|k| crate::api::selector::validate_label_key(&k.to_lowercase()).is_ok())
}

/// A map[string]string as ErrorBody renders a non-scalar bad value: Go's json.Marshal
/// (keys sorted, `<`, `>`, `&` escaped as for HTML).
fn go_json(a: &serde_json::Map<String, Value>) -> String {
    let mut keys: Vec<&String> = a.keys().collect();
    keys.sort();
    let quote = |s: &str| {
        Value::String(s.into())
            .to_string()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
    };
    let items: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{}:{}", quote(k), quote(a[k].as_str().unwrap_or(""))))
        .collect();
    format!("{{{}}}", items.join(","))
}

/// validateNodePoolSpec, first error only (as upstream returns): the annotations
/// (validateNodePoolSpecAnnotations, the whole map as the bad value), then type,
/// hostNetwork and leaderElectionStrategy.
fn validate_spec(spec: &Value) -> Option<FieldError> {
    if let Some(a) = spec["annotations"].as_object()
        && !annotations_ok(a)
    {
        return Some((
            "spec.annotations".into(),
            "FieldValueInvalid",
            format!("Invalid value: {}: invalid annotations", go_json(a)),
        ));
    }
    let t = spec["type"].as_str().unwrap_or("");
    if t != "Edge" && t != "Cloud" {
        return Some(invalid(
            "spec.type",
            &json!(t),
            "pool type should be Edge or Cloud",
        ));
    }
    if t == "Cloud" && spec["hostNetwork"] == json!(true) {
        return Some(invalid(
            "spec.hostNetwork",
            &json!(true),
            "Cloud NodePool cloud not support hostNetwork",
        ));
    }
    // the message says Random or Mark; the values it takes are the constants, lower case
    // (ElectionStrategyRandom = "random", ElectionStrategyMark = "mark":
    // openyurtio/openyurt@v1.7.0 pkg/apis/apps/v1beta2/nodepool_types.go)
    let s = spec["leaderElectionStrategy"].as_str().unwrap_or("");
    if s != "random" && s != "mark" {
        return Some(invalid(
            "spec.leaderElectionStrategy",
            &json!(s),
            "leaderElectionStrategy should be Random or Mark",
        ));
    }
    None
}

/// NodePoolHandler.Default: type Edge when empty, the type label, leaderElectionStrategy
/// `random`, leaderReplicas 1, the two default poolScopeMetadata entries. (Its status reset is
/// dropped by the API server on create: the CRD has a status subresource.)
fn default_pool(r: &Review) -> Verdict {
    let Some(np) = r.new else {
        return Verdict::Allowed(vec![]);
    };
    let spec = &np["spec"];
    let mut p = Vec::new();
    let t = match spec["type"].as_str().filter(|t| !t.is_empty()) {
        Some(t) => t.to_string(),
        None => {
            p.push(("/spec/type".to_string(), json!("Edge")));
            "Edge".into()
        }
    };
    p.push((pointer(POOL_TYPE_LABEL), json!(t.to_lowercase())));
    if spec["leaderElectionStrategy"]
        .as_str()
        .unwrap_or("")
        .is_empty()
    {
        p.push(("/spec/leaderElectionStrategy".into(), json!("random")));
    }
    if spec["leaderReplicas"].as_i64().unwrap_or(0) <= 0 {
        p.push(("/spec/leaderReplicas".into(), json!(1)));
    }
    let mut meta: Vec<Value> = spec["poolScopeMetadata"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let before = meta.len();
    for d in [
        json!({"group": "", "version": "v1", "resource": "services"}),
        json!({"group": "discovery.k8s.io", "version": "v1", "resource": "endpointslices"}),
    ] {
        let same = |m: &Value| {
            ["group", "version", "resource"]
                .iter()
                .all(|k| m[*k].as_str().unwrap_or("") == d[*k].as_str().unwrap_or(""))
        };
        if !meta.iter().any(same) {
            meta.push(d);
        }
    }
    if meta.len() != before {
        p.push(("/spec/poolScopeMetadata".into(), Value::Array(meta)));
    }
    Verdict::Allowed(p)
}
