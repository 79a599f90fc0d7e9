//! Deterministic scenarios for the static-pod rollout state machine (no I/O, no sleeps).

use std::collections::BTreeMap;
use std::time::Duration;

use yurtctl::rollout::sim::{End, NodeScript, Outcome, simulate};
use yurtctl::rollout::{
    Action, ApplyError, Completion, HaltReason, LogicalTime, NodeEvent, NodeInput, NodePhase,
    Options, Priority, Rollout, SkipReason,
};

const OLD: &str = "old";
const NEW: &str = "new";

fn node(name: &str, ready: bool, rev: &str) -> NodeInput {
    NodeInput {
        name: name.to_string(),
        labels: BTreeMap::new(),
        revision: Some(rev.to_string()),
        ready,
    }
}

fn nodes(n: usize) -> Vec<NodeInput> {
    (0..n)
        .map(|i| node(&format!("n{i:02}"), true, OLD))
        .collect()
}

fn opts(max_unavailable: &str) -> Options {
    Options {
        max_unavailable: max_unavailable.parse().unwrap(),
        ..Options::default()
    }
}

fn starts(actions: &[Action]) -> Vec<&str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Start(n) => Some(n.as_str()),
            _ => None,
        })
        .collect()
}

const T0: LogicalTime = LogicalTime(0);

#[test]
fn users_example_three_nodes_all_upgraded() {
    let mut r = Rollout::new(nodes(3), &opts("1"), NEW);
    let trace = simulate(&mut r, |_| NodeScript::ok(1000), 0, true);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(trace.makespan, 3000);
    assert_eq!(r.summary().upgraded, 3);
    assert!(trace.samples.iter().all(|s| s.in_flight <= 1));
}

#[test]
fn sliding_window_refills_the_freed_slot_in_the_same_step() {
    let mut r = Rollout::new(nodes(5), &opts("2"), NEW);
    assert_eq!(starts(&r.next_actions(T0)), ["n00", "n01"]);
    r.apply(NodeEvent::Started("n00".into())).unwrap();
    r.apply(NodeEvent::Started("n01".into())).unwrap();
    assert_eq!(starts(&r.next_actions(T0)), Vec::<&str>::new());
    // Over budget is refused even if the driver tries.
    assert!(matches!(
        r.apply(NodeEvent::Started("n02".into())),
        Err(ApplyError::OverBudget { .. })
    ));
    r.apply(NodeEvent::Upgraded {
        node: "n01".into(),
        ready_at: LogicalTime(10),
    })
    .unwrap();
    // n00 still in flight: the slot n01 freed is offered at once (no barrier).
    assert_eq!(starts(&r.next_actions(LogicalTime(10))), ["n02"]);
}

#[test]
fn ten_nodes_two_not_ready_budget_three() {
    let mut ns = nodes(10);
    ns[3].ready = false;
    ns[7].ready = false;
    let mut r = Rollout::new(ns, &opts("3"), NEW);
    let first = r.next_actions(T0);
    assert!(first.contains(&Action::Skip("n03".into(), SkipReason::NotReady)));
    assert!(first.contains(&Action::Skip("n07".into(), SkipReason::NotReady)));
    // Skipped NotReady nodes use no budget (OpenYurt/OpenKruise): three start at once.
    assert_eq!(starts(&first), ["n00", "n01", "n02"]);
    let trace = simulate(&mut r, |_| NodeScript::ok(100), 0, true);
    assert_eq!(trace.end, End::Done(Completion::All));
    let s = r.summary();
    assert_eq!(s.upgraded, 8);
    assert_eq!(s.skipped[&SkipReason::NotReady], 2);
    assert!(
        trace
            .samples
            .iter()
            .all(|s| s.occupied <= 3 && s.in_flight <= 3)
    );
    assert!(trace.samples.iter().any(|s| s.in_flight == 3));
}

