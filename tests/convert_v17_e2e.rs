//! Profile openyurt-v1.7 end to end on yurtsim at Kubernetes 1.33, every layout: workers in
//! three zones → `convert --nodepools-from-label topology.kubernetes.io/zone` → three Edge pools
//! and a Cloud pool, YurtHub as `yurthub.service` on every node, each kubelet talking through it,
//! yurt-manager's node-conversion controller idle → a re-run changes nothing → revert → node
//! roots byte-identical, pools and labels gone.

mod support;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use yurtsim::Layout;

use support::roots::{all_ready, assert_same_trees, trees};
use support::{Cluster as Env, Run};

const ZONE: &str = "topology.kubernetes.io/zone";
const POOL_LABEL: &str = "apps.openyurt.io/nodepool";
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
const HUB_SERVER: &str = "http://127.0.0.1:10261";

/// `convert --profile openyurt-v1.7 --nodepools-from-label topology.kubernetes.io/zone`.
async fn convert(env: &Env) -> Run {
    let args = [
        "convert",
        "--profile",
        "openyurt-v1.7",
        "--nodepools-from-label",
        ZONE,
        "-y",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "90s",
    ];
    support::yurtctl(&env.sim, &args).await
}

fn pools_api(env: &Env) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apps.openyurt.io", "v1beta2", "NodePool");
    Api::all_with(env.client.clone(), &ApiResource::from_gvk(&gvk))
}

