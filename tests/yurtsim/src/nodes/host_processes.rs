//! A node's own processes, as a `hostPID: true` container on it sees them in `/proc`: an init
//! (PID 1, `systemd`) and, while kubelet.service runs, a `kubelet` whose command line is the
//! one systemd started it with (the unit's ExecStart as of the last daemon-reload, its
//! environment files read at the start: systemd/systemd@v255 man/systemd.exec.xml,
//! `EnvironmentFile=`). A tool that reads `/proc/<pid>/cmdline` to learn what
//! the running kubelet uses (`--kubeconfig`, ...) finds what the sim's kubelet really runs
//! with; after the unit files change, it keeps finding the old flags until the kubelet is
//! restarted, as on a real node.
//!
//! The processes are stand-ins that only wait, reading their stdin: the sim's lifeline
//! (runtime/namespaces.rs), a pipe nobody writes to, so they end when the sim does, however it
//! ends. No CPU, no child. On x86_64 a static executable of 150 bytes (12 KiB resident, so
//! 10,000 nodes' inits and kubelets cost ~200 MiB, not the ~10 GiB of as many shells);
//! elsewhere a shell. The kubelet's behaviour stays in kubelet/. init exists from the node's first use of its
//! namespaces (it holds them: runtime/namespaces.rs), the kubelet process from the first
//! `hostPID` container on the node, so large sims without such pods carry none.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::nodes::Cluster;
use crate::nodes::kubelet::{NodeKubelet, state_dir_of};
use crate::nodes::runtime::{HostProcess, NodeNamespaces};

/// A node's kubelet process, once a `hostPID` pod made it visible.
#[derive(Debug)]
pub struct NodeProcesses {
    kubelet: Option<HostProcess>,
    ns: Arc<NodeNamespaces>,
}

/// The node's network and PID namespaces, created with their init on first use (the first
/// `hostNetwork` or `hostPID` pod, or the node's YurtHub endpoint).
pub(crate) fn node_namespaces(
    shared: &Cluster,
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
pub(crate) fn node_pids(shared: &Cluster, k: &NodeKubelet) -> std::io::Result<Arc<NodeNamespaces>> {
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
pub(crate) fn kubelet_changed(shared: &Cluster, k: &NodeKubelet) {
    let mut procs = k.processes.lock().unwrap();
    let Some(p) = procs.as_mut() else { return };
    p.kubelet = None;
    match stand_ins(shared) {
        Ok(bin) => p.kubelet = start_kubelet(shared, k, &p.ns, &bin),
        Err(e) => tracing::warn!(node = %k.name, "kubelet process stand-in: {e}"),
    }
}

fn start_kubelet(
    shared: &Cluster,
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
fn stand_ins(shared: &Cluster) -> std::io::Result<PathBuf> {
    let dir = state_dir_of(shared, &["host-bin"]);
    write_stand_ins(&dir)?;
    Ok(dir)
}

/// The init stand-in that holds a namespace's processes.
pub(crate) fn init_path(shared: &Cluster) -> PathBuf {
    stand_ins(shared)
        .unwrap_or_else(|_| state_dir_of(shared, &["host-bin"]))
        .join("systemd")
}

/// Writes the stand-ins into `dir` unless there. Nodes start their first `hostPID` pods
/// concurrently: one writer at a time.
pub(crate) fn write_stand_ins(dir: &Path) -> std::io::Result<()> {
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let stand_in = stand_in();
    for name in ["systemd", "kubelet"] {
        let p = dir.join(name);
        if p.exists() {
            continue;
        }
        // Written aside and renamed, so an exec never sees a half-written file.
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, &stand_in)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&tmp, &p)?;
    }
    Ok(())
}

/// The stand-in executable for this machine.
fn stand_in() -> Vec<u8> {
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        read_until_eof_x86_64()
    } else {
        SHELL_STAND_IN.as_bytes().to_vec()
    }
}

const SHELL_STAND_IN: &str = "#!/bin/sh\n# yurtsim: a node process stand-in (its name and command line are what /proc shows); ends at the end of its stdin\nwhile read -r _; do :; done\n";

