//! Static pods: the manifest directory turned into mirror pods, their images pulled, their
//! containers run and their status posted (the YurtHub a hub static pod runs: static_hub.rs),
//! on both tiers: the mirror pods are written where the node's kubelet writes (mirror.rs),
//! the containers run as any pod's (run.rs).

mod mirror;
mod run;

pub(crate) use mirror::delete_orphaned_mirrors;
use mirror::*;
use run::*;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Value, json};

use crate::nodes::Cluster;
use crate::util;

use super::*;

pub(super) fn static_dir(k: &NodeKubelet) -> Option<PathBuf> {
    let st = k.state.lock().unwrap();
    st.view
        .as_ref()
        .and_then(|v| v.static_pod_path.clone())
        .map(|p| k.host_path(&p))
}

fn file_sig(md: &std::fs::Metadata) -> (SystemTime, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (
        md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        md.len(),
        md.ino(),
    )
}

/// The kubelet's file source: every non-dot file in the static-pod directory is a pod.
pub(super) fn sync_static_pods(shared: &Cluster, k: &Arc<NodeKubelet>) {
    let active = k.state.lock().unwrap().active;
    if !active {
        return;
    }
    let Some(dir) = static_dir(k) else { return };
    let dir_sig = std::fs::metadata(&dir).ok().and_then(|m| m.modified().ok());
    let mut files: BTreeMap<String, (SystemTime, u64, u64)> = BTreeMap::new();
    {
        let st = k.state.lock().unwrap();
        if dir_sig.is_some()
            && st.static_dir_sig == dir_sig
            && st.statics.values().all(|e| {
                std::fs::metadata(dir.join(file_name_of(&st, e)))
                    .map(|m| file_sig(&m))
                    .ok()
                    == Some(e.sig)
            })
            && st.statics.values().all(|e| e.mirrored)
        {
            drop(st);
            refresh_static_status(shared, k);
            return;
        }
    }
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            if let Ok(md) = e.metadata()
                && md.is_file()
            {
                files.insert(name, file_sig(&md));
            }
        }
    }
    let reachable = {
        let st = k.state.lock().unwrap();
        unreachable_reason(shared, k, &st).is_none()
    };
    let mut st = k.state.lock().unwrap();
    st.static_dir_sig = dir_sig;
    let mut to_delete: Vec<(String, String)> = Vec::new();
    let gone: Vec<String> = st
        .statics
        .keys()
        .filter(|f| !files.contains_key(*f))
        .cloned()
        .collect();
    for f in gone {
        if let Some(e) = st.statics.remove(&f) {
            to_delete.push((e.namespace, e.pod_name));
        }
    }
    for (f, sig) in &files {
        if st.statics.get(f).is_some_and(|e| e.sig == *sig) {
            continue;
        }
        let bytes = std::fs::read(dir.join(f)).unwrap_or_default();
        // The kubelet logs and skips files it cannot decode.
        let Some(StaticManifest {
            pod_name,
            namespace,
            hash,
            manifest,
        }) = static_manifest(&bytes, &k.name, f)
        else {
            continue;
        };
        if let Some(old) = st.statics.remove(f) {
            to_delete.push((old.namespace, old.pod_name));
        }
        st.statics.insert(
            f.clone(),
            StaticEntry {
                sig: *sig,
                pod_name,
                namespace,
                hash,
                manifest,
                seen: Instant::now(),
                mirrored: false,
                pull: Default::default(),
            },
        );
    }
    let pending: Vec<(String, Value, String, String, Instant)> = st
        .statics
        .values()
        .filter(|e| !e.mirrored)
        .map(|e| {
            (
                e.pod_name.clone(),
                e.manifest.clone(),
                e.hash.clone(),
                e.namespace.clone(),
                e.seen,
            )
        })
        .collect();
    drop(st);
    if !reachable {
        // the kubelet runs static pods without the API server (a YurtHub static pod is what
        // it reaches the API server through): their images are pulled meanwhile
        step_static_pulls(shared, k);
        return;
    }
    // a removed manifest's mirror pod goes by name (kubelet_pods.go `HandlePodCleanups`)
    for (ns, name) in to_delete {
        if !pending.iter().any(|p| p.0 == name) {
            delete_mirror(shared, k, &ns, &name, None);
        }
    }
    // kubelet.go `tryReconcileMirrorPods`: a mirror pod of another version (its
    // `config.mirror` hash) or being deleted is deleted (that pod, by uid), then created anew
    for (name, manifest, hash, ns, _) in pending {
        if let Some(existing) = mirror_of(shared, k, &ns, &name) {
            let same = existing["metadata"]["annotations"]["kubernetes.io/config.mirror"]
                == json!(hash)
                && existing["metadata"]["deletionTimestamp"].is_null();
            if same {
                mark_mirrored(k, &name);
                continue;
            }
            let uid = existing["metadata"]["uid"].as_str();
            delete_mirror(shared, k, &ns, &name, uid);
        }
        let m = StaticManifest {
            pod_name: name.clone(),
            namespace: ns.clone(),
            hash,
            manifest,
        };
        if create_mirror(shared, k, &m) {
            mark_mirrored(k, &name);
        }
    }
    refresh_static_status(shared, k);
}

