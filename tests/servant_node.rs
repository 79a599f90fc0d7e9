//! The node servant against real layouts: nodes are seeded by yurtsim's layout seeder, and
//! the kubelet's effective flags are checked with yurtsim's independent systemd oracle.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use yurtctl::servant::{
    self, HubCredential, NodeChanges, NodeConvertOptions, WorkingMode, YurtHubOptions,
};
use yurtsim::nodes::layout::{Layout, NodeSeed, Role, SeedOptions, seed_node};

mod support;

const OURS: &str = "/var/lib/openyurt/kubelet.conf";
const KCM: &str = "etc/kubernetes/manifests/kube-controller-manager.yaml";

// ---------------------------------------------------------------------------------------
// helpers

fn node(layout: Layout, role: Role) -> NodeSeed {
    let idx = if role == Role::ControlPlane { 0 } else { 1 };
    let (name, _) = layout.node_names(1, 1)[idx].clone();
    NodeSeed {
        name,
        role,
        internal_ip: layout.node_ip(idx),
        api_server: layout.api_server(&layout.node_ip(0)),
        kubernetes_version: "v1.33.1".into(),
        cluster_name: match layout {
            Layout::Kind => "kind",
            Layout::Minikube => "mk",
            _ => "kubernetes",
        }
        .into(),
    }
}

fn seed(layout: Layout, role: Role, opts: &SeedOptions) -> (tempfile::TempDir, NodeSeed) {
    let n = node(layout, role);
    let d = tempfile::tempdir().unwrap();
    seed_node(d.path(), layout, &n, opts).unwrap();
    (d, n)
}

#[derive(Debug, PartialEq, Eq, Clone)]
enum Entry {
    File(Vec<u8>, u32),
    Dir(u32),
    Link(PathBuf),
}

fn tree(root: &Path) -> BTreeMap<String, Entry> {
    let mut m = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                m.insert(rel, Entry::Link(fs::read_link(&p).unwrap()));
            } else if meta.is_dir() {
                m.insert(rel, Entry::Dir(mode));
                stack.push(p);
            } else {
                m.insert(rel, Entry::File(fs::read(&p).unwrap(), mode));
            }
        }
    }
    m
}

