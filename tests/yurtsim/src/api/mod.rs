//! The API layer: the Kubernetes API server's semantics, below everything that talks to it.
//! It imports only the leaves (`util`, `version`); the layers above (nodes, models,
//! controllers, the top) call into it (docs/yurtsim.md#layers).
//!
//! - [`store`]: objects, resourceVersions, watches; [`registry`]: the resource types served;
//! - this file: the verbs; [`kinds`]: per-kind defaulting and validation; [`patch`]: patch
//!   types and server-side apply; [`admission`]: webhooks;
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

    /// Service-account admission: pods run as an existing SA and get its token unless opted out.
    /// Mirror pods are left as the kubelet sent them and are only validated
    /// (kubernetes/kubernetes plugin/pkg/admission/serviceaccount/admission.go, Admit: "Don't
    /// modify the spec of mirror pods"; Validate: no ServiceAccount, no Secret, no
    /// ServiceAccountToken projection).
    fn admit_pod(&self, ns: &str, pod: &mut Value) -> ApiResult<()> {
        if pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
            return mirror_pod_refusal(pod).map_or(Ok(()), |why| {
                Err(ApiError::forbidden(format!(
                    "pods \"{}\" is forbidden: {why}",
                    meta_str(pod, "name").unwrap_or("")
                )))
            });
        }
        let sa_name = pod["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let sa = self.get_opt("", "serviceaccounts", ns, &sa_name).ok_or_else(|| {
            ApiError::forbidden(format!(
                "pods \"{}\" is forbidden: error looking up service account {ns}/{sa_name}: serviceaccount \"{sa_name}\" not found",
                meta_str(pod, "name").or(meta_str(pod, "generateName")).unwrap_or("")
            ))
        })?;
        pod["spec"]["serviceAccountName"] = json!(sa_name);
        pod["spec"]["serviceAccount"] = json!(sa_name);
        let automount = pod["spec"]["automountServiceAccountToken"]
            .as_bool()
            .or(sa["automountServiceAccountToken"].as_bool())
            .unwrap_or(true);
        if automount {
            let vol = format!("kube-api-access-{}", util::random_suffix(5));
            let vols = pod["spec"]["volumes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut vols = vols;
            vols.push(json!({"name": vol, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}));
            pod["spec"]["volumes"] = json!(vols);
            for f in ["containers", "initContainers"] {
                if let Some(cs) = pod["spec"].get_mut(f).and_then(Value::as_array_mut) {
                    for c in cs {
                        let mut mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
                        mounts.push(json!({"name": vol, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}));
                        c["volumeMounts"] = json!(mounts);
                    }
                }
            }
        }
        Ok(())
    }

    pub fn create(
        &self,
        res: &ResourceInfo,
        ns: &str,
        mut body: Value,
        ctx: &Ctx,
    ) -> ApiResult<Outcome> {
        if res.resource == "selfsubjectaccessreviews" || res.resource == "selfsubjectrulesreviews" {
            return Err(ApiError::internal(
                "reviews are answered by the server layer",
            ));
        }
        self.check_type_meta(res, &mut body)?;
        let body_ns = meta_str(&body, "namespace").unwrap_or("").to_string();
        if res.namespaced {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            body["metadata"]["namespace"] = json!(ns);
        } else if let Some(m) = body["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        let mut name = meta_str(&body, "name").unwrap_or("").to_string();
        if name.is_empty() {
            match meta_str(&body, "generateName") {
                Some(g) if !g.is_empty() => {
                    name = format!("{g}{}", util::random_suffix(5));
                    body["metadata"]["name"] = json!(name);
                }
                _ => {
                    return Err(ApiError::invalid(
                        res,
                        "",
                        &[(
                            "metadata.name".into(),
                            "Required value: name or generateName is required".into(),
                        )],
                    ));
                }
            }
        }
        self.check_namespace(res, ns)?;
        let m = body["metadata"].as_object_mut().unwrap();
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            m.remove(f);
        }
        m.insert("uid".into(), json!(util::new_uid()));
        m.insert("creationTimestamp".into(), json!(util::now()));
        if kinds::tracks_generation(res) {
            m.insert("generation".into(), json!(1));
        }
        if res.has_status()
            && res.resource != "nodes"
            && let Some(o) = body.as_object_mut()
        {
            o.remove("status");
        }
        kinds::default_on_create(res, &mut body);
        if res.group == "certificates.k8s.io" && res.resource == "certificatesigningrequests" {
            // the requester's identity, whatever the client sent (kubernetes/kubernetes@v1.33.0
            // pkg/registry/certificates/certificates/strategy.go PrepareForCreate); the sim's
            // identities carry no UID or extra, so those stay empty
            let spec = &mut body["spec"];
            if let Some(m) = spec.as_object_mut() {
                m.remove("uid");
                m.remove("extra");
                m.remove("username");
                m.remove("groups");
            }
            if !ctx.user.is_empty() {
                spec["username"] = json!(ctx.user);
            }
            if !ctx.groups.is_empty() {
                spec["groups"] = json!(ctx.groups);
            }
        }
        if res.resource == "pods" && res.group.is_empty() {
            self.admit_pod(ns, &mut body)?;
        }
        // mutating admission, object validation, validating admission (kube-apiserver's order)
        fn review<'a>(user: &'a str, body: &'a Value) -> crate::api::admission::Review<'a> {
            crate::api::admission::Review {
                operation: "CREATE",
                user,
                old: None,
                new: Some(body),
            }
        }
        for (ptr, v) in crate::api::admission::admit(
            self,
            res,
            "CREATE",
            None,
            ns,
            &review(&ctx.user, &body),
            true,
        )? {
            crate::api::admission::apply_patch(&mut body, &ptr, &v);
        }
        let causes = kinds::validate(res, &body, None);
        if !causes.is_empty() {
            return Err(ApiError::invalid(res, &name, &causes));
        }
        crate::api::admission::admit(
            self,
            res,
            "CREATE",
            None,
            ns,
            &review(&ctx.user, &body),
            false,
        )?;
        let schema = schema_for(res);
        let body = record_write(None, body, &ctx.manager, None, schema.as_ref());
        let stored = self
            .store
            .write(
                &res.key(),
                if res.namespaced { ns } else { "" },
                &name,
                ctx.dry_run,
                |cur| {
                    if cur.is_some() {
                        return Err(ApiError::already_exists(res, &name));
                    }
                    Ok(WriteOp::Put(body))
                },
            )?
            .expect("put returns the object");
        if !ctx.dry_run {
            self.after_create(res, &stored);
        }
        Ok(Outcome {
            body: (*stored).clone(),
            code: 201,
            warnings: vec![],
        })
    }

    fn after_create(&self, res: &ResourceInfo, obj: &Value) {
        match (res.group.as_str(), res.resource.as_str()) {
            ("", "namespaces") => {
                // What the serviceaccount and root-CA publisher controllers do for every namespace.
                let ns = meta_str(obj, "name").unwrap_or_default();
                let ctx = Ctx::system("kube-controller-manager");
                let _ = self.create(
                    &self.info("", "serviceaccounts"),
                    ns,
                    json!({"metadata": {"name": "default"}}),
                    &ctx,
                );
                let _ = self.create(
                    &self.info("", "configmaps"),
                    ns,
                    json!({"metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                        "data": {"ca.crt": crate::pki::cluster_ca_pem()}}),
                    &ctx,
                );
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                self.registry.register_crd(obj);
            }
            _ => {}
        }
    }

    /// The shared tail of PUT and PATCH: `new` is the whole desired object.
    #[allow(clippy::too_many_arguments)]
    fn finish_update(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        subresource: Option<&str>,
        ctx: &Ctx,
        precondition_rv: Option<String>,
        compute: &dyn Fn(&Value) -> ApiResult<Value>,
        managed: bool,
    ) -> ApiResult<Outcome> {
        let key_ns = if res.namespaced { ns } else { "" };
        let schema = schema_for(res);
        let mut deleted = false;
        // Webhooks are consulted outside the store's lock, on the object this write makes of
        // the current one; the patches of mutating webhooks are applied again under the lock.
        // (A write racing in between is not re-reviewed, unlike the apiserver's retry.)
        let mut patches = Vec::new();
        if let Some(cur) = self.store.get(&res.key(), key_ns, name)
            && crate::api::admission::any_rule(self, res, "UPDATE", subresource)
        {
            let mut new = compute(&cur).unwrap_or_else(|_| (*cur).clone());
            fn review<'a>(
                user: &'a str,
                old: &'a Value,
                new: &'a Value,
            ) -> crate::api::admission::Review<'a> {
                crate::api::admission::Review {
                    operation: "UPDATE",
                    user,
                    old: Some(old),
                    new: Some(new),
                }
            }
            patches = crate::api::admission::admit(
                self,
                res,
                "UPDATE",
                subresource,
                ns,
                &review(&ctx.user, &cur, &new),
                true,
            )?;
            for (ptr, v) in &patches {
                crate::api::admission::apply_patch(&mut new, ptr, v);
            }
            crate::api::admission::admit(
                self,
                res,
                "UPDATE",
                subresource,
                ns,
                &review(&ctx.user, &cur, &new),
                false,
            )?;
        }
        let stored = self
            .store
            .write(&res.key(), key_ns, name, ctx.dry_run, |cur| {
                let cur = cur.ok_or_else(|| ApiError::not_found(res, name))?;
                if let Some(rv) = &precondition_rv
                    && !rv.is_empty()
                    && Some(rv.as_str()) != meta_str(cur, "resourceVersion")
                {
                    return Err(ApiError::conflict(res, name));
                }
                let mut new = compute(cur)?;
                for (ptr, v) in &patches {
                    crate::api::admission::apply_patch(&mut new, ptr, v);
                }
                if !new.is_object() {
                    return Err(ApiError::bad_request(
                        "the body of the request was in an unknown format",
                    ));
                }
                if meta_str(&new, "name").is_some_and(|n| n != name) {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({}) does not match the name on the URL ({name})",
                        meta_str(&new, "name").unwrap_or_default()
                    )));
                }
                new["apiVersion"] = json!(res.api_version());
                new["kind"] = json!(res.kind);
                // Server-owned metadata cannot be changed by clients.
                for f in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                    "name",
                    "namespace",
                ] {
                    match cur["metadata"].get(f) {
                        Some(v) => new["metadata"][f] = v.clone(),
                        None => {
                            if let Some(m) = new["metadata"].as_object_mut() {
                                m.remove(f);
                            }
                        }
                    }
                }
                match subresource {
                    Some("status") => {
                        // Status writes change only status (and metadata is taken from the old object).
                        let status = new.get("status").cloned();
                        let mut merged = (**cur).clone();
                        match status {
                            Some(s) => merged["status"] = s,
                            None => {
                                merged.as_object_mut().unwrap().remove("status");
                            }
                        }
                        merged["metadata"]["managedFields"] =
                            new["metadata"]["managedFields"].clone();
                        new = merged;
                    }
                    // CSR approval writes change only the conditions (kubernetes/kubernetes
                    // pkg/registry/certificates/certificates/strategy.go, csrApprovalStrategy).
                    Some("approval") => {
                        let conditions = new["status"]["conditions"].clone();
                        let mut merged = (**cur).clone();
                        merged["status"]["conditions"] = conditions;
                        merged["metadata"]["managedFields"] =
                            new["metadata"]["managedFields"].clone();
                        new = merged;
                    }
                    Some(other) if other != "finalize" => {
                        return Err(ApiError::method_not_allowed(format!(
                            "subresource {other} does not support this verb"
                        )));
                    }
                    _ => {
                        if res.has_status() {
                            match cur.get("status") {
                                Some(s) => new["status"] = s.clone(),
                                None => {
                                    new.as_object_mut().unwrap().remove("status");
                                }
                            }
                        }
                    }
                }
                if res.group.is_empty() && res.resource == "secrets" {
                    kinds::merge_string_data(&mut new);
                }
                if kinds::tracks_generation(res) && spec_part(cur) != spec_part(&new) {
                    let g = cur["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                    new["metadata"]["generation"] = json!(g);
                }
                let causes = kinds::validate(res, &new, Some(cur));
                if !causes.is_empty() {
                    return Err(ApiError::invalid(res, name, &causes));
                }
                if managed {
                    new = record_write(Some(cur), new, &ctx.manager, subresource, schema.as_ref());
                } else {
                    let mf = new["metadata"]["managedFields"].take();
                    set_managed_fields(&mut new, mf);
                }
                if same_content(cur, &new) {
                    return Ok(WriteOp::Noop);
                }
                let finalizers_empty = new["metadata"]["finalizers"]
                    .as_array()
                    .is_none_or(|f| f.is_empty());
                if cur["metadata"]["deletionTimestamp"].is_string()
                    && finalizers_empty
                    && !(res.resource == "pods" && res.group.is_empty())
                {
                    deleted = true;
                    return Ok(WriteOp::Delete);
                }
                Ok(WriteOp::Put(new))
            })?;
        let obj = stored.expect("update returns the object");
        if deleted && !ctx.dry_run {
            self.after_delete(res, &obj, Propagation::Background);
        } else if !ctx.dry_run
            && subresource.is_none()
            && res.group == "apiextensions.k8s.io"
            && res.resource == "customresourcedefinitions"
        {
            // a CRD whose spec changed is served as it now says: the real crdHandler drops
            // its storage and builds it again on the next request (kubernetes/kubernetes@v1.36.2
            // staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go
            // updateCustomResourceDefinition, getOrCreateServingInfoFor)
            self.registry.register_crd(&obj);
        }
        Ok(Outcome::ok(&obj))
    }

    pub fn update(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        mut body: Value,
        subresource: Option<&str>,
        ctx: &Ctx,
    ) -> ApiResult<Outcome> {
        self.check_type_meta(res, &mut body)?;
        let rv = meta_str(&body, "resourceVersion").map(str::to_string);
        if res.namespaced
            && let Some(bns) = meta_str(&body, "namespace")
            && bns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let body = Arc::new(body);
        self.finish_update(
            res,
            ns,
            name,
            subresource,
            ctx,
            rv,
            &|cur| {
                let mut new = (*body).clone();
                // managedFields of the stored object carry over; clients rarely send them right.
                new["metadata"]["managedFields"] = cur["metadata"]["managedFields"].clone();
                Ok(new)
            },
            true,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        pt: PatchType,
        body: Value,
        subresource: Option<&str>,
        ctx: &Ctx,
    ) -> ApiResult<Outcome> {
        let schema = schema_for(res);
        if let PatchType::Apply { force } = pt {
            if ctx.manager.is_empty() {
                return Err(ApiError::bad_request(
                    "PATCH requests with application/apply-patch+yaml must specify fieldManager",
                ));
            }
            let mut applied = body;
            self.check_type_meta(res, &mut applied)?;
            if meta_str(&applied, "name").is_some_and(|n| n != name) {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    meta_str(&applied, "name").unwrap_or_default()
                )));
            }
            applied["metadata"]["name"] = json!(name);
            let key_ns = if res.namespaced { ns } else { "" };
            if self.store.get(&res.key(), key_ns, name).is_none() {
                if subresource.is_some() {
                    return Err(ApiError::not_found(res, name));
                }
                // Create-if-absent: the applied config becomes the object, owned by the applier.
                self.check_namespace(res, ns)?;
                let created = patch::apply(
                    None,
                    &applied,
                    &ctx.manager,
                    force,
                    &util::now(),
                    schema.as_ref(),
                )
                .map_err(|e| patch_err(res, name, e))?;
                let mf = created["metadata"]["managedFields"].clone();
                let mut out = self.create(
                    res,
                    ns,
                    created,
                    &Ctx {
                        manager: ctx.manager.clone(),
                        dry_run: ctx.dry_run,
                        user: ctx.user.clone(),
                        groups: ctx.groups.clone(),
                    },
                )?;
                // create() records an Update entry; an apply-create is owned by the Apply entry alone.
                if !ctx.dry_run {
                    // a controller may already have deleted it (tokencleaner and an expired
                    // bootstrap token): the created object is the answer then
                    let fixed = self.store.write(&res.key(), key_ns, name, false, |cur| {
                        let Some(cur) = cur else {
                            return Ok(WriteOp::Noop);
                        };
                        let mut o = (**cur).clone();
                        set_managed_fields(&mut o, mf.clone());
                        Ok(WriteOp::Put(o))
                    })?;
                    match fixed {
                        Some(f) => out.body = (*f).clone(),
                        None => set_managed_fields(&mut out.body, mf),
                    }
                } else {
                    set_managed_fields(&mut out.body, mf);
                }
                return Ok(out);
            }
            let manager = ctx.manager.clone();
            let applied = Arc::new(applied);
            return self.finish_update(
                res,
                ns,
                name,
                subresource,
                ctx,
                None,
                &|cur| {
                    patch::apply(
                        Some(cur),
                        &applied,
                        &manager,
                        force,
                        &util::now(),
                        schema.as_ref(),
                    )
                    .map_err(|e| patch_err(res, name, e))
                },
                false,
            );
        }
        let rv = match pt {
            PatchType::Merge | PatchType::Strategic => body["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_string),
            _ => None,
        };
        let body = Arc::new(body);
        self.finish_update(
            res,
            ns,
            name,
            subresource,
            ctx,
            rv,
            &|cur| {
                let out = match pt {
                    PatchType::Merge => patch::json_merge_patch(cur, &body),
                    PatchType::Json => patch::json_patch(cur, &body),
                    PatchType::Strategic => {
                        patch::strategic_merge_patch(cur, &body, schema.as_ref())
                    }
                    PatchType::Apply { .. } => unreachable!(),
                };
                out.map_err(|e| patch_err(res, name, e))
            },
            true,
        )
    }

    pub fn delete(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        ctx: &Ctx,
    ) -> ApiResult<Outcome> {
        let key_ns = if res.namespaced { ns } else { "" };
        let mut warnings = vec![];
        let default_policy = if res.group == "batch" && res.resource == "jobs" {
            if opts.propagation.is_none() {
                warnings.push("child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning".to_string());
            }
            Propagation::Orphan
        } else {
            Propagation::Background
        };
        let policy = opts.propagation.unwrap_or(default_policy);
        let is_pod = res.group.is_empty() && res.resource == "pods";
        let is_ns = res.group.is_empty() && res.resource == "namespaces";
        let now = util::now();
        let mut finished = false;
        if let Some(cur) = self.store.get(&res.key(), key_ns, name) {
            let review = crate::api::admission::Review {
                operation: "DELETE",
                user: &ctx.user,
                old: Some(&cur),
                new: None,
            };
            crate::api::admission::admit(self, res, "DELETE", None, ns, &review, true)?;
            crate::api::admission::admit(self, res, "DELETE", None, ns, &review, false)?;
        }
        // Looked up before taking the store's lock (the closure below runs under it).
        let has_dependents = self
            .store
            .get(&res.key(), key_ns, name)
            .and_then(|o| meta_str(&o, "uid").map(str::to_string))
            .is_some_and(|uid| !self.store.dependents_of(&uid).is_empty());
        let stored = self.store.write(&res.key(), key_ns, name, ctx.dry_run, |cur| {
            let cur = cur.ok_or_else(|| ApiError::not_found(res, name))?;
            if let Some(uid) = &opts.precondition_uid
                && Some(uid.as_str()) != meta_str(cur, "uid") {
                    return Err(ApiError::conflict_msg(res, name, &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}", meta_str(cur, "uid").unwrap_or_default())));
                }
            if let Some(rv) = &opts.precondition_rv
                && Some(rv.as_str()) != meta_str(cur, "resourceVersion") {
                    return Err(ApiError::conflict_msg(res, name, &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", meta_str(cur, "resourceVersion").unwrap_or_default())));
                }
            let mut obj = (**cur).clone();
            let mut finalizers: Vec<Value> = obj["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
            let already = obj["metadata"]["deletionTimestamp"].is_string();
            let grace = if is_pod {
                let terminal = matches!(obj["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
                let unbound = obj["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
                if terminal || unbound { 0 } else { opts.grace_period.unwrap_or(obj["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(30)) }
            } else {
                0
            };
            match policy {
                Propagation::Foreground if has_dependents
                    && !finalizers.contains(&json!("foregroundDeletion")) => {
                        finalizers.push(json!("foregroundDeletion"));
                    }
                // Orphaned dependents are released right after this write (see cascade).
                _ => {}
            }
            if is_ns {
                obj["status"]["phase"] = json!("Terminating");
            }
            if !finalizers.is_empty() || grace > 0 || is_ns {
                if already && !(is_pod && grace == 0) {
                    return Ok(WriteOp::Noop);
                }
                if is_pod && grace == 0 && finalizers.is_empty() {
                    finished = true;
                    return Ok(WriteOp::Delete);
                }
                obj["metadata"]["finalizers"] = json!(finalizers);
                if finalizers.is_empty() {
                    obj["metadata"].as_object_mut().unwrap().remove("finalizers");
                }
                if !already {
                    obj["metadata"]["deletionTimestamp"] = json!(now);
                    obj["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
                }
                return Ok(WriteOp::Put(obj));
            }
            finished = true;
            Ok(WriteOp::Delete)
        })?;
        let obj = stored.expect("delete returns the object");
        if ctx.dry_run {
            return Ok(Outcome {
                body: (*obj).clone(),
                code: 200,
                warnings,
            });
        }
        self.cascade(res, &obj, policy);
        if finished {
            self.after_delete(res, &obj, policy);
            let mut details =
                json!({"name": name, "kind": res.resource, "uid": meta_str(&obj, "uid")});
            if !res.group.is_empty() {
                details["group"] = json!(res.group);
            }
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
            // Most registries return the deleted object; kube clients accept either.
            let body = if is_pod || res.group == "batch" {
                (*obj).clone()
            } else {
                status
            };
            return Ok(Outcome {
                body,
                code: 200,
                warnings,
            });
        }
        Ok(Outcome {
            body: (*obj).clone(),
            code: 200,
            warnings,
        })
    }

    /// Garbage collection of dependents when deletion starts (orphan: release them).
    fn cascade(&self, _res: &ResourceInfo, owner: &Value, policy: Propagation) {
        let uid = meta_str(owner, "uid").unwrap_or_default().to_string();
        let ctx = Ctx::system("generic-garbage-collector");
        for (gr, (dns, dname)) in self.store.dependents_of(&uid) {
            let Some(dres) = self.registry.lookup_gr(&gr.group, &gr.resource) else {
                continue;
            };
            match policy {
                Propagation::Orphan => {
                    let _ = self.finish_update(
                        &dres,
                        &dns,
                        &dname,
                        None,
                        &ctx,
                        None,
                        &|cur| {
                            let mut o = cur.clone();
                            if let Some(refs) = o["metadata"]["ownerReferences"].as_array_mut() {
                                refs.retain(|r| r["uid"] != json!(uid));
                                if refs.is_empty() {
                                    o["metadata"]
                                        .as_object_mut()
                                        .unwrap()
                                        .remove("ownerReferences");
                                }
                            }
                            Ok(o)
                        },
                        true,
                    );
                }
                Propagation::Background | Propagation::Foreground => {
                    let only_owner = self.store.get(&gr, &dns, &dname).is_some_and(|d| {
                        d["metadata"]["ownerReferences"]
                            .as_array()
                            .is_none_or(|refs| refs.iter().all(|r| r["uid"] == json!(uid)))
                    });
                    if only_owner {
                        let _ = self.delete(
                            &dres,
                            &dns,
                            &dname,
                            &DeleteOptions {
                                propagation: Some(policy),
                                ..Default::default()
                            },
                            &ctx,
                        );
                    }
                }
            }
        }
    }

    fn after_delete(&self, res: &ResourceInfo, obj: &Value, _policy: Propagation) {
        if res.group == "apiextensions.k8s.io" && res.resource == "customresourcedefinitions" {
            let group = obj["spec"]["group"].as_str().unwrap_or_default();
            let plural = obj["spec"]["names"]["plural"].as_str().unwrap_or_default();
            if let Some(cr) = self.registry.lookup_gr(group, plural) {
                let (items, _) = self.store.list(&cr.key(), &Filter::default());
                let ctx = Ctx::system("apiextensions-apiserver");
                for it in items {
                    let (ns, name) = crate::api::store::key_of(&it);
                    let _ = self.finish_update(
                        &cr,
                        &ns,
                        &name,
                        None,
                        &ctx,
                        None,
                        &|cur| {
                            let mut o = cur.clone();
                            o["metadata"].as_object_mut().unwrap().remove("finalizers");
                            Ok(o)
                        },
                        true,
                    );
                    let _ = self.delete(&cr, &ns, &name, &DeleteOptions::default(), &ctx);
                }
            }
            self.registry.unregister_crd(group, plural);
        }
        // Foreground owners waiting on this dependent may now be complete.
        for r in obj["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(kind) = r["kind"].as_str() else {
                continue;
            };
            let Some(ores) = self
                .registry
                .by_kind(r["apiVersion"].as_str().unwrap_or(""), kind)
            else {
                continue;
            };
            let ns = if ores.namespaced {
                meta_str(obj, "namespace").unwrap_or("")
            } else {
                ""
            };
            let Some(owner) = self
                .store
                .get(&ores.key(), ns, r["name"].as_str().unwrap_or(""))
            else {
                continue;
            };
            let waiting = owner["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.contains(&json!("foregroundDeletion")));
            let uid = meta_str(&owner, "uid").unwrap_or_default().to_string();
            if waiting && self.store.dependents_of(&uid).is_empty() {
                let name = meta_str(&owner, "name").unwrap_or_default().to_string();
                let _ = self.finish_update(
                    &ores,
                    ns,
                    &name,
                    None,
                    &Ctx::system("generic-garbage-collector"),
                    None,
                    &|cur| {
                        let mut o = cur.clone();
                        if let Some(f) = o["metadata"]["finalizers"].as_array_mut() {
                            f.retain(|x| x != "foregroundDeletion");
                        }
                        Ok(o)
                    },
                    true,
                );
            }
        }
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
