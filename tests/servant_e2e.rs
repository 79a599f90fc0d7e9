//! `yurtctl node-servant` end to end: the real binary runs inside node Jobs on yurtsim (host
//! root mounted at /host, credential from a Secret volume, kubelet restarted through the
//! sim's nsenter/systemctl), and the cluster shows the effect: node readiness, the
//! kubelet's effective kubeconfig, the YurtHub mirror pod, and node roots byte for byte.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::Client;
use kube::api::{Api, ListParams, LogParams, PostParams};
use serde_json::{Value, json};
use yurtsim::nodes::layout::Role;
use yurtsim::{Layout, Sim};

const NS: &str = "kube-system";
const HUB_IMAGE: &str = "openyurt/yurthub:v1.6.1";
const BROKEN_HUB_IMAGE: &str = "openyurt/yurthub:broken";
const OURS: &str = "/var/lib/openyurt/kubelet.conf";
const ORIGINAL: &str = "/etc/kubernetes/kubelet.conf";
const HUB_SERVER: &str = "http://127.0.0.1:10261";
const ANN: &str = "yurtsim.openyurt.io/kubelet-";
const WAIT: Duration = Duration::from_secs(30);

struct Cluster {
    sim: Sim,
    client: Client,
    _dir: tempfile::TempDir,
    _approver: tokio::task::JoinHandle<()>,
}

async fn start(layout: Layout) -> Cluster {
    let env = support::start_sim(2, layout, |_| {}).await;
    let client = support::kube_client(&env.sim).await;
    bootstrap_secret(&client).await;
    let approver = support::yurthub_prerequisites(&env.sim, "openyurt-v1.6").await;
    Cluster {
        sim: env.sim,
        client,
        _dir: env.dir,
        _approver: approver,
    }
}

fn node_named(layout: Layout, role: Role) -> String {
    layout
        .node_names(1, 1)
        .into_iter()
        .find(|(_, r)| *r == role)
        .unwrap()
        .0
}

/// The bootstrap kubeconfig YurtHub gets, as the client would put it in a Secret.
async fn bootstrap_secret(client: &Client) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let s: Secret = serde_json::from_value(json!({
        "metadata": {"name": "yurthub-bootstrap"},
        "stringData": {"bootstrap-hub.conf": "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: cluster\ncontexts:\n- context:\n    cluster: cluster\n    user: bootstrap\n  name: bootstrap\ncurrent-context: bootstrap\nusers:\n- name: bootstrap\n  user:\n    token: abcdef.0123456789abcdef\n"}
    }))
    .unwrap();
    // stringData is a write-only convenience; send data for servers that ignore it
    let mut s = s;
    if let Some(sd) = s.string_data.take() {
        s.data = Some(
            sd.into_iter()
                .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())))
                .collect(),
        );
    }
    secrets.create(&PostParams::default(), &s).await.unwrap();
    // the YurtHub manifests, as convert's ConfigMap volume carries them: the profile's, and
    // one per test image
    let manifest = support::yurthub_manifest(
        "openyurt-v1.6",
        "https://10.0.0.1:6443",
        yurtctl::render::WorkingMode::Edge,
    );
    assert!(manifest.contains(HUB_IMAGE), "{manifest}");
    let data: serde_json::Map<String, Value> = [HUB_IMAGE, BROKEN_HUB_IMAGE]
        .iter()
        .map(|i| {
            (
                manifest_key(i),
                Value::String(manifest.replace(HUB_IMAGE, i)),
            )
        })
        .collect();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm =
        serde_json::from_value(json!({"metadata": {"name": "yurthub-manifests"}, "data": data}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
}

/// The key of the manifest for `image` in the yurthub-manifests ConfigMap.
fn manifest_key(image: &str) -> String {
    image.replace(['/', ':'], "-") + ".yaml"
}

/// A node Job as convert/revert launch them
/// (docs/architecture.md#talking-to-the-cluster-and-to-nodes): pinned, privileged, hostPID,
/// hostNetwork, host `/` at /host, no service-account token, no retries.
fn servant_job(name: &str, node: &str, args: &[&str]) -> Job {
    let mut command = vec!["yurtctl", "node-servant"];
    command.extend_from_slice(args);
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"yurtctl.openyurt.io/node": node}},
        "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 120, "template": {"spec": {
            "restartPolicy": "Never", "nodeName": node, "hostNetwork": true, "hostPID": true,
            "automountServiceAccountToken": false,
            "containers": [{"name": "servant", "image": "openyurt/yurtctl:test", "command": command,
                "securityContext": {"privileged": true},
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                ],
                "volumeMounts": [
                    {"name": "host", "mountPath": "/host"},
                    {"name": "bootstrap", "mountPath": "/etc/yurtctl/bootstrap", "readOnly": true},
                    {"name": "manifests", "mountPath": "/etc/yurtctl/yurthub", "readOnly": true}]}],
            "volumes": [
                {"name": "host", "hostPath": {"path": "/"}},
                {"name": "bootstrap", "secret": {"secretName": "yurthub-bootstrap", "defaultMode": 0o400}},
                {"name": "manifests", "configMap": {"name": "yurthub-manifests"}}]}}}
    }))
    .unwrap()
}

