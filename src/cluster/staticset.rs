//! The static-pod revision store and the mirror pods of a static pod.
//!
//! ConfigMap `<ns>/yurt-static-set-<NAME>` is what OpenYurt's YurtHub (OTA) and `yurtadm
//! staticpods install` read: exactly ONE `data` key (the manifest name) holding the desired
//! manifest, and annotation `openyurt.io/static-pod-hash` with its revision. yurtctl keeps its
//! own bookkeeping in `binaryData` (which those readers ignore): a bounded history of previous
//! revisions for rollback, and the progress of the last rollout so a re-run resumes and
//! `status -o wide` can show each node's last result.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::ClusterError;
use super::watch::{self, Changes};
use super::{Cluster, FIELD_MANAGER, LABEL_MANAGED_BY, MANAGED_BY};
use crate::naming::revision::{
    CONFIG_SOURCE, HASH_ANNOTATION, revision_hash, template_from_mirror,
};
use crate::rollout::NodeResult;

pub const CONFIGMAP_PREFIX: &str = "yurt-static-set-";
const HISTORY_KEY: &str = "yurtctl.history";
const PROGRESS_KEY: &str = "yurtctl.progress";
/// Previous revisions kept for rollback (Kubernetes' revisionHistoryLimit default).
pub const HISTORY_LIMIT: usize = 10;

pub fn configmap_name(name: &str) -> String {
    format!("{CONFIGMAP_PREFIX}{name}")
}

pub use crate::naming::static_pod_lock as lock_name;

/// One revision of the static pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// Increasing number (`--to-revision`).
    pub number: u64,
    pub hash: String,
    pub manifest: String,
}

/// What the last rollout recorded per node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutProgress {
    /// The revision the rollout went to.
    pub target: String,
    pub strategy: String,
    /// node → how it last ended, saved as the result's word.
    #[serde(deserialize_with = "known_results")]
    pub nodes: BTreeMap<String, NodeResult>,
}

/// The saved results this build knows; a word it does not (written by a newer yurtctl) is
/// left out rather than making the whole store unreadable.
fn known_results<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, NodeResult>, D::Error> {
    let words = BTreeMap::<String, String>::deserialize(d)?;
    Ok(words
        .into_iter()
        .filter_map(|(node, word)| Some((node, word.parse().ok()?)))
        .collect())
}

/// The desired state of one static pod.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticSet {
    pub namespace: String,
    pub name: String,
    /// The data key and the manifest's file base name on nodes.
    pub manifest_key: String,
    pub current: Revision,
    /// Older revisions, newest first, at most [`HISTORY_LIMIT`].
    pub history: Vec<Revision>,
    pub progress: RolloutProgress,
    pub created: Option<k8s_openapi::jiff::Timestamp>,
}

impl StaticSet {
    /// Makes `hash`/`manifest` the current revision (the old current one goes to history; a
    /// revision already in history is moved back to the top, as `kubectl rollout undo` does).
    /// Returns whether anything changed.
    pub fn set_current(&mut self, hash: &str, manifest: String) -> bool {
        if self.current.hash == hash {
            return false;
        }
        let next = self
            .history
            .iter()
            .map(|r| r.number)
            .chain([self.current.number])
            .max()
            .unwrap_or(0)
            + 1;
        let old = std::mem::replace(
            &mut self.current,
            Revision {
                number: next,
                hash: hash.into(),
                manifest,
            },
        );
        self.history.retain(|r| r.hash != hash);
        if !old.hash.is_empty() {
            self.history.insert(0, old);
        }
        self.history.truncate(HISTORY_LIMIT);
        true
    }

    /// All revisions, newest first.
    pub fn revisions(&self) -> impl Iterator<Item = &Revision> {
        std::iter::once(&self.current).chain(self.history.iter())
    }
}

fn bytes<T: Serialize>(v: &T) -> ByteString {
    ByteString(serde_json::to_vec(v).unwrap_or_default())
}

fn corrupt(name: &str, what: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::InvalidObject {
        object: format!("ConfigMap {name}"),
        message: format!("its {what} cannot be read ({e}); delete the key or the ConfigMap"),
    }
}

