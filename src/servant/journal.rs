//! Backups and the record of what an operation changed, under
//! `<host_root>/var/lib/yurtctl/backup/` (never inside the static-pod directory).
//!
//! Per operation there is one JSON record `<op>.json` and, for every file we modified, a
//! copy of its original bytes under `<op>/<host path>`. The record lists, per file, the
//! hash of the original, the hash of what we wrote, and the exact edits, so a revert can
//! restore the original when nobody touched the file since, and otherwise re-apply the
//! inverse of our edits on the current content (keeping other people's changes).

use serde::{Deserialize, Serialize};

use super::edit::{Change, NodeChanges, TextEdit};
use super::error::{Result, ServantError};
use super::hostfs::{HostFs, sha256_hex, validate_file_name};

/// Where backups and records live (host path).
pub const BACKUP_DIR: &str = "/var/lib/yurtctl/backup";

pub const JOURNAL_VERSION: u32 = 1;

/// What an operation did to one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Canonical host path.
    pub path: String,
    /// The file did not exist before: revert deletes it.
    pub created: bool,
    /// Hash of the original bytes (None when created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_sha256: Option<String>,
    /// Host path of the copy of the original bytes (None when created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// Hash of the content we last wrote.
    pub written_sha256: String,
    /// The edits, in order (empty when the file was created whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<TextEdit>,
}

/// The record of one operation (`convert`, `kcm-nodelifecycle`, `staticpod-<name>`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationRecord {
    pub version: u32,
    pub operation: String,
    pub files: Vec<FileRecord>,
    /// Directories we created (revert removes them when empty), parents first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// Directory trees revert removes (component data directories).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_on_revert: Vec<String>,
    /// Operation-specific facts (for example what was added to a flag value).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

pub fn journal_path(operation: &str) -> String {
    format!("{BACKUP_DIR}/{operation}.json")
}

pub fn backup_copy_path(operation: &str, host_path: &str) -> String {
    format!("{BACKUP_DIR}/{operation}{host_path}")
}

impl OperationRecord {
    pub fn new(operation: &str) -> OperationRecord {
        OperationRecord {
            version: JOURNAL_VERSION,
            operation: operation.into(),
            ..Default::default()
        }
    }

    /// Loads the record of `operation`, if there is one.
    pub fn load(fs: &HostFs, operation: &str) -> Result<Option<OperationRecord>> {
        check_operation(operation)?;
        let path = journal_path(operation);
        let Some(bytes) = fs.read(&path)? else {
            return Ok(None);
        };
        let j: OperationRecord =
            serde_json::from_slice(&bytes).map_err(|e| ServantError::OperationRecord {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if j.version != JOURNAL_VERSION || j.operation != operation {
            return Err(ServantError::OperationRecord {
                path,
                message: format!(
                    "unexpected version {} / operation {:?} (this yurtctl writes version {JOURNAL_VERSION})",
                    j.version, j.operation
                ),
            });
        }
        Ok(Some(j))
    }

    pub fn record(&self, path: &str) -> Option<&FileRecord> {
        self.files.iter().find(|f| f.path == path)
    }

    pub fn record_mut(&mut self, path: &str) -> Option<&mut FileRecord> {
        self.files.iter_mut().find(|f| f.path == path)
    }

    /// Serialised record (deterministic: same journal, same bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("journal serialises");
        v.push(b'\n');
        v
    }
}

fn check_operation(op: &str) -> Result<()> {
    validate_file_name(op)
}

/// Computes a file's original from its current content (our changes taken out).
pub type Rebase = dyn Fn(&str) -> Result<String>;

/// Builds the changes of an operation that edits files, keeping the record in step.
/// Used by convert, kcm and static-pod installs.
pub struct Recorder<'a> {
    pub fs: HostFs,
    pub journal: OperationRecord,
    previous: Option<OperationRecord>,
    operation: &'a str,
    pending: Vec<Change>,
}

impl<'a> Recorder<'a> {
    pub fn new(fs: HostFs, operation: &'a str) -> Result<Self> {
        let previous = OperationRecord::load(&fs, operation)?;
        let journal = previous
            .clone()
            .unwrap_or_else(|| OperationRecord::new(operation));
        Ok(Recorder {
            fs,
            journal,
            previous,
            operation,
            pending: Vec::new(),
        })
    }

