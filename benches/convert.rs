//! `yurtctl convert` at scale against yurtsim: N simulated nodes converted with
//! `--concurrency C` (default 100) and yurtctl's default flags, which are `--qps 0` (no
//! client-side limit). Mode `limited` adds `--qps 200 --burst 400` (the default before
//! 2026-11-27) to show what a client-side limit costs. Prints per size and mode: makespan ÷ ideal, API requests per node,
//! ConfigMap bytes written per node (the journal, plus a few fixed objects) and yurtctl's
//! peak RSS, each with its target and ratio (≤ 1.00 meets it).
//!
//! The node Jobs run a stand-in for the servant that takes a fixed time (`YURTCTL_BENCH_JOB_MS`,
//! default 2,000 ms) after the simulated kubelet's container start (`POD_START`, 200 ms, which
//! stands for image pull and runtime start), so the node-side work d is known and what is
//! measured is yurtctl's own orchestration, per-Job overhead included:
//! ideal = fixed phases + (⌈N/C⌉ + ⌈edge/C⌉ + ⌈cloud/C⌉)·d (node preflight, edge, cloud),
//! where the fixed phases are all the others, as timed in the same run (`components` waits for
//! yurt-manager's pod to be Ready, which its readiness probe holds back for 60 s).
//!
//! `cargo bench --bench convert` runs 1,000, 5,000 and 10,000 nodes with default flags;
//! `YURTCTL_BENCH_NODES=1000` (a comma list) and `YURTCTL_BENCH_MODES=default,limited`
//! (`default`, `qps0`: the same flags spelt out, `limited`) choose; `YURTCTL_BENCH_NODES=100 YURTCTL_BENCH_CONCURRENCY=20` is a quick smoke
//! run; `YURTCTL_BENCH_PROFILE=openyurt-v1.6` for another profile (the simulated Kubernetes is
//! the newest the profile supports); `YURTCTL_BENCH_TRACE=FILE` writes yurtctl's progress
//! lines there, each after the seconds since its start (plain progress, `-v`: every Job event).
//!
//! `YURTCTL_BENCH_APISERVER=real` runs the same against the real control plane
//! (tests/real/build.sh builds it on first use): the real kube-apiserver, etcd, Job
//! controller and scheduler, with yurtsim's nodes as kubelets, at the newest built Kubernetes
//! the profile supports. yurtctl's requests come from the API server's audit log (only the
//! admin's requests are audited, docs/yurtsim.md), and kube-apiserver's peak RSS is printed
//! beside yurtctl's.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use yurtsim::{Layout, Sim, SimConfig};

mod support;
use support::PeakRss;

/// The phases that run a Job per node, in windows of `--concurrency`.
const NODE_PHASES: [&str; 3] = ["preflight/nodes", "nodes/edge", "nodes/cloud"];

/// The simulated kubelet's container start-up for every pod (yurtsim's `pod_ready_delay`).
const POD_START: Duration = Duration::from_millis(200);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn row(what: &str, value: f64, unit: &str, target: Option<f64>) {
    match target {
        Some(t) => {
            let ratio = value / t;
            let verdict = if ratio <= 1.0 { "ok" } else { "MISSED" };
            println!(
                "{what:<40} {value:>10.2} {unit:<8} target ≤ {t:<8} ratio {ratio:>5.2}  {verdict}"
            );
        }
        None => println!("{what:<40} {value:>10.2} {unit}"),
    }
}

