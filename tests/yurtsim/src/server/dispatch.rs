//! Dispatch: a routed request carried out on the `Api` by its verb (lists with selectors and
//! continue tokens, subresources, reviews, TokenRequests), its answer presented as the API
//! server presents it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::selector::{FieldSelector, LabelSelector};
use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions, PatchType, Propagation};
use crate::http::{Body, json_response};
use crate::sim::Shared;

use super::*;

/// The signerName of CSR `name` as stored.
fn current_signer(shared: &Shared, name: &str) -> Option<String> {
    shared
        .api
        .get_opt(
            "certificates.k8s.io",
            "certificatesigningrequests",
            "",
            name,
        )
        .and_then(|c| c["spec"]["signerName"].as_str().map(str::to_string))
}

fn ctx_of(q: &HashMap<String, String>, agent: &str, user: &crate::api::auth::UserInfo) -> Ctx {
    let manager = q
        .get("fieldManager")
        .cloned()
        .unwrap_or_else(|| agent.to_string());
    Ctx {
        manager,
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        user: user.name.clone(),
        groups: user.groups.clone(),
    }
}

pub(super) fn filter_of(
    shared: &Shared,
    t: &Target,
    q: &HashMap<String, String>,
) -> ApiResult<Filter> {
    let label = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let field = FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let f = Filter {
        namespace: if t.res.namespaced {
            t.namespace.clone()
        } else {
            None
        },
        label,
        field,
    };
    shared.api.check_field_selector(&t.res, &f)?;
    Ok(f)
}

fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Ok(v) = format!("299 - \"{}\"", w.replace('"', "'")).parse() {
            resp.headers_mut().append("Warning", v);
        }
    }
    resp
}