/// (name, spec.type) of every NodePool.
async fn pools(env: &Env) -> Vec<(String, String)> {
    let Ok(list) = pools_api(env).list(&ListParams::default()).await else {
        return Vec::new(); // the CRD is gone
    };
    list.items
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.data["spec"]["type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

async fn nodes(env: &Env) -> Vec<Node> {
    Api::<Node>::all(env.client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

fn label<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    n.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

async fn zoned_cluster(layout: Layout) -> Env {
    let env = support::cluster(4, layout, "v1.33.1").await;
    let workers: Vec<String> = env.sim.node_names().into_iter().skip(1).collect();
    let api = Api::<Node>::all(env.client.clone());
    for (w, zone) in workers.iter().zip(["zone-a", "zone-b", "zone-c"]) {
        let patch = serde_json::json!({"metadata": {"labels": {ZONE: zone}}});
        api.patch(
            w,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    }
    env
}

/// A pod on `node` (a workload convert has to restart); returns its name.
async fn workload(env: &Env, node: &str) -> String {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "web", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    Api::<Pod>::namespaced(env.client.clone(), "default")
        .create(&Default::default(), &pod)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while env
        .sim
        .container_env(node, "default", "web", "web")
        .is_none()
    {
        assert!(tokio::time::Instant::now() < deadline, "web never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    "web".into()
}

/// Waits until `pod`'s container on `node` runs with the API server at `(host, port)` after
/// `restarts` restarts.
async fn container_sees(
    env: &Env,
    node: &str,
    pod: &str,
    (host, port): (&str, &str),
    restarts: u32,
    layout: &Layout,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = env.sim.container_env(node, "default", pod, "web");
        let seen = got.as_ref().map(|e| {
            (
                e.get("KUBERNETES_SERVICE_HOST")
                    .cloned()
                    .unwrap_or_default(),
                e.get("KUBERNETES_SERVICE_PORT")
                    .cloned()
                    .unwrap_or_default(),
            )
        });
        let n = env.sim.container_restarts(node, "default", pod, "web");
        if seen == Some((host.into(), port.into())) && n == Some(restarts) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{layout}: {pod} on {node}: {seen:?} after {n:?} restarts, want {host}:{port} after {restarts}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The logs of every yurt-manager pod, one after the other.
async fn yurt_manager_log(env: &Env) -> String {
    let pods = Api::<Pod>::namespaced(env.client.clone(), "kube-system");
    let mut out = String::new();
    for p in pods.list(&ListParams::default()).await.unwrap().items {
        let name = p.metadata.name.unwrap_or_default();
        if name.starts_with("yurt-manager-") {
            out += &pods
                .logs(&name, &Default::default())
                .await
                .unwrap_or_default();
        }
    }
    assert!(!out.is_empty(), "no yurt-manager log");
    out
}

async fn converts_and_reverts_exactly(layout: Layout) {
    let env = zoned_cluster(layout).await;
    let control_plane = env.sim.node_names()[0].clone();
    let worker = env.sim.node_names()[1].clone();
    let web = workload(&env, &worker).await;
    let before = trees(&env.sim);

    let run = convert(&env).await;
    assert_eq!(
        run.code, 0,
        "{layout}: convert failed\n{}{}",
        run.stdout, run.stderr
    );

    let pin = yurtctl::render::ca_cert_hash(&yurtctl::render::base64(
        yurtsim::pki::cluster_ca_pem().as_bytes(),
    ))
    .unwrap();
    let mut got = pools(&env).await;
    got.sort();
    assert_eq!(
        got,
        [
            ("cloud", "Cloud"),
            ("zone-a", "Edge"),
            ("zone-b", "Edge"),
            ("zone-c", "Edge")
        ]
        .map(|(n, t)| (n.to_owned(), t.to_owned()))
        .to_vec(),
        "{layout}"
    );
    for n in nodes(&env).await {
        let name = n.metadata.name.clone().unwrap();
        let (edge, pool) = if name == control_plane {
            ("false", "cloud".to_owned())
        } else {
            ("true", label(&n, ZONE).unwrap().to_owned())
        };
        assert_eq!(label(&n, EDGE_LABEL), Some(edge), "{layout} {name}");
        assert_eq!(
            label(&n, POOL_LABEL),
            Some(pool.as_str()),
            "{layout} {name}"
        );
        assert!(
            n.spec.as_ref().and_then(|s| s.unschedulable) != Some(true),
            "{layout} {name}: cordoned"
        );
        let root = env.sim.node_root(&name);
        assert!(
            root.join("usr/local/bin/yurthub").is_file(),
            "{layout} {name}"
        );
        let drop_in = std::fs::read_to_string(
            root.join("etc/systemd/system/yurthub.service.d/10-yurthub.conf"),
        )
        .unwrap();
        assert!(
            drop_in.contains(&format!("--node-name={name} --nodepool-name={pool} ")),
            "{layout} {name}: {drop_in}"
        );
        // the bootstrap pins the CA cluster-info publishes, as `kubeadm join` does
        assert!(
            drop_in.contains(&format!("--discovery-token-ca-cert-hash={pin}\"")),
            "{layout} {name}: {drop_in}"
        );
        let server = n
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("yurtsim.openyurt.io/kubelet-server"))
            .cloned();
        assert_eq!(server.as_deref(), Some(HUB_SERVER), "{layout} {name}");
    }
    // yurt-manager's node-conversion controller found nothing to do on our nodes
    let jobs = Api::<Job>::all(env.client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        !jobs.items.iter().any(|j| j
            .metadata
            .name
            .as_deref()
            .unwrap_or("")
            .starts_with("node-servant-conversion-")),
        "{layout}: the conversion controller ran a Job on a node yurtctl converts"
    );
    // the edge node's workload restarted once, now reaching the API server through YurtHub's
    // rewritten kubernetes Service; the control plane's static pods were left alone
    container_sees(&env, &worker, &web, ("169.254.2.1", "10268"), 1, &layout).await;
    let apiserver = format!("kube-apiserver-{control_plane}");
    assert_eq!(
        env.sim
            .container_restarts(&control_plane, "kube-system", &apiserver, "kube-apiserver"),
        Some(0),
        "{layout}"
    );
    let converted = trees(&env.sim);

    let again = convert(&env).await;
    assert_eq!(again.code, 0, "{layout}: {}{}", again.stdout, again.stderr);
    assert_same_trees(&converted, &trees(&env.sim));
    // the re-run's Jobs ran on autonomous edge nodes: yurt-manager's pod binding left them alone
    // (a NoExecute toleration without seconds makes it panic)
    let log = yurt_manager_log(&env).await;
    assert!(
        !log.contains("\"controller\": \"pod-binding-controller\""),
        "{layout}: yurt-manager:\n{log}"
    );

    let revert = support::yurtctl(&env.sim, &["revert", "-y", "--job-timeout", "90s"]).await;
    assert_eq!(
        revert.code, 0,
        "{layout}: revert\n{}{}",
        revert.stdout, revert.stderr
    );
    all_ready(&env.client).await;
    container_sees(&env, &worker, &web, ("10.96.0.1", "443"), 2, &layout).await;
    assert_same_trees(&before, &trees(&env.sim));
    assert!(pools(&env).await.is_empty(), "{layout}: pools left");
    for n in nodes(&env).await {
        for key in [POOL_LABEL, EDGE_LABEL] {
            assert_eq!(label(&n, key), None, "{layout} {:?}", n.metadata.name);
        }
        if n.metadata.name.as_deref() != Some(control_plane.as_str()) {
            assert!(label(&n, ZONE).is_some(), "the user's labels stay");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubeadm_converts_into_zone_pools_and_reverts_exactly() {
    converts_and_reverts_exactly(Layout::Kubeadm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubeadm_usr_converts_into_zone_pools_and_reverts_exactly() {
    converts_and_reverts_exactly(Layout::KubeadmUsr).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kind_converts_into_zone_pools_and_reverts_exactly() {
    converts_and_reverts_exactly(Layout::Kind).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn minikube_converts_into_zone_pools_and_reverts_exactly() {
    converts_and_reverts_exactly(Layout::Minikube).await;
}

/// YurtHub v1.7.0 also binds its multiplexer on the node's IP, port 10269: a node where another
/// program holds it is refused at node preflight, naming the port, before anything changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_whose_multiplexer_port_is_taken_is_refused_before_anything_changes() {
    let env = zoned_cluster(Layout::Kubeadm).await;
    let before = trees(&env.sim);
    let _holder = env
        .sim
        .node_listen("worker-1", ([0, 0, 0, 0], 10269).into())
        .unwrap();
    let run = convert(&env).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the node's IP:10269 already in use on this node; YurtHub needs them"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("worker-1"), "{}", run.stderr);
    assert_same_trees(&before, &trees(&env.sim));
    let labelled = nodes(&env)
        .await
        .iter()
        .filter(|n| label(n, EDGE_LABEL).is_some())
        .count();
    assert_eq!(labelled, 0, "no node was labelled");
    env.sim.shutdown().await;
}

/// YurtHub's bootstrap pins the cluster CA by hash: a cluster-info whose CA is no certificate is
/// refused before any node Job runs, naming the ConfigMap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_info_without_a_ca_certificate_is_refused_naming_it() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let env = zoned_cluster(Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "kube-public");
    let mut info = cms.get("cluster-info").await.unwrap();
    let data = info.data.as_mut().unwrap();
    let text = data["kubeconfig"].clone();
    let at = text.find("certificate-authority-data: ").unwrap() + 28;
    let end = at + text[at..].find('\n').unwrap();
    data.insert(
        "kubeconfig".into(),
        format!("{}Q0E={}", &text[..at], &text[end..]),
    );
    cms.replace("cluster-info", &Default::default(), &info)
        .await
        .unwrap();
    let run = convert(&env).await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("ConfigMap kube-public/cluster-info")
            && run.stderr.contains("not a PEM certificate")
            && run.stderr.contains("--discovery-token-ca-cert-hash"),
        "{}",
        run.stderr
    );
    let jobs = Api::<Job>::all(env.client.clone())
        .list(&ListParams::default().labels("yurtctl.openyurt.io/action=convert"))
        .await
        .unwrap();
    assert!(jobs.items.is_empty(), "no node was converted");
    env.sim.shutdown().await;
}
