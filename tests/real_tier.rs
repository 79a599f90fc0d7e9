//! yurtctl against the real tier's kube-apiserver (tests/real, built on first use): the
//! credentials kubectl users have, and what only a real API server can judge — every object
//! a conversion writes passes its validation, admission and authorization (server-side dry
//! run), for every profile.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{kubectl, real};
use yurtsim::Sim;

async fn real_cluster(dir: &Path, nodes: usize) -> Sim {
    real_cluster_of(dir, nodes, yurtsim::real::NEWEST_KUBERNETES).await
}

async fn real_cluster_of(dir: &Path, nodes: usize, version: &'static str) -> Sim {
    real::cluster(dir, nodes, version, &[]).await
}

/// The admin kubeconfig with its user replaced by `user` (YAML lines under `user:`).
fn kubeconfig_with_user(admin: &Path, user: &str) -> String {
    let text = std::fs::read_to_string(admin).unwrap();
    let at = text
        .find("    client-certificate-data:")
        .expect("admin.conf layout");
    format!("{}{user}", &text[..at])
}

/// ServiceAccount `kube-system/NAME` bound to ClusterRole `role`: a kubeconfig in `dir` with
/// its token from TokenRequest, and the token.
fn service_account_kubeconfig(
    admin: &Path,
    dir: &Path,
    name: &str,
    role: &str,
) -> (PathBuf, String) {
    kubectl(
        admin,
        &["-n", "kube-system", "create", "serviceaccount", name],
    );
    kubectl(
        admin,
        &[
            "create",
            "clusterrolebinding",
            name,
            &format!("--clusterrole={role}"),
            &format!("--serviceaccount=kube-system:{name}"),
        ],
    );
    let token = kubectl(admin, &["-n", "kube-system", "create", "token", name]);
    let token = token.trim().to_string();
    let path = dir.join(format!("{name}.conf"));
    std::fs::write(
        &path,
        kubeconfig_with_user(admin, &format!("    token: {token}\n")),
    )
    .unwrap();
    (path, token)
}

