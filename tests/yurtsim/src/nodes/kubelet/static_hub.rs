//! The YurtHub a static pod runs: whether it serves and is ready (as a systemd service, a
//! modelled static pod, or another hub image once started), and the model a hub static pod's
//! container runs, started once its image is pulled and restarted after the crash back-off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::nodes::Cluster;
use crate::util;

use super::*;

pub(super) fn is_hub(e: &StaticEntry) -> bool {
    e.pod_name.starts_with("yurt-hub")
        || e.manifest["metadata"]["labels"]["k8s-app"] == json!("yurt-hub")
}

/// How long a static pod on `node` takes to start (`static_pod_ready_delays`, else the default).
pub(super) fn static_delay(shared: &Cluster, node: &str) -> Duration {
    shared
        .cfg
        .static_pod_ready_delays
        .get(node)
        .copied()
        .unwrap_or(shared.cfg.pod_ready_delay)
}

pub(super) fn container_ready_after_delay(
    shared: &Cluster,
    node: &str,
    manifest: &Value,
    since: Instant,
) -> bool {
    let never = manifest["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            shared
                .faults
                .is_never_ready(c["image"].as_str().unwrap_or(""))
        });
    !never && since.elapsed() >= static_delay(shared, node)
}

/// Whether YurtHub's proxy serves the kubelet: a modelled hub once its `/v1/readyz` is OK
/// (the same check gates its proxy), any other hub image once started.
pub(super) fn hub_running(shared: &Cluster, node: &str, st: &NodeState) -> bool {
    if service_hub(shared, node).is_some_and(|(_, ready)| ready) {
        return true;
    }
    match &st.hub_model {
        Some(m) => *m.run.ready.borrow() && !m.run.exit.is_finished(),
        None => st.statics.values().any(|e| {
            is_hub(e)
                && e.pull.done()
                && container_ready_after_delay(shared, node, &e.manifest, e.seen)
        }),
    }
}

/// (serving, ready) of a YurtHub that runs as a systemd service on `node` (yurthub.service).
pub(super) fn service_hub(shared: &Cluster, node: &str) -> Option<(bool, bool)> {
    shared
        .kubelets
        .get(node)
        .and_then(|k| crate::nodes::systemd::services::hub(&k))
}

/// Whether YurtHub's own server (port 10267) listens.
pub(super) fn hub_serving(shared: &Cluster, node: &str, st: &NodeState) -> bool {
    if service_hub(shared, node).is_some_and(|(serving, _)| serving) {
        return true;
    }
    match &st.hub_model {
        Some(m) => *m.run.serving.borrow() && !m.run.exit.is_finished(),
        None => hub_running(shared, node, st),
    }
}

/// Starts, restarts (after the crash back-off) or stops the YurtHub model so that it runs the
/// current YurtHub static pod.
pub(super) fn ensure_hub_model(shared: &Arc<Cluster>, k: &Arc<NodeKubelet>) {
    let mut st = k.state.lock().unwrap();
    // its image pulled first, as any container's
    let Some((hash, manifest, pod_name, namespace)) = st
        .statics
        .values()
        .find(|e| is_hub(e) && e.pull.done())
        .map(|e| {
            (
                e.hash.clone(),
                e.manifest.clone(),
                e.pod_name.clone(),
                e.namespace.clone(),
            )
        })
    else {
        if let Some(m) = st.hub_model.take() {
            m.run.exit.abort();
        }
        return;
    };
    let Some((model, c)) = manifest["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            crate::nodes::programs::for_image(c["image"].as_str().unwrap_or("")).map(|m| (m, c))
        })
    else {
        if let Some(m) = st.hub_model.take() {
            m.run.exit.abort();
        }
        return;
    };
    let last_exit = st.hub_model.as_ref().and_then(|m| *m.run.exited.borrow());
    let restarts = match st.hub_model.as_mut() {
        Some(m) if m.hash == hash => {
            if !m.run.exit.is_finished() {
                return;
            }
            let ended = *m.ended.get_or_insert_with(Instant::now);
            let backoff = shared
                .cfg
                .crash_backoff
                .saturating_mul(1 << m.restarts.min(16))
                .min(shared.cfg.crash_backoff_max);
            if ended.elapsed() < backoff {
                return;
            }
            m.restarts + 1
        }
        _ => 0,
    };
    let mut pod = manifest.clone();
    pod["metadata"]["name"] = json!(pod_name);
    pod["metadata"]["namespace"] = json!(namespace);
    pod["spec"]["nodeName"] = json!(k.name);
    let cname = c["name"].as_str().unwrap_or("yurt-hub").to_string();
    let mut argv: Vec<String> = c["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(c["args"].as_array().into_iter().flatten())
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect();
    let has_command = c["command"].as_array().is_some_and(|a| !a.is_empty());
    let env = container_env_with(shared, k, &pod, c, "", service_view_of(k, &st));
    argv = crate::nodes::programs::expand_args(&argv, &env);
    // `sh -c "exec yurthub ..."` (the legacy manifest): the line the shell execs, its files
    // read through the pod's hostPath mounts
    let read = |p: &str| std::fs::read_to_string(static_container_path(k, &manifest, c, p)?).ok();
    match crate::nodes::shell::exec_line(&argv, &read) {
        Some((_, args)) => argv = args,
        None if has_command => {
            argv.remove(0);
        }
        None => {}
    }
    let container = crate::nodes::programs::Container {
        node: k.name.clone(),
        namespace: namespace.clone(),
        pod: pod_name.clone(),
        service_account: None,
        args: argv,
        log: static_log_path(shared, &namespace, &pod_name, &cname),
        append_log: false,
        mounts: c["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let mp = m["mountPath"].as_str()?;
                Some((mp.to_string(), static_container_path(k, &manifest, c, mp)?))
            })
            .collect(),
        env,
    };
    if let Some(old) = st.hub_model.take() {
        old.run.exit.abort();
    }
    if restarts > 0 {
        // the kubelet keeps the ended instance's log for `logs --previous`
        let _ = std::fs::rename(&container.log, container.log.with_extension("previous.log"));
    }
    st.hub_model = Some(HubModel {
        hash,
        component: model.component,
        last_exit: if restarts > 0 { last_exit } else { None },
        run: (shared.start_model)(shared, model, container),
        restarts,
        ended: None,
    });
}

/// Where a path inside a static pod's container lives on the node: under the hostPath
/// volume mounted at (a parent of) it. None for paths no hostPath mount covers.
pub(super) fn static_container_path(
    k: &NodeKubelet,
    pod: &Value,
    c: &Value,
    path: &str,
) -> Option<std::path::PathBuf> {
    let path = util::clean_path(path);
    c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let mount = util::clean_path(m["mountPath"].as_str()?);
            let rest = if path == mount {
                ""
            } else {
                path.strip_prefix(&format!("{}/", mount.trim_end_matches('/')))?
            };
            let vol = pod["spec"]["volumes"]
                .as_array()?
                .iter()
                .find(|v| v["name"] == m["name"])?;
            let host = vol["hostPath"]["path"].as_str()?;
            Some((
                mount.len(),
                format!("{}/{rest}", host.trim_end_matches('/')),
            ))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, p)| k.host_path(p.trim_end_matches('/')))
}
