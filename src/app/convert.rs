//! `yurtctl convert`: context → snapshot → plan → (dry-run: print) → confirm → execute →
//! result (design §2). Execution: lock → node preflight Jobs → label nodes → components → node
//! Jobs (edge, then cloud) → verify, with the journal written after every phase and the lock released at the
//! end whatever happened.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::app::common::{block_on, confirm, connect_from, fail, print_structured, reporter};
use crate::app::node_phase::{PhaseResult, job_node_result, run_journaled, run_reported};
use crate::app::servant_job::{ServantVolume, servant_job};
use crate::app::server_dry_run::{self, Write};
use crate::cli::{ConvertCmd, DryRun, GlobalArgs, OutputFormat};
use crate::cluster::apply::{Applier, ApplyOptions};
use crate::cluster::jobs::{NodeJob, NodeJobResult};
use crate::cluster::journal::{Journal, JournalStore, ObjectRef, PhaseState};
use crate::cluster::lock::{self, LockOptions};
use crate::cluster::snapshot::{SnapshotOptions, snapshot};
use crate::cluster::{
    Cluster, ClusterError, FIELD_MANAGER, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE,
};
use crate::exit::Exit;
use crate::output::{ConvertResult, Event, NodeOutcome, NodeResult, Reporter};
use crate::plan::{self, NodeAction, Plan, PlanError, Role};
use crate::render::{
    BootstrapTokenRef, Profile, RenderContext, TokenSecret, WorkingMode, YurtHubCredential,
    YurtHubMode, base64, render_cluster_objects,
};

/// The Secret that carries YurtHub's bootstrap kubeconfig into node Jobs (a volume, never an
/// argument or an environment variable).
pub const BOOTSTRAP_SECRET: &str = "yurtctl-yurthub-bootstrap";
pub const BOOTSTRAP_KEY: &str = "bootstrap-hub.conf";
/// The key of the same Secret holding the bare token, for YurtHub's legacy `--join-token`.
pub const JOIN_TOKEN_KEY: &str = "join-token";
const BOOTSTRAP_MOUNT: &str = "/etc/yurtctl/bootstrap";
const MANIFEST_MOUNT: &str = "/etc/yurtctl/yurthub";

/// Runs `yurtctl convert`; prints progress on stderr and the result on stdout.
pub fn run(g: &GlobalArgs, cmd: &ConvertCmd) -> Exit {
    if let Err(m) = cmd.validate() {
        eprintln!("error: {m}");
        return Exit::Usage;
    }
    let reporter = reporter(g);
    block_on(convert(g, cmd, reporter.as_ref()))
}

async fn convert(g: &GlobalArgs, cmd: &ConvertCmd, rep: &dyn Reporter) -> Exit {
    let opts = cmd.options();
    let profile = match Profile::load(&opts.profile) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::Usage;
        }
    };
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let snap = match snapshot(&cluster, &SnapshotOptions::default()).await {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let plan = match plan::plan_convert(&snap, &opts, &profile) {
        Ok(p) => p,
        Err(e @ PlanError::Usage(_)) => {
            eprintln!("error: {e}");
            return Exit::Usage;
        }
        Err(e @ PlanError::Preflight(_)) => {
            eprintln!("error: [{}] {e}", plan::PREFLIGHT);
            return Exit::Preflight;
        }
    };

    if g.dry_run.enabled() {
        let structured = matches!(g.output, Some(OutputFormat::Json | OutputFormat::Yaml));
        let mut obj = plan_object(&plan);
        if structured && plan.runs(plan::COMPONENTS) && !plan.nothing_to_do() {
            match dry_run_objects(&cluster, &plan, &profile, &opts).await {
                Ok(objects) => obj["objects"] = Value::Array(objects),
                Err(e) => return fail(&e),
            }
        }
        let mut writes = Vec::new();
        let server = g.dry_run == DryRun::Server && !plan.nothing_to_do();
        if server {
            match server_dry_run(&cluster, &plan, &profile, &opts).await {
                Ok(w) => writes = w,
                Err(e) => return fail(&e),
            }
            obj["serverDryRun"] = serde_json::to_value(&writes).unwrap_or_default();
        }
        if !print_structured(g, &obj) {
            print!("{}", plan::render_text(&plan));
            if server {
                println!("{}", server_dry_run::summary_line(&writes));
            }
        }
        return server_dry_run::report_refusals(&writes, &format!("[{}] ", plan::PREFLIGHT));
    }

    if plan.nothing_to_do() {
        let mut result = ConvertResult::new(&plan.profile);
        result.nodes = plan
            .nodes
            .iter()
            .map(|n| skipped_result(n.name.clone(), n.role, n.action))
            .collect();
        let not_ready = result
            .nodes
            .iter()
            .filter(|n| n.result == NodeOutcome::Skipped)
            .count();
        let exit = if not_ready > 0 {
            result.message = format!(
                "{not_ready} node(s) not Ready were skipped; the others are already converted"
            );
            Exit::Partial
        } else {
            result.message = "already converted: nothing to do".into();
            Exit::Ok
        };
        return finish(g, result, exit);
    }

    if plan.runs(plan::PREFLIGHT) {
        match access_findings(&cluster, &access_checks(&profile, &opts)).await {
            Ok(f) if f.is_empty() => {}
            Ok(f) => {
                eprintln!("error: [{}] {}", plan::PREFLIGHT, PlanError::Preflight(f));
                return Exit::Preflight;
            }
            Err(e) => return fail(&e),
        }
    }

    eprint!("{}", plan::render_text(&plan));
    if let Err(exit) = confirm(g, "Convert this cluster?") {
        return exit;
    }

    let (result, exit) = execute(
        &cluster,
        &plan,
        &profile,
        &opts,
        cmd.force_unlock,
        snap.journal,
        rep,
    )
    .await;
    finish(g, result, exit)
}

fn plan_object(plan: &Plan) -> Value {
    let mut v = json!({"apiVersion": crate::output::API_VERSION, "kind": "Plan"});
    if let (Some(m), Ok(Value::Object(p))) = (v.as_object_mut(), serde_json::to_value(plan)) {
        m.extend(p);
    }
    v
}

