//! What `kubeadm init` creates once the control plane is up, with the same names, from
//! kubernetes/kubernetes@v1.37.2:
//! - cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go `EnsureAdminClusterRoleBinding`: the
//!   `kubeadm:cluster-admins` group (admin.conf) bound to `cluster-admin`;
//! - cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go: bootstrap-token nodes may
//!   create CSRs, which are auto-approved, and nodes may renew their client certificates;
//!   `kubeadm:get-nodes`;
//! - cmd/kubeadm/app/phases/bootstraptoken/clusterinfo/clusterinfo.go: `kube-public/cluster-info`
//!   and its anonymous reader Role;
//! - cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go: `kube-system/kubeadm-config`;
//! - cmd/kubeadm/app/phases/markcontrolplane/markcontrolplane.go: the control-plane label and
//!   taint, set with admin credentials (a kubelet may not set them).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::nodes::layout::{Layout, Role as NodeRole};

/// Applies `obj` (server-side apply, field manager `kubeadm`) through `api`.
async fn apply<K>(api: &Api<K>, obj: Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = obj["metadata"]["name"]
        .as_str()
        .context("object without a name")?
        .to_string();
    api.patch(
        &name,
        &PatchParams::apply("kubeadm").force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {name}"))?;
    Ok(())
}

fn binding(name: &str, role: &str, subject_kind: &str, subject: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind, "name": subject}]})
}

/// The group bootstrap tokens made by `kubeadm token create` authenticate as.
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";

pub struct Init<'a> {
    pub cluster_name: &'a str,
    pub endpoint: &'a str,
    pub ca_pem: &'a str,
    pub kubernetes_version: &'a str,
}

pub async fn kubeadm_init(super_admin: &kube::Client, init: &Init<'_>) -> anyhow::Result<()> {
    let crbs: Api<ClusterRoleBinding> = Api::all(super_admin.clone());
    for b in [
        binding(
            "kubeadm:cluster-admins",
            "cluster-admin",
            "Group",
            "kubeadm:cluster-admins",
        ),
        binding(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            "Group",
            BOOTSTRAP_GROUP,
        ),
        binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            "Group",
            BOOTSTRAP_GROUP,
        ),
        binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "Group",
            "system:nodes",
        ),
        binding(
            "kubeadm:get-nodes",
            "kubeadm:get-nodes",
            "Group",
            BOOTSTRAP_GROUP,
        ),
    ] {
        apply(&crbs, b).await?;
    }
    apply(
        &Api::<ClusterRole>::all(super_admin.clone()),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "kubeadm:get-nodes"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}),
    )
    .await?;

    use base64::Engine as _;
    let ca_data = base64::engine::general_purpose::STANDARD.encode(init.ca_pem);
    let cluster_info = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca_data}\n    server: {}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {{}}\nusers: null\n",
        init.endpoint
    );
    apply(
        &Api::<ConfigMap>::namespaced(super_admin.clone(), "kube-public"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cluster-info", "namespace": "kube-public"},
            "data": {"kubeconfig": cluster_info}}),
    )
    .await?;
    apply(
        &Api::<Role>::namespaced(super_admin.clone(), "kube-public"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]}),
    )
    .await?;
    apply(
        &Api::<RoleBinding>::namespaced(super_admin.clone(), "kube-public"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]}),
    )
    .await?;

    let control_plane_endpoint = init.endpoint.trim_start_matches("https://");
    let cluster_config = format!(
        "apiServer: {{}}\napiVersion: kubeadm.k8s.io/v1beta4\nclusterName: {}\ncontrolPlaneEndpoint: {control_plane_endpoint}\nkind: ClusterConfiguration\nkubernetesVersion: {}\nnetworking:\n  dnsDomain: cluster.local\n  podSubnet: {}\n  serviceSubnet: {}\n",
        init.cluster_name,
        init.kubernetes_version,
        super::control_plane::POD_CIDR,
        super::control_plane::SERVICE_CIDR,
    );
    apply(
        &Api::<ConfigMap>::namespaced(super_admin.clone(), "kube-system"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
            "data": {"ClusterConfiguration": cluster_config}}),
    )
    .await?;
    Ok(())
}

