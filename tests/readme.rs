//! The README's stand-alone walk-through (`yurtsim up`, then `yurtctl convert`, `status`,
//! `revert`), run as written: only the binaries' directory and the state directory are
//! replaced, so a step that stops working for a reader fails here.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MARKER: &str = "<!-- walk-through, run as written by tests/readme.rs -->";
const STATE_DIR: &str = "/tmp/yurtsim-demo";

/// The two `sh` blocks after the marker: starting the cluster, and using it.
fn walk_through() -> (Vec<String>, Vec<String>) {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let after = &readme[readme.find(MARKER).expect("the walk-through marker")..];
    let mut blocks = after.split("```sh\n").skip(1).map(|b| {
        b.split("\n```")
            .next()
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    (blocks.next().unwrap(), blocks.next().unwrap())
}

/// A README line with the binaries and the state directory of this test.
fn localize(line: &str, bin: &Path, state: &Path) -> String {
    let bin = format!("{}/", bin.display());
    // one pass over `target/debug/`: the replacement contains it too
    line.replace("$PWD/target/debug/", "target/debug/")
        .replace("target/debug/", &bin)
        .replace(STATE_DIR, &state.display().to_string())
}

/// Where `cargo test` put yurtctl; yurtsim is built beside it by `cargo test --workspace`
/// (built here when this test runs alone).
fn binaries() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_yurtctl")).parent().unwrap();
    if !bin.join("yurtsim").exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "-p", "yurtsim", "--bin", "yurtsim", "--locked"])
            .status()
            .expect("cargo build -p yurtsim")
            .success();
        assert!(ok, "cargo build -p yurtsim failed");
    }
    bin.to_path_buf()
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_readme_walk_through_converts_and_reverts_a_stand_alone_yurtsim() {
    let (start, use_it) = walk_through();
    assert_eq!(
        start[0], "cargo build --workspace --locked",
        "the walk-through builds both binaries first (cargo test --workspace built them here)"
    );
    let up = start[1]
        .strip_suffix(" &")
        .expect("yurtsim up runs in the background");
    assert!(up.starts_with("target/debug/yurtsim up "), "{up}");
    assert_eq!(use_it.last().map(String::as_str), Some("kill %1"));

    let bin = binaries();
    let scratch = tempfile::tempdir().unwrap();
    let state = scratch.path().join("yurtsim-demo");
    let mut sim = Killed(
        Command::new("bash")
            .args(["-c", &format!("exec {}", localize(up, &bin, &state))])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("yurtsim up"),
    );
    let mut ready = String::new();
    BufReader::new(sim.0.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.starts_with("ready http://127.0.0.1:"), "{ready:?}");
    let kubeconfig = format!("kubeconfig={}/kubeconfig", state.display());
    assert!(ready.contains(&kubeconfig), "{ready:?}");

    // every line but the last (`kill %1`: the test stops the cluster), each checked
    let mut kubeconfig = None;
    let mut outputs = Vec::new();
    for line in &use_it[..use_it.len() - 1] {
        if let Some(value) = line.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(localize(value, &bin, &state));
            continue;
        }
        let kubeconfig = kubeconfig.as_ref().expect("KUBECONFIG exported before use");
        let out = Command::new("bash")
            .args(["-c", &localize(line, &bin, &state)])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{line}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((line.clone(), stdout));
    }
    let printed = |prefix: &str| {
        outputs
            .iter()
            .find(|(l, _)| l.starts_with(prefix))
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| panic!("no step {prefix:?} in the walk-through"))
    };
    let status = printed("target/debug/yurtctl status");
    assert!(status.contains("Profile:  openyurt-v1.7"), "{status}");
    let nodes: Vec<&str> = status.lines().filter(|l| l.contains(" yes ")).collect();
    assert_eq!(nodes.len(), 4, "every node converted:\n{status}");
    assert!(
        nodes.iter().all(|l| l.contains(" service ")),
        "YurtHub runs as a service on every node:\n{status}"
    );
    let pools = printed("kubectl get nodepools");
    assert!(
        pools.lines().any(|l| l.starts_with("edge "))
            && pools.lines().any(|l| l.starts_with("cloud ")),
        "{pools}"
    );
    let reverted = printed("target/debug/yurtctl revert");
    assert!(
        reverted.is_empty(),
        "the result table goes to stderr: {reverted}"
    );
    let after = Command::new(bin.join("yurtctl"))
        .arg("status")
        .env("KUBECONFIG", format!("{}/kubeconfig", state.display()))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&after.stdout).contains("was not converted by yurtctl"),
        "{}",
        String::from_utf8_lossy(&after.stdout)
    );
    drop(sim);
}
