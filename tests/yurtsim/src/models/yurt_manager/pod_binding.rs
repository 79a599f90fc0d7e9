//! pod-binding-controller (v1.6.1 and v1.7.0 alike): on edge nodes marked autonomous it
//! rewrites the `tolerationSeconds` of the pods' not-ready/unreachable NoExecute tolerations,
//! keeping the originals in pod annotations, and puts them back when autonomy is removed.
//!
//! Facts (behaviour `podbinding` in facts/yurt-manager-controllers-V.yaml), read at
//! openyurtio/openyurt@v1.6.1 and @v1.7.0 (identical files):
//! pkg/yurtmanager/controller/yurtcoordinator/podbinding/pod_binding_controller.go (Add,
//! Reconcile, reconcilePod, resolveNodeAutonomySetting, isDaemonSetPodOrStaticPod);
//! pkg/projectinfo/projectinfo.go (the annotation keys); pkg/yurtmanager/controller/util/node/
//! controller_utils.go (PodBindingAnnotation). Reads go through the manager's cache (the base
//! identity lists and watches Nodes and Pods); the one write, an Update of the pod, is made as
//! ServiceAccount yurt-manager-pod-binding-controller.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::*;

pub(super) const POD_BINDING: &str = "pod-binding-controller";
const FILE: &str = "pod_binding_controller.go:0";
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
const BINDING: &str = "apps.openyurt.io/binding";
const AUTONOMY: &str = "node.beta.openyurt.io/autonomy";
const AUTONOMY_DURATION: &str = "node.openyurt.io/autonomy-duration";
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Where the original tolerationSeconds of each key is kept (TolerationKeyToAnnotation).
const BACKUPS: [(&str, &str); 2] = [
    (
        NOT_READY,
        "apps.openyurt.io/original-not-ready-toleration-duration",
    ),
    (
        UNREACHABLE,
        "apps.openyurt.io/original-unreachable-toleration-duration",
    ),
];
/// controller-runtime's per-item back-off tops out at 1000 s.
const MAX_BACKOFF: Duration = Duration::from_secs(1000);

/// What the event filters compare: per node its resourceVersion, edge label and the two
/// annotations the node predicate looks at; per pod its resourceVersion and the fields the
/// pod predicate looks at. The queue holds `namespace/name` keys.
#[derive(Default)]
pub(super) struct PodBinding {
    nodes: BTreeMap<String, (String, bool, Value, Value)>,
    pods: BTreeMap<String, (String, String)>,
    queue: BTreeSet<String>,
    /// failed keys: attempts so far and when the rate limiter hands them back
    retry: BTreeMap<String, (u32, Instant)>,
}

