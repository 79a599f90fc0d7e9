//! Seeds a simulated node's root file system with what each real cluster layout has on disk:
//! the kubelet's systemd unit and drop-ins, kubeadm-flags.env, the kubelet config and
//! kubeconfig with the files it references, and on control planes kubeadm's static-pod
//! manifests and component kubeconfigs.
//!
//! Where files live (facts from the packages and tools, not from yurtctl):
//! * `Kubeadm` — Debian packages from the old apt.kubernetes.io repo: `kubelet.service` under
//!   `/usr/lib/systemd/system` (`/lib/...` with `lib_systemd_dir`), drop-in
//!   `/etc/systemd/system/kubelet.service.d/10-kubeadm.conf`, extra args `/etc/default/kubelet`.
//! * `KubeadmUsr` — pkgs.k8s.io / rpm packages: unit and drop-in both under
//!   `/usr/lib/systemd/system` (`/lib/...` with `lib_systemd_dir`), extra args
//!   `/etc/sysconfig/kubelet`.
//! * `Kind` — kind's base image: unit, `10-kubeadm.conf` (ExecStart order `... $KUBELET_EXTRA_ARGS
//!   $KUBELET_KUBEADM_ARGS`) and `11-kind.conf` under `/etc/systemd/system`.
//! * `Minikube` — `/lib/systemd/system/kubelet.service` plus minikube's own
//!   `/etc/systemd/system/kubelet.service.d/10-kubeadm.conf` with the flags inline in ExecStart
//!   and no EnvironmentFile; kubeadm still writes kubeadm-flags.env, which nothing sources.
//!
//! Text is our own rendering of those facts (same directives, flags and field order); PEM
//! contents are clearly fake. Output is deterministic for the same inputs.

use crate::version::Version;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    Kubeadm,
    KubeadmUsr,
    Kind,
    Minikube,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    ControlPlane,
    Worker,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSeed {
    pub name: String,
    pub role: Role,
    pub internal_ip: String,
    /// URL as that layout writes it into kubelet.conf.
    pub api_server: String,
    /// "v1.33.1"
    pub kubernetes_version: String,
    pub cluster_name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeedOptions {
    /// kubeadm < 1.15 wrote `KUBELET_KUBEADM_ARGS=...` without quotes.
    pub unquoted_flags_env: bool,
    /// Package-owned systemd files under `/lib/systemd/system` instead of `/usr/lib/...`
    /// (Kubeadm, KubeadmUsr only; written as a real directory, not a symlink).
    pub lib_systemd_dir: bool,
    /// `KUBELET_EXTRA_ARGS` for `/etc/default/kubelet` (deb, kind, minikube) or
    /// `/etc/sysconfig/kubelet` (KubeadmUsr).
    pub extra_args: Option<String>,
}

/// Which runtime answers on a node's CRI socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Containerd,
    /// minikube's docker runtime behind cri-dockerd.
    CriDockerd,
}

impl Layout {
    /// The cluster's name in the kubeconfigs and kubeadm configuration of this layout.
    pub fn cluster_name(self) -> &'static str {
        match self {
            Layout::Kind => "kind",
            Layout::Minikube => "mk",
            _ => "kubernetes",
        }
    }

    /// The CRI socket each tool configures for the kubelet, as kubeadm's `criSocket`:
    /// kubeadm's default (kubernetes/kubernetes@v1.33.0 cmd/kubeadm/app/constants/
    /// constants_unix.go `DefaultCRISocket`), kind's (kubernetes-sigs/kind@v0.32.0
    /// pkg/cluster/internal/kubeadm/config.go `criSocket`), minikube's docker runtime via
    /// cri-dockerd (kubernetes/minikube@v1.38.1 pkg/minikube/cruntime/docker.go
    /// `ExternalDockerCRISocket`).
    pub fn cri_endpoint(self) -> &'static str {
        match self {
            Layout::Kubeadm | Layout::KubeadmUsr => "unix:///var/run/containerd/containerd.sock",
            Layout::Kind => "unix:///run/containerd/containerd.sock",
            Layout::Minikube => "unix:///var/run/cri-dockerd.sock",
        }
    }

    /// The runtime and the sockets it listens on (host paths; `/var/run` is a symlink to
    /// `/run` on all these hosts). minikube's dockerd socket is there too.
    pub fn runtime_sockets(self) -> (Flavor, &'static [&'static str]) {
        match self {
            Layout::Minikube => (
                Flavor::CriDockerd,
                &["/run/cri-dockerd.sock", "/run/docker.sock"],
            ),
            _ => (Flavor::Containerd, &["/run/containerd/containerd.sock"]),
        }
    }

    pub fn all() -> [Layout; 4] {
        [
            Layout::Kubeadm,
            Layout::KubeadmUsr,
            Layout::Kind,
            Layout::Minikube,
        ]
    }

    fn as_str(self) -> &'static str {
        match self {
            Layout::Kubeadm => "kubeadm",
            Layout::KubeadmUsr => "kubeadm-usr",
            Layout::Kind => "kind",
            Layout::Minikube => "minikube",
        }
    }

    /// Node names as each tool makes them, control planes first.
    pub fn node_names(self, control_planes: usize, workers: usize) -> Vec<(String, Role)> {
        let mut v = Vec::with_capacity(control_planes + workers);
        match self {
            Layout::Kubeadm | Layout::KubeadmUsr => {
                v.extend(
                    (1..=control_planes)
                        .map(|i| (format!("control-plane-{i}"), Role::ControlPlane)),
                );
                v.extend((1..=workers).map(|i| (format!("worker-{i}"), Role::Worker)));
            }
            Layout::Kind => {
                // kind: first node has no suffix, then 2, 3, ...
                let n = |base: &str, i: usize| {
                    if i == 1 {
                        base.to_owned()
                    } else {
                        format!("{base}{i}")
                    }
                };
                v.extend(
                    (1..=control_planes).map(|i| (n("kind-control-plane", i), Role::ControlPlane)),
                );
                v.extend((1..=workers).map(|i| (n("kind-worker", i), Role::Worker)));
            }
            Layout::Minikube => {
                // minikube: "minikube", then "<profile>-m%02d" numbered across all nodes
                for i in 1..=control_planes + workers {
                    let name = if i == 1 {
                        "minikube".to_owned()
                    } else {
                        format!("minikube-m{i:02}")
                    };
                    let role = if i <= control_planes {
                        Role::ControlPlane
                    } else {
                        Role::Worker
                    };
                    v.push((name, role));
                }
            }
        }
        v
    }

    /// The API server URL kubelets use. kind HA clusters would use
    /// `kind-external-load-balancer`; we always return the single-control-plane name.
    pub fn api_server(self, first_control_plane_ip: &str) -> String {
        match self {
            Layout::Kubeadm | Layout::KubeadmUsr => {
                format!("https://{first_control_plane_ip}:6443")
            }
            Layout::Kind => "https://kind-control-plane:6443".into(),
            Layout::Minikube => "https://control-plane.minikube.internal:8443".into(),
        }
    }

    /// Unique, realistic node IPs. kind: docker network 172.18.0.0/16 from .2 upwards;
    /// minikube: 192.168.49.2.. (beyond 253 nodes, which minikube cannot do, the following
    /// /24s); kubeadm: 10.0.0.1 upwards, skipping .0 and .255.
    pub fn node_ip(self, index: usize) -> String {
        match self {
            Layout::Kind => {
                let h = index + 2;
                format!("172.18.{}.{}", (h / 256) % 256, h % 256)
            }
            Layout::Minikube => {
                let (net, host) = (index / 253, index % 253 + 2);
                format!("192.168.{}.{}", 49 + net % 207, host)
            }
            Layout::Kubeadm | Layout::KubeadmUsr => {
                let (hi, host) = (index / 254, index % 254 + 1);
                format!("10.{}.{}.{}", hi / 256 % 256, hi % 256, host)
            }
        }
    }

    /// Labels the kubelet and kubeadm (and minikube) put on the Node.
    pub fn node_labels(self, name: &str, role: Role) -> Vec<(String, String)> {
        let mut l: Vec<(String, String)> = vec![
            ("beta.kubernetes.io/arch".into(), "amd64".into()),
            ("beta.kubernetes.io/os".into(), "linux".into()),
            ("kubernetes.io/arch".into(), "amd64".into()),
            ("kubernetes.io/hostname".into(), name.into()),
            ("kubernetes.io/os".into(), "linux".into()),
        ];
        if self == Layout::Minikube {
            // minikube labels every node; "primary" marks the first control plane
            l.push((
                "minikube.k8s.io/commit".into(),
                "f8f52f5de11fc6ad8244afac475e1d0f96841df1".into(),
            ));
            l.push(("minikube.k8s.io/name".into(), "minikube".into()));
            l.push((
                "minikube.k8s.io/primary".into(),
                (name == "minikube").to_string(),
            ));
            l.push((
                "minikube.k8s.io/updated_at".into(),
                "2025_06_01T00_00_00_0700".into(),
            ));
            l.push(("minikube.k8s.io/version".into(), "v1.36.0".into()));
        }
        if role == Role::ControlPlane {
            // kubeadm's mark-control-plane phase (kind and minikube run kubeadm too)
            l.push((
                "node-role.kubernetes.io/control-plane".into(),
                String::new(),
            ));
            l.push((
                "node.kubernetes.io/exclude-from-external-load-balancers".into(),
                String::new(),
            ));
        }
        l.sort();
        l
    }

    /// Taints on control-plane nodes. kubeadm and kind: the control-plane NoSchedule taint
    /// (kind removes it only when the cluster has no workers, which callers must handle);
    /// minikube registers every node with `taints: []`, so none.
    pub fn control_plane_taints(self) -> Vec<(String, String)> {
        match self {
            Layout::Minikube => vec![],
            _ => vec![(
                "node-role.kubernetes.io/control-plane".into(),
                "NoSchedule".into(),
            )],
        }
    }

    fn cert_dir(self) -> &'static str {
        match self {
            Layout::Minikube => "/var/lib/minikube/certs",
            _ => "/etc/kubernetes/pki",
        }
    }

    fn api_port(self) -> u16 {
        if self == Layout::Minikube { 8443 } else { 6443 }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Layout::all()
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                format!("unknown layout {s:?}; valid values: kubeadm, kubeadm-usr, kind, minikube")
            })
    }
}

