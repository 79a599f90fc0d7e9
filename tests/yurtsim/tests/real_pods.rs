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

/// The kubelet's server on `:10250`: the real API server's `pods/log` reaches it (kubectl logs,
/// `--tail`, a completed Job's pod), and it lets in only whom the kubelet would: nobody without
/// credentials (401), a ServiceAccount without `nodes/proxy` (403), the API server's kubelet
/// client certificate (200).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tier_kubelet_server_serves_logs_to_whom_it_authorizes() {
    let c = common::start_real(2, Layout::Kubeadm, NEWEST).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "talker"},
            "spec": {"nodeName": "worker-1", "containers": [{"name": "main", "image": "busybox",
                "command": ["sh", "-c", "echo one; echo two; echo three; sleep 300"]}]}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "counter"},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "count", "image": "busybox",
                    "command": ["sh", "-c", "echo counted 3; echo done"]}]}}}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let kubeconfig = c.sim.kubeconfig_path();
    let kubectl = |args: &[&str]| common::kubectl(&kubeconfig, args);
    // the container has written its three lines once its log says so (within 30 s)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = kubectl(&["logs", "talker"]);
        if got.1 == "one\ntwo\nthree\n" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl logs talker: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        kubectl(&["logs", "talker", "--tail=1"]),
        (true, "three\n".to_string(), String::new())
    );
    assert_eq!(
        kubectl(&["logs", "talker", "-c", "main", "--limit-bytes=6"]),
        (true, "one\ntw".to_string(), String::new())
    );
    common::eventually(Duration::from_secs(90), "Job counter Complete", || {
        let jobs = jobs.clone();
        async move {
            let conds = jobs.get("counter").await.ok()?.status?.conditions?;
            conds
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
                .then_some(())
        }
    })
    .await;
    assert_eq!(
        kubectl(&["logs", "job/counter"]),
        (true, "counted 3\ndone\n".to_string(), String::new())
    );
    // the kubelet's own error for a pod it does not run, through the API server
    let (ok, _, err) = kubectl(&["logs", "talker", "--previous"]);
    assert!(!ok);
    assert!(
        err.contains("previous terminated container \"main\" in pod \"talker\" not found"),
        "{err}"
    );

    // Straight to the kubelet, from the control-plane node's network as the API server calls it.
    let real = c.sim.real().expect("a real cluster");
    let from = real.network.node("control-plane-1").unwrap().clone();
    let worker = Layout::Kubeadm.node_ip(1);
    let root = c.sim.node_root("worker-1");
    let pki = c.sim.state_dir().join("control-plane/pki");
    let path = "/containerLogs/default/talker/main?tailLines=2";
    let none = kubelet_get(&from, &worker, &root, path, None, None).await;
    assert_eq!(none, (401, "Unauthorized".to_string()));
    let token = sa_token(&c.client).await;
    let sa = kubelet_get(&from, &worker, &root, path, Some(&token), None).await;
    assert_eq!(
        sa,
        (
            403,
            "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, subresource(s)=[proxy])\n".to_string()
        )
    );
    let cert = Some(pki.join("apiserver-kubelet-client"));
    let admin = kubelet_get(&from, &worker, &root, path, None, cert.as_deref()).await;
    assert_eq!(admin, (200, "two\nthree\n".to_string()));
    let healthz = kubelet_get(&from, &worker, &root, "/healthz", None, cert.as_deref()).await;
    assert_eq!(healthz, (200, "ok".to_string()));
    let unknown = kubelet_get(
        &from,
        &worker,
        &root,
        "/exec/default/talker/main",
        None,
        cert.as_deref(),
    )
    .await;
    assert_eq!(unknown, (404, "404: Page Not Found".to_string()));
    let gone = kubelet_get(
        &from,
        &worker,
        &root,
        "/containerLogs/default/nobody/main",
        None,
        cert.as_deref(),
    )
    .await;
    assert_eq!(gone, (404, "pod \"nobody\" does not exist".to_string()));
    c.sim.shutdown().await;
}