/// A static x86_64 Linux ELF executable that reads its stdin until the end (or an error) and
/// then exits 0: one loadable segment (the whole file, read+execute) mapped at 0x400000,
/// entered right after the headers.
fn read_until_eof_x86_64() -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    const EHDR: u16 = 64;
    const PHDR: u16 = 56;
    let code: [u8; 30] = [
        0x31, 0xc0, // xor eax, eax (SYS_read)
        0x31, 0xff, // xor edi, edi (fd 0)
        0x48, 0x8d, 0x74, 0x24, 0xf8, // lea rsi, [rsp - 8] (a byte's buffer below the stack)
        0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
        0x0f, 0x05, // syscall
        0x48, 0x85, 0xc0, // test rax, rax
        0x7f, 0xeb, // jg back to the first xor (-21): a byte was read
        0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60 (SYS_exit): end of input or an error
        0x31, 0xff, // xor edi, edi (status 0)
        0x0f, 0x05, // syscall
    ];
    let entry = u64::from(EHDR + PHDR);
    let size = entry + code.len() as u64;
    let mut f = Vec::with_capacity(size as usize);
    // ELF header: 64-bit, little-endian, version 1, System V ABI
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&0x3eu16.to_le_bytes()); // EM_X86_64
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&(BASE + entry).to_le_bytes());
    f.extend_from_slice(&u64::from(EHDR).to_le_bytes()); // program headers follow
    f.extend_from_slice(&0u64.to_le_bytes()); // no section headers
    f.extend_from_slice(&0u32.to_le_bytes()); // flags
    for half in [EHDR, PHDR, 1, 0, 0, 0] {
        // header size, program header size and count, no sections
        f.extend_from_slice(&half.to_le_bytes());
    }
    // the one program header: PT_LOAD, PF_R | PF_X
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&5u32.to_le_bytes());
    for word in [0, BASE, BASE, size, size, 0x1000] {
        // file offset, virtual and physical address, file and memory size, alignment
        f.extend_from_slice(&word.to_le_bytes());
    }
    f.extend_from_slice(&code);
    f
}

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
        assert_eq!(names, ["kubelet", "systemd"]);
        assert_eq!(std::fs::read(bin.join("kubelet")).unwrap(), stand_in());
    }

    #[test]
    fn a_stand_in_waits_under_its_name_and_command_line_and_costs_little() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("host-bin");
        write_stand_ins(&bin).unwrap();
        // its stdin a pipe whose writer stays open: the lifeline of a running sim
        let (read, write) = std::io::pipe().unwrap();
        let mut p = std::process::Command::new(bin.join("kubelet"))
            .args(["--kubeconfig=/etc/kubernetes/kubelet.conf", "--v=2"])
            .stdin(read)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(p.try_wait().unwrap().is_none(), "the stand-in ended");
        let proc = format!("/proc/{}", p.id());
        assert_eq!(
            std::fs::read_to_string(format!("{proc}/comm")).unwrap(),
            "kubelet\n"
        );
        let cmdline = std::fs::read(format!("{proc}/cmdline")).unwrap();
        assert!(
            cmdline.ends_with(b"/kubelet\0--kubeconfig=/etc/kubernetes/kubelet.conf\0--v=2\0"),
            "{}",
            String::from_utf8_lossy(&cmdline)
        );
        let status = std::fs::read_to_string(format!("{proc}/status")).unwrap();
        let rss_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        let state = status.lines().find(|l| l.starts_with("State:")).unwrap();
        assert!(state.contains('S'), "waiting, not running: {state}");
        if cfg!(target_arch = "x86_64") {
            assert!(rss_kib <= 64, "{rss_kib} KiB resident");
        }
        // the sim is gone (its end of the lifeline closed): the stand-in ends by itself
        drop(write);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let status = loop {
            if let Some(s) = p.try_wait().unwrap() {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still waiting after its lifeline closed"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(status.success(), "{status}");
    }
}
