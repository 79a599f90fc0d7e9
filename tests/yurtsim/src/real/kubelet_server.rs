//! A real-tier node's kubelet server: HTTPS on `:10250` in the node's network, where the real
//! kube-apiserver sends `pods/log` (kubernetes/kubernetes@v1.37.2
//! pkg/registry/core/pod/strategy.go `LogLocation`: `https://<InternalIP>:10250/containerLogs/
//! {ns}/{pod}/{container}`, with its `--kubelet-client-certificate`).
//!
//! Modelled on kubernetes/kubernetes@v1.37.2 pkg/kubelet/server/server.go:
//! - it listens on `0.0.0.0:10250` (pkg/kubelet/apis/config/v1beta1/defaults.go `address`,
//!   `port`) while kubelet.service runs; a connection made while it is stopped is closed;
//! - its certificate is `tlsCertFile`/`tlsPrivateKeyFile`, else the self-signed pair the
//!   kubelet makes in `--cert-dir` at start and reuses (cmd/kubelet/app/server.go
//!   `InitializeTLS`, real/pki.rs `kubelet_self_signed`); client certificates are requested,
//!   not required (kubelet_auth.rs);
//! - every request is authenticated and authorized first (`InstallAuthFilter`, kubelet_auth.rs):
//!   401 `Unauthorized`, 403 `Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…])`;
//!   go-restful runs that filter for unknown paths too, then answers 404 `404: Page Not Found`;
//! - routes: `GET /healthz` (and its checks `ping`, `log`, `syncloop`): `ok`;
//!   `GET /containerLogs/{ns}/{pod}/{container}` (`getContainerLogs`). Exec, attach,
//!   port-forward, `/pods`, stats and metrics are not modelled: 404.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use tokio::sync::watch;

use super::kubelet_api::KubeletApi;
use super::kubelet_auth::{RequestClientCert, authenticate, authorize, request_attributes};
use super::nodes::in_root;
use crate::http::{Body, query_map, text_response};
use crate::nodes::Cluster;
use crate::nodes::kubelet::{LogOptions, NodeKubelet, container_log_file, log_response};
use crate::nodes::kubelet_config::{ServerAuthConfig, server_auth_config};
use crate::nodes::runtime::NodeNamespaces;

/// The kubelet server's port (defaults.go `port`, the `daemonEndpoints` port the node reports).
pub const KUBELET_PORT: u16 = 10250;

struct Server {
    shared: Arc<Cluster>,
    k: Arc<NodeKubelet>,
    api: Arc<KubeletApi>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

/// What a connection's requests are judged with: the TLS peer's certificates and the
/// kubelet's settings when it was accepted.
struct Conn {
    certs: Vec<CertificateDer<'static>>,
    verifier: Arc<RequestClientCert>,
    cfg: ServerAuthConfig,
}

/// Listens on the node's `0.0.0.0:10250` (inside `ns`, the node's network) until `stop`.
pub fn start(
    shared: Arc<Cluster>,
    k: Arc<NodeKubelet>,
    api: Arc<KubeletApi>,
    ns: &NodeNamespaces,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = ns.bind_tcp(SocketAddr::from(([0, 0, 0, 0], KUBELET_PORT)))?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let server = Arc::new(Server {
        shared,
        k,
        api,
        provider: Arc::new(rustls::crypto::ring::default_provider()),
    });
    Ok(tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((s, _)) => s,
                    Err(_) => continue,
                },
                _ = stop.changed() => return,
            };
            tokio::spawn(connection(server.clone(), stream));
        }
    }))
}

