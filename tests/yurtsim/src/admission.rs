//! Admission webhooks, as far as a simulated cluster can take them: the sim cannot run a
//! webhook's logic, but it knows whether the webhook could be called. A write that matches a
//! webhook whose Service has no ready endpoints (or that points at a URL outside the sim) is
//! refused when the webhook's failurePolicy is Fail — the error a real apiserver gives when a
//! controller's webhooks are registered before its pods are ready.

use serde_json::{Value, json};

use crate::api::Api;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceInfo;
use crate::selector::LabelSelector;
use crate::store::Filter;

fn list_has(list: &Value, want: &str) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().any(|x| x == "*" || x == want))
}

fn resource_matches(rule_resources: &Value, resource: &str, sub: Option<&str>) -> bool {
    let full = match sub {
        Some(s) => format!("{resource}/{s}"),
        None => resource.to_string(),
    };
    rule_resources.as_array().is_some_and(|l| {
        l.iter().filter_map(Value::as_str).any(|r| {
            r == "*/*"
                || r == full
                || (sub.is_none() && r == "*")
                || (sub.is_some()
                    && (r == format!("{resource}/*") || r == format!("*/{}", sub.unwrap_or(""))))
        })
    })
}

fn rule_matches(rule: &Value, res: &ResourceInfo, op: &str, sub: Option<&str>) -> bool {
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !res.namespaced,
        "Namespaced" => res.namespaced,
        _ => true,
    };
    scope_ok
        && list_has(&rule["operations"], op)
        && list_has(&rule["apiGroups"], &res.group)
        && list_has(&rule["apiVersions"], &res.version)
        && resource_matches(&rule["resources"], &res.resource, sub)
}

fn selector_matches(sel: &Value, labels: Option<&serde_json::Map<String, Value>>) -> bool {
    if sel.is_null() {
        return true;
    }
    LabelSelector::from_json(sel)
        .map(|s| s.matches(labels))
        .unwrap_or(false)
}

/// Why the webhook cannot be reached, or None when its Service has a ready endpoint.
fn unreachable(api: &Api, client_config: &Value, name: &str) -> Option<String> {
    let svc = &client_config["service"];
    let Some(svc_name) = svc["name"].as_str() else {
        let url = client_config["url"].as_str().unwrap_or("");
        return Some(format!(
            "failed calling webhook \"{name}\": failed to call webhook: Post \"{url}\": dial tcp: lookup: no such host (outside the simulated cluster)"
        ));
    };
    let svc_ns = svc["namespace"].as_str().unwrap_or("default");
    let path = svc["path"].as_str().unwrap_or("");
    let port = svc["port"].as_i64().unwrap_or(443);
    let target = format!("https://{svc_name}.{svc_ns}.svc:{port}{path}?timeout=10s");
    let Some(service) = api.get_opt("", "services", svc_ns, svc_name) else {
        return Some(format!(
            "failed calling webhook \"{name}\": failed to call webhook: Post \"{target}\": service \"{svc_name}\" not found"
        ));
    };
    let selector = service["spec"]["selector"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let ready = !selector.is_empty() && {
        let pods = api.info("", "pods");
        let filter = Filter {
            namespace: Some(svc_ns.to_string()),
            ..Default::default()
        };
        api.list(&pods, &filter).0.iter().any(|p| {
            let labels = p["metadata"]["labels"].as_object();
            let selected = selector
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
            let ready = p["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"))
            });
            selected && ready && p["metadata"]["deletionTimestamp"].is_null()
        })
    };
    (!ready).then(|| format!("failed calling webhook \"{name}\": failed to call webhook: Post \"{target}\": no endpoints available for service \"{svc_name}\""))
}

/// Checks every registered webhook that would be called for this request.
pub fn check(
    api: &Api,
    res: &ResourceInfo,
    op: &str,
    sub: Option<&str>,
    ns: &str,
    obj: &Value,
) -> ApiResult<()> {
    // The apiserver never sends webhook configurations themselves through webhooks.
    if res.group == "admissionregistration.k8s.io" {
        return Ok(());
    }
    for kind in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ] {
        let info = api.info("admissionregistration.k8s.io", kind);
        let (configs, _) = api.list(&info, &Filter::default());
        for cfg in configs {
            for wh in cfg["webhooks"].as_array().into_iter().flatten() {
                if !wh["rules"]
                    .as_array()
                    .is_some_and(|rules| rules.iter().any(|r| rule_matches(r, res, op, sub)))
                {
                    continue;
                }
                let ns_labels = if res.namespaced {
                    api.get_opt("", "namespaces", "", ns)
                        .map(|n| n["metadata"]["labels"].clone())
                } else if res.resource == "namespaces" {
                    Some(obj["metadata"]["labels"].clone())
                } else {
                    None
                };
                if let Some(labels) = &ns_labels
                    && !selector_matches(&wh["namespaceSelector"], labels.as_object())
                {
                    continue;
                }
                if !selector_matches(&wh["objectSelector"], obj["metadata"]["labels"].as_object()) {
                    continue;
                }
                // With failurePolicy Ignore an unreachable webhook changes nothing: skip the lookup.
                if wh["failurePolicy"].as_str().unwrap_or("Fail") != "Fail" {
                    continue;
                }
                let name = wh["name"].as_str().unwrap_or("");
                if let Some(why) = unreachable(api, &wh["clientConfig"], name) {
                    return Err(ApiError::internal(why));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn rules_match_operations_groups_resources_and_scope() {
        let r = Registry::new();
        let pods = r.lookup("", "v1", "pods").unwrap();
        let nodes = r.lookup("", "v1", "nodes").unwrap();
        let rule = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]});
        assert!(rule_matches(&rule, &pods, "CREATE", None));
        assert!(!rule_matches(&rule, &pods, "DELETE", None));
        assert!(!rule_matches(&rule, &pods, "UPDATE", Some("status")));
        assert!(!rule_matches(&rule, &nodes, "CREATE", None));
        let star = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"], "scope": "Namespaced"});
        assert!(rule_matches(&star, &pods, "DELETE", Some("status")));
        assert!(!rule_matches(&star, &nodes, "CREATE", None));
        let sub = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/status"]});
        assert!(rule_matches(&sub, &pods, "UPDATE", Some("status")));
        assert!(!rule_matches(&sub, &pods, "UPDATE", None));
    }
}
