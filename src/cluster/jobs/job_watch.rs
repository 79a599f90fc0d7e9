//! The one label-selected watch on Jobs every runner shares: which Job finished how.

use super::*;

pub(super) enum Finished {
    Succeeded,
    Failed { reason: String, message: String },
}

pub(super) fn finished(job: &Job) -> Option<Finished> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    let is = |t: &str| conds.iter().find(|c| c.type_ == t && c.status == "True");
    if is("Complete")
        .or_else(|| is("SuccessCriteriaMet"))
        .is_some()
    {
        return Some(Finished::Succeeded);
    }
    is("Failed")
        .or_else(|| is("FailureTarget"))
        .map(|c| Finished::Failed {
            reason: c.reason.clone().unwrap_or_else(|| "Failed".into()),
            message: c.message.clone().unwrap_or_default(),
        })
}

pub(super) fn uid_of(job: &Job) -> &str {
    job.metadata.uid.as_deref().unwrap_or("")
}

pub(super) type Slot = Option<Arc<Job>>;

/// The latest state of every Job the watch has seen, by name; one `watch` channel each so a
/// node's task wakes only for its own Job.
#[derive(Default)]
pub(super) struct Registry {
    map: Mutex<HashMap<String, watch::Sender<Slot>>>,
    /// Name → uid of each Job deleted after it succeeded (a sweep deletes succeeded Jobs in
    /// batches, possibly before a node's task saw the success).
    succeeded_then_deleted: Mutex<HashMap<String, String>>,
}

impl Registry {
    pub(super) fn with<R>(&self, name: &str, f: impl FnOnce(&watch::Sender<Slot>) -> R) -> R {
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let tx = m
            .entry(name.to_string())
            .or_insert_with(|| watch::channel(None).0);
        f(tx)
    }

    pub(super) fn subscribe(&self, name: &str) -> watch::Receiver<Slot> {
        self.with(name, |tx| tx.subscribe())
    }

    pub(super) fn set(&self, name: &str, v: Slot) {
        self.with(name, |tx| {
            tx.send_replace(v);
        })
    }

    pub(super) fn remove_if_uid(&self, name: &str, uid: &str) {
        self.with(name, |tx| {
            tx.send_if_modified(|cur| {
                if cur.as_ref().is_some_and(|j| uid_of(j) == uid) {
                    *cur = None;
                    true
                } else {
                    false
                }
            });
        })
    }

    /// A Job was deleted: its last state came with the event.
    pub(super) fn deleted(&self, job: &Job) {
        let name = job.metadata.name.clone().unwrap_or_default();
        if matches!(finished(job), Some(Finished::Succeeded)) {
            self.swept(&name, uid_of(job));
        }
        self.remove_if_uid(&name, uid_of(job));
    }

    /// Job `name` with `uid` was deleted after it succeeded.
    pub(super) fn swept(&self, name: &str, uid: &str) {
        self.succeeded_then_deleted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), uid.to_owned());
    }

    /// Whether Job `name` with `uid` succeeded before it was deleted.
    pub(super) fn succeeded_before_deletion(&self, name: &str, uid: &str) -> bool {
        self.succeeded_then_deleted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .is_some_and(|u| u == uid)
    }

    /// How many Jobs the watch last saw succeeded that no sweep has deleted yet.
    pub(super) fn succeeded_present(&self) -> usize {
        let swept = self
            .succeeded_then_deleted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(name, tx)| {
                tx.borrow().as_ref().is_some_and(|j| {
                    matches!(finished(j), Some(Finished::Succeeded))
                        && swept.get(*name).is_none_or(|uid| uid != uid_of(j))
                })
            })
            .count()
    }

    pub(super) fn names(&self) -> Vec<String> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

#[derive(Clone, Debug)]
pub(super) enum WatchState {
    Listing { last_error: Option<String> },
    Ready,
}

pub(super) async fn watch_jobs(
    api: Api<Job>,
    selector: String,
    registry: Arc<Registry>,
    state: watch::Sender<WatchState>,
) {
    let cfg = watcher::Config::default().labels(&selector);
    let mut listing: Option<HashSet<String>> = None;
    // A connection the server closes once is routine (the watcher resumes where it was, as
    // client-go's reflector does); only failures in a row are worth a warning.
    let mut failures_in_row = 0u32;
    loop {
        let mut stream = watcher(api.clone(), cfg.clone()).default_backoff().boxed();
        while let Some(ev) = stream.next().await {
            if ev.is_ok() {
                failures_in_row = 0;
            }
            match ev {
                Ok(watcher::Event::Init) => listing = Some(HashSet::new()),
                Ok(watcher::Event::InitApply(j)) => {
                    let name = j.metadata.name.clone().unwrap_or_default();
                    if let Some(l) = listing.as_mut() {
                        l.insert(name.clone());
                    }
                    registry.set(&name, Some(Arc::new(j)));
                }
                Ok(watcher::Event::InitDone) => {
                    // A re-list replaces what we knew: Jobs it did not return are gone.
                    let seen = listing.take().unwrap_or_default();
                    for n in registry.names() {
                        if !seen.contains(&n) {
                            registry.set(&n, None);
                        }
                    }
                    state.send_replace(WatchState::Ready);
                }
                Ok(watcher::Event::Apply(j)) => {
                    let name = j.metadata.name.clone().unwrap_or_default();
                    registry.set(&name, Some(Arc::new(j)));
                }
                Ok(watcher::Event::Delete(j)) => registry.deleted(&j),
                Err(e) => {
                    let msg = error_chain(&e);
                    failures_in_row += 1;
                    if failures_in_row > 1 {
                        tracing::warn!(selector = %selector, error = %msg, "watching Jobs failed; retrying");
                    } else {
                        tracing::debug!(selector = %selector, error = %msg, "watching Jobs failed; retrying");
                    }
                    state.send_if_modified(|s| match s {
                        WatchState::Listing { last_error } => {
                            *last_error = Some(msg);
                            true
                        }
                        WatchState::Ready => false,
                    });
                    // An apiserver reports an expired resourceVersion as an ERROR event in the
                    // watch stream, and kube's watcher then re-lists. Some servers (proxies,
                    // yurtsim) answer the watch request itself with HTTP 410 instead, which
                    // the watcher would retry forever with the same resourceVersion: start
                    // over with a fresh list.
                    if let watcher::Error::WatchStartFailed(kube::Error::Api(s)) = &e
                        && s.code == 410
                    {
                        break;
                    }
                }
            }
        }
        listing = None;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