/// The revision a store ConfigMap names (annotation `openyurt.io/static-pod-hash`).
pub fn hash_of(cm: &ConfigMap) -> Option<&str> {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(HASH_ANNOTATION))
        .map(String::as_str)
}

/// Reads the store; None when the ConfigMap does not exist.
pub async fn load(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<StaticSet>, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    let cm_name = configmap_name(name);
    let cm = cluster
        .call(|| api.get_opt(&cm_name))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get ConfigMap {namespace}/{cm_name}"), e))?;
    cm.map(|cm| from_configmap(namespace, name, cm)).transpose()
}

/// The store as ConfigMap `cm` holds it (for a ConfigMap from a get or a watch).
pub fn from_configmap(
    namespace: &str,
    name: &str,
    cm: ConfigMap,
) -> Result<StaticSet, ClusterError> {
    let cm_name = configmap_name(name);
    let data = cm.data.clone().unwrap_or_default();
    let Some((key, manifest)) = data.into_iter().next() else {
        return Err(corrupt(&cm_name, "data", "no manifest key"));
    };
    let hash = hash_of(&cm).unwrap_or_default().to_owned();
    let bin = cm.binary_data.unwrap_or_default();
    let (number, history): (u64, Vec<Revision>) = match bin.get(HISTORY_KEY) {
        Some(b) => serde_json::from_slice(&b.0).map_err(|e| corrupt(&cm_name, HISTORY_KEY, e))?,
        None => (1, Vec::new()),
    };
    let progress: RolloutProgress = match bin.get(PROGRESS_KEY) {
        Some(b) => serde_json::from_slice(&b.0).map_err(|e| corrupt(&cm_name, PROGRESS_KEY, e))?,
        None => RolloutProgress::default(),
    };
    Ok(StaticSet {
        namespace: namespace.into(),
        name: name.into(),
        manifest_key: key,
        current: Revision {
            number,
            hash,
            manifest,
        },
        history,
        progress,
        created: cm.metadata.creation_timestamp.map(|t| t.0),
    })
}

/// Writes the whole store with server-side apply (field manager `yurtctl`, forced: the store
/// is ours). The single data key is the current manifest.
pub async fn save(cluster: &Cluster, set: &StaticSet) -> Result<(), ClusterError> {
    apply_store(cluster, set, false).await
}

/// [`save`], or with `dry_run` the same request with `dryRun=All` (the server checks it and
/// stores nothing).
pub async fn apply_store(
    cluster: &Cluster,
    set: &StaticSet,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), &set.namespace);
    let cm_name = configmap_name(&set.name);
    let mut binary = BTreeMap::new();
    binary.insert(
        HISTORY_KEY.to_string(),
        bytes(&(set.current.number, &set.history)),
    );
    binary.insert(PROGRESS_KEY.to_string(), bytes(&set.progress));
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": cm_name,
            "namespace": set.namespace,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
            "annotations": {HASH_ANNOTATION: set.current.hash},
        },
        "data": {set.manifest_key.clone(): set.current.manifest},
        "binaryData": binary,
    });
    let mut pp = PatchParams::apply(FIELD_MANAGER).force();
    pp.dry_run = dry_run;
    let patch = Patch::Apply(&cm);
    cluster
        .call(|| api.patch(&cm_name, &pp, &patch))
        .await
        .map_err(|e| {
            ClusterError::from_kube(format!("apply ConfigMap {}/{cm_name}", set.namespace), e)
        })?;
    Ok(())
}

/// What a mirror pod says about its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPod {
    pub pod: String,
    pub node: String,
    pub revision: Option<String>,
    pub ready: bool,
    pub phase: String,
    /// The `PodNeedUpgrade` condition's status, if set.
    pub need_upgrade: Option<String>,
    pub created: Option<k8s_openapi::jiff::Timestamp>,
}

