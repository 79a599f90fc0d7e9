//! Plan, confirm, store the revision and carry out the strategy under the lock.

use super::*;
use crate::cluster::jobs::JobImage;

/// Plan, confirm, store the revision and carry out the strategy (under the lock, whose loss
/// `lost` signals, when not a dry run).
#[allow(clippy::too_many_arguments)]
pub(super) async fn roll(
    g: &GlobalArgs,
    ctx: Context,
    mut set: StaticSet,
    strategy: Strategy,
    args: &RolloutArgs,
    opts: Options,
    verb: &str,
    lost: LostSignal,
) -> Exit {
    if let Some(r) = no_targets(&ctx, args) {
        return r.report();
    }
    let targets = ctx.targets(args.selector.as_ref());
    aim(&mut set, strategy);
    let work = match strategy {
        Strategy::Ota => NodeWork::Mark,
        Strategy::AdvancedRollingUpdate if args.pause => NodeWork::Paused,
        Strategy::AdvancedRollingUpdate => NodeWork::Roll,
    };
    if g.dry_run.enabled()
        && let Some(y) = &ctx.yss
    {
        eprintln!(
            "note: YurtStaticSet {}/{} manages this static pod: the run sets its template and holds its upgradeStrategy at OTA while yurtctl drives the nodes; yurt-manager computes the revision (the one shown is yurtctl's)",
            y.namespace, y.name
        );
    }
    let prompt = format!(
        "{verb} static pod {}/{} to revision {} on {} node(s)?",
        ctx.ns,
        ctx.name,
        set.current.hash,
        targets.len()
    );
    let rep = reporter(g);
    let servant = JobImage {
        image: args.servant_image.clone(),
        pull_secrets: args.image_pull_secrets.clone(),
    };
    let jobs = NodeJobs {
        servant_image: &servant,
        node_timeout: args.node_timeout,
    };
    let run = RolloutRun::new(
        &ctx,
        set,
        strategy,
        work,
        targets,
        opts,
        jobs,
        rep.as_ref(),
        lost,
    );
    run_table(g, run, &prompt, &format!("staticpod {verb}")).await
}

/// The end of every rollout command: `--dry-run` prints the plan (under `=server` with the
/// writes of the same table); otherwise, once confirmed, the table runs, the result is
/// printed and a YurtStaticSet gets its strategy back ([`settle`]).
pub(super) async fn run_table(
    g: &GlobalArgs,
    mut run: RolloutRun<'_>,
    prompt: &str,
    command: &str,
) -> Exit {
    if g.dry_run.enabled() {
        return print_plan(g, &run).await;
    }
    // the full plan is for --dry-run and -o wide; a summary keeps 10,000 nodes readable
    let plan = if wide(g) {
        plan::plan_lines(&run.plan)
    } else {
        plan::summary_lines(&run.plan)
    };
    for l in plan {
        eprintln!("{l}");
    }
    if let Err(e) = confirm(g, prompt).await {
        return e;
    }
    let ended = crate::exec::phases::run(&phases::table(), &mut run).await;
    let exit = match stopped(&ended, command) {
        None => run.exit,
        Some((message, exit)) => {
            run.result.message = message;
            exit
        }
    };
    let exit = finish(g, run.result, exit);
    settle(run.ctx, &mut run.set, run.strategy, exit, run.rep).await
}

/// The progress record follows the target: a new target or strategy starts a new one.
pub(super) fn aim(set: &mut StaticSet, strategy: Strategy) {
    let target = &set.current.hash;
    if set.progress.target != *target || set.progress.strategy != strategy.as_str() {
        set.progress = RolloutProgress {
            target: target.clone(),
            strategy: strategy.as_str().into(),
            nodes: BTreeMap::new(),
        };
    }
}

/// How long yurt-manager may take to render a YurtStaticSet's template into its ConfigMap.
pub(super) const RENDER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// With a YurtStaticSet, its controller publishes the manifest: the set gets the current
/// revision's template and is held at OTA (so the controller upgrades no node itself), and the
/// revision becomes the one the controller rendered.
pub(super) async fn publish(
    ctx: &Context,
    yss: &YurtStaticSet,
    set: &mut StaticSet,
    strategy: Strategy,
) -> Result<(), ClusterError> {
    let pod: Value =
        serde_saphyr::from_str(&set.current.manifest).map_err(|e| ClusterError::InvalidObject {
            object: format!("revision {} of {}/{}", set.current.number, ctx.ns, ctx.name),
            message: format!("its manifest is not YAML ({e})"),
        })?;
    let template = yurtstaticset::template_for(&yss.template, &pod);
    let (hash, manifest) = render(ctx, yss, &template).await?;
    if hash != set.current.hash {
        set.history.retain(|r| r.hash != hash);
        set.current.hash = hash;
    }
    set.current.manifest = manifest;
    aim(set, strategy);
    Ok(())
}

/// Holds the set at OTA with `template`; the controller's rendering of it (hash, manifest).
async fn render(
    ctx: &Context,
    yss: &YurtStaticSet,
    template: &Value,
) -> Result<(String, String), ClusterError> {
    yurtstaticset::hold(&ctx.cluster, &ctx.ns, &ctx.name, template).await?;
    yurtstaticset::wait_rendered(
        &ctx.cluster,
        &ctx.ns,
        &ctx.name,
        &yss.manifest_key,
        template,
        RENDER_TIMEOUT,
    )
    .await
}

