//! What a node Job's pod says: the newest pod of a Job, the end of its log, and why a Job
//! failed (its pod's exit code and log, the Job's and pod's events).

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

pub(super) fn format_event(e: &Event) -> String {
    format!(
        "{} {}: {}",
        e.type_.as_deref().unwrap_or("Normal"),
        e.reason.as_deref().unwrap_or(""),
        e.message.as_deref().unwrap_or("").trim_end()
    )
}

/// The newest pod of the Job, its exit code and log tail, and the Job's and pod's events.
/// Best effort: what cannot be fetched is described in place.
pub(super) async fn diagnose(
    ctx: &Ctx<'_>,
    job: &Job,
    reason: String,
    message: String,
) -> JobFailure {
    let uid = uid_of(job);
    let mut f = JobFailure {
        reason,
        message,
        ..Default::default()
    };
    let pod = match newest_pod(ctx.cluster, &ctx.pods, uid).await {
        Ok(p) => p,
        Err(e) => {
            f.events.push(format!("(pods unavailable: {e})"));
            None
        }
    };
    let mut uids = vec![uid.to_string()];
    if let Some(p) = &pod {
        let pod_name = p.metadata.name.clone().unwrap_or_default();
        f.exit_code = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .find_map(|c| {
                c.state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .or_else(|| c.last_state.as_ref().and_then(|s| s.terminated.as_ref()))
                    .map(|t| t.exit_code)
            });
        f.waiting = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .find_map(|c| c.state.as_ref()?.waiting.as_ref())
            .map(|w| {
                let reason = w.reason.as_deref().unwrap_or("Waiting");
                match w.message.as_deref().filter(|m| !m.is_empty()) {
                    Some(m) => format!("{reason}: {m}"),
                    None => reason.to_owned(),
                }
            });
        let logp = LogParams {
            tail_lines: Some(ctx.opts.log_tail_lines),
            ..Default::default()
        };
        f.logs_tail = match ctx.cluster.call(|| ctx.pods.logs(&pod_name, &logp)).await {
            Ok(l) => l,
            Err(e) => format!("(logs unavailable: {e})"),
        };
        if let Some(u) = &p.metadata.uid {
            uids.push(u.clone());
        }
        f.pod = Some(pod_name);
    }
    let lists = uids.iter().map(|u| {
        let lp = ListParams::default().fields(&format!("involvedObject.uid={u}"));
        async move { ctx.cluster.call(|| ctx.events_api.list(&lp)).await }
    });
    let mut evs: Vec<Event> = Vec::new();
    match futures::stream::iter(lists)
        .buffered(2)
        .try_collect::<Vec<_>>()
        .await
    {
        Ok(ls) => evs.extend(ls.into_iter().flat_map(|l| l.items)),
        Err(e) => f.events.push(format!("(events unavailable: {e})")),
    }
    // the pod is gone (a Job past its deadline deletes it): its events outlive it, named by
    // the Job controller's `Created pod: NAME`
    if f.pod.is_none()
        && let Some(name) = evs
            .iter()
            .rev()
            .find_map(|e| e.message.as_deref()?.strip_prefix("Created pod: "))
            .map(str::to_owned)
    {
        let lp = ListParams::default().fields(&format!(
            "involvedObject.kind=Pod,involvedObject.name={name}"
        ));
        match ctx.cluster.call(|| ctx.events_api.list(&lp)).await {
            Ok(l) => evs.extend(l.items),
            Err(e) => f
                .events
                .push(format!("(events of pod {name} unavailable: {e})")),
        }
        f.pod = Some(name);
    }
    evs.sort_by_key(|e| {
        e.last_timestamp
            .clone()
            .or(e.first_timestamp.clone())
            .map(|t| t.0)
    });
    f.events.extend(evs.iter().map(format_event));
    // a pod the Job's deadline deleted shows no waiting container any more: its kubelet's
    // last pull failure says why it never started
    if f.waiting.is_none() {
        f.waiting = evs
            .iter()
            .rev()
            .filter_map(|e| e.message.as_deref())
            .find(|m| m.starts_with("Failed to pull image"))
            .map(|m| format!("ErrImagePull: {m}"));
    }
    f
}
