//! `yurtctl playground` (cargo feature `playground`): starts the embedded simulated cluster
//! (yurtsim), whose node Jobs run this same binary, and runs yurtctl's own commands against it
//! as child processes, so the user sees exactly what a real run shows.

use std::io::IsTerminal;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use yurtsim::{Layout, Sim, SimConfig};

use crate::app::common::{block_on, connect_from};
use crate::app::error::CommandError;
use crate::cli::{GlobalArgs, PlaygroundApiServer, PlaygroundCmd, PlaygroundLayout, Progress};
use crate::cluster::snapshot::{NodeInfo, SnapshotOptions, snapshot};
use crate::exit::Exit;
use crate::render::Profile;

mod tour;
pub use tour::{Action, EXAMPLE_POD, STEPS, Step, When, upgrade_target};
use tour::{install_example, step_args, workers};

const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
/// How long an interrupted step may take to stop by itself.
const STEP_GRACE: Duration = Duration::from_secs(15);

pub fn run(g: &GlobalArgs, cmd: &PlaygroundCmd) -> Exit {
    if !Profile::names().contains(&cmd.profile) {
        return CommandError::Usage(format!(
            "unknown profile {:?}; profiles are {}",
            cmd.profile,
            Profile::names().join(", ")
        ))
        .report();
    }
    block_on(playground(g, cmd))
}

fn layout(l: PlaygroundLayout) -> Layout {
    match l {
        PlaygroundLayout::Kubeadm => Layout::Kubeadm,
        PlaygroundLayout::KubeadmUsr => Layout::KubeadmUsr,
        PlaygroundLayout::Kind => Layout::Kind,
        PlaygroundLayout::Minikube => Layout::Minikube,
    }
}

fn say(line: impl AsRef<str>) {
    eprintln!("{}", console::style(line.as_ref()).bold().for_stderr());
}

async fn playground(g: &GlobalArgs, cmd: &PlaygroundCmd) -> Exit {
    let profile = match Profile::load(&cmd.profile) {
        Ok(p) => p,
        Err(e) => return CommandError::from(e).report(),
    };
    if let Err(e) = real_tier_ready(cmd, &profile) {
        return e.report();
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            let e = format!("cannot find this program's own path: {e}");
            return CommandError::Local(e).report();
        }
    };
    // a state directory of our own is removed at the end; a named one stays
    let (state_dir, remove_after) = match &cmd.state_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("yurtctl-playground-{}", std::process::id())),
            true,
        ),
    };
    let mut cfg = sim_config(cmd, &profile, &state_dir, &exe);
    cfg.nodes = cmd.nodes;
    let control_plane = match cmd.apiserver {
        PlaygroundApiServer::Sim => "",
        PlaygroundApiServer::Real => " on a real control plane",
    };
    say(format!(
        "==> starting a simulated {}-node {} cluster{control_plane} (Kubernetes {}) in {}",
        cmd.nodes,
        layout_name(cmd.layout),
        cfg.kubernetes_version,
        state_dir.display()
    ));
    let sim = match Sim::start(cfg).await {
        Ok(s) => s,
        Err(e) => {
            return CommandError::Local(format!(
                "the simulated cluster did not start: {e:#}\n  (each simulated node gets its \
                 own network namespace: run as root, or inside a container)"
            ))
            .report();
        }
    };
    let kubeconfig = sim.kubeconfig_path();
    println!("export KUBECONFIG={}", kubeconfig.display());
    say(format!(
        "==> cluster up at {}; in another terminal: export KUBECONFIG={} && kubectl get nodes",
        sim.url(),
        kubeconfig.display()
    ));

    // from here on Ctrl-C ends the tour where it is and still shuts the cluster down
    let _handling = crate::exec::stop::handling();
    let (stop_tx, mut stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        interrupted().await;
        let _ = stop_tx.send(true);
    });
    let exit = tour(g, cmd, &profile, &exe, &sim, &mut stop).await;

    let keep = if cmd.no_keep {
        false
    } else {
        cmd.keep || std::io::stdin().is_terminal()
    };
    if keep && exit != Exit::Interrupted {
        say(format!(
            "==> the cluster keeps running (export KUBECONFIG={}); press Ctrl-C to stop it",
            kubeconfig.display()
        ));
        let _ = stop.wait_for(|stopped| *stopped).await;
    }
    say("==> shutting the simulated cluster down");
    sim.shutdown().await;
    if remove_after {
        let _ = std::fs::remove_dir_all(&state_dir);
    }
    exit
}

