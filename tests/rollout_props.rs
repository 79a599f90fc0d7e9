//! Property tests: the rollout state machine driven by the discrete-event simulator with random
//! node counts, durations, failures, readiness and budgets. No sleeps; logical time only.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use proptest::prelude::*;
use yurtctl::rollout::sim::{End, NodeScript, Outcome, simulate};
use yurtctl::rollout::{
    Completion, FailKind, HaltReason, IntOrPercent, MaxUnavailable, NodeInput, NodePhase, Options,
    Partition, Rollout, SkipReason,
};

const NEW: &str = "new";

#[derive(Debug, Clone)]
struct NodeCase {
    duration: u64,
    /// 0..100: < fail% fails, next timeout% times out.
    fate: u8,
    ready: bool,
    updated: bool,
    /// Goes NotReady at this time (ms) during the run.
    not_ready_at: Option<u64>,
    zone: u8,
}

fn node_case(fail_pct: u8, churn: bool) -> impl Strategy<Value = NodeCase> {
    (
        1u64..10_000,
        0u8..100,
        prop::bool::weighted(0.95),
        prop::bool::weighted(0.1),
        prop::option::weighted(if churn { 0.03 } else { 0.0 }, 0u64..50_000),
        0u8..4,
    )
        .prop_map(
            move |(duration, fate, ready, updated, not_ready_at, zone)| NodeCase {
                duration,
                fate: if fate < fail_pct { fate } else { 100 },
                ready,
                updated,
                not_ready_at,
                zone,
            },
        )
}

fn budget_value(max: u32) -> impl Strategy<Value = IntOrPercent> {
    prop_oneof![
        (1..=max).prop_map(IntOrPercent::Int),
        (1u32..=100).prop_map(IntOrPercent::Percent),
    ]
}

fn partition_value() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        1 => (0u32..40).prop_map(|n| Some(n.to_string())),
        1 => (0u32..=100).prop_map(|p| Some(format!("{p}%"))),
    ]
}

struct Setup {
    inputs: Vec<NodeInput>,
    scripts: HashMap<String, NodeScript>,
}

