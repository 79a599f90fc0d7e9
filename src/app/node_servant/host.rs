//! What node-servant runs on the host: systemctl through nsenter, the kubelet's restart and
//! the proof that the running kubelet uses the intended kubeconfig, workload restarts.

use super::*;

/// Loads the YurtHub unit, enables it (it starts at boot) and starts it; restarts it when
/// this run changed its files, so a running hub picks them up.
pub(super) fn start_hub_service(
    r: &mut ServantResult,
    timeout: Duration,
    changed: bool,
) -> Result<()> {
    let start = if changed { "restart" } else { "start" };
    host_commands(
        r,
        &[
            &["daemon-reload"],
            &["enable", HUB_UNIT],
            &[start, HUB_UNIT],
        ],
        timeout,
        "starting YurtHub's service failed; its files are installed, so fix the cause and re-run convert, or run revert to remove them",
    )
}

/// Stops and disables the YurtHub unit before revert removes its files. A unit systemd does
/// not know (removed by hand) is already stopped: upstream ignores "not loaded", "not found"
/// and "does not exist" the same way (openyurtio/openyurt@v1.7.0
/// pkg/yurtadm/util/yurthub/yurthub.go, runSystemctlWithIgnoredErrors).
pub(super) fn stop_hub_service(r: &mut ServantResult, unit: &str, timeout: Duration) -> Result<()> {
    for args in [["stop", unit], ["disable", unit]] {
        match host_commands(
            r,
            &[&args],
            timeout,
            "stopping YurtHub's service failed; the kubelet is already back on its original kubeconfig, so fix the cause and re-run revert",
        ) {
            Err(NodeServantError::Host {
                source: HostCommandError::Failed { stderr, .. },
                ..
            }) if ["not loaded", "not found", "does not exist"]
                .iter()
                .any(|m| stderr.contains(m)) =>
            {
                tracing::info!("{unit} is not loaded: nothing to stop ({})", stderr.trim());
            }
            other => other?,
        }
    }
    Ok(())
}

/// Runs `systemctl` commands on the host in order, recording each; stops at the first failure.
pub(super) fn host_commands(
    r: &mut ServantResult,
    commands: &[&[&str]],
    timeout: Duration,
    context: &str,
) -> Result<()> {
    for args in commands {
        let shown = format!("systemctl {}", args.join(" "));
        tracing::info!("{shown}");
        node::host_systemctl(args, timeout).map_err(|source| NodeServantError::Host {
            context: context.into(),
            source,
        })?;
        r.host_commands.push(shown);
    }
    Ok(())
}

pub(super) fn restart_kubelet(r: &mut ServantResult, timeout: Duration, why: &str) -> Result<()> {
    tracing::info!("restarting the kubelet ({why})");
    host_commands(
        r,
        &[&["daemon-reload"], &["restart", "kubelet"]],
        timeout,
        &format!(
            "restarting the kubelet ({why}) failed; its unit files are already changed, so fix the cause and re-run this command, or run `systemctl daemon-reload && systemctl restart kubelet` on the node"
        ),
    )
}

/// How long a restarted kubelet may take to show in `/proc` (systemd has forked it when
/// `systemctl restart` returns; this covers a slow exec).
pub(super) const KUBELET_SHOWS_UP: Duration = Duration::from_secs(10);

/// What the running kubelet uses, in words, for messages.
pub(super) fn running_in_words(running: &Option<Option<String>>) -> String {
    match running {
        None => "cannot be seen (no kubelet process in /proc: the node servant needs the host's PID namespace, hostPID)".into(),
        Some(None) => "runs without --kubeconfig".into(),
        Some(Some(k)) => format!("runs with --kubeconfig={k}"),
    }
}

