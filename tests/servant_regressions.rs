//! Regression rows of openyurt-convert.md §6.2 and the design fragilities of §7.2, each as
//! an explicit case; plus 3-way reverts, conflicts and bad input.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use yurtctl::servant::{self, NodeChanges, NodeConvertOptions, ServantError};
use yurtsim::nodes::layout::{Layout, NodeSeed, Role, SeedOptions, seed_node};

mod support;

const OURS: &str = "/var/lib/openyurt/kubelet.conf";
const KCM: &str = "etc/kubernetes/manifests/kube-controller-manager.yaml";
const DROPIN: &str = "etc/systemd/system/kubelet.service.d/10-kubeadm.conf";
const FLAGS_ENV: &str = "var/lib/kubelet/kubeadm-flags.env";

fn seed(layout: Layout, role: Role, opts: &SeedOptions) -> (tempfile::TempDir, NodeSeed) {
    let idx = if role == Role::ControlPlane { 0 } else { 1 };
    let n = NodeSeed {
        name: layout.node_names(1, 1)[idx].0.clone(),
        role,
        internal_ip: layout.node_ip(idx),
        api_server: layout.api_server(&layout.node_ip(0)),
        kubernetes_version: "v1.33.1".into(),
        cluster_name: "kubernetes".into(),
    };
    let d = tempfile::tempdir().unwrap();
    seed_node(d.path(), layout, &n, opts).unwrap();
    (d, n)
}

fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                m.insert(p.clone(), b"<dir>".to_vec());
                stack.push(p);
            } else if meta.is_file() {
                m.insert(p.clone(), fs::read(&p).unwrap());
            } else {
                m.insert(p.clone(), b"<link>".to_vec());
            }
        }
    }
    m
}

fn run(root: &Path, c: servant::Result<NodeChanges>) -> NodeChanges {
    let c = c.unwrap();
    servant::apply(root, &c).unwrap();
    c
}

fn kubeconfig(root: &Path) -> Option<String> {
    let u = yurtsim::nodes::systemd::load_unit(root, "kubelet.service").unwrap();
    yurtsim::nodes::kubelet_config::kubelet_view(root, &u)
        .unwrap()
        .kubeconfig
}

fn redirect() -> NodeConvertOptions {
    NodeConvertOptions {
        yurthub: None,
        redirect_kubelet: true,
        restart_workloads: false,
    }
}

fn read(root: &Path, p: &str) -> String {
    fs::read_to_string(root.join(p)).unwrap()
}

