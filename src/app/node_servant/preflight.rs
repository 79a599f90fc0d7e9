//! `node-servant preflight`: what convert and revert need on this node, checked without a
//! change.

use super::*;

pub(super) fn preflight(
    r: &mut ServantResult,
    root: &Path,
    node_ip_ports: &[u16],
    pull_images: &[String],
    pull_timeout: Duration,
) -> Result<()> {
    let report = plan(servant::preflight(root))?;
    // the node's runtime pulls first: a check that fails below still reports them all
    let pulls = pulled(root, pull_images, pull_timeout)?;
    let mut failed = Vec::new();
    let mut check = |name: &'static str, ok: bool, message: String| {
        if ok {
            tracing::info!("ok    {name}: {message}");
        } else {
            tracing::warn!("FAIL  {name}: {message}");
            failed.push(format!("{name}: {message}"));
        }
        r.checks.push(Check { name, ok, message });
    };
    match node::euid() {
        Some(0) => check("root", true, "running as root".into()),
        other => check(
            "root",
            false,
            format!(
                "effective uid {}; convert and revert restart the kubelet through nsenter and need root (a privileged Job)",
                other.map_or("unknown".into(), |u| u.to_string())
            ),
        ),
    }
    match node::running_kubelet_kubeconfig() {
        _ if std::process::id() == 1 => check(
            "host-pid",
            false,
            "running as PID 1 of a PID namespace of its own; convert and revert read the running kubelet's flags from /proc and need hostPID".into(),
        ),
        Some(running) => check(
            "host-pid",
            true,
            format!(
                "the kubelet process is visible: it {}",
                running_in_words(&Some(running))
            ),
        ),
        None => check(
            "host-pid",
            true,
            "in the host's PID namespace; no kubelet process is running (convert and revert start it)".into(),
        ),
    }
    // (address as shown, bind check) for each port YurtHub takes
    let loopback = YURTHUB_PORTS.map(|p| (format!("127.0.0.1:{p}"), node::port_free(p)));
    let node_ip = node_ip_ports
        .iter()
        .map(|p| (format!("the node's IP:{p}"), node::port_free_everywhere(*p)));
    let mut busy = Vec::new();
    let mut port_errors = Vec::new();
    for (at, free) in loopback.into_iter().chain(node_ip) {
        match free {
            Ok(true) => {}
            Ok(false) => busy.push(at),
            Err(e) => port_errors.push(e),
        }
    }
    let mut wanted = "127.0.0.1:10261, :10267 and :10268".to_string();
    if !node_ip_ports.is_empty() {
        let list: Vec<String> = node_ip_ports.iter().map(u16::to_string).collect();
        wanted.push_str(&format!(", and port {} on every address", list.join(", ")));
    }
    if !port_errors.is_empty() {
        check("ports", false, port_errors.join("; "));
    } else if busy.is_empty() {
        check("ports", true, format!("{wanted} are free for YurtHub"));
    } else if report.converted {
        check(
            "ports",
            true,
            format!(
                "{} in use, by the YurtHub of an earlier convert",
                busy.join(", ")
            ),
        );
    } else {
        check(
            "ports",
            false,
            format!(
                "{} already in use on this node; YurtHub needs them. Find the listener (ss -ltnp) and stop it",
                busy.join(", ")
            ),
        );
    }
    check(
        "kubelet-unit",
        !report.kubelet_argv.is_empty(),
        if report.kubelet_argv.is_empty() {
            "cannot compute the kubelet's command line from its systemd unit".into()
        } else {
            format!(
                "layout {}, --kubeconfig={} (from {})",
                report.layout,
                report.kubeconfig.as_deref().unwrap_or("(none)"),
                report.kubeconfig_source.as_deref().unwrap_or("?")
            )
        },
    );
    check(
        "kubelet-redirect",
        report.redirect_possible,
        if report.redirect_possible {
            format!("the kubelet can be pointed at {OPENYURT_KUBECONFIG}")
        } else {
            "the kubelet's flags cannot be rewritten safely (see problems)".into()
        },
    );
    check(
        "static-pods",
        report.static_pod_dir.is_some(),
        match &report.static_pod_dir {
            Some(d) => format!("static-pod directory {d}"),
            None => "the kubelet runs no static pods (see problems)".into(),
        },
    );
    check(
        "api-server",
        report.api_server.is_some(),
        match &report.api_server {
            Some(u) => format!("API server {}", u.url),
            None => {
                "cannot tell the API server from the kubelet's kubeconfig (see problems)".into()
            }
        },
    );
    for p in &pulls {
        let message = if p.pulled {
            format!("pulled {}", p.image)
        } else {
            format!("cannot pull {}: {}", p.image, p.message)
        };
        check("image-pull", p.pulled, message);
    }
    r.image_pulls = pulls;
    for p in &report.problems {
        tracing::warn!("problem: {p}");
    }
    r.kubelet_kubeconfig = report.kubeconfig.clone();
    r.message = if failed.is_empty() {
        format!(
            "preflight passed: layout {}, {}",
            report.layout,
            if report.converted {
                "already converted by yurtctl"
            } else {
                "not converted"
            }
        )
    } else {
        String::new()
    };
    r.preflight = Some(report);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(NodeServantError::PreflightFailed { failed })
    }
}
