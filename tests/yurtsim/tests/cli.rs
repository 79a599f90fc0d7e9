//! The `yurtsim` binary: starts, prints one `ready` line, serves kubectl (the conformance
//! script), stops on SIGTERM, and refuses bad input with a clear message.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_yurtsim");

struct Running {
    child: Child,
    ready_line: String,
    _dir: tempfile::TempDir,
    state: std::path::PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGTERMs `yurtsim up` and requires a successful exit within `limit`.
fn stops_cleanly_on_sigterm(r: &mut Running, limit: Duration) {
    let pid = r.child.id() as i32;
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let start = Instant::now();
    loop {
        if let Some(status) = r.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status:?}");
            return;
        }
        assert!(start.elapsed() < limit, "yurtsim did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn up(args: &[&str]) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut child = Command::new(BIN)
        .args(["up", "--state-dir"])
        .arg(&state)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready_line = String::new();
    out.read_line(&mut ready_line).unwrap();
    // Keep draining stdout so the sim never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    Running {
        child,
        ready_line,
        _dir: dir,
        state,
    }
}

#[test]
fn up_prints_one_ready_line_writes_a_kubeconfig_and_stops_on_sigterm() {
    let mut r = up(&["--nodes", "2", "--layout", "kind"]);
    assert!(
        r.ready_line.starts_with("ready http://127.0.0.1:"),
        "{}",
        r.ready_line
    );
    let kubeconfig = std::fs::read_to_string(r.state.join("kubeconfig")).unwrap();
    assert!(kubeconfig.contains("current-context: yurtsim"));
    assert!(
        r.state
            .join("nodes/kind-control-plane/etc/systemd/system/kubelet.service.d/11-kind.conf")
            .is_file()
    );
    assert!(
        r.state
            .join("nodes/kind-worker/var/lib/kubelet/config.yaml")
            .is_file()
    );
    stops_cleanly_on_sigterm(&mut r, Duration::from_secs(10));
}

/// `--apiserver real`: the same ready line (an https:// server), kubectl gets the real API
/// server's nodes through the published port, and SIGTERM stops the control plane too: no
/// process of the cluster is left.
#[test]
fn up_with_the_real_control_plane_serves_kubectl_and_leaves_no_process_on_sigterm() {
    yurtsim::real::ensure_built(&[yurtsim::real::NEWEST_KUBERNETES])
        .expect("tests/real/build.sh builds the control plane");
    let mut r = up(&["--apiserver", "real", "--nodes", "2"]);
    assert!(
        r.ready_line.starts_with("ready https://127.0.0.1:") && r.ready_line.contains("nodes=2"),
        "{}",
        r.ready_line
    );
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(r.state.join("kubeconfig"))
        .args(["get", "nodes", "-o", "name"])
        .output()
        .expect("kubectl");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "node/control-plane-1\nnode/worker-1\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stops_cleanly_on_sigterm(&mut r, Duration::from_secs(20));
    // every control-plane process names the state dir in its flags
    let state = r.state.display().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&state))
        .collect();
    assert!(left.is_empty(), "left running: {left:#?}");
}

