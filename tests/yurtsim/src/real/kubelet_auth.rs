//! Who may call a real-tier node's kubelet server (kubelet_server.rs), decided as the kubelet
//! decides it with kubeadm's configuration (kubernetes/kubernetes@v1.37.2
//! cmd/kubeadm/app/componentconfigs/kubelet.go: client CA `/etc/kubernetes/pki/ca.crt`,
//! webhook token authentication, anonymous off, authorization `Webhook`; the kubelet reads them
//! from its `--config`, nodes/kubelet_config.rs `server_auth_config`):
//!
//! - authentication (cmd/kubelet/app/auth.go `BuildAuthn`, k8s.io/apiserver@v0.37.2
//!   pkg/authentication/authenticatorfactory/delegating.go): a client certificate that chains
//!   to the client CA for client use names the user by CN and the groups by O
//!   (pkg/authentication/request/x509/x509.go `CommonNameUserConversion`); else a bearer token
//!   is checked with a TokenReview (plugin/pkg/authenticator/token/webhook); else anonymous,
//!   when enabled; `system:authenticated` is added to an authenticated user;
//! - authorization (cmd/kubelet/app/auth.go `BuildAuthz`, plugin/pkg/authorizer/webhook): a
//!   SubjectAccessReview per attribute set kubernetes/kubernetes@v1.37.2
//!   pkg/kubelet/server/auth.go `GetRequestAttributes` makes: the verb from the HTTP method,
//!   resource `nodes`, the node's name, and the subresource by path (with
//!   `KubeletFineGrainedAuthz`, GA and locked on since v1.36, `/pods` and `/healthz` ask for
//!   `pods` or `healthz` first, then `proxy`); the first allowed one lets the request in.
//!
//! The reviews are the kubelet's own calls, as `system:node:NAME`: the Node authorizer lets
//! nodes create TokenReviews and SubjectAccessReviews
//! (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go `NodeRules`, "Needed to check
//! API access", which plugin/pkg/auth/authorizer/node/node_authorizer.go allows). Neither is
//! cached here, where the kubelet caches a TokenReview for 2 min, an allowed review for 5 min
//! and a denied one for 30 s (pkg/kubelet/apis/config/v1beta1/defaults.go: kubeadm's `0s`
//! means the default).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use serde_json::{Value, json};

use super::kubelet_api::KubeletApi;

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: Value,
}

/// The TLS server's client certificates: requested, never required, and not judged during the
/// handshake (Go's `tls.RequestClientCert`, kubernetes/kubernetes@v1.37.2
/// pkg/kubelet/kubelet.go: "Populate PeerCertificates in requests, but don't reject
/// connections without verified certificates"); the client CA's subject is sent as the hint, as
/// Go's server sends its `ClientCAs`. The certificate is judged by [`authenticate`].
#[derive(Debug)]
pub struct RequestClientCert {
    /// Verifies against the client CA; None without one (no client certificates asked for).
    pub ca: Option<Arc<dyn ClientCertVerifier>>,
    schemes: Vec<rustls::SignatureScheme>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl RequestClientCert {
    /// `ca_pem`: the kubelet's client CA file, if it has one.
    pub fn new(
        ca_pem: Option<&[u8]>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> anyhow::Result<RequestClientCert> {
        use rustls::pki_types::pem::PemObject;
        let ca = match ca_pem {
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(pem) {
                    roots.add(c?)?;
                }
                Some(
                    rustls::server::WebPkiClientVerifier::builder_with_provider(
                        Arc::new(roots),
                        provider.clone(),
                    )
                    .allow_unauthenticated()
                    .build()?,
                )
            }
            None => None,
        };
        let schemes = provider
            .signature_verification_algorithms
            .supported_schemes();
        Ok(RequestClientCert {
            ca,
            schemes,
            provider,
        })
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        self.ca.is_some()
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.ca.as_ref().map_or(&[], |v| v.root_hint_subjects())
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.schemes.clone()
    }
}

/// Why a request is not authenticated (the kubelet answers 401 `Unauthorized` either way).
pub type AuthnError = String;

/// The caller of a request: its client certificate chain (as the TLS handshake got it), else
/// its bearer token. Ok(None): no credential the kubelet accepts, and anonymous is off.
pub async fn authenticate(
    api: &KubeletApi,
    certs: &[CertificateDer<'static>],
    verifier: &RequestClientCert,
    authorization: Option<&str>,
    webhook: bool,
    anonymous: bool,
) -> Result<Option<User>, AuthnError> {
    let mut errors = Vec::new();
    if let (Some(ca), Some((end, rest))) = (&verifier.ca, certs.split_first()) {
        match ca.verify_client_cert(end, rest, UnixTime::now()) {
            Ok(_) => return Ok(Some(with_authenticated(from_certificate(end)?))),
            Err(e) => errors.push(format!("verifying certificate: {e}")),
        }
    }
    // k8s.io/apiserver@v0.37.2 pkg/authentication/request/bearertoken/bearertoken.go
    let token = authorization
        .and_then(|h| h.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty());
    if webhook && let Some(token) = token {
        match token_review(api, token).await {
            Ok(Some(u)) => return Ok(Some(with_authenticated(u))),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join(", "));
    }
    // k8s.io/apiserver@v0.37.2 pkg/authentication/request/anonymous/anonymous.go
    Ok(anonymous.then(|| User {
        name: "system:anonymous".into(),
        uid: String::new(),
        groups: vec!["system:unauthenticated".into()],
        extra: json!({}),
    }))
}

/// k8s.io/apiserver@v0.37.2 pkg/authentication/group/authenticated_group_adder.go
fn with_authenticated(mut u: User) -> User {
    if !u.groups.iter().any(|g| g == "system:authenticated") {
        u.groups.push("system:authenticated".into());
    }
    u
}

fn from_certificate(der: &CertificateDer<'_>) -> Result<User, AuthnError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|e| format!("parsing the client certificate: {e}"))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .next()
        .unwrap_or_default()
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok().map(str::to_string))
        .collect();
    Ok(User {
        name,
        uid: String::new(),
        groups,
        extra: json!({}),
    })
}

/// A TokenReview as the node: Some(user) when the API server authenticated the token.
async fn token_review(api: &KubeletApi, token: &str) -> Result<Option<User>, AuthnError> {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}});
    let v = post(api, "/apis/authentication.k8s.io/v1/tokenreviews", &review).await?;
    let status = &v["status"];
    if status["authenticated"] != json!(true) {
        return Ok(None);
    }
    let u = &status["user"];
    Ok(Some(User {
        name: u["username"].as_str().unwrap_or_default().to_string(),
        uid: u["uid"].as_str().unwrap_or_default().to_string(),
        groups: u["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect(),
        extra: u.get("extra").cloned().unwrap_or(json!({})),
    }))
}

