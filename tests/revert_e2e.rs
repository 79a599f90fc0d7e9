//! `yurtctl revert` end to end: for every layout on yurtsim, convert → re-run (no-op) → revert
//! → every node's root file tree byte-identical to the original, nothing of yurtctl's left in
//! the cluster; and revert after a failed node Job, after Ctrl-C during convert, run twice, and
//! with an object that existed before convert. The scenarios that need none of yurtsim's fault
//! controls run on the real tier (`start_real`).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, ServiceAccount};
use kube::Client;
use kube::api::{Api, PostParams};
use kube::core::GroupVersionKind;
use serde_json::Value;
use yurtctl::cluster::snapshot::{SnapshotOptions, snapshot};
use yurtsim::{Layout, Sim};

const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
const AUTONOMY: &str = "node.openyurt.io/autonomy-duration";
/// The legacy-v0.6 profile's autonomy annotation.
const LEGACY_AUTONOMY: &str = "node.beta.openyurt.io/autonomy";
const HUB_SERVER: &str = "http://127.0.0.1:10261";
const KCM: &str = "etc/kubernetes/manifests/kube-controller-manager.yaml";

struct Env {
    sim: Sim,
    client: Client,
    _dir: tempfile::TempDir,
}

async fn start(layout: Layout) -> Env {
    start_at(layout, "v1.33.1").await
}

async fn start_at(layout: Layout, version: &str) -> Env {
    let version = version.to_owned();
    let env = support::start_sim(3, layout, |cfg| cfg.kubernetes_version = version).await;
    let client = support::kube_client(&env.sim).await;
    Env {
        sim: env.sim,
        client,
        _dir: env.dir,
    }
}

/// Three nodes on the real tier (tests/real): the real control plane and OpenYurt v1.7.0's own
/// yurt-manager and YurtHub. The scenarios that need none of yurtsim's fault controls run here.
async fn start_real() -> Env {
    let env = support::real::env(3).await;
    Env {
        sim: env.sim,
        client: env.client,
        _dir: env.dir,
    }
}

use support::Run;
use support::roots::{all_ready, assert_same_trees, trees};

fn command(env: &Env, cmd: &str) -> tokio::process::Command {
    command_as(cmd, &env.sim.kubeconfig_path())
}

/// [`command`] with another identity's kubeconfig. 60 s timeouts hold on the real tier too:
/// convert's wait for yurt-manager starts after its readiness probe's minute.
fn command_as(cmd: &str, kubeconfig: &std::path::Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"));
    c.arg(cmd)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(std::process::Stdio::null())
        .env_remove("KUBECONFIG");
    if cmd == "convert" {
        c.args(["--servant-image", "openyurt/yurtctl:test"]);
    }
    if cmd != "status" {
        c.args(["--job-timeout", "60s"]);
    }
    c
}

async fn yurtctl(env: &Env, cmd: &str, args: &[&str]) -> Run {
    let mut c = command(env, cmd);
    c.args(args);
    support::run(c, &format!("{cmd} {args:?}")).await
}

fn result_of<'a>(v: &'a Value, node: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap_or_else(|| panic!("{node} not in the result: {v:#}"))
}

