//! Loading and saving the journal: the run record, conditional on its resourceVersion, and the
//! node shards, merge-patched with only the nodes that changed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use super::super::apply::Deleted;
use super::super::error::{ClusterError, kube_code};
use super::super::{Cluster, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE};
use super::*;

/// Loads and saves the journal.
#[derive(Clone)]
pub struct JournalStore {
    cluster: Cluster,
    api: Api<ConfigMap>,
    namespace: String,
}

fn decode(cm: &ConfigMap) -> Result<Journal, ClusterError> {
    let raw = cm
        .data
        .as_ref()
        .and_then(|d| d.get(JOURNAL_KEY))
        .ok_or_else(|| JournalError::Corrupt {
            message: format!("it has no data key {JOURNAL_KEY}"),
        })?;
    let mut j: Journal = serde_json::from_str(raw).map_err(|e| JournalError::Corrupt {
        message: format!("{JOURNAL_KEY} is not a valid journal: {e}"),
    })?;
    if j.version > JOURNAL_VERSION {
        return Err(JournalError::Corrupt {
            message: format!(
                "it was written by a newer yurtctl (journal version {}, this one knows {JOURNAL_VERSION}); upgrade yurtctl",
                j.version
            ),
        }
        .into());
    }
    j.resource_version = cm.metadata.resource_version.clone();
    Ok(j)
}

impl JournalStore {
    pub fn new(cluster: &Cluster) -> Self {
        Self::in_namespace(cluster, SYSTEM_NAMESPACE)
    }

    pub fn in_namespace(cluster: &Cluster, namespace: &str) -> Self {
        JournalStore {
            cluster: cluster.clone(),
            api: Api::namespaced(cluster.client().clone(), namespace),
            namespace: namespace.to_string(),
        }
    }

    fn what(&self) -> String {
        format!("ConfigMap {}/{JOURNAL_NAME}", self.namespace)
    }

    /// The stored journal with its node records, or None when there is none.
    pub async fn load(&self) -> Result<Option<Journal>, ClusterError> {
        let Some(mut j) = self.load_record().await? else {
            return Ok(None);
        };
        if j.version < 2 {
            // version 1 kept the nodes in the record: the next save moves them to the shards
            let nodes: Vec<String> = j.nodes.keys().cloned().collect();
            for node in nodes {
                j.changed(&node);
            }
            return Ok(Some(j));
        }
        let lp = ListParams::default().labels(&format!("{LABEL_JOURNAL}=nodes"));
        let shards = self
            .cluster
            .list_map(&self.api, &lp, |cm: ConfigMap| cm.data)
            .await
            .map_err(|e| ClusterError::from_kube(format!("list {}", self.shards_what()), e))?;
        for data in shards {
            for (node, raw) in data {
                let phases = serde_json::from_str(&raw).map_err(|e| JournalError::Corrupt {
                    message: format!(
                        "the record of node {node} in {} is not valid: {e}",
                        self.shards_what()
                    ),
                })?;
                j.nodes.insert(node, phases);
            }
        }
        Ok(Some(j))
    }

    /// The run record alone (its `nodes` only when it is version 1).
    async fn load_record(&self) -> Result<Option<Journal>, ClusterError> {
        let cm = self
            .cluster
            .call(|| self.api.get_opt(JOURNAL_NAME))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {}", self.what()), e))?;
        let Some(mut j) = cm.as_ref().map(decode).transpose()? else {
            return Ok(None);
        };
        j.saved_record = (j.version >= 2).then(|| j.record_json());
        Ok(Some(j))
    }

    fn shards_what(&self) -> String {
        format!("ConfigMaps {}/{JOURNAL_NAME}-nodes-*", self.namespace)
    }

