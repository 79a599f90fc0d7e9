//! Namespace deletion: the namespace's objects deleted, then the namespace once empty.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions, Propagation};

use super::*;

/// Namespace deletion: delete everything inside, then drop the `kubernetes` finalizer.
pub(super) fn namespace(cluster: &Cluster, queue: &Arc<Queue>, name: &str) {
    let nsi = cluster.api.info("", "namespaces");
    let Ok(ns) = cluster.api.get(&nsi, "", name) else {
        return;
    };
    if !deleting(&ns) {
        return;
    }
    let ctx = Ctx::system("namespace-controller");
    let mut remaining = 0;
    for res in cluster.api.registry.all() {
        if !res.namespaced || res.create_only {
            continue;
        }
        let filter = Filter {
            namespace: Some(name.to_string()),
            ..Default::default()
        };
        for o in cluster.api.list(&res, &filter).0 {
            remaining += 1;
            if !deleting(&o) {
                let (_, oname) = crate::api::store::key_of(&o);
                let _ = cluster.api.delete(
                    &res,
                    name,
                    &oname,
                    &DeleteOptions {
                        propagation: Some(Propagation::Background),
                        grace_period: Some(0),
                        ..Default::default()
                    },
                    &ctx,
                );
            }
        }
    }
    if remaining == 0 {
        let _ = cluster
            .api
            .modify(&nsi, "", name, None, "namespace-controller", &|o| {
                o["spec"]["finalizers"] = json!([]);
                true
            });
        let _ = cluster
            .api
            .delete(&nsi, "", name, &DeleteOptions::default(), &ctx);
        let _ = cluster.api.store.write(&nsi.key(), "", name, false, |cur| {
            Ok(
                if cur.is_some_and(|c| {
                    c["spec"]["finalizers"]
                        .as_array()
                        .is_none_or(|f| f.is_empty())
                }) {
                    crate::api::store::WriteOp::Delete
                } else {
                    crate::api::store::WriteOp::Noop
                },
            )
        });
    } else {
        queue.add_after(Key::Namespace(name.to_string()), Duration::from_millis(100));
    }
}