/// A static pod manifest as the kubelet reads it from its static pod directory.
pub(crate) struct StaticManifest {
    /// `<name>-<node>`: the mirror pod's name.
    pub pod_name: String,
    pub namespace: String,
    /// `kubernetes.io/config.hash`: changes with the file's bytes.
    pub hash: String,
    pub manifest: Value,
}

/// Parses the static pod file `file` of `node`; None for what the kubelet skips (not a Pod,
/// no name, not YAML).
pub(crate) fn static_manifest(bytes: &[u8], node: &str, file: &str) -> Option<StaticManifest> {
    let manifest: Value = serde_saphyr::from_slice::<Value>(bytes).ok()?;
    if manifest["kind"] != json!("Pod") || !manifest["metadata"]["name"].is_string() {
        return None;
    }
    let pod_name = format!(
        "{}-{node}",
        manifest["metadata"]["name"].as_str().unwrap_or_default()
    );
    let namespace = manifest["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let hash = format!(
        "{:08x}",
        util::fnv32a(&[bytes, node.as_bytes(), file.as_bytes()].concat())
    );
    Some(StaticManifest {
        pod_name,
        namespace,
        hash,
        manifest,
    })
}

impl StaticManifest {
    /// The mirror pod the kubelet creates for it (pkg/kubelet/pod/mirror_client.go
    /// `CreateMirrorPod`: the config annotations, owned by the Node).
    pub(crate) fn mirror_pod(&self, node: &str, node_uid: Value) -> Value {
        let mut meta = self.manifest["metadata"].clone();
        meta["name"] = json!(self.pod_name);
        meta["namespace"] = json!(self.namespace);
        meta["annotations"]["kubernetes.io/config.hash"] = json!(self.hash);
        meta["annotations"]["kubernetes.io/config.mirror"] = json!(self.hash);
        meta["annotations"]["kubernetes.io/config.seen"] = json!(util::now());
        meta["annotations"]["kubernetes.io/config.source"] = json!("file");
        meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": true}]);
        let mut spec = self.manifest["spec"].clone();
        spec["nodeName"] = json!(node);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    }
}

fn file_name_of(st: &NodeState, e: &StaticEntry) -> String {
    st.statics
        .iter()
        .find(|(_, v)| v.pod_name == e.pod_name)
        .map(|(k, _)| k.clone())
        .unwrap_or_default()
}

fn mark_mirrored(k: &NodeKubelet, pod: &str) {
    let mut st = k.state.lock().unwrap();
    for e in st.statics.values_mut() {
        if e.pod_name == pod {
            e.mirrored = true;
        }
    }
}

