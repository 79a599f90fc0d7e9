//! yurtsim's nodes in front of a real kube-apiserver: each node's kubelet stand-in registers and
//! heartbeats as a kubelet does, with the node's own identity and through the server its own
//! kubelet kubeconfig names.
//!
//! What a kubelet does that is modelled here, from kubernetes/kubernetes@v1.37.2:
//! - registration (pkg/kubelet/kubelet_node_status.go `registerWithAPIServer`,
//!   `initialNode`): creates its Node as `system:node:NAME`, with the labels a kubelet may set
//!   (plugin/pkg/admission/noderestriction/admission.go: `node-role.kubernetes.io/*` is not
//!   among them; kubeadm's mark-control-plane phase adds it with admin credentials);
//! - status (`setNodeStatus`, pkg/kubelet/nodestatus/setters.go): addresses, capacity and
//!   allocatable (`pods` from `maxPods`, 110), node info, the four conditions, written through
//!   `nodes/status`;
//! - the node lease (pkg/kubelet/nodelease, k8s.io/component-helpers/apimachinery/lease
//!   controller.go): `kube-node-lease/NAME`, owned by the Node, `leaseDurationSeconds` 40,
//!   renewed every `nodeLeaseDurationSeconds / 4` = 10 s.
//!
//! The kubelet reads its server and credentials from `--kubeconfig` as its systemd unit gives it
//! (nodes/kubelet_config.rs) and connects from inside its node's network (network.rs), so a node
//! whose kubeconfig names a server it cannot reach stops renewing its lease, and the real node
//! lifecycle controller marks it unreachable.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::sync::watch;

use super::kubelet_api::KubeletApi;
use super::network::{ClusterNetwork, Target};
use crate::nodes::Cluster;
use crate::nodes::kubelet::NodeKubelet;
use crate::nodes::layout::{Layout, Role};
use crate::nodes::real_api::RealApi;

/// A node as the real tier runs it.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub role: Role,
    pub ip: String,
    pub root: PathBuf,
    pub layout: Layout,
    pub kubernetes_version: String,
}

/// How a node's kubelet reaches what its kubeconfig names: from inside the node's network
/// (network.rs), through a port on the host's loopback that dials from there.
#[derive(Clone)]
pub struct NodeNet {
    pub network: Arc<ClusterNetwork>,
    pub target: Target,
    /// The host port that forwards into the node's network.
    pub local_port: u16,
}

/// Labels a kubelet registers with (kubelet_node_status.go `initialNode`, and the `beta.`
/// labels it still sets); everything else the layout puts on a node comes from kubeadm or the
/// provider with admin credentials.
pub fn kubelet_labels(labels: &[(String, String)]) -> Vec<(String, String)> {
    labels
        .iter()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                "kubernetes.io/hostname"
                    | "kubernetes.io/os"
                    | "kubernetes.io/arch"
                    | "beta.kubernetes.io/os"
                    | "beta.kubernetes.io/arch"
            )
        })
        .cloned()
        .collect()
}

/// The kubelet's client, built from the kubeconfig its unit names, with file paths inside the
/// node's root.
pub async fn kubelet_client(node: &NodeSpec, net: &NodeNet) -> anyhow::Result<kube::Client> {
    let unit = crate::nodes::systemd::load_unit(&node.root, "kubelet.service")
        .map_err(|e| anyhow::anyhow!("kubelet.service: {e}"))?;
    let view = crate::nodes::kubelet_config::kubelet_view(&node.root, &unit)
        .map_err(|e| anyhow::anyhow!("kubelet.service: {e}"))?;
    let path = view
        .kubeconfig
        .filter(|p| !p.is_empty())
        .context("the kubelet has no --kubeconfig")?;
    let mut kc = Kubeconfig::read_from(in_root(&node.root, &path))
        .with_context(|| format!("reading the kubelet's kubeconfig {path}"))?;
    for a in &mut kc.auth_infos {
        if let Some(auth) = a.auth_info.as_mut() {
            for f in [&mut auth.client_certificate, &mut auth.client_key] {
                if let Some(p) = f.as_mut() {
                    *p = in_root(&node.root, p).display().to_string();
                }
            }
        }
    }
    for c in &mut kc.clusters {
        if let Some(cluster) = c.cluster.as_mut()
            && let Some(p) = cluster.certificate_authority.as_mut()
        {
            *p = in_root(&node.root, p).display().to_string();
        }
    }
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("the kubelet's kubeconfig {path}"))?;
    let host = config.cluster_url.host().unwrap_or_default().to_string();
    let port = config.cluster_url.port_u16().unwrap_or(
        if config.cluster_url.scheme_str() == Some("http") {
            80
        } else {
            443
        },
    );
    let ip = net
        .network
        .resolve(&host)
        .with_context(|| format!("dial tcp: lookup {host}: no such host"))?;
    net.target.set(SocketAddr::new(ip, port));
    // the scheme stays the kubeconfig's: YurtHub's proxy for the kubelet is plain HTTP
    let scheme = config
        .cluster_url
        .scheme_str()
        .unwrap_or("https")
        .to_string();
    if scheme == "https" {
        config.tls_server_name = Some(host);
    }
    config.cluster_url = format!("{scheme}://127.0.0.1:{}", net.local_port).parse()?;
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(30));
    // client-go's default User-Agent, as the kubelet sends it: YurtHub files what it caches
    // by the agent's name, and its `/pods` (static pod upgrades wait on it) lists what it
    // cached for `kubelet` (kubernetes/client-go rest/config.go DefaultKubernetesUserAgent:
    // `<binary>/<gitVersion> (<os>/<arch>) kubernetes/<commit[:7]>`; tests/real/build.sh sets
    // no commit, as for realcp's components; the sim's nodes are linux/amd64, nodes/layout/.
    // openyurtio/openyurt@v1.7.0 pkg/yurthub/otaupdate/ota.go GetPods)
    let agent = format!(
        "kubelet/{} (linux/amd64) kubernetes/$Format",
        node.kubernetes_version
    );
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&agent)?,
    ));
    Ok(kube::Client::try_from(config)?)
}