/// A token of ServiceAccount default/default, by TokenRequest.
async fn sa_token(client: &kube::Client) -> String {
    let req = http::Request::post("/api/v1/namespaces/default/serviceaccounts/default/token")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})).unwrap())
        .unwrap();
    let v: serde_json::Value = client.request(req).await.expect("TokenRequest");
    v["status"]["token"].as_str().unwrap().to_string()
}

/// `GET path` of the kubelet at `ip:10250`, dialled from inside `from` (a node's network),
/// trusting the CA of the kubelet's self-signed certificate in the node's
/// /var/lib/kubelet/pki/kubelet.crt for the node's name (its root's last component); with a bearer token or the client
/// certificate `cert` (`.crt` and `.key`). Returns (status, body).
async fn kubelet_get(
    from: &yurtsim::nodes::runtime::NodeNamespaces,
    ip: &str,
    node_root: &std::path::Path,
    path: &str,
    token: Option<&str>,
    cert: Option<&std::path::Path>,
) -> (u16, String) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let served = std::fs::read(node_root.join("var/lib/kubelet/pki/kubelet.crt"))
        .expect("the kubelet's self-signed certificate");
    let chain: Vec<CertificateDer> = CertificateDer::pem_slice_iter(&served)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(chain.len(), 2, "the certificate, then its CA");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain[1].clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match cert {
        Some(base) => builder
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(base.with_extension("crt"))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap(),
                PrivateKeyDer::from_pem_file(base.with_extension("key")).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let node = node_root.file_name().unwrap().to_string_lossy();
    let addr: std::net::SocketAddr = format!("{ip}:10250").parse().unwrap();
    let tcp = from.connect_tcp(addr).await.expect("dial :10250");
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let mut tls = connector
        .connect(ServerName::try_from(node.to_string()).unwrap(), tcp)
        .await
        .expect("TLS with the kubelet's self-signed certificate for its hostname");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {ip}:10250\r\n{auth}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// Whether a process of this machine runs with exactly `argv` (its /proc/PID/cmdline).
fn process_runs(argv: &[&str]) -> bool {
    let want = argv.iter().map(|a| format!("{a}\0")).collect::<String>();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| c == want.as_bytes())
}

/// A static pod manifest: `name` running `sh -c SCRIPT` in `image`, pulled per `policy`.
fn static_pod(name: &str, image: &str, policy: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  containers:\n  - name: {name}\n    image: {image}\n    imagePullPolicy: {policy}\n    command: [\"sh\", \"-c\", \"{script}\"]\n"
    )
}

