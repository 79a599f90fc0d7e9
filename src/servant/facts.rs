//! What `yurtctl diagnose` needs to know from a node's files: how YurtHub is installed, which
//! API server the kubelet's kubeconfig names, YurtHub's certificate and the CA it trusts.
//! Read-only; the processes and ports are the caller's to look at.

use serde::{Deserialize, Serialize};

use super::hostfs::HostFs;
use super::yurthub::{HUB_DIR, HUB_UNIT_FILE};
use super::{Result, kubelet};

/// YurtHub's client certificate and the CA it verifies the API server with, in token mode
/// (openyurtio/openyurt@v1.7.0 pkg/yurthub/certificate/token/token.go: `pki/ca.crt` written
/// once from the bootstrap config and reused afterwards; `pki/yurthub-current.pem`).
pub const HUB_CA_FILE: &str = "/var/lib/yurthub/pki/ca.crt";
pub const HUB_CLIENT_CERT_FILE: &str = "/var/lib/yurthub/pki/yurthub-current.pem";

/// A certificate file: when it stops being valid and the pin of its public key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertFacts {
    pub path: String,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    /// kubeadm's pin, `sha256:<hex of the SubjectPublicKeyInfo>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_pin: Option<String>,
    /// Why it could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What a node's files say, for diagnose.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFacts {
    /// `service` (yurthub.service installed), `static-pod` (a yurthub manifest in the
    /// kubelet's static-pod directory) or `none`.
    pub yurthub_mode: String,
    /// The kubelet's `--kubeconfig` as its unit files give it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_kubeconfig: Option<String>,
    /// The server that kubeconfig's current context names, or why it cannot be told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_server_problem: Option<String>,
    /// The kubeconfig the running kubelet process was started with (`None`: no kubelet
    /// process seen; the inner `None`: it runs without `--kubeconfig`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running_kubelet_kubeconfig: Option<Option<String>>,
    /// YurtHub's readiness as its port answered (None: ready), filled in by the caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_not_ready: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_client_cert: Option<CertFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_ca: Option<CertFacts>,
    /// The CA the kubelet checks the API server's client certificate against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_client_ca: Option<CertFacts>,
    /// The API address each workload container was started with (the ones convert restarts:
    /// not static pods', not the reading Job's own), filled in by the caller; None when the
    /// container runtime could not be asked, with why in `workloads_problem`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workloads: Option<Vec<super::runtime::ContainerApi>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workloads_problem: Option<String>,
    /// The end of YurtHub's log (the service's journal, or the static pod's container log
    /// as `crictl logs` gives it), for `diagnose --collect`; filled in by the caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_log: Option<String>,
}

/// Reads the node's facts from its files.
pub fn node_facts(fs: &HostFs) -> Result<NodeFacts> {
    let mut f = NodeFacts::default();
    let argv = kubelet::effective_argv(fs).ok();
    let static_dir = argv
        .as_ref()
        .and_then(|a| kubelet::static_pod_dir(fs, a).ok());
    let hub_manifest = match &static_dir {
        Some(d) => fs
            .list_dir(d)?
            .iter()
            .any(|n| n.starts_with("yurthub") || n.starts_with("yurt-hub")),
        None => false,
    };
    f.yurthub_mode = if fs.is_file(HUB_UNIT_FILE)? {
        "service"
    } else if hub_manifest {
        "static-pod"
    } else {
        "none"
    }
    .into();
    f.kubelet_kubeconfig = argv.as_ref().and_then(|a| a.flag_value("kubeconfig"));
    if let Some(k) = &f.kubelet_kubeconfig {
        match super::kubeconfig::server(fs, k) {
            Ok(s) => f.kubelet_server = Some(s),
            Err(e) => f.kubelet_server_problem = Some(e.to_string()),
        }
    }
    if let Some(path) = argv
        .as_ref()
        .and_then(|a| kubelet::client_ca_file(fs, a).ok().flatten())
    {
        f.kubelet_client_ca = Some(cert(fs, &path)?);
    }
    if fs.is_dir(HUB_DIR)? {
        f.yurthub_client_cert = Some(cert(fs, HUB_CLIENT_CERT_FILE)?);
        f.yurthub_ca = Some(cert(fs, HUB_CA_FILE)?);
    }
    Ok(f)
}

/// The first certificate of the PEM file at `path`.
fn cert(fs: &HostFs, path: &str) -> Result<CertFacts> {
    let mut c = CertFacts {
        path: path.into(),
        ..Default::default()
    };
    let Some(bytes) = fs.read(path)? else {
        c.problem = Some("does not exist".into());
        return Ok(c);
    };
    let parsed = x509_parser::pem::Pem::iter_from_buffer(&bytes)
        .filter_map(|p| p.ok())
        .find(|p| p.label == "CERTIFICATE");
    let Some(pem) = parsed else {
        c.problem = Some("holds no PEM certificate".into());
        return Ok(c);
    };
    match pem.parse_x509() {
        Ok(x) => {
            let secs = x.validity().not_after.timestamp();
            c.not_after = k8s_openapi::jiff::Timestamp::from_second(secs)
                .ok()
                .map(|t| t.to_string());
            c.public_key_pin = Some(public_key_pin(x.tbs_certificate.subject_pki.raw));
        }
        Err(e) => c.problem = Some(format!("not an X.509 certificate: {e}")),
    }
    Ok(c)
}

/// kubeadm's pin of a public key: `sha256:` and the hex SHA-256 of its DER
/// SubjectPublicKeyInfo (kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/util/pubkeypin `Hash`).
pub fn public_key_pin(spki_der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, spki_der);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
