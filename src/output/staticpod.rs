//! Results and tables of `yurtctl staticpod`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FailedNode, closing_lines};
use crate::rollout::NodeResult;

/// How one node ended in a rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutNode {
    pub name: String,
    pub result: NodeResult,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The node Job's log tail, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<String>,
    /// The mirror pod's state when the node failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_state: Option<String>,
}

impl RolloutNode {
    /// A node that ended with `result`, nothing more said about it yet.
    pub fn new(name: &str, result: NodeResult) -> Self {
        RolloutNode {
            name: name.into(),
            result,
            message: String::new(),
            logs: None,
            pod_state: None,
        }
    }
}

/// `-o json` result of `staticpod upgrade|rollback|ota apply` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub name: String,
    pub namespace: String,
    pub strategy: String,
    pub revision: String,
    pub revision_number: u64,
    /// `ok`, `partial`, `interrupted`, … ([`crate::exit::Exit::reason`]).
    pub result: String,
    pub exit_code: u8,
    pub message: String,
    pub max_unavailable: usize,
    pub nodes: Vec<RolloutNode>,
}

impl RolloutResult {
    pub fn new(name: &str, namespace: &str, strategy: &str) -> Self {
        RolloutResult {
            header: crate::naming::ResultHeader::of("RolloutResult"),
            name: name.into(),
            namespace: namespace.into(),
            strategy: strategy.into(),
            revision: String::new(),
            revision_number: 0,
            result: crate::exit::Exit::Ok.reason().into(),
            exit_code: 0,
            message: String::new(),
            max_unavailable: 0,
            nodes: Vec::new(),
        }
    }

    pub fn count(&self, result: NodeResult) -> usize {
        self.nodes.iter().filter(|n| n.result == result).count()
    }
}

/// The closing summary on stderr, as convert's ([`crate::output::closing_lines`]): how many
/// nodes ended how, every failed node with its reason and mirror pod, then the message. With
/// `-o wide` the NODE / RESULT / MESSAGE table instead, with each failed node's pod state and
/// Job log.
pub fn rollout_lines(r: &RolloutResult, wide: bool) -> Vec<String> {
    if wide {
        return rollout_table(r);
    }
    // NodeResult's order is the summary's
    let mut by_result: BTreeMap<NodeResult, usize> = BTreeMap::new();
    for n in &r.nodes {
        *by_result.entry(n.result).or_default() += 1;
    }
    let counts: Vec<(String, usize)> = by_result
        .into_iter()
        .map(|(w, c)| (w.to_string(), c))
        .collect();
    let failed: Vec<FailedNode<'_>> = r
        .nodes
        .iter()
        .filter(|n| n.result.is_failure())
        .map(|n| FailedNode {
            name: &n.name,
            result: n.result.to_string(),
            message: &n.message,
            details: n
                .pod_state
                .iter()
                .map(|s| format!("mirror pod: {s}"))
                .collect(),
        })
        .collect();
    closing_lines(&counts, &failed, &r.message)
}

/// A line per node, with each failed node's pod state and Job log.
fn rollout_table(r: &RolloutResult) -> Vec<String> {
    let mut out = vec![format!("{:<30} {:<24} MESSAGE", "NODE", "RESULT")];
    for n in &r.nodes {
        out.push(format!("{:<30} {:<24} {}", n.name, n.result, n.message));
        if let Some(s) = &n.pod_state {
            out.push(format!("  mirror pod: {s}"));
        }
        if let Some(l) = &n.logs {
            out.push("  log of the node Job:".into());
            out.extend(l.lines().map(|x| format!("    | {x}")));
        }
    }
    out.push(r.message.clone());
    out
}

/// One node in `staticpod status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    pub node: String,
    pub ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub needs_upgrade: bool,
    /// The `PodNeedUpgrade` condition on the mirror pod, if set (OTA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_need_upgrade: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_result: Option<NodeResult>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionInfo {
    pub number: u64,
    pub hash: String,
    pub current: bool,
}

/// `-o json|yaml` of `staticpod status` (`kind: Status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticPodStatus {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub name: String,
    pub namespace: String,
    /// When the revision store was created (RFC 3339), if it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// With a YurtStaticSet, its controller's counts (what `kubectl get yurtstaticsets`
    /// shows); otherwise counted from the mirror pods the same way.
    pub total: usize,
    pub ready: usize,
    pub upgraded: usize,
    pub revisions: Vec<RevisionInfo>,
    pub nodes: Vec<NodeStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurt_static_set: Option<YurtStaticSetInfo>,
}

