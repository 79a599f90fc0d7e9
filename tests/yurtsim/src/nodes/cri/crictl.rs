//! `crictl` as the sim answers it (kubernetes-sigs/cri-tools@v1.33.0 cmd/crictl): the
//! endpoint resolution and connection errors, `ps`, `stop`, `inspect`, `pull` and `logs`.
//! Everything else fails loudly as not modelled.

use std::path::Path;

use serde_json::{Value, json};

use super::{Container, Flavor, NodeRuntime, State, unix_nanos};

/// The stub prints `out` and `err` and exits with `rc`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answer {
    pub rc: i32,
    pub out: String,
    pub err: String,
}

/// crictl's defaults when no endpoint is configured (cri-tools@v1.33.0 cmd/crictl/main_unix.go).
const DEFAULT_ENDPOINTS: [&str; 3] = [
    "unix:///run/containerd/containerd.sock",
    "unix:///run/crio/crio.sock",
    "unix:///var/run/cri-dockerd.sock",
];

/// Go's `%q` for the strings crictl prints.
pub(crate) fn go_quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if c.is_control() => o.push_str(&format!("\\x{:02x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A logrus line as crictl writes it to a non-terminal stderr (TextFormatter).
fn logrus(level: &str, msg: &str) -> String {
    format!(
        "time=\"{}\" level={level} msg={}\n",
        crate::util::now(),
        go_quote(msg)
    )
}

fn fatal(err: &mut String, msg: &str) -> Answer {
    err.push_str(&logrus("fatal", msg));
    Answer {
        rc: 1,
        out: String::new(),
        err: std::mem::take(err),
    }
}

fn not_modelled(what: &str) -> Answer {
    Answer {
        rc: 1,
        out: String::new(),
        err: format!("crictl (yurtsim): {what} is not modelled\n"),
    }
}

/// Dials an endpoint the way cri-client does (vendor/k8s.io/cri-client/pkg/util/util_unix.go
/// and remote_runtime.go `NewRemoteRuntimeService`): Ok when a socket listens at its path.
/// `api` is `runtime` or `image` (remote_image.go validates the image API the same way).
fn connect(root: &Path, endpoint: &str, api: &str) -> Result<(), String> {
    let path = match endpoint.split_once("://") {
        Some(("unix", rest)) => rest.to_string(),
        Some(("tcp", _)) => return Err("only support unix socket endpoint".into()),
        Some((scheme, _)) => return Err(format!("protocol {} not supported", go_quote(scheme))),
        // A bare path falls back to unix://.
        None => endpoint.to_string(),
    };
    let host = crate::nodes::kubelet::resolve_under(root, &path);
    use std::os::unix::fs::FileTypeExt;
    let why = match std::fs::metadata(&host) {
        Ok(m) if m.file_type().is_socket() => return Ok(()),
        Ok(_) => "connection refused",
        Err(_) => "no such file or directory",
    };
    Err(format!(
        "validate service connection: validate CRI v1 {api} API for endpoint {}: rpc error: code = Unavailable desc = connection error: desc = {}",
        go_quote(endpoint),
        go_quote(&format!(
            "transport: Error while dialing: dial unix {path}: connect: {why}"
        ))
    ))
}

/// `runtime-endpoint` from `/etc/crictl.yaml` (cri-tools pkg/common/file.go), if set.
fn config_endpoint(root: &Path, file: &str) -> Option<String> {
    let text = std::fs::read_to_string(crate::nodes::kubelet::resolve_under(root, file)).ok()?;
    let v: Value = serde_saphyr::from_str(&text).ok()?;
    v["runtime-endpoint"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Answers one `crictl` call (`argv[0]` is "crictl"). `cannot_pull` is the node's pull fault:
/// the runtime's error for an image it cannot pull.
pub fn answer(
    root: &Path,
    rt: &NodeRuntime,
    argv: &[String],
    cannot_pull: &dyn Fn(&str) -> Option<String>,
) -> Answer {
    let mut endpoint: Option<String> = None;
    let mut config = "/etc/crictl.yaml".to_string();
    let mut i = 1;
    // Global flags (urfave/cli v2): `-r EP`, `-r=EP`, `--runtime-endpoint[=]EP`, ...
    while i < argv.len() && argv[i].starts_with('-') {
        let a = argv[i].as_str();
        let (name, inline) = match a.trim_start_matches('-').split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.trim_start_matches('-'), None),
        };
        let takes_value = matches!(
            name,
            "r" | "runtime-endpoint" | "i" | "image-endpoint" | "t" | "timeout" | "c" | "config"
        );
        if !takes_value && !matches!(name, "D" | "debug") {
            return not_modelled(&format!("global flag {a:?}"));
        }
        let value = if takes_value {
            match inline {
                Some(v) => Some(v),
                None => {
                    i += 1;
                    match argv.get(i) {
                        Some(v) => Some(v.clone()),
                        None => {
                            return Answer {
                                rc: 1,
                                out: String::new(),
                                err: format!("Incorrect Usage: flag needs an argument: {a}\n"),
                            };
                        }
                    }
                }
            }
        } else {
            None
        };
        match (name, value) {
            ("r" | "runtime-endpoint", Some(v)) => endpoint = Some(v),
            ("c" | "config", Some(v)) => config = v,
            _ => {}
        }
        i += 1;
    }
    let Some(cmd) = argv.get(i) else {
        return not_modelled("crictl without a command (help)");
    };
    let rest = &argv[i + 1..];
    if !matches!(cmd.as_str(), "ps" | "stop" | "inspect" | "pull" | "logs") {
        let known = [
            "attach",
            "create",
            "exec",
            "version",
            "images",
            "image",
            "img",
            "inspecti",
            "imagefsinfo",
            "rmi",
            "info",
            "port-forward",
            "rm",
            "rmp",
            "pods",
            "inspectp",
            "runp",
            "start",
            "stats",
            "statsp",
            "metricsp",
            "update",
            "config",
            "completion",
            "checkpoint",
            "events",
            "runtime-config",
            "update-runtime-config",
            "run",
            "help",
            "h",
        ];
        if known.contains(&cmd.as_str()) {
            return not_modelled(&format!("'crictl {cmd}'"));
        }
        // urfave/cli's exit error, printed by HandleExitCoder (vendor/github.com/urfave/cli/v2/help.go).
        return Answer {
            rc: 3,
            out: String::new(),
            err: format!("No help topic for '{cmd}'\n"),
        };
    }
    let mut err = String::new();
    if cmd == "stop" && rest.is_empty() {
        return fatal(&mut err, "ID cannot be empty");
    }
    // logs.go: the options and the ID are checked before connecting.
    let logs_request = if cmd == "logs" {
        match logs_options(rest) {
            Ok(Ok(r)) => Some(r),
            Ok(Err(msg)) => return fatal(&mut err, &msg),
            Err(a) => return a,
        }
    } else {
        None
    };
    // pull talks to the image service only (main.go getImageService: the image endpoint is
    // the runtime endpoint when unset).
    let (api, who) = if cmd == "pull" {
        ("image", "Image")
    } else {
        ("runtime", "runtime")
    };
    if cmd == "pull" {
        let (fl, pos) = match flags(rest, &[]) {
            Ok(x) => x,
            Err(e) => return not_modelled(&format!("crictl pull ({e})")),
        };
        if let Some((n, _)) = fl.first() {
            return not_modelled(&format!("crictl pull flag --{n}"));
        }
        // image.go pullCommand: checked before connecting.
        if pos.first().is_none_or(|i| i.is_empty()) {
            return fatal(&mut err, "Image name cannot be empty");
        }
        if pos.len() > 1 {
            return not_modelled("crictl pull with more than one argument (help)");
        }
    }
    // main.go: the flag wins over the config file; unset means crictl's default list.
    let endpoint = endpoint.or_else(|| config_endpoint(root, &config));
    match &endpoint {
        // main.go getImageService: an empty runtime endpoint given leaves the image one unset.
        Some(ep) if ep.is_empty() => {
            return fatal(&mut err, &format!("--{api}-endpoint is not set"));
        }
        Some(ep) => {
            if let Err(e) = connect(root, ep, api) {
                return fatal(&mut err, &e);
            }
        }
        None => {
            err.push_str(&logrus("warning", &format!("{who} connect using default endpoints: [{}]. As the default settings are now deprecated, you should set the endpoint instead.", DEFAULT_ENDPOINTS.join(" "))));
            let mut last = None;
            for ep in DEFAULT_ENDPOINTS {
                match connect(root, ep, api) {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) => {
                        err.push_str(&logrus("error", &e));
                        last = Some(e);
                    }
                }
            }
            if let Some(e) = last {
                return fatal(&mut err, &e);
            }
        }
    }
    let mut a = match cmd.as_str() {
        "ps" => ps(rt, rest, endpoint.is_none(), &mut err),
        "stop" => stop(rt, rest, &mut err),
        "pull" => pull(rt, &rest[0], cannot_pull, &mut err),
        "logs" => match &logs_request {
            Some(r) => logs(rt, r, &mut err),
            None => unreachable!("crictl logs' request is read above"),
        },
        _ => inspect(rt, rest, &mut err),
    };
    if a.err.is_empty() {
        a.err = err;
    }
    a
}

/// A subcommand's (name, value) flags and positional arguments.
type Split = (Vec<(String, String)>, Vec<String>);

/// Splits a subcommand's flags: (name, value) pairs and positional arguments.
fn flags(rest: &[String], with_value: &[&str]) -> Result<Split, String> {
    let mut fl = Vec::new();
    let mut pos = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a.starts_with('-') && a.len() > 1 {
            let body = a.trim_start_matches('-');
            let (n, v) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (body.to_string(), None),
            };
            if with_value.contains(&n.as_str()) && v.is_none() {
                i += 1;
                let v = rest.get(i).ok_or(format!("flag needs an argument: {a}"))?;
                fl.push((n, v.clone()));
            } else {
                fl.push((n, v.unwrap_or_else(|| "true".into())));
            }
        } else {
            pos.push(a.clone());
        }
        i += 1;
    }
    Ok((fl, pos))
}

