//! What the simulated kubelet concludes from its argv: which kubeconfig it uses, which API
//! server that points at (or why it cannot reach one), and where its static pods live.
//!
//! Mirrors the kubelet and client-go's clientcmd: flags are parsed pflag-style (last wins),
//! `--pod-manifest-path` overrides `staticPodPath` from `--config` (and its `--config-dir`
//! drop-ins), relative paths in the config file resolve against its directory, and the
//! kubeconfig is validated the way `ClientConfig()` / `ConfirmUsable()` does before use.

use std::path::Path;

use serde_json::Value;

use crate::nodes::systemd::{LoadedUnit, UnitError, last_flag, read_host_file, resolve_host_path};

/// The kubelet's effective view of its configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletView {
    pub argv: Vec<String>,
    /// `--kubeconfig` as given (host path; may be "").
    pub kubeconfig: Option<String>,
    /// `--bootstrap-kubeconfig` as given ("" disables bootstrap).
    pub bootstrap_kubeconfig: Option<String>,
    /// `--config` as given.
    pub config_file: Option<String>,
    /// `--pod-manifest-path`, else `staticPodPath` from the config file (and `--config-dir`),
    /// else None (also None when the config file cannot be read).
    pub static_pod_path: Option<String>,
    /// Server URL of the kubeconfig's current context, or why it could not be determined.
    pub server: Result<String, String>,
    /// The CRI endpoint: `--container-runtime-endpoint`, else `containerRuntimeEndpoint` from
    /// `--config` (and `--config-dir`), else the KubeletConfiguration default
    /// (kubernetes/kubernetes@v1.33.0 pkg/kubelet/apis/config/v1beta1/defaults.go).
    pub runtime_endpoint: String,
}