/// `pod` as a mirror pod of static pod `name`: named `<name>-<node>` and not from the API.
pub fn mirror_of(pod: &Pod, name: &str) -> Option<MirrorPod> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let pod_name = pod.metadata.name.clone()?;
    if pod_name != format!("{name}-{node}") {
        return None;
    }
    let ann = pod.metadata.annotations.as_ref()?;
    if ann.get(CONFIG_SOURCE).is_none_or(|s| s == "api") {
        return None;
    }
    let conds = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    let cond = |t: &str| {
        conds
            .into_iter()
            .flatten()
            .find(|c| c.type_ == t)
            .map(|c| c.status.clone())
    };
    // A pod from a manifest yurtctl did not write has no revision annotation: its revision is
    // the hash of the template it shows (OpenYurt's "legacy match"; exact where the kubelet
    // adds no defaults to the mirror pod, as in yurtsim).
    let revision = ann.get(HASH_ANNOTATION).cloned().or_else(|| {
        let v = serde_json::to_value(pod).ok()?;
        Some(revision_hash(&template_from_mirror(&v, name)))
    });
    Some(MirrorPod {
        pod: pod_name,
        node,
        revision,
        ready: crate::cluster::wait::conditions::is_pod_ready(pod),
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
        need_upgrade: cond(NEED_UPGRADE),
        created: pod.metadata.creation_timestamp.clone().map(|t| t.0),
    })
}

pub const NEED_UPGRADE: &str = "PodNeedUpgrade";

/// The mirror pods of a static pod, read from one pod list.
#[derive(Clone, Debug, Default)]
pub struct MirrorPods {
    pub by_node: BTreeMap<String, MirrorPod>,
    /// The template the first of them (by node name) runs: where a rollout starts when no
    /// revision is stored yet. Only this one pod is kept whole; a thousand would cost tens of
    /// MiB.
    pub first_template: Option<serde_json::Value>,
}

/// The mirror pods of static pod `name` in `namespace`, by node.
pub async fn mirror_pods(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<MirrorPods, ClusterError> {
    let api: Api<Pod> = Api::namespaced(cluster.client().clone(), namespace);
    let mut first: Option<Pod> = None;
    let mirrors = cluster
        .list_map(&api, &ListParams::default(), |p| {
            let m = mirror_of(&p, name)?;
            if first
                .as_ref()
                .and_then(|f| f.spec.as_ref()?.node_name.as_ref())
                .is_none_or(|n| m.node < *n)
            {
                first = Some(p);
            }
            Some(m)
        })
        .await
        .map_err(|e| ClusterError::from_kube(format!("list pods in {namespace}"), e))?;
    let by_node = mirrors.into_iter().map(|m| (m.node.clone(), m)).collect();
    let first_template = first
        .and_then(|p| serde_json::to_value(p).ok())
        .map(|v| template_from_mirror(&v, name));
    Ok(MirrorPods {
        by_node,
        first_template,
    })
}

/// The mirror pods of static pod `name` as they change, from ONE watch on the pods of
/// `namespace` (mirror pods carry no label to select them by).
pub fn mirror_pod_changes(cluster: &Cluster, namespace: &str, name: &str) -> Changes<MirrorPod> {
    let api: Api<Pod> = Api::namespaced(cluster.client().clone(), namespace);
    let name = name.to_string();
    watch::changes(api, Default::default(), move |p| mirror_of(&p, &name))
}

/// The store ConfigMap of static pod `name` as it changes (a watch selecting it by name); read
/// each with [`from_configmap`].
pub fn store_changes(cluster: &Cluster, namespace: &str, name: &str) -> Changes<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    let config = kube::runtime::watcher::Config::default()
        .fields(&format!("metadata.name={}", configmap_name(name)));
    watch::changes(api, config, Some)
}

/// Sets `PodNeedUpgrade` on a mirror pod (pods/status, strategic merge by condition type, so
/// the kubelet's conditions stay), as OpenYurt's YurtStaticSet controller does: empty reason
/// and message for static pods; lastTransitionTime moves only when the status flips. With
/// `dry_run` the patch is sent with `dryRun=All`.
pub async fn set_need_upgrade(
    cluster: &Cluster,
    namespace: &str,
    pod: &MirrorPod,
    need: bool,
    dry_run: bool,
) -> Result<bool, ClusterError> {
    let status = if need { "True" } else { "False" };
    if pod.need_upgrade.as_deref() == Some(status) {
        return Ok(false);
    }
    let api: Api<Pod> = Api::namespaced(cluster.client().clone(), namespace);
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let patch = json!({"status": {"conditions": [
        {"type": NEED_UPGRADE, "status": status, "lastTransitionTime": now}
    ]}});
    let pp = PatchParams {
        dry_run,
        ..Default::default()
    };
    let patch = Patch::Strategic(&patch);
    cluster
        .call(|| api.patch_status(&pod.pod, &pp, &patch))
        .await
        .map_err(|e| {
            ClusterError::from_kube(
                format!("set {NEED_UPGRADE}={status} on pod {namespace}/{}", pod.pod),
                e,
            )
        })?;
    Ok(true)
}

