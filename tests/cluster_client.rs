//! Where the client configuration comes from (kubectl's precedence), what goes wrong with it,
//! and that requests carry our user agent. Uses temp files and an injected environment; the
//! one test that reads the real process environment holds `ENV`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use yurtctl::app::error::CommandError;
use yurtctl::cluster::ClusterError;
use yurtctl::cluster::client::ConnectError;
use yurtctl::cluster::client::{
    ClientOptions, ConfigEnv, ConfigSource, build_config, connect_with_env, resolve_source,
};
use yurtctl::exit::Exit;

static ENV: Mutex<()> = Mutex::new(());

/// A kubeconfig with one context per (context, cluster, server), the first current.
fn kubeconfig(
    dir: &Path,
    file: &str,
    current: Option<&str>,
    entries: &[(&str, &str, &str)],
) -> PathBuf {
    let mut s = String::from("apiVersion: v1\nkind: Config\n");
    if let Some(c) = current {
        s.push_str(&format!("current-context: {c}\n"));
    }
    s.push_str("clusters:\n");
    for (_, cluster, server) in entries {
        s.push_str(&format!(
            "- name: {cluster}\n  cluster:\n    server: {server}\n"
        ));
    }
    s.push_str("contexts:\n");
    for (ctx, cluster, _) in entries {
        s.push_str(&format!(
            "- name: {ctx}\n  context:\n    cluster: {cluster}\n    user: admin\n"
        ));
    }
    s.push_str("users:\n- name: admin\n  user:\n    token: abc\n");
    let p = dir.join(file);
    std::fs::write(&p, s).unwrap();
    p
}

fn env(kubeconfig: Option<OsString>, home: Option<&Path>, in_cluster: bool) -> ConfigEnv {
    ConfigEnv {
        kubeconfig,
        home: home.map(Path::to_path_buf),
        in_cluster,
    }
}

fn join(paths: &[&Path]) -> OsString {
    std::env::join_paths(paths).unwrap()
}

fn with(kubeconfig: Option<&Path>, context: Option<&str>) -> ClientOptions {
    ClientOptions {
        kubeconfig: kubeconfig.map(Path::to_path_buf),
        context: context.map(str::to_string),
        ..Default::default()
    }
}

async fn server_of(o: &ClientOptions, e: &ConfigEnv) -> Result<String, ClusterError> {
    build_config(o, e)
        .await
        .map(|(c, _)| c.cluster_url.to_string().trim_end_matches('/').to_string())
        .map_err(ClusterError::from)
}

#[tokio::test]
async fn precedence_is_flag_then_kubeconfig_list_then_home_then_in_cluster() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    let home_cfg = kubeconfig(
        &home.join(".kube"),
        "config",
        Some("h"),
        &[("h", "h", "http://home:1")],
    );
    let flag = kubeconfig(d.path(), "flag", Some("f"), &[("f", "f", "http://flag:1")]);
    let a = kubeconfig(
        d.path(),
        "a",
        Some("a"),
        &[("a", "a", "http://a:1"), ("shared", "a", "http://a:1")],
    );
    let b = kubeconfig(
        d.path(),
        "b",
        Some("b"),
        &[("b", "b", "http://b:1"), ("shared", "b2", "http://b2:1")],
    );
    let missing = d.path().join("missing");
    let list = Some(join(&[&a, &b]));

    // (options, environment, expected source, expected server)
    let rows: Vec<(ClientOptions, ConfigEnv, ConfigSource, &str)> = vec![
        // --kubeconfig wins over everything and is not merged with KUBECONFIG.
        (
            with(Some(&flag), None),
            env(list.clone(), Some(&home), true),
            ConfigSource::Flag(flag.clone()),
            "http://flag:1",
        ),
        // KUBECONFIG: merged, the first file's current-context wins.
        (
            with(None, None),
            env(list.clone(), Some(&home), true),
            ConfigSource::Env(vec![a.clone(), b.clone()]),
            "http://a:1",
        ),
        // …and contexts only the second file defines are reachable with --context.
        (
            with(None, Some("b")),
            env(list.clone(), Some(&home), false),
            ConfigSource::Env(vec![a.clone(), b.clone()]),
            "http://b:1",
        ),
        // Same context name in both: the first file's entry wins.
        (
            with(None, Some("shared")),
            env(list.clone(), None, false),
            ConfigSource::Env(vec![a.clone(), b.clone()]),
            "http://a:1",
        ),
        // Missing files in the list are skipped, as client-go does.
        (
            with(None, None),
            env(Some(join(&[&missing, &b])), Some(&home), false),
            ConfigSource::Env(vec![b.clone()]),
            "http://b:1",
        ),
        // An empty KUBECONFIG is as good as unset.
        (
            with(None, None),
            env(Some(OsString::new()), Some(&home), false),
            ConfigSource::Home(home_cfg.clone()),
            "http://home:1",
        ),
        (
            with(None, None),
            env(None, Some(&home), true),
            ConfigSource::Home(home_cfg.clone()),
            "http://home:1",
        ),
    ];
    for (i, (o, e, source, server)) in rows.iter().enumerate() {
        assert_eq!(&resolve_source(o, e).unwrap(), source, "row {i}");
        assert_eq!(server_of(o, e).await.unwrap(), *server, "row {i}");
    }
    // No files at all: in-cluster when we run in a pod, else a clear error.
    let nowhere = d.path().join("nowhere");
    assert_eq!(
        resolve_source(&with(None, None), &env(None, Some(&nowhere), true)).unwrap(),
        ConfigSource::InCluster
    );
    let e = resolve_source(&with(None, None), &env(None, Some(&nowhere), false)).unwrap_err();
    assert!(matches!(e, ConnectError::NoConfiguration { .. }), "{e}");
    assert!(e.to_string().contains("nowhere/.kube/config"), "{e}");
    assert!(e.to_string().contains("--kubeconfig"), "{e}");
    assert_eq!(exit_of(e.clone()), Exit::Preflight);
    // --context cannot be honoured by the in-cluster config.
    assert!(resolve_source(&with(None, Some("x")), &env(None, Some(&nowhere), true)).is_err());
}