fn skipped_result(name: String, role: Role, action: NodeAction) -> NodeResult {
    let (result, message) = match action {
        NodeAction::AlreadyConverted => (NodeOutcome::AlreadyConverted, "already converted"),
        NodeAction::SkipNotReady => (
            NodeOutcome::Skipped,
            "NotReady: skipped; re-run convert once it is Ready",
        ),
        NodeAction::Convert => (
            NodeOutcome::PhaseSkipped,
            "not converted: its phase is in --skip-phases",
        ),
    };
    NodeResult {
        name,
        role: role.as_str().into(),
        result,
        message: message.into(),
        logs: None,
    }
}

fn finish(g: &GlobalArgs, mut result: ConvertResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    for l in crate::output::summary_lines(&result) {
        eprintln!("{l}");
    }
    print_structured(g, &result);
    exit
}

/// Lock, run the phases, release the lock (also after a failure).
async fn execute(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    force_unlock: bool,
    journal: Option<Journal>,
    rep: &dyn Reporter,
) -> (ConvertResult, Exit) {
    let mut result = ConvertResult::new(&plan.profile);
    if force_unlock {
        match lock::force_unlock(cluster, SYSTEM_NAMESPACE).await {
            Ok(Some(h)) => rep.event(Event::Note {
                phase: plan::LOCK,
                message: format!("--force-unlock: removed the lock held by {}", h.identity),
            }),
            Ok(None) => {}
            Err(e) => {
                result.message = format!("[{}] --force-unlock: {e}", plan::LOCK);
                eprintln!("error: {}", result.message);
                return (result, e.exit());
            }
        }
    }
    let guard = if plan.runs(plan::LOCK) {
        rep.event(Event::PhaseStarted(plan::LOCK));
        match lock::acquire(cluster, LockOptions::default()).await {
            Ok(g) => {
                rep.event(Event::PhaseDone(plan::LOCK));
                Some(g)
            }
            Err(e) => {
                result.message = format!("[{}] {e}", plan::LOCK);
                eprintln!("error: {}", result.message);
                return (result, e.exit());
            }
        }
    } else {
        rep.event(Event::PhaseSkipped(plan::LOCK));
        None
    };
    // Ctrl-C or a lost lock stop the phases where they are; the journal keeps what was done
    // (node Jobs still running are adopted by the next run) and the lock is released below.
    let _handled = crate::output::terminal::handles_interrupt();
    if plan.runs(plan::PREFLIGHT_NODES) {
        let checked = tokio::select! {
            r = node_preflight(cluster, plan, profile, opts, rep) => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        };
        let stop = match checked {
            Some(Ok(failed)) if failed.is_empty() => None,
            Some(Ok(failed)) => {
                result.message = format!(
                    "[{}] node-side preflight failed on {} node(s): {}; nothing was changed. \
                     Fix what each node's Job says (kubectl logs -n {SYSTEM_NAMESPACE} \
                     job/<Job>) and re-run convert",
                    plan::PREFLIGHT_NODES,
                    failed.len(),
                    failed
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                for n in &failed {
                    eprintln!(
                        "error: [{}] node {}: {}",
                        plan::PREFLIGHT_NODES,
                        n.name,
                        n.message
                    );
                }
                eprintln!("error: {}", result.message);
                result.nodes = not_started(plan, failed, plan::PREFLIGHT_NODES);
                Some(Exit::Preflight)
            }
            Some(Err((phase, e))) => {
                result.message = format!("[{phase}] {e}");
                eprintln!("error: {}", result.message);
                Some(e.exit())
            }
            None => {
                result.message = format!(
                    "interrupted during {}; nothing was changed",
                    plan::PREFLIGHT_NODES
                );
                Some(Exit::Interrupted)
            }
        };
        if let Some(exit) = stop {
            release(guard).await;
            return (result, exit);
        }
    } else {
        rep.event(Event::PhaseSkipped(plan::PREFLIGHT_NODES));
    }
    let store = JournalStore::new(cluster);
    let mut journal = journal.unwrap_or_else(|| Journal::new("convert", &plan.profile));
    journal.command = "convert".into();
    journal.profile = plan.profile.clone();
    if let Ok(Value::Object(o)) = serde_json::to_value(opts) {
        journal.options = o;
    }
    let mut guard = guard;
    let lost = async {
        match guard.as_mut() {
            Some(g) => g.wait_lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        r = phases(cluster, plan, profile, opts, &mut journal, &store, rep) => Ok(r),
        _ = tokio::signal::ctrl_c() => Err(None),
        e = lost => Err(Some(e)),
    };
    let exit = match outcome {
        Ok(Ok(nodes)) => {
            result.nodes = nodes;
            outcome_exit(&mut result)
        }
        Ok(Err((phase, e))) => {
            result.message = format!("[{phase}] {e}");
            eprintln!("error: {}", result.message);
            e.exit()
        }
        Err(None) => {
            result.message = "interrupted; progress is journaled: re-run convert to resume".into();
            Exit::Interrupted
        }
        Err(Some(e)) => {
            result.message = format!("stopped: {e}");
            eprintln!("error: {}", result.message);
            e.exit()
        }
    };
    if let Err(e) = store.save(&mut journal).await {
        eprintln!("warning: cannot save the journal kube-system/yurtctl-state: {e}");
    }
    release(guard).await;
    (result, exit)
}

async fn release(guard: Option<lock::LockGuard>) {
    if let Some(g) = guard
        && let Err(e) = g.release().await
    {
        eprintln!("warning: cannot release the lock kube-system/yurtctl-lock: {e}");
    }
}

/// `preflight/nodes`: a `node-servant preflight` Job on every node this run converts. Returns
/// the nodes whose check failed, each with its Job's message and logs.
async fn node_preflight(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    rep: &dyn Reporter,
) -> PhaseResult<Vec<NodeResult>> {
    let specs = preflight_jobs(plan, &opts.images(profile)["servant"], opts.job_timeout);
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    rep.event(Event::PhaseStarted(plan::PREFLIGHT_NODES));
    let outcomes = run_reported(
        cluster,
        plan::PREFLIGHT_NODES,
        specs,
        opts.concurrency,
        opts.job_timeout,
        rep,
    )
    .await?;
    let roles: BTreeMap<&str, Role> = plan
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.role))
        .collect();
    let failed: Vec<NodeResult> = outcomes
        .iter()
        .filter(|r| !r.succeeded())
        .map(|r| {
            let role = roles.get(r.node.as_str()).copied().unwrap_or(Role::Edge);
            job_node_result(r, role.as_str(), NodeOutcome::Failed, "", "preflight: ")
        })
        .collect();
    if failed.is_empty() {
        rep.event(Event::PhaseDone(plan::PREFLIGHT_NODES));
    }
    Ok(failed)
}

