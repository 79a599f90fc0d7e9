//! The YurtStaticSet (apps.openyurt.io/v1alpha1) that manages a static pod, when there is one.
//!
//! yurt-manager's YurtStaticSet controller renders `spec.template` into ConfigMap
//! `yurt-static-set-<NAME>` (annotation `openyurt.io/static-pod-hash`) and rewrites that
//! ConfigMap whenever its hash differs from the template's; with strategy
//! `AdvancedRollingUpdate` it also upgrades nodes itself, with `OTA` it only marks pods
//! (openyurtio/openyurt@v1.6.1 pkg/yurtmanager/controller/yurtstaticset). So when a set exists,
//! yurtctl changes the template (the controller publishes the manifest) and holds the strategy
//! at `OTA` while it drives the nodes in its own order; the user's strategy is kept in an
//! annotation and put back when the run ends.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

use super::Cluster;
use super::error::ClusterError;
use super::staticset::{configmap_name, hash_of};
use super::watch::{self, Changes};
use crate::naming::revision::HASH_ANNOTATION;

/// The user's `spec.upgradeStrategy` (JSON) while yurtctl holds the set at `OTA`.
pub const HELD_STRATEGY_ANNOTATION: &str = "staticpod.yurtctl.openyurt.io/held-upgrade-strategy";

/// What yurtctl reads from a YurtStaticSet.
#[derive(Debug, Clone, PartialEq)]
pub struct YurtStaticSet {
    pub namespace: String,
    pub name: String,
    /// `spec.template` (metadata and spec of the static pod).
    pub template: Value,
    /// `spec.staticPodManifest`: the ConfigMap's data key and the file's base name on nodes.
    pub manifest_key: String,
    /// `spec.upgradeStrategy` as stored now.
    pub strategy: Value,
    /// The user's strategy when an earlier run holds the set (it was interrupted or left
    /// nodes behind on purpose).
    pub held: Option<Value>,
    /// `status` (totalNumber, readyNumber, upgradedNumber).
    pub status: Value,
    pub created: Option<k8s_openapi::jiff::Timestamp>,
}

impl YurtStaticSet {
    /// The strategy the user chose (the held one while yurtctl holds the set).
    pub fn user_strategy(&self) -> &Value {
        self.held.as_ref().unwrap_or(&self.strategy)
    }

    /// `status.<field>` (`totalNumber`, `readyNumber`, `upgradedNumber`); 0 before the
    /// controller wrote it, as `kubectl get` shows an empty column.
    pub fn count(&self, field: &str) -> usize {
        self.status[field].as_u64().unwrap_or(0) as usize
    }
}

fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "YurtStaticSet");
    ApiResource::from_gvk_with_plural(&gvk, "yurtstaticsets")
}

/// The API of YurtStaticSets in `namespace`.
fn api(cluster: &Cluster, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(cluster.client().clone(), namespace, &resource())
}

/// The set as a get or a watch event returns it.
pub fn from_dynamic(namespace: &str, name: &str, o: DynamicObject) -> YurtStaticSet {
    let held = o
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(HELD_STRATEGY_ANNOTATION))
        .and_then(|s| serde_json::from_str(s).ok());
    YurtStaticSet {
        namespace: namespace.into(),
        name: name.into(),
        template: o.data["spec"]["template"].clone(),
        manifest_key: o.data["spec"]["staticPodManifest"]
            .as_str()
            .unwrap_or(name)
            .to_owned(),
        strategy: o.data["spec"]["upgradeStrategy"].clone(),
        held,
        status: o.data["status"].clone(),
        created: o.metadata.creation_timestamp.map(|t| t.0),
    }
}

/// Set `namespace/name` as it changes (its controller's status writes included), from a
/// watch selecting it by name.
pub fn set_changes(cluster: &Cluster, namespace: &str, name: &str) -> Changes<YurtStaticSet> {
    let config = kube::runtime::watcher::Config::default().fields(&format!("metadata.name={name}"));
    let (ns, name) = (namespace.to_string(), name.to_string());
    watch::changes(api(cluster, namespace), config, move |o| {
        Some(from_dynamic(&ns, &name, o))
    })
}