struct Finished {
    condition: String,
    exit_code: Option<i32>,
    log: String,
}

impl Finished {
    /// The JSON result line among the log lines (stdout and stderr share the pod log).
    fn result(&self) -> Value {
        let line = self
            .log
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no JSON result in the log:\n{}", self.log));
        serde_json::from_str(line).unwrap()
    }
}

async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn run_job(c: &Cluster, name: &str, node: &str, args: &[&str]) -> Finished {
    run(c, name, servant_job(name, node, args)).await
}

async fn run(c: &Cluster, name: &str, job: Job) -> Finished {
    let node = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref()?.node_name.clone())
        .unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), NS);
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let condition = eventually(&format!("job {name} to finish"), || async {
        let j = jobs.get(name).await.ok()?;
        j.status?
            .conditions?
            .into_iter()
            .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            .map(|c| c.type_)
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), NS);
    let p = pods
        .list(&ListParams::default().labels(&format!("job-name={name}")))
        .await
        .unwrap()
        .items
        .remove(0);
    let exit_code = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first()?.state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code);
    let log = pods
        .logs(&p.metadata.name.unwrap(), &LogParams::default())
        .await
        .unwrap();
    // shown when a test fails (the harness captures it otherwise)
    eprintln!("--- job {name} on {node}: {condition} (exit {exit_code:?})\n{log}");
    Finished {
        condition,
        exit_code,
        log,
    }
}

async fn ready(c: &Cluster, node: &str) -> bool {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let Ok(n) = nodes.get(node).await else {
        return false;
    };
    n.status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

async fn kubelet_annotations(c: &Cluster, node: &str) -> (String, String, String) {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let a = nodes
        .get(node)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default();
    let get = |k: &str| a.get(&format!("{ANN}{k}")).cloned().unwrap_or_default();
    (get("kubeconfig"), get("server"), get("error"))
}

/// Waits until the node is Ready and its kubelet uses `kubeconfig` (and `server`).
async fn settled(c: &Cluster, node: &str, kubeconfig: &str, server: Option<&str>) {
    eventually(
        &format!("{node} Ready with its kubelet on {kubeconfig}"),
        || async {
            let (k, s, _) = kubelet_annotations(c, node).await;
            (k == kubeconfig && server.is_none_or(|x| x == s) && ready(c, node).await).then_some(())
        },
    )
    .await;
}

/// What a node root holds, for byte-for-byte comparisons: every file (content and mode),
/// directory (mode) and symlink (target). Left out: `var/log/yurtsim/`, the sim's own log of
/// the systemctl/nsenter calls (simulator output, not part of the node), and the `var/log/`
/// directory itself when that log is all it holds (the seeded roots have no /var/log; the
/// sim creates it as the log's parent on the first Job).
type Tree = BTreeMap<String, (Vec<u8>, u32)>;

fn snapshot(root: &Path) -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == "var/log/yurtsim" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            if md.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap().display().to_string();
                out.insert(rel, (t.into_bytes(), 0));
            } else if md.is_dir() {
                let only_sim_log = rel == "var/log"
                    && std::fs::read_dir(&p)
                        .unwrap()
                        .all(|e| e.unwrap().file_name() == "yurtsim");
                if !only_sim_log {
                    out.insert(format!("{rel}/"), (Vec::new(), mode));
                }
                stack.push(p);
            } else if std::os::unix::fs::FileTypeExt::is_socket(&md.file_type()) {
                // the container runtime's socket: nothing to read
                out.insert(rel, (b"<socket>".to_vec(), mode));
            } else {
                out.insert(rel, (std::fs::read(&p).unwrap(), mode));
            }
        }
    }
    out
}

