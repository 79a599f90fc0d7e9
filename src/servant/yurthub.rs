//! The YurtHub static pod and its credential file.
//!
//! Credentials never appear in the manifest or in any argument: modern profiles install a
//! bootstrap kubeconfig as `/var/lib/yurthub/bootstrap-hub.conf` and pass `--bootstrap-file`;
//! the legacy profile (yurthub ≤ v0.6, which only knows `--join-token`) gets the token in a
//! 0600 file that the container reads at start.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Result, ServantError};
use super::kubeconfig::ServerUrl;

pub const HUB_DIR: &str = "/var/lib/yurthub";
pub const HUB_CACHE_DIR: &str = "/etc/kubernetes/cache";
pub const BOOTSTRAP_FILE: &str = "/var/lib/yurthub/bootstrap-hub.conf";
pub const JOIN_TOKEN_FILE: &str = "/var/lib/yurthub/join-token";
pub const MANIFEST_FILE: &str = "yurt-hub.yaml";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkingMode {
    Edge,
    Cloud,
}

impl WorkingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkingMode::Edge => "edge",
            WorkingMode::Cloud => "cloud",
        }
    }
}

/// Where the servant reads the hub's bootstrap material from (a path in the servant's own
/// file system, for example a mounted Secret; not under the host root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubCredential {
    /// A bootstrap kubeconfig; installed as [`BOOTSTRAP_FILE`], passed as `--bootstrap-file`.
    BootstrapFile { source: PathBuf },
    /// A bootstrap token for the legacy `--join-token`; installed as [`JOIN_TOKEN_FILE`].
    JoinTokenFile { source: PathBuf },
}

/// Inputs for the YurtHub static pod on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YurtHubOptions {
    pub image: String,
    pub working_mode: WorkingMode,
    pub node_name: String,
    pub nodepool_name: Option<String>,
    /// Namespace YurtHub reads its ConfigMaps from (modern profiles).
    pub namespace: String,
    /// API server URL; None = from the kubelet's kubeconfig.
    pub server_addr: Option<String>,
    pub credential: HubCredential,
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// YAML double-quoted scalar (a JSON string is one).
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("string serialises")
}

impl YurtHubOptions {
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, reason: &str| {
            Err(ServantError::InvalidName {
                name: name.into(),
                reason: reason.into(),
            })
        };
        if self.image.is_empty()
            || self
                .image
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'')
        {
            return bad(&self.image, "not a container image reference");
        }
        if !is_dns_subdomain(&self.node_name) {
            return bad(&self.node_name, "node name must be a DNS subdomain");
        }
        if let Some(p) = &self.nodepool_name
            && !is_dns_subdomain(p)
        {
            return bad(p, "node pool name must be a DNS subdomain");
        }
        if !is_dns_subdomain(&self.namespace) {
            return bad(&self.namespace, "namespace must be a DNS label");
        }
        Ok(())
    }
}

/// Reads and checks the credential; returns (host path, bytes) to install.
pub fn credential_file(c: &HubCredential) -> Result<(&'static str, Vec<u8>)> {
    let (src, target) = match c {
        HubCredential::BootstrapFile { source } => (source, BOOTSTRAP_FILE),
        HubCredential::JoinTokenFile { source } => (source, JOIN_TOKEN_FILE),
    };
    let shown = src.display().to_string();
    let bytes = std::fs::read(src).map_err(|e| ServantError::io(shown.clone(), "read", e))?;
    let err = |m: &str| ServantError::Credential {
        path: shown.clone(),
        message: m.into(),
    };
    match c {
        HubCredential::JoinTokenFile { .. } => {
            let t = std::str::from_utf8(&bytes)
                .map_err(|_| err("the token file is not text"))?
                .trim();
            let ok = t.len() == 23
                && t.as_bytes()[6] == b'.'
                && t.bytes()
                    .enumerate()
                    .all(|(i, c)| i == 6 || c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                // never print the token
                return Err(err(
                    "does not hold a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}",
                ));
            }
            Ok((target, format!("{t}\n").into_bytes()))
        }
        HubCredential::BootstrapFile { .. } => {
            let text =
                std::str::from_utf8(&bytes).map_err(|_| err("the bootstrap file is not text"))?;
            let doc: Value = serde_saphyr::from_str(text)
                .map_err(|_| err("is not a YAML kubeconfig (bootstrap-hub.conf)"))?;
            if doc.get("kind").and_then(Value::as_str) != Some("Config") {
                return Err(err("is not a kubeconfig (kind: Config)"));
            }
            Ok((target, bytes))
        }
    }
}

