//! What the node servant does beyond file edits: probe YurtHub's health endpoint, run
//! `systemctl` in the host's namespaces, and look at this process and host (euid, ports).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// YurtHub's node-local health server.
pub const YURTHUB_SERVER_PORT: u16 = 10267;
pub use crate::naming::YURTHUB_READYZ_PATH;
/// Ports YurtHub listens on (proxy, health/metrics, secure proxy) on the node's loopback.
pub const YURTHUB_PORTS: [u16; 3] = [10261, 10267, 10268];

/// The command prefix that runs a command in the host's (PID 1's) namespaces.
pub const NSENTER: [&str; 8] = [
    "nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid",
];

#[derive(Debug, thiserror::Error)]
pub enum HostCommandError {
    #[error("cannot run `{argv}`: {source}; is nsenter installed in the image and on PATH?")]
    Spawn {
        argv: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{argv}` failed ({status}): {stderr}")]
    Failed {
        argv: String,
        status: String,
        stderr: String,
    },
    #[error("`{argv}` did not finish within {timeout:?}; it was killed")]
    Timeout { argv: String, timeout: Duration },
}

/// `GET http://127.0.0.1:<port><path>`, expecting `200` with body `OK` (any case, as upstream's
/// node-servant compares it). Blocking, with `timeout` for connecting and for each read/write.
pub fn probe_ready(port: u16, path: &str, timeout: Duration) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    // HTTP/1.0: no chunked encoding, the server closes after the response
    // One write: a request split over several segments can race a server that answers early.
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\n\r\n");
    s.write_all(request.as_bytes())
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut buf = Vec::new();
    s.take(64 * 1024)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{addr}: reading the response: {e}"))?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or_default();
    let code = status.split_whitespace().nth(1).unwrap_or_default();
    if code != "200" {
        return Err(format!("{addr}{path} answered {status:?}: {}", body.trim()));
    }
    if !body.trim().eq_ignore_ascii_case("ok") {
        return Err(format!(
            "{addr}{path} answered 200 but with body {:?}, not \"OK\"",
            body.trim()
        ));
    }
    Ok(())
}

/// Polls YurtHub's health endpoint until it answers OK (returns how long that took) or
/// `timeout` passes (returns the last failure).
pub fn wait_ready(port: u16, path: &str, timeout: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last_logged = start;
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        let err = match probe_ready(
            port,
            path,
            left.clamp(Duration::from_millis(50), Duration::from_secs(2)),
        ) {
            Ok(()) => return Ok(start.elapsed()),
            Err(e) => e,
        };
        if start.elapsed() >= timeout {
            return Err(err);
        }
        if last_logged.elapsed() >= Duration::from_secs(10) {
            tracing::info!("still waiting for YurtHub to be ready ({err})");
            last_logged = Instant::now();
        } else {
            tracing::debug!("YurtHub not ready yet: {err}");
        }
        std::thread::sleep(Duration::from_millis(200).min(timeout.saturating_sub(start.elapsed())));
    }
}

