//! Bad input changes nothing (issue 7): every row runs the real binary with one wrong input
//! against ONE shared yurtsim and asserts the exit code, that the message names the offending
//! input, that no write request reached the API server (the sim's metrics), that a usage error
//! (exit 2) came before any request at all (issue 17: values wrong on their face are checked
//! before connecting) and that no node file changed (node roots compared before and after).
//!
//! The table is data: add rows for new commands (revert, status, staticpod …) to `ROWS`.
//! Placeholders in arguments: `@kc` the sim's kubeconfig, `@dir/NAME` a file of the prepared
//! kubeconfig directory (see `prepare`), `@node` the node root of worker-1, `@url` the sim's
//! URL, `@closed` a URL nobody listens on.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yurtsim::Layout;

/// One bad input.
struct Row {
    /// What is wrong, for failure messages.
    what: &'static str,
    args: &'static [&'static str],
    exit: i32,
    /// A part of stderr that names the offending input.
    names: &'static str,
}

const fn row(
    what: &'static str,
    args: &'static [&'static str],
    exit: i32,
    names: &'static str,
) -> Row {
    Row {
        what,
        args,
        exit,
        names,
    }
}

const USAGE: i32 = 2;
const PREFLIGHT: i32 = 3;

/// The node-servant convert arguments that are fine; rows add the bad one.
macro_rules! servant_convert {
    ($($extra:expr),* $(,)?) => {
        &["node-servant", "convert", "--host-root", "@node", "--node-name", "worker-1",
          "--bootstrap-file", "@dir/bootstrap.conf", "--yurthub-manifest", "@dir/yurthub.yaml",
          $($extra),*]
    };
}

