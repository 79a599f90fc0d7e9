//! Tests of the sandbox: spawning, exits and logs, namespaces, mounts and their claims.

use super::*;
use std::path::Path;
use std::time::Instant;
use tokio::io::AsyncReadExt;

pub(crate) const SYS_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub(crate) fn spec<'a>(log: &Path, program: &str, args: &[&str]) -> ContainerSpec<'a> {
    ContainerSpec {
        program: program.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![("PATH".into(), SYS_PATH.into())],
        working_dir: None,
        hostname: "test-pod".into(),
        network: Network::Isolated,
        pid: Pid::Own,
        mounts: Vec::new(),
        log_path: log.to_path_buf(),
    }
}

/// Runs to completion (5 s cap) and returns the exit and the log.
pub(crate) async fn run(spec: ContainerSpec<'_>) -> (ExitInfo, String) {
    let log = spec.log_path.clone();
    let mut running = spawn(spec).expect("spawn");
    let exit = tokio::time::timeout(Duration::from_secs(5), running.wait())
        .await
        .expect("container did not exit in time")
        .expect("wait");
    (exit, std::fs::read_to_string(log).unwrap_or_default())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A node whose init sleeps.
fn node(dir: &Path) -> NodeNamespaces {
    let init = dir.join("systemd");
    if !init.exists() {
        std::fs::write(&init, "#!/bin/sh\nexec sleep 100\n").unwrap();
        std::fs::set_permissions(&init, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    NodeNamespaces::create(&init).unwrap()
}

const PERL_LISTEN: &str = r#"use IO::Socket::INET; $| = 1;
    my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 1)
        or die "bind: $!\n";
    print "bound\n"; sleep $ARGV[1];"#;

#[tokio::test]
async fn processes_on_different_nodes_bind_the_same_port() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (node(dir.path()), node(dir.path()));
    let port = free_port().to_string();

    let mut on_a = spec(
        &dir.path().join("a.log"),
        "perl",
        &["-e", PERL_LISTEN, &port, "30"],
    );
    on_a.network = Network::Node(&a);
    let mut holder = spawn(on_a).unwrap();
    let a_log = dir.path().join("a.log");
    wait_for("listener on node A", || {
        std::fs::read_to_string(&a_log).is_ok_and(|l| l.contains("bound"))
    })
    .await;

    let mut on_b = spec(
        &dir.path().join("b.log"),
        "perl",
        &["-e", PERL_LISTEN, &port, "0"],
    );
    on_b.network = Network::Node(&b);
    let (exit, log) = run(on_b).await;
    assert_eq!(
        (exit.exit_code, log.as_str()),
        (0, "bound\n"),
        "node B must have its own port space"
    );

    // Same node, same port: must collide (shows both really listen).
    let mut again_a = spec(
        &dir.path().join("a2.log"),
        "perl",
        &["-e", PERL_LISTEN, &port, "0"],
    );
    again_a.network = Network::Node(&a);
    let (exit, log) = run(again_a).await;
    assert_ne!(exit.exit_code, 0);
    assert!(log.contains("Address already in use"), "{log}");
    holder.stop(Duration::from_secs(1)).await.unwrap();

    // The same through bind_tcp.
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _la = a.bind_tcp(addr).unwrap();
    let _lb = b.bind_tcp(addr).unwrap();
    assert_eq!(
        a.bind_tcp(addr).unwrap_err().kind(),
        io::ErrorKind::AddrInUse
    );
}

#[tokio::test]
async fn node_listener_is_reachable_only_from_that_node() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (node(dir.path()), node(dir.path()));
    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let listener = tokio::net::TcpListener::from_std(a.bind_tcp(addr).unwrap()).unwrap();
    let script = format!("echo hello > /dev/tcp/127.0.0.1/{port}");

    let mut from_a = spec(&dir.path().join("a.log"), "bash", &["-c", &script]);
    from_a.network = Network::Node(&a);
    let (exit, log) = run(from_a).await;
    assert_eq!(exit.exit_code, 0, "{log}");
    let (mut conn, _) = tokio::time::timeout(Duration::from_secs(2), listener.accept())
        .await
        .unwrap()
        .unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).await.unwrap();
    assert_eq!(got, "hello\n");

    let mut from_b = spec(&dir.path().join("b.log"), "bash", &["-c", &script]);
    from_b.network = Network::Node(&b);
    let (exit, log) = run(from_b).await;
    assert_ne!(exit.exit_code, 0);
    assert!(log.contains("Connection refused"), "{log}");

    // "refused" rather than "Network is unreachable": the pod's lo is UP.
    let (exit, log) = run(spec(&dir.path().join("i.log"), "bash", &["-c", &script])).await;
    assert_ne!(exit.exit_code, 0);
    assert!(log.contains("Connection refused"), "{log}");

    // Not on the host either; but the sim can reach it through the node.
    assert!(std::net::TcpStream::connect(addr).is_err());
    let stream = a.connect_tcp(addr).await.unwrap();
    assert_eq!(stream.peer_addr().unwrap(), addr);
    assert!(b.connect_tcp(addr).await.is_err());
    drop(stream);
    let peer = a
        .run_in(move || std::net::TcpStream::connect(addr).map(|s| s.peer_addr().unwrap()))
        .unwrap();
    assert_eq!(peer.unwrap(), addr);
}

