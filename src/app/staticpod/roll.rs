//! Plan, confirm, store the revision and carry out the strategy under the lock.

use super::*;

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
    let target = set.current.hash.clone();
    if g.dry_run.enabled() {
        if let Some(y) = &ctx.yss {
            eprintln!(
                "note: YurtStaticSet {}/{} manages this static pod: the run sets its template and holds its upgradeStrategy at OTA while yurtctl drives the nodes; yurt-manager computes the revision (the one shown is yurtctl's)",
                y.namespace, y.name
            );
        }
        let p = plan::rollout_plan(
            &ctx.name,
            &ctx.ns,
            strategy.as_str(),
            targets,
            &opts,
            &target,
        );
        let rolls = strategy == Strategy::AdvancedRollingUpdate && !args.pause;
        let writes = server_dry_run::Writes {
            ctx: &ctx,
            set: &set,
            plan: &p,
            jobs: rolls,
            conditions: strategy == Strategy::Ota,
            servant_image: &args.servant_image,
            node_timeout: args.node_timeout,
        };
        return print_plan(g, &p, writes).await;
    }
    if let Err(e) = confirm(
        g,
        &format!(
            "{verb} static pod {}/{} to revision {target} on {} node(s)?",
            ctx.ns,
            ctx.name,
            targets.len()
        ),
    ) {
        return e;
    }
    let exit = roll_locked(g, &ctx, set, strategy, args, opts, targets, lost).await;
    settle(&ctx, exit).await
}

