//! `yurtctl convert` on 200 simulated nodes in a terminal. A test binary of its own, so that it
//! runs alone: beside the other terminal tests the two cores are shared, and its node Jobs (five
//! minutes each) ran out of time under that load.

mod support;

use support::terminal::{in_terminal, redraws, visible};
use yurtsim::Layout;

/// Issue 17: 200 nodes, two of which fail their conversion, in a terminal. Before the prompt a
/// plan summary (counts, the first names, "… and N more"), not a line per node; during the run
/// one bar per phase counting its nodes and a line for each failure as it happens, no line
/// per succeeded node; at the end the nodes by result and the failed ones with their reasons,
/// not the per-node table (that is `-o wide`'s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_200_nodes_the_terminal_shows_summaries_and_a_bar_per_phase() {
    let env = support::start_sim(200, Layout::Kubeadm, |_| {}).await;
    for n in ["worker-17", "worker-42"] {
        env.sim
            .faults()
            .fail_jobs_named(n, &["yurtctl-convert-"], 3);
    }
    let (code, raw) = in_terminal(&env.sim, "convert -y --concurrency 50", &[]).await;
    let text = visible(&raw);
    assert_eq!(code, 4, "two nodes failed: partial");
    assert!(redraws(&raw), "bars are redrawn in place");

    // the plan summary
    assert!(
        text.contains("199 nodes") && text.contains("… and 196 more"),
        "the plan counts the edge nodes and names the first few"
    );
    assert!(text.contains("(every step: --dry-run, or -o wide)"));
    assert!(
        !text.contains("Job yurtctl-convert-worker-100:"),
        "no line per node in the plan"
    );

    // one bar per phase of node Jobs, counting to the plan's total
    for phase in ["[preflight/nodes]", "[nodes/edge]"] {
        assert!(
            text.lines().any(|l| l.contains(phase)
                && (l.contains("/199 ") || l.contains("/200 "))
                && l.contains("/s ETA ")),
            "{phase} has a bar with its total, rate and ETA"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.contains("[nodes/edge]") && l.contains("/199 ") && l.contains("2 failed")),
        "the bar counts the failures"
    );
    assert!(
        !text.contains("succeeded in"),
        "no line per succeeded node without -v"
    );

    // failures as they happen, with their node and reason
    for n in ["worker-17", "worker-42"] {
        assert!(
            text.lines().any(|l| l.contains(&format!(
                "✖ [nodes/edge] node {n} (Job yurtctl-convert-{n}): FAILED"
            ))),
            "{n}'s failure has its line"
        );
    }
    assert!(
        text.contains("[nodes/edge] done in"),
        "each phase ends with a line"
    );

    // the closing summary by result, then the failed nodes
    assert!(
        text.contains("Nodes: 198 converted, 2 failed"),
        "counts by result"
    );
    let failed: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Failed:"))
        .skip(1)
        .take(2)
        .collect();
    assert!(
        failed[0].starts_with("  worker-17 ") && failed[0].contains("failed"),
        "{failed:?}"
    );
    assert!(failed[1].starts_with("  worker-42 "), "{failed:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("NODE ")),
        "the per-node table is -o wide's"
    );
}
