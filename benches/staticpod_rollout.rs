//! API-level benchmark of `yurtctl staticpod upgrade --strategy advanced-rolling-update`
//! against yurtsim: N worker nodes (default 1,000) run static pod `nginx`; each node's new pod
//! becomes Ready after a seeded per-node delay (uniform 1–3 s); the real yurtctl binary
//! upgrades them with `--max-unavailable 10%`.
//!
//! Printed: the makespan ÷ the ideal sliding-window makespan for the same per-node durations
//! (as observed: Job created → mirror pod Ready on the new revision; target ≤ 1.05), the same
//! ratio for a batch-barrier schedule (YurtStaticSet's), API requests per node (yurtsim's
//! metrics by user agent), and yurtctl's peak RSS.
//!
//! `cargo bench --bench staticpod_rollout`; small and cheap for CI:
//! `STATICPOD_BENCH_NODES=20 cargo bench --bench staticpod_rollout`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use yurtsim::{Layout, Sim, SimConfig};

mod support;
use support::PeakRss;

const NGINX: &str = "apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
  - name: web
    image: nginx:1.19.1
";

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: a seeded, dependency-free generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[derive(Default)]
struct Observed {
    created: HashMap<String, Instant>,
    ready: HashMap<String, Instant>,
    order: Vec<String>,
}

/// Greedy list scheduling with `k` slots in `order`, no gap between a finish and the next
/// start: the ideal sliding window for these durations.
fn sliding(durations: &[f64], k: usize) -> f64 {
    let mut slots: BinaryHeap<Reverse<u64>> = (0..k).map(|_| Reverse(0)).collect();
    let mut end = 0u64;
    for d in durations {
        let Reverse(free) = slots.pop().unwrap();
        let done = free + (d * 1e6) as u64;
        end = end.max(done);
        slots.push(Reverse(done));
    }
    end as f64 / 1e6
}