fn key_of(o: &Value) -> String {
    format!(
        "{}/{}",
        o["metadata"]["namespace"].as_str().unwrap_or(""),
        o["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// isDaemonSetPodOrStaticPod: owned by a DaemonSet, or a mirror pod.
fn skipped(pod: &Value) -> bool {
    let ds = pod["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["kind"] == json!("DaemonSet"));
    let mirror = pod["metadata"]["annotations"]["kubernetes.io/config.mirror"]
        .as_str()
        .is_some_and(|m| !m.is_empty());
    ds || mirror
}

/// The fields whose change lets a pod update through the filter: nodeName, tolerations and
/// both backup annotations.
fn pod_trigger(pod: &Value) -> String {
    let a = &pod["metadata"]["annotations"];
    json!([
        pod["spec"]["nodeName"],
        pod["spec"]["tolerations"],
        a[BACKUPS[0].1],
        a[BACKUPS[1].1]
    ])
    .to_string()
}

fn node_name(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or("")
}

/// resolveNodeAutonomySetting: (autonomous, tolerationSeconds; None = tolerate for ever).
/// The binding and v1.6 autonomy annotations win over the duration; a duration Go cannot parse
/// is logged and counts as not autonomous; zero or less means for ever.
fn autonomy(node: &Value, log: &super::super::Log) -> (bool, Option<i64>) {
    let a = &node["metadata"]["annotations"];
    if a[BINDING] == json!("true") || a[AUTONOMY] == json!("true") {
        return (true, None);
    }
    let Some(d) = a[AUTONOMY_DURATION].as_str() else {
        return (false, None);
    };
    match crate::util::parse_go_duration(d) {
        Err(e) => {
            log.error(FILE, &format!("could not parse autonomy duration {d}, {e}"));
            (false, None)
        }
        Ok(ns) if ns <= 0 => (true, None),
        Ok(ns) => (true, Some(ns / 1_000_000_000)),
    }
}

fn matching(t: &Value) -> Option<&'static str> {
    let key = BACKUPS
        .iter()
        .find(|(k, _)| t["key"] == json!(k))
        .map(|(_, a)| *a)?;
    (t["effect"] == json!("NoExecute")).then_some(key)
}

/// reconcilePod's rewrite of `pod` in place. Err is the runtime panic upstream hits when it
/// backs up a matching toleration that has no tolerationSeconds (it dereferences nil).
fn rewrite(pod: &mut Value, setting: (bool, Option<i64>)) -> Result<(), String> {
    let mut tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut annotations = pod["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut touched = false;
    for t in &mut tolerations {
        let Some(backup) = matching(t) else {
            continue;
        };
        let Some(t) = t.as_object_mut() else {
            continue;
        };
        match setting {
            (true, seconds) => {
                if !annotations.contains_key(backup) {
                    let Some(old) = t.get("tolerationSeconds").and_then(Value::as_i64) else {
                        return Err(
                            "runtime error: invalid memory address or nil pointer dereference"
                                .into(),
                        );
                    };
                    annotations.insert(backup.into(), json!(old.to_string()));
                }
                match seconds {
                    Some(s) => t.insert("tolerationSeconds".into(), json!(s)),
                    None => t.remove("tolerationSeconds"),
                };
                touched = true;
            }
            (false, _) => {
                // strconv.ParseInt(s, 10, 64); an unparsable backup is left alone
                if let Some(v) = annotations
                    .get(backup)
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<i64>().ok())
                {
                    t.insert("tolerationSeconds".into(), json!(v));
                    touched = true;
                }
            }
        }
    }
    if touched {
        pod["spec"]["tolerations"] = Value::Array(tolerations);
        pod["metadata"]["annotations"] = Value::Object(annotations);
    }
    Ok(())
}

impl YurtManager<'_> {
    /// One pass: queue what the event filters would, then reconcile the queue. A failed
    /// reconcile is logged as controller-runtime logs it and retried with a doubling delay.
    pub(super) fn bind_pods(&self, me: &Caller, st: &mut PodBinding) {
        let pods = self.base.list_watch("", "v1", "pods", "", "").ok();
        // the spec.nodeName index, built when a node's handler first needs it
        let mut by_node: Option<HashMap<&str, Vec<&Arc<Value>>>> = None;
        if let Ok(nodes) = self.base.list_watch("", "v1", "nodes", "", "") {
            let mut now = BTreeMap::new();
            for n in &nodes {
                let name = n["metadata"]["name"].as_str().unwrap_or("").to_string();
                let rv = n["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let edge = n["metadata"]["labels"][EDGE_LABEL] == json!("true");
                let a = &n["metadata"]["annotations"];
                let seen = (rv, edge, a[AUTONOMY].clone(), a[AUTONOMY_DURATION].clone());
                // an update event (a create passes no filter)
                if let Some(old) = st.nodes.get(&name).filter(|old| old.0 != seen.0) {
                    if !edge {
                        self.env.log.info(FILE, &format!("node {name} is not a edge node, skip node autonomy settings reconcile."));
                    } else if old.2 != seen.2 || old.3 != seen.3 {
                        // the handler lists the node's pods through the spec.nodeName index
                        let index = by_node.get_or_insert_with(|| {
                            let mut index: HashMap<&str, Vec<&Arc<Value>>> = HashMap::new();
                            for p in pods.iter().flatten() {
                                index.entry(node_name(p)).or_default().push(p);
                            }
                            index
                        });
                        for p in index.get(name.as_str()).into_iter().flatten() {
                            if !skipped(p) {
                                st.queue.insert(key_of(p));
                            }
                        }
                    }
                }
                now.insert(name, seen);
            }
            st.nodes = now;
        }
        if let Some(pods) = &pods {
            let mut now = BTreeMap::new();
            for p in pods {
                let key = key_of(p);
                let rv = p["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let old = st.pods.remove(&key);
                if old.as_ref().is_some_and(|o| o.0 == rv) {
                    now.insert(key, old.unwrap_or_default());
                    continue;
                }
                let trigger = pod_trigger(p);
                let queue = !skipped(p)
                    && match &old {
                        // a create (also every pod at start-up) with a node
                        None => !node_name(p).is_empty(),
                        Some((_, t)) => *t != trigger,
                    };
                if queue {
                    st.queue.insert(key.clone());
                }
                now.insert(key, (rv, trigger));
            }
            st.pods = now;
        }
        // keys whose back-off has run out come back
        let due: Vec<String> = st
            .retry
            .iter()
            .filter(|(_, (_, at))| Instant::now() >= *at)
            .map(|(k, _)| k.clone())
            .collect();
        st.queue.extend(due);
        for key in std::mem::take(&mut st.queue) {
            match self.reconcile_pod(me, &key) {
                Ok(()) => {
                    st.retry.remove(&key);
                }
                Err(e) => {
                    let (ns, name) = key.split_once('/').unwrap_or(("", &key));
                    self.env.log.line(&format!(
                        "{}\tERROR\t{SETUP}\tReconciler error\t{{\"controller\": \"{POD_BINDING}\", \"namespace\": \"{ns}\", \"name\": \"{name}\", \"error\": {}}}",
                        util::now(),
                        Value::String(e)
                    ));
                    let n = st.retry.get(&key).map_or(0, |r| r.0) + 1;
                    let delay = Duration::from_secs(2)
                        .saturating_mul(1 << (n - 1).min(10))
                        .min(MAX_BACKOFF);
                    st.retry
                        .insert(key, (n, Instant::now() + self.env.scaled(delay)));
                }
            }
        }
    }

    /// Reconcile → reconcilePod for one pod key.
    fn reconcile_pod(&self, me: &Caller, key: &str) -> Result<(), String> {
        let log = &self.env.log;
        log.info(FILE, &format!("reconcile pod request: {key}"));
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        let cached =
            |res: &str, ns: &str, name: &str| match self.base.cached_get("", "v1", res, ns, name) {
                Ok(o) => Ok(Some((*o).clone())),
                Err(e) if e.code == 404 => Ok(None),
                Err(e) => Err(e.message),
            };
        let Some(mut pod) = cached("pods", ns, name)? else {
            return Ok(());
        };
        let node = node_name(&pod).to_string();
        if node.is_empty() {
            return Ok(());
        }
        let Some(node) = cached("nodes", "", &node)? else {
            return Ok(());
        };
        if node["metadata"]["labels"][EDGE_LABEL] != json!("true") {
            return Ok(());
        }
        let setting = autonomy(&node, log);
        let stored = pod.clone();
        rewrite(&mut pod, setting).map_err(|p| format!("panic: {p} [recovered]"))?;
        if pod == stored {
            return Ok(());
        }
        // an Update of the object read from the cache: the cache is the store here, so the
        // rewrite is applied to what the API server holds
        let write = me.update("", "pods", ns, name, &|cur| {
            let before = cur.clone();
            rewrite(cur, setting).is_ok() && *cur != before
        });
        if let Err(e) = write {
            log.error(
                FILE,
                &format!("could not update pod({ns}/{name}), {}", e.message),
            );
            return Err(e.message);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(tolerations: Value, annotations: Value) -> Value {
        json!({"metadata": {"annotations": annotations}, "spec": {"tolerations": tolerations}})
    }

    // reconcilePod: autonomous → the originals backed up once, the seconds replaced (nil = for
    // ever); other keys and effects untouched.
    #[test]
    fn autonomy_backs_up_and_replaces_only_not_ready_and_unreachable_no_execute() {
        let mut p = pod(
            json!([
                {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 200},
                {"key": NOT_READY, "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
            ]),
            json!(null),
        );
        rewrite(&mut p, (true, Some(3600))).unwrap();
        let t = &p["spec"]["tolerations"];
        assert_eq!(t[0]["tolerationSeconds"], json!(3600));
        assert_eq!(t[1]["tolerationSeconds"], json!(3600));
        assert!(t[2].get("tolerationSeconds").is_none());
        assert_eq!(t[3]["tolerationSeconds"], json!(5));
        let a = &p["metadata"]["annotations"];
        assert_eq!(a[BACKUPS[0].1], json!("300"));
        assert_eq!(a[BACKUPS[1].1], json!("200"));
        // for ever: the seconds go, the first backup stays
        rewrite(&mut p, (true, None)).unwrap();
        assert!(
            p["spec"]["tolerations"][0]
                .get("tolerationSeconds")
                .is_none()
        );
        assert_eq!(p["metadata"]["annotations"][BACKUPS[0].1], json!("300"));
        // not autonomous: restored from the backups, which stay
        rewrite(&mut p, (false, None)).unwrap();
        assert_eq!(p["spec"]["tolerations"][0]["tolerationSeconds"], json!(300));
        assert_eq!(p["spec"]["tolerations"][1]["tolerationSeconds"], json!(200));
        assert_eq!(p["metadata"]["annotations"][BACKUPS[1].1], json!("200"));
    }

    // reconcilePod: fmt.Sprintf("%d", *TolerationSeconds) on a nil pointer.
    #[test]
    fn a_matching_toleration_without_seconds_and_no_backup_panics() {
        let mut p = pod(
            json!([{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}]),
            json!({}),
        );
        let before = p.clone();
        assert!(rewrite(&mut p, (true, Some(10))).is_err());
        assert_eq!(p, before);
        // not autonomous: nothing to restore, no panic
        assert!(rewrite(&mut p, (false, None)).is_ok());
        assert_eq!(p, before);
    }

    // isDaemonSetPodOrStaticPod: a DaemonSet owner or a non-empty mirror annotation.
    #[test]
    fn daemonset_and_mirror_pods_are_skipped() {
        let owned = json!({"metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "x"}]}});
        let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "abc"}}});
        let empty_mirror =
            json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": ""}}});
        let job = json!({"metadata": {"ownerReferences": [{"kind": "Job", "name": "x"}]}});
        assert!(skipped(&owned) && skipped(&mirror));
        assert!(!skipped(&empty_mirror) && !skipped(&job));
    }

    // resolveNodeAutonomySetting's precedence and duration rules.
    #[test]
    fn autonomy_settings_resolve_as_upstream() {
        let log = super::super::super::Log {
            file: std::sync::Mutex::new(None),
        };
        let node = |a: Value| json!({"metadata": {"annotations": a}});
        assert_eq!(autonomy(&node(json!(null)), &log), (false, None));
        assert_eq!(
            autonomy(
                &node(json!({AUTONOMY: "true", AUTONOMY_DURATION: "5s"})),
                &log
            ),
            (true, None)
        );
        assert_eq!(
            autonomy(&node(json!({BINDING: "true"})), &log),
            (true, None)
        );
        assert_eq!(
            autonomy(&node(json!({AUTONOMY: "false"})), &log),
            (false, None)
        );
        assert_eq!(
            autonomy(&node(json!({AUTONOMY_DURATION: "0"})), &log),
            (true, None)
        );
        assert_eq!(
            autonomy(&node(json!({AUTONOMY_DURATION: "1.9s"})), &log),
            (true, Some(1))
        );
        assert_eq!(
            autonomy(&node(json!({AUTONOMY_DURATION: "2h"})), &log),
            (true, Some(7200))
        );
        assert_eq!(
            autonomy(&node(json!({AUTONOMY_DURATION: "1d"})), &log),
            (false, None)
        );
    }
}
