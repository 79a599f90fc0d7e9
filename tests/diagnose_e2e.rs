//! `yurtctl diagnose` end to end on yurtsim: each problem is caused on purpose in a converted
//! cluster, and diagnose reports it with its severity, what it saw and the fix; errors exit 7,
//! warnings alone 0. (What cannot be caused quickly here — a request waiting 5 minutes — is
//! covered by the planner's table, `src/plan/diagnose_tests.rs`.)

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use support::{Cluster as Env, Run};
use yurtsim::Layout;

async fn convert(env: &Env) -> Run {
    convert_with(env, &[]).await
}

async fn convert_with(env: &Env, extra: &[&str]) -> Run {
    let mut args = vec![
        "convert",
        "-y",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
    ];
    args.extend_from_slice(extra);
    support::yurtctl(&env.sim, &args).await
}

async fn convert_legacy(env: &Env) -> Run {
    support::yurtctl(
        &env.sim,
        &[
            "convert",
            "--profile",
            "legacy-v0.6",
            "-y",
            "--servant-image",
            "openyurt/yurtctl:test",
            "--job-timeout",
            "60s",
        ],
    )
    .await
}

async fn diagnose(env: &Env, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["diagnose", "-o", "json"];
    args.extend_from_slice(extra);
    let run = support::yurtctl(&env.sim, &args).await;
    (run.code, run.json())
}

/// Runs diagnose until `done` says its (exit code, result) is the one awaited (the cluster
/// takes a moment to show what a test broke or fixed); returns that result.
async fn diagnose_until(env: &Env, done: impl Fn(i32, &Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (code, r) = diagnose(env, &[]).await;
        if done(code, &r) {
            return r;
        }
        assert!(tokio::time::Instant::now() < deadline, "exit {code}: {r:#}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A convert whose node Job fails on the first worker (exit 4); returns that worker.
async fn failed_convert(env: &Env) -> String {
    let worker = support::first_worker(&env.sim);
    env.sim
        .faults()
        .fail_jobs_named(&worker, &["yurtctl-convert-"], 1);
    assert_eq!(convert(env).await.code, 4);
    worker
}

/// The findings as (severity, check, subject), and the whole of each for messages.
fn findings(r: &Value) -> Vec<(String, String, String)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_owned();
            assert!(!s("evidence").is_empty() && !s("fix").is_empty(), "{f:#}");
            (s("severity"), s("check"), s("subject"))
        })
        .collect()
}

/// The one archive `--collect DIR` wrote into `dir`.
fn the_archive(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
}

/// `nodes/NODE/yurthub.log` from a `--collect` archive.
fn node_yurthub_log(archive: &std::path::Path, node: &str) -> String {
    let read = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(archive)
        .arg("--wildcards")
        .arg(format!("*/nodes/{node}/yurthub.log"))
        .output()
        .unwrap();
    assert!(read.status.success(), "{node}: {read:?}");
    String::from_utf8_lossy(&read.stdout).into_owned()
}