#[tokio::test]
async fn broken_configurations_are_named_precisely() {
    let d = tempfile::tempdir().unwrap();
    let good = kubeconfig(
        d.path(),
        "good",
        Some("a"),
        &[("a", "a", "http://a:1"), ("b", "b", "http://b:1")],
    );
    let none = env(None, None, false);

    let missing = d.path().join("nope.yaml");
    let e = build_config(&with(Some(&missing), None), &none)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConnectError::KubeconfigNotFound {
                origin: "--kubeconfig",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("nope.yaml"), "{e}");
    let e = build_config(
        &with(None, None),
        &env(Some(missing.clone().into()), None, false),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("KUBECONFIG"), "{e}");

    let bad = d.path().join("bad.yaml");
    std::fs::write(&bad, "clusters: [unclosed\n").unwrap();
    let e = build_config(&with(Some(&bad), None), &none)
        .await
        .unwrap_err();
    assert!(matches!(e, ConnectError::KubeconfigInvalid { .. }), "{e}");
    assert!(e.to_string().contains("bad.yaml"), "{e}");

    let e = build_config(&with(Some(&good), Some("prod")), &none)
        .await
        .unwrap_err();
    let ConnectError::ContextNotFound { available, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(available, &["a", "b"]);
    assert!(
        e.to_string().contains("\"prod\"") && e.to_string().contains("a, b"),
        "{e}"
    );

    let no_current = kubeconfig(d.path(), "nocur", None, &[("a", "a", "http://a:1")]);
    let e = build_config(&with(Some(&no_current), None), &none)
        .await
        .unwrap_err();
    assert!(matches!(e, ConnectError::NoCurrentContext { .. }), "{e}");

    let dangling = d.path().join("dangling");
    std::fs::write(
        &dangling,
        "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: gone\n    user: admin\nclusters: []\nusers: []\n",
    )
    .unwrap();
    let e = build_config(&with(Some(&dangling), None), &none)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ConnectError::DanglingReference { what: "cluster", name, .. } if name == "gone"),
        "{e}"
    );
}

