//! `yurtctl convert` end to end (kubeadm layout, 1 control plane + 2 workers): the real binary
//! plans, labels, applies the components and runs node Jobs in which the nodes run `yurtctl
//! node-servant convert` for real. The scenarios that need none of yurtsim's fault controls run
//! on the real tier (`start_real`: the real control plane, OpenYurt v1.7.0's own yurt-manager
//! and YurtHub); the others on yurtsim's API server with the openyurt-v1.7 profile.

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams};
use serde_json::Value;
use yurtsim::Layout;

const HUB_SERVER: &str = "http://127.0.0.1:10261";
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
const MANAGED: &str = "app.kubernetes.io/managed-by=yurtctl";

use support::{Cluster as Env, Run};

async fn start() -> Env {
    support::cluster(3, Layout::Kubeadm, "v1.33.1").await
}

/// The same three nodes on the real tier (tests/real): the real control plane and OpenYurt
/// v1.7.0's own yurt-manager and YurtHub. The scenarios that need none of yurtsim's fault
/// controls run here.
async fn start_real() -> Env {
    support::real::env(3).await
}

async fn yurtctl(env: &Env, args: &[&str]) -> Run {
    // 60 s holds on the real tier too: the wait for yurt-manager starts after its readiness
    // probe's minute
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

async fn node(env: &Env, name: &str) -> Node {
    Api::<Node>::all(env.client.clone())
        .get(name)
        .await
        .unwrap()
}

fn ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    n.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn annotation<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    n.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn result_of<'a>(v: &'a Value, node: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap_or_else(|| panic!("{node} not in the result: {v:#}"))
}

