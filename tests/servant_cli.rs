//! `yurtctl node-servant` as a process against temp host roots: bad input gives the right
//! exit code and a message that says what to do, and changes nothing; dry runs, JSON results
//! and idempotence of the subcommands that need no kubelet restart.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use yurtsim::nodes::layout::{Layout, NodeSeed, Role, SeedOptions, seed_node};

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no JSON on stdout: {:?}", self.stdout));
        serde_json::from_str(line).unwrap()
    }
}

mod support;

fn yurtctl(args: &[&str]) -> Out {
    let o = Command::new(BIN)
        .args(args)
        .env_remove("NODE_NAME")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

fn seeded(layout: Layout, role: Role) -> (tempfile::TempDir, String) {
    let idx = if role == Role::ControlPlane { 0 } else { 1 };
    let (name, _) = layout.node_names(1, 1)[idx].clone();
    let n = NodeSeed {
        name: name.clone(),
        role,
        internal_ip: layout.node_ip(idx),
        api_server: layout.api_server(&layout.node_ip(0)),
        kubernetes_version: "v1.33.1".into(),
        cluster_name: "kubernetes".into(),
    };
    let d = tempfile::tempdir().unwrap();
    seed_node(d.path(), layout, &n, &SeedOptions::default()).unwrap();
    (d, name)
}

/// Every file, directory and symlink under `root` with content and mode.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut m = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap().display().to_string();
                m.insert(rel, (t.into_bytes(), 0));
            } else if meta.is_dir() {
                m.insert(rel + "/", (Vec::new(), mode));
                stack.push(p);
            } else {
                m.insert(rel, (fs::read(&p).unwrap(), mode));
            }
        }
    }
    m
}

fn changed(
    a: &BTreeMap<String, (Vec<u8>, u32)>,
    b: &BTreeMap<String, (Vec<u8>, u32)>,
) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// Writes the bootstrap kubeconfig and, beside it, the YurtHub manifest (as a node Job gets
/// them from its Secret and ConfigMap volumes); returns the bootstrap file's path.
fn bootstrap_file(dir: &Path) -> PathBuf {
    fs::write(
        hub_manifest(dir),
        support::yurthub_manifest(
            "openyurt-v1.6",
            "https://10.0.0.1:6443",
            yurtctl::render::WorkingMode::Edge,
        ),
    )
    .unwrap();
    let p = dir.join("bootstrap-hub.conf");
    fs::write(
        &p,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    p
}

/// The manifest beside a bootstrap file, as an argument.
fn manifest_beside(bootstrap: &Path) -> &'static str {
    let p = hub_manifest(bootstrap.parent().unwrap());
    Box::leak(p.into_os_string().into_string().unwrap().into_boxed_str())
}

/// The manifest file [`bootstrap_file`] writes beside the bootstrap file.
fn hub_manifest(dir: &Path) -> PathBuf {
    dir.join("yurthub.yaml")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `node-servant convert` for an edge node with a bootstrap file: the arguments most cases share.
fn edge_convert<'a>(root: &'a Path, bootstrap: &'a Path, node: &'a str) -> Vec<&'a str> {
    vec![
        "node-servant",
        "convert",
        "--host-root",
        s(root),
        "--yurthub-manifest",
        manifest_beside(bootstrap),
        "--bootstrap-file",
        s(bootstrap),
        "--node-name",
        node,
    ]
}

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        .unwrap_or(false)
}