/// Brings the running kubelet onto `--kubeconfig=want`, which its unit files already give:
/// restarts it when the files changed just now or when the running process cannot be shown to
/// use `want` (an earlier run may have been killed between the files and the restart), then
/// waits until the process shows it.
pub(super) fn kubelet_runs_on(
    r: &mut ServantResult,
    want: &str,
    files_changed: bool,
    timeout: Duration,
    why: &str,
    then: &str,
) -> Result<()> {
    let running = node::running_kubelet_kubeconfig();
    let on_want = |k: &Option<Option<String>>| k.as_ref().and_then(|k| k.as_deref()) == Some(want);
    if files_changed {
        restart_kubelet(r, timeout, why)?;
    } else if !on_want(&running) {
        restart_kubelet(
            r,
            timeout,
            &format!("the running kubelet {}", running_in_words(&running)),
        )?;
    } else {
        return Ok(());
    }
    let deadline = std::time::Instant::now() + KUBELET_SHOWS_UP;
    loop {
        let now = node::running_kubelet_kubeconfig();
        if on_want(&now) {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(NodeServantError::Verify(format!(
                "the kubelet was restarted, but {}s later the running kubelet {}, not --kubeconfig={want}; {then}",
                KUBELET_SHOWS_UP.as_secs(),
                running_in_words(&now)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stops every Kubernetes container on `node` but this servant's own and the static pods', one
/// `crictl stop` each, so the kubelet (now talking to the API server `how`) starts them again
/// with the matching KUBERNETES_SERVICE_HOST/PORT. A container gone meanwhile is fine.
pub(super) fn restart_workloads(
    r: &mut ServantResult,
    root: &Path,
    node: &str,
    timeout: Duration,
    how: &str,
) -> Result<()> {
    // the kubelet was restarted before this: a failure leaves the node changed
    let left = format!(
        "the kubelet already reaches the API server {how} and no container was restarted; fix the cause and re-run, or delete the node's pods yourself so they are recreated"
    );
    let fs = after_changes(HostFs::new(root), &left)?;
    let argv = after_changes(servant::kubelet::effective_argv(&fs), &left)?;
    let endpoint = after_changes(servant::runtime::cri_endpoint(&fs, &argv), &left)?;
    // without its own pod's UID the servant could stop itself
    let own_pod_uid = std::env::var("POD_UID")
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            NodeServantError::Verify(format!(
                "restarting the node's containers needs this pod's UID in POD_UID (env from fieldRef metadata.uid), or pass --skip-workload-restart; the kubelet already reaches the API server {how}"
            ))
        })?;
    let keep = &KeepPods {
        own_pod_uid,
        pods: after_changes(servant::runtime::static_pods(&fs, &argv, node), &left)?,
    };
    let failed = |what: String| {
        move |source| NodeServantError::Host {
            context: format!(
                "{what} failed; the kubelet already reaches the API server {how}. Fix the cause and re-run, or delete the node's pods yourself so they are recreated"
            ),
            source,
        }
    };
    let shown = format!("crictl -r {endpoint} ps -o json");
    let ps = node::host_crictl(&endpoint, &["ps", "-o", "json"], timeout)
        .map_err(failed(format!("listing the node's containers (`{shown}`)")))?;
    r.host_commands.push(shown);
    let containers = after_changes(servant::runtime::containers_to_restart(&ps, keep), &left)?;
    tracing::info!(
        "restarting {} container(s) so they reach the API server {how}",
        containers.len()
    );
    for c in containers {
        let shown = format!("crictl -r {endpoint} stop {}", c.id);
        match node::host_crictl(&endpoint, &["stop", &c.id], timeout) {
            Ok(_) => {}
            // it exited or its pod went away since the listing
            Err(HostCommandError::Failed { stderr, .. })
                if stderr.contains("NotFound") || stderr.contains("No such container") => {}
            Err(e) => return Err(failed(format!("stopping {} (`{shown}`)", c.shown()))(e)),
        }
        r.host_commands.push(shown);
        r.restarted_containers.push(c.shown());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The containers are restarted after the kubelet's restart: a node that cannot be read
    /// then (here: no kubelet unit at all) was changed already, so the failure must not say
    /// "nothing was changed" nor exit 3.
    #[test]
    fn a_failure_after_the_kubelet_restart_does_not_claim_nothing_changed() {
        let root = tempfile::tempdir().unwrap();
        let mut r = ServantResult::new("convert", root.path(), false);
        let how = "through YurtHub";
        let e =
            restart_workloads(&mut r, root.path(), "w1", Duration::from_secs(1), how).unwrap_err();
        let message = e.to_string();
        assert!(!message.contains("nothing was changed"), "{message}");
        assert!(
            message.contains(how),
            "it says where the kubelet is: {message}"
        );
        assert_eq!(crate::app::error::servant_exit(&e), Exit::Unexpected);
    }
}
