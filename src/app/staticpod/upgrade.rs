//! `staticpod upgrade`: the template to roll out (a file, or new images on the current one).

use super::*;

pub(super) async fn upgrade(g: &GlobalArgs, cmd: StaticPodUpgradeCmd) -> Exit {
    let ns = namespace(g);
    // Input that needs no cluster is checked first (exit 2, nothing changed).
    let file_pod = match &cmd.template.file {
        Some(path) => {
            let what = format!("-f {}", path.display());
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => return usage(format!("{what}: cannot read it: {e}")),
            };
            match parse_pod_file(&what, &text) {
                Ok(p) => Some(p),
                Err(e) => return usage(e),
            }
        }
        None => None,
    };
    let opts = match options(&cmd.rollout) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let run = LockedRun {
        ns: &ns,
        name: &cmd.name,
        force_unlock: cmd.rollout.force_unlock,
        command: "staticpod upgrade",
        pull_secrets: &cmd.rollout.image_pull_secrets,
    };
    let refuses = |ctx: &Context| {
        upgrade_target(ctx, &cmd, file_pod.clone())
            .err()
            .or_else(|| no_targets(ctx, &cmd.rollout))
            .or_else(|| ctx.controller_down(false))
            .or_else(|| ctx.store_deleted_by_controller())
    };
    let decided = |ctx, lost| upgrade_decided(g, &cmd, ctx, file_pod.clone(), opts, lost);
    run_locked(g, run, refuses, decided).await
}

/// `upgrade` from the context read under the lock.
pub(super) async fn upgrade_decided(
    g: &GlobalArgs,
    cmd: &StaticPodUpgradeCmd,
    ctx: Context,
    file_pod: Option<Value>,
    opts: Options,
    lost: LostSignal,
) -> Exit {
    let (template, key) = match upgrade_target(&ctx, cmd, file_pod) {
        Ok(t) => t,
        Err(r) => return r.report(),
    };
    let mut set = ctx.store(&key);
    // With a YurtStaticSet whose template already is this one, its revision is the target
    // (a re-run resumes); otherwise yurt-manager computes the new revision under the lock.
    let unchanged = ctx
        .yss
        .as_ref()
        .is_some_and(|y| yurtstaticset::template_for(&y.template, &template) == y.template);
    if !unchanged {
        let hash = revision_hash(&template);
        let manifest = plan::manifest_yaml(&template, &cmd.name, &ctx.ns, &hash);
        set.set_current(&hash, manifest);
    }
    roll(
        g,
        ctx,
        set,
        cmd.strategy,
        &cmd.rollout,
        opts,
        "upgrade",
        lost,
    )
    .await
}

/// The template an upgrade rolls out and its manifest key, or why there is none.
pub(super) fn upgrade_target(
    ctx: &Context,
    cmd: &StaticPodUpgradeCmd,
    file_pod: Option<Value>,
) -> Result<(Value, String), Refusal> {
    let ns = ctx.ns.clone();
    if let Some(r) = ctx.no_mirrors() {
        return Err(r);
    }
    let template = match file_pod {
        Some(mut p) => {
            p["metadata"]["name"] = Value::String(cmd.name.clone());
            p["metadata"]["namespace"] = Value::String(ns.clone());
            if let Some(m) = p["metadata"].as_object_mut() {
                for k in ["creationTimestamp", "uid", "resourceVersion"] {
                    m.remove(k);
                }
            }
            if let Some(o) = p.as_object_mut() {
                o.remove("status");
            }
            p
        }
        None => {
            let Some(base) = ctx.current_template() else {
                return Err(Refusal::Refused("cannot read the current template".into()));
            };
            with_images(&base, &cmd.template.image).map_err(|e| Refusal::Usage(e.to_string()))?
        }
    };
    if let (Some(y), Some(key)) = (&ctx.yss, &cmd.manifest)
        && *key != y.manifest_key
    {
        return Err(Refusal::Usage(format!(
            "--manifest {key}: YurtStaticSet {ns}/{} manages this static pod as {:?} (spec.staticPodManifest); drop --manifest",
            cmd.name, y.manifest_key
        )));
    }
    let key = ctx
        .yss
        .as_ref()
        .map(|y| y.manifest_key.clone())
        .or_else(|| cmd.manifest.clone())
        .or_else(|| ctx.set.as_ref().map(|s| s.manifest_key.clone()))
        .unwrap_or_else(|| cmd.name.clone());
    Ok((template, key))
}

/// No node the rollout may touch: none runs the static pod where `--selector` matches.
pub(super) fn no_targets(ctx: &Context, args: &RolloutArgs) -> Option<Refusal> {
    ctx.targets(args.selector.as_ref()).is_empty().then(|| {
        Refusal::Refused(format!(
            "no node running {}/{} matches --selector {}",
            ctx.ns,
            ctx.name,
            args.selector
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_default()
        ))
    })
}