const ROWS: &[Row] = &[
    // --- convert: --ignore-preflight-errors (kubeadm's semantics; only checks that may be ignored)
    row(
        "a check that cannot be ignored",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--ignore-preflight-errors",
            "NodeExists",
        ],
        USAGE,
        "\"NodeExists\" is not a check that can be ignored; the checks are KubernetesVersion, Provider, or all",
    ),
    row(
        "all mixed with a check name",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--ignore-preflight-errors=all,KubernetesVersion",
        ],
        USAGE,
        "all already names every check",
    ),
    // --- convert: node lists (an unknown node is a preflight finding of the planner)
    row(
        "invalid node name",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--cloud-nodes",
            "Bad_Node",
        ],
        USAGE,
        "\"Bad_Node\"",
    ),
    row(
        "node name starting with '-'",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--edge-nodes=-worker",
        ],
        USAGE,
        "\"-worker\"",
    ),
    row(
        "empty node in a list",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--edge-nodes",
            "worker-1,,worker-2",
        ],
        USAGE,
        "\"\"",
    ),
    row(
        "node both cloud and edge",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--cloud-nodes",
            "worker-1",
            "--edge-nodes",
            "worker-1",
        ],
        USAGE,
        "worker-1",
    ),
    row(
        "unknown cloud node",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--cloud-nodes",
            "ghost-node",
        ],
        PREFLIGHT,
        "ghost-node",
    ),
    row(
        "unknown edge node",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--edge-nodes",
            "worker-1,phantom",
        ],
        PREFLIGHT,
        "phantom",
    ),
    row(
        "--all-edge with --edge-nodes",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--all-edge",
            "--edge-nodes",
            "worker-1",
        ],
        USAGE,
        "--all-edge",
    ),
    // --- convert: values
    row(
        "duration without unit",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--job-timeout",
            "300",
        ],
        USAGE,
        "\"300\"",
    ),
    row(
        "duration with unknown unit",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--job-timeout",
            "5x",
        ],
        USAGE,
        "\"5x\"",
    ),
    row(
        "negative duration",
        &["convert", "--kubeconfig", "@kc", "-y", "--job-timeout=-5s"],
        USAGE,
        "-5s",
    ),
    row(
        "zero duration",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--job-timeout",
            "0s",
        ],
        USAGE,
        "\"0s\"",
    ),
    row(
        "zero concurrency",
        &["convert", "--kubeconfig", "@kc", "-y", "--concurrency", "0"],
        USAGE,
        "\"0\"",
    ),
    row(
        "negative concurrency",
        &["convert", "--kubeconfig", "@kc", "-y", "--concurrency=-3"],
        USAGE,
        "\"-3\"",
    ),
    row(
        "non-numeric concurrency",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--concurrency",
            "many",
        ],
        USAGE,
        "\"many\"",
    ),
    row(
        "unknown phase",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--skip-phases",
            "nodes/bogus",
        ],
        USAGE,
        "\"nodes/bogus\"",
    ),
    row(
        "unknown profile",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--profile",
            "openyurt-v9",
        ],
        USAGE,
        "\"openyurt-v9\"",
    ),
    row(
        "unknown flag",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--cloud-node",
            "worker-1",
        ],
        USAGE,
        "--cloud-node",
    ),
    row(
        "unexpected argument",
        &["convert", "--kubeconfig", "@kc", "-y", "everything"],
        USAGE,
        "everything",
    ),
    // --- global flags
    row(
        "unknown output format",
        &["convert", "--kubeconfig", "@kc", "-y", "-o", "xml"],
        USAGE,
        "xml",
    ),
    row(
        "unknown dry-run mode",
        &["convert", "--kubeconfig", "@kc", "-y", "--dry-run=maybe"],
        USAGE,
        "maybe",
    ),
    row(
        "non-numeric qps",
        &["convert", "--kubeconfig", "@kc", "-y", "--qps", "fast"],
        USAGE,
        "fast",
    ),
    row(
        "negative qps",
        &["convert", "--kubeconfig", "@kc", "-y", "--qps=-1"],
        USAGE,
        "\"-1\" is not a valid rate",
    ),
    row(
        "NaN qps",
        &["convert", "--kubeconfig", "@kc", "-y", "--qps", "NaN"],
        USAGE,
        "\"NaN\" is not a valid rate",
    ),
    row(
        "namespace that is no DNS-1123 label",
        &[
            "staticpod",
            "status",
            "web",
            "--kubeconfig",
            "@kc",
            "-n",
            "Kube_System",
        ],
        USAGE,
        "\"Kube_System\" is not a valid name",
    ),
    row(
        "negative burst",
        &["convert", "--kubeconfig", "@kc", "-y", "--burst=-1"],
        USAGE,
        "-1",
    ),
    row(
        "-v with -q",
        &["convert", "--kubeconfig", "@kc", "-y", "-v", "-q"],
        USAGE,
        "--quiet",
    ),
    row(
        "unknown command",
        &["conver", "--kubeconfig", "@kc"],
        USAGE,
        "conver",
    ),
    // --- kubeconfig problems: preflight, nothing changed
    row(
        "unknown context",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--context",
            "prod-eu",
        ],
        PREFLIGHT,
        "\"prod-eu\"",
    ),
    row(
        "missing kubeconfig",
        &["convert", "--kubeconfig", "@dir/missing.yaml", "-y"],
        PREFLIGHT,
        "missing.yaml",
    ),
    row(
        "kubeconfig not YAML",
        &["convert", "--kubeconfig", "@dir/garbage.yaml", "-y"],
        PREFLIGHT,
        "garbage.yaml",
    ),
    row(
        "context names a missing user",
        &["convert", "--kubeconfig", "@dir/no-user.yaml", "-y"],
        PREFLIGHT,
        "\"ghost-user\"",
    ),
    row(
        "context names a missing cluster",
        &["convert", "--kubeconfig", "@dir/no-cluster.yaml", "-y"],
        PREFLIGHT,
        "\"ghost-cluster\"",
    ),
    row(
        "no current context",
        &["convert", "--kubeconfig", "@dir/no-current.yaml", "-y"],
        PREFLIGHT,
        "current-context",
    ),
    row(
        "wrong bearer token",
        &["convert", "--kubeconfig", "@dir/wrong-token.yaml", "-y"],
        PREFLIGHT,
        "401",
    ),
    row(
        "https at a plain-HTTP server",
        &["convert", "--kubeconfig", "@dir/tls.yaml", "-y"],
        PREFLIGHT,
        "TLS",
    ),
    row(
        "unreachable server",
        &["convert", "--kubeconfig", "@dir/closed.yaml", "-y"],
        PREFLIGHT,
        "@closed",
    ),
    // --- node-servant: values are checked before any file is read
    row(
        "invalid image reference",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--image",
            "yurthub=openyurt/yurthub v1",
        ],
        USAGE,
        "\"openyurt/yurthub v1\"",
    ),
    row(
        "upper-case image path",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--image",
            "yurthub=openyurt/YurtHub:v1.6",
        ],
        USAGE,
        "\"YurtHub\"",
    ),
    row(
        "bad image digest",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--image",
            "yurthub=openyurt/yurthub@sha256:beef",
        ],
        USAGE,
        "sha256:beef",
    ),
    row(
        "YurtHub manifest file name with a path",
        servant_convert!["--manifest-file", "../yurthub.yaml"],
        USAGE,
        "../yurthub.yaml",
    ),
    row(
        "servant image with a space",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--servant-image",
            "yurtctl servant:1",
        ],
        USAGE,
        "yurtctl servant:1",
    ),
    row(
        "bad hub timeout",
        servant_convert!["--yurthub-timeout", "soon"],
        USAGE,
        "\"soon\"",
    ),
    row(
        "two credentials",
        servant_convert!["--join-token-file", "@dir/bootstrap.conf"],
        USAGE,
        "--join-token-file",
    ),
    row(
        "manifest name with a path",
        &[
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            "@node",
            "--name",
            "../../etc/passwd",
            "--manifest-file",
            "@dir/bootstrap.conf",
        ],
        USAGE,
        "../../etc/passwd",
    ),
    row(
        "unknown node-servant subcommand",
        &["node-servant", "upgrade-everything", "--host-root", "@node"],
        USAGE,
        "upgrade-everything",
    ),
    row(
        "bad kubelet restart timeout",
        &[
            "node-servant",
            "revert",
            "--host-root",
            "@node",
            "--kubelet-restart-timeout",
            "2 m",
        ],
        USAGE,
        "\"2 m\"",
    ),
    // --- upgrade
    row(
        "upgrade: zero max-unavailable",
        &[
            "upgrade",
            "--kubeconfig",
            "@kc",
            "-y",
            "--max-unavailable",
            "0",
        ],
        USAGE,
        "max-unavailable",
    ),
    row(
        "upgrade: partition above 100%",
        &[
            "upgrade",
            "--kubeconfig",
            "@kc",
            "-y",
            "--partition",
            "120%",
        ],
        USAGE,
        "120%",
    ),
    row(
        "upgrade: the same priority label twice",
        &[
            "upgrade",
            "--kubeconfig",
            "@kc",
            "-y",
            "--priority",
            "zone=a:1",
            "--priority",
            "zone=a:2",
        ],
        USAGE,
        "zone=a is already given",
    ),
    row(
        "upgrade: zero canary",
        &["upgrade", "--kubeconfig", "@kc", "-y", "--canary", "0"],
        USAGE,
        "\"0\"",
    ),
    row(
        "upgrade: --rollback with a target",
        &[
            "upgrade",
            "--kubeconfig",
            "@kc",
            "-y",
            "--rollback",
            "--profile",
            "openyurt-v1.7",
        ],
        USAGE,
        "--profile",
    ),
    // --- revert and staticpod
    row(
        "revert: bad node name",
        &["revert", "--kubeconfig", "@kc", "-y", "--nodes", "Worker_1"],
        USAGE,
        "Worker_1",
    ),
    row(
        "revert: zero concurrency",
        &["revert", "--kubeconfig", "@kc", "-y", "--concurrency", "0"],
        USAGE,
        "\"0\"",
    ),
    row(
        "revert: unknown phase",
        &[
            "revert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--skip-phases",
            "nodes/bogus",
        ],
        USAGE,
        "nodes/bogus",
    ),
    row(
        "staticpod: image with a space",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx 1.19.2",
        ],
        USAGE,
        "nginx 1.19.2",
    ),
    row(
        "staticpod: zero max-unavailable",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--max-unavailable",
            "0",
        ],
        USAGE,
        "max-unavailable",
    ),
    row(
        "staticpod: max-unavailable above 100%",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--max-unavailable",
            "150%",
        ],
        USAGE,
        "150%",
    ),
    row(
        "staticpod: priority without a weight",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--priority",
            "zone=a",
        ],
        USAGE,
        "zone=a",
    ),
    row(
        "staticpod: manifest name with a path",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--manifest",
            "../nginx.yaml",
        ],
        USAGE,
        "../nginx.yaml",
    ),
    row(
        "staticpod: unknown strategy",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "big-bang",
            "--image",
            "nginx:1.19.2",
        ],
        USAGE,
        "big-bang",
    ),
    row(
        "staticpod: revision that is not a number",
        &[
            "staticpod",
            "rollback",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--to-revision",
            "latest",
        ],
        USAGE,
        "latest",
    ),
    row(
        "staticpod: --force-unlock given a value",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--force-unlock=yes",
        ],
        USAGE,
        "--force-unlock",
    ),
    row(
        "staticpod: ota apply --force-unlock given a value",
        &[
            "staticpod",
            "ota",
            "apply",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--node",
            "worker-1",
            "--force-unlock=now",
        ],
        USAGE,
        "--force-unlock",
    ),
    // --- issue 17: values wrong on their face are refused before any request, even a read
    row(
        "staticpod: CONTAINER=IMAGE with an upper-case image and an empty tag",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "web=NGINX::",
        ],
        USAGE,
        "\"NGINX::\" is not a valid image reference",
    ),
    row(
        "staticpod: upper-case image without a container",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "NGINX",
        ],
        USAGE,
        "path component \"NGINX\"",
    ),
    row(
        "staticpod: -f pod with an invalid image",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "-f",
            "@dir/bad-image-pod.yaml",
        ],
        USAGE,
        "\"nginx:-1\" is not a valid image reference",
    ),
    row(
        "staticpod: servant image with a space",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--servant-image",
            "yurtctl servant:1",
        ],
        USAGE,
        "\"yurtctl servant:1\"",
    ),
    row(
        "staticpod: ota apply servant image with an unsupported digest",
        &[
            "staticpod",
            "ota",
            "apply",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--node",
            "worker-1",
            "--servant-image",
            "servant@md5:0123456789abcdef0123456789abcdef",
        ],
        USAGE,
        "digest \"md5:0123456789abcdef0123456789abcdef\"",
    ),
    row(
        "staticpod: revision 0 (revisions start at 1)",
        &[
            "staticpod",
            "rollback",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--to-revision",
            "0",
        ],
        USAGE,
        "\"0\" is not a revision number",
    ),
    row(
        "staticpod: label selector with an unclosed set",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "-l",
            "zone in (a",
        ],
        USAGE,
        "\"zone in (a\"",
    ),
    row(
        "staticpod: partition above 100%",
        &[
            "staticpod",
            "upgrade",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--strategy",
            "advanced-rolling-update",
            "--image",
            "nginx:1.19.2",
            "--partition",
            "101%",
        ],
        USAGE,
        "\"101%\"",
    ),
    row(
        "ota apply: invalid node name",
        &[
            "staticpod",
            "ota",
            "apply",
            "nginx",
            "--kubeconfig",
            "@kc",
            "-y",
            "--node",
            "Worker_1",
        ],
        USAGE,
        "\"Worker_1\"",
    ),
    row(
        "convert: image tag starting with '.'",
        &[
            "convert",
            "--kubeconfig",
            "@kc",
            "-y",
            "--image",
            "yurthub=openyurt/yurthub:.v1",
        ],
        USAGE,
        "tag \".v1\"",
    ),
    row(
        "staticpod: --watch given a value",
        &[
            "staticpod",
            "status",
            "nginx",
            "--kubeconfig",
            "@kc",
            "--watch=forever",
        ],
        USAGE,
        "--watch",
    ),
];

