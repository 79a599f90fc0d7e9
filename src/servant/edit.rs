//! The common file machinery: surgical text edits (and their 3-way inverse), the list of
//! file changes a plan produces, and the atomic writer that applies them.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{Result, ServantError};
use super::hostfs::{HostFs, sha256_hex};

/// How many bytes of same-line context an edit remembers on each side.
const CONTEXT: usize = 48;

/// One replacement in a text file: at `offset` (in the content before this edit) `old` was
/// replaced by `new`. `before`/`after` are the bytes around the edit on the same line, as
/// they were right after the edit; they anchor the inverse when the file changed elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextEdit {
    pub offset: usize,
    pub old: String,
    pub new: String,
    pub before: String,
    pub after: String,
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl TextEdit {
    /// Replaces `start..end` of `text` by `new`; returns the new text and the recorded edit.
    pub fn apply(text: &str, start: usize, end: usize, new: &str) -> (String, TextEdit) {
        let mut out = String::with_capacity(text.len() + new.len());
        out.push_str(&text[..start]);
        out.push_str(new);
        out.push_str(&text[end..]);
        let line_start = out[..start].rfind('\n').map_or(0, |i| i + 1);
        let b0 = floor_boundary(&out, start.saturating_sub(CONTEXT).max(line_start));
        let b0 = if b0 < line_start { line_start } else { b0 };
        let after_start = start + new.len();
        let line_end = out[after_start..]
            .find('\n')
            .map_or(out.len(), |i| after_start + i);
        let a1 = ceil_boundary(&out, (after_start + CONTEXT).min(line_end)).min(line_end);
        let edit = TextEdit {
            offset: start,
            old: text[start..end].to_owned(),
            new: new.to_owned(),
            before: out[b0..start].to_owned(),
            after: out[after_start..a1].to_owned(),
        };
        (out, edit)
    }

    /// Undoes this edit on `current`, which may have changed elsewhere since. The edited
    /// bytes and their same-line context must still be there (the occurrence nearest to the
    /// recorded offset is used); otherwise Err explains what changed.
    pub fn invert(&self, current: &str) -> std::result::Result<String, String> {
        let needle = format!("{}{}{}", self.before, self.new, self.after);
        let bytes = current.as_bytes();
        let mut best: Option<usize> = None;
        let mut from = 0;
        while from <= current.len() {
            let Some(i) = current[from..].find(&needle) else {
                break;
            };
            let s = from + i;
            let e = s + needle.len();
            // short context means it reached the line boundary: require that still holds
            let left_ok = self.before.len() >= CONTEXT || s == 0 || bytes[s - 1] == b'\n';
            let right_ok = self.after.len() >= CONTEXT || e == bytes.len() || bytes[e] == b'\n';
            let at = s + self.before.len();
            if left_ok
                && right_ok
                && best.is_none_or(|b| at.abs_diff(self.offset) < b.abs_diff(self.offset))
            {
                best = Some(at);
            }
            from = ceil_boundary(current, s + 1);
        }
        let Some(at) = best else {
            return Err(format!(
                "the text we wrote ({:?}) is no longer there with its surroundings ({:?} … {:?}); someone changed it since",
                self.new, self.before, self.after
            ));
        };
        let mut out = String::with_capacity(current.len());
        out.push_str(&current[..at]);
        out.push_str(&self.old);
        out.push_str(&current[at + self.new.len()..]);
        Ok(out)
    }
}

/// One file change of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Create or replace a file (atomically). `old` is None for a new file.
    Write {
        path: String,
        old: Option<Vec<u8>>,
        new: Vec<u8>,
        mode: u32,
    },
    /// Delete a file.
    Remove { path: String, old: Vec<u8> },
    /// Delete a directory tree (data directories of a component).
    RemoveTree { path: String },
    /// Delete a directory if it is empty (one we created).
    RemoveEmptyDir { path: String },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Write { path, .. }
            | Change::Remove { path, .. }
            | Change::RemoveTree { path }
            | Change::RemoveEmptyDir { path } => path,
        }
    }
}

/// A short, serialisable description of a change (for `--dry-run` and reports).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChangeSummary {
    pub path: String,
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Everything a node-side operation will change, computed before anything is written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeChanges {
    pub changes: Vec<Change>,
}

impl NodeChanges {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    pub fn len(&self) -> usize {
        self.changes.len()
    }

    pub fn push(&mut self, c: Change) {
        self.changes.push(c);
    }

    pub fn extend(&mut self, other: NodeChanges) {
        self.changes.extend(other.changes);
    }

    /// The change to `path`, if any.
    pub fn get(&self, path: &str) -> Option<&Change> {
        self.changes.iter().find(|c| c.path() == path)
    }

