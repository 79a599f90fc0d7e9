//! Run locks: Lease `kube-system/yurtctl-lock` for convert/revert
//! (docs/architecture.md#state-in-the-cluster), and one Lease
//! per static pod for its rollouts (`LockOptions::name`).
//!
//! Acquire creates the Lease, or takes it over when its holder stopped renewing. Every write
//! carries the resourceVersion it was based on, so of two racing acquirers exactly one wins.
//! While held, a background task renews it every duration/3. Release deletes it (only if it
//! is still ours); dropping the guard releases it in the background.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use tokio::sync::{Mutex, watch};

use super::error::{ClusterError, kube_code};
use super::{Cluster, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE, now};
use crate::naming::ANNOTATION_LOCK_COMMAND;

pub const LOCK_NAME: &str = "yurtctl-lock";

pub use super::error::LockError;

/// How the lock is taken.
#[derive(Clone, Debug)]
pub struct LockOptions {
    /// `<user>@<host>/<pid>#<run id>`; see [`default_identity`].
    pub identity: String,
    /// How long the lease stays valid without renewal.
    pub duration: Duration,
    pub namespace: String,
    /// The Lease's name ([`LOCK_NAME`] unless a command locks something narrower).
    pub name: String,
    /// The command taking it (`convert`, `revert`, …), so others can say what is running.
    pub command: String,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            identity: default_identity(),
            duration: Duration::from_secs(60),
            namespace: SYSTEM_NAMESPACE.into(),
            name: LOCK_NAME.into(),
            command: String::new(),
        }
    }
}

impl LockOptions {
    /// `namespace/name`, as errors name the lock.
    pub fn lease(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The Lease's metadata as this run writes it: ours, and which command holds it.
    fn metadata(&self, mut meta: kube::api::ObjectMeta) -> kube::api::ObjectMeta {
        meta.name = Some(self.name.clone());
        meta.namespace = Some(self.namespace.clone());
        meta.labels
            .get_or_insert_default()
            .insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
        let annotations = meta.annotations.get_or_insert_default();
        if self.command.is_empty() {
            annotations.remove(ANNOTATION_LOCK_COMMAND);
        } else {
            annotations.insert(ANNOTATION_LOCK_COMMAND.into(), self.command.clone());
        }
        meta
    }
}

/// `<user>@<host>/<pid>#<run id>`: who holds the lock, for humans, plus a random run id so two
/// runs of the same process never look alike.
pub fn default_identity() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into());
    format!("{user}@{host}/{}#{}", std::process::id(), run_id())
}

/// 8 hex digits, different for every call (time, pid and a counter through a hash).
fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.write_u64(N.fetch_add(1, Ordering::Relaxed));
    format!("{:08x}", h.finish() as u32)
}

/// Who holds the lock, as read from the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    pub identity: String,
    /// The command holding it, when the holder recorded one.
    pub command: Option<String>,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    pub duration: Duration,
}

impl LockHolder {
    fn from_lease(l: &Lease) -> Option<Self> {
        let s = l.spec.as_ref()?;
        let identity = s.holder_identity.clone().filter(|h| !h.is_empty())?;
        let command = l
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_LOCK_COMMAND))
            .filter(|c| !c.is_empty())
            .cloned();
        Some(LockHolder {
            identity,
            command,
            acquire_time: s.acquire_time.as_ref().map(|t| t.0),
            renew_time: s
                .renew_time
                .as_ref()
                .or(s.acquire_time.as_ref())
                .map(|t| t.0),
            duration: Duration::from_secs(s.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        })
    }

    /// Whether its holder still renews it (the lease has not expired).
    pub fn is_live(&self) -> bool {
        !self.expires_in(now()).is_zero()
    }

    /// Time left before the lease expires (zero when expired).
    pub fn expires_in(&self, at: Timestamp) -> Duration {
        let Some(renew) = self.renew_time else {
            return Duration::ZERO;
        };
        let end = renew.as_millisecond() + self.duration.as_millis() as i64;
        Duration::from_millis((end - at.as_millisecond()).max(0) as u64)
    }

    /// `a revert run by alice@host/1#ab, since T` (what messages call the holder).
    pub fn describe(&self) -> String {
        let run = match &self.command {
            Some(c) => format!("a {c} run by {}", self.identity),
            None => self.identity.clone(),
        };
        match self.acquire_time {
            Some(t) => format!("{run}, since {t:.0}"),
            None => run,
        }
    }

    /// The error a run gets when it finds the lock held by this holder.
    pub fn held_error(&self, lease: String) -> ClusterError {
        LockError::Held {
            lease,
            holder: self.identity.clone(),
            run: self.describe(),
            renew_time: self.renew_time.map(|t| t.to_string()),
            expires_in: self.expires_in(now()),
        }
        .into()
    }
}