/// The kubelet's default CRI endpoint since v1.27 (defaults.go, PR #112136).
pub const DEFAULT_RUNTIME_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// Computes the kubelet's view from a loaded unit, reading files under `root` now.
pub fn kubelet_view(root: &Path, unit: &LoadedUnit) -> Result<KubeletView, UnitError> {
    let argv = unit.command_line(root)?;
    let flag = |n: &str| last_flag(&argv, n).map(str::to_owned);
    let kubeconfig = flag("kubeconfig");
    let bootstrap_kubeconfig = flag("bootstrap-kubeconfig");
    let config_file = flag("config");
    let static_pod_path = match flag("pod-manifest-path") {
        Some(p) => Some(p),
        None => config_file
            .as_deref()
            .filter(|c| !c.is_empty())
            .and_then(|c| static_pod_path_from_config(root, c, last_flag(&argv, "config-dir")).ok())
            .flatten(),
    };
    let runtime_endpoint = flag("container-runtime-endpoint")
        .filter(|e| !e.is_empty())
        .or_else(|| {
            config_file
                .as_deref()
                .filter(|c| !c.is_empty())
                .and_then(|c| {
                    config_field(
                        root,
                        c,
                        last_flag(&argv, "config-dir"),
                        "containerRuntimeEndpoint",
                    )
                    .ok()
                })
                .flatten()
                .filter(|e| !e.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_RUNTIME_ENDPOINT.to_string());
    let server = match kubeconfig.as_deref() {
        None | Some("") => {
            Err("kubelet has no --kubeconfig (standalone mode, no API server)".to_owned())
        }
        Some(p) => kubeconfig_server(root, p),
    };
    Ok(KubeletView {
        argv,
        kubeconfig,
        bootstrap_kubeconfig,
        config_file,
        static_pod_path,
        server,
        runtime_endpoint,
    })
}

/// A string field of the KubeletConfiguration file, drop-ins in `config_dir` overriding it.
fn config_field(
    root: &Path,
    config_host: &str,
    config_dir: Option<&str>,
    field: &str,
) -> Result<Option<String>, String> {
    let pick = |d: &Value| d.get(field).and_then(Value::as_str).map(str::to_owned);
    let mut v = pick(&parse_yaml(root, config_host)?);
    if let Some(dir) = config_dir.filter(|d| !d.is_empty()) {
        for f in drop_in_files(root, dir)? {
            if let Some(x) = pick(&parse_yaml(root, &f)?) {
                v = Some(x);
            }
        }
    }
    Ok(v)
}

/// The `*.conf` drop-ins of the kubelet's `--config-dir`, as host paths in the order the kubelet
/// merges them (sorted by name; kubernetes/kubernetes@v1.33 cmd/kubelet/app/server.go
/// mergeKubeletConfigurations).
fn drop_in_files(root: &Path, dir: &str) -> Result<Vec<String>, String> {
    let r = resolve_host_path(root, dir).map_err(|e| e.to_string())?;
    let mut names: Vec<String> = std::fs::read_dir(&r.disk)
        .map_err(|e| format!("{dir}: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".conf"))
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
        .collect())
}

fn dir_of(host: &str) -> &str {
    match host.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((d, _)) => d,
    }
}

/// Relative paths inside kubeconfigs and kubelet config files resolve against the directory
/// of the file that names them.
fn resolve_against(base_file: &str, p: &str) -> String {
    if p.starts_with('/') {
        p.to_owned()
    } else {
        format!("{}/{p}", dir_of(base_file).trim_end_matches('/'))
    }
}

fn parse_yaml(root: &Path, host: &str) -> Result<Value, String> {
    let text = read_host_file(root, host).map_err(|e| e.to_string())?;
    serde_saphyr::from_str::<Value>(&text).map_err(|e| format!("{host}: invalid YAML: {e}"))
}

/// `staticPodPath` from a KubeletConfiguration file, overridden by `*.conf` drop-ins in
/// `config_dir` (kubelet ≥ 1.28, lexical order). Ok(None) when not set.
pub fn static_pod_path_from_config(
    root: &Path,
    config_host: &str,
    config_dir: Option<&str>,
) -> Result<Option<String>, String> {
    let doc = parse_yaml(root, config_host)?;
    if doc.get("kind").and_then(Value::as_str) != Some("KubeletConfiguration") {
        return Err(format!("{config_host}: not a KubeletConfiguration"));
    }
    let pick = |doc: &Value, file: &str| {
        doc.get("staticPodPath").and_then(Value::as_str).map(|p| {
            if p.is_empty() {
                String::new()
            } else {
                resolve_against(file, p)
            }
        })
    };
    let mut path = pick(&doc, config_host);
    if let Some(dir) = config_dir.filter(|d| !d.is_empty()) {
        for f in drop_in_files(root, dir)? {
            let d = parse_yaml(root, &f)?;
            if let Some(p) = pick(&d, &f) {
                path = Some(p);
            }
        }
    }
    Ok(path)
}

/// What the kubelet's server (`:10250`) authenticates and authorizes with, and where its
/// serving certificate is: flags over `--config` (and its drop-ins) over the defaults
/// (kubernetes/kubernetes@v1.37.2 pkg/kubelet/apis/config/v1beta1/defaults.go with a config
/// file: anonymous off, webhook authentication on, authorization `Webhook`;
/// cmd/kubelet/app/options/options.go `applyLegacyDefaults` without one: anonymous on, no
/// webhook, `AlwaysAllow`; `--cert-dir` /var/lib/kubelet/pki).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerAuthConfig {
    /// `authentication.x509.clientCAFile` (host path): client certificates it signed name
    /// their user.
    pub client_ca_file: Option<String>,
    pub anonymous: bool,
    /// `authentication.webhook.enabled`: bearer tokens checked with a TokenReview.
    pub webhook_authn: bool,
    /// `authorization.mode` is `Webhook` (a SubjectAccessReview per request), not `AlwaysAllow`.
    pub webhook_authz: bool,
    /// `tlsCertFile` / `tlsPrivateKeyFile`, if set; else the self-signed pair in `cert_dir`.
    pub tls_files: Option<(String, String)>,
    pub cert_dir: String,
}

/// The kubelet server's settings from its command line (and the files it names under `root`).
pub fn server_auth_config(root: &Path, argv: &[String]) -> ServerAuthConfig {
    let config = last_flag(argv, "config").filter(|c| !c.is_empty());
    let config_dir = last_flag(argv, "config-dir");
    let from_config = |pointer: &str| -> Option<Value> {
        let c = config?;
        let mut v = parse_yaml(root, c).ok()?.pointer(pointer).cloned();
        if let Some(dir) = config_dir.filter(|d| !d.is_empty()) {
            for f in drop_in_files(root, dir).unwrap_or_default() {
                if let Some(x) = parse_yaml(root, &f)
                    .ok()
                    .and_then(|d| d.pointer(pointer).cloned())
                {
                    v = Some(x);
                }
            }
        }
        v
    };
    let string = |flag: &str, pointer: &str| {
        last_flag(argv, flag)
            .map(str::to_owned)
            .or_else(|| from_config(pointer).and_then(|v| v.as_str().map(str::to_owned)))
            .filter(|s| !s.is_empty())
    };
    let boolean = |flag: &str, pointer: &str, default: bool| {
        bool_flag(argv, flag)
            .or_else(|| from_config(pointer).and_then(|v| v.as_bool()))
            .unwrap_or(default)
    };
    let with_file = config.is_some();
    let mode = string("authorization-mode", "/authorization/mode")
        .unwrap_or_else(|| if with_file { "Webhook" } else { "AlwaysAllow" }.into());
    let tls_files = string("tls-cert-file", "/tlsCertFile")
        .zip(string("tls-private-key-file", "/tlsPrivateKeyFile"));
    ServerAuthConfig {
        client_ca_file: string("client-ca-file", "/authentication/x509/clientCAFile"),
        anonymous: boolean(
            "anonymous-auth",
            "/authentication/anonymous/enabled",
            !with_file,
        ),
        webhook_authn: boolean(
            "authentication-token-webhook",
            "/authentication/webhook/enabled",
            with_file,
        ),
        webhook_authz: mode == "Webhook",
        tls_files,
        cert_dir: last_flag(argv, "cert-dir")
            .unwrap_or("/var/lib/kubelet/pki")
            .to_string(),
    }
}

/// A pflag boolean: `--name` alone is true, `--name=V` is V; the last one wins.
fn bool_flag(argv: &[String], name: &str) -> Option<bool> {
    let long = format!("--{name}");
    argv.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .filter_map(|a| match a.strip_prefix(long.as_str()) {
            Some("") => Some(true),
            Some(v) => v.strip_prefix('=').map(|v| v == "true" || v == "1"),
            None => None,
        })
        .last()
}

fn named<'a>(
    doc: &'a Value,
    list: &str,
    item: &str,
    name: &str,
) -> Result<Option<&'a Value>, String> {
    let mut found = None;
    let Some(entries) = doc.get(list).and_then(Value::as_array) else {
        return Ok(None);
    };
    for e in entries {
        if e.get("name").and_then(Value::as_str) == Some(name) {
            if found.is_some() {
                return Err(format!("duplicate name {name:?} in {list}"));
            }
            found = Some(e.get(item).unwrap_or(&Value::Null));
        }
    }
    Ok(found)
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The server URL of the current context of the kubeconfig at host path
/// `kubeconfig_host_path`, after the checks client-go makes before the kubelet can use it:
/// current context, context, cluster and user present; referenced certificate-authority,
/// client-certificate and client-key files readable (relative paths resolve against the
/// kubeconfig's directory); no file/data conflicts.
pub fn kubeconfig_server(root: &Path, kubeconfig_host_path: &str) -> Result<String, String> {
    let kc = kubeconfig_host_path;
    if kc.is_empty() {
        return Err("empty kubeconfig path".into());
    }
    let doc = parse_yaml(root, kc)?;
    let ctx_name = str_field(&doc, "current-context")
        .ok_or_else(|| format!("{kc}: no current-context is set"))?;
    let ctx = named(&doc, "contexts", "context", ctx_name)
        .map_err(|e| format!("{kc}: {e}"))?
        .ok_or_else(|| format!("{kc}: context {ctx_name:?} not found"))?;
    let cluster_name = str_field(ctx, "cluster")
        .ok_or_else(|| format!("{kc}: context {ctx_name:?} has no cluster"))?;
    let cluster = named(&doc, "clusters", "cluster", cluster_name)
        .map_err(|e| format!("{kc}: {e}"))?
        .ok_or_else(|| {
            format!("{kc}: cluster {cluster_name:?} was not found for context {ctx_name:?}")
        })?;
    let user_name = str_field(ctx, "user")
        .ok_or_else(|| format!("{kc}: user was not specified for context {ctx_name:?}"))?;
    let user = named(&doc, "users", "user", user_name)
        .map_err(|e| format!("{kc}: {e}"))?
        .ok_or_else(|| {
            format!("{kc}: user {user_name:?} was not found for context {ctx_name:?}")
        })?;
    let server = str_field(cluster, "server")
        .ok_or_else(|| format!("{kc}: no server found for cluster {cluster_name:?}"))?;

    let readable = |what: &str, p: &str, owner: &str| -> Result<(), String> {
        let host = resolve_against(kc, p);
        let ok = resolve_host_path(root, &host)
            .ok()
            .and_then(|r| std::fs::File::open(&r.disk).ok())
            .and_then(|f| f.metadata().ok())
            .is_some_and(|m| m.is_file());
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{kc}: unable to read {what} {host} for {owner}: no such file"
            ))
        }
    };

    let ca_file = str_field(cluster, "certificate-authority");
    let ca_data = str_field(cluster, "certificate-authority-data");
    if ca_file.is_some() && ca_data.is_some() {
        return Err(format!(
            "{kc}: certificate-authority-data and certificate-authority are both specified for {cluster_name}"
        ));
    }
    if cluster
        .get("insecure-skip-tls-verify")
        .and_then(Value::as_bool)
        == Some(true)
        && (ca_file.is_some() || ca_data.is_some())
    {
        return Err(format!(
            "{kc}: specifying a root certificates file with the insecure flag is not allowed ({cluster_name})"
        ));
    }
    if let Some(p) = ca_file {
        readable("certificate-authority", p, cluster_name)?;
    }

    let cert_file = str_field(user, "client-certificate");
    let cert_data = str_field(user, "client-certificate-data");
    let key_file = str_field(user, "client-key");
    let key_data = str_field(user, "client-key-data");
    if cert_file.is_some() && cert_data.is_some() {
        return Err(format!(
            "{kc}: client-cert-data and client-cert are both specified for {user_name}"
        ));
    }
    if key_file.is_some() && key_data.is_some() {
        return Err(format!(
            "{kc}: client-key-data and client-key are both specified for {user_name}"
        ));
    }
    let has_cert = cert_file.is_some() || cert_data.is_some();
    let has_key = key_file.is_some() || key_data.is_some();
    if has_cert != has_key {
        return Err(format!(
            "{kc}: client-cert and client-key must both be specified for {user_name} to use the clientCert authentication method"
        ));
    }
    if let Some(p) = cert_file {
        readable("client-cert", p, user_name)?;
    }
    if let Some(p) = key_file {
        readable("client-key", p, user_name)?;
    }
    Ok(server.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::systemd::load_unit;
    use std::fs;

    fn write(root: &Path, host: &str, text: &str) {
        let p = root.join(host.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    const KC: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority: pki/ca.crt
    server: https://10.0.0.1:6443
  name: c
contexts:
- context:
    cluster: c
    user: u
  name: ctx
current-context: ctx
kind: Config
users:
- name: u
  user:
    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
";

    #[test]
    fn kubeconfig_checks() {
        // (edit of KC, files to drop, expected: Ok(server) or Err(substring))
        let cases: &[(&str, &str, &str, Result<&str, &str>)] = &[
            ("base", "", "", Ok("https://10.0.0.1:6443")),
            (
                "ca missing",
                "",
                "/etc/kubernetes/pki/ca.crt",
                Err("/etc/kubernetes/pki/ca.crt"),
            ),
            (
                "cert missing",
                "",
                "/var/lib/kubelet/pki/kubelet-client-current.pem",
                Err("kubelet-client-current.pem"),
            ),
            (
                "no current",
                "current-context: ctx",
                "",
                Err("no current-context"),
            ),
            (
                "ctx missing",
                "current-context: ctx|current-context: other",
                "",
                Err("context \"other\" not found"),
            ),
            (
                "cluster missing",
                "cluster: c\n|cluster: d\n",
                "",
                Err("cluster \"d\" was not found"),
            ),
            (
                "user missing",
                "user: u\n|user: v\n",
                "",
                Err("user \"v\" was not found"),
            ),
            (
                "ca data and file",
                "certificate-authority: pki/ca.crt|certificate-authority: pki/ca.crt\n    certificate-authority-data: eA==",
                "",
                Err("both specified"),
            ),
            ("bad yaml", "kind: Config|kind: [", "", Err("invalid YAML")),
            (
                "no server",
                "    server: https://10.0.0.1:6443\n|",
                "",
                Err("no server"),
            ),
        ];
        for (name, edit, remove, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            let r = dir.path();
            let mut kc = KC.to_owned();
            if let Some((from, to)) = edit.split_once('|') {
                kc = kc.replace(from, to);
            } else if !edit.is_empty() {
                kc = kc.replace(edit, "");
            }
            write(r, "/etc/kubernetes/kubelet.conf", &kc);
            write(r, "/etc/kubernetes/pki/ca.crt", "ca");
            write(r, "/var/lib/kubelet/pki/kubelet-client-2025.pem", "pem");
            std::os::unix::fs::symlink(
                "/var/lib/kubelet/pki/kubelet-client-2025.pem",
                r.join("var/lib/kubelet/pki/kubelet-client-current.pem"),
            )
            .unwrap();
            if !remove.is_empty() {
                fs::remove_file(r.join(remove.trim_start_matches('/'))).unwrap();
            }
            let got = kubeconfig_server(r, "/etc/kubernetes/kubelet.conf");
            match (got, want) {
                (Ok(s), Ok(w)) => assert_eq!(s, *w, "{name}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{name}: {e}"),
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
        // A dangling symlink (dated pem removed) also fails, naming the file.
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "/etc/kubernetes/kubelet.conf", KC);
        write(r, "/etc/kubernetes/pki/ca.crt", "ca");
        fs::create_dir_all(r.join("var/lib/kubelet/pki")).unwrap();
        std::os::unix::fs::symlink(
            "/var/lib/kubelet/pki/gone.pem",
            r.join("var/lib/kubelet/pki/kubelet-client-current.pem"),
        )
        .unwrap();
        let e = kubeconfig_server(r, "/etc/kubernetes/kubelet.conf").unwrap_err();
        assert!(e.contains("kubelet-client-current.pem"), "{e}");
        assert!(
            kubeconfig_server(r, "/nope.conf")
                .unwrap_err()
                .contains("/nope.conf")
        );
    }

    #[test]
    fn static_pod_path_sources() {
        let unit =
            "[Service]\nExecStart=/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml $EXTRA\n";
        let cfg = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubernetes/manifests\n";
        let cases: &[(&str, &str, Option<&str>, Option<&str>)] = &[
            ("from config", cfg, None, Some("/etc/kubernetes/manifests")),
            (
                "flag overrides config",
                cfg,
                Some("--pod-manifest-path=/flag"),
                Some("/flag"),
            ),
            (
                "relative to config dir",
                "kind: KubeletConfiguration\nstaticPodPath: manifests\n",
                None,
                Some("/var/lib/kubelet/manifests"),
            ),
            ("unset", "kind: KubeletConfiguration\n", None, None),
            ("config unreadable", "kind: [", None, None),
            (
                "config-dir drop-in wins",
                cfg,
                Some("--config-dir=/etc/kubelet.conf.d"),
                Some("/dropin"),
            ),
        ];
        for (name, config, extra, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            let r = dir.path();
            write(r, "/etc/systemd/system/kubelet.service", unit);
            write(r, "/var/lib/kubelet/config.yaml", config);
            write(
                r,
                "/etc/kubelet.conf.d/50-x.conf",
                "kind: KubeletConfiguration\nstaticPodPath: /dropin\n",
            );
            if let Some(e) = extra {
                write(
                    r,
                    "/etc/systemd/system/kubelet.service.d/x.conf",
                    &format!("[Service]\nEnvironment=EXTRA={e}\n"),
                );
            }
            let u = load_unit(r, "kubelet.service").unwrap();
            let v = kubelet_view(r, &u).unwrap();
            assert_eq!(v.static_pod_path.as_deref(), *want, "{name}");
            assert_eq!(
                v.config_file.as_deref(),
                Some("/var/lib/kubelet/config.yaml")
            );
            assert!(v.server.is_err(), "{name}: no --kubeconfig");
        }
    }

    #[test]
    fn the_kubelet_server_settings_come_from_flags_over_the_config_file_over_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "/var/lib/kubelet/config.yaml",
            "kind: KubeletConfiguration\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nauthorization:\n  mode: Webhook\n",
        );
        let argv = |a: &[&str]| {
            std::iter::once("kubelet")
                .chain(a.iter().copied())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let kubeadm = server_auth_config(r, &argv(&["--config=/var/lib/kubelet/config.yaml"]));
        assert_eq!(
            kubeadm,
            ServerAuthConfig {
                client_ca_file: Some("/etc/kubernetes/pki/ca.crt".into()),
                anonymous: false,
                webhook_authn: true,
                webhook_authz: true,
                tls_files: None,
                cert_dir: "/var/lib/kubelet/pki".into(),
            }
        );
        // without a config file, the flags' legacy defaults
        let bare = server_auth_config(r, &argv(&[]));
        assert!(bare.anonymous && !bare.webhook_authn && !bare.webhook_authz);
        assert_eq!(bare.client_ca_file, None);
        let flags = server_auth_config(
            r,
            &argv(&[
                "--config=/var/lib/kubelet/config.yaml",
                "--anonymous-auth",
                "--authorization-mode=AlwaysAllow",
                "--cert-dir",
                "/pki",
            ]),
        );
        assert!(flags.anonymous && !flags.webhook_authz);
        assert_eq!(flags.cert_dir, "/pki");
    }
}
