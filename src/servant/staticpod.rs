//! Installing a new manifest for a static pod (client-side static-pod rollouts) and putting
//! the previous one back. The previous manifest is kept outside the static-pod directory.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::edit::{Change, NodeChanges};
use super::error::{Result, ServantError};
use super::hostfs::{HostFs, sha256_hex, validate_file_name};
use super::journal::BACKUP_DIR;
use super::kubelet::{effective_argv, static_pod_dir};

/// What the last upgrade of a static pod replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaticPodRecord {
    pub name: String,
    pub manifest: String,
    /// Hash of the manifest before the upgrade (None: there was none).
    pub previous_sha256: Option<String>,
    pub installed_sha256: String,
    /// Directories the first upgrade created for its backups (removed again, when empty, by
    /// restore), parents first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
}

fn record_path(name: &str) -> String {
    format!("{BACKUP_DIR}/staticpods/{name}.json")
}

fn previous_path(name: &str) -> String {
    format!("{BACKUP_DIR}/staticpods/{name}.yaml")
}

fn check_manifest(name: &str, bytes: &[u8]) -> Result<()> {
    let err = |m: String| ServantError::Manifest {
        path: format!("(new manifest for {name})"),
        message: m,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| err("is not UTF-8 text".into()))?;
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| ServantError::Yaml {
        path: format!("(new manifest for {name})"),
        message: e.to_string(),
    })?;
    if doc.get("kind").and_then(Value::as_str) != Some("Pod")
        || doc.get("apiVersion").and_then(Value::as_str) != Some("v1")
    {
        return Err(err("is not a v1 Pod".into()));
    }
    if doc
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_none_or(|c| c.is_empty())
    {
        return Err(err("has no containers".into()));
    }
    Ok(())
}

fn manifest_path(fs: &HostFs, name: &str) -> Result<String> {
    validate_file_name(name)?;
    let argv = effective_argv(fs)?;
    let dir = static_pod_dir(fs, &argv)?;
    Ok(format!("{}/{name}.yaml", dir.trim_end_matches('/')))
}

/// Plans installing `manifest` as `<staticPodPath>/<name>.yaml`, keeping the current one as
/// the previous revision (outside the static-pod directory).
pub fn static_pod_upgrade(host_root: &Path, name: &str, manifest: &[u8]) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let path = manifest_path(&fs, name)?;
    check_manifest(name, manifest)?;
    let current = fs.read(&path)?;
    let mut out = NodeChanges::default();
    if current.as_deref() == Some(manifest) {
        return Ok(out);
    }
    let rp = record_path(name);
    let old_record = fs.read(&rp)?;
    let mut created_dirs = old_record
        .as_deref()
        .and_then(|b| serde_json::from_slice::<StaticPodRecord>(b).ok())
        .map(|r| r.created_dirs)
        .unwrap_or_default();
    let mut missing = Vec::new();
    let mut dir = rp.rsplit_once('/').map_or("", |p| p.0).to_owned();
    while !dir.is_empty() && !fs.is_dir(&dir)? {
        missing.push(dir.clone());
        dir = dir.rsplit_once('/').map_or("", |p| p.0).to_owned();
    }
    for d in missing.into_iter().rev() {
        if !created_dirs.contains(&d) {
            created_dirs.push(d);
        }
    }
    let record = StaticPodRecord {
        name: name.into(),
        manifest: path.clone(),
        previous_sha256: current.as_deref().map(sha256_hex),
        installed_sha256: sha256_hex(manifest),
        created_dirs,
    };
    let prev_path = previous_path(name);
    match &current {
        Some(c) => out.push(Change::Write {
            path: prev_path.clone(),
            old: fs.read(&prev_path)?,
            new: c.clone(),
            mode: 0o600,
        }),
        None => {
            if let Some(old) = fs.read(&prev_path)? {
                out.push(Change::Remove {
                    path: prev_path,
                    old,
                });
            }
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&record).expect("serialises");
    bytes.push(b'\n');
    out.push(Change::Write {
        old: old_record,
        path: rp,
        new: bytes,
        mode: 0o600,
    });
    let mode = fs.meta(&path)?.map_or(0o600, |m| m.mode);
    out.push(Change::Write {
        path,
        old: current,
        new: manifest.to_vec(),
        mode,
    });
    Ok(out)
}

/// Plans putting back the manifest the last [`static_pod_upgrade`] of `name` replaced
/// (or removing it when there was none). No record: no changes.
pub fn static_pod_restore(host_root: &Path, name: &str) -> Result<NodeChanges> {
    validate_file_name(name)?;
    let fs = HostFs::new(host_root)?;
    let rp = record_path(name);
    let mut out = NodeChanges::default();
    let Some(rb) = fs.read(&rp)? else {
        return Ok(out);
    };
    let rec: StaticPodRecord =
        serde_json::from_slice(&rb).map_err(|e| ServantError::OperationRecord {
            path: rp.clone(),
            message: e.to_string(),
        })?;
    if rec.name != name || !rec.manifest.ends_with(&format!("/{name}.yaml")) {
        return Err(ServantError::OperationRecord {
            path: rp,
            message: "names a different static pod".into(),
        });
    }
    let current = fs.read(&rec.manifest)?;
    let prev_path = previous_path(name);
    match &rec.previous_sha256 {
        Some(h) => {
            let prev = fs
                .read(&prev_path)?
                .filter(|p| &sha256_hex(p) == h)
                .ok_or_else(|| ServantError::OperationRecord {
                    path: prev_path.clone(),
                    message: "the previous manifest is missing or does not match its recorded hash"
                        .into(),
                })?;
            if current.as_deref() != Some(prev.as_slice()) {
                let mode = fs.meta(&rec.manifest)?.map_or(0o600, |m| m.mode);
                out.push(Change::Write {
                    path: rec.manifest.clone(),
                    old: current,
                    new: prev.clone(),
                    mode,
                });
            }
            out.push(Change::Remove {
                path: prev_path,
                old: prev,
            });
        }
        None => {
            if let Some(c) = current {
                out.push(Change::Remove {
                    path: rec.manifest.clone(),
                    old: c,
                });
            }
        }
    }
    out.push(Change::Remove { path: rp, old: rb });
    // only directories on the way to our backups (a record is data, not a licence)
    for d in rec.created_dirs.iter().rev().filter(|d| {
        (BACKUP_DIR.starts_with(d.as_str()) || d.starts_with(BACKUP_DIR)) && !d.contains("..")
    }) {
        out.push(Change::RemoveEmptyDir { path: d.clone() });
    }
    Ok(out)
}
