//! Whether the kubeconfig's user may do what a command needs: SelfSubjectAccessReviews,
//! asked concurrently, one finding per denied permission.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use crate::cluster::{Cluster, ClusterError};

/// One permission: (verb, group, resource, namespace).
pub type Access<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

/// Asks the server about every entry of `access`; returns one finding per denied permission,
/// worded as `not allowed to VERB RESOURCE.GROUP in NS: REASON`.
pub async fn denied(cluster: &Cluster, access: &[Access<'_>]) -> Result<Vec<String>, ClusterError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(cluster.client().clone());
    let checks = access.iter().map(|(verb, group, resource, ns)| {
        let api = api.clone();
        async move {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        verb: Some((*verb).into()),
                        group: Some((*group).into()),
                        resource: Some((*resource).into()),
                        namespace: ns.map(str::to_owned),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let pp = PostParams::default();
            let answer = cluster
                .call(|| api.create(&pp, &review))
                .await
                .map_err(|e| ClusterError::from_kube("create SelfSubjectAccessReview", e))?;
            let status = answer.status.unwrap_or_default();
            let what = if group.is_empty() {
                (*resource).to_string()
            } else {
                format!("{resource}.{group}")
            };
            let scope = ns.map(|n| format!(" in {n}")).unwrap_or_default();
            Ok::<_, ClusterError>((!status.allowed).then(|| {
                let why = status
                    .reason
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                format!("not allowed to {verb} {what}{scope}{why}")
            }))
        }
    });
    let answers = futures::future::try_join_all(checks).await?;
    Ok(answers.into_iter().flatten().collect())
}
