//! The kubelet's systemd files as each layout's packages install them: the unit, kubeadm's and
//! kind's and minikube's drop-ins, and kubeadm-flags.env.

use crate::version::Version;

use super::*;

pub(super) const KUBELET_SERVICE_PKG: &str = "[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
";

pub(super) fn kubeadm_dropin(extra_env_file: &str, kind_order: bool) -> String {
    let exec = if kind_order {
        "$KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_EXTRA_ARGS $KUBELET_KUBEADM_ARGS"
    } else {
        "$KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"
    };
    format!(
        "# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"
Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"
# Written by \"kubeadm init\" / \"kubeadm join\": sets KUBELET_KUBEADM_ARGS
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# Last-resort user overrides in KUBELET_EXTRA_ARGS (prefer nodeRegistration.kubeletExtraArgs)
EnvironmentFile=-{extra_env_file}
ExecStart=
ExecStart=/usr/bin/kubelet {exec}
"
    )
}

pub(super) const KIND_KUBELET_SERVICE: &str = "# kind's variant of the packaged kubelet.service
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=http://kubernetes.io/docs/
# kind: do not crashloop before kubeadm has written the config
ConditionPathExists=/var/lib/kubelet/config.yaml

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=1s
CPUAccounting=true
MemoryAccounting=true
Slice=kubelet.slice

[Install]
WantedBy=multi-user.target
";

pub(super) const KIND_11_CONF: &str = "# kind specific additions
[Service]
# cgroup v2: create the kubelet cgroup before start
ExecStartPre=/bin/sh -euc \"if [ -f /sys/fs/cgroup/cgroup.controllers ]; then /kind/bin/create-kubelet-cgroup-v2.sh; fi\"
# cgroup v1 without /sys/fs/cgroup/systemd/kubelet (e.g. WSL2)
ExecStartPre=/bin/sh -euc \"if [ ! -f /sys/fs/cgroup/cgroup.controllers ] && [ ! -d /sys/fs/cgroup/systemd/kubelet ]; then mkdir -p /sys/fs/cgroup/systemd/kubelet; fi\"
";

pub(super) fn minikube_service(version: &str) -> String {
    format!(
        "[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=http://kubernetes.io/docs/
StartLimitIntervalSec=0

[Service]
ExecStart=/var/lib/minikube/binaries/{version}/kubelet
Restart=always
# Tuned for local dev: faster than upstream default (10s), but slower than systemd default (100ms)
RestartSec=600ms

[Install]
WantedBy=multi-user.target
"
    )
}

pub(super) fn minikube_dropin(node: &NodeSeed) -> String {
    format!(
        "[Unit]
Wants=docker.socket

[Service]
ExecStart=
ExecStart=/var/lib/minikube/binaries/{v}/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --config=/var/lib/kubelet/config.yaml --hostname-override={n} --kubeconfig=/etc/kubernetes/kubelet.conf --node-ip={ip}

[Install]
",
        v = node.kubernetes_version,
        n = node.name,
        ip = node.internal_ip
    )
}

/// kubeadm's NodeLocalCRISocket gate (alpha, off, in v1.32-v1.33: kubernetes/kubernetes#128031;
/// beta, on, from v1.34: #131981) moves the CRI socket from kubeadm-flags.env to
/// `/var/lib/kubelet/instance-config.yaml`, patched into config.yaml.
pub(super) fn node_local_cri_socket(version: &str) -> bool {
    Version::kubernetes(version) >= Version::new(1, 34, 0)
}

pub(super) fn kubeadm_flags(layout: Layout, node: &NodeSeed) -> String {
    let flags = kubeadm_flags_all(layout, node);
    if node_local_cri_socket(&node.kubernetes_version) {
        let ep = format!("--container-runtime-endpoint={} ", layout.cri_endpoint());
        return flags.replacen(&ep, "", 1);
    }
    flags
}

fn kubeadm_flags_all(layout: Layout, node: &NodeSeed) -> String {
    let pause = pause_image(&node.kubernetes_version);
    // kubeadm sorts the flags it writes
    match layout {
        Layout::Kubeadm | Layout::KubeadmUsr => format!(
            "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image={pause}"
        ),
        Layout::Kind => format!(
            "--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip={ip} --node-labels= --pod-infra-container-image={pause} --provider-id=kind://docker/{c}/{n} --runtime-cgroups=/system.slice/containerd.service",
            ip = node.internal_ip,
            c = node.cluster_name,
            n = node.name
        ),
        Layout::Minikube => format!(
            "--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock --hostname-override={n} --node-ip={ip} --pod-infra-container-image={pause}",
            n = node.name,
            ip = node.internal_ip
        ),
    }
}
