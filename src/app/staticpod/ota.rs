//! `staticpod ota apply`: the stored revision installed on the named nodes.

use super::*;

pub(super) async fn ota_apply(g: &GlobalArgs, cmd: OtaApplyCmd) -> Exit {
    let ns = namespace(g);
    let run = LockedRun {
        ns: &ns,
        name: &cmd.name,
        force_unlock: cmd.force_unlock,
        command: "staticpod ota apply",
    };
    let refuses = |ctx: &Context| ota_set(ctx, &cmd).err();
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
    let target = set.current.hash.clone();
    let opts = Options {
        max_unavailable: format!("{}", targets.len().max(1))
            .parse::<MaxUnavailable>()
            .unwrap_or_default(),
        ..Options::default()
    };
    if g.dry_run.enabled() {
        let p = plan::rollout_plan(&ctx.name, &ns, "ota", targets, &opts, &target);
        let writes = server_dry_run::Writes {
            ctx: &ctx,
            set: &set,
            plan: &p,
            jobs: true,
            conditions: false,
            servant_image: &cmd.servant_image,
            node_timeout: cmd.node_timeout,
        };
        return print_plan(g, &p, writes).await;
    }
    if let Err(e) = confirm(
        g,
        &format!(
            "upgrade static pod {ns}/{} to revision {target} on {}?",
            cmd.name,
            cmd.nodes.join(", ")
        ),
    ) {
        return e;
    }
    let exit = ota_apply_locked(g, &ctx, set, targets, opts, cmd, lost).await;
    settle(&ctx, exit).await
}

pub(super) async fn ota_apply_locked(
    g: &GlobalArgs,
    ctx: &Context,
    set: StaticSet,
    targets: Vec<NodeInput>,
    opts: Options,
    cmd: &OtaApplyCmd,
    lost: LostSignal,
) -> Exit {
    let ns = &ctx.ns;
    let target = set.current.hash.clone();
    let mut result = RolloutResult::new(&ctx.name, ns, "ota");
    result.revision = target.clone();
    result.revision_number = set.current.number;
    let exit = drive(
        g,
        ctx,
        set,
        targets,
        opts,
        cmd.node_timeout,
        &cmd.servant_image,
        result,
        lost,
    )
    .await;
    // The new mirror pods carry no condition yet: mark every pod again.
    if let Err(e) = refresh_conditions(ctx, &target).await {
        return fail(&e);
    }
    exit
}
