//! What yurtctl's integration tests share: a simulated cluster whose Jobs run this crate's own
//! `yurtctl` binary, and a kube-rs client for it.
#![allow(dead_code)]

pub mod real;
pub mod roots;
pub mod terminal;

use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use yurtsim::{Layout, Sim, SimConfig};

/// Static pod `nginx` (container `web`, nginx:1.19.1), as the staticpod tests place it on nodes.
pub const NGINX_119_1: &str = "apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
  - name: web
    image: nginx:1.19.1
";

pub struct SimEnv {
    pub sim: Sim,
    pub dir: tempfile::TempDir,
}

/// Starts yurtsim with test timings; `tweak` adjusts the config before start.
pub async fn start_sim(nodes: usize, layout: Layout, tweak: impl FnOnce(&mut SimConfig)) -> SimEnv {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = SimConfig::for_tests(dir.path().join("state"));
    cfg.nodes = nodes;
    cfg.layout = layout;
    cfg.yurtctl = Some(PathBuf::from(env!("CARGO_BIN_EXE_yurtctl")));
    tweak(&mut cfg);
    let control_planes = cfg.control_planes;
    let sim = Sim::start(cfg).await.expect("sim starts");
    control_plane_settled(&sim, control_planes).await;
    SimEnv { sim, dir }
}

