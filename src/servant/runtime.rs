//! The node's container runtime as the workload restart needs it: which CRI endpoint the
//! kubelet uses, and which of the containers `crictl ps -o json` lists to restart.
//!
//! After the kubelet talks to the API server through YurtHub (or back directly, on revert), the
//! containers it started before still carry the old `KUBERNETES_SERVICE_HOST/PORT`; upstream
//! v1.7 node-servant stops them so the kubelet starts them again with the new environment
//! (openyurtio/openyurt@v1.7.0 pkg/node-servant/components/runtime.go: `crictl -r EP ps -o
//! json`, then `crictl -r EP stop ID` for every container but its own pod's).

use serde::{Deserialize, Serialize};

use super::error::{Result, ServantError};
use super::hostfs::HostFs;
use super::systemd::EffectiveArgv;

/// The kubelet's own default (kubernetes/kubernetes@v1.33
/// pkg/kubelet/apis/config/v1beta1/defaults.go `containerRuntimeEndpoint`).
pub const DEFAULT_CRI_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";
/// kubeadm's kubelet config file, when the kubelet has no `--config`.
const DEFAULT_KUBELET_CONFIG: &str = "/var/lib/kubelet/config.yaml";

/// The CRI endpoint the kubelet uses: its `--container-runtime-endpoint`, else
/// `containerRuntimeEndpoint` of its `--config` file (where kubeadm puts it from Kubernetes
/// 1.34, and minikube always), else the kubelet's default.
pub fn cri_endpoint(fs: &HostFs, argv: &EffectiveArgv) -> Result<String> {
    if let Some(ep) = argv
        .flag_value("container-runtime-endpoint")
        .filter(|v| !v.is_empty())
    {
        return Ok(ep);
    }
    let config = argv
        .flag_value("config")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_KUBELET_CONFIG.to_owned());
    if let Some(text) = fs.read(&config)? {
        let text = String::from_utf8_lossy(&text);
        let parsed: serde_json::Value =
            serde_saphyr::from_str(&text).map_err(|e| ServantError::KubeletConfig {
                path: config.clone(),
                message: e.to_string(),
            })?;
        if let Some(ep) = parsed["containerRuntimeEndpoint"]
            .as_str()
            .filter(|v| !v.is_empty())
        {
            return Ok(ep.to_owned());
        }
    }
    Ok(DEFAULT_CRI_ENDPOINT.to_owned())
}

/// The `(namespace, pod name)` of every static pod of the kubelet on `node`: the manifests in
/// its static-pod directory (control-plane components, a static YurtHub). A workload restart
/// leaves them alone: the kubelet manages them from files, and the control plane must not blink.
pub fn static_pods(fs: &HostFs, argv: &EffectiveArgv, node: &str) -> Result<Vec<(String, String)>> {
    Ok(static_pod_files(fs, argv, node)?
        .into_iter()
        .map(|(_, ns, pod)| (ns, pod))
        .collect())
}

/// The `(namespace, pod name)` of the YurtHub static pod on `node`: the manifest in the
/// kubelet's static-pod directory whose file is named `yurthub*` or `yurt-hub*` (as
/// `facts::node_facts` tells the static-pod mode), if any.
pub fn hub_static_pod(
    fs: &HostFs,
    argv: &EffectiveArgv,
    node: &str,
) -> Result<Option<(String, String)>> {
    Ok(static_pod_files(fs, argv, node)?
        .into_iter()
        .find(|(file, _, _)| file.starts_with("yurthub") || file.starts_with("yurt-hub"))
        .map(|(_, ns, pod)| (ns, pod)))
}

