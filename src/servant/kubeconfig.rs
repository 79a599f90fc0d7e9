//! The API server address from the kubelet's kubeconfig, and the kubeconfig that points
//! the kubelet at YurtHub.

use serde_json::Value;

use super::error::{Result, ServantError};
use super::hostfs::HostFs;

/// YurtHub's plain-HTTP proxy on the node's loopback.
pub const YURTHUB_PROXY: &str = "http://127.0.0.1:10261";

/// A parsed `server:` URL.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ServerUrl {
    /// The URL exactly as written (trimmed).
    pub url: String,
    pub scheme: String,
    /// Host without brackets (`fd00::1`, `kind-control-plane`, `10.0.0.1`).
    pub host: String,
    pub port: Option<u16>,
    /// Path after the authority ("" or "/prefix").
    pub path: String,
}

/// Parses an API server URL (`https://host[:port][/path]`, IPv6 in brackets).
pub fn parse_server_url(s: &str) -> std::result::Result<ServerUrl, String> {
    let url = s.trim();
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} has no scheme (expected https://host:port)"))?;
    if scheme != "https" && scheme != "http" {
        return Err(format!("{url:?}: unsupported scheme {scheme:?}"));
    }
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(format!(
            "{url:?}: user info in the server URL is not supported"
        ));
    }
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        let (h, after) = r
            .split_once(']')
            .ok_or_else(|| format!("{url:?}: unterminated IPv6 literal"))?;
        if h.is_empty()
            || !h.contains(':')
            || !h
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.' || c == '%')
        {
            return Err(format!("{url:?}: invalid IPv6 literal {h:?}"));
        }
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| format!("{url:?}: junk after IPv6 literal"))?,
            ),
        };
        (h.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    if !host.contains(':') {
        let ok_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if host.is_empty() || host.len() > 253 || !host.split('.').all(ok_label) {
            return Err(format!("{url:?}: invalid host {host:?}"));
        }
    }
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{url:?}: invalid port {p:?}"))?,
        ),
    };
    Ok(ServerUrl {
        url: url.to_owned(),
        scheme: scheme.to_owned(),
        host,
        port,
        path: path.to_owned(),
    })
}

fn named<'a>(
    doc: &'a Value,
    list: &str,
    item: &str,
    name: &str,
) -> std::result::Result<&'a Value, String> {
    let mut found = None;
    for e in doc
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if e.get("name").and_then(Value::as_str) == Some(name) {
            if found.is_some() {
                return Err(format!("{list} has two entries named {name:?}"));
            }
            found = e.get(item);
        }
    }
    found.ok_or_else(|| format!("{list} has no entry named {name:?}"))
}

/// The server of the current context of the kubeconfig at `path` (current-context →
/// context → cluster → server), whatever its scheme.
pub fn server(fs: &HostFs, path: &str) -> Result<String> {
    let err = |message: String| ServantError::Kubeconfig {
        path: path.into(),
        message,
    };
    let text = fs.read_text(path)?.ok_or_else(|| {
        err("does not exist; the kubelet's kubeconfig is needed to find the API server".into())
    })?;
    let doc: Value = serde_saphyr::from_str(&text).map_err(|e| ServantError::Yaml {
        path: path.into(),
        message: e.to_string(),
    })?;
    if doc
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "Config")
    {
        return Err(err("is not a kubeconfig (kind is not Config)".into()));
    }
    let ctx_name = doc
        .get("current-context")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| err("has no current-context".into()))?;
    let ctx = named(&doc, "contexts", "context", ctx_name).map_err(err)?;
    let cluster_name = ctx
        .get("cluster")
        .and_then(Value::as_str)
        .ok_or_else(|| err(format!("context {ctx_name:?} names no cluster")))?;
    let cluster = named(&doc, "clusters", "cluster", cluster_name).map_err(err)?;
    cluster
        .get("server")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| err(format!("cluster {cluster_name:?} has no server")))
}

/// The API server of the kubeconfig at `path` ([`server`]). Only https servers are accepted:
/// an http URL means the file already points at YurtHub (or something else on loopback),
/// which YurtHub cannot use as its upstream.
pub fn api_server(fs: &HostFs, path: &str) -> Result<ServerUrl> {
    let err = |message: String| ServantError::Kubeconfig {
        path: path.into(),
        message,
    };
    let url = parse_server_url(&server(fs, path)?).map_err(err)?;
    if url.scheme != "https" {
        return Err(err(format!(
            "server {:?} is not https; this looks like a kubeconfig that already points at YurtHub, not at the API server",
            url.url
        )));
    }
    Ok(url)
}

/// `/var/lib/openyurt/kubelet.conf`: the kubelet talks plain HTTP to YurtHub on loopback,
/// without credentials (YurtHub authenticates upstream with its own certificate).
pub fn render_yurthub_kubeconfig() -> String {
    format!(
        "apiVersion: v1
clusters:
- cluster:
    server: {YURTHUB_PROXY}
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
  user: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let ok: &[(&str, &str, Option<u16>, &str)] = &[
            ("https://192.168.1.10:6443", "192.168.1.10", Some(6443), ""),
            (
                "https://kind-control-plane:6443",
                "kind-control-plane",
                Some(6443),
                "",
            ),
            (
                "https://control-plane.minikube.internal:8443",
                "control-plane.minikube.internal",
                Some(8443),
                "",
            ),
            ("https://[fd00::10]:6443", "fd00::10", Some(6443), ""),
            ("https://[fd00::1]", "fd00::1", None, ""),
            (
                "https://apiserver.cluster.local:6443/path",
                "apiserver.cluster.local",
                Some(6443),
                "/path",
            ),
        ];
        for (u, h, p, path) in ok {
            let s = parse_server_url(u).unwrap();
            assert_eq!(
                (s.host.as_str(), s.port, s.path.as_str(), s.url.as_str()),
                (*h, *p, *path, *u)
            );
        }
        for bad in [
            "10.0.0.1:6443",
            "https://",
            "https://[fd00::1:6443",
            "https://a:99999",
            "ftp://x",
            "https://-x:1",
        ] {
            assert!(parse_server_url(bad).is_err(), "{bad}");
        }
    }
}
