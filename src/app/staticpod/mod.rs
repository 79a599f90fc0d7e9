//! `yurtctl staticpod upgrade|status|rollback|ota apply`: context (mirror pods, nodes, the
//! revision store) → plan (pure: `plan::staticpod`, `rollout::Rollout`) → confirm → execute
//! (`driver`) → report.

mod adopt;
pub mod driver;
mod run_lock;
pub mod server_dry_run;
mod status;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::app::common::{block_on, confirm, connect_from, fail, print_structured};
use crate::cli::{
    DryRun, GlobalArgs, OtaApplyCmd, OtaCommand, RollbackCmd, RolloutArgs, StaticPodCommand,
    Strategy, UpgradeCmd,
};
use crate::cluster::nodes::list_node_states;
use crate::cluster::staticset::{self, MirrorPod, Progress, Revision, StaticSet};
use crate::cluster::yurtstaticset::{self, YurtStaticSet};
use crate::cluster::{Cluster, ClusterError};
use crate::exec::lock::Held;
use crate::exit::Exit;
use crate::output::staticpod::{RolloutNode, RolloutResult, rollout_lines};
use crate::plan::staticpod::{
    self as plan, RolloutPlan, parse_pod_file, revision_hash, with_images,
};
use crate::rollout::{Completion, HaltReason, MaxUnavailable, NodeInput, Options, Priority};
use driver::{Drive, End, LostSignal};

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
    eprintln!("error: {msg}");
    Exit::Usage
}

/// Why a run refuses, found in the static pod's context alone: checked once on a read-only
/// look (so nothing is written, not even the lock) and again on the context read under the
/// lock.
pub(crate) struct Refusal {
    exit: Exit,
    message: String,
}

impl Refusal {
    fn preflight(message: impl Into<String>) -> Self {
        Refusal {
            exit: Exit::Preflight,
            message: message.into(),
        }
    }

    fn usage(message: impl Into<String>) -> Self {
        Refusal {
            exit: Exit::Usage,
            message: message.into(),
        }
    }

    fn report(self) -> Exit {
        eprintln!("error: {}", self.message);
        self.exit
    }
}

/// What the cluster says about a static pod.
pub(crate) struct Context {
    pub cluster: Cluster,
    pub ns: String,
    pub name: String,
    pub set: Option<StaticSet>,
    /// Mirror pods by node.
    pub mirrors: BTreeMap<String, MirrorPod>,
    /// What the first mirror pod runs (see [`staticset::MirrorPods`]).
    pub mirror_template: Option<Value>,
    /// Node → (labels, Ready).
    pub nodes: BTreeMap<String, (BTreeMap<String, String>, bool)>,
    /// The YurtStaticSet that manages the static pod, if any: then it is the source of truth.
    pub yss: Option<YurtStaticSet>,
}

/// Connects (global flags) and reads the context; a failure is already reported.
pub(crate) async fn connect_context(g: &GlobalArgs, ns: &str, name: &str) -> Result<Context, Exit> {
    let cluster = connect_from(g).await?;
    context(cluster, ns, name).await.map_err(|e| fail(&e))
}

/// The mutating commands' start: connect; a read-only look, so that what the cluster shows
/// wrong (`refuses`) is refused with no write, and as exit 6 naming the run when another run
/// holds the lock; then take the static pod's rollout lock (not in a dry run) and read the
/// context again, so that what the run decides is read under the lock. A failure is already
/// reported.
async fn connect_locked(
    g: &GlobalArgs,
    ns: &str,
    name: &str,
    force_unlock: bool,
    command: &str,
    refuses: impl Fn(&Context) -> Option<Refusal>,
) -> Result<(Context, Option<Held>), Exit> {
    let cluster = connect_from(g).await?;
    if g.dry_run.enabled() {
        run_lock::warn_if_held(&cluster, ns, name).await;
        return Ok((
            context(cluster, ns, name).await.map_err(|e| fail(&e))?,
            None,
        ));
    }
    let look = context(cluster.clone(), ns, name)
        .await
        .map_err(|e| fail(&e))?;
    if let Some(r) = refuses(&look) {
        return Err(run_lock::refuse_unless_running(&cluster, ns, name, r).await);
    }
    let lock = Some(run_lock::take(&cluster, ns, name, force_unlock, command).await?);
    match context(cluster, ns, name).await {
        Ok(ctx) => Ok((ctx, lock)),
        Err(e) => {
            run_lock::release(lock).await;
            Err(fail(&e))
        }
    }
}