async fn converted_through_yurthub(env: &Env, name: &str) {
    // the kubelet restarts on its new kubeconfig; give the sim a few heartbeats
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let n = node(env, name).await;
        let server = env.sim.kubelet_server(name);
        if ready(&n) && server.as_deref() == Some(HUB_SERVER) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} not Ready through YurtHub: its kubelet talks to {server:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn convert_then_rerun_is_a_no_op() {
    let env = start_real().await;

    // dry run: a plan, nothing changed
    let plan = yurtctl(&env, &["--dry-run=client", "-o", "json"]).await;
    assert_eq!(plan.code, 0);
    let p = plan.json();
    assert_eq!(p["kind"], "Plan");
    assert_eq!(p["phases"].as_array().unwrap().len(), 9);
    let objects = p["objects"].as_array().unwrap();
    assert!(
        objects
            .iter()
            .any(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "yurt-manager")
    );
    for secret in objects.iter().filter(|o| o["kind"] == "Secret") {
        for v in secret["data"]
            .as_object()
            .into_iter()
            .flat_map(|d| d.values())
        {
            assert_eq!(v, "REDACTED", "{secret:#}");
        }
    }
    assert!(objects.iter().any(|o| {
        o["metadata"]["name"] == "yurtctl-yurthub-bootstrap"
            && o["data"]["bootstrap-hub.conf"] == "REDACTED"
    }));
    assert!(!plan.stdout.contains("0000000000000000"));
    let yaml = yurtctl(&env, &["--dry-run=client", "-o", "yaml"]).await;
    assert_eq!(yaml.code, 0, "{}", yaml.stderr);
    assert!(yaml.stdout.contains("kind: Plan"), "{}", yaml.stdout);
    assert!(yaml.stdout.contains("yurt-manager"));
    let managed = Api::<Deployment>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels(MANAGED))
        .await
        .unwrap();
    assert!(managed.items.is_empty(), "a dry run changes nothing");
    assert!(label(&node(&env, "worker-1").await, EDGE_LABEL).is_none());

    // without a terminal and without -y: refused, nothing changed
    let refused = yurtctl(&env, &[]).await;
    assert_eq!(refused.code, 10, "{}", refused.stderr);
    assert!(label(&node(&env, "worker-1").await, EDGE_LABEL).is_none());

    let run = yurtctl(&env, &["--all-edge", "-y", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["apiVersion"], "yurtctl.openyurt.io/v1alpha1");
    assert_eq!(r["kind"], "ConvertResult");
    for (name, role) in [
        ("control-plane-1", "cloud"),
        ("worker-1", "edge"),
        ("worker-2", "edge"),
    ] {
        let n = result_of(&r, name);
        assert_eq!(n["role"], role, "{r:#}");
        assert_eq!(n["result"], "converted", "{r:#}");
    }
    for w in ["worker-1", "worker-2"] {
        converted_through_yurthub(&env, w).await;
        let n = node(&env, w).await;
        assert_eq!(label(&n, EDGE_LABEL), Some("true"));
        assert_eq!(
            annotation(&n, "node.openyurt.io/autonomy-duration"),
            Some("0")
        );
    }
    let cp = node(&env, "control-plane-1").await;
    assert_eq!(label(&cp, EDGE_LABEL), Some("false"));
    assert!(ready(&cp));

    // components: applied with our label
    let lp = ListParams::default().labels(MANAGED);
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), "kube-system")
        .list(&lp)
        .await
        .unwrap();
    assert!(
        deployments
            .items
            .iter()
            .any(|d| d.metadata.name.as_deref() == Some("yurt-manager")),
        "yurt-manager Deployment missing"
    );
    let cms = Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system")
        .list(&lp)
        .await
        .unwrap();
    assert!(
        cms.items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("yurt-hub-cfg"))
    );
    // the journal records every node, succeeded Jobs are gone, the lock is released
    let state = support::journal_state(&env.client).await.unwrap();
    assert_eq!(state["nodes"]["worker-1"]["nodes/edge"]["state"], "done");
    assert!(state["tokenId"].is_string());
    let jobs = Api::<Job>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels("yurtctl.openyurt.io/action"))
        .await
        .unwrap();
    assert!(jobs.items.is_empty(), "succeeded Jobs are deleted");

    // re-run: nothing to do, no Job created
    let jobs_before = env.sim.requests("yurtctl", "create", "jobs.batch");
    assert_eq!(jobs_before, 6, "two Jobs per node: preflight, convert");
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already converted"),
        "{}",
        again.stderr
    );
    let r = again.json();
    for name in ["control-plane-1", "worker-1", "worker-2"] {
        assert_eq!(result_of(&r, name)["result"], "already-converted");
    }
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs_before
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_node_is_reported_and_converted_by_the_next_run() {
    let env = start().await;
    env.sim
        .faults()
        .fail_jobs_named("worker-2", &["yurtctl-convert-"], 1);

    let run = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("worker-2"), "{}", run.stderr);
    assert!(
        run.stderr.contains("injected failure on node worker-2"),
        "the Job's log is shown:\n{}",
        run.stderr
    );
    let r = run.json();
    assert_eq!(r["result"], "partial");
    assert_eq!(r["exitCode"], 4);
    let failed = result_of(&r, "worker-2");
    assert_eq!(failed["result"], "failed");
    assert!(
        failed["logs"]
            .as_str()
            .unwrap()
            .contains("injected failure"),
        "{r:#}"
    );
    assert_eq!(result_of(&r, "worker-1")["result"], "converted");
    converted_through_yurthub(&env, "worker-1").await;

    // once the fault is gone, the next run converts only worker-2
    env.sim.faults().clear_failing_jobs("worker-2");
    let jobs_before = env.sim.requests("yurtctl", "create", "jobs.batch");
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(result_of(&r, "worker-2")["result"], "converted");
    assert_eq!(result_of(&r, "worker-1")["result"], "already-converted");
    assert_eq!(
        result_of(&r, "control-plane-1")["result"],
        "already-converted"
    );
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs_before + 2,
        "worker-2's preflight and convert Jobs"
    );
    converted_through_yurthub(&env, "worker-2").await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn usage_errors_exit_2() {
    let env = start_real().await;
    let both = yurtctl(
        &env,
        &[
            "--cloud-nodes",
            "worker-1",
            "--edge-nodes",
            "worker-1",
            "-y",
        ],
    )
    .await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(both.stderr.contains("worker-1"));
    let bad = yurtctl(&env, &["--edge-nodes", "Worker_1", "-y"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let missing = yurtctl(&env, &["--edge-nodes", "ghost", "-y"]).await;
    assert_eq!(missing.code, 3, "{}", missing.stderr);
    assert!(missing.stderr.contains("ghost"));
    env.sim.shutdown().await;
}

/// A cluster newer than the profile supports is refused, naming the check that may be ignored;
/// with `--ignore-preflight-errors` (any case, as kubeadm) the same run plans with a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unsupported_kubernetes_version_is_refused_unless_the_check_is_ignored() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.38.0").await;
    let refused = yurtctl(&env, &["--dry-run", "-y"]).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "[KubernetesVersion] Kubernetes v1.38.0 (1.38) is not supported by profile openyurt-v1.7 (1.31-1.37)"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("--ignore-preflight-errors=KubernetesVersion"),
        "{}",
        refused.stderr
    );
    let planned = yurtctl(
        &env,
        &[
            "--dry-run",
            "-y",
            "-o",
            "json",
            "--ignore-preflight-errors",
            "kubernetesversion",
        ],
    )
    .await;
    assert_eq!(planned.code, 0, "{}", planned.stderr);
    let plan: Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(plan["warnings"][0]["check"], "KubernetesVersion");
    let preflight = plan["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "preflight")
        .unwrap();
    assert_eq!(preflight["steps"][0]["action"], "warn");
    // a missing node is still refused: only the named check became a warning
    let missing = yurtctl(
        &env,
        &[
            "--dry-run",
            "-y",
            "--ignore-preflight-errors=all",
            "--edge-nodes",
            "ghost",
        ],
    )
    .await;
    assert_eq!(missing.code, 3, "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains("[NodeExists] node ghost does not exist")
    );
    assert!(
        !missing.stderr.contains("KubernetesVersion"),
        "{}",
        missing.stderr
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_lock_exits_6_naming_the_holder() {
    use yurtctl::cluster::lock::{LockOptions, acquire};
    use yurtctl::cluster::{Cluster, RateLimiter};
    let env = start_real().await;
    let other = Cluster::new(env.client.clone(), RateLimiter::unlimited());
    let guard = acquire(
        &other,
        LockOptions {
            identity: "alice@ops-laptop/42#0badcafe".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let run = yurtctl(&env, &["-y"]).await;
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert!(run.stderr.contains("alice@ops-laptop"), "{}", run.stderr);
    assert!(run.stderr.contains("[lock]"), "{}", run.stderr);
    assert!(
        label(&node(&env, "worker-1").await, EDGE_LABEL).is_none(),
        "nothing changed"
    );
    guard.release().await.unwrap();
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_not_ready_node_is_skipped_and_converted_later() {
    let env = start().await;
    env.sim.set_node_ready("worker-2", false).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ready(&node(&env, "worker-2").await) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "worker-2 stays Ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let run = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    let r = run.json();
    let skipped = result_of(&r, "worker-2");
    assert_eq!(skipped["result"], "skipped", "{r:#}");
    assert!(skipped["message"].as_str().unwrap().contains("NotReady"));
    assert_eq!(result_of(&r, "worker-1")["result"], "converted");
    assert!(label(&node(&env, "worker-2").await, EDGE_LABEL).is_none());

    env.sim.set_node_ready("worker-2", true).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !ready(&node(&env, "worker-2").await) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "worker-2 stays NotReady"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(result_of(&r, "worker-2")["result"], "converted");
    assert_eq!(result_of(&r, "worker-1")["result"], "already-converted");
    converted_through_yurthub(&env, "worker-2").await;
    env.sim.shutdown().await;
}

/// Runs `convert -y`, sends SIGINT once a stderr line satisfies `at`, and returns the exit
/// code and the whole stderr.
async fn interrupted_run(env: &Env, at: impl Fn(&str) -> bool) -> (Option<i32>, String) {
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args(["convert", "--servant-image", "openyurt/yurtctl:test", "-y"]);
    support::interrupted(cmd, at).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigint_while_node_jobs_run_exits_130_and_the_next_run_converges() {
    let env = start_real().await;
    // a node Job exists: the next run has to adopt or replace it
    let (code, seen) = interrupted_run(&env, |l| {
        l.contains("[nodes/edge]") && l.ends_with("): created")
    })
    .await;
    assert_eq!(code, Some(130), "{seen}");
    assert!(seen.contains("re-run convert to resume"), "{seen}");
    let lease = lock_lease(&env).await;
    assert!(lease.is_none(), "the lock is released");

    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    for w in ["worker-1", "worker-2"] {
        converted_through_yurthub(&env, w).await;
    }
    let third = yurtctl(&env, &["-y"]).await;
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(
        third.stderr.contains("already converted"),
        "{}",
        third.stderr
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transient_api_errors_and_conflicts_still_converge() {
    use yurtsim::faults::RequestFault;
    let env = start().await;
    let fault = RequestFault::fail;
    for f in [
        fault("patch", "nodes", 2, 500),
        fault("patch", "configmaps", 2, 500),
        fault("patch", "deployments.apps", 1, 503),
        fault("create", "jobs.batch", 2, 500),
        fault("update", "configmaps", 1, 409),
        fault("list", "nodes", 1, 500),
    ] {
        env.sim.faults().add(f);
    }
    let run = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    for name in ["control-plane-1", "worker-1", "worker-2"] {
        assert_eq!(result_of(&r, name)["result"], "converted", "{r:#}");
    }
    // every injected fault was hit (and survived)
    for (verb, group, resource) in [
        ("patch", "", "nodes"),
        ("patch", "", "configmaps"),
        ("patch", "apps", "deployments"),
        ("create", "batch", "jobs"),
        ("update", "", "configmaps"),
        ("list", "", "nodes"),
    ] {
        assert!(
            matches!(
                env.sim.faults().decide(verb, group, resource, None),
                yurtsim::faults::Decision::Pass
            ),
            "fault {verb} {resource} was not reached"
        );
    }
    // two Jobs per node (preflight, convert): 6 creates that succeeded and the 2 answered 500
    // (counted too)
    assert_eq!(env.sim.requests("yurtctl", "create", "jobs.batch"), 8);
    for w in ["worker-1", "worker-2"] {
        converted_through_yurthub(&env, w).await;
    }
    let again = yurtctl(&env, &["-y"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already converted"),
        "{}",
        again.stderr
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn missing_permissions_fail_preflight_with_nothing_changed() {
    let env = start().await;
    env.sim.faults().deny("create", "jobs.batch");
    env.sim.faults().deny("patch", "nodes");
    let run = yurtctl(&env, &["-y"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("[preflight]"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("not allowed to create jobs.batch in kube-system"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("not allowed to patch nodes"),
        "{}",
        run.stderr
    );
    assert!(label(&node(&env, "worker-1").await, EDGE_LABEL).is_none());
    let lease = lock_lease(&env).await;
    assert!(lease.is_none(), "no lock taken");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_finished_before_sigint_is_journaled_and_not_converted_again() {
    let env = start_real().await;
    let (code, seen) = interrupted_run(&env, |l| {
        l.contains("[nodes/edge]") && l.contains("): succeeded in")
    })
    .await;
    assert_eq!(code, Some(130), "{seen}");
    let done = seen
        .lines()
        .find(|l| l.contains("[nodes/edge]") && l.contains("): succeeded in"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap()
        .to_string();
    let state = support::journal_state(&env.client).await.unwrap();
    assert_eq!(
        state["nodes"][&done]["nodes/edge"]["state"], "done",
        "{state:#}"
    );

    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(result_of(&r, &done)["result"], "already-converted", "{r:#}");
    assert_eq!(
        result_of(&r, "control-plane-1")["result"],
        "converted",
        "{r:#}"
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skipped_phases_are_not_run_and_not_a_failure() {
    let env = start_real().await;
    let run = yurtctl(
        &env,
        &["--skip-phases", "nodes/cloud,verify", "-y", "-o", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("[nodes/cloud] skipped"),
        "{}",
        run.stderr
    );
    let r = run.json();
    assert_eq!(
        result_of(&r, "control-plane-1")["result"],
        "phase-skipped",
        "{r:#}"
    );
    assert_eq!(result_of(&r, "worker-1")["result"], "converted");
    // preflight and convert on the two edge nodes; nothing runs on the skipped cloud node
    assert_eq!(env.sim.requests("yurtctl", "create", "jobs.batch"), 4);
    // the skipped node is converted by a later run without the skip
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(
        result_of(&r, "control-plane-1")["result"],
        "converted",
        "{r:#}"
    );
    assert_eq!(result_of(&r, "worker-2")["result"], "already-converted");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_failing_node_preflight_stops_the_run_before_any_change() {
    let env = start_real().await;
    // worker-2's kubelet takes --kubeconfig from a variable inside a word: the servant cannot
    // rewrite it safely. The running kubelet is unaffected (no daemon-reload), so the node
    // stays Ready and only the node-side preflight can notice.
    let dropin = env
        .sim
        .node_root("worker-2")
        .join("etc/systemd/system/kubelet.service.d/20-indirect.conf");
    std::fs::write(
        &dropin,
        "[Service]\nEnvironment=\"D=/etc/kubernetes\"\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS --kubeconfig=${D}/kubelet.conf\n",
    )
    .unwrap();
    let units_before = kubelet_dropins(&env);

    let run = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("[preflight/nodes] node worker-2"),
        "the failing node is named with its phase:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("verbatim"),
        "the servant's reason is shown:\n{}",
        run.stderr
    );
    let r = run.json();
    assert_eq!(r["exitCode"], 3, "{r:#}");
    assert_eq!(result_of(&r, "worker-2")["result"], "failed");
    assert_eq!(result_of(&r, "worker-1")["result"], "phase-skipped");

    // nothing changed: no label, no component, no journal, no lock, no node file
    for n in env.sim.node_names() {
        assert!(label(&node(&env, &n).await, EDGE_LABEL).is_none(), "{n}");
        let root = env.sim.node_root(&n);
        assert!(!root.join("var/lib/yurtctl").exists(), "{n}: servant wrote");
        assert!(
            !root.join("etc/kubernetes/manifests/yurthub.yaml").exists(),
            "{n}"
        );
    }
    let units_after = kubelet_dropins(&env);
    assert_eq!(units_before, units_after);
    let cms = Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system");
    assert!(cms.get_opt("yurtctl-state").await.unwrap().is_none());
    let managed = ListParams::default().labels(MANAGED);
    let deployments = Api::<Deployment>::all(env.client.clone());
    assert!(deployments.list(&managed).await.unwrap().items.is_empty());
    let lease = lock_lease(&env).await;
    assert!(lease.is_none(), "the lock is released");
    // the failed Job stays for `kubectl logs`; the passing ones are gone
    let jobs = Api::<Job>::namespaced(env.client.clone(), "kube-system");
    let names: Vec<String> = jobs
        .list(&managed)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert_eq!(names, ["yurtctl-preflight-worker-2"]);

    // fixed on the node: the next run replaces the failed Job and converts every node
    std::fs::remove_file(&dropin).unwrap();
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    for n in ["worker-1", "worker-2"] {
        assert_eq!(result_of(&again.json(), n)["result"], "converted");
        converted_through_yurthub(&env, n).await;
    }
    env.sim.shutdown().await;
}

/// Every node's kubelet drop-in files, name and content.
fn kubelet_dropins(env: &Env) -> Vec<Vec<(std::ffi::OsString, Vec<u8>)>> {
    env.sim
        .node_names()
        .iter()
        .map(|n| {
            let d = env
                .sim
                .node_root(n)
                .join("etc/systemd/system/kubelet.service.d");
            let mut files: Vec<_> = std::fs::read_dir(&d)
                .unwrap()
                .flatten()
                .map(|e| (e.file_name(), std::fs::read(e.path()).unwrap()))
                .collect();
            files.sort();
            files
        })
        .collect()
}

/// The run lock's Lease, if any.
async fn lock_lease(env: &Env) -> Option<k8s_openapi::api::coordination::v1::Lease> {
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(env.client.clone(), "kube-system")
        .get_opt("yurtctl-lock")
        .await
        .unwrap()
}

/// The journal's writes start failing mid-phase (the API server refuses them as it refused
/// the oversized journal of a 5,000-node run): the run stops starting nodes and exits 1 saying
/// why; nothing is lost: once writes go through again a re-run converts the rest and revert
/// restores every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn when_the_journal_cannot_be_saved_the_run_stops_starting_nodes_and_nothing_is_lost() {
    let env = support::cluster(12, Layout::Kubeadm, "v1.33.1").await;
    let workers: Vec<String> = (1..=11).map(|i| format!("worker-{i}")).collect();
    let faults = env.sim.faults();
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args([
        "convert",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--concurrency",
        "1",
        "-y",
    ]);
    let (code, seen) = support::act_at(
        cmd,
        |l| l.contains("[nodes/edge]") && l.contains("): succeeded in"),
        move |_| {
            let mut f = yurtsim::faults::RequestFault::fail("patch", "configmaps", 10_000, 422);
            f.message = Some(
                "ConfigMap \"yurtctl-state-nodes-0\" is invalid: []: Too long: must have at most 1048576 bytes"
                    .into(),
            );
            faults.add(f);
        },
    )
    .await;
    assert_eq!(code, Some(1), "{seen}");
    assert!(
        seen.contains("[nodes/edge]") && seen.contains("could not be saved 3 times in a row"),
        "{seen}"
    );
    assert!(seen.contains("re-run the same command"), "{seen}");
    let started = seen
        .lines()
        .filter(|l| l.starts_with("[nodes/edge]") && l.ends_with("): created"))
        .count();
    assert!(
        started < workers.len(),
        "the run stopped starting nodes: {started} of {} started\n{seen}",
        workers.len()
    );

    env.sim.faults().clear();
    let again = yurtctl(&env, &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    for w in &workers {
        converted_through_yurthub(&env, w).await;
    }
    let state = support::journal_state(&env.client).await.unwrap();
    for w in &workers {
        assert_eq!(state["nodes"][w]["nodes/edge"]["state"], "done", "{w}");
    }

    let mut revert = support::yurtctl_command(&env.sim);
    revert.args(["revert", "-y"]);
    let reverted = support::run(revert, "revert").await;
    assert_eq!(reverted.code, 0, "{}", reverted.stderr);
    for w in &workers {
        assert!(label(&node(&env, w).await, EDGE_LABEL).is_none(), "{w}");
    }
    let cms = Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system")
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=yurtctl"))
        .await
        .unwrap();
    assert!(
        cms.items.is_empty(),
        "revert leaves no journal: {:?}",
        cms.items
            .iter()
            .map(|c| c.metadata.name.clone())
            .collect::<Vec<_>>()
    );
    env.sim.shutdown().await;
}

/// A run stopped inside `components` is finished by the re-run, wherever it stopped:
/// - after yurt-manager and its node webhook are up but before the NodePools exist, nodes stay
///   labelled with pools that are missing, and the webhook's defaulting refuses any write to
///   them (openyurtio/openyurt@v1.7.0 pkg/yurtmanager/webhook/node/v1/node_default.go): the
///   re-run applies the pools before it labels;
/// - after yurt-manager's Deployment but before its webhook configurations, the re-run must not
///   apply the pools early: they would miss the NodePool webhook's defaults, which its
///   validation then requires (`nodepool_validation.go`).
#[tokio::test]
async fn a_run_stopped_inside_components_is_finished_by_the_re_run() {
    for (stop_at, stopped_with_webhooks) in [
        ("nodepools.apps.openyurt.io", true),
        (
            "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            false,
        ),
    ] {
        let env = start().await;
        env.sim.faults().add(yurtsim::faults::RequestFault::fail(
            "patch", stop_at, 10_000, 422,
        ));
        let stopped = yurtctl(&env, &["-y"]).await;
        assert_ne!(stopped.code, 0, "{stop_at}: {}", stopped.stderr);
        assert!(
            stopped.stderr.contains("[components]"),
            "{stop_at}: {}",
            stopped.stderr
        );
        let yurt_manager = Api::<Deployment>::namespaced(env.client.clone(), "kube-system")
            .get("yurt-manager")
            .await
            .unwrap();
        if stopped_with_webhooks {
            assert_eq!(
                yurt_manager.status.and_then(|s| s.available_replicas),
                Some(1),
                "yurt-manager and its webhooks were up when the run stopped"
            );
        }
        assert_eq!(
            label(&node(&env, "worker-1").await, "apps.openyurt.io/nodepool"),
            Some("edge")
        );

        env.sim.faults().clear();
        let again = yurtctl(&env, &["-y"]).await;
        assert_eq!(again.code, 0, "{stop_at}: {}", again.stderr);
        for w in ["worker-1", "worker-2"] {
            converted_through_yurthub(&env, w).await;
        }
        let pools = Api::<kube::core::DynamicObject>::all_with(
            env.client.clone(),
            &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                "apps.openyurt.io",
                "v1beta2",
                "NodePool",
            )),
        )
        .list(&ListParams::default())
        .await
        .unwrap();
        let mut names: Vec<String> = pools
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        names.sort();
        assert_eq!(names, ["cloud", "edge"], "{stop_at}");
        env.sim.shutdown().await;
    }
}
