//! The object store: one collection per group+resource, a global resourceVersion like etcd's
//! revision, a bounded per-resource event history (so old versions expire with 410 as on a real
//! apiserver) and fan-out to watchers. Everything is plain JSON so CRDs need no code.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::GroupResource;
use crate::api::selector::{FieldSelector, LabelSelector};

pub type ObjKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug)]
pub struct StoreEvent {
    pub rv: u64,
    pub gr: GroupResource,
    pub typ: EventType,
    pub obj: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

#[derive(Clone, Default)]
pub struct Filter {
    pub namespace: Option<String>,
    pub label: LabelSelector,
    pub field: FieldSelector,
}

impl Filter {
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && obj["metadata"]["namespace"].as_str().unwrap_or("") != ns
        {
            return false;
        }
        self.label.matches(obj["metadata"]["labels"].as_object()) && self.field.matches(obj)
    }
}

pub type WatchItem = (EventType, Arc<Value>);

struct HistoryEntry {
    rv: u64,
    typ: EventType,
    obj: Box<[u8]>,
    prev: Option<Box<[u8]>>,
}

impl HistoryEntry {
    fn new(ev: &StoreEvent) -> Self {
        let ser = |v: &Value| serde_json::to_vec(v).unwrap_or_default().into_boxed_slice();
        HistoryEntry {
            rv: ev.rv,
            typ: ev.typ,
            obj: ser(&ev.obj),
            prev: ev.prev.as_deref().map(ser),
        }
    }

    fn to_event(&self, gr: &GroupResource) -> StoreEvent {
        let de = |b: &[u8]| Arc::new(serde_json::from_slice::<Value>(b).unwrap_or(Value::Null));
        StoreEvent {
            rv: self.rv,
            gr: gr.clone(),
            typ: self.typ,
            obj: de(&self.obj),
            prev: self.prev.as_deref().map(de),
        }
    }
}

struct Watcher {
    filter: Filter,
    tx: mpsc::Sender<WatchItem>,
}

impl Watcher {
    /// Translates a store event for this watcher: objects moving into or out of its selector
    /// appear as ADDED / DELETED, as the apiserver's watch cache does.
    fn translate(&self, ev: &StoreEvent) -> Option<WatchItem> {
        let now = self.filter.matches(&ev.obj);
        let before = ev
            .prev
            .as_deref()
            .map(|p| self.filter.matches(p))
            .unwrap_or(false);
        match ev.typ {
            EventType::Added if now => Some((EventType::Added, ev.obj.clone())),
            EventType::Deleted if now || before => Some((EventType::Deleted, ev.obj.clone())),
            EventType::Modified => match (before, now) {
                (true, true) => Some((EventType::Modified, ev.obj.clone())),
                (false, true) => Some((EventType::Added, ev.obj.clone())),
                (true, false) => Some((EventType::Deleted, ev.obj.clone())),
                (false, false) => None,
            },
            _ => None,
        }
    }
}

#[derive(Default)]
struct Collection {
    items: BTreeMap<ObjKey, Arc<Value>>,
    /// Serialised, because history is mostly never read and a JSON text is a fraction of the
    /// size of the same object as a `Value` (this is what keeps 5,000 nodes under 1 GiB).
    history: VecDeque<HistoryEntry>,
    /// Events at or below this revision may be gone from `history`.
    compacted_rv: u64,
    watchers: Vec<Watcher>,
}

struct State {
    rv: u64,
    collections: HashMap<GroupResource, Collection>,
    /// owner uid → dependents, for garbage collection.
    dependents: HashMap<String, HashSet<(GroupResource, ObjKey)>>,
    subscribers: Vec<mpsc::UnboundedSender<Arc<StoreEvent>>>,
}

pub struct Store {
    state: Mutex<State>,
    history_limit: usize,
    watch_buffer: usize,
}

pub enum WriteOp {
    /// Store this object (the store sets `metadata.resourceVersion`).
    Put(Value),
    Delete,
    /// Nothing changed: no new revision, no event (as a no-op update on a real apiserver).
    Noop,
}

pub enum WatchFrom {
    /// Replay history after this revision, then live events; 410 if it was compacted.
    Revision(u64),
    /// Synthetic ADDED events for the current state, then live events.
    Now,
}

pub fn key_of(obj: &Value) -> ObjKey {
    (
        obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        obj["metadata"]["name"].as_str().unwrap_or("").to_string(),
    )
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["uid"].as_str().map(str::to_string))
        .collect()
}

impl Store {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        Store {
            state: Mutex::new(State {
                rv: 1,
                collections: HashMap::new(),
                dependents: HashMap::new(),
                subscribers: Vec::new(),
            }),
            history_limit,
            watch_buffer,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.state.lock().unwrap().rv
    }

