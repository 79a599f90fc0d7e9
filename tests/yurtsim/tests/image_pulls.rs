//! Image pulls that fail: a node that cannot reach a registry (an air-gapped node). The
//! kubelet reports ErrImagePull then ImagePullBackOff with the upstream events and messages
//! (kubernetes/kubernetes@v1.37.2 pkg/kubelet/images/image_manager.go) and retries once the
//! registry is reachable again; `crictl pull` fails with containerd's error
//! (kubernetes-sigs/cri-tools@v1.33.0 cmd/crictl/image.go).

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
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
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
    let evs: Api<Event> = Api::namespaced(c.client.clone(), "default");
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
