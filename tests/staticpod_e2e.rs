//! `yurtctl staticpod` end to end: the real binary stores revisions in ConfigMap
//! `yurt-static-set-NAME`, runs node Jobs in which the nodes run `yurtctl node-servant
//! static-pod-upgrade` for real on each node's file system, and waits on the mirror pods the
//! nodes' kubelets make from the manifests. The scenarios that need none of yurtsim's fault
//! controls or counters run on the real tier (`start_real`); the others on yurtsim's API server.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use serde_json::Value;
use yurtsim::{Layout, Sim};

struct Env {
    sim: Sim,
    client: Client,
    workers: Vec<String>,
    _dir: tempfile::TempDir,
}

/// A cluster with `workers` worker nodes, each running static pod `nginx` (nginx:1.19.1) from
/// `/etc/kubernetes/manifests/nginx.yaml`, as in the user's example.
async fn start(workers: usize, ready_delay: Duration) -> Env {
    let env = support::start_sim(workers + 1, Layout::Kubeadm, |cfg| {
        cfg.pod_ready_delay = ready_delay;
        cfg.history_limit = 100_000;
    })
    .await;
    let client = support::kube_client(&env.sim).await;
    with_nginx(env.sim, client, env.dir).await
}

/// [`start`] on the real tier (tests/real): the real control plane, with the nodes' kubelets
/// running the static pods (image pulls, containers, the mirror pods' status through the real
/// API). The scenarios that need none of yurtsim's fault controls run here.
async fn start_real(workers: usize, ready_delay: Duration) -> Env {
    let env = support::real::env_with(workers + 1, |cfg| cfg.pod_ready_delay = ready_delay).await;
    with_nginx(env.sim, env.client, env.dir).await
}

/// `sim` once every worker runs the user's nginx static pod Ready.
async fn with_nginx(sim: Sim, client: Client, dir: tempfile::TempDir) -> Env {
    let names = install_nginx(&sim);
    let e = Env {
        sim,
        client,
        workers: names,
        _dir: dir,
    };
    wait_until(&e, "every worker runs nginx Ready", |pods| {
        e.workers.iter().all(|w| pods.get(w).is_some_and(ready))
    })
    .await;
    e
}

use support::Run;

/// The user's example: nginx 1.19.1 as a static pod on every worker; their names.
fn install_nginx(sim: &Sim) -> Vec<String> {
    let workers: Vec<String> = sim
        .node_names()
        .into_iter()
        .filter(|n| n.starts_with("worker-"))
        .collect();
    for w in &workers {
        let dir = sim.node_root(w).join("etc/kubernetes/manifests");
        std::fs::write(dir.join("nginx.yaml"), support::NGINX_119_1).unwrap();
    }
    workers
}

fn command(env: &Env, args: &[&str]) -> tokio::process::Command {
    command_as(&env.sim.kubeconfig_path(), args)
}

/// [`command`] with another identity's kubeconfig.
fn command_as(kubeconfig: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"));
    c.arg("staticpod")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(std::process::Stdio::null())
        .env_remove("KUBECONFIG");
    c
}

async fn yurtctl(env: &Env, args: &[&str]) -> Run {
    support::run(command(env, args), &format!("staticpod {args:?}")).await
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn image(p: &Pod) -> String {
    p.spec.as_ref().unwrap().containers[0]
        .image
        .clone()
        .unwrap_or_default()
}

fn condition(p: &Pod, t: &str) -> Option<String> {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == t)
        .map(|c| c.status.clone())
}

/// nginx mirror pods by node.
async fn mirror_pods(env: &Env) -> BTreeMap<String, Pod> {
    mirror_pods_of(&env.client, "default", "nginx").await
}

/// The mirror pods `<name>-<node>` of static pod `ns/name`, by node.
async fn mirror_pods_of(client: &Client, ns: &str, name: &str) -> BTreeMap<String, Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            (p.metadata.name.as_deref() == Some(&format!("{name}-{node}"))).then_some((node, p))
        })
        .collect()
}

async fn wait_until(env: &Env, what: &str, f: impl Fn(&BTreeMap<String, Pod>) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pods = mirror_pods(env).await;
        if f(&pods) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}: {pods:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn manifest_on(env: &Env, node: &str) -> String {
    std::fs::read_to_string(
        env.sim
            .node_root(node)
            .join("etc/kubernetes/manifests/nginx.yaml"),
    )
    .unwrap()
}

fn node_result<'a>(r: &'a Value, node: &str) -> &'a str {
    r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap_or_else(|| panic!("no result for {node}: {r:#}"))["result"]
        .as_str()
        .unwrap()
}

const UPGRADE: [&str; 6] = [
    "upgrade",
    "nginx",
    "--image",
    "nginx:1.19.2",
    "--strategy",
    "advanced-rolling-update",
];

fn args<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_users_example_three_nodes_upgrade_and_status_shows_3_3_3() {
    let env = start_real(3, Duration::from_millis(100)).await;
    // Every node runs the same manifest: one revision before any rollout.
    let st = yurtctl(&env, &["status", "nginx", "-o", "json"])
        .await
        .json();
    let revs: BTreeSet<&str> = st["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["revision"].as_str().unwrap())
        .collect();
    assert_eq!(revs.len(), 1, "{st:#}");
    let before = yurtctl(&env, &["status", "nginx"]).await;
    assert_eq!(before.code, 0);
    let row: Vec<&str> = before
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        (row[0], row[2], row[3]),
        ("nginx", "3", "3"),
        "{}",
        before.stdout
    );

    let run = yurtctl(
        &env,
        &args(&UPGRADE, &["--max-unavailable", "3", "-y", "-o", "json"]),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["kind"], "RolloutResult");
    for w in &env.workers {
        assert_eq!(node_result(&r, w), "upgraded");
        assert!(manifest_on(&env, w).contains("nginx:1.19.2"));
    }
    let pods = mirror_pods(&env).await;
    let hash = r["revision"].as_str().unwrap();
    for w in &env.workers {
        let p = &pods[w];
        assert_eq!(image(p), "nginx:1.19.2");
        assert_eq!(
            p.metadata.annotations.as_ref().unwrap()["openyurt.io/static-pod-hash"],
            hash
        );
    }
    // The ConfigMap OpenYurt's readers expect: one data key, the revision annotation.
    let cm = Api::<ConfigMap>::namespaced(env.client.clone(), "default")
        .get("yurt-static-set-nginx")
        .await
        .unwrap();
    let data = cm.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["nginx"]);
    assert!(data["nginx"].contains("nginx:1.19.2"));
    assert_eq!(
        cm.metadata.annotations.unwrap()["openyurt.io/static-pod-hash"],
        hash
    );

    let status = yurtctl(&env, &["status", "nginx"]).await;
    assert_eq!(status.code, 0);
    let lines: Vec<&str> = status.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "AGE", "TOTAL", "READY", "UPGRADED"]
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!((row[0], row[2], row[3], row[4]), ("nginx", "3", "3", "3"));

    let wide = yurtctl(&env, &["status", "nginx", "-o", "wide"]).await;
    insta::with_settings!({filters => vec![
        (r"(?m)^(nginx\s+)\S+", "$1[AGE]"),
        (r"\b[4-9bcdf]{6,10}\b", "[HASH]"),
    ]}, {
        insta::assert_snapshot!("staticpod_status_wide", wide.stdout);
    });
    for w in &env.workers {
        let line = wide
            .stdout
            .lines()
            .find(|l| l.starts_with(w.as_str()))
            .unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            [w.as_str(), "true", hash, "false", "upgraded"]
        );
    }
    // Running it again changes nothing.
    let again = yurtctl(&env, &args(&UPGRADE, &["-y", "-o", "json"])).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    for w in &env.workers {
        assert_eq!(node_result(&again.json(), w), "already-updated");
    }
    env.sim.shutdown().await;
}

/// What the sim's watch history shows: every upgrade Job creation and every mirror-pod state,
/// in resourceVersion order (the sim's revisions are global, like etcd's).
#[derive(Debug, Clone)]
enum Seen {
    JobCreated(String),
    Pod {
        node: String,
        revision: Option<String>,
        ready: bool,
    },
}

type History = std::sync::Arc<std::sync::Mutex<Vec<(u64, Seen)>>>;

/// Records Jobs and mirror pods from now on, until the returned handle is stopped.
fn record(env: &Env) -> (tokio::task::JoinHandle<()>, History) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), "default");
    let (s1, s2) = (seen.clone(), seen.clone());
    let h = tokio::spawn(async move {
        let j = watcher(
            jobs,
            watcher::Config::default().labels("yurtctl.openyurt.io/action=sp-up-nginx"),
        )
        .default_backoff()
        .touched_objects()
        .for_each(move |j| {
            let s1 = s1.clone();
            async move {
                let Ok(j) = j else { return };
                let node = j.spec.unwrap().template.spec.unwrap().node_name.unwrap();
                let rv: u64 = j.metadata.resource_version.unwrap().parse().unwrap();
                let mut s = s1.lock().unwrap();
                if !s
                    .iter()
                    .any(|(_, e)| matches!(e, Seen::JobCreated(n) if *n == node))
                {
                    s.push((rv, Seen::JobCreated(node)));
                }
            }
        });
        let p = watcher(pods, watcher::Config::default())
            .default_backoff()
            .touched_objects()
            .for_each(move |p| {
                let s2 = s2.clone();
                async move {
                    let Ok(p) = p else { return };
                    let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                        return;
                    };
                    if p.metadata.name.as_deref() != Some(&format!("nginx-{node}")) {
                        return;
                    }
                    let rv: u64 = p
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let revision = p
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("openyurt.io/static-pod-hash").cloned());
                    s2.lock().unwrap().push((
                        rv,
                        Seen::Pod {
                            node,
                            revision,
                            ready: ready(&p),
                        },
                    ));
                }
            });
        futures::join!(j, p);
    });
    (h, seen)
}

