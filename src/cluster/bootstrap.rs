//! What YurtHub's bootstrap credential is made of: the cluster's public `cluster-info` and a
//! bootstrap token (`kube-system/bootstrap-token-<id>`); and the certificate requests it leads
//! to.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::cluster::{Cluster, ClusterError, SYSTEM_NAMESPACE};

/// `server` and `certificate-authority-data` of `kube-public/cluster-info`.
pub async fn cluster_info(cluster: &Cluster) -> Result<(String, String), ClusterError> {
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), "kube-public");
    let cm = cluster
        .call(|| cms.get_opt("cluster-info"))
        .await
        .map_err(|e| ClusterError::from_kube("get ConfigMap kube-public/cluster-info", e))?;
    let bad = |m: &str| ClusterError::InvalidObject {
        object: "ConfigMap kube-public/cluster-info".into(),
        message: m.into(),
    };
    let cm = cm.ok_or_else(|| bad("not found; YurtHub's bootstrap kubeconfig is built from it"))?;
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig"))
        .ok_or_else(|| bad("has no kubeconfig key"))?;
    let v: Value = serde_saphyr::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let c = &v["clusters"][0]["cluster"];
    let server = c["server"]
        .as_str()
        .ok_or_else(|| bad("its kubeconfig names no server"))?;
    let ca = c["certificate-authority-data"].as_str().unwrap_or_default();
    Ok((server.to_owned(), ca.to_owned()))
}

/// The secret part of bootstrap token `id`, if its Secret still exists.
pub async fn token_secret(cluster: &Cluster, id: &str) -> Result<Option<String>, ClusterError> {
    let secrets: Api<Secret> = Api::namespaced(cluster.client().clone(), SYSTEM_NAMESPACE);
    let name = format!("bootstrap-token-{id}");
    let existing = cluster
        .call(|| secrets.get_opt(&name))
        .await
        .map_err(|e| ClusterError::from_kube(format!("get Secret {SYSTEM_NAMESPACE}/{name}"), e))?;
    Ok(existing
        .and_then(|s| s.data)
        .and_then(|d| d.get("token-secret").cloned())
        .and_then(|b| String::from_utf8(b.0).ok()))
}

/// The type of each named Secret in kube-system (`--image-pull-secret`), None where it does
/// not exist.
pub async fn secret_types(
    cluster: &Cluster,
    ns: &str,
    names: &[String],
) -> Result<std::collections::BTreeMap<String, Option<String>>, ClusterError> {
    let secrets: Api<Secret> = Api::namespaced(cluster.client().clone(), ns);
    let mut out = std::collections::BTreeMap::new();
    for name in names {
        let found = cluster
            .call(|| secrets.get_opt(name))
            .await
            .map_err(|e| ClusterError::from_kube(format!("get Secret {ns}/{name}"), e))?;
        out.insert(
            name.clone(),
            found.map(|s| s.type_.unwrap_or_else(|| "Opaque".into())),
        );
    }
    Ok(out)
}

/// `n` random characters from `[a-z0-9]` (from /dev/urandom), as bootstrap token ids and
/// secrets are made.
pub fn random_token_chars(n: usize) -> Result<String, ClusterError> {
    use std::io::Read;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let urandom = |e: std::io::Error| ClusterError::InvalidObject {
        object: "bootstrap token".into(),
        message: format!("cannot read /dev/urandom: {e}"),
    };
    let mut out = String::with_capacity(n);
    let mut f = std::fs::File::open("/dev/urandom").map_err(urandom)?;
    let mut buf = [0u8; 1];
    while out.len() < n {
        f.read_exact(&mut buf).map_err(urandom)?;
        // 252 = 7 × 36: reject the rest to stay uniform
        if buf[0] < 252 {
            out.push(ALPHABET[usize::from(buf[0] % 36)] as char);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_use_the_token_alphabet_and_differ() {
        let s = random_token_chars(16).unwrap();
        assert_eq!(s.len(), 16);
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
            "{s}"
        );
        assert_ne!(s, random_token_chars(16).unwrap());
    }
}

/// Who asked for a CertificateSigningRequest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrRequester {
    pub name: String,
    pub username: String,
    pub groups: Vec<String>,
}

/// Every CertificateSigningRequest, with who asked for it.
pub async fn certificate_requests(cluster: &Cluster) -> Result<Vec<CsrRequester>, ClusterError> {
    let csrs: Api<CertificateSigningRequest> = Api::all(cluster.client().clone());
    let lp = ListParams::default();
    let list = cluster
        .call(|| csrs.list(&lp))
        .await
        .map_err(|e| ClusterError::from_kube("list CertificateSigningRequests", e))?;
    Ok(list
        .items
        .into_iter()
        .map(|c| CsrRequester {
            name: c.metadata.name.unwrap_or_default(),
            username: c.spec.username.unwrap_or_default(),
            groups: c.spec.groups.unwrap_or_default(),
        })
        .collect())
}