pub(crate) async fn context(
    cluster: Cluster,
    ns: &str,
    name: &str,
) -> Result<Context, ClusterError> {
    let set = staticset::load(&cluster, ns, name).await?;
    let yss = yurtstaticset::get(&cluster, ns, name).await?;
    let mirrors = staticset::mirror_pods(&cluster, ns, name).await?;
    let nodes = list_node_states(&cluster)
        .await?
        .into_iter()
        .map(|n| (n.name, (n.labels, n.ready)))
        .collect();
    Ok(Context {
        cluster,
        ns: ns.into(),
        name: name.into(),
        set,
        mirrors: mirrors.by_node,
        mirror_template: mirrors.first_template,
        nodes,
        yss,
    })
}

impl Context {
    /// Target nodes: nodes with a mirror pod, matching the selector.
    fn targets(&self, selector: Option<&crate::selector::Selector>) -> Vec<NodeInput> {
        self.mirrors
            .iter()
            .filter_map(|(node, m)| {
                let (labels, ready) = self.nodes.get(node).cloned().unwrap_or_default();
                if selector.is_some_and(|s| !s.matches(&labels)) {
                    return None;
                }
                Some(NodeInput {
                    name: node.clone(),
                    labels,
                    revision: m.revision.clone(),
                    ready,
                })
            })
            .collect()
    }

    fn no_mirrors(&self) -> Option<Refusal> {
        self.mirrors.is_empty().then(|| {
            Refusal::preflight(format!(
                "no node runs static pod {}/{} (no mirror pod {}-<node> with kubernetes.io/config.source other than api); install it on the nodes first (or check -n)",
                self.ns, self.name, self.name
            ))
        })
    }

    /// The template nodes should run now: the YurtStaticSet's, else the stored one, else the
    /// first mirror pod's.
    fn current_template(&self) -> Option<Value> {
        if let Some(y) = &self.yss {
            return Some(y.template.clone());
        }
        if let Some(s) = &self.set
            && let Ok(v) = serde_saphyr::from_str::<Value>(&s.current.manifest)
        {
            return Some(v);
        }
        self.mirror_template.clone()
    }

