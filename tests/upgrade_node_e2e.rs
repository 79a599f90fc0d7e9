//! A node's YurtHub upgrade end to end on yurtsim: a cluster converted with openyurt-v1.6
//! (YurtHub as the yurt-hub static pod), then the worker's `node-servant upgrade` Job, built as
//! upgrade builds it, moves YurtHub to openyurt-v1.7's systemd service. The kubelet keeps its
//! kubeconfig and the node stays Ready, the mirror pod goes, and `yurtctl revert` afterwards
//! leaves every node root as it was before the first convert.

mod support;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::runtime::watcher;
use support::roots::{all_ready, assert_same_trees, trees};
use yurtctl::app::convert::{HubJob, node_job};
use yurtctl::cluster::apply::{Applier, ApplyOptions};
use yurtctl::plan::{NodeAction, NodeDecision, Role};
use yurtctl::render::{BootstrapTokenRef, Profile, RenderContext, TokenSecret};
use yurtsim::Layout;

const NS: &str = "kube-system";
const OURS: &str = "/var/lib/openyurt/kubelet.conf";
const HUB_SERVER: &str = "http://127.0.0.1:10261";
const ANN: &str = "yurtsim.openyurt.io/kubelet-";

async fn annotation(client: &kube::Client, node: &str, key: &str) -> Option<String> {
    let n = Api::<Node>::all(client.clone()).get(node).await.ok()?;
    n.metadata.annotations?.get(&format!("{ANN}{key}")).cloned()
}

/// What upgrade's components phase puts in place before the nodes move: openyurt-v1.7's
/// CRDs (YurtHub v1.7 is ready only once it lists NodePools at v1beta2), its YurtHub cluster
/// objects and unit ConfigMaps (the Jobs mount them).
async fn apply_v17_units(env: &support::Cluster) {
    let v17 = Profile::load("openyurt-v1.7").unwrap();
    let token = BootstrapTokenRef::new("abcdef", "2030-01-01T00:00:00Z").unwrap();
    let secret = TokenSecret::new("0123456789abcdef").unwrap();
    let ctx = RenderContext::new(
        &v17,
        "https://10.0.0.1:6443",
        support::fixture_ca_data(),
        token,
        secret,
    );
    let applier = Applier::new(
        support::yurtctl_cluster(&env.sim).await,
        ApplyOptions::default(),
    );
    let wanted: Vec<&str> = v17
        .components
        .iter()
        .filter(|c| ["crds", "yurthub-cluster", "yurthub-service"].contains(&c.id.as_str()))
        .flat_map(|c| c.templates.iter().map(String::as_str))
        .collect();
    for o in yurtctl::render::render_cluster_objects(&v17, &ctx).unwrap() {
        if wanted.contains(&o.template.as_str()) {
            applier.apply(&o.object).await.unwrap();
        }
    }
}