    pub fn summary(&self) -> Vec<ChangeSummary> {
        self.changes
            .iter()
            .map(|c| match c {
                Change::Write { path, old, new, .. } => ChangeSummary {
                    path: path.clone(),
                    action: if old.is_some() { "modify" } else { "create" },
                    sha256: Some(sha256_hex(new)),
                },
                Change::Remove { path, .. } => ChangeSummary {
                    path: path.clone(),
                    action: "delete",
                    sha256: None,
                },
                Change::RemoveTree { path } => ChangeSummary {
                    path: path.clone(),
                    action: "delete-tree",
                    sha256: None,
                },
                Change::RemoveEmptyDir { path } => ChangeSummary {
                    path: path.clone(),
                    action: "delete-empty-dir",
                    sha256: None,
                },
            })
            .collect()
    }
}

/// Writes `data` to `path` atomically: a dot-prefixed temp file in the same directory
/// (the kubelet ignores dot files in its static-pod directory), fsync, mode and owner of
/// the file it replaces (or `mode` for a new file), rename, fsync of the directory.
/// A private `mode` (no group or other bits: credentials, backups, journals) stays private
/// even over a file others could read, and the temp file is private from its creation, so
/// the content is never readable by others, not even for a moment.
pub fn atomic_write(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let shown = path.display().to_string();
    let dir = path.parent().ok_or_else(|| ServantError::Conflict {
        path: shown.clone(),
        message: "has no parent directory".into(),
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.yurtctl-tmp"));
    let existing = fs::metadata(path).ok();
    let result = (|| -> std::io::Result<()> {
        let _ = fs::remove_file(&tmp);
        let mut f = {
            use std::os::unix::fs::OpenOptionsExt;
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?
        };
        f.write_all(data)?;
        let mut perm_mode = existing
            .as_ref()
            .map_or(mode, |m| std::os::unix::fs::MetadataExt::mode(m) & 0o7777);
        if mode & 0o077 == 0 {
            perm_mode &= !0o077;
        }
        f.set_permissions(fs::Permissions::from_mode(perm_mode))?;
        if let Some(m) = &existing {
            use std::os::unix::fs::MetadataExt;
            let own = f.metadata()?;
            if own.uid() != m.uid() || own.gid() != m.gid() {
                std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()))?;
            }
        }
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| ServantError::io(shown, "write", e))
}

/// Applies planned changes under the host root, in order. Directories for new files are
/// created with mode 0755.
pub fn apply(host_root: &Path, changes: &NodeChanges) -> Result<()> {
    let fs_view = HostFs::new(host_root)?;
    for c in &changes.changes {
        let resolved = fs_view.resolve(c.path())?;
        let disk = fs_view.disk_path(&resolved);
        match c {
            Change::Write { new, mode, .. } => {
                if let Some(parent) = disk.parent() {
                    create_dirs(parent, c.path())?;
                }
                atomic_write(&disk, new, *mode)?;
            }
            Change::Remove { path, .. } => match fs::remove_file(&disk) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(ServantError::io(path.clone(), "delete", e)),
            },
            Change::RemoveTree { path } => match fs::remove_dir_all(&disk) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(ServantError::io(path.clone(), "delete directory", e)),
            },
            Change::RemoveEmptyDir { .. } => {
                // best effort: someone may have put files there since
                let _ = fs::remove_dir(&disk);
            }
        }
    }
    Ok(())
}

fn create_dirs(dir: &Path, shown: &str) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode_0755()
        .create(dir)
        .map_err(|e| ServantError::io(shown, "create parent directory", e))
}

trait DirMode {
    fn mode_0755(&mut self) -> &mut Self;
}

impl DirMode for fs::DirBuilder {
    fn mode_0755(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt;
        self.mode(0o755)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_and_invert() {
        let t = "a\nKEY=\"--x=1 --k=/etc/k\"\nz\n";
        let s = t.find("/etc/k").unwrap();
        let (out, e) = TextEdit::apply(t, s, s + 6, "/new");
        assert_eq!(out, "a\nKEY=\"--x=1 --k=/new\"\nz\n");
        assert_eq!(e.invert(&out).unwrap(), t);
        // others changed another line: still invertible, their change kept
        let changed = out.replace("z\n", "zz\n");
        assert_eq!(e.invert(&changed).unwrap(), t.replace("z\n", "zz\n"));
        // our span changed: refused
        assert!(e.invert(&out.replace("/new", "/other")).is_err());
    }

    #[test]
    fn atomic_write_keeps_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        fs::write(&p, "x").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        atomic_write(&p, b"y", 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"y");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn private_files_stay_private_over_a_readable_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bootstrap-hub.conf");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        atomic_write(&p, b"token: secret", 0o600).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // and a new one is created private
        let q = d.path().join("new.conf");
        atomic_write(&q, b"token: secret", 0o600).unwrap();
        assert_eq!(
            fs::metadata(&q).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