/// The `preflight/nodes` Jobs: one per node a node phase of this run converts.
fn preflight_jobs(plan: &Plan, servant_image: &str, job_timeout: Duration) -> Vec<NodeJob> {
    if !plan.runs(plan::PREFLIGHT_NODES) {
        return Vec::new();
    }
    plan.nodes
        .iter()
        .filter(|n| n.action == NodeAction::Convert && plan.runs(n.role.phase()))
        .map(|n| {
            servant_job(
                plan::PREFLIGHT_ACTION,
                &n.name,
                servant_image,
                "preflight",
                &[],
                job_timeout,
                &[],
            )
        })
        .collect()
}

/// Every node's result when the run stopped in `phase` before converting any: `failed` as
/// they are, the other nodes to convert not started, the rest as planned.
fn not_started(plan: &Plan, failed: Vec<NodeResult>, phase: &str) -> Vec<NodeResult> {
    let mut results: BTreeMap<String, NodeResult> = plan
        .nodes
        .iter()
        .map(|n| {
            let r = if n.action == NodeAction::Convert {
                NodeResult {
                    name: n.name.clone(),
                    role: n.role.as_str().into(),
                    result: NodeOutcome::PhaseSkipped,
                    message: format!("not converted: phase {phase} failed"),
                    logs: None,
                }
            } else {
                skipped_result(n.name.clone(), n.role, n.action)
            };
            (n.name.clone(), r)
        })
        .collect();
    for f in failed {
        results.insert(f.name.clone(), f);
    }
    results.into_values().collect()
}

