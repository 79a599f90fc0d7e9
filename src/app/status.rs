//! `yurtctl status`: what the journal recorded and where each node stands; read-only.

use crate::app::common::{block_on, connect_and_snapshot, fail, print_structured};
use crate::cli::{GlobalArgs, StatusCmd};
use crate::cluster::journal::Journal;
use crate::cluster::snapshot::ClusterSnapshot;
use crate::cluster::staticset;
use crate::exit::Exit;
use crate::output::status::{NodeStatus, RunInProgress, Status, status_table};
use crate::plan;
use crate::render::Profile;

/// Runs `yurtctl status`.
pub fn run(g: &GlobalArgs, _cmd: &StatusCmd) -> Exit {
    block_on(async {
        let (cluster, snap) = match connect_and_snapshot(g).await {
            Ok(c) => c,
            Err(exit) => return exit,
        };
        let hubs = match staticset::yurthub_mirror_pods(&cluster).await {
            Ok(p) => p,
            Err(e) => return fail(&e),
        };
        let load = |name: &str| crate::render::Profile::load(name).ok();
        let j = snap.journal.as_ref();
        let profile = j.and_then(|j| load(&j.profile));
        // the profiles of an upgrade or rollback under way: a node runs the one its upgrade
        // record says
        let moving = j
            .and_then(|j| j.upgrade.as_ref())
            .filter(|u| !u.finished || u.rolling_back)
            .and_then(|u| Some((load(&u.from_profile)?, load(&u.to_profile)?)));
        let moving = moving.as_ref().map(|(a, b)| (a, b));
        let status = build(&snap, &hubs, profile.as_ref(), moving);
        if !print_structured(g, &status) {
            print!("{}", status_table(&status));
        }
        Exit::Ok
    })
}

/// The status object from the snapshot, the YurtHub pods, the journal's profile and, during an
/// upgrade or its rollback, the profiles it goes from and to (pure).
pub fn build(
    snap: &ClusterSnapshot,
    hubs: &[(String, bool)],
    profile: Option<&Profile>,
    moving: Option<(&Profile, &Profile)>,
) -> Status {
    let j: Option<&Journal> = snap.journal.as_ref();
    let pool_label = profile
        .and_then(|p| p.node_pools.as_ref())
        .map(|p| p.label.as_str());
    // the release and YurtHub's mode a converted node runs
    let release = |node: &str| -> Option<(String, bool)> {
        let j = j?;
        let upgrade = j.upgrade.as_ref().filter(|u| !u.finished || u.rolling_back);
        // a rollback forgets a node's record once the node is back
        let moved = j
            .phase(node, plan::UPGRADE_ACTION)
            .is_some_and(|s| s.state == crate::cluster::journal::PhaseState::Done);
        let (version, p) = match (upgrade, moving) {
            (Some(u), Some((from, _))) if !moved => (u.from_version.clone(), from),
            (Some(u), Some((_, to))) => (u.to_version.clone(), to),
            (Some(u), None) => (u.to_version.clone(), profile?),
            (None, _) => {
                let p = profile?;
                let v = j.options.get("openyurtVersion").and_then(|v| v.as_str());
                (v.unwrap_or(&p.openyurt_version).to_owned(), p)
            }
        };
        Some((version, p.yurthub.static_pod().is_none()))
    };
    let nodes = snap
        .nodes
        .iter()
        .map(|n| {
            let phases = j.and_then(|j| j.nodes.get(&n.name));
            let entry = |p: &str| phases.and_then(|m| m.get(p));
            let role = if entry(plan::NODES_EDGE).is_some() {
                "edge"
            } else if entry(plan::NODES_CLOUD).is_some() {
                "cloud"
            } else {
                ""
            };
            let converted = j.is_some_and(|j| plan::converted_role(j, &n.name).is_some());
            let last = phases.and_then(|m| m.values().max_by_key(|s| s.updated_at));
            let hub = hubs.iter().find(|(h, _)| h == &n.name);
            let runs = release(&n.name).filter(|_| converted);
            NodeStatus {
                name: n.name.clone(),
                role: role.into(),
                converted,
                pool: pool_label.and_then(|l| n.labels.get(l).cloned()),
                yurthub: hub.is_some(),
                yurthub_ready: hub.is_some_and(|(_, r)| *r),
                yurthub_service: runs.as_ref().is_some_and(|(_, service)| *service),
                openyurt_version: runs.as_ref().map(|(v, _)| v.clone()),
                yurthub_mode: runs
                    .as_ref()
                    .map(|(_, service)| if *service { "service" } else { "static-pod" }.to_owned()),
                ready: n.ready,
                last_result: last
                    .map(|s| s.state.as_str().to_owned())
                    .unwrap_or_default(),
                last_error: last.and_then(|s| s.last_error.clone()),
            }
        })
        .collect();
    Status {
        header: crate::naming::ResultHeader::of("Status"),
        converted: j.is_some(),
        message: match j {
            Some(j) => format!(
                "converted by yurtctl with profile {} (journal kube-system/yurtctl-state)",
                j.profile
            ),
            None => {
                "this cluster was not converted by yurtctl (no journal kube-system/yurtctl-state)"
                    .into()
            }
        },
        profile: j.map(|j| j.profile.clone()),
        last_command: j.map(|j| j.command.clone()),
        updated_at: j.map(|j| j.updated_at.to_string()),
        options: j.map(|j| j.options.clone()).unwrap_or_default(),
        created_objects: j.map(|j| j.created_objects.clone()).unwrap_or_default(),
        adopted_objects: j.map(|j| j.adopted_objects.clone()).unwrap_or_default(),
        node_conversion: profile
            .and_then(|p| p.upstream_node_conversion.as_ref())
            .map(|u| {
                format!(
                    "converted and reverted by yurtctl only: yurt-manager's {} is off ({}), \
                     since {}",
                    u.controller, u.disabled_by, u.why
                )
            }),
        locked_by: snap.lock.as_ref().map(|l| l.identity.clone()),
        run: snap.lock.as_ref().map(RunInProgress::of),
        nodes,
    }
}
