//! Building a `kube::Client` the way kubectl finds its configuration, plus client-side rate
//! limiting.
//!
//! Precedence (ecosystem notes §B.1): `--kubeconfig` (exactly one file, no merge) →
//! `KUBECONFIG` (a list of files, merged; missing entries skipped as client-go does) →
//! `~/.kube/config` → in-cluster service account. `--context` picks the context.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::time::Instant;

use super::error::{ClusterError, error_chain};

pub use super::error::ConnectError;

/// The user agent every request carries: `yurtctl/<version>`.
pub fn user_agent() -> String {
    format!("yurtctl/{}", env!("CARGO_PKG_VERSION"))
}

/// How to build the client (global CLI flags).
/// `--qps`'s default: no client-side limit. Requests in flight are bounded by `--concurrency`
/// and the server's API Priority and Fairness; the reasons are in docs/commands/convert.md,
/// "Throughput".
pub const DEFAULT_QPS: f64 = 0.0;
/// `--burst`'s default (with a `--qps` limit).
pub const DEFAULT_BURST: u32 = 400;

#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// `--kubeconfig`: one file, no merge.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// Client-side requests per second; `<= 0` disables limiting.
    pub qps: f64,
    /// Requests allowed in a burst above `qps`.
    pub burst: u32,
    /// Time allowed to open a connection to the API server.
    pub connect_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            kubeconfig: None,
            context: None,
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// The parts of the process environment that decide where the configuration comes from.
/// Injected so that precedence can be tested without touching the real environment.
#[derive(Clone, Debug, Default)]
pub struct ConfigEnv {
    /// `KUBECONFIG`, raw.
    pub kubeconfig: Option<OsString>,
    /// The home directory (`HOME`).
    pub home: Option<PathBuf>,
    /// `KUBERNETES_SERVICE_HOST` is set (we run in a pod).
    pub in_cluster: bool,
}

impl ConfigEnv {
    pub fn from_process() -> Self {
        ConfigEnv {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            in_cluster: std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|v| !v.is_empty()),
        }
    }
}

/// Where the configuration was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--kubeconfig PATH`.
    Flag(PathBuf),
    /// `KUBECONFIG`: the files that exist, in order.
    Env(Vec<PathBuf>),
    /// `~/.kube/config`.
    Home(PathBuf),
    /// The pod's service account.
    InCluster,
}

impl ConfigSource {
    /// For messages: "kubeconfig /x (from --kubeconfig)".
    pub fn describe(&self) -> String {
        match self {
            ConfigSource::Flag(p) => format!("kubeconfig {} (from --kubeconfig)", p.display()),
            ConfigSource::Env(ps) => format!(
                "kubeconfig {} (from KUBECONFIG)",
                ps.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(":")
            ),
            ConfigSource::Home(p) => format!("kubeconfig {}", p.display()),
            ConfigSource::InCluster => "the in-cluster service account".into(),
        }
    }
}

