//! yurtsim's own benchmark: cluster start-up time and memory at scale, and create / list /
//! watch throughput through kube-rs. Prints measured values and their ratio to the targets
//! (ratio ≤ 1.00 meets the target). `cargo bench -p yurtsim --bench sim`;
//! `YURTSIM_BENCH_NODES=500` for a quick smoke run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use yurtsim::{Layout, Sim, SimConfig};

fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn row(what: &str, value: f64, unit: &str, target: Option<(f64, bool)>) {
    // target: (value, lower_is_better)
    match target {
        Some((t, lower)) => {
            let ratio = if lower { value / t } else { t / value };
            let verdict = if ratio <= 1.0 { "ok" } else { "MISSED" };
            println!(
                "{what:<44} {value:>12.1} {unit:<10} target {}{t:<10} ratio {ratio:>5.2}  {verdict}",
                if lower { "≤ " } else { "≥ " }
            );
        }
        None => println!("{what:<44} {value:>12.1} {unit}"),
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // Same allocator tuning as the yurtsim binary (see src/bin/yurtsim.rs).
    // SAFETY: called before any other thread exists.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let nodes = env_usize("YURTSIM_BENCH_NODES", 5000);
    let objects = env_usize("YURTSIM_BENCH_OBJECTS", 2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = SimConfig::new(dir.path().join("state"));
        cfg.nodes = nodes;
        cfg.layout = Layout::Kubeadm;
        let t0 = Instant::now();
        let sim = Sim::start(cfg).await.expect("sim starts");
        let ready = t0.elapsed().as_secs_f64();
        println!("yurtsim benchmark: {nodes} nodes, {objects} objects, 10 watchers");
        row("start-up until ready", ready, "s", Some((30.0, true)));
        // Settled: every node runs its kube-proxy pod (the DaemonSet reports them all ready,
        // which takes several syncs of 250 pods), then 25 s more, in which every node's Lease
        // and status are rewritten twice.
        let ds = sim.api().info("apps", "daemonsets");
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(300) {
            let ready = sim.api().get(&ds, "kube-system", "kube-proxy").ok().and_then(|d| d["status"]["numberReady"].as_u64());
            if ready.unwrap_or(0) as usize >= nodes {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        row("DaemonSet pod on every node ready after", t.elapsed().as_secs_f64(), "s", None);
        tokio::time::sleep(Duration::from_secs(if nodes >= 1000 { 25 } else { 5 })).await;
        let rss_mib = proc_status_kib("VmRSS:") as f64 / 1024.0;
        row("resident memory after settling", rss_mib, "MiB", Some((1024.0, true)));

        let kc = Kubeconfig::read_from(sim.kubeconfig_path()).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

        // Create throughput with 16 concurrent clients.
        let t = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let cms = cms.clone();
            let next = next.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= objects {
                        break;
                    }
                    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("bench-{i}"), "labels": {"bench": "yes"}}, "data": {"i": i.to_string()}})).unwrap();
                    cms.create(&PostParams::default(), &cm).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        row("create throughput (16 clients)", objects as f64 / t.elapsed().as_secs_f64(), "obj/s", Some((500.0, false)));

        // List throughput: full lists of every object.
        let t = Instant::now();
        let mut listed = 0;
        for _ in 0..10 {
            listed += cms.list(&ListParams::default().labels("bench=yes")).await.unwrap().items.len();
        }
        assert_eq!(listed, objects * 10);
        row("list throughput (objects returned)", listed as f64 / t.elapsed().as_secs_f64(), "obj/s", Some((5000.0, false)));

        // Watch fan-out: 10 watchers each receive every update.
        let rv = cms.list(&ListParams::default().limit(1)).await.unwrap().metadata.resource_version.unwrap();
        let updates = objects;
        let mut watchers = Vec::new();
        for _ in 0..10 {
            let cms = cms.clone();
            let rv = rv.clone();
            watchers.push(tokio::spawn(async move {
                let mut s = cms.watch(&WatchParams::default().labels("bench=yes").timeout(290), &rv).await.unwrap().boxed();
                let mut n = 0;
                while n < updates {
                    match s.try_next().await.unwrap() {
                        Some(WatchEvent::Modified(_)) => n += 1,
                        Some(_) => {}
                        None => panic!("watch ended after {n} events"),
                    }
                }
                Instant::now()
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let cms = cms.clone();
            let next = next.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= updates {
                        break;
                    }
                    cms.patch(&format!("bench-{i}"), &PatchParams::default(), &Patch::Merge(json!({"data": {"u": "1"}}))).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let mut last = t;
        for w in watchers {
            last = last.max(w.await.unwrap());
        }
        let delivered = (updates * 10) as f64;
        row("watch events delivered (10 watchers)", delivered / last.duration_since(t).as_secs_f64(), "events/s", Some((5000.0, false)));
        let peak_mib = proc_status_kib("VmHWM:") as f64 / 1024.0;
        row("peak resident memory", peak_mib, "MiB", None);
        sim.shutdown().await;
    });
}