/// The exit code and message from the per-node results.
fn outcome_exit(result: &mut ConvertResult) -> Exit {
    let count = |o: NodeOutcome| result.nodes.iter().filter(|n| n.result == o).count();
    let (converted, failed, timed_out, skipped) = (
        count(NodeOutcome::Converted),
        count(NodeOutcome::Failed),
        count(NodeOutcome::TimedOut),
        count(NodeOutcome::Skipped),
    );
    let names = |o: NodeOutcome| {
        result
            .nodes
            .iter()
            .filter(|n| n.result == o)
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut msg = format!("converted {converted} node(s)");
    if failed > 0 {
        msg.push_str(&format!("; failed: {}", names(NodeOutcome::Failed)));
    }
    if timed_out > 0 {
        msg.push_str(&format!("; timed out: {}", names(NodeOutcome::TimedOut)));
    }
    if skipped > 0 {
        msg.push_str(&format!("; skipped: {}", names(NodeOutcome::Skipped)));
    }
    let exit = if failed > 0 {
        Exit::Partial
    } else if timed_out > 0 {
        Exit::Timeout
    } else if skipped > 0 {
        Exit::Partial
    } else {
        Exit::Ok
    };
    if exit != Exit::Ok {
        msg.push_str("; re-run convert to finish the rest");
    }
    result.message = msg;
    exit
}

async fn phases(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    journal: &mut Journal,
    store: &JournalStore,
    rep: &dyn Reporter,
) -> PhaseResult<Vec<NodeResult>> {
    let save = |j: &mut Journal, phase: &'static str| {
        let store = store.clone();
        let mut copy = j.clone();
        async move {
            store.save(&mut copy).await.map_err(|e| (phase, e))?;
            Ok::<_, (&'static str, ClusterError)>(copy)
        }
    };
    *journal = save(journal, plan::PREFLIGHT).await?;

    // label-nodes
    run_phase(plan, plan::LABEL_NODES, rep, async {
        label_nodes(cluster, plan, profile, false)
            .await
            .map_err(|e| (plan::LABEL_NODES, e))
    })
    .await?;

    // components
    if plan.runs(plan::COMPONENTS) {
        rep.event(Event::PhaseStarted(plan::COMPONENTS));
        let created = apply_components(cluster, plan, profile, opts, journal, rep)
            .await
            .map_err(|e| (plan::COMPONENTS, e))?;
        for r in created {
            journal.record_created(r);
        }
        *journal = save(journal, plan::COMPONENTS).await?;
        rep.event(Event::PhaseDone(plan::COMPONENTS));
    } else {
        rep.event(Event::PhaseSkipped(plan::COMPONENTS));
    }

    let mut results: BTreeMap<String, NodeResult> = plan
        .nodes
        .iter()
        .filter(|n| n.action != NodeAction::Convert)
        .map(|n| {
            (
                n.name.clone(),
                skipped_result(n.name.clone(), n.role, n.action),
            )
        })
        .collect();
    let servant_image = opts.images(profile)["servant"].clone();

    // kcm: nodelifecycle off in kube-controller-manager before nodes go autonomous; a failure
    // here stops the run (the nodes are left as they are for the next run)
    if !plan.kcm_nodes.is_empty() && plan.runs(plan::KCM) {
        rep.event(Event::PhaseStarted(plan::KCM));
        let specs = plan
            .kcm_nodes
            .iter()
            .map(|n| kcm_job(n, &servant_image, opts.job_timeout))
            .collect();
        let outcomes = run_node_jobs(cluster, plan::KCM, specs, opts, journal, store, rep).await?;
        let failed: Vec<NodeResult> = outcomes
            .iter()
            .filter(|r| !r.succeeded())
            .map(|r| job_result(r, Role::Cloud, "kube-controller-manager: "))
            .collect();
        if !failed.is_empty() {
            return Ok(not_started(plan, failed, plan::KCM));
        }
        rep.event(Event::PhaseDone(plan::KCM));
    } else if plan.runs(plan::KCM) {
        rep.event(Event::Note {
            phase: plan::KCM,
            message: if opts.disables_nodelifecycle(profile) {
                "kube-controller-manager already has nodelifecycle disabled".into()
            } else {
                format!(
                    "kube-controller-manager is left unchanged (profile {} does not need it)",
                    profile.name
                )
            },
        });
    } else {
        rep.event(Event::PhaseSkipped(plan::KCM));
    }

    for role in [Role::Edge, Role::Cloud] {
        let phase = role.phase();
        let nodes: Vec<_> = plan.to_convert(role).collect();
        if !plan.runs(phase) {
            rep.event(Event::PhaseSkipped(phase));
            for n in nodes {
                results.insert(
                    n.name.clone(),
                    skipped_result(n.name.clone(), role, n.action),
                );
            }
            continue;
        }
        if nodes.is_empty() {
            continue;
        }
        rep.event(Event::PhaseStarted(phase));
        let specs: Vec<NodeJob> = nodes
            .iter()
            .map(|n| node_job(&n.name, role, &servant_image, profile, opts.job_timeout))
            .collect();
        let outcomes = run_node_jobs(cluster, phase, specs, opts, journal, store, rep).await?;
        for r in &outcomes {
            results.insert(r.node.clone(), job_result(r, role, ""));
        }
        rep.event(Event::PhaseDone(phase));
    }

    // verify: every node converted in this run is Ready
    if plan.runs(plan::VERIFY) {
        rep.event(Event::PhaseStarted(plan::VERIFY));
        let converted: Vec<String> = results
            .values()
            .filter(|n| n.result == NodeOutcome::Converted)
            .map(|n| n.name.clone())
            .collect();
        let not_ready = wait_ready(cluster, &converted, opts.job_timeout).await;
        for n in not_ready {
            if let Some(r) = results.get_mut(&n) {
                r.result = NodeOutcome::TimedOut;
                r.message = format!(
                    "its Job succeeded but the node was not Ready within {}s",
                    opts.job_timeout.as_secs()
                );
            }
        }
        rep.event(Event::PhaseDone(plan::VERIFY));
    } else {
        rep.event(Event::PhaseSkipped(plan::VERIFY));
    }
    Ok(results.into_values().collect())
}

/// Runs one phase's node Jobs (see [`run_journaled`]): each node is journaled Running first,
/// then Done or Failed as it ends.
async fn run_node_jobs(
    cluster: &Cluster,
    phase: &'static str,
    specs: Vec<NodeJob>,
    opts: &plan::ConvertOptions,
    journal: &mut Journal,
    store: &JournalStore,
    rep: &dyn Reporter,
) -> PhaseResult<Vec<NodeJobResult>> {
    for s in &specs {
        journal.set_phase(&s.node, phase, PhaseState::Running, None);
    }
    store.save(journal).await.map_err(|e| (phase, e))?;
    let mark = move |j: &mut Journal, node: &str, error: Option<String>| {
        let state = if error.is_none() {
            PhaseState::Done
        } else {
            PhaseState::Failed
        };
        j.set_phase(node, phase, state, error);
    };
    run_journaled(
        cluster,
        phase,
        specs,
        opts.concurrency,
        opts.job_timeout,
        rep,
        journal,
        store,
        &mark,
    )
    .await
}

/// A converted node's result from its Job's outcome.
fn job_result(r: &NodeJobResult, role: Role, prefix: &str) -> NodeResult {
    job_node_result(
        r,
        role.as_str(),
        NodeOutcome::Converted,
        "converted",
        prefix,
    )
}

async fn run_phase<F>(plan: &Plan, id: &'static str, rep: &dyn Reporter, f: F) -> PhaseResult<()>
where
    F: std::future::Future<Output = PhaseResult<()>>,
{
    if !plan.runs(id) {
        rep.event(Event::PhaseSkipped(id));
        return Ok(());
    }
    rep.event(Event::PhaseStarted(id));
    f.await?;
    rep.event(Event::PhaseDone(id));
    Ok(())
}

/// Every (verb, group, resource, namespace) convert uses with `profile` and these options.
fn access_checks(profile: &Profile, opts: &plan::ConvertOptions) -> Vec<Access<'static>> {
    let mut checks = ACCESS.to_vec();
    if profile.yurthub.mode == crate::render::YurtHubMode::YurtStaticSet {
        checks.push((
            "patch",
            "apps.openyurt.io",
            "yurtstaticsets",
            Some(SYSTEM_NAMESPACE),
        ));
    }
    if profile
        .enabled_components(&opts.features)
        .flat_map(|c| &c.templates)
        .any(|t| {
            profile
                .template_text(t)
                .is_some_and(|x| x.contains("kind: DaemonSet"))
        })
    {
        checks.push(("patch", "apps", "daemonsets", Some(SYSTEM_NAMESPACE)));
    }
    checks
}

/// What convert uses whatever the profile.
const ACCESS: &[Access<'static>] = &[
    ("list", "", "nodes", None),
    ("watch", "", "nodes", None),
    ("patch", "", "nodes", None),
    ("create", "batch", "jobs", Some(SYSTEM_NAMESPACE)),
    ("delete", "batch", "jobs", Some(SYSTEM_NAMESPACE)),
    ("list", "batch", "jobs", Some(SYSTEM_NAMESPACE)),
    ("watch", "batch", "jobs", Some(SYSTEM_NAMESPACE)),
    ("list", "", "pods", Some(SYSTEM_NAMESPACE)),
    ("list", "", "events", Some(SYSTEM_NAMESPACE)),
    (
        "get",
        "coordination.k8s.io",
        "leases",
        Some(SYSTEM_NAMESPACE),
    ),
    (
        "create",
        "coordination.k8s.io",
        "leases",
        Some(SYSTEM_NAMESPACE),
    ),
    (
        "update",
        "coordination.k8s.io",
        "leases",
        Some(SYSTEM_NAMESPACE),
    ),
    (
        "delete",
        "coordination.k8s.io",
        "leases",
        Some(SYSTEM_NAMESPACE),
    ),
    ("get", "", "configmaps", Some("kube-public")),
    ("get", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("create", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("update", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("patch", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("get", "", "secrets", Some(SYSTEM_NAMESPACE)),
    ("patch", "", "secrets", Some(SYSTEM_NAMESPACE)),
    ("patch", "", "serviceaccounts", Some(SYSTEM_NAMESPACE)),
    ("patch", "", "services", Some(SYSTEM_NAMESPACE)),
    ("patch", "apps", "deployments", Some(SYSTEM_NAMESPACE)),
    ("watch", "apps", "deployments", Some(SYSTEM_NAMESPACE)),
    (
        "patch",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    ),
    ("patch", "rbac.authorization.k8s.io", "clusterroles", None),
    (
        "patch",
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
    ),
    (
        "patch",
        "rbac.authorization.k8s.io",
        "roles",
        Some(SYSTEM_NAMESPACE),
    ),
    (
        "patch",
        "rbac.authorization.k8s.io",
        "rolebindings",
        Some(SYSTEM_NAMESPACE),
    ),
    (
        "patch",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        None,
    ),
    (
        "patch",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
    ),
];

/// One permission: (verb, group, resource, namespace).
pub(crate) type Access<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

/// Asks the server (SelfSubjectAccessReview, concurrently) whether we may do everything in
/// `access`; one finding per denied permission.
pub(crate) async fn access_findings(
    cluster: &Cluster,
    access: &[Access<'_>],
) -> Result<Vec<String>, ClusterError> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(cluster.client().clone());
    let checks = access.iter().map(|(verb, group, resource, ns)| {
        let api = api.clone();
        async move {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        verb: Some((*verb).into()),
                        group: Some((*group).into()),
                        resource: Some((*resource).into()),
                        namespace: ns.map(str::to_owned),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let pp = kube::api::PostParams::default();
            let answer = cluster
                .call(|| api.create(&pp, &review))
                .await
                .map_err(|e| ClusterError::from_kube("create SelfSubjectAccessReview", e))?;
            let status = answer.status.unwrap_or_default();
            let what = if group.is_empty() {
                (*resource).to_string()
            } else {
                format!("{resource}.{group}")
            };
            let scope = ns.map(|n| format!(" in {n}")).unwrap_or_default();
            Ok::<_, ClusterError>((!status.allowed).then(|| {
                let why = status
                    .reason
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                format!("not allowed to {verb} {what}{scope}{why}")
            }))
        }
    });
    let answers = futures::future::try_join_all(checks).await?;
    Ok(answers.into_iter().flatten().collect())
}

/// Server-side applies the profile's edge-worker label (and, on edge nodes, the autonomy
/// annotation) to every node this run converts.
async fn label_nodes(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(cluster.client().clone());
    let mut pp = PatchParams::apply(FIELD_MANAGER);
    pp.dry_run = dry_run;
    let l = &profile.labels;
    for n in plan
        .nodes
        .iter()
        .filter(|n| n.action == NodeAction::Convert)
    {
        let value = match n.role {
            Role::Edge => &l.edge_worker.edge,
            Role::Cloud => &l.edge_worker.cloud,
        };
        let mut meta = json!({"name": n.name, "labels": {l.edge_worker.key.clone(): value}});
        if n.autonomous {
            meta["annotations"] = json!({l.autonomy.key.clone(): l.autonomy.value});
        }
        let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": meta});
        let patch = Patch::Apply(&body);
        cluster
            .call(|| nodes.patch(&n.name, &pp, &patch))
            .await
            .map_err(|e| ClusterError::from_kube(format!("label Node {}", n.name), e))?;
    }
    Ok(())
}

/// `server` and `certificate-authority-data` of `kube-public/cluster-info`.
async fn cluster_info(cluster: &Cluster) -> Result<(String, String), ClusterError> {
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), "kube-public");
    let cm = cluster
        .call(|| cms.get_opt("cluster-info"))
        .await
        .map_err(|e| ClusterError::from_kube("get ConfigMap kube-public/cluster-info", e))?;
    let bad = |m: &str| ClusterError::InvalidObject {
        object: "ConfigMap kube-public/cluster-info".into(),
        message: m.into(),
    };
    let cm = cm.ok_or_else(|| bad("not found; YurtHub's bootstrap kubeconfig is built from it"))?;
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig"))
        .ok_or_else(|| bad("has no kubeconfig key"))?;
    let v: Value = serde_saphyr::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let c = &v["clusters"][0]["cluster"];
    let server = c["server"]
        .as_str()
        .ok_or_else(|| bad("its kubeconfig names no server"))?;
    let ca = c["certificate-authority-data"].as_str().unwrap_or_default();
    Ok((server.to_owned(), ca.to_owned()))
}

/// `n` random characters from `[a-z0-9]` (from /dev/urandom).
fn random_token_chars(n: usize) -> Result<String, ClusterError> {
    use std::io::Read;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(n);
    let mut f = std::fs::File::open("/dev/urandom").map_err(|e| ClusterError::InvalidObject {
        object: "bootstrap token".into(),
        message: format!("cannot read /dev/urandom: {e}"),
    })?;
    let mut buf = [0u8; 1];
    while out.len() < n {
        f.read_exact(&mut buf)
            .map_err(|e| ClusterError::InvalidObject {
                object: "bootstrap token".into(),
                message: format!("cannot read /dev/urandom: {e}"),
            })?;
        // 252 = 7 × 36: reject the rest to stay uniform
        if buf[0] < 252 {
            out.push(ALPHABET[usize::from(buf[0] % 36)] as char);
        }
    }
    Ok(out)
}

/// The token of an earlier run (journal) if its Secret still exists, else a new one.
async fn bootstrap_token(
    cluster: &Cluster,
    journal: &Journal,
) -> Result<(String, TokenSecret), ClusterError> {
    let secrets: Api<Secret> = Api::namespaced(cluster.client().clone(), SYSTEM_NAMESPACE);
    if let Some(id) = &journal.token_id {
        let name = format!("bootstrap-token-{id}");
        let existing = cluster
            .call(|| secrets.get_opt(&name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get Secret kube-system/{name}"), e))?;
        let secret = existing
            .and_then(|s| s.data)
            .and_then(|d| d.get("token-secret").cloned())
            .and_then(|b| String::from_utf8(b.0).ok())
            .and_then(|s| TokenSecret::new(s).ok());
        if let Some(s) = secret {
            return Ok((id.clone(), s));
        }
    }
    let id = random_token_chars(6)?;
    let secret =
        TokenSecret::new(random_token_chars(16)?).map_err(|e| ClusterError::InvalidObject {
            object: "bootstrap token".into(),
            message: e.to_string(),
        })?;
    Ok((id, secret))
}

fn bootstrap_kubeconfig(server: &str, ca: &str, token: &str) -> String {
    let ca_line = if ca.is_empty() {
        String::new()
    } else {
        format!("    certificate-authority-data: {ca}\n")
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n{ca_line}    server: {server}\n  name: cluster\n\
         contexts:\n- context:\n    cluster: cluster\n    user: yurthub-bootstrap\n  name: bootstrap\n\
         current-context: bootstrap\nusers:\n- name: yurthub-bootstrap\n  user:\n    token: {token}\n"
    )
}

fn render_err(e: crate::render::RenderError) -> ClusterError {
    ClusterError::InvalidObject {
        object: "rendered components".into(),
        message: e.to_string(),
    }
}

/// The profile's rendered objects plus the bootstrap Secret, in declaration order.
fn render_objects(
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    server: &str,
    ca: &str,
    token_id: &str,
    token_secret: TokenSecret,
) -> Result<Vec<DynamicObject>, ClusterError> {
    let ttl = k8s_openapi::jiff::SignedDuration::try_from(opts.token_ttl).unwrap_or_default();
    let expiration = k8s_openapi::jiff::Timestamp::now()
        .checked_add(ttl)
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let token_ref = BootstrapTokenRef::new(token_id, expiration).map_err(render_err)?;
    let token = format!("{token_id}.{}", token_secret.expose());
    let kubeconfig = bootstrap_kubeconfig(server, ca, &token);
    let mut ctx = RenderContext::new(profile, server, ca, token_ref, token_secret);
    ctx.images = opts.images(profile);
    ctx.servant_image = ctx.images["servant"].clone();
    ctx.features = opts.features.clone();
    for n in &plan.nodes {
        match n.role {
            Role::Edge => ctx.edge_nodes.push(n.name.clone()),
            Role::Cloud => ctx.cloud_nodes.push(n.name.clone()),
        }
    }
    let rendered = render_cluster_objects(profile, &ctx).map_err(render_err)?;
    let mut objects: Vec<DynamicObject> = rendered.into_iter().map(|r| r.object).collect();
    let secret: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": BOOTSTRAP_SECRET,
            "namespace": SYSTEM_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, crate::render::PROFILE_LABEL: profile.name},
        },
        "type": "Opaque",
        "data": match profile.yurthub.credential {
            YurtHubCredential::BootstrapFile => json!({BOOTSTRAP_KEY: base64(kubeconfig.as_bytes())}),
            YurtHubCredential::JoinToken => json!({JOIN_TOKEN_KEY: base64(token.as_bytes())}),
        },
    }))
    .map_err(|e| ClusterError::InvalidObject {
        object: format!("Secret {SYSTEM_NAMESPACE}/{BOOTSTRAP_SECRET}"),
        message: e.to_string(),
    })?;
    objects.push(secret);
    Ok(objects)
}

