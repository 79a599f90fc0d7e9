//! `staticpod rollback`: a stored revision rolled out again.

use super::*;

pub(super) async fn rollback(g: &GlobalArgs, cmd: RollbackCmd) -> Exit {
    let ns = namespace(g);
    let opts = match options(&cmd.rollout) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let run = LockedRun {
        ns: &ns,
        name: &cmd.name,
        force_unlock: cmd.rollout.force_unlock,
        command: "staticpod rollback",
        pull_secrets: &cmd.rollout.image_pull_secrets,
    };
    let refuses = |ctx: &Context| {
        rollback_target(ctx, &cmd)
            .err()
            .or_else(|| no_targets(ctx, &cmd.rollout))
            .or_else(|| ctx.controller_down(false))
            .or_else(|| ctx.store_deleted_by_controller())
    };
    let decided = |ctx, lost| rollback_decided(g, &cmd, ctx, opts, lost);
    run_locked(g, run, refuses, decided).await
}

/// `rollback` from the context read under the lock.
pub(super) async fn rollback_decided(
    g: &GlobalArgs,
    cmd: &RollbackCmd,
    ctx: Context,
    opts: Options,
    lost: LostSignal,
) -> Exit {
    let (mut set, to) = match rollback_target(&ctx, cmd) {
        Ok(t) => t,
        Err(r) => return r.report(),
    };
    set.set_current(&to.hash, to.manifest);
    roll(
        g,
        ctx,
        set,
        cmd.strategy,
        &cmd.rollout,
        opts,
        "rollback",
        lost,
    )
    .await
}

/// The stored set and the revision a rollback goes back to, or why there is none.
pub(super) fn rollback_target(
    ctx: &Context,
    cmd: &RollbackCmd,
) -> Result<(StaticSet, Revision), Refusal> {
    let ns = &ctx.ns;
    let Some(stored) = ctx.set.clone() else {
        return Err(Refusal::Refused(format!(
            "static pod {ns}/{} has no recorded revisions (ConfigMap {} not found); nothing to roll back to",
            cmd.name,
            staticset::configmap_name(&cmd.name)
        )));
    };
    let to = match cmd.to_revision {
        Some(r) => stored.revisions().find(|x| x.number == r).cloned(),
        None => stored.history.first().cloned(),
    };
    let Some(to) = to else {
        let known: Vec<String> = stored.revisions().map(|r| r.number.to_string()).collect();
        return Err(Refusal::Usage(format!(
            "no such revision{} of {ns}/{}; known revisions: {}",
            cmd.to_revision.map(|r| format!(" {r}")).unwrap_or_default(),
            cmd.name,
            known.join(", ")
        )));
    };
    Ok((stored, to))
}
