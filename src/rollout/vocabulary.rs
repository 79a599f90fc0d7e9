//! The rollout machine's vocabulary: its inputs, the actions it proposes, the events that
//! acknowledge them, why nodes are skipped or a rollout halts, and the word for how each node
//! ended.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::budget::{MaxUnavailable, Partition};
use super::priority::Priority;

/// Logical time: milliseconds since the rollout began. The driver maps its clock onto it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LogicalTime(pub u64);

impl LogicalTime {
    pub fn from_millis(ms: u64) -> Self {
        LogicalTime(ms)
    }
    pub fn as_millis(self) -> u64 {
        self.0
    }
    pub fn saturating_add(self, d: Duration) -> Self {
        LogicalTime(
            self.0
                .saturating_add(d.as_millis().min(u64::MAX as u128) as u64),
        )
    }
    pub fn saturating_since(self, earlier: LogicalTime) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// A target node as observed when the rollout starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInput {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The revision hash the node's mirror pod runs now (None when unknown).
    pub revision: Option<String>,
    /// Node Ready and the static pod Ready.
    pub ready: bool,
}

/// Rollout controls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub max_unavailable: MaxUnavailable,
    pub partition: Partition,
    pub priority: Priority,
    /// Start at most this many nodes in this run, then stop (`Done(Canary)`).
    pub canary: Option<usize>,
    /// Failures tolerated; one more halts the rollout. 0 halts on the first.
    pub max_failures: usize,
    pub min_ready: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// NotReady at the start, or went NotReady before its turn. A later run picks it up.
    NotReady,
    /// Already runs the target revision.
    AlreadyUpdated,
    /// Kept on the old revision by `--partition`.
    Partitioned,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::NotReady => "node not ready",
            SkipReason::AlreadyUpdated => "already on the target revision",
            SkipReason::Partitioned => "kept on the old revision by --partition",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HaltReason {
    /// More failures than `--max-failures`.
    TooManyFailures {
        failed: Vec<String>,
        max_failures: usize,
    },
    /// A node upgraded by this run went NotReady: the new revision may be the cause.
    UpgradedNodeNotReady { node: String },
    /// Nodes remain, nothing is in flight, and already-unavailable nodes use the whole budget.
    NoBudget { unavailable: usize, budget: usize },
}

impl fmt::Display for HaltReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HaltReason::TooManyFailures {
                failed,
                max_failures,
            } => write!(
                f,
                "{} node(s) failed ({}), more than --max-failures {max_failures}",
                failed.len(),
                failed.join(", ")
            ),
            HaltReason::UpgradedNodeNotReady { node } => write!(
                f,
                "node {node} went NotReady after its upgrade; the new revision may be the cause"
            ),
            HaltReason::NoBudget {
                unavailable,
                budget,
            } => write!(
                f,
                "{unavailable} target node(s) are unavailable, which uses the whole --max-unavailable budget of {budget}; fix those nodes or raise --max-unavailable"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Every node in scope was handled.
    All,
    /// `--canary` nodes were started; `remaining` nodes wait for the next run.
    Canary { remaining: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Upgrade this node now (acknowledge with `NodeEvent::Started`).
    Start(String),
    /// Report that this node is not upgraded in this run (acknowledge with `NodeEvent::Skipped`).
    Skip(String, SkipReason),
    /// The node has been Ready on the new revision for `--min-ready-seconds` by `now`
    /// (acknowledge with `NodeEvent::ReadyFor`). Its slot is already counted as free.
    Settled(String),
    /// Call `next_actions` again at this time at the latest (a settling node's deadline).
    WakeAt(LogicalTime),
    /// Stop: no node in flight; the reason says why.
    Halt(HaltReason),
    /// Finished.
    Done(Completion),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeEvent {
    Started(String),
    /// The mirror pod runs the target revision and is Ready since `ready_at`.
    Upgraded {
        node: String,
        ready_at: LogicalTime,
    },
    /// The node has stayed Ready on the target revision for `duration`.
    ReadyFor {
        node: String,
        duration: Duration,
    },
    /// The upgrade failed (the servant restored the previous manifest).
    Failed(String),
    /// The upgrade did not finish within the node timeout.
    TimedOut(String),
    BecameNotReady(String),
    BecameReady(String),
    /// A `Skip` action was reported.
    Skipped(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("node {0} is not a target of this rollout")]
    UnknownNode(String),
    #[error("node {node}: event {event} is not valid while the node is {phase}")]
    InvalidTransition {
        node: String,
        event: &'static str,
        phase: &'static str,
    },
    #[error(
        "node {node}: starting it would make {occupied} node(s) unavailable, over the budget of {budget}"
    )]
    OverBudget {
        node: String,
        occupied: usize,
        budget: usize,
    },
    #[error("node {node}: the rollout is {why}; no new node may start")]
    NotStarting { node: String, why: &'static str },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailKind {
    Failed,
    TimedOut,
}

/// Where a node stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodePhase {
    Pending,
    InFlight,
    Settling {
        ready_at: LogicalTime,
    },
    Upgraded,
    Failed(FailKind),
    /// Upgraded by this run, then went NotReady.
    Regressed,
    Skipped(SkipReason),
}

