//! `--dry-run=server` for `staticpod upgrade|rollback|ota apply`: the writes the run would make
//! first, sent with `dryRun=All`, so admission and validation answer without anything stored:
//! the apply of ConfigMap `yurt-static-set-NAME`, then per strategy the upgrade Job of every
//! node the plan starts in this run (advanced-rolling-update, `ota apply`) or the
//! `PodNeedUpgrade` patch of every mirror pod whose condition would change (ota).

use std::time::Duration;

use super::Context;
use super::driver::static_pod_job;
use crate::cluster::apply::describe;
use crate::cluster::staticset::{self, StaticSet};
use crate::plan::staticpod::RolloutPlan;

pub use crate::exec::dry_run::Write;

/// What the run would write first.
pub(super) struct Writes<'a> {
    pub ctx: &'a Context,
    /// The store as the run would save it.
    pub set: &'a StaticSet,
    pub plan: &'a RolloutPlan,
    /// Node Jobs for the planned nodes (false: `--pause`, or the ota strategy).
    pub jobs: bool,
    /// `PodNeedUpgrade` patches towards the plan's revision (the ota strategy).
    pub conditions: bool,
    pub servant_image: &'a str,
    pub node_timeout: Duration,
}

impl Writes<'_> {
    pub async fn send(&self) -> Vec<Write> {
        let ctx = self.ctx;
        let mut out = vec![Write::of(
            "apply",
            describe(
                "ConfigMap",
                Some(&ctx.ns),
                &staticset::configmap_name(&ctx.name),
            ),
            staticset::apply_store(&ctx.cluster, self.set, true).await,
        )];
        if self.conditions {
            for m in ctx.mirrors.values() {
                let need = m.revision.as_deref() != Some(self.plan.revision.as_str());
                let r = staticset::set_need_upgrade(&ctx.cluster, &ctx.ns, m, need, true).await;
                // false: the condition already says so and the run would not write.
                if !matches!(r, Ok(false)) {
                    out.push(Write::of(
                        "patch",
                        format!("{} on pod {}/{}", staticset::NEED_UPGRADE, ctx.ns, m.pod),
                        r.map(drop),
                    ));
                }
            }
        }
        if self.jobs {
            let (up, _) = crate::naming::static_pod_actions(&ctx.name);
            for n in &self.plan.nodes {
                let spec = static_pod_job(
                    &up,
                    &n.name,
                    self.set,
                    self.servant_image,
                    false,
                    self.node_timeout,
                );
                out.push(
                    crate::exec::dry_run::create_job(
                        &ctx.cluster,
                        &ctx.ns,
                        &spec,
                        self.node_timeout,
                    )
                    .await,
                );
            }
        }
        out
    }
}
