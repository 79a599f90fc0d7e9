//! The import graph of `src/` (docs/architecture.md#layers): every `crate::<layer>` path
//! in every file is an arrow from the file's layer to that layer. The layers are ranked; an
//! arrow may only point down, so there is no import loop. Only `cluster/` talks to the
//! Kubernetes API. Print the graph with
//! `cargo test --test architecture -- --nocapture print_the_import_graph`.
//!
//! The same rules hold for the simulator, `tests/yurtsim/src` (docs/yurtsim.md#layers): its
//! layers are ranked, an import may only point down, and files stay short; the `sim_` tests
//! below check it, with the long files still allowed named one by one.

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

/// The files (relative name, path) over `max` lines that `allowed` does not name, and the
/// `allowed` ones that are short now or gone.
fn length_check(
    files: Vec<(String, PathBuf)>,
    max: usize,
    allowed: &[&str],
) -> (Vec<String>, Vec<String>) {
    let mut long = Vec::new();
    let mut stale: Vec<String> = allowed
        .iter()
        .filter(|a| !files.iter().any(|(rel, _)| rel == *a))
        .map(|a| format!("{a} (gone)"))
        .collect();
    for (rel, p) in files {
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        let listed = allowed.contains(&rel.as_str());
        if lines > max && !listed {
            long.push(format!("{rel}: {lines} lines"));
        }
        if lines <= max && listed {
            stale.push(rel);
        }
    }
    (long, stale)
}

#[test]
fn files_stay_short_enough_to_read() {
    let files = sources().into_iter().map(|p| (relative(&p), p)).collect();
    let (long, split) = length_check(files, MAX_LINES, LONG_FILES);
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

// ---------------------------------------------------------------------------------------
// yurtsim (tests/yurtsim/src)

/// yurtsim's layers from the top (docs/yurtsim.md#layers), each with the modules (files and
/// folders of tests/yurtsim/src) it holds. A module may import from its own layer and the
/// layers below it, never from one above.
const SIM_LAYERS: &[(&str, &[&str])] = &[
    // the cluster handle, its HTTP face and control API, the binary
    ("top", &["lib", "bin", "sim", "server", "control", "faults"]),
    // the real tier: the nodes in front of a real control plane
    ("real", &["real"]),
    ("controllers", &["controllers"]),
    // the OpenYurt components' models
    ("models", &["models"]),
    // simulated machines and their kubelets
    ("nodes", &["nodes"]),
    // the Kubernetes API server's semantics
    ("api", &["api"]),
    ("facts", &["facts"]),
    ("leaves", &["pki", "http", "version", "util"]),
];

/// yurtsim's files allowed over [`SIM_MAX_LINES`], each with why. The list may only shrink:
/// a file named here that is short now fails until it is taken off.
const SIM_LONG_FILES: &[(&str, &str)] = &[
    (
        "api/table.rs",
        "table-driven: kube-apiserver's printer columns, kind by kind",
    ),
    (
        "api/protobuf.rs",
        "table-driven: the schema transcribed from generated.proto",
    ),
    (
        "nodes/systemd/mod.rs",
        "systemd's parsers transcribed as one oracle (as src/servant/systemd.rs)",
    ),
];
const SIM_MAX_LINES: usize = 800;

fn sim_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/yurtsim/src")
}

/// `nodes/kubelet/mod.rs` for a path under tests/yurtsim/src.
fn sim_relative(p: &Path) -> String {
    p.strip_prefix(sim_src())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

fn sim_sources() -> Vec<PathBuf> {
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
    walk(&sim_src(), &mut out);
    out.sort();
    out
}

/// The rank (0 = top) and name of the layer holding `module` (a file's or folder's name at
/// the top of tests/yurtsim/src; `Sim`, `Layout` and the other re-exports at the crate root
/// belong to `lib`).
fn sim_layer(module: &str) -> (usize, &'static str) {
    let module = if module.starts_with(|c: char| c.is_ascii_uppercase()) {
        "lib"
    } else {
        module
    };
    SIM_LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, modules))| modules.contains(&module))
        .map(|(i, (name, _))| (i, *name))
        .unwrap_or_else(|| {
            panic!("yurtsim module {module} is in no layer of SIM_LAYERS; add it where it belongs")
        })
}

/// Every `crate::…` path in `text` (use lines and full paths alike), up to a brace or a
/// glob: `crate::nodes::kubelet::NodeKubelet`.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        let after = &rest[i..];
        let path: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        // `$crate::` in macros and `yurtsim_crate::` are not ours
        if !before.is_some_and(|c| c == '$' || c == '_' || c.is_alphanumeric()) {
            let path = path.trim_end_matches(':');
            if path.len() > "crate".len() {
                out.insert(path.to_string());
            }
        }
        rest = &rest[i + "crate::".len()..];
    }
    out
}

/// (file, imported path) for every import from a layer above the file's.
fn sim_upward_imports() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in sim_sources() {
        let rel = sim_relative(&p);
        let module = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let (from, _) = sim_layer(module);
        for path in crate_paths(&std::fs::read_to_string(&p).unwrap()) {
            let to_module = path.split("::").nth(1).unwrap();
            if sim_layer(to_module).0 < from {
                out.push((rel.clone(), path));
            }
        }
    }
    out
}

#[test]
fn sim_imports_point_down() {
    let upward: Vec<String> = sim_upward_imports()
        .iter()
        .map(|(file, path)| {
            let (_, from) = sim_layer(file.split('/').next().unwrap().trim_end_matches(".rs"));
            let (_, to) = sim_layer(path.split("::").nth(1).unwrap());
            format!("{file} ({from}) imports {path} ({to})")
        })
        .collect();
    assert!(
        upward.is_empty(),
        "yurtsim imports against the layering (docs/yurtsim.md#layers): move the type or \
         function down to the layer that owns it, or pass it in:\n{}",
        upward.join("\n")
    );
}

#[test]
fn sim_files_stay_short_enough_to_read() {
    let files = sim_sources()
        .into_iter()
        .map(|p| (sim_relative(&p), p))
        .collect();
    let allowed: Vec<&str> = SIM_LONG_FILES.iter().map(|(f, _)| *f).collect();
    let (long, split) = length_check(files, SIM_MAX_LINES, &allowed);
    assert!(
        long.is_empty(),
        "split these yurtsim files:\n{}",
        long.join("\n")
    );
    assert!(
        split.is_empty(),
        "take these off SIM_LONG_FILES, they are short now or gone: {split:?}"
    );
}

#[test]
fn sim_layers_name_every_module_once() {
    let mut seen = BTreeSet::new();
    for (_, modules) in SIM_LAYERS {
        for m in *modules {
            assert!(seen.insert(*m), "{m} is in two layers of SIM_LAYERS");
        }
    }
    for e in std::fs::read_dir(sim_src()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.trim_end_matches(".rs");
        assert!(
            seen.contains(module),
            "tests/yurtsim/src/{name} is in no layer of SIM_LAYERS"
        );
    }
}
