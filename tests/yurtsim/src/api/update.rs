//! Update and patch: the verbs, and the tail they share (admission, managedFields, generation,
//! optimistic concurrency, status subresources, finalizers).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::store::WriteOp;
use crate::util;

use super::*;

/// What the registry makes of a write before validating it (BeforeUpdate, the strategy's
/// PrepareForUpdate): server-owned metadata kept, a subresource write changing only its part,
/// the main resource never its status, the generation bumped on a spec change.
fn prepare(
    res: &ResourceInfo,
    name: &str,
    subresource: Option<&str>,
    cur: &Value,
    mut new: Value,
) -> ApiResult<Value> {
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
            let mut merged = cur.clone();
            match status {
                Some(s) => merged["status"] = s,
                None => {
                    merged.as_object_mut().unwrap().remove("status");
                }
            }
            merged["metadata"]["managedFields"] = new["metadata"]["managedFields"].clone();
            new = merged;
        }
        // CSR approval writes change only the conditions (kubernetes/kubernetes
        // pkg/registry/certificates/certificates/strategy.go, csrApprovalStrategy).
        Some("approval") => {
            let conditions = new["status"]["conditions"].clone();
            let mut merged = cur.clone();
            merged["status"]["conditions"] = conditions;
            merged["metadata"]["managedFields"] = new["metadata"]["managedFields"].clone();
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
            if res.group == "apiextensions.k8s.io" && res.resource == "customresourcedefinitions" {
                crate::api::crd::prepare_for_update(&mut new);
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
    Ok(new)
}

impl Api {
    /// The shared tail of PUT and PATCH: `compute` makes the whole desired object of the
    /// current one, read in `res`'s version. In kube-apiserver's order
    /// (kubernetes/kubernetes@v1.37.2 staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
    /// update.go and patch.go, the same at v1.34.4): the field manager (`managed`; an apply
    /// brings its own managedFields), mutating admission, the strategy, validation,
    /// validating admission; then the object is stored in the storage version.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_update(
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
        // custom resources are read in the request's version and stored in the storage one;
        // the webhook (if any) is looked up before the store's lock is taken
        let conversion = self.conversion(res);
        if let Some(c) = &conversion {
            c.resolve();
        }
        let read = |cur: &Arc<Value>| -> ApiResult<Arc<Value>> {
            match &conversion {
                Some(c) => c.convert(cur, &res.version).map(Arc::new),
                None => Ok(cur.clone()),
            }
        };
        // Webhooks are consulted outside the store's lock, on the object this write makes of
        // the current one; the patches of mutating webhooks are applied again under the lock.
        // (A write racing in between is not re-reviewed, unlike the apiserver's retry.)
        let mut patches = Vec::new();
        if let Some(cur) = self.store.get(&res.key(), key_ns, name)
            && crate::api::admission::any_rule(self, res, "UPDATE", subresource)
        {
            let cur = read(&cur)?;
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
            .write(&res.key(), key_ns, name, ctx.dry_run, |stored| {
                let stored = stored.ok_or_else(|| ApiError::not_found(res, name))?;
                if let Some(rv) = &precondition_rv
                    && !rv.is_empty()
                    && Some(rv.as_str()) != meta_str(stored, "resourceVersion")
                {
                    return Err(ApiError::conflict(res, name));
                }
                let cur = read(stored)?;
                let requested = compute(&cur)?;
                let mut new = requested.clone();
                for (ptr, v) in &patches {
                    crate::api::admission::apply_patch(&mut new, ptr, v);
                }
                let mut new = prepare(res, name, subresource, &cur, new)?;
                let causes = kinds::validate(res, &new, Some(&cur));
                let mut causes = causes;
                if subresource.is_none()
                    && res.group == "apiextensions.k8s.io"
                    && res.resource == "customresourcedefinitions"
                {
                    crate::api::crd::validate_stored_versions(&new, &mut causes);
                }
                if !causes.is_empty() {
                    return Err(ApiError::invalid(res, name, &causes));
                }
                if managed {
                    // ownership of what the request changed, before admission mutated it
                    let before = prepare(res, name, subresource, &cur, requested)?;
                    let owned = record_write(
                        Some(&cur),
                        before,
                        &ctx.manager,
                        subresource,
                        schema.as_ref(),
                    );
                    let mf = owned["metadata"]["managedFields"].clone();
                    set_managed_fields(&mut new, mf);
                } else {
                    let mf = new["metadata"]["managedFields"].take();
                    set_managed_fields(&mut new, mf);
                }
                // stored in the storage version (a dry run encodes nothing)
                if let Some(c) = &conversion
                    && !ctx.dry_run
                {
                    new = c.convert(&new, &c.storage)?;
                }
                if same_content(stored, &new) {
                    return Ok(WriteOp::Noop);
                }
                let finalizers_empty = new["metadata"]["finalizers"]
                    .as_array()
                    .is_none_or(|f| f.is_empty());
                if stored["metadata"]["deletionTimestamp"].is_string()
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
                return self.create_owned(res, ns, created, ctx, true);
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
}
