//! `yurtctl diagnose` on the real tier: a cluster converted with OpenYurt v1.7.0's real
//! yurt-manager and YurtHub (the systemd service), the real API server and the real
//! kube-controller-manager. A healthy converted cluster has no error finding, its nodes'
//! Jobs read included; then a kubelet whose drop-in a kubeadm upgrade rewrote (restarted, it
//! goes straight to the real API server) and a stopped YurtHub (the real node lifecycle
//! controller marks its node NotReady) are each reported with their severity, evidence and fix.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::real;

/// The command prefix that runs a command in the node's own namespaces.
const HOST: &str = "nsenter --target 1 --mount --uts --ipc --net --pid --";

/// `yurtctl diagnose ARGS -o json`: its exit code and result (stderr in a panic's message).
fn diagnose(kubeconfig: &Path, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("diagnose")
        .args(args)
        .args(["-o", "json"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "diagnose printed no result ({e}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// The findings of `r` of `severity`, as (check, subject, evidence, fix).
fn findings(r: &Value, severity: &str) -> Vec<(String, String, String, String)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
            (s("check"), s("subject"), s("evidence"), s("fix"))
        })
        .collect()
}

fn find<'a>(
    all: &'a [(String, String, String, String)],
    check: &str,
    subject: &str,
) -> Option<&'a (String, String, String, String)> {
    all.iter().find(|f| f.0 == check && f.1 == subject)
}

fn until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A privileged pod on `node` running `script` (`nsenter` into the host's namespaces, as the
/// servant does), created through the real API server.
fn on_node(kubeconfig: &Path, node: &str, name: &str, script: &str) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "hostPID": true, "hostNetwork": true, "restartPolicy": "Never",
            "automountServiceAccountToken": false, "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", script]}]}});
    real::kubectl_create(kubeconfig, &pod.to_string());
}

fn phase(kubeconfig: &Path, pod: &str) -> String {
    real::kubectl_json(kubeconfig, &["-n", "default", "get", "pod", pod])["status"]["phase"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn ready(kubeconfig: &Path, node: &str) -> bool {
    real::kubectl_json(kubeconfig, &["get", "node", node])["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnose_finds_a_kubelet_around_yurthub_and_a_stopped_yurthub_on_real_components() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let sim = real::converted_cluster(dir.path(), 3).await;
    let kc = sim.kubeconfig_path();
    let nodes = ["control-plane-1", "worker-1", "worker-2"];
    tokio::task::block_in_place(|| {
        // yurt-manager is available once its readiness probe ran (60 s after it started)
        until("yurt-manager available", Duration::from_secs(120), || {
            let d = real::kubectl_json(
                &kc,
                &["-n", "kube-system", "get", "deployment", "yurt-manager"],
            );
            (d["status"]["availableReplicas"] == 1).then_some(())
        });
        // healthy: nothing worse than a warning, every node read by its Job
        let (code, r) = diagnose(&kc, &nodes);
        assert_eq!(code, 0, "{r:#}");
        assert_eq!(findings(&r, "error"), [], "{r:#}");
        assert_eq!(findings(&r, "warning"), [], "{r:#}");
        let checks = r["checks"].to_string();
        assert!(checks.contains("KubeletThroughYurtHub"), "{r:#}");

        // worker-2: YurtHub stopped; its kubelet reaches the API server only through it
        on_node(
            &kc,
            "worker-2",
            "stop-yurthub",
            &format!("{HOST} systemctl stop yurthub"),
        );
        // worker-1: a kubeadm upgrade rewrote the kubelet's drop-in, and the kubelet restarted
        // on it: it goes to the real API server with its own credentials, around YurtHub
        let drop_in = sim
            .node_root("worker-1")
            .join("etc/systemd/system/kubelet.service.d/10-kubeadm.conf");
        let text = std::fs::read_to_string(&drop_in).unwrap();
        assert!(text.contains("/var/lib/openyurt/kubelet.conf"), "{text}");
        std::fs::write(
            &drop_in,
            text.replace(
                "/var/lib/openyurt/kubelet.conf",
                "/etc/kubernetes/kubelet.conf",
            ),
        )
        .unwrap();
        on_node(
            &kc,
            "worker-1",
            "restart-kubelet",
            &format!("{HOST} systemctl daemon-reload && {HOST} systemctl restart kubelet"),
        );
        until("the kubelet restarted", Duration::from_secs(60), || {
            (phase(&kc, "restart-kubelet") == "Succeeded").then_some(())
        });
        // the real node lifecycle controller: 50 s without a lease renewal
        until("worker-2 NotReady", Duration::from_secs(90), || {
            (!ready(&kc, "worker-2")).then_some(())
        });
        assert!(ready(&kc, "worker-1"), "worker-1 stays Ready, going direct");

        let (code, r) = diagnose(&kc, &["worker-1", "worker-2", "--job-timeout", "20s"]);
        assert_eq!(code, 7, "{r:#}");
        let errors = findings(&r, "error");
        let warnings = findings(&r, "warning");
        let (_, _, evidence, fix) = find(&errors, "KubeletThroughYurtHub", "node/worker-1")
            .unwrap_or_else(|| panic!("{r:#}"));
        assert!(
            evidence.contains("/etc/kubernetes/kubelet.conf names https://")
                && evidence.contains("not YurtHub's http://127.0.0.1:10261"),
            "{evidence}"
        );
        assert!(fix.contains("yurtctl revert --nodes NODE"), "{fix}");
        let on_worker_1: Vec<_> = errors.iter().filter(|f| f.1 == "node/worker-1").collect();
        assert_eq!(on_worker_1.len(), 1, "{r:#}");
        let (_, _, evidence, fix) =
            find(&errors, "NodeReady", "node/worker-2").unwrap_or_else(|| panic!("{r:#}"));
        assert!(evidence.contains("NotReady"), "{evidence}");
        assert!(fix.contains("systemctl status yurthub"), "{fix}");
        // its Job could not run there: the kubelet does not see it
        let (_, _, evidence, _) =
            find(&warnings, "YurtHubOnNode", "node/worker-2").unwrap_or_else(|| panic!("{r:#}"));
        assert!(evidence.contains("could not be read"), "{evidence}");
    });
    eprintln!("real diagnose test: {:?}", started.elapsed());
    sim.shutdown().await;
}
