//! Read-only access to the node's files under a host root, with an in-memory overlay so the
//! planner can re-evaluate the kubelet's flags after an edit without writing anything.
//!
//! Host paths are absolute node paths ("/etc/x"). They are resolved inside the root the way
//! the kernel would resolve them in a chroot: symlinks are followed, absolute link targets
//! start again at the root, and a `..` that would climb above the root is an error.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::error::{Result, ServantError};

/// Linux's MAXSYMLINKS.
const MAX_LINKS: usize = 40;

/// The node's file system seen from a host root, plus pending in-memory edits.
#[derive(Debug, Clone)]
pub struct HostFs {
    root: PathBuf,
    /// Resolved host path → new content (None = deleted).
    overlay: BTreeMap<String, Option<Vec<u8>>>,
}

/// Ownership and permission bits of an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl HostFs {
    /// Opens a host root; it must be an existing directory.
    pub fn new(root: &Path) -> Result<Self> {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => Ok(HostFs {
                root: root.to_path_buf(),
                overlay: BTreeMap::new(),
            }),
            Ok(_) => Err(ServantError::HostRoot {
                path: root.to_path_buf(),
                reason: "not a directory".into(),
            }),
            Err(e) => Err(ServantError::HostRoot {
                path: root.to_path_buf(),
                reason: e.to_string(),
            }),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `host` to its canonical host path (symlinks followed inside the root).
    /// Missing components are fine: the result names where the file would be.
    pub fn resolve(&self, host: &str) -> Result<String> {
        let mut pending: Vec<String> = host.split('/').rev().map(str::to_owned).collect();
        let mut done: Vec<String> = Vec::new();
        let mut links = 0usize;
        while let Some(part) = pending.pop() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if done.pop().is_none() {
                        return Err(ServantError::EscapesRoot { path: host.into() });
                    }
                    continue;
                }
                _ => done.push(part),
            }
            let here = format!("/{}", done.join("/"));
            if self.overlay.contains_key(&here) {
                continue; // overlay entries are regular files
            }
            let disk = self.root.join(done.join("/"));
            let Ok(meta) = fs::symlink_metadata(&disk) else {
                continue;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(ServantError::EscapesRoot {
                    path: format!("{host} (too many levels of symbolic links)"),
                });
            }
            let target = fs::read_link(&disk)
                .map_err(|e| ServantError::io(here.clone(), "read symlink", e))?;
            let target = target.to_string_lossy().into_owned();
            done.pop();
            if target.starts_with('/') {
                done.clear();
            }
            pending.extend(target.split('/').rev().map(str::to_owned));
        }
        Ok(format!("/{}", done.join("/")))
    }

    /// Where a (resolved) host path lives on disk.
    pub fn disk_path(&self, resolved: &str) -> PathBuf {
        self.root.join(resolved.trim_start_matches('/'))
    }

    /// Reads a file; Ok(None) when it does not exist. `/dev/null` reads as empty.
    pub fn read(&self, host: &str) -> Result<Option<Vec<u8>>> {
        let r = self.resolve(host)?;
        if r == "/dev/null" {
            return Ok(Some(Vec::new()));
        }
        if let Some(v) = self.overlay.get(&r) {
            return Ok(v.clone());
        }
        match fs::read(self.disk_path(&r)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => Ok(None),
            Err(e) => Err(ServantError::io(host, "read", e)),
        }
    }

    /// Reads a text file that must be UTF-8 (unit files, env files, YAML).
    pub fn read_text(&self, host: &str) -> Result<Option<String>> {
        match self.read(host)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b)
                .map(Some)
                .map_err(|_| ServantError::Conflict {
                    path: host.into(),
                    message: "file is not valid UTF-8; yurtctl only edits text files".into(),
                }),
        }
    }

    /// True for a regular file (or overlay file).
    pub fn is_file(&self, host: &str) -> Result<bool> {
        let r = self.resolve(host)?;
        if let Some(v) = self.overlay.get(&r) {
            return Ok(v.is_some());
        }
        Ok(fs::metadata(self.disk_path(&r))
            .map(|m| m.is_file())
            .unwrap_or(false))
    }

    pub fn is_dir(&self, host: &str) -> Result<bool> {
        let r = self.resolve(host)?;
        Ok(fs::metadata(self.disk_path(&r))
            .map(|m| m.is_dir())
            .unwrap_or(false))
    }

    /// systemd's null_or_empty(): a symlink to /dev/null or an empty regular file masks.
    pub fn is_null_or_empty(&self, host: &str) -> Result<bool> {
        let r = self.resolve(host)?;
        if r == "/dev/null" {
            return Ok(true);
        }
        if let Some(v) = self.overlay.get(&r) {
            return Ok(v.as_ref().is_some_and(Vec::is_empty));
        }
        Ok(fs::metadata(self.disk_path(&r))
            .map(|m| m.is_file() && m.len() == 0)
            .unwrap_or(false))
    }

    /// Entry names of a directory (disk plus overlay), sorted; empty when missing.
    pub fn list_dir(&self, host: &str) -> Result<Vec<String>> {
        let r = self.resolve(host)?;
        let mut names: Vec<String> = match fs::read_dir(self.disk_path(&r)) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        let prefix = format!("{}/", r.trim_end_matches('/'));
        for (p, v) in &self.overlay {
            if let Some(name) = p.strip_prefix(&prefix)
                && !name.contains('/')
            {
                match v {
                    Some(_) => names.push(name.to_owned()),
                    None => names.retain(|n| n != name),
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Mode/owner of an existing file on disk.
    pub fn meta(&self, host: &str) -> Result<Option<FileMeta>> {
        let r = self.resolve(host)?;
        match fs::metadata(self.disk_path(&r)) {
            Ok(m) => Ok(Some(FileMeta {
                mode: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ServantError::io(host, "stat", e)),
        }
    }

    /// Stages new content for a file (visible to later reads through this HostFs).
    pub fn stage(&mut self, host: &str, content: Option<Vec<u8>>) -> Result<()> {
        let r = self.resolve(host)?;
        self.overlay.insert(r, content);
        Ok(())
    }
}

/// SHA-256 (FIPS 180-4) of `data`, lower-case hex. Used to notice that a file changed since
/// we edited it; small enough not to need a dependency.
pub fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

/// Checks a single path component given where a file name is expected.
pub fn validate_file_name(name: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(ServantError::InvalidName {
            name: name.into(),
            reason: reason.into(),
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.contains('/') {
        return bad("must be a file name, not a path (contains '/')");
    }
    if name == "." || name == ".." || name.contains("..") {
        return bad("must not contain '..'");
    }
    if name.starts_with('.') {
        return bad("must not start with '.' (the kubelet ignores dot files)");
    }
    if name.len() > 253 {
        return bad("longer than 253 characters");
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
    {
        return bad("only lower-case letters, digits, '-' and '.' are allowed (a DNS subdomain)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            sha256_hex(long),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn names() {
        assert!(validate_file_name("kube-apiserver").is_ok());
        for bad in ["", "../x", "a/b", "..", ".hidden", "x..y", "/abs", "UPPER"] {
            assert!(validate_file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolve_stays_inside() {
        let d = tempfile::tempdir().unwrap();
        let h = HostFs::new(d.path()).unwrap();
        assert!(h.resolve("/../etc").is_err());
        std::os::unix::fs::symlink("/etc/real", d.path().join("link")).unwrap();
        assert_eq!(h.resolve("/link/x").unwrap(), "/etc/real/x");
        std::os::unix::fs::symlink("../../..", d.path().join("up")).unwrap();
        assert!(h.resolve("/up/x").is_err());
    }
}