/// The YurtStaticSet that manages the static pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct YurtStaticSetInfo {
    /// `spec.upgradeStrategy` as stored.
    pub upgrade_strategy: serde_json::Value,
    /// The user's strategy while yurtctl holds the set at OTA (a rollout left partial).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_upgrade_strategy: Option<serde_json::Value>,
    /// Whether a yurt-manager leads (its controller reconciles the set); absent when that
    /// could not be told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_running: Option<bool>,
    /// The leading yurt-manager's identity (its leader-election Lease holder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_leader: Option<String>,
}

/// `2d3h`, `4m20s`, `12s`: kubectl's AGE style.
pub fn human_age(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m}m")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// The table of `staticpod status` (`NAME AGE TOTAL READY UPGRADED`, as `kubectl get
/// yurtstaticsets` prints it); `wide` adds one row per node. `age` is already formatted.
pub fn status_lines(s: &StaticPodStatus, age: &str, wide: bool) -> Vec<String> {
    let mut out = vec![
        format!(
            "{:<20} {:<8} {:<6} {:<6} {}",
            "NAME", "AGE", "TOTAL", "READY", "UPGRADED"
        ),
        format!(
            "{:<20} {:<8} {:<6} {:<6} {}",
            s.name, age, s.total, s.ready, s.upgraded
        ),
    ];
    if wide {
        out.push(String::new());
        out.push(format!(
            "{:<30} {:<6} {:<12} {:<14} {}",
            "NODE", "READY", "REVISION", "NEEDS-UPGRADE", "LAST-RESULT"
        ));
        for n in &s.nodes {
            out.push(format!(
                "{:<30} {:<6} {:<12} {:<14} {}",
                n.node,
                n.ready,
                n.revision.as_deref().unwrap_or("<none>"),
                n.needs_upgrade,
                n.last_result.map_or("-", NodeResult::as_str)
            ));
        }
        if let Some(y) = &s.yurt_static_set {
            out.push(String::new());
            out.push(match &y.held_upgrade_strategy {
                Some(user) => format!(
                    "YurtStaticSet upgradeStrategy {} (held by yurtctl until the rollout completes; yours: {user})",
                    y.upgrade_strategy
                ),
                None => format!("YurtStaticSet upgradeStrategy {}", y.upgrade_strategy),
            });
            out.push(match (y.controller_running, &y.controller_leader) {
                (Some(true), Some(leader)) => format!("YurtStaticSet controller: yurt-manager {leader} leads"),
                (Some(false), _) => "YurtStaticSet controller: NOT RUNNING (no yurt-manager leads; the set is not reconciled)".into(),
                _ => "YurtStaticSet controller: unknown (yurt-manager's leader Lease is not readable)".into(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_summary_counts_by_result_and_lists_failed_nodes() {
        let node = |name: &str, result: NodeResult, pod: Option<&str>| RolloutNode {
            name: name.into(),
            result,
            message: format!("{result} message"),
            logs: pod.map(|_| "boom".into()),
            pod_state: pod.map(str::to_owned),
        };
        let mut r = RolloutResult::new("nginx", "default", "advanced-rolling-update");
        r.message = "rollout stopped".into();
        r.nodes = (0..150)
            .map(|i| node(&format!("w{i}"), NodeResult::Upgraded, None))
            .collect();
        r.nodes.push(node(
            "w-9",
            NodeResult::TimedOut,
            Some("nginx-w-9 phase=Pending"),
        ));
        r.nodes.push(node("cp", NodeResult::AlreadyUpdated, None));
        r.nodes.push(node("w-8", NodeResult::Pending, None));
        r.nodes.push(node(
            "w-7",
            NodeResult::Failed,
            Some("nginx-w-7 phase=Running"),
        ));
        assert_eq!(
            rollout_lines(&r, false),
            vec![
                "Nodes: 150 upgraded, 1 already-updated, 1 failed, 1 timed-out, 1 pending",
                "Failed:",
                "  w-9 timed-out timed-out message",
                "    mirror pod: nginx-w-9 phase=Pending",
                "  w-7 failed    failed message",
                "    mirror pod: nginx-w-7 phase=Running",
                "rollout stopped",
            ]
        );
        // -o wide: a line per node, the failed ones with their pod and Job log
        let wide = rollout_lines(&r, true);
        assert!(
            wide[0].starts_with("NODE") && wide.len() == 154 + 2 * 3 + 2,
            "{wide:#?}"
        );
        assert!(wide.contains(&"    | boom".to_string()));
    }

    #[test]
    fn ages() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(260), "4m20s");
        assert_eq!(human_age(7300), "2h1m");
        assert_eq!(human_age(90000), "1d1h");
    }
}