/// The set named like the static pod; None when there is none or the CRD is not installed.
pub async fn get(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<YurtStaticSet>, ClusterError> {
    let api = api(cluster, namespace);
    match cluster.call(|| api.get_opt(name)).await {
        Ok(o) => Ok(o.map(|o| from_dynamic(namespace, name, o))),
        // no such resource type: the CRD is not installed
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(ClusterError::from_kube(
            format!("get YurtStaticSet {namespace}/{name}"),
            e,
        )),
    }
}

/// yurt-manager's leader-election Leases in kube-system: the name the upstream chart gives it
/// (`leaderElectResourceName: cloud-yurt-manager`, openyurtio/openyurt@v1.6.1
/// charts/yurt-manager/values.yaml; ours too) and the binary's default (`yurt-manager`,
/// cmd/yurt-manager/app/options/generic.go `NewGenericOptions`). Its controllers, the
/// YurtStaticSet one among them, run only while it leads.
pub const CONTROLLER_LEASES: [&str; 2] = ["cloud-yurt-manager", "yurt-manager"];

/// yurt-manager's webhook Service in kube-system (the upstream chart's name, ours too). The
/// API server calls the YurtStaticSet webhooks through its endpoints, with `failurePolicy:
/// Fail` (openyurtio/openyurt@v1.7.0 charts/yurt-manager/templates/
/// yurt-manager-auto-generated.yaml): with none ready, every write of a set is refused.
pub const WEBHOOK_SERVICE: &str = "yurt-manager-webhook-service";

/// The yurt-manager that leads now (its identity), or `None` when no Lease of its is held and
/// renewed: then no controller renders a YurtStaticSet's template.
pub async fn controller_leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    for name in CONTROLLER_LEASES {
        if let Some(h) = super::lock::holder_of(cluster, "kube-system", name).await?
            && h.is_live()
        {
            return Ok(Some(h.identity));
        }
    }
    Ok(None)
}

/// What a create found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    AlreadyExists,
    /// The cluster does not serve YurtStaticSets (the CRD is not installed).
    NotServed,
}

/// Creates the set (with `dry_run`, the server only checks it).
pub async fn create(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    spec: &Value,
    dry_run: bool,
) -> Result<Created, ClusterError> {
    let api = api(cluster, namespace);
    let mut o = DynamicObject::new(name, &resource()).within(namespace);
    o.data = json!({"spec": spec});
    let pp = PostParams {
        dry_run,
        ..Default::default()
    };
    match cluster.call(|| api.create(&pp, &o)).await {
        Ok(_) => Ok(Created::Created),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Created::AlreadyExists),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Created::NotServed),
        Err(e) => Err(ClusterError::from_kube(
            format!("create YurtStaticSet {namespace}/{name}"),
            e,
        )),
    }
}

/// Read, change and replace the set, again on a conflict (someone else wrote it meanwhile).
async fn update(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    what: &str,
    change: impl Fn(&mut DynamicObject) -> bool,
) -> Result<bool, ClusterError> {
    let api = api(cluster, namespace);
    let context = || format!("{what} YurtStaticSet {namespace}/{name}");
    let pp = PostParams::default();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut o = cluster
            .call(|| api.get(name))
            .await
            .map_err(|e| ClusterError::from_kube(context(), e))?;
        if !change(&mut o) {
            return Ok(false);
        }
        match cluster.call(|| api.replace(name, &pp, &o)).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 5 => continue,
            Err(e) => return Err(ClusterError::from_kube(context(), e)),
        }
    }
}

/// Sets `template` and holds the strategy at `OTA`, keeping the user's strategy in
/// [`HELD_STRATEGY_ANNOTATION`] (an earlier run's record is kept: it holds the user's).
pub async fn hold(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    template: &Value,
) -> Result<(), ClusterError> {
    update(cluster, namespace, name, "hold", |o| {
        let annotations = o.metadata.annotations.get_or_insert_with(Default::default);
        if !annotations.contains_key(HELD_STRATEGY_ANNOTATION) {
            let user = o.data["spec"]["upgradeStrategy"].to_string();
            annotations.insert(HELD_STRATEGY_ANNOTATION.into(), user);
        }
        let ota = json!({"type": "OTA"});
        if o.data["spec"]["template"] == *template && o.data["spec"]["upgradeStrategy"] == ota {
            return false;
        }
        o.data["spec"]["template"] = template.clone();
        o.data["spec"]["upgradeStrategy"] = ota;
        true
    })
    .await
    .map(|_| ())
}

/// Puts the user's strategy back and drops the record; false when the set was not held.
pub async fn release(cluster: &Cluster, namespace: &str, name: &str) -> Result<bool, ClusterError> {
    update(cluster, namespace, name, "release", |o| {
        let Some(held) = o
            .metadata
            .annotations
            .as_mut()
            .and_then(|a| a.remove(HELD_STRATEGY_ANNOTATION))
        else {
            return false;
        };
        if let Ok(strategy) = serde_json::from_str::<Value>(&held)
            && !strategy.is_null()
        {
            o.data["spec"]["upgradeStrategy"] = strategy;
        }
        true
    })
    .await
}

