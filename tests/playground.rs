//! `yurtctl playground` end to end, non-interactively: it starts its own simulated cluster,
//! prints the KUBECONFIG line, runs every step of its tour as a child yurtctl, shows the
//! nodes between steps and shuts down (stdin is not a terminal, so it does not keep running).
#![cfg(feature = "playground")]

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

#[test]
fn the_tour_runs_every_step_and_shows_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = Command::new(BIN)
        .args([
            "playground",
            "--nodes",
            "3",
            "--layout",
            "kind",
            "--state-dir",
        ])
        .arg(&state)
        .stdin(Stdio::null())
        .env_remove("KUBECONFIG")
        .env_remove("CI")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert_eq!(out.status.code(), Some(0));

    assert!(
        stdout.contains(&format!(
            "export KUBECONFIG={}",
            state.join("kubeconfig").display()
        )),
        "the user can point kubectl at it"
    );
    for step in yurtctl::app::playground::STEPS {
        assert!(
            stderr.contains(step.title),
            "step {:?} is announced",
            step.title
        );
    }
    // convert's real progress (plain lines: stderr is a pipe), per phase and per node
    for phase in yurtctl::plan::CONVERT_PHASES {
        if phase == "preflight" || phase == "kcm" {
            continue; // preflight happens before the lock; kcm has nothing to do in this profile
        }
        assert!(
            stderr.contains(&format!("[{phase}]")),
            "phase {phase} shown"
        );
    }
    for node in ["kind-worker", "kind-worker2"] {
        assert!(
            stderr.contains(&format!(
                "[nodes/edge] node {node} (Job yurtctl-convert-{node}): succeeded"
            )),
            "{node}'s Job shown"
        );
    }
    // the node table before (kubelets on the API server) and after (through YurtHub)
    let tables: Vec<&str> = stdout.split("NAME ").skip(1).collect();
    assert_eq!(
        tables.len(),
        1 + yurtctl::app::playground::STEPS.len(),
        "{stdout}"
    );
    assert!(!tables[0].contains("127.0.0.1:10261"));
    let after = tables[1];
    assert_eq!(
        after.matches("http://127.0.0.1:10261").count(),
        3,
        "{after}"
    );
    assert_eq!(after.matches("/var/lib/openyurt/kubelet.conf").count(), 3);
    assert!(stderr.contains("shutting the simulated cluster down"));
}
