//! The API layer: the Kubernetes API server's semantics, below everything that talks to it.
//! It imports only the leaves (`util`, `version`); the layers above (nodes, models,
//! controllers, the top) call into it (docs/yurtsim.md#layers).
//!
//! - [`store`]: objects, resourceVersions, watches; [`registry`]: the resource types served;
//! - this file: the `Api` and its reads, bind and modify; the verbs that write are in
//!   `create.rs`, `update.rs` (update and patch) and `delete.rs`; [`kinds`]: per-kind defaulting and validation; [`patch`]: patch
//!   types and server-side apply; [`admission`]: webhooks; [`crd`]: the CRD strategy;
//!   [`conversion`]: custom resources stored in one version and read in another;
//! - [`auth`]: authentication and authorization; [`error`]: `Status` errors; [`events`]:
//!   Events as components record them;
//! - [`selector`]: label and field selectors; [`table`]: server-side printing;
//!   [`protobuf`]: protobuf request bodies; [`openapi`]: the OpenAPI v3 surface.
//!
//! The verbs, with the apiserver's semantics layered on the store: defaulting, validation,
//! admission (namespace lifecycle, service accounts), managedFields, generation, optimistic
//! concurrency, status subresources, finalizers, graceful pod deletion and garbage collection.

pub mod admission;
pub mod auth;
pub mod conversion;
pub mod crd;
mod create;
mod delete;
pub mod error;
pub mod events;
pub mod kinds;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod selector;
pub mod store;
pub mod table;
mod update;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::error::{ApiError, ApiResult};
use crate::api::patch::{BuiltinSchema, CustomResourceSchema, PatchError, Schema};
use crate::api::registry::{GroupResource, Registry, ResourceInfo};
use crate::api::store::{Filter, Store, WriteOp};
use crate::util;
use crate::version::Version;

/// Who writes and how: the field manager and whether this is a dry run.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub manager: String,
    pub dry_run: bool,
    /// The requesting user's name, as admission webhooks see it.
    pub user: String,
    /// The requesting user's groups (what a CSR's `spec.groups` records).
    pub groups: Vec<String>,
}

impl Ctx {
    pub fn system(manager: &str) -> Ctx {
        Ctx {
            manager: manager.to_string(),
            dry_run: false,
            user: manager.to_string(),
            groups: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply { force: bool },
}

impl PatchType {
    pub fn from_content_type(ct: &str, force: bool) -> Option<PatchType> {
        let ct = ct.split(';').next().unwrap_or("").trim();
        Some(match ct {
            "application/merge-patch+json" => PatchType::Merge,
            "application/json-patch+json" => PatchType::Json,
            "application/strategic-merge-patch+json" => PatchType::Strategic,
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                PatchType::Apply { force }
            }
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub grace_period: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// What a write produced: the object (or the Status for a finished delete) and warnings.
pub struct Outcome {
    pub body: Value,
    pub code: u16,
    pub warnings: Vec<String>,
}

impl Outcome {
    fn ok(obj: &Value) -> Outcome {
        Outcome {
            body: obj.clone(),
            code: 200,
            warnings: vec![],
        }
    }
}

pub struct Api {
    pub store: Store,
    pub registry: Registry,
    /// Webhook servers run by component models (admission calls them).
    pub webhook_servers: crate::api::admission::Servers,
    /// The Kubernetes version served (`--kubernetes-version`).
    pub version: Version,
    /// The admin's bearer token (the sim's kubeconfig and control API use it).
    pub token: String,
    /// ServiceAccount tokens the sim has issued (projected volumes, TokenRequests).
    pub tokens: crate::api::auth::Tokens,
}

fn patch_err(res: &ResourceInfo, name: &str, e: PatchError) -> ApiError {
    match e {
        PatchError::BadRequest(m) => ApiError::bad_request(m),
        PatchError::Unprocessable(m) => {
            let mut err = ApiError::invalid(res, name, &[]);
            err.message = m;
            err
        }
        PatchError::UnsupportedMediaType(m) => ApiError::unsupported_media_type(m),
        PatchError::Conflict { message, causes } => {
            let mut err = ApiError::new(409, "Conflict", message);
            err.details = Some(json!({
                "name": name, "kind": res.resource,
                "causes": causes.iter().map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field})).collect::<Vec<_>>(),
            }));
            if !res.group.is_empty() {
                err.details.as_mut().unwrap()["group"] = json!(res.group);
            }
            err
        }
    }
}

pub fn schema_for(res: &ResourceInfo) -> Box<dyn Schema> {
    if res.builtin {
        Box::new(BuiltinSchema::new(&res.kind))
    } else {
        Box::new(CustomResourceSchema)
    }
}

fn meta_str<'a>(obj: &'a Value, f: &str) -> Option<&'a str> {
    obj["metadata"][f].as_str()
}

