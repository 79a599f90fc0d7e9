//! What a pod's containers are given: the node's tools, the pod's directory and logs, its
//! environment (field and key references, service variables) and its volumes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::store::Filter;
use crate::nodes::Cluster;
use crate::nodes::runtime::NodeTools;

use super::*;

/// Installs the node's tool stubs (`systemctl`, `nsenter`, `journalctl`) once, for the first
/// process container that runs on the node.
pub(crate) fn ensure_tools(shared: &Cluster, k: &NodeKubelet, tools_dir: &Path) {
    let mut t = k.tools.lock().unwrap();
    if t.is_some() {
        return;
    }
    let call_log = k.host_path("/var/log/yurtsim/systemctl.log");
    let _ = std::fs::create_dir_all(call_log.parent().unwrap());
    let ack = state_dir_of(shared, &["nodes", &k.name, "systemctl.ack"]);
    let state = state_dir_of(shared, &["nodes", &k.name, "kubelet.state"]);
    match NodeTools::install(
        tools_dir,
        &call_log,
        &ack,
        &state,
        shared.cfg.yurtctl.as_deref(),
    ) {
        Ok(tools) => {
            let _ = tools.set_unit_state("active");
            let _ = tools.enable_results();
            *t = Some(tools);
        }
        Err(e) => tracing::warn!(node = %k.name, "installing node tools: {e}"),
    }
}

pub(crate) fn pod_dir(shared: &Cluster, p: &Value) -> PathBuf {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = p["metadata"]["name"].as_str().unwrap_or_default();
    let uid = p["metadata"]["uid"].as_str().unwrap_or_default();
    state_dir_of(shared, &["pods", &format!("{ns}_{name}_{uid}")])
}

pub(crate) fn log_path(shared: &Cluster, p: &Value, container: &str) -> PathBuf {
    if p["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
        let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        return static_log_path(shared, ns, name, container);
    }
    pod_dir(shared, p).join(format!("{container}.log"))
}

/// A static pod's container log: by the mirror pod's name, which is known before the mirror
/// pod exists (the kubelet runs static pods whether or not it reaches the API).
pub(super) fn static_log_path(shared: &Cluster, ns: &str, pod: &str, container: &str) -> PathBuf {
    state_dir_of(shared, &["static-pods", &format!("{ns}_{pod}")]).join(format!("{container}.log"))
}

