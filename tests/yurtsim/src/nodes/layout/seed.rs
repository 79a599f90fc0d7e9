//! Seeding a node's root: where each layout puts its unit files, the cluster's PKI, and the
//! files written.

use std::io;
use std::path::Path;

use super::*;

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
pub(super) const KUBELET_PEM_DATED: &str =
    "/var/lib/kubelet/pki/kubelet-client-2025-06-01-00-00-00.pem";

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
    for m in manifests(layout, node) {
        w.file(
            &format!("/etc/kubernetes/manifests/{}", m.file),
            &m.text,
            0o600,
        )?;
        // the directories they mount are there: the distribution's CA directories, and what
        // the kubelet made when `kubeadm init` had it start them, such as etcd's data directory
        for dir in &m.dirs {
            w.dir(dir)?;
        }
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