pub(super) async fn dispatch(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    t: &Target,
    verb: &str,
    q: &HashMap<String, String>,
) -> ApiResult<Response<Body>> {
    let ns = t.namespace.clone().unwrap_or_default();
    if t.res.namespaced && t.namespace.is_none() && !matches!(verb, "list" | "watch") {
        return Err(ApiError::path_not_found());
    }
    if t.res.create_only && verb != "create" {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({verb} {})",
            t.res.resource
        )));
    }
    let agent = user_agent(&req);
    let user = req
        .extensions()
        .get::<crate::api::auth::UserInfo>()
        .cloned()
        .unwrap_or(crate::api::auth::UserInfo {
            name: String::new(),
            groups: Vec::new(),
        });
    let ctx = ctx_of(q, &agent, &user);
    let csr_approval = t.res.group == "certificates.k8s.io"
        && t.res.resource == "certificatesigningrequests"
        && t.sub.as_deref() == Some("approval");
    let table = req
        .headers()
        .get("accept")
        .and_then(|a| a.to_str().ok())
        .and_then(crate::api::table::wants_table);
    let include = q
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata")
        .to_string();
    let as_table = |items: &[&Value], meta: Value| {
        crate::api::table::to_table(
            &t.res,
            items,
            &include,
            meta,
            table.unwrap_or("meta.k8s.io/v1"),
            std::time::SystemTime::now(),
        )
    };
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let name = t.name.clone().unwrap_or_default();
    match verb {
        "get" => {
            if t.sub.as_deref() == Some("log") {
                return crate::nodes::kubelet::pod_log(shared.nodes.clone(), &ns, &name, q).await;
            }
            let obj = shared.api.get(&t.res, &ns, &name)?;
            if t.sub.as_deref() == Some("scale") {
                return Ok(json_response(200, &scale_of(&t.res, &obj)));
            }
            // read in the version asked for (custom resources convert from their stored one)
            let obj = shared.api.present(&t.res, &obj)?;
            if table.is_some() {
                let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
                return Ok(json_response(200, &as_table(&[&obj], meta)));
            }
            Ok(json_response(200, &obj))
        }
        "list" => {
            let filter = filter_of(shared, t, q)?;
            let (items, rv) = shared.api.list(&t.res, &filter);
            let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
            let start = match q.get("continue").filter(|c| !c.is_empty()) {
                Some(c) => Some(decode_continue(c)?),
                None => None,
            };
            let mut items: Vec<Arc<Value>> = match &start {
                Some(k) => items
                    .into_iter()
                    .filter(|o| &crate::api::store::key_of(o) > k)
                    .collect(),
                None => items,
            };
            let mut cont = None;
            let mut remaining = None;
            if limit > 0 && items.len() > limit {
                let rest = items.split_off(limit);
                let last = crate::api::store::key_of(items.last().unwrap());
                cont = Some(encode_continue(&last, rv));
                remaining = Some(rest.len());
            }
            let items = shared.api.present_all(&t.res, items)?;
            if table.is_some() {
                let refs: Vec<&Value> = items.iter().map(|o| o.as_ref()).collect();
                let mut meta = json!({"resourceVersion": rv.to_string()});
                if let Some(c) = &cont {
                    meta["continue"] = json!(c);
                    meta["remainingItemCount"] = json!(remaining);
                }
                return Ok(json_response(200, &as_table(&refs, meta)));
            }
            let list = shared.api.list_object(&t.res, items, rv, cont, remaining);
            Ok(json_response(200, &list))
        }
        "watch" => watch(shared, t, q, table.map(|v| (v, include.clone()))).await,
        "create" => {
            let user = req
                .extensions()
                .get::<crate::api::auth::UserInfo>()
                .cloned()
                .unwrap_or_else(crate::api::auth::UserInfo::admin);
            let body = read_body(req).await?;
            if t.res.create_only {
                let v = parse_body(&body, &content_type)?;
                return Ok(json_response(201, &review(shared, &t.res, &ns, &user, v)?));
            }
            if t.sub.as_deref() == Some("token") && t.name.is_some() {
                let v = parse_body(&body, &content_type)?;
                return token_request(shared, &ns, &name, v);
            }
            if t.sub.as_deref() == Some("binding") && t.name.is_some() {
                let v = parse_body(&body, &content_type)?;
                let target = v["target"]["name"].as_str().unwrap_or_default();
                if target.is_empty() {
                    return Err(ApiError::bad_request(
                        "Binding: target.name: Required value",
                    ));
                }
                let out = shared.api.bind(&ns, &name, target, &ctx)?;
                return Ok(json_response(out.code, &out.body));
            }
            if t.name.is_some() {
                return Err(ApiError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource (post {})",
                    t.res.resource
                )));
            }
            let v = parse_body(&body, &content_type)?;
            let out = shared.api.create(&t.res, &ns, v, &ctx)?;
            Ok(with_warnings(
                json_response(out.code, &*shared.api.present(&t.res, &out.body)?),
                &out.warnings,
            ))
        }
        "update" => {
            let body = read_body(req).await?;
            let v = parse_body(&body, &content_type)?;
            if csr_approval {
                // the approval admission plugin reads the submitted object's signer
                approval_admission(shared, &user, &name, &v)?;
            }
            let out = shared
                .api
                .update(&t.res, &ns, &name, v, t.sub.as_deref(), &ctx)?;
            Ok(with_warnings(
                json_response(out.code, &*shared.api.present(&t.res, &out.body)?),
                &out.warnings,
            ))
        }
        "patch" => {
            let force = q.get("force").is_some_and(|f| f == "true");
            let pt = PatchType::from_content_type(&content_type, force).ok_or_else(|| {
                ApiError::unsupported_media_type(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type})"))
            })?;
            if force && !matches!(pt, PatchType::Apply { .. }) {
                return Err(ApiError::bad_request(
                    "force: Forbidden: may not be specified for non-apply patch",
                ));
            }
            let body = read_body(req).await?;
            let v = match pt {
                // Apply bodies are YAML (JSON is YAML too); other patches are JSON.
                PatchType::Apply { .. } => parse_body(&body, "application/yaml")?,
                _ => parse_body(&body, "application/json")?,
            };
            if csr_approval {
                // a patch cannot move the request to another signer (the approval strategy
                // keeps the spec), so the current object's signer is the new object's
                approval_admission(shared, &user, &name, &v)?;
            }
            let mut ctx = ctx;
            if matches!(pt, PatchType::Apply { .. }) && !q.contains_key("fieldManager") {
                ctx.manager = String::new();
            }
            let out = shared
                .api
                .patch(&t.res, &ns, &name, pt, v, t.sub.as_deref(), &ctx)?;
            Ok(with_warnings(
                json_response(out.code, &*shared.api.present(&t.res, &out.body)?),
                &out.warnings,
            ))
        }
        "delete" | "deletecollection" => {
            let body = read_body(req).await?;
            let mut opts = DeleteOptions::default();
            let body_v: Value = if body.iter().all(u8::is_ascii_whitespace) {
                json!({})
            } else {
                parse_body(&body, &content_type)?
            };
            let policy = q
                .get("propagationPolicy")
                .cloned()
                .or_else(|| body_v["propagationPolicy"].as_str().map(str::to_string));
            opts.propagation = match policy.as_deref() {
                None => match q.get("orphanDependents").map(String::as_str).or(
                    body_v["orphanDependents"]
                        .as_bool()
                        .map(|b| if b { "true" } else { "false" }),
                ) {
                    Some("true") => Some(Propagation::Orphan),
                    Some("false") => Some(Propagation::Background),
                    _ => None,
                },
                Some("Orphan") => Some(Propagation::Orphan),
                Some("Background") => Some(Propagation::Background),
                Some("Foreground") => Some(Propagation::Foreground),
                Some(other) => {
                    return Err(ApiError::bad_request(format!(
                        "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                    )));
                }
            };
            opts.grace_period = q
                .get("gracePeriodSeconds")
                .and_then(|g| g.parse().ok())
                .or(body_v["gracePeriodSeconds"].as_i64());
            opts.precondition_uid = body_v["preconditions"]["uid"].as_str().map(str::to_string);
            opts.precondition_rv = body_v["preconditions"]["resourceVersion"]
                .as_str()
                .map(str::to_string);
            let mut ctx = ctx;
            if body_v["dryRun"]
                .as_array()
                .is_some_and(|d| d.iter().any(|x| x == "All"))
            {
                ctx.dry_run = true;
            }
            if verb == "deletecollection" {
                let filter = filter_of(shared, t, q)?;
                let (items, _) = shared.api.list(&t.res, &filter);
                for it in &items {
                    let (ins, iname) = crate::api::store::key_of(it);
                    shared.api.delete(&t.res, &ins, &iname, &opts, &ctx)?;
                }
                let items = shared.api.present_all(&t.res, items)?;
                let list = shared.api.list_object(
                    &t.res,
                    items,
                    shared.api.store.current_rv(),
                    None,
                    None,
                );
                return Ok(json_response(200, &list));
            }
            let out = shared.api.delete(&t.res, &ns, &name, &opts, &ctx)?;
            Ok(with_warnings(
                json_response(out.code, &*shared.api.present(&t.res, &out.body)?),
                &out.warnings,
            ))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// The CSR approval admission for a write to `certificatesigningrequests/approval`: the signer
/// the body names, else the stored request's.
fn approval_admission(
    shared: &Shared,
    user: &crate::api::auth::UserInfo,
    name: &str,
    body: &Value,
) -> ApiResult<()> {
    let signer = body["spec"]["signerName"]
        .as_str()
        .map(str::to_string)
        .or_else(|| current_signer(shared, name));
    crate::api::auth::csr_approval_admission(
        &shared.api,
        user,
        name,
        signer.as_deref().unwrap_or(""),
    )
}

fn scale_of(res: &ResourceInfo, obj: &Value) -> Value {
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"], "uid": obj["metadata"]["uid"], "resourceVersion": obj["metadata"]["resourceVersion"], "creationTimestamp": obj["metadata"]["creationTimestamp"]},
        "spec": {"replicas": obj["spec"]["replicas"]},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0), "selector": res.kind}})
}

