//! `node-servant convert`: YurtHub first, its readiness, then the kubelet's redirect.

use super::*;

pub(super) fn hub_options(a: &HubArgs) -> Result<HubInstall> {
    let credential = match (&a.credential.bootstrap_file, &a.credential.join_token_file) {
        (Some(p), _) => Some(HubCredential::BootstrapFile { source: p.clone() }),
        (None, Some(p)) => Some(HubCredential::JoinTokenFile { source: p.clone() }),
        (None, None) => None,
    };
    match (&a.yurthub_manifest, &a.yurthub_unit) {
        (Some(manifest), _) => {
            let Some(credential) = credential else {
                unreachable!("clap requires a credential with --yurthub-manifest")
            };
            plan(YurtHubOptions::from_file(
                a.manifest_file.clone(),
                manifest,
                credential,
            ))
            .map(HubInstall::from)
        }
        (None, Some(unit)) => {
            // clap: --yurthub-unit requires the drop-in, the binary and the pool
            let (Some(drop_in), Some(binary), Some(pool)) =
                (&a.yurthub_drop_in, &a.yurthub_binary, &a.nodepool_name)
            else {
                unreachable!("clap requires them with --yurthub-unit")
            };
            plan(HubService::from_files(
                binary,
                unit,
                drop_in,
                &a.node_name,
                pool,
                credential,
            ))
            .map(HubInstall::from)
        }
        (None, None) => unreachable!("clap requires --yurthub-manifest or --yurthub-unit"),
    }
}

pub(super) fn hub_manifest_path(root: &Path, file: &str) -> String {
    HostFs::new(root)
        .and_then(|fs| {
            let argv = servant::kubelet::effective_argv(&fs)?;
            servant::kubelet::static_pod_dir(&fs, &argv)
        })
        .map(|d| format!("{}/{file}", d.trim_end_matches('/')))
        .unwrap_or_else(|_| format!("<static-pod directory>/{file}"))
}

