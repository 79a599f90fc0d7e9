//! The node Job runner against yurtsim: sliding window, one watch, failures reported at once
//! with logs, timeouts, leftovers from earlier runs, injected API faults, dropped watches and
//! the request budget per node.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use yurtctl::cluster::Cluster;
use yurtctl::cluster::jobs::{
    JobEvent, JobOutcome, JobPhase, NodeJob, NodeJobResult, RunJobsOptions, run_jobs,
};
use yurtsim::api::store::EventType;
use yurtsim::faults::RequestFault;
use yurtsim::{Layout, Sim};

const NS: &str = "kube-system";

struct T {
    sim: Sim,
    cluster: Cluster,
    _dir: tempfile::TempDir,
}

async fn start(nodes: usize) -> T {
    let env = support::start_sim(nodes, Layout::Kubeadm, |cfg| {
        cfg.pod_ready_delay = Duration::from_millis(50);
        cfg.heartbeat_interval = Duration::from_secs(5);
    })
    .await;
    let cluster = support::yurtctl_cluster(&env.sim).await;
    T {
        sim: env.sim,
        cluster,
        _dir: env.dir,
    }
}

fn template(script: &str) -> PodTemplateSpec {
    serde_json::from_value(json!({"spec": {
        "hostNetwork": true, "automountServiceAccountToken": false,
        "containers": [{"name": "servant", "image": "busybox", "command": ["sh", "-c", script]}]}}))
    .unwrap()
}

fn spec(action: &str, node: &str, script: &str) -> NodeJob {
    NodeJob::new(action, node, template(script))
}

/// Collects runner events with their arrival time.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(Instant, JobEvent)>>>);

impl Events {
    fn sink(&self) -> impl Fn(JobEvent) + Send + Sync + 'static {
        let v = self.0.clone();
        move |e| v.lock().unwrap().push((Instant::now(), e))
    }
    fn all(&self) -> Vec<(Instant, JobEvent)> {
        self.0.lock().unwrap().clone()
    }
}

/// Job writes as the store sees them: (when, type, name, uid, finished).
type Seen = Arc<Mutex<Vec<(Instant, EventType, String, String, bool)>>>;

fn record_jobs(sim: &Sim) -> Seen {
    let mut rx = sim.api().store.subscribe();
    let seen: Seen = Default::default();
    let out = seen.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if ev.gr.resource != "jobs" {
                continue;
            }
            let m = &ev.obj["metadata"];
            let finished = ev.obj["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
                });
            out.lock().unwrap().push((
                Instant::now(),
                ev.typ,
                m["name"].as_str().unwrap_or("").to_string(),
                m["uid"].as_str().unwrap_or("").to_string(),
                finished,
            ));
        }
    });
    seen
}

fn by_node(results: &[NodeJobResult]) -> HashMap<String, &NodeJobResult> {
    results.iter().map(|r| (r.node.clone(), r)).collect()
}

fn opts(concurrency: usize, timeout: Duration) -> RunJobsOptions {
    RunJobsOptions {
        concurrency: yurtctl::cluster::Concurrency::new(concurrency).expect("at least 1"),
        per_job_timeout: timeout,
        ..Default::default()
    }
}