/// The objects convert would apply, for `--dry-run=client -o json|yaml`: rendered with the
/// cluster's real server address and CA and a placeholder token; every Secret value redacted.
async fn dry_run_objects(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
) -> Result<Vec<Value>, ClusterError> {
    let (server, ca) = cluster_info(cluster).await?;
    let secret = TokenSecret::new("0000000000000000").map_err(render_err)?;
    let objects = render_objects(plan, profile, opts, &server, &ca, "000000", secret)?;
    Ok(objects
        .into_iter()
        .map(|o| {
            let mut v = serde_json::to_value(&o).unwrap_or_default();
            if v["kind"] == "Secret"
                && v["apiVersion"] == "v1"
                && let Some(Value::Object(data)) = v.get_mut("data")
            {
                for val in data.values_mut() {
                    *val = Value::String(crate::render::REDACTED.into());
                }
            }
            v
        })
        .collect())
}

/// `--dry-run=server`: every write convert would make, sent with `dryRun=All` (components,
/// node labels, node Jobs); one entry per write with the server's answer. Objects of kinds whose
/// CRD this very run installs cannot be checked before the CRD exists and say so.
async fn server_dry_run(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
) -> Result<Vec<Write>, ClusterError> {
    let entry = |verb: &'static str, object: String, r: Result<(), ClusterError>| match r {
        Err(ClusterError::UnknownKind { .. }) => {
            Write::unchecked(verb, object, "its kind comes from a CRD this run installs")
        }
        r => Write::of(verb, object, r),
    };
    let mut writes = Vec::new();
    let servant_image = opts.images(profile)["servant"].clone();
    // in run order: node preflight, labels, components, then the node Jobs
    let mut jobs = preflight_jobs(plan, &servant_image, opts.job_timeout);
    if plan.runs(plan::COMPONENTS) {
        let (server, ca) = cluster_info(cluster).await?;
        let secret = TokenSecret::new("0000000000000000").map_err(render_err)?;
        let objects = render_objects(plan, profile, opts, &server, &ca, "000000", secret)?;
        let applier = Applier::new(
            cluster.clone(),
            ApplyOptions {
                force: opts.force_conflicts,
                dry_run: true,
                ..Default::default()
            },
        );
        for o in &objects {
            let t = o.types.clone().unwrap_or_default();
            let what = crate::cluster::apply::describe(
                &t.kind,
                o.metadata.namespace.as_deref(),
                o.metadata.name.as_deref().unwrap_or_default(),
            );
            writes.push(entry("apply", what, applier.apply(o).await.map(drop)));
        }
    }
    if plan.runs(plan::LABEL_NODES) {
        let r = label_nodes(cluster, plan, profile, true).await;
        writes.push(entry("patch", "node labels and annotations".into(), r));
    }
    if plan.runs(plan::KCM) {
        jobs.extend(
            plan.kcm_nodes
                .iter()
                .map(|n| kcm_job(n, &servant_image, opts.job_timeout)),
        );
    }
    for role in [Role::Edge, Role::Cloud] {
        if plan.runs(role.phase()) {
            jobs.extend(
                plan.to_convert(role)
                    .map(|n| node_job(&n.name, role, &servant_image, profile, opts.job_timeout)),
            );
        }
    }
    for j in jobs {
        writes.push(
            server_dry_run::create_job(cluster, SYSTEM_NAMESPACE, &j, opts.job_timeout).await,
        );
    }
    Ok(writes)
}

