//! The labels and annotations yurtctl puts on nodes: server-side apply with our field
//! manager, so giving them up again leaves every value another manager owns.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

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
