//! Property tests: whatever surrounds the line we edit, only the intended span changes and
//! the revert is exact.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use yurtctl::servant::{self, NodeConvertOptions};
use yurtsim::nodes::layout::{Layout, NodeSeed, Role, SeedOptions, seed_node};

const OURS: &str = "/var/lib/openyurt/kubelet.conf";

fn seeded(role: Role) -> tempfile::TempDir {
    let layout = Layout::Kubeadm;
    let idx = usize::from(role == Role::Worker);
    let n = NodeSeed {
        name: layout.node_names(1, 1)[idx].0.clone(),
        role,
        internal_ip: layout.node_ip(idx),
        api_server: layout.api_server(&layout.node_ip(0)),
        kubernetes_version: "v1.33.1".into(),
        cluster_name: "kubernetes".into(),
    };
    let d = tempfile::tempdir().unwrap();
    seed_node(d.path(), layout, &n, &SeedOptions::default()).unwrap();
    d
}

fn apply(root: &Path, c: servant::Result<servant::NodeChanges>) {
    servant::apply(root, &c.unwrap()).unwrap();
}

/// Comment lines safe in both YAML and env files: `#` then printable ASCII.
fn comment() -> impl Strategy<Value = String> {
    "[ -~]{0,30}".prop_map(|s| format!("#{s}\n"))
}

fn flag() -> impl Strategy<Value = String> {
    "--[a-z][a-z-]{0,8}=[a-z0-9./]{0,6}"
}

/// Other env-file lines: assignments in every quoting style, comments, blank lines.
fn env_line() -> impl Strategy<Value = String> {
    prop_oneof![
        comment(),
        Just("\n".to_owned()),
        ("[A-Z][A-Z_]{0,6}", "[a-z0-9 =/-]{0,12}").prop_map(|(k, v)| format!("{k}=\"{v}\"\n")),
        ("[A-Z][A-Z_]{0,6}", "[a-z0-9=/-]{0,12}").prop_map(|(k, v)| format!("{k}={v}\n")),
        ("[A-Z][A-Z_]{0,6}", "[a-z0-9 \"=/-]{0,12}").prop_map(|(k, v)| format!("{k}='{v}'\n")),
    ]
    .prop_filter("must not touch our variable", |l| {
        !l.starts_with("KUBELET_EXTRA_ARGS")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn env_file_edit_touches_only_the_value(
        before in prop::collection::vec(env_line(), 0..6),
        after in prop::collection::vec(env_line(), 0..6),
        pre in prop::collection::vec(flag(), 0..4),
        post in prop::collection::vec(flag(), 0..4),
        quoted in any::<bool>(),
        spaces in 1usize..3,
    ) {
        let d = seeded(Role::Worker);
        let root = d.path();
        fs::copy(root.join("etc/kubernetes/kubelet.conf"), root.join("etc/kubernetes/kx.conf")).unwrap();
        let sep = " ".repeat(spaces);
        let mut words = pre.clone();
        words.push("--kubeconfig=/etc/kubernetes/kx.conf".into());
        words.extend(post.iter().cloned());
        let value = words.join(&sep);
        let line = if quoted {
            format!("KUBELET_EXTRA_ARGS=\"{value}\"\n")
        } else {
            format!("KUBELET_EXTRA_ARGS={value}\n")
        };
        let text = format!("{}{line}{}", before.concat(), after.concat());
        fs::write(root.join("etc/default/kubelet"), &text).unwrap();
        let opts = NodeConvertOptions { yurthub: None, redirect_kubelet: true, restart_workloads: false };
        apply(root, servant::convert(root, &opts));
        let now = fs::read_to_string(root.join("etc/default/kubelet")).unwrap();
        let at = text.find("--kubeconfig=/etc/kubernetes/kx.conf").unwrap() + "--kubeconfig=".len();
        let want = format!("{}{OURS}{}", &text[..at], &text[at + "/etc/kubernetes/kx.conf".len()..]);
        prop_assert_eq!(&now, &want);
        apply(root, servant::revert(root));
        prop_assert_eq!(fs::read_to_string(root.join("etc/default/kubelet")).unwrap(), text);
    }

    #[test]
    fn controllers_edit_touches_only_the_value(
        comments in prop::collection::vec((0usize..200, comment()), 0..6),
        items in prop::collection::vec("[a-z*][a-z-]{0,10}", 1..5),
        quoted in any::<bool>(),
    ) {
        prop_assume!(!items.iter().any(|i| i == "-nodelifecycle"));
        let d = seeded(Role::ControlPlane);
        let root = d.path();
        let p = root.join("etc/kubernetes/manifests/kube-controller-manager.yaml");
        let base = fs::read_to_string(&p).unwrap();
        let value = items.join(",");
        let flag_line = if quoted {
            format!("    - \"--controllers={value}\"\n")
        } else {
            format!("    - --controllers={value}\n")
        };
        let mut lines: Vec<String> = base
            .split_inclusive('\n')
            .map(|l| if l.starts_with("    - --controllers=") { flag_line.clone() } else { l.to_owned() })
            .collect();
        for (pos, c) in &comments {
            let at = pos % (lines.len() + 1);
            lines.insert(at, c.clone());
        }
        let text = lines.concat();
        fs::write(&p, &text).unwrap();
        apply(root, servant::disable_nodelifecycle(root));
        let now = fs::read_to_string(&p).unwrap();
        let new_line = if quoted {
            format!("    - \"--controllers={value},-nodelifecycle\"\n")
        } else {
            format!("    - --controllers={value},-nodelifecycle\n")
        };
        let want = text.replacen(&flag_line, &new_line, 1);
        prop_assert_eq!(&now, &want);
        apply(root, servant::enable_nodelifecycle(root));
        prop_assert_eq!(fs::read_to_string(&p).unwrap(), text);
    }
}
