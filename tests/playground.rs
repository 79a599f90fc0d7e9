//! `yurtctl playground` end to end, non-interactively: it starts its own simulated cluster,
//! prints the KUBECONFIG line, runs every step of its tour as a child yurtctl, shows the
//! nodes between steps and shuts down (stdin is not a terminal, so it does not keep running).
#![cfg(feature = "playground")]

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

#[test]
fn the_tour_runs_every_step_and_shows_each_phase() {
    tour(yurtctl::render::Profile::DEFAULT, "kind", "sim");
}

/// A profile whose YurtHub is a static pod also takes the tour's rollout steps.
#[test]
fn the_tour_rolls_out_a_static_pod_yurthub() {
    tour("openyurt-v1.6", "kind", "sim");
}

/// The same tour with a real kube-apiserver, kube-controller-manager and scheduler, and
/// OpenYurt v1.7.0's real yurt-manager and YurtHub (docs/yurtsim.md#the-real-tier).
#[test]
fn the_tour_runs_on_a_real_control_plane() {
    yurtsim::real::ensure_built(&[yurtsim::real::NEWEST_KUBERNETES, "openyurt-v1.7.0"])
        .expect("the real tier builds (tests/real/build.sh)");
    tour(yurtctl::render::Profile::DEFAULT, "kubeadm", "real");
}

/// `--apiserver real` runs only the OpenYurt the real tier builds, and says so up front.
#[test]
fn a_real_tour_of_a_release_not_built_is_refused_before_anything_starts() {
    let out = Command::new(BIN)
        .args([
            "playground",
            "--apiserver",
            "real",
            "--profile",
            "openyurt-v1.6",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--apiserver real runs OpenYurt's real binaries, built for v1.7.0 only; profile openyurt-v1.6 is OpenYurt v1.6.1 (the Go module proxy does not serve"),
        "{stderr}"
    );
    assert!(!stderr.contains("starting"), "{stderr}");
}

fn tour(profile_name: &str, layout: &str, apiserver: &str) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = Command::new(BIN)
        .args([
            "playground",
            "--nodes",
            "3",
            "--layout",
            layout,
            "--profile",
            profile_name,
            "--apiserver",
            apiserver,
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
    let workers: &[&str] = if layout == "kind" {
        &["kind-worker", "kind-worker2"]
    } else {
        &["worker-1", "worker-2"]
    };
    for node in workers {
        assert!(
            stderr.contains(&format!(
                "[nodes/edge] node {node} (Job yurtctl-convert-{node}): succeeded"
            )),
            "{node}'s Job shown"
        );
    }
    // the node table before (kubelets on the API server) and after (through YurtHub)
    // (steps print tables of their own: split on the node table's own column)
    // a profile that runs YurtHub as a service skips the YurtHub rollout steps, and the newest
    // profile the upgrade steps; each says why
    let profile = yurtctl::render::Profile::load(profile_name).unwrap();
    let skipped = yurtctl::app::playground::STEPS
        .iter()
        .filter(|s| s.skipped_by(&profile).is_some())
        .count();
    let service = profile.yurthub.static_pod().is_none();
    let upgradable = yurtctl::app::playground::upgrade_target(&profile).is_some();
    assert_eq!(
        skipped,
        if service { 2 } else { 0 } + if upgradable { 0 } else { 2 }
    );
    assert_eq!(
        stderr
            .matches(&format!(
                "skipped: profile {profile_name} runs YurtHub as a systemd service"
            ))
            .count(),
        if service { 2 } else { 0 },
        "{stderr}"
    );
    // the user's static pod rolled to 1.19.2, back, then over the air on every worker
    for words in ["[nodes] node", "PodNeedUpgrade", "nginx:1.19.2"] {
        assert!(stderr.contains(words) || stdout.contains(words), "{words}");
    }
    if upgradable {
        for node in workers {
            assert!(
                stderr.contains(&format!(
                    "[nodes/edge] node {node} (Job yurtctl-upgrade-{node}): succeeded"
                )),
                "{node} upgraded:\n{stderr}"
            );
        }
    }
    let tables: Vec<&str> = stdout.split(" KUBELET-SERVER ").skip(1).collect();
    assert_eq!(
        tables.len(),
        1 + yurtctl::app::playground::STEPS.len() - skipped,
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

/// Ctrl-C on a terminal while a step runs: the step stops its own way, the cluster is shut
/// down, and the playground exits 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_step_shuts_the_cluster_down() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cmd = format!(
        "exec {BIN} playground --nodes 3 --no-keep --state-dir {}",
        state.display()
    );
    let mut script = tokio::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env_remove("KUBECONFIG")
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("`script` (util-linux) is installed");
    let mut stdin = script.stdin.take().unwrap();
    let mut stdout = script.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    // the step is running once convert's first phase shows up
    let started = tokio::time::timeout(std::time::Duration::from_secs(120), async {
        while !String::from_utf8_lossy(&seen).contains("[lock]") {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(n > 0, "ended early:\n{}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(started.is_ok(), "{}", String::from_utf8_lossy(&seen));
    stdin.write_all(b"\x03").await.unwrap();
    stdin.flush().await.unwrap();
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(300),
        stdout.read_to_end(&mut seen),
    )
    .await;
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(ended.is_ok(), "still running 300 s after Ctrl-C:\n{text}");
    let status = script.wait().await.unwrap();
    eprintln!("{text}");
    assert_eq!(status.code(), Some(130));
    assert!(text.contains("shutting the simulated cluster down"));
    assert!(!text.contains("done: every step succeeded"));
}
