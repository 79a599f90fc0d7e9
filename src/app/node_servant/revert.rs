//! `node-servant revert`: the kubelet back on its original flags, then YurtHub removed.

use super::*;

pub(super) fn revert(
    r: &mut ServantResult,
    root: &Path,
    timeout: Duration,
    restart_workloads_after: bool,
    dry_run: bool,
) -> Result<()> {
    let fs = plan(HostFs::new(root))?;
    let journal = plan(OperationRecord::load(&fs, CONVERT_OPERATION))?;
    let changes = plan(servant::revert(root))?;
    let original = journal
        .as_ref()
        .and_then(|j| j.extra.get("kubelet_kubeconfig"))
        .and_then(|v| v.as_str())
        .unwrap_or(DEFAULT_KUBELET_KUBECONFIG)
        .to_owned();
    if changes.is_empty() {
        // nothing of ours is left, yet the kubelet may still go through a YurtHub that
        // another tool installed: reporting the node reverted would leave it half-converted
        let fs = plan(HostFs::new(root))?;
        let argv = plan(servant::kubelet::effective_argv(&fs))?;
        if let Some(h) = argv.last_flag("kubeconfig")
            && argv.value_of("kubeconfig", h) == OPENYURT_KUBECONFIG
        {
            return Err(NodeServantError::ConvertedByOther {
                kubeconfig: OPENYURT_KUBECONFIG.into(),
                from: argv.describe(h.value),
            });
        }
        r.kubelet_kubeconfig = plan(effective_kubeconfig(root))?;
        r.message = if journal.is_some() {
            "nothing to do: the node is already reverted".into()
        } else {
            "nothing to do: yurtctl has no record of converting this node".into()
        };
        return Ok(());
    }
    if dry_run {
        record_plan(r, &changes);
        r.message = format!(
            "dry run: {} file changes planned; revert would restart the kubelet on {original}; nothing was written",
            changes.len()
        );
        return Ok(());
    }
    require_host_access("revert")?;
    // kubelet files first, restart, verify; only then remove YurtHub, its files and records
    let (restore, rest): (Vec<Change>, Vec<Change>) = changes
        .changes
        .into_iter()
        .partition(|c| matches!(c, Change::Write { .. }));
    let restore = NodeChanges { changes: restore };
    let rest = NodeChanges { changes: rest };
    apply(r, root, &restore, "Fix the cause and re-run revert")?;
    let now = plan(effective_kubeconfig(root)).ok().flatten();
    if now.as_deref() != Some(original.as_str()) {
        return Err(NodeServantError::Verify(format!(
            "after restoring the kubelet's files its unit gives --kubeconfig={now:?}, expected the original {original}; the kubelet was not restarted and YurtHub was left in place. Inspect the kubelet unit and its drop-ins"
        )));
    }
    // convert recorded the kubelet's kubeconfig when it redirected it; without that record the
    // kubelet was never touched and is left alone
    let redirected = journal
        .as_ref()
        .is_some_and(|j| j.extra.contains_key("kubelet_kubeconfig"));
    if redirected || !restore.is_empty() {
        kubelet_runs_on(
            r,
            &original,
            !restore.is_empty(),
            timeout,
            "restoring its original flags",
            "YurtHub was left in place; check the kubelet on the node (systemctl status kubelet; journalctl -u kubelet), then re-run revert",
        )?;
    }
    // YurtHub is still there: the containers convert restarted through it get the real API
    // server again (again, should an interrupted revert have restarted them already)
    let touched_workloads = journal
        .as_ref()
        .is_some_and(|j| j.extra.contains_key(servant::plan::WORKLOADS_KEY));
    if restart_workloads_after && touched_workloads {
        let node = std::env::var("NODE_NAME").unwrap_or_default();
        restart_workloads(r, root, &node, timeout, "directly")?;
    }
    let service = journal
        .as_ref()
        .and_then(servant::recorded_hub_service)
        .map(str::to_owned);
    if let Some(unit) = &service {
        stop_hub_service(r, unit, timeout)?;
    }
    apply(
        r,
        root,
        &rest,
        "The kubelet is back on its original kubeconfig; re-run revert to remove the rest",
    )?;
    if service.is_some() {
        // systemd forgets the removed unit only on a reload
        host_commands(
            r,
            &[&["daemon-reload"]],
            timeout,
            "the YurtHub service's files are removed but systemd was not reloaded; run `systemctl daemon-reload` on the node",
        )?;
    }
    r.kubelet_kubeconfig = Some(original.clone());
    r.message = if restore.is_empty() {
        format!(
            "node reverted: YurtHub removed; the kubelet was never redirected and still uses {original} ({} changes)",
            r.changes.len()
        )
    } else {
        format!(
            "node reverted: the kubelet uses {original} again, YurtHub removed ({} changes)",
            r.changes.len()
        )
    };
    Ok(())
}