async fn our_jobs(t: &T) -> Vec<Job> {
    let api: Api<Job> = Api::namespaced(t.cluster.client().clone(), NS);
    api.list(&ListParams::default().labels("app.kubernetes.io/managed-by=yurtctl"))
        .await
        .unwrap()
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_never_exceeds_its_bound_and_refills_as_soon_as_a_job_ends() {
    let t = start(6).await;
    let seen = record_jobs(&t.sim);
    let nodes = t.sim.node_names();
    // The first Job is slow; the others are quick and must all flow through the second slot
    // while it runs (a batch barrier would make them wait for it).
    let specs: Vec<NodeJob> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| spec("convert", n, if i == 0 { "sleep 2.5" } else { "sleep 0.2" }))
        .collect();
    let ev = Events::default();
    let sink = ev.sink();
    t.sim.metrics().reset();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(2, Duration::from_secs(20)),
        &sink,
    )
    .await
    .unwrap();
    assert!(results.iter().all(|r| r.succeeded()), "{results:#?}");
    assert_eq!(results[0].node, nodes[0], "results keep spec order");

    let seen = seen.lock().unwrap().clone();
    // Unfinished Jobs at any moment, as the API server saw them.
    let mut live: HashMap<String, bool> = HashMap::new();
    let mut max_live = 0;
    for (_, typ, name, _, finished) in &seen {
        match typ {
            EventType::Deleted => {
                live.remove(name);
            }
            _ => {
                live.insert(name.clone(), !finished);
            }
        }
        max_live = max_live.max(live.values().filter(|v| **v).count());
    }
    assert_eq!(max_live, 2, "the window is full but never over 2");

    let finish_of = |name: &str| {
        seen.iter()
            .find(|(_, _, n, _, f)| n == name && *f)
            .map(|e| e.0)
            .unwrap()
    };
    let slow = finish_of(&results[0].job);
    for r in &results[1..] {
        assert!(
            finish_of(&r.job) < slow,
            "{} waited for the slow Job",
            r.job
        );
    }
    // Refill: each Job after the first two is created right after some Job finished.
    let finishes: Vec<Instant> = seen.iter().filter(|e| e.4).map(|e| e.0).collect();
    for r in &results[2..] {
        let created = seen
            .iter()
            .find(|(_, typ, n, _, _)| n == &r.job && *typ == EventType::Added)
            .unwrap()
            .0;
        let prev = finishes.iter().filter(|f| **f <= created).max().unwrap();
        assert!(
            created.duration_since(*prev) < Duration::from_millis(500),
            "{} created {:?} after a slot freed",
            r.job,
            created.duration_since(*prev)
        );
    }
    let phases: Vec<String> = ev
        .all()
        .iter()
        .filter(|(_, e)| e.node == nodes[1])
        .map(|(_, e)| {
            format!("{:?}", e.phase)
                .split([' ', '{', '('])
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(phases, ["Created", "Running", "Succeeded"]);
    assert!(our_jobs(&t).await.is_empty(), "succeeded Jobs are deleted");
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_happy_path_costs_at_most_four_requests_per_node() {
    let t = start(8).await;
    let specs: Vec<NodeJob> = t
        .sim
        .node_names()
        .iter()
        .map(|n| spec("convert", n, "true"))
        .collect();
    let n = specs.len() as u64;
    t.sim.metrics().reset();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(4, Duration::from_secs(20)),
        &|_| {},
    )
    .await
    .unwrap();
    assert!(results.iter().all(|r| r.succeeded()), "{results:#?}");
    let total = t.sim.metrics().total(Some("yurtctl"), false);
    let per_node = total as f64 / n as f64;
    eprintln!(
        "requests: {total} for {n} nodes = {per_node:.2} per node; {}",
        t.sim.metrics().to_json()["byVerbResource"]
    );
    assert!(total <= 4 * n, "{total} requests for {n} nodes");
    assert_eq!(t.sim.metrics().count("create", "jobs.batch"), n);
    // succeeded Jobs go in batches (one deletecollection a second), not one delete each
    assert_eq!(t.sim.metrics().count("delete", "jobs.batch"), 0);
    let sweeps = t.sim.metrics().count("deletecollection", "jobs.batch");
    assert!((1..n).contains(&sweeps), "{sweeps} sweeps for {n} Jobs");
    assert!(our_jobs(&t).await.is_empty(), "the last sweep at the end");
    assert_eq!(
        t.sim.metrics().count("get", "jobs.batch"),
        0,
        "no GET per Job"
    );
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_is_reported_at_once_with_its_log_tail_and_kept() {
    let t = start(3).await;
    t.sim.faults().fail_jobs_on("worker-2", 7);
    let specs = vec![
        spec(
            "convert",
            "worker-1",
            "echo checking kubelet; echo 'cannot find the kubelet unit' >&2; exit 3",
        ),
        spec("convert", "worker-2", "true"),
        spec("convert", "control-plane-1", "sleep 0.3"),
    ];
    let ev = Events::default();
    let sink = ev.sink();
    let begin = Instant::now();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(3, Duration::from_secs(30)),
        &sink,
    )
    .await
    .unwrap();
    assert!(
        begin.elapsed() < Duration::from_secs(5),
        "nobody waited for a timeout"
    );
    let r = by_node(&results);
    let JobOutcome::Failed(f) = &r["worker-1"].outcome else {
        panic!("{:?}", r["worker-1"])
    };
    assert!(
        r["worker-1"].elapsed < Duration::from_millis(1500),
        "{:?}",
        r["worker-1"].elapsed
    );
    assert_eq!(f.exit_code, Some(3));
    assert_eq!(f.reason, "BackoffLimitExceeded");
    assert!(
        f.logs_tail.contains("cannot find the kubelet unit"),
        "{f:?}"
    );
    assert!(f.logs_tail.contains("checking kubelet"), "{f:?}");
    assert!(f.pod.is_some());
    assert!(
        f.events.iter().any(|e| e.contains("BackoffLimitExceeded")),
        "{:?}",
        f.events
    );
    let JobOutcome::Failed(f2) = &r["worker-2"].outcome else {
        panic!("{:?}", r["worker-2"])
    };
    assert_eq!(f2.exit_code, Some(7));
    assert!(r["control-plane-1"].succeeded());
    // The failure was reported as an event as soon as it was known.
    let failed_at = ev
        .all()
        .iter()
        .find(|(_, e)| e.node == "worker-1" && matches!(e.phase, JobPhase::Failed(_)))
        .map(|(at, _)| *at)
        .unwrap();
    assert!(failed_at.duration_since(begin) < Duration::from_millis(1500));
    let kept: Vec<String> = our_jobs(&t)
        .await
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert_eq!(
        kept,
        ["yurtctl-convert-worker-1", "yurtctl-convert-worker-2"],
        "failed Jobs are kept, succeeded ones deleted"
    );
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_job_times_out_with_what_it_printed() {
    let t = start(2).await;
    let specs = vec![
        spec("revert", "worker-1", "echo waiting for yurthub; sleep 30"),
        spec("revert", "control-plane-1", "true"),
    ];
    let begin = Instant::now();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(2, Duration::from_millis(1500)),
        &|_| {},
    )
    .await
    .unwrap();
    let e = begin.elapsed();
    assert!(
        e >= Duration::from_millis(1400) && e < Duration::from_secs(4),
        "{e:?}"
    );
    let JobOutcome::TimedOut(f) = &results[0].outcome else {
        panic!("{:?}", results[0])
    };
    assert_eq!(f.reason, "Timeout");
    assert!(f.logs_tail.contains("waiting for yurthub"), "{f:?}");
    assert!(results[1].succeeded());
    assert_eq!(our_jobs(&t).await.len(), 1, "the timed-out Job is kept");
    t.sim.shutdown().await;
}

async fn wait_finished(api: &Api<Job>, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let j = api.get(name).await.unwrap();
        let done = j
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never finished");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_are_replaced_when_finished_and_adopted_while_running() {
    let t = start(4).await;
    let api: Api<Job> = Api::namespaced(t.cluster.client().clone(), NS);
    let timeout = Duration::from_secs(20);
    // An earlier run left these behind.
    let old = [
        spec("convert", "worker-1", "true"),
        spec("convert", "worker-2", "exit 1"),
        spec("convert", "worker-3", "sleep 1.5"),
    ];
    for s in &old {
        api.create(&PostParams::default(), &s.to_job(NS, timeout))
            .await
            .unwrap();
    }
    wait_finished(&api, &old[0].name()).await;
    wait_finished(&api, &old[1].name()).await;
    let seen = record_jobs(&t.sim);
    let ev = Events::default();
    let sink = ev.sink();
    let specs = ["worker-1", "worker-2", "worker-3"]
        .iter()
        .map(|n| spec("convert", n, "echo new run"))
        .collect();
    let results = run_jobs(&t.cluster, NS, specs, &opts(3, timeout), &sink)
        .await
        .unwrap();
    assert!(results.iter().all(|r| r.succeeded()), "{results:#?}");
    let r = by_node(&results);
    assert!(!r["worker-1"].adopted && !r["worker-2"].adopted);
    assert!(r["worker-3"].adopted);
    let seen = seen.lock().unwrap().clone();
    let added = |name: &str| {
        seen.iter()
            .filter(|(_, typ, n, _, _)| n == name && *typ == EventType::Added)
            .count()
    };
    assert_eq!(added(&old[0].name()), 1, "worker-1 re-created once");
    assert_eq!(added(&old[1].name()), 1, "worker-2 re-created once");
    assert_eq!(added(&old[2].name()), 0, "worker-3 adopted, not re-created");
    let replacing: Vec<(String, &str)> = ev
        .all()
        .iter()
        .filter_map(|(_, e)| match e.phase {
            JobPhase::Replacing { previous } => Some((e.node.clone(), previous)),
            _ => None,
        })
        .collect();
    assert!(replacing.contains(&("worker-1".into(), "succeeded")));
    assert!(replacing.contains(&("worker-2".into(), "failed")));
    assert!(
        ev.all()
            .iter()
            .any(|(_, e)| e.node == "worker-3" && matches!(e.phase, JobPhase::Adopted))
    );
    assert!(our_jobs(&t).await.is_empty());
    t.sim.shutdown().await;
}

fn fault(verb: &str, resource: &str, count: u32, status: u16) -> RequestFault {
    RequestFault::fail(verb, resource, count, status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_server_errors_and_conflicts_converge_without_duplicate_jobs() {
    let t = start(8).await;
    let seen = record_jobs(&t.sim);
    let f = t.sim.faults();
    f.add(fault("list", "jobs.batch", 1, 500));
    f.add(fault("create", "jobs.batch", 1, 500));
    f.add(fault("create", "jobs.batch", 1, 409));
    f.add(fault("create", "jobs.batch", 1, 429));
    f.add(fault("create", "jobs.batch", 1, 503));
    f.add(fault("delete", "jobs.batch", 1, 500));
    f.add(fault("watch", "jobs.batch", 1, 500));
    let specs: Vec<NodeJob> = t
        .sim
        .node_names()
        .iter()
        .map(|n| spec("convert", n, "sleep 0.1"))
        .collect();
    let n = specs.len();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(4, Duration::from_secs(30)),
        &|_| {},
    )
    .await
    .unwrap();
    assert!(results.iter().all(|r| r.succeeded()), "{results:#?}");
    let seen = seen.lock().unwrap().clone();
    let mut adds: HashMap<String, usize> = HashMap::new();
    for (_, typ, name, _, _) in &seen {
        if *typ == EventType::Added {
            *adds.entry(name.clone()).or_default() += 1;
        }
    }
    assert_eq!(adds.len(), n);
    assert!(adds.values().all(|c| *c == 1), "duplicates: {adds:?}");
    assert!(our_jobs(&t).await.is_empty());
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_and_expired_watches_are_resumed_without_missing_completions() {
    let t = start(6).await;
    let specs: Vec<NodeJob> = t
        .sim
        .node_names()
        .iter()
        .enumerate()
        .map(|(i, n)| spec("convert", n, &format!("sleep 0.{}", 2 + i % 3)))
        .collect();
    let sim = t.sim.shared().clone();
    let chaos = tokio::spawn(async move {
        for i in 0..12 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if i == 5 {
                // Forget history too: the resumed watch gets 410 and must re-list.
                sim.api.store.compact();
            }
            sim.api.store.drop_watches();
        }
    });
    t.sim.metrics().reset();
    let begin = Instant::now();
    let results = run_jobs(
        &t.cluster,
        NS,
        specs,
        &opts(3, Duration::from_secs(15)),
        &|_| {},
    )
    .await
    .unwrap();
    chaos.await.unwrap();
    assert!(results.iter().all(|r| r.succeeded()), "{results:#?}");
    assert!(
        begin.elapsed() < Duration::from_secs(8),
        "{:?}",
        begin.elapsed()
    );
    assert!(
        t.sim.metrics().count("watch", "jobs.batch") > 1,
        "the watch was resumed"
    );
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_specs_are_refused_before_anything_is_created() {
    let t = start(1).await;
    let node = t.sim.node_names()[0].clone();
    let dup = vec![
        spec("convert", &node, "true"),
        spec("convert", &node, "true"),
    ];
    let e = run_jobs(
        &t.cluster,
        NS,
        dup,
        &opts(2, Duration::from_secs(5)),
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
    let bad = vec![spec("Convert!", &node, "true")];
    let e = run_jobs(
        &t.cluster,
        NS,
        bad,
        &opts(2, Duration::from_secs(5)),
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("action"), "{e}");
    assert!(our_jobs(&t).await.is_empty());
    t.sim.shutdown().await;
}

/// Upgrade's window: with `hold_until_ready` a node whose Job succeeded but that is NotReady
/// ends `NodeNotReady`, and with `stop_after_failures` no Job starts once more nodes failed
/// than it allows (the specs not started have no result and no Job).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halting_window_holds_each_node_until_ready_and_starts_nothing_after_a_failure() {
    let t = start(4).await;
    t.sim.set_node_ready("worker-2", false).unwrap();
    let specs = vec![
        spec("upgrade", "worker-1", "true"),
        spec("upgrade", "worker-2", "true"),
        spec("upgrade", "worker-3", "true"),
        spec("upgrade", "control-plane-1", "true"),
    ];
    let mut o = opts(1, Duration::from_secs(30));
    o.hold_until_ready = Some(Duration::from_secs(2));
    o.stop_after_failures = Some(0);
    let ev = Events::default();
    let sink = ev.sink();
    let results = run_jobs(&t.cluster, NS, specs, &o, &sink).await.unwrap();
    let r = by_node(&results);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(r["worker-1"].succeeded(), "{:?}", r["worker-1"]);
    assert!(
        matches!(r["worker-2"].outcome, JobOutcome::NodeNotReady(d) if d == Duration::from_secs(2)),
        "{:?}",
        r["worker-2"]
    );
    let jobs: Vec<String> = our_jobs(&t)
        .await
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert!(
        !jobs
            .iter()
            .any(|j| j.ends_with("worker-3") || j.ends_with("control-plane-1")),
        "{jobs:?}"
    );
    assert!(
        !ev.all().iter().any(|(_, e)| e.node == "worker-3"),
        "nothing reported for a node never started"
    );
}
