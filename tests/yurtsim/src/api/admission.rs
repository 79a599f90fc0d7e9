//! Admission webhooks. A write that matches a webhook whose Service has no ready endpoints (or
//! that points at a URL outside the sim) is refused when the webhook's failurePolicy is Fail —
//! the error a real apiserver gives when a controller's webhooks are registered before its pods
//! are ready. When a ready endpoint pod runs a component model that serves webhooks (it
//! registers a `WebhookServer` for its pod), the request is reviewed by that model's logic:
//! mutating webhooks' patches are applied, and a denial is returned as kube-apiserver returns
//! it (k8s.io/apiserver@v0.34.0 pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr:
//! the webhook's Status with `admission webhook "<name>" denied the request: <message>`, a code
//! below 400 raised to 400; a rejection is never subject to failurePolicy —
//! pkg/admission/plugin/webhook/validating/dispatcher.go ErrWebhookRejection).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use crate::api::Api;
use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::selector::LabelSelector;
use crate::api::store::Filter;

/// What an AdmissionReview request carries that the modelled webhooks read.
pub struct Review<'a> {
    pub operation: &'a str,
    /// The requesting user (the impersonated one when the request impersonates).
    pub user: &'a str,
    pub old: Option<&'a Value>,
    pub new: Option<&'a Value>,
}

/// A webhook's answer.
pub enum Verdict {
    /// Allowed, with (JSON pointer, value) patches for a mutating webhook (Null removes).
    Allowed(Vec<(String, Value)>),
    /// Allowed=false with this metav1.Status (code, reason, message, details).
    Denied(ApiError),
    /// The call itself failed (failurePolicy decides).
    CallFailed(String),
}

/// A process serving webhooks: None when it does not serve `path`.
pub trait WebhookServer: Send + Sync {
    fn review(&self, path: &str, review: &Review) -> Option<Verdict>;

    /// A ConversionReview of `objects` to `desired` (`group/version`): the converted objects,
    /// or the failed result's message. Called under the store's lock: it must not call the API.
    fn convert(
        &self,
        _path: &str,
        _objects: &[Value],
        _desired: &str,
    ) -> Option<Result<Vec<Value>, String>> {
        None
    }
}

/// The webhook servers running in the sim, by the (namespace, pod) that runs them.
#[derive(Default)]
pub struct Servers(RwLock<HashMap<(String, String), Arc<dyn WebhookServer>>>);

impl Servers {
    pub fn register(&self, ns: &str, pod: &str, server: Arc<dyn WebhookServer>) {
        self.0
            .write()
            .unwrap()
            .insert((ns.into(), pod.into()), server);
    }

    pub fn unregister(&self, ns: &str, pod: &str) {
        self.0.write().unwrap().remove(&(ns.into(), pod.into()));
    }

    /// The servers whose pods are in `ns`, by pod name.
    fn in_namespace(&self, ns: &str) -> Vec<(String, Arc<dyn WebhookServer>)> {
        let mut found: Vec<_> = self
            .0
            .read()
            .unwrap()
            .iter()
            .filter(|((n, _), _)| n == ns)
            .map(|((_, pod), s)| (pod.clone(), s.clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }
}

/// Sets `value` at JSON `pointer` (creating objects on the way); Null removes the key.
pub fn apply_patch(obj: &mut Value, pointer: &str, value: &Value) {
    let parts: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, path)) = parts.split_last() else {
        return;
    };
    let mut cur = obj;
    for p in path {
        if !cur[p.as_str()].is_object() {
            cur[p.as_str()] = json!({});
        }
        cur = &mut cur[p.as_str()];
    }
    match (cur.as_object_mut(), value.is_null()) {
        (Some(m), true) => {
            m.remove(last);
        }
        (Some(m), false) => {
            m.insert(last.clone(), value.clone());
        }
        (None, _) => {}
    }
}

/// The error kube-apiserver returns for a webhook's denial (ToStatusErr).
fn denied(webhook: &str, mut status: ApiError) -> ApiError {
    if status.code < 400 {
        status.code = 400;
    }
    let by = format!("admission webhook \"{webhook}\" denied the request");
    status.message = if status.message.is_empty() {
        format!("{by} without explanation")
    } else {
        format!("{by}: {}", status.message)
    };
    status
}

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

