//! Starting one container of a pod, for the kubelet's init and app containers alike: which
//! program it runs (a component model, a real process, or a simulated stand-in), with the
//! pod's volumes and, for images the sim knows, the image's own files mounted at their paths.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::nodes::Cluster;
use crate::nodes::images;
use crate::nodes::kubelet::{
    NodeKubelet, container_env, ensure_tools, pod_dir, pod_hostname, resolve_under, state_dir_of,
};
use crate::nodes::runtime::{ContainerSpec, Mount, Network, Pid, Running};

/// The pod's volumes by name: the real directory and whether it is read-only by default.
pub type Volumes = HashMap<String, (PathBuf, bool)>;

/// A started container.
pub enum Started {
    Process(Box<Running>),
    /// A known OpenYurt component's model.
    Model(crate::nodes::programs::Run),
    /// An image whose binary does not exist on this machine and has no model.
    Simulated,
}

pub(crate) enum Program {
    /// A real program, its arguments, the image's files, and whether it gets a `/tmp` of its
    /// own (see `model_program`).
    Process(String, Vec<String>, Option<images::Image>, bool),
    Model(crate::nodes::programs::Model, Vec<String>),
    Simulated,
    StartError(String),
}

fn container_argv(c: &Value) -> (Vec<String>, bool) {
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    };
    let mut argv = strs(&c["command"]);
    let entrypoint = argv.is_empty();
    argv.extend(strs(&c["args"]));
    (argv, entrypoint)
}

/// What a container runs. For an image whose file system a facts file describes, the image's
/// entrypoint, or a command naming one of its modelled binaries, runs that binary's model; any
/// other command is a process that sees the image's files. Images without a described file
/// system keep the older rule: a modelled image always runs its model.
pub(crate) fn resolve_program(shared: &Cluster, c: &Value, restart_policy: &str) -> Program {
    let image = c["image"].as_str().unwrap_or("");
    let (mut argv, entrypoint) = container_argv(c);
    let fs = images::for_image(image);
    if let Some(fs) = &fs {
        let (file, rest) = if entrypoint {
            match fs.entrypoint.split_first() {
                Some((bin, eargs)) => (fs.command_file(bin), [eargs, &argv[..]].concat()),
                None => (None, argv.clone()),
            }
        } else {
            (fs.command_file(&argv[0]), argv[1..].to_vec())
        };
        if let Some(model) = file
            .and_then(|f| f.model.as_ref())
            .and_then(|(c, v)| crate::nodes::programs::for_binary(c, v))
        {
            return model_program(shared, model, rest, Some(fs));
        }
        // `sh -c "<modelled binary> ARGS"` (yurt-manager's upgrade worker): the shell execs
        // the image's binary, so its model runs with the line's words
        if !entrypoint
            && let Some((bin, args)) = crate::nodes::shell::exec_line(&argv, &|_| None)
            && let Some(model) = fs
                .command_file(&bin)
                .and_then(|f| f.model.as_ref())
                .and_then(|(c, v)| crate::nodes::programs::for_binary(c, v))
        {
            return model_program(shared, model, args, Some(fs));
        }
        if entrypoint {
            return Program::Simulated;
        }
    } else if let Some(model) = crate::nodes::programs::for_image(image) {
        // The image's binary is the entrypoint; an explicit command names it first.
        if !entrypoint {
            argv.remove(0);
        }
        return model_program(shared, model, argv, None);
    }
    if entrypoint {
        // The image's own entrypoint: the sim has no images, so it stands in for the container.
        return Program::Simulated;
    }
    let prog = argv.remove(0);
    if prog == "yurtctl" || prog.ends_with("/yurtctl") {
        return match &shared.cfg.yurtctl {
            Some(p) => Program::Process(p.display().to_string(), argv, fs, false),
            None => Program::StartError(format!(
                "exec: \"{prog}\": executable file not found in $PATH (start yurtsim with --exec yurtctl=PATH)"
            )),
        };
    }
    let in_image = fs
        .as_ref()
        .and_then(|f| f.command_file(&prog))
        .is_some_and(|f| f.model.is_none());
    let found = in_image
        || if prog.contains('/') {
            Path::new(&prog).is_file()
        } else {
            std::env::var("PATH")
                .unwrap_or_default()
                .split(':')
                .any(|d| Path::new(d).join(&prog).is_file())
        };
    match (found, restart_policy) {
        (true, _) => Program::Process(prog, argv, fs, false),
        // Long-running components whose binary lives only in their image run simulated.
        (false, "Always") => Program::Simulated,
        (false, _) => Program::StartError(format!(
            "exec: \"{prog}\": executable file not found in $PATH"
        )),
    }
}