impl NodePhase {
    /// How reports name the phase.
    pub(super) fn name(self) -> &'static str {
        match self {
            NodePhase::Pending => "pending",
            NodePhase::InFlight => "upgrading",
            NodePhase::Settling { .. } => "settling",
            NodePhase::Upgraded => "upgraded",
            NodePhase::Failed(FailKind::Failed) => "failed",
            NodePhase::Failed(FailKind::TimedOut) => "timed out",
            NodePhase::Regressed => "not ready after its upgrade",
            NodePhase::Skipped(_) => "skipped",
        }
    }
}

/// How a node ended a rollout (or stands in OTA): the word of `-o json` results, of the
/// progress the revision store keeps and of `status -o wide`. These words are a documented
/// contract; the order of the variants is the order the closing summary counts them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeResult {
    Upgraded,
    AlreadyUpdated,
    Partitioned,
    SkippedNotReady,
    Failed,
    TimedOut,
    /// Upgraded by this run, then went NotReady.
    NotReadyAfterUpgrade,
    /// Not started: the run ended first.
    Pending,
    /// Upgrading or settling when the run ended.
    InProgress,
    /// OTA: marked `PodNeedUpgrade=True`.
    NeedsUpgrade,
    /// OTA: already on the target revision.
    UpToDate,
}

impl NodeResult {
    /// Every result, in declaration order.
    pub const ALL: [NodeResult; 11] = [
        NodeResult::Upgraded,
        NodeResult::AlreadyUpdated,
        NodeResult::Partitioned,
        NodeResult::SkippedNotReady,
        NodeResult::Failed,
        NodeResult::TimedOut,
        NodeResult::NotReadyAfterUpgrade,
        NodeResult::Pending,
        NodeResult::InProgress,
        NodeResult::NeedsUpgrade,
        NodeResult::UpToDate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NodeResult::Upgraded => "upgraded",
            NodeResult::AlreadyUpdated => "already-updated",
            NodeResult::Partitioned => "partitioned",
            NodeResult::SkippedNotReady => "skipped-not-ready",
            NodeResult::Failed => "failed",
            NodeResult::TimedOut => "timed-out",
            NodeResult::NotReadyAfterUpgrade => "not-ready-after-upgrade",
            NodeResult::Pending => "pending",
            NodeResult::InProgress => "in-progress",
            NodeResult::NeedsUpgrade => "needs-upgrade",
            NodeResult::UpToDate => "up-to-date",
        }
    }

    /// The results the closing summary lists node by node.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            NodeResult::Failed | NodeResult::TimedOut | NodeResult::NotReadyAfterUpgrade
        )
    }

    /// Whether the node is done with for this run (what the progress records); pending and
    /// in-progress nodes are left to the next run.
    pub fn is_final(self) -> bool {
        !matches!(self, NodeResult::Pending | NodeResult::InProgress)
    }

    /// Where the machine left the node.
    pub fn of_phase(phase: NodePhase) -> Self {
        match phase {
            NodePhase::Upgraded => NodeResult::Upgraded,
            NodePhase::Settling { .. } | NodePhase::InFlight => NodeResult::InProgress,
            NodePhase::Pending => NodeResult::Pending,
            NodePhase::Failed(FailKind::Failed) => NodeResult::Failed,
            NodePhase::Failed(FailKind::TimedOut) => NodeResult::TimedOut,
            NodePhase::Regressed => NodeResult::NotReadyAfterUpgrade,
            NodePhase::Skipped(r) => r.into(),
        }
    }
}

impl From<SkipReason> for NodeResult {
    fn from(r: SkipReason) -> Self {
        match r {
            SkipReason::NotReady => NodeResult::SkippedNotReady,
            SkipReason::AlreadyUpdated => NodeResult::AlreadyUpdated,
            SkipReason::Partitioned => NodeResult::Partitioned,
        }
    }
}