fn diff(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

struct View {
    kubeconfig: Option<String>,
    bootstrap: Option<String>,
    server: Result<String, String>,
}

/// yurtsim's oracle: what the kubelet would use after daemon-reload + restart.
fn oracle(root: &Path) -> View {
    let u = yurtsim::nodes::systemd::load_unit(root, "kubelet.service").unwrap();
    let v = yurtsim::nodes::kubelet_config::kubelet_view(root, &u).unwrap();
    View {
        kubeconfig: v.kubeconfig,
        bootstrap: v.bootstrap_kubeconfig,
        server: v.server,
    }
}

fn token_file(dir: &Path) -> PathBuf {
    let p = dir.join("token");
    fs::write(&p, "abcdef.0123456789abcdef\n").unwrap();
    p
}

fn bootstrap_file(dir: &Path) -> PathBuf {
    let p = dir.join("bootstrap-hub.conf");
    fs::write(
        &p,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    p
}

fn hub(n: &NodeSeed, cred: HubCredential) -> YurtHubOptions {
    let profile = match cred {
        HubCredential::BootstrapFile { .. } => "openyurt-v1.6",
        HubCredential::JoinTokenFile { .. } => "legacy-v0.6",
    };
    let mode = if n.role == Role::ControlPlane {
        WorkingMode::Cloud
    } else {
        WorkingMode::Edge
    };
    support::hub_options(profile, &n.api_server, mode, cred)
}

fn full(n: &NodeSeed, secrets: &Path) -> NodeConvertOptions {
    NodeConvertOptions {
        yurthub: Some(
            hub(
                n,
                HubCredential::BootstrapFile {
                    source: bootstrap_file(secrets),
                },
            )
            .into(),
        ),
        redirect_kubelet: true,
        restart_workloads: false,
    }
}

/// legacy-v0.6's convert: YurtHub with a join token, and the kubelet's redirect.
fn legacy(n: &NodeSeed, secrets: &Path) -> NodeConvertOptions {
    NodeConvertOptions {
        yurthub: Some(
            hub(
                n,
                HubCredential::JoinTokenFile {
                    source: token_file(secrets),
                },
            )
            .into(),
        ),
        redirect_kubelet: true,
        restart_workloads: false,
    }
}

fn run(root: &Path, c: servant::Result<NodeChanges>) -> NodeChanges {
    let c = c.unwrap();
    servant::apply(root, &c).unwrap();
    c
}

fn variants(layout: Layout) -> Vec<(&'static str, SeedOptions)> {
    let mut v = vec![
        ("default", SeedOptions::default()),
        (
            "unquoted",
            SeedOptions {
                unquoted_flags_env: true,
                ..Default::default()
            },
        ),
        (
            "extra-kubeconfig",
            SeedOptions {
                extra_args: Some(
                    "--v=2 --kubeconfig=/etc/kubernetes/kubelet-extra.conf --max-pods=50".into(),
                ),
                ..Default::default()
            },
        ),
    ];
    if matches!(layout, Layout::Kubeadm | Layout::KubeadmUsr) {
        v.push((
            "lib-dir",
            SeedOptions {
                lib_systemd_dir: true,
                ..Default::default()
            },
        ));
        v.push((
            "lib-dir+unquoted+extra",
            SeedOptions {
                lib_systemd_dir: true,
                unquoted_flags_env: true,
                extra_args: Some("--kubeconfig /etc/kubernetes/kubelet-extra.conf".into()),
            },
        ));
    }
    v
}

/// Every changed line of a pre-existing file differs from the original only in the value
/// of `--kubeconfig=` (now ours) or `--bootstrap-kubeconfig=` (now empty), token by token.
fn assert_only_flag_values_changed(ctx: &str, path: &str, old: &[u8], new: &[u8]) {
    let old = std::str::from_utf8(old).unwrap();
    let new = std::str::from_utf8(new).unwrap();
    let (ol, nl): (Vec<&str>, Vec<&str>) = (old.split('\n').collect(), new.split('\n').collect());
    assert_eq!(ol.len(), nl.len(), "{ctx} {path}: line count changed");
    for (o, n) in ol.iter().zip(&nl) {
        if o == n {
            continue;
        }
        let (ot, nt): (Vec<&str>, Vec<&str>) = (o.split(' ').collect(), n.split(' ').collect());
        assert_eq!(ot.len(), nt.len(), "{ctx} {path}: {o:?} -> {n:?}");
        for (a, b) in ot.iter().zip(&nt) {
            if a == b {
                continue;
            }
            let b_ = b.trim_end_matches('"');
            let ok = if let Some(i) = b_.find("--kubeconfig=") {
                b_[i..] == format!("--kubeconfig={OURS}") && a.starts_with(&b_[..i + 13])
            } else if let Some(i) = b_.find("--bootstrap-kubeconfig=") {
                b_.len() == i + 23 && a.starts_with(&b_[..i + 23])
            } else {
                b == &OURS && a.starts_with('/')
            };
            assert!(ok, "{ctx} {path}: token {a:?} -> {b:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// the table

#[test]
fn convert_and_revert_every_layout() {
    let secrets = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for layout in Layout::all() {
        for role in [Role::ControlPlane, Role::Worker] {
            for (vname, opts) in variants(layout) {
                cases += 1;
                let ctx = format!("{layout} {role:?} {vname}");
                let (dir, n) = seed(layout, role, &opts);
                let root = dir.path();
                if opts.extra_args.is_some() {
                    fs::copy(
                        root.join("etc/kubernetes/kubelet.conf"),
                        root.join("etc/kubernetes/kubelet-extra.conf"),
                    )
                    .unwrap();
                }
                let before = tree(root);
                let was = oracle(root);
                let orig_kc = was.kubeconfig.clone().unwrap();

                // preflight changes nothing and sees the layout
                let report = servant::preflight(root).unwrap();
                assert!(report.redirect_possible, "{ctx}: {:?}", report.problems);
                assert_eq!(
                    report.kubeconfig.as_deref(),
                    Some(orig_kc.as_str()),
                    "{ctx}"
                );
                assert_eq!(
                    report.static_pod_dir.as_deref(),
                    Some("/etc/kubernetes/manifests")
                );
                assert_eq!(report.api_server.as_ref().unwrap().url, n.api_server);
                assert_eq!(report.kcm_manifest.is_some(), role == Role::ControlPlane);
                let want_layout = match layout {
                    Layout::Kubeadm => "kubeadm",
                    Layout::KubeadmUsr => "kubeadm-usr",
                    Layout::Kind => "kind",
                    Layout::Minikube => "minikube",
                };
                assert_eq!(report.layout, want_layout, "{ctx}");
                serde_json::to_string(&report).unwrap();
                assert_eq!(tree(root), before, "{ctx}: preflight wrote");

                // convert
                let changes = run(root, servant::convert(root, &full(&n, secrets.path())));
                assert!(!changes.is_empty());
                let now = oracle(root);
                assert_eq!(now.kubeconfig.as_deref(), Some(OURS), "{ctx}");
                assert!(
                    now.bootstrap.as_deref().unwrap_or("").is_empty(),
                    "{ctx}: bootstrap {:?}",
                    now.bootstrap
                );
                assert_eq!(now.server, Ok("http://127.0.0.1:10261".into()), "{ctx}");

                // only intended bytes changed
                let after = tree(root);
                for p in diff(&before, &after) {
                    match (before.get(&p), after.get(&p)) {
                        (Some(Entry::File(o, om)), Some(Entry::File(nw, nm))) => {
                            assert_eq!(om, nm, "{ctx} {p}: mode changed");
                            assert_only_flag_values_changed(&ctx, &p, o, nw);
                        }
                        (None, Some(_)) => assert!(
                            p.starts_with("var/lib/yurtctl")
                                || p.starts_with("var/lib/openyurt")
                                || p.starts_with("var/lib/yurthub")
                                || p == "etc/kubernetes/manifests/yurthub.yaml",
                            "{ctx}: unexpected new {p}"
                        ),
                        other => panic!("{ctx} {p}: {other:?}"),
                    }
                }
                let hubm =
                    fs::read_to_string(root.join("etc/kubernetes/manifests/yurthub.yaml")).unwrap();
                assert!(
                    hubm.contains(&format!("--server-addr={}", n.api_server)),
                    "{ctx}"
                );
                assert!(hubm.contains("--bootstrap-file=/var/lib/yurthub/bootstrap-hub.conf"));
                let mode =
                    |p: &str| fs::metadata(root.join(p)).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode("var/lib/openyurt/kubelet.conf"), 0o600);
                assert_eq!(mode("var/lib/yurthub/bootstrap-hub.conf"), 0o600);
                assert!(
                    fs::read_dir(root.join("etc/kubernetes/manifests"))
                        .unwrap()
                        .all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('.')),
                    "{ctx}: temp file left in the manifests dir"
                );

                // idempotent
                assert!(
                    servant::convert(root, &full(&n, secrets.path()))
                        .unwrap()
                        .is_empty(),
                    "{ctx}: second convert"
                );

                // revert restores every byte (and removes what we created)
                run(root, servant::revert(root));
                assert_eq!(diff(&before, &tree(root)), Vec::<String>::new(), "{ctx}");
                assert_eq!(oracle(root).kubeconfig.as_deref(), Some(orig_kc.as_str()));
                assert!(
                    servant::revert(root).unwrap().is_empty(),
                    "{ctx}: revert twice"
                );

                // convert -> revert -> convert -> revert
                run(root, servant::convert(root, &full(&n, secrets.path())));
                assert_eq!(tree(root), after, "{ctx}: convert is deterministic");
                run(root, servant::revert(root));
                run(root, servant::convert(root, &full(&n, secrets.path())));
                run(root, servant::revert(root));
                assert_eq!(diff(&before, &tree(root)), Vec::<String>::new(), "{ctx}");

                if role == Role::ControlPlane {
                    let kcm0 = fs::read_to_string(root.join(KCM)).unwrap();
                    run(root, servant::disable_nodelifecycle(root));
                    let kcm1 = fs::read_to_string(root.join(KCM)).unwrap();
                    assert_eq!(
                        kcm1,
                        kcm0.replace(
                            "--controllers=*,bootstrapsigner,tokencleaner\n",
                            "--controllers=*,bootstrapsigner,tokencleaner,-nodelifecycle\n"
                        ),
                        "{ctx}"
                    );
                    assert!(servant::disable_nodelifecycle(root).unwrap().is_empty());
                    run(root, servant::enable_nodelifecycle(root));
                    assert!(servant::enable_nodelifecycle(root).unwrap().is_empty());
                    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new(), "{ctx}");
                }
            }
        }
    }
    assert!(cases >= 28, "{cases}");
}

#[test]
fn two_step_convert_hub_first_then_kubelet() {
    let secrets = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kind, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let mut opts = full(&n, secrets.path());
    opts.redirect_kubelet = false;
    let c = run(root, servant::convert(root, &opts));
    assert!(c.get("/var/lib/openyurt/kubelet.conf").is_none());
    assert_eq!(
        oracle(root).kubeconfig.as_deref(),
        Some("/etc/kubernetes/kubelet.conf")
    );
    opts.redirect_kubelet = true;
    let c = run(root, servant::convert(root, &opts));
    assert!(c.get("/etc/kubernetes/manifests/yurthub.yaml").is_none());
    assert_eq!(oracle(root).kubeconfig.as_deref(), Some(OURS));
    run(root, servant::revert(root));
    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new());
}

#[test]
fn legacy_join_token_is_never_in_the_manifest() {
    let secrets = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let opts = legacy(&n, secrets.path());
    run(root, servant::convert(root, &opts));
    let m = fs::read_to_string(root.join("etc/kubernetes/manifests/yurt-hub.yaml")).unwrap();
    assert!(!m.contains("0123456789abcdef"), "{m}");
    assert!(m.contains("--join-token=$$(cat /var/lib/yurtctl/yurthub/join-token)"));
    let v: serde_json::Value = serde_saphyr::from_str(&m).unwrap();
    assert_eq!(v["spec"]["containers"][0]["command"][0], "/bin/sh");
    let tok = root.join("var/lib/yurtctl/yurthub/join-token");
    assert_eq!(
        fs::read_to_string(&tok).unwrap(),
        "abcdef.0123456789abcdef\n"
    );
    assert_eq!(
        fs::metadata(&tok).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // a bad token is refused without echoing it
    fs::write(secrets.path().join("token"), "NOT-A-TOKEN-secretvalue").unwrap();
    let e = servant::convert(root, &opts).unwrap_err().to_string();
    assert!(!e.contains("secretvalue"), "{e}");
}

#[test]
fn modern_manifest_parses_and_carries_the_flags() {
    let secrets = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    run(root, servant::convert(root, &full(&n, secrets.path())));
    let m = fs::read_to_string(root.join("etc/kubernetes/manifests/yurthub.yaml")).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(&m).unwrap();
    assert_eq!(v["kind"], "Pod");
    assert_eq!(v["metadata"]["labels"]["k8s-app"], "yurt-hub");
    let cmd: Vec<&str> = v["spec"]["containers"][0]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(
        cmd,
        [
            "yurthub",
            "--v=2",
            "--bind-address=127.0.0.1",
            "--server-addr=https://10.0.0.1:6443",
            "--node-name=$(NODE_NAME)",
            "--bootstrap-file=/var/lib/yurthub/bootstrap-hub.conf",
            "--working-mode=edge",
            "--namespace=kube-system",
        ]
    );
    assert_eq!(v["spec"]["hostNetwork"], true);
}

// ---------------------------------------------------------------------------------------
// YurtHub as a systemd service (profile openyurt-v1.7)

/// upstream's unit and drop-in (openyurtio/openyurt@v1.7.0:pkg/yurtadm/constants/constants.go
/// YurtHubServiceContent, YurtHubUnitConfig), the drop-in node-independent.
const HUB_UNIT: &str = "[Unit]\nDescription=YurtHub Service\nAfter=network.target\n\n[Service]\nType=simple\nExecStart=/usr/local/bin/yurthub\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n";
const HUB_DROP_IN: &str = "[Service]\nExecStart=\nExecStart=/usr/local/bin/yurthub --node-name=$(NODE_NAME) --nodepool-name=$(NODEPOOL_NAME) --server-addr=https://192.168.0.10:6443 --bootstrap-mode=kubeletcertificate --bind-address=127.0.0.1 --working-mode=edge --namespace=kube-system --v=2\n";

fn service(n: &NodeSeed, files: &Path) -> servant::HubService {
    let write = |name: &str, bytes: &[u8]| {
        let p = files.join(name);
        fs::write(&p, bytes).unwrap();
        p
    };
    servant::HubService::from_files(
        &write("yurthub", b"\x7fELF yurthub v1.7.0"),
        &write("yurthub.service", HUB_UNIT.as_bytes()),
        &write("10-yurthub.conf", HUB_DROP_IN.as_bytes()),
        &n.name,
        "zone-a",
        None,
    )
    .unwrap()
}

/// A convert that installs YurtHub as a service and redirects the kubelet.
fn service_convert(n: &NodeSeed, files: &Path) -> NodeConvertOptions {
    NodeConvertOptions {
        yurthub: Some(service(n, files).into()),
        redirect_kubelet: true,
        restart_workloads: false,
    }
}

#[test]
fn yurthub_as_a_service_is_installed_and_reverted_exactly_on_every_layout() {
    for layout in Layout::all() {
        let ctx = format!("{layout}");
        let files = tempfile::tempdir().unwrap();
        let (dir, n) = seed(layout, Role::Worker, &SeedOptions::default());
        let root = dir.path();
        let before = tree(root);
        let opts = service_convert(&n, files.path());
        run(root, servant::convert(root, &opts));
        let after = tree(root);
        let mut created: Vec<String> = diff(&before, &after)
            .into_iter()
            .filter(|p| !before.contains_key(p))
            .filter(|p| !p.starts_with("var/lib/yurtctl"))
            // parent directories depend on the layout; revert removes them too (checked below)
            .filter(|p| matches!(after.get(p), Some(Entry::File(..))))
            .collect();
        created.sort();
        assert_eq!(
            created,
            [
                "etc/systemd/system/yurthub.service",
                "etc/systemd/system/yurthub.service.d/10-yurthub.conf",
                "usr/local/bin/yurthub",
                "var/lib/openyurt/kubelet.conf",
            ],
            "{ctx}: no static pod, no credential file (the kubelet's certificate is reused)"
        );
        let mode = |p: &str| fs::metadata(root.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("usr/local/bin/yurthub"), 0o755, "{ctx}");
        assert_eq!(mode("etc/systemd/system/yurthub.service"), 0o644, "{ctx}");
        let drop_in =
            fs::read_to_string(root.join("etc/systemd/system/yurthub.service.d/10-yurthub.conf"))
                .unwrap();
        assert!(
            drop_in.contains(&format!("--node-name={} --nodepool-name=zone-a ", n.name)),
            "{ctx}: {drop_in}"
        );
        // systemd (yurtsim's oracle) reads the same command line from unit + drop-in
        let unit = yurtsim::nodes::systemd::load_unit(root, "yurthub.service").unwrap();
        assert_eq!(
            unit.exec_start().len(),
            1,
            "{ctx}: the drop-in resets ExecStart"
        );
        let argv = &unit.exec_start()[0].argv;
        assert_eq!(unit.exec_start()[0].path, "/usr/local/bin/yurthub", "{ctx}");
        assert!(
            argv.contains(&format!("--node-name={}", n.name)),
            "{ctx}: {argv:?}"
        );
        assert_eq!(oracle(root).kubeconfig.as_deref(), Some(OURS), "{ctx}");

        // the record names the unit, so revert stops and disables it first
        let fs_ = yurtctl::servant::hostfs::HostFs::new(root).unwrap();
        let record = yurtctl::servant::journal::OperationRecord::load(&fs_, "convert")
            .unwrap()
            .unwrap();
        assert_eq!(
            servant::recorded_hub_service(&record),
            Some("yurthub.service")
        );

        let again = service_convert(&n, files.path());
        assert!(
            servant::convert(root, &again).unwrap().is_empty(),
            "{ctx}: a second convert changes nothing"
        );
        run(root, servant::revert(root));
        assert_eq!(diff(&before, &tree(root)), Vec::<String>::new(), "{ctx}");
    }
}

#[test]
fn a_yurthub_binary_someone_else_installed_is_never_overwritten() {
    let files = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    fs::create_dir_all(root.join("usr/local/bin")).unwrap();
    fs::write(root.join("usr/local/bin/yurthub"), b"theirs").unwrap();
    let before = tree(root);
    let opts = service_convert(&n, files.path());
    let e = servant::convert(root, &opts).unwrap_err().to_string();
    assert!(
        e.contains("/usr/local/bin/yurthub") && e.contains("not written by yurtctl"),
        "{e}"
    );
    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new());
}

#[test]
fn a_service_drop_in_without_the_node_values_or_a_binary_is_refused_before_any_write() {
    let files = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let mut empty_binary = service(&n, files.path());
    empty_binary.binary.clear();
    let mut no_service = service(&n, files.path());
    no_service.drop_in = "[Unit]\nDescription=x\n".into();
    let mut unfilled = service(&n, files.path());
    unfilled.drop_in.push_str("# $(NODE_NAME)\n");
    for (svc, why) in [
        (empty_binary, "is empty"),
        (no_service, "has no [Service] section"),
        (unfilled, "still holds $(NODE_NAME)"),
    ] {
        let opts = NodeConvertOptions {
            yurthub: Some(svc.into()),
            redirect_kubelet: true,
            restart_workloads: false,
        };
        let e = servant::convert(root, &opts).unwrap_err().to_string();
        assert!(e.contains(why), "{why}: {e}");
        assert_eq!(diff(&before, &tree(root)), Vec::<String>::new(), "{why}");
    }
}

/// A revert killed after any number of its changes (SIGKILL between two writes) and run again
/// leaves the node exactly as before convert, created directories included: the record that
/// names them goes only after them. Found by `revert_e2e`'s SIGKILL test (seed 1592597118).
#[test]
fn a_revert_stopped_after_any_of_its_changes_is_finished_by_the_next_one() {
    let files = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let opts = service_convert(&n, files.path());
    run(root, servant::convert(root, &opts));
    let converted = tree(root);
    let steps = servant::revert(root).unwrap().changes.len();
    assert!(steps > 3, "{steps}");
    for done in 0..steps {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(root, copy.path());
        assert_eq!(diff(&converted, &tree(copy.path())), Vec::<String>::new());
        let mut first = servant::revert(copy.path()).unwrap();
        first.changes.truncate(done);
        servant::apply(copy.path(), &first).unwrap();
        run(copy.path(), servant::revert(copy.path()));
        assert_eq!(
            diff(&before, &tree(copy.path())),
            Vec::<String>::new(),
            "stopped after {done} of {steps} changes"
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .args([
            "-a",
            &format!("{}/.", from.display()),
            &to.display().to_string(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
}

// ---------------------------------------------------------------------------------------
// upgrade: YurtHub moved to another release or from a static pod to the service

/// openyurt-v1.7's service with its bootstrap file (the static pod's, kept).
fn service_with_bootstrap(n: &NodeSeed, files: &Path, secrets: &Path) -> servant::HubInstall {
    let mut svc = service(n, files);
    svc.credential = Some(HubCredential::BootstrapFile {
        source: bootstrap_file(secrets),
    });
    svc.into()
}

/// Files (not directories) added, removed or changed between two trees, the record left out.
fn changed_files(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> Vec<String> {
    let is_file =
        |t: &BTreeMap<String, Entry>, p: &String| matches!(t.get(p), Some(Entry::File(..)));
    diff(a, b)
        .into_iter()
        .filter(|p| is_file(a, p) || is_file(b, p))
        .filter(|p| !p.starts_with("var/lib/yurtctl/backup"))
        .map(|p| {
            let mark = match (a.contains_key(&p), b.contains_key(&p)) {
                (false, _) => '+',
                (_, false) => '-',
                _ => '~',
            };
            format!("{mark} {p}")
        })
        .collect()
}

#[test]
fn an_upgrade_moves_yurthub_from_its_static_pod_to_the_service_and_revert_still_restores_the_node()
{
    for layout in Layout::all() {
        let ctx = format!("{layout}");
        let (secrets, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (dir, n) = seed(layout, Role::Worker, &SeedOptions::default());
        let root = dir.path();
        let before = tree(root);
        run(root, servant::convert(root, &full(&n, secrets.path())));
        // what YurtHub wrote while it ran: its certificate and its cache
        let cert = root.join("var/lib/yurthub/pki/yurthub-current.pem");
        fs::create_dir_all(cert.parent().unwrap()).unwrap();
        fs::write(&cert, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let converted = tree(root);
        let manifest = converted
            .keys()
            .find(|p| p.ends_with("/yurthub.yaml"))
            .unwrap_or_else(|| panic!("{ctx}: no static pod"))
            .clone();

        let target = service_with_bootstrap(&n, files.path(), secrets.path());
        let plan = servant::upgrade(root, &target).unwrap();
        let last = plan.changes.last().unwrap();
        assert!(
            matches!(last, servant::Change::Remove { path, .. } if path.ends_with("/yurthub.yaml")),
            "{ctx}: the static pod goes last, once the service's files are there: {last:?}"
        );
        run(root, Ok(plan));
        let upgraded = tree(root);
        let mut want = vec![
            "+ etc/systemd/system/yurthub.service".to_owned(),
            "+ etc/systemd/system/yurthub.service.d/10-yurthub.conf".to_owned(),
            "+ usr/local/bin/yurthub".to_owned(),
            format!("- {manifest}"),
        ];
        want.sort();
        let mut got = changed_files(&converted, &upgraded);
        got.sort();
        assert_eq!(
            got, want,
            "{ctx}: the kubelet's files, YurtHub's certificate and bootstrap file stay"
        );
        assert_eq!(oracle(root).kubeconfig.as_deref(), Some(OURS), "{ctx}");
        assert!(
            servant::upgrade(root, &target).unwrap().is_empty(),
            "{ctx}: a second upgrade changes nothing"
        );

        run(root, servant::revert(root));
        assert_eq!(
            diff(&before, &tree(root)),
            Vec::<String>::new(),
            "{ctx}: revert after the upgrade"
        );
    }
}

#[test]
fn a_rollback_puts_the_static_pod_back_and_revert_after_it_restores_the_node() {
    let (secrets, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let v16 = full(&n, secrets.path());
    run(root, servant::convert(root, &v16));
    let converted = tree(root);
    run(
        root,
        servant::upgrade(
            root,
            &service_with_bootstrap(&n, files.path(), secrets.path()),
        ),
    );
    run(root, servant::upgrade(root, v16.yurthub.as_ref().unwrap()));
    assert_eq!(
        changed_files(&converted, &tree(root)),
        Vec::<String>::new(),
        "the node's files are those of the v1.6 conversion again"
    );
    run(root, servant::revert(root));
    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new());
}

#[test]
fn from_legacy_the_join_token_static_pod_gives_way_to_the_bootstrap_file_one() {
    let secrets = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let legacy = legacy(&n, secrets.path());
    run(root, servant::convert(root, &legacy));
    // YurtHub v0.6 wrote its own bootstrap-hub.conf, from the join token, into its root dir
    // (openyurtio/openyurt@v0.6.1 pkg/yurthub/certificate/hubself/cert_mgr.go initBootstrap)
    let theirs = root.join("var/lib/yurthub/bootstrap-hub.conf");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "apiVersion: v1\nkind: Config\n# v0.6's\n").unwrap();
    let converted = tree(root);
    let v16 = full(&n, secrets.path());
    run(root, servant::upgrade(root, v16.yurthub.as_ref().unwrap()));
    let mut got = changed_files(&converted, &tree(root));
    got.sort();
    assert_eq!(
        got,
        [
            "+ etc/kubernetes/manifests/yurthub.yaml",
            "- etc/kubernetes/manifests/yurt-hub.yaml",
            "- var/lib/yurtctl/yurthub/join-token",
            "~ var/lib/yurthub/bootstrap-hub.conf",
        ]
    );
    assert_ne!(
        std::fs::read_to_string(&theirs).unwrap(),
        "apiVersion: v1\nkind: Config\n# v0.6's\n",
        "the target's credential replaces the old YurtHub's"
    );
    run(root, servant::revert(root));
    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new());

    // a file outside YurtHub's own directory that yurtctl did not write stays a refusal:
    // someone else's yurthub binary is never taken over
    let files = tempfile::tempdir().unwrap();
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    run(root, servant::convert(root, &full(&n, secrets.path())));
    let binary = root.join("usr/local/bin/yurthub");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::write(&binary, "someone else's").unwrap();
    let refused = servant::upgrade(
        root,
        &service_with_bootstrap(&n, files.path(), secrets.path()),
    )
    .expect_err("refused");
    assert!(
        refused.to_string().contains("was not written by yurtctl"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&binary).unwrap(), "someone else's");
}

/// An upgrade killed after any number of its changes is finished by the next one, or undone
/// by revert: the record that lists the new files is written before them, and the old
/// installation's entries stay in it.
#[test]
fn an_upgrade_stopped_after_any_of_its_changes_is_finished_by_the_next_or_reverted() {
    let (secrets, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, n) = seed(Layout::Kind, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    run(root, servant::convert(root, &full(&n, secrets.path())));
    let target = service_with_bootstrap(&n, files.path(), secrets.path());
    let whole = tempfile::tempdir().unwrap();
    copy_tree(root, whole.path());
    run(whole.path(), servant::upgrade(whole.path(), &target));
    let upgraded = tree(whole.path());
    let steps = servant::upgrade(root, &target).unwrap().changes.len();
    assert!(steps >= 4, "{steps}");
    for done in 0..steps {
        for finish in ["upgrade", "revert"] {
            let copy = tempfile::tempdir().unwrap();
            copy_tree(root, copy.path());
            let mut first = servant::upgrade(copy.path(), &target).unwrap();
            first.changes.truncate(done);
            servant::apply(copy.path(), &first).unwrap();
            let (want, next) = match finish {
                "upgrade" => (&upgraded, servant::upgrade(copy.path(), &target)),
                _ => (&before, servant::revert(copy.path())),
            };
            run(copy.path(), next);
            assert_eq!(
                diff(want, &tree(copy.path())),
                Vec::<String>::new(),
                "stopped after {done} of {steps} changes, then {finish}"
            );
        }
    }
}

#[test]
fn a_node_yurtctl_never_converted_is_not_upgraded() {
    let (secrets, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, n) = seed(Layout::Kubeadm, Role::Worker, &SeedOptions::default());
    let root = dir.path();
    let before = tree(root);
    let e = servant::upgrade(
        root,
        &service_with_bootstrap(&n, files.path(), secrets.path()),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("convert it instead"), "{e}");
    assert_eq!(diff(&before, &tree(root)), Vec::<String>::new());
}
