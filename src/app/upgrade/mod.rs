//! `yurtctl upgrade`: context → snapshot → decision (route, preflight, nodes) → both releases
//! rendered and compared → plan → (dry-run: print) → confirm → the phase table of [`phases`]
//! → result. The journal carries the upgrade's record (where it came from and goes), so a run
//! stopped anywhere resumes towards the same target, and revert after it still undoes
//! everything convert and the upgrade did.

mod phases;
mod results;

use std::collections::{BTreeMap, BTreeSet};

use crate::app::common::{
    block_on, confirm, connect_from, fail, print_dry_run, print_structured, refuse, reporter,
    run_under_lock, save_journal, snapshot_to_decide, stopped, wide,
};
use crate::app::convert::BOOTSTRAP_SECRET;
use crate::app::convert::components;
use crate::app::error::CommandError;
use crate::cli::{DryRun, GlobalArgs, UpgradeCmd};
use crate::cluster::journal::{JOURNAL_NAME, JournalStore, ObjectRef};
use crate::cluster::snapshot::ClusterSnapshot;
use crate::cluster::{Cluster, ClusterError, access, crd};
use crate::exec::dry_run::PlanDocument;
use crate::exec::phases::{self as runner, Ended};
use crate::exit::Exit;
use crate::output::{NodeOutcome, Reporter, UpgradeResult};
use crate::plan::upgrade::{
    Decision, ObjectKey, RouteKind, StorageBridge, Upgrade, UpgradeInputs, UpgradeOptions,
    UpgradePlan, component_plan, crd_changes, decide, node_files, object_changes, storage_bridges,
};
use crate::plan::{self, Plan, PlanError};
use crate::render::{Profile, RenderedObject};

use phases::UpgradeRun;

/// Runs `yurtctl upgrade`; prints progress on stderr and the result on stdout.
pub fn run(g: &GlobalArgs, cmd: &UpgradeCmd) -> Exit {
    if let Err(m) = cmd.validate() {
        return CommandError::Usage(m).report();
    }
    let reporter = reporter(g);
    block_on(upgrade(g, cmd, reporter.as_ref()))
}

fn load(name: &str) -> Option<Profile> {
    Profile::load(name).ok()
}

async fn upgrade(g: &GlobalArgs, cmd: &UpgradeCmd, rep: &dyn Reporter) -> Exit {
    let opts = cmd.options();
    // what the flags alone show wrong, before the cluster is contacted (a rollback's target
    // is in the journal, and it takes no image flags but --servant-image)
    if !opts.rollback {
        let to = match Profile::load(&opts.profile) {
            Ok(p) => p,
            Err(e) => return CommandError::from(e).report(),
        };
        let mut flags = plan::ConvertOptions {
            profile: to.name.clone(),
            ..Default::default()
        };
        cmd.images.apply(&mut flags);
        if let Err(e) = plan::check_images(&flags, &to) {
            return CommandError::from(e).report();
        }
    }
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let wanted = !g.dry_run.enabled() && !opts.skip_phases.contains(plan::LOCK);
    let planner = |s: &ClusterSnapshot| decide(s, &opts, &load).map(drop);
    let run = async |lost| decide_and_run(g, &cluster, &opts, lost, rep).await;
    run_under_lock(
        &cluster,
        wanted,
        cmd.force_unlock,
        rep,
        "upgrade",
        planner,
        run,
    )
    .await
}

/// Both releases rendered for the nodes that move, compared, and the plan made of it.
struct Planned {
    plan: UpgradePlan,
    /// The target's convert plan: its components and node Jobs are made from it.
    target: Plan,
    /// A rollback's CRDs stored at the target's version before its CRDs are applied.
    bridges: Vec<StorageBridge>,
}

async fn plan_upgrade(
    cluster: &Cluster,
    snap: &ClusterSnapshot,
    d: &Decision,
    to: &Profile,
    skip: &BTreeSet<String>,
) -> Result<Planned, ClusterError> {
    let sv = &snap.server_version;
    let journal = snap
        .journal
        .as_ref()
        .ok_or_else(|| ClusterError::InvalidObject {
            object: format!(
                "ConfigMap {}/{}",
                crate::cluster::SYSTEM_NAMESPACE,
                JOURNAL_NAME
            ),
            message: "it went while the upgrade was being planned".into(),
        })?;
    let before_plan = component_plan(&d.nodes, &d.start.recorded, &d.from, sv);
    let target = component_plan(&d.nodes, &d.target_options, to, sv);
    let before =
        components::compared_objects(cluster, &before_plan, &d.from, &d.start.recorded, journal)
            .await?;
    let after =
        components::compared_objects(cluster, &target, to, &d.target_options, journal).await?;
    // the bootstrap Secret is every release's: the target's components apply it again
    let created: Vec<ObjectRef> = journal
        .created_objects
        .iter()
        .filter(|r| !(r.kind == "Secret" && r.name == BOOTSTRAP_SECRET))
        .cloned()
        .collect();
    let (created, adopted) = (&created[..], &journal.adopted_objects[..]);
    let mut counts = BTreeMap::new();
    for name in crd_names(&before, &after, created) {
        counts.insert(name.clone(), crd::count_objects(cluster, &name).await?);
    }
    let objects = object_changes(&before, &after, created, adopted, &counts);
    let crds = crd_changes(&before, &after, &counts);
    let bridges = match d.route.kind {
        RouteKind::Rollback => storage_bridges(&before, &crds),
        RouteKind::Patch | RouteKind::Profile => Vec::new(),
    };
    let files = node_files(&d.from, to, &d.route);
    let plan = UpgradePlan::new(&UpgradeInputs {
        route: &d.route,
        to,
        server_version: sv,
        nodes: &d.nodes,
        objects: &objects,
        crds: &crds,
        node_files: &files,
        kcm: d.kcm,
        kcm_nodes: &d.kcm_nodes,
        unlabelled: &d.unlabelled,
        order: &d.order,
        skip_phases: skip,
    });
    Ok(Planned {
        plan,
        target,
        bridges,
    })
}