/// The progress record follows the target: a new target or strategy starts a new one.
pub(super) fn aim(set: &mut StaticSet, strategy: Strategy) {
    let target = &set.current.hash;
    if set.progress.target != *target || set.progress.strategy != strategy.as_str() {
        set.progress = Progress {
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
    mut set: StaticSet,
    strategy: Strategy,
) -> Result<StaticSet, ClusterError> {
    let pod: Value =
        serde_saphyr::from_str(&set.current.manifest).map_err(|e| ClusterError::InvalidObject {
            object: format!("revision {} of {}/{}", set.current.number, ctx.ns, ctx.name),
            message: format!("its manifest is not YAML ({e})"),
        })?;
    let template = yurtstaticset::template_for(&yss.template, &pod);
    yurtstaticset::hold(&ctx.cluster, &ctx.ns, &ctx.name, &template).await?;
    let (hash, manifest) = yurtstaticset::wait_rendered(
        &ctx.cluster,
        &ctx.ns,
        &ctx.name,
        &yss.manifest_key,
        &template,
        RENDER_TIMEOUT,
    )
    .await?;
    if hash != set.current.hash {
        set.history.retain(|r| r.hash != hash);
        set.current.hash = hash;
    }
    set.current.manifest = manifest;
    aim(&mut set, strategy);
    Ok(set)
}

/// After a run on a YurtStaticSet: the user's strategy goes back when every node runs the
/// target, or when the run failed or was interrupted; a rollout left partial on purpose
/// (`--partition`, `--pause`, a canary, OTA) keeps the set at OTA so the controller does not
/// finish it on its own.
pub(super) async fn settle(ctx: &Context, exit: Exit) -> Exit {
    let Some(yss) = &ctx.yss else {
        return exit;
    };
    let behind = match behind_nodes(ctx).await {
        Ok(b) => b,
        Err(e) => return worse(exit, fail(&e)),
    };
    let what = format!("YurtStaticSet {}/{}", ctx.ns, ctx.name);
    if exit == Exit::Ok && !behind.is_empty() {
        eprintln!(
            "{what} stays on upgradeStrategy OTA while {} node(s) run an older revision ({}); the run that completes the rollout puts back {}",
            behind.len(),
            behind.join(", "),
            yss.user_strategy()
        );
        return exit;
    }
    match yurtstaticset::release(&ctx.cluster, &ctx.ns, &ctx.name).await {
        Ok(true) => {
            eprintln!("{what}: upgradeStrategy {} put back", yss.user_strategy());
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

/// Nodes whose mirror pod does not run the stored target revision.
pub(super) async fn behind_nodes(ctx: &Context) -> Result<Vec<String>, ClusterError> {
    let target = staticset::load(&ctx.cluster, &ctx.ns, &ctx.name)
        .await?
        .map(|s| s.current.hash)
        .unwrap_or_default();
    let mirrors = staticset::mirror_pods(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    Ok(mirrors
        .by_node
        .into_iter()
        .filter(|(_, m)| m.revision.as_deref() != Some(target.as_str()))
        .map(|(n, _)| n)
        .collect())
}

/// `--dry-run`: the plan; with `=server` also the writes the run would make first, sent with
/// `dryRun=All` (a refused one is exit 3 with the server's message).
pub(super) async fn print_plan(
    g: &GlobalArgs,
    p: &RolloutPlan,
    writes: server_dry_run::Writes<'_>,
) -> Exit {
    let answers = match g.dry_run {
        DryRun::Server => Some(writes.send().await),
        _ => None,
    };
    let doc = PlanDocument {
        header: None,
        command: None,
        plan: p,
        objects: None,
        server_dry_run: answers.as_deref(),
    };
    let text: String = plan::plan_lines(p)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    print_dry_run(g, &doc, &text, "")
}

/// Store the revision and carry out the strategy (the lock is held).
#[allow(clippy::too_many_arguments)]
pub(super) async fn roll_locked(
    g: &GlobalArgs,
    ctx: &Context,
    set: StaticSet,
    strategy: Strategy,
    args: &RolloutArgs,
    opts: Options,
    targets: Vec<NodeInput>,
    lost: LostSignal,
) -> Exit {
    let set = match &ctx.yss {
        Some(yss) => match publish(ctx, yss, set, strategy).await {
            Ok(s) => s,
            Err(e) => return fail(&e),
        },
        None => set,
    };
    let target = set.current.hash.clone();
    if let Err(e) = staticset::save(&ctx.cluster, &set).await {
        return fail(&e);
    }
    let mut result = RolloutResult::new(&ctx.name, &ctx.ns, strategy.as_str());
    result.revision = target.clone();
    result.revision_number = set.current.number;
    eprintln!(
        "static pod {}/{}: revision {} ({target}) stored in ConfigMap {}",
        ctx.ns,
        ctx.name,
        set.current.number,
        staticset::configmap_name(&ctx.name)
    );
    match strategy {
        Strategy::Ota => {
            let exit = match refresh_conditions(ctx, &target).await {
                Ok(nodes) => {
                    let need = nodes.iter().filter(|n| n.result == "needs-upgrade").count();
                    result.message = format!(
                        "OTA: {need} of {} node(s) marked PodNeedUpgrade=True; upgrade them with `yurtctl staticpod ota apply {} -n {} --node NODE` or YurtHub's POST /openyurt.io/v1/namespaces/{}/pods/{}-<node>/upgrade",
                        nodes.len(),
                        ctx.name,
                        ctx.ns,
                        ctx.ns,
                        ctx.name
                    );
                    result.nodes = nodes;
                    Exit::Ok
                }
                Err(e) => {
                    result.message = e.to_string();
                    CommandError::from(e).exit()
                }
            };
            finish(g, result, exit)
        }
        Strategy::AdvancedRollingUpdate if args.pause => {
            result.message = format!(
                "paused: revision {target} is stored and no node was started; re-run without --pause to roll it out"
            );
            finish(g, result, Exit::Ok)
        }
        Strategy::AdvancedRollingUpdate => {
            let node_timeout = args.node_timeout;
            drive(
                g,
                ctx,
                set,
                targets,
                opts,
                node_timeout,
                &args.servant_image,
                result,
                lost,
            )
            .await
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn drive(
    g: &GlobalArgs,
    ctx: &Context,
    mut set: StaticSet,
    targets: Vec<NodeInput>,
    opts: Options,
    node_timeout: std::time::Duration,
    servant_image: &str,
    mut result: RolloutResult,
    lock_lost: LostSignal,
) -> Exit {
    let prefix = format!("[{}/{}]", ctx.ns, ctx.name);
    let note = move |m: String| eprintln!("{prefix} {m}");
    let outcome = Drive {
        cluster: &ctx.cluster,
        set: &mut set,
        nodes: targets,
        options: opts,
        node_timeout,
        servant_image: servant_image.into(),
        note: &note,
        lock_lost,
    }
    .run()
    .await;
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return fail(&e),
    };
    result.max_unavailable = outcome.budget;
    result.nodes = outcome.nodes;
    let upgraded = result.count("upgraded") + result.count("already-updated");
    let skipped = result.count("skipped-not-ready");
    let total = result.nodes.len();
    let rerun = "re-run the same command to continue";
    let exit = match &outcome.end {
        End::LockLost(e) => {
            let stopped = CommandError::at("stopped: ", e.clone());
            result.message = format!(
                "{stopped}; {upgraded} of {total} node(s) on revision {}",
                result.revision
            );
            stopped.exit()
        }
        End::Interrupted => {
            result.message = format!(
                "interrupted: {upgraded} of {total} node(s) on revision {}; progress is recorded, {rerun}",
                result.revision
            );
            Exit::Interrupted
        }
        End::Halt(h) => {
            result.message = format!(
                "rollout stopped: {h}; {upgraded} of {total} node(s) on revision {}. {}",
                result.revision,
                match h {
                    HaltReason::TooManyFailures { .. } =>
                        "Failed nodes were restored to their previous manifest; fix the cause (see the Job logs and pod state above) and re-run, or roll back with `yurtctl staticpod rollback`.",
                    _ =>
                        "Check the node, then re-run or roll back with `yurtctl staticpod rollback`.",
                }
            );
            Exit::Partial
        }
        End::Done(Completion::Canary { remaining }) => {
            result.message = format!(
                "canary done: {upgraded} of {total} node(s) on revision {}; {remaining} node(s) left — check them, then re-run without --canary (or with a larger one) to continue",
                result.revision
            );
            Exit::Ok
        }
        End::Done(Completion::All) if skipped > 0 => {
            result.message = format!(
                "{upgraded} of {total} node(s) on revision {}; {skipped} NotReady node(s) skipped — {rerun} once they are Ready",
                result.revision
            );
            Exit::Partial
        }
        End::Done(Completion::All) => {
            result.message = format!(
                "{upgraded} of {total} node(s) on revision {}",
                result.revision
            );
            Exit::Ok
        }
    };
    finish(g, result, exit)
}

pub(super) fn finish(g: &GlobalArgs, mut result: RolloutResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    if !print_structured(g, &result) {
        for l in rollout_lines(&result) {
            eprintln!("{l}");
        }
    }
    exit
}

/// OTA: `PodNeedUpgrade` on every mirror pod of the static pod — True where the revision
/// differs from `target`, False where it matches (also after a template went back, which
/// YurtStaticSet leaves stale).
pub(super) async fn refresh_conditions(
    ctx: &Context,
    target: &str,
) -> Result<Vec<RolloutNode>, ClusterError> {
    let mirrors = staticset::mirror_pods(&ctx.cluster, &ctx.ns, &ctx.name).await?;
    let mut out = Vec::new();
    for (node, m) in mirrors.by_node {
        let need = m.revision.as_deref() != Some(target);
        staticset::set_need_upgrade(&ctx.cluster, &ctx.ns, &m, need, false).await?;
        out.push(RolloutNode {
            name: node,
            result: if need { "needs-upgrade" } else { "up-to-date" }.into(),
            message: format!("PodNeedUpgrade={}", if need { "True" } else { "False" }),
            logs: None,
            pod_state: None,
        });
    }
    Ok(out)
}
