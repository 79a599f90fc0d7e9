//! `node-servant diagnose`: what `yurtctl diagnose` reads on a node; changes nothing.

use super::*;

/// How long YurtHub's port (and its journal) may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Lines of YurtHub's journal kept for `diagnose --collect`.
const YURTHUB_LOG_LINES: u32 = 200;

pub(super) fn diagnose(r: &mut ServantResult, root: &Path, ready_path: &str) -> Result<()> {
    let fs = plan(HostFs::new(root))?;
    let mut f = plan(servant::facts::node_facts(&fs))?;
    f.running_kubelet_kubeconfig = node::running_kubelet_kubeconfig();
    if f.yurthub_mode != "none" {
        f.yurthub_not_ready =
            node::probe_ready(YURTHUB_SERVER_PORT, ready_path, PROBE_TIMEOUT).err();
    }
    if f.yurthub_mode == "service" {
        f.yurthub_log = Some(
            node::host_journal(HUB_UNIT, YURTHUB_LOG_LINES, PROBE_TIMEOUT)
                .unwrap_or_else(|e| format!("(journalctl -u {HUB_UNIT} failed: {e})")),
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
