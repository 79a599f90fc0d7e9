//! The invariants the fuzz targets check, one function per target. Shared by the cargo-fuzz
//! targets (`fuzz_targets/*.rs`) and by `tests/fuzz_corpus.rs`, which replays the committed
//! corpus through them on every `cargo test`, so CI checks every seed and every past finding
//! without cargo-fuzz or a nightly toolchain.
#![allow(dead_code)]

use crate::layout::{Layout, NodeSeed, Role, SeedOptions, seed_node};
use std::path::Path;
use std::sync::OnceLock;
use yurtctl::rollout::{BudgetFlag, IntOrPercent, MaxUnavailable, Partition};
use yurtctl::selector::Selector;
use yurtctl::servant::hostfs::HostFs;
use yurtctl::servant::kubeconfig::{api_server, parse_server_url};
use yurtctl::servant::systemd::{load_unit, parse_env_file};
use yurtctl::servant::{self, disable_nodelifecycle, enable_nodelifecycle};

/// Label selectors: parse never panics; what parses renders to a canonical form that parses
/// back to the same selector and renders identically (a fixed point).
pub fn selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(sel) = Selector::parse(s) else { return };
    let canonical = sel.to_string();
    let again = Selector::parse(&canonical)
        .unwrap_or_else(|e| panic!("canonical form {canonical:?} of {s:?} does not parse: {e}"));
    assert_eq!(again, sel, "{s:?} -> {canonical:?}");
    assert_eq!(again.to_string(), canonical);
    // the value parser agrees with the parser
    assert!(yurtctl::cli::label_selector(s).is_ok());
}

/// --max-unavailable / --partition: parse never panics; accepted values render and re-parse
/// to themselves; percentages stay within 0..=100 and scale to at most the total.
pub fn int_or_percent(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    for flag in [BudgetFlag::MaxUnavailable, BudgetFlag::Partition] {
        match IntOrPercent::parse_for(flag, s) {
            Ok(v) => {
                assert_eq!(
                    IntOrPercent::parse_for(flag, &v.to_string()),
                    Ok(v),
                    "{s:?}"
                );
                if let IntOrPercent::Percent(p) = v {
                    assert!(p <= 100, "{s:?}");
                    for total in [0usize, 1, 7, 100, 5000] {
                        assert!(v.scaled(total, true) <= total);
                        assert!(v.scaled(total, false) <= v.scaled(total, true));
                    }
                }
                if flag == BudgetFlag::MaxUnavailable {
                    assert_ne!(v.scaled(1, true), 0, "{s:?} would stall a rollout");
                }
            }
            Err(e) => assert!(e.to_string().contains(&format!("{s:?}")), "{e}"),
        }
    }
    let _ = s.parse::<MaxUnavailable>();
    let _ = s.parse::<Partition>();
}

fn kubeconfig_root() -> &'static tempfile::TempDir {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc/kubernetes")).unwrap();
        d
    })
}

/// The API server address of the kubelet's kubeconfig: URL parsing never panics and is
/// idempotent on its own output; reading a kubeconfig file of arbitrary bytes never panics.
pub fn kubeconfig_server(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data)
        && let Ok(u) = parse_server_url(s)
    {
        assert!(!u.host.is_empty(), "{s:?} -> {u:?}");
        assert!(u.scheme == "http" || u.scheme == "https");
        assert_eq!(parse_server_url(&u.url), Ok(u.clone()), "{s:?}");
    }
    let r = kubeconfig_root().path();
    std::fs::write(r.join("etc/kubernetes/kubelet.conf"), data).unwrap();
    let fs = HostFs::new(r).unwrap();
    if let Ok(u) = api_server(&fs, "/etc/kubernetes/kubelet.conf") {
        assert_eq!(parse_server_url(&u.url), Ok(u));
    }
}

const DROPIN: &str = "etc/systemd/system/kubelet.service.d/10-kubeadm.conf";
const FLAGS_ENV: &str = "var/lib/kubelet/kubeadm-flags.env";

fn worker_root() -> &'static tempfile::TempDir {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        let layout = Layout::Kubeadm;
        let n = NodeSeed {
            name: layout.node_names(1, 1)[1].0.clone(),
            role: Role::Worker,
            internal_ip: layout.node_ip(1),
            api_server: layout.api_server(&layout.node_ip(0)),
            kubernetes_version: "v1.33.1".into(),
            cluster_name: "kubernetes".into(),
        };
        let d = tempfile::tempdir().unwrap();
        seed_node(d.path(), layout, &n, &SeedOptions::default()).unwrap();
        d
    })
}

/// The text of `host`[start..end], asserting the span is inside the file on char boundaries.
fn in_file(root: &Path, host: &str, start: usize, end: usize) -> String {
    let bytes = std::fs::read(root.join(host.trim_start_matches('/'))).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        start <= end && end <= text.len(),
        "{start}..{end} in {host} ({} bytes)",
        text.len()
    );
    assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
    text[start..end].to_string()
}