/// Waits until every control-plane node's kube-controller-manager mirror pod exists, as on an
/// established cluster (the sim's kubelets post them shortly after start; a busy machine
/// otherwise lets a test's first snapshot see a control plane without one).
async fn control_plane_settled(sim: &Sim, control_planes: usize) {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let pods: Api<Pod> = Api::namespaced(kube_client(sim).await, "kube-system");
    let lp = ListParams::default().labels("component=kube-controller-manager");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let n = pods.list(&lp).await.map(|l| l.items.len()).unwrap_or(0);
        if n >= control_planes {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} of {control_planes} kube-controller-manager mirror pods after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A plain kube-rs client from the sim's kubeconfig.
pub async fn kube_client(sim: &Sim) -> Client {
    let kc = Kubeconfig::read_from(sim.kubeconfig_path()).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig usable");
    Client::try_from(config).expect("client")
}

/// yurtctl's own API layer, connected to the sim the way the CLI connects (`--kubeconfig`).
pub async fn yurtctl_cluster(sim: &Sim) -> yurtctl::cluster::Cluster {
    use yurtctl::cluster::client::{ClientOptions, ConfigEnv, connect_with_env};
    let opts = ClientOptions {
        kubeconfig: Some(sim.kubeconfig_path()),
        ..Default::default()
    };
    connect_with_env(&opts, &ConfigEnv::default())
        .await
        .expect("connects")
}

/// tests/fixtures/cluster-ca.crt as a kubeconfig's `certificate-authority-data`.
pub fn fixture_ca_data() -> String {
    yurtctl::render::base64(include_str!("../fixtures/cluster-ca.crt").as_bytes())
}

/// The YurtHub manifest `yurtctl convert` would hand a node of `mode` with `profile`, for an
/// API server at `api_server` (node tests install it with the servant).
pub fn yurthub_manifest(
    profile: &str,
    api_server: &str,
    mode: yurtctl::render::WorkingMode,
) -> String {
    use yurtctl::render::{BootstrapTokenRef, Profile, RenderContext, TokenSecret};
    let p = Profile::load(profile).expect("profile");
    let token = BootstrapTokenRef::new("abcdef", "2030-01-01T00:00:00Z").expect("token");
    let secret = TokenSecret::new("0123456789abcdef").expect("secret");
    let ctx = RenderContext::new(&p, api_server, fixture_ca_data(), token, secret);
    yurtctl::render::yurthub_manifest(&p, &ctx, mode).expect("manifest renders")
}

/// What a YurtHub of `profile` needs from the cluster before it reports ready, for tests that
/// install it without `convert`: the profile's CRDs, YurtHub cluster objects and bootstrap
/// token (the one `yurthub_manifest` uses), and an approver for its certificate requests —
/// the part yurt-manager's csrapprover plays in a converted cluster, here an admin approving
/// every pending request. The approver runs until the returned task is dropped or aborted.
pub async fn yurthub_prerequisites(sim: &Sim, profile: &str) -> tokio::task::JoinHandle<()> {
    use yurtctl::cluster::apply::{Applier, ApplyOptions};
    use yurtctl::render::{BootstrapTokenRef, Profile, RenderContext, TokenSecret};
    let p = Profile::load(profile).expect("profile");
    let token = BootstrapTokenRef::new("abcdef", "2030-01-01T00:00:00Z").expect("token");
    let secret = TokenSecret::new("0123456789abcdef").expect("secret");
    let ctx = RenderContext::new(
        &p,
        "https://10.0.0.1:6443",
        fixture_ca_data(),
        token,
        secret,
    );
    let wanted: Vec<&str> = p
        .components
        .iter()
        .filter(|c| ["crds", "yurthub-cluster", "bootstrap-token"].contains(&c.id.as_str()))
        .flat_map(|c| c.templates.iter().map(String::as_str))
        .collect();
    let objects: Vec<_> = yurtctl::render::render_cluster_objects(&p, &ctx)
        .expect("profile renders")
        .into_iter()
        .filter(|o| wanted.contains(&o.template.as_str()))
        .map(|o| o.object)
        .collect();
    let applier = Applier::new(yurtctl_cluster(sim).await, ApplyOptions::default());
    for o in &objects {
        // a CRD applied a moment ago is served a moment later
        let mut tries = 0;
        while let Err(e) = applier.apply(o).await {
            tries += 1;
            assert!(tries < 50, "apply {:?}: {e}", o.metadata.name);
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    let client = kube_client(sim).await;
    tokio::spawn(approve_certificate_requests(client))
}

/// Approves every pending CertificateSigningRequest, as `kubectl certificate approve` would.
async fn approve_certificate_requests(client: Client) {
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequest, CertificateSigningRequestCondition,
    };
    use kube::api::{Api, PostParams};
    let api: Api<CertificateSigningRequest> = Api::all(client);
    loop {
        for mut csr in api
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            let status = csr.status.get_or_insert_with(Default::default);
            let conditions = status.conditions.get_or_insert_with(Vec::new);
            if !conditions.is_empty() {
                continue;
            }
            conditions.push(CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("ApprovedByTest".into()),
                message: Some("approved by the test, standing in for yurt-manager".into()),
                ..Default::default()
            });
            let name = csr.metadata.name.clone().unwrap_or_default();
            let _ = api
                .replace_subresource("approval", &name, &PostParams::default(), &csr)
                .await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The servant's YurtHub options for that manifest (file name from the profile).
pub fn hub_options(
    profile: &str,
    api_server: &str,
    mode: yurtctl::render::WorkingMode,
    credential: yurtctl::servant::HubCredential,
) -> yurtctl::servant::YurtHubOptions {
    let p = yurtctl::render::Profile::load(profile).expect("profile");
    yurtctl::servant::YurtHubOptions {
        manifest_file: p
            .yurthub
            .static_pod()
            .expect("a static-pod profile")
            .manifest_file
            .clone(),
        manifest: yurthub_manifest(profile, api_server, mode),
        credential,
    }
}

/// What a `yurtctl` run printed and how it ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout as JSON (`-o json`); panics with the text when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// The yurtctl binary under test, aimed at `sim` (`--kubeconfig`), with no terminal on stdin
/// and no `KUBECONFIG` from the environment.
pub fn yurtctl_command(sim: &Sim) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"));
    c.arg("--kubeconfig")
        .arg(sim.kubeconfig_path())
        .stdin(std::process::Stdio::null())
        .env_remove("KUBECONFIG");
    c
}

/// Runs `yurtctl ARGS` against `sim`; its stderr is echoed so a failing test shows it.
pub async fn yurtctl(sim: &Sim, args: &[&str]) -> Run {
    let mut cmd = yurtctl_command(sim);
    cmd.args(args);
    run(cmd, &format!("{args:?}")).await
}

/// Runs `cmd` to its end; stderr is echoed under `what` so a failing test shows it.
pub async fn run(mut cmd: tokio::process::Command, what: &str) -> Run {
    let out = cmd.output().await.unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!("--- yurtctl {what}: exit {}\n{}", run.code, run.stderr);
    run
}

/// `yurtctl convert --profile PROFILE` with the tests' servant image and a 60 s Job timeout;
/// it must succeed.
pub async fn convert_profile(sim: &Sim, profile: &str) {
    let run = yurtctl(
        sim,
        &[
            "convert",
            "--profile",
            profile,
            "--servant-image",
            "openyurt/yurtctl:test",
            "--job-timeout",
            "60s",
            "-y",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The first worker node of `sim` (the layouts name them `worker…`, after the control planes).
pub fn first_worker(sim: &Sim) -> String {
    workers(sim).into_iter().next().expect("a worker node")
}

/// The worker nodes of `sim`, in name order.
pub fn workers(sim: &Sim) -> Vec<String> {
    let mut w: Vec<String> = sim
        .node_names()
        .into_iter()
        .filter(|n| n.starts_with("worker"))
        .collect();
    w.sort();
    w
}

/// A simulated cluster with a kube-rs client for it.
pub struct Cluster {
    pub sim: Sim,
    pub client: Client,
    pub dir: tempfile::TempDir,
}

/// `nodes` nodes (one control plane) of `layout` running Kubernetes `version`.
pub async fn cluster(nodes: usize, layout: Layout, version: &str) -> Cluster {
    let version = version.to_owned();
    let env = start_sim(nodes, layout, |cfg| cfg.kubernetes_version = version).await;
    let client = kube_client(&env.sim).await;
    Cluster {
        sim: env.sim,
        client,
        dir: env.dir,
    }
}

/// Sends SIGINT to a running child, as Ctrl-C in its terminal would.
pub fn sigint(child: &tokio::process::Child) {
    let pid = child.id().expect("the child is still running").to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(kill.success(), "kill -INT {pid}");
}

/// An interrupted run: [`act_at`] with SIGINT.
pub async fn interrupted(
    cmd: tokio::process::Command,
    at: impl Fn(&str) -> bool,
) -> (Option<i32>, String) {
    act_at(cmd, at, sigint).await
}

/// Spawns `cmd` with stderr piped, does `act` once a progress line on stderr satisfies `at`
/// (each line must come within 120 s: on the real tier, convert waits a minute and more for
/// yurt-manager's readiness probe without a line), reads stderr to its end and waits; returns the exit code
/// and everything printed on stderr (also echoed, for a failing test).
pub async fn act_at(
    mut cmd: tokio::process::Command,
    at: impl Fn(&str) -> bool,
    act: impl FnOnce(&tokio::process::Child),
) -> (Option<i32>, String) {
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("yurtctl starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no awaited line within 120 s:\n{seen}"))
            .unwrap()
            .unwrap_or_else(|| panic!("stderr ended early:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if at(&line) {
            break;
        }
    }
    act(&child);
    let rest = tokio::time::timeout(Duration::from_secs(300), async {
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            seen.push('\n');
        }
    })
    .await;
    assert!(rest.is_ok(), "still running 300 s after acting:\n{seen}");
    let status = child.wait().await.unwrap();
    eprintln!("--- run acted on:\n{seen}");
    (status.code(), seen)
}

/// kube-controller-manager's manifest after `disable-nodelifecycle`: the same lines but one,
/// the `--controllers` flag, which now holds `-nodelifecycle`.
pub fn assert_only_nodelifecycle_disabled(before: &str, after: &str) {
    let changed: Vec<_> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(before.lines().count(), after.lines().count(), "{after}");
    assert_eq!(changed.len(), 1, "only the --controllers line: {changed:?}");
    let flag = changed[0]
        .1
        .trim()
        .strip_prefix("- --controllers=")
        .unwrap_or_else(|| panic!("not the --controllers line: {changed:?}"));
    assert!(flag.split(',').any(|c| c == "-nodelifecycle"), "{flag}");
}

/// Waits until Lease `ns/name` exists: a run holds its lock (a racing run started after this
/// finds it held, whatever the machine's load).
pub async fn lease_taken(sim: &Sim, ns: &str, name: &str) {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: kube::Api<Lease> = kube::Api::namespaced(kube_client(sim).await, ns);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while leases.get_opt(name).await.ok().flatten().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no Lease {ns}/{name} after 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Lease `ns/name` is gone: the run that held it released its lock before it exited.
pub async fn lease_gone(sim: &Sim, ns: &str, name: &str) {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: kube::Api<Lease> = kube::Api::namespaced(kube_client(sim).await, ns);
    let lease = leases.get_opt(name).await.expect("read the Lease");
    assert!(lease.is_none(), "Lease {ns}/{name} still held: {lease:?}");
}

/// A kubeconfig for ServiceAccount `kube-system/NAME` that may only read (get, list, watch
/// everything): a yurtctl run under it that tried to write anything would be refused with 403,
/// so one that exits cleanly proves it wrote nothing.
pub async fn read_only_kubeconfig(sim: &Sim, dir: &std::path::Path, name: &str) -> PathBuf {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::api::{Api, PostParams};
    let client = kube_client(sim).await;
    let pp = PostParams::default();
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
    }))
    .unwrap();
    Api::<ClusterRole>::all(client.clone())
        .create(&pp, &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}]
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&pp, &binding)
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client, "kube-system");
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    accounts.create(&pp, &account).await.unwrap();
    let request = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": [], "expirationSeconds": 3600}
    });
    let token: TokenRequest = accounts
        .create_subresource("token", name, &pp, &request)
        .await
        .unwrap();
    let token = token.status.expect("a token").token;
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: {name}\nusers:\n- name: {name}\n  user:\n    token: {token}\n",
            sim.url()
        ),
    )
    .unwrap();
    path
}