/// Whether `rule` matches a request for `res` at `version` (`None`: any version, for a
/// built-in under matchPolicy Equivalent).
fn rule_matches(
    rule: &Value,
    res: &ResourceInfo,
    version: Option<&str>,
    op: &str,
    sub: Option<&str>,
) -> bool {
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !res.namespaced,
        "Namespaced" => res.namespaced,
        _ => true,
    };
    scope_ok
        && list_has(&rule["operations"], op)
        && list_has(&rule["apiGroups"], &res.group)
        && version.is_none_or(|v| list_has(&rule["apiVersions"], v))
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

/// Why the webhook cannot be reached (Err), or the modelled server behind a ready endpoint
/// (Ok(None) when the ready pods run nothing the sim models).
fn endpoint(
    api: &Api,
    client_config: &Value,
    name: &str,
) -> Result<Option<Arc<dyn WebhookServer>>, String> {
    resolve(api, client_config, "10s")
        .map_err(|e| format!("failed calling webhook \"{name}\": failed to call webhook: {e}"))
}

/// The server behind a webhook's clientConfig (Ok(None): ready pods that run nothing the sim
/// models), or the client's error for a call that cannot be made (`Post "<url>": <why>`),
/// `timeout` being the request's `?timeout=` parameter.
pub(crate) fn resolve(
    api: &Api,
    client_config: &Value,
    timeout: &str,
) -> Result<Option<Arc<dyn WebhookServer>>, String> {
    let svc = &client_config["service"];
    let Some(svc_name) = svc["name"].as_str() else {
        let url = client_config["url"].as_str().unwrap_or("");
        return Err(format!(
            "Post \"{url}\": dial tcp: lookup: no such host (outside the simulated cluster)"
        ));
    };
    let svc_ns = svc["namespace"].as_str().unwrap_or("default");
    let path = svc["path"].as_str().unwrap_or("");
    let port = svc["port"].as_i64().unwrap_or(443);
    let target = format!("https://{svc_name}.{svc_ns}.svc:{port}{path}?timeout={timeout}");
    let Some(service) = api.get_opt("", "services", svc_ns, svc_name) else {
        return Err(format!(
            "Post \"{target}\": service \"{svc_name}\" not found"
        ));
    };
    let selector = service["spec"]["selector"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let serves = |p: &Value| {
        let labels = p["metadata"]["labels"].as_object();
        let selected = selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        let is_ready = p["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"))
        });
        selected && is_ready && p["metadata"]["deletionTimestamp"].is_null()
    };
    if selector.is_empty() {
        return Err(no_endpoints(&target, svc_name));
    }
    // The first ready endpoint pod (by name) that runs a modelled server, looked up through
    // the few servers of the namespace. The real API server resolves a webhook Service from
    // informer caches of the Service and its endpoints (kubernetes/kubernetes
    // staging/src/k8s.io/apiserver/pkg/util/proxy/proxy.go `ResolveEndpoint`), never by
    // listing pods; a scan per request here would cost every pod create O(pods in kube-system).
    for (pod, server) in api.webhook_servers.in_namespace(svc_ns) {
        if api
            .get_opt("", "pods", svc_ns, &pod)
            .is_some_and(|p| serves(&p))
        {
            return Ok(Some(server));
        }
    }
    // None: whether any pod is ready decides between "no endpoints" and a webhook served by
    // something the sim does not model.
    let pods = api.info("", "pods");
    let filter = Filter {
        namespace: Some(svc_ns.to_string()),
        ..Default::default()
    };
    if api.list(&pods, &filter).0.iter().any(|p| serves(p)) {
        Ok(None)
    } else {
        Err(no_endpoints(&target, svc_name))
    }
}

fn no_endpoints(target: &str, svc_name: &str) -> String {
    format!("Post \"{target}\": no endpoints available for service \"{svc_name}\"")
}

