//! The file systems of the images the sim knows (the `image:` field of a facts file).
//!
//! A real image is a root file system; the sim has none, so a container of a known image sees
//! the image's listed files at their paths (each directory holding one is bind-mounted over the
//! container's view, so the host's files there are hidden, as in the image) and anything else
//! from the machine. A file that is a modelled binary is written as one line naming the model,
//! `#!yurtsim-model <component> <version>`, mode 0755: copying it (`cp` in an init container,
//! then a systemd unit's ExecStart) carries the model along, and the sim runs that model when
//! the file is executed as a container's command or a service's program.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::facts;

/// First bytes of a modelled binary.
pub const MODEL_MAGIC: &str = "#!yurtsim-model";

/// One file of an image.
#[derive(Clone, Debug)]
pub struct ImageFile {
    pub path: String,
    pub mode: u32,
    /// (component, version) of the binary this file is.
    pub model: Option<(String, String)>,
}

impl ImageFile {
    /// The file's bytes as the sim writes them.
    pub fn content(&self) -> String {
        match &self.model {
            Some((c, v)) => model_file(c, v),
            None => String::new(),
        }
    }
}

/// What the sim knows of an image's file system.
#[derive(Clone, Debug)]
pub struct Image {
    pub entrypoint: Vec<String>,
    /// The image's `PATH`, for a command given without a slash.
    pub path: Vec<String>,
    pub files: Vec<ImageFile>,
}

/// The content of a modelled binary of `component` at `version`.
pub fn model_file(component: &str, version: &str) -> String {
    format!("{MODEL_MAGIC} {component} {version}\n")
}

/// (component, version) when `bytes` is a modelled binary.
pub fn identify(bytes: &[u8]) -> Option<(String, String)> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?;
    let rest = line.strip_prefix(MODEL_MAGIC)?;
    let mut w = rest.split_whitespace();
    let (c, v) = (w.next()?, w.next()?);
    Some((c.to_string(), v.to_string()))
}

/// The image's file system, when a facts file describes it.
pub fn for_image(image: &str) -> Option<Image> {
    facts::for_image(image).into_iter().find_map(|f| {
        let img = &f.doc["image"];
        let files = img["files"].as_array()?;
        let strs = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        Some(Image {
            entrypoint: strs(&img["entrypoint"]),
            path: strs(&img["path"]),
            files: files
                .iter()
                .filter_map(|x| {
                    Some(ImageFile {
                        path: x["path"].as_str()?.to_string(),
                        mode: u32::from_str_radix(x["mode"].as_str().unwrap_or("0644"), 8)
                            .unwrap_or(0o644),
                        model: x["model"]["component"].as_str().map(|c| {
                            (
                                c.to_string(),
                                x["model"]["version"].as_str().unwrap_or("").to_string(),
                            )
                        }),
                    })
                })
                .collect(),
        })
    })
}

impl Image {
    /// The image file a command names: an absolute path, or a bare name looked up on the
    /// image's `PATH` (as the runtime's exec does).
    pub fn command_file(&self, cmd: &str) -> Option<&ImageFile> {
        if cmd.contains('/') {
            let norm = crate::util::clean_path(cmd);
            return self.files.iter().find(|f| f.path == norm);
        }
        self.path.iter().find_map(|dir| {
            let want = format!("{}/{cmd}", dir.trim_end_matches('/'));
            self.files.iter().find(|f| f.path == want)
        })
    }

    /// Writes the image's files under `dir` (a fresh copy per container: writes stay in that
    /// container, as in its own writable layer) and returns the bind mounts (source directory,
    /// container directory) that show them.
    pub fn materialize(&self, dir: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
        let _ = std::fs::remove_dir_all(dir);
        let mut dirs: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
        for f in &self.files {
            let rel = f.path.trim_start_matches('/');
            let real = dir.join(rel);
            std::fs::create_dir_all(real.parent().unwrap())?;
            std::fs::write(&real, f.content())?;
            std::fs::set_permissions(&real, std::fs::Permissions::from_mode(f.mode))?;
            let target = Path::new(&f.path).parent().unwrap().to_path_buf();
            dirs.insert(target, real.parent().unwrap().to_path_buf());
        }
        Ok(dirs.into_iter().map(|(t, s)| (s, t)).collect())
    }
}