/// `crictl ps`: running containers unless `-a`, newest first (container.go `ListContainers`,
/// `getContainersList`); `-o json` is protojson with defaults emitted (util.go
/// `protobufObjectToJSON`); `-q` prints IDs.
fn ps(rt: &NodeRuntime, rest: &[String], default_ep: bool, err: &mut String) -> Answer {
    let (fl, pos) = match flags(rest, &["o", "output"]) {
        Ok(x) => x,
        Err(e) => return not_modelled(&format!("crictl ps ({e})")),
    };
    if !pos.is_empty() {
        return not_modelled("crictl ps with arguments (help)");
    }
    let (mut all, mut quiet, mut output) = (false, false, "table".to_string());
    for (n, v) in fl {
        match n.as_str() {
            "a" | "all" => all = v == "true",
            "q" | "quiet" => quiet = v == "true",
            "o" | "output" => output = v,
            _ => return not_modelled(&format!("crictl ps flag --{n}")),
        }
    }
    if default_ep {
        // ps also opens the image service, with the same deprecation warning.
        err.push_str(&logrus("warning", &format!("Image connect using default endpoints: [{}]. As the default settings are now deprecated, you should set the endpoint instead.", DEFAULT_ENDPOINTS.join(" "))));
    }
    let list: Vec<Container> = rt
        .list()
        .into_iter()
        .filter(|c| all || c.running())
        .collect();
    match output.as_str() {
        "json" => {
            let cs: Vec<Value> = list.iter().map(cri_container).collect();
            let text = serde_json::to_string_pretty(&json!({"containers": cs})).unwrap();
            Answer {
                rc: 0,
                out: format!("{text}\n"),
                err: String::new(),
            }
        }
        "table" if quiet => Answer {
            rc: 0,
            out: list.iter().map(|c| format!("{}\n", c.id)).collect(),
            err: String::new(),
        },
        "table" | "yaml" | "go-template" => not_modelled(&format!("crictl ps -o {output}")),
        other => fatal(
            err,
            &format!(
                "listing containers: unsupported output format {}",
                go_quote(other)
            ),
        ),
    }
}