fn has(r: &Value, severity: &str, check: &str, subject: &str) -> bool {
    findings(r)
        .iter()
        .any(|(s, c, x)| s == severity && c == check && x == subject)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_healthy_cluster_passes_and_yurt_manager_down_is_an_error_with_its_fix() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.33.1").await;
    let before = support::yurtctl(&env.sim, &["diagnose"]).await;
    assert_eq!(before.code, 0, "{}", before.stderr);
    assert!(
        before.stdout.contains("no problem found"),
        "{}",
        before.stdout
    );
    assert_eq!(convert(&env).await.code, 0);
    let (code, r) = diagnose(&env, &[]).await;
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(r["kind"], "DiagnoseResult");
    assert_eq!(r["profile"], "openyurt-v1.7");
    assert_eq!(findings(&r), [], "{r:#}");
    assert!(r["checks"].as_array().unwrap().len() >= 6, "{r:#}");

    // yurt-manager scaled to nothing: no approver, no webhook endpoint
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), "kube-system");
    deployments
        .patch(
            "yurt-manager",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .unwrap();
    let r = diagnose_until(&env, |code, _| code == 7).await;
    assert!(
        has(
            &r,
            "error",
            "YurtManager",
            "deployment/kube-system/yurt-manager"
        ),
        "{r:#}"
    );
    let text = support::yurtctl(&env.sim, &["diagnose"]).await;
    assert_eq!(text.code, 7);
    assert!(
        text.stdout.contains("error   YurtManager")
            && text.stdout.contains("seen: scaled to 0 replicas")
            && text.stdout.contains("fix:  no controller approves"),
        "{}",
        text.stdout
    );
    let bad = support::yurtctl(&env.sim, &["diagnose", "ghost"]).await;
    assert_eq!(bad.code, 3, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("node ghost does not exist"),
        "{}",
        bad.stderr
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_convert_leaves_an_unfinished_journal_and_its_job() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.33.1").await;
    let worker = failed_convert(&env).await;
    let (code, r) = diagnose(&env, &[]).await;
    assert_eq!(code, 7, "{r:#}");
    assert!(
        has(
            &r,
            "error",
            "Leftovers",
            "configmap/kube-system/yurtctl-state"
        ),
        "{r:#}"
    );
    let journal = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["subject"] == "configmap/kube-system/yurtctl-state")
        .unwrap();
    assert!(
        journal["evidence"].as_str().unwrap().contains(&worker)
            && journal["fix"].as_str().unwrap().contains("yurtctl convert"),
        "{journal:#}"
    );
    // the fix works: with the fault gone, convert finishes and nothing is left
    env.sim.faults().clear_failing_jobs(&worker);
    assert_eq!(convert(&env).await.code, 0);
    let (code, r) = diagnose(&env, &[]).await;
    assert_eq!((code, findings(&r)), (0, vec![]), "{r:#}");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_bootstrap_token_is_a_warning_and_exits_0() {
    let env = support::cluster(2, Layout::Kubeadm, "v1.33.1").await;
    assert_eq!(convert(&env).await.code, 0);
    let state = support::journal_state(&env.client).await.unwrap();
    let id = state["tokenId"].as_str().unwrap().to_owned();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "kube-system");
    secrets
        .patch(
            &format!("bootstrap-token-{id}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"expiration": "2020-01-01T00:00:00Z"}})),
        )
        .await
        .unwrap();
    let (code, r) = diagnose(&env, &[]).await;
    assert_eq!(code, 0, "warnings alone exit 0: {r:#}");
    let subject = format!("secret/kube-system/bootstrap-token-{id}");
    assert!(has(&r, "warning", "BootstrapToken", &subject), "{r:#}");
    env.sim.shutdown().await;
}

/// legacy-v0.6 replaces kube-controller-manager's nodelifecycle with its own controller: a
/// manifest rewritten without `-nodelifecycle` (as a kubeadm upgrade rewrites it) is an error,
/// and convert's fix holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodelifecycle_running_again_under_legacy_is_an_error() {
    let env = support::cluster(2, Layout::Kubeadm, "v1.20.15").await;
    assert_eq!(convert_legacy(&env).await.code, 0);
    let (code, r) = diagnose(&env, &[]).await;
    assert_eq!((code, findings(&r)), (0, vec![]), "{r:#}");
    let cp = env
        .sim
        .node_names()
        .into_iter()
        .find(|n| !n.starts_with("worker"))
        .unwrap();
    let manifest = env
        .sim
        .node_root(&cp)
        .join("etc/kubernetes/manifests/kube-controller-manager.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let on = text
        .replace(",-nodelifecycle", "")
        .replace("-nodelifecycle,", "");
    assert_ne!(on, text, "convert disabled nodelifecycle: {text}");
    std::fs::write(&manifest, on).unwrap();
    let subject = format!("pod/kube-system/kube-controller-manager-{cp}");
    diagnose_until(&env, |code, r| {
        code == 7 && has(r, "error", "KubeControllerManager", &subject)
    })
    .await;
    assert_eq!(convert_legacy(&env).await.code, 0);
    diagnose_until(&env, |code, _| code == 0).await;
    env.sim.shutdown().await;
}

/// `--collect DIR` writes one .tar.gz with what a bug report needs, and no secret: a bootstrap
/// token and a ServiceAccount token planted in an event's message come out redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn collect_writes_one_archive_with_the_secrets_redacted() {
    let env = support::cluster(2, Layout::Kubeadm, "v1.33.1").await;
    let worker = failed_convert(&env).await;
    let token = "plnted.0123456789abcdef";
    let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJwbGFudGVkIn0.c2lnbmF0dXJlX3BsYW50ZWQ";
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client.clone(), "kube-system");
    let planted = serde_json::from_value(json!({
        "metadata": {"name": "planted"},
        "involvedObject": {"kind": "Node", "name": worker},
        "reason": "Planted",
        "type": "Warning",
        "message": format!("joined with --token {token}, then as Bearer {jwt}"),
    }))
    .unwrap();
    events.create(&Default::default(), &planted).await.unwrap();

    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("report");
    let dir_arg = dir.display().to_string();
    let run = support::yurtctl(&env.sim, &["diagnose", "--collect", &dir_arg]).await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        run.stderr.contains("secrets and tokens redacted"),
        "{}",
        run.stderr
    );
    let archives: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(archives.len(), 1);
    let archive = archives[0].path();
    assert!(
        archive.to_string_lossy().ends_with(".tar.gz"),
        "{archive:?}"
    );
    let unpacked = out.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success());
    let top = std::fs::read_dir(&unpacked)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut files = Vec::new();
    let mut stack = vec![top.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(&top).unwrap().display().to_string();
                files.push((rel, std::fs::read_to_string(e.path()).unwrap()));
            }
        }
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "diagnose.json",
        "versions.json",
        "events.txt",
        "journal/yurtctl-state.json",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert!(
        names.iter().any(|n| n.starts_with("jobs/yurtctl-convert-")),
        "the failed node Job's pod log: {names:?}"
    );
    for (name, text) in &files {
        assert!(
            !text.contains(token) && !text.contains(jwt),
            "{name} holds a secret:\n{text}"
        );
    }
    let events = &files.iter().find(|(n, _)| n == "events.txt").unwrap().1;
    assert!(
        events.contains("Warning Planted Node/") && events.contains("--token <redacted>"),
        "{events}"
    );
    let d: Value =
        serde_json::from_str(&files.iter().find(|(n, _)| n == "diagnose.json").unwrap().1).unwrap();
    assert_eq!(d["kind"], "DiagnoseResult");
    // a file where the directory should be is refused before the cluster is contacted
    let file = out.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let bad = support::yurtctl(
        &env.sim,
        &["diagnose", "--collect", &file.display().to_string()],
    )
    .await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("it is a file, not a directory"),
        "{}",
        bad.stderr
    );
    env.sim.shutdown().await;
}

