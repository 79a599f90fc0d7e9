//! Node roots and readiness, as the end-to-end tests compare them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

/// Every file, directory and symlink under a node's root: path → (kind, mode, bytes).
pub type Tree = BTreeMap<String, (char, u32, Vec<u8>)>;

/// Paths the simulator itself writes at runtime, not yurtctl: the `systemctl` stub's call
/// log (`/var/log/yurtsim/`, created the first time a Job pod runs on the node).
const SIM_RUNTIME: &[&str] = &["var/log/yurtsim"];

pub fn tree(root: &Path) -> Tree {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if SIM_RUNTIME
                .iter()
                .any(|p| rel == *p || rel.starts_with(&format!("{p}/")))
            {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(
                    rel,
                    (
                        'l',
                        mode,
                        target.to_string_lossy().into_owned().into_bytes(),
                    ),
                );
            } else if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                walk(root, &path, out);
            } else if std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
                // the container runtime's socket: its type and mode, no content to read
                out.insert(rel, ('s', mode, Vec::new()));
            } else {
                out.insert(rel, ('f', mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

pub fn trees(sim: &yurtsim::Sim) -> BTreeMap<String, Tree> {
    sim.node_names()
        .into_iter()
        .map(|n| {
            let t = tree(&sim.node_root(&n));
            (n, t)
        })
        .collect()
}

pub fn assert_same_trees(before: &BTreeMap<String, Tree>, after: &BTreeMap<String, Tree>) {
    for (node, b) in before {
        let a = &after[node];
        let mut diffs = Vec::new();
        for (p, v) in b {
            match a.get(p) {
                None => diffs.push(format!("missing {p}")),
                Some(x) if x != v => diffs.push(format!(
                    "changed {p}: {:?} {:o} → {:?} {:o}\n--- before\n{}\n--- after\n{}",
                    v.0,
                    v.1,
                    x.0,
                    x.1,
                    String::from_utf8_lossy(&v.2),
                    String::from_utf8_lossy(&x.2)
                )),
                _ => {}
            }
        }
        for p in a.keys().filter(|p| !b.contains_key(*p)) {
            diffs.push(format!("added {p}"));
        }
        assert!(
            diffs.is_empty(),
            "node {node}'s root differs from the original:\n{}",
            diffs.join("\n")
        );
    }
}

/// The sim's kubelets heartbeat: wait until every node is Ready (after a revert restarted
/// the kubelets).
pub async fn all_ready(client: &kube::Client) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let nodes = Api::<Node>::all(client.clone())
            .list(&Default::default())
            .await
            .unwrap();
        let ready = nodes.items.iter().all(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        });
        if ready {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "nodes not Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
