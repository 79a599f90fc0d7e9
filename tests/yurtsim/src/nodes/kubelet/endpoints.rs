//! The node's endpoints: YurtHub's (its listener, its API and the OTA upgrade of a pod) and
//! the sim's `pods/log` (read as logs.rs reads a container's log).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::error::ApiResult;
use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions};
use crate::http::{Body, json_response, text_response};
use crate::nodes::Cluster;

use super::*;

pub(super) fn set_hub(shared: &Cluster, k: &Arc<NodeKubelet>, running: bool) {
    let mut st = k.state.lock().unwrap();
    if running && st.hub.is_none() {
        let net = match crate::nodes::host_processes::node_namespaces(shared, k) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(node = %k.name, "cannot create the node's network namespace: {e}");
                return;
            }
        };
        match net.bind_tcp(([127, 0, 0, 1], YURTHUB_PORT).into()) {
            Ok(l) => {
                let sh = shared.self_arc();
                let node = k.name.clone();
                st.hub = Some(tokio::spawn(serve_hub(sh, node, l)));
            }
            Err(e) => {
                tracing::warn!(node = %k.name, "yurthub endpoint: cannot bind 127.0.0.1:{YURTHUB_PORT}: {e}")
            }
        }
    } else if !running && let Some(h) = st.hub.take() {
        h.abort();
    }
}

async fn serve_hub(shared: Arc<Cluster>, node: String, l: std::net::TcpListener) {
    let Ok(listener) = tokio::net::TcpListener::from_std(l) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let sh = shared.clone();
        let node = node.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let sh = sh.clone();
                    let node = node.clone();
                    async move {
                        let method = req.method().clone();
                        let path = req.uri().path().to_string();
                        Ok::<_, std::convert::Infallible>(yurthub_endpoint(
                            &sh, &node, &method, &path,
                        ))
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await;
        });
    }
}

/// YurtHub's node-local endpoints (port 10267), with the status codes and plain-text bodies of
/// the real hub (see reference/staticpod-rollout.md §4).
pub fn yurthub_endpoint(
    shared: &Cluster,
    node: &str,
    method: &hyper::Method,
    path: &str,
) -> hyper::Response<Body> {
    let Some(k) = shared.kubelets.get(node) else {
        return text_response(404, format!("no node {node}"));
    };
    let (serving, ready, legacy) = {
        let st = k.state.lock().unwrap();
        (
            hub_serving(shared, &k.name, &st),
            hub_running(shared, &k.name, &st),
            st.hub_model.as_ref().map(|m| m.component)
                == Some(crate::nodes::programs::Component::YurtHubV06),
        )
    };
    if !serving {
        return text_response(
            503,
            format!("yurthub is not running on node {node} (connection refused)"),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["v1", "healthz"]) => text_response(200, "OK"),
        // v0.6 registers no readyz, /pods or OTA handler (openyurtio/openyurt@v0.6.1
        // pkg/yurthub/server/server.go registerHandlers): gorilla/mux's 404
        _ if legacy => text_response(404, "404 page not found\n"),
        ("GET", ["v1", "readyz"]) if ready => text_response(200, "OK"),
        // pkg/yurthub/server/server.go (readyz): net/http Error text, status 500
        ("GET", ["v1", "readyz"]) => text_response(
            500,
            "yurthub is not ready: certificates or informers are not synced yet\n",
        ),
        ("GET", ["pods"]) => {
            let filter = Filter {
                field: crate::api::selector::FieldSelector::parse(&format!("spec.nodeName={node}"))
                    .unwrap(),
                ..Default::default()
            };
            let (items, rv) = shared.api.list(&shared.api.info("", "pods"), &filter);
            json_response(
                200,
                &shared
                    .api
                    .list_object(&shared.api.info("", "pods"), items, rv, None, None),
            )
        }
        (
            "POST",
            [
                "openyurt.io",
                "v1",
                "namespaces",
                ns,
                "pods",
                pod,
                "upgrade",
            ],
        ) => ota_upgrade(shared, &k, ns, pod),
        _ => text_response(404, "404 page not found\n"),
    }
}

