//! The HTTP face of the sim: Kubernetes REST paths, discovery, watch streams, pods/log, reviews,
//! bearer-token authentication, fault injection, metrics and the `/yurtsim/v1` control API.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::selector::{FieldSelector, LabelSelector};
use crate::api::store::{Filter, WatchFrom};
use crate::api::{Ctx, DeleteOptions, PatchType, Propagation};
use crate::faults::{Decision, WRITE_VERBS};
use crate::http::{Body, full, json_response, text_response};
use crate::sim::Shared;

fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.to_status())
}

pub fn query_map(q: Option<&str>) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        m.insert(percent_decode(k), percent_decode(v));
    }
    m
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match h {
                    Some(x) => {
                        out.push(x);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A parsed Kubernetes resource path.
struct Target {
    res: Arc<ResourceInfo>,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
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

fn route(shared: &Shared, path: &str) -> Route {
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

/// The request's identity: its credentials (`auth::authenticate`), then `Impersonate-User` /
/// `Impersonate-Group` if present (`kubectl --as`).
fn identify<B>(shared: &Shared, req: &Request<B>) -> ApiResult<crate::api::auth::UserInfo> {
    let h = req.headers();
    let header = |k: &str| h.get(k).and_then(|v| v.to_str().ok());
    let user = crate::api::auth::authenticate(&shared.api, header("authorization"))?;
    let groups: Vec<String> = h
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    crate::api::auth::impersonate(&shared.api, user, header("impersonate-user"), &groups)
}

fn authorize_path(shared: &Shared, user: &crate::api::auth::UserInfo, path: &str) -> ApiResult<()> {
    let attrs = crate::api::auth::Attributes::non_resource("get", path);
    let d = crate::api::auth::authorize(&shared.api, user, &attrs);
    if d.allowed {
        Ok(())
    } else {
        Err(crate::api::auth::forbidden(&attrs, user, &d.reason))
    }
}

/// The authorizer's view of a resource request; a list or watch narrowed to one object by
/// `fieldSelector=metadata.name=X` names it, as the apiserver's RequestInfo does.
fn attributes_of(
    t: &Target,
    verb: &str,
    q: &HashMap<String, String>,
) -> crate::api::auth::Attributes {
    let name = match (&t.name, verb) {
        (Some(n), _) => n.clone(),
        (None, "list" | "watch") => q
            .get("fieldSelector")
            .and_then(|f| {
                f.split(',').find_map(|p| {
                    p.strip_prefix("metadata.name=")
                        .or(p.strip_prefix("metadata.name=="))
                })
            })
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    };
    crate::api::auth::Attributes {
        verb: verb.into(),
        path: None,
        group: t.res.group.clone(),
        resource: t.res.resource.clone(),
        subresource: t.sub.clone().unwrap_or_default(),
        namespace: t.namespace.clone().unwrap_or_default(),
        name,
    }
}

/// The control API (`/yurtsim/v1/…`) is the cluster admin's: whoever `auth::authenticate`
/// takes for a member of `system:masters`.
pub fn authorized<B>(shared: &Shared, req: &Request<B>) -> bool {
    let header = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    crate::api::auth::authenticate(&shared.api, header)
        .is_ok_and(|u| u.in_group(crate::api::auth::MASTERS))
}

fn user_agent(req: &Request<Incoming>) -> String {
    let ua = req
        .headers()
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown");
    ua.split('/').next().unwrap_or("unknown").to_string()
}

async fn read_body(req: Request<Incoming>) -> ApiResult<Bytes> {
    req.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| ApiError::bad_request(format!("reading request body: {e}")))
}

/// Decodes a request body by its media type: JSON, YAML (apply patches, `kubectl create -f` of
/// YAML) or Kubernetes protobuf (what kubectl's typed clients send).
fn parse_body(bytes: &[u8], content_type: &str) -> ApiResult<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    let media = content_type.split(';').next().unwrap_or("").trim();
    if crate::api::protobuf::is_protobuf_content_type(media) {
        return crate::api::protobuf::decode(bytes).map_err(|e| match e.http_status() {
            415 => ApiError::unsupported_media_type(e.to_string()),
            _ => ApiError::bad_request(e.to_string()),
        });
    }
    let yaml_ok = media.ends_with("yaml");
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(e) if yaml_ok => serde_saphyr::from_slice::<Value>(bytes).map_err(|ye| {
            ApiError::bad_request(format!("error decoding YAML: {ye} (as JSON: {e})"))
        }),
        Err(e) => Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {e}"
        ))),
    }
}