/// Everything but resourceVersion and managedFields timestamps: a write that changes nothing
/// else is a no-op on a real apiserver too.
fn same_content(a: &Value, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("resourceVersion");
            if let Some(mf) = m.get_mut("managedFields").and_then(Value::as_array_mut) {
                for e in mf {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
        v
    }
    strip(a) == strip(b)
}

/// A non-apply write by `manager`: ownership of what changed moves to it, and the result's
/// managedFields are normalised.
fn record_write(
    old: Option<&Value>,
    new: Value,
    manager: &str,
    subresource: Option<&str>,
    schema: &dyn Schema,
) -> Value {
    let mut out = patch::record_update(old, new, manager, &util::now(), subresource, schema);
    let mf = out["metadata"]["managedFields"].take();
    set_managed_fields(&mut out, mf);
    out
}

/// An empty or null managedFields is absent, as on the real apiserver.
fn set_managed_fields(obj: &mut Value, mf: Value) {
    match mf {
        Value::Array(a) if !a.is_empty() => obj["metadata"]["managedFields"] = Value::Array(a),
        _ => {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("managedFields");
            }
        }
    }
}

fn spec_part(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

impl Api {
    pub fn new(history_limit: usize, watch_buffer: usize, version: Version, token: String) -> Api {
        Api {
            store: Store::new(history_limit, watch_buffer),
            registry: Registry::new(),
            webhook_servers: Default::default(),
            version,
            token,
            tokens: Default::default(),
        }
    }

    pub fn info(&self, group: &str, resource: &str) -> Arc<ResourceInfo> {
        self.registry
            .lookup_gr(group, resource)
            .unwrap_or_else(|| panic!("unknown built-in resource {group}/{resource}"))
    }

    pub fn get(&self, res: &ResourceInfo, ns: &str, name: &str) -> ApiResult<Arc<Value>> {
        self.store
            .get(&res.key(), ns, name)
            .ok_or_else(|| ApiError::not_found(res, name))
    }

    pub fn get_opt(&self, group: &str, resource: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.store.get(
            &GroupResource {
                group: group.into(),
                resource: resource.into(),
            },
            ns,
            name,
        )
    }

    pub fn list(&self, res: &ResourceInfo, filter: &Filter) -> (Vec<Arc<Value>>, u64) {
        self.store.list(&res.key(), filter)
    }

    /// Rejects field selectors the real apiserver would reject for this resource.
    pub fn check_field_selector(&self, res: &ResourceInfo, filter: &Filter) -> ApiResult<()> {
        let allowed = kinds::selectable_fields(res);
        for f in filter.field.fields() {
            let ok = f == "metadata.name"
                || (f == "metadata.namespace" && res.namespaced)
                || allowed.contains(&f);
            if !ok {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {f}"
                )));
            }
        }
        Ok(())
    }

    fn check_namespace(&self, res: &ResourceInfo, ns: &str) -> ApiResult<()> {
        if !res.namespaced {
            return Ok(());
        }
        let nsinfo = self.info("", "namespaces");
        match self.store.get(&nsinfo.key(), "", ns) {
            None => Err(ApiError::not_found(&nsinfo, ns)),
            Some(n) if n["status"]["phase"] == json!("Terminating") => {
                Err(ApiError::forbidden(format!(
                    "{} \"{}\" is forbidden: unable to create new content in namespace {} because it is being terminated",
                    res.group_resource(),
                    n["metadata"]["name"].as_str().unwrap_or_default(),
                    ns
                )))
            }
            _ => Ok(()),
        }
    }

    fn check_type_meta(&self, res: &ResourceInfo, body: &mut Value) -> ApiResult<()> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
            ));
        }
        match body["apiVersion"].as_str() {
            Some(v) if v != res.api_version() => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({})",
                    res.api_version()
                )));
            }
            _ => {}
        }
        match body["kind"].as_str() {
            Some(k) if k != res.kind => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    res.kind
                )));
            }
            _ => {}
        }
        body["apiVersion"] = json!(res.api_version());
        body["kind"] = json!(res.kind);
        if !body["metadata"].is_object() {
            body["metadata"] = json!({});
        }
        Ok(())
    }

    /// `pods/{name}/binding`: the only way to set spec.nodeName on an existing pod (what the
    /// scheduler does). Binding an already bound pod is a conflict, as on a real apiserver.
    pub fn bind(&self, ns: &str, name: &str, node: &str, ctx: &Ctx) -> ApiResult<Outcome> {
        let pods = self.info("", "pods");
        let schema = schema_for(&pods);
        // Not an update: pod spec is otherwise immutable, so binding writes the store directly.
        self.store
            .write(&pods.key(), ns, name, ctx.dry_run, |cur| {
                let cur = cur.ok_or_else(|| ApiError::not_found(&pods, name))?;
                if let Some(n) = cur["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
                    return Err(ApiError::conflict_msg(
                        &pods,
                        name,
                        &format!("pod {name} is already assigned to node \"{n}\""),
                    ));
                }
                let mut o = (**cur).clone();
                o["spec"]["nodeName"] = json!(node);
                Ok(WriteOp::Put(record_write(
                    Some(cur),
                    o,
                    &ctx.manager,
                    None,
                    schema.as_ref(),
                )))
            })?;
        let _ = self.modify(&pods, ns, name, Some("status"), &ctx.manager, &|o| {
            let mut conds: Vec<Value> = o["status"]["conditions"].as_array().cloned().unwrap_or_default();
            conds.retain(|c| c["type"] != json!("PodScheduled"));
            conds.push(json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": util::now()}));
            o["status"]["conditions"] = json!(conds);
            true
        });
        Ok(Outcome {
            body: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
            code: 201,
            warnings: vec![],
        })
    }

    /// For controllers: read-modify-write with retries on conflict, as a controller's update loop.
    pub fn modify(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        subresource: Option<&str>,
        manager: &str,
        f: &dyn Fn(&mut Value) -> bool,
    ) -> ApiResult<Option<Outcome>> {
        let Some(cur) = self
            .store
            .get(&res.key(), if res.namespaced { ns } else { "" }, name)
        else {
            return Ok(None);
        };
        let mut new = (*cur).clone();
        if !f(&mut new) {
            return Ok(None);
        }
        let ctx = Ctx::system(manager);
        self.finish_update(
            res,
            ns,
            name,
            subresource,
            &ctx,
            None,
            &|c| {
                let mut fresh = c.clone();
                f(&mut fresh);
                Ok(fresh)
            },
            true,
        )
        .map(Some)
    }

    /// A list object as the apiserver returns it.
    pub fn list_object(
        &self,
        res: &ResourceInfo,
        items: Vec<Arc<Value>>,
        rv: u64,
        cont: Option<String>,
        remaining: Option<usize>,
    ) -> Value {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if let Some(c) = cont {
            meta["continue"] = json!(c);
            if let Some(r) = remaining {
                meta["remainingItemCount"] = json!(r);
            }
        }
        let items: Vec<Value> = items.iter().map(|o| (**o).clone()).collect();
        json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(), "metadata": meta, "items": items})
    }
}

