//! Image pulls that fail: a node that cannot reach a registry (an air-gapped node). The
//! kubelet reports ErrImagePull then ImagePullBackOff with the upstream events and messages
//! (kubernetes/kubernetes@v1.37.2 pkg/kubelet/images/image_manager.go) and retries once the
//! registry is reachable again; `crictl pull` fails with containerd's error
//! (kubernetes-sigs/cri-tools@v1.33.0 cmd/crictl/image.go); static pods pull the same way
//! before their containers start.

mod common;

use std::time::Duration;

use common::hub::on_node;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const AIR_GAPPED: &str = "worker-1";
const ONLINE: &str = "worker-2";
const EP: &str = "unix:///var/run/containerd/containerd.sock";

/// containerd's error for nginx:1.27 when docker.io's API host does not resolve, as gRPC
/// prints it.
const NGINX_ERR: &str = r#"rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/nginx:1.27": failed to resolve reference "docker.io/library/nginx:1.27": failed to do request: Head "https://registry-1.docker.io/v2/library/nginx/manifests/1.27": dial tcp: lookup registry-1.docker.io: no such host"#;

fn pod(name: &str, node: &str, image: &str, policy: Option<&str>) -> Pod {
    let mut c = json!({"name": "web", "image": image});
    if let Some(p) = policy {
        c["imagePullPolicy"] = json!(p);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "automountServiceAccountToken": false, "containers": [c]}
    }))
    .unwrap()
}

async fn status(c: &common::TestCluster, name: &str) -> Option<Value> {
    status_in(c, "default", name).await
}

async fn status_in(c: &common::TestCluster, ns: &str, name: &str) -> Option<Value> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    serde_json::to_value(pods.get(name).await.ok()?.status?).ok()
}

async fn waiting(c: &common::TestCluster, name: &str, reason: &str) -> Value {
    common::eventually(
        Duration::from_secs(30),
        &format!("{name} waiting with {reason}"),
        || async {
            let st = status(c, name).await?;
            (st["containerStatuses"][0]["state"]["waiting"]["reason"] == reason).then_some(st)
        },
    )
    .await
}

async fn running(c: &common::TestCluster, name: &str) -> Value {
    common::eventually(
        Duration::from_secs(30),
        &format!("{name} running and ready"),
        || async {
            let st = status(c, name).await?;
            let ready = st["conditions"]
                .as_array()?
                .iter()
                .any(|x| x["type"] == "Ready" && x["status"] == "True");
            (st["phase"] == "Running" && ready).then_some(st)
        },
    )
    .await
}

/// (type, reason, message) of the pod's events, oldest first.
async fn events(c: &common::TestCluster, name: &str) -> Vec<(String, String, String)> {
    events_in(c, "default", name).await
}

