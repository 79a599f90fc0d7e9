//! `yurtctl revert`: context → snapshot → plan → (dry-run: print) → confirm → execute →
//! result. Execution mirrors convert: lock → delete leftover convert Jobs → node Jobs (cloud,
//! then edge) → kcm → delete the components convert created → remove yurtctl's labels →
//! verify; the journal records progress after every phase (an interrupted revert resumes),
//! and a revert of all nodes ends by deleting the journal and the lock.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::app::common::{block_on, confirm, connect_from, fail, print_structured};
use crate::app::servant_job::servant_job;
use crate::app::server_dry_run::{self, Write};
use crate::cli::{DryRun, GlobalArgs, RevertCmd};
use crate::cluster::apply::{Applier, ApplyOptions, Deleted, describe};
use crate::cluster::jobs::NodeJob;
use crate::cluster::journal::{Journal, JournalStore, ObjectRef, PhaseState};
use crate::cluster::lock::{self, LockOptions};
use crate::cluster::snapshot::{SnapshotOptions, snapshot};
use crate::cluster::{Cluster, ClusterError, FIELD_MANAGER, SYSTEM_NAMESPACE};
use crate::exit::Exit;
use crate::output::{
    Event, NodeOutcome, NodeResult, PlainReporter, Reporter, RevertResult, node_summary_lines,
};
use crate::plan::revert::{
    CLEANUP_JOBS, ENABLE_NODELIFECYCLE_ACTION, REVERT_ACTION, REVERTED, RevertAction, RevertNode,
    RevertOptions, RevertPlan, plan_revert, render_text,
};
use crate::plan::{self, PlanError, Role};
use crate::render::Profile;

/// Runs `yurtctl revert`; prints progress on stderr and the result on stdout.
pub fn run(g: &GlobalArgs, cmd: &RevertCmd) -> Exit {
    let reporter = PlainReporter::stderr();
    block_on(revert(g, cmd, &reporter))
}

async fn revert(g: &GlobalArgs, cmd: &RevertCmd, rep: &dyn Reporter) -> Exit {
    let opts = cmd.options();
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let snap = match snapshot(&cluster, &SnapshotOptions::default()).await {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let profile_name = snap
        .journal
        .as_ref()
        .map_or(Profile::DEFAULT, |j| j.profile.as_str());
    let profile = match Profile::load(profile_name) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "error: [{}] the journal names profile {profile_name}: {e}",
                plan::PREFLIGHT
            );
            return Exit::Preflight;
        }
    };
    let plan = match plan_revert(&snap, &opts, &profile) {
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
        let mut v =
            json!({"apiVersion": crate::output::API_VERSION, "kind": "Plan", "command": "revert"});
        if let (Some(m), Ok(Value::Object(p))) = (v.as_object_mut(), serde_json::to_value(&plan)) {
            m.extend(p);
        }
        let writes = if g.dry_run == DryRun::Server && !plan.nothing_to_do() {
            match server_dry_run(&cluster, &plan, &opts, snap.journal.as_ref()).await {
                Ok(w) => w,
                Err(e) => return fail(&e),
            }
        } else {
            Vec::new()
        };
        if g.dry_run == DryRun::Server && !plan.nothing_to_do() {
            v["serverDryRun"] = serde_json::to_value(&writes).unwrap_or_default();
        }
        if !print_structured(g, &v) {
            print!("{}", render_text(&plan));
            if g.dry_run == DryRun::Server && !plan.nothing_to_do() {
                println!("{}", server_dry_run::summary_line(&writes));
            }
        }
        return server_dry_run::report_refusals(&writes, &format!("[{}] ", plan::PREFLIGHT));
    }

    if plan.nothing_to_do() {
        let mut result = RevertResult::new(&plan.profile);
        result.complete = plan.complete && snap.journal.is_none();
        result.message = if snap.journal.is_some() {
            "nothing to revert on the selected nodes".into()
        } else {
            "nothing to revert: no journal and nothing of yurtctl's found".into()
        };
        return finish(g, result, Exit::Ok);
    }

    if plan.runs(plan::PREFLIGHT) {
        match access(&cluster, &plan).await {
            Ok(f) if f.is_empty() => {}
            Ok(f) => {
                eprintln!("error: [{}] {}", plan::PREFLIGHT, PlanError::Preflight(f));
                return Exit::Preflight;
            }
            Err(e) => return fail(&e),
        }
    }

    eprint!("{}", render_text(&plan));
    if let Err(exit) = confirm(g, "Revert this cluster?") {
        return exit;
    }
    let (result, exit) = execute(&cluster, &plan, &opts, snap.journal, rep).await;
    finish(g, result, exit)
}