#[tokio::test]
async fn isolated_pods_have_a_working_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    // Listen and connect inside the same fresh namespace.
    let script = format!(
        "perl -e '{PERL_LISTEN}' {port} 5 > /dev/null & \
         for i in $(seq 100); do echo hi 2>/dev/null > /dev/tcp/127.0.0.1/{port} && exit 0; sleep 0.02; done; exit 7"
    );
    let (exit, log) = run(spec(&dir.path().join("log"), "bash", &["-c", &script])).await;
    assert_eq!(exit.exit_code, 0, "{log}");
}

#[tokio::test]
async fn bind_mounts_are_private_and_honor_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (src, ro_src, nested_src) = (d.join("src"), d.join("ro-src"), d.join("nested-src"));
    for p in [&src, &ro_src, &nested_src] {
        std::fs::create_dir(p).unwrap();
    }
    std::fs::write(src.join("greeting"), "hi from src\n").unwrap();
    std::fs::write(ro_src.join("ro.txt"), "read me\n").unwrap();
    std::fs::write(nested_src.join("x"), "nested\n").unwrap();
    std::fs::write(d.join("single.conf"), "single file\n").unwrap();
    let (t, ro_t, file_t) = (
        d.join("c/data"),
        d.join("c/ro"),
        d.join("c/etc/single.conf"),
    );
    let nested_t = t.join("sub");

    let script = format!(
        "cat {t}/greeting {t}/sub/x {f} {r}/ro.txt && echo written > {t}/new && echo nope > {r}/w",
        t = t.display(),
        f = file_t.display(),
        r = ro_t.display()
    );
    let mut s = spec(&d.join("log"), "bash", &["-c", &script]);
    s.mounts = vec![
        // Deliberately deepest first: spawn orders them.
        Mount {
            source: nested_src.clone(),
            target: nested_t,
            read_only: false,
        },
        Mount {
            source: src.clone(),
            target: t.clone(),
            read_only: false,
        },
        Mount {
            source: ro_src.clone(),
            target: ro_t.clone(),
            read_only: true,
        },
        Mount {
            source: d.join("single.conf"),
            target: file_t.clone(),
            read_only: true,
        },
    ];
    let (exit, log) = run(s).await;
    assert_eq!(
        log.lines().take(4).collect::<Vec<_>>(),
        ["hi from src", "nested", "single file", "read me"],
        "{log}"
    );
    assert!(log.contains("Read-only file system"), "{log}");
    assert_eq!(exit.exit_code, 1);

    // Writes went to the source; the host never saw the mounts.
    assert_eq!(
        std::fs::read_to_string(src.join("new")).unwrap(),
        "written\n"
    );
    assert!(!ro_src.join("w").exists());
    assert!(
        src.join("sub").is_dir(),
        "nested target is created inside the enclosing source"
    );
    // Mount points the runtime had to create on this machine are gone once the container is
    // (unless another process's sim has containers right now: then removal waits for it).
    let lock = std::fs::File::open(std::env::temp_dir().join("yurtsim-mount-points.lock")).unwrap();
    if !flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
        eprintln!("another process holds the mount-point lock: removal is deferred");
        return;
    }
    assert!(!t.exists(), "created target dir removed after the run");
    assert!(
        !ro_t.exists(),
        "created read-only target removed after the run"
    );
    assert!(
        !file_t.exists(),
        "created file target removed after the run"
    );
}

#[tokio::test]
async fn program_is_looked_up_after_mounting() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let tool = tools.join("hello-tool");
    std::fs::write(&tool, "#!/bin/sh\necho tool ran\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = dir.path().join("mnt/bin");
    let mut s = spec(&dir.path().join("log"), "hello-tool", &[]);
    s.env = vec![("PATH".into(), format!("{}:{SYS_PATH}", target.display()))];
    s.mounts = vec![Mount {
        source: tools,
        target,
        read_only: true,
    }];
    let (exit, log) = run(s).await;
    assert_eq!((exit.exit_code, log.as_str()), (0, "tool ran\n"));
}

