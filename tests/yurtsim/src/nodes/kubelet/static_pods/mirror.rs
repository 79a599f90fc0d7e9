//! A static pod's mirror pod, written where the node's kubelet writes (`NodeApi`): yurtsim's
//! own store on the sim tier, the real kube-apiserver as `system:node:NAME` on the real tier,
//! where the Node authorizer and NodeRestriction judge each call
//! (kubernetes/kubernetes@v1.37.2 plugin/pkg/admission/noderestriction/admission.go: a node
//! may create only mirror pods of its own, owned by its Node).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::{Ctx, DeleteOptions};
use crate::nodes::Cluster;
use crate::nodes::layout::Role;

use super::super::*;
use super::StaticManifest;

/// The mirror pod as the kubelet knows it: from its pod manager on the real tier (its pod
/// watch; kubelet.go `SyncPod` takes the mirror pod from there, pkg/kubelet/pod/
/// pod_manager.go), without a request.
pub(in crate::nodes::kubelet) fn mirror_of(
    shared: &Cluster,
    k: &NodeKubelet,
    ns: &str,
    name: &str,
) -> Option<Arc<Value>> {
    match &k.api {
        NodeApi::Sim => shared.api.get_opt("", "pods", ns, name),
        NodeApi::Real(api) => api.known_pod(ns, name),
    }
}

/// Creates the mirror pod of `m` (pkg/kubelet/pod/mirror_client.go `CreateMirrorPod`: owned
/// by the Node, whose uid it reads first, `getNodeUID`; an existing pod with the same
/// `config.mirror` hash counts as created). Whether the mirror pod is there now.
pub(in crate::nodes::kubelet) fn create_mirror(
    shared: &Cluster,
    k: &NodeKubelet,
    m: &StaticManifest,
) -> bool {
    let ns = m.namespace.as_str();
    let result = match &k.api {
        NodeApi::Sim => {
            let node_uid = shared
                .api
                .get_opt("", "nodes", "", &k.name)
                .map(|n| n["metadata"]["uid"].clone())
                .unwrap_or_default();
            let pods = shared.api.info("", "pods");
            shared
                .api
                .create(
                    &pods,
                    ns,
                    m.mirror_pod(&k.name, node_uid),
                    &Ctx::system("kubelet"),
                )
                .map(|_| ())
        }
        NodeApi::Real(api) => api.get("nodes", "", &k.name).and_then(|node| {
            let pod = m.mirror_pod(&k.name, node["metadata"]["uid"].clone());
            match api.create("pods", ns, &pod) {
                // mirror_client.go: AlreadyExists with the same hash is no error
                Err(e) if e.code == 409 => {
                    let same = api.get("pods", ns, &m.pod_name).is_ok_and(|p| {
                        p["metadata"]["annotations"]["kubernetes.io/config.mirror"] == json!(m.hash)
                    });
                    if same { Ok(()) } else { Err(e) }
                }
                r => r.map(|_| ()),
            }
        }),
    };
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(node = %k.name, pod = %m.pod_name, "mirror pod not created: {}", e.message);
            false
        }
    }
}

/// Deletes a mirror pod at once: it has no containers of its own to stop
/// (mirror_client.go `DeleteMirrorPod`: grace period 0, the uid as a precondition when the
/// kubelet knows which pod it means).
pub(in crate::nodes::kubelet) fn delete_mirror(
    shared: &Cluster,
    k: &NodeKubelet,
    ns: &str,
    name: &str,
    uid: Option<&str>,
) {
    match &k.api {
        NodeApi::Sim => {
            let pods = shared.api.info("", "pods");
            let opts = DeleteOptions {
                grace_period: Some(0),
                ..Default::default()
            };
            let _ = shared
                .api
                .delete(&pods, ns, name, &opts, &Ctx::system("kubelet"));
        }
        NodeApi::Real(api) => {
            if let Err(e) = api.delete_pod(ns, name, uid) {
                tracing::debug!(node = %k.name, pod = %name, "mirror pod not deleted: {}", e.message);
            }
        }
    }
}

/// Writes the mirror pod's status (pkg/kubelet/status/status_manager.go `syncPod`: the pod
/// read whole first, a node may not GET `pods/status`, then its status written).
pub(in crate::nodes::kubelet) fn write_mirror_status(
    shared: &Cluster,
    k: &NodeKubelet,
    ns: &str,
    name: &str,
    status: &Value,
) {
    let set = |o: &mut Value| {
        o["status"] = status.clone();
        true
    };
    match &k.api {
        NodeApi::Sim => {
            let pods = shared.api.info("", "pods");
            let _ = shared
                .api
                .modify(&pods, ns, name, Some("status"), "kubelet", &set);
        }
        NodeApi::Real(api) => {
            if let Err(e) = api.modify("pods", ns, name, Some("status"), &set) {
                tracing::debug!(node = %k.name, pod = %name, "mirror pod status: {}", e.message);
            }
        }
    }
}

/// The mirror pods on this node that the kubelet's pod manager holds (on the real tier, `api`)
/// whose static pod is gone: deleted by name (kubelet_pods.go `HandlePodCleanups`: "Remove
/// any orphaned mirror pods"). The sim tier's sync deletes a removed manifest's mirror pod
/// itself; this catches one whose deletion failed.
pub(crate) fn delete_orphaned_mirrors(k: &NodeKubelet, api: &dyn crate::nodes::real_api::RealApi) {
    let statics: Vec<(String, String)> = k
        .state
        .lock()
        .unwrap()
        .statics
        .values()
        .map(|e| (e.namespace.clone(), e.pod_name.clone()))
        .collect();
    for p in api.known_pods() {
        let mirror = p["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string();
        let (ns, name) = crate::api::store::key_of(&p);
        if mirror
            && p["spec"]["nodeName"] == json!(k.name)
            && p["metadata"]["deletionTimestamp"].is_null()
            && !statics.iter().any(|(n, m)| *n == ns && *m == name)
            && let Err(e) = api.delete_pod(&ns, &name, None)
        {
            tracing::debug!(node = %k.name, pod = %name, "orphaned mirror pod not deleted: {}", e.message);
        }
    }
}

/// A control-plane static pod of kubeadm's that stands for a process the real tier runs
/// itself (real/control_plane.rs: etcd, kube-apiserver, kube-controller-manager and
/// kube-scheduler, each its own process): it is mirrored, and reported running with the
/// cluster, but nothing is pulled or started for it. kubeadm labels those manifests
/// `component: NAME`, `tier: control-plane` (cmd/kubeadm/app/util/staticpod/utils.go
/// `ComponentPod`).
pub(in crate::nodes::kubelet) fn runs_outside(k: &NodeKubelet, manifest: &Value) -> bool {
    let labels = &manifest["metadata"]["labels"];
    matches!(k.api, NodeApi::Real(_))
        && k.role == Role::ControlPlane
        && labels["tier"] == json!("control-plane")
        && matches!(
            labels["component"].as_str(),
            Some("etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler")
        )
}