/// The kubelet's systemd unit as the servant reads it: the input (split at the first NUL)
/// replaces the kubeadm drop-in and kubeadm-flags.env of a seeded node. Loading, expanding and
/// locating flags never panic, and every span the servant would edit lies inside its file.
pub fn systemd_unit(data: &[u8]) {
    let (unit, env) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    if let Ok(text) = std::str::from_utf8(env) {
        // names are systemd's tokens, invalid ones included (the caller drops those, as
        // systemd does); every value character comes from inside the file
        let lines = text.matches('\n').count() + 1;
        for (name, line, value) in parse_env_file(text, 0) {
            assert!(!name.is_empty(), "{text:?}");
            assert!(
                (1..=lines).contains(&line),
                "{name:?} on line {line} of {lines}"
            );
            for o in value.origin.iter().flatten() {
                assert!(
                    o.offset < text.len(),
                    "{name:?}: offset {} of {}",
                    o.offset,
                    text.len()
                );
            }
        }
    }
    let r = worker_root().path();
    std::fs::write(r.join(DROPIN), unit).unwrap();
    std::fs::write(r.join(FLAGS_ENV), env).unwrap();
    let fs = HostFs::new(r).unwrap();
    let Ok(u) = load_unit(&fs, "kubelet.service") else {
        return;
    };
    let Ok(argv) = u.effective_argv(&fs) else {
        return;
    };
    for i in 0..argv.tokens.len() {
        let _ = argv.describe(i);
        if let Some(span) = argv.token_span(i) {
            in_file(r, &span.path, span.start, span.end);
        }
    }
    for flag in ["kubeconfig", "bootstrap-kubeconfig", "config"] {
        for hit in argv.flag_hits(flag) {
            let value = argv.value_of(flag, hit);
            if let Some(span) = argv.value_span(flag, hit) {
                let text = in_file(r, &span.path, span.start, span.end);
                // a verbatim span holds the value exactly when nothing was unescaped
                if !text.contains(['\\', '"', '\'', '$', '%']) {
                    assert_eq!(text, value, "{span:?}");
                }
            }
        }
    }
}

const KCM: &str = "etc/kubernetes/manifests/kube-controller-manager.yaml";
const LINE: &str = "    - --controllers=*,bootstrapsigner,tokencleaner\n";

fn seeded() -> &'static (tempfile::TempDir, String) {
    static ROOT: OnceLock<(tempfile::TempDir, String)> = OnceLock::new();
    ROOT.get_or_init(|| {
        let layout = Layout::Kubeadm;
        let n = NodeSeed {
            name: layout.node_names(1, 1)[0].0.clone(),
            role: Role::ControlPlane,
            internal_ip: layout.node_ip(0),
            api_server: layout.api_server(&layout.node_ip(0)),
            kubernetes_version: "v1.33.1".into(),
            cluster_name: "kubernetes".into(),
        };
        let d = tempfile::tempdir().unwrap();
        seed_node(d.path(), layout, &n, &SeedOptions::default()).unwrap();
        let manifest = std::fs::read_to_string(d.path().join(KCM)).unwrap();
        assert!(manifest.contains(LINE));
        (d, manifest)
    })
}

fn reset(root: &Path, text: &str) {
    // the journal and backups of the previous input
    let _ = std::fs::remove_dir_all(root.join("var/lib/yurtctl"));
    std::fs::write(root.join(KCM), text).unwrap();
}

/// The kube-controller-manager flag editor: the input replaces the `--controllers` line of a
/// seeded control plane's manifest. Whatever it is, disable never panics; when it edits, the
/// edit is idempotent (a second disable changes nothing) and enable restores the file byte for
/// byte (and then changes nothing either).
pub fn kcm_controllers(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let (dir, manifest) = seeded();
    let root = dir.path();
    let original = manifest.replacen(LINE, line, 1);
    reset(root, &original);
    let Ok(changes) = disable_nodelifecycle(root) else {
        return;
    };
    if changes.is_empty() {
        assert_eq!(std::fs::read_to_string(root.join(KCM)).unwrap(), original);
        return;
    }
    servant::apply(root, &changes).unwrap();
    let disabled = std::fs::read_to_string(root.join(KCM)).unwrap();
    assert_eq!(
        disabled.matches("-nodelifecycle").count(),
        original.matches("-nodelifecycle").count() + 1,
        "{line:?}"
    );
    let again = disable_nodelifecycle(root).expect("a second disable plans");
    assert!(
        again.is_empty(),
        "disable is not idempotent for {line:?}: {again:?}"
    );
    let undo = enable_nodelifecycle(root).expect("enable after disable plans");
    servant::apply(root, &undo).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join(KCM)).unwrap(),
        original,
        "enable did not restore {line:?}"
    );
    let twice = enable_nodelifecycle(root).expect("a second enable plans");
    assert!(twice.is_empty(), "enable is not idempotent for {line:?}");
}
