//! A node's own processes, as a `hostPID: true` container on it sees them in `/proc`: an init
//! (PID 1, `systemd`) and, while kubelet.service runs, a `kubelet` whose command line is the
//! one systemd started it with (the unit's ExecStart as of the last daemon-reload, its
//! environment files read at the start: systemd/systemd@v255 man/systemd.exec.xml,
//! `EnvironmentFile=`). A tool that reads `/proc/<pid>/cmdline` to learn what
//! the running kubelet uses (`--kubeconfig`, ...) finds what the sim's kubelet really runs
//! with; after the unit files change, it keeps finding the old flags until the kubelet is
//! restarted, as on a real node.
//!
//! The processes are stand-ins (a shell blocked on a FIFO nobody writes to: no CPU, no child);
//! the kubelet's behaviour stays in kubelet.rs. init exists from the node's first use of its
//! namespaces (it holds them: runtime/namespaces.rs), the kubelet process from the first
//! `hostPID` container on the node, so large sims without such pods carry none.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::kubelet::{NodeKubelet, state_dir_of};
use crate::runtime::{HostProcess, NodeNamespaces};
use crate::sim::Shared;

/// A node's kubelet process, once a `hostPID` pod made it visible.
#[derive(Debug)]
pub struct NodeProcesses {
    kubelet: Option<HostProcess>,
    ns: Arc<NodeNamespaces>,
}

/// The node's network and PID namespaces, created with their init on first use (the first
/// `hostNetwork` or `hostPID` pod, or the node's YurtHub endpoint).
pub(crate) fn node_namespaces(
    shared: &Shared,
    k: &NodeKubelet,
) -> std::io::Result<Arc<NodeNamespaces>> {
    let mut ns = k.namespaces.lock().unwrap();
    if let Some(ns) = &*ns {
        return Ok(ns.clone());
    }
    let bin = stand_ins(shared)?;
    let created = Arc::new(NodeNamespaces::create(&bin.join("systemd"))?);
    *ns = Some(created.clone());
    Ok(created)
}

/// The node's namespaces as a `hostPID` pod sees them: with the kubelet process (if the
/// kubelet runs) started on first use.
pub(crate) fn node_pids(shared: &Shared, k: &NodeKubelet) -> std::io::Result<Arc<NodeNamespaces>> {
    let mut procs = k.processes.lock().unwrap();
    if let Some(p) = &*procs {
        return Ok(p.ns.clone());
    }
    let ns = node_namespaces(shared, k)?;
    let kubelet = start_kubelet(shared, k, &ns, &stand_ins(shared)?);
    *procs = Some(NodeProcesses {
        kubelet,
        ns: ns.clone(),
    });
    Ok(ns)
}

/// kubelet.service was (re)started or stopped: the old process goes, a new one starts with the
/// flags it now runs with (none while it is stopped or cannot start).
pub(crate) fn kubelet_changed(shared: &Shared, k: &NodeKubelet) {
    let mut procs = k.processes.lock().unwrap();
    let Some(p) = procs.as_mut() else { return };
    p.kubelet = None;
    match stand_ins(shared) {
        Ok(bin) => p.kubelet = start_kubelet(shared, k, &p.ns, &bin),
        Err(e) => tracing::warn!(node = %k.name, "kubelet process stand-in: {e}"),
    }
}

fn start_kubelet(
    shared: &Shared,
    k: &NodeKubelet,
    ns: &NodeNamespaces,
    bin: &Path,
) -> Option<HostProcess> {
    let argv = k.running_kubelet_argv()?;
    let log = state_dir_of(shared, &["nodes", &k.name, "kubelet-process.log"]);
    ns.spawn_process(
        &bin.join("kubelet"),
        argv.get(1..).unwrap_or_default(),
        &log,
    )
    .map_err(|e| tracing::warn!(node = %k.name, "starting the kubelet process stand-in: {e}"))
    .ok()
}

/// The directory of the stand-in executables, written once per sim.
fn stand_ins(shared: &Shared) -> std::io::Result<PathBuf> {
    let dir = state_dir_of(shared, &["host-bin"]);
    write_stand_ins(&dir)?;
    Ok(dir)
}

/// Writes the stand-ins and their FIFO into `dir` unless there. Nodes start their first
/// `hostPID` pods concurrently: one writer at a time.
fn write_stand_ins(dir: &Path) -> std::io::Result<()> {
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let fifo = dir.join("block.fifo");
    if !fifo.exists() {
        std::fs::create_dir_all(dir)?;
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
            .map_err(std::io::Error::other)?;
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
    }
    for name in ["systemd", "kubelet"] {
        let p = dir.join(name);
        if p.exists() {
            continue;
        }
        // Written aside and renamed, so an exec never sees a half-written file.
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, STAND_IN)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&tmp, &p)?;
    }
    Ok(())
}

const STAND_IN: &str = "#!/bin/sh\n# yurtsim: a node process stand-in (its name and command line are what /proc shows)\nwhile :; do read -r _ < \"${0%/*}/block.fifo\"; done\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_starting_at_once_write_the_stand_ins_once_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("host-bin");
        let start = std::sync::Barrier::new(32);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..32)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        write_stand_ins(&bin)
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap().unwrap();
            }
        });
        let mut names: Vec<String> = std::fs::read_dir(&bin)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["block.fifo", "kubelet", "systemd"]);
        assert_eq!(
            std::fs::read_to_string(bin.join("kubelet")).unwrap(),
            STAND_IN
        );
    }
}
