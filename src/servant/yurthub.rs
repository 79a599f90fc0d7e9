//! The YurtHub static pod and its credential file.
//!
//! The manifest is rendered by the client from the profile's node template (the same text as
//! the profile's `yurt-static-set-*` ConfigMap, so a YurtStaticSet later manages this very
//! file); the servant checks and installs it. Credentials never appear in the manifest or in
//! any argument: modern profiles install a bootstrap kubeconfig as `/var/lib/yurthub/bootstrap-hub.conf` and pass `--bootstrap-file`;
//! the legacy profile (yurthub ≤ v0.6, which only knows `--join-token`) gets the token in a
//! 0600 file that the container reads at start.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Result, ServantError};

pub const HUB_DIR: &str = "/var/lib/yurthub";
pub const HUB_CACHE_DIR: &str = "/etc/kubernetes/cache";
pub const BOOTSTRAP_FILE: &str = "/var/lib/yurthub/bootstrap-hub.conf";
/// Outside `HUB_DIR`: yurthub v0.6 empties its root dir on its first start
/// (openyurtio/openyurt@v0.6.1 pkg/yurthub/certificate/hubself/cert_mgr.go,
/// verifyServerAddrOrCleanup), which would take the token with it.
pub const JOIN_TOKEN_FILE: &str = "/var/lib/yurtctl/yurthub/join-token";

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

/// The YurtHub static pod for one node: the manifest the client rendered from the profile
/// (node-independent; the node name comes from the downward API) and the credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YurtHubOptions {
    /// File name in the kubelet's static-pod directory (the profile's, e.g. `yurthub.yaml`);
    /// a YurtStaticSet manages the file of that name.
    pub manifest_file: String,
    /// The manifest to install, as rendered.
    pub manifest: String,
    pub credential: HubCredential,
}

impl YurtHubOptions {
    /// Reads the manifest from `path` (in this process's file system, e.g. a mounted
    /// ConfigMap).
    pub fn from_file(
        manifest_file: impl Into<String>,
        path: &std::path::Path,
        credential: HubCredential,
    ) -> Result<Self> {
        let manifest = std::fs::read_to_string(path)
            .map_err(|e| ServantError::io(path.display().to_string(), "read", e))?;
        Ok(YurtHubOptions {
            manifest_file: manifest_file.into(),
            manifest,
            credential,
        })
    }

    /// The file name is a plain manifest name and the manifest one v1 Pod with a container.
    pub fn validate(&self) -> Result<()> {
        super::hostfs::validate_file_name(&self.manifest_file)?;
        let bad = |reason: String| {
            Err(ServantError::InvalidName {
                name: format!("YurtHub manifest {}", self.manifest_file),
                reason,
            })
        };
        if !(self.manifest_file.ends_with(".yaml") || self.manifest_file.ends_with(".yml")) {
            return bad("the file name must end in .yaml or .yml".into());
        }
        let pod: Value = match serde_saphyr::from_str(&self.manifest) {
            Ok(v) => v,
            Err(e) => return bad(format!("is not YAML: {e}")),
        };
        if pod["apiVersion"] != "v1" || pod["kind"] != "Pod" {
            return bad("is not a v1 Pod".into());
        }
        if !pod["metadata"]["name"]
            .as_str()
            .is_some_and(crate::selector::is_dns1123_subdomain)
        {
            return bad("metadata.name is missing or not a DNS subdomain".into());
        }
        if pod["spec"]["containers"]
            .as_array()
            .is_none_or(|c| c.is_empty())
        {
            return bad("has no containers".into());
        }
        Ok(())
    }
}

/// What convert installs to run YurtHub on the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubInstall {
    /// A static pod in the kubelet's static-pod directory (OpenYurt ≤ v1.6).
    StaticPod(YurtHubOptions),
    /// A systemd service (OpenYurt v1.7).
    Service(HubService),
}

impl From<YurtHubOptions> for HubInstall {
    fn from(o: YurtHubOptions) -> Self {
        HubInstall::StaticPod(o)
    }
}

impl From<HubService> for HubInstall {
    fn from(s: HubService) -> Self {
        HubInstall::Service(s)
    }
}

/// YurtHub as a systemd service, where upstream v1.7 puts it: the binary, a unit and a drop-in
/// holding the command line (openyurtio/openyurt@v1.7.0:pkg/yurtadm/constants/constants.go
/// YurthubExecStart, YurthubServicePath, YurthubServiceConfPath, YurtHubServiceName).
pub const HUB_BINARY: &str = "/usr/local/bin/yurthub";
pub const HUB_UNIT: &str = "yurthub.service";
pub const HUB_UNIT_FILE: &str = "/etc/systemd/system/yurthub.service";
pub const HUB_DROP_IN_FILE: &str = "/etc/systemd/system/yurthub.service.d/10-yurthub.conf";
/// Placeholders of the profile's node-independent drop-in, filled in by the servant (the
/// cluster renders one drop-in per working mode, like one manifest per working mode).
pub const NODE_NAME_VAR: &str = "$(NODE_NAME)";
pub const NODEPOOL_NAME_VAR: &str = "$(NODEPOOL_NAME)";

