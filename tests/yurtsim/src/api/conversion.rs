//! Versions of custom resources: an object is stored in its CRD's storage version of the
//! moment it is written, and read in the version the request names. Sources: kubernetes/
//! kubernetes@v1.37.2 (k8s.io/apiextensions-apiserver v0.37.2; these files are the same at
//! v1.34.4) staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/
//! - customresource_handler.go: one storage per served version, its codec decoding into that
//!   version and encoding into the storage version (crdConversionRESTOptionsGetter), so
//!   writes store the storage version and reads, watch events included, convert what is
//!   stored; a write answers with what it stored, decoded again (etcd3 store Create and
//!   GuaranteedUpdate); schemaCoercingConverter drops nulls the schema does not allow
//!   (PruneNonNullableNullsWithoutDefaults);
//! - conversion/converter.go crConverter.ConvertToVersion: both versions must be in
//!   spec.versions; conversion/nop_converter.go: strategy None rewrites apiVersion only;
//! - conversion/webhook_converter.go: strategy Webhook posts a ConversionReview of the objects
//!   not yet in the desired version to the webhook's Service (`?timeout=30s`, k8s.io/apiserver
//!   v0.37.2 pkg/util/webhook/authentication.go) and checks the answer (count, groupVersion,
//!   kind; validateConvertedObject; restoreObjectMeta keeps the original metadata but labels
//!   and annotations).
//!
//! A failed conversion is not an API status: 500 with the error's text
//! (`ApiError::unknown`). The webhook is the modelled server of a ready endpoint pod
//! (`admission::resolve`); a ready pod the sim does not model cannot convert.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::api::Api;
use crate::api::admission::{self, WebhookServer};
use crate::api::crd;
use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;

/// How a custom resource's objects convert, as its CRD says now.
pub struct Conversion<'a> {
    api: &'a Api,
    crd: Arc<Value>,
    group: String,
    kind: String,
    /// The version writes store.
    pub storage: String,
    webhook: Option<Webhook>,
}

struct Webhook {
    client_config: Value,
    path: String,
    /// Resolved on first use (before the store's lock is taken for a write: `resolve`).
    server: OnceLock<Result<Option<Arc<dyn WebhookServer>>, String>>,
}

fn version_of(obj: &Value) -> &str {
    let v = obj["apiVersion"].as_str().unwrap_or("");
    v.rsplit_once('/').map_or(v, |(_, v)| v)
}

impl Api {
    /// The conversion of a custom resource, as its CRD says now (None for built-ins, and
    /// for a custom resource whose CRD is gone or marks no single storage version).
    pub fn conversion(&self, res: &ResourceInfo) -> Option<Conversion<'_>> {
        if res.builtin {
            return None;
        }
        let crd = self.get_opt(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "",
            &format!("{}.{}", res.resource, res.group),
        )?;
        let storage = crd::storage_version(&crd)?;
        let conv = &crd["spec"]["conversion"];
        let webhook = (conv["strategy"] == json!("Webhook")).then(|| Webhook {
            client_config: conv["webhook"]["clientConfig"].clone(),
            path: conv["webhook"]["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            server: OnceLock::new(),
        });
        Some(Conversion {
            api: self,
            group: res.group.clone(),
            kind: res.kind.clone(),
            storage,
            webhook,
            crd,
        })
    }

    /// `obj` as stored, as a request through `res` gets it: a custom resource converted to
    /// `res`'s version; a built-in written through another version of its group (a
    /// CertificateSigningRequest written as `certificates.k8s.io/v1beta1`, listed as `v1`)
    /// relabelled.
    pub fn present<'o>(&self, res: &ResourceInfo, obj: &'o Value) -> ApiResult<Cow<'o, Value>> {
        // a finished delete answers with a Status, which is nobody's version
        if obj["kind"] == json!("Status") && obj["apiVersion"] == json!("v1") {
            return Ok(Cow::Borrowed(obj));
        }
        // what needs no change is not copied: every watch event of every watcher comes here
        let served = res.api_version();
        match self.conversion(res) {
            Some(_) if version_of(obj) == res.version => Ok(Cow::Borrowed(obj)),
            Some(c) => c.convert(obj, &res.version).map(Cow::Owned),
            None if res.builtin && obj["apiVersion"].as_str() == Some(served.as_str()) => {
                Ok(Cow::Borrowed(obj))
            }
            None => Ok(Cow::Owned(relabel(res, obj))),
        }
    }

    /// `present` for each of a list's items.
    pub fn present_all(
        &self,
        res: &ResourceInfo,
        items: Vec<Arc<Value>>,
    ) -> ApiResult<Vec<Arc<Value>>> {
        let conv = self.conversion(res);
        let served = res.api_version();
        items
            .into_iter()
            .map(|o| match &conv {
                Some(c) if version_of(&o) != res.version => {
                    c.convert(&o, &res.version).map(Arc::new)
                }
                Some(_) => Ok(o),
                None if res.builtin && o["apiVersion"].as_str() == Some(served.as_str()) => Ok(o),
                None => Ok(Arc::new(relabel(res, &o))),
            })
            .collect()
    }
}

fn relabel(res: &ResourceInfo, obj: &Value) -> Value {
    let mut o = obj.clone();
    let group = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g)
            .to_owned()
    };
    let same_group = obj["apiVersion"]
        .as_str()
        .is_some_and(|v| group(v) == res.group);
    if !res.builtin || same_group {
        o["apiVersion"] = json!(res.api_version());
    }
    o
}

