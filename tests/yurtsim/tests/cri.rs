//! The container runtime model: the kubelet's CRI endpoint per layout, `crictl` on the node
//! (ps, stop, logs, errors), restarts of stopped containers, and the service env a container gets
//! directly or through YurtHub.

mod common;

use std::time::Duration;

use common::hub::{on_node, redirect_kubelet, run_yurthub};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const WORKER: &str = "worker-1";
const EP: &str = "unix:///var/run/containerd/containerd.sock";

fn crictl(args: &str) -> String {
    format!("nsenter --target 1 --mount --uts --ipc --net --pid -- crictl {args}")
}

async fn web_deployment(c: &common::TestCluster) -> String {
    common::apply(&c.client, &[json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "nodeSelector": {"kubernetes.io/hostname": WORKER},
                "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}})]).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    common::eventually(Duration::from_secs(30), "web pod running", || async {
        let l = pods
            .list(&ListParams::default().labels("app=web"))
            .await
            .ok()?;
        let p = l.items.first()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running"))
            .then(|| p.metadata.name.clone().unwrap())
    })
    .await
}

fn parse(log: &str) -> Value {
    serde_json::from_str(&log[log.find('{').unwrap()..=log.rfind('}').unwrap()]).unwrap()
}

fn find<'a>(ps: &'a Value, pod_prefix: &str, name: &str) -> Option<&'a Value> {
    ps["containers"].as_array()?.iter().find(|c| {
        c["labels"]["io.kubernetes.pod.name"]
            .as_str()
            .is_some_and(|p| p.starts_with(pod_prefix))
            && c["labels"]["io.kubernetes.container.name"] == name
    })
}

