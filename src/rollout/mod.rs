//! PURE static-pod rollout state machine: (node states, options) → next actions.
//!
//! No I/O, no async, no clocks: time is a [`LogicalTime`] the driver passes in. The app layer
//! drives it with cluster events (Jobs, mirror pods, node readiness); tests and the
//! `rollout_schedule` benchmark drive it with a discrete-event simulation.
//!
//! - [`budget`]: `--max-unavailable` / `--partition` (int or percent, OpenKruise rounding).
//! - [`priority`]: `--priority LABEL=VALUE:WEIGHT` and the deterministic node order.
//! - [`machine`]: the sliding-window state machine; [`vocabulary`]: its inputs, actions and
//!   events, and [`NodeResult`], the one spelling of how each node ended.
//! - [`sim`]: a discrete-event simulator driving the machine in logical time.

pub mod budget;
pub mod machine;
pub mod priority;
pub mod sim;
pub mod vocabulary;

pub use budget::{BudgetFlag, BudgetParseError, IntOrPercent, MaxUnavailable, Partition};
pub use machine::{
    Action, ApplyError, Completion, FailKind, HaltReason, LogicalTime, NodeEvent, NodeInput,
    NodePhase, NodeResult, Options, Rollout, SkipReason, Summary, UnknownNodeResult,
};
pub use priority::{Priority, PriorityParseError, PriorityTerm};
