//! Watch streams: a watch's events as a stream of JSON lines (each object as a one-row Table
//! when `kubectl get -w` asks for one), with bookmarks when the client allows them.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::error::{ApiError, ApiResult};
use crate::api::store::WatchFrom;
use crate::http::{Body, full};
use crate::sim::Shared;

use super::*;

pub(super) async fn watch(
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