fn verb_of(method: &Method, t: &Target, q: &HashMap<String, String>) -> &'static str {
    match *method {
        Method::GET
            if t.name.is_none() && q.get("watch").is_some_and(|w| w == "true" || w == "1") =>
        {
            "watch"
        }
        Method::GET if t.name.is_none() => "list",
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if t.name.is_none() => "deletecollection",
        Method::DELETE => "delete",
        _ => "unknown",
    }
}

pub async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let q = query_map(req.uri().query());
    if path.starts_with("/yurtsim/") {
        return Ok(crate::control::handle(shared, req, &path, &q).await);
    }
    if let "/healthz" | "/livez" | "/readyz" = path.as_str() {
        return Ok(text_response(200, "ok"));
    }
    // authentication comes first, as in kube-apiserver: a wrong token gets 401 even for
    // /version, which anonymous requests may read; then impersonation
    let user = match identify(&shared, &req) {
        Ok(u) => u,
        Err(e) => return Ok(error_response(&e)),
    };
    if path == "/version" {
        if let Err(e) = authorize_path(&shared, &user, &path) {
            return Ok(error_response(&e));
        }
        return Ok(json_response(200, &shared.version_info()));
    }
    let route = route(&shared, &path);
    if !matches!(route, Route::Resource(_))
        && let Err(e) = authorize_path(&shared, &user, &path)
    {
        return Ok(error_response(&e));
    }
    let t = match route {
        Route::Discovery(v) if req.method() == Method::GET => return Ok(json_response(200, &v)),
        Route::Discovery(_) => {
            return Ok(error_response(&ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )));
        }
        Route::NotFound => {
            let doc = match path.as_str() {
                "/openapi/v3" => Some(crate::api::openapi::index(&shared.api.registry)),
                p => p
                    .strip_prefix("/openapi/v3/")
                    .and_then(|rest| crate::api::openapi::for_path(&shared.api.registry, rest)),
            };
            return Ok(match doc {
                Some(d) => json_response(200, &d),
                None => error_response(&ApiError::path_not_found()),
            });
        }
        Route::Resource(t) => t,
    };
    let verb = verb_of(req.method(), &t, &q);
    let resource_label = match &t.sub {
        Some(s) => format!("{}/{}", t.res.group_resource(), s),
        None => t.res.group_resource(),
    };
    shared
        .metrics
        .record(&user_agent(&req), verb, &resource_label);
    if resource_label == "configmaps"
        && WRITE_VERBS.contains(&verb)
        && let Some(bytes) = req
            .headers()
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse().ok())
    {
        let name = t.name.as_deref().unwrap_or("");
        shared
            .metrics
            .record_configmap_write(&user_agent(&req), name, bytes);
    }
    match shared
        .faults
        .decide(verb, &t.res.group, &t.res.resource, t.sub.as_deref())
    {
        Decision::Pass => {}
        Decision::Delay(d) => tokio::time::sleep(d).await,
        Decision::Fail {
            status,
            message,
            delay,
            after,
        } => {
            tokio::time::sleep(delay).await;
            if after {
                let _ = dispatch(&shared, req, &t, verb, &q).await;
            }
            let reason = match status {
                409 => "Conflict",
                429 => "TooManyRequests",
                500 => "InternalError",
                503 => "ServiceUnavailable",
                504 => "Timeout",
                404 => "NotFound",
                403 => "Forbidden",
                // kubernetes/apimachinery@v0.33.0 pkg/api/errors/errors.go NewInvalid, NewRequestEntityTooLargeError
                422 => "Invalid",
                413 => "RequestEntityTooLarge",
                _ => "Unknown",
            };
            let mut e = ApiError::new(
                status,
                reason,
                message.unwrap_or_else(|| format!("injected fault: {verb} {resource_label}")),
            );
            if status == 409 {
                e = ApiError::conflict(&t.res, t.name.as_deref().unwrap_or(""));
            }
            let mut resp = error_response(&e);
            if status == 429 {
                resp.headers_mut()
                    .insert("Retry-After", "1".parse().unwrap());
            }
            return Ok(resp);
        }
    }
    let attrs = attributes_of(&t, verb, &q);
    if shared.faults.is_denied(verb, &t.res.group, &t.res.resource) {
        return Ok(error_response(&crate::api::auth::forbidden(
            &attrs,
            &user,
            "denied by yurtsim fault injection",
        )));
    }
    let decision = crate::api::auth::authorize(&shared.api, &user, &attrs);
    if !decision.allowed {
        return Ok(error_response(&crate::api::auth::forbidden(
            &attrs,
            &user,
            &decision.reason,
        )));
    }
    let req = {
        let mut req = req;
        req.extensions_mut().insert(user);
        req
    };
    let result = dispatch(&shared, req, &t, verb, &q).await;
    Ok(match result {
        Ok(resp) => resp,
        Err(e) => error_response(&e),
    })
}

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

