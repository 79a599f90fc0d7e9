//! `ClusterSnapshot`: what the planner needs to know about the cluster, read with a handful of
//! concurrent list/get calls (no per-node requests).

use std::collections::BTreeMap;

use futures::future::try_join_all;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde::Serialize;

use super::error::ClusterError;
use super::journal::{Journal, JournalStore};
use super::lock::{LockHolder, holder};
use super::{Cluster, LABEL_ACTION, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE};

/// A taint, flattened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaintInfo {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

/// One node as the planner sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub taints: Vec<TaintInfo>,
    /// `Ready=True`.
    pub ready: bool,
    /// From `node-role.kubernetes.io/<role>` labels, sorted.
    pub roles: Vec<String>,
    pub internal_ip: Option<String>,
    pub kubelet_version: String,
    /// A `kube-controller-manager-<node>` mirror pod (static pod from a file) runs here.
    pub kcm_static_pod: bool,
    /// That pod's `--controllers` value, when it has the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcm_controllers: Option<String>,
    /// yurt-manager's node-conversion controller says it failed on this node (its
    /// `YurtNodeConversionFailed` condition True): `reason: message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_conversion_failed: Option<String>,
    /// `spec.providerID` (kind: `kind://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
}

impl NodeInfo {
    /// Whether the node's kube-controller-manager static pod runs the nodelifecycle controller,
    /// as its `--controllers` says (`*` runs it; `-nodelifecycle` turns it off); None without
    /// such a pod or without the flag (kubeadm always writes it, and so does yurtctl's edit).
    pub fn kcm_runs_nodelifecycle(&self) -> Option<bool> {
        let c = self
            .kcm_controllers
            .as_deref()
            .filter(|_| self.kcm_static_pod)?;
        Some(!c.split(',').any(|x| x.trim() == "-nodelifecycle"))
    }

    pub fn is_control_plane(&self) -> bool {
        self.roles
            .iter()
            .any(|r| r == "control-plane" || r == "master")
    }
}

/// A yurtctl-managed object found in the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedObject {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// A Job with our labels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobInfo {
    pub name: String,
    pub action: Option<String>,
    pub node: Option<String>,
    /// `Complete`, `Failed`, or `Running`.
    pub state: String,
}

/// Everything read up front.
#[derive(Clone, Debug)]
pub struct ClusterSnapshot {
    /// `gitVersion`, e.g. `v1.33.1`.
    pub server_version: String,
    pub server_major: String,
    pub server_minor: String,
    pub nodes: Vec<NodeInfo>,
    pub managed_objects: Vec<ManagedObject>,
    pub jobs: Vec<JobInfo>,
    pub lock: Option<LockHolder>,
    pub journal: Option<Journal>,
    /// The type of each Secret `--image-pull-secret` names (None: it does not exist), read by
    /// the run that decides (`bootstrap::secret_types`); a name not in the map was not read
    /// (the look before the lock), so nothing is said about it yet.
    pub pull_secrets: BTreeMap<String, Option<String>>,
}

