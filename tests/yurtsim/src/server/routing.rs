//! Routing and discovery: a request path to what it names, and the API groups and resource
//! lists the discovery paths serve.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::registry::ResourceInfo;
use crate::sim::Shared;

/// A parsed Kubernetes resource path.
pub(super) struct Target {
    pub(super) res: Arc<ResourceInfo>,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

pub(super) enum Route {
    Discovery(Value),
    Resource(Target),
    NotFound,
}

fn api_resource_list(shared: &Shared, group: &str, version: &str) -> Value {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for r in shared.api.registry.resources_in(group, version) {
        let mut e = json!({"name": r.resource, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind, "verbs": r.verbs()});
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        resources.push(e);
        for s in &r.subresources {
            let verbs: Vec<&str> = match s.as_str() {
                "log" => vec!["get"],
                "binding" | "eviction" | "token" => vec!["create"],
                _ => vec!["get", "patch", "update"],
            };
            let kind = match s.as_str() {
                "scale" => "Scale",
                "eviction" => "Eviction",
                "binding" => "Binding",
                "token" => "TokenRequest",
                "log" => "Pod",
                _ => &r.kind,
            };
            resources.push(json!({"name": format!("{}/{}", r.resource, s), "singularName": "", "namespaced": r.namespaced, "kind": kind, "verbs": verbs}));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

fn api_group(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs[0]})
}

pub(super) fn route(shared: &Shared, path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["api"] => {
            return Route::Discovery(
                json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.server_address()}]}),
            );
        }
        ["apis"] => {
            let groups: Vec<Value> = shared
                .api
                .registry
                .groups()
                .iter()
                .map(|(g, vs)| api_group(g, vs))
                .collect();
            return Route::Discovery(
                json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
            );
        }
        ["apis", g] => {
            return match shared.api.registry.groups().iter().find(|(x, _)| x == g) {
                Some((g, vs)) => {
                    let mut v = api_group(g, vs);
                    v["kind"] = json!("APIGroup");
                    v["apiVersion"] = json!("v1");
                    Route::Discovery(v)
                }
                None => Route::NotFound,
            };
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::NotFound,
    };
    if rest.is_empty() {
        if shared.api.registry.resources_in(group, version).is_empty() {
            return Route::NotFound;
        }
        return Route::Discovery(api_resource_list(shared, group, version));
    }
    let lookup = |r: &str| shared.api.registry.lookup(group, version, r);
    // /namespaces/{ns}/{resource}/... for namespaced resources, else /{resource}/...
    let (ns, rest) = if rest.len() >= 3
        && rest[0] == "namespaces"
        && lookup(rest[2]).is_some_and(|r| r.namespaced)
    {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    let Some(res) = lookup(rest[0]) else {
        return Route::NotFound;
    };
    if rest.len() > 3 {
        return Route::NotFound;
    }
    let sub = rest.get(2).map(|s| s.to_string());
    if let Some(s) = &sub
        && !res.subresources.contains(s)
    {
        return Route::NotFound;
    }
    Route::Resource(Target {
        res,
        namespace: ns,
        name: rest.get(1).map(|s| s.to_string()),
        sub,
    })
}