// ---------------------------------------------------------------------------------------
// Small helpers

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Clearly-fake PEM: valid armour around base64 of a sentence saying it is fake.
fn fake_pem(label: &str, subject: &str) -> String {
    let body = base64(
        format!("yurtsim FAKE {label} for {subject}. Not a real certificate or key; do not use.")
            .as_bytes(),
    );
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).expect("ascii"));
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

fn ca_pem(cluster: &str) -> String {
    fake_pem(
        "CERTIFICATE",
        &format!("CN=kubernetes (cluster {cluster} CA)"),
    )
}

struct Writer<'a> {
    root: &'a Path,
}

impl Writer<'_> {
    fn file(&self, host: &str, text: &str, mode: u32) -> io::Result<()> {
        let p = self.root.join(host.trim_start_matches('/'));
        if let Some(d) = p.parent() {
            fs::create_dir_all(d)?;
        }
        // mode applies on creation only; no fsync: seeding must be fast
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&p)?;
        f.write_all(text.as_bytes())
    }
    fn dir(&self, host: &str) -> io::Result<()> {
        fs::create_dir_all(self.root.join(host.trim_start_matches('/')))
    }
    fn symlink(&self, host: &str, target: &str) -> io::Result<()> {
        let p = self.root.join(host.trim_start_matches('/'));
        if let Some(d) = p.parent() {
            fs::create_dir_all(d)?;
        }
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::os::unix::fs::symlink(target, p)
    }
}

fn pause_image(version: &str) -> &'static str {
    if Version::kubernetes(version) >= Version::new(1, 31, 0) {
        "registry.k8s.io/pause:3.10"
    } else {
        "registry.k8s.io/pause:3.9"
    }
}

fn etcd_image(version: &str) -> &'static str {
    match Version::kubernetes(version) {
        v if v >= Version::new(1, 33, 0) => "registry.k8s.io/etcd:3.5.21-0",
        v if v >= Version::new(1, 32, 0) => "registry.k8s.io/etcd:3.5.16-0",
        v if v >= Version::new(1, 31, 0) => "registry.k8s.io/etcd:3.5.15-0",
        v if v >= Version::new(1, 30, 0) => "registry.k8s.io/etcd:3.5.12-0",
        _ => "registry.k8s.io/etcd:3.5.10-0",
    }
}

// ---------------------------------------------------------------------------------------
// systemd files

const KUBELET_SERVICE_PKG: &str = "[Unit]
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

