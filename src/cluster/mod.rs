//! The only code that talks to the Kubernetes API
//! (docs/architecture.md#talking-to-the-cluster-and-to-nodes).
//!
//! - [`client`]: kubeconfig precedence, user agent, client-side rate limit, [`Cluster`].
//! - [`apply`]: server-side apply of dynamic objects, delete, create-or-get.
//! - [`jobs`]: node Jobs with a sliding window, one label-selected watch, diagnostics.
//! - [`lock`]: the Lease `kube-system/yurtctl-lock`.
//! - [`journal`]: the ConfigMap `kube-system/yurtctl-state`.
//! - [`snapshot`]: what the planner needs to know about the cluster, in few list calls.
//! - [`access`]: SelfSubjectAccessReviews for the preflight permission check.
//! - [`nodes`]: yurtctl's labels and annotations on nodes; node states for rollouts.
//! - [`bootstrap`]: `cluster-info` and bootstrap tokens for YurtHub's credential.
//! - [`wait`]: named wait conditions and the one-watch wait for a set of objects.
//! - [`staticset`], [`yurtstaticset`]: a static pod's revision store, its mirror pods and the
//!   YurtStaticSet that may manage it.
//! - [`watch`]: watches as streams of domain values ([`watch::Change`]).
//!
//! Nothing here prints; progress leaves through event callbacks, failures as [`ClusterError`].

pub mod access;
pub mod apply;
pub mod bootstrap;
pub mod client;
pub mod collect;
pub mod crd;
pub mod diagnose;
pub mod error;
pub mod health;
pub mod jobs;
pub mod journal;
pub mod lock;
pub mod nodes;
pub mod snapshot;
pub mod staticset;
pub mod wait;
pub mod watch;
pub mod yurtstaticset;

use std::future::Future;
use std::num::NonZeroUsize;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::version::Info;
use kube::Client;
use serde::{Deserialize, Serialize};

pub use client::{ClientOptions, DEFAULT_BURST, DEFAULT_QPS, RateLimiter, connect};
pub use error::{ClusterError, FieldConflict};

/// Namespace of everything yurtctl creates unless a component needs another.
pub const SYSTEM_NAMESPACE: &str = "kube-system";
pub use crate::naming::{
    ANNOTATION_NODE, FIELD_MANAGER, LABEL_ACTION, LABEL_MANAGED_BY, LABEL_NODE, MANAGED_BY,
};

/// How transient API failures are retried (5xx, 429, broken connections).
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Attempts in total, the first included.
    pub attempts: u32,
    /// First back-off; doubles each time up to `max_delay`.
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(3),
        }
    }
}

/// A connected cluster: the kube client, the run's rate limiter and retry policy.
///
/// Cheap to clone; clones share the limiter.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    limiter: RateLimiter,
    retry: RetryPolicy,
    server: String,
    version: Option<Info>,
}

impl Cluster {
    /// Wraps an existing client (tests, or callers that built their own).
    pub fn new(client: Client, limiter: RateLimiter) -> Self {
        Cluster {
            client,
            limiter,
            retry: RetryPolicy::default(),
            server: String::new(),
            version: None,
        }
    }