/// `(file name, namespace, mirror pod name)` of each manifest the kubelet would run.
fn static_pod_files(
    fs: &HostFs,
    argv: &EffectiveArgv,
    node: &str,
) -> Result<Vec<(String, String, String)>> {
    let dir = super::kubelet::static_pod_dir(fs, argv)?;
    let mut out = Vec::new();
    for name in fs.list_dir(&dir)? {
        if name.starts_with('.') {
            continue;
        }
        let path = format!("{}/{name}", dir.trim_end_matches('/'));
        let Some(text) = fs.read(&path)? else {
            continue;
        };
        let Ok(m) = serde_saphyr::from_str::<serde_json::Value>(&String::from_utf8_lossy(&text))
        else {
            continue; // the kubelet skips what it cannot parse too
        };
        if let Some(pod) = m["metadata"]["name"].as_str() {
            let ns = m["metadata"]["namespace"].as_str().unwrap_or("default");
            out.push((name.clone(), ns.to_owned(), format!("{pod}-{node}")));
        }
    }
    Ok(out)
}

/// One container as `crictl ps -o json` lists it (the kubelet's labels name its pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    pub namespace: String,
    pub pod: String,
    pub pod_uid: String,
    pub name: String,
}

impl Container {
    /// `namespace/pod/container`, for reports.
    pub fn shown(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.pod, self.name)
    }
}

#[derive(Deserialize)]
struct PsOutput {
    #[serde(default)]
    containers: Vec<PsContainer>,
}

#[derive(Deserialize)]
struct PsContainer {
    id: String,
    #[serde(default)]
    labels: std::collections::BTreeMap<String, String>,
}

/// The Kubernetes containers of `ps_json` (crictl's output) to restart: every container the
/// kubelet started (it labels them with their pod), except those of the pods in `keep` — the
/// servant's own pod (stopping it would kill this process) and a static-pod YurtHub (the
/// kubelet talks through it). Pod sandboxes are not CRI containers, so no pause containers
/// appear.
pub fn containers_to_restart(ps_json: &str, keep: &KeepPods) -> Result<Vec<Container>> {
    let ps: PsOutput = serde_json::from_str(ps_json).map_err(|e| ServantError::RuntimeOutput {
        command: "crictl ps -o json".into(),
        message: e.to_string(),
    })?;
    Ok(ps
        .containers
        .into_iter()
        .filter_map(|c| {
            let label = |k: &str| c.labels.get(k).cloned();
            Some(Container {
                namespace: label("io.kubernetes.pod.namespace")?,
                pod: label("io.kubernetes.pod.name")?,
                pod_uid: label("io.kubernetes.pod.uid").unwrap_or_default(),
                name: label("io.kubernetes.container.name")?,
                id: c.id,
            })
        })
        .filter(|c| !keep.keeps(c))
        .collect())
}

/// The newest container of pod `(namespace, name)` in `ps_json` (`crictl ps -a -o json`,
/// which lists the newest first, kubernetes-sigs/cri-tools@v1.33.0 cmd/crictl/container.go),
/// running or exited: a crash-looping YurtHub's last words are in the exited one.
pub fn newest_container_of(ps_json: &str, pod: &(String, String)) -> Result<Option<Container>> {
    let all = containers_to_restart(ps_json, &KeepPods::default())?;
    Ok(all
        .into_iter()
        .find(|c| c.namespace == pod.0 && c.pod == pod.1))
}

/// The API server address a container was started with: `KUBERNETES_SERVICE_HOST` and
/// `_PORT` of its environment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerApi {
    /// `namespace/pod/container`.
    pub container: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
}

/// The API address each of `containers` was started with, from `crictl inspect`'s JSON (one
/// object for one id, an array for several): `info.config.envs`.
pub fn container_apis(inspect_json: &str, containers: &[Container]) -> Result<Vec<ContainerApi>> {
    let v: serde_json::Value =
        serde_json::from_str(inspect_json).map_err(|e| ServantError::RuntimeOutput {
            command: "crictl inspect".into(),
            message: e.to_string(),
        })?;
    let docs = match v {
        serde_json::Value::Array(a) => a,
        one => vec![one],
    };
    Ok(docs
        .iter()
        .filter_map(|d| {
            let id = d["status"]["id"].as_str()?;
            let c = containers.iter().find(|c| c.id == id)?;
            let env = |k: &str| {
                d["info"]["config"]["envs"]
                    .as_array()?
                    .iter()
                    .find(|e| e["key"] == k)?["value"]
                    .as_str()
                    .map(str::to_owned)
            };
            Some(ContainerApi {
                container: c.shown(),
                host: env("KUBERNETES_SERVICE_HOST"),
                port: env("KUBERNETES_SERVICE_PORT"),
            })
        })
        .collect())
}