/// Decides where the configuration comes from, by kubectl's precedence. Pure apart from
/// checking which files exist.
pub fn resolve_source(opts: &ClientOptions, env: &ConfigEnv) -> Result<ConfigSource, ConnectError> {
    if let Some(p) = &opts.kubeconfig {
        if !p.is_file() {
            return Err(ConnectError::KubeconfigNotFound {
                path: p.clone(),
                origin: "--kubeconfig",
            });
        }
        return Ok(ConfigSource::Flag(p.clone()));
    }
    let mut tried = Vec::new();
    if let Some(v) = env.kubeconfig.as_ref().filter(|v| !v.is_empty()) {
        let listed: Vec<PathBuf> = std::env::split_paths(v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let existing: Vec<PathBuf> = listed.iter().filter(|p| p.is_file()).cloned().collect();
        if !existing.is_empty() {
            return Ok(ConfigSource::Env(existing));
        }
        if let Some(first) = listed.first() {
            if listed.len() == 1 {
                return Err(ConnectError::KubeconfigNotFound {
                    path: first.clone(),
                    origin: "KUBECONFIG",
                });
            }
            tried.push(format!(
                "KUBECONFIG={} (none of its files exist)",
                v.to_string_lossy()
            ));
        }
    }
    if let Some(home) = &env.home {
        let p = home.join(".kube").join("config");
        if p.is_file() {
            return Ok(ConfigSource::Home(p));
        }
        tried.push(p.display().to_string());
    }
    if env.in_cluster && opts.context.is_none() {
        return Ok(ConfigSource::InCluster);
    }
    Err(ConnectError::NoConfiguration {
        tried: if tried.is_empty() {
            "nothing: neither KUBECONFIG nor HOME is set".into()
        } else {
            tried.join(", ")
        },
    })
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, ConnectError> {
    Kubeconfig::read_from(path).map_err(|e| ConnectError::KubeconfigInvalid {
        path: path.display().to_string(),
        message: kubeconfig_message(&e),
    })
}

fn kubeconfig_message(e: &kube::config::KubeconfigError) -> String {
    // kube's ReadConfig message repeats the path we already name.
    match e {
        kube::config::KubeconfigError::ReadConfig(io, _) => format!("cannot read it: {io}"),
        other => error_chain(other),
    }
}

/// Loads and merges the kubeconfig of `source`, then checks the chosen context is complete.
pub fn load_kubeconfig(
    source: &ConfigSource,
    context: Option<&str>,
) -> Result<Kubeconfig, ConnectError> {
    let kc = match source {
        ConfigSource::Flag(p) | ConfigSource::Home(p) => read_kubeconfig(p)?,
        ConfigSource::Env(ps) => {
            let mut merged = Kubeconfig::default();
            for p in ps {
                let next = read_kubeconfig(p)?;
                merged = merged
                    .merge(next)
                    .map_err(|e| ConnectError::KubeconfigInvalid {
                        path: p.display().to_string(),
                        message: format!("cannot merge it with the files before it: {e}"),
                    })?;
            }
            merged
        }
        ConfigSource::InCluster => return Ok(Kubeconfig::default()),
    };
    check_context(&kc, source, context)?;
    Ok(kc)
}

fn check_context(
    kc: &Kubeconfig,
    source: &ConfigSource,
    context: Option<&str>,
) -> Result<(), ConnectError> {
    let available: Vec<String> = kc.contexts.iter().map(|c| c.name.clone()).collect();
    let name = match context.or(kc.current_context.as_deref().filter(|c| !c.is_empty())) {
        Some(n) => n,
        None => {
            return Err(ConnectError::NoCurrentContext {
                source_desc: source.describe(),
                available,
            });
        }
    };
    let Some(ctx) = kc
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
    else {
        return Err(ConnectError::ContextNotFound {
            context: name.to_string(),
            source_desc: source.describe(),
            available,
        });
    };
    if !kc.clusters.iter().any(|c| c.name == ctx.cluster) {
        return Err(ConnectError::DanglingReference {
            context: name.to_string(),
            what: "cluster",
            name: ctx.cluster.clone(),
            source_desc: source.describe(),
        });
    }
    if let Some(user) = &ctx.user
        && !user.is_empty()
        && !kc.auth_infos.iter().any(|u| &u.name == user)
    {
        return Err(ConnectError::DanglingReference {
            context: name.to_string(),
            what: "user",
            name: user.clone(),
            source_desc: source.describe(),
        });
    }
    Ok(())
}

/// Builds the kube `Config` for the options and environment (no network).
pub async fn build_config(
    opts: &ClientOptions,
    env: &ConfigEnv,
) -> Result<(Config, ConfigSource), ConnectError> {
    let source = resolve_source(opts, env)?;
    let mut config = match &source {
        ConfigSource::InCluster => Config::incluster().map_err(|e| ConnectError::InCluster {
            message: error_chain(&e),
        })?,
        _ => {
            let kc = load_kubeconfig(&source, opts.context.as_deref())?;
            let ko = KubeConfigOptions {
                context: opts.context.clone(),
                ..Default::default()
            };
            Config::from_custom_kubeconfig(kc, &ko).await.map_err(|e| {
                ConnectError::KubeconfigInvalid {
                    path: source.describe(),
                    message: kubeconfig_message(&e),
                }
            })?
        }
    };
    config.connect_timeout = Some(opts.connect_timeout);
    // kube sends no User-Agent of its own; the header names us in audit logs and metrics.
    let invalid = |what: &str| ConnectError::ClientSetup {
        server: config.cluster_url.to_string(),
        message: format!("invalid {what}"),
    };
    let name = "user-agent".parse().map_err(|_| invalid("header name"))?;
    let value = user_agent().parse().map_err(|_| invalid("user agent"))?;
    config
        .headers
        .retain(|(n, _)| !n.as_str().eq_ignore_ascii_case("user-agent"));
    config.headers.push((name, value));
    Ok((config, source))
}

/// Builds a `Client` from a config (no network).
pub fn client_from_config(config: Config) -> Result<Client, ConnectError> {
    let server = config.cluster_url.to_string();
    Client::try_from(config).map_err(|e| ConnectError::ClientSetup {
        server,
        message: error_chain(&e),
    })
}

/// Maps a failure of the first request to a reachability error.
pub(crate) fn unreachable(server: &str, e: kube::Error) -> ClusterError {
    match e {
        kube::Error::Api(_) => ClusterError::from_kube(format!("GET {server}/version"), e),
        other => {
            let message = error_chain(&other);
            let server = server.to_string();
            if is_tls_failure(&message) {
                ConnectError::Tls { server, message }.into()
            } else {
                ConnectError::Unreachable { server, message }.into()
            }
        }
    }
}

/// Whether a transport error is a TLS failure (rustls and hyper say so only in their
/// messages; the types are not ours to match on).
fn is_tls_failure(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "tls",
        "certificate",
        "handshake",
        "corrupt message",
        "invalidcontenttype",
        "received corrupt",
        "peer misbehaved",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Time allowed for the first answer (`GET /version`) once connected: a server that accepts
/// connections and never answers must not hang the run.
const FIRST_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A token bucket shared by every request of one run: at most `burst` at once, refilled at
/// `qps` per second. Callers that find it empty reserve a future token and sleep until it is
/// theirs, so waiting is fair (first come, first served) and needs no background task.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    inner: Option<Arc<Mutex<Bucket>>>,
}

#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    pub fn new(qps: f64, burst: u32) -> Self {
        if qps <= 0.0 || !qps.is_finite() {
            return Self::unlimited();
        }
        let burst = f64::from(burst.max(1));
        RateLimiter {
            inner: Some(Arc::new(Mutex::new(Bucket {
                qps,
                burst,
                tokens: burst,
                last: Instant::now(),
            }))),
        }
    }

    pub fn unlimited() -> Self {
        RateLimiter { inner: None }
    }

    /// Waits for one token.
    pub async fn acquire(&self) {
        let Some(b) = &self.inner else { return };
        let wait = {
            let mut b = b.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let elapsed = now.duration_since(b.last).as_secs_f64();
            b.tokens = (b.tokens + elapsed * b.qps).min(b.burst);
            b.last = now;
            b.tokens -= 1.0;
            if b.tokens >= 0.0 {
                None
            } else {
                Some(Duration::from_secs_f64(-b.tokens / b.qps))
            }
        };
        if let Some(w) = wait {
            tokio::time::sleep(w).await;
        }
    }
}