    /// The store, created from the running template when there is none (so rollback has a
    /// revision to go back to).
    fn store(&self, manifest_key: &str) -> StaticSet {
        if let Some(s) = &self.set {
            let mut s = s.clone();
            s.manifest_key = manifest_key.into();
            return s;
        }
        let (hash, manifest) = match self.current_template() {
            Some(t) => {
                let h = revision_hash(&t);
                let m = plan::manifest_yaml(&t, &self.name, &self.ns, &h);
                (h, m)
            }
            None => (String::new(), String::new()),
        };
        StaticSet {
            namespace: self.ns.clone(),
            name: self.name.clone(),
            manifest_key: manifest_key.into(),
            current: Revision {
                number: 1,
                hash,
                manifest,
            },
            history: Vec::new(),
            progress: Progress::default(),
            created: None,
        }
    }
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

async fn upgrade(g: &GlobalArgs, cmd: UpgradeCmd) -> Exit {
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
    let force = cmd.rollout.force_unlock;
    let refuses = |ctx: &Context| {
        upgrade_target(ctx, &cmd, file_pod.clone())
            .err()
            .or_else(|| no_targets(ctx, &cmd.rollout))
    };
    let (ctx, lock) =
        match connect_locked(g, &ns, &cmd.name, force, "staticpod upgrade", refuses).await {
            Ok(c) => c,
            Err(e) => return e,
        };
    let lost = lock.as_ref().map(Held::lost);
    let exit = upgrade_decided(g, &cmd, ctx, file_pod, opts, lost).await;
    run_lock::release(lock).await;
    exit
}

/// `upgrade` from the context read under the lock.
async fn upgrade_decided(
    g: &GlobalArgs,
    cmd: &UpgradeCmd,
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
fn upgrade_target(
    ctx: &Context,
    cmd: &UpgradeCmd,
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
                return Err(Refusal::preflight("cannot read the current template"));
            };
            with_images(&base, &cmd.template.image).map_err(|e| Refusal::usage(e.to_string()))?
        }
    };
    if let (Some(y), Some(key)) = (&ctx.yss, &cmd.manifest)
        && *key != y.manifest_key
    {
        return Err(Refusal::usage(format!(
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
fn no_targets(ctx: &Context, args: &RolloutArgs) -> Option<Refusal> {
    ctx.targets(args.selector.as_ref()).is_empty().then(|| {
        Refusal::preflight(format!(
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

async fn rollback(g: &GlobalArgs, cmd: RollbackCmd) -> Exit {
    let ns = namespace(g);
    let opts = match options(&cmd.rollout) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let force = cmd.rollout.force_unlock;
    let refuses = |ctx: &Context| {
        rollback_target(ctx, &cmd)
            .err()
            .or_else(|| no_targets(ctx, &cmd.rollout))
    };
    let (ctx, lock) =
        match connect_locked(g, &ns, &cmd.name, force, "staticpod rollback", refuses).await {
            Ok(c) => c,
            Err(e) => return e,
        };
    let lost = lock.as_ref().map(Held::lost);
    let exit = rollback_decided(g, &cmd, ctx, opts, lost).await;
    run_lock::release(lock).await;
    exit
}

/// `rollback` from the context read under the lock.
async fn rollback_decided(
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
fn rollback_target(ctx: &Context, cmd: &RollbackCmd) -> Result<(StaticSet, Revision), Refusal> {
    let ns = &ctx.ns;
    let Some(stored) = ctx.set.clone() else {
        return Err(Refusal::preflight(format!(
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
        return Err(Refusal::usage(format!(
            "no such revision{} of {ns}/{}; known revisions: {}",
            cmd.to_revision.map(|r| format!(" {r}")).unwrap_or_default(),
            cmd.name,
            known.join(", ")
        )));
    };
    Ok((stored, to))
}

/// Plan, confirm, store the revision and carry out the strategy (under the lock, whose loss
/// `lost` signals, when not a dry run).
#[allow(clippy::too_many_arguments)]
async fn roll(
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
fn aim(set: &mut StaticSet, strategy: Strategy) {
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
const RENDER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// With a YurtStaticSet, its controller publishes the manifest: the set gets the current
/// revision's template and is held at OTA (so the controller upgrades no node itself), and the
/// revision becomes the one the controller rendered.
async fn publish(
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
async fn settle(ctx: &Context, exit: Exit) -> Exit {
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
            eprintln!(
                "error: {what} is still held at upgradeStrategy OTA: {e}; re-run, or set spec.upgradeStrategy back to {} and remove annotation {}",
                yss.user_strategy(),
                yurtstaticset::HELD_STRATEGY_ANNOTATION
            );
            worse(exit, e.exit())
        }
    }
}

/// The first failure wins; a success gives way to a later failure.
fn worse(first: Exit, then: Exit) -> Exit {
    if first == Exit::Ok { then } else { first }
}

/// Nodes whose mirror pod does not run the stored target revision.
async fn behind_nodes(ctx: &Context) -> Result<Vec<String>, ClusterError> {
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
async fn print_plan(g: &GlobalArgs, p: &RolloutPlan, writes: server_dry_run::Writes<'_>) -> Exit {
    let answers = match g.dry_run {
        DryRun::Server => Some(writes.send().await),
        _ => None,
    };
    let obj = server_dry_run::PlanWithAnswers {
        plan: p,
        server_dry_run: answers.as_deref(),
    };
    if !print_structured(g, &obj) {
        for l in plan::plan_lines(p) {
            println!("{l}");
        }
        if let Some(a) = &answers {
            println!("{}", crate::exec::dry_run::summary_line(a));
        }
    }
    crate::exec::dry_run::report_refusals(answers.as_deref().unwrap_or_default(), "")
}

/// Store the revision and carry out the strategy (the lock is held).
#[allow(clippy::too_many_arguments)]
async fn roll_locked(
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
                    e.exit()
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
async fn drive(
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
            result.message = format!(
                "stopped: {e}; {upgraded} of {total} node(s) on revision {}",
                result.revision
            );
            Exit::Unexpected
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

fn finish(g: &GlobalArgs, mut result: RolloutResult, exit: Exit) -> Exit {
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
async fn refresh_conditions(ctx: &Context, target: &str) -> Result<Vec<RolloutNode>, ClusterError> {
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

async fn ota_apply(g: &GlobalArgs, cmd: OtaApplyCmd) -> Exit {
    let ns = namespace(g);
    let force = cmd.force_unlock;
    let refuses = |ctx: &Context| ota_set(ctx, &cmd).err();
    let (ctx, lock) =
        match connect_locked(g, &ns, &cmd.name, force, "staticpod ota apply", refuses).await {
            Ok(c) => c,
            Err(e) => return e,
        };
    let lost = lock.as_ref().map(Held::lost);
    let exit = ota_apply_decided(g, &cmd, ctx, lost).await;
    run_lock::release(lock).await;
    exit
}

/// The stored set an `ota apply` installs on its nodes, or why there is none.
fn ota_set(ctx: &Context, cmd: &OtaApplyCmd) -> Result<StaticSet, Refusal> {
    let ns = &ctx.ns;
    let Some(set) = ctx.set.clone() else {
        return Err(Refusal::preflight(format!(
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
        return Err(Refusal::usage(format!(
            "static pod {ns}/{} does not run on {}",
            cmd.name,
            unknown.join(", ")
        )));
    }
    Ok(set)
}

/// `ota apply` from the context read under the lock.
async fn ota_apply_decided(
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

async fn ota_apply_locked(
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
