//! The journal (design §3): the profile and options of a conversion, the objects it created,
//! the bootstrap token it made, and per node and phase what happened, so convert can resume and
//! revert can undo exactly.
//!
//! Stored in two parts so that no object grows with the cluster past a fixed size:
//! - the run record, ConfigMap `kube-system/yurtctl-state`, key `state.json` (compact JSON,
//!   everything but the nodes). Saves are conditional on the resourceVersion read; on a
//!   conflict the server's copy is re-read and merged and the save retried.
//! - the node records, ConfigMaps `kube-system/yurtctl-state-nodes-<i>`, one data key per node
//!   (its phases, compact JSON), a node's shard chosen by a stable hash of its name among the
//!   run record's `nodeShards`. A save sends a merge patch of only the nodes that changed.
//!
//! Journal version 1 kept the nodes inside `state.json`; it is read, and the first save moves
//! its nodes to the shards (the shards are written before the run record that no longer lists
//! them, so a crash in between loses nothing).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};

use super::apply::Deleted;
use super::error::{ClusterError, kube_code};
use super::{Cluster, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE, now};

pub const JOURNAL_NAME: &str = "yurtctl-state";
pub const JOURNAL_KEY: &str = "state.json";
/// Label of the node-record shards (value `nodes`), besides the managed-by label.
pub const LABEL_JOURNAL: &str = "yurtctl.openyurt.io/journal";
/// Nodes per shard when the shards are laid out: at most about 4 phases of ~150 bytes each
/// per node, so a shard stays near 300 KB, far below the API server's 1 MiB object limit.
pub const NODES_PER_SHARD: usize = 500;

/// The ConfigMap holding shard `i` of the node records.
pub fn shard_name(i: u32) -> String {
    format!("{JOURNAL_NAME}-nodes-{i}")
}

/// The shard of `node` among `shards`: FNV-1a of its name, stable across runs and builds.
pub fn shard_of(node: &str, shards: u32) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in node.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % shards.max(1)
}

/// The journal's own failures; its API requests fail as [`ClusterError`].
#[derive(Clone, Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "could not save the journal kube-system/yurtctl-state: it kept changing under us ({attempts} attempts); is another yurtctl running without the lock?"
    )]
    Conflict { attempts: u32 },

    #[error(
        "the journal ConfigMap kube-system/yurtctl-state is unreadable: {message}; inspect it with `kubectl -n kube-system get configmap yurtctl-state -o yaml`, or delete it to start over"
    )]
    Corrupt { message: String },

    #[error(
        "the journal (ConfigMap kube-system/yurtctl-state and its node shards) could not be saved {saves} times in a row ({message}), so no further node was started; the node Jobs already started keep running, and each node started is in the journal: once the API server takes writes again, re-run the same command to finish (or revert)"
    )]
    Unsaved { saves: u32, message: String },
}

/// Schema version of `state.json`; bumped only with a migration. 2: nodes in shards.
pub const JOURNAL_VERSION: u32 = 2;

/// A Kubernetes object yurtctl created (for revert).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PhaseState {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
}

/// One phase on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseStatus {
    pub state: PhaseState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When this entry last changed; decides merges.
    pub updated_at: Timestamp,
}

/// The whole journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub version: u32,
    /// `convert` or `revert`, …: the command that wrote it last.
    #[serde(default)]
    pub command: String,
    pub profile: String,
    /// The options of the conversion, as given.
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub created_objects: Vec<ObjectRef>,
    /// Objects convert applied that existed before it ran: revert leaves them in place and
    /// only gives up the fields it applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted_objects: Vec<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// How many shards hold the node records (0: none laid out yet).
    #[serde(default)]
    pub node_shards: u32,
    /// node → phase id → status (version 1 stored them here; now the shards do).
    #[serde(default, skip_serializing)]
    pub nodes: BTreeMap<String, BTreeMap<String, PhaseStatus>>,
    pub updated_at: Timestamp,
    /// The run record's resourceVersion this copy is based on (None: not stored yet).
    #[serde(skip)]
    pub resource_version: Option<String>,
    /// Nodes changed since they were last saved.
    #[serde(skip)]
    dirty: BTreeSet<String>,
    /// The run record as last saved (to send it only when it changed).
    #[serde(skip)]
    saved_record: Option<String>,
}