fn state_name(c: &Container) -> &'static str {
    if c.running() {
        "CONTAINER_RUNNING"
    } else {
        "CONTAINER_EXITED"
    }
}

/// A CRI `Container` in protojson: int64 as a string, enums by name, defaults emitted.
fn cri_container(c: &Container) -> Value {
    json!({
        "id": c.id, "podSandboxId": c.sandbox_id,
        "metadata": {"name": c.name, "attempt": c.attempt},
        "image": {"image": c.image_id(), "annotations": {}, "userSpecifiedImage": c.image, "runtimeHandler": ""},
        "imageRef": c.image_id(), "state": state_name(c),
        "createdAt": unix_nanos(c.created_at).to_string(),
        "labels": c.labels(), "annotations": c.annotations, "imageId": "",
    })
}

/// `crictl stop ID...`: prints each ID as given once stopped; the first failure is fatal
/// (container.go `stopContainerCommand`, `StopContainer`). Unknown IDs get the runtime's
/// NotFound (containerd internal/cri/server/container_stop.go) or docker's error (cri-dockerd).
fn stop(rt: &NodeRuntime, rest: &[String], err: &mut String) -> Answer {
    let (fl, ids) = match flags(rest, &["t", "timeout"]) {
        Ok(x) => x,
        Err(e) => return not_modelled(&format!("crictl stop ({e})")),
    };
    if let Some((n, _)) = fl.first() {
        // A graceful timeout would signal the process first; only the SIGKILL path is modelled.
        return not_modelled(&format!("crictl stop flag --{n}"));
    }
    let mut out = String::new();
    for id in &ids {
        if rt.stop(id).is_none() {
            let why = match rt.flavor {
                Flavor::Containerd => format!(
                    "rpc error: code = NotFound desc = an error occurred when try to find container {}: not found",
                    go_quote(id)
                ),
                Flavor::CriDockerd => format!(
                    "rpc error: code = Unknown desc = Error response from daemon: No such container: {id}"
                ),
            };
            let mut a = fatal(
                err,
                &format!("stopping the container {}: {why}", go_quote(id)),
            );
            a.out = out;
            return a;
        }
        out.push_str(&format!("{id}\n"));
    }
    Answer {
        rc: 0,
        out,
        err: String::new(),
    }
}