async fn events_in(c: &common::TestCluster, ns: &str, name: &str) -> Vec<(String, String, String)> {
    let evs: Api<Event> = Api::namespaced(c.client.clone(), ns);
    let mut items = evs
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items;
    items.sort_by_key(|e| {
        e.metadata
            .resource_version
            .clone()
            .unwrap_or_default()
            .parse::<u64>()
            .unwrap_or(0)
    });
    items
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn has(evs: &[(String, String, String)], typ: &str, reason: &str, msg: &str) -> bool {
    evs.iter()
        .any(|(t, r, m)| t == typ && r == reason && m == msg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_registry_fails_the_pull_until_it_is_reachable_again() {
    let c = common::start_with(3, Layout::Kubeadm, |cfg| {
        // ErrImagePull shows for half the back-off, ImagePullBackOff for the rest.
        cfg.crash_backoff = Duration::from_secs(2);
        cfg.crash_backoff_max = Duration::from_secs(4);
    })
    .await;
    c.sim
        .faults()
        .unreachable_registry("docker.io", Some(AIR_GAPPED));
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let pp = PostParams::default();
    pods.create(&pp, &pod("gapped", AIR_GAPPED, "nginx:1.27", None))
        .await
        .unwrap();
    pods.create(&pp, &pod("online", ONLINE, "nginx:1.27", None))
        .await
        .unwrap();
    // Never pull, and the image is not on the node.
    pods.create(
        &pp,
        &pod("never", AIR_GAPPED, "quay.io/acme/tool:1", Some("Never")),
    )
    .await
    .unwrap();

    // The same image on another node runs.
    running(&c, "online").await;

    let st = waiting(&c, "gapped", "ErrImagePull").await;
    let cs = &st["containerStatuses"][0];
    assert_eq!(cs["state"]["waiting"]["message"], NGINX_ERR, "{st}");
    assert_eq!(cs["ready"], false);
    assert_eq!(cs["started"], false);
    assert_eq!(st["phase"], "Pending");
    let ready = st["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "False", "{st}");

    let st = waiting(&c, "gapped", "ImagePullBackOff").await;
    let cs = &st["containerStatuses"][0];
    assert_eq!(
        cs["state"]["waiting"]["message"],
        format!("Back-off pulling image \"nginx:1.27\": ErrImagePull: {NGINX_ERR}"),
        "{st}"
    );
    assert_eq!(cs["ready"], false);
    assert_eq!(cs["started"], false);
    assert_eq!(st["phase"], "Pending");

    let evs = events(&c, "gapped").await;
    for (t, r, m) in [
        (
            "Normal",
            "Pulling",
            "Pulling image \"nginx:1.27\"".to_string(),
        ),
        (
            "Warning",
            "Failed",
            format!("Failed to pull image \"nginx:1.27\": {NGINX_ERR}"),
        ),
        ("Warning", "Failed", "Error: ErrImagePull".into()),
        (
            "Normal",
            "BackOff",
            "Back-off pulling image \"nginx:1.27\"".into(),
        ),
        ("Warning", "Failed", "Error: ImagePullBackOff".into()),
    ] {
        assert!(has(&evs, t, r, &m), "{t} {r} {m:?} in {evs:#?}");
    }
    let pos = |r: &str, m: &str| evs.iter().position(|e| e.1 == r && e.2 == m).unwrap();
    assert!(pos("Pulling", "Pulling image \"nginx:1.27\"") < pos("Failed", "Error: ErrImagePull"));
    assert!(pos("Failed", "Error: ErrImagePull") < pos("Failed", "Error: ImagePullBackOff"));
    assert!(!has(&evs, "Normal", "Started", "Started container web"));

    let st = waiting(&c, "never", "ErrImageNeverPull").await;
    assert_eq!(
        st["containerStatuses"][0]["state"]["waiting"]["message"],
        "Container image \"quay.io/acme/tool:1\" is not present with pull policy of Never"
    );
    assert!(has(
        &events(&c, "never").await,
        "Warning",
        "ErrImageNeverPull",
        "Container image \"quay.io/acme/tool:1\" is not present with pull policy of Never"
    ));

    // A pod deleted while it backs off goes at once.
    pods.delete("never", &DeleteParams::default())
        .await
        .unwrap();
    common::eventually(Duration::from_secs(5), "never deleted", || async {
        pods.get_opt("never").await.unwrap().is_none().then_some(())
    })
    .await;

    // Still failing a back-off later: the retry pulls again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let st = status(&c, "gapped").await.unwrap();
    assert!(
        st["containerStatuses"][0]["state"]["waiting"].is_object(),
        "{st}"
    );

    c.sim.faults().reachable_again();
    let st = running(&c, "gapped").await;
    assert!(
        st["containerStatuses"][0]["state"]["running"].is_object(),
        "{st}"
    );
    assert_eq!(st["containerStatuses"][0]["started"], true);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crictl_pull_fails_for_an_unreachable_registry_and_keeps_what_it_pulled() {
    let c = common::start(3, Layout::Kubeadm).await;
    c.sim
        .faults()
        .unreachable_registry("registry.k8s.io", Some(AIR_GAPPED));
    let crictl = |args: &str| {
        format!(
            "nsenter --target 1 --mount --uts --ipc --net --pid -- crictl -r {EP} {args}; echo rc=$?"
        )
    };
    let script = format!(
        "{}; {}",
        crictl("pull registry.k8s.io/pause:3.10"),
        crictl("pull nginx:1.27")
    );
    let out = on_node(&c, AIR_GAPPED, "pull-gapped", &script).await;
    assert!(
        out.contains(r#"level=fatal msg="pulling image: rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/pause:3.10\": failed to resolve reference \"registry.k8s.io/pause:3.10\": failed to do request: Head \"https://registry.k8s.io/v2/pause/manifests/3.10\": dial tcp: lookup registry.k8s.io: no such host"
rc=1
"#),
        "{out}"
    );
    let ok = out
        .lines()
        .find_map(|l| l.strip_prefix("Image is up to date for sha256:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(ok.len(), 64, "{out}");
    assert!(ok.chars().all(|ch| ch.is_ascii_hexdigit()), "{out}");
    assert!(out.ends_with("rc=0\n"), "{out}");

    // The other node reaches the registry; the image ID is the same for the same reference.
    let out2 = on_node(&c, ONLINE, "pull-online", &script).await;
    assert!(
        out2.contains("Image is up to date for sha256:") && !out2.contains("rc=1"),
        "{out2}"
    );
    assert!(
        out2.contains(&format!("Image is up to date for sha256:{ok}")),
        "{out2}"
    );

    // nginx:1.27 is on the air-gapped node now: IfNotPresent runs it without a registry.
    c.sim
        .faults()
        .unreachable_registry("docker.io", Some(AIR_GAPPED));
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod("cached", AIR_GAPPED, "nginx:1.27", None),
    )
    .await
    .unwrap();
    running(&c, "cached").await;
    let evs = events(&c, "cached").await;
    assert!(!evs.iter().any(|e| e.1 == "Pulling"), "{evs:#?}");
    c.sim.shutdown().await;
}

/// containerd's error for openyurt/yurthub:v1.6.0 when docker.io's API host does not resolve.
const HUB_ERR: &str = r#"rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/openyurt/yurthub:v1.6.0": failed to resolve reference "docker.io/openyurt/yurthub:v1.6.0": failed to do request: Head "https://registry-1.docker.io/v2/openyurt/yurthub/manifests/v1.6.0": dial tcp: lookup registry-1.docker.io: no such host"#;

fn static_hub(image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\n  namespace: kube-system\n  labels: {{k8s-app: yurt-hub}}\nspec:\n  hostNetwork: true\n  containers:\n  - name: yurt-hub\n    image: {image}\n    imagePullPolicy: IfNotPresent\n    command: [yurthub, --v=2]\n"
    )
}

fn static_web(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\n  labels: {{version: {version}}}\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n"
    )
}

/// What the node's YurtHub endpoint answers to `GET /v1/healthz`.
async fn hub_health(c: &common::TestCluster, node: &str) -> u16 {
    let r = yurtsim::nodes::kubelet::yurthub_endpoint(
        c.sim.shared(),
        node,
        &hyper::Method::GET,
        "/v1/healthz",
    );
    r.status().as_u16()
}

/// Static pods pull their images as the kubelet's other pods do: a YurtHub static pod whose
/// registry the node cannot reach never runs there (its mirror pod Pending and Waiting with
/// ErrImagePull, then ImagePullBackOff, the kubelet's events on it, no container, YurtHub not
/// serving, a modelled hub's process never started), and runs once the registry is reachable
/// again; a static pod whose image the node already has (IfNotPresent) runs without a pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_pods_pull_their_images_and_a_hub_whose_registry_is_unreachable_never_runs() {
    let c = common::start_with(3, Layout::Kubeadm, |cfg| {
        cfg.crash_backoff = Duration::from_secs(2);
        cfg.crash_backoff_max = Duration::from_secs(4);
    })
    .await;
    let dir = |node: &str| c.sim.node_root(node).join("etc/kubernetes/manifests");
    let mirror = |node: &str| format!("yurt-hub-{node}");
    // nginx:1.27 runs as a static pod while docker.io is reachable: the node has it now
    std::fs::write(dir(AIR_GAPPED).join("web.yaml"), static_web("v1")).unwrap();
    let web = format!("web-{AIR_GAPPED}");
    running(&c, &web).await;
    for node in [AIR_GAPPED, ONLINE] {
        c.sim.faults().unreachable_registry("docker.io", Some(node));
    }
    // a changed manifest is a new pod of the same image: IfNotPresent, no pull
    std::fs::write(dir(AIR_GAPPED).join("web.yaml"), static_web("v2")).unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    common::eventually(Duration::from_secs(30), "web v2 running", || async {
        let p = pods.get(&web).await.ok()?;
        let v2 = p.metadata.labels?.get("version")? == "v2";
        (v2 && p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    let evs = events(&c, &web).await;
    assert!(!evs.iter().any(|e| e.1 == "Pulling"), "{evs:#?}");

    // YurtHub v1.6.0 (a hub image that serves once started) on the air-gapped node, and the
    // modelled v1.6.1 on the other node that cannot reach docker.io either
    std::fs::write(
        dir(AIR_GAPPED).join("yurthub.yaml"),
        static_hub("openyurt/yurthub:v1.6.0"),
    )
    .unwrap();
    std::fs::write(
        dir(ONLINE).join("yurthub.yaml"),
        static_hub("openyurt/yurthub:v1.6.1"),
    )
    .unwrap();
    let hub = mirror(AIR_GAPPED);
    let waiting_hub = |reason: &'static str| {
        let hub = hub.clone();
        let c = &c;
        async move {
            common::eventually(
                Duration::from_secs(30),
                &format!("{hub} waiting with {reason}"),
                || async {
                    let st = status_in(c, "kube-system", &hub).await?;
                    (st["containerStatuses"][0]["state"]["waiting"]["reason"] == reason)
                        .then_some(st)
                },
            )
            .await
        }
    };
    let st = waiting_hub("ErrImagePull").await;
    assert_eq!(
        st["containerStatuses"][0]["state"]["waiting"]["message"], HUB_ERR,
        "{st}"
    );
    assert_eq!(st["phase"], "Pending", "{st}");
    assert_eq!(st["containerStatuses"][0]["ready"], false);
    let st = waiting_hub("ImagePullBackOff").await;
    assert_eq!(
        st["containerStatuses"][0]["state"]["waiting"]["message"],
        format!("Back-off pulling image \"openyurt/yurthub:v1.6.0\": ErrImagePull: {HUB_ERR}"),
        "{st}"
    );
    assert_eq!(st["phase"], "Pending", "{st}");
    let evs = events_in(&c, "kube-system", &hub).await;
    for (t, r, m) in [
        (
            "Normal",
            "Pulling",
            "Pulling image \"openyurt/yurthub:v1.6.0\"".to_string(),
        ),
        (
            "Warning",
            "Failed",
            format!("Failed to pull image \"openyurt/yurthub:v1.6.0\": {HUB_ERR}"),
        ),
        ("Warning", "Failed", "Error: ErrImagePull".into()),
        (
            "Normal",
            "BackOff",
            "Back-off pulling image \"openyurt/yurthub:v1.6.0\"".into(),
        ),
        ("Warning", "Failed", "Error: ImagePullBackOff".into()),
    ] {
        assert!(has(&evs, t, r, &m), "{t} {r} {m:?} in {evs:#?}");
    }
    // a back-off later it still has not run: no container, YurtHub not serving, and the
    // modelled hub never started (its log never written)
    tokio::time::sleep(Duration::from_secs(3)).await;
    for node in [AIR_GAPPED, ONLINE] {
        let hub = mirror(node);
        assert!(
            !c.sim.containers(node).iter().any(|x| x.pod == hub),
            "{node}: {:?}",
            c.sim.containers(node)
        );
        assert_eq!(hub_health(&c, node).await, 503, "{node}");
    }
    let model_log = c.sim.state_dir().join(format!(
        "sim/static-pods/kube-system_{}/yurt-hub.log",
        mirror(ONLINE)
    ));
    assert!(!model_log.exists(), "{model_log:?}");
    let st = status_in(&c, "kube-system", &hub).await.unwrap();
    assert!(
        st["containerStatuses"][0]["state"]["waiting"].is_object(),
        "{st}"
    );

    c.sim.faults().reachable_again();
    common::eventually(Duration::from_secs(30), "the hub runs", || async {
        let st = status_in(&c, "kube-system", &hub).await?;
        (st["phase"] == "Running" && c.sim.containers(AIR_GAPPED).iter().any(|x| x.pod == hub))
            .then_some(())
    })
    .await;
    assert_eq!(hub_health(&c, AIR_GAPPED).await, 200);
    // the modelled hub ran: its flags lack a node name, so it says so and exits
    common::eventually(
        Duration::from_secs(30),
        "the modelled hub's log",
        || async {
            let log = std::fs::read_to_string(&model_log).ok()?;
            log.contains("validate options: node name is empty")
                .then_some(())
        },
    )
    .await;
    c.sim.shutdown().await;
}