    fn config_map(&self, j: &Journal) -> Result<ConfigMap, ClusterError> {
        let json = serde_json::to_string(j).map_err(|e| JournalError::Corrupt {
            message: format!("cannot encode it: {e}"),
        })?;
        Ok(ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(JOURNAL_NAME.into()),
                namespace: Some(self.namespace.clone()),
                labels: Some([(LABEL_MANAGED_BY.to_string(), MANAGED_BY.to_string())].into()),
                resource_version: j.resource_version.clone(),
                ..Default::default()
            },
            data: Some([(JOURNAL_KEY.to_string(), json)].into()),
            ..Default::default()
        })
    }

    /// Saves what changed in `j` (see [`Journal::take_delta`]); on failure the changes stay
    /// to be saved again.
    pub async fn save(&self, j: &mut Journal) -> Result<(), ClusterError> {
        let delta = j.take_delta();
        let sent = self.send(&delta).await?;
        j.sent(&delta, sent);
        Ok(())
    }

    /// Sends one save: the node shards first, then the run record, so a record never points
    /// at node records that were not stored.
    pub async fn send(&self, delta: &Delta) -> Result<Sent, ClusterError> {
        for (shard, nodes) in &delta.shards {
            self.patch_shard(*shard, nodes).await?;
        }
        let record = match &delta.record {
            Some((json, record)) => {
                let mut record = record.clone();
                self.save_record(&mut record).await?;
                Some((json.clone(), record))
            }
            None => None,
        };
        Ok(Sent { record })
    }

    /// Merges `nodes` into shard `i`, creating it when it does not exist yet.
    async fn patch_shard(
        &self,
        i: u32,
        nodes: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), ClusterError> {
        let name = shard_name(i);
        let what = || format!("ConfigMap {}/{name}", self.namespace);
        let pp = PatchParams {
            field_manager: Some(super::super::FIELD_MANAGER.into()),
            ..Default::default()
        };
        let patch = Patch::Merge(serde_json::json!({ "data": nodes }));
        for _ in 0..3 {
            match self
                .cluster
                .call(|| self.api.patch(&name, &pp, &patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if kube_code(&e) == Some(404) => {}
                Err(e) => return Err(ClusterError::from_kube(format!("patch {}", what()), e)),
            }
            let data: BTreeMap<String, String> = nodes
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect();
            let cm = ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(self.namespace.clone()),
                    labels: Some(
                        [
                            (LABEL_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
                            (LABEL_JOURNAL.to_string(), "nodes".to_string()),
                        ]
                        .into(),
                    ),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            let create = PostParams {
                field_manager: Some(super::super::FIELD_MANAGER.into()),
                ..Default::default()
            };
            match self.cluster.call(|| self.api.create(&create, &cm)).await {
                Ok(_) => return Ok(()),
                // created meanwhile: patch it
                Err(e) if kube_code(&e) == Some(409) => {}
                Err(e) => return Err(ClusterError::from_kube(format!("create {}", what()), e)),
            }
        }
        Err(JournalError::Conflict { attempts: 3 }.into())
    }

    /// Saves the run record on the resourceVersion it was read at (creating it if needed); on
    /// a conflict, merges the server's copy into it and retries.
    async fn save_record(&self, j: &mut Journal) -> Result<(), ClusterError> {
        const ATTEMPTS: u32 = 8;
        for _ in 0..ATTEMPTS {
            let cm = self.config_map(j)?;
            let pp = PostParams {
                field_manager: Some(super::super::FIELD_MANAGER.into()),
                ..Default::default()
            };
            let res = match &j.resource_version {
                None => self.cluster.call(|| self.api.create(&pp, &cm)).await,
                Some(_) => {
                    self.cluster
                        .call(|| self.api.replace(JOURNAL_NAME, &pp, &cm))
                        .await
                }
            };
            match res {
                Ok(stored) => {
                    j.resource_version = stored.metadata.resource_version;
                    return Ok(());
                }
                // 409: AlreadyExists on create or a stale resourceVersion on replace.
                // 404: replaced something that was deleted meanwhile: create it again.
                Err(e) if matches!(kube_code(&e), Some(409) | Some(404)) => {
                    match self.load_record().await? {
                        Some(server) => j.merge_from(&server),
                        None => j.resource_version = None,
                    }
                }
                Err(e) => return Err(ClusterError::from_kube(format!("save {}", self.what()), e)),
            }
        }
        Err(JournalError::Conflict { attempts: ATTEMPTS }.into())
    }

    /// The update a save would send, with `dryRun=All`; `None` when there is no journal to
    /// update. Row: (`ConfigMap ns/name`, the server's answer).
    pub async fn dry_run_update(
        &self,
    ) -> Result<Option<(String, Result<(), ClusterError>)>, ClusterError> {
        let what = self.what();
        let Some(cm) = self
            .cluster
            .call(|| self.api.get_opt(JOURNAL_NAME))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?
        else {
            return Ok(None);
        };
        let pp = PostParams {
            dry_run: true,
            field_manager: Some(super::super::FIELD_MANAGER.into()),
        };
        let r = self
            .cluster
            .call(|| self.api.replace(JOURNAL_NAME, &pp, &cm))
            .await
            .map(drop)
            .map_err(|e| ClusterError::from_kube(format!("update {what}"), e));
        Ok(Some((what, r)))
    }

    /// The deletes [`JournalStore::delete`] would send, with `dryRun=All`: rows
    /// (`ConfigMap ns/name`, the server's answer), the node shards first.
    pub async fn dry_run_delete(
        &self,
    ) -> Result<Vec<(String, Result<Deleted, ClusterError>)>, ClusterError> {
        let dp = DeleteParams {
            dry_run: true,
            ..Default::default()
        };
        let mut rows = Vec::new();
        for name in self.shard_names().await? {
            let what = format!("ConfigMap {}/{name}", self.namespace);
            let r =
                super::super::apply::delete_with(&self.cluster, &self.api, &name, &dp, &what).await;
            rows.push((what, r));
        }
        let what = self.what();
        let r =
            super::super::apply::delete_with(&self.cluster, &self.api, JOURNAL_NAME, &dp, &what)
                .await;
        rows.push((what, r));
        Ok(rows)
    }

    /// The node shards that exist.
    async fn shard_names(&self) -> Result<Vec<String>, ClusterError> {
        let lp = ListParams::default().labels(&format!("{LABEL_JOURNAL}=nodes"));
        self.cluster
            .list_map(&self.api, &lp, |cm: ConfigMap| cm.metadata.name)
            .await
            .map_err(|e| ClusterError::from_kube(format!("list {}", self.shards_what()), e))
    }

    /// Deletes the journal (end of a complete revert): the node shards, then the run record;
    /// gone already is fine.
    pub async fn delete(&self) -> Result<Deleted, ClusterError> {
        for name in self.shard_names().await? {
            let what = format!("ConfigMap {}/{name}", self.namespace);
            super::super::apply::delete_with(
                &self.cluster,
                &self.api,
                &name,
                &DeleteParams::default(),
                &what,
            )
            .await?;
        }
        super::super::apply::delete_with(
            &self.cluster,
            &self.api,
            JOURNAL_NAME,
            &DeleteParams::default(),
            &self.what(),
        )
        .await
    }
}