/// After a run on a YurtStaticSet: the user's strategy goes back when every node runs the
/// target, or when the run failed or was interrupted; a rollout left partial on purpose
/// (`--partition`, `--pause`, a canary, OTA) keeps the set at OTA so the controller does not
/// finish it on its own. A run that stopped before every node ran its target first puts the
/// set's template back as it was before the run ([`take_back`]).
pub(super) async fn settle(
    ctx: &Context,
    set: &mut StaticSet,
    strategy: Strategy,
    exit: Exit,
    rep: &dyn Reporter,
) -> Exit {
    let Some(yss) = &ctx.yss else {
        return exit;
    };
    let behind = match nodes_off(ctx, &set.current.hash).await {
        Ok(b) => b,
        Err(e) => return worse(exit, fail(&e)),
    };
    let what = format!("YurtStaticSet {}/{}", ctx.ns, ctx.name);
    let note = |message| {
        rep.event(Event::Note {
            phase: SETTLE,
            message,
        })
    };
    if exit == Exit::Ok && !behind.is_empty() {
        note(format!(
            "{what} stays on upgradeStrategy OTA while {} node(s) run an older revision ({}); the run that completes the rollout puts back {}",
            behind.len(),
            behind.join(", "),
            yss.user_strategy()
        ));
        return exit;
    }
    if exit != Exit::Ok && !behind.is_empty() {
        match take_back(ctx, yss, set, strategy).await {
            Ok(None) => {}
            Ok(Some(moved)) => {
                let returns = match moved {
                    0 => String::new(),
                    n if yss.user_strategy()["type"] == "OTA" => {
                        format!("; it marks the {n} node(s) on the stopped revision PodNeedUpgrade")
                    }
                    n => format!("; it returns the {n} node(s) on the stopped revision"),
                };
                note(format!(
                    "{what}: template back to revision {} as before the run, so yurt-manager does not spread the revision yurtctl stopped{returns}. Re-run the same command to resume.",
                    set.current.hash
                ))
            }
            Err(e) => {
                let err = CommandError::at(format!("{what}: putting the template back: "), e);
                let message = format!(
                    "{err}; the set is still held at upgradeStrategy OTA with the stopped revision: re-run, or roll back with `yurtctl staticpod rollback {} -n {}`",
                    ctx.name, ctx.ns
                );
                let exit_code = err.exit();
                return worse(
                    exit,
                    CommandError::Stopped {
                        message,
                        exit: exit_code,
                    }
                    .report(),
                );
            }
        }
    }
    match yurtstaticset::release(&ctx.cluster, &ctx.ns, &ctx.name).await {
        Ok(true) => {
            note(format!(
                "{what}: upgradeStrategy {} put back",
                yss.user_strategy()
            ));
            exit
        }
        Ok(false) => exit,
        Err(e) => {
            let held =
                CommandError::at(format!("{what} is still held at upgradeStrategy OTA: "), e);
            let next = format!(
                "; re-run, or set spec.upgradeStrategy back to {} and remove annotation {}",
                yss.user_strategy(),
                yurtstaticset::HELD_STRATEGY_ANNOTATION
            );
            let message = format!("{held}{next}");
            worse(
                exit,
                CommandError::Stopped {
                    message,
                    exit: held.exit(),
                }
                .report(),
            )
        }
    }
}

/// The first failure wins; a success gives way to a later failure.
pub(super) fn worse(first: Exit, then: Exit) -> Exit {
    if first == Exit::Ok { then } else { first }
}

/// Nodes whose mirror pod does not run `target`.
async fn nodes_off(ctx: &Context, target: &str) -> Result<Vec<String>, ClusterError> {
    let mirrors = staticset::mirror_pods(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    Ok(mirrors
        .by_node
        .into_iter()
        .filter(|(_, m)| m.revision.as_deref() != Some(target))
        .map(|(n, _)| n)
        .collect())
}

/// A run that stopped (a failure, Ctrl-C) before every node ran its target: the set's template
/// goes back to the one it had before the run, and the stored revision with it, so that once
/// the user's strategy is back yurt-manager does not spread a revision yurtctl stopped, and
/// yurtctl and the controller agree on the desired manifest. Returns how many nodes run the
/// stopped revision (with `AdvancedRollingUpdate` the controller returns them), or `None` when
/// the run did not change the template.
async fn take_back(
    ctx: &Context,
    yss: &YurtStaticSet,
    set: &mut StaticSet,
    strategy: Strategy,
) -> Result<Option<usize>, ClusterError> {
    let now = yurtstaticset::get(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    if now.is_none_or(|n| n.template == yss.template) {
        return Ok(None);
    }
    let stopped = set.current.hash.clone();
    let (hash, manifest) = render(ctx, yss, &yss.template).await?;
    set.set_current(&hash, manifest);
    aim(set, strategy);
    staticset::save(&ctx.cluster, set).await?;
    let mirrors = staticset::mirror_pods(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    Ok(Some(
        mirrors
            .by_node
            .values()
            .filter(|m| m.revision.as_deref() == Some(stopped.as_str()))
            .count(),
    ))
}

/// `--dry-run`: the plan; with `=server` also the writes the run's table would make, sent
/// with `dryRun=All` (a refused one is exit 3 with the server's message).
pub(super) async fn print_plan(g: &GlobalArgs, run: &RolloutRun<'_>) -> Exit {
    let answers = match g.dry_run {
        DryRun::Server => match crate::exec::phases::dry_run(&phases::table(), run).await {
            Ok(a) => Some(a),
            Err(e) => return fail(&e),
        },
        _ => None,
    };
    let doc = PlanDocument {
        header: None,
        command: None,
        plan: &run.plan,
        objects: None,
        server_dry_run: answers.as_deref(),
    };
    let text: String = plan::plan_lines(&run.plan)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    print_dry_run(g, &doc, &text, "")
}

pub(super) fn finish(g: &GlobalArgs, mut result: RolloutResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    if !print_structured(g, &result) {
        for l in rollout_lines(&result, wide(g)) {
            eprintln!("{l}");
        }
    }
    exit
}
