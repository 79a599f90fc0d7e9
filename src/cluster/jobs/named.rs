//! Jobs by name: the server dry run of a create, and deleting the Jobs a run left.

use super::*;

/// Creates the Job of `spec` with `dryRun=All` (admission, validation and RBAC answer; nothing
/// is stored). A Job of that name already there is a leftover of an earlier run, which the
/// real run adopts or replaces: accepted.
pub async fn create_dry_run(
    cluster: &Cluster,
    namespace: &str,
    spec: &NodeJob,
    per_job_timeout: Duration,
) -> Result<(), ClusterError> {
    let api: Api<Job> = Api::namespaced(cluster.client().clone(), namespace);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let job = spec.to_job(namespace, per_job_timeout);
    match cluster.call(|| api.create(&pp, &job)).await {
        Ok(_) => Ok(()),
        Err(e) if kube_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(ClusterError::from_kube(
            format!("create Job {namespace}/{}", spec.name()),
            e,
        )),
    }
}

/// Deletes the named Jobs (Foreground: their pods go first; `dry_run`: only asked) and, unless
/// a dry run, waits until each is gone. One row per Job: whether it was there to delete.
pub async fn delete_named(
    cluster: &Cluster,
    namespace: &str,
    names: &[String],
    timeout: Duration,
    dry_run: bool,
) -> Vec<(String, Result<crate::cluster::apply::Deleted, ClusterError>)> {
    use kube::runtime::wait::{await_condition, conditions};
    let api: Api<Job> = Api::namespaced(cluster.client().clone(), namespace);
    let dp = DeleteParams {
        dry_run,
        ..DeleteParams::foreground()
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let what = format!("Job {namespace}/{name}");
        let r = async {
            if dry_run {
                return delete_with(cluster, &api, name, &dp, &what).await;
            }
            let Some(job) = cluster
                .call(|| api.get_opt(name))
                .await
                .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?
            else {
                return Ok(crate::cluster::apply::Deleted::AlreadyGone);
            };
            let deleted = delete_with(cluster, &api, name, &dp, &what).await?;
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let gone = await_condition(api.clone(), name, conditions::is_deleted(&uid));
            match tokio::time::timeout(timeout, gone).await {
                Ok(Ok(_)) => Ok(deleted),
                Ok(Err(e)) => Err(ClusterError::InvalidObject {
                    object: what.clone(),
                    message: format!("watching its deletion: {e}"),
                }),
                Err(_) => Err(ClusterError::Timeout {
                    what: format!("{what} to be deleted"),
                    after: timeout,
                }),
            }
        }
        .await;
        let failed = r.is_err();
        out.push((what, r));
        if failed && !dry_run {
            break;
        }
    }
    out
}