fn diff(a: &Tree, b: &Tree) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| match (a.contains_key(k), b.contains_key(k)) {
            (true, false) => format!("removed {k}"),
            (false, true) => format!("added {k}"),
            _ => format!("changed {k}"),
        })
        .collect()
}

fn convert_args(timeout: &str, image: &str) -> Vec<String> {
    assert!(
        [HUB_IMAGE, BROKEN_HUB_IMAGE].contains(&image),
        "{image} has no manifest"
    );
    [
        "convert",
        "--host-root",
        "/host",
        "--yurthub-manifest",
        &format!("/etc/yurtctl/yurthub/{}", manifest_key(image)),
        "--bootstrap-file",
        "/etc/yurtctl/bootstrap/bootstrap-hub.conf",
        "--yurthub-timeout",
        timeout,
        "--kubelet-restart-timeout",
        "20s",
        "-o",
        "json",
    ]
    .map(String::from)
    .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn layout_name(l: Layout) -> &'static str {
    match l {
        Layout::Kubeadm => "kubeadm",
        Layout::KubeadmUsr => "kubeadm-usr",
        Layout::Kind => "kind",
        Layout::Minikube => "minikube",
    }
}

/// The servant's host commands: the kubelet restarted, then the node's containers listed at
/// the kubelet's own CRI endpoint and stopped one by one — never the servant's own pod nor a
/// static pod (YurtHub's).
fn kubelet_then_containers_restarted(c: &Cluster, node: &str, r: &Value) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect()
    };
    let commands = strings(&r["hostCommands"]);
    let endpoint = c.sim.kubelet_runtime_endpoint(node).unwrap();
    assert_eq!(
        commands[..3],
        [
            "systemctl daemon-reload".to_owned(),
            "systemctl restart kubelet".to_owned(),
            format!("crictl -r {endpoint} ps -o json")
        ]
    );
    let restarted = strings(&r["restartedContainers"]);
    assert!(!restarted.is_empty(), "{r:#}");
    assert_eq!(commands.len(), 3 + restarted.len(), "{commands:?}");
    let stop = format!("crictl -r {endpoint} stop ");
    assert!(
        commands[3..].iter().all(|c| c.starts_with(&stop)),
        "{commands:?}"
    );
    assert!(
        restarted
            .iter()
            .all(|c| !c.contains("/yurtctl-") && !c.contains("/yurt-hub-")),
        "{restarted:?}"
    );
}

