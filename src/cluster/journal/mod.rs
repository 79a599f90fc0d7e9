//! The journal (docs/architecture.md#state-in-the-cluster): the profile and options of a
//! conversion, the objects it created, the bootstrap token it made, and per node and phase what
//! happened, so convert can resume and revert can undo exactly.
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

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::now;

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

pub use super::error::JournalError;

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

impl PhaseState {
    /// The word the journal stores it as (`pending`, `running`, …), as status shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseState::Pending => "pending",
            PhaseState::Running => "running",
            PhaseState::Done => "done",
            PhaseState::Failed => "failed",
            PhaseState::Skipped => "skipped",
        }
    }
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

/// The upgrade a cluster is under or went through last (`yurtctl upgrade`): where it came
/// from, so that a run stopped half-way resumes towards the same target and `--rollback`
/// knows where to return.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeRecord {
    pub from_profile: String,
    pub from_version: String,
    pub to_profile: String,
    pub to_version: String,
    /// Every phase ran to its end: the cluster is at the target.
    #[serde(default)]
    pub finished: bool,
    /// The options the cluster ran with before this upgrade (as `options` recorded them):
    /// `upgrade --rollback` returns to them. Empty in journals of an older yurtctl.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub from_options: serde_json::Map<String, serde_json::Value>,
    /// `upgrade --rollback` is under way: it returns the cluster to `from*`; once it finishes
    /// the record goes, as if the upgrade had never run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rolling_back: bool,
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
    /// The last `yurtctl upgrade` (none: the cluster runs what convert installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeRecord>,
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
    dirty: BTreeMap<String, u64>,
    /// Counts changes, so a save forgets only the changes it carried.
    #[serde(skip)]
    changes: u64,
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
            upgrade: None,
            node_shards: 0,
            nodes: BTreeMap::new(),
            updated_at: now(),
            resource_version: None,
            dirty: BTreeMap::new(),
            changes: 0,
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
        self.changed(node);
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

    /// Every (node, phase, state) a run left running or failed: where it did not finish.
    pub fn unfinished(&self) -> Vec<(String, String, PhaseState)> {
        self.nodes
            .iter()
            .flat_map(|(n, phases)| {
                phases
                    .iter()
                    .filter(|(_, s)| matches!(s.state, PhaseState::Running | PhaseState::Failed))
                    .map(move |(p, s)| (n.clone(), p.clone(), s.state))
            })
            .collect()
    }

    /// Forgets phase `phase` on every node (a new upgrade starts its node records afresh).
    pub fn forget_phase(&mut self, phase: &str) {
        let had: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, p)| p.contains_key(phase))
            .map(|(n, _)| n.clone())
            .collect();
        for n in had {
            self.forget_node_phase(&n, phase);
        }
    }

    /// Forgets `phase` on `node` (a node journaled as starting that never did).
    pub fn forget_node_phase(&mut self, node: &str, phase: &str) {
        if let Some(p) = self.nodes.get_mut(node)
            && p.remove(phase).is_some()
        {
            self.changed(node);
        }
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

    /// Marks `node` changed since the last save.
    pub(crate) fn changed(&mut self, node: &str) {
        self.changes += 1;
        self.dirty.insert(node.to_string(), self.changes);
    }

    /// What the next save sends: a merge patch per shard with the nodes changed since the last
    /// save that went through, and the run record when it changed. Nothing counts as saved
    /// until [`Journal::sent`]: a save that fails or is dropped (Ctrl-C) leaves it all for the
    /// next one.
    pub fn take_delta(&mut self) -> Delta {
        if self.node_shards == 0 && !self.nodes.is_empty() {
            self.node_shards = self.nodes.len().div_ceil(NODES_PER_SHARD).max(1) as u32;
        }
        let nodes = self.dirty.clone();
        let mut shards: BTreeMap<u32, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
        for node in nodes.keys() {
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

    /// A save that went through: its nodes are saved unless they changed again meanwhile, and
    /// the run record as stored (a conflict may have merged the server's objects into it)
    /// becomes ours.
    pub fn sent(&mut self, delta: &Delta, sent: Sent) {
        for (node, change) in &delta.nodes {
            if self.dirty.get(node) == Some(change) {
                self.dirty.remove(node);
            }
        }
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
            upgrade: self.upgrade.clone(),
            node_shards: self.node_shards,
            nodes: BTreeMap::new(),
            updated_at: self.updated_at,
            resource_version: self.resource_version.clone(),
            dirty: BTreeMap::new(),
            changes: 0,
            saved_record: None,
        }
    }
}

/// What one save sends (see [`Journal::take_delta`]).
#[derive(Debug)]
pub struct Delta {
    /// The nodes it carries, each with the change it saves.
    nodes: BTreeMap<String, u64>,
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

mod store;
pub use store::JournalStore;

#[cfg(test)]
mod tests;
