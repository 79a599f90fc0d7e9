//! Custom resources by their CRD: how many objects a CRD holds (an upgrade keeps a CRD with
//! objects and migrates their storage), and the storage migration itself: every object written
//! again so the API server stores it at the CRD's storage version, then `status.storedVersions`
//! naming only that one (what kube-storage-version-migrator does; kubernetes/kubernetes
//! staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/types.go, v1.36.2:
//! "storedVersions lists all versions of CustomResources that were ever persisted").

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{Cluster, ClusterError};

/// The CRD `name` as an API resource at `version` (its storage version when None), or None
/// when the CRD does not exist.
async fn resource(
    cluster: &Cluster,
    name: &str,
    version: Option<&str>,
) -> Result<Option<(ApiResource, bool)>, ClusterError> {
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client().clone());
    let Some(crd) = cluster
        .call(|| crds.get_opt(name))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get CustomResourceDefinition {name}"), e))?
    else {
        return Ok(None);
    };
    let spec = &crd.spec;
    let version = match version {
        Some(v) => v.to_owned(),
        None => spec
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .unwrap_or_default(),
    };
    let namespaced = spec.scope == "Namespaced";
    Ok(Some((
        ApiResource {
            group: spec.group.clone(),
            version: version.clone(),
            api_version: format!("{}/{version}", spec.group),
            kind: spec.names.kind.clone(),
            plural: spec.names.plural.clone(),
        },
        namespaced,
    )))
}

/// CRD `name` as an API resource at its storage version, or None when it does not exist:
/// reading at the version objects are stored in needs no conversion webhook, so it works
/// while the component that serves the webhook is down.
pub async fn stored(cluster: &Cluster, name: &str) -> Result<Option<ApiResource>, ClusterError> {
    Ok(resource(cluster, name, None).await?.map(|(ar, _)| ar))
}

/// How many objects CRD `name` holds (0 when it does not exist).
pub async fn count_objects(cluster: &Cluster, name: &str) -> Result<usize, ClusterError> {
    let Some((ar, _)) = resource(cluster, name, None).await? else {
        return Ok(0);
    };
    let api: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &ar);
    let names = cluster
        .list_map(&api, &ListParams::default(), |_| Some(()))
        .await
        .map_err(|e| ClusterError::from_kube(format!("list {}", ar.plural), e))?;
    Ok(names.len())
}

/// Writes every object of CRD `name` again at `version` (its new storage version), then sets
/// its `status.storedVersions` to `[version]`. Returns how many objects were written. Safe to
/// run again: an object written twice is stored the same.
pub async fn migrate_storage(
    cluster: &Cluster,
    name: &str,
    version: &str,
) -> Result<usize, ClusterError> {
    let Some((ar, namespaced)) = resource(cluster, name, Some(version)).await? else {
        return Ok(0);
    };
    let all: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &ar);
    let objects = cluster
        .list_map(&all, &ListParams::default(), Some)
        .await
        .map_err(|e| ClusterError::from_kube(format!("list {}", ar.plural), e))?;
    let mut written = 0;
    let pp = PostParams::default();
    for o in objects {
        let obj_name = o.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match (&o.metadata.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(cluster.client().clone(), ns, &ar),
            _ => Api::all_with(cluster.client().clone(), &ar),
        };
        let what = || format!("write {} {obj_name} again at {version}", ar.kind);
        // written as read (its resourceVersion a precondition); on a conflict it changed
        // meanwhile, and that write stored it at the storage version already
        match cluster.call(|| api.replace(&obj_name, &pp, &o)).await {
            Ok(_) => written += 1,
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
            Err(e) => return Err(ClusterError::from_kube(what(), e)),
        }
    }
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client().clone());
    let body = json!({"status": {"storedVersions": [version]}});
    let (pp, patch) = (PatchParams::default(), Patch::Merge(&body));
    cluster
        .call(|| crds.patch_status(name, &pp, &patch))
        .await
        .map_err(|e| {
            ClusterError::from_kube(
                format!("set status.storedVersions of CustomResourceDefinition {name}"),
                e,
            )
        })?;
    Ok(written)
}