/// What to look at.
#[derive(Clone, Debug)]
pub struct SnapshotOptions {
    /// Namespace of Jobs, the lock and the journal.
    pub namespace: String,
    /// Kinds listed (label `app.kubernetes.io/managed-by=yurtctl`, all namespaces) for
    /// objects yurtctl manages. One list call each; kinds the server does not serve are skipped.
    pub managed_kinds: Vec<GroupVersionKind>,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        let g = |g: &str, v: &str, k: &str| GroupVersionKind::gvk(g, v, k);
        SnapshotOptions {
            namespace: SYSTEM_NAMESPACE.into(),
            managed_kinds: vec![
                g("", "v1", "ConfigMap"),
                g("", "v1", "Secret"),
                g("", "v1", "ServiceAccount"),
                g("", "v1", "Service"),
                g("apps", "v1", "Deployment"),
                g("apps", "v1", "DaemonSet"),
                g("rbac.authorization.k8s.io", "v1", "ClusterRole"),
                g("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
                g("rbac.authorization.k8s.io", "v1", "Role"),
                g("rbac.authorization.k8s.io", "v1", "RoleBinding"),
                // every other kind a profile applies, so a revert without the journal finds
                // them too (templates/*/: CRDs, webhooks, and the custom resources of ours)
                g("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
                g(
                    "admissionregistration.k8s.io",
                    "v1",
                    "MutatingWebhookConfiguration",
                ),
                g(
                    "admissionregistration.k8s.io",
                    "v1",
                    "ValidatingWebhookConfiguration",
                ),
                // custom resources are listed at their CRD's storage version, whatever the
                // version here: another would need the conversion webhook, which is down
                // exactly when yurt-manager is (NodePool: v1beta2 from OpenYurt v1.7)
                g("apps.openyurt.io", "v1beta2", "NodePool"),
                g("apps.openyurt.io", "v1alpha1", "YurtStaticSet"),
            ],
        }
    }
}

/// A kind of a CRD's (OpenYurt's), not one the API server has built in.
pub fn is_custom(gvk: &GroupVersionKind) -> bool {
    gvk.group.ends_with("openyurt.io")
}

/// The planner's view of `n`; `kcm_static_pod` is filled in from the pod list afterwards.
fn node_info(n: Node) -> NodeInfo {
    let name = n.metadata.name.clone().unwrap_or_default();
    let labels = n.metadata.labels.clone().unwrap_or_default();
    let mut roles: Vec<String> = labels
        .keys()
        .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect();
    roles.sort();
    let spec = n.spec.unwrap_or_default();
    let status = n.status.unwrap_or_default();
    // openyurtio/openyurt@v1.7.0 pkg/yurtmanager/controller/yurtnodeconversion
    // (conversionConditionType, newConversionCondition: True only for a failure)
    let upstream_conversion_failed = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "YurtNodeConversionFailed" && c.status == "True")
        .map(|c| {
            format!(
                "{}: {}",
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default()
            )
        });
    NodeInfo {
        kcm_static_pod: false,
        kcm_controllers: None,
        upstream_conversion_failed,
        provider_id: spec.provider_id.clone(),
        name,
        labels,
        annotations: n.metadata.annotations.unwrap_or_default(),
        taints: spec
            .taints
            .unwrap_or_default()
            .into_iter()
            .map(|t| TaintInfo {
                key: t.key,
                value: t.value,
                effect: t.effect,
            })
            .collect(),
        ready: crate::cluster::wait::conditions::status_ready(&status),
        roles,
        internal_ip: status
            .addresses
            .iter()
            .flatten()
            .find(|a| a.type_ == "InternalIP")
            .map(|a| a.address.clone()),
        kubelet_version: status
            .node_info
            .map(|i| i.kubelet_version)
            .unwrap_or_default(),
    }
}

fn job_info(j: Job) -> JobInfo {
    let labels = j.metadata.labels.clone().unwrap_or_default();
    let conds = j
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let state = ["Complete", "Failed"]
        .into_iter()
        .find(|t| conds.iter().any(|c| c.type_ == *t && c.status == "True"))
        .unwrap_or("Running");
    JobInfo {
        name: j.metadata.name.unwrap_or_default(),
        action: labels.get(LABEL_ACTION).cloned(),
        node: j
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::ANNOTATION_NODE))
            .or_else(|| labels.get(super::LABEL_NODE))
            .cloned(),
        state: state.to_string(),
    }
}

