//! `/yurtsim/v1/…`: the sim's own control API for tests and people (faults, metrics, node state,
//! a node's YurtHub endpoints). It uses the same bearer token as the Kubernetes API.

use std::collections::HashMap;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use crate::faults::RequestFault;
use crate::http::{Body, json_response, text_response};
use crate::sim::Shared;

pub async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    path: &str,
    _q: &HashMap<String, String>,
) -> Response<Body> {
    let authorized = crate::server::authorized(&shared, &req);
    if !authorized {
        return json_response(
            401,
            &json!({"error": "Unauthorized: send the kubeconfig's bearer token"}),
        );
    }
    let method = req.method().clone();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = if bytes.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return json_response(400, &json!({"error": format!("body is not JSON: {e}")}));
            }
        }
    };
    let segs: Vec<&str> = path
        .trim_start_matches("/yurtsim/v1/")
        .trim_matches('/')
        .split('/')
        .collect();
    let ok = || json_response(200, &json!({"ok": true}));
    let bad = |m: String| json_response(400, &json!({"error": m}));
    match (&method, segs.as_slice()) {
        (&Method::GET, ["metrics"]) => json_response(200, &shared.metrics.to_json()),
        (&Method::DELETE, ["metrics"]) => {
            shared.metrics.reset();
            ok()
        }
        (&Method::POST, ["faults", "requests"]) => {
            match serde_json::from_value::<RequestFault>(body) {
                Ok(f) => {
                    shared.faults.add(f);
                    ok()
                }
                Err(e) => bad(format!(
                    "expected {{verb, resource, count, status, delayMs, message}}: {e}"
                )),
            }
        }
        (&Method::POST, ["faults", "deny"]) => {
            let (Some(verb), Some(res)) = (body["verb"].as_str(), body["resource"].as_str()) else {
                return bad(
                    "expected {verb, resource} (resource as plural.group, e.g. jobs.batch)".into(),
                );
            };
            shared.faults.deny(verb, res);
            ok()
        }
        (&Method::POST, ["faults", "never-ready"]) => match body["image"].as_str() {
            Some(img) => {
                shared.faults.never_ready(img);
                ok()
            }
            None => bad("expected {image}".into()),
        },
        (&Method::POST, ["faults", "unreachable-registry"]) => match body["registry"].as_str() {
            Some(reg) => {
                shared
                    .faults
                    .unreachable_registry(reg, body["node"].as_str());
                ok()
            }
            None => bad("expected {registry, node?} (node absent: every node)".into()),
        },
        (&Method::DELETE, ["faults", "unreachable-registry"]) => {
            shared.faults.reachable_again();
            ok()
        }
        (&Method::DELETE, ["faults"]) => {
            shared.faults.clear();
            ok()
        }
        (&Method::POST, ["watches", "drop"]) => {
            json_response(200, &json!({"dropped": shared.api.store.drop_watches()}))
        }
        (&Method::POST, ["compact"]) => {
            shared.api.store.compact();
            ok()
        }
        (&Method::POST, ["nodes", node, "ready"])
        | (&Method::POST, ["nodes", node, "not-ready"]) => {
            let ready = segs[2] == "ready";
            match crate::nodes::kubelet::force_ready(
                &shared,
                node,
                if ready { None } else { Some(false) },
            ) {
                Ok(()) => ok(),
                Err(e) => json_response(404, &json!({"error": e.to_string()})),
            }
        }
        (&Method::POST, ["nodes", node, "fail-jobs"]) => {
            if shared.kubelets.get(node).is_none() {
                return json_response(404, &json!({"error": format!("no node named {node:?}")}));
            }
            let prefixes: Vec<&str> = body["jobNamePrefixes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .collect();
            shared.faults.fail_jobs_named(
                node,
                &prefixes,
                body["exitCode"].as_i64().unwrap_or(1) as i32,
            );
            ok()
        }
        (&Method::DELETE, ["nodes", node, "fail-jobs"]) => {
            shared.faults.clear_failing_jobs(node);
            ok()
        }
        (&Method::GET, ["nodes"]) => json_response(
            200,
            &json!({"nodes": shared.kubelets.names().iter().map(|n| json!({"name": n, "root": shared.node_root(n)})).collect::<Vec<_>>()}),
        ),
        (m, ["nodes", node, "yurthub", rest @ ..]) => crate::nodes::kubelet::yurthub_endpoint(
            &shared,
            node,
            m,
            &format!("/{}", rest.join("/")),
        ),
        _ => text_response(404, format!("unknown yurtsim control path {path}")),
    }
}