    /// True when a record from an earlier run exists.
    pub fn has_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// Notes that the parent directories of `path` that do not exist yet are about to be
    /// created (by a write of ours or a command we run), so revert removes them when empty.
    pub(crate) fn note_dirs(&mut self, path: &str) -> Result<()> {
        let mut missing = Vec::new();
        let mut cur = path.rsplit_once('/').map_or("", |p| p.0).to_owned();
        while !cur.is_empty() && !self.fs.is_dir(&cur)? {
            missing.push(cur.clone());
            cur = cur.rsplit_once('/').map_or("", |p| p.0).to_owned();
        }
        for d in missing.into_iter().rev() {
            if !self.journal.created_dirs.contains(&d) {
                self.journal.created_dirs.push(d);
            }
        }
        Ok(())
    }

    /// Replaces the content of an existing text file by applying `edits` (already applied to
    /// produce `new`). The original is backed up the first time. When the file changed since
    /// our last write (say a kubeadm upgrade rewrote it), the recorded original is rebased:
    /// it becomes the current content minus our earlier changes (`rebase`, by default the
    /// inverse of the recorded edits), so a later revert never undoes someone else's work.
    pub fn modify(
        &mut self,
        path: &str,
        old: &[u8],
        new: Vec<u8>,
        edits: Vec<TextEdit>,
        rebase: Option<&Rebase>,
    ) -> Result<()> {
        let path = self.fs.resolve(path)?;
        if old == new.as_slice() {
            return Ok(());
        }
        let meta = self.fs.meta(&path)?;
        let written = sha256_hex(&new);
        let old_hash = sha256_hex(old);
        let operation = self.operation;
        match self.journal.record_mut(&path) {
            Some(r) => {
                if old_hash != r.written_sha256 {
                    let text = std::str::from_utf8(old).map_err(|_| ServantError::Conflict {
                        path: path.clone(),
                        message: "is not UTF-8 text".into(),
                    })?;
                    let base = match rebase {
                        Some(f) => f(text)?,
                        None => {
                            let mut t = text.to_owned();
                            for e in r.edits.iter().rev() {
                                t = e.invert(&t).map_err(|m| ServantError::RevertConflict {
                                    path: path.clone(),
                                    backup: r.backup.clone().unwrap_or_default(),
                                    message: m,
                                })?;
                            }
                            t
                        }
                    };
                    let base_hash = sha256_hex(base.as_bytes());
                    if Some(&base_hash) != r.original_sha256.as_ref() {
                        let backup = backup_copy_path(operation, &path);
                        self.pending.push(Change::Write {
                            path: backup.clone(),
                            old: None,
                            new: base.into_bytes(),
                            mode: 0o600,
                        });
                        r.original_sha256 = Some(base_hash);
                        r.backup = Some(backup);
                    }
                }
                r.edits.extend(edits);
                r.written_sha256 = written;
            }
            None => {
                let backup = backup_copy_path(self.operation, &path);
                self.note_dirs(&backup)?;
                self.pending.push(Change::Write {
                    path: backup.clone(),
                    old: None,
                    new: old.to_vec(),
                    mode: 0o600,
                });
                self.journal.files.push(FileRecord {
                    path: path.clone(),
                    created: false,
                    original_sha256: Some(old_hash),
                    backup: Some(backup),
                    written_sha256: written,
                    edits,
                });
            }
        }
        self.fs.stage(&path, Some(new.clone()))?;
        self.pending.push(Change::Write {
            path,
            old: Some(old.to_vec()),
            new,
            mode: meta.map_or(0o644, |m| m.mode),
        });
        Ok(())
    }

    /// Creates (or rewrites) a file that is wholly ours.
    pub fn create(&mut self, path: &str, new: Vec<u8>, mode: u32) -> Result<()> {
        let path = self.fs.resolve(path)?;
        let old = self.fs.read(&path)?;
        if old.as_deref() == Some(new.as_slice()) {
            return Ok(());
        }
        match self.journal.record_mut(&path) {
            Some(r) => r.written_sha256 = sha256_hex(&new),
            None => {
                if let Some(o) = &old {
                    return Err(ServantError::Conflict {
                        path,
                        message: format!(
                            "exists already ({} bytes) and was not written by yurtctl; move it away or remove it, then retry",
                            o.len()
                        ),
                    });
                }
                self.note_dirs(&path)?;
                self.journal.files.push(FileRecord {
                    path: path.clone(),
                    created: true,
                    original_sha256: None,
                    backup: None,
                    written_sha256: sha256_hex(&new),
                    edits: Vec::new(),
                });
            }
        }
        self.fs.stage(&path, Some(new.clone()))?;
        self.pending.push(Change::Write {
            path,
            old,
            new,
            mode,
        });
        Ok(())
    }

