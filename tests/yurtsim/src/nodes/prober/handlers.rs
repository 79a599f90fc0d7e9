//! Running one probe's handler from inside the container's network (pkg/probe/http,
//! pkg/probe/tcp, pkg/probe/exec at kubernetes/kubernetes@v1.37.2).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

use super::{Action, Outcome, Port, Spec};

/// Where a container's probes are made from: the container's network namespace (its pod's,
/// or the node's with hostNetwork), by its process's pid.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub pid: u32,
    /// `status.podIP`, the default host.
    pub pod_ip: String,
    /// The address the pod IP is reached at from inside: itself, or `127.0.0.1` in the sim
    /// tier's isolated pods, whose pod IP is not configured in their namespace.
    pub pod_ip_inside: String,
    pub container: Value,
    /// `kube-probe/<major>.<minor>`.
    pub user_agent: String,
}

pub(super) fn resolve_port(port: &Port, container: &Value) -> Result<u16, String> {
    // pkg/probe/util.go ResolveContainerPort
    let n = match port {
        Port::Number(n) => *n,
        Port::Name(name) => container["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str() == Some(name))
            .and_then(|p| p["containerPort"].as_i64())
            .ok_or_else(|| format!("couldn't find port: {name} in {}", container["name"]))?,
    };
    u16::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("invalid port number: {n}"))
}

/// Joins the network namespace of `pid` on this (throw-away) thread.
fn enter_netns(pid: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    // SAFETY: setns on this thread only, with an fd open for the call.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Go's net error text for a failed dial (`dial tcp ADDR: connect: connection refused`).
fn dial_error(addr: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("dial tcp {addr}: i/o timeout")
        }
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => {
            let text = e.to_string();
            let text = text
                .split(" (os error")
                .next()
                .unwrap_or(&text)
                .to_lowercase();
            format!("dial tcp {addr}: connect: {text}")
        }
    }
}

fn connect(inside: &str, shown: &str, port: u16, timeout: Duration) -> Result<TcpStream, String> {
    let addr = format!("{shown}:{port}");
    let to: SocketAddr = (inside, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("dial tcp: lookup {shown}: no such host"))?;
    TcpStream::connect_timeout(&to, timeout).map_err(|e| dial_error(&addr, &e))
}

/// One HTTP GET, as `DoHTTPProbe` judges it.
fn http_get(
    inside: &str,
    shown: &str,
    port: u16,
    path: &str,
    headers: &[(String, String)],
    user_agent: &str,
    timeout: Duration,
) -> Outcome {
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let url = format!("http://{shown}:{port}{path}");
    let deadline = std::time::Instant::now() + timeout;
    let mut s = match connect(inside, shown, port, timeout) {
        Ok(s) => s,
        Err(e) => return Outcome::Failure(format!("Get \"{url}\": {e}")),
    };
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut req = format!("GET {path} HTTP/1.1\r\n");
    if !has("Host") {
        req.push_str(&format!("Host: {shown}:{port}\r\n"));
    }
    if !has("User-Agent") {
        req.push_str(&format!("User-Agent: {user_agent}\r\n"));
    }
    if !has("Accept") {
        req.push_str("Accept: */*\r\n");
    }
    for (k, v) in headers
        .iter()
        .filter(|(k, v)| !(k == "Accept" && v.is_empty()))
    {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("Connection: close\r\n\r\n");
    let timed_out = || {
        Outcome::Failure(format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        ))
    };
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    if left.is_zero()
        || s.set_read_timeout(Some(left)).is_err()
        || s.set_write_timeout(Some(left)).is_err()
        || s.write_all(req.as_bytes()).is_err()
    {
        return timed_out();
    }
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(2).any(|w| w == b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) => return Outcome::Failure(format!("Get \"{url}\": EOF")),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(_) => return timed_out(),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let code: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    match code {
        200..=299 => Outcome::Success,
        300..=399 => Outcome::Warning("Probe terminated redirects, Response body: ".to_string()),
        _ => Outcome::Failure(format!("HTTP probe failed with statuscode: {code}")),
    }
}

