//! `yurtctl convert` end to end on yurtsim beyond the default path: the legacy-v0.6 profile
//! (nodelifecycle disabled in kube-controller-manager, YurtHub with a join token, yurt-tunnel),
//! `--dry-run=server`, `--force-unlock`, `--token-ttl` and image overrides.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use yurtsim::Layout;

const HUB_SERVER: &str = "http://127.0.0.1:10261";
const MANAGED: &str = "app.kubernetes.io/managed-by=yurtctl";
const KCM: &str = "etc/kubernetes/manifests/kube-controller-manager.yaml";

use support::{Cluster as Env, Run};

async fn start(version: &str) -> Env {
    support::cluster(3, Layout::Kubeadm, version).await
}

async fn convert(env: &Env, args: &[&str]) -> Run {
    let mut all = vec![
        "convert",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
    ];
    all.extend_from_slice(args);
    support::yurtctl(&env.sim, &all).await
}

async fn kubelet_server(env: &Env, node: &str) -> Option<String> {
    let n = Api::<Node>::all(env.client.clone())
        .get(node)
        .await
        .unwrap();
    n.metadata
        .annotations?
        .get("yurtsim.openyurt.io/kubelet-server")
        .cloned()
}

async fn through_yurthub(env: &Env, node: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while kubelet_server(env, node).await.as_deref() != Some(HUB_SERVER) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{node}'s kubelet does not talk through YurtHub"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn controllers_flag(manifest: &str) -> Option<String> {
    manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("- --controllers="))
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_profile_disables_nodelifecycle_and_joins_with_a_token() {
    let env = start("v1.20.15").await;
    let cp = env.sim.node_root("control-plane-1");
    let kcm_before = std::fs::read_to_string(cp.join(KCM)).unwrap();
    assert!(
        !controllers_flag(&kcm_before).is_some_and(|c| c.contains("nodelifecycle")),
        "{kcm_before}"
    );

    let run = convert(
        &env,
        &[
            "--profile",
            "legacy-v0.6",
            "--deploy-yurttunnel",
            "-y",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert!(
        r["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["result"] == "converted"),
        "{r:#}"
    );
    for w in ["worker-1", "worker-2"] {
        through_yurthub(&env, w).await;
    }

    // kube-controller-manager: `-nodelifecycle` added, nothing else changed
    let kcm_after = std::fs::read_to_string(cp.join(KCM)).unwrap();
    support::assert_only_nodelifecycle_disabled(&kcm_before, &kcm_after);

    // YurtHub v0.6 reads its join token from a 0600 file; the manifest never holds it
    let worker = env.sim.node_root("worker-1");
    let manifest = std::fs::read_to_string(worker.join("etc/kubernetes/manifests/yurt-hub.yaml"))
        .expect("the legacy profile's manifest file name");
    assert!(
        manifest.contains("--join-token=$$(cat /var/lib/yurtctl/yurthub/join-token)"),
        "{manifest}"
    );
    let token_file = worker.join("var/lib/yurtctl/yurthub/join-token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let token = token.trim();
    assert_eq!(token.len(), 23, "id.secret");
    assert!(!manifest.contains(token.split('.').nth(1).unwrap()));

    // the journal records the kcm phase; the optional tunnel was installed
    let state = support::journal_state(&env.client).await.unwrap();
    assert_eq!(state["nodes"]["control-plane-1"]["kcm"]["state"], "done");
    assert_eq!(state["profile"], "legacy-v0.6");
    let ds = Api::<DaemonSet>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels(MANAGED))
        .await
        .unwrap();
    assert!(
        ds.items
            .iter()
            .any(|d| d.metadata.name.as_deref() == Some("yurt-tunnel-agent")),
        "yurt-tunnel-agent"
    );

    // a re-run is a no-op: no Job, kube-controller-manager untouched
    let jobs = env.sim.metrics().count("create", "jobs.batch");
    assert_eq!(
        jobs, 7,
        "3 node preflight Jobs, 3 node Jobs and 1 kube-controller-manager Job"
    );
    let again = convert(
        &env,
        &["--profile", "legacy-v0.6", "--deploy-yurttunnel", "-y"],
    )
    .await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already converted"),
        "{}",
        again.stderr
    );
    assert_eq!(env.sim.metrics().count("create", "jobs.batch"), jobs);
    assert_eq!(std::fs::read_to_string(cp.join(KCM)).unwrap(), kcm_after);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_dry_run_sends_every_write_with_dry_run_and_stores_nothing() {
    let env = start("v1.33.1").await;
    let run = convert(&env, &["--dry-run=server", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let p = run.json();
    assert_eq!(p["kind"], "Plan");
    let writes = p["serverDryRun"].as_array().unwrap();
    let count = |verb: &str| writes.iter().filter(|w| w["verb"] == verb).count();
    let rows = |verb: &str, prefix: &str| {
        writes
            .iter()
            .filter(|w| w["verb"] == verb && w["object"].as_str().unwrap().starts_with(prefix))
            .count()
    };
    assert_eq!(
        rows("create", "Job kube-system/"),
        6,
        "a preflight and a convert Job per node: {writes:#?}"
    );
    // the run lock is taken first and released last, like every write of the run
    assert_eq!(rows("create", "Lease kube-system/yurtctl-lock"), 1);
    assert_eq!(rows("delete", "Lease kube-system/yurtctl-lock"), 1);
    assert_eq!(writes[0]["object"], "Lease kube-system/yurtctl-lock");
    // in the run's order: node preflight Jobs, then labels, then components
    let first = |verb: &str| writes.iter().position(|w| w["verb"] == verb).unwrap();
    assert!(first("patch") < first("apply"), "{writes:#?}");
    assert_eq!(count("patch"), 1);
    assert!(count("apply") > 20, "{writes:#?}");
    // custom resources of a CRD the run installs (the NodePools) cannot be checked before it is
    for w in writes {
        assert!(
            w["result"] == "accepted"
                || (w["result"] == "unchecked"
                    && w["object"].as_str().unwrap().starts_with("NodePool ")
                    && w["message"] == "its kind comes from a CRD this run installs"),
            "{w}"
        );
    }
    // nothing was stored
    let cms = Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels(MANAGED))
        .await
        .unwrap();
    assert!(cms.items.is_empty(), "{:?}", cms.items);
    let jobs = Api::<Job>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(jobs.items.is_empty());
    let w = Api::<Node>::all(env.client.clone())
        .get("worker-1")
        .await
        .unwrap();
    assert!(
        !w.metadata
            .labels
            .unwrap()
            .contains_key("openyurt.io/is-edge-worker")
    );

    // a write the server refuses fails the dry run with exit 3, naming it
    env.sim.faults().deny("create", "jobs.batch");
    let refused = convert(&env, &["--dry-run=server"]).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("Job kube-system/yurtctl-convert-worker-1"),
        "{}",
        refused.stderr
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stale_foreign_lock_is_named_and_force_unlock_takes_it() {
    let env = start("v1.33.1").await;
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), "kube-system");
    let now = k8s_openapi::jiff::Timestamp::now();
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "yurtctl-lock"},
        "spec": {"holderIdentity": "ops-laptop-4711", "leaseDurationSeconds": 3600,
                 "acquireTime": now.to_string(), "renewTime": now.to_string()}
    }))
    .unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();

    let held = convert(&env, &["-y"]).await;
    assert_eq!(held.code, 6, "{}", held.stderr);
    assert!(held.stderr.contains("ops-laptop-4711"), "{}", held.stderr);

    let forced = convert(
        &env,
        &["-y", "--force-unlock", "--token-ttl", "2h", "-o", "json"],
    )
    .await;
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(
        forced.stderr.contains("ops-laptop-4711"),
        "{}",
        forced.stderr
    );
    assert!(
        leases.get_opt("yurtctl-lock").await.unwrap().is_none(),
        "released at the end"
    );

    // the bootstrap token expires --token-ttl after the run
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "kube-system");
    let tokens = secrets
        .list(&ListParams::default().fields("type=bootstrap.kubernetes.io/token"))
        .await
        .unwrap();
    assert_eq!(tokens.items.len(), 1);
    let exp = tokens.items[0].data.as_ref().unwrap()["expiration"]
        .0
        .clone();
    let exp: k8s_openapi::jiff::Timestamp = String::from_utf8(exp).unwrap().parse().unwrap();
    let left = exp.duration_since(k8s_openapi::jiff::Timestamp::now());
    assert!(
        left.as_secs() > 7000 && left.as_secs() <= 7200,
        "expires in {}s",
        left.as_secs()
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn image_overrides_reach_the_manifests_nodes_install() {
    let env = start("v1.30.2").await;
    let hub = "registry.example.com/openyurt/yurthub:v1.6.1-patched";
    let run = convert(
        &env,
        &[
            "--profile",
            "openyurt-v1.6",
            "--image",
            &format!("yurthub={hub}"),
            "--openyurt-version",
            "v1.6.0",
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let p = run.json();
    let objects = p["objects"].as_array().unwrap();
    // yurt-manager renders the nodes' manifest from the YurtStaticSet's template
    let set = objects
        .iter()
        .find(|o| o["kind"] == "YurtStaticSet" && o["metadata"]["name"] == "yurt-hub")
        .unwrap();
    assert_eq!(
        set["spec"]["template"]["spec"]["containers"][0]["image"], hub,
        "{set:#}"
    );
    let manager = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "yurt-manager")
        .unwrap();
    assert_eq!(
        manager["spec"]["template"]["spec"]["containers"][0]["image"],
        "openyurt/yurt-manager:v1.6.0"
    );
    let bad = convert(
        &env,
        &["--profile", "openyurt-v1.6", "--image", "tunnel=x:1", "-y"],
    )
    .await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("tunnel"), "{}", bad.stderr);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_write_errors_and_lost_answers_still_converge_without_duplicates() {
    use yurtsim::faults::RequestFault;
    let env = start("v1.33.1").await;
    let fault = |verb: &str, status: u16, probability: f64, after: bool| RequestFault {
        verb: verb.into(),
        resource: String::new(),
        count: u32::MAX,
        status,
        delay_ms: 0,
        message: None,
        probability: Some(probability),
        after,
    };
    // 10% of writes answered 500 before anything happens, 5% after the write was stored (the
    // answer is lost), and some updates refused with 409
    env.sim.faults().add(fault("write", 500, 0.10, false));
    env.sim.faults().add(fault("write", 500, 0.05, true));
    env.sim.faults().add(fault("update", 409, 0.2, false));
    let run = convert(&env, &["-y", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert!(
        r["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["result"] == "converted"),
        "{r:#}"
    );
    env.sim.faults().clear();
    for w in ["worker-1", "worker-2"] {
        through_yurthub(&env, w).await;
    }
    // no duplicates: one bootstrap token, one journal, the Jobs gone
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "kube-system");
    let tokens = secrets
        .list(&ListParams::default().fields("type=bootstrap.kubernetes.io/token"))
        .await
        .unwrap();
    assert_eq!(tokens.items.len(), 1, "one bootstrap token");
    let jobs = Api::<Job>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        jobs.items.is_empty(),
        "{:?}",
        jobs.items
            .iter()
            .map(|j| &j.metadata.name)
            .collect::<Vec<_>>()
    );
    let again = convert(&env, &["-y"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already converted"),
        "{}",
        again.stderr
    );
    env.sim.shutdown().await;
}

/// yurt-app-manager runs on cloud nodes only; on kubeadm those are the tainted control plane,
/// so without tolerating that taint its pods stayed Pending and convert timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_app_manager_runs_on_the_tainted_control_plane() {
    let env = start("v1.20.15").await;
    let run = convert(
        &env,
        &["--profile", "legacy-v0.6", "--enable-app-manager", "-y"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pods = Api::<Pod>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels("control-plane=yurt-app-manager"))
        .await
        .unwrap();
    assert_eq!(pods.items.len(), 2, "replicas: 2");
    for p in &pods.items {
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
        assert_eq!(node.as_deref(), Some("control-plane-1"), "{p:?}");
    }
    env.sim.shutdown().await;
}

/// When a component never becomes available, the time-out says why, as `kubectl get pods`
/// would: here yurt-manager, which must run on a control-plane node, finds it cordoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unavailable_component_is_reported_with_its_pods_state() {
    let env = start("v1.33.1").await;
    let nodes: Api<Node> = Api::all(env.client.clone());
    nodes
        .patch(
            "control-plane-1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args([
        "convert",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "5s",
        "-y",
    ]);
    let run = support::run(cmd, "convert --job-timeout 5s").await;
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(
        run.stderr.contains("Deployment(s) yurt-manager")
            && run.stderr.contains("pod yurt-manager-")
            && run.stderr.contains("Pending (0/3 nodes are available"),
        "{}",
        run.stderr
    );
    env.sim.shutdown().await;
}