#[tokio::test]
async fn system_targets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for target in [
        "/",
        "/etc",
        "/proc/",
        "/usr/../usr",
        "/bin",
        "/tmp/../sys",
        "/usr/lib",
        "relative/path",
    ] {
        let mut s = spec(&dir.path().join("log"), "true", &[]);
        s.mounts = vec![Mount {
            source: dir.path().into(),
            target: target.into(),
            read_only: true,
        }];
        match spawn(s) {
            Err(RuntimeError::InvalidSpec(msg)) => {
                assert!(msg.contains("mount target"), "{msg}")
            }
            other => panic!("{target}: expected InvalidSpec, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn environment_hostname_and_working_dir() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(&dir.path().join("env.log"), "/usr/bin/env", &[]);
    s.env.push(("FOO".into(), "bar baz".into()));
    s.env.push(("EMPTY".into(), String::new()));
    let (exit, log) = run(s).await;
    assert_eq!(exit.exit_code, 0);
    let mut lines: Vec<_> = log.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["EMPTY=", "FOO=bar baz", &format!("PATH={SYS_PATH}")]
    );

    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let mut s = spec(
        &dir.path().join("uts.log"),
        "bash",
        &["-c", "hostname; pwd"],
    );
    s.hostname = "worker-7".into();
    s.working_dir = Some(dir.path().into());
    let (exit, log) = run(s).await;
    assert_eq!(exit.exit_code, 0, "{log}");
    assert_eq!(log, format!("worker-7\n{}\n", dir.path().display()));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        host_name
    );
}

#[tokio::test]
async fn exit_codes_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pods/p/c.log");
    let (exit, _) = run(spec(&log, "bash", &["-c", "exit 3"])).await;
    assert_eq!(
        exit,
        ExitInfo {
            exit_code: 3,
            signal: None,
            reason: "Error"
        }
    );
    let (exit, text) = run(spec(&log, "bash", &["-c", "echo out; echo err >&2"])).await;
    assert_eq!(
        exit,
        ExitInfo {
            exit_code: 0,
            signal: None,
            reason: "Completed"
        }
    );
    assert_eq!(
        text, "out\nerr\n",
        "both streams, appended after the silent first run"
    );
}

/// Whether the container's process group has no member left (as seen from this machine).
fn group_gone(running: &Running) -> bool {
    // SAFETY: signal 0 only checks the group exists.
    unsafe { libc::kill(-(running.pid() as libc::pid_t), 0) != 0 }
}

#[tokio::test]
async fn stop_terminates_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    // PID 1 of its namespace: SIGTERM reaches it only through a handler
    let script = format!(
        "trap 'exit 143' TERM; sleep 100 & touch {}; wait",
        marker.display()
    );
    let mut running = spawn(spec(&dir.path().join("log"), "bash", &["-c", &script])).unwrap();
    wait_for("background sleep", || marker.exists()).await;
    let started = Instant::now();
    let exit = running.stop(Duration::from_secs(5)).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "SIGTERM should suffice"
    );
    assert_eq!(
        exit,
        ExitInfo {
            exit_code: 143,
            signal: None,
            reason: "Error"
        }
    );
    wait_for("background sleep to die", || group_gone(&running)).await;
    assert_eq!(running.wait().await.unwrap(), exit, "cached");
}

#[tokio::test]
async fn stop_kills_after_grace() {
    let dir = tempfile::tempdir().unwrap();
    // no TERM handler: as PID 1 of its namespace it does not get the SIGTERM (as with
    // `docker stop` on a plain `sleep`)
    let mut running = spawn(spec(&dir.path().join("log"), "sleep", &["100"])).unwrap();
    let started = Instant::now();
    let exit = running.stop(Duration::from_millis(300)).await.unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(
        exit,
        ExitInfo {
            exit_code: 137,
            signal: Some(libc::SIGKILL),
            reason: "Killed"
        }
    );
    wait_for("the container to be gone", || group_gone(&running)).await;
}

#[tokio::test]
async fn a_container_sees_its_own_processes_and_a_host_pid_one_the_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let ps = "for p in /proc/[0-9]*; do echo \"${p#/proc/} $(cat $p/comm)\"; done";
    let (_, own) = run(spec(&dir.path().join("own"), "sh", &["-c", ps])).await;
    assert_eq!(own.trim(), "1 sh", "its own process only: {own}");
    let mut host = spec(&dir.path().join("host"), "sh", &["-c", ps]);
    host.pid = Pid::Node(&node);
    let (_, seen) = run(host).await;
    let lines: Vec<&str> = seen.lines().collect();
    assert!(lines.contains(&"1 sleep"), "the node's init: {seen}");
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(" sh") && !l.starts_with("1 ")),
        "{seen}"
    );
    assert!(
        !seen.contains("yurtsim"),
        "not this machine's processes: {seen}"
    );
}

#[tokio::test]
async fn start_failures_have_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let err = spawn(spec(&log, "definitely-not-a-program-xyz", &[])).unwrap_err();
    assert!(matches!(err, RuntimeError::NotFound(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "executable file not found in $PATH: definitely-not-a-program-xyz"
    );

    let err = spawn(spec(&log, "/nonexistent/prog", &[])).unwrap_err();
    assert!(matches!(err, RuntimeError::NoSuchFile(_)), "{err:?}");

    let mut s = spec(&log, "true", &[]);
    s.working_dir = Some(dir.path().join("missing"));
    let err = spawn(s).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Setup { step, .. } if step.contains("chdir")),
        "{err:?}"
    );

    // Found but not executable: exec itself fails.
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let err = spawn(spec(&log, plain.to_str().unwrap(), &[])).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Exec { source, .. } if source.kind() == io::ErrorKind::PermissionDenied),
        "{err:?}"
    );
}
