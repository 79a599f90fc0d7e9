//! Typed checks: a rendered object of a built-in kind must survive a round trip through its
//! k8s-openapi struct unchanged, so a misspelled or misplaced field (which serde would drop)
//! or a wrongly typed value fails at render time.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Pod, PodTemplateSpec, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// (field path, message)
pub(crate) type Problem = (String, String);

/// Whether a built-in kind is cluster-scoped (None: not a kind this module knows).
pub(crate) fn builtin_cluster_scoped(api_version: &str, kind: &str) -> Option<bool> {
    Some(match (api_version, kind) {
        ("v1", "Namespace")
        | ("rbac.authorization.k8s.io/v1", "ClusterRole" | "ClusterRoleBinding")
        | (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        )
        | ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => true,
        ("v1", "ServiceAccount" | "Secret" | "ConfigMap" | "Service" | "Pod")
        | ("apps/v1", "Deployment" | "DaemonSet")
        | ("batch/v1", "Job")
        | ("rbac.authorization.k8s.io/v1", "Role" | "RoleBinding") => false,
        _ => return None,
    })
}

/// Checks a built-in object; `Ok(false)` = not a built-in kind.
pub(crate) fn check_builtin(v: &Value) -> Result<bool, Problem> {
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    match (api_version, kind) {
        ("v1", "Namespace") => roundtrip::<Namespace>(v, ""),
        ("v1", "ServiceAccount") => roundtrip::<ServiceAccount>(v, ""),
        ("v1", "Secret") => roundtrip::<Secret>(v, ""),
        ("v1", "ConfigMap") => roundtrip::<ConfigMap>(v, ""),
        ("v1", "Service") => roundtrip::<Service>(v, ""),
        ("v1", "Pod") => roundtrip::<Pod>(v, ""),
        ("apps/v1", "Deployment") => roundtrip::<Deployment>(v, ""),
        ("apps/v1", "DaemonSet") => roundtrip::<DaemonSet>(v, ""),
        ("batch/v1", "Job") => roundtrip::<Job>(v, ""),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => roundtrip::<ClusterRole>(v, ""),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            roundtrip::<ClusterRoleBinding>(v, "")
        }
        ("rbac.authorization.k8s.io/v1", "Role") => roundtrip::<Role>(v, ""),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => roundtrip::<RoleBinding>(v, ""),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            roundtrip::<MutatingWebhookConfiguration>(v, "")
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            roundtrip::<ValidatingWebhookConfiguration>(v, "")
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            roundtrip::<CustomResourceDefinition>(v, "")
        }
        _ => return Ok(false),
    }?;
    Ok(true)
}

/// YurtStaticSet (apps.openyurt.io/v1alpha1): known spec fields, a typed pod template.
pub(crate) fn check_yurtstaticset(v: &Value) -> Result<(), Problem> {
    check_metadata(v)?;
    let spec = v
        .get("spec")
        .and_then(Value::as_object)
        .ok_or_else(|| ("spec".to_owned(), "missing".to_owned()))?;
    for (k, val) in spec {
        match k.as_str() {
            "staticPodManifest" if val.is_string() => {}
            "revisionHistoryLimit" if val.is_i64() => {}
            "upgradeStrategy" => {
                let o = val
                    .as_object()
                    .ok_or_else(|| ("spec.upgradeStrategy".to_owned(), "not an object".into()))?;
                for (k2, v2) in o {
                    let ok = match k2.as_str() {
                        "type" => matches!(v2.as_str(), Some("AdvancedRollingUpdate" | "OTA")),
                        "maxUnavailable" => v2.is_string() || v2.is_i64(),
                        _ => false,
                    };
                    if !ok {
                        return Err((
                            format!("spec.upgradeStrategy.{k2}"),
                            "unknown field or bad value".into(),
                        ));
                    }
                }
            }
            "template" => roundtrip::<PodTemplateSpec>(val, "spec.template")?,
            _ => return Err((format!("spec.{k}"), "unknown field or bad value".into())),
        }
    }
    if !spec.contains_key("staticPodManifest") {
        return Err(("spec.staticPodManifest".into(), "required".into()));
    }
    Ok(())
}

/// Any object: metadata must be a valid ObjectMeta.
pub(crate) fn check_metadata(v: &Value) -> Result<(), Problem> {
    let m = v
        .get("metadata")
        .ok_or_else(|| ("metadata".to_owned(), "missing".to_owned()))?;
    roundtrip::<ObjectMeta>(m, "metadata")
}

fn roundtrip<T: DeserializeOwned + Serialize>(v: &Value, at: &str) -> Result<(), Problem> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| {
        let f = if at.is_empty() { "(object)" } else { at };
        (f.to_owned(), e.to_string())
    })?;
    let back = serde_json::to_value(&typed).map_err(|e| (at.to_owned(), e.to_string()))?;
    match first_difference(v, &back, at) {
        None => Ok(()),
        Some((path, what)) => Err((path, what)),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The first place where `want` (rendered) and `got` (after the typed round trip) differ.
fn first_difference(want: &Value, got: &Value, path: &str) -> Option<Problem> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => {
                        if let Some(p) = first_difference(va, vb, &join(path, k)) {
                            return Some(p);
                        }
                    }
                    None if va.is_null() => {}
                    None => {
                        return Some((
                            join(path, k),
                            "unknown field (misspelled or misplaced?)".into(),
                        ));
                    }
                }
            }
            for k in b.keys() {
                if !a.contains_key(k) {
                    return Some((join(path, k), "added by the typed round trip".into()));
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some((path.to_owned(), "list length changed".into()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]")))
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        (a, b) => Some((path.to_owned(), format!("value {a} became {b}"))),
    }
}
