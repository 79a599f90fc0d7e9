//! Server-side apply of dynamic objects (field manager `yurtctl`), delete, create-or-get.
//!
//! The API resource behind each GroupVersionKind is discovered once per run and cached.
//! Applying an unchanged object again is a no-op on the server (same resourceVersion).

use std::collections::HashMap;
use std::sync::Mutex;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};

use super::error::{ClusterError, FieldConflict, kube_code};
use super::{Cluster, FIELD_MANAGER, SYSTEM_NAMESPACE};

/// How objects are applied.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    pub field_manager: String,
    /// Take over fields owned by other managers (`--force-conflicts`).
    pub force: bool,
    /// `--dry-run=server`: the server validates and answers, nothing is stored.
    pub dry_run: bool,
    /// Namespace for namespaced objects that name none.
    pub default_namespace: String,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            field_manager: FIELD_MANAGER.into(),
            force: false,
            dry_run: false,
            default_namespace: SYSTEM_NAMESPACE.into(),
        }
    }
}

/// What a delete found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// The server accepted the delete (the object may linger while finalizers run).
    Deleted,
    /// It was already gone.
    AlreadyGone,
}

/// Applies and deletes objects of any kind.
pub struct Applier {
    cluster: Cluster,
    opts: ApplyOptions,
    cache: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
}

/// `Kind ns/name` for messages.
pub fn describe(kind: &str, ns: Option<&str>, name: &str) -> String {
    match ns {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// The GroupVersionKind an object names.
pub fn gvk_of(obj: &DynamicObject) -> Result<GroupVersionKind, ClusterError> {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let tm = obj
        .types
        .as_ref()
        .ok_or_else(|| ClusterError::InvalidObject {
            object: name.clone(),
            message: "apiVersion and kind are missing".into(),
        })?;
    GroupVersionKind::try_from(tm).map_err(|e| ClusterError::InvalidObject {
        object: name,
        message: format!("bad apiVersion {:?}: {e}", tm.api_version),
    })
}

fn gvk_string(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        format!("{}/{}", gvk.version, gvk.kind)
    } else {
        format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind)
    }
}

/// Parses the conflicts of a 409 apply answer. The causes carry `field` and a message
/// `conflict with "manager"[ using v1]`; older servers only put them in the message.
pub fn parse_apply_conflicts(status: &kube::core::Status) -> Vec<FieldConflict> {
    fn manager_in(msg: &str) -> Option<String> {
        let start = msg.find('"')? + 1;
        let len = msg[start..].find('"')?;
        Some(msg[start..start + len].to_string())
    }
    let mut out: Vec<FieldConflict> = status
        .details
        .iter()
        .flat_map(|d| d.causes.iter())
        .filter(|c| !c.field.is_empty())
        .map(|c| FieldConflict {
            manager: manager_in(&c.message).unwrap_or_else(|| c.message.clone()),
            field: c.field.clone(),
        })
        .collect();
    if out.is_empty() {
        // "Apply failed with 2 conflicts: conflicts with \"m\":\n- .a\n- .b" or
        // "Apply failed with 1 conflict: conflict with \"m\" using v1: .a"
        let mut manager = String::new();
        for line in status.message.lines() {
            let line = line.trim();
            if let Some(f) = line.strip_prefix("- ") {
                out.push(FieldConflict {
                    manager: manager.clone(),
                    field: f.to_string(),
                });
            } else if let Some(m) = manager_in(line) {
                manager = m;
                if let Some(i) = line.rfind(": ")
                    && line[i + 2..].starts_with('.')
                {
                    out.push(FieldConflict {
                        manager: manager.clone(),
                        field: line[i + 2..].to_string(),
                    });
                }
            }
        }
    }
    out
}