/// Pods whose containers are not restarted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeepPods {
    /// The servant's own pod, by UID (`metadata.uid` through the downward API).
    pub own_pod_uid: String,
    /// `(namespace, pod name)` pairs.
    pub pods: Vec<(String, String)>,
}

impl KeepPods {
    fn keeps(&self, c: &Container) -> bool {
        (!self.own_pod_uid.is_empty() && self.own_pod_uid == c.pod_uid)
            || self
                .pods
                .iter()
                .any(|(ns, pod)| *ns == c.namespace && *pod == c.pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(containers: &[(&str, &str, &str, &str, &str)]) -> String {
        let list: Vec<serde_json::Value> = containers
            .iter()
            .map(|(id, ns, pod, uid, name)| {
                serde_json::json!({
                    "id": id,
                    "podSandboxId": "s",
                    "metadata": {"name": name, "attempt": 0},
                    "state": "CONTAINER_RUNNING",
                    "labels": {
                        "io.kubernetes.pod.namespace": ns,
                        "io.kubernetes.pod.name": pod,
                        "io.kubernetes.pod.uid": uid,
                        "io.kubernetes.container.name": name,
                    },
                })
            })
            .collect();
        serde_json::json!({ "containers": list }).to_string()
    }

    #[test]
    fn every_kubernetes_container_but_the_kept_pods() {
        let out = ps(&[
            ("a1", "default", "web-1", "u-web", "nginx"),
            ("a2", "default", "web-1", "u-web", "sidecar"),
            (
                "b1",
                "kube-system",
                "yurtctl-convert-w1-x",
                "u-self",
                "servant",
            ),
            ("c1", "kube-system", "yurt-hub-w1", "u-hub", "yurt-hub"),
            ("d1", "kube-system", "kube-proxy-abc", "u-kp", "kube-proxy"),
        ]);
        let keep = KeepPods {
            own_pod_uid: "u-self".into(),
            pods: vec![("kube-system".into(), "yurt-hub-w1".into())],
        };
        let ids: Vec<String> = containers_to_restart(&out, &keep)
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["a1", "a2", "d1"]);
        // nothing kept: all of them
        let all = containers_to_restart(&out, &KeepPods::default()).unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(all[0].shown(), "default/web-1/nginx");
    }

    #[test]
    fn a_pods_newest_container_running_or_not() {
        // crictl ps -a lists the newest first
        let out = ps(&[
            ("new", "kube-system", "yurt-hub-w1", "u-hub", "yurt-hub"),
            ("old", "kube-system", "yurt-hub-w1", "u-hub", "yurt-hub"),
            ("d1", "default", "web-1", "u-web", "nginx"),
        ]);
        let hub = ("kube-system".to_owned(), "yurt-hub-w1".to_owned());
        assert_eq!(newest_container_of(&out, &hub).unwrap().unwrap().id, "new");
        let other = ("kube-system".to_owned(), "yurt-hub-w2".to_owned());
        assert_eq!(newest_container_of(&out, &other).unwrap(), None);
        assert!(newest_container_of("not json", &hub).is_err());
    }

    #[test]
    fn containers_without_the_kubelets_labels_and_an_empty_list() {
        let out = r#"{"containers": [{"id": "x", "labels": {}}]}"#;
        assert!(
            containers_to_restart(out, &KeepPods::default())
                .unwrap()
                .is_empty()
        );
        assert!(
            containers_to_restart(r#"{"containers": []}"#, &KeepPods::default())
                .unwrap()
                .is_empty()
        );
        assert!(
            containers_to_restart(r#"{}"#, &KeepPods::default())
                .unwrap()
                .is_empty()
        );
        let err = containers_to_restart("level=fatal msg=…", &KeepPods::default()).unwrap_err();
        assert!(err.to_string().contains("crictl ps -o json"), "{err}");
    }
}