/// With YurtHub as a static pod (`openyurt-v1.6`), `--collect` carries each named node's
/// YurtHub log, which the node's read-only Job reads from the container runtime (`crictl ps
/// -a`, `crictl logs --tail 200`), redacted like every file: a join token planted in one
/// node's YurtHub log (as YurtHub's `FLAG:` lines would print it) is not in the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn collect_carries_the_static_pod_yurthubs_log_redacted() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.30.2").await;
    let run = convert_with(&env, &["--profile", "openyurt-v1.6"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let nodes = env.sim.node_names();
    let w = support::first_worker(&env.sim);
    let token = "plnted.0123456789abcdef";
    let hub = env
        .sim
        .containers(&w)
        .into_iter()
        .find(|c| c.name == "yurt-hub" && c.running())
        .expect("YurtHub's static pod runs in the node's runtime");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&hub.log_path)
            .unwrap();
        writeln!(
            f,
            "I1129 17:00:00.000000       1 start.go:0] FLAG: --join-token=\"{token}\""
        )
        .unwrap();
    }

    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();
    let mut args = vec!["diagnose"];
    args.extend(nodes.iter().map(String::as_str));
    args.extend(["--collect", dir.as_str()]);
    let run = support::yurtctl(&env.sim, &args).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let archive = the_archive(out.path());
    let all = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(all.status.success(), "{all:?}");
    assert!(
        !String::from_utf8_lossy(&all.stdout).contains(token),
        "the planted token is in the archive"
    );
    for node in &nodes {
        let log = node_yurthub_log(&archive, node);
        assert!(
            log.contains("yurthub is ready"),
            "{node}'s YurtHub log: {log}"
        );
        assert_eq!(
            log.contains("FLAG: --join-token=\"<redacted>\""),
            *node == w,
            "{node}'s YurtHub log: {log}"
        );
    }
    env.sim.shutdown().await;
}