#[test]
fn not_ready_nodes_at_the_start_are_skipped_without_using_budget() {
    let mut ns = nodes(10);
    ns[0].ready = false;
    let mut r = Rollout::new(ns, &opts("10%"), NEW);
    let trace = simulate(&mut r, |_| NodeScript::ok(100), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(trace.starts.len(), 9);
    assert_eq!(
        r.phase("n00"),
        Some(NodePhase::Skipped(SkipReason::NotReady))
    );
}

#[test]
fn first_failure_halts_after_draining_in_flight_nodes() {
    let mut r = Rollout::new(nodes(10), &opts("3"), NEW);
    let trace = simulate(
        &mut r,
        |n| NodeScript {
            duration: if n == "n01" { 50 } else { 100 },
            outcome: if n == "n01" {
                Outcome::Fail
            } else {
                Outcome::Succeed
            },
            not_ready_at: None,
        },
        0,
        true,
    );
    assert_eq!(
        trace.end,
        End::Halt(HaltReason::TooManyFailures {
            failed: vec!["n01".into()],
            max_failures: 0
        })
    );
    // n00 and n02 were in flight and were waited for; nothing started after the failure.
    assert_eq!(trace.starts.len(), 3);
    assert_eq!(trace.makespan, 100);
    let s = r.summary();
    assert_eq!((s.upgraded, s.failed, s.pending), (2, 1, 7));
}

#[test]
fn max_failures_lets_the_rollout_continue() {
    let mut r = Rollout::new(
        nodes(10),
        &Options {
            max_failures: 2,
            ..opts("2")
        },
        NEW,
    );
    let trace = simulate(
        &mut r,
        |n| NodeScript {
            duration: 10,
            outcome: match n {
                "n02" => Outcome::Fail,
                "n05" => Outcome::TimeOut,
                _ => Outcome::Succeed,
            },
            not_ready_at: None,
        },
        0,
        false,
    );
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(r.summary().failed, 2);
    assert_eq!(r.summary().upgraded, 8);
}

#[test]
fn upgraded_node_going_not_ready_halts() {
    let mut r = Rollout::new(nodes(6), &opts("2"), NEW);
    let trace = simulate(
        &mut r,
        |n| NodeScript {
            duration: 100,
            outcome: Outcome::Succeed,
            not_ready_at: (n == "n00").then_some(150),
        },
        0,
        false,
    );
    assert_eq!(
        trace.end,
        End::Halt(HaltReason::UpgradedNodeNotReady { node: "n00".into() })
    );
    assert_eq!(r.phase("n00"), Some(NodePhase::Regressed));
    // n02 and n03 started at 100 and were drained.
    assert_eq!(trace.starts.len(), 4);
    assert_eq!(trace.makespan, 200);
}

#[test]
fn pending_node_going_not_ready_is_skipped_and_reported() {
    let mut r = Rollout::new(nodes(4), &opts("1"), NEW);
    let trace = simulate(
        &mut r,
        |n| NodeScript {
            duration: 100,
            outcome: Outcome::Succeed,
            not_ready_at: (n == "n02").then_some(50),
        },
        0,
        false,
    );
    // n02 is skipped and reported; the others go on (a skipped node uses no budget).
    assert_eq!(
        r.phase("n02"),
        Some(NodePhase::Skipped(SkipReason::NotReady))
    );
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(r.summary().upgraded, 3);
}

#[test]
fn min_ready_seconds_keeps_the_slot_until_settled() {
    let mut r = Rollout::new(
        nodes(3),
        &Options {
            min_ready: Duration::from_secs(5),
            ..opts("1")
        },
        NEW,
    );
    r.apply(NodeEvent::Started("n00".into())).unwrap();
    r.apply(NodeEvent::Upgraded {
        node: "n00".into(),
        ready_at: LogicalTime(1000),
    })
    .unwrap();
    assert_eq!(
        r.next_actions(LogicalTime(1000)),
        [Action::WakeAt(LogicalTime(6000))]
    );
    assert_eq!(
        r.next_actions(LogicalTime(6000)),
        [Action::Settled("n00".into()), Action::Start("n01".into())]
    );
    // A short report keeps it settling.
    r.apply(NodeEvent::ReadyFor {
        node: "n00".into(),
        duration: Duration::from_secs(4),
    })
    .unwrap();
    assert!(matches!(r.phase("n00"), Some(NodePhase::Settling { .. })));
    r.apply(NodeEvent::ReadyFor {
        node: "n00".into(),
        duration: Duration::from_secs(5),
    })
    .unwrap();
    assert_eq!(r.phase("n00"), Some(NodePhase::Upgraded));

    let mut r = Rollout::new(
        nodes(3),
        &Options {
            min_ready: Duration::from_secs(5),
            ..opts("1")
        },
        NEW,
    );
    let trace = simulate(&mut r, |_| NodeScript::ok(1000), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    // n01 and n02: 1 s each plus 5 s settling, after n00 settles at 6 s.
    assert_eq!(trace.makespan, 18_000);
}

#[test]
fn partition_keeps_the_last_nodes_and_rounds_down() {
    let mut r = Rollout::new(
        nodes(5),
        &Options {
            partition: "50%".parse().unwrap(), // floor(2.5) = 2
            ..opts("100%")
        },
        NEW,
    );
    assert_eq!(r.planned_order(), ["n00", "n01", "n02"]);
    let trace = simulate(&mut r, |_| NodeScript::ok(10), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(
        r.phase("n03"),
        Some(NodePhase::Skipped(SkipReason::Partitioned))
    );
    assert_eq!(
        r.phase("n04"),
        Some(NodePhase::Skipped(SkipReason::Partitioned))
    );
    assert_eq!(trace.makespan, 10);
}

#[test]
fn partition_counts_already_updated_nodes_first() {
    // As Advanced DaemonSet: updated nodes lead the order, so partition = nodes left on old.
    let mut ns = nodes(5);
    ns[4].revision = Some(NEW.into());
    let mut r = Rollout::new(
        ns,
        &Options {
            partition: "2".parse().unwrap(),
            ..opts("1")
        },
        NEW,
    );
    assert_eq!(r.planned_order(), ["n00", "n01"]);
    assert_eq!(
        r.phase("n04"),
        Some(NodePhase::Skipped(SkipReason::AlreadyUpdated))
    );
    simulate(&mut r, |_| NodeScript::ok(10), 0, false);
    let s = r.summary();
    assert_eq!(s.upgraded, 2);
    assert_eq!(s.skipped[&SkipReason::Partitioned], 2);
}

#[test]
fn priority_then_name_decides_the_order() {
    let mut ns = nodes(6);
    ns[4].labels.insert("zone".into(), "a".into());
    ns[2].labels.insert("zone".into(), "b".into());
    ns[5].labels.insert("zone".into(), "a".into());
    let r = Rollout::new(
        ns,
        &Options {
            priority: Priority::parse(&["zone=a:50", "zone=b:10"]).unwrap(),
            partition: "1".parse().unwrap(),
            ..opts("1")
        },
        NEW,
    );
    assert_eq!(r.planned_order(), ["n04", "n05", "n02", "n00", "n01"]);
    assert_eq!(
        r.phase("n03"),
        Some(NodePhase::Skipped(SkipReason::Partitioned))
    );
}

#[test]
fn canary_starts_n_nodes_then_stops_and_a_rerun_continues() {
    let o = Options {
        canary: Some(2),
        ..opts("3")
    };
    let mut r = Rollout::new(nodes(6), &o, NEW);
    assert_eq!(starts(&r.next_actions(T0)), ["n00", "n01"]);
    let trace = simulate(&mut r, |_| NodeScript::ok(10), 0, false);
    assert_eq!(trace.end, End::Done(Completion::Canary { remaining: 4 }));
    assert!(matches!(
        r.apply(NodeEvent::Started("n02".into())),
        Err(ApplyError::NotStarting { .. })
    ));
    // Re-run without --canary: the two canaries are already updated.
    let mut ns = nodes(6);
    ns[0].revision = Some(NEW.into());
    ns[1].revision = Some(NEW.into());
    let mut r2 = Rollout::new(ns, &opts("3"), NEW);
    assert_eq!(r2.planned_order(), ["n02", "n03", "n04", "n05"]);
    let trace = simulate(&mut r2, |_| NodeScript::ok(10), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(r2.summary().skipped[&SkipReason::AlreadyUpdated], 2);
}

#[test]
fn nothing_to_do_is_done_at_once() {
    let mut ns = nodes(3);
    for n in &mut ns {
        n.revision = Some(NEW.into());
    }
    let mut r = Rollout::new(ns, &opts("1"), NEW);
    let trace = simulate(&mut r, |_| NodeScript::ok(10), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(trace.makespan, 0);
    let mut empty = Rollout::new(Vec::new(), &opts("10%"), NEW);
    assert_eq!(empty.budget(), 0);
    assert_eq!(
        simulate(&mut empty, |_| NodeScript::ok(1), 0, false).end,
        End::Done(Completion::All)
    );
}

#[test]
fn invalid_events_are_rejected() {
    let mut r = Rollout::new(nodes(2), &opts("1"), NEW);
    assert_eq!(
        r.apply(NodeEvent::Started("nope".into())),
        Err(ApplyError::UnknownNode("nope".into()))
    );
    let e = r
        .apply(NodeEvent::Upgraded {
            node: "n00".into(),
            ready_at: T0,
        })
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "node n00: event Upgraded is not valid while the node is pending"
    );
    assert!(r.apply(NodeEvent::Failed("n00".into())).is_err());
    assert!(r.apply(NodeEvent::Skipped("n00".into())).is_err());
    r.apply(NodeEvent::Started("n00".into())).unwrap();
    assert!(r.apply(NodeEvent::Started("n00".into())).is_err());
}

#[test]
fn next_actions_is_pure() {
    let r = Rollout::new(nodes(20), &opts("25%"), NEW);
    let a = r.next_actions(T0);
    assert_eq!(a, r.next_actions(T0));
    assert_eq!(starts(&a).len(), 5);
}

#[test]
fn planned_windows_use_the_free_slots() {
    let mut ns = nodes(7);
    ns[6].ready = false;
    let r = Rollout::new(ns, &opts("3"), NEW);
    assert_eq!(
        r.planned_windows(),
        [vec!["n00", "n01", "n02"], vec!["n03", "n04", "n05"]]
    );
    let mut ns = nodes(3);
    ns[0].ready = false;
    assert_eq!(
        Rollout::new(ns, &opts("1"), NEW).planned_windows(),
        [vec!["n01"], vec!["n02"]]
    );
}

#[test]
fn a_skipped_node_coming_back_stays_skipped() {
    let mut ns = nodes(3);
    ns[0].ready = false;
    let mut r = Rollout::new(ns, &opts("1"), NEW);
    assert_eq!(starts(&r.next_actions(T0)), ["n01"]);
    r.apply(NodeEvent::BecameReady("n00".into())).unwrap();
    let trace = simulate(&mut r, |_| NodeScript::ok(10), 0, false);
    assert_eq!(trace.end, End::Done(Completion::All));
    assert_eq!(
        r.phase("n00"),
        Some(NodePhase::Skipped(SkipReason::NotReady))
    );
    assert_eq!(r.summary().upgraded, 2);
}

#[test]
fn duplicate_names_are_ignored() {
    let mut ns = nodes(2);
    ns.push(node("n00", true, OLD));
    let r = Rollout::new(ns, &opts("100%"), NEW);
    assert_eq!(r.planned_order(), ["n00", "n01"]);
    assert_eq!(r.summary().total, 2);
    assert_eq!(r.budget(), 2);
}