async fn convert_and_revert_a_worker(layout: Layout) {
    let c = start(layout).await;
    let node = node_named(layout, Role::Worker);
    let root = c.sim.node_root(&node);
    settled(&c, &node, ORIGINAL, None).await;
    let pristine = snapshot(&root);

    // preflight: JSON on stdout naming the layout; nothing changed
    let f = run_job(
        &c,
        "yurtctl-preflight",
        &node,
        &["preflight", "--host-root", "/host", "-q"],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    let r = f.result();
    assert_eq!(r["preflight"]["layout"], layout_name(layout), "{}", f.log);
    assert_eq!(r["preflight"]["converted"], false);
    assert_eq!(r["preflight"]["redirect_possible"], true);
    assert!(
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true),
        "{}",
        f.log
    );
    assert_eq!(
        diff(&pristine, &snapshot(&root)),
        Vec::<String>::new(),
        "preflight changed the node"
    );

    // convert
    let args = convert_args("20s", HUB_IMAGE);
    let f = run_job(&c, "yurtctl-convert", &node, &strs(&args)).await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    let r = f.result();
    assert_eq!(
        (r["ok"].clone(), r["changed"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(r["node"], node.as_str(), "node name from NODE_NAME");
    assert_eq!(r["kubeletKubeconfig"], OURS);
    // the kubelet restarted, then the node's containers
    kubelet_then_containers_restarted(&c, &node, &r);
    // the hub was healthy before the kubelet was redirected: the log says so, in order
    let at = |s: &str| f.log.find(s).unwrap_or_else(|| panic!("{s:?} not logged"));
    assert!(
        at("create /etc/kubernetes/manifests/yurthub.yaml") < at("YurtHub is ready")
            && at("YurtHub is ready") < at(&format!("create {OURS}"))
            && at(&format!("create {OURS}")) < at("systemctl daemon-reload")
            && at("systemctl daemon-reload") < at("systemctl restart kubelet"),
        "hub, health, redirect, restart: in that order"
    );
    settled(&c, &node, OURS, Some(HUB_SERVER)).await;
    let (_, _, err) = kubelet_annotations(&c, &node).await;
    assert_eq!(err, "", "kubelet error after convert");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), NS);
    let hub = pods.get(&format!("yurt-hub-{node}")).await.unwrap();
    assert_eq!(
        hub.spec.unwrap().containers[0].image.as_deref(),
        Some(HUB_IMAGE)
    );
    let converted = snapshot(&root);
    let conf = &converted["var/lib/openyurt/kubelet.conf"];
    assert_eq!(conf.1, 0o600, "kubelet.conf mode");
    assert!(String::from_utf8_lossy(&conf.0).contains(HUB_SERVER));

    // convert again: nothing changes, and it says so
    let f = run_job(&c, "yurtctl-convert-again", &node, &strs(&args)).await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    let r = f.result();
    assert_eq!(r["changed"], false, "{}", f.log);
    assert_eq!(r["hostCommands"], Value::Null, "no kubelet restart");
    assert!(r["message"].as_str().unwrap().contains("nothing to do"));
    assert_eq!(
        diff(&converted, &snapshot(&root)),
        Vec::<String>::new(),
        "second convert"
    );
    assert!(ready(&c, &node).await);

    // without hostPID the servant cannot see what the running kubelet uses: refused, unchanged
    let mut own_pids = servant_job(
        "yurtctl-revert-own-pids",
        &node,
        &["revert", "--host-root", "/host"],
    );
    own_pids
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .host_pid = None;
    let f = run(&c, "yurtctl-revert-own-pids", own_pids).await;
    assert_eq!(
        (f.condition.as_str(), f.exit_code),
        ("Failed", Some(3)),
        "{}",
        f.log
    );
    assert!(
        f.log.contains("run the Job with hostPID: true"),
        "{}",
        f.log
    );
    assert_eq!(
        diff(&converted, &snapshot(&root)),
        Vec::<String>::new(),
        "a refused revert"
    );

    // revert
    let f = run_job(
        &c,
        "yurtctl-revert",
        &node,
        &["revert", "--host-root", "/host", "-o", "json"],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    let r = f.result();
    assert_eq!(r["kubeletKubeconfig"], ORIGINAL);
    // and back: the containers convert restarted get the real API server again
    kubelet_then_containers_restarted(&c, &node, &r);
    settled(&c, &node, ORIGINAL, None).await;
    eventually("the yurt-hub mirror pod to go", || async {
        pods.get(&format!("yurt-hub-{node}"))
            .await
            .is_err()
            .then_some(())
    })
    .await;
    // byte for byte as before: no exceptions (the servant's records and backups under
    // /var/lib/yurtctl/backup are removed by revert too, directories included)
    assert_eq!(
        diff(&pristine, &snapshot(&root)),
        Vec::<String>::new(),
        "after revert"
    );

    // revert again: nothing to do
    let f = run_job(
        &c,
        "yurtctl-revert-again",
        &node,
        &["revert", "--host-root", "/host", "-o", "json"],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["changed"], false);
    assert_eq!(
        diff(&pristine, &snapshot(&root)),
        Vec::<String>::new(),
        "second revert"
    );
    assert!(ready(&c, &node).await);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_and_revert_on_kubeadm() {
    convert_and_revert_a_worker(Layout::Kubeadm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_and_revert_on_kubeadm_usr() {
    convert_and_revert_a_worker(Layout::KubeadmUsr).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_and_revert_on_kind() {
    convert_and_revert_a_worker(Layout::Kind).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_and_revert_on_minikube() {
    convert_and_revert_a_worker(Layout::Minikube).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodelifecycle_and_static_pods_on_the_control_plane() {
    let c = start(Layout::Kubeadm).await;
    let node = node_named(Layout::Kubeadm, Role::ControlPlane);
    let root = c.sim.node_root(&node);
    let path = root.join("etc/kubernetes/manifests/kube-controller-manager.yaml");
    let pristine = snapshot(&root);
    let original = std::fs::read_to_string(&path).unwrap();
    let line = original
        .lines()
        .find(|l| l.contains("--controllers="))
        .expect("kubeadm's kcm has --controllers");

    let f = run_job(
        &c,
        "yurtctl-kcm-disable",
        &node,
        &[
            "disable-nodelifecycle",
            "--host-root",
            "/host",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["changed"], true);
    let edited = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        edited,
        original.replacen(line, &format!("{line},-nodelifecycle"), 1),
        "only the --controllers value changed"
    );
    // the kubelet picked the new manifest up
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), NS);
    eventually(
        "kube-controller-manager mirror pod with -nodelifecycle",
        || async {
            let p = pods
                .get(&format!("kube-controller-manager-{node}"))
                .await
                .ok()?;
            let cmd = p.spec?.containers.first()?.command.clone()?;
            cmd.iter()
                .any(|a| a.ends_with(",-nodelifecycle"))
                .then_some(())
        },
    )
    .await;
    let disabled = snapshot(&root);

    let f = run_job(
        &c,
        "yurtctl-kcm-disable-again",
        &node,
        &[
            "disable-nodelifecycle",
            "--host-root",
            "/host",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["changed"], false);
    assert_eq!(diff(&disabled, &snapshot(&root)), Vec::<String>::new());

    let f = run_job(
        &c,
        "yurtctl-kcm-enable",
        &node,
        &["enable-nodelifecycle", "--host-root", "/host", "-o", "json"],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["changed"], true);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert_eq!(diff(&pristine, &snapshot(&root)), Vec::<String>::new());

    // a static-pod upgrade with the manifest from a ConfigMap volume, then restore
    let sched = root.join("etc/kubernetes/manifests/kube-scheduler.yaml");
    let old_sched = std::fs::read_to_string(&sched).unwrap();
    let new_sched = old_sched.replace("kube-scheduler:v1.33.1", "kube-scheduler:v1.33.2");
    assert_ne!(old_sched, new_sched);
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(c.client.clone(), NS);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "sched-manifest"}, "data": {"kube-scheduler.yaml": new_sched}}))
            .unwrap(),
    )
    .await
    .unwrap();
    let upgrade = |name: &str, args: &[&str]| {
        let mut j = serde_json::to_value(servant_job(name, &node, args)).unwrap();
        let spec = &mut j["spec"]["template"]["spec"];
        spec["volumes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "manifest", "configMap": {"name": "sched-manifest"}}));
        spec["containers"][0]["volumeMounts"]
            .as_array_mut()
            .unwrap()
            .push(
                json!({"name": "manifest", "mountPath": "/etc/yurtctl/manifest", "readOnly": true}),
            );
        serde_json::from_value::<Job>(j).unwrap()
    };
    let up_args = [
        "static-pod-upgrade",
        "--host-root",
        "/host",
        "--name",
        "kube-scheduler",
        "--manifest-file",
        "/etc/yurtctl/manifest/kube-scheduler.yaml",
        "-o",
        "json",
    ];
    let f = run(
        &c,
        "yurtctl-sched-upgrade",
        upgrade("yurtctl-sched-upgrade", &up_args),
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(std::fs::read_to_string(&sched).unwrap(), new_sched);
    eventually("kube-scheduler mirror pod on the new image", || async {
        let p = pods.get(&format!("kube-scheduler-{node}")).await.ok()?;
        (p.spec?.containers.first()?.image.as_deref()
            == Some("registry.k8s.io/kube-scheduler:v1.33.2"))
        .then_some(())
    })
    .await;
    let upgraded = snapshot(&root);
    let f = run(
        &c,
        "yurtctl-sched-upgrade-again",
        upgrade("yurtctl-sched-upgrade-again", &up_args),
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["changed"], false);
    assert_eq!(diff(&upgraded, &snapshot(&root)), Vec::<String>::new());
    let f = run_job(
        &c,
        "yurtctl-sched-restore",
        &node,
        &[
            "static-pod-upgrade",
            "--host-root",
            "/host",
            "--name",
            "kube-scheduler",
            "--restore",
        ],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    eventually(
        "kube-scheduler mirror pod back on the old image",
        || async {
            let p = pods.get(&format!("kube-scheduler-{node}")).await.ok()?;
            (p.spec?.containers.first()?.image.as_deref()
                == Some("registry.k8s.io/kube-scheduler:v1.33.1"))
            .then_some(())
        },
    )
    .await;
    assert_eq!(diff(&pristine, &snapshot(&root)), Vec::<String>::new());

    // on a worker there is no kube-controller-manager: a clear error, exit 3, nothing changed
    let worker = node_named(Layout::Kubeadm, Role::Worker);
    let wroot = c.sim.node_root(&worker);
    let before = snapshot(&wroot);
    let f = run_job(
        &c,
        "yurtctl-kcm-worker",
        &worker,
        &["disable-nodelifecycle", "--host-root", "/host"],
    )
    .await;
    assert_eq!(
        (f.condition.as_str(), f.exit_code),
        ("Failed", Some(3)),
        "{}",
        f.log
    );
    assert!(
        f.log
            .contains("kube-controller-manager.yaml: does not exist"),
        "{}",
        f.log
    );
    assert_eq!(diff(&before, &snapshot(&wroot)), Vec::<String>::new());
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_never_gets_healthy_times_out_and_the_kubelet_stays_put() {
    let c = start(Layout::Kind).await;
    let bad = BROKEN_HUB_IMAGE;
    c.sim.faults().never_ready(bad);
    let node = node_named(Layout::Kind, Role::Worker);
    let root = c.sim.node_root(&node);
    settled(&c, &node, ORIGINAL, None).await;
    let pristine = snapshot(&root);

    let f = run_job(
        &c,
        "yurtctl-convert",
        &node,
        &strs(&convert_args("2s", bad)),
    )
    .await;
    assert_eq!(
        (f.condition.as_str(), f.exit_code),
        ("Failed", Some(5)),
        "{}",
        f.log
    );
    let r = f.result();
    assert_eq!(r["error"]["reason"], "timeout");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("NOT redirected")
            && msg.contains(ORIGINAL)
            && msg.contains("yurthub.yaml stays installed")
            && msg.contains(&format!("yurt-hub-{node}")),
        "{msg}"
    );
    assert_eq!(
        r["hostCommands"],
        Value::Null,
        "the kubelet was not restarted"
    );
    // the hub pod exists but never gets ready; the kubelet never left the API server
    let (k, _, err) = kubelet_annotations(&c, &node).await;
    assert_eq!((k.as_str(), err.as_str()), (ORIGINAL, ""));
    tokio::time::sleep(Duration::from_millis(800)).await; // beyond the node monitor grace
    assert!(ready(&c, &node).await, "node stays Ready");
    // only YurtHub's files and the record were added
    let after = snapshot(&root);
    for d in diff(&pristine, &after) {
        assert!(
            d.starts_with("added ")
                && [
                    "etc/kubernetes/manifests/yurthub.yaml",
                    "var/lib/yurthub",
                    "var/lib/yurtctl"
                ]
                .iter()
                .any(|p| d["added ".len()..].starts_with(p)),
            "{d}"
        );
    }

    // revert cleans up; no kubelet restart is needed since its files were never touched
    let f = run_job(
        &c,
        "yurtctl-revert",
        &node,
        &["revert", "--host-root", "/host", "-o", "json"],
    )
    .await;
    assert_eq!(f.condition, "Complete", "{}", f.log);
    assert_eq!(f.result()["hostCommands"], Value::Null);
    eventually("the hub mirror pod to go", || async {
        let pods: Api<Pod> = Api::namespaced(c.client.clone(), NS);
        pods.get(&format!("yurt-hub-{node}"))
            .await
            .is_err()
            .then_some(())
    })
    .await;
    assert_eq!(diff(&pristine, &snapshot(&root)), Vec::<String>::new());
    c.sim.shutdown().await;
}