/// Reads the current holder of `<namespace>/yurtctl-lock`, if held (expired or not).
pub async fn holder(
    cluster: &Cluster,
    namespace: &str,
) -> Result<Option<LockHolder>, ClusterError> {
    holder_of(cluster, namespace, LOCK_NAME).await
}

/// Reads the current holder of Lease `<namespace>/<name>`, if held (expired or not).
pub async fn holder_of(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<LockHolder>, ClusterError> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), namespace);
    let l = cluster
        .call(|| api.get_opt(name))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get Lease {namespace}/{name}"), e))?;
    Ok(l.as_ref().and_then(LockHolder::from_lease))
}

fn spec_for(opts: &LockOptions, acquire: Timestamp, transitions: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(opts.identity.clone()),
        lease_duration_seconds: Some(opts.duration.as_secs().max(1) as i32),
        acquire_time: Some(MicroTime(acquire)),
        renew_time: Some(MicroTime(acquire)),
        lease_transitions: Some(transitions),
        ..Default::default()
    }
}

/// Takes the lock or fails with [`ClusterError::LockHeld`] naming the holder.
pub async fn acquire(cluster: &Cluster, opts: LockOptions) -> Result<LockGuard, ClusterError> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), &opts.namespace);
    let name = opts.name.clone();
    let what = format!("Lease {}", opts.lease());
    let pp = PostParams::default();
    for _ in 0..5 {
        let current = cluster
            .call(|| api.get_opt(&name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?;
        let t = now();
        let written = match current {
            None => {
                let lease = Lease {
                    metadata: opts.metadata(Default::default()),
                    spec: Some(spec_for(&opts, t, 0)),
                };
                cluster.call(|| api.create(&pp, &lease)).await
            }
            Some(mut lease) => {
                if let Some(h) = LockHolder::from_lease(&lease)
                    && h.identity != opts.identity
                    && !h.expires_in(t).is_zero()
                {
                    return Err(h.held_error(opts.lease()));
                }
                // Free, expired, or (after a lost renewal race) already ours.
                let transitions = lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.lease_transitions)
                    .unwrap_or(0)
                    + 1;
                lease.spec = Some(spec_for(&opts, t, transitions));
                lease.metadata = opts.metadata(lease.metadata);
                // `replace` sends the resourceVersion we read: a concurrent writer makes it 409.
                cluster.call(|| api.replace(&name, &pp, &lease)).await
            }
        };
        match written {
            Ok(lease) => return Ok(LockGuard::start(cluster.clone(), api, opts, lease)),
            // Someone else created or updated it between our read and write: read again.
            Err(e) if kube_code(&e) == Some(409) => continue,
            Err(e) => return Err(ClusterError::from_kube(format!("take {what}"), e)),
        }
    }
    match holder_of(cluster, &opts.namespace, &name).await? {
        Some(h) => Err(h.held_error(opts.lease())),
        None => Err(ClusterError::Timeout {
            what: format!("{what} to settle (it kept changing)"),
            after: Duration::ZERO,
        }),
    }
}

