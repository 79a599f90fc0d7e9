//! A minimal OpenAPI v3 surface: the discovery index and, per group-version, one PATCH operation
//! per resource carrying `x-kubernetes-group-version-kind` and the `fieldValidation` parameter.
//! That is what kubectl reads to decide that the server validates fields itself; schemas are not
//! published (kubectl then uses its compiled-in types for strategic merge).

use serde_json::{Map, Value, json};

use crate::api::registry::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".into())];
    for (g, vs) in registry.groups() {
        for v in vs {
            gvs.push((g.clone(), v));
        }
    }
    for (g, v) in gvs {
        let p = gv_path(&g, &v);
        let hash = format!(
            "{:016X}",
            crate::util::fnv32a(document(registry, &g, &v).to_string().as_bytes())
        );
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The document for `api/v1` or `apis/<group>/<version>`; None when unknown.
pub fn for_path(registry: &Registry, rest: &str) -> Option<Value> {
    let segs: Vec<&str> = rest.trim_matches('/').split('/').collect();
    let (g, v) = match segs.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    if registry.resources_in(g, v).is_empty() {
        return None;
    }
    Some(document(registry, g, v))
}

fn document(registry: &Registry, group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for r in registry.resources_in(group, version) {
        if r.create_only {
            continue;
        }
        let path = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.resource)
        } else {
            format!("{prefix}/{}/{{name}}", r.resource)
        };
        let param = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
        paths.insert(
            path,
            json!({"patch": {
                "operationId": format!("patch{}", r.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
                "parameters": [param("dryRun"), param("fieldManager"), param("fieldValidation"), param("force")],
                "responses": {"200": {"description": "OK"}},
            }}),
        );
    }
    json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "yurtsim"}, "paths": paths, "components": {"schemas": {}}})
}
