//! Delete: graceful pod deletion, finalizers, and the garbage collection that follows (cascade).

use serde_json::{Value, json};

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::store::{Filter, WriteOp};
use crate::util;

use super::*;

impl Api {
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
            // read through the request's version first, so a custom resource that cannot be
            // converted cannot be deleted (k8s.io/apiserver@v0.37.2 pkg/registry/generic/
            // registry/store.go Delete: Storage.Get decodes it)
            let cur = self.present(res, &cur)?;
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

    pub(super) fn after_delete(&self, res: &ResourceInfo, obj: &Value, _policy: Propagation) {
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
}