/// Polls until nothing holds any of `ports` on the loopback (returns how long that took) or
/// `timeout` passes (returns what was seen last).
pub fn wait_ports_free(ports: &[u16], timeout: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    loop {
        let mut held = Vec::new();
        for p in ports {
            if !port_free(*p)? {
                held.push(format!("127.0.0.1:{p}"));
            }
        }
        if held.is_empty() {
            return Ok(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return Err(format!("{} still in use", held.join(", ")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl <args>`; a failure
/// carries the command's stderr.
pub fn host_systemctl(args: &[&str], timeout: Duration) -> Result<(), HostCommandError> {
    host_command("systemctl", args, timeout).map(drop)
}

/// Runs `nsenter … -- crictl -r <endpoint> <args>` on the host; returns its stdout.
pub fn host_crictl(
    endpoint: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<String, HostCommandError> {
    let mut all = vec!["-r", endpoint];
    all.extend_from_slice(args);
    host_command("crictl", &all, timeout)
}

/// `nsenter … -- crictl -r <endpoint> logs --tail <lines> <id>` on the host: the container's
/// last log lines, its stdout and stderr as one (crictl prints the container's stderr lines
/// on its own stderr, and klog writes to stderr; kubernetes-sigs/cri-tools@v1.33.0
/// cmd/crictl/logs.go). Flags go before the ID: crictl's flag parser stops at the first
/// argument.
pub fn host_crictl_logs(
    endpoint: &str,
    id: &str,
    lines: u32,
    timeout: Duration,
) -> Result<String, HostCommandError> {
    let n = lines.to_string();
    let mut argv: Vec<&str> = NSENTER.to_vec();
    argv.extend(["--", "crictl", "-r", endpoint, "logs", "--tail", &n, id]);
    run_with(&argv, timeout, true)
}

/// `journalctl -u <unit> -n <lines> --no-pager` on the host: the unit's last log lines.
pub fn host_journal(unit: &str, lines: u32, timeout: Duration) -> Result<String, HostCommandError> {
    let n = lines.to_string();
    host_command("journalctl", &["-u", unit, "-n", &n, "--no-pager"], timeout)
}

/// Runs `program args` in the host's namespaces (PID 1's); returns its stdout.
fn host_command(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<String, HostCommandError> {
    let mut argv: Vec<&str> = NSENTER.to_vec();
    argv.push("--");
    argv.push(program);
    argv.extend_from_slice(args);
    run(&argv, timeout)
}

fn run(argv: &[&str], timeout: Duration) -> Result<String, HostCommandError> {
    run_with(argv, timeout, false)
}

/// Runs `argv`; with `merged`, its stdout and stderr go to one pipe in the order written
/// (a shell's `2>&1`), and that is what it returns, or what a failure carries.
fn run_with(argv: &[&str], timeout: Duration, merged: bool) -> Result<String, HostCommandError> {
    let shown = argv.join(" ");
    tracing::debug!("running {shown}");
    let spawn_error = |source| HostCommandError::Spawn {
        argv: shown.clone(),
        source,
    };
    let mut command = Command::new(argv[0]);
    command.args(&argv[1..]).stdin(Stdio::null());
    let mut one_pipe = None;
    if merged {
        let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
        command
            .stdout(writer.try_clone().map_err(spawn_error)?)
            .stderr(writer);
        one_pipe = Some(reader);
    } else {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = command.spawn().map_err(spawn_error)?;
    // the pipe's write ends: only the child holds them now, so the reader sees its end
    drop(command);
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(match one_pipe {
        Some(r) => Some(Box::new(r) as Box<dyn Read + Send>),
        None => child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    });
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HostCommandError::Timeout {
                    argv: shown,
                    timeout,
                });
            }
            Err(source) => {
                return Err(HostCommandError::Spawn {
                    argv: shown,
                    source,
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = if merged {
        stdout.clone()
    } else {
        err.join().unwrap_or_default()
    };
    if status.success() {
        let o = String::from_utf8_lossy(&stdout).into_owned();
        if !o.trim().is_empty() {
            tracing::debug!("{shown}: {}", o.trim());
        }
        return Ok(o);
    }
    let e = String::from_utf8_lossy(&stderr).trim().to_owned();
    Err(HostCommandError::Failed {
        argv: shown,
        status: status.to_string(),
        stderr: if e.is_empty() {
            "(no output on stderr)".into()
        } else {
            e
        },
    })
}

/// The `--kubeconfig` of the running kubelet process, read from `/proc` (the Job runs with
/// hostPID, so the host's processes are visible). `None`: no kubelet process is visible (so
/// what it runs with is unknown); `Some(None)`: it runs without `--kubeconfig`.
pub fn running_kubelet_kubeconfig() -> Option<Option<String>> {
    running_kubelet_kubeconfig_in(Path::new("/proc"))
}

fn running_kubelet_kubeconfig_in(proc: &Path) -> Option<Option<String>> {
    for e in std::fs::read_dir(proc).ok()?.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != "kubelet" {
            continue;
        }
        let Ok(raw) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // last flag wins, both `--kubeconfig=X` and `--kubeconfig X`
        let mut value = None;
        let mut it = argv.iter().skip(1).peekable();
        while let Some(a) = it.next() {
            if let Some(v) = a.strip_prefix("--kubeconfig=") {
                value = Some(v.to_owned());
            } else if a == "--kubeconfig" {
                value = it.next().cloned();
            }
        }
        return Some(value);
    }
    None
}

/// This process's effective uid (from /proc/self/status).
pub fn euid() -> Option<u32> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Whether `port` can be bound on this network namespace's loopback right now.
pub fn port_free(port: u16) -> Result<bool, String> {
    bindable(Ipv4Addr::LOCALHOST, port)
}

/// Whether `port` can be bound on every address of this network namespace (0.0.0.0): false
/// when anything holds it on any address, the node's IP included.
pub fn port_free_everywhere(port: u16) -> Result<bool, String> {
    bindable(Ipv4Addr::UNSPECIFIED, port)
}

fn bindable(ip: Ipv4Addr, port: u16) -> Result<bool, String> {
    match TcpListener::bind((ip, port)) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Ok(false),
        Err(e) => Err(format!("{ip}:{port}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_once(response: &'static str) -> u16 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            // Read the whole request first: closing with unread data resets the connection.
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            c.write_all(response.as_bytes()).unwrap();
        });
        port
    }

    #[test]
    fn healthz_ok_and_not_ok() {
        let t = Duration::from_secs(2);
        let p = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK");
        assert_eq!(probe_ready(p, YURTHUB_READYZ_PATH, t), Ok(()));
        let p = serve_once("HTTP/1.1 500 Internal Server Error\r\n\r\nnot ready");
        assert!(
            probe_ready(p, YURTHUB_READYZ_PATH, t)
                .unwrap_err()
                .contains("500")
        );
        let p = serve_once("HTTP/1.1 200 OK\r\n\r\nnope");
        assert!(
            probe_ready(p, YURTHUB_READYZ_PATH, t)
                .unwrap_err()
                .contains("nope")
        );
        // YurtHub v0.6's healthz, which its node-servant accepts in any case
        let p = serve_once("HTTP/1.1 200 OK\r\n\r\nok");
        let e = probe_ready(p, "/v1/healthz", t);
        assert_eq!(e, Ok(()));
        let p = serve_once("HTTP/1.1 404 Not Found\r\n\r\n404 page not found");
        let e = probe_ready(p, "/v1/healthz", t).unwrap_err();
        assert!(e.contains("/v1/healthz") && e.contains("404"), "{e}");
    }

    #[test]
    fn the_running_kubelets_kubeconfig_is_read_from_proc() {
        let d = tempfile::tempdir().unwrap();
        let proc_ = d.path();
        let pid = |n: &str, comm: &str, argv: &[&str]| {
            let p = proc_.join(n);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(p.join("cmdline"), argv.join("\0") + "\0").unwrap();
        };
        std::fs::create_dir_all(proc_.join("self")).unwrap();
        pid("1", "systemd", &["/sbin/init"]);
        assert_eq!(running_kubelet_kubeconfig_in(proc_), None);
        pid(
            "42",
            "kubelet",
            &[
                "/usr/bin/kubelet",
                "--kubeconfig=/a",
                "--v=2",
                "--kubeconfig",
                "/b",
            ],
        );
        assert_eq!(
            running_kubelet_kubeconfig_in(proc_),
            Some(Some("/b".into()))
        );
        pid("42", "kubelet", &["/usr/bin/kubelet", "--v=2"]);
        assert_eq!(running_kubelet_kubeconfig_in(proc_), Some(None));
    }

    #[test]
    fn failed_commands_carry_stderr() {
        let e = run(
            &["sh", "-c", "echo boom >&2; exit 3"],
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
        let e = run(&["sleep", "5"], Duration::from_millis(100)).unwrap_err();
        assert!(matches!(e, HostCommandError::Timeout { .. }));
        assert!(run(&["true"], Duration::from_secs(5)).is_ok());
    }
}
