//! Tests of the layouts' seeding: the kubelet's view of each, unit sources and argv order,
//! seed options, determinism, the control-plane manifests and node names.

use super::*;
use crate::nodes::kubelet_config::kubelet_view;
use crate::nodes::systemd::{last_flag, load_unit};
use std::collections::BTreeMap;

fn seed(layout: Layout, role: Role, opts: &SeedOptions) -> (tempfile::TempDir, NodeSeed) {
    let (name, _) = layout.node_names(1, 1)[if role == Role::ControlPlane { 0 } else { 1 }].clone();
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
            let text =
                fs::read_to_string(r.join(format!("etc/kubernetes/manifests/{f}.yaml"))).unwrap();
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
    let has =
        |l: Layout, n: &str, r: Role, k: &str| l.node_labels(n, r).iter().any(|(key, _)| key == k);
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