impl Applier {
    pub fn new(cluster: Cluster, opts: ApplyOptions) -> Self {
        Applier {
            cluster,
            opts,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn options(&self) -> &ApplyOptions {
        &self.opts
    }

    /// Number of kinds discovered so far (each costs one discovery request once).
    pub fn discovered_kinds(&self) -> usize {
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The API resource serving `gvk`, discovered once and cached.
    pub async fn resource(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<(ApiResource, ApiCapabilities), ClusterError> {
        if let Some(hit) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(gvk)
        {
            return Ok(hit.clone());
        }
        let client = self.cluster.client().clone();
        let found = self
            .cluster
            .call(|| kube::discovery::pinned_kind(&client, gvk))
            .await
            .map_err(|e| match e {
                kube::Error::Discovery(d) => ClusterError::UnknownKind {
                    gvk: gvk_string(gvk),
                    message: d.to_string(),
                },
                kube::Error::Api(s) if s.code == 404 => ClusterError::UnknownKind {
                    gvk: gvk_string(gvk),
                    message: "its group/version is not served".into(),
                },
                other => ClusterError::from_kube(format!("discover {}", gvk_string(gvk)), other),
            })?;
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gvk.clone(), found.clone());
        Ok(found)
    }

    /// The `Api` for an object, and its namespace (None when cluster-scoped).
    async fn api_for(
        &self,
        obj: &DynamicObject,
    ) -> Result<(Api<DynamicObject>, Option<String>, ApiResource), ClusterError> {
        let gvk = gvk_of(obj)?;
        let (ar, caps) = self.resource(&gvk).await?;
        let client = self.cluster.client().clone();
        Ok(match caps.scope {
            Scope::Cluster => (Api::all_with(client, &ar), None, ar),
            Scope::Namespaced => {
                let ns = obj
                    .metadata
                    .namespace
                    .clone()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| self.opts.default_namespace.clone());
                (Api::namespaced_with(client, &ns, &ar), Some(ns), ar)
            }
        })
    }

    fn name_of(obj: &DynamicObject) -> Result<String, ClusterError> {
        obj.metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ClusterError::InvalidObject {
                object: obj
                    .types
                    .as_ref()
                    .map(|t| t.kind.clone())
                    .unwrap_or_default(),
                message: "metadata.name is missing".into(),
            })
    }

    /// Server-side applies `obj`; returns the object as stored (or as it would be, dry-run).
    pub async fn apply(&self, obj: &DynamicObject) -> Result<DynamicObject, ClusterError> {
        let name = Self::name_of(obj)?;
        let (api, ns, ar) = self.api_for(obj).await?;
        let what = describe(&ar.kind, ns.as_deref(), &name);
        let mut body = obj.clone();
        body.metadata.namespace = ns.clone();
        // Never send server-owned fields back.
        body.metadata.resource_version = None;
        body.metadata.managed_fields = None;
        body.metadata.uid = None;
        body.metadata.creation_timestamp = None;
        body.metadata.generation = None;
        let mut pp = PatchParams::apply(&self.opts.field_manager);
        pp.force = self.opts.force;
        pp.dry_run = self.opts.dry_run;
        let patch = Patch::Apply(&body);
        self.cluster
            .call(|| api.patch(&name, &pp, &patch))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 409 => ClusterError::ApplyConflict {
                    object: what.clone(),
                    conflicts: parse_apply_conflicts(&s),
                },
                other => ClusterError::from_kube(format!("apply {what}"), other),
            })
    }

    /// Sets annotations of `obj` with a merge patch (no field manager's apply: a value another
    /// manager owns is overwritten, not a conflict); `dry_run` as the applier's.
    pub async fn annotate(
        &self,
        obj: &DynamicObject,
        annotations: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), ClusterError> {
        let name = Self::name_of(obj)?;
        let (api, ns, ar) = self.api_for(obj).await?;
        let what = describe(&ar.kind, ns.as_deref(), &name);
        let pp = PatchParams {
            dry_run: self.opts.dry_run,
            ..Default::default()
        };
        let body = serde_json::json!({"metadata": {"annotations": annotations}});
        let patch = Patch::Merge(&body);
        self.cluster
            .call(|| api.patch(&name, &pp, &patch))
            .await
            .map(drop)
            .map_err(|e| ClusterError::from_kube(format!("annotate {what}"), e))
    }

    /// Applies objects in order, stopping at the first error.
    pub async fn apply_all(
        &self,
        objs: &[DynamicObject],
    ) -> Result<Vec<DynamicObject>, ClusterError> {
        let mut out = Vec::with_capacity(objs.len());
        for o in objs {
            out.push(self.apply(o).await?);
        }
        Ok(out)
    }

    /// Creates `obj` unless an object of that name exists; returns what is stored and whether
    /// this call created it. For objects that must keep what they were first created with
    /// (generated secrets, tokens).
    pub async fn create_or_get(
        &self,
        obj: &DynamicObject,
    ) -> Result<(DynamicObject, bool), ClusterError> {
        let name = Self::name_of(obj)?;
        let (api, ns, ar) = self.api_for(obj).await?;
        let what = describe(&ar.kind, ns.as_deref(), &name);
        if let Some(existing) = self
            .cluster
            .call(|| api.get_opt(&name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?
        {
            return Ok((existing, false));
        }
        let pp = PostParams {
            dry_run: self.opts.dry_run,
            field_manager: Some(self.opts.field_manager.clone()),
        };
        let mut body = obj.clone();
        body.metadata.namespace = ns;
        match self.cluster.call(|| api.create(&pp, &body)).await {
            Ok(created) => Ok((created, true)),
            Err(e) if kube_code(&e) == Some(409) => {
                let existing = self
                    .cluster
                    .call(|| api.get(&name))
                    .await
                    .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?;
                Ok((existing, false))
            }
            Err(e) => Err(ClusterError::from_kube(format!("create {what}"), e)),
        }
    }

    /// The stored object of `obj`'s kind and name, if any.
    pub async fn get_opt(
        &self,
        obj: &DynamicObject,
    ) -> Result<Option<DynamicObject>, ClusterError> {
        let name = Self::name_of(obj)?;
        let (api, ns, ar) = self.api_for(obj).await?;
        let what = describe(&ar.kind, ns.as_deref(), &name);
        self.cluster
            .call(|| api.get_opt(&name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))
    }

    /// Deletes with Background propagation; an object already gone counts as success.
    pub async fn delete(&self, obj: &DynamicObject) -> Result<Deleted, ClusterError> {
        let name = Self::name_of(obj)?;
        let (api, ns, ar) = self.api_for(obj).await?;
        let what = describe(&ar.kind, ns.as_deref(), &name);
        let dp = DeleteParams {
            dry_run: self.opts.dry_run,
            ..DeleteParams::background()
        };
        delete_with(&self.cluster, &api, &name, &dp, &what).await
    }

    /// Waits until the object `obj` named, with this `uid`, is gone (a finalizer may hold it).
    pub async fn wait_deleted(
        &self,
        obj: &DynamicObject,
        uid: &str,
        timeout: std::time::Duration,
    ) -> Result<(), ClusterError> {
        use kube::runtime::wait::{await_condition, conditions};
        let name = Self::name_of(obj)?;
        let (api, _, _) = self.api_for(obj).await?;
        let gone = await_condition(api, &name, conditions::is_deleted(uid));
        match tokio::time::timeout(timeout, gone).await {
            Ok(_) => Ok(()),
            Err(_) => Err(ClusterError::Timeout {
                what: format!("{name} to be deleted"),
                after: timeout,
            }),
        }
    }
}

/// Deletes one object through any `Api`; 404 means it was already gone.
pub async fn delete_with<K>(
    cluster: &Cluster,
    api: &Api<K>,
    name: &str,
    dp: &DeleteParams,
    what: &str,
) -> Result<Deleted, ClusterError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match cluster.call(|| api.delete(name, dp)).await {
        Ok(_) => Ok(Deleted::Deleted),
        Err(e) if kube_code(&e) == Some(404) => Ok(Deleted::AlreadyGone),
        Err(e) => Err(ClusterError::from_kube(format!("delete {what}"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(v: serde_json::Value) -> kube::core::Status {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn conflicts_come_from_causes() {
        let s = status(serde_json::json!({"code": 409, "reason": "Conflict",
            "message": "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .data.key",
            "details": {"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\" using v1", "field": ".data.key"}]}}));
        assert_eq!(
            parse_apply_conflicts(&s),
            vec![FieldConflict {
                manager: "kubectl".into(),
                field: ".data.key".into()
            }]
        );
    }

    #[test]
    fn conflicts_fall_back_to_the_message() {
        let s = status(serde_json::json!({"code": 409, "reason": "Conflict",
            "message": "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .metadata.labels.app\n- .spec.replicas"}));
        let c = parse_apply_conflicts(&s);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].manager, "alice");
        assert_eq!(c[1].field, ".spec.replicas");
        let s = status(serde_json::json!({"code": 409,
            "message": "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas"}));
        assert_eq!(
            parse_apply_conflicts(&s),
            vec![FieldConflict {
                manager: "bob".into(),
                field: ".spec.replicas".into()
            }]
        );
    }
}
