//! Static pods' containers in the runtime. The kubelet runs static pods from files, with the
//! manifest's config hash as pod UID (kubernetes/kubernetes@v1.33.0
//! pkg/kubelet/config/common.go `applyDefaults`: UID = hash). A container the runtime stops is
//! restarted after the crash back-off like any other (restartPolicy defaults to Always).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::{Create, NodeRuntime};

struct Rec {
    id: String,
    restarts: u32,
    last_state: Value,
    started: String,
    stop: watch::Receiver<bool>,
    restart_at: Option<Instant>,
}

/// Per static pod (by mirror pod name), its containers' runtime records.
#[derive(Default)]
pub struct Statics {
    pods: BTreeMap<String, (String, BTreeMap<String, Rec>)>,
}

/// What `sync` needs to start a container: its env at creation.
pub type EnvFn<'a> = &'a dyn Fn(&Value) -> Vec<(String, String)>;

/// The log path the kubelet gives a static pod's container, by container name.
pub type LogFn<'a> = &'a dyn Fn(&str) -> std::path::PathBuf;

impl Statics {
    /// Keeps a container running for each of `pod`'s containers (`uid` = config hash).
    /// Returns (something changed, a container was just stopped by the runtime).
    pub fn sync(
        &mut self,
        rt: &NodeRuntime,
        pod: &Value,
        uid: &str,
        env: EnvFn<'_>,
        log: LogFn<'_>,
        backoff: &dyn Fn(u32) -> Duration,
    ) -> (bool, bool) {
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let entry = self
            .pods
            .entry(name.clone())
            .or_insert_with(|| (uid.to_string(), BTreeMap::new()));
        if entry.0 != uid {
            // A new manifest: a new pod; the old one's containers go.
            rt.remove_pod(&entry.0);
            *entry = (uid.to_string(), BTreeMap::new());
        }
        let (mut changed, mut stopped) = (false, false);
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            let cname = c["name"].as_str().unwrap_or("main").to_string();
            let create = |attempt: u32| {
                rt.create(Create {
                    pod,
                    pod_uid: uid,
                    container: c,
                    attempt,
                    env: env(c),
                    pgid: None,
                    log_path: log(&cname),
                })
            };
            match entry.1.get_mut(&cname) {
                None => {
                    let (id, stop) = create(0);
                    entry.1.insert(
                        cname,
                        Rec {
                            id,
                            restarts: 0,
                            last_state: Value::Null,
                            started: crate::util::now(),
                            stop,
                            restart_at: None,
                        },
                    );
                    changed = true;
                }
                Some(r) if r.restart_at.is_none() && *r.stop.borrow() => {
                    let cid = format!("{}{}", rt.flavor.id_prefix(), r.id);
                    r.last_state = json!({"terminated": {"exitCode": 137, "reason": "Error", "startedAt": r.started, "finishedAt": crate::util::now(), "containerID": cid}});
                    r.restart_at = Some(Instant::now() + backoff(r.restarts));
                    r.restarts += 1;
                    (changed, stopped) = (true, true);
                }
                Some(r) if r.restart_at.is_some_and(|t| Instant::now() >= t) => {
                    let (id, stop) = create(r.restarts);
                    (r.id, r.stop, r.restart_at, r.started) = (id, stop, None, crate::util::now());
                    changed = true;
                }
                Some(_) => {}
            }
        }
        (changed, stopped)
    }

    /// Drops the records of static pods not in `keep` (their files are gone).
    pub fn retain(&mut self, rt: &NodeRuntime, keep: &[String]) {
        let gone: Vec<String> = self
            .pods
            .keys()
            .filter(|p| !keep.contains(p))
            .cloned()
            .collect();
        for p in gone {
            if let Some((uid, _)) = self.pods.remove(&p) {
                rt.remove_pod(&uid);
            }
        }
    }

    /// Restart count, last state and container ID of `pod`'s containers into its status.
    pub fn apply(&self, rt: &NodeRuntime, pod: &str, status: &mut Value) {
        let Some((_, recs)) = self.pods.get(pod) else {
            return;
        };
        for cs in status["containerStatuses"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            let Some(r) = cs["name"].as_str().and_then(|n| recs.get(n)) else {
                continue;
            };
            cs["restartCount"] = json!(r.restarts);
            cs["containerID"] = json!(format!("{}{}", rt.flavor.id_prefix(), r.id));
            if !r.last_state.is_null() {
                cs["lastState"] = r.last_state.clone();
            }
            if r.restart_at.is_some() {
                cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            } else if cs["state"]["running"].is_object() {
                cs["state"]["running"]["startedAt"] = json!(r.started);
            }
        }
    }
}