/// A YurtHub certificate request someone denied, and a converted node gone NotReady, are
/// errors naming the request and the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_denied_yurthub_request_and_a_notready_node_are_errors() {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let env = support::cluster(2, Layout::Kubeadm, "v1.33.1").await;
    assert_eq!(convert(&env).await.code, 0);
    let worker = support::first_worker(&env.sim);
    // a request as YurtHub makes its first one: with convert's bootstrap token (the API server
    // sets the requester, system:bootstrap:<id>)
    let state = support::journal_state(&env.client).await.unwrap();
    let id = state["tokenId"].as_str().unwrap().to_owned();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "kube-system");
    let secret = secrets.get(&format!("bootstrap-token-{id}")).await.unwrap();
    let part = |k: &str| String::from_utf8(secret.data.as_ref().unwrap()[k].0.clone()).unwrap();
    let token = format!("{}.{}", part("token-id"), part("token-secret"));
    let mut config = kube::Config::new(env.sim.url().parse().unwrap());
    config.auth_info.token = Some(token.into());
    let as_bootstrap = kube::Client::try_from(config).unwrap();
    let request = serde_json::from_value(json!({
        "metadata": {"name": "yurthub-denied"},
        "spec": {
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["digital signature", "key encipherment", "client auth"],
        }
    }))
    .unwrap();
    let as_hub: Api<CertificateSigningRequest> = Api::all(as_bootstrap);
    as_hub.create(&Default::default(), &request).await.unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(env.client.clone());
    let denied = json!({"status": {"conditions": [{
        "type": "Denied", "status": "True", "reason": "Test", "message": "denied by the test"
    }]}});
    csrs.patch_approval(
        "yurthub-denied",
        &PatchParams::default(),
        &Patch::Merge(denied),
    )
    .await
    .unwrap();
    env.sim.set_node_ready(&worker, false).unwrap();
    let node = format!("node/{worker}");
    let r = diagnose_until(&env, |code, r| {
        code == 7 && has(r, "error", "NodeReady", &node)
    })
    .await;
    assert!(
        has(
            &r,
            "error",
            "YurtHubCertificates",
            "certificatesigningrequest/yurthub-denied"
        ),
        "{r:#}"
    );
    // NODE narrows the node checks: the control plane is Ready, so nothing of it is said
    let cp = env
        .sim
        .node_names()
        .into_iter()
        .find(|n| *n != worker)
        .unwrap();
    let (_, only) = diagnose(&env, &[&cp]).await;
    assert!(
        !has(&only, "error", "NodeReady", &format!("node/{worker}")),
        "{only:#}"
    );
    env.sim.shutdown().await;
}

