//! A container's log as the kubelet reads it for `pods/log`: one place for both tiers. The sim's
//! API server serves `pods/log` itself (endpoints.rs `pod_log`); on the real tier the real
//! kube-apiserver asks the node's kubelet server for `/containerLogs/{ns}/{pod}/{container}`
//! (real/kubelet_server.rs). Both read the files the sim's runtime writes under
//! `STATE_DIR/sim/pods/` and `STATE_DIR/sim/static-pods/` (pod_env.rs `log_path`) with the
//! same options, and so does the node's `crictl logs` (cri/crictl.rs), from the log path the
//! runtime recorded for the container.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::Value;

use crate::http::Body;
use crate::nodes::Cluster;

use super::log_path;

/// The `PodLogOptions` (core/v1) the log is read with; what the files hold has no timestamps,
/// so `timestamps`, `sinceSeconds` and `sinceTime` are not honoured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// The last terminated instance's log instead of the current one.
    pub previous: bool,
    /// Only the last N lines.
    pub tail_lines: Option<usize>,
    /// At most N bytes in all.
    pub limit_bytes: Option<usize>,
    /// Keep streaming while the container runs.
    pub follow: bool,
}

impl LogOptions {
    /// From the query of `pods/log` or of the kubelet's `containerLogs` (same parameter names,
    /// kubernetes/kubernetes@v1.37.2 pkg/kubelet/server/server.go `getContainerLogs` decodes
    /// the query as v1 `PodLogOptions`).
    pub fn from_query(q: &HashMap<String, String>) -> LogOptions {
        let flag = |k: &str| q.get(k).is_some_and(|v| v == "true");
        let number = |k: &str| q.get(k).and_then(|t| t.parse::<usize>().ok());
        LogOptions {
            previous: flag("previous"),
            tail_lines: number("tailLines"),
            limit_bytes: number("limitBytes"),
            follow: flag("follow"),
        }
    }
}

/// The file of the container's log: the current instance's, or with `previous` the last
/// terminated one's, which the sim's runtime keeps beside it.
pub fn container_log_file(
    shared: &Cluster,
    pod: &Value,
    container: &str,
    previous: bool,
) -> PathBuf {
    let path = log_path(shared, pod, container);
    if previous {
        previous_log_file(&path)
    } else {
        path
    }
}

/// Where the last terminated instance's log is kept: beside the current one's `path` (the
/// sim's runtime renames it there when the container restarts).
pub fn previous_log_file(path: &Path) -> PathBuf {
    path.with_extension("previous.log")
}

/// The log at `path` cut to `opts`' `tail_lines` (its last lines) and `limit_bytes` (at most
/// that many bytes in all), as it is now. Err when the file cannot be read.
pub fn read_log(path: &Path, opts: &LogOptions) -> std::io::Result<Vec<u8>> {
    let mut data = std::fs::read(path)?;
    if let Some(n) = opts.tail_lines {
        let text = String::from_utf8_lossy(&data).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(n);
        let mut s = lines[start..].join("\n");
        if !s.is_empty() {
            s.push('\n');
        }
        data = s.into_bytes();
    }
    if let Some(n) = opts.limit_bytes {
        data.truncate(n);
    }
    Ok(data)
}

/// The log at `path` cut to `opts`: its last `tail_lines` lines, at most `limit_bytes`; with
/// `follow`, what is appended is streamed on until `running` says the container stopped (it is
/// asked every 100 ms) or the byte limit is reached. Err when the file cannot be read.
pub async fn log_response(
    path: PathBuf,
    opts: &LogOptions,
    running: impl Fn() -> bool + Send + 'static,
) -> std::io::Result<hyper::Response<Body>> {
    let data = read_log(&path, opts)?;
    let response = |body: Body| {
        hyper::Response::builder()
            .status(200)
            .header("Content-Type", "text/plain")
            .body(body)
            .unwrap()
    };
    let mut budget = opts.limit_bytes.map(|n| n - data.len());
    if !opts.follow || !running() || budget == Some(0) {
        return Ok(response(
            http_body_util::Full::new(bytes::Bytes::from(data)).boxed(),
        ));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let mut offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = tx.send(bytes::Bytes::from(data)).await;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            // asked before reading, so what a container wrote before it stopped is sent
            let still = running();
            let mut buf = appended(&path, offset);
            offset += buf.len() as u64;
            if let Some(b) = budget.as_mut() {
                buf.truncate(*b);
                *b -= buf.len();
            }
            if !buf.is_empty() && tx.send(bytes::Bytes::from(buf)).await.is_err() {
                return;
            }
            if budget == Some(0) || !still {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| {
            (
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)),
                rx,
            )
        })
    });
    Ok(response(http_body_util::StreamBody::new(stream).boxed()))
}

/// What was written to `path` after its first `offset` bytes.
fn appended(path: &Path, offset: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    if len > offset
        && let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(offset)).is_ok()
    {
        let _ = f.read_to_end(&mut buf);
    }
    buf
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use http_body_util::BodyExt;

    use super::*;

    async fn body(r: hyper::Response<Body>) -> String {
        let b = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_log_is_cut_to_its_tail_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.log");
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        let read = async |opts: LogOptions| {
            body(log_response(path.clone(), &opts, || false).await.unwrap()).await
        };
        assert_eq!(read(LogOptions::default()).await, "one\ntwo\nthree\n");
        let tail = LogOptions {
            tail_lines: Some(2),
            ..Default::default()
        };
        assert_eq!(read(tail).await, "two\nthree\n");
        let limit = LogOptions {
            tail_lines: Some(2),
            limit_bytes: Some(5),
            ..Default::default()
        };
        assert_eq!(read(limit).await, "two\nt");
        assert!(
            log_response(dir.path().join("none.log"), &LogOptions::default(), || true)
                .await
                .is_err()
        );
    }

    /// A followed log ends once the container stops, with what it wrote before it stopped.
    #[tokio::test]
    async fn a_followed_log_ends_with_the_last_words_of_a_stopped_container() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.log");
        std::fs::write(&path, "start\n").unwrap();
        let running = Arc::new(AtomicBool::new(true));
        let r = running.clone();
        let opts = LogOptions {
            follow: true,
            ..Default::default()
        };
        let resp = log_response(path.clone(), &opts, move || r.load(Ordering::SeqCst))
            .await
            .unwrap();
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"last\n").unwrap();
        running.store(false, Ordering::SeqCst);
        let text = tokio::time::timeout(Duration::from_secs(5), body(resp))
            .await
            .expect("the stream ends once the container stopped");
        assert_eq!(text, "start\nlast\n");
    }
}
