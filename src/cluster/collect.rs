//! What a bug report needs from the cluster (`diagnose --collect`): kube-system's events, the
//! logs of yurtctl's node Job pods and of yurt-manager's pods, and the journal. Read-only; the
//! caller redacts and archives.

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, ListParams, LogParams};

use super::journal::{JOURNAL_NAME, LABEL_JOURNAL};
use super::{Cluster, ClusterError, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE};

/// One file of the report: its path in the archive and its text.
pub type CollectedFile = (String, String);

/// yurt-manager's pods, as every profile with it labels them.
const YURT_MANAGER_PODS: &str = "app.kubernetes.io/name=yurt-manager";

/// Everything read, as files; a pod whose log cannot be read gets a file saying why.
pub async fn gather(cluster: &Cluster) -> Result<Vec<CollectedFile>, ClusterError> {
    let client = cluster.client().clone();
    let mut files = Vec::new();

    let events: Api<Event> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let lp = ListParams::default();
    let mut list = cluster
        .call(|| events.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list Events in kube-system", e))?
        .items;
    let when = |e: &Event| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or(e.event_time.as_ref().map(|t| t.0))
            .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
    };
    list.sort_by_key(when);
    let text: String = list
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}/{}: {}\n",
                when(e).map(|t| format!("{t:.0}")).unwrap_or_default(),
                e.type_.as_deref().unwrap_or_default(),
                e.reason.as_deref().unwrap_or_default(),
                e.involved_object.kind.as_deref().unwrap_or_default(),
                e.involved_object.name.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or_default()
            )
        })
        .collect();
    files.push(("events.txt".to_owned(), text));

    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    for (dir, selector) in [
        ("jobs", format!("{LABEL_MANAGED_BY}={MANAGED_BY}")),
        ("yurt-manager", YURT_MANAGER_PODS.to_owned()),
    ] {
        let lp = ListParams::default().labels(&selector);
        let list = cluster
            .call(|| pods.list(&lp))
            .await
            .map_err(|e| ClusterError::from_kube(format!("list pods {selector}"), e))?
            .items;
        for p in list {
            let name = p.metadata.name.unwrap_or_default();
            let lp = LogParams::default();
            let log = match cluster.call(|| pods.logs(&name, &lp)).await {
                Ok(l) => l,
                Err(e) => format!("(its log could not be read: {e})\n"),
            };
            files.push((format!("{dir}/{name}.log"), log));
        }
    }

    let cms: Api<ConfigMap> = Api::namespaced(client, SYSTEM_NAMESPACE);
    let lp = ListParams::default().labels(&format!("{LABEL_JOURNAL}=nodes"));
    let mut journal = cluster
        .call(|| cms.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list the journal's shards", e))?
        .items;
    if let Some(run) = cluster
        .call(|| cms.get_opt(JOURNAL_NAME))
        .await
        .map_err(|e| ClusterError::from_kube("get the journal", e))?
    {
        journal.insert(0, run);
    }
    for cm in journal {
        let name = cm.metadata.name.clone().unwrap_or_default();
        let data = serde_json::to_string_pretty(&cm.data.unwrap_or_default()).unwrap_or_default();
        files.push((format!("journal/{name}.json"), data));
    }
    Ok(files)
}
