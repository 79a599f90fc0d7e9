//! A tiny discrete-event simulator that drives a [`Rollout`] with scripted per-node outcomes, in
//! logical time (no sleeps). Used by the tests, the `rollout_schedule` benchmark, and (later)
//! to show `--dry-run` windows for estimated durations.
//!
//! After every single event the simulator runs the machine to a fixed point (acknowledging
//! every proposal) and records a [`Sample`], so a trace shows the window after each completion.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::machine::{Action, Completion, HaltReason, LogicalTime, NodeEvent, Rollout};

/// What happens to a node once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Ready on the new revision after the duration.
    Succeed,
    /// The upgrade fails after the duration.
    Fail,
    /// The upgrade times out after the duration.
    TimeOut,
}

/// The script of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeScript {
    /// Milliseconds from start to the outcome.
    pub duration: u64,
    pub outcome: Outcome,
    /// Absolute logical time (ms) at which the node goes NotReady, whatever it is doing.
    pub not_ready_at: Option<u64>,
}

impl NodeScript {
    pub fn ok(duration: u64) -> Self {
        NodeScript {
            duration,
            outcome: Outcome::Succeed,
            not_ready_at: None,
        }
    }
}

/// The machine's state after one event and its follow-up actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub time: u64,
    pub in_flight: usize,
    pub occupied: usize,
    pub pending: usize,
    pub started: usize,
    pub halted: bool,
    pub canary_left: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Done(Completion),
    Halt(HaltReason),
}

#[derive(Debug, Clone)]
pub struct Trace {
    pub end: End,
    /// Time of the terminal action (ms).
    pub makespan: u64,
    pub samples: Vec<Sample>,
    /// (time, node) of every start, in order.
    pub starts: Vec<(u64, String)>,
    pub actions: usize,
    pub events: usize,
    pub next_actions_calls: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    NotReady,
    Finish,
    Wake,
}

/// Runs `rollout` to its end. `script(name)` gives each node's behaviour; `overhead` (ms) is
/// added to every node's duration (control-loop latency: Job creation, watch delivery).
/// `record` keeps a sample per event (memory O(events)).
///
/// Panics if the machine rejects an event the simulator derived from its own proposals (a bug)
/// or if it stops making progress.
pub fn simulate(
    rollout: &mut Rollout,
    script: impl Fn(&str) -> NodeScript,
    overhead: u64,
    record: bool,
) -> Trace {
    let mut queue: BinaryHeap<Reverse<(u64, u64, Kind, String)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut ready_at: HashMap<String, u64> = HashMap::new();
    let mut scripts: HashMap<String, NodeScript> = HashMap::new();
    for (name, _) in rollout.nodes() {
        let s = script(name);
        if let Some(t) = s.not_ready_at {
            seq += 1;
            queue.push(Reverse((t, seq, Kind::NotReady, name.to_string())));
        }
        scripts.insert(name.to_string(), s);
    }
    let mut trace = Trace {
        end: End::Done(Completion::All),
        makespan: 0,
        samples: Vec::new(),
        starts: Vec::new(),
        actions: 0,
        events: 0,
        next_actions_calls: 0,
    };
    let mut now = 0u64;
    let apply = |r: &mut Rollout, e: NodeEvent, trace: &mut Trace| {
        trace.events += 1;
        r.apply(e.clone())
            .unwrap_or_else(|err| panic!("simulator event {e:?} rejected: {err}"));
    };
    loop {
        // Fixed point at `now`.
        let mut end = None;
        loop {
            trace.next_actions_calls += 1;
            let actions = rollout.next_actions(LogicalTime(now));
            trace.actions += actions.len();
            let mut acted = false;
            for a in actions {
                match a {
                    Action::Skip(n, _) => {
                        apply(rollout, NodeEvent::Skipped(n), &mut trace);
                        acted = true;
                    }
                    Action::Settled(n) => {
                        let at = ready_at[&n];
                        let duration = std::time::Duration::from_millis(now - at);
                        apply(
                            rollout,
                            NodeEvent::ReadyFor { node: n, duration },
                            &mut trace,
                        );
                        acted = true;
                    }
                    Action::Start(n) => {
                        let s = scripts[&n];
                        seq += 1;
                        queue.push(Reverse((
                            now + overhead + s.duration,
                            seq,
                            Kind::Finish,
                            n.clone(),
                        )));
                        trace.starts.push((now, n.clone()));
                        apply(rollout, NodeEvent::Started(n), &mut trace);
                        acted = true;
                    }
                    Action::WakeAt(t) => {
                        seq += 1;
                        queue.push(Reverse((t.as_millis(), seq, Kind::Wake, String::new())));
                    }
                    Action::Halt(h) => end = Some(End::Halt(h)),
                    Action::Done(c) => end = Some(End::Done(c)),
                }
            }
            if !acted {
                break;
            }
        }
        if record {
            trace.samples.push(Sample {
                time: now,
                in_flight: rollout.in_flight(),
                occupied: rollout.occupied(),
                pending: rollout.pending(),
                started: rollout.started(),
                halted: rollout.halt_reason().is_some(),
                canary_left: rollout.canary_left(),
            });
        }
        if let Some(end) = end {
            trace.end = end;
            trace.makespan = now;
            return trace;
        }
        let Some(Reverse((t, _, kind, name))) = queue.pop() else {
            panic!("rollout stalled at {now} ms with no event pending");
        };
        now = t;
        match kind {
            Kind::Wake => {}
            Kind::NotReady => apply(rollout, NodeEvent::BecameNotReady(name), &mut trace),
            Kind::Finish => {
                let e = match scripts[&name].outcome {
                    Outcome::Succeed => {
                        ready_at.insert(name.clone(), now);
                        NodeEvent::Upgraded {
                            node: name,
                            ready_at: LogicalTime(now),
                        }
                    }
                    Outcome::Fail => NodeEvent::Failed(name),
                    Outcome::TimeOut => NodeEvent::TimedOut(name),
                };
                apply(rollout, e, &mut trace);
            }
        }
    }
}