/// `crictl pull IMAGE` (image.go pullCommand): `Image is up to date for <image ref>` with the
/// ID the runtime answers (`sha256:` + 64 hex, stable per reference here), or crictl's
/// `pulling image: %w` around the runtime's gRPC error (containerd: code Unknown).
fn pull(
    rt: &NodeRuntime,
    image: &str,
    cannot_pull: &dyn Fn(&str) -> Option<String>,
    err: &mut String,
) -> Answer {
    if let Some(e) = cannot_pull(image) {
        if rt.flavor == Flavor::CriDockerd {
            return not_modelled("a failing crictl pull against cri-dockerd");
        }
        return fatal(
            err,
            &format!("pulling image: {}", crate::nodes::image_pull::rpc_error(&e)),
        );
    }
    rt.add_image(&crate::nodes::image_pull::present_key(image));
    Answer {
        rc: 0,
        out: format!("Image is up to date for {}\n", super::image_id(image)),
        err: String::new(),
    }
}

/// `crictl inspect ID...` (JSON): `status` plus containerd's verbose `info`, whose `config`
/// is the CreateContainer config with `envs` (containerd internal/cri/server
/// container_status.go `toCRIContainerInfo`). cri-dockerd's verbose info is not modelled.
fn inspect(rt: &NodeRuntime, rest: &[String], err: &mut String) -> Answer {
    let (fl, ids) = match flags(rest, &["o", "output"]) {
        Ok(x) => x,
        Err(e) => return not_modelled(&format!("crictl inspect ({e})")),
    };
    if fl
        .iter()
        .any(|(n, v)| !(matches!(n.as_str(), "o" | "output") && v == "json"))
    {
        return not_modelled("crictl inspect flags other than -o json");
    }
    if ids.is_empty() {
        return fatal(err, "ID cannot be empty");
    }
    if rt.flavor == Flavor::CriDockerd {
        return not_modelled("crictl inspect against cri-dockerd");
    }
    let mut docs = Vec::new();
    for id in &ids {
        let Some(c) = rt.get(id) else {
            return fatal(
                err,
                &format!(
                    "get container status: rpc error: code = NotFound desc = an error occurred when try to find container {}: not found",
                    go_quote(id)
                ),
            );
        };
        let (code, reason, finished) = match &c.state {
            State::Running => (0, String::new(), 0),
            State::Exited {
                code,
                reason,
                finished_at,
            } => (*code, reason.clone(), unix_nanos(*finished_at)),
        };
        let envs: Vec<Value> = c
            .env
            .iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect();
        docs.push(json!({
            "info": {
                "sandboxID": c.sandbox_id,
                "pid": c.pgid.unwrap_or(0),
                "config": {"metadata": {"name": c.name, "attempt": c.attempt},
                    "image": {"image": c.image_id(), "user_specified_image": c.image},
                    "envs": envs, "labels": c.labels(), "annotations": c.annotations},
            },
            "status": {
                "id": c.id, "metadata": {"name": c.name, "attempt": c.attempt}, "state": state_name(&c),
                "createdAt": unix_nanos(c.created_at).to_string(),
                "startedAt": unix_nanos(c.created_at).to_string(),
                "finishedAt": finished.to_string(), "exitCode": code,
                "image": {"image": c.image, "annotations": {}, "userSpecifiedImage": "", "runtimeHandler": ""},
                "imageRef": c.image_id(), "reason": reason, "message": "",
                "labels": c.labels(), "annotations": c.annotations,
            },
        }));
    }
    let v = if docs.len() == 1 {
        docs.remove(0)
    } else {
        Value::Array(docs)
    };
    Answer {
        rc: 0,
        out: format!("{}\n", serde_json::to_string_pretty(&v).unwrap()),
        err: String::new(),
    }
}