/// The CRDs either release installs or the journal recorded as created.
fn crd_names(
    before: &[RenderedObject],
    after: &[RenderedObject],
    created: &[ObjectRef],
) -> BTreeSet<String> {
    let is_crd =
        |k: &ObjectKey| k.group == "apiextensions.k8s.io" && k.kind == "CustomResourceDefinition";
    before
        .iter()
        .chain(after)
        .map(ObjectKey::of_rendered)
        .chain(created.iter().map(ObjectKey::of_ref))
        .filter(is_crd)
        .map(|k| k.name)
        .collect()
}

/// Everything upgrade decides and does, under the run lock when it runs for real.
async fn decide_and_run(
    g: &GlobalArgs,
    cluster: &Cluster,
    opts: &UpgradeOptions,
    lock_lost: Option<tokio::sync::watch::Receiver<Option<ClusterError>>>,
    rep: &dyn Reporter,
) -> Exit {
    let snap = match snapshot_to_decide(g, cluster).await {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let d = match decide(&snap, opts, &load) {
        Ok(Upgrade::Move(d)) => d,
        Ok(Upgrade::AlreadyThere(r)) => {
            let mut result = UpgradeResult::new(r.clone(), r.clone());
            result.message = format!("the cluster already runs {r}: nothing to do");
            result.finished = true;
            return finish(g, result, Exit::Ok);
        }
        Err(e) => return refuse(&e),
    };
    let to = &d.to;
    let Planned {
        plan,
        target,
        bridges,
    } = match plan_upgrade(cluster, &snap, &d, to, &opts.skip_phases).await {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let Some(journal) = snap.journal else {
        return refuse(&PlanError::Usage("the journal is gone".into()));
    };
    let mut run = UpgradeRun {
        cluster,
        plan: &plan,
        decision: &d,
        to,
        target: &target,
        bridges: &bridges,
        rep,
        journal,
        store: JournalStore::new(cluster),
        lock_lost,
        began: false,
        results: results::planned_results(&d),
        result: UpgradeResult::new(d.start.from.clone(), d.start.to.clone()),
    };

    if g.dry_run.enabled() {
        let mut doc = PlanDocument::of(&plan, Some("upgrade"));
        let writes;
        if g.dry_run == DryRun::Server {
            let mut w = match runner::dry_run(&phases::table(), &run).await {
                Ok(w) => w,
                Err(e) => return fail(&e),
            };
            if plan_runs(&plan, plan::LOCK) {
                w.push(crate::exec::lock::release_write(cluster).await);
            }
            writes = w;
            doc.server_dry_run = Some(&writes);
        }
        let refused_in = format!("[{}] ", plan::PREFLIGHT);
        return print_dry_run(g, &doc, &plan.render_text(), &refused_in);
    }

    if plan_runs(&plan, plan::PREFLIGHT) {
        match access::denied(cluster, &plan::convert_access(to, &d.target_options)).await {
            Ok(f) if f.is_empty() => {}
            Ok(f) => {
                let f = f
                    .into_iter()
                    .map(|m| plan::Finding::new(plan::Check::Permissions, m))
                    .collect();
                return refuse(&PlanError::Preflight(f));
            }
            Err(e) => return fail(&e),
        }
    }

    eprint!("{}", plan.render_text());
    let prompt = match d.route.kind {
        RouteKind::Rollback => "Roll this cluster back?",
        RouteKind::Patch | RouteKind::Profile => "Upgrade this cluster?",
    };
    if let Err(exit) = confirm(g, prompt).await {
        return exit;
    }

    let ended = runner::run(&phases::table(), &mut run).await;
    let mut result = std::mem::replace(
        &mut run.result,
        UpgradeResult::new(d.start.from.clone(), d.start.to.clone()),
    );
    result.nodes = std::mem::take(&mut run.results).into_values().collect();
    result.rollback = d.route.kind == RouteKind::Rollback;
    let exit = match stopped(&ended, "upgrade") {
        None => results::outcome_exit(&mut result, d.route.kind),
        Some((message, exit)) => {
            result.message = message;
            exit
        }
    };
    let complete = matches!(ended, Ended::Completed)
        && exit == Exit::Ok
        && plan.phases.iter().all(|p| !p.skipped)
        && result.nodes.iter().all(|n| {
            !matches!(
                n.result,
                NodeOutcome::NotSelected | NodeOutcome::Partitioned | NodeOutcome::Pending
            )
        });
    if complete && let Some(u) = &mut run.journal.upgrade {
        u.finished = true;
        result.finished = true;
        // rolled back: the cluster is as it was before the upgrade, with no upgrade to resume
        if u.rolling_back {
            run.journal.upgrade = None;
        }
    }
    save_journal(&run.store, &mut run.journal, run.began).await;
    finish(g, result, exit)
}

fn plan_runs(plan: &UpgradePlan, id: &str) -> bool {
    plan.phases.iter().any(|p| p.id == id && !p.skipped)
}

fn finish(g: &GlobalArgs, mut result: UpgradeResult, exit: Exit) -> Exit {
    result.result = exit.reason().into();
    result.exit_code = exit.code();
    for l in crate::output::result_lines(&result.nodes, &result.message, wide(g)) {
        eprintln!("{l}");
    }
    print_structured(g, &result);
    exit
}