/// Runs the `node-servant upgrade` Job of `node` to openyurt-v1.7, as upgrade builds it (an
/// edge node of pool `edge`); returns how it ended and its log.
async fn upgrade_job(env: &support::Cluster, node: &str) -> (String, String) {
    let v17 = Profile::load("openyurt-v1.7").unwrap();
    let decision = NodeDecision {
        name: node.to_owned(),
        role: Role::Edge,
        action: NodeAction::Convert,
        autonomous: false,
        pool: Some("edge".into()),
    };
    let timeout = Duration::from_secs(60);
    let job = node_job(
        &decision,
        "openyurt/yurtctl:test",
        &v17.images,
        &v17,
        timeout,
        HubJob::Upgrade,
    )
    .to_job(NS, timeout);
    let name = job.metadata.name.clone().unwrap();
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    // a Job of an earlier run goes first, with its pod
    let _ = jobs.delete(&name, &DeleteParams::background()).await;
    while jobs.get_opt(&name).await.unwrap().is_some() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let outcome = loop {
        let j = jobs.get(&name).await.unwrap();
        let done = j
            .status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .find(|c| ["Complete", "Failed"].contains(&c.type_.as_str()) && c.status == "True");
        if let Some(c) = done {
            break c.type_;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} did not finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let uid = jobs.get(&name).await.unwrap().metadata.uid.unwrap();
    let pod = pods
        .list(&ListParams::default().labels(&format!("controller-uid={uid}")))
        .await
        .unwrap()
        .items
        .remove(0);
    let log = pods
        .logs(&pod.metadata.name.unwrap(), &LogParams::default())
        .await
        .unwrap();
    eprintln!("--- {name}: {outcome}\n{log}");
    let journal = std::fs::read_to_string(
        env.sim
            .node_root(node)
            .join("var/log/yurtsim/yurthub.service.log"),
    );
    eprintln!(
        "--- yurthub.service on {node}:\n{}",
        journal.unwrap_or_default()
    );
    (outcome, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_moves_from_the_v1_6_static_pod_to_the_v1_7_service_and_stays_ready() {
    let env = support::cluster(2, Layout::Kubeadm, "v1.34.2").await;
    let before = trees(&env.sim);
    support::convert_profile(&env.sim, "openyurt-v1.6").await;
    let worker = support::first_worker(&env.sim);
    let root = env.sim.node_root(&worker);
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());
    apply_v17_units(&env).await;

    // every Ready condition the worker reports while it moves
    let nodes: Api<Node> = Api::all(env.client.clone());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let watch = {
        let (seen, nodes, worker) = (seen.clone(), nodes.clone(), worker.clone());
        tokio::spawn(async move {
            use futures::StreamExt;
            let cfg = watcher::Config::default().fields(&format!("metadata.name={worker}"));
            let mut s = std::pin::pin!(watcher::watcher(nodes, cfg));
            while let Some(Ok(e)) = s.next().await {
                if let watcher::Event::Apply(n) | watcher::Event::InitApply(n) = e {
                    let ready = n
                        .status
                        .and_then(|s| s.conditions)
                        .into_iter()
                        .flatten()
                        .find(|c| c.type_ == "Ready")
                        .map(|c| c.status);
                    seen.lock().unwrap().push(ready.unwrap_or_default());
                }
            }
        })
    };

    let (outcome, log) = upgrade_job(&env, &worker).await;
    assert_eq!(outcome, "Complete");
    assert!(
        log.contains("upgraded: YurtHub runs as the systemd service yurthub.service")
            && log.contains("went unserved for at most"),
        "{log}"
    );

    // the node's files: the service in, the static pod out, the kubelet's redirect kept
    assert!(!root.join("etc/kubernetes/manifests/yurthub.yaml").exists());
    for f in [
        "usr/local/bin/yurthub",
        "etc/systemd/system/yurthub.service",
        "etc/systemd/system/yurthub.service.d/10-yurthub.conf",
    ] {
        assert!(root.join(f).is_file(), "{f}");
    }
    assert_eq!(
        annotation(&env.client, &worker, "kubeconfig")
            .await
            .as_deref(),
        Some(OURS)
    );
    // the kubelet reaches the API server through the new YurtHub and the mirror pod is gone
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let server = annotation(&env.client, &worker, "server").await;
        let mirror = pods.get_opt(&format!("yurt-hub-{worker}")).await.unwrap();
        if server.as_deref() == Some(HUB_SERVER) && mirror.is_none() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "server {server:?}, mirror pod {:?}",
            mirror.map(|p| p.metadata.name)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // run again (a Job the runner retries after a stop): nothing to do, YurtHub still ready
    let (outcome, log) = upgrade_job(&env, &worker).await;
    assert_eq!(outcome, "Complete");
    assert!(
        log.contains("nothing to do") && log.contains("already runs as the systemd service"),
        "{log}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    watch.abort();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|s| s == "True"),
        "{worker} was not Ready throughout: {seen:?}"
    );

    // revert after the upgrade: every node root as before the first convert
    let revert = support::yurtctl(&env.sim, &["revert", "--job-timeout", "60s", "-y"]).await;
    assert_eq!(revert.code, 0, "{}", revert.stderr);
    all_ready(&env.client).await;
    assert_same_trees(&before, &trees(&env.sim));
    env.sim.shutdown().await;
}