/// Issue 34's node checks: a named node's files are read by a read-only Job, deleted
/// afterwards. A healthy converted node has no finding; then another CA in YurtHub's pki (the
/// cluster's CA changed after convert), the kubelet's kubeconfig pointed around YurtHub, and
/// YurtHub's unit removed each show, with their severity and fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_named_nodes_files_show_another_ca_the_kubelet_around_yurthub_and_no_yurthub() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.33.1").await;
    assert_eq!(convert(&env).await.code, 0);
    let w = support::first_worker(&env.sim);
    let subject = format!("node/{w}");
    let node_findings = |r: &Value| -> Vec<(String, String)> {
        findings(r)
            .into_iter()
            .filter(|(_, _, s)| *s == subject)
            .map(|(sev, check, _)| (sev, check))
            .collect()
    };
    let (code, r) = diagnose(&env, &[&w]).await;
    assert_eq!(code, 0, "{r:#}");
    assert!(
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "NodeTrust"),
        "{r:#}"
    );
    assert_eq!(node_findings(&r), [], "a healthy node: {r:#}");
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(env.client.clone(), "kube-system");
    let left = jobs
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .filter(|n| n.contains("diagnose"))
        .collect::<Vec<_>>();
    assert_eq!(left, Vec::<String>::new(), "the read-only Job is deleted");

    // --collect carries YurtHub's journal from the named node
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();
    let run = support::yurtctl(&env.sim, &["diagnose", &w, "--collect", &dir]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let archive = the_archive(out.path());
    let log = node_yurthub_log(&archive, &w);
    assert!(
        !log.trim().is_empty() && !log.starts_with("(journalctl"),
        "YurtHub's journal: {log}"
    );

    let root = env.sim.node_root(&w);
    let other_ca = include_str!("fixtures/cluster-ca.crt");
    // the kubelet's client CA (its config's authentication.x509.clientCAFile) another CA
    let config = std::fs::read_to_string(root.join("var/lib/kubelet/config.yaml")).unwrap();
    let client_ca = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("clientCAFile: "))
        .expect("the kubelet's config names its client CA")
        .trim()
        .to_owned();
    let client_ca = root.join(client_ca.trim_start_matches('/'));
    let kept = std::fs::read(&client_ca).unwrap();
    std::fs::write(&client_ca, other_ca).unwrap();
    let (code, r) = diagnose(&env, &[&w]).await;
    assert_eq!(code, 0, "a warning: {r:#}");
    assert_eq!(
        node_findings(&r),
        [("warning".to_owned(), "NodeTrust".to_owned())],
        "{r:#}"
    );
    assert!(r["findings"].to_string().contains("kubectl logs"), "{r:#}");
    std::fs::write(&client_ca, kept).unwrap();

    std::fs::write(root.join("var/lib/yurthub/pki/ca.crt"), other_ca).unwrap();
    let (code, r) = diagnose(&env, &[&w]).await;
    assert_eq!(code, 7, "{r:#}");
    assert_eq!(
        node_findings(&r),
        [("error".to_owned(), "NodeTrust".to_owned())],
        "{r:#}"
    );
    let text = r["findings"].to_string();
    assert!(text.contains("unknown authority"), "{r:#}");

    let kubeconfig = root.join("var/lib/openyurt/kubelet.conf");
    let was = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(was.contains("http://127.0.0.1:10261"), "{was}");
    std::fs::write(
        &kubeconfig,
        was.replace("http://127.0.0.1:10261", "https://10.96.0.1:443"),
    )
    .unwrap();
    std::fs::remove_file(root.join("etc/systemd/system/yurthub.service")).unwrap();
    let (code, r) = diagnose(&env, &[&w]).await;
    assert_eq!(code, 7, "{r:#}");
    let got = node_findings(&r);
    for want in ["YurtHubOnNode", "KubeletThroughYurtHub", "NodeTrust"] {
        assert!(
            got.iter().any(|(s, c)| s == "error" && c == want),
            "{want}: {r:#}"
        );
    }
    assert!(
        r["findings"].to_string().contains("goes around YurtHub"),
        "{r:#}"
    );
}

/// A workload started before convert and left running (`--skip-workload-restart`) still has
/// the API server's Service address: a named node's check finds it, a warning with the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_started_before_convert_and_not_restarted_is_a_warning() {
    let env = support::cluster(2, Layout::Kubeadm, "v1.33.1").await;
    let w = support::first_worker(&env.sim);
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": w, "containers": [{"name": "web", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), "default")
        .create(&Default::default(), &pod)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while env.sim.container_env(&w, "default", "web", "web").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "web never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let run = convert_with(&env, &["--skip-workload-restart"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (code, r) = diagnose(&env, &[&w]).await;
    assert_eq!(code, 0, "a warning only: {r:#}");
    assert!(
        has(
            &r,
            "warning",
            "WorkloadsThroughYurtHub",
            &format!("node/{w}")
        ),
        "{r:#}"
    );
    let text = r["findings"].to_string();
    assert!(text.contains("default/web/web"), "{r:#}");
}
