//! The kubelet's configuration file and the kubeconfigs (the kubelet's, the control-plane
//! components').

use super::*;

pub(super) fn kubelet_config_yaml(layout: Layout, version: &str) -> String {
    let ca = format!("{}/ca.crt", layout.cert_dir());
    // kubeadm marshals the defaulted KubeletConfiguration with keys in alphabetical order
    let mut f: Vec<(&str, String)> = vec![
        ("apiVersion", "kubelet.config.k8s.io/v1beta1".into()),
        (
            "authentication",
            format!("\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 0s\n    enabled: true\n  x509:\n    clientCAFile: {ca}"),
        ),
        (
            "authorization",
            "\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s".into(),
        ),
        ("clusterDNS", "\n- 10.96.0.10".into()),
        ("clusterDomain", "cluster.local".into()),
        (
            "containerRuntimeEndpoint",
            if node_local_cri_socket(version) {
                layout.cri_endpoint().into()
            } else {
                "\"\"".into()
            },
        ),
        ("cpuManagerReconcilePeriod", "0s".into()),
        ("crashLoopBackOff", "{}".into()),
        ("evictionPressureTransitionPeriod", "0s".into()),
        ("fileCheckFrequency", "0s".into()),
        ("healthzBindAddress", "127.0.0.1".into()),
        ("healthzPort", "10248".into()),
        ("httpCheckFrequency", "0s".into()),
        ("imageMaximumGCAge", "0s".into()),
        ("imageMinimumGCAge", "0s".into()),
        ("kind", "KubeletConfiguration".into()),
        (
            "logging",
            "\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n    text:\n      infoBufferSize: \"0\"\n  verbosity: 0".into(),
        ),
        ("memorySwap", "{}".into()),
        ("nodeStatusReportFrequency", "0s".into()),
        ("nodeStatusUpdateFrequency", "0s".into()),
        ("rotateCertificates", "true".into()),
        ("runtimeRequestTimeout", "0s".into()),
        ("shutdownGracePeriod", "0s".into()),
        ("shutdownGracePeriodCriticalPods", "0s".into()),
        ("staticPodPath", "/etc/kubernetes/manifests".into()),
        ("streamingConnectionIdleTimeout", "0s".into()),
        ("syncFrequency", "0s".into()),
        ("volumeStatsAggPeriod", "0s".into()),
    ];
    match layout {
        Layout::Kubeadm | Layout::KubeadmUsr => f.push(("cgroupDriver", "systemd".into())),
        Layout::Kind => {
            f.push(("cgroupDriver", "systemd".into()));
            f.push(("cgroupRoot", "/kubelet".into()));
            f.push((
                "evictionHard",
                "\n  imagefs.available: 0%\n  nodefs.available: 0%\n  nodefs.inodesFree: 0%".into(),
            ));
            f.push(("failSwapOn", "false".into()));
            f.push(("imageGCHighThresholdPercent", "100".into()));
        }
        Layout::Minikube => {
            f.retain(|(k, _)| *k != "containerRuntimeEndpoint" && *k != "runtimeRequestTimeout");
            f.push(("cgroupDriver", "cgroupfs".into()));
            f.push((
                "containerRuntimeEndpoint",
                "unix:///var/run/cri-dockerd.sock".into(),
            ));
            f.push((
                "evictionHard",
                "\n  imagefs.available: 0%\n  nodefs.available: 0%\n  nodefs.inodesFree: 0%".into(),
            ));
            f.push(("failSwapOn", "false".into()));
            f.push(("hairpinMode", "hairpin-veth".into()));
            f.push(("imageGCHighThresholdPercent", "100".into()));
            f.push(("runtimeRequestTimeout", "15m0s".into()));
        }
    }
    f.sort_by(|a, b| a.0.cmp(b.0));
    let mut s = String::new();
    for (k, v) in f {
        if v.starts_with('\n') {
            s.push_str(&format!("{k}:{v}\n"));
        } else {
            s.push_str(&format!("{k}: {v}\n"));
        }
    }
    s
}

/// A kubeconfig as kubeadm writes it (alphabetical keys, `name@cluster` context).
pub(crate) fn kubeconfig(
    cluster: &str,
    server: &str,
    ca_data: &str,
    user: &str,
    user_block: &str,
) -> String {
    format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca_data}
    server: {server}
  name: {cluster}
contexts:
- context:
    cluster: {cluster}
    user: {user}
  name: {user}@{cluster}
current-context: {user}@{cluster}
kind: Config
preferences: {{}}
users:
- name: {user}
  user:
{user_block}"
    )
}

pub(super) fn embedded_user(subject: &str) -> String {
    format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        base64(fake_pem("CERTIFICATE", subject).as_bytes()),
        base64(fake_pem("RSA PRIVATE KEY", subject).as_bytes())
    )
}

pub(super) const KUBELET_PEM: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

pub(super) fn kubelet_conf(node: &NodeSeed, ca_data: &str) -> String {
    let files = format!("    client-certificate: {KUBELET_PEM}\n    client-key: {KUBELET_PEM}\n");
    match node.role {
        // kubeadm init writes it on the control plane
        Role::ControlPlane => kubeconfig(
            &node.cluster_name,
            &node.api_server,
            ca_data,
            &format!("system:node:{}", node.name),
            &files,
        ),
        // after TLS bootstrap the kubelet writes its own, with fixed names
        Role::Worker => format!(
            "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca_data}
    server: {server}
  name: default-cluster
contexts:
- context:
    cluster: default-cluster
    namespace: default
    user: default-auth
  name: default-context
current-context: default-context
kind: Config
preferences: {{}}
users:
- name: default-auth
  user:
{files}",
            server = node.api_server
        ),
    }
}