/// The version a webhook is called with, if it is called: the request's when a rule names it;
/// else, under matchPolicy Equivalent (the v1 default), for a custom resource the first other
/// version of it that a rule names, rules in order, and for a built-in the request's
/// (k8s.io/apiserver v0.37.2 pkg/admission/plugin/webhook/generic/webhook.go, ShouldCallHook;
/// the equivalents of a custom resource are its CRD's versions, in order).
fn invocation_version(
    api: &Api,
    wh: &Value,
    res: &ResourceInfo,
    op: &str,
    sub: Option<&str>,
) -> Option<String> {
    let rules = wh["rules"].as_array()?;
    if rules
        .iter()
        .any(|r| rule_matches(r, res, Some(&res.version), op, sub))
    {
        return Some(res.version.clone());
    }
    if wh["matchPolicy"].as_str().unwrap_or("Equivalent") != "Equivalent" {
        return None;
    }
    if res.builtin {
        return rules
            .iter()
            .any(|r| rule_matches(r, res, None, op, sub))
            .then(|| res.version.clone());
    }
    let crd = api.get_opt(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "",
        &format!("{}.{}", res.resource, res.group),
    )?;
    let versions: Vec<String> = crate::api::crd::version_names(&crd)
        .into_iter()
        .filter(|v| *v != res.version)
        .collect();
    rules.iter().find_map(|r| {
        versions
            .iter()
            .find(|v| rule_matches(r, res, Some(v), op, sub))
            .cloned()
    })
}

/// Patches (one per top-level field) that turn `from` into `to`.
fn top_level_changes(from: &Value, to: &Value) -> Vec<(String, Value)> {
    let keys: std::collections::BTreeSet<&String> = from
        .as_object()
        .into_iter()
        .chain(to.as_object())
        .flat_map(|m| m.keys())
        .collect();
    keys.into_iter()
        .filter(|k| from.get(k.as_str()) != to.get(k.as_str()))
        .map(|k| {
            let v = to.get(k.as_str()).cloned().unwrap_or(Value::Null);
            (format!("/{}", k.replace('~', "~0").replace('/', "~1")), v)
        })
        .collect()
}