/// Why serviceaccount admission's Validate refuses a mirror pod, if it does: a ServiceAccount,
/// a Secret (`podutil.VisitPodSecretNames`: volumes, projected sources, env, envFrom, image
/// pull secrets of every container) or a ServiceAccountToken projection.
fn mirror_pod_refusal(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["serviceAccountName"]
        .as_str()
        .is_some_and(|s| !s.is_empty())
    {
        return Some("a mirror pod may not reference service accounts");
    }
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let volumes = items(&spec["volumes"]);
    let projected: Vec<Value> = volumes
        .iter()
        .flat_map(|v| items(&v["projected"]["sources"]))
        .collect();
    let containers: Vec<Value> = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| items(&spec[*k]))
        .collect();
    let secrets = !items(&spec["imagePullSecrets"]).is_empty()
        || volumes.iter().any(|v| v.get("secret").is_some())
        || projected.iter().any(|p| p.get("secret").is_some())
        || containers.iter().any(|c| {
            items(&c["env"])
                .iter()
                .any(|e| e["valueFrom"].get("secretKeyRef").is_some())
                || items(&c["envFrom"])
                    .iter()
                    .any(|e| e.get("secretRef").is_some())
        });
    if secrets {
        return Some("a mirror pod may not reference secrets");
    }
    if projected
        .iter()
        .any(|p| p.get("serviceAccountToken").is_some())
    {
        return Some("a mirror pod may not use ServiceAccountToken volume projections");
    }
    None
}
