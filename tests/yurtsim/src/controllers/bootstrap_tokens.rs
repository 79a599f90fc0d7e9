//! Bootstrap tokens: expired ones deleted (tokencleaner), and `kube-public/cluster-info`
//! signed for each signing token (bootstrapsigner).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions};
use crate::util;

use super::*;

/// Expired bootstrap tokens are deleted (tokencleaner), and `kube-public/cluster-info` carries a
/// `jws-kubeconfig-<token-id>` entry for every signing token (bootstrapsigner). The signature is
/// a stand-in: what matters to clients is that the key appears and disappears with the token.
pub(super) fn bootstrap_tokens(cluster: &Cluster, queue: &Arc<Queue>) {
    let secrets = cluster.api.info("", "secrets");
    let filter = Filter {
        namespace: Some("kube-system".into()),
        field: crate::api::selector::FieldSelector::parse("type=bootstrap.kubernetes.io/token")
            .unwrap(),
        ..Default::default()
    };
    let now = SystemTime::now();
    let mut signing: Vec<String> = Vec::new();
    for t in cluster.api.list(&secrets, &filter).0 {
        let name = s(&t["metadata"]["name"]);
        let expiry = util::secret_field(&t, "expiration").and_then(|e| util::parse_rfc3339(&e));
        if let Some(exp) = expiry {
            if exp <= now {
                let _ = cluster.api.delete(
                    &secrets,
                    "kube-system",
                    &name,
                    &DeleteOptions::default(),
                    &Ctx::system("tokencleaner"),
                );
                continue;
            }
            queue.add_after(
                Key::BootstrapTokens,
                exp.duration_since(now).unwrap_or_default() + Duration::from_millis(50),
            );
        }
        if util::secret_field(&t, "usage-bootstrap-signing").as_deref() == Some("true")
            && let Some(id) = util::secret_field(&t, "token-id")
        {
            signing.push(id);
        }
    }
    let cms = cluster.api.info("", "configmaps");
    let _ = cluster.api.modify(
        &cms,
        "kube-public",
        "cluster-info",
        None,
        "bootstrapsigner",
        &|o| {
            let data = o["data"].as_object().cloned().unwrap_or_default();
            let mut next = data.clone();
            next.retain(|k, _| {
                !k.starts_with("jws-kubeconfig-")
                    || signing
                        .iter()
                        .any(|id| k == &format!("jws-kubeconfig-{id}"))
            });
            let kubeconfig = data
                .get("kubeconfig")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for id in &signing {
                let sig = format!(
                    "yurtsim..{:08x}",
                    util::fnv32a(format!("{id}{kubeconfig}").as_bytes())
                );
                next.insert(format!("jws-kubeconfig-{id}"), json!(sig));
            }
            if next == data {
                return false;
            }
            o["data"] = Value::Object(next);
            true
        },
    );
}
