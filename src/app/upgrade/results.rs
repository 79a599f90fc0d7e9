//! Upgrade's per-node results: those of the nodes no Job of the run moves, and the exit code
//! and closing message from all of them.

use std::collections::BTreeMap;

use crate::exit::Exit;
use crate::output::{NodeOutcome, NodeResult, UpgradeResult};
use crate::plan::upgrade::{Decision, RouteKind};

/// The results of the nodes no Job of this run moves: an earlier run of the same upgrade
/// moved them, or `-l` left them out.
pub(super) fn planned_results(d: &Decision) -> BTreeMap<String, NodeResult> {
    let set = |v: &[String]| {
        v.iter()
            .cloned()
            .collect::<std::collections::HashSet<String>>()
    };
    let (kept, later) = (set(&d.order.kept), set(&d.order.later));
    d.nodes
        .iter()
        .filter(|n| !d.to_move.contains(&n.name))
        .map(|n| {
            let (result, message) = if d.moved.contains(&n.name) {
                if d.route.kind == RouteKind::Rollback {
                    (
                        NodeOutcome::AlreadyRolledBack,
                        "on the release the upgrade came from already",
                    )
                } else {
                    (
                        NodeOutcome::AlreadyUpgraded,
                        "moved by an earlier run of this upgrade",
                    )
                }
            } else if kept.contains(&n.name) {
                (
                    NodeOutcome::Partitioned,
                    "kept on the old release (--partition): re-run with a smaller one to move it",
                )
            } else if later.contains(&n.name) {
                (
                    NodeOutcome::Pending,
                    "left for a later run (--canary, --pause): re-run the same upgrade to move it",
                )
            } else {
                (
                    NodeOutcome::NotSelected,
                    "not selected (-l): run the same upgrade without -l to move it",
                )
            };
            let r = NodeResult {
                name: n.name.clone(),
                role: n.role.as_str().into(),
                result,
                message: message.into(),
                logs: None,
                pool: n.pool.clone(),
                yurthub_unavailable_ms: None,
            };
            (n.name.clone(), r)
        })
        .collect()
}

/// The exit code and message from the per-node results.
pub(super) fn outcome_exit(result: &mut UpgradeResult, kind: RouteKind) -> Exit {
    let (moved, did, command) = match kind {
        RouteKind::Rollback => (NodeOutcome::RolledBack, "rolled back", "upgrade --rollback"),
        RouteKind::Patch | RouteKind::Profile => (NodeOutcome::Upgraded, "upgraded", "upgrade"),
    };
    let upgraded = result.nodes.iter().filter(|n| n.result == moved).count();
    let f = crate::output::node_failures(&result.nodes);
    let exit = crate::app::error::nodes_exit(&f);
    let gap = result
        .nodes
        .iter()
        .filter_map(|n| n.yurthub_unavailable_ms)
        .max()
        .map(|ms| {
            format!(
                " (YurtHub's address went unserved for at most {:.1}s on a node)",
                ms as f64 / 1000.0
            )
        })
        .unwrap_or_default();
    let count = |o: NodeOutcome| result.nodes.iter().filter(|n| n.result == o).count();
    let mut waiting = String::new();
    for (o, what) in [
        (
            NodeOutcome::Partitioned,
            "kept on the old release by --partition",
        ),
        (NodeOutcome::Pending, "left for a later run"),
        (NodeOutcome::NotSelected, "not selected by -l"),
    ] {
        let n = count(o);
        if n > 0 {
            waiting.push_str(&format!("; {n} {what}"));
        }
    }
    result.message = format!(
        "{did} {upgraded} node(s) to {}{gap}{waiting}{}",
        result.to, f.tail
    );
    if exit != Exit::Ok {
        result
            .message
            .push_str(&format!("; re-run the same {command} to finish the rest"));
    }
    exit
}