/// What taking the lock would write, sent with `dryRun=All`: (verb, `Lease ns/name`, the
/// server's answer) — a create when there is no Lease, else the update of a takeover.
pub async fn dry_run_take(
    cluster: &Cluster,
    opts: &LockOptions,
) -> Result<(&'static str, String, Result<(), ClusterError>), ClusterError> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), &opts.namespace);
    let what = format!("Lease {}", opts.lease());
    let pp = PostParams {
        dry_run: true,
        field_manager: Some(super::FIELD_MANAGER.into()),
    };
    let current = cluster
        .call(|| api.get_opt(&opts.name))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?;
    let (verb, r) = match current {
        None => {
            let lease = Lease {
                metadata: opts.metadata(Default::default()),
                spec: Some(LeaseSpec {
                    holder_identity: Some(opts.identity.clone()),
                    lease_duration_seconds: Some(opts.duration.as_secs() as i32),
                    ..Default::default()
                }),
            };
            ("create", cluster.call(|| api.create(&pp, &lease)).await)
        }
        Some(l) => (
            "update",
            cluster.call(|| api.replace(&opts.name, &pp, &l)).await,
        ),
    };
    let r = r
        .map(drop)
        .map_err(|e| ClusterError::from_kube(format!("{verb} {what}"), e));
    Ok((verb, what, r))
}

/// The delete a release would send, with `dryRun=All`: (`Lease ns/name`, the answer).
pub async fn dry_run_release(
    cluster: &Cluster,
    opts: &LockOptions,
) -> (String, Result<super::apply::Deleted, ClusterError>) {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), &opts.namespace);
    let what = format!("Lease {}", opts.lease());
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    let r = super::apply::delete_with(cluster, &api, &opts.name, &dp, &what).await;
    (what, r)
}

/// Deletes `<namespace>/yurtctl-lock` whoever holds it (`--force-unlock`); returns who held it.
pub async fn force_unlock(
    cluster: &Cluster,
    namespace: &str,
) -> Result<Option<LockHolder>, ClusterError> {
    force_unlock_of(cluster, namespace, LOCK_NAME).await
}

/// Deletes Lease `<namespace>/<name>` whoever holds it; returns who held it.
pub async fn force_unlock_of(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<LockHolder>, ClusterError> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), namespace);
    let prev = holder_of(cluster, namespace, name).await?;
    super::apply::delete_with(
        cluster,
        &api,
        name,
        &DeleteParams::default(),
        &format!("Lease {namespace}/{name}"),
    )
    .await?;
    Ok(prev)
}

struct Shared {
    /// The last Lease we wrote (its resourceVersion is our claim).
    lease: Mutex<Lease>,
    api: Api<Lease>,
    cluster: Cluster,
    opts: LockOptions,
}

/// The held lock. Renews in the background; [`LockGuard::release`] (or drop) gives it back.
pub struct LockGuard {
    shared: Arc<Shared>,
    renewer: Option<tokio::task::JoinHandle<()>>,
    lost: watch::Receiver<Option<ClusterError>>,
    released: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("identity", &self.shared.opts.identity)
            .field("namespace", &self.shared.opts.namespace)
            .finish()
    }
}

impl LockGuard {
    fn start(cluster: Cluster, api: Api<Lease>, opts: LockOptions, lease: Lease) -> Self {
        let shared = Arc::new(Shared {
            lease: Mutex::new(lease),
            api,
            cluster,
            opts,
        });
        let (lost_tx, lost) = watch::channel(None);
        let renewer = tokio::spawn(renew_loop(shared.clone(), lost_tx));
        LockGuard {
            shared,
            renewer: Some(renewer),
            lost,
            released: false,
        }
    }

    pub fn identity(&self) -> &str {
        &self.shared.opts.identity
    }

    /// `Some(LockLost)` once another run has taken the lock from us.
    pub fn lost(&self) -> Option<ClusterError> {
        self.lost.borrow().clone()
    }

    /// A receiver that turns `Some` when the lock is lost, for loops that own their `select!`.
    pub fn lost_signal(&self) -> watch::Receiver<Option<ClusterError>> {
        self.lost.clone()
    }

