//! `yurtctl convert`, `status` and `revert` on the real tier: the real control plane, with
//! OpenYurt v1.7.0's own yurt-manager (as its Deployment's pod) and YurtHub (as the systemd
//! service the servant installs) built from upstream's module (tests/real, built on first use),
//! converted from a private registry mirror with a pull Secret, as an air-gapped cluster is.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{kubectl, real};

/// A registry mirror; its last segment stays `openyurt`, as a mirror keeps the images' names.
const MIRROR: &str = "registry.example.com/openyurt";

fn yurtctl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let (code, out) = real::yurtctl(kubeconfig, args);
    (code == 0, out)
}

fn json(kubeconfig: &Path, args: &[&str]) -> serde_json::Value {
    real::kubectl_json(kubeconfig, args)
}

/// The server the node's kubelet uses now, from the kubeconfig its unit gives it.
fn kubelet_server(root: &Path) -> String {
    let unit = yurtsim::nodes::systemd::load_unit(root, "kubelet.service").unwrap();
    let view = yurtsim::nodes::kubelet_config::kubelet_view(root, &unit).unwrap();
    view.server.unwrap()
}

fn ready_nodes(kubeconfig: &Path) -> Vec<String> {
    json(kubeconfig, &["get", "nodes"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            n["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_status_and_revert_pass_with_the_real_yurt_manager_and_yurthub() {
    let dir = tempfile::tempdir().unwrap();
    let began = std::time::SystemTime::now();
    let sim = real::openyurt_cluster(dir.path(), 3).await;
    let kc = sim.kubeconfig_path();
    let nodes = ["control-plane-1", "worker-1", "worker-2"];

    // from a private mirror that needs credentials, as an air-gapped cluster converts
    kubectl(
        &kc,
        &[
            "-n",
            "kube-system",
            "create",
            "secret",
            "docker-registry",
            "regcred",
            "--docker-server=registry.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ],
    );
    let (ok, out) = tokio::task::block_in_place(|| {
        yurtctl(
            &kc,
            &[
                "convert",
                "-y",
                "--image-repository",
                MIRROR,
                "--image-pull-secret",
                "regcred",
            ],
        )
    });
    assert!(ok, "yurtctl convert -y:\n{out}");
    assert!(out.contains("converted 3 node(s)"), "{out}");
    // the real Deployment controller made yurt-manager's pod from the mirror, with the Secret
    let manager = real::yurt_manager_pods(&kc);
    let spec = &manager["items"][0]["spec"];
    assert_eq!(
        spec["containers"][0]["image"],
        format!("{MIRROR}/yurt-manager:v1.7.0"),
        "{manager}"
    );
    assert_eq!(
        spec["imagePullSecrets"],
        serde_json::json!([{"name": "regcred"}])
    );
    // the real Job controller counts a pod in status.succeeded after it marks the Job
    // succeeded: convert still leaves none of its Jobs or their pods behind
    assert_eq!(yurtctl_leftovers(&kc), Vec::<String>::new());

    // yurt-manager v1.7.0 runs, and the API server calls its webhooks: a NodePool created
    // with an empty spec gets their defaults
    let deploy = json(
        &kc,
        &["-n", "kube-system", "get", "deployment", "yurt-manager"],
    );
    assert_eq!(deploy["status"]["availableReplicas"], 1, "{deploy}");
    // yurt-manager keeps its webhook certificates in its container's own /tmp, not in the
    // machine's, where every cluster's yurt-manager would overwrite the others'
    let pod = &manager["items"][0];
    let own = sim.state_dir().join(format!(
        "sim/pods/kube-system_{}_{}/tmp/yurt-manager/yurt-manager-webhook-certs/ca-cert.pem",
        pod["metadata"]["name"].as_str().unwrap(),
        pod["metadata"]["uid"].as_str().unwrap()
    ));
    assert!(own.is_file(), "{} missing", own.display());
    let shared = std::fs::symlink_metadata("/tmp/yurt-manager-webhook-certs/..data");
    assert!(
        shared.is_err() || shared.unwrap().modified().unwrap() < began,
        "the machine's /tmp/yurt-manager-webhook-certs was written during the test"
    );
    // the kubelet held its pod back until its readiness probe could run (initialDelaySeconds
    // 60) and reached the real binary's /readyz
    let started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("running: {pod}"));
    let ready_since = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or_else(|| panic!("ready: {pod}"));
    let held = chrono_age(started).saturating_sub(chrono_age(ready_since));
    assert!(
        held >= Duration::from_secs(59),
        "ready {held:?} after it started: {pod}"
    );
    let pool = tokio::task::block_in_place(|| {
        real::kubectl_create(
            &kc,
            r#"{"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool", "metadata": {"name": "hangzhou"}, "spec": {}}"#,
        )
    });
    assert_eq!(pool["spec"]["type"], "Edge", "{pool}");
    assert_eq!(pool["spec"]["leaderElectionStrategy"], "random", "{pool}");
    assert_eq!(
        pool["metadata"]["labels"]["nodepool.openyurt.io/type"], "edge",
        "{pool}"
    );
    kubectl(&kc, &["delete", "nodepool", "hangzhou"]);

    // each YurtHub's client certificate: signed by kube-controller-manager, approved by
    // yurt-manager
    let csrs = json(&kc, &["get", "csr"]);
    let hub_csrs: Vec<&serde_json::Value> = csrs["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client")
        .collect();
    assert_eq!(hub_csrs.len(), 3, "{csrs}");
    for c in &hub_csrs {
        let approved = c["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["type"] == "Approved")
            .unwrap_or_else(|| panic!("not approved: {c}"));
        assert!(
            approved["message"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase()
                .contains("yurt"),
            "approved by yurt-manager: {approved}"
        );
        assert!(c["status"]["certificate"].is_string(), "issued: {c}");
    }

    // every kubelet reaches the API server through YurtHub, and its node stays Ready for two
    // lease periods (40 s each)
    for n in nodes {
        assert_eq!(
            kubelet_server(&sim.node_root(n)),
            "http://127.0.0.1:10261",
            "node {n}"
        );
    }
    // upstream's documented way to detach a node, removing its NodePool label, does not let
    // yurt-manager's node-conversion controller revert it behind yurtctl's back: the
    // controller is off, so worker-1 is never cordoned, gets no conversion Job, and stays
    // Ready through YurtHub (openyurtio/openyurt@v1.7.0 yurtnodeconversion
    // desiredActionFromNode would revert it with a node-servant Job)
    kubectl(
        &kc,
        &["label", "node", "worker-1", "apps.openyurt.io/nodepool-"],
    );
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(80) {
        assert_eq!(ready_nodes(&kc), nodes, "after {:?}", start.elapsed());
        let worker = json(&kc, &["get", "node", "worker-1"]);
        assert_ne!(worker["spec"]["unschedulable"], true, "{worker}");
        let conversion_jobs = kubectl(
            &kc,
            &[
                "get",
                "jobs",
                "-A",
                "-l",
                "openyurt.io/conversion-node",
                "-o",
                "name",
            ],
        );
        assert_eq!(conversion_jobs.trim(), "", "upstream's conversion Jobs");
        for n in nodes {
            let lease = json(&kc, &["-n", "kube-node-lease", "get", "lease", n]);
            let renewed = lease["spec"]["renewTime"].as_str().unwrap().to_string();
            let age = chrono_age(&renewed);
            assert!(
                age < Duration::from_secs(40),
                "{n}'s lease renewed {age:?} ago"
            );
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }

    // its liveness probe (/healthz, from 60 s on, every 10 s) never failed three times
    let manager = real::yurt_manager_pods(&kc);
    assert_eq!(
        manager["items"][0]["status"]["containerStatuses"][0]["restartCount"], 0,
        "{manager}"
    );
    let (ok, out) = tokio::task::block_in_place(|| yurtctl(&kc, &["status"]));
    assert!(ok, "yurtctl status:\n{out}");
    assert!(
        out.contains("yurt-manager's yurt-node-conversion-controller is off"),
        "{out}"
    );
    for n in nodes {
        let line = out
            .lines()
            .find(|l| l.starts_with(n))
            .unwrap_or_else(|| panic!("{n} in:\n{out}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&cols[3..7], ["yes", "v1.7.0", "service", "yes"], "{line}");
    }

    // revert finishes exactly on worker-1 too, whose NodePool label the user removed
    let (ok, out) = tokio::task::block_in_place(|| yurtctl(&kc, &["revert", "-y"]));
    assert!(ok, "yurtctl revert -y:\n{out}");
    assert!(out.contains("reverted 3 node(s)"), "{out}");
    for n in nodes {
        assert_eq!(
            kubelet_server(&sim.node_root(n)),
            "https://10.0.0.1:6443",
            "node {n}"
        );
    }
    assert_eq!(ready_nodes(&kc), nodes);
    let crds = kubectl(&kc, &["get", "crd", "-o", "name"]);
    assert!(!crds.contains("openyurt.io"), "{crds}");
    let deploys = kubectl(&kc, &["get", "deployments", "-A", "-o", "name"]);
    assert!(!deploys.contains("yurt-manager"), "{deploys}");
    assert_eq!(yurtctl_leftovers(&kc), Vec::<String>::new());
    // yurt-manager's pod ends with its Deployment (the real garbage collector)
    let start = Instant::now();
    loop {
        let pods = kubectl(&kc, &["-n", "kube-system", "get", "pods", "-o", "name"]);
        if !pods.contains("yurt-manager") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{pods}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // and the Lease its leader election wrote goes with it
    let leases = kubectl(&kc, &["-n", "kube-system", "get", "leases", "-o", "name"]);
    assert!(!leases.contains("cloud-yurt-manager"), "{leases}");
    // so do YurtHub's certificate requests (its client certificate's and its serving one's)
    let csrs = kubectl(&kc, &["get", "csr", "-o", "name"]);
    assert_eq!(csrs.trim(), "", "CertificateSigningRequests left by revert");
    sim.shutdown().await;
}

/// yurtctl's Jobs and their pods still in the cluster.
fn yurtctl_leftovers(kubeconfig: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for kind in ["jobs", "pods"] {
        let list = json(kubeconfig, &["get", kind, "-A"]);
        for o in list["items"].as_array().unwrap() {
            let name = o["metadata"]["name"].as_str().unwrap();
            if name.starts_with("yurtctl-") {
                left.push(format!("{kind}/{name}"));
            }
        }
    }
    left
}

/// How long ago an RFC 3339 time with microseconds (a Lease's renewTime) was.
fn chrono_age(t: &str) -> Duration {
    let out = Command::new("date")
        .args(["-u", "-d", t, "+%s.%N"])
        .output()
        .unwrap();
    let then: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    Duration::from_secs_f64((now - then).max(0.0))
}