fn write(root: &Path, p: &str, s: &str) {
    let p = root.join(p);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

// ---------------------------------------------------------------------------------------
// §6.2 (a): kubeadm-flags.env

#[test]
fn flags_env_rows_convert_and_revert_exactly() {
    // (row, content of kubeadm-flags.env or None = missing)
    let rows: &[(&str, Option<&str>)] = &[
        (
            "1 quoted",
            Some(
                "KUBELET_KUBEADM_ARGS=\"--cgroup-driver=systemd --network-plugin=cni --pod-infra-container-image=k8s.gcr.io/pause:3.4.1\"\n",
            ),
        ),
        (
            "4 unquoted (kubeadm < 1.15)",
            Some("KUBELET_KUBEADM_ARGS=--cgroup-driver=cgroupfs --network-plugin=cni\n"),
        ),
        ("5 empty value", Some("KUBELET_KUBEADM_ARGS=\"\"\n")),
        ("6 file missing", None),
        (
            "--kubeconfig inside KUBELET_KUBEADM_ARGS",
            Some(
                "KUBELET_KUBEADM_ARGS=\"--kubeconfig=/etc/kubernetes/kubelet.conf --node-ip=10.0.0.2\"\n",
            ),
        ),
        (
            "--kubeconfig unquoted, last word, no newline",
            Some(
                "KUBELET_KUBEADM_ARGS=--node-ip=10.0.0.2 --kubeconfig=/etc/kubernetes/kubelet.conf",
            ),
        ),
    ];
    for (row, content) in rows {
        let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
        let root = dir.path();
        match content {
            Some(c) => write(root, FLAGS_ENV, c),
            None => fs::remove_file(root.join(FLAGS_ENV)).unwrap(),
        }
        let before = tree(root);
        for cycle in 0..2 {
            run(root, servant::convert(root, &redirect()));
            assert_eq!(kubeconfig(root).as_deref(), Some(OURS), "row {row}");
            run(root, servant::revert(root));
            // row 2: no trailing space accumulates over cycles
            assert_eq!(tree(root), before, "row {row} cycle {cycle}");
        }
        if let Some(c) = content
            && c.contains("--kubeconfig=")
        {
            // the edit went where the winning flag is
            run(root, servant::convert(root, &redirect()));
            assert_eq!(
                read(root, FLAGS_ENV),
                c.replace("/etc/kubernetes/kubelet.conf", OURS)
            );
        }
    }
}

#[test]
fn already_redirected_by_upstream_is_left_alone() {
    // row 3: the v0.6 string is already there and effective: nothing to edit
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    write(
        root,
        FLAGS_ENV,
        "KUBELET_KUBEADM_ARGS=\"--node-ip=10.0.0.2  --kubeconfig=/var/lib/openyurt/kubelet.conf --bootstrap-kubeconfig= \"\n",
    );
    let c = servant::convert(root, &redirect()).unwrap();
    assert!(
        c.changes
            .iter()
            .all(
                |x| !x.path().ends_with("kubeadm-flags.env") && !x.path().ends_with(".conf")
                    || x.path() == OURS
                    || x.path().starts_with("/var/lib/yurtctl")
            ),
        "{:?}",
        c.summary()
    );
}

// ---------------------------------------------------------------------------------------
// §6.2 (b): kube-controller-manager

fn kcm_node() -> tempfile::TempDir {
    seed(Layout::Kubeadm, Role::ControlPlane, &SeedOptions::default()).0
}

#[test]
fn kcm_rows() {
    // (case, line before, line after disable)
    let rows: &[(&str, &str, &str)] = &[
        (
            "kubeadm default",
            "    - --controllers=*,bootstrapsigner,tokencleaner\n",
            "    - --controllers=*,bootstrapsigner,tokencleaner,-nodelifecycle\n",
        ),
        (
            "star only",
            "    - --controllers=*\n",
            "    - --controllers=*,-nodelifecycle\n",
        ),
        (
            "double-quoted",
            "    - \"--controllers=*,tokencleaner\"\n",
            "    - \"--controllers=*,tokencleaner,-nodelifecycle\"\n",
        ),
        (
            "comment after",
            "    - --controllers=* # keep\n",
            "    - --controllers=*,-nodelifecycle # keep\n",
        ),
        (
            "empty value",
            "    - --controllers=\n",
            "    - --controllers=*,-nodelifecycle\n",
        ),
    ];
    for (case, from, to) in rows {
        let d = kcm_node();
        let root = d.path();
        let orig =
            read(root, KCM).replace("    - --controllers=*,bootstrapsigner,tokencleaner\n", from);
        write(root, KCM, &orig);
        run(root, servant::disable_nodelifecycle(root));
        assert_eq!(read(root, KCM), orig.replace(from, to), "{case}");
        // applying twice never doubles the token (#485)
        assert!(
            servant::disable_nodelifecycle(root).unwrap().is_empty(),
            "{case}"
        );
        assert_eq!(read(root, KCM).matches("-nodelifecycle").count(), 1);
        run(root, servant::enable_nodelifecycle(root));
        assert_eq!(read(root, KCM), orig, "{case}");
        assert!(servant::enable_nodelifecycle(root).unwrap().is_empty());
    }
}

#[test]
fn kcm_without_controllers_flag_gets_one_item_with_sibling_indentation() {
    let d = kcm_node();
    let root = d.path();
    let orig = read(root, KCM).replace("    - --controllers=*,bootstrapsigner,tokencleaner\n", "");
    write(root, KCM, &orig);
    run(root, servant::disable_nodelifecycle(root));
    let now = read(root, KCM);
    assert_eq!(
        now,
        orig.replace(
            "    - --use-service-account-credentials=true\n",
            "    - --use-service-account-credentials=true\n    - --controllers=*,-nodelifecycle\n"
        )
    );
    run(root, servant::enable_nodelifecycle(root));
    assert_eq!(read(root, KCM), orig);
}

#[test]
fn kcm_already_disabled_by_operator_is_not_touched_on_either_side() {
    let d = kcm_node();
    let root = d.path();
    let orig = read(root, KCM).replace("--controllers=*,", "--controllers=-nodelifecycle,*,");
    write(root, KCM, &orig);
    assert!(servant::disable_nodelifecycle(root).unwrap().is_empty());
    assert!(servant::enable_nodelifecycle(root).unwrap().is_empty());
    assert_eq!(read(root, KCM), orig);
}

#[test]
fn kcm_revert_keeps_a_kubeadm_upgrade() {
    let d = kcm_node();
    let root = d.path();
    run(root, servant::disable_nodelifecycle(root));
    // someone bumps the image and adds a flag after us
    let upgraded = read(root, KCM)
        .replace(
            "kube-controller-manager:v1.33.1",
            "kube-controller-manager:v1.34.0",
        )
        .replace(
            "    - --leader-elect=true\n",
            "    - --leader-elect=true\n    - --concurrent-deployment-syncs=10\n",
        );
    write(root, KCM, &upgraded);
    run(root, servant::enable_nodelifecycle(root));
    assert_eq!(
        read(root, KCM),
        upgraded.replace(",-nodelifecycle", ""),
        "only our token removed"
    );
    assert!(
        !root
            .join("var/lib/yurtctl/backup/kcm-nodelifecycle.json")
            .exists()
    );
}

#[test]
fn kcm_regenerated_between_disables_is_not_rolled_back() {
    let d = kcm_node();
    let root = d.path();
    run(root, servant::disable_nodelifecycle(root));
    // kubeadm upgrade regenerates the manifest: our token is gone, the image is new
    let regenerated = read(root, KCM)
        .replace(",-nodelifecycle", "")
        .replace(":v1.33.1", ":v1.34.0");
    write(root, KCM, &regenerated);
    run(root, servant::disable_nodelifecycle(root));
    assert!(read(root, KCM).contains(":v1.34.0"));
    // the record's fast path must restore the regenerated file, not the v1.33 original
    run(root, servant::enable_nodelifecycle(root));
    assert_eq!(read(root, KCM), regenerated);
}

#[test]
fn kcm_bad_input() {
    let d = kcm_node();
    let root = d.path();
    let orig = read(root, KCM);
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("missing", None, "does not exist"),
        (
            "unparsable",
            Some("apiVersion: v1\nkind: [Pod\n"),
            "invalid YAML",
        ),
        (
            "wrong kind",
            Some("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"),
            "is not a v1 Pod",
        ),
        (
            "no kcm container",
            Some(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: other\n    command: [\"x\", \"--controllers=*\"]\n",
            ),
            "has no container named kube-controller-manager",
        ),
        (
            "two flags",
            Some(&*Box::leak(
                orig.replace(
                    "    - --leader-elect=true\n",
                    "    - --leader-elect=true\n    - --controllers=*\n",
                )
                .into_boxed_str(),
            )),
            "appears 2 times",
        ),
    ];
    for (case, content, want) in cases {
        match content {
            Some(c) => write(root, KCM, c),
            None => fs::remove_file(root.join(KCM)).unwrap(),
        }
        let before = tree(root);
        let e = servant::disable_nodelifecycle(root)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{case}: {e}");
        assert!(
            e.contains("kube-controller-manager.yaml"),
            "{case}: names the file: {e}"
        );
        assert_eq!(tree(root), before, "{case}");
    }
}

// ---------------------------------------------------------------------------------------
// §6.2 (c): API server extraction

#[test]
fn api_server_rows() {
    let rows: &[(&str, &str)] = &[
        ("https://192.168.1.10:6443", "https://192.168.1.10:6443"),
        (
            "https://kind-control-plane:6443",
            "https://kind-control-plane:6443",
        ),
        (
            "https://control-plane.minikube.internal:8443",
            "https://control-plane.minikube.internal:8443",
        ),
        ("https://[fd00::10]:6443", "https://[fd00::10]:6443"),
        (
            "https://apiserver.cluster.local:6443/path",
            "https://apiserver.cluster.local:6443/path",
        ),
    ];
    for (server, want) in rows {
        let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
        let root = dir.path();
        let kc = read(root, "etc/kubernetes/kubelet.conf").replace("https://10.0.0.1:6443", server);
        write(root, "etc/kubernetes/kubelet.conf", &kc);
        let r = servant::preflight(root).unwrap();
        assert_eq!(r.api_server.unwrap().url, *want);
    }
}

#[test]
fn api_server_follows_the_current_context_among_several_clusters() {
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let kc = read(root, "etc/kubernetes/kubelet.conf").replace(
        "clusters:\n",
        "clusters:\n- cluster:\n    server: https://decoy:1\n  name: decoy\n",
    );
    write(root, "etc/kubernetes/kubelet.conf", &kc);
    let r = servant::preflight(root).unwrap();
    assert_eq!(r.api_server.unwrap().url, "https://10.0.0.1:6443");
}

#[test]
fn re_convert_after_the_redirect_keeps_the_manifest_and_the_redirect() {
    // #338: YurtHub's upstream comes from the client's cluster-info, so a convert after the
    // redirect (kubelet already on YurtHub's kubeconfig) installs the same manifest again
    let secrets = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Minikube, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    fs::write(secrets.path().join("b"), "apiVersion: v1\nkind: Config\n").unwrap();
    let hub = hub_options(&n, secrets.path());
    run(root, servant::convert(root, &redirect()));
    let opts = NodeConvertOptions {
        yurthub: Some(hub.clone().into()),
        redirect_kubelet: true,
        restart_workloads: false,
    };
    run(root, servant::convert(root, &opts));
    assert_eq!(
        read(root, "etc/kubernetes/manifests/yurthub.yaml"),
        hub.manifest
    );
    assert!(read(root, DROPIN).contains(OURS));
    assert_eq!(kubeconfig(root).as_deref(), Some(OURS));
    // and a third run changes nothing
    assert!(servant::convert(root, &opts).unwrap().is_empty());
}

fn hub_options(n: &NodeSeed, secrets: &Path) -> yurtctl::servant::YurtHubOptions {
    support::hub_options(
        "openyurt-v1.6",
        &n.api_server,
        yurtctl::render::WorkingMode::Edge,
        yurtctl::servant::HubCredential::BootstrapFile {
            source: secrets.join("b"),
        },
    )
}

#[test]
fn pod_manifest_path_and_static_pod_path_are_honoured() {
    let secrets = tempfile::tempdir().unwrap();
    fs::write(secrets.path().join("b"), "apiVersion: v1\nkind: Config\n").unwrap();
    let hub = |n: &NodeSeed| hub_options(n, secrets.path());
    // --pod-manifest-path wins over the config file
    let opts = SeedOptions {
        extra_args: Some("--pod-manifest-path=/etc/kubelet.d".into()),
        ..Default::default()
    };
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &opts);
    let root = dir.path();
    let o = NodeConvertOptions {
        yurthub: Some(hub(&n).into()),
        redirect_kubelet: false,
        restart_workloads: false,
    };
    run(root, servant::convert(root, &o));
    assert!(root.join("etc/kubelet.d/yurthub.yaml").is_file());
    // staticPodPath from the kubelet config, relative to the config file
    let (dir, n) = seed(Layout::Kind, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let cfg = read(root, "var/lib/kubelet/config.yaml").replace(
        "staticPodPath: /etc/kubernetes/manifests",
        "staticPodPath: static",
    );
    write(root, "var/lib/kubelet/config.yaml", &cfg);
    let o = NodeConvertOptions {
        yurthub: Some(hub(&n).into()),
        redirect_kubelet: false,
        restart_workloads: false,
    };
    run(root, servant::convert(root, &o));
    assert!(root.join("var/lib/kubelet/static/yurthub.yaml").is_file());
}

// ---------------------------------------------------------------------------------------
// 3-way reverts and conflicts

#[test]
fn revert_keeps_unrelated_changes_to_edited_files() {
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let orig = read(root, DROPIN);
    run(root, servant::convert(root, &redirect()));
    let theirs = format!("{}Environment=\"FOO=bar\"\n", read(root, DROPIN));
    write(root, DROPIN, &theirs);
    run(root, servant::revert(root));
    assert_eq!(
        read(root, DROPIN),
        format!("{orig}Environment=\"FOO=bar\"\n")
    );
    assert_eq!(
        kubeconfig(root).as_deref(),
        Some("/etc/kubernetes/kubelet.conf")
    );
}

#[test]
fn revert_refuses_when_our_span_was_changed() {
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    run(root, servant::convert(root, &redirect()));
    let changed = read(root, DROPIN).replace(OURS, "/etc/kubernetes/other.conf");
    write(root, DROPIN, &changed);
    let before = tree(root);
    let e = servant::revert(root).unwrap_err();
    assert!(matches!(e, ServantError::RevertConflict { .. }), "{e}");
    assert!(e.to_string().contains("10-kubeadm.conf"), "{e}");
    assert_eq!(tree(root), before);
}

#[test]
fn interrupted_apply_can_be_resumed_and_reverted() {
    let (dir, _) = seed(Layout::Kind, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let c = servant::convert(root, &redirect()).unwrap();
    // apply only the backups and the record (they come first), then "crash"
    let n = c
        .changes
        .iter()
        .take_while(|x| x.path().starts_with("/var/lib/yurtctl"))
        .count();
    assert!(n >= 2);
    let partial = NodeChanges {
        changes: c.changes[..n].to_vec(),
    };
    servant::apply(root, &partial).unwrap();
    // a revert now undoes nothing harmful and clears the record
    run(root, servant::revert(root));
    assert_eq!(tree(root), before);
}

// ---------------------------------------------------------------------------------------
// static-pod upgrade

#[test]
fn static_pod_upgrade_and_restore() {
    let d = kcm_node();
    let root = d.path();
    let before = tree(root);
    let path = "etc/kubernetes/manifests/kube-scheduler.yaml";
    let old = read(root, path);
    let new = old.replace(":v1.33.1", ":v1.34.0");
    run(
        root,
        servant::static_pod_upgrade(root, "kube-scheduler", new.as_bytes()),
    );
    assert_eq!(read(root, path), new);
    assert!(
        servant::static_pod_upgrade(root, "kube-scheduler", new.as_bytes())
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        fs::read_dir(root.join("etc/kubernetes/manifests"))
            .unwrap()
            .count(),
        4
    );
    assert_eq!(
        read(
            root,
            "var/lib/yurtctl/backup/staticpods/kube-scheduler.yaml"
        ),
        old
    );
    run(root, servant::static_pod_restore(root, "kube-scheduler"));
    assert_eq!(read(root, path), old);
    assert!(
        servant::static_pod_restore(root, "kube-scheduler")
            .unwrap()
            .is_empty()
    );
    // a brand-new static pod is removed again on restore
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra\nspec:\n  containers:\n  - name: c\n    image: busybox\n";
    run(
        root,
        servant::static_pod_upgrade(root, "extra", pod.as_bytes()),
    );
    run(root, servant::static_pod_restore(root, "extra"));
    let after = tree(root);
    let extra: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(
        extra
            .iter()
            .all(|k| k.to_string_lossy().contains("var/lib/yurtctl")),
        "{extra:?}"
    );
    assert!(!root.join("etc/kubernetes/manifests/extra.yaml").exists());
}

// ---------------------------------------------------------------------------------------
// bad input

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let missing = Path::new("/nonexistent/yurtctl-host-root");
    let e = servant::convert(missing, &redirect()).unwrap_err();
    assert!(matches!(e, ServantError::HostRoot { .. }), "{e}");
    assert!(e.to_string().contains("--host-root"));
    assert!(matches!(
        servant::revert(missing),
        Err(ServantError::HostRoot { .. })
    ));
    assert!(servant::preflight(missing).is_err());

    let d = kcm_node();
    let root = d.path();
    let before = tree(root);
    for name in ["../etc/passwd", "a/b", "..", ".hidden", "/etc/x", ""] {
        let e = servant::static_pod_upgrade(root, name, b"x").unwrap_err();
        assert!(matches!(e, ServantError::InvalidName { .. }), "{name}: {e}");
        assert!(matches!(
            servant::static_pod_restore(root, name),
            Err(ServantError::InvalidName { .. })
        ));
    }
    let e = servant::static_pod_upgrade(
        root,
        "kube-scheduler",
        b"kind: Deployment\napiVersion: apps/v1\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a v1 Pod"), "{e}");
    assert!(servant::static_pod_upgrade(root, "kube-scheduler", b"{{{").is_err());
    assert_eq!(tree(root), before);

    // unparsable unit file
    write(root, DROPIN, "[Service\nExecStart=/usr/bin/kubelet\n");
    let before = tree(root);
    let e = servant::convert(root, &redirect()).unwrap_err();
    assert!(matches!(e, ServantError::UnitSyntax { .. }), "{e}");
    assert!(e.to_string().contains("10-kubeadm.conf:1"), "{e}");
    assert!(!servant::preflight(root).unwrap().problems.is_empty());
    assert_eq!(tree(root), before);

    // a symlink escaping the root is not followed
    fs::remove_file(root.join(DROPIN)).unwrap();
    std::os::unix::fs::symlink("../../../../../../../../etc/hostname", root.join(DROPIN)).unwrap();
    assert!(servant::convert(root, &redirect()).is_err());
}