/// Renders the YurtHub static-pod manifest.
pub fn render_manifest(o: &YurtHubOptions, server: &ServerUrl) -> Result<String> {
    o.validate()?;
    let legacy = matches!(o.credential, HubCredential::JoinTokenFile { .. });
    let mut flags = vec![
        "--v=2".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--server-addr={}", server.url),
        format!("--node-name={}", o.node_name),
    ];
    if let Some(p) = &o.nodepool_name {
        flags.push(format!("--nodepool-name={p}"));
    }
    if legacy {
        flags.retain(|f| !f.starts_with("--bind-address"));
        flags.push(format!("--join-token=$$(cat {JOIN_TOKEN_FILE})"));
        flags.push(format!("--working-mode={}", o.working_mode.as_str()));
    } else {
        flags.push(format!("--bootstrap-file={BOOTSTRAP_FILE}"));
        flags.push(format!("--working-mode={}", o.working_mode.as_str()));
        flags.push(format!("--namespace={}", o.namespace));
    }
    let mut s = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    k8s-app: yurt-hub\n  name: yurt-hub\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n",
    );
    if legacy {
        // the token is read from the 0600 file when the container starts; `$$` keeps the
        // kubelet from treating `$(…)` as a variable reference
        let line = format!("exec yurthub {}", flags.join(" "));
        s.push_str(&format!("    - /bin/sh\n    - -c\n    - {}\n", q(&line)));
    } else {
        s.push_str("    - yurthub\n");
        for f in &flags {
            s.push_str(&format!("    - {}\n", q(f)));
        }
    }
    s.push_str(&format!(
        "    image: {}\n    imagePullPolicy: IfNotPresent\n",
        q(&o.image)
    ));
    s.push_str("    livenessProbe:\n      failureThreshold: 3\n      httpGet:\n        host: 127.0.0.1\n        path: /v1/healthz\n        port: 10267\n      initialDelaySeconds: 120\n      periodSeconds: 10\n");
    s.push_str("    name: yurt-hub\n");
    if !legacy {
        s.push_str("    readinessProbe:\n      httpGet:\n        host: 127.0.0.1\n        path: /v1/readyz\n        port: 10267\n      initialDelaySeconds: 30\n      periodSeconds: 15\n");
    }
    s.push_str("    resources:\n      limits:\n        memory: 300Mi\n      requests:\n        cpu: 150m\n        memory: 150Mi\n");
    s.push_str("    securityContext:\n      capabilities:\n        add:\n        - NET_ADMIN\n        - NET_RAW\n");
    s.push_str("    volumeMounts:\n    - mountPath: /var/lib/yurthub\n      name: hub-dir\n    - mountPath: /etc/kubernetes\n      name: kubernetes\n");
    if legacy {
        s.push_str("    - mountPath: /var/lib/kubelet/pki\n      name: pem-dir\n");
    }
    s.push_str("  hostNetwork: true\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  volumes:\n");
    s.push_str("  - hostPath:\n      path: /var/lib/yurthub\n      type: DirectoryOrCreate\n    name: hub-dir\n");
    s.push_str(
        "  - hostPath:\n      path: /etc/kubernetes\n      type: Directory\n    name: kubernetes\n",
    );
    if legacy {
        s.push_str("  - hostPath:\n      path: /var/lib/kubelet/pki\n      type: Directory\n    name: pem-dir\n");
    }
    Ok(s)
}