fn setup(cases: &[NodeCase]) -> Setup {
    let mut inputs = Vec::new();
    let mut scripts = HashMap::new();
    for (i, c) in cases.iter().enumerate() {
        let name = format!("edge-{i:03}");
        inputs.push(NodeInput {
            name: name.clone(),
            labels: BTreeMap::from([("zone".to_string(), format!("z{}", c.zone))]),
            revision: Some(if c.updated { NEW } else { "old" }.to_string()),
            ready: c.ready,
        });
        let outcome = match c.fate {
            0..=1 => Outcome::TimeOut,
            2..=99 => Outcome::Fail,
            _ => Outcome::Succeed,
        };
        scripts.insert(
            name,
            NodeScript {
                duration: c.duration,
                outcome,
                not_ready_at: c.not_ready_at,
            },
        );
    }
    Setup { inputs, scripts }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn window_invariants_hold(
        cases in prop::collection::vec(node_case(4, true), 1..300),
        max_unavailable in budget_value(40),
        partition in partition_value(),
        canary in prop::option::weighted(0.2, 1usize..50),
        max_failures in 0usize..4,
        min_ready_ms in prop_oneof![Just(0u64), 1u64..5_000],
        overhead in 0u64..100,
        prioritise in any::<bool>(),
    ) {
        let Setup { inputs, scripts } = setup(&cases);
        let options = Options {
            max_unavailable: max_unavailable.to_string().parse::<MaxUnavailable>().unwrap(),
            partition: partition.as_deref().unwrap_or("0").parse::<Partition>().unwrap(),
            priority: if prioritise {
                yurtctl::rollout::Priority::parse(&["zone=z1:50", "zone=z2:20"]).unwrap()
            } else {
                Default::default()
            },
            canary,
            max_failures,
            min_ready: Duration::from_millis(min_ready_ms),
        };
        let mut r = Rollout::new(inputs, &options, NEW);
        let budget = r.budget();
        let total = cases.len();
        let updated = cases.iter().filter(|c| c.updated).count();
        // The whole rollout order: with --canary N the plan shows the first N, but a planned
        // node that goes NotReady before its turn is passed over for the next one.
        let rollout_order: Vec<String> = r.nodes().map(|(n, _)| n.to_string()).collect();
        let churn = cases.iter().any(|c| c.not_ready_at.is_some());
        // Nodes NotReady at the start already use budget, possibly more than all of it.
        let initially_unavailable = r.occupied();

        // The machine never proposes what it would then refuse (the simulator panics on a
        // rejected event), and never stalls (the simulator panics with no event pending).
        let trace = simulate(&mut r, |n| scripts[n], overhead, true);

        prop_assert_eq!(budget, options.max_unavailable.resolve(total));
        for s in &trace.samples {
            // Never more in flight than the budget; never over budget by our own starts.
            prop_assert!(s.in_flight <= budget, "{s:?} budget {budget}");
            if !churn {
                prop_assert!(s.occupied <= budget.max(initially_unavailable), "{s:?} budget {budget}");
                if initially_unavailable >= budget {
                    prop_assert_eq!(s.in_flight, 0, "started over an exhausted budget: {:?}", s);
                }
            }
            // Sliding window: after every event a free slot is refilled at once if work remains.
            if !s.halted && s.pending > 0 && s.canary_left > 0 {
                prop_assert!(s.occupied >= budget, "slot left idle: {s:?} budget {budget}");
            }
        }

        // Starts follow the rollout order (a node that went NotReady is passed over).
        let pos: HashMap<&str, usize> =
            rollout_order.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let mut last = None;
        for (_, n) in &trace.starts {
            let p = pos[n.as_str()];
            prop_assert!(last.is_none_or(|l| l < p), "{n} started out of order");
            last = Some(p);
        }
        if let Some(c) = canary {
            prop_assert!(trace.starts.len() <= c);
        }

        // Every node ends in a terminal phase; pending only after a halt or a canary stop.
        let started: std::collections::HashSet<&str> =
            trace.starts.iter().map(|(_, n)| n.as_str()).collect();
        let mut failed = 0;
        let mut regressed = 0;
        let mut partitioned = 0;
        for (name, phase) in r.nodes() {
            let script = scripts[name];
            match phase {
                NodePhase::InFlight | NodePhase::Settling { .. } => {
                    return Err(TestCaseError::fail(format!("{name} left {phase:?}")));
                }
                NodePhase::Pending => prop_assert!(
                    !matches!(trace.end, End::Done(Completion::All)),
                    "{name} pending after Done"
                ),
                NodePhase::Upgraded => {
                    prop_assert!(started.contains(name));
                    prop_assert_eq!(script.outcome, Outcome::Succeed);
                }
                NodePhase::Regressed => {
                    prop_assert!(started.contains(name));
                    regressed += 1;
                }
                NodePhase::Failed(kind) => {
                    prop_assert!(started.contains(name));
                    let want = if kind == FailKind::Failed { Outcome::Fail } else { Outcome::TimeOut };
                    prop_assert_eq!(script.outcome, want);
                    failed += 1;
                }
                NodePhase::Skipped(reason) => {
                    prop_assert!(!started.contains(name), "{name} skipped but started");
                    if reason == SkipReason::Partitioned {
                        partitioned += 1;
                    }
                }
            }
        }
        // Partition: the last P nodes of the order (already-updated nodes lead it) stay old.
        let p = options.partition.resolve(total);
        prop_assert_eq!(partitioned, p.min(total - updated));
        // The end is explained by the state.
        match &trace.end {
            End::Done(Completion::All) => {
                prop_assert!(failed <= max_failures && regressed == 0);
                prop_assert_eq!(r.pending(), 0);
            }
            End::Done(Completion::Canary { remaining }) => {
                prop_assert_eq!(Some(trace.starts.len()), canary);
                prop_assert_eq!(*remaining, r.pending());
                prop_assert!(*remaining > 0);
            }
            End::Halt(HaltReason::TooManyFailures { failed: f, .. }) => {
                prop_assert_eq!(f.len(), max_failures + 1);
            }
            End::Halt(HaltReason::UpgradedNodeNotReady { .. }) => prop_assert!(regressed >= 1),
            End::Halt(HaltReason::NoBudget { unavailable, budget: b }) => {
                prop_assert!(unavailable >= b && r.pending() > 0);
            }
        }
        if failed > max_failures || regressed > 0 {
            let is_halt = matches!(trace.end, End::Halt(_));
            prop_assert!(is_halt);
        }
    }

    /// Greedy list scheduling (Graham 1966): with k slots, constant per-node overhead and no
    /// failures, `max(Σt/k, max t) ≤ T ≤ Σt/k + (1 − 1/k)·max t`, and T never exceeds the
    /// batch-barrier schedule of the same order.
    #[test]
    fn makespan_within_graham_bounds(
        durations in prop::collection::vec(1u64..100_000, 1..300),
        max_unavailable in budget_value(64),
        overhead in 0u64..500,
    ) {
        let inputs: Vec<NodeInput> = durations
            .iter()
            .enumerate()
            .map(|(i, _)| NodeInput {
                name: format!("n{i:03}"),
                labels: BTreeMap::new(),
                revision: Some("old".into()),
                ready: true,
            })
            .collect();
        let options = Options {
            max_unavailable: max_unavailable.to_string().parse().unwrap(),
            ..Options::default()
        };
        let mut r = Rollout::new(inputs, &options, NEW);
        let k = r.budget() as u128;
        let trace = simulate(
            &mut r,
            |n| NodeScript::ok(durations[n[1..].parse::<usize>().unwrap()]),
            overhead,
            false,
        );
        prop_assert_eq!(&trace.end, &End::Done(Completion::All));
        let t: Vec<u128> = durations.iter().map(|&d| u128::from(d + overhead)).collect();
        let sum: u128 = t.iter().sum();
        let max = *t.iter().max().unwrap();
        let makespan = u128::from(trace.makespan);
        prop_assert!(k * makespan >= sum, "T {makespan} < Σt/k");
        prop_assert!(makespan >= max);
        prop_assert!(k * makespan <= sum + (k - 1) * max, "T {makespan} above Graham's bound");
        let barrier: u128 = t.chunks(k as usize).map(|c| *c.iter().max().unwrap()).sum();
        prop_assert!(makespan <= barrier, "sliding {makespan} > barrier {barrier}");
        // One Start per node, and the window is kept full.
        prop_assert_eq!(trace.starts.len(), durations.len());
    }
}
