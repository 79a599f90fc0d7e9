//! What `yurtctl diagnose` reads of the cluster beyond the snapshot: the bootstrap token convert
//! made, the certificate requests, yurt-manager and its webhook Service's endpoints, the
//! NodePools. Read-only; one request each.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams};

use super::{Cluster, ClusterError, SYSTEM_NAMESPACE};

/// A certificate request and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrState {
    pub name: String,
    pub username: String,
    pub groups: Vec<String>,
    pub signer: String,
    pub created: Option<Timestamp>,
    pub approved: bool,
    pub denied: bool,
    /// The signer wrote the certificate.
    pub issued: bool,
}

/// yurt-manager's Deployment: replicas wanted and available.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploymentState {
    pub replicas: i32,
    pub available: i32,
}

/// The bootstrap token's Secret: whether it exists and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenState {
    pub id: String,
    pub exists: bool,
    /// Its `expiration` (None: none, or not RFC 3339).
    pub expiration: Option<Timestamp>,
}

/// Everything diagnose reads besides the snapshot.
#[derive(Clone, Debug)]
pub struct Health {
    /// The token the journal names (None: the journal names none).
    pub token: Option<TokenState>,
    pub csrs: Vec<CsrState>,
    /// None: no Deployment `kube-system/<name>`.
    pub yurt_manager: Option<DeploymentState>,
    /// The yurt-manager leading (Err: its Leases could not be read).
    pub leader: Result<Option<String>, String>,
    /// Ready endpoints of the webhook Service (None: the Service has no EndpointSlice).
    pub webhook_endpoints: Option<usize>,
    /// NodePool names (None: the cluster serves no NodePools).
    pub node_pools: Option<BTreeSet<String>>,
}

/// The ready endpoints of Service `namespace/service`, from its EndpointSlices (an endpoint
/// without a `ready` condition counts as ready, as the API documents); None when it has no
/// EndpointSlice.
pub async fn ready_endpoints(
    cluster: &Cluster,
    namespace: &str,
    service: &str,
) -> Result<Option<usize>, ClusterError> {
    let slices: Api<EndpointSlice> = Api::namespaced(cluster.client().clone(), namespace);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    let slices = cluster
        .call(|| slices.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list EndpointSlices", e))?
        .items;
    Ok((!slices.is_empty()).then(|| {
        slices
            .iter()
            .flat_map(|s| &s.endpoints)
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
            .count()
    }))
}

/// Reads what diagnose needs: the token `token_id` names, yurt-manager's Deployment `manager`
/// and webhook Service `webhook_service`.
pub async fn read(
    cluster: &Cluster,
    token_id: Option<&str>,
    manager: &str,
    webhook_service: &str,
) -> Result<Health, ClusterError> {
    let client = cluster.client().clone();
    let token = match token_id {
        None => None,
        Some(id) => {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
            let name = format!("bootstrap-token-{id}");
            let s = cluster.call(|| secrets.get_opt(&name)).await.map_err(|e| {
                ClusterError::from_kube(format!("get Secret kube-system/{name}"), e)
            })?;
            let expiration = s
                .as_ref()
                .and_then(|s| s.data.as_ref()?.get("expiration"))
                .and_then(|b| std::str::from_utf8(&b.0).ok()?.parse().ok());
            Some(TokenState {
                id: id.to_owned(),
                exists: s.is_some(),
                expiration,
            })
        }
    };
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let lp = ListParams::default();
    let csrs = cluster
        .call(|| csrs.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list CertificateSigningRequests", e))?
        .items
        .into_iter()
        .map(|c| {
            let conditions = c
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            let has = |t: &str| {
                conditions
                    .iter()
                    .any(|x| x.type_ == t && x.status == "True")
            };
            CsrState {
                name: c.metadata.name.clone().unwrap_or_default(),
                username: c.spec.username.clone().unwrap_or_default(),
                groups: c.spec.groups.clone().unwrap_or_default(),
                signer: c.spec.signer_name.clone(),
                created: c.metadata.creation_timestamp.as_ref().map(|t| t.0),
                approved: has("Approved"),
                denied: has("Denied"),
                issued: c
                    .status
                    .as_ref()
                    .and_then(|s| s.certificate.as_ref())
                    .is_some_and(|b| !b.0.is_empty()),
            }
        })
        .collect();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let yurt_manager = cluster
        .call(|| deployments.get_opt(manager))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get Deployment kube-system/{manager}"), e))?
        .map(|d| DeploymentState {
            replicas: d.spec.and_then(|s| s.replicas).unwrap_or(1),
            available: d.status.and_then(|s| s.available_replicas).unwrap_or(0),
        });
    let leader = super::yurtstaticset::controller_leader(cluster)
        .await
        .map_err(|e| e.to_string());
    let webhook_endpoints = ready_endpoints(cluster, SYSTEM_NAMESPACE, webhook_service).await?;
    // at the storage version: with yurt-manager down no conversion webhook answers
    let node_pools = match super::crd::stored(cluster, "nodepools.apps.openyurt.io").await? {
        None => None,
        Some(ar) => {
            let pools: Api<DynamicObject> = Api::all_with(client, &ar);
            let lp = ListParams::default();
            match cluster.call(|| pools.list(&lp)).await {
                Ok(l) => Some(
                    l.items
                        .into_iter()
                        .filter_map(|p| p.metadata.name)
                        .collect(),
                ),
                Err(kube::Error::Api(e)) if e.code == 404 => None,
                Err(e) => return Err(ClusterError::from_kube("list NodePools", e)),
            }
        }
    };
    Ok(Health {
        token,
        csrs,
        yurt_manager,
        leader,
        webhook_endpoints,
        node_pools,
    })
}