    pub fn get(&self, gr: &GroupResource, ns: &str, name: &str) -> Option<Arc<Value>> {
        let st = self.state.lock().unwrap();
        st.collections
            .get(gr)?
            .items
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects matching `filter`, in (namespace, name) order, and the revision of the snapshot.
    pub fn list(&self, gr: &GroupResource, filter: &Filter) -> (Vec<Arc<Value>>, u64) {
        let st = self.state.lock().unwrap();
        let Some(c) = st.collections.get(gr) else {
            return (Vec::new(), st.rv);
        };
        let items = match &filter.namespace {
            Some(ns) => c
                .items
                .range((ns.clone(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v)
                .filter(|v| filter.matches(v))
                .cloned()
                .collect(),
            None => c
                .items
                .values()
                .filter(|v| filter.matches(v))
                .cloned()
                .collect(),
        };
        (items, st.rv)
    }

    pub fn count(&self, gr: &GroupResource) -> usize {
        self.state
            .lock()
            .unwrap()
            .collections
            .get(gr)
            .map(|c| c.items.len())
            .unwrap_or(0)
    }

    /// Atomic read-modify-write of one object. `f` sees the current object and decides.
    pub fn write(
        &self,
        gr: &GroupResource,
        ns: &str,
        name: &str,
        dry_run: bool,
        f: impl FnOnce(Option<&Arc<Value>>) -> ApiResult<WriteOp>,
    ) -> ApiResult<Option<Arc<Value>>> {
        let mut st = self.state.lock().unwrap();
        let key = (ns.to_string(), name.to_string());
        let current = st
            .collections
            .get(gr)
            .and_then(|c| c.items.get(&key))
            .cloned();
        let op = f(current.as_ref())?;
        match op {
            WriteOp::Noop => Ok(current),
            WriteOp::Put(mut obj) => {
                let next = st.rv + 1;
                obj["metadata"]["resourceVersion"] = Value::String(next.to_string());
                let obj = Arc::new(obj);
                if dry_run {
                    return Ok(Some(obj));
                }
                st.rv = next;
                let typ = if current.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                self.index_owners(&mut st, gr, &key, current.as_deref(), Some(&obj));
                st.collections
                    .entry(gr.clone())
                    .or_default()
                    .items
                    .insert(key, obj.clone());
                self.publish(
                    &mut st,
                    StoreEvent {
                        rv: next,
                        gr: gr.clone(),
                        typ,
                        obj: obj.clone(),
                        prev: current,
                    },
                );
                Ok(Some(obj))
            }
            WriteOp::Delete => {
                let Some(cur) = current else { return Ok(None) };
                let next = st.rv + 1;
                let mut obj = (*cur).clone();
                obj["metadata"]["resourceVersion"] = Value::String(next.to_string());
                let obj = Arc::new(obj);
                if dry_run {
                    return Ok(Some(obj));
                }
                st.rv = next;
                self.index_owners(&mut st, gr, &key, Some(&cur), None);
                if let Some(c) = st.collections.get_mut(gr) {
                    c.items.remove(&key);
                }
                self.publish(
                    &mut st,
                    StoreEvent {
                        rv: next,
                        gr: gr.clone(),
                        typ: EventType::Deleted,
                        obj: obj.clone(),
                        prev: Some(cur),
                    },
                );
                Ok(Some(obj))
            }
        }
    }

    fn index_owners(
        &self,
        st: &mut State,
        gr: &GroupResource,
        key: &ObjKey,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        for uid in old.map(owner_uids).unwrap_or_default() {
            if let Some(set) = st.dependents.get_mut(&uid) {
                set.remove(&(gr.clone(), key.clone()));
                if set.is_empty() {
                    st.dependents.remove(&uid);
                }
            }
        }
        for uid in new.map(owner_uids).unwrap_or_default() {
            st.dependents
                .entry(uid)
                .or_default()
                .insert((gr.clone(), key.clone()));
        }
    }

    /// Objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<(GroupResource, ObjKey)> {
        let st = self.state.lock().unwrap();
        let mut v: Vec<_> = st
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    fn publish(&self, st: &mut State, ev: StoreEvent) {
        let ev = Arc::new(ev);
        st.subscribers.retain(|s| s.send(ev.clone()).is_ok());
        let limit = self.history_limit;
        let c = st.collections.entry(ev.gr.clone()).or_default();
        c.history.push_back(HistoryEntry::new(&ev));
        while c.history.len() > limit {
            if let Some(old) = c.history.pop_front() {
                c.compacted_rv = old.rv;
            }
        }
        // A watcher that cannot keep up is closed, as the apiserver does; clients re-watch.
        c.watchers.retain(|w| match w.translate(&ev) {
            Some(item) => w.tx.try_send(item).is_ok(),
            None => !w.tx.is_closed(),
        });
    }

    /// Starts a watch. Returns the initial events (replay or synthetic ADDED) and the live stream.
    pub fn watch(
        &self,
        gr: &GroupResource,
        filter: Filter,
        from: WatchFrom,
    ) -> ApiResult<(Vec<WatchItem>, mpsc::Receiver<WatchItem>)> {
        let mut st = self.state.lock().unwrap();
        let current_rv = st.rv;
        let c = st.collections.entry(gr.clone()).or_default();
        let initial: Vec<WatchItem> = match from {
            WatchFrom::Revision(rv) => {
                if rv < c.compacted_rv {
                    return Err(ApiError::gone(format!(
                        "too old resource version: {} ({})",
                        rv, c.compacted_rv
                    )));
                }
                let w = Watcher {
                    filter: filter.clone(),
                    tx: mpsc::channel(1).0,
                };
                c.history
                    .iter()
                    .filter(|e| e.rv > rv && e.rv <= current_rv)
                    .filter_map(|e| w.translate(&e.to_event(gr)))
                    .collect()
            }
            WatchFrom::Now => c
                .items
                .values()
                .filter(|o| filter.matches(o))
                .map(|o| (EventType::Added, o.clone()))
                .collect(),
        };
        let (tx, rx) = mpsc::channel(self.watch_buffer);
        c.watchers.push(Watcher { filter, tx });
        Ok((initial, rx))
    }

    /// Every event from now on, unfiltered and never dropped: for the sim's own controllers.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<StoreEvent>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.state.lock().unwrap().subscribers.push(tx);
        rx
    }

    /// Closes every open client watch (a fault: clients must re-watch from their last revision).
    pub fn drop_watches(&self) -> usize {
        let mut st = self.state.lock().unwrap();
        let mut n = 0;
        for c in st.collections.values_mut() {
            n += c.watchers.len();
            c.watchers.clear();
        }
        n
    }

    /// Forgets all history, as an etcd compaction does: watches from older revisions get 410.
    pub fn compact(&self) {
        let mut st = self.state.lock().unwrap();
        let rv = st.rv;
        for c in st.collections.values_mut() {
            c.history.clear();
            c.compacted_rv = rv;
        }
    }

    pub fn open_watches(&self) -> usize {
        let st = self.state.lock().unwrap();
        st.collections
            .values()
            .map(|c| c.watchers.iter().filter(|w| !w.tx.is_closed()).count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gr() -> GroupResource {
        GroupResource {
            group: String::new(),
            resource: "configmaps".into(),
        }
    }

    fn put(s: &Store, name: &str, labels: Value) -> Arc<Value> {
        s.write(&gr(), "default", name, false, |_| {
            Ok(WriteOp::Put(
                json!({"metadata": {"name": name, "namespace": "default", "labels": labels}}),
            ))
        })
        .unwrap()
        .unwrap()
    }

    #[tokio::test]
    async fn watch_replays_from_revision_and_translates_selector_transitions() {
        let s = Store::new(100, 100);
        let a = put(&s, "a", json!({"app": "x"}));
        let rv_a: u64 = a["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        put(&s, "b", json!({"app": "y"}));
        let filter = Filter {
            label: LabelSelector::parse("app=x").unwrap(),
            ..Default::default()
        };
        let (initial, mut rx) = s
            .watch(&gr(), filter, WatchFrom::Revision(rv_a - 1))
            .unwrap();
        assert_eq!(initial.len(), 1, "only a matches");
        assert_eq!(initial[0].0, EventType::Added);
        // b enters the selector: ADDED; a leaves it: DELETED.
        put(&s, "b", json!({"app": "x"}));
        put(&s, "a", json!({"app": "z"}));
        let e1 = rx.recv().await.unwrap();
        let e2 = rx.recv().await.unwrap();
        assert_eq!(
            (e1.0, e1.1["metadata"]["name"].as_str().unwrap()),
            (EventType::Added, "b")
        );
        assert_eq!(
            (e2.0, e2.1["metadata"]["name"].as_str().unwrap()),
            (EventType::Deleted, "a")
        );
    }

    #[test]
    fn compacted_history_gives_410_and_noop_keeps_revision() {
        let s = Store::new(2, 10);
        for i in 0..5 {
            put(&s, &format!("o{i}"), json!({}));
        }
        let err = s
            .watch(&gr(), Filter::default(), WatchFrom::Revision(2))
            .err()
            .unwrap();
        assert_eq!((err.code, err.reason), (410, "Expired"));
        assert!(err.message.starts_with("too old resource version: 2 ("));
        let rv = s.current_rv();
        s.write(&gr(), "default", "o1", false, |_| Ok(WriteOp::Noop))
            .unwrap();
        assert_eq!(s.current_rv(), rv);
    }

    #[test]
    fn owner_index_tracks_dependents() {
        let s = Store::new(10, 10);
        s.write(&gr(), "default", "dep", false, |_| {
            Ok(WriteOp::Put(json!({"metadata": {"name": "dep", "namespace": "default", "ownerReferences": [{"uid": "u1"}]}})))
        })
        .unwrap();
        assert_eq!(s.dependents_of("u1").len(), 1);
        s.write(&gr(), "default", "dep", false, |_| Ok(WriteOp::Delete))
            .unwrap();
        assert!(s.dependents_of("u1").is_empty());
    }

    #[test]
    fn dry_run_changes_nothing() {
        let s = Store::new(10, 10);
        let rv = s.current_rv();
        s.write(&gr(), "default", "x", true, |_| {
            Ok(WriteOp::Put(json!({"metadata": {"name": "x"}})))
        })
        .unwrap();
        assert_eq!(s.current_rv(), rv);
        assert!(s.get(&gr(), "default", "x").is_none());
    }
}