/// A worker's static pods on the real tier run as the kubelet runs them: their images pulled
/// first (an image the node does not have under `imagePullPolicy: Never` leaves the mirror pod
/// Pending, Waiting in ErrImageNeverPull with the kubelet's events, until another pod pulled
/// it), then their containers as real processes, the
/// mirror pod Running and Ready only once they run, with the container's ID and start, and
/// its log readable through the API server and the node's kubelet; a removed manifest's
/// container stops and its mirror pod goes. The control plane's static pods stand for the
/// processes the real tier runs: mirrored and running, nothing started for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tier_static_pods_pull_run_and_log_as_the_kubelet_runs_them() {
    let c = common::start_real(2, Layout::Kubeadm, NEWEST).await;
    let node = "worker-1";
    let manifests = c.sim.node_root(node).join("etc/kubernetes/manifests");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let kubeconfig = c.sim.kubeconfig_path();
    let kubectl = |args: &[&str]| common::kubectl(&kubeconfig, args);
    let status = |name: String| {
        let pods = pods.clone();
        async move { serde_json::to_value(pods.get_opt(&name).await.ok()??.status?).ok() }
    };
    let ready = |s: &serde_json::Value| {
        s["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    };

    // the control plane's mirror pods run with the cluster; no container was started for them
    let cp_pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let apiserver = cp_pods.get("kube-apiserver-control-plane-1").await.unwrap();
    assert_eq!(apiserver.status.unwrap().phase.as_deref(), Some("Running"));
    // (a static pod's container log is under the state directory's sim/static-pods)
    let static_logs = c.sim.state_dir().join("sim/static-pods");
    for component in [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        let dir = static_logs.join(format!("kube-system_{component}-control-plane-1"));
        assert!(!dir.exists(), "{} exists", dir.display());
    }

    // a static pod whose command this machine has
    let web = format!("web-{node}");
    std::fs::write(
        manifests.join("web.yaml"),
        static_pod(
            "web",
            "nginx:1.27",
            "IfNotPresent",
            "echo static web says hello; exec sleep 3607",
        ),
    )
    .unwrap();
    let st = common::eventually(Duration::from_secs(60), "web Ready", || async {
        let s = status(web.clone()).await?;
        ready(&s).then_some(s)
    })
    .await;
    assert_eq!(st["phase"], "Running", "{st}");
    let cs = &st["containerStatuses"][0];
    assert!(
        cs["containerID"]
            .as_str()
            .is_some_and(|id| id.len() > "containerd://".len() && id.starts_with("containerd://")),
        "{st}"
    );
    assert!(cs["state"]["running"]["startedAt"].is_string(), "{st}");
    assert_eq!((&cs["ready"], &cs["started"]), (&json!(true), &json!(true)));
    assert!(process_runs(&["sleep", "3607"]), "web's process runs");
    // its output through the API server, which asks the node's kubelet (:10250)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = kubectl(&["logs", &web]);
        if got == (true, "static web says hello\n".to_string(), String::new()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl logs {web}: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // an image the node does not have and may not pull: Pending, nothing started, until
    // another pod pulled it
    let late = format!("late-{node}");
    std::fs::write(
        manifests.join("late.yaml"),
        static_pod(
            "late",
            "nginx:1.26",
            "Never",
            "echo late says hello; exec sleep 3608",
        ),
    )
    .unwrap();
    let st = common::eventually(
        Duration::from_secs(30),
        "late waiting with ErrImageNeverPull",
        || async {
            let s = status(late.clone()).await?;
            (s["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImageNeverPull")
                .then_some(s)
        },
    )
    .await;
    let never = "Container image \"nginx:1.26\" is not present with pull policy of Never";
    assert_eq!(
        st["containerStatuses"][0]["state"]["waiting"]["message"], never,
        "{st}"
    );
    assert_eq!(st["phase"], "Pending", "{st}");
    assert!(!ready(&st), "{st}");
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "default");
    let evs: Vec<(String, String)> = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={late}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect();
    for (reason, message) in [
        ("ErrImageNeverPull", never),
        ("Failed", "Error: ErrImageNeverPull"),
    ] {
        assert!(
            evs.iter().any(|(r, m)| r == reason && m == message),
            "{reason} {message:?} in {evs:#?}"
        );
    }
    assert!(
        !process_runs(&["sleep", "3608"]),
        "late's process runs without its image"
    );
    let (ok, _, err) = kubectl(&["logs", &late]);
    assert!(!ok && err.contains("is waiting to start"), "{err}");
    // a static pod that may pull nginx:1.26 brings it to the node; late runs on its next try
    std::fs::write(
        manifests.join("puller.yaml"),
        static_pod("puller", "nginx:1.26", "IfNotPresent", "exec sleep 3609"),
    )
    .unwrap();
    let st = common::eventually(Duration::from_secs(60), "late Ready", || async {
        let s = status(late.clone()).await?;
        ready(&s).then_some(s)
    })
    .await;
    assert_eq!(st["phase"], "Running", "{st}");
    assert!(process_runs(&["sleep", "3608"]), "late's process runs");

    // the manifest removed: its container stops and its mirror pod goes
    std::fs::remove_file(manifests.join("web.yaml")).unwrap();
    common::eventually(Duration::from_secs(30), "web's mirror pod gone", || async {
        pods.get_opt(&web).await.ok()?.is_none().then_some(())
    })
    .await;
    common::eventually(Duration::from_secs(30), "web's process gone", || async {
        (!process_runs(&["sleep", "3607"])).then_some(())
    })
    .await;
    c.sim.shutdown().await;
}