impl Journal {
    pub fn new(command: impl Into<String>, profile: impl Into<String>) -> Self {
        Journal {
            version: JOURNAL_VERSION,
            command: command.into(),
            profile: profile.into(),
            options: Default::default(),
            created_objects: Vec::new(),
            adopted_objects: Vec::new(),
            token_id: None,
            node_shards: 0,
            nodes: BTreeMap::new(),
            updated_at: now(),
            resource_version: None,
            dirty: BTreeSet::new(),
            saved_record: None,
        }
    }

    /// Whether anything changed since the last save.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty() || self.saved_record.as_deref() != Some(&self.record_json())
    }

    /// The run record: everything but the nodes, compact. `updatedAt` is left out of the
    /// comparison by [`Journal::is_dirty`] through [`Journal::record_json`].
    fn record_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.remove("updatedAt");
        }
        v.to_string()
    }

    /// Records a phase's state on a node, stamping times.
    pub fn set_phase(&mut self, node: &str, phase: &str, state: PhaseState, error: Option<String>) {
        let t = now();
        self.dirty.insert(node.to_string());
        let entry = self
            .nodes
            .entry(node.to_string())
            .or_default()
            .entry(phase.to_string())
            .or_insert(PhaseStatus {
                state,
                started_at: None,
                finished_at: None,
                last_error: None,
                updated_at: t,
            });
        entry.state = state;
        entry.updated_at = t;
        match state {
            PhaseState::Running => {
                entry.started_at = Some(t);
                entry.finished_at = None;
            }
            PhaseState::Done | PhaseState::Failed | PhaseState::Skipped => {
                entry.finished_at = Some(t)
            }
            PhaseState::Pending => {}
        }
        if error.is_some() || state == PhaseState::Done {
            entry.last_error = error;
        }
    }

    pub fn phase(&self, node: &str, phase: &str) -> Option<&PhaseStatus> {
        self.nodes.get(node)?.get(phase)
    }

    /// Adds a created object once.
    pub fn record_created(&mut self, r: ObjectRef) {
        if !self.created_objects.contains(&r) {
            self.created_objects.push(r);
        }
    }

    /// Adds an object that existed before convert applied it, once (unless it is recorded as
    /// created by us).
    pub fn record_adopted(&mut self, r: ObjectRef) {
        if !self.created_objects.contains(&r) && !self.adopted_objects.contains(&r) {
            self.adopted_objects.push(r);
        }
    }

    /// Folds the server's copy into ours after a conflict: per node and phase the entry
    /// updated last wins; created objects are the union; our top-level fields win.
    pub fn merge_from(&mut self, server: &Journal) {
        for (node, phases) in &server.nodes {
            let mine = self.nodes.entry(node.clone()).or_default();
            for (phase, theirs) in phases {
                match mine.get(phase) {
                    Some(m) if m.updated_at >= theirs.updated_at => {}
                    _ => {
                        mine.insert(phase.clone(), theirs.clone());
                    }
                }
            }
        }
        for r in &server.created_objects {
            self.record_created(r.clone());
        }
        for r in &server.adopted_objects {
            self.record_adopted(r.clone());
        }
        if self.token_id.is_none() {
            self.token_id = server.token_id.clone();
        }
        if self.node_shards == 0 {
            self.node_shards = server.node_shards;
        }
        self.resource_version = server.resource_version.clone();
    }

    /// What the next save sends: a merge patch per shard with the nodes changed since the last
    /// save, and the run record when it changed. The nodes count as saved from here on;
    /// [`Journal::unsent`] puts them back when the save fails.
    pub fn take_delta(&mut self) -> Delta {
        if self.node_shards == 0 && !self.nodes.is_empty() {
            self.node_shards = self.nodes.len().div_ceil(NODES_PER_SHARD).max(1) as u32;
        }
        let nodes = std::mem::take(&mut self.dirty);
        let mut shards: BTreeMap<u32, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
        for node in &nodes {
            let value = match self.nodes.get(node) {
                Some(phases) => {
                    serde_json::Value::String(serde_json::to_string(phases).unwrap_or_default())
                }
                None => serde_json::Value::Null,
            };
            shards
                .entry(shard_of(node, self.node_shards))
                .or_default()
                .insert(node.clone(), value);
        }
        self.updated_at = now();
        let record = self.record_json();
        let record =
            (self.saved_record.as_deref() != Some(&record)).then(|| (record, self.clone_record()));
        Delta {
            nodes,
            shards: shards.into_iter().collect(),
            record,
        }
    }

    /// A save that failed: its nodes are changed again, its record unsaved.
    pub fn unsent(&mut self, delta: Delta) {
        self.dirty.extend(delta.nodes);
    }

    /// A save that went through: the run record as stored (a conflict may have merged the
    /// server's objects into it) becomes ours.
    pub fn sent(&mut self, sent: Sent) {
        if let Some((json, stored)) = sent.record {
            self.merge_from(&stored);
            self.saved_record = Some(json);
        }
    }

    /// Everything but the nodes.
    fn clone_record(&self) -> Journal {
        Journal {
            version: JOURNAL_VERSION,
            command: self.command.clone(),
            profile: self.profile.clone(),
            options: self.options.clone(),
            created_objects: self.created_objects.clone(),
            adopted_objects: self.adopted_objects.clone(),
            token_id: self.token_id.clone(),
            node_shards: self.node_shards,
            nodes: BTreeMap::new(),
            updated_at: self.updated_at,
            resource_version: self.resource_version.clone(),
            dirty: BTreeSet::new(),
            saved_record: None,
        }
    }
}