/// Batches of `k` in `order`, each waiting for the slowest of the previous one.
fn barrier(durations: &[f64], k: usize) -> f64 {
    durations
        .chunks(k)
        .map(|c| c.iter().cloned().fold(0.0, f64::max))
        .sum()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = env_num("STATICPOD_BENCH_NODES", 1000) as usize;
    let seed = env_num("STATICPOD_BENCH_SEED", 42);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = SimConfig::for_tests(dir.path().join("state"));
    cfg.nodes = n + 1;
    cfg.layout = Layout::Kubeadm;
    cfg.yurtctl = Some(PathBuf::from(env!("CARGO_BIN_EXE_yurtctl")));
    cfg.history_limit = 200_000;
    let mut rng = Rng(seed.max(1));
    for i in 1..=n {
        let ms = 1000 + rng.next() % 2001;
        cfg.static_pod_ready_delays
            .insert(format!("worker-{i}"), Duration::from_millis(ms));
    }
    let t = Instant::now();
    let sim = Sim::start(cfg).await.expect("sim starts");
    let workers: Vec<String> = sim
        .node_names()
        .into_iter()
        .filter(|w| w.starts_with("worker-"))
        .collect();
    for w in &workers {
        std::fs::write(
            sim.node_root(w).join("etc/kubernetes/manifests/nginx.yaml"),
            NGINX,
        )
        .unwrap();
    }
    let kc = Kubeconfig::read_from(sim.kubeconfig_path()).unwrap();
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    loop {
        let ready = pods
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if ready >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "sim with {n} nodes running nginx in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // Watch Jobs and mirror pods from the bench's side.
    let obs = Arc::new(Mutex::new(Observed::default()));
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (o1, o2) = (obs.clone(), obs.clone());
    let recorder = tokio::spawn(async move {
        let j = watcher(
            jobs,
            watcher::Config::default().labels("yurtctl.openyurt.io/action=sp-up-nginx"),
        )
        .default_backoff()
        .touched_objects()
        .for_each(move |j| {
            let o1 = o1.clone();
            async move {
                let Ok(j) = j else { return };
                let Some(node) = j
                    .spec
                    .and_then(|s| s.template.spec)
                    .and_then(|s| s.node_name)
                else {
                    return;
                };
                let mut o = o1.lock().unwrap();
                if !o.created.contains_key(&node) {
                    o.created.insert(node.clone(), Instant::now());
                    o.order.push(node);
                }
            }
        });
        let p = watcher(pods, watcher::Config::default())
            .default_backoff()
            .touched_objects()
            .for_each(move |p| {
                let o2 = o2.clone();
                async move {
                    let Ok(p) = p else { return };
                    let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                        return;
                    };
                    let upgraded = p
                        .spec
                        .as_ref()
                        .is_some_and(|s| s.containers[0].image.as_deref() == Some("nginx:1.19.2"));
                    let ready = p
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| {
                            c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                        });
                    if upgraded && ready {
                        o2.lock()
                            .unwrap()
                            .ready
                            .entry(node)
                            .or_insert_with(Instant::now);
                    }
                }
            });
        futures::join!(j, p);
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    sim.metrics().reset();

    let start = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .args([
            "staticpod",
            "upgrade",
            "nginx",
            "--image",
            "nginx:1.19.2",
            "--strategy",
            "advanced-rolling-update",
            "--max-unavailable",
            "10%",
            "-y",
            "-q",
            "--qps",
            "500",
            "--burst",
            "1000",
            "-o",
            "json",
            "--kubeconfig",
        ])
        .arg(sim.kubeconfig_path())
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let peak_rss = PeakRss::watch(child.id().unwrap());
    let status = child.wait().await.unwrap();
    let wall = start.elapsed();
    let requests = sim.metrics().total(Some("yurtctl"), false);
    // For comparison: what reading the state alone (one list of pods and nodes) costs.
    let mut st = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .args(["staticpod", "status", "nginx", "-o", "json", "--kubeconfig"])
        .arg(sim.kubeconfig_path())
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_rss = PeakRss::watch(st.id().unwrap());
    st.wait().await.unwrap();
    // Let the recorder see the last Ready.
    tokio::time::sleep(Duration::from_millis(500)).await;
    recorder.abort();
    assert!(status.success(), "yurtctl failed: {status}");

    let o = std::mem::take(&mut *obs.lock().unwrap());
    let durations: Vec<f64> = o
        .order
        .iter()
        .map(|n| {
            let c = o.created[n];
            let r = o.ready.get(n).copied().unwrap_or_else(Instant::now);
            r.saturating_duration_since(c).as_secs_f64()
        })
        .collect();
    let first = o.order.iter().map(|n| o.created[n]).min().unwrap();
    let last = o.ready.values().max().copied().unwrap();
    let makespan = last.saturating_duration_since(first).as_secs_f64();
    let k = n.div_ceil(10).max(1);
    let ideal = sliding(&durations, k);
    let batch = barrier(&durations, k);
    println!("staticpod_rollout: {n} nodes, --max-unavailable 10% = {k}, seed {seed}");
    println!(
        "  upgraded            {} of {n} (yurtctl wall time {:.1}s)",
        o.ready.len(),
        wall.as_secs_f64()
    );
    println!(
        "  makespan            {makespan:.2}s; ideal sliding window {ideal:.2}s; ratio {:.3} (target <= 1.05)",
        makespan / ideal
    );
    println!(
        "  batch barrier       {batch:.2}s; ratio {:.3} (YurtStaticSet-style rounds, for comparison)",
        batch / ideal
    );
    println!(
        "  API requests        {requests} total, {:.2} per node (user agent yurtctl)",
        requests as f64 / n as f64
    );
    println!(
        "  yurtctl peak RSS    {:.1} MiB (`staticpod status` alone: {:.1} MiB)",
        peak_rss.mib_and_cpu().0,
        status_rss.mib_and_cpu().0
    );
    sim.shutdown().await;
}
