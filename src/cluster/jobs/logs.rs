//! What a node Job's pod says: the newest pod of a Job, and the end of its log.

use super::*;

/// The newest pod of the Job with uid `uid`.
pub(super) async fn newest_pod(
    cluster: &Cluster,
    pods: &Api<Pod>,
    uid: &str,
) -> Result<Option<Pod>, kube::Error> {
    let lp = ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}"));
    let list = cluster.call(|| pods.list(&lp)).await?;
    Ok(list
        .items
        .into_iter()
        .max_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0)))
}

/// The last `lines` lines of the log of the newest pod of the Job with uid `uid`, when they
/// can be read (best effort: a swept Job's pod is gone).
pub(super) async fn tail(
    cluster: &Cluster,
    pods: &Api<Pod>,
    uid: &str,
    lines: i64,
) -> Option<String> {
    let pod = newest_pod(cluster, pods, uid).await.ok()??;
    let lp = LogParams {
        tail_lines: Some(lines),
        ..Default::default()
    };
    let name = pod.metadata.name.unwrap_or_default();
    cluster.call(|| pods.logs(&name, &lp)).await.ok()
}