impl fmt::Display for NodeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown node result {0:?}")]
pub struct UnknownNodeResult(pub String);

impl FromStr for NodeResult {
    type Err = UnknownNodeResult;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NodeResult::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownNodeResult(s.to_string()))
    }
}

impl serde::Serialize for NodeResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for NodeResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_result_word_parses_back_to_its_result() {
        for r in NodeResult::ALL {
            assert_eq!(r.as_str().parse::<NodeResult>(), Ok(r), "{r:?}");
            assert_eq!(r.to_string(), r.as_str());
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<NodeResult>(&json).unwrap(), r);
        }
    }

    #[test]
    fn the_words_are_the_documented_ones() {
        // docs/commands/staticpod.md, the e2e tests and saved progress read these
        let table = [
            (NodeResult::Upgraded, "upgraded"),
            (NodeResult::AlreadyUpdated, "already-updated"),
            (NodeResult::Partitioned, "partitioned"),
            (NodeResult::SkippedNotReady, "skipped-not-ready"),
            (NodeResult::Failed, "failed"),
            (NodeResult::TimedOut, "timed-out"),
            (NodeResult::NotReadyAfterUpgrade, "not-ready-after-upgrade"),
            (NodeResult::Pending, "pending"),
            (NodeResult::InProgress, "in-progress"),
            (NodeResult::NeedsUpgrade, "needs-upgrade"),
            (NodeResult::UpToDate, "up-to-date"),
        ];
        assert_eq!(table.map(|(r, _)| r), NodeResult::ALL);
        for (r, word) in table {
            assert_eq!(r.as_str(), word);
            assert_eq!(word.parse::<NodeResult>(), Ok(r));
        }
    }

    #[test]
    fn all_lists_every_result_once_in_declaration_order() {
        // exhaustive: a new variant does not compile here until it is placed in ALL
        let position = |r: NodeResult| match r {
            NodeResult::Upgraded
            | NodeResult::AlreadyUpdated
            | NodeResult::Partitioned
            | NodeResult::SkippedNotReady
            | NodeResult::Failed
            | NodeResult::TimedOut
            | NodeResult::NotReadyAfterUpgrade
            | NodeResult::Pending
            | NodeResult::InProgress
            | NodeResult::NeedsUpgrade
            | NodeResult::UpToDate => NodeResult::ALL.iter().position(|x| *x == r),
        };
        for (i, r) in NodeResult::ALL.into_iter().enumerate() {
            assert_eq!(position(r), Some(i));
            assert_eq!(r as usize, i, "{r:?} out of declaration order");
        }
    }

    #[test]
    fn unknown_words_do_not_parse() {
        for w in ["", "Upgraded", "timed out", "skipped", "upgrading"] {
            assert_eq!(
                w.parse::<NodeResult>(),
                Err(UnknownNodeResult(w.to_string()))
            );
        }
    }

    #[test]
    fn phases_and_skips_map_to_their_results() {
        let t = LogicalTime(5);
        let table = [
            (NodePhase::Pending, NodeResult::Pending),
            (NodePhase::InFlight, NodeResult::InProgress),
            (NodePhase::Settling { ready_at: t }, NodeResult::InProgress),
            (NodePhase::Upgraded, NodeResult::Upgraded),
            (NodePhase::Failed(FailKind::Failed), NodeResult::Failed),
            (NodePhase::Failed(FailKind::TimedOut), NodeResult::TimedOut),
            (NodePhase::Regressed, NodeResult::NotReadyAfterUpgrade),
            (
                NodePhase::Skipped(SkipReason::NotReady),
                NodeResult::SkippedNotReady,
            ),
            (
                NodePhase::Skipped(SkipReason::AlreadyUpdated),
                NodeResult::AlreadyUpdated,
            ),
            (
                NodePhase::Skipped(SkipReason::Partitioned),
                NodeResult::Partitioned,
            ),
        ];
        for (phase, result) in table {
            assert_eq!(NodeResult::of_phase(phase), result, "{phase:?}");
        }
        let failures: Vec<_> = NodeResult::ALL
            .into_iter()
            .filter(|r| r.is_failure())
            .collect();
        assert_eq!(
            failures,
            [
                NodeResult::Failed,
                NodeResult::TimedOut,
                NodeResult::NotReadyAfterUpgrade
            ]
        );
    }
}
