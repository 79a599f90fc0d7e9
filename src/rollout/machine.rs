//! The rollout state machine: node states + options → next actions; events → new state.
//!
//! Protocol. [`Rollout::next_actions`] is a pure function of the state and a logical time; it
//! proposes what to do now. The driver carries out what it chooses and reports facts back with
//! [`Rollout::apply`]. Every proposal is repeated until its acknowledging event arrives:
//! `Start` → [`NodeEvent::Started`], `Skip` → [`NodeEvent::Skipped`], `Settled` → [`NodeEvent::ReadyFor`].
//! `Done` and `Halt` are terminal and only proposed when nothing is in flight. Apply the
//! acknowledgements in the order the actions were given (a `Settled` frees the slot a following
//! `Start` uses).
//!
//! Budget. A node *occupies* a slot of `--max-unavailable` while it is being upgraded (started,
//! not yet Ready on the new revision), while it is settling (Ready on the new revision for less
//! than `--min-ready-seconds`), and while it is NotReady after this run handled it (failed, or
//! upgraded and gone down since). Nodes skipped as NotReady (at the start or before their turn)
//! are reported and use no budget, as in OpenYurt's AdvancedRollingUpdate and OpenKruise's
//! Advanced DaemonSet; a later run picks them up. Starts are proposed only while occupied slots < budget, and
//! every slot freed by an event is offered again by the very next `next_actions` call (sliding
//! window, never a batch barrier). `apply(Started)` refuses a start that would exceed the budget.
//!
//! Cost. `next_actions` is O(unacknowledged skips + settling nodes + starts proposed); `apply` is
//! O(1) amortised. A whole rollout of N nodes with budget k costs O(N·k) at worst, O(N) typically.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

pub use super::vocabulary::*;

#[derive(Debug, Clone)]
struct Node {
    name: String,
    ready: bool,
    phase: NodePhase,
}

impl Node {
    /// Does this node use a slot of the budget?
    fn occupies(&self) -> bool {
        match self.phase {
            NodePhase::InFlight | NodePhase::Settling { .. } => true,
            // Skipped nodes are reported, not upgraded, and do not use budget (OpenYurt's and
            // OpenKruise's Advanced DaemonSet skip NotReady nodes the same way).
            NodePhase::Skipped(_) => false,
            _ => !self.ready,
        }
    }
}

/// Counts for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub total: usize,
    pub budget: usize,
    pub upgraded: usize,
    pub in_flight: usize,
    pub settling: usize,
    pub pending: usize,
    pub failed: usize,
    pub regressed: usize,
    pub skipped: BTreeMap<SkipReason, usize>,
}

/// The rollout state.
#[derive(Debug, Clone)]
pub struct Rollout {
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
    /// Nodes to upgrade in this run, in order.
    order: Vec<usize>,
    /// order[..cursor] are no longer Pending.
    cursor: usize,
    budget: usize,
    occupied: usize,
    in_flight: usize,
    settling: BTreeSet<usize>,
    started: usize,
    pending: usize,
    canary: Option<usize>,
    max_failures: usize,
    min_ready: Duration,
    failed: Vec<usize>,
    halt: Option<HaltReason>,
    unreported_skips: BTreeSet<usize>,
}