/// With `--apiserver real`: the profile's OpenYurt and the control plane are built, or what to
/// run to build them.
fn real_tier_ready(cmd: &PlaygroundCmd, profile: &Profile) -> Result<(), CommandError> {
    if cmd.apiserver == PlaygroundApiServer::Sim {
        return Ok(());
    }
    let version = profile.openyurt_version.as_str();
    if !yurtsim::real::OPENYURT_BUILT.contains(&version) {
        return Err(CommandError::Usage(format!(
            "--apiserver real runs OpenYurt's real binaries, built for {} only; profile {} is \
             OpenYurt {version} ({}): use --profile {}",
            yurtsim::real::OPENYURT_BUILT.join(", "),
            profile.name,
            yurtsim::real::openyurt_missing_reason(version),
            Profile::DEFAULT
        )));
    }
    yurtsim::real::control_plane_binary(yurtsim::real::NEWEST_KUBERNETES)
        .map_err(|e| CommandError::Local(format!("--apiserver real: {e:#}")))?;
    if yurtsim::real::openyurt_binary("yurt-manager", version).is_none() {
        return Err(CommandError::Local(format!(
            "--apiserver real: OpenYurt {version} is not built: {}",
            yurtsim::real::openyurt_missing_reason(version)
        )));
    }
    Ok(())
}

fn layout_name(l: PlaygroundLayout) -> &'static str {
    match l {
        PlaygroundLayout::Kubeadm => "kubeadm",
        PlaygroundLayout::KubeadmUsr => "kubeadm-usr",
        PlaygroundLayout::Kind => "kind",
        PlaygroundLayout::Minikube => "minikube",
    }
}

/// A cluster the profile supports, with lively timings (pods start in 100 ms, heartbeats
/// every 300 ms) so the tour takes seconds.
fn sim_config(cmd: &PlaygroundCmd, profile: &Profile, state_dir: &Path, exe: &Path) -> SimConfig {
    if cmd.apiserver == PlaygroundApiServer::Real {
        // the real components keep their own timings
        let mut cfg = SimConfig::new(state_dir);
        cfg.layout = layout(cmd.layout);
        cfg.yurtctl = Some(exe.to_path_buf());
        cfg.apiserver = yurtsim::real::ApiServerKind::Real;
        cfg.kubernetes_version = yurtsim::real::NEWEST_KUBERNETES.into();
        return cfg;
    }
    let mut cfg = SimConfig::for_tests(state_dir);
    cfg.layout = layout(cmd.layout);
    cfg.yurtctl = Some(exe.to_path_buf());
    // the newest Kubernetes the profile is certified on; with an upgrade in the tour, the
    // newest its target is certified on, when the profile supports that too
    let minor = upgrade_target(profile)
        .and_then(|t| Profile::load(&t).ok())
        .map(|t| t.certified_max_minor())
        .filter(|m| profile.supports_minor(*m))
        .unwrap_or_else(|| profile.certified_max_minor());
    cfg.kubernetes_version = format!("v1.{minor}.2");
    cfg.heartbeat_interval = Duration::from_millis(300);
    // generous, so a busy machine does not make nodes flap NotReady mid-demo
    cfg.node_monitor_grace = Duration::from_secs(5);
    cfg
}

