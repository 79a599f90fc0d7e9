//! Secrets and least privilege end to end on yurtsim (issue 7). Runs each command line of
//! `COMMANDS` with `-v -v -o json` (the lead adds revert and staticpod lines after the merge)
//! while a watch records every Job and Job pod yurtctl creates, then asserts:
//! - no bootstrap token value (read back from the bootstrap-token Secrets) appears in stdout,
//!   stderr, any Job or pod spec seen, any ConfigMap, or any Event; dry runs redact it;
//! - every bootstrap token yurtctl created expires;
//! - every node file holding a token is mode 0600;
//! - every node Job pod spec has the least-privilege settings (docs/security.md).

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Secret};
use kube::api::{Api, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use serde_json::Value;
use yurtsim::Layout;

/// Command lines run in order; each gets `--kubeconfig`, `-v -v` and `-o json` appended.
const COMMANDS: &[&[&str]] = &[
    &[
        "convert",
        "--dry-run=client",
        "--servant-image",
        "openyurt/yurtctl:test",
    ],
    &[
        "convert",
        "--all-edge",
        "-y",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
    ],
    // a re-run after success and a dry run of a converted cluster print nothing secret either
    &["convert", "-y", "--servant-image", "openyurt/yurtctl:test"],
    &[
        "convert",
        "--dry-run=client",
        "--servant-image",
        "openyurt/yurtctl:test",
    ],
    // a static-pod rollout of YurtHub itself (its manifest lives beside the token's kubeconfig)
    &[
        "staticpod",
        "upgrade",
        "yurt-hub",
        "-n",
        "kube-system",
        "--image",
        "yurt-hub=openyurt/yurthub:v1.6.2",
        "--strategy",
        "advanced-rolling-update",
        "--servant-image",
        "openyurt/yurtctl:test",
        "-y",
    ],
    &["staticpod", "status", "yurt-hub", "-n", "kube-system"],
];

/// Run after the token was read back (revert deletes it).
const AFTER: &[&[&str]] = &[&["revert", "-y", "--job-timeout", "60s"], &["status"]];

const ACTION_LABEL: &str = "yurtctl.openyurt.io/action";

struct Output {
    line: String,
    code: i32,
    stdout: String,
    stderr: String,
}

async fn run(kubeconfig: &Path, line: &[&str]) -> Output {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .args(line)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["-v", "-v", "-o", "json"])
        .stdin(std::process::Stdio::null())
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    Output {
        line: line.join(" "),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Records every version of every object the watch sees.
fn record<K>(api: Api<K>, labels: &str, into: Arc<Mutex<Vec<Value>>>) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + 'static,
{
    let cfg = watcher::Config::default().labels(labels);
    tokio::spawn(async move {
        let mut s = watcher(api, cfg)
            .default_backoff()
            .touched_objects()
            .boxed();
        while let Some(ev) = s.next().await {
            if let Ok(o) = ev {
                into.lock().unwrap().push(serde_json::to_value(&o).unwrap());
            }
        }
    })
}

fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) if m.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out
}

/// The least-privilege settings of docs/security.md, as problems found in one Job.
fn job_problems(job: &Value) -> Vec<String> {
    let name = job["metadata"]["name"].as_str().unwrap_or("?");
    let mut p = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            p.push(format!("Job {name}: {what}"));
        }
    };
    let spec = &job["spec"];
    check(
        spec["activeDeadlineSeconds"]
            .as_i64()
            .is_some_and(|d| d > 0),
        "no activeDeadlineSeconds",
    );
    check(
        spec["backoffLimit"].as_i64().is_some_and(|b| b <= 1),
        "backoffLimit above 1",
    );
    let pod = &spec["template"]["spec"];
    check(
        pod["automountServiceAccountToken"] == false,
        "service-account token mounted",
    );
    check(pod["nodeName"].is_string(), "not pinned with nodeName");
    check(
        pod["restartPolicy"] == "Never",
        "restartPolicy is not Never",
    );
    let tolerations = pod["tolerations"].as_array().cloned().unwrap_or_default();
    check(
        tolerations
            .iter()
            .all(|t| t["key"].as_str().is_some_and(|k| !k.is_empty())),
        "a toleration without a key (tolerates everything)",
    );
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        check(
            tolerations.iter().any(|t| {
                t["key"] == key
                    && t["operator"] == "Exists"
                    && (t["effect"] == "NoExecute" || t.get("effect").is_none())
            }),
            &format!("does not tolerate {key}:NoExecute"),
        );
    }
    for v in pod["volumes"].as_array().into_iter().flatten() {
        if let Some(path) = v["hostPath"]["path"].as_str() {
            check(path == "/", &format!("unexpected hostPath {path}"));
        }
    }
    for c in pod["containers"].as_array().into_iter().flatten() {
        for kind in ["requests", "limits"] {
            for r in ["cpu", "memory"] {
                check(
                    c["resources"][kind][r].is_string(),
                    &format!("container without {kind}.{r}"),
                );
            }
        }
        for e in c["env"].as_array().into_iter().flatten() {
            check(
                e.get("value").is_none()
                    || !e["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_lowercase()
                        .contains("token"),
                "a token in the environment",
            );
        }
    }
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_token_leaks_and_node_jobs_hold_least_privilege() {
    no_token_leaks("openyurt-v1.7", "v1.33.1").await;
}

/// A static-pod YurtHub, whose rollout writes its manifest beside the token's kubeconfig.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_token_leaks_with_a_static_pod_yurthub() {
    no_token_leaks("openyurt-v1.6", "v1.30.2").await;
}

