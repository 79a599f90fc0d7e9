//! `yurtsim up …`: start a simulated cluster and serve it until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use yurtsim::real::ApiServerKind;
use yurtsim::{Layout, Sim, SimConfig};

#[derive(Parser)]
#[command(
    name = "yurtsim",
    version,
    about = "A simulated Kubernetes cluster for testing yurtctl"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a cluster, write STATE_DIR/kubeconfig, print one `ready` line, serve until interrupted.
    Up(UpArgs),
}

#[derive(clap::Args)]
struct UpArgs {
    /// Number of nodes, control planes included.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    #[arg(long, default_value_t = 1)]
    control_planes: usize,
    /// What the nodes' files look like: kubeadm, kubeadm-usr, kind or minikube.
    #[arg(long, default_value = "kubeadm")]
    layout: Layout,
    /// Where node root file systems, logs and the kubeconfig go (must not hold an earlier cluster).
    #[arg(long)]
    state_dir: PathBuf,
    /// Binaries that pod commands resolve to, as NAME=PATH (only `yurtctl` is supported).
    #[arg(long = "exec", value_name = "NAME=PATH", value_parser = parse_exec)]
    exec: Vec<(String, PathBuf)>,
    /// API port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// How long a container takes to start and become ready (e.g. 200ms, 2s).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pod_ready_delay: Duration,
    /// Which API server: yurtsim's own (`sim`, with its fault controls) or a real control plane
    /// built from upstream's modules by tests/real/build.sh (`real`).
    #[arg(long, value_enum, default_value_t = ApiServerKind::Sim)]
    apiserver: ApiServerKind,
    /// Kubernetes version the API server and kubelets report. With `--apiserver real`, one of
    /// the built control planes [default there: the newest release, v1.37.2].
    #[arg(long)]
    kubernetes_version: Option<String>,
    /// Watch history kept per resource; older resourceVersions get 410 Gone (like an etcd compaction).
    #[arg(long, default_value_t = 1000)]
    history_limit: usize,
    /// Node lease renewal interval.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    heartbeat_interval: Duration,
}

fn parse_exec(s: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=PATH, got {s:?}"))?;
    if name != "yurtctl" {
        return Err(format!("only yurtctl=PATH is supported, got {name:?}"));
    }
    let path = PathBuf::from(path);
    let path = std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((name.to_string(), path))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .ok_or_else(|| format!("{s:?}: add a unit (ms, s, m)"))?;
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 200ms, 2s or 1m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}; use ms, s or m")),
    };
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> std::process::ExitCode {
    // glibc gives each thread its own arena; objects allocated on one worker and freed on the
    // other leave holes only that arena reuses. One arena: 5,000 nodes settle at ~870 MiB
    // instead of ~1,090 MiB with two, for the same heap in use (~800 MiB).
    // SAFETY: mallopt only tunes the allocator; called before any other thread exists.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("YURTSIM_LOG"))
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(run(cli));
    // Dropping the runtime waits for every worker; one stuck in a blocking call must not keep
    // the process from exiting after SIGTERM.
    rt.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("yurtsim: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let Command::Up(a) = cli.command;
    let mut cfg = SimConfig::new(a.state_dir);
    cfg.nodes = a.nodes;
    cfg.control_planes = a.control_planes;
    cfg.layout = a.layout;
    cfg.port = a.port;
    cfg.pod_ready_delay = a.pod_ready_delay;
    cfg.apiserver = a.apiserver;
    cfg.kubernetes_version = match (a.kubernetes_version, a.apiserver) {
        (Some(v), _) => v,
        (None, ApiServerKind::Real) => yurtsim::real::NEWEST_KUBERNETES.to_string(),
        (None, ApiServerKind::Sim) => cfg.kubernetes_version,
    };
    if a.apiserver == ApiServerKind::Real {
        // before anything is created: a version that is not built is the caller's to fix
        yurtsim::real::control_plane_binary(&cfg.kubernetes_version)?;
    }
    cfg.heartbeat_interval = a.heartbeat_interval;
    cfg.history_limit = a.history_limit;
    cfg.yurtctl = a
        .exec
        .into_iter()
        .find(|(n, _)| n == "yurtctl")
        .map(|(_, p)| p);
    let started = std::time::Instant::now();
    // Handlers first, so a signal right after the ready line is handled, not fatal.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let sim = Sim::start(cfg).await?;
    println!(
        "ready {} kubeconfig={} nodes={} in {:.1}s",
        sim.url(),
        sim.kubeconfig_path().display(),
        sim.node_names().len(),
        started.elapsed().as_secs_f64()
    );
    use std::io::Write;
    std::io::stdout().flush().ok();
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    eprintln!("yurtsim: shutting down");
    sim.shutdown().await;
    Ok(())
}