/// Runs the mutating (`mutating`) or validating webhooks registered for this request, in
/// configuration-name order; the patches the mutating ones return (to apply to the object).
#[allow(clippy::too_many_arguments)]
pub fn admit(
    api: &Api,
    res: &ResourceInfo,
    op: &str,
    sub: Option<&str>,
    ns: &str,
    review: &Review,
    mutating: bool,
) -> ApiResult<Vec<(String, Value)>> {
    // The apiserver never sends webhook configurations themselves through webhooks.
    if res.group == "admissionregistration.k8s.io" {
        return Ok(vec![]);
    }
    let kind = if mutating {
        "mutatingwebhookconfigurations"
    } else {
        "validatingwebhookconfigurations"
    };
    let info = api.info("admissionregistration.k8s.io", kind);
    let (mut configs, _) = api.list(&info, &Filter::default());
    configs.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    let mut patches = Vec::new();
    let mut current = review.new.cloned();
    for cfg in configs {
        for wh in cfg["webhooks"].as_array().into_iter().flatten() {
            let Some(version) = invocation_version(api, wh, res, op, sub) else {
                continue;
            };
            let obj = current.as_ref().or(review.old).unwrap_or(&Value::Null);
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
            let fail = wh["failurePolicy"].as_str().unwrap_or("Fail") == "Fail";
            let name = wh["name"].as_str().unwrap_or("");
            let server = match endpoint(api, &wh["clientConfig"], name) {
                Ok(s) => s,
                Err(why) if fail => return Err(ApiError::internal(why)),
                Err(_) => continue,
            };
            let Some(server) = server else { continue };
            let path = wh["clientConfig"]["service"]["path"].as_str().unwrap_or("");
            // the objects in the webhook's version (a custom resource through another version
            // of it under matchPolicy Equivalent), as the dispatcher converts them
            let converted = if version == res.version {
                None
            } else {
                let conversion = api.conversion(res).ok_or_else(|| {
                    ApiError::internal(format!("no conversion of {} to {version}", res.resource))
                })?;
                let to = |o: Option<&Value>| {
                    o.map(|o| conversion.convert(o, &version))
                        .transpose()
                        .map_err(|e| ApiError::internal(e.message))
                };
                Some((to(current.as_ref())?, to(review.old)?, conversion))
            };
            let r = match &converted {
                None => Review {
                    operation: review.operation,
                    user: review.user,
                    old: review.old,
                    new: current.as_ref(),
                },
                Some((new, old, _)) => Review {
                    operation: review.operation,
                    user: review.user,
                    old: old.as_ref(),
                    new: new.as_ref(),
                },
            };
            // controller-runtime's webhook server answers an unregistered path with 404
            // (the message below is the client's generic text for it, not verified verbatim)
            let verdict = server.review(path, &r).unwrap_or_else(|| {
                Verdict::CallFailed(format!(
                    "failed calling webhook \"{name}\": failed to call webhook: the server could not find the requested resource"
                ))
            });
            match verdict {
                Verdict::Allowed(p) => match (&converted, current.as_mut()) {
                    (None, Some(obj)) if mutating => {
                        for (ptr, v) in &p {
                            apply_patch(obj, ptr, v);
                        }
                        patches.extend(p);
                    }
                    // patched in the webhook's version, then converted back: the request's
                    // object changes where the round trip changed it
                    (Some((Some(new), _, conversion)), Some(obj)) if mutating && !p.is_empty() => {
                        let mut theirs = new.clone();
                        for (ptr, v) in &p {
                            apply_patch(&mut theirs, ptr, v);
                        }
                        let back = conversion
                            .convert(&theirs, &res.version)
                            .map_err(|e| ApiError::internal(e.message))?;
                        let p = top_level_changes(obj, &back);
                        for (ptr, v) in &p {
                            apply_patch(obj, ptr, v);
                        }
                        patches.extend(p);
                    }
                    _ => {}
                },
                Verdict::Denied(status) => return Err(denied(name, status)),
                Verdict::CallFailed(why) if fail => return Err(ApiError::internal(why)),
                Verdict::CallFailed(_) => {}
            }
        }
    }
    Ok(patches)
}

/// Whether any webhook configuration has a rule for this request (cheap pre-check).
pub fn any_rule(api: &Api, res: &ResourceInfo, op: &str, sub: Option<&str>) -> bool {
    if res.group == "admissionregistration.k8s.io" {
        return false;
    }
    [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ]
    .iter()
    .any(|kind| {
        let info = api.info("admissionregistration.k8s.io", kind);
        api.list(&info, &Filter::default()).0.iter().any(|cfg| {
            cfg["webhooks"].as_array().into_iter().flatten().any(|wh| {
                wh["rules"]
                    .as_array()
                    .is_some_and(|rules| rules.iter().any(|r| rule_matches(r, res, None, op, sub)))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::registry::Registry;

    #[test]
    fn rules_match_operations_groups_resources_and_scope() {
        let r = Registry::new();
        let pods = r.lookup("", "v1", "pods").unwrap();
        let nodes = r.lookup("", "v1", "nodes").unwrap();
        let rule = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]});
        assert!(rule_matches(&rule, &pods, Some("v1"), "CREATE", None));
        assert!(!rule_matches(&rule, &pods, Some("v1"), "DELETE", None));
        assert!(!rule_matches(
            &rule,
            &pods,
            Some("v1"),
            "UPDATE",
            Some("status")
        ));
        assert!(!rule_matches(&rule, &nodes, Some("v1"), "CREATE", None));
        let star = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"], "scope": "Namespaced"});
        assert!(rule_matches(
            &star,
            &pods,
            Some("v1"),
            "DELETE",
            Some("status")
        ));
        assert!(!rule_matches(&star, &nodes, Some("v1"), "CREATE", None));
        let sub = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/status"]});
        assert!(rule_matches(
            &sub,
            &pods,
            Some("v1"),
            "UPDATE",
            Some("status")
        ));
        assert!(!rule_matches(&sub, &pods, Some("v1"), "UPDATE", None));
    }
}