/// Static pods' containers in the runtime once started; a runtime-stopped one is restarted after
/// the back-off (a stopped YurtHub container also ends its model). The pods whose restart state
/// changed.
#[allow(clippy::type_complexity)]
fn static_containers(
    shared: &Cluster,
    k: &Arc<NodeKubelet>,
    entries: &[(String, String, Value, Instant, bool, String)],
    hub_pod: Option<&str>,
    pulled: &[String],
) -> Vec<String> {
    let backoff = |n: u32| {
        shared
            .cfg
            .crash_backoff
            .saturating_mul(1 << n.min(16))
            .min(shared.cfg.crash_backoff_max)
    };
    let mut changed = Vec::new();
    let sh = shared.self_arc();
    let mut statics = k.cri.statics.lock().unwrap();
    // a pod whose images are not all there has no container (a changed manifest's old
    // pod's are gone)
    let names: Vec<String> = entries
        .iter()
        .map(|e| e.1.clone())
        .filter(|n| pulled.contains(n))
        .collect();
    let before = statics.uids();
    statics.retain(&k.cri, &names);
    for (ns, name, manifest, seen, _, hash) in entries {
        if seen.elapsed() < static_delay(shared, &k.name)
            || !pulled.contains(name)
            || runs_outside(k, manifest)
        {
            continue;
        }
        let pod = runtime_pod(manifest, ns, name, &k.name, hash);
        let env = |c: &Value| {
            container_env(
                shared,
                k,
                &pod,
                c,
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
        };
        let log = |c: &str| static_log_path(shared, ns, name, c);
        // a YurtHub the kubelet runs as its model (static_hub.rs) is started there
        let hub_image = manifest["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                crate::nodes::programs::for_image(c["image"].as_str().unwrap_or("")).is_some()
            });
        let is_hub = name.starts_with("yurt-hub")
            || manifest["metadata"]["labels"]["k8s-app"] == json!("yurt-hub");
        let modelled = hub_pod == Some(name.as_str()) || (is_hub && hub_image);
        let start = |c: &Value, attempt: u32, log: &std::path::Path| {
            (!modelled).then(|| start_static_container(&sh, k, &pod, c, attempt, log))
        };
        let watch = |s, id, stop| watch_static_container(k, s, id, stop);
        let run = crate::nodes::cri::statics::Runner {
            env: &env,
            log: &log,
            backoff: &backoff,
            start: &start,
            watch: &watch,
        };
        let (c, stopped) = statics.sync(&k.cri, &pod, hash, &run);
        if c {
            changed.push(name.clone());
        }
        if stopped
            && hub_pod == Some(name.as_str())
            && let Some(m) = &k.state.lock().unwrap().hub_model
        {
            m.run.exit.abort();
        }
    }
    // a static pod gone (its file removed or changed) leaves no network sandbox behind
    let now = statics.uids();
    let mut sandboxes = k.sandboxes.lock().unwrap();
    for uid in before.iter().filter(|u| !now.contains(u)) {
        sandboxes.remove(uid);
    }
    changed
}