/// Waits until every node has registered, then labels and taints the control planes and
/// annotates every node with its CRI socket, as kubeadm does with admin credentials: each
/// node's own `kubeadm join` marks it (kubernetes/kubernetes@v1.37.2
/// cmd/kubeadm/app/phases/markcontrolplane), so the nodes are marked side by side, not one by
/// one (a thousand nodes' marks in a row would outlast the wait on a loaded API server).
pub async fn mark_nodes(
    admin: &kube::Client,
    layout: Layout,
    names: &[(String, NodeRole)],
    timeout: Duration,
    healthy: impl Fn() -> anyhow::Result<()> + Sync,
) -> anyhow::Result<()> {
    use futures::{StreamExt, TryStreamExt};
    /// Joins marking at once, as many as kubeadm processes on that many machines would.
    const SIDE_BY_SIDE: usize = 32;
    let start = Instant::now();
    let healthy = &healthy;
    // collected first: a stream that maps with a closure over borrowed names makes the whole
    // future's Send bound not general enough for a spawned Sim::start (rust-lang/rust#102211)
    let marks: Vec<std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + '_>>> = names
        .iter()
        .map(|(name, role)| {
            let go_on = move || {
                healthy()?;
                if start.elapsed() > timeout {
                    bail!("node {name} did not register within {timeout:?}");
                }
                Ok(())
            };
            Box::pin(mark_node(admin, layout, name, *role, go_on)) as _
        })
        .collect();
    futures::stream::iter(marks)
        .buffer_unordered(SIDE_BY_SIDE)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// One node's marks, once it has registered (`go_on` says whether to keep waiting).
async fn mark_node(
    admin: &kube::Client,
    layout: Layout,
    name: &str,
    role: NodeRole,
    go_on: impl Fn() -> anyhow::Result<()> + Send,
) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(admin.clone());
    loop {
        go_on()?;
        if nodes.get_opt(name).await?.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kubelet_set = super::nodes::kubelet_labels(&layout.node_labels(name, role));
    let labels: serde_json::Map<String, Value> = layout
        .node_labels(name, role)
        .into_iter()
        .filter(|l| !kubelet_set.contains(l))
        .map(|(k, v)| (k, v.into()))
        .collect();
    let mut patch = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
        "labels": labels,
        "annotations": {"kubeadm.alpha.kubernetes.io/cri-socket": layout.cri_endpoint()}}});
    if role == NodeRole::ControlPlane {
        let taints: Vec<Value> = layout
            .control_plane_taints()
            .into_iter()
            .map(|(k, e)| json!({"key": k, "effect": e}))
            .collect();
        if !taints.is_empty() {
            patch["spec"] = json!({"taints": taints});
        }
    }
    nodes
        .patch(
            name,
            &PatchParams::apply("kubeadm").force(),
            &Patch::Apply(patch),
        )
        .await
        .with_context(|| format!("marking node {name}"))?;
    Ok(())
}

/// Waits for the ServiceAccount controller to create `default/default`: pods cannot be created
/// before it exists (the ServiceAccount admission plugin).
pub async fn wait_default_service_account(
    admin: &kube::Client,
    timeout: Duration,
) -> anyhow::Result<()> {
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let start = Instant::now();
    while sas.get_opt("default").await?.is_none() {
        if start.elapsed() > timeout {
            bail!("kube-controller-manager created no default ServiceAccount within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Waits until each control-plane node's kubelet has posted the mirror pod of its
/// kube-controller-manager manifest, as on a cluster `kubeadm init` finished.
pub async fn wait_control_plane_pods(
    admin: &kube::Client,
    control_planes: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "kube-system");
    let lp = kube::api::ListParams::default().labels("component=kube-controller-manager");
    let start = Instant::now();
    loop {
        let running = pods
            .list(&lp)
            .await?
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if running >= control_planes {
            return Ok(());
        }
        if start.elapsed() > timeout {
            bail!(
                "{running} of {control_planes} kube-controller-manager mirror pods running after {timeout:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