/// A host path of the node, on disk: symlinks followed as inside a chroot at `root`.
pub(super) fn in_root(root: &Path, p: &str) -> PathBuf {
    match crate::nodes::systemd::resolve_host_path(root, p) {
        Ok(r) => r.disk,
        Err(_) => root.join(p.trim_start_matches('/')),
    }
}

fn node_object(node: &NodeSpec) -> anyhow::Result<Node> {
    let labels: serde_json::Map<String, serde_json::Value> =
        kubelet_labels(&node.layout.node_labels(&node.name, node.role))
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect();
    let mut spec = json!({});
    if node.layout == Layout::Kind {
        // kind runs the kubelet with --provider-id (kind pkg/cluster/internal/kubeadm/config.go)
        spec["providerID"] = json!(format!("kind://docker/kind/{}", node.name));
    }
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels,
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
    }))?)
}

fn node_status(node: &NodeSpec) -> serde_json::Value {
    let now = crate::util::now();
    let cond = |t: &str, s: &str, reason: &str, msg: &str| {
        json!({"type": t, "status": s, "reason": reason, "message": msg,
            "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!({"status": {
        "addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname", "address": node.name}],
        "capacity": {"cpu": "4", "memory": "8148828Ki", "pods": "110", "ephemeral-storage": "102626232Ki"},
        "allocatable": {"cpu": "4", "memory": "8046428Ki", "pods": "110", "ephemeral-storage": "94580335255"},
        "conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"architecture": "amd64", "bootID": crate::util::new_uid(),
            "containerRuntimeVersion": "containerd://2.0.3", "kernelVersion": "6.8.0-yurtsim",
            "kubeProxyVersion": "", "kubeletVersion": node.kubernetes_version,
            "machineID": format!("{:032x}", crate::util::fnv32a(node.name.as_bytes())),
            "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)",
            "systemUUID": crate::util::new_uid()},
    }})
}

/// Registers the node (or finds it registered) and posts its status.
pub async fn register(node: &NodeSpec, client: &kube::Client) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes
        .create(&PostParams::default(), &node_object(node)?)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).with_context(|| format!("registering node {}", node.name)),
    }
    nodes
        .patch_status(
            &node.name,
            &PatchParams::default(),
            &Patch::Strategic(node_status(node)),
        )
        .await
        .with_context(|| format!("posting the status of node {}", node.name))?;
    Ok(())
}

/// Creates or renews the node's lease.
pub async fn renew_lease(node: &NodeSpec, client: &kube::Client) -> anyhow::Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let now = crate::util::now_micro();
    match leases.get_opt(&node.name).await? {
        Some(mut lease) => {
            let spec = lease.spec.get_or_insert_with(Default::default);
            spec.renew_time = Some(serde_json::from_value(json!(now))?);
            leases
                .replace(&node.name, &PostParams::default(), &lease)
                .await?;
        }
        None => {
            let uid = Api::<Node>::all(client.clone())
                .get(&node.name)
                .await?
                .metadata
                .uid
                .unwrap_or_default();
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {"name": node.name, "namespace": "kube-node-lease",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": uid}]},
                "spec": {"holderIdentity": node.name, "leaseDurationSeconds": 40, "renewTime": now},
            }))?;
            leases.create(&PostParams::default(), &lease).await?;
        }
    }
    Ok(())
}