/// What revert always does (verb, group, resource, namespace).
const ACCESS: &[crate::app::convert::Access<'static>] = &[
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
    ("get", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("create", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("update", "", "configmaps", Some(SYSTEM_NAMESPACE)),
    ("delete", "", "configmaps", Some(SYSTEM_NAMESPACE)),
];

/// Preflight permissions: [`ACCESS`] plus get and delete of every kind of object the plan
/// deletes (patch for the ones it keeps), resources as the server names them.
async fn access(cluster: &Cluster, plan: &RevertPlan) -> Result<Vec<String>, ClusterError> {
    use std::collections::BTreeSet;
    let applier = Applier::new(cluster.clone(), ApplyOptions::default());
    let mut wanted: BTreeSet<(&'static str, String, String, Option<String>)> = BTreeSet::new();
    let kinds = plan
        .objects
        .iter()
        .map(|r| (r, ["get", "delete"].as_slice()))
        .chain(
            plan.adopted_objects
                .iter()
                .map(|r| (r, ["get", "patch"].as_slice())),
        );
    for (r, verbs) in kinds {
        let gvk = crate::cluster::apply::gvk_of(&dynamic(r)?)?;
        let (ar, _) = match applier.resource(&gvk).await {
            Ok(found) => found,
            // its CRD is gone: nothing of that kind is left to delete
            Err(ClusterError::UnknownKind { .. }) => continue,
            Err(e) => return Err(e),
        };
        for v in verbs {
            wanted.insert((v, ar.group.clone(), ar.plural.clone(), r.namespace.clone()));
        }
    }
    let mut table: Vec<crate::app::convert::Access<'_>> = ACCESS.to_vec();
    table.extend(
        wanted
            .iter()
            .map(|(v, g, p, ns)| (*v, g.as_str(), p.as_str(), ns.as_deref())),
    );
    crate::app::convert::access_findings(cluster, &table).await
}

fn finish(g: &GlobalArgs, mut result: RevertResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    for l in node_summary_lines(&result.nodes, &result.message) {
        eprintln!("{l}");
    }
    print_structured(g, &result);
    exit
}

use crate::app::node_phase::{PhaseResult, job_node_result, run_journaled};

/// Lock, run the phases, then delete the journal (complete revert) or save it, and release
/// the lock (also after a failure or Ctrl-C).
async fn execute(
    cluster: &Cluster,
    plan: &RevertPlan,
    opts: &RevertOptions,
    journal: Option<Journal>,
    rep: &dyn Reporter,
) -> (RevertResult, Exit) {
    let mut result = RevertResult::new(&plan.profile);
    let mut guard = if plan.runs(plan::LOCK) {
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
    let store = JournalStore::new(cluster);
    let had_journal = journal.is_some();
    let mut journal = journal.unwrap_or_else(|| Journal::new("revert", &plan.profile));
    journal.command = "revert".into();
    let lost = async {
        match guard.as_mut() {
            Some(g) => g.wait_lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        r = phases(cluster, plan, opts, &mut journal, &store, &mut result, rep) => Ok(r),
        _ = tokio::signal::ctrl_c() => Err(None),
        e = lost => Err(Some(e)),
    };
    let mut exit = match outcome {
        Ok(Ok(())) => outcome_exit(&mut result),
        Ok(Err((phase, e))) => {
            result.message = format!("[{phase}] {e}");
            eprintln!("error: {}", result.message);
            e.exit()
        }
        Err(None) => {
            result.message = "interrupted; progress is journaled: re-run revert to resume".into();
            Exit::Interrupted
        }
        Err(Some(e)) => {
            result.message = format!("stopped: {e}");
            eprintln!("error: {}", result.message);
            e.exit()
        }
    };
    let finished = exit == Exit::Ok && plan.complete && plan.runs(plan::COMPONENTS);
    if finished {
        match store.delete().await {
            Ok(_) => result.complete = true,
            Err(e) => {
                result.message = format!("[{}] cannot delete the journal: {e}", plan::VERIFY);
                eprintln!("error: {}", result.message);
                exit = e.exit();
            }
        }
    } else if (had_journal || !journal.nodes.is_empty())
        && let Err(e) = store.save(&mut journal).await
    {
        eprintln!("warning: cannot save the journal kube-system/yurtctl-state: {e}");
    }
    if let Some(g) = guard
        && let Err(e) = g.release().await
    {
        eprintln!("warning: cannot release the lock kube-system/yurtctl-lock: {e}");
    }
    (result, exit)
}

fn outcome_exit(result: &mut RevertResult) -> Exit {
    let with = |o: NodeOutcome| {
        result
            .nodes
            .iter()
            .filter(|n| n.result == o)
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
    };
    let (reverted, failed, timed_out, skipped) = (
        with(NodeOutcome::Reverted).len(),
        with(NodeOutcome::Failed),
        with(NodeOutcome::TimedOut),
        with(NodeOutcome::Skipped),
    );
    let mut msg = format!(
        "reverted {reverted} node(s), deleted {} object(s)",
        result.deleted_objects.len()
    );
    for (what, names) in [
        ("failed", &failed),
        ("timed out", &timed_out),
        ("skipped", &skipped),
    ] {
        if !names.is_empty() {
            msg.push_str(&format!("; {what}: {}", names.join(", ")));
        }
    }
    let exit = if !failed.is_empty() || !skipped.is_empty() {
        Exit::Partial
    } else if !timed_out.is_empty() {
        Exit::Timeout
    } else {
        Exit::Ok
    };
    if exit != Exit::Ok {
        msg.push_str("; components and journal kept: re-run revert to finish the rest");
    }
    result.message = msg;
    exit
}

fn node_result(n: &RevertNode, result: NodeOutcome, message: impl Into<String>) -> NodeResult {
    NodeResult {
        name: n.name.clone(),
        role: n.role.as_str().into(),
        result,
        message: message.into(),
        logs: None,
    }
}

async fn save_journal(
    store: &JournalStore,
    j: &mut Journal,
    phase: &'static str,
) -> PhaseResult<()> {
    store.save(j).await.map_err(|e| (phase, e))
}

async fn phases(
    cluster: &Cluster,
    plan: &RevertPlan,
    opts: &RevertOptions,
    journal: &mut Journal,
    store: &JournalStore,
    result: &mut RevertResult,
    rep: &dyn Reporter,
) -> PhaseResult<()> {
    let mut results: BTreeMap<String, NodeResult> = BTreeMap::new();
    for n in &plan.nodes {
        let r = match n.action {
            RevertAction::AlreadyReverted => {
                node_result(n, NodeOutcome::AlreadyReverted, "already reverted")
            }
            RevertAction::SkipNotReady => node_result(
                n,
                NodeOutcome::Skipped,
                "NotReady: skipped; re-run revert once it is Ready",
            ),
            RevertAction::Revert => node_result(
                n,
                NodeOutcome::PhaseSkipped,
                "not reverted: its phase is in --skip-phases",
            ),
        };
        results.insert(n.name.clone(), r);
    }

    // cleanup-jobs
    if plan.runs(CLEANUP_JOBS) {
        if !plan.leftover_jobs.is_empty() {
            rep.event(Event::PhaseStarted(CLEANUP_JOBS));
            delete_jobs(cluster, &plan.leftover_jobs, opts.job_timeout)
                .await
                .map_err(|e| (CLEANUP_JOBS, e))?;
            rep.event(Event::Note {
                phase: CLEANUP_JOBS,
                message: format!("deleted {}", plan.leftover_jobs.join(", ")),
            });
            rep.event(Event::PhaseDone(CLEANUP_JOBS));
        }
    } else {
        rep.event(Event::PhaseSkipped(CLEANUP_JOBS));
    }

    let servant_image = servant_image(Some(journal), plan);

    // nodes/cloud, nodes/edge
    for role in [Role::Cloud, Role::Edge] {
        let phase = role.phase();
        let nodes: Vec<&RevertNode> = plan.to_revert(role).collect();
        if !plan.runs(phase) {
            rep.event(Event::PhaseSkipped(phase));
            continue;
        }
        if nodes.is_empty() {
            continue;
        }
        rep.event(Event::PhaseStarted(phase));
        let specs = nodes
            .iter()
            .map(|n| revert_job(&n.name, &servant_image, opts.job_timeout))
            .collect();
        for n in &nodes {
            journal.set_phase(&n.name, REVERTED, PhaseState::Running, None);
        }
        save_journal(store, journal, phase).await?;
        let ended = node_jobs(
            cluster,
            specs,
            opts,
            phase,
            rep,
            journal,
            store,
            mark_reverted,
        )
        .await?;
        for (node, r) in ended {
            mark_reverted(
                journal,
                &node,
                (r.result != NodeOutcome::Reverted).then(|| r.message.clone()),
            );
            results.insert(node, r);
        }
        save_journal(store, journal, phase).await?;
        rep.event(Event::PhaseDone(phase));
    }

    // kcm: re-enable nodelifecycle where convert disabled it
    let kcm_nodes: Vec<&RevertNode> = plan
        .nodes
        .iter()
        .filter(|n| n.kcm && n.action == RevertAction::Revert)
        .filter(|n| {
            results
                .get(&n.name)
                .is_some_and(|r| r.result == NodeOutcome::Reverted)
        })
        .collect();
    if !plan.runs(plan::KCM) {
        rep.event(Event::PhaseSkipped(plan::KCM));
    } else if !kcm_nodes.is_empty() {
        rep.event(Event::PhaseStarted(plan::KCM));
        let specs = kcm_nodes
            .iter()
            .map(|n| kcm_job(&n.name, &servant_image, opts.job_timeout))
            .collect();
        for (node, r) in node_jobs(
            cluster,
            specs,
            opts,
            plan::KCM,
            rep,
            journal,
            store,
            mark_kcm,
        )
        .await?
        {
            let failed = r.result != NodeOutcome::Reverted;
            mark_kcm(journal, &node, failed.then(|| r.message.clone()));
            if failed {
                results.insert(node, r);
            }
        }
        save_journal(store, journal, plan::KCM).await?;
        rep.event(Event::PhaseDone(plan::KCM));
    }

    let all_reverted = results.values().all(|r| {
        matches!(
            r.result,
            NodeOutcome::Reverted | NodeOutcome::AlreadyReverted
        )
    });

    // components: only once every node is reverted (a node still on YurtHub needs them)
    if !plan.runs(plan::COMPONENTS) {
        rep.event(Event::PhaseSkipped(plan::COMPONENTS));
    } else if !plan.complete {
        rep.event(Event::Note {
            phase: plan::COMPONENTS,
            message: "kept: --nodes reverts only those nodes".into(),
        });
    } else if !all_reverted {
        rep.event(Event::Note {
            phase: plan::COMPONENTS,
            message: "kept: not every node is reverted yet".into(),
        });
    } else {
        rep.event(Event::PhaseStarted(plan::COMPONENTS));
        delete_components(cluster, plan, opts, journal, result, rep)
            .await
            .map_err(|e| (plan::COMPONENTS, e))?;
        save_journal(store, journal, plan::COMPONENTS).await?;
        rep.event(Event::PhaseDone(plan::COMPONENTS));
    }

    // label-nodes: only nodes reverted now or before keep no label of ours
    if plan.runs(plan::LABEL_NODES) {
        rep.event(Event::PhaseStarted(plan::LABEL_NODES));
        let nodes: Api<Node> = Api::all(cluster.client().clone());
        let pp = PatchParams::apply(FIELD_MANAGER);
        for r in results.values().filter(|r| {
            matches!(
                r.result,
                NodeOutcome::Reverted | NodeOutcome::AlreadyReverted
            )
        }) {
            // an apply by our field manager that names no field gives up exactly the labels
            // and annotations we applied; values other managers own stay
            let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": r.name}});
            let patch = Patch::Apply(&body);
            cluster
                .call(|| nodes.patch(&r.name, &pp, &patch))
                .await
                .map_err(|e| {
                    (
                        plan::LABEL_NODES,
                        ClusterError::from_kube(format!("unlabel Node {}", r.name), e),
                    )
                })?;
        }
        rep.event(Event::PhaseDone(plan::LABEL_NODES));
    } else {
        rep.event(Event::PhaseSkipped(plan::LABEL_NODES));
    }

    // verify: every node reverted now is Ready again
    if plan.runs(plan::VERIFY) {
        rep.event(Event::PhaseStarted(plan::VERIFY));
        let reverted: Vec<String> = results
            .values()
            .filter(|n| n.result == NodeOutcome::Reverted)
            .map(|n| n.name.clone())
            .collect();
        for n in crate::app::convert::wait_ready(cluster, &reverted, opts.job_timeout).await {
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
    result.nodes = results.into_values().collect();
    Ok(())
}

/// The servant image convert recorded, else the profile's.
fn servant_image(journal: Option<&Journal>, plan: &RevertPlan) -> String {
    journal
        .and_then(|j| j.options.get("servantImage"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            Profile::load(&plan.profile)
                .ok()
                .and_then(|p| p.images.get("servant").cloned())
        })
        .unwrap_or_default()
}

/// The Job that runs `node-servant revert` on `node`.
fn revert_job(node: &str, image: &str, timeout: Duration) -> NodeJob {
    servant_job(REVERT_ACTION, node, image, "revert", &[], timeout, &[])
}

/// The Job that re-enables nodelifecycle in kube-controller-manager on `node`.
fn kcm_job(node: &str, image: &str, timeout: Duration) -> NodeJob {
    servant_job(
        ENABLE_NODELIFECYCLE_ACTION,
        node,
        image,
        "enable-nodelifecycle",
        &[],
        timeout,
        &[],
    )
}

/// Journals a node's revert Job's end (`Some(error)` when it failed). On success convert's
/// entries become "not converted" (Pending): a newer entry wins any merge, so a conflicting
/// save cannot resurrect them.
fn mark_reverted(journal: &mut Journal, node: &str, error: Option<String>) {
    match error {
        None => {
            for p in [plan::NODES_EDGE, plan::NODES_CLOUD] {
                if journal.phase(node, p).is_some() {
                    journal.set_phase(node, p, PhaseState::Pending, None);
                }
            }
            journal.set_phase(node, REVERTED, PhaseState::Done, None);
        }
        Some(e) => journal.set_phase(node, REVERTED, PhaseState::Failed, Some(e)),
    }
}

/// Journals the end of an `enable-nodelifecycle` Job.
fn mark_kcm(journal: &mut Journal, node: &str, error: Option<String>) {
    match error {
        None => journal.set_phase(node, plan::KCM, PhaseState::Pending, None),
        Some(e) => journal.set_phase(node, plan::KCM, PhaseState::Failed, Some(e)),
    }
}

/// Runs one Job per spec and maps the outcomes to node results (`Reverted` for success),
/// journaling each node's end with `mark` as it happens.
#[allow(clippy::too_many_arguments)]
async fn node_jobs(
    cluster: &Cluster,
    specs: Vec<NodeJob>,
    opts: &RevertOptions,
    phase: &'static str,
    rep: &dyn Reporter,
    journal: &mut Journal,
    store: &JournalStore,
    mark: fn(&mut Journal, &str, Option<String>),
) -> PhaseResult<Vec<(String, NodeResult)>> {
    let role = plan::Role::of_phase(phase).as_str();
    let outcomes = run_journaled(
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
    .await?;
    Ok(outcomes
        .iter()
        .map(|r| {
            let nr = job_node_result(r, role, NodeOutcome::Reverted, "reverted", "");
            (r.node.clone(), nr)
        })
        .collect())
}

/// Deletes the named Jobs (Foreground: their pods go first) and waits until they are gone.
async fn delete_jobs(
    cluster: &Cluster,
    names: &[String],
    timeout: Duration,
) -> Result<(), ClusterError> {
    use kube::runtime::wait::{await_condition, conditions};
    let api: Api<Job> = Api::namespaced(cluster.client().clone(), SYSTEM_NAMESPACE);
    let dp = DeleteParams::foreground();
    for name in names {
        let what = format!("Job {SYSTEM_NAMESPACE}/{name}");
        let Some(job) = cluster
            .call(|| api.get_opt(name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?
        else {
            continue;
        };
        crate::cluster::apply::delete_with(cluster, &api, name, &dp, &what).await?;
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let gone = await_condition(api.clone(), name, conditions::is_deleted(&uid));
        match tokio::time::timeout(timeout, gone).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(ClusterError::InvalidObject {
                    object: what,
                    message: format!("watching its deletion: {e}"),
                });
            }
            Err(_) => {
                return Err(ClusterError::Timeout {
                    what: format!("{what} to be deleted"),
                    after: timeout,
                });
            }
        }
    }
    Ok(())
}

fn dynamic(r: &ObjectRef) -> Result<DynamicObject, ClusterError> {
    let mut meta = json!({"name": r.name});
    if let Some(ns) = &r.namespace {
        meta["namespace"] = json!(ns);
    }
    serde_json::from_value(json!({"apiVersion": r.api_version, "kind": r.kind, "metadata": meta}))
        .map_err(|e| ClusterError::InvalidObject {
            object: describe(&r.kind, r.namespace.as_deref(), &r.name),
            message: e.to_string(),
        })
}

/// Deletes what convert created, in [`crate::plan::revert::deletion_rank`] order, waiting
/// for custom resources to be gone before their CRDs go; gives up yurtctl's fields on the
/// objects that existed before convert (an apply naming no field).
async fn delete_components(
    cluster: &Cluster,
    plan: &RevertPlan,
    opts: &RevertOptions,
    journal: &mut Journal,
    result: &mut RevertResult,
    rep: &dyn Reporter,
) -> Result<(), ClusterError> {
    use kube::runtime::wait::{await_condition, conditions};
    let applier = Applier::new(cluster.clone(), ApplyOptions::default());
    let mut pending_crs: Vec<(Api<DynamicObject>, String, String)> = Vec::new();
    for r in &plan.objects {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let rank = crate::plan::revert::deletion_rank(r);
        if rank >= 2 && !pending_crs.is_empty() {
            // custom resources first: gone before the controller and the CRDs go
            for (api, name, uid) in pending_crs.drain(..) {
                let gone = await_condition(api, &name, conditions::is_deleted(&uid));
                if tokio::time::timeout(opts.job_timeout, gone).await.is_err() {
                    return Err(ClusterError::Timeout {
                        what: format!("{name} to be deleted"),
                        after: opts.job_timeout,
                    });
                }
            }
        }
        let obj = dynamic(r)?;
        // custom resources are waited for (by uid) before their CRDs go; the rest are just
        // deleted, gone already being fine
        let live = if rank == 1 {
            match applier.get_opt(&obj).await {
                Ok(Some(l)) => Some(l),
                Ok(None) | Err(ClusterError::UnknownKind { .. }) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let deleted = match applier.delete(&obj).await {
            Ok(d) => d == Deleted::Deleted,
            // its CRD is gone already: so is the object
            Err(ClusterError::UnknownKind { .. }) => false,
            Err(e) => return Err(e),
        };
        if deleted {
            if let Some(live) = live {
                let (ar, caps) = applier
                    .resource(&crate::cluster::apply::gvk_of(&obj)?)
                    .await?;
                let api = match caps.scope {
                    kube::discovery::Scope::Cluster => Api::all_with(cluster.client().clone(), &ar),
                    kube::discovery::Scope::Namespaced => Api::namespaced_with(
                        cluster.client().clone(),
                        r.namespace.as_deref().unwrap_or(SYSTEM_NAMESPACE),
                        &ar,
                    ),
                };
                pending_crs.push((api, r.name.clone(), live.metadata.uid.unwrap_or_default()));
            }
            rep.event(Event::Note {
                phase: plan::COMPONENTS,
                message: format!("deleted {what}"),
            });
        }
        journal.created_objects.retain(|x| x != r);
        result.deleted_objects.push(what);
    }
    for r in &plan.adopted_objects {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let obj = dynamic(r)?;
        // an apply would create it if it is gone meanwhile
        let live = match applier.get_opt(&obj).await {
            Ok(l) => l,
            Err(ClusterError::UnknownKind { .. }) => None,
            Err(e) => return Err(e),
        };
        if live.is_some() {
            applier.apply(&obj).await?;
        }
        rep.event(Event::Note {
            phase: plan::COMPONENTS,
            message: format!("kept {what} (it existed before convert); gave up yurtctl's fields"),
        });
        journal.adopted_objects.retain(|x| x != r);
        result.kept_objects.push(what);
    }
    Ok(())
}

/// `--dry-run=server`: every write this revert would make, in execution order, sent with
/// `dryRun=All`, as if every node Job succeeded (so the components, the labels, the journal
/// and the lock go as in a complete run). A delete of something not there (the lock, which
/// the run takes first) is answered 404 only after authorization: allowed, with a note.
async fn server_dry_run(
    cluster: &Cluster,
    plan: &RevertPlan,
    opts: &RevertOptions,
    journal: Option<&Journal>,
) -> Result<Vec<Write>, ClusterError> {
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::PostParams;

    use crate::cluster::apply::delete_with;
    use crate::cluster::journal::JOURNAL_NAME;
    use crate::cluster::{LABEL_MANAGED_BY, MANAGED_BY};

    let client = cluster.client().clone();
    let pp = PostParams {
        dry_run: true,
        field_manager: Some(FIELD_MANAGER.into()),
    };
    let deleted = |verb, what: String, r: Result<Deleted, ClusterError>, gone: &str| match r {
        Ok(Deleted::Deleted) => Write::of(verb, what, Ok(())),
        Ok(Deleted::AlreadyGone) => Write::accepted_with(verb, what, gone),
        Err(e) => Write::of(verb, what, Err(e)),
    };
    let mut out = Vec::new();

    // lock: taken (created, or a stale one updated)
    let lock = LockOptions::default();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lock.namespace);
    let lease_what = format!("Lease {}", lock.lease());
    if plan.runs(plan::LOCK) {
        let current = cluster
            .call(|| leases.get_opt(&lock.name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {lease_what}"), e))?;
        let (verb, r) = match current {
            None => {
                let lease = Lease {
                    metadata: kube::api::ObjectMeta {
                        name: Some(lock.name.clone()),
                        namespace: Some(lock.namespace.clone()),
                        labels: Some([(LABEL_MANAGED_BY.into(), MANAGED_BY.into())].into()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(lock.identity.clone()),
                        lease_duration_seconds: Some(lock.duration.as_secs() as i32),
                        ..Default::default()
                    }),
                };
                ("create", cluster.call(|| leases.create(&pp, &lease)).await)
            }
            Some(l) => (
                "update",
                cluster.call(|| leases.replace(&lock.name, &pp, &l)).await,
            ),
        };
        let r = r
            .map(drop)
            .map_err(|e| ClusterError::from_kube(format!("{verb} {lease_what}"), e));
        out.push(Write::of(verb, lease_what.clone(), r));
    }

    // the journal: saved after every phase
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let journal_what = format!("ConfigMap {SYSTEM_NAMESPACE}/{JOURNAL_NAME}");
    if journal.is_some()
        && let Some(cm) = cluster
            .call(|| cms.get_opt(JOURNAL_NAME))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {journal_what}"), e))?
    {
        let r = cluster
            .call(|| cms.replace(JOURNAL_NAME, &pp, &cm))
            .await
            .map(drop)
            .map_err(|e| ClusterError::from_kube(format!("update {journal_what}"), e));
        out.push(Write::of("update", journal_what.clone(), r));
    }

    // cleanup-jobs
    if plan.runs(CLEANUP_JOBS) {
        let jobs: Api<Job> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
        let dp = DeleteParams {
            dry_run: true,
            ..DeleteParams::foreground()
        };
        for name in &plan.leftover_jobs {
            let what = format!("Job {SYSTEM_NAMESPACE}/{name}");
            let r = delete_with(cluster, &jobs, name, &dp, &what).await;
            out.push(deleted("delete", what, r, "already gone"));
        }
    }

    // nodes/cloud, nodes/edge, kcm: their Jobs
    let image = servant_image(journal, plan);
    let mut specs: Vec<NodeJob> = Vec::new();
    for role in [Role::Cloud, Role::Edge] {
        if plan.runs(role.phase()) {
            specs.extend(
                plan.to_revert(role)
                    .map(|n| revert_job(&n.name, &image, opts.job_timeout)),
            );
        }
    }
    if plan.runs(plan::KCM) {
        specs.extend(
            plan.nodes
                .iter()
                .filter(|n| n.kcm && n.action == RevertAction::Revert)
                .map(|n| kcm_job(&n.name, &image, opts.job_timeout)),
        );
    }
    for spec in &specs {
        out.push(
            server_dry_run::create_job(cluster, SYSTEM_NAMESPACE, spec, opts.job_timeout).await,
        );
    }

    // components: deleted (only by a revert of all nodes); adopted objects give up our fields
    if plan.complete && plan.runs(plan::COMPONENTS) {
        let applier = Applier::new(
            cluster.clone(),
            ApplyOptions {
                dry_run: true,
                ..Default::default()
            },
        );
        for r in &plan.objects {
            let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
            let obj = dynamic(r)?;
            let row = match applier.delete(&obj).await {
                Err(ClusterError::UnknownKind { .. }) => {
                    Write::accepted_with("delete", what, "its CRD is gone, and so is the object")
                }
                res => deleted("delete", what, res, "already gone"),
            };
            out.push(row);
        }
        for r in &plan.adopted_objects {
            let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
            let obj = dynamic(r)?;
            match applier.get_opt(&obj).await {
                Ok(Some(_)) => out.push(Write::of(
                    "apply",
                    what,
                    applier.apply(&obj).await.map(drop),
                )),
                Ok(None) | Err(ClusterError::UnknownKind { .. }) => {}
                Err(e) => out.push(Write::of("apply", what, Err(e))),
            }
        }
    }

    // label-nodes: an apply naming no field gives up yurtctl's labels and annotations
    if plan.runs(plan::LABEL_NODES) {
        let nodes: Api<Node> = Api::all(client.clone());
        let mut pp = PatchParams::apply(FIELD_MANAGER);
        pp.dry_run = true;
        for n in plan.nodes.iter().filter(|n| {
            matches!(
                n.action,
                RevertAction::Revert | RevertAction::AlreadyReverted
            )
        }) {
            let what = format!("Node {} (yurtctl's labels and annotations)", n.name);
            let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name}});
            let patch = Patch::Apply(&body);
            let r = cluster
                .call(|| nodes.patch(&n.name, &pp, &patch))
                .await
                .map(drop)
                .map_err(|e| ClusterError::from_kube(format!("unlabel Node {}", n.name), e));
            out.push(Write::of("patch", what, r));
        }
    }

    // the end of a complete revert: the journal and the lock go
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    if plan.complete && plan.runs(plan::COMPONENTS) && journal.is_some() {
        let r = delete_with(cluster, &cms, JOURNAL_NAME, &dp, &journal_what).await;
        out.push(deleted("delete", journal_what, r, "already gone"));
    }
    if plan.runs(plan::LOCK) {
        let r = delete_with(cluster, &leases, &lock.name, &dp, &lease_what).await;
        out.push(deleted(
            "delete",
            lease_what,
            r,
            "not there before the run takes it; the delete is authorized",
        ));
    }
    Ok(out)
}
