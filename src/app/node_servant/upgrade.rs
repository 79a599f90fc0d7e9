//! `node-servant upgrade`: the node's YurtHub moved to another release, or from its static pod
//! to the systemd service (or back, for a rollback). The kubelet's kubeconfig is not touched:
//! it keeps pointing at YurtHub's address, so its pods are not restarted. The old YurtHub
//! stops only once the new one is installed, the new one starts as soon as the old one gave
//! up the address, and the time nothing served it is measured.

use std::time::Instant;

use super::convert::{hub_manifest_path, hub_options};
use super::*;
use crate::servant::journal::BACKUP_DIR;
use crate::servant::yurthub::{HUB_DROP_IN_FILE, HUB_UNIT};

/// How the servant's log says how long YurtHub's address went unserved (seconds follow).
const GAP: &str = "its address went unserved for at most ";

/// The gap an upgrade Job's log reports, in milliseconds (its last report).
pub fn gap_in_log(log: &str) -> Option<u64> {
    let (_, rest) = log.rsplit_once(GAP)?;
    let secs: f64 = rest.split('s').next()?.trim().parse().ok()?;
    Some((secs * 1000.0).round() as u64)
}

pub(super) fn upgrade(r: &mut ServantResult, a: &HubArgs, dry_run: bool) -> Result<()> {
    let root = a.host.host_root.as_path();
    r.node = Some(a.node_name.clone());
    let target = hub_options(a)?;
    let changes = plan(servant::upgrade(root, &target))?;
    let service_now = plan(plan(HostFs::new(root))?.is_file(HUB_UNIT_FILE))?;
    let to_service = matches!(target, HubInstall::Service(_));
    let runs_as = if to_service {
        format!("the systemd service {HUB_UNIT}")
    } else {
        format!(
            "the static pod {}",
            hub_manifest_path(root, &a.manifest_file)
        )
    };
    if dry_run {
        record_plan(r, &changes);
        r.message = if changes.is_empty() {
            format!("dry run: nothing to do, YurtHub already runs as {runs_as}")
        } else {
            format!(
                "dry run: {} file changes planned; upgrade would then switch YurtHub to \
                 {runs_as}; nothing was written",
                changes.len()
            )
        };
        return Ok(());
    }
    require_host_access("upgrade")?;
    r.kubelet_kubeconfig = plan(effective_kubeconfig(root))?;

    // the record (and backups) first, then the new files, then the old ones' removal
    let (record, rest): (Vec<Change>, Vec<Change>) = changes
        .changes
        .into_iter()
        .partition(|c| c.path().starts_with(BACKUP_DIR));
    let (installs, removes): (Vec<Change>, Vec<Change>) = rest
        .into_iter()
        .partition(|c| matches!(c, Change::Write { .. }));
    let service_file = |p: &str| [HUB_BINARY, HUB_UNIT_FILE, HUB_DROP_IN_FILE].contains(&p);
    let (manifests, others): (Vec<Change>, Vec<Change>) = removes
        .into_iter()
        .partition(|c| c.path().ends_with(".yaml") && !service_file(c.path()));
    let installs_manifest = installs
        .iter()
        .any(|c| c.path().ends_with(".yaml") && !service_file(c.path()));
    let changed = !installs.is_empty();
    let nodes = |c: Vec<Change>| NodeChanges { changes: c };
    let unchanged =
        "YurtHub and the kubelet were not touched; fix the cause and re-run the upgrade";
    let stopped_old = "the old YurtHub may be stopped already; fix the cause and re-run the upgrade, or roll it back";

    apply(r, root, &nodes(record), unchanged)?;
    if to_service {
        apply(r, root, &nodes(installs.clone()), unchanged)?;
    }

    // 1. the old YurtHub stops and gives up 127.0.0.1:10261 (a service restarted in place
    //    gives it up by itself), and with it its other ports
    let switch = Instant::now();
    let in_place = service_now && to_service;
    if service_now && !to_service {
        stop_hub_service(r, HUB_UNIT, a.kubelet_restart_timeout)?;
    }
    let old_static = !manifests.is_empty();
    apply(r, root, &nodes(manifests), stopped_old)?;
    // a static pod rewritten in place: the kubelet stops the old pod when it sees the file
    let replaced_static = !service_now && !old_static && installs_manifest;
    if replaced_static {
        apply(r, root, &nodes(installs.clone()), unchanged)?;
    }
    if !in_place && (old_static || service_now || replaced_static) {
        let left = node::wait_ports_free(&YURTHUB_PORTS, a.yurthub_timeout).map_err(|last| {
            NodeServantError::HubSwitch {
                node: a.node_name.clone(),
                what: "the old YurtHub did not give up its address",
                waited: a.yurthub_timeout,
                last,
                left: "Look at what holds YurtHub's ports on the node (ss -ltnp)".into(),
            }
        })?;
        tracing::info!(
            "the old YurtHub gave up its ports after {:.1}s",
            left.as_secs_f64()
        );
    }

    // 2. the new YurtHub starts on the same address
    if to_service {
        start_hub_service(r, a.kubelet_restart_timeout, in_place && changed)?;
    } else if !replaced_static {
        apply(r, root, &nodes(installs), stopped_old)?;
    }
    let service_files_gone = others.iter().any(|c| service_file(c.path()));
    apply(r, root, &nodes(others), stopped_old)?;
    if service_files_gone {
        host_commands(
            r,
            &[&["daemon-reload"]],
            a.kubelet_restart_timeout,
            "the old YurtHub service's files are removed but systemd was not reloaded; run `systemctl daemon-reload` on the node",
        )?;
    }
    let ready_path = &a.yurthub_ready_path;
    let took = node::wait_ready(YURTHUB_SERVER_PORT, ready_path, a.yurthub_timeout).map_err(
        |last| NodeServantError::HubSwitch {
            node: a.node_name.clone(),
            what: "the new YurtHub did not report ready",
            waited: a.yurthub_timeout,
            last: format!("GET http://127.0.0.1:{YURTHUB_SERVER_PORT}{ready_path}: {last}"),
            left: if to_service {
                format!("Check the service on the node (systemctl status {HUB_UNIT}; journalctl -u {HUB_UNIT})")
            } else {
                format!(
                    "Check the static pod (kubectl -n kube-system describe pod of {}; its logs)",
                    hub_manifest_path(root, &a.manifest_file)
                )
            },
        },
    )?;
    let gap = switch.elapsed();
    r.yurthub_unavailable_seconds = Some(gap.as_secs_f64());
    tracing::info!(
        "YurtHub ready as {runs_as} after {:.1}s; {GAP}{:.3}s",
        took.as_secs_f64(),
        gap.as_secs_f64()
    );
    r.message = if r.changed {
        format!(
            "node {} upgraded: YurtHub runs as {runs_as}; {GAP}{:.3}s and the kubelet kept {} \
             ({} changes)",
            a.node_name,
            gap.as_secs_f64(),
            r.kubelet_kubeconfig.as_deref().unwrap_or("its kubeconfig"),
            r.changes.len()
        )
    } else {
        format!(
            "nothing to do: node {}'s YurtHub already runs as {runs_as} and is ready",
            a.node_name
        )
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_read_back_from_the_log_line_that_reports_it() {
        let log = format!(
            "INFO YurtHub ready as the systemd service yurthub.service after 0.4s; {GAP}0.612s\n\
             INFO node w-1 upgraded: YurtHub runs as …; {GAP}0.613s and the kubelet kept …\n"
        );
        assert_eq!(gap_in_log(&log), Some(613));
        assert_eq!(
            gap_in_log("INFO nothing to do: node w-1's YurtHub already runs"),
            None
        );
    }
}