async fn no_token_leaks(profile: &str, kubernetes: &str) {
    let env = support::start_sim(3, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = kubernetes.into()
    })
    .await;
    let static_pod_hub = yurtctl::render::Profile::load(profile)
        .unwrap()
        .yurthub
        .static_pod()
        .is_some();
    let client = support::kube_client(&env.sim).await;
    let jobs = Arc::new(Mutex::new(Vec::new()));
    let pods = Arc::new(Mutex::new(Vec::new()));
    let w1 = record(
        Api::<Job>::namespaced(client.clone(), "kube-system"),
        ACTION_LABEL,
        jobs.clone(),
    );
    let w2 = record(
        Api::<Pod>::namespaced(client.clone(), "kube-system"),
        ACTION_LABEL,
        pods.clone(),
    );

    let mut outputs = Vec::new();
    for line in COMMANDS {
        if line[0] == "staticpod" && !static_pod_hub {
            continue;
        }
        let mut line = line.to_vec();
        if line[0] == "convert" {
            line.extend(["--profile", profile]);
        }
        let o = run(&env.sim.kubeconfig_path(), &line).await;
        eprintln!("--- yurtctl {}: exit {}\n{}", o.line, o.code, o.stderr);
        assert_eq!(o.code, 0, "yurtctl {}", o.line);
        outputs.push(o);
    }
    // the tokens, from the cluster
    let secrets = Api::<Secret>::namespaced(client.clone(), "kube-system")
        .list(&ListParams::default().fields("type=bootstrap.kubernetes.io/token"))
        .await
        .unwrap();
    let field = |s: &Secret, k: &str| {
        s.data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| String::from_utf8(b.0.clone()).unwrap())
    };
    let mut token_secrets = Vec::new();
    for s in &secrets.items {
        let secret = field(s, "token-secret").expect("token-secret");
        assert_eq!(secret.len(), 16);
        // ours expire (kubeadm's default token does too, but it is not ours to judge)
        let managed = s.metadata.labels.as_ref().is_some_and(|l| {
            l.get("app.kubernetes.io/managed-by").map(String::as_str) == Some("yurtctl")
        });
        if managed {
            assert!(
                field(s, "expiration").is_some(),
                "{:?} never expires",
                s.metadata.name
            );
        }
        token_secrets.push(secret);
    }
    assert!(
        !token_secrets.is_empty(),
        "convert created or reused a bootstrap token"
    );
    // node files holding a token are private
    let mut credential_files = 0;
    for node in env.sim.node_names() {
        for f in files_under(&env.sim.node_root(&node)) {
            let Ok(text) = std::fs::read(&f) else {
                continue;
            };
            let text = String::from_utf8_lossy(&text);
            if token_secrets.iter().any(|t| text.contains(t.as_str())) {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
                assert_eq!(
                    mode & 0o077,
                    0,
                    "{} holds a token with mode {mode:o}",
                    f.display()
                );
                credential_files += 1;
            }
        }
        let hub = env
            .sim
            .node_root(&node)
            .join("var/lib/yurthub/bootstrap-hub.conf");
        assert!(hub.is_file(), "{}", hub.display());
    }
    assert!(
        credential_files >= 3,
        "each node got its bootstrap kubeconfig"
    );
    for line in AFTER {
        let o = run(&env.sim.kubeconfig_path(), line).await;
        eprintln!("--- yurtctl {}: exit {}\n{}", o.line, o.code, o.stderr);
        assert_eq!(o.code, 0, "yurtctl {}", o.line);
        outputs.push(o);
    }
    w1.abort();
    w2.abort();

    // everything that must not hold a token
    let mut places: Vec<(String, String)> = Vec::new();
    for o in &outputs {
        places.push((format!("stdout of {}", o.line), o.stdout.clone()));
        places.push((format!("stderr of {}", o.line), o.stderr.clone()));
    }
    let jobs = jobs.lock().unwrap().clone();
    let pods = pods.lock().unwrap().clone();
    assert!(
        !jobs.is_empty() && !pods.is_empty(),
        "the watch saw the node Jobs and their pods"
    );
    for j in &jobs {
        places.push((
            format!("Job {}", j["metadata"]["name"]),
            j["spec"].to_string(),
        ));
    }
    for p in &pods {
        places.push((
            format!("Pod {}", p["metadata"]["name"]),
            p["spec"].to_string(),
        ));
    }
    let cms = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    for c in &cms.items {
        places.push((
            format!("ConfigMap {:?}/{:?}", c.metadata.namespace, c.metadata.name),
            serde_json::to_string(&c.data).unwrap(),
        ));
    }
    let events = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    for e in &events.items {
        places.push(("an Event".into(), serde_json::to_string(e).unwrap()));
    }
    for t in &token_secrets {
        for (where_, text) in &places {
            assert!(
                !text.contains(t.as_str()),
                "the bootstrap token secret is in {where_}"
            );
        }
    }
    // dry runs redact what they would apply
    let dry = outputs[0].stdout.clone();
    assert!(dry.contains("REDACTED"), "{dry}");

    // every node Job and pod: least privilege
    let problems: Vec<String> = jobs.iter().flat_map(job_problems).collect();
    assert!(problems.is_empty(), "{problems:#?}");
    for p in &pods {
        let spec = &p["spec"];
        assert_eq!(
            spec["automountServiceAccountToken"], false,
            "{}",
            p["metadata"]["name"]
        );
        let sa_volume = spec["volumes"].as_array().into_iter().flatten().any(|v| {
            v["projected"].is_object()
                || v["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("kube-api-access"))
        });
        assert!(
            !sa_volume,
            "a service-account token volume in {}",
            p["metadata"]["name"]
        );
    }

    env.sim.shutdown().await;
}