fn field_ref(k: &NodeKubelet, p: &Value, path: &str) -> String {
    match path {
        "spec.nodeName" => k.name.clone(),
        "status.hostIP" => k.ip.clone(),
        "status.podIP" if p["spec"]["hostNetwork"] == json!(true) => k.ip.clone(),
        "metadata.name" => p["metadata"]["name"].as_str().unwrap_or_default().into(),
        "metadata.namespace" => p["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .into(),
        "metadata.uid" => p["metadata"]["uid"].as_str().unwrap_or_default().into(),
        "spec.serviceAccountName" => p["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or_default()
            .into(),
        other => {
            if let Some(key) = other
                .strip_prefix("metadata.labels['")
                .and_then(|s| s.strip_suffix("']"))
            {
                return p["metadata"]["labels"][key]
                    .as_str()
                    .unwrap_or_default()
                    .into();
            }
            if let Some(key) = other
                .strip_prefix("metadata.annotations['")
                .and_then(|s| s.strip_suffix("']"))
            {
                return p["metadata"]["annotations"][key]
                    .as_str()
                    .unwrap_or_default()
                    .into();
            }
            String::new()
        }
    }
}

fn key_ref(shared: &Cluster, k: &NodeKubelet, ns: &str, kind: &str, r: &Value) -> Option<String> {
    let obj = k.read(shared, kind, ns, r["name"].as_str()?)?;
    let key = r["key"].as_str()?;
    if kind == "secrets" {
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(obj["data"][key].as_str()?)
            .ok()?;
        Some(String::from_utf8_lossy(&raw).into_owned())
    } else {
        obj["data"][key].as_str().map(str::to_string)
    }
}

/// A container's hostname: the node's on the host network, else the pod's name.
pub(crate) fn pod_hostname(k: &NodeKubelet, p: &Value) -> String {
    if p["spec"]["hostNetwork"] == json!(true) {
        k.name.clone()
    } else {
        p["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

pub(crate) fn container_env(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    c: &Value,
    path: &str,
) -> Vec<(String, String)> {
    container_env_with(shared, k, p, c, path, service_view(k))
}

pub(super) fn container_env_with(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    c: &Value,
    path: &str,
    view: crate::nodes::cri::ServiceView,
) -> Vec<(String, String)> {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    let hostname = pod_hostname(k, p);
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path.to_string()),
        ("HOSTNAME".into(), hostname),
        ("HOME".into(), "/root".into()),
    ];
    // The Services as this kubelet sees them now (directly, or filtered by YurtHub).
    let services: Vec<Value> = match &k.api {
        NodeApi::Sim => shared
            .api
            .list(&shared.api.info("", "services"), &Filter::default())
            .0
            .iter()
            .map(|s| (**s).clone())
            .collect(),
        NodeApi::Real(api) => api.list("services").unwrap_or_default(),
    };
    let links = p["spec"]["enableServiceLinks"] != json!(false);
    env.extend(crate::nodes::cri::env::service_env(
        &services, ns, links, &view,
    ));
    let app_container = p["spec"]["containers"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|x| x["name"] == c["name"]));
    let mut set = |k: String, v: String| {
        env.retain(|(x, _)| x != &k);
        env.push((k, v));
    };
    for from in c["envFrom"].as_array().into_iter().flatten() {
        let prefix = from["prefix"].as_str().unwrap_or("");
        for (kind, field) in [("configmaps", "configMapRef"), ("secrets", "secretRef")] {
            if let Some(name) = from[field]["name"].as_str()
                && let Some(obj) = k.read(shared, kind, ns, name)
            {
                for (key, v) in obj["data"].as_object().into_iter().flatten() {
                    let val = if kind == "secrets" {
                        use base64::Engine;
                        base64::engine::general_purpose::STANDARD
                            .decode(v.as_str().unwrap_or(""))
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default()
                    } else {
                        v.as_str().unwrap_or_default().to_string()
                    };
                    set(format!("{prefix}{key}"), val);
                }
            }
        }
    }
    for e in c["env"].as_array().into_iter().flatten() {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let v = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else if let Some(f) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            field_ref(k, p, f)
        } else if e["valueFrom"]["configMapKeyRef"].is_object() {
            key_ref(
                shared,
                k,
                ns,
                "configmaps",
                &e["valueFrom"]["configMapKeyRef"],
            )
            .unwrap_or_default()
        } else if e["valueFrom"]["secretKeyRef"].is_object() {
            key_ref(shared, k, ns, "secrets", &e["valueFrom"]["secretKeyRef"]).unwrap_or_default()
        } else {
            String::new()
        };
        let v = crate::nodes::cri::env::explicit_override(&view, app_container, name).unwrap_or(v);
        set(name.to_string(), v);
    }
    env
}

/// How the kubelet reaches its API now: through YurtHub when its kubeconfig points at one.
pub(crate) fn service_view(k: &NodeKubelet) -> crate::nodes::cri::ServiceView {
    let st = k.state.lock().unwrap();
    service_view_of(k, &st)
}

pub(super) fn service_view_of(k: &NodeKubelet, st: &NodeState) -> crate::nodes::cri::ServiceView {
    let via_hub = st
        .view
        .as_ref()
        .and_then(|v| v.server.as_ref().ok())
        .is_some_and(|s| YURTHUB_SERVERS.contains(&normalize_server(s).as_str()));
    if via_hub {
        let f = k.hub_filters.lock().unwrap().clone();
        crate::nodes::cri::ServiceView::Hub(
            f.unwrap_or_else(crate::nodes::cri::HubFilters::defaults),
        )
    } else {
        crate::nodes::cri::ServiceView::Direct
    }
}

/// Volumes as real directories/files: hostPath inside the node root; others under the pod dir.
pub(super) fn prepare_volumes(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
) -> Result<HashMap<String, (PathBuf, bool)>, String> {
    let mut out = HashMap::new();
    let dir = pod_dir(shared, p).join("volumes");
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    for v in p["spec"]["volumes"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap_or_default().to_string();
        if let Some(hp) = v["hostPath"]["path"].as_str() {
            let real = k.host_path(hp);
            let typ = v["hostPath"]["type"].as_str().unwrap_or("");
            let check = match typ {
                "DirectoryOrCreate" => std::fs::create_dir_all(&real).map_err(|e| e.to_string()),
                "FileOrCreate" => {
                    if !real.exists() {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&real)
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    } else {
                        Ok(())
                    }
                }
                "Directory" if !real.is_dir() => Err(format!(
                    "hostPath type check failed: {hp} is not a directory"
                )),
                "File" if !real.is_file() => {
                    Err(format!("hostPath type check failed: {hp} is not a file"))
                }
                _ => Ok(()),
            };
            check.map_err(|e| format!("MountVolume.SetUp failed for volume \"{name}\" : {e}"))?;
            if !real.exists() {
                // An untyped hostPath that is missing is created as a directory, as the kubelet does.
                std::fs::create_dir_all(&real).map_err(|e| e.to_string())?;
            }
            out.insert(name, (real, false));
            continue;
        }
        let vdir = dir.join(&name);
        std::fs::create_dir_all(&vdir).map_err(|e| e.to_string())?;
        // Each file appears whole: the kubelet publishes a volume's payload at once (a new
        // timestamped directory behind the `..data` symlink, kubernetes/kubernetes@v1.37.2
        // pkg/volume/util/atomic_writer.go), so a reader never sees a half-written token. The
        // sim renames each file into place instead.
        let write = |file: &str, data: &[u8]| -> Result<(), String> {
            let path = resolve_under(&vdir, file);
            let parent = path.parent().unwrap_or(&vdir);
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let tmp = parent.join(format!("..{name}.tmp"));
            std::fs::write(&tmp, data).map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, &path).map_err(|e| e.to_string())
        };
        let source = |kind: &str, src: &Value| -> Result<(), String> {
            let obj_name = src["name"]
                .as_str()
                .or(src["secretName"].as_str())
                .unwrap_or_default();
            let Some(obj) = k.read(shared, kind, ns, obj_name) else {
                if src["optional"] == json!(true) {
                    return Ok(());
                }
                return Err(format!(
                    "MountVolume.SetUp failed for volume \"{name}\" : {} \"{obj_name}\" not found",
                    kind.trim_end_matches('s')
                ));
            };
            let decode = |v: &Value| -> Vec<u8> {
                if kind == "secrets" {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD
                        .decode(v.as_str().unwrap_or(""))
                        .unwrap_or_default()
                } else {
                    v.as_str().unwrap_or_default().as_bytes().to_vec()
                }
            };
            match src["items"].as_array() {
                Some(items) => {
                    for it in items {
                        let key = it["key"].as_str().unwrap_or_default();
                        let Some(v) = obj["data"].get(key) else {
                            if src["optional"] == json!(true) {
                                continue;
                            }
                            // the kubelet's own wording
                            let what = if kind == "secrets" {
                                "references non-existent secret key"
                            } else {
                                "configmap references non-existent config key"
                            };
                            return Err(format!(
                                "MountVolume.SetUp failed for volume \"{name}\" : {what}: {key}"
                            ));
                        };
                        write(it["path"].as_str().unwrap_or_default(), &decode(v))?;
                    }
                }
                None => {
                    for (key, v) in obj["data"].as_object().into_iter().flatten() {
                        write(key, &decode(v))?;
                    }
                }
            }
            Ok(())
        };
        if v["configMap"].is_object() {
            source("configmaps", &v["configMap"])?;
        } else if v["secret"].is_object() {
            source("secrets", &v["secret"])?;
        } else if let Some(srcs) = v["projected"]["sources"].as_array() {
            for s in srcs {
                if let Some(path) = s["serviceAccountToken"]["path"].as_str() {
                    // A real token for the pod's ServiceAccount, bound to the pod, as the
                    // kubelet's TokenRequest gets it: the API authenticates it as that SA.
                    let sa = p["spec"]["serviceAccountName"]
                        .as_str()
                        .unwrap_or("default");
                    let (pod_ns, pod_name) = crate::api::store::key_of(p);
                    let ttl = Duration::from_secs(
                        s["serviceAccountToken"]["expirationSeconds"]
                            .as_u64()
                            .unwrap_or(3607),
                    );
                    let failed = |why: String| {
                        format!(
                            "MountVolume.SetUp failed for volume \"{}\" : failed to fetch token: {why}",
                            v["name"].as_str().unwrap_or("")
                        )
                    };
                    let token = match &k.api {
                        NodeApi::Sim => shared
                            .api
                            .tokens
                            .issue(&shared.api, &pod_ns, sa, Some((&pod_ns, &pod_name)), ttl)
                            .ok_or_else(|| failed(format!("serviceaccounts \"{sa}\" not found")))?,
                        NodeApi::Real(api) => api
                            .pod_token(
                                p,
                                sa,
                                s["serviceAccountToken"]["audience"].as_str(),
                                ttl.as_secs(),
                            )
                            .map_err(|e| failed(e.message))?,
                    };
                    write(path, token.as_bytes())?;
                } else if s["configMap"].is_object() {
                    source("configmaps", &s["configMap"])?;
                } else if s["secret"].is_object() {
                    source("secrets", &s["secret"])?;
                } else if let Some(items) = s["downwardAPI"]["items"].as_array() {
                    for it in items {
                        let val = field_ref(
                            k,
                            p,
                            it["fieldRef"]["fieldPath"].as_str().unwrap_or_default(),
                        );
                        write(it["path"].as_str().unwrap_or_default(), val.as_bytes())?;
                    }
                }
            }
        }
        out.insert(
            name,
            (
                vdir,
                v["projected"].is_object() || v["secret"].is_object() || v["configMap"].is_object(),
            ),
        );
    }
    Ok(out)
}