impl Rollout {
    /// Classifies the nodes (names must be unique; a repeated name is ignored): the order is the priority order with nodes already on `target`
    /// first (as OpenKruise's Advanced DaemonSet does), then the last `partition` nodes of that
    /// order are kept back. NotReady nodes are skipped (and use no budget).
    pub fn new(mut nodes: Vec<NodeInput>, options: &Options, target: &str) -> Self {
        // Node names are unique in a cluster; keep the first of a repeated one.
        let mut seen = HashSet::with_capacity(nodes.len());
        nodes.retain(|n| seen.insert(n.name.clone()));
        options
            .priority
            .sort_by_priority(&mut nodes, |n| &n.name, |n| &n.labels);
        // Stable partition: already-updated first, each half keeping priority order.
        let is_updated = |n: &NodeInput| n.revision.as_deref() == Some(target);
        let (mut sorted, rest): (Vec<NodeInput>, Vec<NodeInput>) =
            nodes.into_iter().partition(is_updated);
        sorted.extend(rest);

        let total = sorted.len();
        let budget = options.max_unavailable.resolve(total);
        let in_scope = total - options.partition.resolve(total);

        let mut out = Rollout {
            nodes: Vec::with_capacity(total),
            index: HashMap::with_capacity(total),
            order: Vec::new(),
            cursor: 0,
            budget,
            occupied: 0,
            in_flight: 0,
            settling: BTreeSet::new(),
            started: 0,
            pending: 0,
            canary: options.canary,
            max_failures: options.max_failures,
            min_ready: options.min_ready,
            failed: Vec::new(),
            halt: None,
            unreported_skips: BTreeSet::new(),
        };
        for (pos, n) in sorted.into_iter().enumerate() {
            let phase = if is_updated(&n) {
                NodePhase::Skipped(SkipReason::AlreadyUpdated)
            } else if pos >= in_scope {
                NodePhase::Skipped(SkipReason::Partitioned)
            } else if !n.ready {
                NodePhase::Skipped(SkipReason::NotReady)
            } else {
                NodePhase::Pending
            };
            let i = out.nodes.len();
            if phase == NodePhase::Pending {
                out.order.push(i);
                out.pending += 1;
            } else {
                out.unreported_skips.insert(i);
            }
            let node = Node {
                name: n.name,
                ready: n.ready,
                phase,
            };
            out.occupied += usize::from(node.occupies());
            out.index.insert(node.name.clone(), i);
            out.nodes.push(node);
        }
        out
    }

