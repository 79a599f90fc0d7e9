//! The real tier (tests/real, built on first use): a cluster on the real control plane, and
//! yurtctl and kubectl run against it as a user would.

use std::path::{Path, PathBuf};
use std::process::Command;

use yurtsim::{Layout, Sim, SimConfig};

/// A kubeadm-layout cluster of `nodes` nodes on the real control plane of `version`, built
/// first with `extra` (e.g. `openyurt-v1.7.0`); node Jobs run this crate's yurtctl.
pub async fn cluster(
    dir: &Path,
    nodes: usize,
    version: &'static str,
    extra: &[&'static str],
) -> Sim {
    cluster_with(dir, nodes, version, extra, |_| {}).await
}

/// [`cluster`], with `tweak` adjusting the config before start (the nodes' timings).
pub async fn cluster_with(
    dir: &Path,
    nodes: usize,
    version: &'static str,
    extra: &[&'static str],
    tweak: impl FnOnce(&mut SimConfig),
) -> Sim {
    let mut builds = vec![version];
    builds.extend_from_slice(extra);
    tokio::task::spawn_blocking(move || yurtsim::real::ensure_built(&builds))
        .await
        .unwrap()
        .expect("the real tier builds (tests/real/build.sh)");
    let mut cfg = SimConfig::new(dir.join("state"));
    cfg.nodes = nodes;
    cfg.layout = Layout::Kubeadm;
    cfg.apiserver = yurtsim::real::ApiServerKind::Real;
    cfg.kubernetes_version = version.into();
    cfg.yurtctl = Some(PathBuf::from(env!("CARGO_BIN_EXE_yurtctl")));
    tweak(&mut cfg);
    Sim::start(cfg)
        .await
        .expect("the real control plane starts")
}

/// A cluster of `nodes` nodes on the newest real control plane, with OpenYurt v1.7.0 built.
pub async fn openyurt_cluster(dir: &Path, nodes: usize) -> Sim {
    cluster(
        dir,
        nodes,
        yurtsim::real::NEWEST_KUBERNETES,
        &["openyurt-v1.7.0"],
    )
    .await
}

/// [`openyurt_cluster`] of `nodes` nodes with a kube-rs client: the real tier of the scenario
/// suites, for the scenarios that need none of the sim's fault controls.
pub async fn env(nodes: usize) -> super::Cluster {
    env_with(nodes, |_| {}).await
}

/// [`env`], with `tweak` adjusting the config before start (the nodes' timings).
pub async fn env_with(nodes: usize, tweak: impl FnOnce(&mut SimConfig)) -> super::Cluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = cluster_with(
        dir.path(),
        nodes,
        yurtsim::real::NEWEST_KUBERNETES,
        &["openyurt-v1.7.0"],
        tweak,
    )
    .await;
    let client = super::kube_client(&sim).await;
    super::Cluster { sim, client, dir }
}

/// [`openyurt_cluster`], converted by `yurtctl convert -y`.
pub async fn converted_cluster(dir: &Path, nodes: usize) -> Sim {
    let sim = openyurt_cluster(dir, nodes).await;
    let kc = sim.kubeconfig_path();
    let (code, out) = tokio::task::block_in_place(|| yurtctl(&kc, &["convert", "-y"]));
    assert_eq!(code, 0, "yurtctl convert -y:\n{out}");
    sim
}

/// `yurtctl --kubeconfig KUBECONFIG ARGS…`: its exit code and its stdout then stderr.
pub fn yurtctl(kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `kubectl … -o json`, parsed.
pub fn kubectl_json(kubeconfig: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["-o", "json"]);
    serde_json::from_str(&super::kubectl(kubeconfig, &a)).unwrap()
}

/// yurt-manager's pods in kube-system, as `kubectl get -o json` lists them.
pub fn yurt_manager_pods(kubeconfig: &Path) -> serde_json::Value {
    kubectl_json(
        kubeconfig,
        &[
            "-n",
            "kube-system",
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=yurt-manager",
        ],
    )
}

/// `kubectl create -f -` with `object` (JSON or YAML) on stdin.
pub fn kubectl_create(kubeconfig: &Path, object: &str) -> serde_json::Value {
    try_kubectl_create(kubeconfig, object).unwrap_or_else(|e| panic!("kubectl create: {e}"))
}

fn try_kubectl_create(kubeconfig: &Path, object: &str) -> Result<serde_json::Value, String> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["create", "-o", "json", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}