/// Renders the profile's components and the bootstrap Secret and applies them (server-side
/// apply, field manager yurtctl); returns what this or an earlier run created.
async fn apply_components(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    journal: &mut Journal,
    rep: &dyn Reporter,
) -> Result<Vec<ObjectRef>, ClusterError> {
    let (server, ca) = cluster_info(cluster).await?;
    let (token_id, token_secret) = bootstrap_token(cluster, journal).await?;
    journal.token_id = Some(token_id.clone());
    let objects = render_objects(plan, profile, opts, &server, &ca, &token_id, token_secret)?;

    // Webhook configurations go with the Deployment that serves them, as the upstream charts
    // apply them: yurt-manager exits when its configurations are still missing 20 s after it
    // starts (openyurtio/openyurt@v1.6.1 pkg/yurtmanager/webhook/server.go). Everything after
    // the last of them is applied only once those Deployments are available, so a webhook
    // with failurePolicy Fail never refuses one of our writes while its server starts.
    let serves_or_registers = |o: &DynamicObject| {
        o.types.as_ref().is_some_and(|t| {
            (t.api_version == "admissionregistration.k8s.io/v1"
                && t.kind.ends_with("WebhookConfiguration"))
                || (t.api_version == "apps/v1" && t.kind == "Deployment")
        })
    };
    let first_batch = objects
        .iter()
        .rposition(serves_or_registers)
        .map_or(0, |i| i + 1);

    let applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            force: opts.force_conflicts,
            ..Default::default()
        },
    );
    let mut refs = Vec::with_capacity(objects.len());
    let mut deployments = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        if i == first_batch && !deployments.is_empty() {
            rep.event(Event::Note {
                phase: plan::COMPONENTS,
                message: format!(
                    "waiting for Deployment(s) {} to be available before applying what their webhooks admit",
                    deployments.join(", ")
                ),
            });
            wait_available(cluster, &deployments, opts.job_timeout).await?;
        }
        // Revert deletes only what convert created: an object that was there before (and
        // is not ours from an earlier run) is journaled as adopted, at once, so an
        // interrupted run still tells revert.
        let before = match applier.get_opt(o).await {
            Err(ClusterError::UnknownKind { .. }) => None,
            other => other?,
        };
        let stored = apply_retrying_discovery(&applier, o).await?;
        let types = o.types.clone().unwrap_or_default();
        let r = ObjectRef {
            api_version: types.api_version,
            kind: types.kind,
            namespace: stored.metadata.namespace.clone(),
            name: stored.metadata.name.clone().unwrap_or_default(),
        };
        let ours = !journal.adopted_objects.contains(&r)
            && before.is_none_or(|b| {
                journal.created_objects.contains(&r)
                    || b.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(LABEL_MANAGED_BY))
                        .is_some_and(|v| v == MANAGED_BY)
            });
        if ours {
            journal.record_created(r.clone());
        } else {
            journal.record_adopted(r.clone());
        }
        if r.kind == "Deployment" && r.api_version == "apps/v1" {
            deployments.push(r.name.clone());
        }
        rep.event(Event::Note {
            phase: plan::COMPONENTS,
            message: format!(
                "applied {}",
                crate::cluster::apply::describe(&r.kind, r.namespace.as_deref(), &r.name)
            ),
        });
        if ours {
            refs.push(r);
        }
    }
    if profile.yurthub.mode == YurtHubMode::YurtStaticSet {
        refs.extend(
            wait_static_set_config_maps(cluster, profile, journal, opts.job_timeout, rep).await?,
        );
    }
    Ok(refs)
}