async fn connection(server: Arc<Server>, stream: tokio::net::TcpStream) {
    // kubelet.service stopped: no kubelet holds the port
    let Some(argv) = server.k.running_kubelet_argv() else {
        tracing::debug!(node = %server.k.name, "kubelet server: kubelet.service is stopped");
        return;
    };
    let cfg = server_auth_config(&server.k.root, &argv);
    let (tls, verifier) = match server.tls(&cfg) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(node = %server.k.name, "kubelet server: {e:#}");
            return;
        }
    };
    let stream = match tokio_rustls::TlsAcceptor::from(tls).accept(stream).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(node = %server.k.name, "kubelet server: TLS handshake error: {e}");
            return;
        }
    };
    let certs = stream
        .get_ref()
        .1
        .peer_certificates()
        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
        .unwrap_or_default();
    let conn = Arc::new(Conn {
        certs,
        verifier,
        cfg,
    });
    let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let (server, conn) = (server.clone(), conn.clone());
        async move { Ok::<_, std::convert::Infallible>(server.handle(&conn, req).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
        .await;
}

impl Server {
    /// The serving certificate and the client-certificate policy, as the kubelet's files say now.
    fn tls(
        &self,
        cfg: &ServerAuthConfig,
    ) -> anyhow::Result<(Arc<rustls::ServerConfig>, Arc<RequestClientCert>)> {
        use rustls::pki_types::pem::PemObject;
        let root = &self.k.root;
        let (cert, key) = match &cfg.tls_files {
            Some((c, k)) => (in_root(root, c), in_root(root, k)),
            None => self_signed(root, &cfg.cert_dir, &self.k.name)?,
        };
        let certs = CertificateDer::pem_file_iter(&cert)?.collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_file(&key)?;
        let ca = match &cfg.client_ca_file {
            Some(f) => Some(
                std::fs::read(in_root(root, f))
                    .map_err(|e| anyhow::anyhow!("unable to load client CA file {f}: {e}"))?,
            ),
            None => None,
        };
        let verifier = Arc::new(RequestClientCert::new(
            ca.as_deref(),
            self.provider.clone(),
        )?);
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier.clone())
            .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok((Arc::new(config), verifier))
    }

    async fn handle(
        &self,
        conn: &Conn,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Body> {
        let method = req.method().as_str().to_string();
        let path = req.uri().path().to_string();
        let authorization = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let user = match authenticate(
            &self.api,
            &conn.certs,
            &conn.verifier,
            authorization,
            conn.cfg.webhook_authn,
            conn.cfg.anonymous,
        )
        .await
        {
            Ok(Some(u)) => u,
            Ok(None) => return text_response(401, "Unauthorized"),
            Err(e) => {
                tracing::debug!(node = %self.k.name, "kubelet server: unable to authenticate the request: {e}");
                return text_response(401, "Unauthorized");
            }
        };
        let (verb, subresources) = request_attributes(&method, &path);
        if conn.cfg.webhook_authz {
            let mut allowed = false;
            for sub in &subresources {
                match authorize(&self.api, &user, verb, sub).await {
                    Ok(true) => {
                        allowed = true;
                        break;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(node = %self.k.name, "kubelet server: authorization error: {e}");
                        return text_response(
                            500,
                            format!(
                                "Authorization error (user={}, verb={verb}, resource=nodes, subresource={sub})",
                                user.name
                            ),
                        );
                    }
                }
            }
            if !allowed {
                return text_response(
                    403,
                    format!(
                        "Forbidden (user={}, verb={verb}, resource=nodes, subresource(s)=[{}])\n",
                        user.name,
                        subresources.join(" ")
                    ),
                );
            }
        }
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method.as_str(), segs.as_slice()) {
            // k8s.io/apiserver@v0.37.2 pkg/server/healthz/healthz.go InstallHandler: the
            // kubelet's checks are ping, log and syncloop
            ("GET", ["healthz"] | ["healthz", "ping" | "log" | "syncloop"]) => {
                text_response(200, "ok")
            }
            ("GET", ["containerLogs", ns, pod, container])
                if !ns.is_empty() && !pod.is_empty() && !container.is_empty() =>
            {
                let q = query_map(req.uri().query());
                self.container_logs(ns, pod, container, q).await
            }
            _ => text_response(404, "404: Page Not Found"),
        }
    }

    /// server.go `getContainerLogs`, then kubelet_pods.go `GetKubeletContainerLogs`.
    async fn container_logs(
        &self,
        ns: &str,
        pod_name: &str,
        container: &str,
        mut q: HashMap<String, String>,
    ) -> hyper::Response<Body> {
        // backwards compatibility for the "tail" query parameter; "all" is no tail
        if let Some(tail) = q.remove("tail").filter(|t| !t.is_empty()) {
            if tail == "all" {
                q.remove("tailLines");
            } else {
                q.insert("tailLines".into(), tail);
            }
        }
        // the query decoded as v1 PodLogOptions, then validation.ValidatePodLogOptions
        let number = |k: &str| q.get(k).map(|v| v.parse::<i64>());
        for k in ["tailLines", "limitBytes", "sinceSeconds"] {
            if matches!(number(k), Some(Err(_))) {
                return text_response(400, r#"{"message": "Unable to decode query."}"#);
            }
        }
        let invalid = matches!(number("tailLines"), Some(Ok(n)) if n < 0)
            || matches!(number("limitBytes"), Some(Ok(n)) if n < 1)
            || matches!(number("sinceSeconds"), Some(Ok(n)) if n < 1);
        if invalid {
            return text_response(422, r#"{"message": "Invalid request."}"#);
        }
        let Some(pod) = self.api.pod(ns, pod_name) else {
            return text_response(404, format!("pod {pod_name:?} does not exist"));
        };
        if !has_container(&pod, container) {
            return text_response(
                404,
                format!("container {container:?} not found in pod {pod_name:?}"),
            );
        }
        let opts = LogOptions::from_query(&q);
        if let Err(e) = validate_log_status(pod_name, &pod["status"], container, opts.previous) {
            return text_response(400, e);
        }
        let path = container_log_file(&self.shared, &pod, container, opts.previous);
        let running = {
            let (api, ns, name) = (self.api.clone(), ns.to_string(), pod_name.to_string());
            let (uid, container) = (pod["metadata"]["uid"].clone(), container.to_string());
            move || {
                api.pod(&ns, &name)
                    .filter(|p| p["metadata"]["uid"] == uid)
                    .is_some_and(|p| {
                        status_of(&p["status"], &container)["state"]["running"].is_object()
                    })
            }
        };
        match log_response(path.clone(), &opts, running).await {
            Ok(r) => r,
            // k8s.io/cri-client@v0.37.2 pkg/logs/logs.go ReadLogs
            Err(e) => text_response(
                400,
                format!(
                    "failed to open log file {:?}: {e}",
                    path.display().to_string()
                ),
            ),
        }
    }
}

/// The kubelet's serving certificate and key in `cert_dir` (`kubelet.crt`, `kubelet.key`),
/// made as `InitializeTLS` makes them when they cannot be read.
fn self_signed(
    root: &std::path::Path,
    cert_dir: &str,
    node: &str,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = in_root(root, cert_dir);
    let (cert, key) = (dir.join("kubelet.crt"), dir.join("kubelet.key"));
    if std::fs::read(&cert).is_ok() && std::fs::read(&key).is_ok() {
        return Ok((cert, key));
    }
    // pkg/util/node GetHostname: the node's name, lower case
    let pair = super::pki::kubelet_self_signed(&node.to_lowercase())?;
    std::fs::create_dir_all(&dir)?;
    std::fs::write(&cert, &pair.cert)?;
    super::pki::write_private(&key, &pair.key)?;
    Ok((cert, key))
}

/// kubecontainer.GetContainerSpec: a container, init container or ephemeral container.
fn has_container(pod: &Value, name: &str) -> bool {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|l| pod["spec"][l].as_array().into_iter().flatten())
        .any(|c| c["name"].as_str() == Some(name))
}

fn status_of<'a>(status: &'a Value, container: &str) -> &'a Value {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|l| status[l].as_array().into_iter().flatten())
    .find(|c| c["name"].as_str() == Some(container))
    .unwrap_or(&Value::Null)
}

