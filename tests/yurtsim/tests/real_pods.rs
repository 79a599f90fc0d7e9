//! Pods on yurtsim's nodes in front of the real control plane: the real scheduler binds them,
//! the real Job controller and garbage collector own them, and each node's kubelet runs them
//! as real processes and reports them as the node's own identity, through what the Node
//! authorizer and NodeRestriction allow.

mod common;

use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use yurtsim::Layout;

const NEWEST: &str = yurtsim::real::NEWEST_KUBERNETES;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tier_nodes_run_jobs_and_pods_with_their_own_identity() {
    let c = common::start_real(3, Layout::Kubeadm, NEWEST).await;
    let ns = "default";
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(
            json!({"metadata": {"name": "greeting"}, "data": {"word": "hello"}}),
        )
        .unwrap(),
    )
    .await
    .unwrap();

    // A Job: the real Job controller makes its pod, the real scheduler puts it on the only
    // untainted node, and the pod reads a ConfigMap and its ServiceAccount token.
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), ns);
    let script = "cat /cfg/word > /out/word && cat /var/run/secrets/kubernetes.io/serviceaccount/token > /out/token";
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "reader"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}, {"name": "out", "mountPath": "/out"}]}],
                "volumes": [{"name": "cfg", "configMap": {"name": "greeting"}},
                    {"name": "out", "hostPath": {"path": "/tmp/reader", "type": "DirectoryOrCreate"}}]}}}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    common::eventually(Duration::from_secs(90), "Job reader Complete", || {
        let jobs = jobs.clone();
        async move {
            let j = jobs.get("reader").await.ok()?;
            let conds = j.status?.conditions?;
            if let Some(f) = conds
                .iter()
                .find(|c| c.type_ == "Failed" && c.status == "True")
            {
                panic!("Job reader failed: {f:?}");
            }
            conds
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
                .then_some(())
        }
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let reader = pods
        .list(&ListParams::default().labels("job-name=reader"))
        .await
        .unwrap()
        .items;
    assert_eq!(reader.len(), 1, "{reader:?}");
    let pod = &reader[0];
    let spec = pod.spec.as_ref().unwrap();
    let node = spec.node_name.clone().unwrap();
    assert!(
        node.starts_with("worker-"),
        "the control plane is tainted: {node}"
    );
    let status = pod.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    let term = status.container_statuses.as_ref().unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .expect("terminated state");
    assert_eq!(term.exit_code, 0);

    let out = c.sim.node_root(&node).join("tmp/reader");
    assert_eq!(std::fs::read_to_string(out.join("word")).unwrap(), "hello");
    // the token is the real API server's, bound to the pod the kubelet asked it for
    let token = std::fs::read_to_string(out.join("token")).unwrap();
    let reviews: Api<TokenReview> = Api::all(c.client.clone());
    let review = reviews
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {"token": token}})).unwrap(),
        )
        .await
        .unwrap();
    let st = review.status.unwrap();
    assert_eq!(st.authenticated, Some(true), "{st:?}");
    let user = st.user.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:default")
    );
    let bound_pod = user
        .extra
        .unwrap_or_default()
        .get("authentication.kubernetes.io/pod-name")
        .cloned();
    assert_eq!(bound_pod, Some(vec![pod.metadata.name.clone().unwrap()]));

    // A running pod deleted with a grace period ends when its kubelet has stopped it and
    // confirmed (the final delete as the node).
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "sleeper"},
            "spec": {"nodeName": "worker-1", "terminationGracePeriodSeconds": 5,
                "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "300"]}]}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let running = common::eventually(Duration::from_secs(60), "sleeper Running", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("sleeper").await.ok()?;
            let st = p.status.clone()?;
            (st.phase.as_deref() == Some("Running")).then_some(p)
        }
    })
    .await;
    let st = running.status.unwrap();
    assert_eq!(
        st.host_ip.as_deref(),
        Some(Layout::Kubeadm.node_ip(1).as_str())
    );
    // an address of the range kube-controller-manager gave worker-1
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(c.client.clone());
    let range = nodes
        .get("worker-1")
        .await
        .unwrap()
        .spec
        .unwrap()
        .pod_cidr
        .unwrap();
    let prefix = range.rsplit_once('.').unwrap().0;
    let ip = st.pod_ip.clone().unwrap();
    assert!(ip.starts_with(&format!("{prefix}.")), "{ip} in {range}");
    pods.delete("sleeper", &DeleteParams::default())
        .await
        .unwrap();
    common::eventually(Duration::from_secs(30), "sleeper deleted", || {
        let pods = pods.clone();
        async move { pods.get_opt("sleeper").await.ok()?.is_none().then_some(()) }
    })
    .await;

    c.sim.shutdown().await;
}

/// Pods reach each other across nodes, Services through the real kube-proxy (nftables), and
/// the API server through the `kubernetes` Service, as in-cluster clients do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tier_pods_reach_pods_on_other_nodes_and_services() {
    let c = common::start_real(3, Layout::Kind, NEWEST).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"nodeName": "kind-worker",
                "containers": [{"name": "main", "image": "busybox",
                    "command": ["python3", "-m", "http.server", "8080"]}]}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let services: Api<Service> = Api::namespaced(c.client.clone(), "default");
    let svc = services
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let cluster_ip = svc.spec.unwrap().cluster_ip.unwrap();
    let web_ip = common::eventually(Duration::from_secs(60), "web Running", || {
        let pods = pods.clone();
        async move {
            let st = pods.get("web").await.ok()?.status?;
            (st.phase.as_deref() == Some("Running")).then_some(st.pod_ip?)
        }
    })
    .await;
    // kube-proxy and the server inside the pod take a moment: each URL is tried for 20 s
    // (by the clock: a ClusterIP without rules yet drops the SYN, and each try waits 1 s)
    let script = format!(
        r#"import ssl, sys, time, urllib.request
ctx = ssl._create_unverified_context()
for what, url in [("pod", "http://{web_ip}:8080/"), ("service", "http://{cluster_ip}/"), ("kubernetes", "https://10.96.0.1/version")]:
    deadline = time.time() + 20
    while True:
        try:
            print(what, urllib.request.urlopen(url, context=ctx, timeout=1).status)
            break
        except Exception as e:
            if time.time() > deadline:
                sys.exit(f"{{what}} {{url}}: {{e}}")
            time.sleep(0.2)
"#
    );
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "client"},
            "spec": {"nodeName": "kind-worker2", "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox",
                    "command": ["python3", "-c", script]}]}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let phase = common::eventually(Duration::from_secs(90), "client ended", || {
        let pods = pods.clone();
        async move {
            let phase = pods.get("client").await.ok()?.status?.phase?;
            matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase)
        }
    })
    .await;
    let uid = pods.get("client").await.unwrap().metadata.uid.unwrap();
    let log = std::fs::read_to_string(
        c.sim
            .state_dir()
            .join(format!("sim/pods/default_client_{uid}/main.log")),
    )
    .unwrap_or_default();
    assert_eq!(phase, "Succeeded", "{log}");
    assert_eq!(log, "pod 200\nservice 200\nkubernetes 200\n");
    c.sim.shutdown().await;
}
