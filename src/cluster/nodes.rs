//! Nodes: the labels and annotations yurtctl puts on them (server-side apply with our field
//! manager, so giving them up again leaves every value another manager owns), and nodes as
//! a static-pod rollout sees them (name, labels for `--selector`, Ready).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use super::watch::{self, Changes};
use crate::cluster::{Cluster, ClusterError, FIELD_MANAGER};

/// Applies exactly these labels and annotations to node `name` as ours (`dry_run`: sent with
/// `dryRun=All`, nothing stored).
pub async fn apply_metadata(
    cluster: &Cluster,
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let mut meta = json!({"name": name, "labels": labels});
    if !annotations.is_empty() {
        meta["annotations"] = json!(annotations);
    }
    apply(cluster, name, meta, dry_run)
        .await
        .map_err(|e| ClusterError::from_kube(format!("label Node {name}"), e))
}

/// Gives up every label and annotation yurtctl applied to node `name`: an apply by our field
/// manager that names no field; values other managers own stay.
pub async fn give_up_metadata(
    cluster: &Cluster,
    name: &str,
    dry_run: bool,
) -> Result<(), ClusterError> {
    apply(cluster, name, json!({"name": name}), dry_run)
        .await
        .map_err(|e| ClusterError::from_kube(format!("unlabel Node {name}"), e))
}

async fn apply(
    cluster: &Cluster,
    name: &str,
    meta: serde_json::Value,
    dry_run: bool,
) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(cluster.client().clone());
    let mut pp = PatchParams::apply(FIELD_MANAGER);
    pp.dry_run = dry_run;
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": meta});
    let patch = Patch::Apply(&body);
    cluster
        .call(|| nodes.patch(name, &pp, &patch))
        .await
        .map(drop)
}

/// What a rollout needs to know about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `Ready=True`.
    pub ready: bool,
}

fn state_of(n: Node) -> NodeState {
    let ready = super::wait::conditions::is_node_ready(&n);
    NodeState {
        name: n.metadata.name.unwrap_or_default(),
        labels: n.metadata.labels.unwrap_or_default(),
        ready,
    }
}

/// Every node, from one (paged) list.
pub async fn list_node_states(cluster: &Cluster) -> Result<Vec<NodeState>, ClusterError> {
    let api: Api<Node> = Api::all(cluster.client().clone());
    cluster
        .list_map(&api, &ListParams::default(), |n| Some(state_of(n)))
        .await
        .map_err(|e| ClusterError::from_kube("list nodes", e))
}

/// Every node's state as it changes, from ONE watch on Nodes.
pub fn node_state_changes(cluster: &Cluster) -> Changes<NodeState> {
    let api: Api<Node> = Api::all(cluster.client().clone());
    watch::changes(api, Default::default(), |n| Some(state_of(n)))
}
