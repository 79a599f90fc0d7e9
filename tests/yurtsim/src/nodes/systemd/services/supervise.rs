//! The services' main processes, supervised as systemd does (systemd/systemd, v249–v255; see
//! mod.rs on how far each source is checked):
//! * Type=simple: `start` returns once the process is forked; a missing or non-executable
//!   program fails later with `status=203/EXEC` (src/core/execute.c, exit-status.h EXIT_EXEC).
//! * `Restart=` (default no) and `RestartSec=` (default 100ms), the default start rate limit
//!   of 5 starts in 10s (DefaultStartLimitBurst/IntervalSec, src/core/main.c) after which the
//!   unit is failed with result `start-limit-hit`; while a restart is pending the unit is
//!   `activating` (src/core/service.c `state_translation_table`: SERVICE_AUTO_RESTART).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::nodes::Cluster;
use crate::nodes::kubelet::NodeKubelet;

use super::*;

pub(super) fn start_limit_hit(s: &mut Svc) -> bool {
    let now = Instant::now();
    while s
        .starts
        .front()
        .is_some_and(|t| now.duration_since(*t) > START_LIMIT_INTERVAL)
    {
        s.starts.pop_front();
    }
    s.starts.len() >= START_LIMIT_BURST
}

/// Forks the main process: the modelled program ExecStart names, or a 203/EXEC failure.
pub(super) fn exec(shared: &Arc<Cluster>, k: &NodeKubelet, u: &str, s: &mut Svc) {
    s.starts.push_back(Instant::now());
    s.restart_at = None;
    s.since = SystemTime::now();
    let Ok(unit) = &s.unit else { return };
    let argv = match unit.command_line(&k.root) {
        Ok(a) => a,
        Err(e) => {
            journal(k, u, &format!("{u}: {e}"));
            return exited(k, u, s, 1, "FAILURE", true);
        }
    };
    journal(k, u, &format!("Started {u} - {}.", s.extra.description));
    let prog = argv[0].clone();
    let file = k.host_path(&prog);
    let md = std::fs::metadata(&file);
    let why = match &md {
        Err(_) => Some("No such file or directory"),
        Ok(m) if m.is_dir() || m.permissions().mode() & 0o111 == 0 => Some("Permission denied"),
        Ok(_) => None,
    };
    if let Some(why) = why {
        journal(
            k,
            u,
            &format!("{u}: Failed to locate executable {prog}: {why}"),
        );
        journal(
            k,
            u,
            &format!("{u}: Failed at step EXEC spawning {prog}: {why}"),
        );
        return exited(k, u, s, 203, "EXEC", true);
    }
    let model = std::fs::read(&file)
        .ok()
        .and_then(|b| crate::nodes::images::identify(&b))
        .and_then(|(c, v)| crate::nodes::programs::for_binary(&c, &v));
    let Some(model) = model else {
        journal(
            k,
            u,
            &format!(
                "yurtsim: {prog} is not a modelled binary; the sim runs only modelled programs (#!yurtsim-model files) as services"
            ),
        );
        return exited(k, u, s, 1, "FAILURE", true);
    };
    if shared.cfg.apiserver == crate::nodes::real_api::ApiServerKind::Real {
        let (c, v) = (&model.facts.component, &model.facts.version);
        let started = match crate::nodes::real_api::openyurt_binary(c, v) {
            Some(bin) => {
                if model.component == crate::nodes::programs::Component::YurtHub {
                    let name = flag_value(&argv[1..], "--dummy-if-name").unwrap_or("hub-dummy0");
                    let enabled = flag_value(&argv[1..], "--enable-dummy-if") != Some("false");
                    if enabled
                        && let Err(e) = crate::nodes::host_processes::node_namespaces(shared, k)
                            .map_err(anyhow::Error::from)
                            .and_then(|ns| {
                                crate::nodes::pod_network::dummy_link_stand_in(
                                    &ns,
                                    &crate::nodes::host_processes::init_path(shared),
                                    name,
                                )
                            })
                    {
                        journal(
                            k,
                            u,
                            &format!("yurtsim: the stand-in for link {name}: {e:#}"),
                        );
                    }
                }
                real_process(shared, k, u, &bin, &argv[1..])
            }
            None => Err(format!(
                "yurtsim's real tier has no real {c} {v}: {}",
                crate::nodes::real_api::openyurt_missing_reason(v)
            )),
        };
        match started {
            Ok(run) => {
                s.state = State::Active;
                s.component = Some(model.component);
                s.main = Some(run);
            }
            Err(e) => {
                journal(
                    k,
                    u,
                    &format!("{u}: Failed at step EXEC spawning {prog}: {e}"),
                );
                exited(k, u, s, 203, "EXEC", true);
            }
        }
        return;
    }
    s.state = State::Active;
    s.component = Some(model.component);
    s.main = Some((shared.start_model)(
        shared,
        model,
        crate::nodes::programs::Container {
            node: k.name.clone(),
            namespace: String::new(),
            pod: u.to_string(),
            service_account: None,
            args: argv[1..].to_vec(),
            log: log_path(k, u),
            append_log: true,
            env: vec![],
            mounts: vec![],
        },
    ));
}

/// The value of `--flag=V` or `--flag V` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix(flag)? {
            "" => args.get(i + 1).map(String::as_str),
            v => v.strip_prefix('='),
        })
}

/// The node's state directories a service process sees at their paths: the sim's nodes have
/// no root of their own to run in, so these are bound over the machine's (the rest of the
/// file system is the machine's, as for containers).
const NODE_STATE_DIRS: &[&str] = &["/var/lib", "/etc/kubernetes"];

