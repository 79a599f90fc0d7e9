//! CSR signing: approved CertificateSigningRequests of the signers kube-controller-manager
//! serves, signed with the cluster CA.

use std::time::Duration;

use serde_json::json;

use super::*;

/// Signers kube-controller-manager's csrsigning controller serves (kubernetes/kubernetes
/// pkg/controller/certificates/signer/signer.go; kubeadm passes it the cluster CA). The
/// legacy-unknown one (NewLegacyUnknownCSRSigningController) signs what v1beta1 requests
/// without a better signer ask for — YurtHub v0.6 and yurt-tunnel v0.6 request it; the v1 API
/// refuses new requests for it, so only clusters serving v1beta1 (≤ 1.21) get such requests.
const SIGNERS: &[&str] = &[
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/legacy-unknown",
];

/// An approved, not yet issued request of a known signer gets a certificate from the
/// cluster CA, valid one year (kube-controller-manager's `--cluster-signing-duration`
/// default 8760h, kubernetes/kubernetes cmd/kube-controller-manager/app/options/csrsigningcontroller.go).
pub(super) fn sign_csr(cluster: &Cluster, name: &str) {
    let csrs = cluster
        .api
        .info("certificates.k8s.io", "certificatesigningrequests");
    let Ok(csr) = cluster.api.get(&csrs, "", name) else {
        return;
    };
    let approved = csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == json!("Approved") && c["status"] == json!("True"));
    let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
    if !approved || !SIGNERS.contains(&signer) || csr["status"]["certificate"].is_string() {
        return;
    }
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let Some(cert) = csr["spec"]["request"]
        .as_str()
        .and_then(|r| b64.decode(r).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pem| crate::pki::sign(&pem, Duration::from_secs(365 * 24 * 3600)))
    else {
        return;
    };
    let cert = b64.encode(cert);
    let _ = cluster.api.modify(
        &csrs,
        "",
        name,
        Some("status"),
        "certificatesigningrequest-signing-controller",
        &|o| {
            o["status"]["certificate"] = json!(cert);
            true
        },
    );
}