fn filter_of(shared: &Shared, t: &Target, q: &HashMap<String, String>) -> ApiResult<Filter> {
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

/// Objects served in several versions of their group present themselves in the requested one,
/// as the API server converts from its storage version: CRs, and built-ins such as a
/// CertificateSigningRequest written as `certificates.k8s.io/v1beta1` and listed as `v1`.
fn present(res: &ResourceInfo, obj: &Value) -> Value {
    let mut o = obj.clone();
    let group = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g)
            .to_owned()
    };
    let same_group = obj["apiVersion"]
        .as_str()
        .is_some_and(|v| group(v) == res.group);
    if !res.builtin || same_group {
        o["apiVersion"] = json!(res.api_version());
    }
    o
}

fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Ok(v) = format!("299 - \"{}\"", w.replace('"', "'")).parse() {
            resp.headers_mut().append("Warning", v);
        }
    }
    resp
}

async fn dispatch(
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
            if table.is_some() {
                let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
                return Ok(json_response(200, &as_table(&[obj.as_ref()], meta)));
            }
            Ok(json_response(200, &present(&t.res, &obj)))
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
            // built-ins are cloned only when written in another version of their group
            let served = t.res.api_version();
            let items: Vec<Arc<Value>> = items
                .into_iter()
                .map(|o| {
                    if t.res.builtin && o["apiVersion"].as_str() == Some(served.as_str()) {
                        o
                    } else {
                        Arc::new(present(&t.res, &o))
                    }
                })
                .collect();
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
                json_response(out.code, &present(&t.res, &out.body)),
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
                json_response(out.code, &present(&t.res, &out.body)),
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
                json_response(out.code, &present(&t.res, &out.body)),
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
                json_response(out.code, &present(&t.res, &out.body)),
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

fn encode_continue(key: &(String, String), rv: u64) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}", key.0, key.1)})
        .to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> ApiResult<(String, String)> {
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

async fn watch(
    shared: &Arc<Shared>,
    t: &Target,
    q: &HashMap<String, String>,
    table: Option<(&'static str, String)>,
) -> ApiResult<Response<Body>> {
    let filter = filter_of(shared, t, q)?;
    let rv = q.get("resourceVersion").map(String::as_str).unwrap_or("");
    let send_initial = q.get("sendInitialEvents").is_some_and(|v| v == "true");
    let from = if send_initial || rv.is_empty() || rv == "0" {
        WatchFrom::Now
    } else {
        WatchFrom::Revision(rv.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: \"{rv}\": must be a valid resource version"
            ))
        })?)
    };
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|v| v == "true");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let (initial, mut rx) = match shared.api.store.watch(&t.res.key(), filter, from) {
        Ok(w) => w,
        // As the apiserver does: the watch is accepted and its first event is the 410, which is
        // what makes clients (kube-rs's watcher, client-go's reflector) re-list.
        Err(e) if e.code == 410 => {
            let mut line = serde_json::to_vec(&json!({"type": "ERROR", "object": e.to_status()}))
                .unwrap_or_default();
            line.push(b'\n');
            return Ok(Response::builder()
                .status(StatusCode::OK)
                .header("Content-Type", "application/json")
                .body(full(line))
                .unwrap());
        }
        Err(e) => return Err(e),
    };
    let res = t.res.clone();
    let (tx, out_rx) = mpsc::channel::<Bytes>(64);
    let sh = shared.clone();
    let bookmark_every = sh.cfg.bookmark_interval;
    tokio::spawn(async move {
        let line = |typ: &str, obj: &Value| {
            // kubectl get -w asks for each event's object as a one-row Table.
            let obj = match (&table, typ) {
                (Some((v, include)), "ADDED" | "MODIFIED" | "DELETED") => {
                    let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
                    crate::api::table::to_table(
                        &res,
                        &[obj],
                        include,
                        meta,
                        v,
                        std::time::SystemTime::now(),
                    )
                }
                _ => obj.clone(),
            };
            let obj = &obj;
            let mut s = serde_json::to_vec(&json!({"type": typ, "object": present(&res, obj)}))
                .unwrap_or_default();
            s.push(b'\n');
            Bytes::from(s)
        };
        for (typ, obj) in &initial {
            if tx.send(line(typ.as_str(), obj)).await.is_err() {
                return;
            }
        }
        if send_initial {
            let rv = sh.api.store.current_rv();
            let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}});
            if tx.send(line("BOOKMARK", &bm)).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|d| tokio::time::Instant::now() + d);
        let mut tick = tokio::time::interval(bookmark_every);
        tick.tick().await;
        loop {
            let sleep_until = deadline
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some((typ, obj)) => if tx.send(line(typ.as_str(), &obj)).await.is_err() { return },
                    None => return,
                },
                _ = tick.tick(), if bookmarks => {
                    // Everything up to `rv` is already in our channel (published under the same lock).
                    let rv = sh.api.store.current_rv();
                    while let Ok((typ, obj)) = rx.try_recv() {
                        if tx.send(line(typ.as_str(), &obj)).await.is_err() { return }
                    }
                    let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv.to_string()}});
                    if tx.send(line("BOOKMARK", &bm)).await.is_err() { return }
                }
                _ = tokio::time::sleep_until(sleep_until) => return,
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures::stream::unfold(out_rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let body = StreamBody::new(stream).boxed();
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("Content-Type", "application/json")
        .header("Transfer-Encoding", "chunked")
        .body(body)
        .unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_decode_like_go() {
        let q = query_map(Some(
            "labelSelector=app%3Dx%2Cenv+in+%28a%29&watch=true&empty",
        ));
        assert_eq!(q["labelSelector"], "app=x,env in (a)");
        assert_eq!(q["watch"], "true");
        assert_eq!(q["empty"], "");
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let k = ("kube-system".to_string(), "a".to_string());
        assert_eq!(decode_continue(&encode_continue(&k, 7)).unwrap(), k);
        assert_eq!(decode_continue("!!!").unwrap_err().code, 400);
    }
}