/// A binary the sim models: its model in the sim tier; in the real tier the real binary that
/// `tests/real/build.sh` built from upstream's module, whose API is the real one, or a start
/// error naming why there is none (the sim's models serve only the sim's own API server).
fn model_program(
    shared: &Cluster,
    model: crate::nodes::programs::Model,
    args: Vec<String>,
    fs: Option<&images::Image>,
) -> Program {
    if shared.cfg.apiserver != crate::nodes::real_api::ApiServerKind::Real {
        return Program::Model(model, args);
    }
    let (component, version) = (&model.facts.component, &model.facts.version);
    match crate::nodes::real_api::openyurt_binary(component, version) {
        // its own /tmp, as its image's root file system gives it: yurt-manager v1.7.0 keeps
        // its webhook certificates in /tmp/yurt-manager-webhook-certs
        // (openyurtio/openyurt@v1.7.0 pkg/yurtmanager/webhook/util/util.go GetCertDir), and
        // the host's /tmp would share them between every cluster on the machine
        Some(bin) => Program::Process(bin.display().to_string(), args, fs.cloned(), true),
        None => Program::StartError(format!(
            "yurtsim's real tier has no real {component} {version}: {}",
            crate::nodes::real_api::openyurt_missing_reason(version)
        )),
    }
}