/// What `crictl logs` was asked for.
struct LogsRequest {
    id: String,
    previous: bool,
    opts: crate::nodes::kubelet::LogOptions,
}

/// `crictl logs [FLAGS] CONTAINER-ID`'s flags (kubernetes-sigs/cri-tools@v1.33.0
/// cmd/crictl/logs.go `logsCommand`): `--tail N` and `--limit-bytes N` (Int64Flag, -1: all;
/// any negative value means no cut, k8s.io/cri-client pkg/logs `NewLogOptions`), `-p`/
/// `--previous`. urfave/cli v2 parses flags with Go's `flag` package, which stops at the first
/// argument that is not a flag, so flags after the ID are arguments. Ok(Err(msg)): crictl's
/// own refusal, fatal; Err: an answer (not modelled).
fn logs_options(rest: &[String]) -> Result<Result<LogsRequest, String>, Answer> {
    let mut i = 0;
    let mut tail: i64 = -1;
    let mut limit: i64 = -1;
    let mut previous = false;
    let mut positional: Vec<String> = Vec::new();
    while i < rest.len() {
        let a = &rest[i];
        if a == "--" {
            positional.extend(rest[i + 1..].iter().cloned());
            break;
        }
        if !a.starts_with('-') || a == "-" {
            positional.extend(rest[i..].iter().cloned());
            break;
        }
        let body = a.trim_start_matches('-');
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        match name {
            "tail" | "limit-bytes" => {
                let v = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        match rest.get(i) {
                            Some(v) => v.clone(),
                            None => {
                                return Err(Answer {
                                    rc: 1,
                                    out: String::new(),
                                    err: format!("Incorrect Usage: flag needs an argument: {a}\n"),
                                });
                            }
                        }
                    }
                };
                let Ok(n) = v.parse::<i64>() else {
                    return Err(Answer {
                        rc: 1,
                        out: String::new(),
                        err: format!(
                            "Incorrect Usage: invalid value {} for flag -{name}: parse error\n",
                            go_quote(&v)
                        ),
                    });
                };
                if name == "tail" {
                    tail = n;
                } else {
                    limit = n;
                }
            }
            "p" | "previous" => previous = inline.as_deref().is_none_or(|v| v == "true"),
            other => return Err(not_modelled(&format!("crictl logs flag --{other}"))),
        }
        i += 1;
    }
    let Some(id) = positional.first().filter(|s| !s.is_empty()) else {
        return Ok(Err("ID cannot be empty".into()));
    };
    if positional.len() > 1 {
        // logs.go: `cli.ShowSubcommandHelp` (help on stdout, exit 0, no log): flags after the
        // ID land here too
        return Err(not_modelled(&format!(
            "crictl logs with more than one argument ({}; flags go before the ID), which prints help",
            positional[1..].join(" ")
        )));
    }
    Ok(Ok(LogsRequest {
        id: id.clone(),
        previous,
        // the file is chosen by `logs` (the previous instance's, with `previous`)
        opts: crate::nodes::kubelet::LogOptions {
            previous: false,
            tail_lines: usize::try_from(tail).ok(),
            limit_bytes: usize::try_from(limit).ok(),
            follow: false,
        },
    }))
}