/// The YurtHub service for one node: the binary (copied out of the pinned upstream image),
/// the unit and the drop-in with this node's name and pool filled in.
#[derive(Clone, PartialEq, Eq)]
pub struct HubService {
    pub binary: Vec<u8>,
    pub unit: String,
    pub drop_in: String,
    /// The bootstrap material, when YurtHub does not reuse the kubelet's certificate.
    pub credential: Option<HubCredential>,
}

impl std::fmt::Debug for HubService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubService")
            .field("binary", &format_args!("{} bytes", self.binary.len()))
            .field("unit", &self.unit)
            .field("drop_in", &self.drop_in)
            .field("credential", &self.credential)
            .finish()
    }
}

impl HubService {
    /// Reads the three files (in this process's file system: the binary from the Job's
    /// volume, unit and drop-in from the mounted ConfigMap) and fills in the node's values.
    pub fn from_files(
        binary: &std::path::Path,
        unit: &std::path::Path,
        drop_in: &std::path::Path,
        node: &str,
        pool: &str,
        credential: Option<HubCredential>,
    ) -> Result<Self> {
        let read = |p: &std::path::Path| {
            std::fs::read(p).map_err(|e| ServantError::io(p.display().to_string(), "read", e))
        };
        let text = |p: &std::path::Path| {
            String::from_utf8(read(p)?).map_err(|_| ServantError::InvalidName {
                name: format!("YurtHub unit file {}", p.display()),
                reason: "is not UTF-8 text".into(),
            })
        };
        Ok(HubService {
            binary: read(binary)?,
            unit: text(unit)?,
            drop_in: text(drop_in)?
                .replace(NODE_NAME_VAR, node)
                .replace(NODEPOOL_NAME_VAR, pool),
            credential,
        })
    }

    /// The targets of the unit's `[Install]` `WantedBy=` lines (what `systemctl enable` links
    /// the unit into).
    pub fn wanted_by(&self) -> Vec<&str> {
        let mut section = "";
        let mut out = Vec::new();
        for line in self.unit.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line;
            } else if section == "[Install]"
                && let Some(v) = line.strip_prefix("WantedBy=")
            {
                out.extend(v.split_whitespace());
            }
        }
        out
    }

    /// The binary is there, both unit files are units whose command line is complete.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, reason: String| {
            Err(ServantError::InvalidName {
                name: format!("YurtHub {what}"),
                reason,
            })
        };
        if self.binary.is_empty() {
            return bad(
                &format!("binary {HUB_BINARY}"),
                "is empty: the image it was copied from has no yurthub at that path".into(),
            );
        }
        if !self.unit.lines().any(|l| l.trim() == "[Service]") {
            return bad(
                &format!("unit {HUB_UNIT_FILE}"),
                "has no [Service] section".into(),
            );
        }
        if !self.drop_in.lines().any(|l| l.trim() == "[Service]") {
            return bad(
                &format!("drop-in {HUB_DROP_IN_FILE}"),
                "has no [Service] section".into(),
            );
        }
        if let Some(v) = [NODE_NAME_VAR, NODEPOOL_NAME_VAR]
            .into_iter()
            .find(|v| self.drop_in.contains(v))
        {
            return bad(
                &format!("drop-in {HUB_DROP_IN_FILE}"),
                format!("still holds {v} after the node's values were filled in"),
            );
        }
        Ok(())
    }
}

/// Where a credential is installed on the node.
pub fn credential_path(c: &HubCredential) -> &'static str {
    match c {
        HubCredential::BootstrapFile { .. } => BOOTSTRAP_FILE,
        HubCredential::JoinTokenFile { .. } => JOIN_TOKEN_FILE,
    }
}

/// Reads and checks the credential; returns (host path, bytes) to install.
pub fn credential_file(c: &HubCredential) -> Result<(&'static str, Vec<u8>)> {
    let (HubCredential::BootstrapFile { source: src }
    | HubCredential::JoinTokenFile { source: src }) = c;
    let target = credential_path(c);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(file: &str, manifest: &str) -> YurtHubOptions {
        YurtHubOptions {
            manifest_file: file.into(),
            manifest: manifest.into(),
            credential: HubCredential::BootstrapFile {
                source: "/dev/null".into(),
            },
        }
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\nspec:\n  containers:\n  - name: yurt-hub\n    image: openyurt/yurthub:v1.6.1\n";

    #[test]
    fn manifests_are_checked_before_anything_is_written() {
        assert!(opts("yurthub.yaml", POD).validate().is_ok());
        for (file, manifest, why) in [
            ("..yurthub.yaml", POD, "'..'"),
            ("sub/yurthub.yaml", POD, "not a path"),
            (".yurthub.yaml", POD, "dot files"),
            ("yurthub.conf", POD, ".yaml"),
            ("yurthub.yaml", "a: [", "not YAML"),
            (
                "yurthub.yaml",
                "apiVersion: v1\nkind: ConfigMap\n",
                "v1 Pod",
            ),
            (
                "yurthub.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers: [{name: a}]\n",
                "metadata.name",
            ),
            (
                "yurthub.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hub\nspec:\n  containers: []\n",
                "no containers",
            ),
        ] {
            let e = opts(file, manifest).validate().unwrap_err().to_string();
            assert!(e.contains(why), "{file}: {e}");
        }
    }
}