pub(super) fn encode_continue(key: &(String, String), rv: u64) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}", key.0, key.1)})
        .to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

pub(super) fn decode_continue(token: &str) -> ApiResult<(String, String)> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let start = v["start"].as_str().ok_or_else(bad)?;
    let (a, b) = start.split_once('/').ok_or_else(bad)?;
    Ok((a.to_string(), b.to_string()))
}

/// The access reviews, answered by the same authorizer as requests: SelfSubjectAccessReview and
/// SelfSubjectRulesReview for the requester, SubjectAccessReview / LocalSubjectAccessReview for
/// the user in the spec. The `deny` fault also shows here.
fn review(
    shared: &Shared,
    res: &ResourceInfo,
    ns: &str,
    requester: &crate::api::auth::UserInfo,
    mut v: Value,
) -> ApiResult<Value> {
    use crate::api::auth::{Attributes, UserInfo};
    v["apiVersion"] = json!(res.api_version());
    v["kind"] = json!(res.kind);
    let spec = v["spec"].clone();
    let subject = match res.resource.as_str() {
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let user = spec["user"].as_str().unwrap_or("");
            let groups: Vec<String> = spec["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect();
            if user.is_empty() && groups.is_empty() {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!(
                        "{} \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified",
                        res.kind
                    ),
                ));
            }
            UserInfo {
                name: user.to_string(),
                groups,
            }
        }
        _ => requester.clone(),
    };
    if res.resource == "selfsubjectrulesreviews" {
        let namespace = spec["namespace"].as_str().unwrap_or("");
        v["status"] = crate::api::auth::rules_review(&shared.api, &subject, namespace);
    } else {
        let ra = &spec["resourceAttributes"];
        let attrs = if let Some(path) = spec["nonResourceAttributes"]["path"].as_str() {
            Attributes::non_resource(
                spec["nonResourceAttributes"]["verb"].as_str().unwrap_or(""),
                path,
            )
        } else {
            let namespace = if res.resource == "localsubjectaccessreviews" {
                ns
            } else {
                ra["namespace"].as_str().unwrap_or("")
            };
            let mut a = Attributes::resource(
                ra["verb"].as_str().unwrap_or(""),
                ra["group"].as_str().unwrap_or(""),
                ra["resource"].as_str().unwrap_or(""),
                namespace,
                ra["name"].as_str().unwrap_or(""),
            );
            a.subresource = ra["subresource"].as_str().unwrap_or("").to_string();
            a
        };
        let denied = attrs.path.is_none()
            && shared
                .faults
                .is_denied(&attrs.verb, &attrs.group, &attrs.resource);
        v["status"] = if denied {
            json!({"allowed": false, "denied": true, "reason": "denied by yurtsim fault injection"})
        } else {
            let d = crate::api::auth::authorize(&shared.api, &subject, &attrs);
            let mut st = json!({"allowed": d.allowed});
            if !d.reason.is_empty() {
                st["reason"] = json!(d.reason);
            }
            st
        };
    }
    if v["metadata"].is_null() {
        v["metadata"] = json!({});
    }
    v["metadata"]["creationTimestamp"] = Value::Null;
    Ok(v)
}

