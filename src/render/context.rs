//! The typed values templates see.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use super::error::{RenderError, Result};
use super::profile::Profile;
use crate::selector::{is_dns1123_label, is_dns1123_subdomain};
pub use crate::servant::yurthub::WorkingMode;

/// Default paths on the node (the servant installs the credential files there).
pub const BOOTSTRAP_FILE: &str = crate::servant::yurthub::BOOTSTRAP_FILE;
pub const JOIN_TOKEN_FILE: &str = crate::servant::yurthub::JOIN_TOKEN_FILE;

/// The secret half of a bootstrap token. Never serialised, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSecret(String);

impl TokenSecret {
    /// `[a-z0-9]{16}`
    pub fn new(secret: impl Into<String>) -> Result<Self> {
        let s = secret.into();
        if s.len() != 16
            || !s
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return Err(RenderError::Context(
                "a bootstrap token secret is 16 characters [a-z0-9]".into(),
            ));
        }
        Ok(TokenSecret(s))
    }

    /// The value, for the one place that needs it (the token Secret's data).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSecret(<redacted>)")
    }
}

/// The bootstrap token as templates see it: its id, the Secret that holds it, its expiry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapTokenRef {
    /// `[a-z0-9]{6}`
    pub id: String,
    /// `bootstrap-token-<id>` in kube-system.
    pub secret_name: String,
    /// RFC 3339, e.g. `2026-11-23T02:00:00Z`.
    pub expiration: String,
}

impl BootstrapTokenRef {
    pub fn new(id: impl Into<String>, expiration: impl Into<String>) -> Result<Self> {
        let id = id.into();
        let expiration = expiration.into();
        if id.len() != 6
            || !id
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return Err(RenderError::Context(format!(
                "bootstrap token id {id:?} is not 6 characters [a-z0-9]"
            )));
        }
        if !is_rfc3339(&expiration) {
            return Err(RenderError::Context(format!(
                "bootstrap token expiration {expiration:?} is not an RFC 3339 time"
            )));
        }
        Ok(BootstrapTokenRef {
            secret_name: format!("bootstrap-token-{id}"),
            id,
            expiration,
        })
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !(b[10] == b'T' || b[10] == b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut i = 19;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match &b[i..] {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()),
        _ => false,
    }
}

/// Everything cluster templates may use. Serialised (camelCase) as the template data; the
/// token secret is not part of it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderContext {
    pub profile: String,
    pub openyurt_version: String,
    /// Images by component id (profile defaults, possibly overridden).
    pub images: BTreeMap<String, String>,
    pub namespace: String,
    /// The API server URL nodes use, e.g. `https://10.0.0.1:6443`.
    pub api_server: String,
    /// The cluster CA (base64 PEM, as in a kubeconfig's `certificate-authority-data`).
    pub cluster_ca_data: String,
    pub bootstrap_token: BootstrapTokenRef,
    #[serde(skip)]
    pub token_secret: TokenSecret,
    pub cloud_nodes: Vec<String>,
    pub edge_nodes: Vec<String>,
    /// Enabled feature flags (e.g. `deploy-yurttunnel`).
    pub features: BTreeSet<String>,
    /// The NodePools the converted nodes join (profiles with NodePools).
    pub node_pools: Vec<NodePoolRef>,
    /// yurtctl's own image for node Jobs.
    pub servant_image: String,
    /// Public address of yurt-tunnel-server (`host` or `host:port`), legacy profile only.
    pub tunnel_server_address: Option<String>,
    /// Secrets every workload's pods pull their images with (`--image-pull-secret`).
    #[serde(skip)]
    pub image_pull_secrets: Vec<String>,
    /// kubeadm's pin of the cluster CA, `sha256:<hex>` of its SubjectPublicKeyInfo (what
    /// `kubeadm join --discovery-token-ca-cert-hash` takes); None when `cluster_ca_data` is
    /// not a PEM certificate.
    pub ca_cert_hash: Option<String>,
}

/// kubeadm's CA pin of `ca_data` (base64 of a PEM certificate, as a kubeconfig's
/// `certificate-authority-data`): `sha256:` and the hex SHA-256 of the certificate's
/// DER SubjectPublicKeyInfo (kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/util/pubkeypin
/// `Hash`), or why it cannot be computed.
pub fn ca_cert_hash(ca_data: &str) -> std::result::Result<String, String> {
    use base64::Engine as _;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_data.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem)
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    Ok(crate::servant::facts::public_key_pin(
        cert.tbs_certificate.subject_pki.raw,
    ))
}

impl RenderContext {
    /// A context with the profile's defaults: namespace kube-system, its images, no features.
    pub fn new(
        profile: &Profile,
        api_server: impl Into<String>,
        cluster_ca_data: impl Into<String>,
        bootstrap_token: BootstrapTokenRef,
        token_secret: TokenSecret,
    ) -> Self {
        let cluster_ca_data = cluster_ca_data.into();
        RenderContext {
            ca_cert_hash: ca_cert_hash(&cluster_ca_data).ok(),
            profile: profile.name.clone(),
            openyurt_version: profile.openyurt_version.clone(),
            images: profile.images.clone(),
            namespace: "kube-system".into(),
            api_server: api_server.into(),
            cluster_ca_data,
            bootstrap_token,
            token_secret,
            cloud_nodes: Vec::new(),
            edge_nodes: Vec::new(),
            features: BTreeSet::new(),
            node_pools: Vec::new(),
            servant_image: profile.images["servant"].clone(),
            tunnel_server_address: None,
            image_pull_secrets: Vec::new(),
        }
    }