/// Issue 18: once the control plane's kubelet has been silent past the node monitor grace (4 s
/// in `yurtsim up`), the node is marked and the sim still stops on SIGTERM.
#[test]
fn up_stops_on_sigterm_after_a_control_plane_kubelet_lost_its_api_server() {
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Api, PostParams};

    let mut r = up(&["--nodes", "2", "--heartbeat-interval", "200ms"]);
    let conf = r
        .state
        .join("nodes/control-plane-1/etc/kubernetes/kubelet.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.contains("https://10.0.0.1:6443"));
    std::fs::write(
        &conf,
        text.replace("https://10.0.0.1:6443", "https://10.9.9.9:6443"),
    )
    .unwrap();
    let kubeconfig = r.state.join("kubeconfig");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Every request is bounded: a wedged sim must fail this test, not hang it.
    let saw_unknown = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "restart"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeName": "control-plane-1", "hostNetwork": true,
                "automountServiceAccountToken": false,
                "containers": [{"name": "main", "image": "busybox",
                    "command": ["bash", "-c", "systemctl restart kubelet"]}]}}}
        }))
        .unwrap();
        let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
        tokio::time::timeout(
            Duration::from_secs(5),
            jobs.create(&PostParams::default(), &job),
        )
        .await
        .expect("the API answers")
        .unwrap();
        let nodes: Api<Node> = Api::all(client);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_secs(2), nodes.get("control-plane-1")).await
                && n.status
                    .and_then(|s| s.conditions)
                    .into_iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "Unknown")
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    });
    stops_cleanly_on_sigterm(&mut r, Duration::from_secs(15));
    assert!(
        saw_unknown,
        "control-plane-1 never went Unknown after its kubelet lost the API server"
    );
}

#[test]
fn kubectl_conformance_script_passes() {
    assert!(
        Command::new("kubectl")
            .arg("version")
            .arg("--client")
            .output()
            .is_ok_and(|o| o.status.success()),
        "kubectl is required for the conformance script (.ci/run installs it)"
    );
    let r = up(&["--nodes", "3", "--pod-ready-delay", "100ms"]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("KUBECONFIG", r.state.join("kubeconfig"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "conformance failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.ends_with("passed, 0 failed")),
        "{stdout}"
    );
}

fn fails_with(args: &[&str], state_dir: Option<&std::path::Path>, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let default_state = dir.path().join("state");
    let mut cmd = Command::new(BIN);
    cmd.arg("up")
        .arg("--state-dir")
        .arg(state_dir.unwrap_or(&default_state))
        .args(args);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(
        out.stdout.is_empty(),
        "no ready line on failure: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains(needle),
        "{args:?}: expected {needle:?} in\n{stderr}"
    );
}

#[test]
fn bad_input_fails_with_a_clear_message() {
    fails_with(
        &["--layout", "k3s"],
        None,
        "kubeadm, kubeadm-usr, kind, minikube",
    );
    fails_with(&["--nodes", "0"], None, "--nodes must be at least 1");
    fails_with(
        &["--nodes", "2", "--control-planes", "3"],
        None,
        "--control-planes must be between 1 and --nodes",
    );
    fails_with(&["--pod-ready-delay", "fast"], None, "not a duration");
    fails_with(&["--apiserver", "k3s"], None, "sim, real");
    // a control plane that is not built: the error names the build command
    fails_with(
        &["--apiserver", "real", "--kubernetes-version", "v1.30.0"],
        None,
        "no real control plane for Kubernetes v1.30.0",
    );
    fails_with(
        &["--apiserver", "real", "--kubernetes-version", "v1.30.0"],
        None,
        "tests/real/build.sh v1.30.0",
    );
    // refused before anything is created
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = Command::new(BIN)
        .args([
            "up",
            "--apiserver",
            "real",
            "--kubernetes-version",
            "v1.30.0",
            "--state-dir",
        ])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !state.exists(),
        "a refused start created {}",
        state.display()
    );
    fails_with(
        &["--exec", "yurtctl=/no/such/binary"],
        None,
        "/no/such/binary",
    );
    fails_with(
        &["--exec", "kubectl=/bin/true"],
        None,
        "only yurtctl=PATH is supported",
    );
    // A state dir we cannot write to (a regular file stands in its parent's place).
    let f = tempfile::NamedTempFile::new().unwrap();
    fails_with(
        &[],
        Some(&f.path().join("state")),
        "cannot create state dir",
    );
    // A port that is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    fails_with(
        &["--port", &port],
        None,
        &format!("port {port} is already in use"),
    );
    // A state dir that already holds a cluster.
    let r = up(&["--nodes", "1"]);
    fails_with(&[], Some(&r.state), "already holds a cluster");
}
