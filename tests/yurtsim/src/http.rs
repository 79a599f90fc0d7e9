//! HTTP responses as the sim's servers write them: the API server (server/), the control API
//! (control.rs) and the kubelets' endpoints (nodes/kubelet/endpoints.rs) alike. A leaf: it knows no
//! layer of the sim.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::Response;
use serde_json::Value;

pub type Body = BoxBody<Bytes, Infallible>;

pub fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed()
}

pub fn json_response(code: u16, v: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("Content-Type", "application/json")
        .body(full(serde_json::to_vec(v).unwrap_or_default()))
        .unwrap()
}

pub fn text_response(code: u16, s: impl Into<String>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("Content-Type", "text/plain; charset=utf-8")
        .body(full(s.into()))
        .unwrap()
}