fn kubeadm_dropin(extra_env_file: &str, kind_order: bool) -> String {
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

const KIND_KUBELET_SERVICE: &str = "# kind's variant of the packaged kubelet.service
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

const KIND_11_CONF: &str = "# kind specific additions
[Service]
# cgroup v2: create the kubelet cgroup before start
ExecStartPre=/bin/sh -euc \"if [ -f /sys/fs/cgroup/cgroup.controllers ]; then /kind/bin/create-kubelet-cgroup-v2.sh; fi\"
# cgroup v1 without /sys/fs/cgroup/systemd/kubelet (e.g. WSL2)
ExecStartPre=/bin/sh -euc \"if [ ! -f /sys/fs/cgroup/cgroup.controllers ] && [ ! -d /sys/fs/cgroup/systemd/kubelet ]; then mkdir -p /sys/fs/cgroup/systemd/kubelet; fi\"
";

fn minikube_service(version: &str) -> String {
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

fn minikube_dropin(node: &NodeSeed) -> String {
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
fn node_local_cri_socket(version: &str) -> bool {
    Version::kubernetes(version) >= Version::new(1, 34, 0)
}

fn kubeadm_flags(layout: Layout, node: &NodeSeed) -> String {
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

// ---------------------------------------------------------------------------------------
// Kubelet configuration and kubeconfigs

fn kubelet_config_yaml(layout: Layout, version: &str) -> String {
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

fn embedded_user(subject: &str) -> String {
    format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        base64(fake_pem("CERTIFICATE", subject).as_bytes()),
        base64(fake_pem("RSA PRIVATE KEY", subject).as_bytes())
    )
}

const KUBELET_PEM: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

fn kubelet_conf(node: &NodeSeed, ca_data: &str) -> String {
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

// ---------------------------------------------------------------------------------------
// Static pod manifests (kubeadm's rendering: keys sorted, volumes sorted by name)

struct Vol {
    name: &'static str,
    path: String,
    ty: &'static str,
    read_only: bool,
}

fn vol(name: &'static str, path: &str, ty: &'static str, read_only: bool) -> Vol {
    Vol {
        name,
        path: path.to_owned(),
        ty,
        read_only,
    }
}

struct Probe {
    kind: &'static str,
    failure: u32,
    host: String,
    path: &'static str,
    port: u16,
    scheme: &'static str,
    initial_delay: Option<u32>,
    period: u32,
}

fn render_probe(p: &Probe) -> String {
    let mut s = format!(
        "    {}:\n      failureThreshold: {}\n      httpGet:\n        host: {}\n        path: {}\n        port: {}\n        scheme: {}\n",
        p.kind, p.failure, p.host, p.path, p.port, p.scheme
    );
    if let Some(d) = p.initial_delay {
        s.push_str(&format!("      initialDelaySeconds: {d}\n"));
    }
    s.push_str(&format!(
        "      periodSeconds: {}\n      timeoutSeconds: 15\n",
        p.period
    ));
    s
}

struct PodSpec<'a> {
    component: &'static str,
    annotation: Option<(&'static str, String)>,
    command: Vec<String>,
    image: String,
    probes: Vec<Probe>,
    resources: &'a str,
    volumes: Vec<Vol>,
}

fn render_pod(p: PodSpec<'_>) -> String {
    let mut s = String::from("apiVersion: v1\nkind: Pod\nmetadata:\n");
    if let Some((k, v)) = &p.annotation {
        s.push_str(&format!("  annotations:\n    {k}: {v}\n"));
    }
    s.push_str(&format!(
        "  creationTimestamp: null\n  labels:\n    component: {c}\n    tier: control-plane\n  name: {c}\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n",
        c = p.component
    ));
    for a in &p.command {
        s.push_str(&format!("    - {a}\n"));
    }
    s.push_str(&format!(
        "    image: {}\n    imagePullPolicy: IfNotPresent\n",
        p.image
    ));
    let mut probes = p.probes;
    probes.sort_by_key(|x| x.kind);
    let (before, after): (Vec<_>, Vec<_>) = probes.iter().partition(|x| x.kind < "name");
    for pr in before {
        s.push_str(&render_probe(pr));
    }
    s.push_str(&format!("    name: {}\n", p.component));
    for pr in after.iter().filter(|x| x.kind < "resources") {
        s.push_str(&render_probe(pr));
    }
    s.push_str(&format!("    resources:\n      requests:\n{}", p.resources));
    for pr in after.iter().filter(|x| x.kind > "resources") {
        s.push_str(&render_probe(pr));
    }
    let mut vols = p.volumes;
    vols.sort_by_key(|v| v.name);
    s.push_str("    volumeMounts:\n");
    for v in &vols {
        s.push_str(&format!(
            "    - mountPath: {}\n      name: {}\n",
            v.path, v.name
        ));
        if v.read_only {
            s.push_str("      readOnly: true\n");
        }
    }
    s.push_str(
        "  hostNetwork: true\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  securityContext:\n    seccompProfile:\n      type: RuntimeDefault\n  volumes:\n",
    );
    for v in &vols {
        s.push_str(&format!(
            "  - hostPath:\n      path: {}\n      type: {}\n    name: {}\n",
            v.path, v.ty, v.name
        ));
    }
    s.push_str("status: {}\n");
    s
}

fn ca_volumes(cert_dir: &str) -> Vec<Vol> {
    vec![
        vol("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate", true),
        vol(
            "etc-ca-certificates",
            "/etc/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
        vol("k8s-certs", cert_dir, "DirectoryOrCreate", true),
        vol(
            "usr-local-share-ca-certificates",
            "/usr/local/share/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
        vol(
            "usr-share-ca-certificates",
            "/usr/share/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
    ]
}

fn https_probe(
    kind: &'static str,
    failure: u32,
    host: &str,
    path: &'static str,
    port: u16,
    delay: Option<u32>,
    period: u32,
) -> Probe {
    Probe {
        kind,
        failure,
        host: host.to_owned(),
        path,
        port,
        scheme: "HTTPS",
        initial_delay: delay,
        period,
    }
}

fn args(bin: &str, mut flags: Vec<String>) -> Vec<String> {
    flags.sort();
    std::iter::once(bin.to_owned()).chain(flags).collect()
}

fn manifests(layout: Layout, node: &NodeSeed) -> Vec<(&'static str, String)> {
    let cd = layout.cert_dir();
    let ip = &node.internal_ip;
    let port = layout.api_port();
    let v = &node.kubernetes_version;
    let etcd_dir = if layout == Layout::Minikube {
        "/var/lib/minikube/etcd"
    } else {
        "/var/lib/etcd"
    };

    // kube-apiserver
    let admission = if layout == Layout::Minikube {
        "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"
    } else {
        "NodeRestriction"
    };
    let mut apiserver = vec![
        format!("--advertise-address={ip}"),
        "--allow-privileged=true".into(),
        "--authorization-mode=Node,RBAC".into(),
        format!("--client-ca-file={cd}/ca.crt"),
        format!("--enable-admission-plugins={admission}"),
        "--enable-bootstrap-token-auth=true".into(),
        format!("--etcd-cafile={cd}/etcd/ca.crt"),
        format!("--etcd-certfile={cd}/apiserver-etcd-client.crt"),
        format!("--etcd-keyfile={cd}/apiserver-etcd-client.key"),
        "--etcd-servers=https://127.0.0.1:2379".into(),
        format!("--kubelet-client-certificate={cd}/apiserver-kubelet-client.crt"),
        format!("--kubelet-client-key={cd}/apiserver-kubelet-client.key"),
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname".into(),
        format!("--proxy-client-cert-file={cd}/front-proxy-client.crt"),
        format!("--proxy-client-key-file={cd}/front-proxy-client.key"),
        "--requestheader-allowed-names=front-proxy-client".into(),
        format!("--requestheader-client-ca-file={cd}/front-proxy-ca.crt"),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        format!("--secure-port={port}"),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={cd}/sa.pub"),
        format!("--service-account-signing-key-file={cd}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".into(),
        format!("--tls-cert-file={cd}/apiserver.crt"),
        format!("--tls-private-key-file={cd}/apiserver.key"),
    ];
    if layout == Layout::Kind {
        apiserver.push("--runtime-config=".into());
    }
    let apiserver = render_pod(PodSpec {
        component: "kube-apiserver",
        annotation: Some((
            "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
            format!("{ip}:{port}"),
        )),
        command: args("kube-apiserver", apiserver),
        image: format!("registry.k8s.io/kube-apiserver:{v}"),
        probes: vec![
            https_probe("livenessProbe", 8, ip, "/livez", port, Some(10), 10),
            https_probe("readinessProbe", 3, ip, "/readyz", port, None, 1),
            https_probe("startupProbe", 24, ip, "/livez", port, Some(10), 10),
        ],
        resources: "        cpu: 250m\n",
        volumes: ca_volumes(cd),
    });

    // kube-controller-manager
    let mut kcm = vec![
        "--allocate-node-cidrs=true".into(),
        "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--client-ca-file={cd}/ca.crt"),
        "--cluster-cidr=10.244.0.0/16".into(),
        format!("--cluster-name={}", node.cluster_name),
        format!("--cluster-signing-cert-file={cd}/ca.crt"),
        format!("--cluster-signing-key-file={cd}/ca.key"),
        "--controllers=*,bootstrapsigner,tokencleaner".into(),
        "--kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        format!("--leader-elect={}", layout != Layout::Minikube),
        format!("--requestheader-client-ca-file={cd}/front-proxy-ca.crt"),
        format!("--root-ca-file={cd}/ca.crt"),
        format!("--service-account-private-key-file={cd}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".into(),
        "--use-service-account-credentials=true".into(),
    ];
    if layout == Layout::Kind {
        kcm.push("--enable-hostpath-provisioner=true".into());
    }
    let mut kcm_vols = ca_volumes(cd);
    kcm_vols.push(vol(
        "flexvolume-dir",
        "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
        "DirectoryOrCreate",
        false,
    ));
    kcm_vols.push(vol(
        "kubeconfig",
        "/etc/kubernetes/controller-manager.conf",
        "FileOrCreate",
        true,
    ));
    let kcm = render_pod(PodSpec {
        component: "kube-controller-manager",
        annotation: None,
        command: args("kube-controller-manager", kcm),
        image: format!("registry.k8s.io/kube-controller-manager:{v}"),
        probes: vec![
            https_probe(
                "livenessProbe",
                8,
                "127.0.0.1",
                "/healthz",
                10257,
                Some(10),
                10,
            ),
            https_probe(
                "startupProbe",
                24,
                "127.0.0.1",
                "/healthz",
                10257,
                Some(10),
                10,
            ),
        ],
        resources: "        cpu: 200m\n",
        volumes: kcm_vols,
    });

    // kube-scheduler
    let sched = render_pod(PodSpec {
        component: "kube-scheduler",
        annotation: None,
        command: args(
            "kube-scheduler",
            vec![
                "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                "--bind-address=127.0.0.1".into(),
                "--kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                format!("--leader-elect={}", layout != Layout::Minikube),
            ],
        ),
        image: format!("registry.k8s.io/kube-scheduler:{v}"),
        probes: vec![
            https_probe(
                "livenessProbe",
                8,
                "127.0.0.1",
                "/livez",
                10259,
                Some(10),
                10,
            ),
            https_probe("readinessProbe", 3, "127.0.0.1", "/readyz", 10259, None, 1),
            https_probe(
                "startupProbe",
                24,
                "127.0.0.1",
                "/livez",
                10259,
                Some(10),
                10,
            ),
        ],
        resources: "        cpu: 100m\n",
        volumes: vec![vol(
            "kubeconfig",
            "/etc/kubernetes/scheduler.conf",
            "FileOrCreate",
            true,
        )],
    });

    // etcd (single member, as on the node where kubeadm init ran)
    let n = &node.name;
    let etcd_flags = vec![
        format!("--advertise-client-urls=https://{ip}:2379"),
        format!("--cert-file={cd}/etcd/server.crt"),
        "--client-cert-auth=true".into(),
        format!("--data-dir={etcd_dir}"),
        "--experimental-initial-corrupt-check=true".into(),
        "--experimental-watch-progress-notify-interval=5s".into(),
        format!("--initial-advertise-peer-urls=https://{ip}:2380"),
        format!("--initial-cluster={n}=https://{ip}:2380"),
        format!("--key-file={cd}/etcd/server.key"),
        format!("--listen-client-urls=https://127.0.0.1:2379,https://{ip}:2379"),
        "--listen-metrics-urls=http://127.0.0.1:2381".into(),
        format!("--listen-peer-urls=https://{ip}:2380"),
        format!("--name={n}"),
        format!("--peer-cert-file={cd}/etcd/peer.crt"),
        "--peer-client-cert-auth=true".into(),
        format!("--peer-key-file={cd}/etcd/peer.key"),
        format!("--peer-trusted-ca-file={cd}/etcd/ca.crt"),
        "--snapshot-count=10000".into(),
        format!("--trusted-ca-file={cd}/etcd/ca.crt"),
    ];
    let http = |kind, failure, path, delay, period| Probe {
        kind,
        failure,
        host: "127.0.0.1".into(),
        path,
        port: 2381,
        scheme: "HTTP",
        initial_delay: delay,
        period,
    };
    let etcd = render_pod(PodSpec {
        component: "etcd",
        annotation: Some((
            "kubeadm.kubernetes.io/etcd.advertise-client-urls",
            format!("https://{ip}:2379"),
        )),
        command: args("etcd", etcd_flags),
        image: etcd_image(v).into(),
        probes: vec![
            http("livenessProbe", 8, "/livez", Some(10), 10),
            http("readinessProbe", 3, "/readyz", None, 1),
            http("startupProbe", 24, "/readyz", Some(10), 10),
        ],
        resources: "        cpu: 100m\n        memory: 100Mi\n",
        volumes: vec![
            vol(
                "etcd-certs",
                &format!("{cd}/etcd"),
                "DirectoryOrCreate",
                false,
            ),
            vol("etcd-data", etcd_dir, "DirectoryOrCreate", false),
        ],
    });
    vec![
        ("etcd.yaml", etcd),
        ("kube-apiserver.yaml", apiserver),
        ("kube-controller-manager.yaml", kcm),
        ("kube-scheduler.yaml", sched),
    ]
}

// ---------------------------------------------------------------------------------------
// Seeding

/// Where the layout's systemd files and extra-args file live (host paths).
struct UnitPaths {
    service: String,
    dropin_dir: String,
    extra_env: &'static str,
}

fn unit_paths(layout: Layout, opts: &SeedOptions) -> UnitPaths {
    let pkg = if opts.lib_systemd_dir {
        "/lib/systemd/system"
    } else {
        "/usr/lib/systemd/system"
    };
    match layout {
        Layout::Kubeadm => UnitPaths {
            service: format!("{pkg}/kubelet.service"),
            dropin_dir: "/etc/systemd/system/kubelet.service.d".into(),
            extra_env: "/etc/default/kubelet",
        },
        Layout::KubeadmUsr => UnitPaths {
            service: format!("{pkg}/kubelet.service"),
            dropin_dir: format!("{pkg}/kubelet.service.d"),
            extra_env: "/etc/sysconfig/kubelet",
        },
        Layout::Kind => UnitPaths {
            service: "/etc/systemd/system/kubelet.service".into(),
            dropin_dir: "/etc/systemd/system/kubelet.service.d".into(),
            extra_env: "/etc/default/kubelet",
        },
        Layout::Minikube => UnitPaths {
            service: "/lib/systemd/system/kubelet.service".into(),
            dropin_dir: "/etc/systemd/system/kubelet.service.d".into(),
            extra_env: "/etc/default/kubelet",
        },
    }
}

/// Fixed issue date of the kubelet's rotated client certificate (deterministic output).
const KUBELET_PEM_DATED: &str = "/var/lib/kubelet/pki/kubelet-client-2025-06-01-00-00-00.pem";

/// Replaces the seeded stand-in certificates with a real cluster's: the CA in the layout's
/// certificate directory and in kubelet.conf, and the kubelet's client certificate and key in
/// its rotated-certificate file (one PEM holding both, as the kubelet's certificate store
/// writes it: kubernetes/kubernetes@v1.37.2 pkg/kubelet/certificate/kubelet.go).
pub fn install_cluster_pki(
    root: &Path,
    layout: Layout,
    node: &NodeSeed,
    ca_pem: &str,
    client_pem: &str,
) -> std::io::Result<()> {
    let at = |p: &str| root.join(p.trim_start_matches('/'));
    let write = |p: &str, text: &str, mode: u32| -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(at(p), text)?;
        std::fs::set_permissions(at(p), std::fs::Permissions::from_mode(mode))
    };
    write(&format!("{}/ca.crt", layout.cert_dir()), ca_pem, 0o644)?;
    write(
        "/etc/kubernetes/kubelet.conf",
        &kubelet_conf(node, &base64(ca_pem.as_bytes())),
        0o600,
    )?;
    write(KUBELET_PEM_DATED, client_pem, 0o600)
}

/// Writes the node's files under `root` (host "/etc/x" → `root/etc/x`). Idempotent and
/// deterministic; no fsync.
pub fn seed_node(
    root: &Path,
    layout: Layout,
    node: &NodeSeed,
    opts: &SeedOptions,
) -> io::Result<()> {
    let w = Writer { root };
    let cp = node.role == Role::ControlPlane;
    let paths = unit_paths(layout, opts);

    w.file("/etc/hostname", &format!("{}\n", node.name), 0o644)?;

    // systemd unit and drop-ins
    match layout {
        Layout::Kubeadm | Layout::KubeadmUsr => {
            w.file(&paths.service, KUBELET_SERVICE_PKG, 0o644)?;
            w.file(
                &format!("{}/10-kubeadm.conf", paths.dropin_dir),
                &kubeadm_dropin(paths.extra_env, false),
                0o644,
            )?;
        }
        Layout::Kind => {
            w.file(&paths.service, KIND_KUBELET_SERVICE, 0o644)?;
            w.file(
                &format!("{}/10-kubeadm.conf", paths.dropin_dir),
                &kubeadm_dropin(paths.extra_env, true),
                0o644,
            )?;
            w.file(
                &format!("{}/11-kind.conf", paths.dropin_dir),
                KIND_11_CONF,
                0o644,
            )?;
        }
        Layout::Minikube => {
            w.file(
                &paths.service,
                &minikube_service(&node.kubernetes_version),
                0o644,
            )?;
            w.file(
                &format!("{}/10-kubeadm.conf", paths.dropin_dir),
                &minikube_dropin(node),
                0o644,
            )?;
        }
    }
    // The packages ship the extra-args file; kind and minikube have none unless asked for.
    let packaged = matches!(layout, Layout::Kubeadm | Layout::KubeadmUsr);
    if packaged || opts.extra_args.is_some() {
        let extra = opts.extra_args.as_deref().unwrap_or("");
        w.file(
            paths.extra_env,
            &format!("KUBELET_EXTRA_ARGS={extra}\n"),
            0o644,
        )?;
    }

    // kubeadm's runtime files
    let flags = kubeadm_flags(layout, node);
    let env = if opts.unquoted_flags_env {
        format!("KUBELET_KUBEADM_ARGS={flags}\n")
    } else {
        format!("KUBELET_KUBEADM_ARGS=\"{flags}\"\n")
    };
    w.file("/var/lib/kubelet/kubeadm-flags.env", &env, 0o644)?;
    w.file(
        "/var/lib/kubelet/config.yaml",
        &kubelet_config_yaml(layout, &node.kubernetes_version),
        0o644,
    )?;
    if node_local_cri_socket(&node.kubernetes_version) {
        w.file(
            "/var/lib/kubelet/instance-config.yaml",
            &format!(
                "apiVersion: kubelet.config.k8s.io/v1beta1\ncontainerRuntimeEndpoint: {}\nkind: KubeletConfiguration\n",
                layout.cri_endpoint()
            ),
            0o644,
        )?;
    }
    // crictl's config: kind's base image (images/base/files/etc/crictl.yaml) and minikube
    // (pkg/minikube/cruntime/cri.go `populateCRIConfig`) write one; kubeadm hosts have none.
    if matches!(layout, Layout::Kind | Layout::Minikube) {
        w.file(
            "/etc/crictl.yaml",
            &format!("runtime-endpoint: {}\n", layout.cri_endpoint()),
            0o644,
        )?;
    }
    // /var/run is /run on every supported host (the CRI sockets live there).
    if std::fs::symlink_metadata(root.join("var/run")).is_err() {
        w.dir("/run")?;
        w.symlink("/var/run", "../run")?;
    }

    // PKI: kubelet.conf embeds the cluster CA and points at the rotated client cert
    let ca = ca_pem(&node.cluster_name);
    let ca_data = base64(ca.as_bytes());
    let cd = layout.cert_dir();
    w.file(&format!("{cd}/ca.crt"), &ca, 0o644)?;
    w.file(
        "/etc/kubernetes/kubelet.conf",
        &kubelet_conf(node, &ca_data),
        0o600,
    )?;
    let subject = format!("O=system:nodes, CN=system:node:{}", node.name);
    let client = format!(
        "{}{}",
        fake_pem("CERTIFICATE", &subject),
        fake_pem("EC PRIVATE KEY", &subject)
    );
    w.file(KUBELET_PEM_DATED, &client, 0o600)?;
    // the kubelet's certificate store uses an absolute symlink target
    w.symlink(KUBELET_PEM, KUBELET_PEM_DATED)?;
    let serving = format!("CN={}@1748736000", node.name);
    w.file(
        "/var/lib/kubelet/pki/kubelet.crt",
        &fake_pem("CERTIFICATE", &serving),
        0o644,
    )?;
    w.file(
        "/var/lib/kubelet/pki/kubelet.key",
        &fake_pem("RSA PRIVATE KEY", &serving),
        0o600,
    )?;

    w.dir("/etc/kubernetes/manifests")?;
    // Every real host has these; tools (and the sim's systemctl log) expect them.
    w.dir("/var/log")?;
    w.dir("/tmp")?;
    if !cp {
        return Ok(());
    }

    // Control plane: static pods, component kubeconfigs, cluster PKI
    for (file, text) in manifests(layout, node) {
        w.file(&format!("/etc/kubernetes/manifests/{file}"), &text, 0o600)?;
    }
    let local = format!("https://{}:{}", node.internal_ip, layout.api_port());
    let cn = &node.cluster_name;
    w.file(
        "/etc/kubernetes/admin.conf",
        &kubeconfig(
            cn,
            &node.api_server,
            &ca_data,
            "kubernetes-admin",
            &embedded_user("O=kubeadm:cluster-admins, CN=kubernetes-admin"),
        ),
        0o600,
    )?;
    // controller-manager.conf and scheduler.conf point at the local API server
    w.file(
        "/etc/kubernetes/controller-manager.conf",
        &kubeconfig(
            cn,
            &local,
            &ca_data,
            "system:kube-controller-manager",
            &embedded_user("CN=system:kube-controller-manager"),
        ),
        0o600,
    )?;
    w.file(
        "/etc/kubernetes/scheduler.conf",
        &kubeconfig(
            cn,
            &local,
            &ca_data,
            "system:kube-scheduler",
            &embedded_user("CN=system:kube-scheduler"),
        ),
        0o600,
    )?;
    w.file(
        &format!("{cd}/ca.key"),
        &fake_pem("RSA PRIVATE KEY", "cluster CA"),
        0o600,
    )?;
    w.file(
        &format!("{cd}/sa.key"),
        &fake_pem("RSA PRIVATE KEY", "service accounts"),
        0o600,
    )?;
    w.file(
        &format!("{cd}/sa.pub"),
        &fake_pem("PUBLIC KEY", "service accounts"),
        0o644,
    )?;
    for (name, subj) in [
        ("apiserver", "CN=kube-apiserver"),
        (
            "apiserver-kubelet-client",
            "CN=kube-apiserver-kubelet-client",
        ),
        ("apiserver-etcd-client", "CN=kube-apiserver-etcd-client"),
        ("front-proxy-ca", "CN=front-proxy-ca"),
        ("front-proxy-client", "CN=front-proxy-client"),
        ("etcd/ca", "CN=etcd-ca"),
        ("etcd/server", "CN=etcd-server"),
        ("etcd/peer", "CN=etcd-peer"),
        ("etcd/healthcheck-client", "CN=kube-etcd-healthcheck-client"),
    ] {
        w.file(
            &format!("{cd}/{name}.crt"),
            &fake_pem("CERTIFICATE", subj),
            0o644,
        )?;
        w.file(
            &format!("{cd}/{name}.key"),
            &fake_pem("RSA PRIVATE KEY", subj),
            0o600,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::kubelet_config::kubelet_view;
    use crate::nodes::systemd::{last_flag, load_unit};
    use std::collections::BTreeMap;

    fn seed(layout: Layout, role: Role, opts: &SeedOptions) -> (tempfile::TempDir, NodeSeed) {
        let (name, _) =
            layout.node_names(1, 1)[if role == Role::ControlPlane { 0 } else { 1 }].clone();
        let ip = layout.node_ip(0);
        let node = NodeSeed {
            name,
            role,
            internal_ip: layout.node_ip(if role == Role::ControlPlane { 0 } else { 1 }),
            api_server: layout.api_server(&ip),
            kubernetes_version: "v1.33.1".into(),
            cluster_name: layout.cluster_name().into(),
        };
        let dir = tempfile::tempdir().unwrap();
        seed_node(dir.path(), layout, &node, opts).unwrap();
        (dir, node)
    }

    #[test]
    fn every_layout_yields_the_expected_kubelet_view() {
        for layout in Layout::all() {
            for role in [Role::ControlPlane, Role::Worker] {
                let (dir, node) = seed(layout, role, &SeedOptions::default());
                let r = dir.path();
                let unit = load_unit(r, "kubelet.service").unwrap();
                let v = kubelet_view(r, &unit).unwrap();
                let ctx = format!("{layout} {role:?}");
                assert_eq!(
                    v.kubeconfig.as_deref(),
                    Some("/etc/kubernetes/kubelet.conf"),
                    "{ctx}"
                );
                assert_eq!(
                    v.static_pod_path.as_deref(),
                    Some("/etc/kubernetes/manifests"),
                    "{ctx}"
                );
                assert_eq!(
                    v.config_file.as_deref(),
                    Some("/var/lib/kubelet/config.yaml"),
                    "{ctx}"
                );
                assert_eq!(
                    v.bootstrap_kubeconfig.as_deref(),
                    Some("/etc/kubernetes/bootstrap-kubelet.conf"),
                    "{ctx}"
                );
                assert_eq!(v.server, Ok(node.api_server.clone()), "{ctx}");
                let flags_env_seen = last_flag(&v.argv, "pod-infra-container-image").is_some();
                assert_eq!(
                    flags_env_seen,
                    layout != Layout::Minikube,
                    "{ctx}: {:?}",
                    v.argv
                );
                if layout == Layout::Minikube {
                    assert_eq!(v.argv[0], "/var/lib/minikube/binaries/v1.33.1/kubelet");
                    assert_eq!(
                        last_flag(&v.argv, "hostname-override"),
                        Some(node.name.as_str())
                    );
                    assert_eq!(
                        last_flag(&v.argv, "node-ip"),
                        Some(node.internal_ip.as_str())
                    );
                }
                if layout == Layout::Kind {
                    let want = format!("kind://docker/kind/{}", node.name);
                    assert_eq!(last_flag(&v.argv, "provider-id"), Some(want.as_str()));
                }
                let manifests: Vec<_> = fs::read_dir(r.join("etc/kubernetes/manifests"))
                    .unwrap()
                    .collect();
                assert_eq!(
                    manifests.len(),
                    if role == Role::ControlPlane { 4 } else { 0 },
                    "{ctx}"
                );
            }
        }
    }

    #[test]
    fn unit_sources_per_layout() {
        let cases: &[(Layout, bool, &[&str])] = &[
            (
                Layout::Kubeadm,
                false,
                &[
                    "usr/lib/systemd/system/kubelet.service",
                    "etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                ],
            ),
            (
                Layout::Kubeadm,
                true,
                &[
                    "lib/systemd/system/kubelet.service",
                    "etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                ],
            ),
            (
                Layout::KubeadmUsr,
                false,
                &[
                    "usr/lib/systemd/system/kubelet.service",
                    "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
                ],
            ),
            (
                Layout::KubeadmUsr,
                true,
                &[
                    "lib/systemd/system/kubelet.service",
                    "lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
                ],
            ),
            (
                Layout::Kind,
                false,
                &[
                    "etc/systemd/system/kubelet.service",
                    "etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                    "etc/systemd/system/kubelet.service.d/11-kind.conf",
                ],
            ),
            (
                Layout::Minikube,
                false,
                &[
                    "lib/systemd/system/kubelet.service",
                    "etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                ],
            ),
        ];
        for (layout, lib, want) in cases {
            let opts = SeedOptions {
                lib_systemd_dir: *lib,
                ..Default::default()
            };
            let (dir, _) = seed(*layout, Role::Worker, &opts);
            let u = load_unit(dir.path(), "kubelet.service").unwrap();
            let got: Vec<String> = u
                .sources()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            assert_eq!(got, *want, "{layout} lib={lib}");
            assert!(u.warnings().is_empty(), "{layout}: {:?}", u.warnings());
        }
    }

    #[test]
    fn argv_order_differs_between_kubeadm_and_kind() {
        let (kd, _) = seed(
            Layout::Kubeadm,
            Role::Worker,
            &SeedOptions {
                extra_args: Some("--v=2".into()),
                ..Default::default()
            },
        );
        let (kn, _) = seed(
            Layout::Kind,
            Role::Worker,
            &SeedOptions {
                extra_args: Some("--v=2".into()),
                ..Default::default()
            },
        );
        let pos = |dir: &Path| {
            let argv = load_unit(dir, "kubelet.service")
                .unwrap()
                .command_line(dir)
                .unwrap();
            let at = |p: &str| argv.iter().position(|a| a.starts_with(p)).unwrap();
            (at("--v=2"), at("--container-runtime-endpoint"))
        };
        let (extra, kubeadm) = pos(kd.path());
        assert!(extra > kubeadm, "kubeadm: EXTRA after KUBEADM");
        let (extra, kubeadm) = pos(kn.path());
        assert!(extra < kubeadm, "kind: EXTRA before KUBEADM");
    }

    #[test]
    fn seed_options_change_the_effective_kubeconfig_as_systemd_would() {
        // (layout, options, flags appended to kubeadm-flags.env, expected --kubeconfig)
        let other = Some("--kubeconfig=/other".to_owned());
        let yurt = " --kubeconfig=/var/lib/openyurt/kubelet.conf --bootstrap-kubeconfig= ";
        let kc = "/etc/kubernetes/kubelet.conf";
        let cases: Vec<(Layout, SeedOptions, &str, &str)> = vec![
            (
                Layout::Kubeadm,
                SeedOptions {
                    unquoted_flags_env: true,
                    ..Default::default()
                },
                "",
                kc,
            ),
            (
                Layout::Kubeadm,
                SeedOptions {
                    extra_args: other.clone(),
                    ..Default::default()
                },
                "",
                "/other",
            ),
            (
                Layout::KubeadmUsr,
                SeedOptions {
                    extra_args: other.clone(),
                    lib_systemd_dir: true,
                    ..Default::default()
                },
                "",
                "/other",
            ),
            (
                Layout::Kind,
                SeedOptions {
                    extra_args: other.clone(),
                    ..Default::default()
                },
                "",
                "/other",
            ),
            (
                Layout::Minikube,
                SeedOptions {
                    extra_args: other.clone(),
                    ..Default::default()
                },
                "",
                kc,
            ),
            // yurtctl-style patch of kubeadm-flags.env: later on kind's line, earlier on kubeadm's
            (
                Layout::Kubeadm,
                SeedOptions {
                    extra_args: other.clone(),
                    ..Default::default()
                },
                yurt,
                "/other",
            ),
            (
                Layout::Kind,
                SeedOptions {
                    extra_args: other.clone(),
                    ..Default::default()
                },
                yurt,
                "/var/lib/openyurt/kubelet.conf",
            ),
            (
                Layout::Kubeadm,
                SeedOptions::default(),
                yurt,
                "/var/lib/openyurt/kubelet.conf",
            ),
            (
                Layout::Kubeadm,
                SeedOptions {
                    unquoted_flags_env: true,
                    ..Default::default()
                },
                yurt,
                "/var/lib/openyurt/kubelet.conf",
            ),
            (Layout::Minikube, SeedOptions::default(), yurt, kc),
        ];
        for (layout, opts, append, want) in cases {
            let (dir, _) = seed(layout, Role::Worker, &opts);
            let r = dir.path();
            let env_path = r.join("var/lib/kubelet/kubeadm-flags.env");
            let env = fs::read_to_string(&env_path).unwrap();
            assert_eq!(
                env.contains('"'),
                !opts.unquoted_flags_env,
                "{layout}: {env}"
            );
            if !append.is_empty() {
                let patched = if opts.unquoted_flags_env {
                    env.trim_end().to_owned() + append + "\n"
                } else {
                    env.replacen("\"\n", &format!("{append}\"\n"), 1)
                };
                fs::write(&env_path, patched).unwrap();
            }
            let u = load_unit(r, "kubelet.service").unwrap();
            let v = kubelet_view(r, &u).unwrap();
            assert_eq!(
                v.kubeconfig.as_deref(),
                Some(want),
                "{layout} {opts:?} append={append:?}"
            );
        }
    }

    #[test]
    fn removing_the_client_cert_breaks_the_server() {
        for layout in Layout::all() {
            let (dir, _) = seed(layout, Role::Worker, &SeedOptions::default());
            let r = dir.path();
            fs::remove_file(r.join(KUBELET_PEM_DATED.trim_start_matches('/'))).unwrap();
            let u = load_unit(r, "kubelet.service").unwrap();
            let e = kubelet_view(r, &u).unwrap().server.unwrap_err();
            assert!(e.contains(KUBELET_PEM), "{layout}: {e}");
        }
    }

    fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut m = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                let meta = fs::symlink_metadata(&p).unwrap();
                if meta.file_type().is_symlink() {
                    m.insert(
                        rel,
                        format!("-> {}", fs::read_link(&p).unwrap().display()).into_bytes(),
                    );
                } else if meta.is_dir() {
                    m.insert(rel + "/", vec![]);
                    stack.push(p);
                } else {
                    m.insert(rel, fs::read(&p).unwrap());
                }
            }
        }
        m
    }

    #[test]
    fn seeding_is_deterministic_and_idempotent() {
        for layout in Layout::all() {
            for role in [Role::ControlPlane, Role::Worker] {
                let opts = SeedOptions {
                    extra_args: Some("--v=4".into()),
                    ..Default::default()
                };
                let (a, node) = seed(layout, role, &opts);
                let first = tree(a.path());
                seed_node(a.path(), layout, &node, &opts).unwrap();
                assert_eq!(tree(a.path()), first, "{layout} {role:?} twice");
                let b = tempfile::tempdir().unwrap();
                seed_node(b.path(), layout, &node, &opts).unwrap();
                assert_eq!(tree(b.path()), first, "{layout} {role:?} fresh");
            }
        }
    }

    #[test]
    fn control_plane_manifests_parse_and_carry_the_real_flags() {
        for layout in Layout::all() {
            let (dir, node) = seed(layout, Role::ControlPlane, &SeedOptions::default());
            let r = dir.path();
            let kcm =
                fs::read_to_string(r.join("etc/kubernetes/manifests/kube-controller-manager.yaml"))
                    .unwrap();
            assert!(
                kcm.contains("\n    - --controllers=*,bootstrapsigner,tokencleaner\n"),
                "{layout}"
            );
            assert!(kcm.contains("\n    - --kubeconfig=/etc/kubernetes/controller-manager.conf\n"));
            assert!(kcm.contains("image: registry.k8s.io/kube-controller-manager:v1.33.1\n"));
            for f in [
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
            ] {
                let text = fs::read_to_string(r.join(format!("etc/kubernetes/manifests/{f}.yaml")))
                    .unwrap();
                let v: serde_json::Value =
                    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{layout} {f}: {e}"));
                assert_eq!(v["metadata"]["name"], f, "{layout}");
                let c = &v["spec"]["containers"][0];
                assert_eq!(c["command"][0], f);
                let mounts = c["volumeMounts"].as_array().unwrap().len();
                assert_eq!(
                    mounts,
                    v["spec"]["volumes"].as_array().unwrap().len(),
                    "{layout} {f}"
                );
            }
            for kc in ["admin.conf", "controller-manager.conf", "scheduler.conf"] {
                let server = crate::nodes::kubelet_config::kubeconfig_server(
                    r,
                    &format!("/etc/kubernetes/{kc}"),
                )
                .unwrap();
                let want = if kc == "admin.conf" {
                    node.api_server.clone()
                } else {
                    format!("https://{}:{}", node.internal_ip, layout.api_port())
                };
                assert_eq!(server, want, "{layout} {kc}");
            }
        }
    }

    #[test]
    fn names_ips_labels_taints() {
        let names = |l: Layout| {
            l.node_names(2, 2)
                .into_iter()
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Layout::Kubeadm),
            ["control-plane-1", "control-plane-2", "worker-1", "worker-2"]
        );
        assert_eq!(
            names(Layout::Kind),
            [
                "kind-control-plane",
                "kind-control-plane2",
                "kind-worker",
                "kind-worker2"
            ]
        );
        assert_eq!(
            names(Layout::Minikube),
            ["minikube", "minikube-m02", "minikube-m03", "minikube-m04"]
        );
        assert_eq!(Layout::Minikube.node_names(1, 1)[1].1, Role::Worker);
        let ips: &[(Layout, usize, &str)] = &[
            (Layout::Kubeadm, 0, "10.0.0.1"),
            (Layout::Kubeadm, 254, "10.0.1.1"),
            (Layout::Kind, 0, "172.18.0.2"),
            (Layout::Kind, 254, "172.18.1.0"),
            (Layout::Minikube, 0, "192.168.49.2"),
            (Layout::Minikube, 253, "192.168.50.2"),
        ];
        for (l, i, want) in ips {
            assert_eq!(l.node_ip(*i), *want, "{l} {i}");
        }
        for l in Layout::all() {
            let set: std::collections::HashSet<String> = (0..6000).map(|i| l.node_ip(i)).collect();
            assert_eq!(set.len(), 6000, "{l} IPs unique");
            assert_eq!(l.to_string().parse::<Layout>(), Ok(l));
        }
        assert!("k3s".parse::<Layout>().unwrap_err().contains("kubeadm-usr"));
        let has = |l: Layout, n: &str, r: Role, k: &str| {
            l.node_labels(n, r).iter().any(|(key, _)| key == k)
        };
        assert!(has(
            Layout::Kubeadm,
            "control-plane-1",
            Role::ControlPlane,
            "node.kubernetes.io/exclude-from-external-load-balancers"
        ));
        assert!(!has(
            Layout::Kubeadm,
            "worker-1",
            Role::Worker,
            "node-role.kubernetes.io/control-plane"
        ));
        assert!(has(
            Layout::Minikube,
            "minikube-m02",
            Role::Worker,
            "minikube.k8s.io/primary"
        ));
        assert!(!has(
            Layout::Kind,
            "kind-worker",
            Role::Worker,
            "minikube.k8s.io/name"
        ));
        assert!(Layout::Minikube.control_plane_taints().is_empty());
        assert_eq!(Layout::Kind.control_plane_taints()[0].1, "NoSchedule");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
    }
}
