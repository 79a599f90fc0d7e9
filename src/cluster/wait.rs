//! Named wait conditions (in the style of kube-runtime's `conditions`) and the one way yurtctl
//! waits for a set of objects: ONE watch per kind, never a poll per object.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};

use crate::cluster::{Cluster, ClusterError, LABEL_MANAGED_BY, MANAGED_BY};

/// What a waited-for object has to satisfy.
pub mod conditions {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeStatus, Pod};

    /// The node's `Ready` condition is `True`.
    pub fn is_node_ready(n: &Node) -> bool {
        n.status.as_ref().is_some_and(status_ready)
    }

    /// [`is_node_ready`] on a node's status alone.
    pub fn status_ready(s: &NodeStatus) -> bool {
        s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    }

    /// The pod's `Ready` condition is `True`.
    pub fn is_pod_ready(p: &Pod) -> bool {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }

    /// Its latest spec is rolled out and available, as `kubectl rollout status` decides it
    /// (kubernetes/kubernetes v1.36.2 staging/src/k8s.io/kubectl/pkg/polymorphichelpers/
    /// rollout_status.go, DeploymentStatusViewer): the controller saw the latest generation,
    /// every replica is updated, no old replica is left, every updated one is available; and
    /// at least one is. A Deployment whose old pods still run is not: after an upgrade they
    /// would answer its webhooks with the old release's code.
    pub fn is_deployment_available(d: &Deployment) -> bool {
        let Some(s) = d.status.as_ref() else {
            return false;
        };
        let generation = d.metadata.generation.unwrap_or(0);
        let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let updated = s.updated_replicas.unwrap_or(0);
        let available = s.available_replicas.unwrap_or(0);
        s.observed_generation.unwrap_or(0) >= generation
            && updated >= wanted
            && s.replicas.unwrap_or(0) <= updated
            && available >= updated
            && available >= 1
    }

    /// yurt-manager has rendered a YurtStaticSet's manifest into this ConfigMap: it carries
    /// the hash annotation the controller writes (openyurtio/openyurt@v1.6.1
    /// pkg/yurtmanager/controller/yurtstaticset, syncConfigMap).
    pub fn is_static_set_rendered(cm: &ConfigMap) -> bool {
        cm.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(crate::naming::revision::HASH_ANNOTATION))
    }
}

/// Waits on ONE watch of `api` (as `cfg` filters it) until every object named in
/// `names` satisfies `done` at the same time; returns the names that did not by `timeout`.
pub async fn all_named<K>(
    api: Api<K>,
    cfg: watcher::Config,
    names: &[String],
    timeout: Duration,
    done: impl Fn(&K) -> bool,
) -> Vec<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut state: BTreeMap<String, bool> = names.iter().map(|n| (n.clone(), false)).collect();
    if names.is_empty() {
        return Vec::new();
    }
    let mut stream = watcher(api, cfg)
        .default_backoff()
        .touched_objects()
        .boxed();
    let watch = async {
        while let Some(ev) = stream.next().await {
            // errors are retried by the watcher's back-off; the deadline bounds the wait
            let Ok(obj) = ev else { continue };
            let name = obj.meta().name.clone().unwrap_or_default();
            if let Some(v) = state.get_mut(&name) {
                *v = done(&obj);
            }
            if state.values().all(|v| *v) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, watch).await;
    state
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect()
}

/// Waits until every node in `names` is Ready; returns those that were not by the deadline.
pub async fn nodes_ready(cluster: &Cluster, names: &[String], timeout: Duration) -> Vec<String> {
    let api: Api<Node> = Api::all(cluster.client().clone());
    cluster.throttle().await;
    // one node: watch only it (a rolling window waits on each node as it ends, and listing
    // every node of a large cluster each time would cost the API server the whole list)
    let cfg = match names {
        [one] => watcher::Config::default().fields(&format!("metadata.name={one}")),
        _ => watcher::Config::default(),
    };
    all_named(api, cfg, names, timeout, conditions::is_node_ready).await
}

/// Waits until every named Deployment of ours in `namespace` is rolled out and available; a
/// timeout names
/// each missing one's pods and their state.
pub async fn deployments_available(
    cluster: &Cluster,
    namespace: &str,
    names: &[String],
    timeout: Duration,
) -> Result<(), ClusterError> {
    let api: Api<Deployment> = Api::namespaced(cluster.client().clone(), namespace);
    cluster.throttle().await;
    let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let missing = all_named(
        api,
        watcher::Config::default().labels(&selector),
        names,
        timeout,
        conditions::is_deployment_available,
    )
    .await;
    if missing.is_empty() {
        return Ok(());
    }
    let mut pods = Vec::new();
    for name in &missing {
        pods.extend(crate::cluster::diagnose::deployment_pods(cluster, namespace, name).await);
    }
    let why = if pods.is_empty() {
        String::new()
    } else {
        format!(" ({})", pods.join("; "))
    };
    Err(ClusterError::Timeout {
        what: format!(
            "Deployment(s) {} in {namespace} to become available{why}",
            missing.join(", ")
        ),
        after: timeout,
    })
}

/// Waits until every named ConfigMap in `namespace` satisfies `done`; returns those that did
/// not by the deadline.
pub async fn config_maps(
    cluster: &Cluster,
    namespace: &str,
    names: &[String],
    timeout: Duration,
    done: fn(&ConfigMap) -> bool,
) -> Vec<String> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
    cluster.throttle().await;
    all_named(api, watcher::Config::default(), names, timeout, done).await
}

/// Waits until no pod in `namespace` matches `selector` (the last ones' graceful termination
/// included).
pub async fn pods_gone(
    cluster: &Cluster,
    namespace: &str,
    selector: &str,
    timeout: Duration,
) -> Result<(), ClusterError> {
    use k8s_openapi::api::core::v1::Pod;
    let pods: Api<Pod> = Api::namespaced(cluster.client().clone(), namespace);
    let lp = ListParams::default().labels(selector);
    let start = tokio::time::Instant::now();
    loop {
        let list = cluster
            .call(|| pods.list_metadata(&lp))
            .await
            .map_err(|e| {
                ClusterError::from_kube(format!("list pods {selector} in {namespace}"), e)
            })?;
        if list.items.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(ClusterError::Timeout {
                what: format!("the pods {selector} in {namespace} to be gone"),
                after: timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