#[test]
fn a_kubeconfig_we_cannot_make_effective_is_refused() {
    // the winning --kubeconfig is built from a variable *inside* a word: not verbatim
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    write(
        root,
        "etc/systemd/system/kubelet.service.d/20-x.conf",
        "[Service]\nEnvironment=\"D=/etc/kubernetes\"\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS --kubeconfig=${D}/kubelet.conf\n",
    );
    let before = tree(root);
    let e = servant::convert(root, &redirect()).unwrap_err();
    assert!(matches!(e, ServantError::Redirect { .. }), "{e}");
    assert_eq!(tree(root), before);
    // and a masked kubelet unit
    let (dir, _) = seed(Layout::Kind, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    fs::remove_file(root.join("etc/systemd/system/kubelet.service")).unwrap();
    std::os::unix::fs::symlink("/dev/null", root.join("etc/systemd/system/kubelet.service"))
        .unwrap();
    assert!(matches!(
        servant::convert(root, &redirect()),
        Err(ServantError::UnitMasked { .. })
    ));
}

#[test]
fn separate_form_bootstrap_flag_is_removed_with_one_separator() {
    let (dir, _) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let orig = read(root, DROPIN);
    let sep = orig.replace("--bootstrap-kubeconfig=/etc", "--bootstrap-kubeconfig /etc");
    write(root, DROPIN, &sep);
    run(root, servant::convert(root, &redirect()));
    let u = yurtsim::nodes::systemd::load_unit(root, "kubelet.service").unwrap();
    let v = yurtsim::nodes::kubelet_config::kubelet_view(root, &u).unwrap();
    assert_eq!(v.kubeconfig.as_deref(), Some(OURS));
    assert_eq!(v.bootstrap_kubeconfig, None);
    assert!(
        read(root, DROPIN).contains(&format!("\"KUBELET_KUBECONFIG_ARGS=--kubeconfig={OURS}\""))
    );
    run(root, servant::revert(root));
    assert_eq!(read(root, DROPIN), sep);
}

// ---------------------------------------------------------------------------------------
// A convert Job killed mid-apply (revert deletes a running convert Job of an interrupted run)

#[test]
fn revert_cleans_up_after_a_convert_killed_mid_apply() {
    const RECORD: &str = "/var/lib/yurtctl/backup/convert.json";
    for layout in [Layout::Kubeadm, Layout::Minikube] {
        // killed before the record was stored: backups and the record's temp file are left
        let (dir, _) = seed(layout, Role::Worker, &SeedOptions::default());
        let root = dir.path();
        let before = tree(root);
        let changes = servant::convert(root, &redirect()).unwrap();
        let backups: Vec<_> = changes
            .changes
            .iter()
            .take_while(|c| c.path() != RECORD)
            .cloned()
            .collect();
        assert!(!backups.is_empty(), "{layout:?}: convert backs files up");
        servant::apply(root, &NodeChanges { changes: backups }).unwrap();
        write(
            root,
            "var/lib/yurtctl/backup/.convert.json.yurtctl-tmp",
            "{\"vers",
        );
        assert_ne!(tree(root), before);
        run(root, servant::revert(root));
        assert_eq!(tree(root), before, "{layout:?}: killed before the record");
        assert!(servant::revert(root).unwrap().is_empty(), "idempotent");

        // killed after the record, while writing a file: its temp file is left
        let changes = servant::convert(root, &redirect()).unwrap();
        let upto = changes
            .changes
            .iter()
            .position(|c| c.path() == RECORD)
            .unwrap();
        let first_file = changes.changes[upto + 1].path().to_string();
        servant::apply(
            root,
            &NodeChanges {
                changes: changes.changes[..=upto].to_vec(),
            },
        )
        .unwrap();
        let (d, name) = first_file.rsplit_once('/').unwrap();
        write(
            root,
            &format!("{}/.{name}.yurtctl-tmp", d.trim_start_matches('/')),
            "partial",
        );
        run(root, servant::revert(root));
        assert_eq!(
            tree(root),
            before,
            "{layout:?}: killed while writing {first_file}"
        );
    }
}