/// Runs the steps; stops at the first that fails, or when `stop` turns true (Ctrl-C).
async fn tour(
    g: &GlobalArgs,
    cmd: &PlaygroundCmd,
    profile: &Profile,
    exe: &Path,
    sim: &Sim,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Exit {
    let kubeconfig = &sim.kubeconfig_path();
    let workers = match workers(g, sim).await {
        Ok(w) => w,
        Err(e) => return CommandError::Local(e).report(),
    };
    show_nodes(g, sim, "before").await;
    for (i, step) in STEPS.iter().enumerate() {
        if *stop.borrow() {
            return Exit::Interrupted;
        }
        if let Some(why) = step.skipped_by(profile) {
            say(format!(
                "==> step {}/{}: {}: {why}",
                i + 1,
                STEPS.len(),
                step.title
            ));
            continue;
        }
        let template = match step.action {
            Action::Yurtctl(args) => args,
            Action::InstallExample => {
                say(format!(
                    "==> step {}/{}: {}: {}/nginx.yaml on each worker",
                    i + 1,
                    STEPS.len(),
                    step.title,
                    "<static-pod dir>"
                ));
                if let Err(e) = install_example(g, sim, &workers).await {
                    return CommandError::Local(format!("step {}: {e}", i + 1)).report();
                }
                show_nodes(g, sim, "after this step").await;
                continue;
            }
        };
        let args = step_args(template, &cmd.profile, upgrade_target(profile), &workers);
        say(format!(
            "==> step {}/{}: {}: yurtctl {}",
            i + 1,
            STEPS.len(),
            step.title,
            args.join(" ")
        ));
        let status = {
            let mut child = match tokio::process::Command::new(exe)
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(passed_on_flags(g))
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit())
                .spawn()
            {
                Ok(c) => c,
                Err(e) => {
                    let e = format!("cannot run {}: {e}", exe.display());
                    return CommandError::Local(e).report();
                }
            };
            tokio::select! {
                s = child.wait() => s,
                _ = stop.wait_for(|stopped| *stopped) => {
                    // on a terminal the step got the SIGINT too: let it stop its own way
                    // (journal, lock, cursor), then make sure it is gone
                    if tokio::time::timeout(STEP_GRACE, child.wait()).await.is_err() {
                        let _ = child.kill().await;
                    }
                    return Exit::Interrupted;
                }
            }
        };
        match status {
            Ok(s) if s.success() => show_nodes(g, sim, "after this step").await,
            // On a terminal the step gets the SIGINT too and may exit before our own handler
            // has run: its 130 is the same interruption.
            Ok(s) if s.code() == Some(130) || *stop.borrow() => return Exit::Interrupted,
            Ok(s) => {
                let failed = CommandError::Local(format!(
                    "step {} (yurtctl {}) failed with exit code {}",
                    i + 1,
                    args.join(" "),
                    s.code().map_or("(signal)".into(), |c| c.to_string())
                ));
                let exit = failed.report();
                show_nodes(g, sim, "after the failed step").await;
                return exit;
            }
            Err(e) => {
                return CommandError::Local(format!("waiting for yurtctl: {e}")).report();
            }
        }
    }
    say("==> done: every step succeeded");
    Exit::Ok
}

async fn interrupted() {
    crate::exec::stop::asked().await;
}

/// The global flags a step inherits from the playground's own command line.
fn passed_on_flags(g: &GlobalArgs) -> Vec<String> {
    let mut out = Vec::new();
    let progress = match g.progress {
        Progress::Auto => None,
        Progress::Bars => Some("bars"),
        Progress::Plain => Some("plain"),
        Progress::None => Some("none"),
    };
    if let Some(p) = progress {
        out.push(format!("--progress={p}"));
    }
    if g.no_color {
        out.push("--no-color".into());
    }
    if g.quiet {
        out.push("-q".into());
    }
    if g.verbose > 0 {
        out.push(format!("-{}", "v".repeat(g.verbose.into())));
    }
    out
}

/// The node table (stdout): role, readiness and which API server each kubelet talks to
/// (YurtHub's 127.0.0.1:10261 once converted).
async fn show_nodes(g: &GlobalArgs, sim: &Sim, when: &str) {
    let mut globals = g.clone();
    globals.kubeconfig = Some(sim.kubeconfig_path());
    let cluster = match connect_from(&globals).await {
        Ok(c) => c,
        Err(_) => return,
    };
    match snapshot(&cluster, &SnapshotOptions::default()).await {
        Ok(s) => {
            say(format!("==> nodes {when}:"));
            let kubelets = s
                .nodes
                .iter()
                .map(|n| (n.name.clone(), kubelet_of(sim, &n.name)))
                .collect();
            for l in node_table(&s.nodes, &kubelets) {
                println!("{l}");
            }
        }
        Err(e) => eprintln!("warning: cannot list the nodes: {e}"),
    }
}