/// Waits until yurt-manager has rendered each YurtStaticSet's manifest into its ConfigMap
/// (the node Jobs install YurtHub from there), and journals those ConfigMaps as ours: they
/// exist because our YurtStaticSets do.
async fn wait_static_set_config_maps(
    cluster: &Cluster,
    profile: &Profile,
    journal: &mut Journal,
    timeout: Duration,
    rep: &dyn Reporter,
) -> Result<Vec<ObjectRef>, ClusterError> {
    let names: Vec<String> = [WorkingMode::Edge, WorkingMode::Cloud]
        .map(|m| profile.yurthub_manifest_config_map(m).to_string())
        .to_vec();
    rep.event(Event::Note {
        phase: plan::COMPONENTS,
        message: format!(
            "waiting for yurt-manager to render the YurtHub manifests into ConfigMap(s) {}",
            names.join(", ")
        ),
    });
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), SYSTEM_NAMESPACE);
    cluster.throttle().await;
    // rendered = carries the hash annotation yurt-manager's controller writes
    // (openyurtio/openyurt@v1.6.1 pkg/yurtmanager/controller/yurtstaticset, syncConfigMap)
    let missing = wait_all(api, None, &names, timeout, |cm| {
        crate::cluster::staticset::hash_of(cm).is_some()
    })
    .await;
    if !missing.is_empty() {
        return Err(ClusterError::Timeout {
            what: format!(
                "yurt-manager to render ConfigMap(s) {} in kube-system (check the yurt-manager pod's log; a ConfigMap of that name without annotations, made by someone else, stops yurt-manager v1.6's YurtStaticSet controller: delete it and re-run)",
                missing.join(", ")
            ),
            after: timeout,
        });
    }
    let mut ours = Vec::new();
    for name in names {
        let r = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some(SYSTEM_NAMESPACE.into()),
            name,
        };
        if !journal.adopted_objects.contains(&r) && !journal.created_objects.contains(&r) {
            journal.record_created(r.clone());
            ours.push(r);
        }
    }
    Ok(ours)
}

/// Applies `o`; a kind that is not served yet (a CRD applied a moment ago) is retried for a
/// few seconds.
async fn apply_retrying_discovery(
    applier: &Applier,
    o: &DynamicObject,
) -> Result<DynamicObject, ClusterError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        match applier.apply(o).await {
            Err(ClusterError::UnknownKind { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => return other,
        }
    }
}