fn ota_upgrade(shared: &Cluster, k: &NodeKubelet, ns: &str, pod: &str) -> hyper::Response<Body> {
    if k.state.lock().unwrap().forced_ready == Some(false) {
        return text_response(
            503,
            "OTA upgrade is not allowed when node is disconnected to cloud",
        );
    }
    let Some(p) = shared.api.get_opt("", "pods", ns, pod) else {
        return text_response(500, format!("Get pod failed, pods \"{pod}\" not found"));
    };
    let cond = |t: &str| {
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == json!(t))
            .cloned()
    };
    let precheck = if p["metadata"]["deletionTimestamp"].is_string() {
        Some("pod is deleting".to_string())
    } else if p["spec"]["nodeName"] != json!(k.name) {
        Some(format!("pod is not on node {}", k.name))
    } else if cond("PodNeedUpgrade").is_none_or(|c| c["status"] != json!("True")) {
        Some("pod condition PodNeedUpgrade is not true".to_string())
    } else {
        None
    };
    if let Some(why) = precheck {
        return text_response(403, format!("Pre check update pod failed, {why}"));
    }
    let Some(owner) = p["metadata"]["ownerReferences"]
        .as_array()
        .and_then(|o| o.first())
        .cloned()
    else {
        return text_response(400, "Pod has no owner references");
    };
    match owner["kind"].as_str() {
        Some("Node") => {
            let suffix = format!("-{}", k.name);
            let Some(static_name) = pod.strip_suffix(&suffix) else {
                return text_response(500, "Static pod pre-check failed");
            };
            let Some(cm) = shared.api.get_opt(
                "",
                "configmaps",
                ns,
                &format!("yurt-static-set-{static_name}"),
            ) else {
                return text_response(403, "Configmap for static pod does not exist");
            };
            let Some((key, manifest)) = cm["data"]
                .as_object()
                .and_then(|d| d.iter().next())
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            else {
                return text_response(500, "Apply update failed");
            };
            let Some(dir) = static_dir(k) else {
                return text_response(500, "Apply update failed");
            };
            let scratch = state_dir_of(shared, &["yurthub", &k.name, "tmp", "manifests"]);
            let target = dir.join(format!("{key}.yaml"));
            let ok = std::fs::create_dir_all(&scratch).is_ok()
                && std::fs::write(scratch.join(format!("{key}.upgrade")), &manifest).is_ok()
                && (!target.exists()
                    || std::fs::copy(&target, scratch.join(format!("{key}.bak"))).is_ok())
                && std::fs::write(&target, &manifest).is_ok();
            if !ok {
                return text_response(500, "Apply update failed");
            }
            text_response(200, format!("Start updating pod {ns}/{pod}"))
        }
        Some("DaemonSet") => {
            let _ = shared.api.delete(
                &shared.api.info("", "pods"),
                ns,
                pod,
                &DeleteOptions::default(),
                &Ctx::system("yurthub"),
            );
            text_response(200, format!("Start updating pod {ns}/{pod}"))
        }
        other => text_response(
            400,
            format!("Not support ota upgrade pod type {}", other.unwrap_or("")),
        ),
    }
}

/// `GET pods/{name}/log`: the container's output, optionally followed while it runs.
pub async fn pod_log(
    shared: Arc<Cluster>,
    ns: &str,
    name: &str,
    q: &HashMap<String, String>,
) -> ApiResult<hyper::Response<Body>> {
    let pods = shared.api.info("", "pods");
    let p = shared.api.get(&pods, ns, name)?;
    let names: Vec<String> = p["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    // init containers have logs too (kubernetes/kubernetes@v1.33.1
    // pkg/registry/core/pod/strategy.go LogLocation, podHasContainerWithName)
    let inits: Vec<String> = p["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    let container = match q.get("container").filter(|c| !c.is_empty()) {
        Some(c) if names.contains(c) || inits.contains(c) => c.clone(),
        Some(c) => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None if names.len() == 1 => names[0].clone(),
        None if inits.is_empty() => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                names.join(" ")
            )));
        }
        None => {
            return Err(crate::api::error::ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}] or one of the init containers: [{}]",
                names.join(" "),
                inits.join(" ")
            )));
        }
    };
    let opts = LogOptions::from_query(q);
    let path = container_log_file(&shared, &p, &container, opts.previous);
    // the kubelet keeps the last terminated instance's log beside the current one
    if opts.previous && !path.exists() {
        return Err(crate::api::error::ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        )));
    }
    let terminal =
        |p: &Value| matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    let running = {
        let (shared, ns, name) = (shared.clone(), ns.to_string(), name.to_string());
        move || {
            shared
                .api
                .get_opt("", "pods", &ns, &name)
                .is_some_and(|p| !terminal(&p))
        }
    };
    log_response(path, &opts, running).await.map_err(|_| {
        crate::api::error::ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        ))
    })
}