/// What one save sends (see [`Journal::take_delta`]).
#[derive(Debug)]
pub struct Delta {
    nodes: BTreeSet<String>,
    /// shard → node → its phases as JSON text (null: the node's record goes).
    shards: Vec<(u32, serde_json::Map<String, serde_json::Value>)>,
    /// The run record (its JSON without `updatedAt`, and the record itself), when it changed.
    record: Option<(String, Journal)>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty() && self.record.is_none()
    }
}

/// What a save stored.
#[derive(Debug)]
pub struct Sent {
    record: Option<(String, Journal)>,
}

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
            j.dirty = j.nodes.keys().cloned().collect();
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
        match self.send(&delta).await {
            Ok(sent) => {
                j.sent(sent);
                Ok(())
            }
            Err(e) => {
                j.unsent(delta);
                Err(e)
            }
        }
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
            field_manager: Some(super::FIELD_MANAGER.into()),
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
                field_manager: Some(super::FIELD_MANAGER.into()),
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
                field_manager: Some(super::FIELD_MANAGER.into()),
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
            field_manager: Some(super::FIELD_MANAGER.into()),
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
            let r = super::apply::delete_with(&self.cluster, &self.api, &name, &dp, &what).await;
            rows.push((what, r));
        }
        let what = self.what();
        let r = super::apply::delete_with(&self.cluster, &self.api, JOURNAL_NAME, &dp, &what).await;
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
            super::apply::delete_with(
                &self.cluster,
                &self.api,
                &name,
                &DeleteParams::default(),
                &what,
            )
            .await?;
        }
        super::apply::delete_with(
            &self.cluster,
            &self.api,
            JOURNAL_NAME,
            &DeleteParams::default(),
            &self.what(),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_the_newer_entry_per_node_and_phase() {
        let mut a = Journal::new("convert", "openyurt-v1.6");
        a.set_phase("n1", "nodes/convert", PhaseState::Done, None);
        let mut b = Journal::new("convert", "openyurt-v1.6");
        b.set_phase(
            "n2",
            "nodes/convert",
            PhaseState::Failed,
            Some("boom".into()),
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        b.set_phase(
            "n1",
            "nodes/convert",
            PhaseState::Failed,
            Some("later".into()),
        );
        b.record_created(ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("kube-system".into()),
            name: "x".into(),
        });
        b.resource_version = Some("42".into());
        a.merge_from(&b);
        assert_eq!(
            a.phase("n1", "nodes/convert").unwrap().state,
            PhaseState::Failed
        );
        assert_eq!(
            a.phase("n2", "nodes/convert")
                .unwrap()
                .last_error
                .as_deref(),
            Some("boom")
        );
        assert_eq!(a.created_objects.len(), 1);
        assert_eq!(a.resource_version.as_deref(), Some("42"));
    }

    #[test]
    fn the_run_record_round_trips_without_its_nodes() {
        let mut a = Journal::new("convert", "legacy-v0.6");
        a.options.insert("concurrency".into(), 5.into());
        a.set_phase("n1", "nodes/convert", PhaseState::Running, None);
        let s = serde_json::to_string(&a).unwrap();
        assert!(!s.contains("n1"), "the nodes live in the shards: {s}");
        assert!(!s.contains('\n'), "compact");
        let b: Journal = serde_json::from_str(&s).unwrap();
        assert_eq!((b.options, b.profile), (a.options, a.profile));
        assert!(b.nodes.is_empty());
    }

    #[test]
    fn a_version_1_journal_is_read_with_its_nodes() {
        let v1 = r#"{"version":1,"command":"convert","profile":"openyurt-v1.6","options":{},
            "createdObjects":[],"nodes":{"w1":{"nodes/edge":{"state":"done","updatedAt":"2026-01-01T00:00:00Z"}}},
            "updatedAt":"2026-01-01T00:00:00Z"}"#;
        let j: Journal = serde_json::from_str(v1).unwrap();
        assert_eq!(j.phase("w1", "nodes/edge").unwrap().state, PhaseState::Done);
        assert_eq!(j.node_shards, 0, "laid out on its first save");
    }

    #[test]
    fn a_save_sends_only_the_nodes_that_changed_and_the_record_only_when_it_changed() {
        let mut j = Journal::new("convert", "openyurt-v1.6");
        for i in 0..1200 {
            j.set_phase(&format!("w{i}"), "nodes/edge", PhaseState::Running, None);
        }
        let first = j.take_delta();
        assert_eq!(j.node_shards, 3, "1,200 nodes at {NODES_PER_SHARD} a shard");
        assert_eq!(first.nodes.len(), 1200);
        assert_eq!(first.shards.len(), 3);
        assert!(first.record.is_some(), "a new journal");
        j.sent(Sent {
            record: first.record,
        });
        assert!(!j.is_dirty());

        j.set_phase("w7", "nodes/edge", PhaseState::Done, None);
        let next = j.take_delta();
        assert_eq!(next.nodes, BTreeSet::from(["w7".to_string()]));
        assert_eq!(next.shards.len(), 1);
        let (shard, nodes) = &next.shards[0];
        assert_eq!(*shard, shard_of("w7", 3));
        let phases: BTreeMap<String, PhaseStatus> =
            serde_json::from_str(nodes["w7"].as_str().unwrap()).unwrap();
        assert_eq!(phases["nodes/edge"].state, PhaseState::Done);
        assert!(next.record.is_none(), "the run record did not change");

        // a failed save: the node is sent again with the next one
        j.unsent(next);
        j.set_phase("w8", "nodes/edge", PhaseState::Done, None);
        let again = j.take_delta();
        assert_eq!(again.nodes.len(), 2);
    }

    #[test]
    fn a_nodes_shard_is_stable_and_spread() {
        assert_eq!(shard_of("worker-1", 4), shard_of("worker-1", 4));
        assert_eq!(shard_of("anything", 1), 0);
        assert_eq!(shard_of("anything", 0), 0);
        let mut counts = [0usize; 10];
        for i in 0..10_000 {
            counts[shard_of(&format!("edge-{i:05}"), 10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }
}
