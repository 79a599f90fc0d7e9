//! `staticpod ota apply`: the stored revision installed on the named nodes.

use super::*;
use crate::cluster::jobs::JobImage;

pub(super) async fn ota_apply(g: &GlobalArgs, cmd: OtaApplyCmd) -> Exit {
    let ns = namespace(g);
    let run = LockedRun {
        ns: &ns,
        name: &cmd.name,
        force_unlock: cmd.force_unlock,
        command: "staticpod ota apply",
        pull_secrets: &cmd.image_pull_secrets,
    };
    let refuses = |ctx: &Context| {
        ctx.store_deleted_by_controller()
            .or_else(|| ota_set(ctx, &cmd).err())
    };
    let decided = |ctx, lost| ota_apply_decided(g, &cmd, ctx, lost);
    run_locked(g, run, refuses, decided).await
}

/// The stored set an `ota apply` installs on its nodes, or why there is none.
pub(super) fn ota_set(ctx: &Context, cmd: &OtaApplyCmd) -> Result<StaticSet, Refusal> {
    let ns = &ctx.ns;
    let Some(set) = ctx.set.clone() else {
        return Err(Refusal::Refused(format!(
            "static pod {ns}/{} has no stored revision (ConfigMap {} not found); run `yurtctl staticpod upgrade {} --strategy ota` first",
            cmd.name,
            staticset::configmap_name(&cmd.name),
            cmd.name
        )));
    };
    let unknown: Vec<&str> = cmd
        .nodes
        .iter()
        .filter(|n| !ctx.mirrors.contains_key(*n))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Refusal::Usage(format!(
            "static pod {ns}/{} does not run on {}",
            cmd.name,
            unknown.join(", ")
        )));
    }
    Ok(set)
}

/// `ota apply` from the context read under the lock.
pub(super) async fn ota_apply_decided(
    g: &GlobalArgs,
    cmd: &OtaApplyCmd,
    ctx: Context,
    lost: LostSignal,
) -> Exit {
    let ns = ctx.ns.clone();
    let set = match ota_set(&ctx, cmd) {
        Ok(s) => s,
        Err(r) => return r.report(),
    };
    let targets: Vec<NodeInput> = ctx
        .targets(None)
        .into_iter()
        .filter(|n| cmd.nodes.contains(&n.name))
        .collect();
    let opts = Options {
        max_unavailable: format!("{}", targets.len().max(1))
            .parse::<MaxUnavailable>()
            .unwrap_or_default(),
        ..Options::default()
    };
    let prompt = format!(
        "upgrade static pod {ns}/{} to revision {} on {}?",
        cmd.name,
        set.current.hash,
        cmd.nodes.join(", ")
    );
    let servant = JobImage {
        image: cmd.servant_image.clone(),
        pull_secrets: cmd.image_pull_secrets.clone(),
    };
    let jobs = NodeJobs {
        servant_image: &servant,
        node_timeout: cmd.node_timeout,
    };
    let rep = reporter(g);
    let (work, ota) = (NodeWork::Apply, Strategy::Ota);
    let run = RolloutRun::new(
        &ctx,
        set,
        ota,
        work,
        targets,
        opts,
        jobs,
        rep.as_ref(),
        lost,
    );
    run_table(g, run, &prompt, "staticpod ota apply").await
}
