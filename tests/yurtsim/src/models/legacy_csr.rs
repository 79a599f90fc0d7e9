//! client-go v0.20's certificate request for the `kubernetes.io/legacy-unknown` signer, as the
//! OpenYurt v0.6 components make it (pkg/util/certmanager, hubself): created through
//! certificates.k8s.io/**v1beta1** with `generateName: csr-` (client-go never uses v1 for that
//! signer — kubernetes/client-go@v0.20.11 util/certificate/csr/csr.go `create`), then read back
//! by name until it is issued. A cluster without v1beta1 (Kubernetes ≥ 1.22) answers 404.

use std::sync::Mutex;

use base64::Engine;
use serde_json::json;

use super::Caller;
use crate::pki::{self, Subject};

pub const SIGNER: &str = "kubernetes.io/legacy-unknown";
const GROUP: &str = "certificates.k8s.io";
const CSRS: &str = "certificatesigningrequests";

/// One certificate's requests: the key and name of the outstanding one, kept in the process
/// (a restarted process starts over).
#[derive(Default)]
pub struct Request {
    pending: Mutex<Option<(Vec<u8>, String)>>,
}

impl Request {
    /// One attempt: create the request if none is outstanding, else look at it. The issued
    /// certificate followed by its key (PEM) once it is signed.
    pub fn attempt(
        &self,
        me: &Caller,
        subject: &Subject,
        usages: &[&str],
    ) -> Result<Option<Vec<u8>>, String> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let pending = self.pending.lock().unwrap().clone();
        let Some((key, name)) = pending else {
            let key = pki::new_key();
            let body = json!({"apiVersion": "certificates.k8s.io/v1beta1", "kind": "CertificateSigningRequest",
                "metadata": {"generateName": "csr-"},
                "spec": {"request": b64.encode(pki::csr_pem(subject, &key)), "signerName": SIGNER,
                         "usages": usages}});
            let created = me.create_in(GROUP, "v1beta1", CSRS, "", body).map_err(|e| {
                let why = if e.code == 401 {
                    "Unauthorized".to_string()
                } else {
                    e.message
                };
                format!("Failed while requesting a signed certificate from the master: cannot create certificate signing request: {why}")
            })?;
            if let Some(n) = created["metadata"]["name"].as_str() {
                *self.pending.lock().unwrap() = Some((key, n.to_string()));
            }
            return Ok(None);
        };
        // WaitForCertificate: a field-selected list/watch, v1 when served, else v1beta1
        let version = if me.served(GROUP, "v1", CSRS) {
            "v1"
        } else {
            "v1beta1"
        };
        let csr = match me.list_watch(GROUP, version, CSRS, "", &name) {
            Ok(items) => match items.into_iter().next() {
                Some(c) => c,
                None => {
                    *self.pending.lock().unwrap() = None;
                    return Err(format!(
                        "certificate request was not signed: certificatesigningrequests.certificates.k8s.io \"{name}\" not found"
                    ));
                }
            },
            Err(e) => return Err(format!("certificate request was not signed: {e}")),
        };
        let denied = csr["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == json!("Denied") || c["type"] == json!("Failed"));
        if denied {
            *self.pending.lock().unwrap() = None;
            return Err(
                "certificate request was not signed: certificate signing request is denied".into(),
            );
        }
        let Some(mut pem) = csr["status"]["certificate"]
            .as_str()
            .and_then(|c| b64.decode(c).ok())
        else {
            return Ok(None);
        };
        pem.extend_from_slice(pki::key_pem(&key).as_bytes());
        *self.pending.lock().unwrap() = None;
        Ok(Some(pem))
    }
}