/// Node → role ("edge", "cloud") from a run's `-o json` result.
fn roles_of(result: &Value) -> BTreeMap<String, String> {
    result["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_owned(),
                n["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Nothing of yurtctl's left: no object labelled managed-by=yurtctl (built-in kinds, CRDs,
/// webhooks), no journal, no lock, no Job, no label or annotation of ours on any node.
async fn assert_clean(env: &Env) {
    let cluster = support::yurtctl_cluster(&env.sim).await;
    let mut opts = SnapshotOptions::default();
    for (g, v, k) in [
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
    ] {
        opts.managed_kinds.push(GroupVersionKind::gvk(g, v, k));
    }
    let snap = snapshot(&cluster, &opts).await.unwrap();
    assert!(
        snap.managed_objects.is_empty(),
        "objects of ours left: {:#?}",
        snap.managed_objects
    );
    assert!(snap.journal.is_none(), "the journal is deleted");
    assert!(snap.lock.is_none(), "the lock is released");
    assert!(snap.jobs.is_empty(), "Jobs left: {:?}", snap.jobs);
    for n in Api::<Node>::all(env.client.clone())
        .list(&Default::default())
        .await
        .unwrap()
    {
        let labels = n.metadata.labels.clone().unwrap_or_default();
        let annotations = n.metadata.annotations.clone().unwrap_or_default();
        assert!(!labels.contains_key(EDGE_LABEL), "{:?}", n.metadata.name);
        for a in [AUTONOMY, LEGACY_AUTONOMY] {
            assert!(!annotations.contains_key(a), "{:?}", n.metadata.name);
        }
        let mf = serde_json::to_string(&n.metadata.managed_fields).unwrap();
        assert!(
            !mf.contains("\"manager\":\"yurtctl\""),
            "yurtctl still owns fields of {:?}: {mf}",
            n.metadata.name
        );
    }
}

/// One profile's expectations for the round trip.
struct Profile {
    /// `--profile` (None: the default, openyurt-v1.7).
    name: Option<&'static str>,
    /// A Kubernetes version the profile supports.
    kubernetes: &'static str,
    /// The autonomy annotation on edge nodes and its value.
    autonomy: (&'static str, &'static str),
    /// Convert edits kube-controller-manager's `--controllers` (nodelifecycle disabled).
    kcm_edited: bool,
    /// The Secret with YurtHub's bootstrap file (openyurt-v1.6 and v1.7).
    bootstrap_secret: Option<&'static str>,
}

const DEFAULT: Profile = Profile {
    name: None,
    kubernetes: "v1.33.1",
    autonomy: (AUTONOMY, "0"),
    kcm_edited: false,
    bootstrap_secret: Some("Secret kube-system/yurtctl-yurthub-bootstrap"),
};

const V16: Profile = Profile {
    name: Some("openyurt-v1.6"),
    kubernetes: "v1.30.4",
    autonomy: (AUTONOMY, "0"),
    kcm_edited: false,
    bootstrap_secret: Some("Secret kube-system/yurtctl-yurthub-bootstrap"),
};

const LEGACY: Profile = Profile {
    name: Some("legacy-v0.6"),
    kubernetes: "v1.20.15",
    autonomy: (LEGACY_AUTONOMY, "true"),
    kcm_edited: true,
    bootstrap_secret: None,
};

/// Every node Ready with its kubelet talking through YurtHub (the sim's annotation), the
/// edge-worker label and the autonomy annotation as the profile wants.
async fn assert_converted(env: &Env, roles: &BTreeMap<String, String>, profile: &Profile) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for (name, role) in roles {
        loop {
            let n = Api::<Node>::all(env.client.clone())
                .get(name)
                .await
                .unwrap();
            let ready = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            let annotations = n.metadata.annotations.clone().unwrap_or_default();
            let server = annotations.get("yurtsim.openyurt.io/kubelet-server");
            if ready && server.map(String::as_str) == Some(HUB_SERVER) {
                let labels = n.metadata.labels.clone().unwrap_or_default();
                let edge = role == "edge";
                let want = if edge { "true" } else { "false" };
                assert_eq!(
                    labels.get(EDGE_LABEL).map(String::as_str),
                    Some(want),
                    "{name}"
                );
                let (key, value) = profile.autonomy;
                let want = edge.then_some(value);
                assert_eq!(annotations.get(key).map(String::as_str), want, "{name}");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name} not Ready through YurtHub: {annotations:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The components convert deployed really started (the sim runs models of their binaries):
/// `status` shows every node converted, Ready and its YurtHub ready; every Deployment of
/// yurtctl's is available (yurt-manager, or yurt-controller-manager); every certificate request
/// (YurtHub's client and serving certificates) is approved and issued by the running approver;
/// and with YurtStaticSets, `kubectl get yurtstaticsets` shows TOTAL = READY = UPGRADED.
async fn assert_components_started(env: &Env, roles: &BTreeMap<String, String>) {
    let status = yurtctl(env, "status", &["-o", "json"]).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    let s = status.json();
    assert_eq!(s["converted"], true, "{s:#}");
    for n in s["nodes"].as_array().unwrap() {
        let hub = n["yurthubReady"] == true || n["yurthubService"] == true;
        assert!(n["converted"] == true && n["ready"] == true && hub, "{n:#}");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), "kube-system");
    let ours = kube::api::ListParams::default().labels("app.kubernetes.io/managed-by=yurtctl");
    loop {
        let list = deployments.list(&ours).await.unwrap().items;
        assert!(!list.is_empty(), "convert deploys a controller");
        let unavailable: Vec<String> = list
            .iter()
            .filter(|d| {
                d.status
                    .as_ref()
                    .and_then(|s| s.available_replicas)
                    .unwrap_or(0)
                    < 1
            })
            .map(|d| d.metadata.name.clone().unwrap_or_default())
            .collect();
        if unavailable.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not available: {unavailable:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let csr = kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
    ));
    let csrs: Api<kube::core::DynamicObject> = Api::all_with(env.client.clone(), &csr);
    let csrs = csrs.list(&Default::default()).await.unwrap().items;
    assert!(
        csrs.len() >= roles.len(),
        "a client certificate per node's YurtHub"
    );
    for c in &csrs {
        let approved = c.data["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Approved"));
        let issued = c.data["status"]["certificate"]
            .as_str()
            .is_some_and(|x| !x.is_empty());
        assert!(
            approved && issued,
            "{:?} not approved and issued",
            c.metadata.name
        );
    }
    let yss = kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apps.openyurt.io",
        "v1alpha1",
        "YurtStaticSet",
    ));
    let sets: Api<kube::core::DynamicObject> =
        Api::namespaced_with(env.client.clone(), "kube-system", &yss);
    for (name, role) in [("yurt-hub", "edge"), ("yurt-hub-cloud", "cloud")] {
        let Ok(set) = sets.get(name).await else {
            continue; // a profile without YurtStaticSets
        };
        let nodes = roles.values().filter(|r| *r == role).count() as u64;
        let counts = |o: &kube::core::DynamicObject| {
            ["totalNumber", "readyNumber", "upgradedNumber"]
                .map(|k| o.data["status"][k].as_u64().unwrap_or(0))
        };
        let mut seen = counts(&set);
        while seen != [nodes; 3] {
            assert!(
                tokio::time::Instant::now() < deadline,
                "YurtStaticSet {name}: TOTAL/READY/UPGRADED {seen:?}, want {nodes} each"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            seen = counts(&sets.get(name).await.unwrap());
        }
    }
}

/// The cluster as `revert --dry-run=server` must leave it: what yurtctl created (by kind and
/// name), the journal's resourceVersion, the lock, every node's labels and annotations, and
/// the Jobs.
async fn cluster_state(env: &Env) -> (Vec<String>, Vec<String>, usize) {
    let cluster = support::yurtctl_cluster(&env.sim).await;
    let snap = snapshot(&cluster, &SnapshotOptions::default())
        .await
        .unwrap();
    let mut objects: Vec<String> = snap
        .managed_objects
        .iter()
        .map(|o| format!("{o:?}"))
        .collect();
    objects.sort();
    // the journal unchanged (same resourceVersion), the lock not taken
    objects.push(format!(
        "journal at {:?}, lock {:?}",
        snap.journal.as_ref().map(|j| j.resource_version.clone()),
        snap.lock.as_ref().map(|l| l.identity.clone())
    ));
    let nodes = Api::<Node>::all(env.client.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| {
            let mut a = n.metadata.annotations.clone().unwrap_or_default();
            // the sim's kubelets heartbeat into these; not ours
            a.retain(|k, _| !k.starts_with("yurtsim.openyurt.io/"));
            format!("{:?} {:?} {a:?}", n.metadata.name, n.metadata.labels)
        })
        .collect();
    let jobs =
        Api::<k8s_openapi::api::batch::v1::Job>::namespaced(env.client.clone(), "kube-system")
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len();
    (objects, nodes, jobs)
}

/// `revert --dry-run=server` after a convert: the plan plus the server's answer to every
/// write (Jobs, deletes, the node apply, journal and lock), with nothing stored.
async fn server_dry_run_stores_nothing(env: &Env, plan: &Value, profile: &Profile) {
    let state = cluster_state(env).await;
    let m = env.sim.metrics();
    let deletes = |m: &yurtsim::faults::Metrics| -> u64 {
        [
            "deployments.apps",
            "configmaps",
            "leases.coordination.k8s.io",
            "secrets",
        ]
        .iter()
        .map(|r| m.count("delete", r))
        .sum()
    };
    let (jobs, patches, before) = (
        m.count("create", "jobs.batch"),
        m.count("patch", "nodes"),
        deletes(m),
    );
    let dry = yurtctl(env, "revert", &["--dry-run=server", "-o", "json"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let p = dry.json();
    assert_eq!(p["kind"], "Plan");
    let writes = p["serverDryRun"].as_array().unwrap();
    let rows = |verb: &str, prefix: &str| {
        writes
            .iter()
            .filter(|w| w["verb"] == verb && w["object"].as_str().unwrap().starts_with(prefix))
            .count()
    };
    let nodes = env.sim.node_names().len();
    let kcm = usize::from(profile.kcm_edited);
    assert_eq!(
        rows("create", "Job kube-system/"),
        nodes + kcm,
        "{writes:#?}"
    );
    assert_eq!(rows("create", "Lease kube-system/yurtctl-lock"), 1);
    assert_eq!(rows("delete", "Lease kube-system/yurtctl-lock"), 1);
    assert_eq!(rows("update", "ConfigMap kube-system/yurtctl-state"), 1);
    // the journal: its node shards, then its run record
    assert_eq!(
        rows("delete", "ConfigMap kube-system/yurtctl-state-nodes-"),
        1
    );
    assert_eq!(rows("delete", "ConfigMap kube-system/yurtctl-state"), 2);
    assert_eq!(rows("patch", "Node "), nodes, "{writes:#?}");
    // a delete of every object convert created, in the plan's order
    let objects: Vec<String> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let ns = o["namespace"]
                .as_str()
                .map(|n| format!("{n}/"))
                .unwrap_or_default();
            format!(
                "{} {ns}{}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    let deleted: Vec<String> = writes
        .iter()
        .filter(|w| w["verb"] == "delete")
        .map(|w| w["object"].as_str().unwrap().to_owned())
        .filter(|o| objects.contains(o))
        .collect();
    assert_eq!(deleted, objects, "{writes:#?}");
    for w in writes {
        // yurt-manager's NodePool webhook refuses to delete a pool with nodes; the real run
        // deletes that webhook's configuration first, so the dry run cannot check these
        let want = if w["object"].as_str().unwrap().starts_with("NodePool ") {
            assert!(
                w["message"]
                    .as_str()
                    .unwrap()
                    .ends_with("but revert deletes its ValidatingWebhookConfiguration yurt-manager-validating-webhook-configuration before this object"),
                "{w}"
            );
            "unchecked"
        } else {
            "accepted"
        };
        assert_eq!(w["result"], want, "{w}");
    }
    // every one reached the server, with dryRun=All: nothing was stored
    assert_eq!(m.count("create", "jobs.batch"), jobs + (nodes + kcm) as u64);
    assert_eq!(m.count("patch", "nodes"), patches + nodes as u64);
    assert!(deletes(m) > before);
    assert_eq!(
        cluster_state(env).await,
        state,
        "a server dry run stores nothing"
    );

    let text = yurtctl(env, "revert", &["--dry-run=server"]).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains(&format!(
            "server dry run: {0} of {0} writes accepted (dryRun=All: nothing was stored)",
            writes.len()
        )),
        "{}",
        text.stdout
    );

    // a write the server refuses: exit 3 naming it, still nothing stored
    env.sim.faults().deny("delete", "deployments.apps");
    let refused = yurtctl(env, "revert", &["--dry-run=server", "-o", "json"]).await;
    env.sim.faults().clear();
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    let r = refused.json();
    let no: Vec<&Value> = r["serverDryRun"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["result"] == "refused")
        .collect();
    assert!(!no.is_empty());
    for w in &no {
        assert!(
            w["object"].as_str().unwrap().starts_with("Deployment "),
            "{w}"
        );
        assert!(
            refused.stderr.contains(&format!(
                "error: [preflight] the API server would refuse delete {}",
                w["object"].as_str().unwrap()
            )),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(cluster_state(env).await, state);
}

/// convert → every node converted as the profile wants and the components really started
/// (`status`, available controllers, issued certificates, reconciled YurtStaticSets) → re-run is a no-op →
/// `revert --dry-run=client|server` change nothing → revert → every node's root byte-identical,
/// nothing of yurtctl's left → a second revert finds nothing.
async fn round_trip(layout: Layout, profile: Profile) {
    let env = start_at(layout, profile.kubernetes).await;
    let before = trees(&env.sim);
    // the control-plane node: the one with a kube-controller-manager static pod
    let cp = env
        .sim
        .node_names()
        .iter()
        .map(|n| env.sim.node_root(n))
        .find(|r| r.join(KCM).exists())
        .expect("a control-plane node");
    let kcm_before = std::fs::read(cp.join(KCM)).unwrap();
    let mut convert_args = vec!["-y"];
    if let Some(p) = profile.name {
        convert_args.extend(["--profile", p]);
    }

    let dry = yurtctl(&env, "revert", &["--dry-run=client"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let nothing = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(nothing.code, 0, "{}", nothing.stderr);
    assert!(
        nothing.stderr.contains("nothing to revert"),
        "{}",
        nothing.stderr
    );

    let run = yurtctl(
        &env,
        "convert",
        &[convert_args.as_slice(), &["-o", "json"]].concat(),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let c = run.json();
    for n in c["nodes"].as_array().unwrap() {
        assert_eq!(n["result"], "converted", "{c:#}");
    }
    let roles = roles_of(&c);
    assert_eq!(roles.len(), env.sim.node_names().len(), "{c:#}");
    assert_eq!(roles.values().filter(|r| *r == "cloud").count(), 1, "{c:#}");
    assert_converted(&env, &roles, &profile).await;
    assert_components_started(&env, &roles).await;
    // kube-controller-manager: edited exactly when the profile says so
    let kcm_after = std::fs::read_to_string(cp.join(KCM)).unwrap();
    if profile.kcm_edited {
        let kcm_before = String::from_utf8(kcm_before.clone()).unwrap();
        support::assert_only_nodelifecycle_disabled(&kcm_before, &kcm_after);
    } else {
        assert_eq!(
            kcm_after.as_bytes(),
            kcm_before,
            "kube-controller-manager untouched"
        );
    }

    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");
    let again = yurtctl(&env, "convert", &convert_args).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already converted"),
        "{}",
        again.stderr
    );
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs,
        "no-op"
    );
    assert_eq!(std::fs::read_to_string(cp.join(KCM)).unwrap(), kcm_after);
    assert_ne!(trees(&env.sim), before, "convert changed the nodes");

    // the dry run prints the plan and changes nothing
    let plan = yurtctl(&env, "revert", &["--dry-run=client", "-o", "json"]).await;
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let p = plan.json();
    assert_eq!(p["kind"], "Plan");
    assert_eq!(p["nodes"].as_array().unwrap().len(), 3, "{p:#}");
    assert!(!p["objects"].as_array().unwrap().is_empty());
    assert_eq!(env.sim.requests("yurtctl", "create", "jobs.batch"), jobs);
    server_dry_run_stores_nothing(&env, &p, &profile).await;
    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");

    let refused = yurtctl(&env, "revert", &[]).await;
    assert_eq!(refused.code, 10, "no terminal, no -y: {}", refused.stderr);

    let m = env.sim.metrics();
    let (requests, writes) = (m.total(None, false), m.total(None, true));
    let rev = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    // shown with --nocapture: the cost of a revert (nothing else talks to the sim meanwhile)
    println!(
        "measure: revert of {} nodes on {layout:?} ({}): {} API requests, {} writes",
        env.sim.node_names().len(),
        profile.name.unwrap_or("default profile"),
        m.total(None, false) - requests,
        m.total(None, true) - writes
    );
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs + env.sim.node_names().len() as u64 + u64::from(profile.kcm_edited),
        "one revert Job per node (and one re-enabling nodelifecycle where it was disabled)"
    );
    let r = rev.json();
    assert_eq!(r["kind"], "RevertResult");
    assert_eq!(r["apiVersion"], "yurtctl.openyurt.io/v1alpha1");
    assert_eq!(r["complete"], true);
    for n in env.sim.node_names() {
        assert_eq!(result_of(&r, &n)["result"], "reverted", "{r:#}");
    }
    let deleted = r["deletedObjects"].as_array().unwrap();
    if let Some(secret) = profile.bootstrap_secret {
        assert!(deleted.iter().any(|o| o == secret), "{r:#}");
    }
    assert!(
        deleted.iter().any(|o| o
            .as_str()
            .unwrap()
            .starts_with("Secret kube-system/bootstrap-token-")),
        "{r:#}"
    );
    all_ready(&env.client).await;
    assert_eq!(
        std::fs::read(cp.join(KCM)).unwrap(),
        kcm_before,
        "kube-controller-manager byte-identical after revert"
    );
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;

    // a second revert finds nothing and changes nothing
    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");
    let twice = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("nothing to revert"),
        "{}",
        twice.stderr
    );
    assert_eq!(env.sim.requests("yurtctl", "create", "jobs.batch"), jobs);
    assert_same_trees(&before, &trees(&env.sim));
    env.sim.shutdown().await;
}

/// Every profile on every layout: one test per case, so cargo runs them concurrently.
macro_rules! round_trips {
    ($($name:ident: $layout:expr, $profile:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $name() {
            round_trip($layout, $profile).await;
        }
    )*};
}

round_trips! {
    round_trip_kubeadm: Layout::Kubeadm, DEFAULT;
    round_trip_kubeadm_usr: Layout::KubeadmUsr, DEFAULT;
    round_trip_kind: Layout::Kind, DEFAULT;
    round_trip_minikube: Layout::Minikube, DEFAULT;
    round_trip_v16_kubeadm: Layout::Kubeadm, V16;
    round_trip_v16_kubeadm_usr: Layout::KubeadmUsr, V16;
    round_trip_v16_kind: Layout::Kind, V16;
    round_trip_v16_minikube: Layout::Minikube, V16;
    round_trip_legacy_kubeadm: Layout::Kubeadm, LEGACY;
    round_trip_legacy_kubeadm_usr: Layout::KubeadmUsr, LEGACY;
    round_trip_legacy_kind: Layout::Kind, LEGACY;
    round_trip_legacy_minikube: Layout::Minikube, LEGACY;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn revert_after_a_failed_node_job_and_a_failed_revert_job() {
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    env.sim
        .faults()
        .fail_jobs_named("worker-2", &["yurtctl-convert-", "yurtctl-revert-"], 1);
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 4, "{}", run.stderr);

    // worker-2's revert Job fails too: exit 4 with its log, components and journal kept
    let rev = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(rev.code, 4, "{}", rev.stderr);
    assert!(
        rev.stderr.contains("injected failure on node worker-2"),
        "{}",
        rev.stderr
    );
    let r = rev.json();
    assert_eq!(result_of(&r, "worker-2")["result"], "failed", "{r:#}");
    assert!(result_of(&r, "worker-2")["logs"].is_string(), "{r:#}");
    assert_eq!(result_of(&r, "worker-1")["result"], "reverted", "{r:#}");
    assert_eq!(r["complete"], false);
    Api::<Deployment>::namespaced(env.client.clone(), "kube-system")
        .get("yurt-manager")
        .await
        .expect("components are kept while a node is not reverted");
    let state = support::journal_state(&env.client)
        .await
        .expect("the journal is kept");
    assert_eq!(
        state["nodes"]["worker-2"]["revert"]["state"], "failed",
        "{state:#}"
    );
    assert_eq!(
        state["nodes"]["worker-1"]["revert"]["state"], "done",
        "{state:#}"
    );

    // once the fault is gone the next revert finishes: worker-1 is not reverted again
    env.sim.faults().clear_failing_jobs("worker-2");
    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");
    let again = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(result_of(&r, "worker-2")["result"], "reverted", "{r:#}");
    assert_eq!(
        result_of(&r, "worker-1")["result"],
        "already-reverted",
        "{r:#}"
    );
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs + 1,
        "one Job, for worker-2"
    );
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

/// Runs `convert -y`, sends SIGINT once a stderr line satisfies `at`; returns the exit code.
async fn interrupted_convert(env: &Env, at: impl Fn(&str) -> bool) -> Option<i32> {
    let mut cmd = command(env, "convert");
    cmd.arg("-y");
    support::interrupted(cmd, at).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn revert_after_sigint_during_convert() {
    let env = start_real().await;
    let before = trees(&env.sim);
    let code = interrupted_convert(&env, |l| {
        l.contains("[nodes/edge]") && l.ends_with("): created")
    })
    .await;
    assert_eq!(code, Some(130));

    // the server dry run checks the deletes of the Jobs the interrupted convert left, and
    // leaves them where they are
    let jobs =
        Api::<k8s_openapi::api::batch::v1::Job>::namespaced(env.client.clone(), "kube-system");
    let left = jobs.list(&Default::default()).await.unwrap().items.len();
    let dry = yurtctl(&env, "revert", &["--dry-run=server", "-o", "json"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let p = dry.json();
    let leftover = p["leftoverJobs"].as_array().unwrap();
    assert!(!leftover.is_empty(), "{p:#}");
    for j in leftover {
        let object = format!("Job kube-system/{}", j.as_str().unwrap());
        let row = p["serverDryRun"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["verb"] == "delete" && w["object"] == object.as_str())
            .unwrap_or_else(|| panic!("no delete of {object}: {p:#}"));
        assert_eq!(row["result"], "accepted", "{row}");
    }
    assert_eq!(
        jobs.list(&Default::default()).await.unwrap().items.len(),
        left
    );

    let rev = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigint_during_revert_then_revert_again_finishes() {
    let env = start_real().await;
    let before = trees(&env.sim);
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let mut cmd = command(&env, "revert");
    cmd.arg("-y");
    let (code, seen) = support::interrupted(cmd, |l| {
        l.contains("[nodes/edge]") && l.ends_with("): created")
    })
    .await;
    assert_eq!(code, Some(130), "{seen}");
    Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system")
        .get("yurtctl-state")
        .await
        .expect("the journal is kept after an interrupted revert");

    // it resumes: the cloud node reverted before the interrupt is not reverted again
    let again = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(
        result_of(&r, "control-plane-1")["result"],
        "already-reverted",
        "{r:#}"
    );
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_object_that_existed_before_convert_survives_revert() {
    let env = start(Layout::Kubeadm).await;
    let sas = Api::<ServiceAccount>::namespaced(env.client.clone(), "kube-system");
    let mine: ServiceAccount = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "yurt-manager-csr-approver-controller", "labels": {"team": "ops"}}
    }))
    .unwrap();
    sas.create(&PostParams::default(), &mine).await.unwrap();

    // two converts that both apply the components (the first one fails on a node): the
    // second sees the object with our label on it and must still know it is not ours
    env.sim
        .faults()
        .fail_jobs_named("worker-2", &["yurtctl-convert-"], 1);
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    env.sim.faults().clear_failing_jobs("worker-2");
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let status = yurtctl(&env, "status", &["-o", "json"]).await;
    let s = status.json();
    let named = |list: &str| {
        s[list].as_array().unwrap().iter().any(|o| {
            o["kind"] == "ServiceAccount" && o["name"] == "yurt-manager-csr-approver-controller"
        })
    };
    assert!(named("adoptedObjects"), "{s:#}");
    assert!(!named("createdObjects"), "{s:#}");

    let rev = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    let kept = sas
        .get("yurt-manager-csr-approver-controller")
        .await
        .expect("the pre-existing ServiceAccount survives");
    let labels = kept.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("ops"));
    assert!(
        !labels.contains_key("app.kubernetes.io/managed-by"),
        "yurtctl's label is given up: {labels:?}"
    );
    // its siblings that convert created are gone
    assert!(sas.get_opt("yurt-manager").await.unwrap().is_none());
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn revert_of_selected_nodes_keeps_the_components() {
    let env = start_real().await;
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rev = yurtctl(&env, "revert", &["--nodes", "worker-1", "-y", "-o", "json"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    let r = rev.json();
    assert_eq!(r["nodes"].as_array().unwrap().len(), 1, "{r:#}");
    assert_eq!(result_of(&r, "worker-1")["result"], "reverted");
    assert_eq!(r["complete"], false);
    Api::<Deployment>::namespaced(env.client.clone(), "kube-system")
        .get("yurt-manager")
        .await
        .expect("components stay");
    let w1 = Api::<Node>::all(env.client.clone())
        .get("worker-1")
        .await
        .unwrap();
    assert!(
        !w1.metadata
            .labels
            .unwrap_or_default()
            .contains_key(EDGE_LABEL)
    );
    let w2 = Api::<Node>::all(env.client.clone())
        .get("worker-2")
        .await
        .unwrap();
    assert_eq!(
        w2.metadata
            .labels
            .unwrap_or_default()
            .get(EDGE_LABEL)
            .map(String::as_str),
        Some("true")
    );
    let missing = yurtctl(&env, "revert", &["--nodes", "ghost", "-y"]).await;
    assert_eq!(missing.code, 3, "{}", missing.stderr);

    // the rest later: the worker reverted first (its label gone) is still shown as an edge node
    let rest = yurtctl(&env, "revert", &["-y", "-o", "json"]).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    let w1 = result_of(&r, "worker-1");
    assert_eq!(
        (w1["role"].as_str(), w1["result"].as_str()),
        (Some("edge"), Some("already-reverted")),
        "{r:#}"
    );
    assert_eq!(result_of(&r, "worker-2")["role"], "edge", "{r:#}");
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[test]
fn revert_help() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yurtctl"))
        .args(["revert", "--help"])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!("revert_help", String::from_utf8_lossy(&out.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn missing_permissions_fail_preflight_with_nothing_changed() {
    let env = start(Layout::Kubeadm).await;
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");
    env.sim.faults().deny("delete", "deployments.apps");
    env.sim
        .faults()
        .deny("delete", "customresourcedefinitions.apiextensions.k8s.io");
    let rev = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(rev.code, 3, "{}", rev.stderr);
    assert!(rev.stderr.contains("[preflight]"), "{}", rev.stderr);
    for denied in [
        "not allowed to delete deployments.apps in kube-system",
        "not allowed to delete customresourcedefinitions.apiextensions.k8s.io",
    ] {
        assert!(rev.stderr.contains(denied), "{denied}: {}", rev.stderr);
    }
    assert_eq!(
        env.sim.requests("yurtctl", "create", "jobs.batch"),
        jobs,
        "no Job"
    );
    let w1 = Api::<Node>::all(env.client.clone())
        .get("worker-1")
        .await
        .unwrap();
    assert!(
        w1.metadata
            .labels
            .unwrap_or_default()
            .contains_key(EDGE_LABEL)
    );
    env.sim.shutdown().await;
}

/// Where the journal records nodelifecycle disabled (what the legacy profile does on
/// control-plane nodes), revert's `kcm` phase re-enables it with a node Job.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kcm_phase_re_enables_nodelifecycle_where_the_journal_says() {
    use yurtctl::cluster::journal::{JournalStore, PhaseState};
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    // stand-in for a legacy convert's kcm phase (it runs before the node phases, so its
    // record owns the backup directory): the servant edit now, its journal entry below
    let cp = env.sim.node_root("control-plane-1");
    let changes = yurtctl::servant::disable_nodelifecycle(&cp).unwrap();
    assert!(!changes.is_empty());
    yurtctl::servant::apply(&cp, &changes).unwrap();
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cluster = support::yurtctl_cluster(&env.sim).await;
    let store = JournalStore::new(&cluster);
    let mut j = store.load().await.unwrap().unwrap();
    j.set_phase("control-plane-1", "kcm", PhaseState::Done, None);
    store.save(&mut j).await.unwrap();

    let plan = yurtctl(&env, "revert", &["--dry-run=client"]).await;
    assert!(
        plan.stdout
            .contains("Job yurtctl-enable-nodelifecycle-control-plane-1"),
        "{}",
        plan.stdout
    );
    let rev = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    assert!(
        rev.stderr
            .contains("[kcm] node control-plane-1 (Job yurtctl-enable-nodelifecycle-control-plane-1): succeeded"),
        "{}",
        rev.stderr
    );
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transient_api_errors_and_conflicts_still_revert_everything() {
    use yurtsim::faults::RequestFault;
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let faults = [
        ("delete", "clusterroles.rbac.authorization.k8s.io", 2, 500),
        (
            "delete",
            "customresourcedefinitions.apiextensions.k8s.io",
            1,
            503,
        ),
        ("deletecollection", "jobs.batch", 1, 500),
        ("patch", "nodes", 2, 500),
        ("create", "jobs.batch", 1, 500),
        ("update", "configmaps", 1, 409),
    ];
    for (verb, resource, count, status) in faults {
        env.sim
            .faults()
            .add(RequestFault::fail(verb, resource, count, status));
    }
    let rev = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(rev.code, 0, "{}", rev.stderr);
    for (verb, resource, _, _) in faults {
        let (group, res) = match resource.split_once('.') {
            Some((r, g)) => (g, r),
            None => ("", resource),
        };
        assert!(
            matches!(
                env.sim.faults().decide(verb, group, res, None),
                yurtsim::faults::Decision::Pass
            ),
            "fault {verb} {resource} was not reached"
        );
    }
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

/// Cost at a larger size (ignored by default; run with
/// `cargo test --test revert_e2e revert_cost_at_scale -- --ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn revert_cost_at_scale() {
    let nodes = std::env::var("REVERT_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60usize);
    let env = support::start_sim(nodes, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.30.2".into()
    })
    .await;
    let client = support::kube_client(&env.sim).await;
    let env = Env {
        sim: env.sim,
        client,
        _dir: env.dir,
    };
    let before = trees(&env.sim);
    let run = yurtctl(
        &env,
        "convert",
        &["-y", "--concurrency", "20", "--qps", "0"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m = env.sim.metrics();
    let (requests, writes) = (m.total(None, false), m.total(None, true));
    let started = std::time::Instant::now();
    let mut child = command(&env, "revert")
        .args(["-y", "--concurrency", "20", "--qps", "0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            // phase boundaries with their time, for where the makespan goes
            if l.starts_with('[') && !l.contains("node ") && !l.contains("deleted ") {
                println!("{:>6.2}s {l}", started.elapsed().as_secs_f64());
            }
        }
    }
    let code = child.wait().await.unwrap().code();
    let took = started.elapsed();
    assert_eq!(code, Some(0));
    let (r, w) = (
        m.total(None, false) - requests,
        m.total(None, true) - writes,
    );
    println!(
        "measure: revert of {nodes} nodes (--concurrency 20): {:.1}s, {r} API requests ({:.1}/node), {w} writes",
        took.as_secs_f64(),
        r as f64 / nodes as f64
    );
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert_clean(&env).await;
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_lock_exits_6_naming_the_holder_and_changes_nothing() {
    use yurtctl::cluster::lock::{LockOptions, acquire};
    use yurtctl::cluster::{Cluster, RateLimiter};
    let env = start_real().await;
    let run = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after_convert = trees(&env.sim);
    let other = Cluster::new(env.client.clone(), RateLimiter::unlimited());
    let guard = acquire(
        &other,
        LockOptions {
            identity: "bob@ops-laptop/7#feedbeef".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let jobs = env.sim.requests("yurtctl", "create", "jobs.batch");
    let rev = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(rev.code, 6, "{}", rev.stderr);
    assert!(rev.stderr.contains("bob@ops-laptop"), "{}", rev.stderr);
    assert!(rev.stderr.contains("[lock]"), "{}", rev.stderr);
    assert_eq!(env.sim.requests("yurtctl", "create", "jobs.batch"), jobs);
    assert_same_trees(&after_convert, &trees(&env.sim));
    guard.release().await.unwrap();
    env.sim.shutdown().await;
}

/// Offsets in [lo, hi) of `span`, from a seeded xorshift (reproducible; the seed is printed
/// and `YURTCTL_RACE_SEED` replays another).
struct Offsets(u64);

impl Offsets {
    fn seeded() -> Self {
        let seed = std::env::var("YURTCTL_RACE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_1a7e_u64);
        eprintln!("race offsets: YURTCTL_RACE_SEED={seed}");
        Offsets(seed.max(1))
    }

    fn next(&mut self, span: Duration, lo: f64, hi: f64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 % 10_000) as f64 / 10_000.0;
        span.mul_f64(lo + (hi - lo) * unit)
    }
}

/// Runs `holder` (admin) and, `offset` after it took the lock, `racer` as a read-only identity:
/// the racer must exit 6 naming the holder's command (a write of it would have been refused),
/// and the holder must finish. Returns the holder's run.
///
/// Until the racer has its answer, the holder's release of the lock is delayed (a fault delay on
/// its Lease delete), so a holder that finishes sooner than the run it was timed by still holds
/// the lock when the racer asks: the race is always a race.
async fn race(
    env: &Env,
    reader: &std::path::Path,
    holder: &str,
    racer: &str,
    offset: Duration,
) -> Run {
    eprintln!("--- {racer} {offset:?} into a {holder}");
    let mut hold =
        yurtsim::faults::RequestFault::fail("delete", "leases.coordination.k8s.io", 1, 0);
    hold.delay_ms = (offset + Duration::from_secs(3)).as_millis() as u64;
    env.sim.faults().add(hold);
    let mut first = command(env, holder);
    first.args(["-y", "-o", "json"]);
    let first = first
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::lease_taken(&env.sim, "kube-system", "yurtctl-lock").await;
    tokio::time::sleep(offset).await;
    if holder == "convert" {
        // a read-only look names the run instead of presenting a half-way state as final
        let status = support::run(command_as("status", reader), "status").await;
        assert_eq!(status.code, 0, "{}", status.stderr);
        assert!(
            status.stdout.starts_with("Run:      a convert run by ")
                && status.stdout.contains(" is in progress: "),
            "{}",
            status.stdout
        );
        let mut dry = command_as("revert", reader);
        dry.arg("--dry-run=client");
        let dry = support::run(dry, "revert --dry-run during convert").await;
        assert_eq!(dry.code, 0, "{}", dry.stderr);
        assert!(
            dry.stderr.contains("warning: a convert run by "),
            "{}",
            dry.stderr
        );
    }
    let mut second = command_as(racer, reader);
    second.arg("-y");
    let second = support::run(second, &format!("{racer} during {holder}")).await;
    env.sim.faults().clear();
    assert_eq!(
        second.code, 6,
        "{racer} {offset:?} into a {holder}: {}",
        second.stderr
    );
    assert!(
        second.stderr.contains(&format!(
            "error: [lock] the lock (Lease kube-system/yurtctl-lock) is held by a {holder} run by "
        )),
        "{}",
        second.stderr
    );
    // (not a bare "403": the holder's random run id may contain it)
    assert!(
        !second.stderr.contains("403 Forbidden"),
        "{}",
        second.stderr
    );
    let out = first.wait_with_output().await.unwrap();
    let first = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(
        first.code, 0,
        "the {holder} that held the lock: {}",
        first.stderr
    );
    first
}

/// A convert started while a revert runs, and a revert started while a convert runs, at
/// seeded offsets across the whole run: the second run exits 6 before any write and the
/// cluster ends as the run that held the lock left it (issue: every decision under the lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_started_during_another_exits_6_and_the_holder_decides_the_end_state() {
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    let reader = support::read_only_kubeconfig(&env.sim, env._dir.path(), "racer").await;

    // how long each takes here, unraced: the offsets spread over that
    let began = tokio::time::Instant::now();
    let c = yurtctl(&env, "convert", &["-y", "-o", "json"]).await;
    assert_eq!(c.code, 0, "{}", c.stderr);
    let convert_time = began.elapsed();
    let roles = roles_of(&c.json());
    let began = tokio::time::Instant::now();
    let r = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let revert_time = began.elapsed();
    let convert_again = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(convert_again.code, 0, "{}", convert_again.stderr);

    let mut offsets = Offsets::seeded();
    for round in 0..3 {
        // the holders' decisions happen early (plan) and late (nothing left): cover both ends
        let into_revert = offsets.next(revert_time, 0.05, 0.75);
        race(&env, &reader, "revert", "convert", into_revert).await;
        assert_clean(&env).await;
        assert_same_trees(&before, &trees(&env.sim));

        let into_convert = offsets.next(convert_time, 0.05, 0.75);
        let won = race(&env, &reader, "convert", "revert", into_convert).await;
        assert!(
            won.json()["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["result"] == "converted"),
            "round {round}: {}",
            won.stdout
        );
        assert_converted(&env, &roles, &DEFAULT).await;
    }
    env.sim.shutdown().await;
}

/// A journal deleted by hand: revert still finds everything convert created by its label,
/// the CRDs, webhook configurations and NodePools included; and a lock left by a revert killed
/// before it could delete it (its holder gone, the lease expired) is taken over, not "held for
/// ever".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn revert_without_the_journal_and_after_a_killed_revert_leaves_nothing() {
    let env = start_real().await;
    let before = trees(&env.sim);
    let c = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(c.code, 0, "{}", c.stderr);
    Api::<ConfigMap>::namespaced(env.client.clone(), "kube-system")
        .delete("yurtctl-state", &Default::default())
        .await
        .unwrap();
    let stale: k8s_openapi::api::coordination::v1::Lease =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "yurtctl-lock", "namespace": "kube-system",
                         "annotations": {"yurtctl.openyurt.io/command": "revert"}},
            "spec": {"holderIdentity": "carol@killed/9#0dead000", "leaseDurationSeconds": 60,
                     "acquireTime": "2020-01-01T00:00:00.000000Z",
                     "renewTime": "2020-01-01T00:00:00.000000Z"}
        }))
        .unwrap();
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(env.client.clone(), "kube-system")
        .create(&PostParams::default(), &stale)
        .await
        .unwrap();
    let status = yurtctl(&env, "status", &[]).await;
    assert!(
        status
            .stdout
            .contains("a revert run by carol@killed/9#0dead000, since 2020-01-01T00:00:00Z stopped renewing the lock"),
        "{}",
        status.stdout
    );
    let r = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_clean(&env).await;
    assert_same_trees(&before, &trees(&env.sim));
    env.sim.shutdown().await;
}

/// The kubelet each node runs now, as the sim's kubelet reports it (`--kubeconfig` of the
/// process it started last), until every node shows `want` (20 s).
async fn assert_kubelets_on(env: &Env, want: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let nodes = Api::<Node>::all(env.client.clone())
            .list(&Default::default())
            .await
            .unwrap();
        let off: Vec<String> = nodes
            .items
            .iter()
            .filter_map(|n| {
                let a = n.metadata.annotations.clone().unwrap_or_default();
                let k = a.get("yurtsim.openyurt.io/kubelet-kubeconfig").cloned();
                (k.as_deref() != Some(want)).then(|| format!("{:?}: {k:?}", n.metadata.name))
            })
            .collect();
        if off.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "kubelets not running on {want}: {off:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// This machine's processes of the pod with `uid` (the servant's env carries `POD_UID`; other
/// tests' sims run servants too).
fn pod_pids(uid: &str) -> Vec<i32> {
    let env = format!("POD_UID={uid}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ.windows(env.len()).any(|w| w == env.as_bytes())
        })
        .collect()
}

/// Waits until the log of the node servant Job doing `action` on `node` shows `moment`, then
/// `after` later SIGKILLs its processes (as an OOM kill or a node reboot would). Returns
/// whether the kill landed: the pod's container ended by SIGKILL (exit 137). A servant that
/// already called exit when the signal came ends 0, and its succeeded Job may be swept, pod
/// and all, before it is seen: neither counts as killed.
async fn kill_servant_at(
    env: &Env,
    node: &str,
    action: &str,
    moment: &str,
    after: Duration,
) -> bool {
    let pods =
        Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), "kube-system");
    let job = format!("yurtctl-{action}-{node}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let (name, uid) = 'found: loop {
        let list = pods
            .list(&kube::api::ListParams::default().labels(&format!("job-name={job}")))
            .await
            .unwrap();
        for p in &list.items {
            let log = pods
                .logs(p.metadata.name.as_deref().unwrap(), &Default::default())
                .await
                .unwrap_or_default();
            if log.contains(moment) {
                break 'found (
                    p.metadata.name.clone().unwrap(),
                    p.metadata.uid.clone().unwrap(),
                );
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the {job} log never showed {moment:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(after).await;
    let pids = pod_pids(&uid);
    for pid in &pids {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let exit_code = loop {
        let Some(pod) = pods.get_opt(&name).await.unwrap() else {
            break None;
        };
        let terminated = pod
            .status
            .and_then(|s| s.container_statuses)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.state)
            .and_then(|s| s.terminated);
        if let Some(t) = terminated {
            break Some(t.exit_code);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pod {name} never ended after the kill"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "--- killed the {action} servant on {node} {after:?} after {moment:?}: {pids:?}, \
         its container's exit code: {exit_code:?}"
    );
    exit_code == Some(137)
}

/// A node servant SIGKILLed at seeded moments of its work (YurtHub installed, YurtHub ready,
/// the kubelet's files redirected and its restart due; on revert, the files restored and the
/// restart due, YurtHub being stopped): the run reports the node failed, and the re-run
/// finishes the node with its kubelet really running on the intended kubeconfig.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_servant_killed_mid_run_is_finished_by_the_re_run() {
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    let mut offsets = Offsets::seeded();
    let convert_at = [
        "waiting up to",
        "YurtHub is ready",
        "restarting the kubelet",
    ];
    let revert_at = ["restarting the kubelet", "systemctl stop yurthub.service"];
    for (round, moment) in convert_at.iter().enumerate() {
        let after = offsets.next(Duration::from_millis(300), 0.0, 1.0);
        let mut cmd = command(&env, "convert");
        cmd.args(["-y", "-o", "json"]);
        let run = tokio::spawn(support::run(cmd, "convert (its servant killed)"));
        let killed = kill_servant_at(&env, "worker-1", "convert", moment, after).await;
        let first = run.await.unwrap();
        if killed {
            assert_ne!(first.code, 0, "a node failed: {}", first.stderr);
        }
        let again = yurtctl(&env, "convert", &["-y", "-o", "json"]).await;
        assert_eq!(again.code, 0, "round {round}: {}", again.stderr);
        let roles = roles_of(&again.json());
        assert_converted(&env, &roles, &DEFAULT).await;
        assert_kubelets_on(&env, "/var/lib/openyurt/kubelet.conf").await;

        let moment = revert_at[round % revert_at.len()];
        let after = offsets.next(Duration::from_millis(300), 0.0, 1.0);
        let mut cmd = command(&env, "revert");
        cmd.args(["-y", "-o", "json"]);
        let run = tokio::spawn(support::run(cmd, "revert (its servant killed)"));
        let killed = kill_servant_at(&env, "worker-1", "revert", moment, after).await;
        let first = run.await.unwrap();
        if killed {
            assert_ne!(first.code, 0, "a node failed: {}", first.stderr);
        }
        let again = yurtctl(&env, "revert", &["-y"]).await;
        assert_eq!(again.code, 0, "round {round}: {}", again.stderr);
        assert_kubelets_on(&env, "/etc/kubernetes/kubelet.conf").await;
        all_ready(&env.client).await;
        assert_clean(&env).await;
        assert_same_trees(&before, &trees(&env.sim));
    }
    env.sim.shutdown().await;
}

/// yurtctl itself SIGKILLed at seeded offsets of a convert and of a revert: its Lease stays
/// held, so the next run exits 6 naming it until told `--force-unlock`; then the run finishes
/// what the killed one left (its Jobs included), and the kubelets run where they should.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_yurtctl_is_taken_over_with_force_unlock_and_the_re_run_converges() {
    let env = start(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    let began = tokio::time::Instant::now();
    let c = yurtctl(&env, "convert", &["-y"]).await;
    assert_eq!(c.code, 0, "{}", c.stderr);
    let convert_time = began.elapsed();
    let began = tokio::time::Instant::now();
    let r = yurtctl(&env, "revert", &["-y"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let revert_time = began.elapsed();

    let mut offsets = Offsets::seeded();
    for round in 0..2 {
        for (cmd, span, kubelets) in [
            ("convert", convert_time, "/var/lib/openyurt/kubelet.conf"),
            ("revert", revert_time, "/etc/kubernetes/kubelet.conf"),
        ] {
            let offset = offsets.next(span, 0.05, 0.75);
            let mut run = command(&env, cmd);
            run.args(["-y"]).kill_on_drop(true);
            let mut child = run.spawn().unwrap();
            support::lease_taken(&env.sim, "kube-system", "yurtctl-lock").await;
            tokio::time::sleep(offset).await;
            child.start_kill().unwrap();
            let status = child.wait().await.unwrap();
            eprintln!("--- round {round}: {cmd} killed {offset:?} after its lock: {status}");

            let held = yurtctl(&env, cmd, &["-y"]).await;
            if held.code == 6 {
                assert!(
                    held.stderr.contains(&format!("is held by a {cmd} run by "))
                        && held.stderr.contains("--force-unlock"),
                    "{}",
                    held.stderr
                );
                let taken = yurtctl(&env, cmd, &["-y", "--force-unlock"]).await;
                assert_eq!(taken.code, 0, "round {round}, {cmd}: {}", taken.stderr);
            } else {
                // killed after its last step, the lock already released
                assert_eq!(held.code, 0, "round {round}, {cmd}: {}", held.stderr);
            }
            assert_kubelets_on(&env, kubelets).await;
        }
        all_ready(&env.client).await;
        assert_clean(&env).await;
        assert_same_trees(&before, &trees(&env.sim));
    }
    env.sim.shutdown().await;
}