/// `crictl logs`: the container's `ContainerStatus` (an unknown ID is the runtime's NotFound,
/// returned by crictl as it is, logs.go), its log path (with `--previous`, the last
/// terminated instance's, which needs an attempt above 0: "previous terminated container %s
/// not found"), read by the kubelet's log reader (nodes/kubelet/logs.rs) cut to `--tail` and
/// `--limit-bytes`; a log file that is gone is k8s.io/cri-client pkg/logs `ReadLogs`' "failed
/// to try resolving symlinks in path". The sim's log files hold the container's output
/// without CRI's per-line timestamp and stream, so everything is printed on stdout (crictl
/// prints a container's stderr lines on its own stderr).
fn logs(rt: &NodeRuntime, r: &LogsRequest, err: &mut String) -> Answer {
    let Some(c) = rt.get(&r.id) else {
        let why = match rt.flavor {
            Flavor::Containerd => format!(
                "rpc error: code = NotFound desc = an error occurred when try to find container {}: not found",
                go_quote(&r.id)
            ),
            Flavor::CriDockerd => format!(
                "rpc error: code = Unknown desc = Error response from daemon: No such container: {}",
                r.id
            ),
        };
        return fatal(err, &why);
    };
    let mut path = rt.log_file(&c);
    if r.previous {
        if c.attempt == 0 {
            return fatal(
                err,
                &format!("previous terminated container {} not found", c.name),
            );
        }
        path = crate::nodes::kubelet::previous_log_file(&path);
    }
    match crate::nodes::kubelet::read_log(&path, &r.opts) {
        Ok(data) => Answer {
            rc: 0,
            out: String::from_utf8_lossy(&data).into_owned(),
            err: String::new(),
        },
        Err(e) => {
            let shown = path.display().to_string();
            fatal(
                err,
                &format!(
                    "failed to try resolving symlinks in path {}: lstat {shown}: {}",
                    go_quote(&shown),
                    go_io_error(&e)
                ),
            )
        }
    }
}

/// Go's text of an OS error (`syscall.Errno`): lower case, without Rust's " (os error N)".
fn go_io_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => s,
    }
}