async fn pod_status(c: &common::TestCluster, name: &str) -> Value {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    serde_json::to_value(pods.get(name).await.unwrap().status.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_endpoint_and_socket_per_layout() {
    for (layout, ep, sock) in [
        (
            Layout::Kubeadm,
            "unix:///var/run/containerd/containerd.sock",
            "run/containerd/containerd.sock",
        ),
        (
            Layout::KubeadmUsr,
            "unix:///var/run/containerd/containerd.sock",
            "run/containerd/containerd.sock",
        ),
        (
            Layout::Kind,
            "unix:///run/containerd/containerd.sock",
            "run/containerd/containerd.sock",
        ),
        (
            Layout::Minikube,
            "unix:///var/run/cri-dockerd.sock",
            "run/cri-dockerd.sock",
        ),
    ] {
        let c = common::start(2, layout).await;
        for node in c.sim.node_names() {
            assert_eq!(
                c.sim.kubelet_runtime_endpoint(&node).as_deref(),
                Some(ep),
                "{layout:?} {node}"
            );
            let root = c.sim.node_root(&node);
            let md = std::fs::metadata(root.join(sock)).unwrap();
            assert!(
                std::os::unix::fs::FileTypeExt::is_socket(&md.file_type()),
                "{layout:?}"
            );
            // The path the endpoint names resolves to it (/var/run -> /run).
            let path = ep.trim_start_matches("unix://").trim_start_matches('/');
            assert!(
                std::fs::metadata(root.join(path)).is_ok(),
                "{layout:?} {path}"
            );
        }
        // Static pods' containers are CRI containers on the control plane (not the pause ones).
        let cp = c
            .sim
            .node_names()
            .into_iter()
            .find(|n| n != WORKER && !n.contains("m02"))
            .unwrap();
        let names: Vec<String> =
            common::eventually(Duration::from_secs(10), "static containers", || async {
                let v: Vec<String> = c
                    .sim
                    .containers(&cp)
                    .iter()
                    .map(|x| x.name.clone())
                    .collect();
                v.contains(&"kube-apiserver".to_string()).then_some(v)
            })
            .await;
        assert!(!names.iter().any(|n| n == "POD"), "{names:?}");
        c.sim.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadm_1_34_moves_the_endpoint_into_the_kubelet_config() {
    let c = common::start_with(2, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.34.1".into()
    })
    .await;
    let root = c.sim.node_root(WORKER);
    let flags = std::fs::read_to_string(root.join("var/lib/kubelet/kubeadm-flags.env")).unwrap();
    assert!(!flags.contains("--container-runtime-endpoint"), "{flags}");
    let cfg = std::fs::read_to_string(root.join("var/lib/kubelet/config.yaml")).unwrap();
    assert!(
        cfg.contains(&format!("containerRuntimeEndpoint: {EP}\n")),
        "{cfg}"
    );
    let inst = std::fs::read_to_string(root.join("var/lib/kubelet/instance-config.yaml")).unwrap();
    assert!(inst.contains(EP), "{inst}");
    assert_eq!(c.sim.kubelet_runtime_endpoint(WORKER).as_deref(), Some(EP));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ps_lists_pods_and_jobs_and_stop_restarts_with_a_new_container() {
    let c = common::start(2, Layout::Kubeadm).await;
    let web = web_deployment(&c).await;
    let log = on_node(&c, WORKER, "ps1", &crictl(&format!("-r {EP} ps -o json"))).await;
    let ps = parse(&log);
    let w = find(&ps, &web, "web").unwrap_or_else(|| panic!("{log}"));
    assert_eq!(w["state"], "CONTAINER_RUNNING");
    assert_eq!(w["metadata"], json!({"name": "web", "attempt": 0}));
    assert_eq!(w["labels"]["io.kubernetes.pod.namespace"], "default");
    assert_eq!(
        w["annotations"]["io.kubernetes.container.restartCount"],
        "0"
    );
    assert!(w["createdAt"].as_str().unwrap().parse::<i64>().unwrap() > 0);
    assert_eq!(w["id"].as_str().unwrap().len(), 64);
    let me = find(&ps, "ps1-", "main").unwrap_or_else(|| panic!("the Job's own container: {log}"));
    assert_eq!(me["state"], "CONTAINER_RUNNING");
    let old = w["id"].as_str().unwrap().to_string();

    // Other spellings of the endpoint flag.
    for (i, flag) in [
        format!("-r={EP}"),
        format!("--runtime-endpoint {EP}"),
        format!("--runtime-endpoint={EP}"),
    ]
    .iter()
    .enumerate()
    {
        let log = on_node(
            &c,
            WORKER,
            &format!("ps-flag{i}"),
            &crictl(&format!("{flag} ps -o json")),
        )
        .await;
        assert!(find(&parse(&log), &web, "web").is_some(), "{flag}: {log}");
    }

    let out = on_node(
        &c,
        WORKER,
        "stop1",
        &format!("{}; echo rc=$?", crictl(&format!("-r {EP} stop {old}"))),
    )
    .await;
    assert_eq!(out, format!("{old}\nrc=0\n"));
    let st = common::eventually(Duration::from_secs(20), "web restarted", || async {
        let st = pod_status(&c, &web).await;
        let cs = st["containerStatuses"][0].clone();
        (cs["restartCount"] == 1 && cs["state"]["running"].is_object()).then_some(cs)
    })
    .await;
    assert_eq!(st["lastState"]["terminated"]["exitCode"], 137);
    assert_eq!(st["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(
        st["lastState"]["terminated"]["containerID"],
        format!("containerd://{old}")
    );
    let new = st["containerID"]
        .as_str()
        .unwrap()
        .trim_start_matches("containerd://")
        .to_string();
    assert_ne!(new, old);
    assert_eq!(
        c.sim.container_restarts(WORKER, "default", &web, "web"),
        Some(1)
    );

    let log = on_node(
        &c,
        WORKER,
        "ps2",
        &crictl(&format!("-r {EP} ps -a -o json")),
    )
    .await;
    let ps = parse(&log);
    let running: Vec<&Value> = ps["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["labels"]["io.kubernetes.pod.name"] == json!(web))
        .collect();
    assert_eq!(running.len(), 2, "new and exited: {log}");
    assert_eq!(running[0]["id"], json!(new));
    assert_eq!(running[0]["metadata"]["attempt"], 1);
    assert_eq!(running[1]["state"], "CONTAINER_EXITED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crictl_errors_are_crictls() {
    let c = common::start(2, Layout::Kubeadm).await;
    let script = [
        format!(
            "{}; echo rc=$?",
            crictl("-r unix:///run/nope.sock ps -o json")
        ),
        format!("{}; echo rc=$?", crictl(&format!("-r {EP} stop deadbeef"))),
        format!("{}; echo rc=$?", crictl(&format!("-r {EP} frob"))),
        format!("{}; echo rc=$?", crictl(&format!("-r {EP} pods"))),
        format!("{} >/dev/null; echo rc=$?", crictl("ps -o json")),
    ]
    .join("; ");
    let out = on_node(&c, WORKER, "errs", &script).await;
    assert!(out.contains(r#"level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/nope.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/nope.sock: connect: no such file or directory\""
rc=1"#), "{out}");
    assert!(out.contains(r#"msg="stopping the container \"deadbeef\": rpc error: code = NotFound desc = an error occurred when try to find container \"deadbeef\": not found"
rc=1"#), "{out}");
    assert!(out.contains("No help topic for 'frob'\nrc=3\n"), "{out}");
    assert!(
        out.contains("'crictl pods' is not modelled\nrc=1\n"),
        "{out}"
    );
    // No endpoint and no /etc/crictl.yaml: crictl's deprecated defaults, containerd first.
    assert!(
        out.contains("level=warning msg=\"runtime connect using default endpoints"),
        "{out}"
    );
    assert!(out.ends_with("rc=0\n"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_jobs_own_container_kills_the_job() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    // A Job that would print "survived" after a while; stopped from another Job meanwhile.
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(c.client.clone(), "default");
    jobs.create(&Default::default(), &serde_json::from_value(json!({
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "nodeName": WORKER,
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", "sleep 3; echo survived"]}]}}}})).unwrap())
        .await
        .unwrap();
    let id = common::eventually(Duration::from_secs(20), "victim container", || async {
        c.sim
            .containers(WORKER)
            .into_iter()
            .find(|x| x.pod.starts_with("victim-") && x.running())
            .map(|x| x.id)
    })
    .await;
    let out = on_node(&c, WORKER, "killer", &crictl(&format!("-r {EP} stop {id}"))).await;
    assert_eq!(out, format!("{id}\n"));
    let p = common::eventually(Duration::from_secs(20), "victim failed", || async {
        let l = pods
            .list(&ListParams::default().labels("job-name=victim"))
            .await
            .ok()?;
        let p = l.items.into_iter().next()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Failed")).then_some(p)
    })
    .await;
    let st = serde_json::to_value(p.status.unwrap()).unwrap();
    assert_eq!(
        st["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137,
        "{st}"
    );
    let log = pods
        .logs(p.metadata.name.as_deref().unwrap(), &Default::default())
        .await
        .unwrap();
    assert!(!log.contains("survived"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_see_the_master_service_as_their_kubelet_saw_it_at_start() {
    let c = common::start(2, Layout::Kubeadm).await;
    let web = web_deployment(&c).await;
    let env =
        |c: &common::TestCluster| c.sim.container_env(WORKER, "default", &web, "web").unwrap();
    let e = env(&c);
    assert_eq!(e["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
    assert_eq!(e["KUBERNETES_SERVICE_PORT"], "443");
    assert_eq!(e["KUBERNETES_PORT"], "tcp://10.96.0.1:443");

    run_yurthub(&c, WORKER).await;
    redirect_kubelet(&c, WORKER).await;
    // A running container keeps the env it was started with.
    assert_eq!(env(&c)["KUBERNETES_SERVICE_HOST"], "10.96.0.1");

    let id = c
        .sim
        .containers(WORKER)
        .into_iter()
        .find(|x| x.pod == web && x.running())
        .unwrap()
        .id;
    let log = on_node(
        &c,
        WORKER,
        "inspect",
        &crictl(&format!("-r {EP} inspect {id}")),
    )
    .await;
    let envs = parse(&log)["info"]["config"]["envs"].clone();
    assert!(
        envs.as_array()
            .unwrap()
            .contains(&json!({"key": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"})),
        "{log}"
    );

    on_node(
        &c,
        WORKER,
        "restart-web",
        &crictl(&format!("-r {EP} stop {id}")),
    )
    .await;
    common::eventually(Duration::from_secs(20), "web restarted", || async {
        (c.sim.container_restarts(WORKER, "default", &web, "web") == Some(1)
            && c.sim
                .containers(WORKER)
                .iter()
                .any(|x| x.pod == web && x.running()))
        .then_some(())
    })
    .await;
    let e = env(&c);
    assert_eq!(e["KUBERNETES_SERVICE_HOST"], "169.254.2.1");
    assert_eq!(e["KUBERNETES_SERVICE_PORT"], "10268");
    assert_eq!(e["KUBERNETES_SERVICE_PORT_HTTPS"], "10268");
    assert_eq!(e["KUBERNETES_PORT"], "tcp://169.254.2.1:10268");
    assert_eq!(e["KUBERNETES_PORT_10268_TCP_ADDR"], "169.254.2.1");
}

/// `crictl logs` reads a container's log as the kubelet's log reader does: all of it,
/// `--tail`, `--limit-bytes`, `-p` for the last terminated instance (once it restarted);
/// crictl's own errors for an unknown container, an ID missing, and `-p` of a first instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crictl_logs_tails_a_containers_log_and_knows_no_unknown_container() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &Default::default(),
        &serde_json::from_value(json!({
        "metadata": {"name": "talker", "namespace": "default"},
        "spec": {"nodeName": WORKER, "containers": [{"name": "main", "image": "busybox",
            "command": ["bash", "-c", "for i in 1 2 3 4 5; do echo line $i; done; sleep 600"]}]}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let id = common::eventually(Duration::from_secs(20), "talker's log", || async {
        let x = c
            .sim
            .containers(WORKER)
            .into_iter()
            .find(|x| x.pod == "talker" && x.running())?;
        let log = std::fs::read_to_string(&x.log_path).ok()?;
        log.contains("line 5").then_some(x.id)
    })
    .await;
    let logs = |args: &str| {
        format!(
            "{} 2>&1; echo rc=$?",
            crictl(&format!("-r {EP} logs {args}"))
        )
    };
    let script = [
        logs(&id),
        logs(&format!("--tail 2 {id}")),
        logs(&format!("--tail=1 --limit-bytes 3 {}", &id[..12])),
        logs(&format!("-p {id}")),
        logs("0123456789ab"),
        logs(""),
    ]
    .join("; ");
    let out = on_node(&c, WORKER, "logs1", &script).await;
    assert!(
        out.starts_with(
            "line 1\nline 2\nline 3\nline 4\nline 5\nrc=0\nline 4\nline 5\nrc=0\nlinrc=0\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("level=fatal msg=\"previous terminated container main not found\"\nrc=1\n"),
        "{out}"
    );
    assert!(
        out.contains(r#"level=fatal msg="rpc error: code = NotFound desc = an error occurred when try to find container \"0123456789ab\": not found"
rc=1"#),
        "{out}"
    );
    assert!(
        out.ends_with("level=fatal msg=\"ID cannot be empty\"\nrc=1\n"),
        "{out}"
    );
    assert_eq!(out.matches("rc=").count(), 6, "{out}");

    // stopped and restarted: -p of the new instance is the old one's log, and the old ID's
    // log is still its own
    on_node(
        &c,
        WORKER,
        "stop-talker",
        &crictl(&format!("-r {EP} stop {id}")),
    )
    .await;
    let new = common::eventually(Duration::from_secs(30), "talker restarted", || async {
        let x = c
            .sim
            .containers(WORKER)
            .into_iter()
            .find(|x| x.pod == "talker" && x.running() && x.attempt == 1)?;
        let log = std::fs::read_to_string(&x.log_path).ok()?;
        log.contains("line 5").then_some(x.id)
    })
    .await;
    std::fs::OpenOptions::new()
        .append(true)
        .open(
            c.sim
                .containers(WORKER)
                .into_iter()
                .find(|x| x.id == new)
                .unwrap()
                .log_path,
        )
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"second life\n"))
        .unwrap();
    let script = [
        logs(&format!("--tail 1 {new}")),
        logs(&format!("-p --tail 1 {new}")),
        logs(&format!("--tail 1 {id}")),
        logs(&format!("{new} --tail 1")),
    ]
    .join("; ");
    let out = on_node(&c, WORKER, "logs2", &script).await;
    assert!(
        out.starts_with("second life\nrc=0\nline 5\nrc=0\nline 5\nrc=0\n"),
        "{out}"
    );
    // flags after the ID are arguments to crictl's parser (it would print its help)
    assert!(out.contains("flags go before the ID"), "{out}");
    c.sim.shutdown().await;
}
