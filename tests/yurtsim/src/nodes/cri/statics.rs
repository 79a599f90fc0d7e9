//! Static pods' containers in the runtime. The kubelet runs static pods from files, with the
//! manifest's config hash as pod UID (kubernetes/kubernetes@v1.33.0
//! pkg/kubelet/config/common.go `applyDefaults`: UID = hash). A container the runtime stops is
//! restarted after the crash back-off like any other (restartPolicy defaults to Always). What a
//! container runs (a real process, a component's model, or nothing the machine has) is started
//! by the kubelet's [`Runner`] before the runtime registers it, as for the pods of its API
//! source (nodes/containers.rs), and its end restarts it the same way.

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
    /// What its program ended with (exit code, reason), once it ended; None for a container
    /// nothing runs for here (a model the kubelet runs itself).
    exit: Option<watch::Receiver<Option<Ended>>>,
}

impl Rec {
    fn ended(&self) -> Option<Ended> {
        self.exit.as_ref().and_then(|e| *e.borrow())
    }
}

/// How a container's program ended: exit code and the runtime's reason.
pub type Ended = (i32, &'static str);

/// How the kubelet runs a static pod's containers: each one's environment (`env`), log path
/// (`log`) and crash back-off (`backoff`, by restarts); its program started by `start` before
/// the runtime registers the container (attempt, log path; None when nothing runs for it here,
/// Err with the runtime's message when it cannot start), then watched by `watch` (the
/// container's ID, the runtime's stop), which reports how it ended.
pub(crate) struct Runner<'a> {
    pub(crate) env: EnvFn<'a>,
    pub(crate) log: LogFn<'a>,
    pub(crate) backoff: &'a dyn Fn(u32) -> Duration,
    pub(crate) start: StartFn<'a>,
    pub(crate) watch: WatchFn<'a>,
}

/// A started program and its process group (what `crictl stop` kills).
pub(crate) type Start = (crate::nodes::containers::Started, Option<u32>);

/// Starts a container's program: the container, its attempt, its log path.
pub(crate) type StartFn<'a> =
    &'a dyn Fn(&Value, u32, &std::path::Path) -> Option<Result<Start, String>>;

/// Watches a started program: how it ended, once it did.
pub(crate) type WatchFn<'a> = &'a dyn Fn(
    crate::nodes::containers::Started,
    String,
    watch::Receiver<bool>,
) -> watch::Receiver<Option<Ended>>;

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
    /// Keeps a container running for each of `pod`'s containers (`uid` = config hash), as
    /// `run` says. Returns (something changed, a container was just stopped by the runtime).
    pub(crate) fn sync(
        &mut self,
        rt: &NodeRuntime,
        pod: &Value,
        uid: &str,
        run: &Runner<'_>,
    ) -> (bool, bool) {
        let (env, log, backoff) = (run.env, run.log, run.backoff);
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
                let log_path = log(&cname);
                let (started, pgid, failed) = match (run.start)(c, attempt, &log_path) {
                    None => (None, None, false),
                    Some(Ok((s, pgid))) => (Some(s), pgid, false),
                    Some(Err(_)) => (None, None, true),
                };
                let (id, stop) = rt.create(Create {
                    pod,
                    pod_uid: uid,
                    container: c,
                    attempt,
                    env: env(c),
                    pgid,
                    log_path,
                });
                let exit = match started {
                    Some(s) => Some((run.watch)(s, id.clone(), stop.clone())),
                    // kuberuntime_container.go startContainer: a failed start is reported
                    // exited with 128, reason StartError
                    None if failed => {
                        rt.exited(&id, 128, "StartError");
                        Some(watch::channel(Some((128, "StartError"))).1)
                    }
                    None => None,
                };
                (id, stop, exit)
            };
            match entry.1.get_mut(&cname) {
                None => {
                    let (id, stop, exit) = create(0);
                    entry.1.insert(
                        cname,
                        Rec {
                            id,
                            restarts: 0,
                            last_state: Value::Null,
                            started: crate::util::now(),
                            stop,
                            restart_at: None,
                            exit,
                        },
                    );
                    changed = true;
                }
                Some(r) if r.restart_at.is_none() && (*r.stop.borrow() || r.ended().is_some()) => {
                    // stopped by the runtime (`crictl stop`: SIGKILL, 137), or ended by itself
                    let (code, reason) = r.ended().unwrap_or((137, "Error"));
                    let cid = format!("{}{}", rt.flavor.id_prefix(), r.id);
                    r.last_state = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": r.started, "finishedAt": crate::util::now(), "containerID": cid}});
                    r.restart_at = Some(Instant::now() + backoff(r.restarts));
                    r.restarts += 1;
                    (changed, stopped) = (true, true);
                }
                Some(r) if r.restart_at.is_some_and(|t| Instant::now() >= t) => {
                    let (id, stop, exit) = create(r.restarts);
                    (r.id, r.stop, r.restart_at, r.started, r.exit) =
                        (id, stop, None, crate::util::now(), exit);
                    changed = true;
                }
                Some(_) => {}
            }
        }
        (changed, stopped)
    }

    /// The UIDs (config hashes) of the static pods the runtime has containers of.
    pub fn uids(&self) -> Vec<String> {
        self.pods.values().map(|(uid, _)| uid.clone()).collect()
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

    /// Whether `pod`'s containers were started (all of them: `sync` starts them together), and
    /// whether each of them runs now; None before they were started.
    pub fn running(&self, pod: &str) -> Option<bool> {
        let (_, recs) = self.pods.get(pod)?;
        if recs.is_empty() {
            return None;
        }
        Some(
            recs.values()
                .all(|r| r.restart_at.is_none() && !*r.stop.borrow() && r.ended().is_none()),
        )
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
