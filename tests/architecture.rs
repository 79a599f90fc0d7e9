//! The import graph of `src/` (docs/architecture.md#layers): every `crate::<layer>` path
//! in every file is an arrow from the file's layer to that layer. The layers are ranked; an
//! arrow may only point down, so there is no import loop. Only `cluster/` talks to the
//! Kubernetes API. Print the graph with
//! `cargo test --test architecture -- --nocapture print_the_import_graph`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers from the top (may import everything below) to the leaves (import nothing of ours).
const LAYERS: &[&str] = &[
    "main",
    "lib",
    "app",
    "cli",
    "exec",
    "output",
    "plan",
    "cluster",
    "rollout",
    "render",
    "servant",
    "selector",
    "reference",
    "naming",
    "exit",
];

/// The Kubernetes API client; only `cluster/` may use it (`kube::core` holds only types, such
/// as the `DynamicObject` templates render into).
const API_PATHS: &[&str] = &[
    "kube::api",
    "kube::runtime",
    "kube::discovery",
    "kube::Client",
];

/// Files allowed over [`MAX_LINES`]: the systemd model (design). No other file may join it.
const LONG_FILES: &[&str] = &["servant/systemd.rs"];
const MAX_LINES: usize = 600;

fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out.sort();
    out
}

/// `app/convert/mod.rs` for a path under `src/`.
fn relative(p: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    p.strip_prefix(&src)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

fn layer_of(rel: &str) -> String {
    rel.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Every `crate::X` in `text` (use lines and full paths alike).
fn imported_layers(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // `$crate::` in macros and `yurtsim_crate::` are not ours
        let before = rest[..i].chars().last();
        if !name.is_empty() && !matches!(before, Some('$') | Some('_')) {
            out.insert(name);
        }
        rest = after;
    }
    out
}

/// (from layer, to layer) → the files that make the arrow.
fn graph() -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for p in sources() {
        let rel = relative(&p);
        let from = layer_of(&rel);
        for to in imported_layers(&std::fs::read_to_string(&p).unwrap()) {
            if to != from {
                edges
                    .entry((from.clone(), to))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    edges
}

fn rank(layer: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == layer)
        .unwrap_or_else(|| panic!("layer {layer} is not ranked in LAYERS; add it where it belongs"))
}

#[test]
fn every_import_points_down_so_there_is_no_loop() {
    let upward: Vec<String> = graph()
        .into_iter()
        .filter(|((from, to), _)| rank(from) >= rank(to))
        .map(|((from, to), files)| format!("{from} -> {to} ({files:?})"))
        .collect();
    assert!(
        upward.is_empty(),
        "imports against the layering:\n{}",
        upward.join("\n")
    );
}

#[test]
fn only_cluster_talks_to_the_kubernetes_api() {
    let mut offenders = Vec::new();
    for p in sources() {
        let rel = relative(&p);
        if layer_of(&rel) == "cluster" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for api in API_PATHS {
            if text.contains(api) {
                offenders.push(format!("{rel}: {api}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "API use outside cluster/:\n{}",
        offenders.join("\n")
    );
}

/// The one error edge (docs/architecture.md): only `app/error.rs` prints `error: …` lines and
/// decides which error means which exit code.
const ERROR_EDGE: &str = "app/error.rs";

#[test]
fn errors_meet_at_one_edge() {
    let mut offenders = Vec::new();
    for p in sources() {
        let rel = relative(&p);
        if rel == ERROR_EDGE {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        // an `error:` line printed, or an error type with an exit code of its own
        for needle in ["\"error: ", "fn exit(&self) -> "] {
            if text.contains(needle) {
                offenders.push(format!("{rel}: {needle}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "errors printed or mapped to exit codes outside {ERROR_EDGE}:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn files_stay_short_enough_to_read() {
    let mut long = Vec::new();
    let mut split = Vec::new();
    for p in sources() {
        let rel = relative(&p);
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        let allowed = LONG_FILES.contains(&rel.as_str());
        if lines > MAX_LINES && !allowed {
            long.push(format!("{rel}: {lines} lines"));
        }
        if lines <= MAX_LINES && allowed {
            split.push(rel);
        }
    }
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
    assert!(
        split.is_empty(),
        "take these off LONG_FILES, they are short now: {split:?}"
    );
}

#[test]
fn print_the_import_graph() {
    let edges = graph();
    let mut by_layer: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for ((from, to), files) in &edges {
        by_layer
            .entry(rank(from))
            .or_default()
            .push(format!("{from} -> {to}  ({} files)", files.len()));
    }
    for lines in by_layer.values() {
        for l in lines {
            println!("{l}");
        }
    }
    assert!(!edges.is_empty());
}
