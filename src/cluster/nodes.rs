//! Nodes: the labels and annotations yurtctl puts on them (server-side apply with our field
//! manager, so giving them up again leaves every value another manager owns), and nodes as
//! a static-pod rollout sees them (name, labels for `--selector`, Ready).

use std::collections::BTreeMap;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Node;
use kube::Resource;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::watch::{self, Changes};
use crate::cluster::{Cluster, ClusterError, FIELD_MANAGER, SYSTEM_NAMESPACE};

/// Whose identity yurtctl's node label writes carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelWriter {
    /// The kubeconfig's user.
    Caller,
    /// The kubeconfig's user impersonating this user (`Impersonate-User`, as `kubectl --as`).
    As(String),
}

/// Who writes yurtctl's node labels. yurt-manager v1.7's node webhook lets only its
/// node-conversion controller (and nodes) change `openyurt.io/is-edge-worker`
/// (openyurtio/openyurt@v1.7.0 pkg/yurtmanager/webhook/node/v1/node_validation.go), so once that
/// controller's ServiceAccount `service_account` (in kube-system) may patch nodes, yurtctl
/// writes as it; before (the controller and its webhook not installed yet), or when the caller
/// may not impersonate it, as the caller.
pub async fn label_writer(
    cluster: &Cluster,
    service_account: Option<&str>,
) -> Result<LabelWriter, ClusterError> {
    let Some(sa) = service_account else {
        return Ok(LabelWriter::Caller);
    };
    let user = format!("system:serviceaccount:{SYSTEM_NAMESPACE}:{sa}");
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("patch".into()),
                resource: Some("nodes".into()),
                group: Some(String::new()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let body = serde_json::to_vec(&review).map_err(|e| ClusterError::InvalidObject {
        object: "SelfSubjectAccessReview".into(),
        message: e.to_string(),
    })?;
    let url = SelfSubjectAccessReview::url_path(&(), None);
    let answer = cluster
        .call(|| {
            let req =
                kube::core::Request::new(url.clone()).create(&PostParams::default(), body.clone());
            let user = user.clone();
            async move {
                let req = impersonating(req.map_err(kube::Error::BuildRequest)?, &user)?;
                cluster
                    .client()
                    .request::<SelfSubjectAccessReview>(req)
                    .await
            }
        })
        .await;
    match answer {
        Ok(r) => Ok(if r.status.is_some_and(|s| s.allowed) {
            LabelWriter::As(user)
        } else {
            LabelWriter::Caller
        }),
        Err(kube::Error::Api(s)) if s.code == 403 => {
            tracing::warn!(
                "cannot impersonate {user} ({}), so node labels are written as the kubeconfig's user; once yurt-manager runs its node webhook refuses that: allow `impersonate` on serviceaccounts/{sa} in {SYSTEM_NAMESPACE}",
                s.message
            );
            Ok(LabelWriter::Caller)
        }
        Err(e) => Err(ClusterError::from_kube(
            format!("create SelfSubjectAccessReview as {user}"),
            e,
        )),
    }
}

fn impersonating(
    mut req: http::Request<Vec<u8>>,
    user: &str,
) -> Result<http::Request<Vec<u8>>, kube::Error> {
    let value = user.parse().map_err(|e| {
        kube::Error::BuildRequest(kube::core::request::Error::Validation(format!(
            "{user:?}: {e}"
        )))
    })?;
    req.headers_mut().insert("Impersonate-User", value);
    Ok(req)
}

/// Applies exactly these labels and annotations to node `name` as ours (`dry_run`: sent with
/// `dryRun=All`, nothing stored).
pub async fn apply_metadata(
    cluster: &Cluster,
    writer: &LabelWriter,
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let mut meta = json!({"name": name, "labels": labels});
    if !annotations.is_empty() {
        meta["annotations"] = json!(annotations);
    }
    apply(cluster, writer, name, meta, dry_run)
        .await
        .map_err(|e| ClusterError::from_kube(format!("label Node {name}{}", writer.shown()), e))
}

/// Gives up every label and annotation yurtctl applied to node `name`: an apply by our field
/// manager that names no field; values other managers own stay.
pub async fn give_up_metadata(
    cluster: &Cluster,
    writer: &LabelWriter,
    name: &str,
    dry_run: bool,
) -> Result<(), ClusterError> {
    apply(cluster, writer, name, json!({"name": name}), dry_run)
        .await
        .map_err(|e| ClusterError::from_kube(format!("unlabel Node {name}{}", writer.shown()), e))
}

impl LabelWriter {
    /// " (as USER)" for messages, when impersonating.
    fn shown(&self) -> String {
        match self {
            LabelWriter::Caller => String::new(),
            LabelWriter::As(u) => format!(" (as {u})"),
        }
    }
}

async fn apply(
    cluster: &Cluster,
    writer: &LabelWriter,
    name: &str,
    meta: serde_json::Value,
    dry_run: bool,
) -> Result<(), kube::Error> {
    let mut pp = PatchParams::apply(FIELD_MANAGER);
    pp.dry_run = dry_run;
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": meta});
    let patch = Patch::Apply(&body);
    match writer {
        LabelWriter::Caller => {
            let nodes: Api<Node> = Api::all(cluster.client().clone());
            cluster
                .call(|| nodes.patch(name, &pp, &patch))
                .await
                .map(drop)
        }
        LabelWriter::As(user) => {
            let url = Node::url_path(&(), None);
            cluster
                .call(|| {
                    let req = kube::core::Request::new(url.clone()).patch(name, &pp, &patch);
                    async move {
                        let req = impersonating(req.map_err(kube::Error::BuildRequest)?, user)?;
                        cluster.client().request::<Node>(req).await
                    }
                })
                .await
                .map(drop)
        }
    }
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
