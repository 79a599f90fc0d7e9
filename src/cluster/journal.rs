//! The journal: ConfigMap `kube-system/yurtctl-state`, key `state.json` (design §3).
//!
//! It records the profile and options of a conversion, the objects it created, the bootstrap
//! token it made, and per node and phase what happened, so convert can resume and revert can
//! undo exactly. Saves are conditional on the resourceVersion read; on a conflict the server's
//! copy is re-read and merged (per node and phase, the newer entry wins) and the save retried.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};
use serde::{Deserialize, Serialize};

use super::apply::Deleted;
use super::error::{ClusterError, kube_code};
use super::{Cluster, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE, now};

pub const JOURNAL_NAME: &str = "yurtctl-state";
pub const JOURNAL_KEY: &str = "state.json";

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
}

/// Schema version of `state.json`; bumped only with a migration.
pub const JOURNAL_VERSION: u32 = 1;

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
    /// node → phase id → status.
    #[serde(default)]
    pub nodes: BTreeMap<String, BTreeMap<String, PhaseStatus>>,
    pub updated_at: Timestamp,
    /// The ConfigMap's resourceVersion this copy is based on (None: not stored yet).
    #[serde(skip)]
    pub resource_version: Option<String>,
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
            nodes: BTreeMap::new(),
            updated_at: now(),
            resource_version: None,
        }
    }

    /// Records a phase's state on a node, stamping times.
    pub fn set_phase(&mut self, node: &str, phase: &str, state: PhaseState, error: Option<String>) {
        let t = now();
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
        self.resource_version = server.resource_version.clone();
    }
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

    /// The stored journal, or None when there is none.
    pub async fn load(&self) -> Result<Option<Journal>, ClusterError> {
        let cm = self
            .cluster
            .call(|| self.api.get_opt(JOURNAL_NAME))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {}", self.what()), e))?;
        cm.as_ref().map(decode).transpose()
    }

    fn config_map(&self, j: &Journal) -> Result<ConfigMap, ClusterError> {
        let json = serde_json::to_string_pretty(j).map_err(|e| JournalError::Corrupt {
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

    /// Saves `j` (creating the ConfigMap if needed) on the resourceVersion it was read at;
    /// on a conflict, merges the server's copy into `j` and retries. `j.resource_version` is
    /// updated to what was stored.
    pub async fn save(&self, j: &mut Journal) -> Result<(), ClusterError> {
        const ATTEMPTS: u32 = 8;
        for _ in 0..ATTEMPTS {
            j.updated_at = now();
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
                    match self.load().await? {
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

    /// The delete [`JournalStore::delete`] would send, with `dryRun=All`.
    pub async fn dry_run_delete(&self) -> (String, Result<Deleted, ClusterError>) {
        let what = self.what();
        let dp = DeleteParams {
            dry_run: true,
            ..Default::default()
        };
        let r = super::apply::delete_with(&self.cluster, &self.api, JOURNAL_NAME, &dp, &what).await;
        (what, r)
    }

    /// Deletes the journal (end of a complete revert); gone already is fine.
    pub async fn delete(&self) -> Result<Deleted, ClusterError> {
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
    fn json_round_trip() {
        let mut a = Journal::new("convert", "legacy-v0.6");
        a.options.insert("concurrency".into(), 5.into());
        a.set_phase("n1", "nodes/convert", PhaseState::Running, None);
        let s = serde_json::to_string(&a).unwrap();
        let b: Journal = serde_json::from_str(&s).unwrap();
        assert_eq!(a, b);
    }
}