/// Starts a real binary as the service's main process: in the node's network and PID
/// namespaces, with the node's name as hostname and its state directories at their paths.
fn real_process(
    shared: &Cluster,
    k: &NodeKubelet,
    u: &str,
    bin: &Path,
    args: &[String],
) -> Result<crate::nodes::programs::Run, String> {
    let net =
        crate::nodes::host_processes::node_namespaces(shared, k).map_err(|e| e.to_string())?;
    let pids = crate::nodes::host_processes::node_pids(shared, k).map_err(|e| e.to_string())?;
    let mounts = NODE_STATE_DIRS
        .iter()
        .map(|d| {
            let source = k.host_path(d);
            std::fs::create_dir_all(&source).map(|_| crate::nodes::runtime::Mount {
                source,
                target: PathBuf::from(d),
                read_only: false,
            })
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| e.to_string())?;
    let spec = crate::nodes::runtime::ContainerSpec {
        program: bin.display().to_string(),
        args: args.to_vec(),
        env: vec![(
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        )],
        working_dir: None,
        hostname: k.name.clone(),
        network: crate::nodes::runtime::Network::Node(&net),
        pid: crate::nodes::runtime::Pid::Node(&pids),
        mounts,
        log_path: log_path(k, u),
    };
    let mut running = tokio::task::block_in_place(|| crate::nodes::runtime::spawn(spec))
        .map_err(|e| e.to_string())?;
    let (exited_tx, exited) = tokio::sync::watch::channel(None);
    let exit = tokio::spawn(async move {
        // aborting this task drops `running`, which kills the process
        let code = running.wait().await.map(|e| e.exit_code).unwrap_or(128);
        let _ = exited_tx.send(Some(code));
        code
    });
    let (_, ready) = tokio::sync::watch::channel(true);
    let (_, serving) = tokio::sync::watch::channel(true);
    Ok(crate::nodes::programs::Run {
        exit,
        exited,
        ready,
        serving,
    })
}

/// The main process ended with `code`: systemd's messages, then failed / inactive, or a
/// restart scheduled after RestartSec.
fn exited(k: &NodeKubelet, u: &str, s: &mut Svc, code: i32, name: &str, failed: bool) {
    s.main = None;
    s.component = None;
    if failed {
        journal(
            k,
            u,
            &format!("{u}: Main process exited, code=exited, status={code}/{name}"),
        );
        journal(k, u, &format!("{u}: Failed with result 'exit-code'."));
        s.result = "exit-code".into();
    } else {
        journal(k, u, &format!("{u}: Deactivated successfully."));
        s.result = "success".into();
    }
    let restart = match s.extra.restart.as_str() {
        "always" => true,
        "on-failure" | "on-abnormal" => failed,
        _ => false,
    };
    s.since = SystemTime::now();
    if restart {
        s.state = State::Activating;
        s.restart_at = Some(Instant::now() + s.extra.restart_sec.unwrap_or(DEFAULT_RESTART_SEC));
    } else {
        s.state = if failed {
            State::Failed
        } else {
            State::Inactive
        };
    }
}

/// Supervision, called on every kubelet tick: exits are noticed, restarts happen.
pub fn tick(shared: &Arc<Cluster>, k: &NodeKubelet) {
    let mut svcs = k.services.lock().unwrap();
    for (u, s) in svcs.units.iter_mut() {
        if let Some(m) = &s.main
            && m.exit.is_finished()
        {
            let m = s.main.take().unwrap();
            let code = futures_now(m.exit).unwrap_or(128);
            exited(
                k,
                u,
                s,
                code,
                if code == 0 { "SUCCESS" } else { "FAILURE" },
                code != 0,
            );
        }
        if s.state == State::Activating && s.restart_at.is_some_and(|t| Instant::now() >= t) {
            s.restarts += 1;
            journal(
                k,
                u,
                &format!(
                    "{u}: Scheduled restart job, restart counter is at {}.",
                    s.restarts
                ),
            );
            if start_limit_hit(s) {
                journal(k, u, &format!("{u}: Start request repeated too quickly."));
                journal(k, u, &format!("{u}: Failed with result 'start-limit-hit'."));
                journal(
                    k,
                    u,
                    &format!("Failed to start {u} - {}.", s.extra.description),
                );
                s.state = State::Failed;
                s.result = "start-limit-hit".into();
                s.restart_at = None;
                continue;
            }
            exec(shared, k, u, s);
        }
    }
}

/// The exit code of a finished model task.
fn futures_now(h: tokio::task::JoinHandle<i32>) -> Option<i32> {
    use std::future::Future;
    let mut h = std::pin::pin!(h);
    let waker = std::task::Waker::noop();
    match h.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
        std::task::Poll::Ready(r) => r.ok(),
        std::task::Poll::Pending => None,
    }
}

/// (serving, ready) of a YurtHub running as a service on the node, if one runs.
pub fn hub(k: &NodeKubelet) -> Option<(bool, bool)> {
    let svcs = k.services.lock().unwrap();
    svcs.units.values().find_map(|s| {
        let m = s.main.as_ref()?;
        (s.component == Some(crate::nodes::programs::Component::YurtHub) && !m.exit.is_finished())
            .then(|| (*m.serving.borrow(), *m.ready.borrow()))
    })
}

/// Stops every service (the sim shuts down).
pub fn stop_all(k: &NodeKubelet) {
    for s in k.services.lock().unwrap().units.values_mut() {
        s.stop_main();
    }
}