struct Prepared {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    node_root: PathBuf,
    url: String,
    closed: String,
}

fn kubeconfig_text(
    server: &str,
    token: &str,
    current: Option<&str>,
    cluster: &str,
    user: &str,
) -> String {
    let current = current
        .map(|c| format!("current-context: {c}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\n{current}clusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: x\n  context:\n    cluster: {cluster}\n    user: {user}\nusers:\n- name: u\n  user:\n    token: {token}\n"
    )
}

/// The files the `@dir/…` placeholders name.
fn prepare(sim: &yurtsim::Sim) -> Prepared {
    let dir = tempfile::tempdir().unwrap();
    let url = sim.url();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let files: [(&str, String); 9] = [
        ("garbage.yaml", "clusters: [unclosed\n\t- :".into()),
        (
            "no-user.yaml",
            kubeconfig_text(&url, "t", Some("x"), "c", "ghost-user"),
        ),
        (
            "no-cluster.yaml",
            kubeconfig_text(&url, "t", Some("x"), "ghost-cluster", "u"),
        ),
        (
            "no-current.yaml",
            kubeconfig_text(&url, "t", None, "c", "u"),
        ),
        (
            "wrong-token.yaml",
            kubeconfig_text(&url, "not-the-token", Some("x"), "c", "u"),
        ),
        (
            "tls.yaml",
            kubeconfig_text(
                &url.replacen("http://", "https://", 1),
                "t",
                Some("x"),
                "c",
                "u",
            ),
        ),
        (
            "closed.yaml",
            kubeconfig_text(&closed, "t", Some("x"), "c", "u"),
        ),
        (
            "bad-image-pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: nginx}\nspec: {containers: [{name: web, image: 'nginx:-1'}]}\n".into(),
        ),
        (
            "bootstrap.conf",
            kubeconfig_text(&url, "t", Some("x"), "c", "u"),
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    Prepared {
        kubeconfig: sim.kubeconfig_path(),
        node_root: sim.node_root("worker-1"),
        url,
        closed,
        dir,
    }
}

fn expand(s: &str, p: &Prepared) -> String {
    if let Some(name) = s.strip_prefix("@dir/") {
        return p.dir.path().join(name).display().to_string();
    }
    match s {
        "@kc" => p.kubeconfig.display().to_string(),
        "@node" => p.node_root.display().to_string(),
        "@url" => p.url.clone(),
        "@closed" => p.closed.clone(),
        other => other.to_string(),
    }
}

/// Every file under the node roots with its content.
fn node_files(roots: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                m.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            } else {
                m.insert(p.clone(), Vec::new());
            }
        }
    }
    m
}