/// kubernetes/kubernetes@v1.37.2 pkg/kubelet/kubelet_pods.go `validateContainerLogStatus`,
/// from the status the kubelet posted for the pod.
fn validate_log_status(
    pod: &str,
    status: &Value,
    container: &str,
    previous: bool,
) -> Result<(), String> {
    let s = status_of(status, container);
    if s.is_null() {
        return Err(format!(
            "container {container:?} in pod {pod:?} is not available"
        ));
    }
    let (state, last) = (&s["state"], &s["lastState"]["terminated"]);
    let has_id = |v: &Value| v["containerID"].as_str().is_some_and(|id| !id.is_empty());
    let terminated = || format!("container {container:?} in pod {pod:?} is terminated");
    if previous {
        if !has_id(last) {
            return Err(format!(
                "previous terminated container {container:?} in pod {pod:?} not found"
            ));
        }
    } else if state["running"].is_object() {
    } else if state["terminated"].is_object() {
        if !has_id(&state["terminated"]) && !has_id(last) {
            return Err(terminated());
        }
    } else if last.is_object() {
        if !has_id(last) {
            return Err(terminated());
        }
    } else if state["waiting"].is_object() {
        let why = match state["waiting"]["reason"].as_str().unwrap_or_default() {
            "ErrImagePull" => "image can't be pulled".to_string(),
            "ImagePullBackOff" => "trying and failing to pull image".to_string(),
            other => other.to_string(),
        };
        return Err(format!(
            "container {container:?} in pod {pod:?} is waiting to start: {why}"
        ));
    } else {
        return Err(format!(
            "container {container:?} in pod {pod:?} is waiting to start - no logs yet"
        ));
    }
    Ok(())
}