    /// Takes over `path` as ours when it is state of what this operation installed: it lies in
    /// a directory the record removes whole on revert, and nothing recorded wrote it (YurtHub
    /// v0.6 writes its bootstrap-hub.conf into its own root directory). A file elsewhere is
    /// left to [`Recorder::create`]'s refusal.
    pub fn claim_state(&mut self, path: &str) -> Result<()> {
        let path = self.fs.resolve(path)?;
        if self.journal.record(&path).is_some() {
            return Ok(());
        }
        let inside = self.journal.remove_on_revert.iter().any(|d| {
            path.strip_prefix(d.as_str())
                .is_some_and(|r| r.starts_with('/'))
        });
        if let (true, Some(old)) = (inside, self.fs.read(&path)?) {
            self.journal.files.push(FileRecord {
                path,
                created: true,
                original_sha256: None,
                backup: None,
                written_sha256: sha256_hex(&old),
                edits: Vec::new(),
            });
        }
        Ok(())
    }

    /// Removes a file an earlier run of this operation created (an installation that gives
    /// way to another). Its entry stays in the record, so a revert of a run interrupted
    /// before the removal still finds the file, and removes nothing that is no longer there.
    pub fn remove_ours(&mut self, path: &str) -> Result<()> {
        let path = self.fs.resolve(path)?;
        if !self.journal.record(&path).is_some_and(|r| r.created) {
            return Err(ServantError::Conflict {
                path,
                message: "was not created by yurtctl, so it is not removed".into(),
            });
        }
        if let Some(old) = self.fs.read(&path)? {
            self.fs.stage(&path, None)?;
            self.pending.push(Change::Remove { path, old });
        }
        Ok(())
    }

    /// Finishes: the record and backups are written before the files they describe, so
    /// an interrupted apply can always be reverted. No change at all when nothing changed.
    pub fn finish(mut self) -> Result<NodeChanges> {
        let mut out = NodeChanges::default();
        if self.pending.is_empty() && self.previous.as_ref() == Some(&self.journal) {
            return Ok(out);
        }
        if self.pending.is_empty() && self.previous.is_none() && self.journal.files.is_empty() {
            return Ok(out);
        }
        let jp = journal_path(self.operation);
        self.note_dirs(&jp)?;
        let bytes = self.journal.to_bytes();
        let old = self.fs.read(&jp)?;
        // backups first, then the record, then the files
        let (backups, files): (Vec<Change>, Vec<Change>) = self
            .pending
            .into_iter()
            .partition(|c| c.path().starts_with(BACKUP_DIR));
        out.changes.extend(backups);
        if old.as_deref() != Some(bytes.as_slice()) {
            out.push(Change::Write {
                path: jp,
                old,
                new: bytes,
                mode: 0o600,
            });
        }
        out.changes.extend(files);
        Ok(out)
    }
}

/// The temporary file an atomic write of `host_path` uses; a writer killed between writing
/// it and the rename leaves it behind.
pub fn temp_path(host_path: &str) -> Option<String> {
    let (dir, name) = host_path.rsplit_once('/')?;
    (!name.is_empty()).then(|| format!("{dir}/.{name}.yurtctl-tmp"))
}

/// What an apply of `operation` killed before its record was stored leaves: backup copies
/// and the record's temporary file. Backups are written before the record and the files
/// only after it, so without a record nothing else changed and these are safe to remove.
pub fn plan_orphans(fs: &HostFs, operation: &str) -> Result<NodeChanges> {
    check_operation(operation)?;
    let mut out = NodeChanges::default();
    let tree = format!("{BACKUP_DIR}/{operation}");
    if fs.is_dir(&tree)? {
        out.push(Change::RemoveTree { path: tree });
    }
    if let Some(tmp) = temp_path(&journal_path(operation))
        && let Some(old) = fs.read(&tmp)?
    {
        out.push(Change::Remove { path: tmp, old });
    }
    // yurtctl's own directories, empty: a revert killed after it removed its record (which
    // they held) leaves them so, with nothing to name them
    let left_empty = |d: &str| -> Result<bool> { Ok(fs.is_dir(d)? && fs.list_dir(d)?.is_empty()) };
    let parent = "/var/lib/yurtctl";
    let only_backup =
        || -> Result<bool> { Ok(fs.is_dir(parent)? && fs.list_dir(parent)? == ["backup"]) };
    if !out.changes.is_empty() || (left_empty(BACKUP_DIR)? && only_backup()?) {
        // best effort: only when empty (another operation may keep its records there)
        out.push(Change::RemoveEmptyDir {
            path: BACKUP_DIR.into(),
        });
        out.push(Change::RemoveEmptyDir {
            path: parent.into(),
        });
    } else if left_empty(parent)? {
        out.push(Change::RemoveEmptyDir {
            path: parent.into(),
        });
    }
    Ok(out)
}