    pub fn with_server(mut self, server: String, version: Option<Info>) -> Self {
        self.server = server;
        self.version = version;
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The API server URL, when known.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// `/version` as seen when connecting, if [`connect`] made this handle.
    pub fn version(&self) -> Option<&Info> {
        self.version.as_ref()
    }

    /// Waits for the rate limiter.
    pub async fn throttle(&self) {
        self.limiter.acquire().await
    }

    /// Runs one API call under the rate limit, retrying transient failures with exponential
    /// back-off (honouring a server's `retryAfterSeconds`). kube's own retry layer already
    /// retries 429/503/504 honouring `Retry-After`; this adds 500/502 and broken connections.
    /// Non-transient errors are returned unchanged for the caller to interpret.
    pub async fn call<T, F, Fut>(&self, mut f: F) -> Result<T, kube::Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        let mut attempt = 0u32;
        loop {
            self.throttle().await;
            attempt += 1;
            match f().await {
                Ok(v) => return Ok(v),
                Err(e) if attempt < self.retry.attempts && is_transient(&e) => {
                    let delay = retry_delay(&self.retry, attempt, &e);
                    tracing::debug!(attempt, ?delay, error = %e, "retrying API call");
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Page size of [`Cluster::list_map`]: kubectl's default chunk size.
pub const LIST_PAGE: u32 = 500;

impl Cluster {
    /// Lists every object of `api` matching `lp`, in pages of [`LIST_PAGE`], keeping what `f`
    /// makes of each (`None`: drop it). Only one page of whole objects is in memory at a time:
    /// a 5,000-node list is about 25 MB of JSON and several times that deserialized. Each page
    /// is retried like [`Cluster::call`]; when a continue token has expired (410 Gone) the list
    /// starts over, as kubectl does.
    pub async fn list_map<K, T>(
        &self,
        api: &kube::Api<K>,
        lp: &kube::api::ListParams,
        mut f: impl FnMut(K) -> Option<T>,
    ) -> Result<Vec<T>, kube::Error>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let mut restarts = 0;
        'list: loop {
            let mut out = Vec::new();
            let mut page = lp.clone().limit(LIST_PAGE);
            loop {
                let list = match self.call(|| api.list(&page)).await {
                    Ok(l) => l,
                    Err(kube::Error::Api(e)) if e.code == 410 && restarts < 3 => {
                        restarts += 1;
                        continue 'list;
                    }
                    Err(e) => return Err(e),
                };
                let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                out.extend(list.items.into_iter().filter_map(&mut f));
                match next {
                    Some(c) => page = lp.clone().limit(LIST_PAGE).continue_token(&c),
                    None => return Ok(out),
                }
            }
        }
    }
}

/// How many requests or node Jobs run at once: at least 1 by its type, so nothing clamps it.
/// `--concurrency` is checked once, at the CLI edge; 1 unless given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Concurrency(NonZeroUsize);

impl Concurrency {
    pub const ONE: Concurrency = Concurrency(NonZeroUsize::MIN);

    /// None for 0.
    pub const fn new(n: usize) -> Option<Concurrency> {
        match NonZeroUsize::new(n) {
            Some(n) => Some(Concurrency(n)),
            None => None,
        }
    }

    pub const fn get(self) -> usize {
        self.0.get()
    }
}

impl Default for Concurrency {
    fn default() -> Self {
        Concurrency::ONE
    }
}

impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Per-node API work (labels, annotations, patches) at most `concurrency` requests at once,
/// each still under the run's rate limit: one at a time, 1,000 nodes took 19 s of round trips.
/// Stops starting new ones at the first error and returns it.
pub async fn each_concurrently<T, Fut>(
    items: impl IntoIterator<Item = T>,
    concurrency: Concurrency,
    f: impl FnMut(T) -> Fut,
) -> Result<(), ClusterError>
where
    Fut: Future<Output = Result<(), ClusterError>>,
{
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(items)
        .map(f)
        .buffer_unordered(concurrency.get())
        .try_collect()
        .await
}

/// Like [`each_concurrently`], keeping every answer, in the order of `items` (server dry
/// runs report each write).
pub async fn map_concurrently<T, R, Fut>(
    items: impl IntoIterator<Item = T>,
    concurrency: Concurrency,
    f: impl FnMut(T) -> Fut,
) -> Vec<R>
where
    Fut: Future<Output = R>,
{
    use futures::StreamExt;
    futures::stream::iter(items)
        .map(f)
        .buffered(concurrency.get())
        .collect()
        .await
}

/// Whether a request may be retried as is.
pub(crate) fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

fn retry_delay(p: &RetryPolicy, attempt: u32, e: &kube::Error) -> Duration {
    if let kube::Error::Api(s) = e
        && let Some(d) = &s.details
        && d.retry_after_seconds > 0
    {
        return Duration::from_secs(u64::from(d.retry_after_seconds)).min(p.max_delay * 4);
    }
    let exp = p
        .base_delay
        .saturating_mul(1u32 << (attempt - 1).min(16))
        .min(p.max_delay);
    // Jitter (0.5–1.0 of the delay) so that a window of Jobs does not retry in lockstep.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let frac = 0.5 + f64::from(nanos % 1000) / 2000.0;
    exp.mul_f64(frac)
}

/// Current time as a k8s timestamp, to the millisecond: the journal holds three per node and
/// phase, and nanoseconds would add 18 bytes to each in a ConfigMap limited to 1 MiB.
pub(crate) fn now() -> k8s_openapi::jiff::Timestamp {
    let t = k8s_openapi::jiff::Timestamp::now();
    t.round(k8s_openapi::jiff::Unit::Millisecond).unwrap_or(t)
}
