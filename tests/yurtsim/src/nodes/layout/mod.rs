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
//!
//! This file holds the layouts and what a node is seeded with, and the small helpers the
//! files share; the files themselves: `units` (the kubelet's systemd files),
//! `kubelet_files` (its configuration and the kubeconfigs), `manifests` (kubeadm's static
//! pods) and `seed` (where each layout puts them, and the seeding).

use crate::version::Version;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::str::FromStr;

mod kubelet_files;
mod manifests;
mod seed;
mod units;

pub(crate) use kubelet_files::*;
use manifests::*;
pub use seed::*;
use units::*;

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

#[cfg(test)]
mod tests;