/// Reads the snapshot: /version (unless the handle already knows it), nodes, control-plane
/// mirror pods, our Jobs, the lock, the journal and one list per managed kind — concurrently.
pub async fn snapshot(
    cluster: &Cluster,
    opts: &SnapshotOptions,
) -> Result<ClusterSnapshot, ClusterError> {
    let client = cluster.client().clone();
    let managed = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let version = async {
        match cluster.version() {
            Some(v) => Ok(v.clone()),
            None => cluster
                .call(|| client.apiserver_version())
                .await
                .map_err(|e| ClusterError::from_kube("GET /version", e)),
        }
    };
    let nodes_api: Api<Node> = Api::all(client.clone());
    let nodes = async {
        cluster
            .list_map(&nodes_api, &ListParams::default(), |n| Some(node_info(n)))
            .await
            .map_err(|e| ClusterError::from_kube("list Nodes", e))
    };
    // kubeadm, kind and minikube label their static pods `component=<name>`.
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let kcm = async {
        let lp = ListParams::default().labels("component=kube-controller-manager");
        cluster.call(|| pods_api.list(&lp)).await.map_err(|e| {
            ClusterError::from_kube("list kube-controller-manager pods in kube-system", e)
        })
    };
    let jobs_api: Api<Job> = Api::namespaced(client.clone(), &opts.namespace);
    let jobs = async {
        let lp = ListParams::default().labels(&managed);
        cluster
            .call(|| jobs_api.list(&lp))
            .await
            .map_err(|e| ClusterError::from_kube(format!("list Jobs in {}", opts.namespace), e))
    };
    let lock = holder(cluster, &opts.namespace);
    let store = JournalStore::in_namespace(cluster, &opts.namespace);
    let journal = store.load();
    let lists = try_join_all(opts.managed_kinds.iter().map(|gvk| {
        let client = client.clone();
        let managed = managed.clone();
        async move {
            let mut ar = ApiResource::from_gvk(gvk);
            if is_custom(gvk) {
                match super::crd::stored(cluster, &format!("{}.{}", ar.plural, ar.group)).await? {
                    Some(stored) => ar = stored,
                    None => return Ok(Vec::new()),
                }
            }
            // The plural of our built-in kinds is the lower-case kind plus "s".
            let api: Api<DynamicObject> = Api::all_with(client, &ar);
            let lp = ListParams::default().labels(&managed);
            match cluster.call(|| api.list(&lp)).await {
                Ok(l) => Ok(l
                    .items
                    .into_iter()
                    .map(|o| ManagedObject {
                        api_version: ar.api_version.clone(),
                        kind: ar.kind.clone(),
                        namespace: o.metadata.namespace,
                        name: o.metadata.name.unwrap_or_default(),
                    })
                    .collect::<Vec<_>>()),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(Vec::new()),
                Err(e) => Err(ClusterError::from_kube(format!("list {}", ar.kind), e)),
            }
        }
    }));
    let (version, mut nodes, kcm, jobs, lock, journal, lists) =
        futures::try_join!(version, nodes, kcm, jobs, lock, journal, lists)?;

    // node → its kube-controller-manager's --controllers, if it has the flag
    let kcm_nodes: std::collections::HashMap<String, Option<String>> = kcm
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/config.source"))
                .is_some_and(|s| s == "file")
        })
        .filter_map(|p| {
            let spec = p.spec.as_ref()?;
            let node = spec.node_name.clone()?;
            let name = p.metadata.name.as_deref()?;
            let controllers = spec.containers.first().and_then(|c| {
                c.command
                    .iter()
                    .flatten()
                    .chain(c.args.iter().flatten())
                    .find_map(|a| a.strip_prefix("--controllers="))
                    .map(str::to_owned)
            });
            (name == format!("kube-controller-manager-{node}")).then_some((node, controllers))
        })
        .collect();
    for n in &mut nodes {
        if let Some(c) = kcm_nodes.get(&n.name) {
            n.kcm_static_pod = true;
            n.kcm_controllers = c.clone();
        }
    }
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut managed_objects: Vec<ManagedObject> = lists.into_iter().flatten().collect();
    // one object served at two versions is one object: the first version listed stays
    let mut seen = std::collections::HashSet::new();
    managed_objects.retain(|o| {
        let group = o
            .api_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g)
            .to_owned();
        seen.insert((group, o.kind.clone(), o.namespace.clone(), o.name.clone()))
    });
    managed_objects
        .sort_by(|a, b| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)));
    Ok(ClusterSnapshot {
        server_version: version.git_version,
        server_major: version.major,
        server_minor: version.minor,
        nodes,
        managed_objects,
        jobs: jobs.items.into_iter().map(job_info).collect(),
        lock,
        journal,
        pull_secrets: BTreeMap::new(),
    })
}