/// Builds the client, checks the server answers (`GET /version`), and wraps both in a
/// [`super::Cluster`].
pub async fn connect(opts: &ClientOptions) -> Result<super::Cluster, ClusterError> {
    connect_with_env(opts, &ConfigEnv::from_process()).await
}

pub async fn connect_with_env(
    opts: &ClientOptions,
    env: &ConfigEnv,
) -> Result<super::Cluster, ClusterError> {
    let (config, _source) = build_config(opts, env).await?;
    let server = config.cluster_url.to_string();
    let client = client_from_config(config)?;
    let limiter = RateLimiter::new(opts.qps, opts.burst);
    limiter.acquire().await;
    let answer_timeout = FIRST_ANSWER_TIMEOUT.max(opts.connect_timeout);
    let version = tokio::time::timeout(answer_timeout, client.apiserver_version())
        .await
        .map_err(|_| ConnectError::Unreachable {
            server: server.clone(),
            message: format!(
                "no answer to GET /version within {}s",
                answer_timeout.as_secs()
            ),
        })?
        .map_err(|e| unreachable(&server, e))?;
    Ok(super::Cluster::new(client, limiter).with_server(server, Some(version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_bucket_allows_a_burst_then_paces_at_qps() {
        let l = RateLimiter::new(50.0, 5);
        let start = std::time::Instant::now();
        for _ in 0..5 {
            l.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(30), "burst is free");
        for _ in 0..5 {
            l.acquire().await;
        }
        let e = start.elapsed();
        assert!(
            e >= Duration::from_millis(90) && e < Duration::from_millis(400),
            "5 more at 50/s take ~100ms, took {e:?}"
        );
    }

    #[tokio::test]
    async fn concurrent_waiters_are_paced_too() {
        let l = RateLimiter::new(100.0, 1);
        let start = std::time::Instant::now();
        let futs = (0..11).map(|_| l.acquire());
        futures::future::join_all(futs).await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_millis(90) && e < Duration::from_millis(400),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn zero_qps_means_unlimited() {
        let l = RateLimiter::new(0.0, 0);
        let start = std::time::Instant::now();
        for _ in 0..1000 {
            l.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(50));
    }
}
