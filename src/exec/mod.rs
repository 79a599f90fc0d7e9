//! Runs what the planners decide (docs/architecture.md#layers): the phase runner, node Jobs in a
//! sliding window, the static-pod rollout driver, the servant Job every node-side step runs in,
//! server dry-run rows and the run lock. Talks to the cluster only through `cluster/`; prints
//! nothing (events go to the reporter).

pub mod dry_run;
pub mod lock;
pub mod node_jobs;
pub mod phases;
pub mod rollout;
pub mod servant_job;
pub mod stop;
