//! The order an upgrade moves nodes in and which of them this run moves: the static-pod
//! rollout's controls (`--priority`, `--partition`, `--canary`, `--max-unavailable`) applied to
//! the nodes of a converted cluster. PURE.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::UpgradeNode;
use crate::plan::Role;
use crate::rollout::Options;

/// Which nodes this run moves, in order, and why the others wait.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeOrder {
    /// The nodes this run moves, in the order it starts them: edge nodes (their phase runs
    /// first), then cloud nodes; within each, higher `--priority` first, then by name.
    pub order: Vec<String>,
    /// Kept on the old release by `--partition`: the last nodes of the whole order.
    pub kept: Vec<String>,
    /// Left for a later run by `--canary` or `--pause`.
    pub later: Vec<String>,
    /// Nodes moving (or not Ready again after moving) at once: `--max-unavailable` of the
    /// targeted nodes.
    pub budget: usize,
    /// `--max-failures`: nodes that may fail before the upgrade halts.
    pub max_failures: usize,
}

/// Orders `targets` (the nodes the upgrade concerns, those an earlier run moved included) as
/// OpenKruise's Advanced DaemonSet orders pods, which the static-pod rollout follows: the ones
/// already moved count first, `--partition` keeps the last ones of the order back (counted
/// over every target), `--canary` moves only the first ones of the rest, `--pause` none.
pub fn node_order<'l>(
    targets: &[&UpgradeNode],
    moved: &BTreeSet<String>,
    labels: &dyn Fn(&str) -> Option<&'l BTreeMap<String, String>>,
    rollout: &Options,
    pause: bool,
) -> NodeOrder {
    let empty = BTreeMap::new();
    let by_priority = |role: Role| {
        let mut v: Vec<&UpgradeNode> = targets
            .iter()
            .copied()
            .filter(|n| n.role == role && !moved.contains(&n.name))
            .collect();
        rollout.priority.sort_by_priority(
            &mut v,
            |n| &n.name,
            |n| labels(&n.name).unwrap_or(&empty),
        );
        v
    };
    let total = targets.len();
    let mut waiting: Vec<String> = by_priority(Role::Edge)
        .into_iter()
        .chain(by_priority(Role::Cloud))
        .map(|n| n.name.clone())
        .collect();
    let keep = rollout.partition.resolve(total).min(waiting.len());
    let kept = waiting.split_off(waiting.len() - keep);
    let now = if pause {
        0
    } else {
        rollout.canary.unwrap_or(usize::MAX).min(waiting.len())
    };
    let later = waiting.split_off(now);
    NodeOrder {
        order: waiting,
        kept,
        later,
        budget: rollout.max_unavailable.resolve(total),
        max_failures: rollout.max_failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::Priority;

    fn node(name: &str, role: Role) -> UpgradeNode {
        UpgradeNode {
            name: name.into(),
            role,
            pool: None,
        }
    }

    fn nodes() -> Vec<UpgradeNode> {
        vec![
            node("cp-1", Role::Cloud),
            node("w-a", Role::Edge),
            node("w-b", Role::Edge),
            node("w-c", Role::Edge),
            node("w-d", Role::Edge),
        ]
    }

    fn labels(name: &str) -> Option<&'static BTreeMap<String, String>> {
        static ZONE_B: std::sync::LazyLock<BTreeMap<String, String>> =
            std::sync::LazyLock::new(|| BTreeMap::from([("zone".into(), "b".into())]));
        (name == "w-c" || name == "w-d").then(|| &*ZONE_B)
    }

    fn order(moved: &[&str], opts: &str, pause: bool) -> NodeOrder {
        let all = nodes();
        let targets: Vec<&UpgradeNode> = all.iter().collect();
        let mut o = Options::default();
        for flag in opts.split_whitespace() {
            let (k, v) = flag.split_once('=').unwrap();
            match k {
                "partition" => o.partition = v.parse().unwrap(),
                "canary" => o.canary = Some(v.parse().unwrap()),
                "max-unavailable" => o.max_unavailable = v.parse().unwrap(),
                "priority" => o.priority = Priority::parse(&[v]).unwrap(),
                _ => unreachable!("{k}"),
            }
        }
        let moved = moved.iter().map(|s| s.to_string()).collect();
        node_order(&targets, &moved, &labels, &o, pause)
    }

    #[test]
    fn edge_nodes_go_first_by_priority_then_the_cloud_and_the_window_is_max_unavailable() {
        // (moved, flags, pause) → (order, kept, later, budget)
        type Case<'a> = (
            &'a [&'a str],
            &'a str,
            bool,
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            usize,
        );
        let cases: &[Case] = &[
            (
                &[],
                "",
                false,
                &["w-a", "w-b", "w-c", "w-d", "cp-1"],
                &[],
                &[],
                1,
            ),
            (
                &[],
                "priority=zone=b:10",
                false,
                &["w-c", "w-d", "w-a", "w-b", "cp-1"],
                &[],
                &[],
                1,
            ),
            // the last ones of the order stay: here the cloud node and one edge node
            (
                &[],
                "partition=2",
                false,
                &["w-a", "w-b", "w-c"],
                &["w-d", "cp-1"],
                &[],
                1,
            ),
            // a percentage of every target, rounded down; moved nodes count
            (
                &["w-a"],
                "partition=40%",
                false,
                &["w-b", "w-c"],
                &["w-d", "cp-1"],
                &[],
                1,
            ),
            // more kept than left to move: nothing moves, the moved stay moved
            (
                &["w-a", "w-b"],
                "partition=4",
                false,
                &[],
                &["w-c", "w-d", "cp-1"],
                &[],
                1,
            ),
            (
                &[],
                "canary=2",
                false,
                &["w-a", "w-b"],
                &[],
                &["w-c", "w-d", "cp-1"],
                1,
            ),
            (
                &[],
                "canary=1 partition=1",
                false,
                &["w-a"],
                &["cp-1"],
                &["w-b", "w-c", "w-d"],
                1,
            ),
            (
                &[],
                "partition=1",
                true,
                &[],
                &["cp-1"],
                &["w-a", "w-b", "w-c", "w-d"],
                1,
            ),
            // a percentage of every target, rounded up
            (
                &[],
                "max-unavailable=50%",
                false,
                &["w-a", "w-b", "w-c", "w-d", "cp-1"],
                &[],
                &[],
                3,
            ),
            (
                &[],
                "max-unavailable=10",
                false,
                &["w-a", "w-b", "w-c", "w-d", "cp-1"],
                &[],
                &[],
                5,
            ),
        ];
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        for (moved, flags, pause, ord, kept, later, budget) in cases {
            let o = order(moved, flags, *pause);
            let want = NodeOrder {
                order: s(ord),
                kept: s(kept),
                later: s(later),
                budget: *budget,
                max_failures: 0,
            };
            assert_eq!(o, want, "moved {moved:?}, {flags}, pause {pause}");
        }
    }
}