/// The API server a node's kubelet talks to and the kubeconfig it names, read from the node's
/// files as the kubelet reads them at its next start (its unit, drop-ins and environment
/// files): the same on yurtsim's API server and on a real one.
fn kubelet_of(sim: &Sim, node: &str) -> Kubelet {
    let root = sim.node_root(node);
    let view = yurtsim::nodes::systemd::load_unit(&root, "kubelet.service")
        .ok()
        .and_then(|u| yurtsim::nodes::kubelet_config::kubelet_view(&root, &u).ok());
    Kubelet {
        server: view.as_ref().and_then(|v| v.server.clone().ok()),
        kubeconfig: view.and_then(|v| v.kubeconfig).filter(|k| !k.is_empty()),
    }
}

/// What [`node_table`] shows of a node's kubelet.
#[derive(Clone, Debug, Default)]
pub struct Kubelet {
    pub server: Option<String>,
    pub kubeconfig: Option<String>,
}

/// `NAME ROLE READY EDGE KUBELET-SERVER KUBELET-KUBECONFIG`.
pub fn node_table(
    nodes: &[NodeInfo],
    kubelets: &std::collections::BTreeMap<String, Kubelet>,
) -> Vec<String> {
    let row = |cols: [&str; 6]| {
        format!(
            "{:<18} {:<14} {:<6} {:<6} {:<28} {}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
        )
    };
    let mut out = vec![row([
        "NAME",
        "ROLE",
        "READY",
        "EDGE",
        "KUBELET-SERVER",
        "KUBELET-KUBECONFIG",
    ])];
    for n in nodes {
        let get = |m: &std::collections::BTreeMap<String, String>, k: &str| {
            m.get(k).cloned().unwrap_or_else(|| "-".into())
        };
        let kubelet = kubelets.get(&n.name).cloned().unwrap_or_default();
        let roles = if n.roles.is_empty() {
            "worker".to_owned()
        } else {
            n.roles.join(",")
        };
        out.push(row([
            &n.name,
            &roles,
            if n.ready { "True" } else { "False" },
            &get(&n.labels, EDGE_LABEL),
            kubelet.server.as_deref().unwrap_or("-"),
            kubelet.kubeconfig.as_deref().unwrap_or("-"),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn node(name: &str, roles: &[&str], edge: Option<&str>) -> NodeInfo {
        let mut labels = BTreeMap::new();
        if let Some(e) = edge {
            labels.insert(EDGE_LABEL.to_owned(), e.to_owned());
        }
        NodeInfo {
            name: name.into(),
            labels,
            taints: vec![],
            ready: true,
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            internal_ip: None,
            kubelet_version: "v1.30.2".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_node_table_shows_role_edge_label_and_kubelet_server() {
        let kubelets = BTreeMap::from([(
            "cp-1".to_owned(),
            Kubelet {
                server: Some("http://127.0.0.1:10261".into()),
                kubeconfig: Some("/var/lib/openyurt/kubelet.conf".into()),
            },
        )]);
        let t = node_table(
            &[
                node("cp-1", &["control-plane"], Some("false")),
                node("w-1", &[], None),
            ],
            &kubelets,
        );
        assert_eq!(t.len(), 3);
        assert!(t[0].starts_with("NAME"));
        let cols = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            cols(&t[1]),
            [
                "cp-1",
                "control-plane",
                "True",
                "false",
                "http://127.0.0.1:10261",
                "/var/lib/openyurt/kubelet.conf"
            ]
        );
        assert_eq!(cols(&t[2]), ["w-1", "worker", "True", "-", "-", "-"]);
    }

    #[test]
    fn steps_pass_on_the_display_flags() {
        let cli = <crate::cli::Cli as clap::Parser>::parse_from([
            "yurtctl",
            "--progress=plain",
            "--no-color",
            "-vv",
            "playground",
        ]);
        assert_eq!(
            passed_on_flags(&cli.global),
            ["--progress=plain", "--no-color", "-vv"]
        );
    }
}
