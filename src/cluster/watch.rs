//! Watches as streams of what the caller needs (one watch per kind, never a poll per object:
//! docs/architecture.md#talking-to-the-cluster-and-to-nodes). Each is kube-runtime's watcher (list,
//! then watch from its resourceVersion; re-listed after a 410 or a dropped connection, with its
//! default back-off), its objects turned into domain values here so that nothing above `cluster/`
//! touches kube's API types.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};

/// One change a watch saw, in kube-runtime's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<T> {
    /// A (re-)list starts: the objects up to [`Change::InitDone`] replace what is known.
    Init,
    /// One object of that (re-)list.
    InitApply(T),
    /// The (re-)list is complete.
    InitDone,
    /// An object was created or changed.
    Apply(T),
    /// An object was deleted (its last state).
    Delete(T),
}

/// A watch failed for a moment; the stream goes on (re-listing with back-off), so this is
/// worth a debug line, not an error.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct WatchError(#[from] watcher::Error);

/// A never-ending stream of changes.
pub type Changes<T> = BoxStream<'static, Result<Change<T>, WatchError>>;

/// ONE watch of `api` under `config`, each object made into what `f` makes of it; objects it
/// turns into `None` are not ours and their events are dropped (the list markers pass).
pub(crate) fn changes<K, T>(
    api: Api<K>,
    config: watcher::Config,
    f: impl Fn(K) -> Option<T> + Send + 'static,
) -> Changes<T>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
{
    watcher(api, config)
        .default_backoff()
        .filter_map(move |ev| {
            let change = match ev {
                Ok(watcher::Event::Init) => Some(Ok(Change::Init)),
                Ok(watcher::Event::InitApply(o)) => f(o).map(|t| Ok(Change::InitApply(t))),
                Ok(watcher::Event::InitDone) => Some(Ok(Change::InitDone)),
                Ok(watcher::Event::Apply(o)) => f(o).map(|t| Ok(Change::Apply(t))),
                Ok(watcher::Event::Delete(o)) => f(o).map(|t| Ok(Change::Delete(t))),
                Err(e) => Some(Err(WatchError(e))),
            };
            std::future::ready(change)
        })
        .boxed()
}