/// Mirror pods follow the static pod's life: Pending, then Running (and Ready unless the image is
/// configured never to become ready). A deleted mirror pod is recreated.
fn refresh_static_status(shared: &Cluster, k: &Arc<NodeKubelet>) {
    step_static_pulls(shared, k);
    ensure_hub_model(&shared.self_arc(), k);
    let (entries, reachable) = {
        let st = k.state.lock().unwrap();
        let e: Vec<(String, String, Value, Instant, bool, String)> = st
            .statics
            .values()
            .map(|e| {
                (
                    e.namespace.clone(),
                    e.pod_name.clone(),
                    e.manifest.clone(),
                    e.seen,
                    e.mirrored,
                    e.hash.clone(),
                )
            })
            .collect();
        (e, unreachable_reason(shared, k, &st).is_none())
    };
    // the pods whose images are all there, and why the others' are not
    let (pulled, pulls): (Vec<String>, BTreeMap<String, (String, Value)>) = {
        let st = k.state.lock().unwrap();
        (
            st.statics
                .values()
                .filter(|e| e.pull.done() || runs_outside(k, &e.manifest))
                .map(|e| e.pod_name.clone())
                .collect(),
            st.statics
                .values()
                .filter_map(|e| Some((e.pod_name.clone(), e.pull.waiting()?.clone())))
                .collect(),
        )
    };
    // the modelled hub's container: (restarts, exit code of the ended instance, last exit)
    let hub_container = {
        let st = k.state.lock().unwrap();
        st.hub_model
            .as_ref()
            .map(|m| (m.restarts, *m.run.exited.borrow(), m.last_exit))
    };
    let (hub, changed, modelled_hub) = {
        let mut st = k.state.lock().unwrap();
        // on the real tier a real yurthub.service serves the node's YurtHub endpoints itself
        let real_service = matches!(k.api, NodeApi::Real(_))
            && service_hub(shared, &k.name).is_some()
            && st.hub_model.is_none();
        let now = if real_service {
            (false, false)
        } else {
            (
                hub_serving(shared, &k.name, &st),
                hub_running(shared, &k.name, &st),
            )
        };
        let changed = now != st.hub_published || now.0 != st.hub.is_some();
        st.hub_published = now;
        let modelled = st.hub_model.as_ref().and_then(|_| {
            st.statics
                .values()
                .find(|e| is_hub(e))
                .map(|e| e.pod_name.clone())
        });
        (now, changed, modelled)
    };
    if changed {
        set_hub(shared, k, hub.0);
        annotate(shared, k);
        post_status(shared, k, false);
    }
    let restarted = static_containers(shared, k, &entries, modelled_hub.as_deref(), &pulled);
    if !reachable {
        return;
    }
    for (ns, name, manifest, seen, mirrored, hash) in entries {
        let Some(pod) = mirror_of(shared, k, &ns, &name) else {
            if mirrored {
                // Someone deleted the mirror pod: the kubelet recreates it on its next sync.
                let mut st = k.state.lock().unwrap();
                for e in st.statics.values_mut() {
                    if e.pod_name == name {
                        e.mirrored = false;
                    }
                }
                st.static_dir_sig = None;
            }
            continue;
        };
        let is_pulled = pulled.contains(&name);
        // kubelet_pods.go `getPhase`: Pending until its containers were started, Running
        // while they run or restart; Ready once every container runs (static pods' probes are
        // not modelled). A control-plane pod of the real tier's runs with the cluster.
        let outside = runs_outside(k, &manifest);
        let runtime = k.cri.statics.lock().unwrap().running(&name);
        let running = outside || (is_pulled && runtime.is_some());
        let ready = match &modelled_hub {
            _ if outside => true,
            Some(hub_pod) if *hub_pod == name => hub.1,
            _ => {
                runtime == Some(true)
                    && container_ready_after_delay(shared, &k.name, &manifest, seen)
            }
        };
        let pull_waiting = pulls.get(&name);
        let pull_shown = pull_waiting.is_none_or(|(c, w)| {
            pod["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|cs| cs["name"] == json!(c) && cs["state"] == *w)
        });
        let want_phase = if running { "Running" } else { "Pending" };
        let cur_ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"));
        let is_hub_model = modelled_hub.as_deref() == Some(name.as_str());
        let hub_view = hub_container.filter(|_| is_hub_model);
        let hub_stale = hub_view.is_some_and(|(restarts, ended, _)| {
            let cs = &pod["status"]["containerStatuses"][0];
            cs["restartCount"] != json!(restarts)
                || cs["state"]["waiting"].is_object() != ended.is_some()
        });
        if pod["status"]["phase"] == json!(want_phase)
            && cur_ready == ready
            && !restarted.contains(&name)
            && !hub_stale
            && pull_shown
        {
            continue;
        }
        // the runtime knows the pod by its config hash (its sandbox's address: `podIP`)
        let mut as_run = (*pod).clone();
        as_run["metadata"]["uid"] = json!(hash);
        let mut status = pod_status(
            k,
            &as_run,
            want_phase,
            ready,
            &manifest["spec"]["containers"],
            None,
            started_at(seen),
        );
        k.cri
            .statics
            .lock()
            .unwrap()
            .apply(&k.cri, &name, &mut status);
        // a container whose image is not there waits with why (ErrImagePull, ImagePullBackOff)
        if let Some((c, w)) = pull_waiting {
            for cs in status["containerStatuses"]
                .as_array_mut()
                .into_iter()
                .flatten()
                .filter(|cs| cs["name"] == json!(c))
            {
                cs["state"] = w.clone();
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            }
        }
        // a modelled hub's process ends like a container's: CrashLoopBackOff while the kubelet
        // backs off, the ended instance as lastState, restartCount
        if let Some((restarts, ended, last)) = hub_view
            && let Some(cs) = status["containerStatuses"].get_mut(0)
        {
            cs["restartCount"] = json!(restarts);
            let term = |code: i32| {
                json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" },
                    "finishedAt": util::now()}})
            };
            if let Some(code) = ended {
                cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                    "message": format!("back-off restarting failed container {} in pod {name}", cs["name"].as_str().unwrap_or(""))}});
                cs["lastState"] = term(code);
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            } else if let Some(code) = last {
                cs["lastState"] = term(code);
            }
        }
        write_mirror_status(shared, k, &ns, &name, &status);
    }
}