fn changed(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = before
        .iter()
        .filter(|(p, c)| after.get(*p) != Some(*c))
        .map(|(p, _)| p.clone())
        .collect();
    v.extend(after.keys().filter(|p| !before.contains_key(*p)).cloned());
    v
}

/// Write requests the sim served, except access reviews (questions, not changes).
fn writes(sim: &yurtsim::Sim) -> Vec<String> {
    let m = sim.metrics().to_json();
    m["byVerbResource"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| {
            let (verb, resource) = k.split_once(' ').unwrap_or((k, ""));
            yurtsim::faults::WRITE_VERBS.contains(&verb) && !resource.starts_with("selfsubject")
        })
        .map(|(k, c)| format!("{k} ×{c}"))
        .collect()
}

fn run(args: &[String], home: &Path) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", home)
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_refused_naming_it_and_changes_nothing() {
    assert!(ROWS.len() >= 30, "issue 7 asks for at least 30 rows");
    let env = support::start_sim(3, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.30.2".into()
    })
    .await;
    let sim = &env.sim;
    let p = prepare(sim);
    let roots: Vec<PathBuf> = sim.node_names().iter().map(|n| sim.node_root(n)).collect();
    let home = p.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut failures = Vec::new();
    for r in ROWS {
        let args: Vec<String> = r.args.iter().map(|a| expand(a, &p)).collect();
        let names = expand(r.names, &p);
        let before = node_files(&roots);
        sim.metrics().reset();
        let (code, stdout, stderr) = tokio::task::block_in_place(|| run(&args, &home));
        let mut problems = Vec::new();
        if code != r.exit {
            problems.push(format!("exit {code}, expected {}", r.exit));
        }
        if !stderr.contains(&names) {
            problems.push(format!("stderr does not name {names:?}"));
        }
        if stderr.lines().filter(|l| !l.trim().is_empty()).count() == 0 {
            problems.push("no message".into());
        }
        if !stdout.trim().is_empty() {
            problems.push(format!("data on stdout: {stdout}"));
        }
        // a value wrong on its face is refused before yurtctl connects: not even a read
        let requests = sim.metrics().total(Some("yurtctl"), false);
        if r.exit == USAGE && requests > 0 {
            problems.push(format!(
                "a usage error after {requests} request(s) to the API server: {}",
                sim.metrics().to_json()["byVerbResource"]
            ));
        }
        let w = writes(sim);
        if !w.is_empty() {
            problems.push(format!("write requests reached the API server: {w:?}"));
        }
        let c = changed(&before, &node_files(&roots));
        if !c.is_empty() {
            problems.push(format!("node files changed: {c:?}"));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{} (yurtctl {}):\n  {}\n  stderr: {}",
                r.what,
                r.args.join(" "),
                problems.join("\n  "),
                stderr.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
    env.sim.shutdown().await;
}