impl Conversion<'_> {
    /// Resolves the webhook's endpoint now: a write converts under the store's lock, where
    /// the lookup (which reads the store) cannot run.
    pub fn resolve(&self) {
        if let Some(w) = &self.webhook {
            self.server(w);
        }
    }

    fn server<'w>(&self, w: &'w Webhook) -> &'w Result<Option<Arc<dyn WebhookServer>>, String> {
        w.server
            .get_or_init(|| admission::resolve(self.api, &w.client_config, "30s"))
    }

    /// `obj` in version `to` of its group.
    pub fn convert(&self, obj: &Value, to: &str) -> ApiResult<Value> {
        let from = version_of(obj).to_string();
        let valid = crd::version_names(&self.crd);
        let gv = |v: &str| format!("{}/{v}", self.group);
        if !valid.iter().any(|v| v == to) {
            return Err(ApiError::unknown(format!(
                "request to convert CR to an invalid group/version: {}",
                gv(to)
            )));
        }
        if !valid.contains(&from) {
            return Err(ApiError::unknown(format!(
                "request to convert CR from an invalid group/version: {}",
                gv(&from)
            )));
        }
        let mut out = obj.clone();
        if from == to {
            return Ok(out);
        }
        let Some(w) = &self.webhook else {
            out["apiVersion"] = json!(gv(to));
            return Ok(out);
        };
        let gvk = format!("{}, Kind={}", gv(&from), self.kind);
        let failed =
            |m: &str| ApiError::unknown(format!("conversion webhook for {gvk} failed: {m}"));
        let server = match self.server(w) {
            Err(why) => return Err(failed(why)),
            Ok(None) => {
                return Err(failed(
                    "the pods behind the webhook's Service run nothing yurtsim models",
                ));
            }
            Ok(Some(s)) => s,
        };
        // controller-runtime's webhook server answers an unregistered path with 404
        let converted = match server.convert(&w.path, std::slice::from_ref(obj), &gv(to)) {
            None => return Err(failed("the server could not find the requested resource")),
            Some(Err(m)) => return Err(failed(&m)),
            Some(Ok(c)) => c,
        };
        if converted.len() != 1 {
            return Err(ApiError::unknown(format!(
                "conversion webhook for {gvk} returned {} objects, expected 1",
                converted.len()
            )));
        }
        let mut c = converted.into_iter().next().unwrap_or_default();
        let invalid = |m: String| {
            ApiError::unknown(format!(
                "conversion webhook for {gvk} returned invalid object at index 0: {m}"
            ))
        };
        let got = c["apiVersion"].as_str().unwrap_or("").to_string();
        if got != gv(to) {
            return Err(invalid(format!(
                "invalid groupVersion (expected {}, received {got})",
                gv(to)
            )));
        }
        let kind = c["kind"].as_str().unwrap_or("").to_string();
        if kind != self.kind {
            return Err(invalid(format!(
                "invalid kind (expected {}, received {kind})",
                self.kind
            )));
        }
        for (f, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let (a, b) = (
                obj["metadata"][f].as_str().unwrap_or(""),
                c["metadata"][f].as_str().unwrap_or(""),
            );
            if a != b {
                return Err(ApiError::unknown(format!(
                    "conversion webhook for {gvk} returned invalid object: must have the same {what}: {a} != {b}"
                )));
            }
        }
        restore_object_meta(obj, &mut c).map_err(|m| {
            ApiError::unknown(format!(
                "conversion webhook for {gvk} returned invalid metadata: {m}"
            ))
        })?;
        drop_nulls(&mut c, crd::schema_of(&self.crd, to), &mut Vec::new());
        Ok(c)
    }
}

/// restoreObjectMeta: the original's metadata, with the labels and annotations the webhook
/// returned (string values only; checked as labels and annotations when they changed).
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let Some(response) = converted
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
    else {
        return Err("missing metadata in converted object".into());
    };
    let mut meta = original["metadata"].clone();
    if !meta.is_object() {
        meta = json!({});
    }
    for f in ["labels", "annotations"] {
        match response.get(f) {
            None | Some(Value::Null) => {
                if let Some(m) = meta.as_object_mut() {
                    m.remove(f);
                }
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!("metadata.{f}[{k}] must be a string, but is {v}"));
                }
                if meta[f] != Value::Object(m.clone()) {
                    let mut causes = Vec::new();
                    crate::api::kinds::validate_labels(&json!({"metadata": {f: m}}), &mut causes);
                    if !causes.is_empty() {
                        let msgs: Vec<String> =
                            causes.iter().map(|(p, m)| format!("{p}: {m}")).collect();
                        return Err(match msgs.len() {
                            1 => msgs[0].clone(),
                            _ => format!("[{}]", msgs.join(", ")),
                        });
                    }
                }
                meta[f] = Value::Object(m.clone());
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{f} of type {other} in converted object"
                ));
            }
        }
    }
    converted["metadata"] = meta;
    Ok(())
}

/// PruneNonNullableNullsWithoutDefaults: nulls where the schema does not say `nullable`
/// (the CRDs the sim serves declare no defaults). Metadata is left alone.
fn drop_nulls(v: &mut Value, schema: &Value, path: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if path.is_empty() && matches!(k.as_str(), "metadata" | "apiVersion" | "kind") {
                    continue;
                }
                path.push(k.clone());
                let refs: Vec<&str> = path.iter().map(String::as_str).collect();
                if m[&k].is_null() && !crd::nullable_at(schema, &refs) {
                    m.remove(&k);
                } else if let Some(child) = m.get_mut(&k) {
                    drop_nulls(child, schema, path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for it in items {
                drop_nulls(it, schema, path);
            }
        }
        _ => {}
    }
}