/// YurtHub mirror pods in kube-system: (node, Ready).
pub async fn yurthub_mirror_pods(cluster: &Cluster) -> Result<Vec<(String, bool)>, ClusterError> {
    let api: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(cluster.client().clone(), super::SYSTEM_NAMESPACE);
    // the label of YurtHub's static-pod manifests (templates/*/yurthub-node.yaml.hbs)
    let lp = kube::api::ListParams::default().labels("k8s-app in (yurt-hub,yurt-hub-cloud)");
    let pods = cluster
        .call(|| api.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list Pods in kube-system", e))?;
    Ok(pods
        .items
        .into_iter()
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            let name = p.metadata.name.as_deref()?;
            let mirror = p
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
            let hub =
                name == format!("yurt-hub-{node}") || name == format!("yurt-hub-cloud-{node}");
            if !(mirror && hub) {
                return None;
            }
            Some((node, crate::cluster::wait::conditions::is_pod_ready(&p)))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> StaticSet {
        StaticSet {
            namespace: "default".into(),
            name: "nginx".into(),
            manifest_key: "nginx".into(),
            current: Revision {
                number: 1,
                hash: "a".into(),
                manifest: "A".into(),
            },
            history: Vec::new(),
            progress: RolloutProgress::default(),
            created: None,
        }
    }

    #[test]
    fn history_is_bounded_and_rollback_moves_a_revision_to_the_top() {
        let mut s = set();
        assert!(!s.set_current("a", "A".into()));
        assert!(s.set_current("b", "B".into()));
        assert_eq!((s.current.number, s.history.len()), (2, 1));
        assert!(s.set_current("a", "A".into()));
        assert_eq!(s.current.number, 3);
        assert_eq!(
            s.history
                .iter()
                .map(|r| r.hash.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        for i in 0..30 {
            s.set_current(&format!("h{i}"), String::new());
        }
        assert_eq!(s.history.len(), HISTORY_LIMIT);
        assert_eq!(s.history[0].hash, "h28");
    }

    #[test]
    fn saved_progress_keeps_its_words_and_skips_unknown_ones() {
        let saved = br#"{"target":"a","strategy":"ota","nodes":{"w1":"upgraded","w2":"timed-out","w3":"skipped-not-ready"}}"#;
        let p: RolloutProgress = serde_json::from_slice(saved).unwrap();
        assert_eq!(p.nodes["w2"], NodeResult::TimedOut);
        assert_eq!(bytes(&p).0, saved.to_vec(), "written back byte for byte");
        let newer =
            br#"{"target":"a","strategy":"ota","nodes":{"w1":"upgraded","w2":"some-new-word"}}"#;
        let p: RolloutProgress = serde_json::from_slice(newer).unwrap();
        assert_eq!(
            p.nodes.into_iter().collect::<Vec<_>>(),
            [("w1".to_string(), NodeResult::Upgraded)]
        );
    }

    #[test]
    fn lock_names_are_per_static_pod_and_fit_a_lease() {
        assert_eq!(lock_name("nginx"), "yurtctl-staticpod-nginx");
        assert_ne!(lock_name("nginx"), lock_name("yurt-hub"));
        let long = format!("{}.{}", "a".repeat(200), "b".repeat(52));
        let other = format!("{}.{}", "a".repeat(200), "c".repeat(52));
        let (l, o) = (lock_name(&long), lock_name(&other));
        assert!(l.len() <= 253, "{}", l.len());
        assert_ne!(l, o, "shortened names stay distinct");
        assert_eq!(l, lock_name(&long), "stable");
        assert!(l.chars().last().unwrap().is_ascii_alphanumeric());
    }
}