#[test]
fn a_missing_host_root_is_bad_input_and_an_omitted_one_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("no-such-dir");
    for sub in [
        "preflight",
        "revert",
        "disable-nodelifecycle",
        "enable-nodelifecycle",
    ] {
        let o = yurtctl(&["node-servant", sub, "--host-root", s(&missing)]);
        assert_eq!(o.code, 3, "{sub}: {}", o.stderr);
        assert!(
            o.stderr.contains("is not a directory")
                && o.stderr.contains("--host-root /host")
                && o.stderr.contains("nothing was changed"),
            "{sub}: {}",
            o.stderr
        );
    }
    let o = yurtctl(&[
        "node-servant",
        "revert",
        "-o",
        "json",
        "--host-root",
        s(&missing),
    ]);
    assert_eq!(o.code, 3);
    let j = o.json();
    assert_eq!(j["ok"], false);
    assert_eq!(j["error"]["exitCode"], 3);
    assert_eq!(j["error"]["reason"], "preflight");
    assert!(!missing.exists());

    let o = yurtctl(&["node-servant", "revert"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--host-root <DIR>"), "{}", o.stderr);
}

#[test]
fn unknown_flags_bad_durations_and_traversal_are_usage_errors_and_change_nothing() {
    let (root, node) = seeded(Layout::Kubeadm, Role::Worker);
    let secrets = tempfile::tempdir().unwrap();
    let boot = bootstrap_file(secrets.path());
    let before = tree(root.path());
    let base = edge_convert(root.path(), &boot, &node);
    let with = |extra: &[&str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        yurtctl(&v)
    };

    let o = with(&["--bogus"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("unexpected argument '--bogus'"),
        "{}",
        o.stderr
    );

    for (bad, why) in [
        ("5", "missing unit"),
        ("3d", "unknown unit"),
        ("0s", "greater than zero"),
    ] {
        let o = with(&["--yurthub-timeout", bad]);
        assert_eq!(o.code, 2, "{bad}: {}", o.stderr);
        assert!(
            o.stderr.contains("--yurthub-timeout") && o.stderr.contains(why),
            "{bad}: {}",
            o.stderr
        );
    }

    let o = with(&["--manifest-file", "../yurthub.yaml"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("../yurthub.yaml"), "{}", o.stderr);

    // both credentials, or none
    let o = with(&["--join-token-file", s(&boot)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
    let no_credential: Vec<&str> = base
        .iter()
        .copied()
        .filter(|a| *a != "--bootstrap-file" && *a != s(&boot))
        .collect();
    let o = yurtctl(&no_credential);
    assert_eq!(o.code, 2, "a static pod needs its credential: {}", o.stderr);
    assert!(o.stderr.contains("--bootstrap-file"), "{}", o.stderr);

    // YurtHub as a service: all of unit, drop-in, binary and pool, and never with a manifest
    let unit = secrets.path().join("yurthub.service");
    let o = with(&["--yurthub-unit", s(&unit)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
    let service_only: Vec<&str> = no_credential
        .iter()
        .copied()
        .filter(|a| !a.starts_with("--yurthub-manifest") && !a.ends_with("yurthub.yaml"))
        .collect();
    let mut partial = service_only.clone();
    partial.extend(["--yurthub-unit", s(&unit)]);
    let o = yurtctl(&partial);
    assert_eq!(o.code, 2, "{}", o.stderr);
    for missing in ["--yurthub-drop-in", "--yurthub-binary", "--nodepool-name"] {
        assert!(o.stderr.contains(missing), "{missing}: {}", o.stderr);
    }

    let o = yurtctl(&[
        "-o",
        "yaml",
        "node-servant",
        "preflight",
        "--host-root",
        s(root.path()),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("-o json"), "{}", o.stderr);

    for name in ["../kube-apiserver", "a/b", "..", ".hidden", "Kube"] {
        let o = yurtctl(&[
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            s(root.path()),
            "--name",
            name,
            "--manifest-file",
            s(&boot),
        ]);
        assert_eq!(o.code, 2, "{name}: {}", o.stderr);
        assert!(
            o.stderr.contains("--name <NAME>") && o.stderr.contains("invalid name"),
            "{name}: {}",
            o.stderr
        );
        let o = yurtctl(&[
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            s(root.path()),
            "--name",
            name,
            "--restore",
        ]);
        assert_eq!(o.code, 2, "{name} --restore: {}", o.stderr);
    }
    let o = yurtctl(&[
        "node-servant",
        "static-pod-upgrade",
        "--host-root",
        s(root.path()),
        "--name",
        "web",
        "--restore",
        "--manifest-file",
        s(&boot),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);

    assert!(changed(&before, &tree(root.path())).is_empty());
}

#[test]
fn bad_input_found_while_planning_exits_3_and_changes_nothing() {
    let (root, node) = seeded(Layout::Kind, Role::Worker);
    let secrets = tempfile::tempdir().unwrap();
    bootstrap_file(secrets.path()); // and the manifest beside it
    let before = tree(root.path());

    // not a kubeconfig
    let junk = secrets.path().join("junk");
    fs::write(&junk, "hello: world\n").unwrap();
    let mut args = edge_convert(root.path(), &junk, &node);
    args.extend(["--yurthub-timeout", "100ms"]);
    let o = yurtctl(&args);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(
        o.stderr.contains(s(&junk)) && o.stderr.contains("kind: Config"),
        "{}",
        o.stderr
    );

    // a node name that is no DNS name, through the NODE_NAME environment
    let boot = bootstrap_file(secrets.path());
    let o = Command::new(BIN)
        .args([
            "node-servant",
            "convert",
            "--host-root",
            s(root.path()),
            "--yurthub-manifest",
            s(&hub_manifest(secrets.path())),
            "--bootstrap-file",
            s(&boot),
        ])
        .env("NODE_NAME", "Not_A_Node")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "a usage error, before anything is read"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("Not_A_Node"));

    // no kube-controller-manager on a worker
    let o = yurtctl(&[
        "node-servant",
        "disable-nodelifecycle",
        "--host-root",
        s(root.path()),
    ]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(
        o.stderr.contains("kube-controller-manager.yaml")
            && o.stderr.contains("does not exist")
            && o.stderr.contains("--controllers=*,-nodelifecycle"),
        "{}",
        o.stderr
    );

    // an unreadable or non-Pod manifest file
    let o = yurtctl(&[
        "node-servant",
        "static-pod-upgrade",
        "--host-root",
        s(root.path()),
        "--name",
        "web",
        "--manifest-file",
        s(&secrets.path().join("missing.yaml")),
    ]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.contains("--manifest-file") && o.stderr.contains("missing.yaml"));
    let o = yurtctl(&[
        "node-servant",
        "static-pod-upgrade",
        "--host-root",
        s(root.path()),
        "--name",
        "web",
        "--manifest-file",
        s(&boot),
    ]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.contains("not a v1 Pod"), "{}", o.stderr);

    assert!(changed(&before, &tree(root.path())).is_empty());
}

#[test]
fn dry_runs_print_the_plan_and_write_nothing() {
    let (root, node) = seeded(Layout::Minikube, Role::Worker);
    let secrets = tempfile::tempdir().unwrap();
    let boot = bootstrap_file(secrets.path());
    let before = tree(root.path());
    let mut args = edge_convert(root.path(), &boot, &node);
    args.push("--dry-run");
    let o = yurtctl(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for line in [
        "create\t/var/lib/yurthub/bootstrap-hub.conf",
        "create\t/etc/kubernetes/manifests/yurthub.yaml",
        "create\t/var/lib/openyurt/kubelet.conf",
        "create\t/var/lib/yurtctl/backup/convert.json",
    ] {
        assert!(o.stdout.lines().any(|l| l == line), "{line}: {}", o.stdout);
    }
    assert!(
        o.stdout.lines().any(|l| l.starts_with("modify\t")),
        "{}",
        o.stdout
    );
    assert!(o.stderr.contains("nothing was written"), "{}", o.stderr);

    let mut j = args.to_vec();
    j.extend(["-o", "json"]);
    let o = yurtctl(&j);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["apiVersion"], "yurtctl.openyurt.io/v1alpha1");
    assert_eq!(v["kind"], "NodeServantResult");
    assert_eq!(v["subcommand"], "convert");
    assert_eq!(
        (v["dryRun"].clone(), v["ok"].clone(), v["changed"].clone()),
        (true.into(), true.into(), true.into())
    );
    assert!(v["changes"].as_array().unwrap().len() >= 5);

    let o = yurtctl(&[
        "node-servant",
        "revert",
        "--dry-run",
        "--host-root",
        s(root.path()),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("no record of converting"), "{}", o.stderr);

    assert!(changed(&before, &tree(root.path())).is_empty());
}

/// A node another tool converted (upstream's node-servant appends its flags to
/// kubeadm-flags.env: openyurtio/openyurt@v1.7.0 pkg/node-servant/components/kubelet.go
/// appendConfig) is refused by revert, which changes nothing and never calls it reverted.
#[test]
fn revert_refuses_a_node_another_tool_converted_and_changes_nothing() {
    let (root, _node) = seeded(Layout::Kubeadm, Role::Worker);
    let env = root.path().join("var/lib/kubelet/kubeadm-flags.env");
    let text = fs::read_to_string(&env).unwrap();
    let end = text.rfind('"').unwrap();
    let upstream = format!(
        "{} --kubeconfig=/var/lib/openyurt/kubelet.conf --bootstrap-kubeconfig= {}",
        &text[..end],
        &text[end..]
    );
    fs::write(&env, upstream).unwrap();
    fs::create_dir_all(root.path().join("var/lib/openyurt")).unwrap();
    fs::write(
        root.path().join("var/lib/openyurt/kubelet.conf"),
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: http://127.0.0.1:10261}\n  name: default-cluster\n",
    )
    .unwrap();
    let before = tree(root.path());
    let o = yurtctl(&[
        "node-servant",
        "revert",
        "--host-root",
        s(root.path()),
        "-o",
        "json",
    ]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["ok"], false, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("another tool converted this node"), "{v}");
    assert!(message.contains("kubeadm-flags.env"), "{v}");
    assert!(changed(&before, &tree(root.path())).is_empty());
}

#[test]
fn preflight_reports_json_with_the_layout_and_changes_nothing() {
    for layout in Layout::all() {
        let (root, _) = seeded(layout, Role::Worker);
        let before = tree(root.path());
        let o = yurtctl(&["node-servant", "preflight", "--host-root", s(root.path())]);
        let v = o.json();
        assert_eq!(
            v["preflight"]["layout"],
            format!("{layout:?}")
                .to_lowercase()
                .replace("kubeadmusr", "kubeadm-usr")
        );
        assert_eq!(v["preflight"]["converted"], false);
        assert!(
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "ports")
        );
        // the only way this fails here: not root, or YurtHub's ports taken on this machine
        if o.code != 0 {
            assert_eq!(o.code, 3);
            assert!(
                v["checks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["ok"] == false && (c["name"] == "root" || c["name"] == "ports")),
                "{}",
                o.stdout
            );
        }
        assert!(changed(&before, &tree(root.path())).is_empty());
    }
}

#[test]
fn nodelifecycle_and_static_pods_are_idempotent_and_undone_exactly() {
    let (root, _) = seeded(Layout::Kubeadm, Role::ControlPlane);
    let before = tree(root.path());
    let r = s(root.path());
    let o = yurtctl(&[
        "node-servant",
        "disable-nodelifecycle",
        "--host-root",
        r,
        "-o",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["changed"], true);
    let kcm = fs::read_to_string(
        root.path()
            .join("etc/kubernetes/manifests/kube-controller-manager.yaml"),
    )
    .unwrap();
    assert!(kcm.contains(",-nodelifecycle"), "{kcm}");
    let mid = tree(root.path());
    let o = yurtctl(&[
        "node-servant",
        "disable-nodelifecycle",
        "--host-root",
        r,
        "-o",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["changed"], false);
    assert!(o.stderr.contains("nothing to do"), "{}", o.stderr);
    assert!(changed(&mid, &tree(root.path())).is_empty());
    for _ in 0..2 {
        let o = yurtctl(&["node-servant", "enable-nodelifecycle", "--host-root", r]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(changed(&before, &tree(root.path())), Vec::<String>::new());
    }

    let secrets = tempfile::tempdir().unwrap();
    let m = secrets.path().join("web.yaml");
    fs::write(&m, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n").unwrap();
    let up = [
        "node-servant",
        "static-pod-upgrade",
        "--host-root",
        r,
        "--name",
        "web",
        "--manifest-file",
        s(&m),
    ];
    let o = yurtctl(&up);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        fs::read(root.path().join("etc/kubernetes/manifests/web.yaml")).unwrap(),
        fs::read(&m).unwrap()
    );
    let names: Vec<String> = fs::read_dir(root.path().join("etc/kubernetes/manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "no temp files left: {names:?}"
    );
    let o = yurtctl(&up);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("nothing to do"), "{}", o.stderr);
    for _ in 0..2 {
        let o = yurtctl(&[
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            r,
            "--name",
            "web",
            "--restore",
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(changed(&before, &tree(root.path())), Vec::<String>::new());
    }
}

#[test]
fn a_hub_that_never_gets_healthy_times_out_with_exit_5_and_the_kubelet_untouched() {
    if !is_root() {
        eprintln!("skipped: convert needs root");
        return;
    }
    // Nothing serves YurtHub's health endpoint on this machine's loopback (if something did,
    // this test could not tell).
    if std::net::TcpStream::connect(("127.0.0.1", 10267)).is_ok() {
        eprintln!("skipped: 127.0.0.1:10267 is in use on this machine");
        return;
    }
    let (root, node) = seeded(Layout::KubeadmUsr, Role::Worker);
    let secrets = tempfile::tempdir().unwrap();
    let boot = bootstrap_file(secrets.path());
    let before = tree(root.path());
    let o = yurtctl(&[
        "node-servant",
        "convert",
        "-o",
        "json",
        "--host-root",
        s(root.path()),
        "--yurthub-manifest",
        s(&hub_manifest(secrets.path())),
        "--bootstrap-file",
        s(&boot),
        "--node-name",
        &node,
        "--yurthub-timeout",
        "600ms",
    ]);
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert!(
        o.stderr.contains("did not report ready")
            && o.stderr.contains("NOT redirected")
            && o.stderr.contains("/etc/kubernetes/kubelet.conf")
            && o.stderr
                .contains("/etc/kubernetes/manifests/yurthub.yaml stays installed"),
        "{}",
        o.stderr
    );
    let v = o.json();
    assert_eq!(v["error"]["exitCode"], 5);
    assert_eq!(v["error"]["reason"], "timeout");
    // only YurtHub's files (and our record) were added; no existing file changed
    let after = tree(root.path());
    for k in changed(&before, &after) {
        assert!(!before.contains_key(&k), "{k} changed");
        assert!(
            k.starts_with("etc/kubernetes/manifests/yurthub.yaml")
                || k.starts_with("var/lib/yurthub")
                || k.starts_with("var/lib/yurtctl"),
            "unexpected {k}"
        );
    }
    // revert removes it again; the kubelet files were never touched, so no restart is needed
    let o = yurtctl(&[
        "node-servant",
        "revert",
        "-o",
        "json",
        "--host-root",
        s(root.path()),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["hostCommands"], Value::Null);
    assert_eq!(changed(&before, &tree(root.path())), Vec::<String>::new());
}

fn help(args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .env("COLUMNS", "100")
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn node_servant_is_hidden_and_its_help_is_stable() {
    let top = help(&["--help"]);
    assert!(!top.contains("node-servant"), "{top}");
    insta::assert_snapshot!("node_servant_help", help(&["node-servant", "--help"]));
    insta::assert_snapshot!(
        "node_servant_convert_help",
        help(&["node-servant", "convert", "--help"])
    );
    insta::assert_snapshot!(
        "node_servant_static_pod_upgrade_help",
        help(&["node-servant", "static-pod-upgrade", "--help"])
    );
}