/// Runs `f`, which blocks its thread (a container start prepares its mounts and waits until
/// the child has exec'd). On a multi-thread runtime the worker first hands its other tasks to
/// another thread: at a Job window's edge a hundred nodes start containers at once, and the
/// API server and the other nodes' kubelets must not wait for them.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Starts container `c` of pod `p` with its output in `lp`; the error is the runtime's message.
pub(crate) fn start(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    p: &Value,
    c: &Value,
    volumes: &Volumes,
    restart_policy: &str,
    lp: &Path,
) -> Result<Started, String> {
    let cname = c["name"].as_str().unwrap_or("main");
    match resolve_program(shared, c, restart_policy) {
        Program::StartError(msg) => Err(msg),
        Program::Model(model, args) => {
            let (ns, name) = crate::api::store::key_of(p);
            let env = container_env(shared, k, p, c, "");
            Ok(Started::Model((shared.start_model)(
                shared,
                model,
                crate::nodes::programs::Container {
                    node: k.name.clone(),
                    namespace: ns,
                    pod: name,
                    service_account: p["spec"]["serviceAccountName"].as_str().map(str::to_string),
                    args: crate::nodes::programs::expand_args(&args, &env),
                    log: lp.to_path_buf(),
                    append_log: false,
                    mounts: c["volumeMounts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| {
                            let (real, _) = volumes.get(m["name"].as_str()?)?;
                            let sub = m["subPath"].as_str().unwrap_or("");
                            Some((m["mountPath"].as_str()?.to_string(), real.join(sub)))
                        })
                        .collect(),
                    env,
                },
            )))
        }
        Program::Simulated => {
            let _ = std::fs::write(
                lp,
                format!(
                    "yurtsim: container {cname} ({}) is simulated: its image's binary does not exist on this machine\n",
                    c["image"].as_str().unwrap_or("")
                ),
            );
            Ok(Started::Simulated)
        }
        Program::Process(prog, args, fs, own_tmp) => {
            let tools_dir = state_dir_of(shared, &["nodes", &k.name, "bin"]);
            ensure_tools(shared, k, &tools_dir);
            let path_env = format!(
                "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                tools_dir.display()
            );
            let mut mounts = Vec::new();
            if own_tmp {
                // a fresh writable layer per container start, as the runtime gives one
                let tmp = pod_dir(shared, p).join("tmp").join(cname);
                let _ = std::fs::remove_dir_all(&tmp);
                std::fs::create_dir_all(&tmp)
                    .map_err(|e| format!("yurtsim: creating {}: {e}", tmp.display()))?;
                mounts.push(Mount {
                    source: tmp,
                    target: PathBuf::from("/tmp"),
                    read_only: false,
                });
            }
            if let Some(fs) = fs {
                let dir = pod_dir(shared, p).join("rootfs").join(cname);
                let dirs = fs.materialize(&dir).map_err(|e| {
                    format!(
                        "yurtsim: preparing the image's files in {}: {e}",
                        dir.display()
                    )
                })?;
                for (source, target) in dirs {
                    mounts.push(Mount {
                        source,
                        target,
                        read_only: false,
                    });
                }
            }
            for m in c["volumeMounts"].as_array().into_iter().flatten() {
                if let Some((src, ro_default)) = volumes.get(m["name"].as_str().unwrap_or_default())
                {
                    let mut source = src.clone();
                    if let Some(sp) = m["subPath"].as_str().filter(|s| !s.is_empty()) {
                        source = resolve_under(&source, sp);
                    }
                    mounts.push(Mount {
                        source,
                        target: PathBuf::from(m["mountPath"].as_str().unwrap_or("/")),
                        read_only: m["readOnly"] == json!(true) || *ro_default,
                    });
                }
            }
            let net_holder;
            let sandbox;
            let network = if p["spec"]["hostNetwork"] == json!(true) {
                net_holder =
                    crate::nodes::host_processes::node_namespaces(shared, k).map_err(|e| {
                        format!("yurtsim: cannot create the node network namespace: {e}")
                    })?;
                Network::Node(&net_holder)
            } else {
                sandbox = k.pod_sandbox(p["metadata"]["uid"].as_str().unwrap_or_default())?;
                match &sandbox {
                    // the pod's containers share its sandbox's network
                    Some(s) => Network::Node(&s.namespaces),
                    None => Network::Isolated,
                }
            };
            let pids_holder;
            let pid = if p["spec"]["hostPID"] == json!(true) {
                pids_holder = crate::nodes::host_processes::node_pids(shared, k)
                    .map_err(|e| format!("yurtsim: cannot create the node's PID namespace: {e}"))?;
                Pid::Node(&pids_holder)
            } else {
                Pid::Own
            };
            let spec = ContainerSpec {
                program: prog,
                args,
                env: container_env(shared, k, p, c, &path_env),
                working_dir: c["workingDir"].as_str().map(PathBuf::from),
                hostname: pod_hostname(k, p),
                network,
                pid,
                mounts,
                log_path: lp.to_path_buf(),
            };
            blocking(|| crate::nodes::runtime::spawn(spec))
                .map(|r| Started::Process(Box::new(r)))
                .map_err(|e| e.to_string())
        }
    }
}

/// Waits until a started container ends (its exit code) or the pod is stopped (None, after
/// stopping it within `grace`).
pub(crate) async fn wait(
    started: Started,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    grace: std::time::Duration,
    simulated_run: std::time::Duration,
) -> Option<i32> {
    match started {
        Started::Process(mut r) => {
            tokio::select! {
                res = r.wait() => Some(res.map(|i| i.exit_code).unwrap_or(128)),
                _ = stopped(stop) => {
                    let _ = r.stop(grace).await;
                    None
                }
            }
        }
        Started::Model(m) => {
            let abort = m.exit.abort_handle();
            tokio::select! {
                code = m.exit => Some(code.unwrap_or(128)),
                _ = stopped(stop) => {
                    abort.abort();
                    None
                }
            }
        }
        Started::Simulated => {
            tokio::select! {
                _ = tokio::time::sleep(simulated_run) => Some(0),
                _ = stopped(stop) => None,
            }
        }
    }
}

/// Resolves once the pod is to be stopped (the guard from `wait_for` must not live across awaits).
pub(crate) async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}