/// `nsenter` into the container's namespaces runs the command, as the runtime's exec does.
fn exec_in(pid: u32, command: &[String], timeout: Duration) -> Outcome {
    use std::process::{Command, Stdio};
    let child = Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-m", "-u", "-i", "-n", "-p", "--"])
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Outcome::Error(format!("nsenter: {e}")),
    };
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let out = child.wait_with_output().map(|o| {
                    let mut b = o.stdout;
                    b.extend(o.stderr);
                    String::from_utf8_lossy(&b).into_owned()
                });
                let out = out.unwrap_or_default();
                return if status.success() {
                    Outcome::Success
                } else {
                    Outcome::Failure(out)
                };
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                // k8s.io/cri-client@v0.37.2 pkg/remote_runtime.go ErrCommandTimedOut
                return Outcome::Failure("command timed out".to_string());
            }
            Err(e) => return Outcome::Error(e.to_string()),
        }
    }
}

/// Runs one probe from inside the target's network namespace (blocking: call it from a
/// blocking thread).
pub(crate) fn run(spec: &Spec, t: &Target) -> Outcome {
    let host = |h: &Option<String>| match h {
        Some(h) => (h.clone(), h.clone()),
        None => (t.pod_ip_inside.clone(), t.pod_ip.clone()),
    };
    match &spec.action {
        Action::Exec(command) => exec_in(t.pid, command, spec.timeout),
        Action::Http {
            scheme,
            host: h,
            port,
            path,
            headers,
        } => {
            let port = match resolve_port(port, &t.container) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(e),
            };
            if scheme != "http" {
                return Outcome::Error(format!(
                    "yurtsim does not model {scheme} probes (the kubelet's prober speaks HTTPS without verifying)"
                ));
            }
            let (inside, shown) = host(h);
            let (pid, headers, ua, timeout) =
                (t.pid, headers.clone(), t.user_agent.clone(), spec.timeout);
            let path = path.clone();
            on_netns_thread(pid, move || {
                http_get(&inside, &shown, port, &path, &headers, &ua, timeout)
            })
        }
        Action::Tcp { host: h, port } => {
            let port = match resolve_port(port, &t.container) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(e),
            };
            let (inside, shown) = host(h);
            let timeout = spec.timeout;
            on_netns_thread(t.pid, move || {
                match connect(&inside, &shown, port, timeout) {
                    Ok(_) => Outcome::Success,
                    Err(e) => Outcome::Failure(e),
                }
            })
        }
        Action::Grpc(_) => Outcome::Error("yurtsim does not model gRPC probes".to_string()),
        Action::Missing => Outcome::Error(format!(
            "missing probe handler for container {}",
            t.container["name"]
        )),
    }
}

fn on_netns_thread(pid: u32, f: impl FnOnce() -> Outcome + Send + 'static) -> Outcome {
    let joined = std::thread::Builder::new()
        .name("yurtsim-probe".into())
        .spawn(move || match enter_netns(pid) {
            Ok(()) => f(),
            Err(e) => Outcome::Error(format!("entering the container's network: {e}")),
        })
        .map(|h| h.join());
    match joined {
        Ok(Ok(o)) => o,
        Ok(Err(_)) => Outcome::Error("the probe panicked".into()),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_tcp_probes_judge_what_a_server_answers() {
        use std::net::TcpListener;
        let serve = |status: &'static str| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            std::thread::spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).unwrap();
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                assert!(req.starts_with("GET /readyz HTTP/1.1\r\n"), "{req}");
                assert!(req.contains("User-Agent: kube-probe/1.37\r\n"), "{req}");
                s.write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes())
                    .unwrap();
            });
            port
        };
        let get = |port| {
            http_get(
                "127.0.0.1",
                "10.0.0.9",
                port,
                "readyz",
                &[],
                "kube-probe/1.37",
                Duration::from_secs(2),
            )
        };
        assert_eq!(get(serve("200 OK")), Outcome::Success);
        assert!(matches!(get(serve("302 Found")), Outcome::Warning(_)));
        assert_eq!(
            get(serve("503 Service Unavailable")),
            Outcome::Failure("HTTP probe failed with statuscode: 503".into())
        );
        // nothing listens: Go's dial error, with the address the kubelet dialled
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = l.local_addr().unwrap().port();
        drop(l);
        assert_eq!(
            get(closed),
            Outcome::Failure(format!(
                "Get \"http://10.0.0.9:{closed}/readyz\": dial tcp 10.0.0.9:{closed}: connect: connection refused"
            ))
        );
    }
}
