//! Shared helpers for yurtsim's integration tests: start a cluster in a temp dir and get a
//! kube-rs client for it.
#![allow(dead_code)]

pub mod chart;
pub mod hub;

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use yurtsim::{Layout, Sim, SimConfig};

pub struct TestCluster {
    pub sim: Sim,
    pub client: Client,
    pub dir: tempfile::TempDir,
}

pub async fn start(nodes: usize, layout: Layout) -> TestCluster {
    start_with(nodes, layout, |_| {}).await
}

pub async fn start_with(
    nodes: usize,
    layout: Layout,
    tweak: impl FnOnce(&mut SimConfig),
) -> TestCluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = SimConfig::for_tests(dir.path().join("state"));
    cfg.nodes = nodes;
    cfg.layout = layout;
    tweak(&mut cfg);
    let sim = Sim::start(cfg).await.expect("sim starts");
    let client = client_for(&sim).await;
    TestCluster { sim, client, dir }
}

/// Starts the real tier: the control plane of Kubernetes `version`, built by
/// tests/real/build.sh on first use (later runs reuse it), and the nodes' kubelets against it.
pub async fn start_real(nodes: usize, layout: Layout, version: &str) -> TestCluster {
    let v = version.to_string();
    tokio::task::spawn_blocking(move || yurtsim::real::ensure_built(&[&v]))
        .await
        .expect("build task")
        .expect("the real tier builds (tests/real/build.sh)");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = SimConfig::new(dir.path().join("state"));
    cfg.nodes = nodes;
    cfg.layout = layout;
    cfg.apiserver = yurtsim::real::ApiServerKind::Real;
    cfg.kubernetes_version = version.to_string();
    let sim = Sim::start(cfg)
        .await
        .expect("the real control plane starts");
    let client = client_for(&sim).await;
    TestCluster { sim, client, dir }
}

/// `kubectl --kubeconfig KUBECONFIG ARGS…`: whether it succeeded, its stdout and its stderr.
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub async fn client_for(sim: &Sim) -> Client {
    let kc = Kubeconfig::read_from(sim.kubeconfig_path()).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig usable");
    Client::try_from(config).expect("client")
}

/// Polls `f` until it returns Some, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every file under `root` with its bytes, for before/after comparisons of node roots. The sim's
/// own log of systemctl calls (`var/log/yurtsim/`) is left out: it is documented sim output.
pub fn snapshot(root: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == "var/log/yurtsim" {
                continue;
            }
            if md.is_dir() {
                stack.push(p);
            } else if md.file_type().is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .display()
                        .to_string()
                        .into_bytes(),
                );
            } else if std::os::unix::fs::FileTypeExt::is_socket(&md.file_type()) {
                // The runtime's CRI socket: a socket, not file contents.
                out.insert(rel, b"<socket>".to_vec());
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Asserts two snapshots are equal, naming the files that differ (not dumping their bytes).
pub fn assert_same_tree(
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    after: &std::collections::BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    let mut diffs = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => diffs.push(format!("removed {k}")),
            Some(a) if a != v => diffs.push(format!("changed {k}")),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        diffs.push(format!("added {k}"));
    }
    assert!(diffs.is_empty(), "{what}: {}", diffs.join(", "));
}

/// Server-side applies `objects` as the admin, in order; a CRD applied a moment ago is served
/// after a short while, so each apply is retried for up to 5 s.
pub async fn apply(client: &Client, objects: &[serde_json::Value]) {
    use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
    for o in objects {
        let gvk = kube::core::GroupVersionKind::try_from(
            &serde_json::from_value::<kube::core::TypeMeta>(o.clone()).unwrap(),
        )
        .unwrap();
        let plural = match o["kind"].as_str().unwrap() {
            "ServiceAccount" => "serviceaccounts",
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            "Secret" => "secrets",
            "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
            "ValidatingWebhookConfiguration" => "validatingwebhookconfigurations",
            "CustomResourceDefinition" => "customresourcedefinitions",
            "ConfigMap" => "configmaps",
            "NodePool" => "nodepools",
            "YurtStaticSet" => "yurtstaticsets",
            "Pod" => "pods",
            "Role" => "roles",
            "RoleBinding" => "rolebindings",
            "Service" => "services",
            "Deployment" => "deployments",
            "DaemonSet" => "daemonsets",
            "Node" => "nodes",
            k => panic!("add {k}"),
        };
        let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
        let api: Api<DynamicObject> = match o["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        let obj: DynamicObject = serde_json::from_value(o.clone()).unwrap();
        let name = o["metadata"]["name"].as_str().unwrap();
        let mut done = false;
        for _ in 0..50 {
            let patch = Patch::Apply(&obj);
            if api
                .patch(name, &PatchParams::apply("test").force(), &patch)
                .await
                .is_ok()
            {
                done = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(done, "apply {name}");
    }
}