/// Runs `yurtctl convert --dry-run=server` and returns (accepted, total) writes.
fn server_dry_run(kubeconfig: &Path, profile: &str) -> (usize, usize) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_yurtctl"));
    cmd.arg("--kubeconfig").arg(kubeconfig).args([
        "convert",
        "--dry-run=server",
        "--profile",
        profile,
        "-y",
    ]);
    if profile != "openyurt-v1.7" {
        // the older profiles stop at 1.30 and 1.21; this is the newest release
        cmd.arg("--ignore-preflight-errors=KubernetesVersion");
    }
    let out = cmd.env("NO_COLOR", "1").output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "yurtctl convert --dry-run=server:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("server dry run: "))
        .unwrap_or_else(|| panic!("no server dry run summary in:\n{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[3].parse().unwrap(), words[5].parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurtctl_authenticates_with_a_client_certificate_a_bearer_token_and_an_exec_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real_cluster(dir.path(), 3).await;
    let admin = sim.kubeconfig_path();

    // a bearer token: a ServiceAccount bound to cluster-admin, its token from TokenRequest
    let (bearer, token) =
        service_account_kubeconfig(&admin, dir.path(), "ci-admin", "cluster-admin");

    // an exec credential plugin handing out the same token (client.authentication.k8s.io/v1)
    let plugin = dir.path().join("credential-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$CI_TOKEN\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exec = dir.path().join("exec.conf");
    std::fs::write(
        &exec,
        kubeconfig_with_user(
            &admin,
            &format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      env:\n      - name: CI_TOKEN\n        value: {token}\n      interactiveMode: Never\n",
                plugin.display()
            ),
        ),
    )
    .unwrap();

    for (what, kubeconfig) in [
        ("client certificate", admin.clone()),
        ("bearer token", bearer),
        ("exec plugin", exec),
    ] {
        let (accepted, total) = server_dry_run(&kubeconfig, "openyurt-v1.7");
        assert!(total > 50, "{what}: only {total} writes");
        assert_eq!(
            accepted, total,
            "{what}: the real API server rejected writes"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_profile_passes_the_real_api_servers_validation_and_admission() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real_cluster(dir.path(), 3).await;
    for profile in ["openyurt-v1.7", "openyurt-v1.6", "legacy-v0.6"] {
        let (accepted, total) = server_dry_run(&sim.kubeconfig_path(), profile);
        assert!(total > 10, "{profile}: only {total} writes");
        assert_eq!(
            accepted, total,
            "{profile}: the real API server rejected writes"
        );
    }
    sim.shutdown().await;
}

/// `yurtctl convert --dry-run` with the default flags: (exit code, plan text).
fn default_dry_run(kubeconfig: &Path) -> (i32, String) {
    real::yurtctl(kubeconfig, &["convert", "--dry-run"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_release_converts_by_default_with_a_warning_and_1_34_without() {
    let dir = tempfile::tempdir().unwrap();
    let newest = real_cluster(&dir.path().join("newest"), 2).await;
    let (code, text) = default_dry_run(&newest.kubeconfig_path());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "warn   cluster                      [KubernetesVersion] Kubernetes v1.37.2 (1.37) is \
             newer than OpenYurt v1.7.0 certifies (1.31-1.34)"
        ),
        "{text}"
    );
    assert!(
        !text.contains("ignored: --ignore-preflight-errors"),
        "{text}"
    );
    newest.shutdown().await;

    let certified = real_cluster_of(&dir.path().join("certified"), 2, "v1.34.4").await;
    let (code, text) = default_dry_run(&certified.kubeconfig_path());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Kubernetes v1.34.4 is supported by profile openyurt-v1.7"),
        "{text}"
    );
    assert!(!text.contains("warn "), "{text}");
    certified.shutdown().await;
}

/// A node Job that fails on the real tier shows its pod's log: the real API server reads
/// `pods/log` from the node's kubelet server (`:10250`, docs/yurtsim.md). A worker whose
/// kubelet lost its kubeadm drop-in (a standalone kubelet) fails convert's node-side preflight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_node_jobs_log_excerpt_comes_from_the_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real_cluster(dir.path(), 2).await;
    let dropin = sim
        .node_root("worker-1")
        .join("etc/systemd/system/kubelet.service.d/10-kubeadm.conf");
    std::fs::remove_file(&dropin).unwrap();
    let (code, text) =
        tokio::task::block_in_place(|| real::yurtctl(&sim.kubeconfig_path(), &["convert", "-y"]));
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("  log of pod yurtctl-preflight-worker-1-")
            && text.contains("    |  WARN problem: the kubelet's effective flags do not allow a redirect: the kubelet has no --kubeconfig at all"),
        "{text}"
    );
    assert!(!text.contains("logs unavailable"), "{text}");
    sim.shutdown().await;
}

/// An operator whose ClusterRole lets them read everything and write only namespaced config
/// (ConfigMaps, Secrets, ServiceAccounts, Services, Leases): the real RBAC authorizer answers
/// yurtctl's access reviews, convert names every missing permission in preflight and exits 3,
/// and nothing is written: no label, no journal, and the lock it took is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_real_rbac_denies_fails_preflight_naming_what_is_missing_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real_cluster(dir.path(), 2).await;
    let admin = sim.kubeconfig_path();
    tokio::task::block_in_place(|| {
        real::kubectl_create(
            &admin,
            r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "config-operator"},
                "rules": [
                  {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
                  {"apiGroups": [""], "resources": ["configmaps", "secrets", "serviceaccounts", "services"],
                   "verbs": ["create", "update", "patch", "delete"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["create", "update", "patch", "delete"]}]}"#,
        )
    });
    let (operator, _) =
        service_account_kubeconfig(&admin, dir.path(), "operator", "config-operator");

    let (code, text) = tokio::task::block_in_place(|| real::yurtctl(&operator, &["convert", "-y"]));
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("[preflight]"), "{text}");
    for missing in [
        "not allowed to create jobs.batch in kube-system",
        "not allowed to patch nodes",
        "not allowed to patch customresourcedefinitions.apiextensions.k8s.io",
        "not allowed to patch deployments.apps in kube-system",
        "not allowed to patch mutatingwebhookconfigurations.admissionregistration.k8s.io",
    ] {
        assert!(text.contains(missing), "{missing}:\n{text}");
    }
    let nodes = real::kubectl_json(&admin, &["get", "nodes"]);
    for n in nodes["items"].as_array().unwrap() {
        assert!(
            n["metadata"]["labels"]["openyurt.io/is-edge-worker"].is_null(),
            "{n}"
        );
    }
    let left = kubectl(
        &admin,
        &[
            "-n",
            "kube-system",
            "get",
            "configmaps,leases",
            "-o",
            "name",
        ],
    );
    assert!(!left.contains("yurtctl-"), "{left}");
    sim.shutdown().await;
}