pub(super) fn convert(r: &mut ServantResult, args: &ConvertArgs, dry_run: bool) -> Result<()> {
    let a = &args.hub;
    let root = a.host.host_root.as_path();
    r.node = Some(a.node_name.clone());
    let hub = hub_options(a)?;
    let full = NodeConvertOptions {
        yurthub: Some(hub.clone()),
        redirect_kubelet: true,
        restart_workloads: !args.skip_workload_restart,
    };
    // Plan the whole conversion first: if any of it cannot be done, nothing is written.
    let whole = plan(servant::convert(root, &full))?;
    if dry_run {
        record_plan(r, &whole);
        let running = node::running_kubelet_kubeconfig();
        r.message = if whole.is_empty()
            && running.as_ref().and_then(|k| k.as_deref()) == Some(OPENYURT_KUBECONFIG)
        {
            "dry run: nothing to do, the node is already converted".into()
        } else if whole.is_empty() {
            format!(
                "dry run: the node's files are converted, but the running kubelet {}; convert would restart it",
                running_in_words(&running)
            )
        } else {
            format!(
                "dry run: {} file changes planned; convert would then wait for YurtHub to be ready and restart the kubelet; nothing was written",
                whole.len()
            )
        };
        return Ok(());
    }
    require_host_access("convert")?;
    let before = plan(effective_kubeconfig(root))?;

    // 1. YurtHub: static pod or service, and its credential; kubelet untouched
    let hub_only = plan(servant::convert(
        root,
        &NodeConvertOptions {
            yurthub: Some(hub.clone()),
            redirect_kubelet: false,
            restart_workloads: false,
        },
    ))?;
    apply(
        r,
        root,
        &hub_only,
        "The kubelet was not touched; fix the cause and re-run convert (or run revert)",
    )?;
    if matches!(hub, HubInstall::Service(_)) {
        start_hub_service(r, a.kubelet_restart_timeout, !hub_only.is_empty())?;
    }

    // 2. wait until the hub serves, so the kubelet never points at a hub that does not
    tracing::info!(
        "waiting up to {:?} for YurtHub to report ready on 127.0.0.1:{YURTHUB_SERVER_PORT}{}",
        a.yurthub_timeout,
        a.yurthub_ready_path
    );
    let ready_path = &a.yurthub_ready_path;
    let took = node::wait_ready(YURTHUB_SERVER_PORT, ready_path, a.yurthub_timeout).map_err(|last| {
        let left = match &hub {
            HubInstall::StaticPod(_) => format!(
                "The YurtHub manifest {} stays installed on the node; check the pod (kubectl -n kube-system describe pod yurt-hub-{}; its logs)",
                hub_manifest_path(root, &a.manifest_file),
                a.node_name
            ),
            HubInstall::Service(_) => format!(
                "The service {HUB_UNIT} ({HUB_UNIT_FILE}, {HUB_BINARY}) stays installed on the node; check it there (systemctl status {HUB_UNIT}; journalctl -u {HUB_UNIT})"
            ),
        };
        NodeServantError::HubTimeout {
            node: a.node_name.clone(),
            waited: a.yurthub_timeout,
            last: format!("GET http://127.0.0.1:{YURTHUB_SERVER_PORT}{ready_path}: {last}"),
            kubeconfig: before.clone().unwrap_or_else(|| "(none)".into()),
            left,
        }
    })?;
    tracing::info!("YurtHub is ready (after {:.1}s)", took.as_secs_f64());

    // 3. redirect the kubelet and restart it
    let redirect = servant::convert(root, &full).map_err(|source| NodeServantError::Apply {
        source,
        done: 0,
        total: 0,
        next: "YurtHub is installed and ready but the kubelet was not redirected; fix the cause and re-run convert (or run revert)".into(),
    })?;
    apply(
        r,
        root,
        &redirect,
        "The kubelet was not restarted, so it still runs with its old flags; fix the cause and re-run convert (or run revert)",
    )?;
    let after = plan(effective_kubeconfig(root)).ok().flatten();
    if after.as_deref() != Some(OPENYURT_KUBECONFIG) {
        return Err(NodeServantError::Verify(format!(
            "after the redirect the kubelet's unit files give --kubeconfig={after:?}, not {OPENYURT_KUBECONFIG}; the kubelet was not restarted. Inspect the kubelet unit and its drop-ins, then run revert"
        )));
    }
    kubelet_runs_on(
        r,
        OPENYURT_KUBECONFIG,
        !redirect.is_empty(),
        a.kubelet_restart_timeout,
        "redirecting it to YurtHub",
        "check it on the node (systemctl status kubelet; journalctl -u kubelet), then re-run convert (or run revert)",
    )?;
    r.kubelet_kubeconfig = after;

    // 4. the containers the kubelet started before it used YurtHub, started again
    let redirected = format!(
        "the kubelet already runs on {OPENYURT_KUBECONFIG} through YurtHub; fix the cause and re-run convert"
    );
    let fs = after_changes(HostFs::new(root), &redirected)?;
    let pending = after_changes(OperationRecord::load(&fs, CONVERT_OPERATION), &redirected)?
        .is_some_and(|rec| servant::plan::workloads_restart_pending(&rec));
    if pending && !args.skip_workload_restart {
        restart_workloads(
            r,
            root,
            &a.node_name,
            a.kubelet_restart_timeout,
            "through YurtHub",
        )?;
        apply(
            r,
            root,
            &after_changes(
                servant::plan::workloads_restarted(root),
                "the workload containers were restarted; re-run convert to record it",
            )?,
            "The workload containers were restarted; re-run convert to record it",
        )?;
    }
    let runs_as = match hub {
        HubInstall::StaticPod(_) => "a static pod".to_string(),
        HubInstall::Service(_) => format!("the systemd service {HUB_UNIT}"),
    };
    r.message = if r.changed {
        format!(
            "node {} converted: YurtHub runs as {runs_as} and the kubelet uses {OPENYURT_KUBECONFIG} ({} changes)",
            a.node_name,
            r.changes.len()
        )
    } else if !r.host_commands.is_empty() {
        format!(
            "node {} converted: its files already were (an earlier run stopped before the restart), and the kubelet now runs on {OPENYURT_KUBECONFIG}",
            a.node_name
        )
    } else {
        format!(
            "nothing to do: node {} is already converted and YurtHub is ready",
            a.node_name
        )
    };
    Ok(())
}
