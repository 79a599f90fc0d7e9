//! Watch streams: a watch's events as a stream of JSON lines (each object in the watch's
//! version, as a one-row Table when `kubectl get -w` asks for one), with bookmarks when the
//! client allows them.

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
        let encode = |typ: &str, obj: &Value| {
            let mut s =
                serde_json::to_vec(&json!({"type": typ, "object": obj})).unwrap_or_default();
            s.push(b'\n');
            Bytes::from(s)
        };
        // An event's object in the watch's version (a bookmark is in it already); one that
        // cannot be converted ends the watch with an ERROR event carrying the failure.
        let line = |typ: &str, obj: &Value| -> Result<Bytes, Bytes> {
            if typ == "BOOKMARK" {
                return Ok(encode(typ, obj));
            }
            let obj = sh
                .api
                .present(&res, obj)
                .map_err(|e| encode("ERROR", &e.to_status()))?;
            // kubectl get -w asks for each event's object as a one-row Table.
            let obj = match &table {
                Some((v, include)) => {
                    let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
                    std::borrow::Cow::Owned(crate::api::table::to_table(
                        &res,
                        &[&obj],
                        include,
                        meta,
                        v,
                        std::time::SystemTime::now(),
                    ))
                }
                None => obj,
            };
            Ok(encode(typ, &obj))
        };
        macro_rules! send {
            ($typ:expr, $obj:expr) => {
                match line($typ, $obj) {
                    Ok(b) => {
                        if tx.send(b).await.is_err() {
                            return;
                        }
                    }
                    Err(b) => {
                        let _ = tx.send(b).await;
                        return;
                    }
                }
            };
        }
        for (typ, obj) in &initial {
            send!(typ.as_str(), obj);
        }
        if send_initial {
            let rv = sh.api.store.current_rv();
            let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}});
            send!("BOOKMARK", &bm);
        }
        let deadline = timeout.map(|d| tokio::time::Instant::now() + d);
        let mut tick = tokio::time::interval(bookmark_every);
        tick.tick().await;
        loop {
            let sleep_until = deadline
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some((typ, obj)) => send!(typ.as_str(), &obj),
                    None => return,
                },
                _ = tick.tick(), if bookmarks => {
                    // Everything up to `rv` is already in our channel (published under the same lock).
                    let rv = sh.api.store.current_rv();
                    while let Ok((typ, obj)) = rx.try_recv() {
                        send!(typ.as_str(), &obj);
                    }
                    let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv.to_string()}});
                    send!("BOOKMARK", &bm);
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