/// Plans the revert of everything `journal` records. `inverse` lets an operation supply
/// its own (semantic) inverse for a file that changed since we wrote it; the default is
/// to re-apply the inverse of the recorded text edits.
pub fn plan_revert(
    fs: &HostFs,
    journal: &OperationRecord,
    inverse: &dyn Fn(&FileRecord, &str) -> Option<Result<String>>,
) -> Result<NodeChanges> {
    let mut out = NodeChanges::default();
    // temporary files of a write that was killed before its rename
    for r in &journal.files {
        if let Some(tmp) = temp_path(&r.path)
            && let Some(old) = fs.read(&tmp)?
        {
            out.push(Change::Remove { path: tmp, old });
        }
    }
    for r in journal.files.iter().rev() {
        let current = fs.read(&r.path)?;
        if r.created {
            if let Some(cur) = current {
                out.push(Change::Remove {
                    path: r.path.clone(),
                    old: cur,
                });
            }
            continue;
        }
        let Some(cur) = current else {
            return Err(ServantError::RevertConflict {
                path: r.path.clone(),
                backup: r.backup.clone().unwrap_or_default(),
                message: "the file was deleted since we edited it".into(),
            });
        };
        let hash = sha256_hex(&cur);
        if Some(&hash) == r.original_sha256.as_ref() {
            continue; // never applied, or already reverted
        }
        let backup_path = r.backup.clone().unwrap_or_default();
        let restored = if hash == r.written_sha256 {
            let Some(orig) = fs.read(&backup_path)? else {
                return Err(ServantError::RevertConflict {
                    path: r.path.clone(),
                    backup: backup_path,
                    message: "the backup copy of the original is missing".into(),
                });
            };
            if Some(sha256_hex(&orig)) != r.original_sha256 {
                return Err(ServantError::RevertConflict {
                    path: r.path.clone(),
                    backup: backup_path,
                    message: "the backup copy does not match the recorded hash".into(),
                });
            }
            orig
        } else {
            let text =
                String::from_utf8(cur.clone()).map_err(|_| ServantError::RevertConflict {
                    path: r.path.clone(),
                    backup: backup_path.clone(),
                    message: "the file is no longer UTF-8 text".into(),
                })?;
            let reverted = match inverse(r, &text) {
                Some(res) => res?,
                None => {
                    let mut t = text;
                    for e in r.edits.iter().rev() {
                        t = e.invert(&t).map_err(|m| ServantError::RevertConflict {
                            path: r.path.clone(),
                            backup: backup_path.clone(),
                            message: m,
                        })?;
                    }
                    t
                }
            };
            reverted.into_bytes()
        };
        let mode = fs.meta(&r.path)?.map_or(0o644, |m| m.mode);
        out.push(Change::Write {
            path: r.path.clone(),
            old: Some(cur),
            new: restored,
            mode,
        });
    }
    for t in &journal.remove_on_revert {
        if fs.is_dir(t)? {
            out.push(Change::RemoveTree { path: t.clone() });
        }
    }
    // the record and backups go last, so an interrupted revert can be re-run
    for r in &journal.files {
        if let Some(b) = &r.backup
            && let Some(old) = fs.read(b)?
        {
            out.push(Change::Remove {
                path: b.clone(),
                old,
            });
        }
    }
    // Directories before the record (a revert killed after the record went would leave them
    // with nothing to say they are ours), except those that hold the record, after it.
    let jp = journal_path(&journal.operation);
    let mut dirs: Vec<&String> = journal.created_dirs.iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    let (holding, others): (Vec<&String>, Vec<&String>) = dirs
        .into_iter()
        .partition(|d| jp.starts_with(&format!("{d}/")));
    for d in others {
        out.push(Change::RemoveEmptyDir { path: d.clone() });
    }
    if let Some(old) = fs.read(&jp)? {
        out.push(Change::Remove { path: jp, old });
    }
    for d in holding {
        out.push(Change::RemoveEmptyDir { path: d.clone() });
    }
    // yurtctl's own directories once they are empty, whichever operation made them: another
    // operation reverted earlier (an upgrade turns kube-controller-manager's nodelifecycle back
    // on while convert's record is still here) could not remove them then
    for d in [BACKUP_DIR, "/var/lib/yurtctl"] {
        if fs.is_dir(d)?
            && !out
                .changes
                .iter()
                .any(|c| matches!(c, Change::RemoveEmptyDir { path } if path == d))
        {
            out.push(Change::RemoveEmptyDir { path: d.into() });
        }
    }
    Ok(out)
}