    /// Resolves when the lock is lost (for `select!` in the executor).
    pub async fn wait_lost(&mut self) -> ClusterError {
        match self.lost.wait_for(|l| l.is_some()).await {
            Ok(l) => l.clone().unwrap_or_else(|| {
                LockError::Lost {
                    lease: self.shared.opts.lease(),
                    holder: String::new(),
                }
                .into()
            }),
            Err(_) => std::future::pending().await,
        }
    }

    /// Renews now (also done every duration/3 in the background).
    pub async fn renew(&self) -> Result<(), ClusterError> {
        renew_once(&self.shared).await
    }

    /// Stops renewing and deletes the Lease if it is still ours.
    pub async fn release(mut self) -> Result<(), ClusterError> {
        self.released = true;
        if let Some(r) = self.renewer.take() {
            r.abort();
        }
        release_shared(&self.shared).await
    }
}

async fn release_shared(shared: &Shared) -> Result<(), ClusterError> {
    let lease = shared.lease.lock().await.clone();
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: lease.metadata.uid.clone(),
            resource_version: lease.metadata.resource_version.clone(),
        }),
        ..Default::default()
    };
    let what = format!("Lease {}", shared.opts.lease());
    let name = &shared.opts.name;
    match super::apply::delete_with(&shared.cluster, &shared.api, name, &dp, &what).await {
        Ok(_) => Ok(()),
        // Changed since our last write: someone else holds it now; leave it alone.
        Err(e) if e.status_code() == Some(409) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(r) = self.renewer.take() {
            r.abort();
        }
        if !self.released
            && let Ok(h) = tokio::runtime::Handle::try_current()
        {
            let shared = self.shared.clone();
            h.spawn(async move {
                if let Err(e) = release_shared(&shared).await {
                    tracing::warn!(error = %e, "releasing the lock on drop failed");
                }
            });
        }
    }
}

async fn renew_once(shared: &Shared) -> Result<(), ClusterError> {
    let mut held = shared.lease.lock().await;
    let mut next = held.clone();
    if let Some(s) = next.spec.as_mut() {
        s.renew_time = Some(MicroTime(now()));
    }
    let what = format!("Lease {}", shared.opts.lease());
    let name = &shared.opts.name;
    let pp = PostParams::default();
    match shared
        .cluster
        .call(|| shared.api.replace(name, &pp, &next))
        .await
    {
        Ok(l) => {
            *held = l;
            Ok(())
        }
        Err(e) if matches!(kube_code(&e), Some(409) | Some(404)) => {
            // Someone changed or deleted it. Still ours (e.g. a retried write)? Adopt it.
            let cur = shared
                .cluster
                .call(|| shared.api.get_opt(name))
                .await
                .map_err(|e| ClusterError::from_kube(format!("get {what}"), e))?;
            match cur {
                Some(l)
                    if LockHolder::from_lease(&l)
                        .is_some_and(|h| h.identity == shared.opts.identity) =>
                {
                    *held = l;
                    Ok(())
                }
                other => Err(LockError::Lost {
                    lease: shared.opts.lease(),
                    holder: other
                        .as_ref()
                        .and_then(LockHolder::from_lease)
                        .map(|h| h.identity)
                        .unwrap_or_else(|| "nobody (the Lease was deleted)".into()),
                }
                .into()),
            }
        }
        Err(e) => Err(ClusterError::from_kube(format!("renew {what}"), e)),
    }
}

async fn renew_loop(shared: Arc<Shared>, lost: watch::Sender<Option<ClusterError>>) {
    let period = (shared.opts.duration / 3).max(Duration::from_millis(100));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        match renew_once(&shared).await {
            Ok(()) => {}
            Err(e @ ClusterError::Lock(LockError::Lost { .. })) => {
                lost.send_replace(Some(e));
                return;
            }
            // Transient: try again next period; the lease outlives two missed renewals.
            Err(e) => tracing::warn!(error = %e, "renewing the lock failed; will retry"),
        }
    }
}
