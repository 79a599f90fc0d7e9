//! The HTTP face of the sim: Kubernetes REST paths, discovery, watch streams, pods/log, reviews,
//! bearer-token authentication, fault injection, metrics and the `/yurtsim/v1` control API.
//!
//! This file takes a request in: authentication and authorization, its body, its verb, the
//! faults and counters, then [`handle`] hands it on; `routing.rs` maps paths (and serves
//! discovery), `dispatch.rs` carries the verbs out on the `Api`, `watch.rs` streams watches.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::Value;

use crate::api::error::{ApiError, ApiResult};
use crate::faults::{Decision, WRITE_VERBS};
use crate::http::{Body, json_response, text_response};
use crate::sim::Shared;

mod dispatch;
mod routing;
mod watch;

use dispatch::*;
use routing::*;
use watch::*;

fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.to_status())
}

pub use crate::http::query_map;

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