/// One step of each static pod's pulls where one is due (nodes/image_pull.rs `StaticPull`);
/// its events go on its mirror pod while the kubelet reaches the API server.
fn step_static_pulls(shared: &Cluster, k: &Arc<NodeKubelet>) {
    let (events, reachable) = {
        let mut st = k.state.lock().unwrap();
        let reachable = unreachable_reason(shared, k, &st).is_none();
        let events: Vec<(Value, Vec<crate::nodes::image_pull::PullEvent>)> = st
            .statics
            .values_mut()
            .filter(|e| !e.pull.done() && !runs_outside(k, &e.manifest))
            .map(|e| {
                let ev = e.pull.step(shared, k, &e.manifest);
                let pod = runtime_pod(&e.manifest, &e.namespace, &e.pod_name, &k.name, &e.hash);
                (pod, ev)
            })
            .filter(|(_, ev)| !ev.is_empty())
            .collect();
        (events, reachable)
    };
    if !reachable {
        return;
    }
    // the kubelet's image manager records them on the pod it syncs: the static pod, by the
    // mirror pod's name and namespace with the config hash as uid (kuberuntime_container.go
    // `startContainer`: `kubecontainer.GenerateContainerRef(pod, container)`, then
    // pkg/kubelet/images/image_manager.go `logIt`), whether or not its mirror pod exists yet
    for (pod, evs) in events {
        for (typ, reason, msg) in evs {
            pod_event(shared, &pod, typ, reason, &msg);
        }
    }
}

fn started_at(seen: Instant) -> String {
    util::rfc3339(SystemTime::now() - seen.elapsed())
}

pub(crate) fn pod_status(
    k: &NodeKubelet,
    pod: &Value,
    phase: &str,
    ready: bool,
    containers: &Value,
    terminated: Option<(i32, &str)>,
    started: String,
) -> Value {
    let now = util::now();
    let b = |x: bool| if x { "True" } else { "False" };
    let statuses: Vec<Value> = containers
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let state = match (phase, terminated) {
                (_, Some((code, reason))) => json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now, "containerID": format!("containerd://{:016x}", util::fnv32a(pod["metadata"]["uid"].to_string().as_bytes()))}}),
                ("Running", _) => json!({"running": {"startedAt": started}}),
                _ => json!({"waiting": {"reason": "ContainerCreating"}}),
            };
            json!({"name": c["name"], "image": c["image"], "imageID": format!("{}@sha256:{:064x}", c["image"].as_str().unwrap_or(""), util::fnv32a(c["image"].to_string().as_bytes())),
                "ready": ready && terminated.is_none(), "restartCount": 0, "started": phase == "Running", "state": state})
        })
        .collect();
    let mut conds = vec![
        json!({"type": "PodReadyToStartContainers", "status": b(phase != "Pending"), "lastTransitionTime": now}),
        json!({"type": "Initialized", "status": "True", "lastTransitionTime": now}),
        json!({"type": "Ready", "status": b(ready && phase == "Running"), "lastTransitionTime": now}),
        json!({"type": "ContainersReady", "status": b(ready && phase == "Running"), "lastTransitionTime": now}),
        json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": now}),
    ];
    // Conditions written by others (e.g. PodNeedUpgrade) survive kubelet status updates.
    for c in pod["status"]["conditions"].as_array().into_iter().flatten() {
        if !conds.iter().any(|x| x["type"] == c["type"]) {
            conds.push(c.clone());
        }
    }
    let pod_ip = pod_ip(k, pod);
    let mut st = json!({"phase": phase, "conditions": conds, "hostIP": k.ip, "hostIPs": [{"ip": k.ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": started, "containerStatuses": statuses, "qosClass": pod["status"]["qosClass"].as_str().unwrap_or("BestEffort")});
    if phase == "Pending" {
        st.as_object_mut().unwrap().remove("podIP");
        st.as_object_mut().unwrap().remove("podIPs");
    }
    st
}

/// `status.podIP`: the node's with hostNetwork, the sandbox's in the real tier's pod network,
/// else a stable made-up address (the sim tier's pods have no routable one).
pub(crate) fn pod_ip(k: &NodeKubelet, pod: &Value) -> String {
    let sandbox_ip = pod["metadata"]["uid"]
        .as_str()
        .and_then(|uid| k.sandboxes.lock().unwrap().get(uid).map(|s| s.ip));
    if pod["spec"]["hostNetwork"] == json!(true) {
        k.ip.clone()
    } else if let Some(ip) = sandbox_ip {
        ip.to_string()
    } else {
        format!(
            "10.244.{}.{}",
            util::fnv32a(k.name.as_bytes()) % 256,
            util::fnv32a(pod["metadata"]["name"].to_string().as_bytes()) % 250 + 2
        )
    }
}