/// Whether ConfigMap `cm` holds the controller's rendering of `template`: the hash
/// annotation is set, and the manifest under `key` carries it and the template's labels and
/// spec.
pub fn renders(cm: &ConfigMap, key: &str, template: &Value) -> bool {
    let Some(hash) = hash_of(cm) else {
        return false;
    };
    let Some(pod) = cm
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|m| serde_saphyr::from_str::<Value>(m).ok())
    else {
        return false;
    };
    pod["metadata"]["annotations"][HASH_ANNOTATION] == json!(hash)
        && pod["spec"] == template["spec"]
        && pod["metadata"]["labels"] == template["metadata"]["labels"]
}

/// Waits until the controller has rendered `template` into the ConfigMap of set
/// `namespace/name` under `key` (its `staticPodManifest`); returns its hash and manifest.
pub async fn wait_rendered(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    key: &str,
    template: &Value,
    timeout: Duration,
) -> Result<(String, String), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    let cm_name = configmap_name(name);
    let key = key.to_owned();
    let cond = {
        let (key, template) = (key.clone(), template.clone());
        move |cm: Option<&ConfigMap>| cm.is_some_and(|cm| renders(cm, &key, &template))
    };
    let timed_out = || ClusterError::Timeout {
        what: format!(
            "yurt-manager's YurtStaticSet controller to render YurtStaticSet {namespace}/{name} into ConfigMap {cm_name} (is yurt-manager running? `kubectl -n kube-system get pods -l app.kubernetes.io/name=yurt-manager`, and its log)"
        ),
        after: timeout,
    };
    cluster.throttle().await;
    let cm = tokio::time::timeout(
        timeout,
        kube::runtime::wait::await_condition(api, &cm_name, cond),
    )
    .await
    .map_err(|_| timed_out())?
    .map_err(|e| ClusterError::Watch {
        what: format!("ConfigMap {namespace}/{cm_name}"),
        message: e.to_string(),
    })?
    .ok_or_else(timed_out)?;
    let hash = hash_of(&cm).unwrap_or_default().to_owned();
    let manifest = cm.data.and_then(|mut d| d.remove(&key)).unwrap_or_default();
    Ok((hash, manifest))
}

/// The template a YurtStaticSet gets for `pod` (a manifest or template as YAML/JSON): `base`
/// (the set's template now) with the pod's labels, annotations (but the hash) and spec.
pub fn template_for(base: &Value, pod: &Value) -> Value {
    let mut t = base.clone();
    let mut meta = pod["metadata"].clone();
    if let Some(a) = meta["annotations"].as_object_mut() {
        a.remove(HASH_ANNOTATION);
    }
    for k in ["labels", "annotations"] {
        match &meta[k] {
            Value::Object(m) if !m.is_empty() => t["metadata"][k] = meta[k].take(),
            _ => {
                if let Some(m) = t["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    t["spec"] = pod["spec"].clone();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_keeps_the_sets_name_and_takes_the_pods_metadata_and_spec() {
        let base = json!({"metadata": {"name": "yurt-hub", "labels": {"k8s-app": "yurt-hub"}}, "spec": {"containers": [{"image": "a"}]}});
        let pod = json!({"metadata": {"name": "yurt-hub", "namespace": "kube-system",
            "labels": {"k8s-app": "yurt-hub", "tier": "edge"},
            "annotations": {HASH_ANNOTATION: "abc"}},
            "spec": {"containers": [{"image": "b"}]}});
        let t = template_for(&base, &pod);
        assert_eq!(
            t,
            json!({"metadata": {"name": "yurt-hub", "labels": {"k8s-app": "yurt-hub", "tier": "edge"}},
                "spec": {"containers": [{"image": "b"}]}})
        );
        // the template of an unchanged pod is the set's template
        let same = json!({"metadata": {"name": "yurt-hub", "labels": {"k8s-app": "yurt-hub"},
            "annotations": {HASH_ANNOTATION: "abc"}}, "spec": {"containers": [{"image": "a"}]}});
        assert_eq!(template_for(&base, &same), base);
    }

    #[test]
    fn a_config_map_renders_a_template_when_hash_labels_and_spec_agree() {
        let template =
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"image": "x"}]}});
        let cm = |hash: &str, manifest: &str| -> ConfigMap {
            serde_json::from_value(json!({"metadata": {"annotations": {HASH_ANNOTATION: hash}},
                "data": {"web": manifest}}))
            .unwrap()
        };
        let good = format!(
            "metadata:\n  annotations:\n    {HASH_ANNOTATION}: h1\n  labels:\n    a: \"1\"\nspec:\n  containers:\n  - image: x\n"
        );
        assert!(renders(&cm("h1", &good), "web", &template));
        assert!(!renders(&cm("h2", &good), "web", &template), "stale hash");
        assert!(!renders(&cm("h1", &good), "other", &template), "wrong key");
        let other_image = good.replace("image: x", "image: y");
        assert!(!renders(&cm("h1", &other_image), "web", &template));
    }
}