/// Seconds in "converted in 2.1s".
fn job_seconds(message: &str) -> Option<f64> {
    message
        .strip_prefix("converted in ")?
        .strip_suffix('s')?
        .parse()
        .ok()
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

fn main() {
    let sizes: Vec<usize> = env_list("YURTCTL_BENCH_NODES", "1000,5000,10000")
        .iter()
        .map(|v| v.parse().expect("YURTCTL_BENCH_NODES: node counts"))
        .collect();
    let modes = env_list("YURTCTL_BENCH_MODES", "default");
    let mut summary = Vec::new();
    for &nodes in &sizes {
        for mode in &modes {
            summary.push(bench(nodes, mode));
        }
    }
    println!("\nsummary");
    println!(
        "{:>6} {:<8} {:>9} {:>8} {:>9} {:>13} {:>9}",
        "nodes", "mode", "makespan", "÷ ideal", "req/node", "CM bytes/node", "RSS MiB"
    );
    for r in summary {
        println!(
            "{:>6} {:<8} {:>8.1}s {:>8.2} {:>9.2} {:>13.0} {:>9.1}",
            r.nodes, r.mode, r.makespan, r.ratio, r.requests, r.cm_bytes, r.rss
        );
    }
}

struct Figures {
    nodes: usize,
    mode: String,
    makespan: f64,
    ratio: f64,
    requests: f64,
    cm_bytes: f64,
    rss: f64,
}

fn bench(nodes: usize, mode: &str) -> Figures {
    let concurrency = env_usize("YURTCTL_BENCH_CONCURRENCY", 100);
    let job_ms = env_usize("YURTCTL_BENCH_JOB_MS", 2000);
    let dir = tempfile::tempdir().unwrap();

    // the servant stand-in: takes job_ms, succeeds
    let servant = dir.path().join("servant.sh");
    std::fs::write(
        &servant,
        format!("#!/bin/sh\nexec sleep {}\n", job_ms as f64 / 1000.0),
    )
    .unwrap();
    std::fs::set_permissions(&servant, std::fs::Permissions::from_mode(0o755)).unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cfg = SimConfig::new(dir.path().join("sim"));
    cfg.nodes = nodes;
    cfg.control_planes = 1;
    cfg.layout = Layout::Kubeadm;
    // the newest Kubernetes the profile supports (`YURTCTL_BENCH_PROFILE`, default: the default)
    let profile = std::env::var("YURTCTL_BENCH_PROFILE")
        .unwrap_or_else(|_| yurtctl::render::Profile::DEFAULT.to_owned());
    let max_minor = yurtctl::render::Profile::load(&profile)
        .expect("YURTCTL_BENCH_PROFILE names a profile")
        .kubernetes
        .max_minor;
    cfg.kubernetes_version = format!("v1.{max_minor}.2");
    let real = real_apiserver();
    if real {
        cfg.apiserver = yurtsim::real::ApiServerKind::Real;
        cfg.kubernetes_version = real_version(max_minor);
    }
    cfg.yurtctl = Some(servant);
    cfg.pod_ready_delay = POD_START;
    let version = cfg.kubernetes_version.clone();
    let started = Instant::now();
    let sim: Sim = rt.block_on(Sim::start(cfg)).expect("yurtsim starts");
    eprintln!(
        "yurtsim: {nodes} nodes ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let sim_cpu0 = support::cpu_ticks("/proc/self/stat").unwrap_or(0);
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .arg("convert")
        .arg("--kubeconfig")
        .arg(sim.kubeconfig_path())
        .args(["-y", "-o", "json", "--job-timeout", "10m"])
        .args(match mode {
            "qps0" => &["--qps", "0"][..],
            "limited" => &["--qps", "200", "--burst", "400"][..],
            "default" => &[][..],
            other => panic!("YURTCTL_BENCH_MODES: unknown mode {other} (default, qps0, limited)"),
        })
        .args(["--concurrency", &concurrency.to_string()])
        .args(["--profile", &profile])
        .args(match std::env::var_os("YURTCTL_BENCH_TRACE") {
            Some(_) => &["--progress=plain", "-v"][..],
            None => &[][..],
        })
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let peak_rss = PeakRss::watch(child.id());
    let stdout = child.stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    // phase timings from the progress lines, as they arrive
    // every phase's first and last progress line, in order of appearance
    let mut phases: Vec<(String, Duration, Duration)> = Vec::new();
    let mut trace = std::env::var_os("YURTCTL_BENCH_TRACE")
        .map(|p| std::io::BufWriter::new(std::fs::File::create(p).expect("YURTCTL_BENCH_TRACE")));
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let at = t0.elapsed();
        if let Some(t) = trace.as_mut() {
            use std::io::Write;
            writeln!(t, "{:9.3} {line}", at.as_secs_f64()).unwrap();
        }
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|l| l.split_once(']'))
            .map(|(name, _)| name)
        {
            match phases.iter_mut().find(|(n, _, _)| n == name) {
                Some(p) => p.2 = at,
                None => phases.push((name.to_owned(), at, at)),
            }
        }
    }
    let status = child.wait().unwrap();
    let makespan = t0.elapsed();
    let sim_cpu = (support::cpu_ticks("/proc/self/stat").unwrap_or(0) - sim_cpu0) as f64
        / support::clock_ticks_per_second();
    let (rss_mib, yurtctl_cpu) = peak_rss.mib_and_cpu();
    assert!(
        status.success() || status.code().is_some(),
        "convert was killed: {status}"
    );
    let stdout = out_reader.join().unwrap();
    let result: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("convert printed no result ({e}):\n{stdout}"));
    assert_eq!(result["exitCode"], 0, "convert failed: {result:#}");

    let results = result["nodes"].as_array().unwrap();
    let mut observed: Vec<f64> = results
        .iter()
        .filter_map(|n| job_seconds(n["message"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(observed.len(), nodes, "every node converted");
    observed.sort_by(f64::total_cmp);
    let observed_median = observed[observed.len() / 2];
    // the node work's real duration: the container's start and the stand-in's run
    let d = POD_START.as_secs_f64() + job_ms as f64 / 1000.0;
    let cloud = results.iter().filter(|n| n["role"] == "cloud").count();
    let edge = nodes - cloud;
    // the node preflight Jobs (every node, one phase), then edge, then cloud
    let windows =
        nodes.div_ceil(concurrency) + edge.div_ceil(concurrency) + cloud.div_ceil(concurrency);
    // the node phases' own spans: the phases between them (components, which waits for
    // yurt-manager's readiness probe) are fixed costs
    let node_span: Duration = phases
        .iter()
        .filter(|(name, _, _)| NODE_PHASES.contains(&name.as_str()))
        .map(|(_, first, last)| *last - *first)
        .sum();
    let fixed = makespan.as_secs_f64() - node_span.as_secs_f64();
    let ideal = fixed + windows as f64 * d;

    let (requests, writes, cm_bytes) = yurtctl_requests(&sim);
    // the API server's own peak memory: the real kube-apiserver's, or the whole bench's
    // (yurtsim's API server, controllers and kubelets share its process)
    let apiserver_rss = match sim.real() {
        Some(r) => r
            .control_plane
            .pids()
            .into_iter()
            .find(|(name, _)| *name == "kube-apiserver")
            .and_then(|(_, pid)| support::vm_hwm_kib(pid)),
        None => support::vm_hwm_kib(std::process::id()),
    }
    .unwrap_or(0) as f64
        / 1024.0;

    println!(
        "\nconvert {nodes} nodes, {mode} flags, profile {profile}, --concurrency {concurrency}, Job stand-in {job_ms} ms after a {} ms container start, {} control plane {}",
        POD_START.as_millis(),
        if real { "real" } else { "yurtsim's" },
        version
    );
    // diagnostic: the stand-in's time plus the pod start-up and Job bookkeeping of the
    // (simulated) cluster, as yurtctl saw each Job from create to end
    row("median Job time observed", observed_median, "s", None);
    row("yurtctl CPU time", yurtctl_cpu, "s", None);
    // its API, controllers and kubelets; the container processes are not counted
    row("yurtsim CPU time (same machine)", sim_cpu, "s", None);
    row("node phases (measured)", node_span.as_secs_f64(), "s", None);
    row(
        "node phases ideal (windows × d)",
        windows as f64 * d,
        "s",
        None,
    );
    row("fixed phases (measured)", fixed, "s", None);
    for (name, first, last) in &phases {
        row(
            &format!("  phase {name} (first to last line)"),
            (*last - *first).as_secs_f64(),
            "s",
            None,
        );
    }
    row("makespan", makespan.as_secs_f64(), "s", None);
    let ratio = makespan.as_secs_f64() / ideal;
    let target = (nodes <= 1000).then_some(1.15);
    row("makespan ÷ ideal", ratio, "", target);
    row(
        "node phases ÷ their ideal",
        node_span.as_secs_f64() / (windows as f64 * d),
        "",
        None,
    );
    row(
        "API requests per node",
        requests as f64 / nodes as f64,
        "req",
        Some(8.0),
    );
    row(
        "API writes per node",
        writes as f64 / nodes as f64,
        "req",
        None,
    );
    row(
        "ConfigMap bytes written per node",
        cm_bytes as f64 / nodes as f64,
        "B",
        Some(2048.0),
    );
    let rss_target = (nodes <= 5000).then_some(100.0);
    row("yurtctl peak RSS", rss_mib, "MiB", rss_target);
    row(
        if real {
            "kube-apiserver peak RSS"
        } else {
            "yurtsim peak RSS (API server and nodes)"
        },
        apiserver_rss,
        "MiB",
        None,
    );
    rt.block_on(sim.shutdown());
    Figures {
        nodes,
        mode: mode.to_owned(),
        makespan: makespan.as_secs_f64(),
        ratio,
        requests: requests as f64 / nodes as f64,
        cm_bytes: cm_bytes as f64 / nodes as f64,
        rss: rss_mib,
    }
}

/// `YURTCTL_BENCH_APISERVER`: `sim` (the default) or `real`.
fn real_apiserver() -> bool {
    match std::env::var("YURTCTL_BENCH_APISERVER").as_deref() {
        Err(_) | Ok("sim") => false,
        Ok("real") => true,
        Ok(other) => panic!("YURTCTL_BENCH_APISERVER: unknown control plane {other} (sim, real)"),
    }
}

/// The newest real control plane the build script knows whose minor the profile supports,
/// built first if it is not yet.
fn real_version(max_minor: u32) -> String {
    let version = yurtsim::real::KUBERNETES_VERSIONS
        .iter()
        .rfind(|v| yurtsim::version::Version::kubernetes(v).minor <= max_minor)
        .unwrap_or_else(|| panic!("no real control plane for Kubernetes 1.{max_minor} or older"))
        .to_string();
    yurtsim::real::ensure_built(&[&version]).expect("the real tier builds (tests/real/build.sh)");
    version
}

/// yurtctl's requests, writes and ConfigMap bytes written: yurtsim counts them by the product
/// part of the User-Agent (`yurtctl/<version>`); the real API server's audit log has one line
/// per request with its User-Agent, and a ConfigMap write's body.
fn yurtctl_requests(sim: &Sim) -> (u64, u64, u64) {
    let agent = "yurtctl";
    let Some(real) = sim.real() else {
        let m = sim.metrics();
        return (
            m.total(Some(agent), false),
            m.total(Some(agent), true),
            m.configmap_bytes(agent, ""),
        );
    };
    let log = real.control_plane.audit_log();
    let text = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("the audit log {}: {e}", log.display()));
    let (mut requests, mut writes, mut bytes) = (0, 0, 0);
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("an audit event per line");
        if !e["userAgent"]
            .as_str()
            .is_some_and(|a| a.starts_with("yurtctl/"))
        {
            continue;
        }
        requests += 1;
        if matches!(
            e["verb"].as_str(),
            Some("create" | "update" | "patch" | "delete" | "deletecollection")
        ) {
            writes += 1;
        }
        if e["objectRef"]["resource"] == "configmaps" && !e["requestObject"].is_null() {
            bytes += e["requestObject"].to_string().len() as u64;
        }
    }
    (requests, writes, bytes)
}