async fn post(api: &KubeletApi, path: &str, body: &Value) -> Result<Value, String> {
    let client = api.client().await.map_err(|e| format!("{e:#}"))?;
    let req = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default())
        .map_err(|e| e.to_string())?;
    client
        .request::<Value>(req)
        .await
        .map_err(|e| e.to_string())
}

/// The authorizer attributes of a request to the kubelet (auth.go `GetRequestAttributes`):
/// (verb, subresources to try in order).
pub fn request_attributes(method: &str, path: &str) -> (&'static str, Vec<&'static str>) {
    let verb = match method {
        "POST" => "create",
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    };
    // auth.go isSubpath: the path itself or below it
    let under = |p: &str| {
        let p = p.trim_end_matches('/');
        path == p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    let mut subresources = Vec::new();
    // the fine-grained ones (server.go's paths: /allocatedPods, /pods, /healthz, /configz,
    // /runningpods/)
    if under("/allocatedPods") || under("/pods") || under("/runningpods/") {
        subresources.push("pods");
    } else if under("/healthz") {
        subresources.push("healthz");
    } else if under("/configz") {
        subresources.push("configz");
    }
    subresources.push(if under("/stats") {
        "stats"
    } else if under("/metrics") {
        "metrics"
    } else if under("/logs") {
        "log"
    } else if under("/checkpoint") {
        "checkpoint"
    } else if under("/statusz") {
        "statusz"
    } else if under("/flagz") {
        "configz"
    } else {
        "proxy"
    });
    (verb, subresources)
}

/// Whether `user` may `verb` the node's `subresource`: a SubjectAccessReview as the node
/// (plugin/pkg/authorizer/webhook/webhook.go: allowed, else denied or no opinion).
pub async fn authorize(
    api: &KubeletApi,
    user: &User,
    verb: &str,
    subresource: &str,
) -> Result<bool, String> {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra,
            "resourceAttributes": {"namespace": "", "verb": verb, "group": "", "version": "v1",
                "resource": "nodes", "subresource": subresource, "name": api.node.name}}});
    let v = post(
        api,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &review,
    )
    .await?;
    Ok(v["status"]["allowed"] == json!(true))
}

#[cfg(test)]
mod tests {
    use super::request_attributes;

    #[test]
    fn attributes_by_path_as_the_kubelet_makes_them() {
        for (method, path, verb, subs) in [
            ("GET", "/containerLogs/default/p/c", "get", vec!["proxy"]),
            ("POST", "/exec/default/p/c", "create", vec!["proxy"]),
            ("GET", "/healthz", "get", vec!["healthz", "proxy"]),
            ("GET", "/pods", "get", vec!["pods", "proxy"]),
            ("GET", "/podsx", "get", vec!["proxy"]),
            ("GET", "/stats/summary", "get", vec!["stats"]),
            ("GET", "/metrics/cadvisor", "get", vec!["metrics"]),
            ("GET", "/logs/", "get", vec!["log"]),
            ("GET", "/configz", "get", vec!["configz", "proxy"]),
            ("GET", "/flagz", "get", vec!["configz"]),
        ] {
            assert_eq!(request_attributes(method, path), (verb, subs), "{path}");
        }
    }
}