/// The node Job running `yurtctl node-servant convert` (design §3): pinned by the runner,
/// privileged, hostPID, hostNetwork, host `/` at /host, no service-account token; the YurtHub
/// manifest from the profile's ConfigMap for the node's working mode, the credential from the
/// bootstrap Secret (volumes, never arguments or environment variables).
/// The runner adds the least-privilege defaults (deliberate tolerations, resources;
/// `NodeJob::to_job`). Host `/` rather than narrower paths: the servant follows the kubelet's
/// unit, drop-ins and EnvironmentFiles wherever they are, and privileged + hostPID is root on
/// the node anyway.
pub fn node_job(
    node: &str,
    role: Role,
    servant_image: &str,
    profile: &Profile,
    job_timeout: Duration,
) -> NodeJob {
    // leave the servant time to report before the Job's deadline
    let hub_timeout = format!("{}s", (job_timeout.as_secs() * 3 / 5).max(1));
    let mode = role.working_mode();
    let hub = &profile.yurthub;
    let (credential_flag, credential_key) = match hub.credential {
        YurtHubCredential::BootstrapFile => ("--bootstrap-file", BOOTSTRAP_KEY),
        YurtHubCredential::JoinToken => ("--join-token-file", JOIN_TOKEN_KEY),
    };
    let credential = format!("{BOOTSTRAP_MOUNT}/{credential_key}");
    let manifest = format!("{MANIFEST_MOUNT}/{}", hub.manifest_file);
    let args = [
        "--yurthub-manifest",
        &manifest,
        "--manifest-file",
        &hub.manifest_file,
        credential_flag,
        &credential,
        "--yurthub-timeout",
        &hub_timeout,
    ];
    servant_job(
        plan::CONVERT_ACTION,
        node,
        servant_image,
        "convert",
        &args,
        job_timeout,
        &[
            ServantVolume {
                name: "bootstrap",
                mount_path: BOOTSTRAP_MOUNT,
                source: json!({"secret": {
                    "secretName": BOOTSTRAP_SECRET,
                    "defaultMode": 0o400,
                    "items": [{"key": credential_key, "path": credential_key}]
                }}),
            },
            ServantVolume {
                name: "yurthub-manifest",
                mount_path: MANIFEST_MOUNT,
                source: json!({"configMap": {
                    "name": profile.yurthub_manifest_config_map(mode),
                    "items": [{"key": hub.manifest_name, "path": hub.manifest_file}]
                }}),
            },
        ],
    )
}

/// The node Job that disables nodelifecycle in the node's kube-controller-manager manifest.
pub fn kcm_job(node: &str, servant_image: &str, job_timeout: Duration) -> NodeJob {
    servant_job(
        plan::KCM_ACTION,
        node,
        servant_image,
        plan::KCM_ACTION,
        &[],
        job_timeout,
        &[],
    )
}

/// Waits on ONE watch of `api` (filtered by `labels`, if any) until every object named in
/// `names` satisfies `done` at the same time; returns the names that did not by `timeout`.
async fn wait_all<K>(
    api: Api<K>,
    labels: Option<&str>,
    names: &[String],
    timeout: Duration,
    done: impl Fn(&K) -> bool,
) -> Vec<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    use futures::StreamExt;
    use kube::runtime::WatchStreamExt;
    use kube::runtime::watcher::{self, watcher};
    let mut state: BTreeMap<String, bool> = names.iter().map(|n| (n.clone(), false)).collect();
    if names.is_empty() {
        return Vec::new();
    }
    let mut cfg = watcher::Config::default();
    if let Some(l) = labels {
        cfg = cfg.labels(l);
    }
    let mut stream = watcher(api, cfg)
        .default_backoff()
        .touched_objects()
        .boxed();
    let watch = async {
        while let Some(ev) = stream.next().await {
            // errors are retried by the watcher's back-off; the deadline bounds the wait
            let Ok(obj) = ev else { continue };
            let name = obj.meta().name.clone().unwrap_or_default();
            if let Some(v) = state.get_mut(&name) {
                *v = done(&obj);
            }
            if state.values().all(|v| *v) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, watch).await;
    state
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect()
}

/// Waits until every named Deployment (ours, in kube-system) has an available replica.
async fn wait_available(
    cluster: &Cluster,
    names: &[String],
    timeout: Duration,
) -> Result<(), ClusterError> {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(cluster.client().clone(), SYSTEM_NAMESPACE);
    cluster.throttle().await;
    let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let missing = wait_all(api, Some(&selector), names, timeout, |d| {
        d.status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0)
            >= 1
    })
    .await;
    if missing.is_empty() {
        return Ok(());
    }
    let mut pods = Vec::new();
    for name in &missing {
        pods.extend(
            crate::cluster::diagnose::deployment_pods(cluster, SYSTEM_NAMESPACE, name).await,
        );
    }
    let why = if pods.is_empty() {
        String::new()
    } else {
        format!(" ({})", pods.join("; "))
    };
    Err(ClusterError::Timeout {
        what: format!(
            "Deployment(s) {} in kube-system to become available{why}",
            missing.join(", ")
        ),
        after: timeout,
    })
}

/// Waits until every node in `names` is Ready; returns those that were not by the deadline.
pub(crate) async fn wait_ready(
    cluster: &Cluster,
    names: &[String],
    timeout: Duration,
) -> Vec<String> {
    let api: Api<Node> = Api::all(cluster.client().clone());
    cluster.throttle().await;
    wait_all(api, None, names, timeout, |n| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_job_follows_the_contract() {
        let profile = Profile::load(Profile::DEFAULT).unwrap();
        let j = node_job(
            "worker-1",
            Role::Edge,
            "img:1",
            &profile,
            Duration::from_secs(300),
        )
        .to_job(SYSTEM_NAMESPACE, Duration::from_secs(300));
        let v = serde_json::to_value(&j).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["backoffLimit"], 0);
        assert_eq!(spec["activeDeadlineSeconds"], 300);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["nodeName"], "worker-1");
        assert_eq!(pod["hostNetwork"], true);
        assert_eq!(pod["hostPID"], true);
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(c["securityContext"]["privileged"], true);
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "spec.nodeName"
        );
        assert_eq!(pod["volumes"][0]["hostPath"]["path"], "/");
        assert_eq!(pod["volumes"][1]["secret"]["secretName"], BOOTSTRAP_SECRET);
        let args = c["command"].to_string();
        assert!(args.contains("--bootstrap-file"), "{args}");
        assert!(!args.contains("token"), "no credential in args: {args}");
        assert_eq!(v["metadata"]["name"], "yurtctl-convert-worker-1");
    }

    #[test]
    fn bootstrap_kubeconfig_parses() {
        let k = bootstrap_kubeconfig("https://10.0.0.1:6443", "Q0E=", "abcdef.0123456789abcdef");
        let v: Value = serde_saphyr::from_str(&k).unwrap();
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://10.0.0.1:6443"
        );
        assert_eq!(v["users"][0]["user"]["token"], "abcdef.0123456789abcdef");
        assert_eq!(v["current-context"], "bootstrap");
    }

    #[test]
    fn random_tokens_are_valid() {
        let s = random_token_chars(16).unwrap();
        assert!(TokenSecret::new(s.clone()).is_ok(), "{s}");
        assert_ne!(s, random_token_chars(16).unwrap());
    }
}