    /// The resolved `--max-unavailable` budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Nodes using budget now (upgrading, settling, or NotReady).
    pub fn occupied(&self) -> usize {
        self.occupied
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn halt_reason(&self) -> Option<&HaltReason> {
        self.halt.as_ref()
    }

    /// The planned upgrade order of this run (for `--dry-run`), canary included.
    pub fn planned_order(&self) -> Vec<&str> {
        let n = self.canary.unwrap_or(usize::MAX).min(self.order.len());
        self.order[..n]
            .iter()
            .map(|&i| self.nodes[i].name.as_str())
            .collect()
    }

    /// The planned windows of this run (for `--dry-run`): the planned order cut into groups of
    /// the slots free at the start (budget minus already-unavailable nodes). With equal
    /// durations the sliding window starts exactly these groups together; otherwise each node
    /// starts as soon as any slot frees. Empty when no slot is free.
    pub fn planned_windows(&self) -> Vec<Vec<&str>> {
        let free = self.budget.saturating_sub(self.occupied);
        if free == 0 {
            return Vec::new();
        }
        self.planned_order()
            .chunks(free)
            .map(<[&str]>::to_vec)
            .collect()
    }

    /// All nodes with their phase, in rollout order (already-updated first, partitioned last).
    pub fn nodes(&self) -> impl Iterator<Item = (&str, NodePhase)> {
        self.nodes.iter().map(|n| (n.name.as_str(), n.phase))
    }

    pub fn phase(&self, node: &str) -> Option<NodePhase> {
        self.index.get(node).map(|&i| self.nodes[i].phase)
    }

    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            total: self.nodes.len(),
            budget: self.budget,
            ..Summary::default()
        };
        for n in &self.nodes {
            match n.phase {
                NodePhase::Pending => s.pending += 1,
                NodePhase::InFlight => s.in_flight += 1,
                NodePhase::Settling { .. } => s.settling += 1,
                NodePhase::Upgraded => s.upgraded += 1,
                NodePhase::Failed(_) => s.failed += 1,
                NodePhase::Regressed => s.regressed += 1,
                NodePhase::Skipped(r) => *s.skipped.entry(r).or_default() += 1,
            }
        }
        s
    }

    /// Nodes still waiting for their turn in this run.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Nodes this run has started.
    pub fn started(&self) -> usize {
        self.started
    }

    /// Starts left before the `--canary` limit (`usize::MAX` without one).
    pub fn canary_left(&self) -> usize {
        self.canary
            .map_or(usize::MAX, |c| c.saturating_sub(self.started))
    }

    fn settled_by(&self, i: usize, now: LogicalTime) -> bool {
        matches!(self.nodes[i].phase, NodePhase::Settling { ready_at } if ready_at.saturating_add(self.min_ready) <= now)
    }

    /// What to do at `now`. Pure: the same state and time give the same actions.
    pub fn next_actions(&self, now: LogicalTime) -> Vec<Action> {
        let mut actions = Vec::new();
        for &i in &self.unreported_skips {
            if let NodePhase::Skipped(r) = self.nodes[i].phase {
                actions.push(Action::Skip(self.nodes[i].name.clone(), r));
            }
        }
        let mut freed = 0;
        let mut wake: Option<LogicalTime> = None;
        for &i in &self.settling {
            if self.settled_by(i, now) {
                freed += 1;
                actions.push(Action::Settled(self.nodes[i].name.clone()));
            } else if let NodePhase::Settling { ready_at } = self.nodes[i].phase {
                let at = ready_at.saturating_add(self.min_ready);
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
        }
        let busy = self.in_flight + self.settling.len() - freed;
        let pending_left = self.pending > 0;
        if self.halt.is_none() {
            let occupied = self.occupied - freed;
            let mut slots = self.budget.saturating_sub(occupied).min(self.canary_left());
            let mut starts = 0;
            if slots > 0 {
                for &i in &self.order[self.cursor..] {
                    if slots == 0 {
                        break;
                    }
                    if self.nodes[i].phase == NodePhase::Pending {
                        actions.push(Action::Start(self.nodes[i].name.clone()));
                        slots -= 1;
                        starts += 1;
                    }
                }
            }
            if busy == 0 && starts == 0 {
                if !pending_left {
                    actions.push(Action::Done(Completion::All));
                } else if self.canary_left() == 0 {
                    actions.push(Action::Done(Completion::Canary {
                        remaining: self.pending,
                    }));
                } else {
                    actions.push(Action::Halt(HaltReason::NoBudget {
                        unavailable: occupied,
                        budget: self.budget,
                    }));
                }
            }
        } else if busy == 0 {
            actions.push(Action::Halt(self.halt.clone().expect("halted")));
        }
        if let Some(w) = wake {
            actions.push(Action::WakeAt(w));
        }
        actions
    }

    /// Records a fact reported by the driver.
    pub fn apply(&mut self, event: NodeEvent) -> Result<(), ApplyError> {
        let (name, ev_name) = match &event {
            NodeEvent::Started(n) => (n, "Started"),
            NodeEvent::Upgraded { node, .. } => (node, "Upgraded"),
            NodeEvent::ReadyFor { node, .. } => (node, "ReadyFor"),
            NodeEvent::Failed(n) => (n, "Failed"),
            NodeEvent::TimedOut(n) => (n, "TimedOut"),
            NodeEvent::BecameNotReady(n) => (n, "BecameNotReady"),
            NodeEvent::BecameReady(n) => (n, "BecameReady"),
            NodeEvent::Skipped(n) => (n, "Skipped"),
        };
        let i = *self
            .index
            .get(name)
            .ok_or_else(|| ApplyError::UnknownNode(name.clone()))?;
        let invalid = |node: &Node| ApplyError::InvalidTransition {
            node: node.name.clone(),
            event: ev_name,
            phase: node.phase.name(),
        };
        let before = self.nodes[i].occupies();
        let was_pending = self.nodes[i].phase == NodePhase::Pending;
        match event {
            NodeEvent::Started(_) => {
                let node = &self.nodes[i];
                if node.phase != NodePhase::Pending {
                    return Err(invalid(node));
                }
                if let Some(why) = if self.halt.is_some() {
                    Some("halted")
                } else if self.canary_left() == 0 {
                    Some("at its --canary limit")
                } else {
                    None
                } {
                    return Err(ApplyError::NotStarting {
                        node: node.name.clone(),
                        why,
                    });
                }
                if self.occupied >= self.budget {
                    return Err(ApplyError::OverBudget {
                        node: node.name.clone(),
                        occupied: self.occupied + 1,
                        budget: self.budget,
                    });
                }
                self.nodes[i].phase = NodePhase::InFlight;
                self.in_flight += 1;
                self.started += 1;
            }
            NodeEvent::Upgraded { ready_at, .. } => {
                if !matches!(self.nodes[i].phase, NodePhase::InFlight) {
                    return Err(invalid(&self.nodes[i]));
                }
                self.in_flight -= 1;
                self.nodes[i].ready = true;
                if self.min_ready.is_zero() {
                    self.nodes[i].phase = NodePhase::Upgraded;
                } else {
                    self.nodes[i].phase = NodePhase::Settling { ready_at };
                    self.settling.insert(i);
                }
            }
            NodeEvent::ReadyFor { duration, .. } => match self.nodes[i].phase {
                NodePhase::Settling { .. } => {
                    if duration >= self.min_ready {
                        self.nodes[i].phase = NodePhase::Upgraded;
                        self.settling.remove(&i);
                    }
                }
                // A late report for a node already counted, or one that went NotReady since:
                // harmless.
                NodePhase::Upgraded | NodePhase::Regressed => {}
                _ => return Err(invalid(&self.nodes[i])),
            },
            NodeEvent::Failed(_) | NodeEvent::TimedOut(_) => {
                let kind = if matches!(event, NodeEvent::Failed(_)) {
                    FailKind::Failed
                } else {
                    FailKind::TimedOut
                };
                if !matches!(self.nodes[i].phase, NodePhase::InFlight) {
                    return Err(invalid(&self.nodes[i]));
                }
                self.in_flight -= 1;
                self.nodes[i].phase = NodePhase::Failed(kind);
                self.failed.push(i);
                if self.failed.len() > self.max_failures && self.halt.is_none() {
                    self.halt = Some(HaltReason::TooManyFailures {
                        failed: self
                            .failed
                            .iter()
                            .map(|&f| self.nodes[f].name.clone())
                            .collect(),
                        max_failures: self.max_failures,
                    });
                }
            }
            NodeEvent::BecameNotReady(_) => {
                self.nodes[i].ready = false;
                match self.nodes[i].phase {
                    NodePhase::Pending => {
                        self.nodes[i].phase = NodePhase::Skipped(SkipReason::NotReady);
                        self.unreported_skips.insert(i);
                    }
                    NodePhase::Settling { .. } | NodePhase::Upgraded => {
                        self.settling.remove(&i);
                        self.nodes[i].phase = NodePhase::Regressed;
                        if self.halt.is_none() {
                            self.halt = Some(HaltReason::UpgradedNodeNotReady {
                                node: self.nodes[i].name.clone(),
                            });
                        }
                    }
                    // In flight: the upgrade's own result (or its timeout) decides.
                    _ => {}
                }
            }
            NodeEvent::BecameReady(_) => {
                // A node skipped as NotReady stays skipped: a later run picks it up.
                self.nodes[i].ready = true;
            }
            NodeEvent::Skipped(_) => {
                if !matches!(self.nodes[i].phase, NodePhase::Skipped(_)) {
                    return Err(invalid(&self.nodes[i]));
                }
                self.unreported_skips.remove(&i);
            }
        }
        let after = self.nodes[i].occupies();
        if was_pending && self.nodes[i].phase != NodePhase::Pending {
            self.pending -= 1;
        }
        self.occupied = self.occupied + usize::from(after) - usize::from(before);
        while self.cursor < self.order.len()
            && self.nodes[self.order[self.cursor]].phase != NodePhase::Pending
        {
            self.cursor += 1;
        }
        Ok(())
    }
}
