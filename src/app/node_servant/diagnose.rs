//! `node-servant diagnose`: what `yurtctl diagnose` reads on a node; changes nothing.

use super::*;

/// How long YurtHub's port (and its journal) may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Lines of YurtHub's journal (or its static pod's container log) kept for `diagnose --collect`.
const YURTHUB_LOG_LINES: u32 = 200;

pub(super) fn diagnose(r: &mut ServantResult, root: &Path, ready_path: &str) -> Result<()> {
    let fs = plan(HostFs::new(root))?;
    let mut f = plan(servant::facts::node_facts(&fs))?;
    f.running_kubelet_kubeconfig = node::running_kubelet_kubeconfig();
    if f.yurthub_mode != "none" {
        f.yurthub_not_ready =
            node::probe_ready(YURTHUB_SERVER_PORT, ready_path, PROBE_TIMEOUT).err();
    }
    match workloads(&fs) {
        Ok(w) => f.workloads = Some(w),
        Err(why) => f.workloads_problem = Some(why),
    }
    if f.yurthub_mode == "service" {
        f.yurthub_log = Some(
            node::host_journal(HUB_UNIT, YURTHUB_LOG_LINES, PROBE_TIMEOUT)
                .unwrap_or_else(|e| format!("(journalctl -u {HUB_UNIT} failed: {e})")),
        );
    } else if f.yurthub_mode == "static-pod" {
        f.yurthub_log = Some(
            static_hub_log(&fs).unwrap_or_else(|e| format!("(the YurtHub static pod's log: {e})")),
        );
    }
    r.message = format!(
        "YurtHub: {}{}; the kubelet: {}",
        f.yurthub_mode,
        match &f.yurthub_not_ready {
            Some(why) => format!(", not ready ({why})"),
            None if f.yurthub_mode != "none" => ", ready".into(),
            None => String::new(),
        },
        running_in_words(&f.running_kubelet_kubeconfig),
    );
    r.node_facts = Some(f);
    Ok(())
}

/// The API address each workload container on the node was started with: `crictl ps`, then
/// one `crictl inspect` of them all.
fn workloads(fs: &HostFs) -> std::result::Result<Vec<servant::runtime::ContainerApi>, String> {
    let argv = servant::kubelet::effective_argv(fs).map_err(|e| e.to_string())?;
    let endpoint = servant::runtime::cri_endpoint(fs, &argv).map_err(|e| e.to_string())?;
    let node = std::env::var("NODE_NAME").unwrap_or_default();
    let keep = KeepPods {
        own_pod_uid: std::env::var("POD_UID").unwrap_or_default(),
        pods: servant::runtime::static_pods(fs, &argv, &node).map_err(|e| e.to_string())?,
    };
    let ps = node::host_crictl(&endpoint, &["ps", "-o", "json"], PROBE_TIMEOUT)
        .map_err(|e| e.to_string())?;
    let containers =
        servant::runtime::containers_to_restart(&ps, &keep).map_err(|e| e.to_string())?;
    if containers.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec!["inspect", "-o", "json"];
    args.extend(containers.iter().map(|c| c.id.as_str()));
    let inspected =
        node::host_crictl(&endpoint, &args, PROBE_TIMEOUT).map_err(|e| e.to_string())?;
    servant::runtime::container_apis(&inspected, &containers).map_err(|e| e.to_string())
}

/// The end of the YurtHub static pod's container log, as the node's runtime keeps it: its
/// newest container in `crictl ps -a`, then `crictl logs --tail N` of it.
fn static_hub_log(fs: &HostFs) -> std::result::Result<String, String> {
    let argv = servant::kubelet::effective_argv(fs).map_err(|e| e.to_string())?;
    let endpoint = servant::runtime::cri_endpoint(fs, &argv).map_err(|e| e.to_string())?;
    let node = std::env::var("NODE_NAME").unwrap_or_default();
    let pod = servant::runtime::hub_static_pod(fs, &argv, &node)
        .map_err(|e| e.to_string())?
        .ok_or("no yurthub manifest in the kubelet's static-pod directory")?;
    let ps = node::host_crictl(&endpoint, &["ps", "-a", "-o", "json"], PROBE_TIMEOUT)
        .map_err(|e| e.to_string())?;
    let c = servant::runtime::newest_container_of(&ps, &pod)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "`crictl ps -a` lists no container of {}/{} (its image not pulled, or the \
                 kubelet not running it)",
                pod.0, pod.1
            )
        })?;
    node::host_crictl_logs(&endpoint, &c.id, YURTHUB_LOG_LINES, PROBE_TIMEOUT)
        .map_err(|e| e.to_string())
}