/// The journal as yurtctl reads it (the run record with every node's phases from the shards),
/// as JSON: `state["nodes"][node][phase]["state"]`.
pub async fn journal_state(client: &Client) -> Option<serde_json::Value> {
    use yurtctl::cluster::{Cluster, RateLimiter, journal::JournalStore};
    let cluster = Cluster::new(client.clone(), RateLimiter::unlimited());
    let j = JournalStore::new(&cluster)
        .load()
        .await
        .expect("the journal reads")?;
    let mut state = serde_json::to_value(&j).unwrap();
    state["nodes"] = serde_json::to_value(&j.nodes).unwrap();
    Some(state)
}

/// `kubectl --kubeconfig KUBECONFIG ARGS…`'s output, failing the test when kubectl fails.
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs (Debian's kubernetes-client; .ci/run installs it)");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every pod created from now on (the node Jobs' too, which are deleted once they succeed), as
/// last seen; the watch has listed the pods already there when this returns.
pub async fn new_pods(
    client: &Client,
) -> (
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::Mutex<Vec<k8s_openapi::api::core::v1::Pod>>>,
) {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::Api;
    use kube::runtime::watcher::{self, Event};
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    let pods: Arc<Mutex<Vec<Pod>>> = Arc::default();
    let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
    let watch = {
        let pods = pods.clone();
        let api: Api<Pod> = Api::all(client.clone());
        tokio::spawn(async move {
            let mut initial = BTreeSet::new();
            let mut listed_tx = Some(listed_tx);
            let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(Ok(e)) = events.next().await {
                match e {
                    Event::InitApply(p) => {
                        initial.insert(p.metadata.uid.clone().unwrap_or_default());
                    }
                    Event::InitDone => {
                        if let Some(tx) = listed_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Event::Apply(p) | Event::Delete(p) => {
                        if !initial.contains(p.metadata.uid.as_deref().unwrap_or_default()) {
                            pods.lock().unwrap().push(p);
                        }
                    }
                    Event::Init => {}
                }
            }
        })
    };
    listed_rx.await.expect("the pod watch lists");
    (watch, pods)
}

/// A registry credential Secret (`kubectl create secret docker-registry NAME -n NS`).
pub async fn create_registry_secret(client: &Client, ns: &str, name: &str) {
    use k8s_openapi::api::core::v1::Secret;
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": ns},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": "{\"auths\":{\"registry.example.com\":{\"auth\":\"dTpw\"}}}"},
    }))
    .unwrap();
    kube::api::Api::<Secret>::namespaced(client.clone(), ns)
        .create(&Default::default(), &secret)
        .await
        .unwrap();
}