/// From the history: nodes in flight (Job created, mirror pod not yet Ready on `target`) at
/// every point, and the order in which Jobs were created.
fn in_flight_history(seen: &[(u64, Seen)], target: &str) -> (Vec<usize>, Vec<String>) {
    let mut events = seen.to_vec();
    events.sort_by_key(|(rv, _)| *rv);
    let mut in_flight: BTreeSet<String> = BTreeSet::new();
    let mut counts = Vec::new();
    let mut order = Vec::new();
    for (_, e) in events {
        match e {
            Seen::JobCreated(n) => {
                order.push(n.clone());
                in_flight.insert(n);
            }
            Seen::Pod {
                node,
                revision,
                ready,
            } => {
                if ready && revision.as_deref() == Some(target) {
                    in_flight.remove(&node);
                }
            }
        }
        counts.push(in_flight.len());
    }
    (counts, order)
}

async fn wait_node_ready(env: &Env, node: &str, want: bool) {
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let n = api.get(node).await.unwrap();
        let r = n
            .status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if r == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{node} Ready stays {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_nodes_two_not_ready_never_more_than_three_in_flight() {
    let env = start(10, Duration::from_millis(300)).await;
    for n in ["worker-4", "worker-8"] {
        env.sim.set_node_ready(n, false).unwrap();
        wait_node_ready(&env, n, false).await;
    }
    let (h, seen) = record(&env);
    let run = yurtctl(
        &env,
        &args(&UPGRADE, &["--max-unavailable", "3", "-y", "-o", "json"]),
    )
    .await;
    h.abort();
    // Skipped NotReady nodes make the run partial (a later run picks them up).
    assert_eq!(run.code, 4, "{}", run.stderr);
    let r = run.json();
    let target = r["revision"].as_str().unwrap().to_string();
    for w in &env.workers {
        let want = if w == "worker-4" || w == "worker-8" {
            "skipped-not-ready"
        } else {
            "upgraded"
        };
        assert_eq!(node_result(&r, w), want, "{w}");
    }
    assert_eq!(r["maxUnavailable"], 3);
    let (counts, order) = in_flight_history(&seen.lock().unwrap(), &target);
    assert_eq!(order.len(), 8, "one Job per upgraded node: {order:?}");
    let peak = counts.iter().copied().max().unwrap();
    assert_eq!(
        peak, 3,
        "never more than 3 in flight, and the window is used: {counts:?}"
    );
    for n in ["worker-4", "worker-8"] {
        assert!(manifest_on(&env, n).contains("nginx:1.19.1"));
    }
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_image_that_never_gets_ready_halts_the_rollout_and_restores_the_node() {
    let env = start(3, Duration::from_millis(100)).await;
    env.sim.faults().never_ready("nginx:broken");
    let run = yurtctl(
        &env,
        &[
            "upgrade",
            "nginx",
            "--image",
            "web=nginx:broken",
            "--strategy",
            "advanced-rolling-update",
            "--max-unavailable",
            "1",
            "--node-timeout",
            "3s",
            "-y",
        ],
    )
    .await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("rollout stopped"), "{}", run.stderr);
    assert!(run.stderr.contains("timed-out"), "{}", run.stderr);
    assert!(
        run.stderr.contains("mirror pod: nginx-worker-1"),
        "{}",
        run.stderr
    );
    // worker-1 went first (name order), failed and was restored; the others were not touched.
    for w in &env.workers {
        assert!(manifest_on(&env, w).contains("nginx:1.19.1"), "{w}");
    }
    wait_until(&env, "worker-1 runs nginx:1.19.1 Ready again", |p| {
        p.get("worker-1")
            .is_some_and(|p| ready(p) && image(p) == "nginx:1.19.1")
    })
    .await;
    env.sim.shutdown().await;
}

async fn label_node(env: &Env, node: &str, key: &str, value: &str) {
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.client.clone());
    let patch = serde_json::json!({"metadata": {"labels": {key: value}}});
    api.patch(
        node,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partition_and_priority_decide_which_nodes_and_in_which_order() {
    let env = start_real(4, Duration::from_millis(100)).await;
    label_node(&env, "worker-3", "zone", "hangzhou").await;
    let controls = [
        "--priority",
        "zone=hangzhou:10",
        "--partition",
        "1",
        "--max-unavailable",
        "2",
    ];
    let plan = yurtctl(&env, &args(&UPGRADE, &args(&controls, &["--dry-run"]))).await;
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    insta::with_settings!({filters => vec![(r"revision [4-9bcdf]+", "revision [HASH]")]}, {
        insta::assert_snapshot!("staticpod_dry_run_plan", plan.stdout);
    });
    let pj = yurtctl(
        &env,
        &args(&UPGRADE, &args(&controls, &["--dry-run", "-o", "json"])),
    )
    .await;
    let p = pj.json();
    assert_eq!(p["kind"], "Plan");
    let order: Vec<&str> = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["worker-3", "worker-1", "worker-2"]);
    assert_eq!(p["skipped"][0]["name"], "worker-4");
    assert_eq!(p["skipped"][0]["reason"], "partitioned");
    // Nothing changed by the dry runs.
    assert!(
        Api::<ConfigMap>::namespaced(env.client.clone(), "default")
            .get_opt("yurt-static-set-nginx")
            .await
            .unwrap()
            .is_none()
    );

    let (h, seen) = record(&env);
    let run = yurtctl(
        &env,
        &args(
            &UPGRADE,
            &[
                "--priority",
                "zone=hangzhou:10",
                "--partition",
                "1",
                "--max-unavailable",
                "1",
                "-y",
                "-o",
                "json",
            ],
        ),
    )
    .await;
    h.abort();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(node_result(&r, "worker-4"), "partitioned");
    let (counts, order) = in_flight_history(&seen.lock().unwrap(), r["revision"].as_str().unwrap());
    assert_eq!(order, ["worker-3", "worker-1", "worker-2"]);
    // One at a time, so the Job creations show the order exactly.
    assert!(counts.iter().all(|&c| c <= 1), "{counts:?}");
    assert!(manifest_on(&env, "worker-4").contains("nginx:1.19.1"));
    let redacted = {
        let mut r = r.clone();
        let hash = r["revision"].as_str().unwrap().to_string();
        r["revision"] = "[HASH]".into();
        r["message"] = r["message"]
            .as_str()
            .unwrap()
            .replace(&hash, "[HASH]")
            .into();
        r
    };
    insta::assert_json_snapshot!("staticpod_rollout_result", redacted);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn canary_then_continue() {
    let env = start_real(3, Duration::from_millis(100)).await;
    let run = yurtctl(
        &env,
        &args(&UPGRADE, &["--canary", "1", "-y", "-o", "json"]),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(node_result(&r, "worker-1"), "upgraded");
    assert_eq!(node_result(&r, "worker-2"), "pending");
    assert!(r["message"].as_str().unwrap().contains("re-run"), "{r:#}");
    assert!(manifest_on(&env, "worker-2").contains("nginx:1.19.1"));
    let more = yurtctl(&env, &args(&UPGRADE, &["-y", "-o", "json"])).await;
    assert_eq!(more.code, 0, "{}", more.stderr);
    let r = more.json();
    assert_eq!(node_result(&r, "worker-1"), "already-updated");
    assert_eq!(node_result(&r, "worker-2"), "upgraded");
    assert_eq!(node_result(&r, "worker-3"), "upgraded");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ota_marks_pods_apply_upgrades_one_node_and_conditions_follow_the_template() {
    let env = start_real(3, Duration::from_millis(100)).await;
    let ota = [
        "upgrade",
        "nginx",
        "--image",
        "nginx:1.19.2",
        "--strategy",
        "ota",
        "-y",
    ];
    let run = yurtctl(&env, &ota).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pods = mirror_pods(&env).await;
    for w in &env.workers {
        assert_eq!(
            condition(&pods[w], "PodNeedUpgrade").as_deref(),
            Some("True"),
            "{w}"
        );
        assert!(
            manifest_on(&env, w).contains("nginx:1.19.1"),
            "OTA changes no node by itself"
        );
    }
    let apply = yurtctl(
        &env,
        &[
            "ota", "apply", "nginx", "--node", "worker-2", "-y", "-o", "json",
        ],
    )
    .await;
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert_eq!(node_result(&apply.json(), "worker-2"), "upgraded");
    assert!(manifest_on(&env, "worker-2").contains("nginx:1.19.2"));
    for w in ["worker-1", "worker-3"] {
        assert!(manifest_on(&env, w).contains("nginx:1.19.1"), "{w}");
    }
    let pods = mirror_pods(&env).await;
    assert_eq!(
        condition(&pods["worker-2"], "PodNeedUpgrade").as_deref(),
        Some("False")
    );
    assert_eq!(
        condition(&pods["worker-1"], "PodNeedUpgrade").as_deref(),
        Some("True")
    );
    // The node's owner can also use YurtHub's endpoint: the sim serves it only while a
    // yurt-hub static pod runs, so here it is checked through the conditions it reads.

    // The template goes back to 1.19.1: the pods still on it are no longer marked (YurtStaticSet
    // leaves them True), and the upgraded one now needs an upgrade.
    let back = yurtctl(
        &env,
        &[
            "upgrade",
            "nginx",
            "--image",
            "nginx:1.19.1",
            "--strategy",
            "ota",
            "-y",
        ],
    )
    .await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    let pods = mirror_pods(&env).await;
    assert_eq!(
        condition(&pods["worker-1"], "PodNeedUpgrade").as_deref(),
        Some("False")
    );
    assert_eq!(
        condition(&pods["worker-3"], "PodNeedUpgrade").as_deref(),
        Some("False")
    );
    assert_eq!(
        condition(&pods["worker-2"], "PodNeedUpgrade").as_deref(),
        Some("True")
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollback_returns_every_node_to_the_previous_revision() {
    let env = start_real(3, Duration::from_millis(100)).await;
    let up = yurtctl(&env, &args(&UPGRADE, &["--max-unavailable", "100%", "-y"])).await;
    assert_eq!(up.code, 0, "{}", up.stderr);
    let bad = yurtctl(&env, &["rollback", "nginx", "--to-revision", "99", "-y"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("known revisions: 2, 1"),
        "{}",
        bad.stderr
    );
    let back = yurtctl(
        &env,
        &[
            "rollback",
            "nginx",
            "--max-unavailable",
            "2",
            "-y",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    let r = back.json();
    assert_eq!(r["revisionNumber"], 3);
    for w in &env.workers {
        assert_eq!(node_result(&r, w), "upgraded");
        assert!(manifest_on(&env, w).contains("nginx:1.19.1"), "{w}");
    }
    let pods = mirror_pods(&env).await;
    assert!(
        env.workers
            .iter()
            .all(|w| image(&pods[w]) == "nginx:1.19.1" && ready(&pods[w]))
    );
    let status = yurtctl(&env, &["status", "nginx", "-o", "json"]).await;
    let s = status.json();
    assert_eq!(
        (
            s["total"].as_u64(),
            s["ready"].as_u64(),
            s["upgraded"].as_u64()
        ),
        (Some(3), Some(3), Some(3))
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctrl_c_mid_rollout_exits_130_and_a_rerun_finishes() {
    let env = start_real(4, Duration::from_millis(800)).await;
    let cmd = command(&env, &args(&UPGRADE, &["--max-unavailable", "1", "-y"]));
    let (code, seen) = support::interrupted(cmd, |l| l.contains(": upgraded")).await;
    assert_eq!(code, Some(130), "{seen}");
    assert!(seen.contains("re-run the same command"), "{seen}");
    assert!(
        lease(&env, "yurtctl-staticpod-nginx").await.is_none(),
        "Ctrl-C releases the rollout lock"
    );
    let not_yet = env
        .workers
        .iter()
        .filter(|w| manifest_on(&env, w).contains("nginx:1.19.1"))
        .count();
    assert!(not_yet >= 1, "interrupted before the end");

    let again = yurtctl(
        &env,
        &args(&UPGRADE, &["--max-unavailable", "1", "-y", "-o", "json"]),
    )
    .await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(node_result(&r, "worker-1"), "already-updated");
    for w in &env.workers {
        assert!(manifest_on(&env, w).contains("nginx:1.19.2"), "{w}");
    }
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_input_exits_2_and_changes_nothing() {
    let env = start(3, Duration::from_millis(100)).await;
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let two = file(
        "two.yaml",
        &format!("{n}---\n{n}", n = support::NGINX_119_1),
    );
    let deploy = file(
        "deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
    );
    let empty = file(
        "empty.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n",
    );
    let ours = ["nginx", "--strategy", "advanced-rolling-update", "-y"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--image", "nginx:2", "--max-unavailable", "0"],
            "would never start a node",
        ),
        (
            vec!["--image", "nginx:2", "--max-unavailable", "150%"],
            "cannot exceed 100%",
        ),
        (
            vec!["--image", "nginx:2", "--max-unavailable", "-1"],
            "--max-unavailable",
        ),
        (
            vec!["--image", "nginx:2", "--max-unavailable", "ten"],
            "--max-unavailable",
        ),
        (
            vec!["--image", "nginx:2", "--partition", "101%"],
            "--partition",
        ),
        (
            vec!["--image", "nginx:2", "--priority", "zone=a"],
            "--priority",
        ),
        (vec!["--image", "nginx:2", "--selector", "=a"], "--selector"),
        (
            vec!["--image", "nginx:2", "--manifest", "../etc/passwd"],
            "invalid manifest name",
        ),
        (
            vec!["--image", "nginx:2", "--manifest", "a/b"],
            "invalid manifest name",
        ),
        (vec!["-f", &two], "2 documents"),
        (vec!["-f", &deploy], "expected a v1 Pod"),
        (vec!["-f", &empty], "containers"),
        (
            vec!["--image", "sidecar=nginx:2"],
            "no container named \"sidecar\"",
        ),
    ];
    for (extra, msg) in cases {
        let mut a = vec!["upgrade"];
        a.extend(ours);
        a.extend(extra.iter().copied());
        let run = yurtctl(&env, &a).await;
        assert_eq!(run.code, 2, "{a:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(msg),
            "{a:?}: want {msg:?} in {}",
            run.stderr
        );
    }
    assert!(
        Api::<ConfigMap>::namespaced(env.client.clone(), "default")
            .get_opt("yurt-static-set-nginx")
            .await
            .unwrap()
            .is_none()
    );
    for w in &env.workers {
        assert!(manifest_on(&env, w).contains("nginx:1.19.1"));
    }
    env.sim.shutdown().await;
}

/// Calls the node's YurtHub endpoint as the node's owner would (through the sim's proxy).
fn yurthub_post(sim: &Sim, node: &str, path: &str) -> (String, String) {
    let token = sim.shared().api.token.clone();
    let out = std::process::Command::new("curl")
        .args(["-s", "-X", "POST", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!(
            "{}/yurtsim/v1/nodes/{node}/yurthub{path}",
            sim.url()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.to_string(), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn yurthubs_ota_endpoint_accepts_the_conditions_and_configmap_yurtctl_writes() {
    let env = start(2, Duration::from_millis(100)).await;
    std::fs::write(
        env.sim.node_root("worker-1").join("etc/kubernetes/manifests/yurt-hub.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\n  namespace: kube-system\n  labels: {k8s-app: yurt-hub}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: yurt-hub, image: openyurt/yurthub:v1.6.0}\n",
    )
    .unwrap();
    let upgrade = "/openyurt.io/v1/namespaces/default/pods/nginx-worker-1/upgrade";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    // Before any OTA revision: YurtHub's pre-check refuses (no PodNeedUpgrade=True).
    loop {
        let (code, body) = yurthub_post(&env.sim, "worker-1", upgrade);
        if code == "403" {
            assert!(body.starts_with("Pre check update pod failed"), "{body}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "yurt-hub never served: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ota = [
        "upgrade",
        "nginx",
        "--image",
        "nginx:1.19.2",
        "--strategy",
        "ota",
        "-y",
    ];
    assert_eq!(yurtctl(&env, &ota).await.code, 0);
    let (code, body) = yurthub_post(&env.sim, "worker-1", upgrade);
    assert_eq!(
        (code.as_str(), body.as_str()),
        ("200", "Start updating pod default/nginx-worker-1")
    );
    assert!(manifest_on(&env, "worker-1").contains("nginx:1.19.2"));
    assert!(manifest_on(&env, "worker-2").contains("nginx:1.19.1"));
    wait_until(&env, "worker-1 runs the new revision", |p| {
        p.get("worker-1")
            .is_some_and(|p| ready(p) && image(p) == "nginx:1.19.2")
    })
    .await;
    // The next run refreshes the conditions: the new mirror pod is up to date.
    assert_eq!(yurtctl(&env, &ota).await.code, 0);
    let pods = mirror_pods(&env).await;
    assert_eq!(
        condition(&pods["worker-1"], "PodNeedUpgrade").as_deref(),
        Some("False")
    );
    assert_eq!(
        condition(&pods["worker-2"], "PodNeedUpgrade").as_deref(),
        Some("True")
    );
    let st = yurtctl(&env, &["status", "nginx", "-o", "json"])
        .await
        .json();
    assert_eq!(st["upgraded"], 1, "{st:#}");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn min_ready_seconds_holds_the_slot_until_the_new_pod_has_been_ready_that_long() {
    let env = start(3, Duration::from_millis(100)).await;
    let run = yurtctl(
        &env,
        &args(
            &UPGRADE,
            &[
                "--max-unavailable",
                "1",
                "--min-ready-seconds",
                "1",
                "-y",
                "-o",
                "json",
            ],
        ),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    for w in &env.workers {
        assert_eq!(node_result(&r, w), "upgraded");
    }
    env.sim.shutdown().await;
}

const WEB_119_1: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: nginx:1.19.1
";

/// A second static pod `web` on every worker (from `web.yaml`), Ready.
async fn install_web(env: &Env) {
    for n in &env.workers {
        let dir = env.sim.node_root(n).join("etc/kubernetes/manifests");
        std::fs::write(dir.join("web.yaml"), WEB_119_1).unwrap();
    }
    let api: Api<Pod> = Api::namespaced(env.client.clone(), "default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pods = api.list(&Default::default()).await.unwrap().items;
        let ready_web = env
            .workers
            .iter()
            .filter(|w| {
                pods.iter()
                    .any(|p| p.metadata.name.as_deref() == Some(&format!("web-{w}")) && ready(p))
            })
            .count();
        if ready_web == env.workers.len() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for web pods"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn lease(env: &Env, name: &str) -> Option<k8s_openapi::api::coordination::v1::Lease> {
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(env.client.clone(), "default")
        .get_opt(name)
        .await
        .unwrap()
}

async fn configmap(env: &Env) -> Option<ConfigMap> {
    Api::<ConfigMap>::namespaced(env.client.clone(), "default")
        .get_opt("yurt-static-set-nginx")
        .await
        .unwrap()
}

async fn jobs(env: &Env) -> Vec<String> {
    Api::<Job>::namespaced(env.client.clone(), "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect()
}

/// Holds the rollout lock of static pod `pod` as another user would (a live run: renewed).
async fn hold_lock(env: &Env, pod: &str, who: &str) -> yurtctl::cluster::lock::LockGuard {
    use yurtctl::cluster::lock::{LockOptions, acquire};
    use yurtctl::cluster::{Cluster, RateLimiter};
    let other = Cluster::new(env.client.clone(), RateLimiter::unlimited());
    acquire(
        &other,
        LockOptions {
            identity: who.into(),
            namespace: "default".into(),
            name: format!("yurtctl-staticpod-{pod}"),
            duration: Duration::from_secs(30),
            command: "staticpod upgrade".into(),
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_rollout_of_the_same_static_pod_exits_6_and_changes_nothing() {
    let env = start(3, Duration::from_millis(100)).await;
    install_web(&env).await;
    let alice = "alice@ops-laptop/42#0badcafe";
    let guard = hold_lock(&env, "nginx", alice).await;

    env.sim.metrics().reset();
    for strategy in ["advanced-rolling-update", "ota"] {
        let run = yurtctl(
            &env,
            &[
                "upgrade",
                "nginx",
                "--image",
                "nginx:1.19.2",
                "--strategy",
                strategy,
                "-y",
            ],
        )
        .await;
        assert_eq!(run.code, 6, "{strategy}: {}", run.stderr);
        for want in [
            &format!("a staticpod upgrade run by {alice}, since "),
            "default/yurtctl-staticpod-nginx",
            "--force-unlock",
        ] {
            assert!(run.stderr.contains(want), "want {want:?} in {}", run.stderr);
        }
    }
    // What the cluster shows wrong (no stored revision yet) while the lock is held: exit 6
    // naming the run, whose half-way state may be why.
    let rollback = yurtctl(&env, &["rollback", "nginx", "-y"]).await;
    assert_eq!(rollback.code, 6, "{}", rollback.stderr);
    assert!(
        rollback
            .stderr
            .contains(&format!("a staticpod upgrade run by {alice}")),
        "{}",
        rollback.stderr
    );
    // A dry run takes no lock, and says that a rollout is in progress.
    let dry = yurtctl(&env, &args(&UPGRADE, &["--dry-run"])).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stderr
            .contains(&format!("warning: a staticpod upgrade run by {alice}")),
        "{}",
        dry.stderr
    );
    assert_eq!(
        env.sim.metrics().total(Some("yurtctl"), true),
        0,
        "a refused run writes nothing: {:#}",
        env.sim.metrics().to_json()
    );
    assert!(configmap(&env).await.is_none());
    assert_eq!(jobs(&env).await, Vec::<String>::new());
    for (w, p) in mirror_pods(&env).await {
        assert_eq!(condition(&p, "PodNeedUpgrade"), None, "{w}");
        assert!(manifest_on(&env, &w).contains("nginx:1.19.1"), "{w}");
    }
    assert_eq!(
        lease(&env, "yurtctl-staticpod-nginx")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some(alice),
        "the holder's lock is untouched"
    );

    // With no run holding it, the same refusals are exit 3 and 2 on a read-only look: not even
    // the lock is written.
    guard.release().await.unwrap();
    env.sim.metrics().reset();
    let rollback = yurtctl(&env, &["rollback", "nginx", "-y"]).await;
    assert_eq!(rollback.code, 3, "{}", rollback.stderr);
    assert!(
        rollback.stderr.contains("has no recorded revisions"),
        "{}",
        rollback.stderr
    );
    let nowhere = yurtctl(
        &env,
        &args(&UPGRADE, &["--selector", "no-such-label=1", "-y"]),
    )
    .await;
    assert_eq!(nowhere.code, 3, "{}", nowhere.stderr);
    assert!(
        nowhere.stderr.contains("matches --selector"),
        "{}",
        nowhere.stderr
    );
    let ota = yurtctl(&env, &["ota", "apply", "nginx", "--node", "ghost", "-y"]).await;
    assert_eq!(ota.code, 3, "{}", ota.stderr);
    assert!(
        ota.stderr.contains("has no stored revision"),
        "{}",
        ota.stderr
    );
    assert_eq!(
        env.sim.metrics().total(Some("yurtctl"), true),
        0,
        "refused on a read-only look: {:#}",
        env.sim.metrics().to_json()
    );
    let guard = hold_lock(&env, "nginx", alice).await;

    // Another static pod is not blocked; the stale lease a crashed run left is taken over.
    let stale: k8s_openapi::api::coordination::v1::Lease =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "yurtctl-staticpod-web", "namespace": "default"},
            "spec": {"holderIdentity": "bob@crashed/7#deadbeef", "leaseDurationSeconds": 60,
                     "acquireTime": "2020-01-01T00:00:00.000000Z",
                     "renewTime": "2020-01-01T00:00:00.000000Z"}
        }))
        .unwrap();
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(env.client.clone(), "default")
        .create(&Default::default(), &stale)
        .await
        .unwrap();
    let web = yurtctl(
        &env,
        &[
            "upgrade",
            "web",
            "--image",
            "nginx:1.19.2",
            "--strategy",
            "advanced-rolling-update",
            "--max-unavailable",
            "3",
            "-y",
        ],
    )
    .await;
    assert_eq!(web.code, 0, "{}", web.stderr);
    for w in &env.workers {
        let m = std::fs::read_to_string(
            env.sim
                .node_root(w)
                .join("etc/kubernetes/manifests/web.yaml"),
        )
        .unwrap();
        assert!(m.contains("nginx:1.19.2"), "{w}");
    }
    assert!(
        lease(&env, "yurtctl-staticpod-web").await.is_none(),
        "released at the end"
    );

    // --force-unlock takes the lock over and the rollout proceeds.
    let forced = yurtctl(
        &env,
        &args(
            &UPGRADE,
            &["--max-unavailable", "3", "--force-unlock", "-y"],
        ),
    )
    .await;
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(
        forced.stderr.contains(&format!(
            "removed the lock default/yurtctl-staticpod-nginx held by {alice}"
        )),
        "{}",
        forced.stderr
    );
    for w in &env.workers {
        assert!(manifest_on(&env, w).contains("nginx:1.19.2"), "{w}");
    }
    assert!(lease(&env, "yurtctl-staticpod-nginx").await.is_none());
    drop(guard);

    // rollback and ota apply are refused the same way while someone holds the lock.
    let carol = "carol@ci/9#cafe0001";
    let guard = hold_lock(&env, "nginx", carol).await;
    let before = configmap(&env).await.unwrap().metadata.resource_version;
    for cmd in [
        vec!["rollback", "nginx", "-y"],
        vec!["ota", "apply", "nginx", "--node", "worker-1", "-y"],
    ] {
        let run = yurtctl(&env, &cmd).await;
        assert_eq!(run.code, 6, "{cmd:?}: {}", run.stderr);
        assert!(run.stderr.contains(carol), "{}", run.stderr);
    }
    assert_eq!(
        configmap(&env).await.unwrap().metadata.resource_version,
        before
    );
    assert_eq!(jobs(&env).await, Vec::<String>::new());
    guard.release().await.unwrap();
    env.sim.shutdown().await;
}

/// Reads `status --watch` output line by line.
struct Watching {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: Vec<String>,
}

impl Watching {
    fn start(env: &Env, extra: &[&str]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = command(env, &args(&["status", "nginx", "--watch"], extra))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Watching {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    async fn next_line(&mut self) -> Option<String> {
        let l = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no output from status --watch; so far:\n{:#?}", self.seen))
            .unwrap();
        if let Some(l) = &l {
            self.seen.push(l.clone());
        }
        l
    }

    /// The next `nginx` row of the table: (TOTAL, READY, UPGRADED).
    async fn next_row(&mut self) -> (u64, u64, u64) {
        loop {
            let l = self.next_line().await.expect("watch output ended early");
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.first() == Some(&"nginx") {
                return (
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                );
            }
        }
    }

    /// The next JSON document (pretty-printed: it ends with a `}` line).
    async fn next_document(&mut self) -> Value {
        let mut doc = String::new();
        loop {
            let l = self.next_line().await.expect("watch output ended early");
            doc.push_str(&l);
            doc.push('\n');
            if l == "}" {
                return serde_json::from_str(&doc).unwrap();
            }
        }
    }

    /// Ctrl-C; returns the exit code and what was printed after.
    async fn interrupt(mut self) -> (Option<i32>, Vec<String>) {
        support::sigint(&self.child);
        let n = self.seen.len();
        while self.next_line().await.is_some() {}
        let status = self.child.wait().await.unwrap();
        (status.code(), self.seen.split_off(n))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_watch_follows_an_upgrade_from_0_to_3_and_stops_cleanly_on_ctrl_c() {
    let env = start_real(3, Duration::from_millis(100)).await;
    let mut table = Watching::start(&env, &[]);
    let mut json = Watching::start(&env, &["-o", "json"]);
    // Before any rollout every node runs the one revision there is.
    assert_eq!(table.next_row().await, (3, 3, 3));
    let first = json.next_document().await;
    assert_eq!(
        (&first["kind"], &first["upgraded"]),
        (&"Status".into(), &3.into())
    );

    // Storing a new revision changes no pod, yet UPGRADED drops to 0: the ConfigMap is watched.
    let paused = yurtctl(&env, &args(&UPGRADE, &["--pause", "-y"])).await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    assert_eq!(table.next_row().await, (3, 3, 0));

    let run = yurtctl(&env, &args(&UPGRADE, &["--max-unavailable", "1", "-y"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Until the last change: every pod upgraded and Ready again.
    let mut upgraded = vec![0];
    loop {
        let row = table.next_row().await;
        upgraded.push(row.2);
        if row == (3, 3, 3) {
            break;
        }
    }
    assert!(
        upgraded.windows(2).all(|w| w[0] <= w[1]),
        "UPGRADED only grows: {upgraded:?}"
    );
    eprintln!("--- status --watch printed:\n{}", table.seen.join("\n"));
    let headers = table.seen.iter().filter(|l| l.starts_with("NAME")).count();
    assert_eq!(headers, 1, "the header is printed once: {:#?}", table.seen);
    // Nothing changes any more: after Ctrl-C it exits 0 without printing again.
    let (code, after) = table.interrupt().await;
    assert_eq!(code, Some(0));
    assert_eq!(after, Vec::<String>::new());

    // -o json: one document per change, each different from the one before, ending at 3.
    let mut docs = vec![first];
    // The last change is the run's final save: every node's last result recorded.
    let done = |d: &Value| {
        d["upgraded"] == 3
            && d["ready"] == 3
            && d["total"] == 3
            && d["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["lastResult"] == "upgraded")
    };
    while !(docs.len() > 1 && done(docs.last().unwrap())) {
        docs.push(json.next_document().await);
    }
    let (code, after) = json.interrupt().await;
    assert_eq!(code, Some(0));
    assert_eq!(after, Vec::<String>::new());
    assert!(docs.iter().all(|d| d["kind"] == "Status"), "{docs:#?}");
    assert!(docs.windows(2).all(|w| w[0] != w[1]), "{docs:#?}");
    assert!(docs.iter().any(|d| d["upgraded"] == 0), "{docs:#?}");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_dry_run_sends_the_writes_with_dry_run_all_and_stores_nothing() {
    let env = start(3, Duration::from_millis(100)).await;
    env.sim.metrics().reset();
    let run = yurtctl(&env, &args(&UPGRADE, &["--dry-run=server", "-o", "json"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = run.json();
    assert_eq!(plan["kind"], "Plan");
    let writes = plan["serverDryRun"].as_array().unwrap();
    let objects: Vec<(&str, &str, &str)> = writes
        .iter()
        .map(|w| {
            (
                w["verb"].as_str().unwrap(),
                w["object"].as_str().unwrap(),
                w["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        objects[0],
        (
            "apply",
            "ConfigMap default/yurt-static-set-nginx",
            "accepted"
        )
    );
    // One upgrade Job per node the plan starts.
    assert_eq!(objects.len(), 1 + env.workers.len(), "{plan:#}");
    for (w, o) in env.workers.iter().zip(&objects[1..]) {
        assert_eq!((o.0, o.2), ("create", "accepted"));
        assert!(
            o.1.starts_with("Job default/") && o.1.contains(w.as_str()),
            "{o:?}"
        );
    }
    // The writes reached the server, and nothing was stored.
    assert_eq!(env.sim.metrics().count("create", "jobs.batch"), 3);
    assert_eq!(env.sim.metrics().count("patch", "configmaps"), 1);
    assert!(configmap(&env).await.is_none());
    assert_eq!(jobs(&env).await, Vec::<String>::new());

    let text = yurtctl(&env, &args(&UPGRADE, &["--dry-run=server"])).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout
            .contains("server dry run: 4 of 4 writes accepted"),
        "{}",
        text.stdout
    );

    // ota: the store and the PodNeedUpgrade patches, none applied.
    let ota = yurtctl(
        &env,
        &[
            "upgrade",
            "nginx",
            "--image",
            "nginx:1.19.2",
            "--strategy",
            "ota",
            "--dry-run=server",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(ota.code, 0, "{}", ota.stderr);
    let ota = ota.json();
    let patches: Vec<&Value> = ota["serverDryRun"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["verb"] == "patch")
        .collect();
    assert_eq!(patches.len(), 3, "{ota:#}");
    assert!(patches.iter().all(|w| w["result"] == "accepted"));
    for (w, p) in mirror_pods(&env).await {
        assert_eq!(condition(&p, "PodNeedUpgrade"), None, "{w}");
    }

    // A write the server refuses: exit 3 with the server's message, still nothing stored.
    env.sim.faults().deny("create", "jobs.batch");
    let refused = yurtctl(&env, &args(&UPGRADE, &["--dry-run=server", "-o", "json"])).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("the API server would refuse create Job default/"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("forbidden"), "{}", refused.stderr);
    let r = refused.json();
    assert!(
        r["serverDryRun"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["result"] == "refused"
                && w["message"].as_str().unwrap().contains("forbidden")),
        "{r:#}"
    );
    env.sim.faults().clear();
    assert!(configmap(&env).await.is_none());
    assert_eq!(jobs(&env).await, Vec::<String>::new());

    // rollback and ota apply: the same, against the store a real upgrade left.
    let real = yurtctl(&env, &args(&UPGRADE, &["--max-unavailable", "3", "-y"])).await;
    assert_eq!(real.code, 0, "{}", real.stderr);
    let before = configmap(&env).await.unwrap().metadata.resource_version;
    let back = yurtctl(
        &env,
        &["rollback", "nginx", "--dry-run=server", "-o", "json"],
    )
    .await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    let back = back.json();
    let creates = back["serverDryRun"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["verb"] == "create" && w["result"] == "accepted")
        .count();
    assert_eq!(
        creates, 3,
        "a Job for every node the rollback plans: {back:#}"
    );
    let apply = yurtctl(
        &env,
        &[
            "ota",
            "apply",
            "nginx",
            "--node",
            "worker-2",
            "--dry-run=server",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert_eq!(
        configmap(&env).await.unwrap().metadata.resource_version,
        before
    );
    assert_eq!(jobs(&env).await, Vec::<String>::new());
    for w in &env.workers {
        assert!(manifest_on(&env, w).contains("nginx:1.19.2"), "{w}");
    }
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollout_whose_lock_is_taken_over_stops_at_its_next_renewal() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    use yurtctl::cluster::lock::force_unlock_of;
    use yurtctl::cluster::{Cluster, RateLimiter};
    let env = start(2, Duration::from_millis(100)).await;
    // The first node's new pod never gets Ready: the run waits (and renews its lock) for the
    // whole --node-timeout.
    env.sim.faults().never_ready("nginx:9.9.9");
    let mut child = command(
        &env,
        &[
            "upgrade",
            "nginx",
            "--image",
            "nginx:9.9.9",
            "--strategy",
            "advanced-rolling-update",
            "--max-unavailable",
            "1",
            "-y",
        ],
    )
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    while !seen.contains(": upgrading") {
        let l = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("a node starts")
            .unwrap()
            .unwrap_or_else(|| panic!("stderr ended early:\n{seen}"));
        seen.push_str(&l);
        seen.push('\n');
    }
    // Someone forces the lock away and holds it.
    let other = Cluster::new(env.client.clone(), RateLimiter::unlimited());
    let prev = force_unlock_of(&other, "default", "yurtctl-staticpod-nginx")
        .await
        .unwrap()
        .expect("the run held its lock");
    assert!(prev.identity.contains('@'), "{prev:?}");
    let mallory = hold_lock(&env, "nginx", "mallory@elsewhere/1#00000001").await;
    // The renewal (every 20 s) notices and the run stops.
    while let Some(l) = tokio::time::timeout(Duration::from_secs(90), lines.next_line())
        .await
        .expect("the run notices the lost lock")
        .unwrap()
    {
        seen.push_str(&l);
        seen.push('\n');
    }
    let status = child.wait().await.unwrap();
    eprintln!("--- the run:\n{seen}");
    assert_eq!(status.code(), Some(1), "{seen}");
    assert!(
        seen.contains("was taken over by mallory@elsewhere/1#00000001"),
        "{seen}"
    );
    assert_eq!(
        lease(&env, "yurtctl-staticpod-nginx")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("mallory@elsewhere/1#00000001"),
        "the stopped run leaves the new holder's lock alone"
    );
    mallory.release().await.unwrap();
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_goes_not_ready_after_its_upgrade_halts_the_rollout() {
    let env = start(4, Duration::from_millis(800)).await;
    // the first node upgraded (name order: worker-1) goes NotReady right after
    let (code, seen) = support::act_at(
        command(&env, &args(&UPGRADE, &["--max-unavailable", "1", "-y"])),
        |l| l.contains("worker-1: upgraded"),
        |_| env.sim.set_node_ready("worker-1", false).unwrap(),
    )
    .await;
    assert_eq!(code, Some(4), "{seen}");
    assert!(
        seen.contains("node worker-1: went NotReady after its upgrade"),
        "the reason names the node:\n{seen}"
    );
    // the rollout stopped: the last node in order was never started
    assert!(!seen.contains("node worker-4: upgrading"), "{seen}");
    assert!(manifest_on(&env, "worker-4").contains("nginx:1.19.1"));
    env.sim.shutdown().await;
}

/// A cluster of `nodes` nodes (Kubernetes 1.30, kubeadm) converted with profile openyurt-v1.6,
/// whose YurtHub is a static pod in a YurtStaticSet, so yurt-manager (the yurtsim model) runs
/// its YurtStaticSet controller on `yurt-hub`.
async fn converted(nodes: usize) -> (support::SimEnv, Client) {
    let env = support::start_sim(nodes, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.30.2".into()
    })
    .await;
    let client = support::kube_client(&env.sim).await;
    let convert = support::yurtctl(
        &env.sim,
        &[
            "convert",
            "-y",
            "--profile",
            "openyurt-v1.6",
            "--servant-image",
            "openyurt/yurtctl:test",
            "--job-timeout",
            "60s",
        ],
    )
    .await;
    assert_eq!(convert.code, 0, "{}", convert.stderr);
    (env, client)
}

fn yurt_static_sets(client: &Client, ns: &str) -> Api<kube::api::DynamicObject> {
    use kube::api::{ApiResource, GroupVersionKind};
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "YurtStaticSet"),
        "yurtstaticsets",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// The `yurt-hub` YurtStaticSet convert creates, with yurt-manager's controller (the yurtsim
/// model) running: yurtctl changes the set's template and holds its strategy at OTA while it
/// drives the nodes (`--partition 1` leaves one behind and keeps the hold), a second run
/// completes the rollout and puts the user's strategy back. The ConfigMap only ever moves
/// forward (the controller never rewrites it against yurtctl) and no node goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_yurt_static_set_is_the_source_of_truth_and_the_controller_never_fights() {
    use kube::api::DynamicObject;
    use yurtsim::models::yurt_manager::template_hash;
    let (env, client) = converted(3).await;
    let sim = &env.sim;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let hash_of = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("openyurt.io/static-pod-hash"))
            .cloned()
            .unwrap_or_default()
    };
    let first = hash_of(&cms.get("yurt-static-set-yurt-hub").await.unwrap());
    // every hash the ConfigMap carries, in order
    let hashes = std::sync::Arc::new(std::sync::Mutex::new(vec![first.clone()]));
    let recorder = {
        let (cms, hashes) = (cms.clone(), hashes.clone());
        tokio::spawn(async move {
            let cfg = watcher::Config::default().fields("metadata.name=yurt-static-set-yurt-hub");
            let mut s = watcher(cms, cfg).applied_objects().boxed();
            while let Some(Ok(cm)) = s.next().await {
                let h = hash_of(&cm);
                let mut seen = hashes.lock().unwrap();
                if seen.last() != Some(&h) {
                    seen.push(h);
                }
            }
        })
    };
    let sets = yurt_static_sets(&client, "kube-system");
    let before = sets.get("yurt-hub").await.unwrap();
    let user_strategy = before.data["spec"]["upgradeStrategy"].clone();
    assert_eq!(user_strategy["type"], "AdvancedRollingUpdate");

    let upgrade = |more: &'static [&'static str]| {
        let mut a = vec![
            "staticpod",
            "upgrade",
            "yurt-hub",
            "-n",
            "kube-system",
            "--image",
            "yurt-hub=openyurt/yurthub:v1.6.2",
            "--strategy",
            "advanced-rolling-update",
            "--servant-image",
            "openyurt/yurtctl:test",
            "-y",
            "-o",
            "json",
        ];
        a.extend_from_slice(more);
        async move { support::yurtctl(sim, &a).await }
    };
    let partial = upgrade(&["--partition", "1", "--max-unavailable", "1"]).await;
    assert_eq!(partial.code, 0, "{}", partial.stderr);
    let held = sets.get("yurt-hub").await.unwrap();
    let template = &held.data["spec"]["template"];
    assert_eq!(
        template["spec"]["containers"][0]["image"],
        "openyurt/yurthub:v1.6.2"
    );
    assert_eq!(
        held.data["spec"]["upgradeStrategy"],
        serde_json::json!({"type": "OTA"})
    );
    assert!(
        partial.stderr.contains("stays on upgradeStrategy OTA"),
        "{}",
        partial.stderr
    );
    // the revision yurtctl rolled out is the one the controller computes from the template
    let cm = cms.get("yurt-static-set-yurt-hub").await.unwrap();
    let target = template_hash(template);
    assert_eq!(hash_of(&cm), target);
    assert_eq!(partial.json()["revision"], target.as_str());
    let on_target = |pods: &BTreeMap<String, Pod>| {
        pods.values()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("openyurt.io/static-pod-hash"))
                    == Some(&target)
            })
            .count()
    };
    let hubs = || mirror_pods_of(&client, "kube-system", "yurt-hub");
    assert_eq!(
        on_target(&hubs().await),
        1,
        "--partition 1 leaves one of two"
    );
    // `staticpod status` shows what `kubectl get yurtstaticsets` shows
    let counts = |o: &DynamicObject| {
        ["totalNumber", "readyNumber", "upgradedNumber"].map(|k| o.data["status"][k].as_u64())
    };
    let settled = |want: [u64; 3]| {
        let sets = sets.clone();
        async move {
            for _ in 0..200 {
                let o = sets.get("yurt-hub").await.unwrap();
                if counts(&o) == want.map(Some) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("the YurtStaticSet's status never reached {want:?}");
        }
    };
    let status = || async {
        let r = support::yurtctl(
            sim,
            &[
                "staticpod",
                "status",
                "yurt-hub",
                "-n",
                "kube-system",
                "-o",
                "json",
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json()
    };
    settled([2, 2, 1]).await;
    let s = status().await;
    assert_eq!([&s["total"], &s["ready"], &s["upgraded"]], [2, 2, 1]);
    assert_eq!(s["yurtStaticSet"]["upgradeStrategy"]["type"], "OTA");
    assert_eq!(s["yurtStaticSet"]["heldUpgradeStrategy"], user_strategy);

    let rest = upgrade(&[]).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let after = sets.get("yurt-hub").await.unwrap();
    assert_eq!(after.data["spec"]["upgradeStrategy"], user_strategy);
    assert!(
        !after
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("staticpod.yurtctl.openyurt.io/held-upgrade-strategy")
    );
    assert_eq!(after.data["spec"]["template"], *template);
    assert_eq!(on_target(&hubs().await), 2);
    settled([2, 2, 2]).await;
    let s = status().await;
    assert_eq!([&s["total"], &s["ready"], &s["upgraded"]], [2, 2, 2]);
    assert_eq!(s["yurtStaticSet"]["upgradeStrategy"], user_strategy);
    assert!(s["yurtStaticSet"].get("heldUpgradeStrategy").is_none());
    // give the controller a moment to disagree, then look at what the ConfigMap went through
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        hash_of(&cms.get("yurt-static-set-yurt-hub").await.unwrap()),
        target
    );
    recorder.abort();
    assert_eq!(*hashes.lock().unwrap(), vec![first, target]);
    env.sim.shutdown().await;
}

/// The seed's scenario through `adopt`: static pod nginx (1.19.1) on the workers of a
/// converted cluster is handed to yurt-manager, which renders it and counts every node as
/// upgraded; an upgrade to 1.19.2 then goes through the set, and status agrees with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adopt_hands_a_static_pod_to_yurt_manager_and_upgrades_go_through_the_set() {
    use yurtsim::models::yurt_manager::template_hash;
    let (env, client) = converted(4).await;
    let sim = &env.sim;
    let workers = install_nginx(sim);
    assert_eq!(workers.len(), 3);
    let running = |want: &'static str| {
        let (client, workers) = (client.clone(), workers.clone());
        async move {
            for _ in 0..400 {
                let pods = mirror_pods_of(&client, "default", "nginx").await;
                let ok = workers
                    .iter()
                    .all(|w| pods.get(w).is_some_and(|p| ready(p) && image(p) == want));
                if ok {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("nginx {want} never ran Ready on every worker");
        }
    };
    running("nginx:1.19.1").await;

    // with yurt-manager leading, a rollout without a YurtStaticSet would lose its store: its
    // controller deletes yurt-static-set-nginx on the next mirror pod change
    for args in [
        &SET_UPGRADE[..],
        &[
            "staticpod",
            "ota",
            "apply",
            "nginx",
            "--node",
            &workers[0],
            "-y",
        ][..],
    ] {
        let plain = support::yurtctl(sim, args).await;
        assert_eq!(plain.code, 3, "{args:?}: {}", plain.stderr);
        assert!(
            plain
                .stderr
                .contains("its YurtStaticSet controller deletes")
                && plain
                    .stderr
                    .contains("yurtctl staticpod adopt nginx -n default"),
            "{}",
            plain.stderr
        );
    }

    let adopt = support::yurtctl(sim, &["staticpod", "adopt", "nginx", "-y"]).await;
    assert_eq!(adopt.code, 0, "{}", adopt.stderr);
    assert!(
        adopt.stderr.contains("rendered it as revision"),
        "{}",
        adopt.stderr
    );
    let sets = yurt_static_sets(&client, "default");
    let set = sets.get("nginx").await.unwrap();
    assert_eq!(set.data["spec"]["staticPodManifest"], "nginx");
    assert_eq!(
        set.data["spec"]["upgradeStrategy"]["type"],
        "AdvancedRollingUpdate"
    );
    let template = set.data["spec"]["template"].clone();
    assert_eq!(template["spec"]["containers"][0]["image"], "nginx:1.19.1");
    let cm = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .get("yurt-static-set-nginx")
        .await
        .unwrap();
    assert_eq!(
        cm.metadata.annotations.unwrap()["openyurt.io/static-pod-hash"],
        template_hash(&template)
    );
    let again = support::yurtctl(sim, &["staticpod", "adopt", "nginx", "-y"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);

    let status = |want: [u64; 3]| async move {
        let mut s = serde_json::Value::Null;
        for _ in 0..200 {
            let r = support::yurtctl(sim, &["staticpod", "status", "nginx", "-o", "json"]).await;
            assert_eq!(r.code, 0, "{}", r.stderr);
            s = r.json();
            if [&s["total"], &s["ready"], &s["upgraded"]]
                == want.map(serde_json::Value::from).each_ref()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("status never showed {want:?}: {s:#}");
    };
    // the running pods match the template: the controller counts them as upgraded
    status([3, 3, 3]).await;

    let up = support::yurtctl(sim, &SET_UPGRADE).await;
    assert_eq!(up.code, 0, "{}", up.stderr);
    running("nginx:1.19.2").await;
    status([3, 3, 3]).await;
    let set = sets.get("nginx").await.unwrap();
    assert_eq!(
        set.data["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.19.2"
    );
    assert_eq!(
        set.data["spec"]["upgradeStrategy"]["type"],
        "AdvancedRollingUpdate"
    );
    env.sim.shutdown().await;
}

/// The seed's upgrade of nginx to 1.19.2, as yurtctl's tests run it on a converted cluster.
const SET_UPGRADE: [&str; 10] = [
    "staticpod",
    "upgrade",
    "nginx",
    "--image",
    "nginx:1.19.2",
    "--strategy",
    "advanced-rolling-update",
    "--servant-image",
    "openyurt/yurtctl:test",
    "-y",
];

/// Converts a cluster with `openyurt-v1.6` and hands the seed's nginx 1.19.1 on the three
/// workers to yurt-manager (`staticpod adopt`): a YurtStaticSet with the user's
/// AdvancedRollingUpdate strategy manages it.
async fn adopted_nginx() -> (support::SimEnv, Client, Vec<String>) {
    let (env, client) = converted(4).await;
    let workers = install_nginx(&env.sim);
    for _ in 0..400 {
        let pods = mirror_pods_of(&client, "default", "nginx").await;
        if workers.iter().all(|w| pods.get(w).is_some_and(ready)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let adopt = support::yurtctl(&env.sim, &["staticpod", "adopt", "nginx", "-y"]).await;
    assert_eq!(adopt.code, 0, "{}", adopt.stderr);
    (env, client, workers)
}

/// Every revision each node's nginx mirror pod shows, in order, as a watch sees them.
type Revisions = std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<String>>>>;

fn record_revisions(client: &Client) -> (tokio::task::JoinHandle<()>, Revisions) {
    let seen: Revisions = Default::default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let mut s = watcher(pods, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(Ok(p)) = s.next().await {
            let (Some(node), Some(rev)) = (
                p.spec.as_ref().and_then(|s| s.node_name.clone()),
                p.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("openyurt.io/static-pod-hash"))
                    .cloned(),
            ) else {
                continue;
            };
            if !p
                .metadata
                .name
                .as_deref()
                .unwrap_or("")
                .starts_with("nginx-")
            {
                continue;
            }
            let mut seen = out.lock().unwrap();
            let revs = seen.entry(node).or_default();
            if revs.last() != Some(&rev) {
                revs.push(rev);
            }
        }
    });
    (task, seen)
}

/// `seen` is `targets` in order with some left out: a node only ever moved to a revision
/// yurtctl was rolling out at that point, never back to one on its own.
fn follows(seen: &[String], targets: &[String]) -> bool {
    let mut rest = targets.iter();
    seen.iter().all(|r| rest.any(|t| t == r))
}

/// With a YurtStaticSet managing nginx (the seed's three workers), yurtctl's controls keep
/// working and the controller never disagrees: a canary leaves the set held at OTA and nothing
/// finishes it behind yurtctl's back; resuming completes it (TOTAL 3, READY 3, UPGRADED 3) and
/// puts the user's strategy back; a rollback goes back through the set; an OTA rollout is
/// completed through YurtHub's upgrade endpoint. The ConfigMap carries exactly the revisions
/// yurtctl rolled out, in order, and every node moves only along them. Then Ctrl-C and a node
/// that fails mid-rollout each leave the set with the strategy the user had.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_a_yurt_static_set_every_control_works_and_the_users_strategy_comes_back() {
    let (env, client, workers) = adopted_nginx().await;
    let sim = &env.sim;
    let sets = yurt_static_sets(&client, "default");
    let user_strategy = sets.get("nginx").await.unwrap().data["spec"]["upgradeStrategy"].clone();
    assert_eq!(user_strategy["type"], "AdvancedRollingUpdate");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm_hash = || async {
        cms.get("yurt-static-set-nginx")
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap()["openyurt.io/static-pod-hash"]
            .clone()
    };
    let mut targets = vec![cm_hash().await];
    let (recorder, revisions) = record_revisions(&client);
    let strategy =
        || async { sets.get("nginx").await.unwrap().data["spec"]["upgradeStrategy"].clone() };
    let on = |image: &'static str| {
        let client = client.clone();
        async move {
            let pods = mirror_pods_of(&client, "default", "nginx").await;
            pods.values()
                .filter(|p| ready(p) && self::image(p) == image)
                .count()
        }
    };
    let counts = |want: [u64; 3]| {
        let sets = sets.clone();
        async move {
            let mut got = [None; 3];
            for _ in 0..200 {
                let o = sets.get("nginx").await.unwrap();
                got = ["totalNumber", "readyNumber", "upgradedNumber"]
                    .map(|k| o.data["status"][k].as_u64());
                if got == want.map(Some) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("kubectl get yurtstaticsets nginx shows {got:?}, not {want:?}");
        }
    };
    let rollout = |more: &[&str]| {
        let mut a = vec!["staticpod"];
        a.extend_from_slice(more);
        a.extend([
            "--servant-image",
            "openyurt/yurtctl:test",
            "-y",
            "-o",
            "json",
        ]);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| async move {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        support::yurtctl(sim, &a).await
    };
    let aru = ["--strategy", "advanced-rolling-update"];
    let up_192 = [
        &["upgrade", "nginx", "--image", "nginx:1.19.2"][..],
        &aru[..],
    ]
    .concat();

    // a canary: one node, the set held at OTA, and nothing finishes the rollout meanwhile
    let canary = run(rollout(&[&up_192[..], &["--canary", "1"]].concat())).await;
    assert_eq!(canary.code, 0, "{}", canary.stderr);
    targets.push(canary.json()["revision"].as_str().unwrap().to_string());
    assert_eq!(strategy().await, serde_json::json!({"type": "OTA"}));
    counts([3, 3, 1]).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(on("nginx:1.19.2").await, 1, "the canary alone, still");
    assert_eq!(cm_hash().await, targets[1]);

    // resume: every node, TOTAL 3 READY 3 UPGRADED 3, the user's strategy back
    let rest = run(rollout(&up_192)).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    assert_eq!(on("nginx:1.19.2").await, 3);
    counts([3, 3, 3]).await;
    assert_eq!(strategy().await, user_strategy);

    // a rollback goes through the set: its template and the ConfigMap go back too
    let back = run(rollout(&[&["rollback", "nginx"][..], &aru[..]].concat())).await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    targets.push(back.json()["revision"].as_str().unwrap().to_string());
    assert_eq!(targets[2], targets[0], "back to the first revision");
    assert_eq!(on("nginx:1.19.1").await, 3);
    let set = sets.get("nginx").await.unwrap();
    assert_eq!(
        set.data["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.19.1"
    );
    assert_eq!(set.data["spec"]["upgradeStrategy"], user_strategy);
    counts([3, 3, 3]).await;

    // OTA: pods marked, no node touched, then YurtHub's endpoint upgrades each node
    let ota = [
        &["upgrade", "nginx", "--image", "nginx:1.19.3"][..],
        &["--strategy", "ota"],
    ]
    .concat();
    let marked = run(rollout(&ota)).await;
    assert_eq!(marked.code, 0, "{}", marked.stderr);
    targets.push(marked.json()["revision"].as_str().unwrap().to_string());
    assert_eq!(on("nginx:1.19.1").await, 3, "OTA touches no node itself");
    assert_eq!(strategy().await, serde_json::json!({"type": "OTA"}));
    for w in &workers {
        let path = format!("/openyurt.io/v1/namespaces/default/pods/nginx-{w}/upgrade");
        let (code, body) = yurthub_post(sim, w, &path);
        assert_eq!(code, "200", "{w}: {body}");
    }
    for _ in 0..400 {
        if on("nginx:1.19.3").await == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(on("nginx:1.19.3").await, 3);
    // the run after the last node: conditions refreshed, the user's strategy back
    let done = run(rollout(&ota)).await;
    assert_eq!(done.code, 0, "{}", done.stderr);
    counts([3, 3, 3]).await;
    assert_eq!(strategy().await, user_strategy);
    tokio::time::sleep(Duration::from_secs(2)).await;
    recorder.abort();
    assert_eq!(cm_hash().await, targets[3]);
    for (node, seen) in revisions.lock().unwrap().iter() {
        assert!(
            follows(seen, &targets),
            "{node} went {seen:?}; yurtctl rolled out {targets:?}"
        );
    }

    // A stopped run gives the set back as it was before the run: its template and the stored
    // revision go back, so yurt-manager (the user's AdvancedRollingUpdate again) returns the
    // nodes the run moved, spreads nothing, and `staticpod status` agrees with the set.
    let given_back = |revision: &String, image: &'static str, output: &str| {
        let (revision, output) = (revision.clone(), output.to_string());
        let (sets, client) = (sets.clone(), client.clone());
        async move {
            let set = sets.get("nginx").await.unwrap();
            assert_eq!(
                set.data["spec"]["template"]["spec"]["containers"][0]["image"], image,
                "{output}"
            );
            assert_eq!(cm_hash().await, revision, "{output}");
            let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
            let mut workers_left = usize::MAX;
            for _ in 0..600 {
                let back = mirror_pods_of(&client, "default", "nginx")
                    .await
                    .values()
                    .filter(|p| ready(p) && self::image(p) == image)
                    .count();
                workers_left = pods
                    .list(&Default::default())
                    .await
                    .unwrap()
                    .items
                    .iter()
                    .filter(|p| {
                        p.metadata
                            .name
                            .as_deref()
                            .unwrap_or("")
                            .contains("upgrade-worker")
                    })
                    .count();
                if back == 3 && workers_left == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(on(image).await, 3, "every node back on {image}: {output}");
            assert_eq!(workers_left, 0, "yurt-manager's upgrade workers done");
            counts([3, 3, 3]).await;
            let status = run(["staticpod", "status", "nginx", "-o", "json"]
                .map(String::from)
                .to_vec())
            .await;
            assert_eq!(
                status.json()["revision"],
                revision.as_str(),
                "{}",
                status.stdout
            );
        }
    };

    // Ctrl-C mid-rollout: exit 130, the user's strategy back
    let mut cmd = support::yurtctl_command(sim);
    cmd.args(rollout(
        &[
            &["upgrade", "nginx", "--image", "nginx:1.19.4"][..],
            &aru[..],
            &["--max-unavailable", "1", "--min-ready-seconds", "2"],
        ]
        .concat(),
    ));
    let (code, seen) = support::interrupted(cmd, |l| l.contains(": upgraded")).await;
    assert_eq!(code, Some(130), "{seen}");
    assert_eq!(strategy().await, user_strategy, "{seen}");
    given_back(&targets[3], "nginx:1.19.3", &seen).await;

    // a node that fails mid-rollout: exit 4, restored, the user's strategy back
    sim.faults().never_ready("nginx:9.9.9");
    let failing = run(rollout(
        &[
            &["upgrade", "nginx", "--image", "nginx:9.9.9"][..],
            &aru[..],
            &[
                "--max-unavailable",
                "1",
                "--node-timeout",
                "3s",
                "--max-failures",
                "0",
            ],
        ]
        .concat(),
    ))
    .await;
    assert_eq!(failing.code, 4, "{}", failing.stderr);
    assert_eq!(strategy().await, user_strategy);
    given_back(&targets[3], "nginx:1.19.3", &failing.stderr).await;
    env.sim.shutdown().await;
}

/// With no yurt-manager leading, nothing would render a YurtStaticSet's new template: an
/// upgrade is refused at once (exit 3, not a write, not even the lock) instead of waiting for a
/// render that never comes, and `staticpod status` says the set is not reconciled. Once
/// yurt-manager leads and is Ready again the same upgrade goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_yurt_manager_down_a_set_upgrade_is_refused_and_status_says_so() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{DeleteParams, Patch, PatchParams};
    let (env, client, _) = adopted_nginx().await;
    let sim = &env.sim;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "kube-system");
    let scale = |n: i32| {
        let deployments = deployments.clone();
        async move {
            let patch = serde_json::json!({"spec": {"replicas": n}});
            let params = PatchParams::default();
            deployments
                .patch("yurt-manager", &params, &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    let status = || async {
        let r = support::yurtctl(sim, &["staticpod", "status", "nginx", "-o", "json"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        (r.json(), r.stderr)
    };
    scale(0).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    for _ in 0..400 {
        let left = pods.list(&Default::default()).await.unwrap().items;
        if !left.iter().any(|p| {
            p.metadata
                .name
                .as_deref()
                .unwrap_or("")
                .starts_with("yurt-manager-")
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // a stopped leader's Lease expires after its 15 s; deleted, it is gone at once
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    for l in yurtctl::cluster::yurtstaticset::CONTROLLER_LEASES {
        let _ = leases.delete(l, &DeleteParams::default()).await;
    }
    let sets = yurt_static_sets(&client, "default");
    let before = sets.get("nginx").await.unwrap().data;
    sim.metrics().reset();
    let refused = support::yurtctl(sim, &SET_UPGRADE).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("no yurt-manager leads"),
        "{}",
        refused.stderr
    );
    assert_eq!(sim.metrics().total(Some("yurtctl"), true), 0, "not a write");
    assert_eq!(sets.get("nginx").await.unwrap().data, before);
    let (s, warned) = status().await;
    assert_eq!(s["yurtStaticSet"]["controllerRunning"], false, "{s:#}");
    assert!(warned.contains("is not reconciled"), "{warned}");

    scale(1).await;
    let mut leading = false;
    for _ in 0..400 {
        let (s, _) = status().await;
        if s["yurtStaticSet"]["controllerRunning"] == true {
            leading = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(leading, "yurt-manager never led again");
    // its webhooks serve once its readiness probe passed (its pod an endpoint again)
    for _ in 0..400 {
        let d = deployments.get("yurt-manager").await.unwrap();
        if d.status.and_then(|s| s.available_replicas) == Some(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let up = support::yurtctl(sim, &SET_UPGRADE).await;
    assert_eq!(up.code, 0, "{}", up.stderr);
    env.sim.shutdown().await;
}

/// A rollback started while an upgrade of the same static pod runs, at seeded offsets across
/// the upgrade: it exits 6 naming the upgrade before any write (it runs as a read-only
/// identity, so a write would have been refused), and every node ends on the upgrade's image.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollback_during_an_upgrade_exits_6_and_the_upgrade_decides() {
    let env = start(3, Duration::from_millis(300)).await;
    let reader = support::read_only_kubeconfig(&env.sim, env._dir.path(), "racer").await;
    let serial = ["--max-unavailable", "1", "-y"];
    let began = tokio::time::Instant::now();
    let first = yurtctl(&env, &args(&UPGRADE, &serial)).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let upgrade_time = began.elapsed();

    // seeded xorshift: reproducible offsets over 5 %..75 % of the upgrade
    let mut state: u64 = 0x5eed_57a7;
    for (round, target) in ["nginx:1.19.3", "nginx:1.19.4", "nginx:1.19.5"]
        .iter()
        .enumerate()
    {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let offset = upgrade_time.mul_f64(0.05 + 0.70 * (state % 1000) as f64 / 1000.0);
        let upgrade = [
            "upgrade",
            "nginx",
            "--image",
            target,
            "--strategy",
            "advanced-rolling-update",
        ];
        let holder = command(&env, &args(&upgrade, &serial)).spawn().unwrap();
        support::lease_taken(&env.sim, "default", "yurtctl-staticpod-nginx").await;
        tokio::time::sleep(offset).await;
        let racer = support::run(
            command_as(&reader, &["rollback", "nginx", "-y"]),
            &format!("rollback {offset:?} into an upgrade"),
        )
        .await;
        assert_eq!(racer.code, 6, "round {round}, {offset:?}: {}", racer.stderr);
        assert!(
            racer.stderr.contains(
                "(Lease default/yurtctl-staticpod-nginx) is held by a staticpod upgrade run by "
            ),
            "{}",
            racer.stderr
        );
        // (not a bare "403": the holder's random run id may contain it)
        assert!(!racer.stderr.contains("403 Forbidden"), "{}", racer.stderr);
        let out = holder.wait_with_output().await.unwrap();
        assert!(
            out.status.success(),
            "round {round}: the upgrade holding the lock"
        );
        let pods = mirror_pods(&env).await;
        for w in &env.workers {
            assert_eq!(image(&pods[w]), *target, "round {round}: {w}");
        }
    }
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn image_pull_secret_reaches_every_upgrade_job() {
    let env = start(2, Duration::from_millis(100)).await;
    support::create_registry_secret(&env.client, "default", "regcred").await;
    let (watch, pods) = support::new_pods(&env.client).await;
    let run = yurtctl(
        &env,
        &args(
            &UPGRADE,
            &[
                "--max-unavailable",
                "2",
                "--image-pull-secret",
                "regcred",
                "-y",
            ],
        ),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    tokio::time::sleep(Duration::from_secs(1)).await;
    watch.abort();
    // the servant pods of the upgrade Jobs (the new mirror pods are static pods: none)
    let servants: BTreeMap<String, Vec<String>> = pods
        .lock()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let spec = p.spec.as_ref()?;
            (spec.containers[0].name == "servant").then(|| {
                let pulls = spec
                    .image_pull_secrets
                    .iter()
                    .flatten()
                    .map(|r| r.name.clone())
                    .collect();
                (p.metadata.name.clone().unwrap_or_default(), pulls)
            })
        })
        .collect();
    assert_eq!(servants.len(), env.workers.len(), "{servants:?}");
    assert!(
        servants.values().all(|s| s.as_slice() == ["regcred"]),
        "{servants:?}"
    );
    env.sim.shutdown().await;
}

/// Each node's static pod revision, as its mirror pod's config hash says.
async fn mirror_hashes(env: &Env) -> BTreeMap<String, Option<String>> {
    mirror_pods(env)
        .await
        .into_iter()
        .map(|(n, p)| {
            let hash = p
                .metadata
                .annotations
                .and_then(|a| a.get("kubernetes.io/config.hash").cloned());
            (n, hash)
        })
        .collect()
}

/// A pull Secret the node Jobs could not pull with is refused before anything is written: no
/// revision stored, no Job, no lock left — for a Secret that is missing and one of the wrong
/// type, in the static pod's namespace, where the Jobs run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pull_secret_the_jobs_cannot_use_is_refused_before_anything_changes() {
    let env = start(2, Duration::from_millis(100)).await;
    let before = mirror_hashes(&env).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(env.client.clone(), "default");
    let opaque = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "opaque"}, "type": "Opaque", "data": {"x": "eA=="}
    }))
    .unwrap();
    secrets.create(&Default::default(), &opaque).await.unwrap();
    for (secret, problem) in [
        ("regcred", "does not exist"),
        ("opaque", "is of type Opaque"),
    ] {
        let run = yurtctl(
            &env,
            &args(&UPGRADE, &["--image-pull-secret", secret, "-y"]),
        )
        .await;
        assert_eq!(run.code, 3, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "Secret default/{secret} (--image-pull-secret) {problem}"
            )) && run.stderr.contains("kubectl create secret docker-registry")
                && run.stderr.contains("nothing was changed"),
            "{}",
            run.stderr
        );
    }
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let store = yurtctl::cluster::staticset::configmap_name("nginx");
    assert!(
        cms.get_opt(&store).await.unwrap().is_none(),
        "no revision stored"
    );
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), "default");
    assert!(
        jobs.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let after = mirror_hashes(&env).await;
    assert_eq!(before, after);
    // with the Secret there, the same command goes ahead
    support::create_registry_secret(&env.client, "default", "regcred").await;
    let run = yurtctl(
        &env,
        &args(&UPGRADE, &["--image-pull-secret", "regcred", "-y"]),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    env.sim.shutdown().await;
}