/// `POST serviceaccounts/NAME/token` (TokenRequest): a token for that ServiceAccount, bound to
/// a pod when `boundObjectRef` names one, valid for `expirationSeconds` (default 1 h, at least
/// 10 min, as the apiserver's validation requires).
fn token_request(shared: &Shared, ns: &str, sa: &str, mut v: Value) -> ApiResult<Response<Body>> {
    let secs = v["spec"]["expirationSeconds"].as_u64().unwrap_or(3600);
    if secs < 600 {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "TokenRequest.authentication.k8s.io \"{sa}\" is invalid: spec.expirationSeconds: Invalid value: {secs}: may not specify a duration less than 10 minutes"
            ),
        ));
    }
    let bound = &v["spec"]["boundObjectRef"];
    let pod = (bound["kind"] == json!("Pod")).then(|| bound["name"].as_str().unwrap_or(""));
    if let Some(p) = pod
        && shared.api.get_opt("", "pods", ns, p).is_none()
    {
        return Err(ApiError::not_found(&shared.api.info("", "pods"), p));
    }
    let ttl = Duration::from_secs(secs);
    let token = shared
        .api
        .tokens
        .issue(&shared.api, ns, sa, pod.map(|p| (ns, p)), ttl)
        .ok_or_else(|| ApiError::not_found(&shared.api.info("", "serviceaccounts"), sa))?;
    v["apiVersion"] = json!("authentication.k8s.io/v1");
    v["kind"] = json!("TokenRequest");
    v["metadata"] = json!({"name": sa, "namespace": ns, "creationTimestamp": null});
    v["spec"]["expirationSeconds"] = json!(secs);
    v["status"] = json!({"token": token, "expirationTimestamp": crate::util::rfc3339(std::time::SystemTime::now() + ttl)});
    Ok(json_response(201, &v))
}