    /// The run's images by the profile's keys, overrides applied; the servant's is the
    /// `servant` key's.
    pub fn use_images(&mut self, images: &BTreeMap<String, String>) {
        self.images = images.clone();
        self.servant_image = images.get("servant").cloned().unwrap_or_default();
    }

    pub(crate) fn check(&self, profile: &Profile) -> Result<()> {
        let bad = |m: String| Err(RenderError::Context(m));
        if self.profile != profile.name {
            return bad(format!(
                "context is for profile {}, not {}",
                self.profile, profile.name
            ));
        }
        if !is_dns1123_label(&self.namespace) {
            return bad(format!("namespace {:?} is not a DNS label", self.namespace));
        }
        if !plain(&self.api_server) || !self.api_server.starts_with("https://") {
            return bad(format!(
                "API server address {:?} must be an https:// URL",
                self.api_server
            ));
        }
        for (id, image) in self
            .images
            .iter()
            .chain([(&"servant".to_owned(), &self.servant_image)])
        {
            if !plain(image) {
                return bad(format!("image {id} = {image:?} is not an image reference"));
            }
        }
        for p in &self.node_pools {
            if !is_dns1123_subdomain(&p.name) || !matches!(p.pool_type.as_str(), "Edge" | "Cloud") {
                return bad(format!("NodePool {:?} of type {:?}", p.name, p.pool_type));
            }
        }
        for n in self.cloud_nodes.iter().chain(&self.edge_nodes) {
            if !is_dns1123_subdomain(n) {
                return bad(format!("node name {n:?} is not a DNS subdomain"));
            }
        }
        let known = profile.flags();
        for f in &self.features {
            if !known.contains(f.as_str()) {
                return bad(format!(
                    "feature {f:?} is not one of profile {}'s: {}",
                    profile.name,
                    known.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if let Some(a) = &self.tunnel_server_address
            && !plain(a)
        {
            return bad(format!("tunnel server address {a:?}"));
        }
        Ok(())
    }
}

/// A NodePool as templates see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodePoolRef {
    pub name: String,
    /// `Edge` or `Cloud`.
    #[serde(rename = "type")]
    pub pool_type: String,
}

/// Node-level values for the YurtHub static-pod template.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeContext {
    pub node_name: String,
    pub working_mode: WorkingMode,
    pub yurthub_image: String,
    /// `--server-addr`
    pub server_addr: String,
    /// The static pod's name (from the profile, per working mode).
    pub pod_name: String,
    pub bootstrap_file: String,
    pub join_token_file: String,
}

impl NodeContext {
    /// Defaults from the profile and the cluster context.
    pub fn new(
        profile: &Profile,
        ctx: &RenderContext,
        node_name: impl Into<String>,
        working_mode: WorkingMode,
    ) -> Self {
        NodeContext {
            node_name: node_name.into(),
            working_mode,
            yurthub_image: ctx.images.get("yurthub").cloned().unwrap_or_default(),
            server_addr: ctx.api_server.clone(),
            pod_name: profile
                .yurthub_pod_name(working_mode)
                .unwrap_or_default()
                .to_owned(),
            bootstrap_file: BOOTSTRAP_FILE.into(),
            join_token_file: JOIN_TOKEN_FILE.into(),
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        let bad = |m: String| Err(RenderError::Context(m));
        if !is_dns1123_subdomain(&self.node_name) {
            return bad(format!(
                "node name {:?} is not a DNS subdomain",
                self.node_name
            ));
        }
        for (what, v) in [
            ("yurthub image", &self.yurthub_image),
            ("server address", &self.server_addr),
            ("bootstrap file", &self.bootstrap_file),
            ("join token file", &self.join_token_file),
        ] {
            if !plain(v) {
                return bad(format!("{what} {v:?}"));
            }
        }
        if !is_dns1123_subdomain(&self.pod_name) {
            return bad(format!("pod name {:?}", self.pod_name));
        }
        Ok(())
    }
}

/// Non-empty, no whitespace, quotes, backslashes or control characters: safe inside a YAML
/// scalar and a shell word.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| {
            !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '\'' | '\\' | '`' | '$')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_pin_is_kubeadms_sha256_of_the_public_key() {
        use base64::Engine as _;
        let pem = include_str!("../../tests/fixtures/cluster-ca.crt");
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        // `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum`, the
        // command kubeadm's documentation gives for --discovery-token-ca-cert-hash
        assert_eq!(
            ca_cert_hash(&data).unwrap(),
            "sha256:b2dc8d59514a67eebf5f99b3f095660fd4c83aefd27e5a1ff2e4f84b2be2809a"
        );
        assert!(
            ca_cert_hash("Q0E=")
                .unwrap_err()
                .contains("not a PEM certificate")
        );
        assert!(ca_cert_hash("%%%").unwrap_err().contains("not base64"));
    }
}
