//! Nodes as the static-pod rollout sees them: name, labels (for `--selector`) and Ready.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use super::Cluster;
use super::error::ClusterError;
use super::watch::{self, Changes};

/// What a rollout needs to know about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `Ready=True`.
    pub ready: bool,
}

/// Whether `n` has condition `Ready=True`.
pub fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn state_of(n: Node) -> NodeState {
    let ready = is_ready(&n);
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