#[tokio::test]
async fn an_unreachable_server_fails_fast_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = kubeconfig(
        d.path(),
        "k",
        Some("a"),
        &[("a", "a", &format!("http://127.0.0.1:{port}"))],
    );
    let o = ClientOptions {
        connect_timeout: Duration::from_secs(2),
        ..with(Some(&p), None)
    };
    let begin = Instant::now();
    let e = match connect_with_env(&o, &env(None, None, false)).await {
        Ok(_) => panic!("connected to nothing"),
        Err(e) => e,
    };
    assert!(
        begin.elapsed() < Duration::from_secs(10),
        "{:?}",
        begin.elapsed()
    );
    assert!(
        matches!(e, ClusterError::Connect(ConnectError::Unreachable { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    assert_eq!(exit_of(e.clone()), Exit::Preflight);
}

#[tokio::test]
async fn the_process_environment_is_read_as_kubectl_does() {
    let d = tempfile::tempdir().unwrap();
    let a = kubeconfig(d.path(), "a", Some("a"), &[("a", "a", "http://a:1")]);
    let e = {
        let _g = ENV.lock().unwrap_or_else(|p| p.into_inner());
        let saved: Vec<(&str, Option<OsString>)> =
            ["KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST"]
                .into_iter()
                .map(|k| (k, std::env::var_os(k)))
                .collect();
        // SAFETY: only this test touches the environment, under ENV; nothing else in this test
        // binary reads these variables (all other tests inject a ConfigEnv).
        unsafe {
            std::env::set_var("KUBECONFIG", &a);
            std::env::set_var("HOME", d.path());
            std::env::remove_var("KUBERNETES_SERVICE_HOST");
        }
        let e = ConfigEnv::from_process();
        unsafe {
            for (k, v) in &saved {
                match v {
                    Some(v) => std::env::set_var(k, v),
                    None => std::env::remove_var(k),
                }
            }
        }
        e
    };
    assert_eq!(e.kubeconfig.as_deref(), Some(a.as_os_str()));
    assert_eq!(e.home.as_deref(), Some(d.path()));
    assert!(!e.in_cluster);
    let (config, source) = build_config(&ClientOptions::default(), &e).await.unwrap();
    assert_eq!(source, ConfigSource::Env(vec![a]));
    let ua = config
        .headers
        .iter()
        .find(|(n, _)| n.as_str() == "user-agent")
        .map(|(_, v)| v.to_str().unwrap().to_string());
    assert_eq!(ua, Some(format!("yurtctl/{}", env!("CARGO_PKG_VERSION"))));
}

mod support;

/// A kubeconfig for `server` with a bearer `token`.
fn kubeconfig_with_token(dir: &Path, file: &str, server: &str, token: &str) -> PathBuf {
    let p = dir.join(file);
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: {token}\n"
        ),
    )
    .unwrap();
    p
}

async fn connect_err(kubeconfig: &Path) -> ClusterError {
    let o = ClientOptions {
        connect_timeout: Duration::from_secs(2),
        ..with(Some(kubeconfig), None)
    };
    match connect_with_env(&o, &env(None, None, false)).await {
        Ok(_) => panic!("connected with {}", kubeconfig.display()),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_kubeconfig_naming_a_missing_user_says_which() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("k");
    std::fs::write(
        &p,
        "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: ghost\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\nusers: []\n",
    )
    .unwrap();
    let e = build_config(&with(Some(&p), None), &env(None, None, false))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ConnectError::DanglingReference { what: "user", name, .. } if name == "ghost"),
        "{e}"
    );
    assert!(e.to_string().contains("\"ghost\""), "{e}");
    assert_eq!(exit_of(e.clone()), Exit::Preflight);
}

#[tokio::test]
async fn tls_failures_are_named_as_such() {
    let d = tempfile::tempdir().unwrap();
    // https:// at a plain-HTTP API server
    let env_ = support::start_sim(1, yurtsim::Layout::Kubeadm, |_| {}).await;
    let http = env_.sim.url();
    let https = http.replacen("http://", "https://", 1);
    let e = connect_err(&kubeconfig_with_token(d.path(), "a", &https, "t")).await;
    assert!(
        matches!(e, ClusterError::Connect(ConnectError::Tls { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains(&https), "{e}");
    assert!(e.to_string().contains("scheme"), "{e}");
    assert_eq!(exit_of(e.clone()), Exit::Preflight);

    // a TCP listener that answers garbage
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s
                .write_all(b"SSH-2.0-OpenSSH_9.6\r\nnot tls at all\r\n")
                .await;
        }
    });
    let server = format!("https://127.0.0.1:{port}");
    let e = connect_err(&kubeconfig_with_token(d.path(), "b", &server, "t")).await;
    assert!(
        matches!(e, ClusterError::Connect(ConnectError::Tls { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains(&server), "{e}");
    env_.sim.shutdown().await;
}

#[tokio::test]
async fn rejected_credentials_and_denied_requests_name_what_failed() {
    use yurtctl::cluster::snapshot::{SnapshotOptions, snapshot};
    let d = tempfile::tempdir().unwrap();
    let env_ = support::start_sim(1, yurtsim::Layout::Kubeadm, |_| {}).await;

    // a wrong bearer token: 401 at the first request
    let p = kubeconfig_with_token(d.path(), "k", &env_.sim.url(), "not-the-token");
    let e = connect_err(&p).await;
    assert!(matches!(e, ClusterError::Unauthorized { .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("401") && m.contains("credentials"), "{m}");
    assert!(!m.contains("not-the-token"), "the token is not echoed: {m}");
    assert_eq!(exit_of(e.clone()), Exit::Preflight);

    // the authorizer denies listing nodes: 403 naming the verb and the resource
    env_.sim.faults().deny("list", "nodes");
    let cluster = support::yurtctl_cluster(&env_.sim).await;
    let e = snapshot(&cluster, &SnapshotOptions::default())
        .await
        .unwrap_err();
    let ClusterError::Forbidden { verb, resource, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((verb.as_str(), resource.as_str()), ("list", "nodes"));
    let m = e.to_string();
    assert!(
        m.contains("403") && m.contains("kubectl auth can-i list nodes"),
        "{m}"
    );
    assert_eq!(exit_of(e.clone()), Exit::Preflight);
    env_.sim.shutdown().await;
}

/// The exit code a connection error ends a command with.
fn exit_of(e: impl Into<ClusterError>) -> Exit {
    CommandError::from(e.into()).exit()
}
