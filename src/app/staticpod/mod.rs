//! `yurtctl staticpod upgrade|status|rollback|ota apply`: context (mirror pods, nodes, the
//! revision store) → plan (pure: `plan::staticpod`, `rollout::Rollout`) → confirm → execute
//! (`driver`) → report.

mod adopt;
mod context;
mod ota;
mod phases;
mod roll;
mod rollback;
mod run_lock;
mod status;
mod upgrade;

use crate::output::{Event, Reporter};
use context::*;
use ota::*;
use phases::{NodeJobs, NodeWork, RolloutRun, SETTLE};
use roll::*;
use rollback::*;
use upgrade::*;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::app::common::{
    block_on, confirm, connect_from, fail, print_dry_run, print_structured, reporter, stopped, wide,
};
use crate::app::error::CommandError;
use crate::cli::{
    DryRun, GlobalArgs, OtaApplyCmd, OtaCommand, RollbackCmd, RolloutArgs, StaticPodCommand,
    StaticPodUpgradeCmd, Strategy,
};
use crate::cluster::nodes::list_node_states;
use crate::cluster::staticset::{self, MirrorPod, Revision, RolloutProgress, StaticSet};
use crate::cluster::yurtstaticset::{self, YurtStaticSet};
use crate::cluster::{Cluster, ClusterError};
use crate::exec::dry_run::PlanDocument;
use crate::exec::lock::Held;
use crate::exec::rollout::{Drive, End, LostSignal};
use crate::exit::Exit;
use crate::output::staticpod::{RolloutNode, RolloutResult, rollout_lines};
use crate::plan::staticpod::{
    self as plan, RolloutPlan, parse_pod_file, revision_hash, with_images,
};
use crate::rollout::{Completion, HaltReason, MaxUnavailable, NodeInput, Options, Priority};

pub fn run(g: &GlobalArgs, cmd: StaticPodCommand) -> Exit {
    match cmd {
        StaticPodCommand::Upgrade(c) => block_on(upgrade(g, *c)),
        StaticPodCommand::Rollback(c) => block_on(rollback(g, *c)),
        StaticPodCommand::Status(c) => block_on(status::run(g, c)),
        StaticPodCommand::Ota(OtaCommand::Apply(c)) => block_on(ota_apply(g, c)),
        StaticPodCommand::Adopt(c) => block_on(adopt::run(g, c)),
    }
}

fn namespace(g: &GlobalArgs) -> String {
    g.namespace.clone().unwrap_or_else(|| "default".into())
}

fn usage(msg: impl std::fmt::Display) -> Exit {
    CommandError::Usage(msg.to_string()).report()
}

fn options(r: &RolloutArgs) -> Result<Options, Exit> {
    Ok(Options {
        max_unavailable: r.max_unavailable,
        partition: r.partition,
        priority: Priority::new(r.priority.clone()).map_err(usage)?,
        canary: r.canary,
        max_failures: r.max_failures,
        min_ready: r.min_ready_seconds,
    })
}