/// The kubelet's node loop: register once, then renew the lease every `heartbeat` while
/// kubelet.service runs; a failed step drops the client, so the next one reads the unit and
/// kubeconfig again. The lease has a loop of its own, as in the kubelet (pkg/kubelet/
/// nodelease), so a slow pod or static pod sync never delays it.
pub async fn run(
    k: Arc<NodeKubelet>,
    api: Arc<KubeletApi>,
    heartbeat: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let node = &api.node;
    let mut registered = false;
    loop {
        if k.active() {
            let step = async {
                let c = api.client().await?;
                if !registered {
                    register(node, &c).await?;
                    registered = true;
                }
                renew_lease(node, &c).await?;
                anyhow::Ok(())
            };
            if let Err(e) = step.await {
                tracing::warn!(node = %node.name, "kubelet: {e:#}");
                api.reset();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(heartbeat) => {}
            _ = stop.changed() => return,
        }
    }
}

/// The kubelet's housekeeping of mirror pods (kubernetes/kubernetes@v1.37.2
/// pkg/kubelet/kubelet_pods.go `HandlePodCleanups`, every `housekeepingPeriod`, 2 s,
/// kubelet.go): a mirror pod on this node whose static pod is gone is deleted. The static
/// pods themselves (the manifest directory, their mirror pods, pulls, containers and status)
/// run in the sim's kubelet for both tiers (nodes/kubelet/static_pods.rs), which writes through
/// this node's [`KubeletApi`].
pub async fn run_static_pods(
    k: Arc<NodeKubelet>,
    api: Arc<KubeletApi>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if k.active() {
            let (k, api) = (k.clone(), api.clone());
            // the API calls block (kubelet_api.rs)
            let _ = tokio::task::spawn_blocking(move || {
                crate::nodes::kubelet::delete_orphaned_mirrors(&k, api.as_ref())
            })
            .await;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// The pods bound to the node, watched as the kubelet's config source does
/// (pkg/kubelet/config/apiserver.go: `spec.nodeName=NAME`), handed to the kubelet as they
/// come and go. The watch starts again with a new client after a kubelet restart.
pub async fn watch_pods(
    shared: Arc<Cluster>,
    k: Arc<NodeKubelet>,
    api: Arc<KubeletApi>,
    mut stop: watch::Receiver<bool>,
) {
    use futures::StreamExt;
    use kube::runtime::WatchStreamExt;
    use kube::runtime::watcher::{self, Event};
    let pod_resource = kube::api::ApiResource::erase::<Pod>(&());
    loop {
        let mut generations = api.generations();
        let client = match api.client().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(node = %k.name, "pod watch: {e:#}");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => continue,
                    _ = stop.changed() => return,
                }
            }
        };
        let pods: Api<DynamicObject> = Api::all_with(client, &pod_resource);
        let config = watcher::Config::default().fields(&format!("spec.nodeName={}", k.name));
        let mut events = watcher::watcher(pods, config).default_backoff().boxed();
        let mut listed = HashSet::new();
        let mut init = Vec::new();
        loop {
            let ev = tokio::select! {
                ev = events.next() => ev,
                _ = generations.changed() => break,
                _ = stop.changed() => return,
            };
            let Some(ev) = ev else { break };
            let pod = |o: DynamicObject| serde_json::to_value(o).unwrap_or_default();
            match ev {
                Ok(Event::Init) => {
                    listed.clear();
                    init.clear();
                }
                Ok(Event::InitApply(o)) => {
                    let p = pod(o);
                    listed.extend(p["metadata"]["uid"].as_str().map(str::to_string));
                    crate::nodes::kubelet::consider_pod(&shared, &p);
                    init.push(p);
                }
                Ok(Event::InitDone) => {
                    api.pods_listed(std::mem::take(&mut init));
                    crate::nodes::kubelet::forget_pods_except(&shared, &k, &listed)
                }
                Ok(Event::Apply(o)) => {
                    let p = pod(o);
                    api.pod_seen(&p, false);
                    crate::nodes::kubelet::consider_pod(&shared, &p);
                }
                Ok(Event::Delete(o)) => {
                    let p = pod(o);
                    api.pod_seen(&p, true);
                    crate::nodes::kubelet::pod_gone(&shared, &p);
                }
                Err(e) => tracing::debug!(node = %k.name, "pod watch: {e}"),
            }
        }
    }
}
