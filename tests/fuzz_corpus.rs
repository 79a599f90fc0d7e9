//! Replays the committed fuzz corpus (`tests/fuzz/corpus/<target>/`, seeds and every past
//! finding) through the invariants the cargo-fuzz targets check, so every `cargo test` runs
//! them without cargo-fuzz or a nightly toolchain (docs/fuzzing.md).

#[path = "fuzz/checks.rs"]
mod checks;
// checks.rs seeds node roots with `crate::layout` (the fuzz targets compile the file in)
use yurtsim::nodes::layout;

/// A fuzz target's invariants over one input.
type Check = fn(&[u8]);

#[test]
fn the_committed_corpus_keeps_every_invariant() {
    let targets: [(&str, Check); 5] = [
        ("selector", checks::selector),
        ("int_or_percent", checks::int_or_percent),
        ("kubeconfig_server", checks::kubeconfig_server),
        ("systemd_unit", checks::systemd_unit),
        ("kcm_controllers", checks::kcm_controllers),
    ];
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus");
    for (target, check) in targets {
        let mut files: Vec<_> = std::fs::read_dir(corpus.join(target))
            .unwrap_or_else(|e| panic!("corpus of {target}: {e}"))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{target} has seeds");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let r = std::panic::catch_unwind(|| check(&data));
            assert!(r.is_ok(), "{target}: {} breaks an invariant", f.display());
        }
    }
}
