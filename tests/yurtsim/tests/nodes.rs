//! Simulated nodes and kubelets: Jobs really run on their node against that node's files;
//! static pods become mirror pods; the kubelet's effective kubeconfig decides readiness.

mod common;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, LogParams, PostParams};
use serde_json::json;
use yurtsim::Layout;

fn job(name: &str, node: &str, script: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "nodeName": node, "hostNetwork": true, "hostPID": true,
            "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", script],
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "volumeMounts": [{"name": "host", "mountPath": "/host"}]}],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}}
    }))
    .unwrap()
}

async fn job_condition(jobs: &Api<Job>, name: &str) -> String {
    common::eventually(
        Duration::from_secs(20),
        &format!("job {name} to finish"),
        || async {
            let j = jobs.get(name).await.ok()?;
            j.status?
                .conditions?
                .into_iter()
                .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
                .map(|c| c.type_)
        },
    )
    .await
}

async fn job_pod_log(client: &kube::Client, job: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let p = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await
        .unwrap()
        .items
        .remove(0);
    pods.logs(&p.metadata.name.unwrap(), &LogParams::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_changes_exactly_its_own_nodes_root_and_its_output_is_in_the_log() {
    let c = common::start(3, Layout::Kubeadm).await;
    let before: Vec<_> = c
        .sim
        .node_names()
        .iter()
        .map(|n| common::snapshot(&c.sim.node_root(n)))
        .collect();
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    jobs.create(&PostParams::default(), &job("touch", "worker-2", "echo \"on $NODE as $(hostname)\"; cat /host/etc/hostname; echo edited > /host/etc/yurtsim-test")).await.unwrap();
    assert_eq!(job_condition(&jobs, "touch").await, "Complete");
    let log = job_pod_log(&c.client, "touch").await;
    assert_eq!(log, "on worker-2 as worker-2\nworker-2\n");
    for (i, n) in c.sim.node_names().iter().enumerate() {
        let mut after = common::snapshot(&c.sim.node_root(n));
        if n == "worker-2" {
            assert_eq!(
                after.remove("etc/yurtsim-test").as_deref(),
                Some(&b"edited\n"[..])
            );
        }
        common::assert_same_tree(&before[i], &after, &format!("node {n} root"));
    }
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_command_fails_the_job_and_injected_failures_too() {
    let c = common::start(2, Layout::Kind).await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job("boom", "kind-worker", "echo about to fail >&2; exit 3"),
    )
    .await
    .unwrap();
    assert_eq!(job_condition(&jobs, "boom").await, "Failed");
    assert_eq!(job_pod_log(&c.client, "boom").await, "about to fail\n");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let p = pods
        .list(&ListParams::default().labels("job-name=boom"))
        .await
        .unwrap()
        .items
        .remove(0);
    let st = p.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Failed"));
    let term = st.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!((term.exit_code, term.reason.as_deref()), (3, Some("Error")));

    c.sim.faults().fail_jobs_on("kind-worker", 7);
    jobs.create(
        &PostParams::default(),
        &job("ok-but-faulted", "kind-worker", "true"),
    )
    .await
    .unwrap();
    assert_eq!(job_condition(&jobs, "ok-but-faulted").await, "Failed");
    c.sim.faults().clear_failing_jobs("kind-worker");
    jobs.create(&PostParams::default(), &job("ok", "kind-worker", "true"))
        .await
        .unwrap();
    assert_eq!(job_condition(&jobs, "ok").await, "Complete");
    c.sim.shutdown().await;
}

fn mirror_hash(p: &Pod) -> String {
    p.metadata.annotations.as_ref().unwrap()["kubernetes.io/config.hash"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_pod_manifests_become_mirror_pods_that_follow_the_file() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let dir = c.sim.node_root("worker-1").join("etc/kubernetes/manifests");
    let manifest = |image: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nginx\n  namespace: default\n  labels:\n    app: nginx\nspec:\n  containers:\n  - name: nginx\n    image: {image}\n"
        )
    };
    std::fs::write(dir.join("nginx.yaml"), manifest("nginx:1.19.1")).unwrap();
    // Dot files are ignored, as by the real kubelet.
    std::fs::write(dir.join(".nginx.yaml.tmp"), manifest("nginx:9")).unwrap();
    let first = common::eventually(
        Duration::from_secs(10),
        "mirror pod nginx-worker-1 Running",
        || async {
            let p = pods.get("nginx-worker-1").await.ok()?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
        },
    )
    .await;
    let ann = first.metadata.annotations.clone().unwrap();
    assert_eq!(ann["kubernetes.io/config.source"], "file");
    assert_eq!(
        ann["kubernetes.io/config.mirror"],
        ann["kubernetes.io/config.hash"]
    );
    assert_eq!(first.metadata.labels.clone().unwrap()["app"], "nginx");
    let owner = &first.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "worker-1")
    );
    assert_eq!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.metadata.name.as_deref().unwrap().starts_with("nginx"))
            .count(),
        1
    );

    std::fs::write(dir.join("nginx.yaml"), manifest("nginx:1.19.2")).unwrap();
    let second = common::eventually(
        Duration::from_secs(10),
        "mirror pod replaced with a new hash",
        || async {
            let p = pods.get("nginx-worker-1").await.ok()?;
            (mirror_hash(&p) != mirror_hash(&first) && p.metadata.uid != first.metadata.uid)
                .then_some(p)
        },
    )
    .await;
    assert_eq!(
        second.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx:1.19.2")
    );

    std::fs::remove_file(dir.join("nginx.yaml")).unwrap();
    common::eventually(Duration::from_secs(10), "mirror pod deleted", || async {
        pods.get("nginx-worker-1").await.is_err().then_some(())
    })
    .await;
    c.sim.shutdown().await;
}

/// Lists the `kubelet` processes this pod sees: "<pid> <args>" per line.
const PS_KUBELET: &str = r#"for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = kubelet ] && echo "${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"; done; true"#;

fn kubeconfig_flag(ps: &str) -> Option<&str> {
    ps.split_whitespace()
        .rev()
        .find_map(|a| a.strip_prefix("--kubeconfig="))
}

/// As on a real node (kubernetes/kubernetes@v1.33.0 pkg/kubelet/kuberuntime/util/util.go
/// `PidNamespaceForPod`): a `hostPID` pod sees its node's kubelet process, started with the
/// flags it runs with until it is restarted; any other pod sees only its own processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_pid_pod_sees_its_nodes_kubelet_with_the_flags_it_was_started_with() {
    let c = common::start(3, Layout::Kubeadm).await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let run = |name: &'static str, node: &'static str, script: String, host_pid: bool| {
        let jobs = jobs.clone();
        let client = c.client.clone();
        async move {
            let mut j = job(name, node, &script);
            if !host_pid {
                j.spec
                    .as_mut()
                    .unwrap()
                    .template
                    .spec
                    .as_mut()
                    .unwrap()
                    .host_pid = None;
            }
            jobs.create(&PostParams::default(), &j).await.unwrap();
            assert_eq!(job_condition(&jobs, name).await, "Complete", "{name}");
            job_pod_log(&client, name).await
        }
    };
    // every node's first hostPID pod at once: each node's namespace is made once, none fails
    let (first, on_cp, on_w2) = tokio::join!(
        run("ps1", "worker-1", PS_KUBELET.into(), true),
        run("ps-cp", "control-plane-1", PS_KUBELET.into(), true),
        run("ps-w2", "worker-2", PS_KUBELET.into(), true),
    );
    for ps in [&on_cp, &on_w2] {
        assert_eq!(ps.lines().count(), 1, "{ps}");
    }
    assert_eq!(first.lines().count(), 1, "one kubelet, its node's: {first}");
    assert_eq!(
        kubeconfig_flag(&first),
        Some("/etc/kubernetes/kubelet.conf"),
        "{first}"
    );
    let own = run(
        "own",
        "worker-1",
        format!("{PS_KUBELET}; ls -d /proc/[0-9]*"),
        false,
    )
    .await;
    assert_eq!(
        own.trim(),
        "/proc/1",
        "no kubelet, only itself as PID 1: {own}"
    );

    // new flags in the files change nothing until the restart
    let edit = "cp /host/etc/kubernetes/kubelet.conf /host/etc/kubernetes/copy.conf && sed -i 's|KUBELET_KUBEADM_ARGS=\"|KUBELET_KUBEADM_ARGS=\"--kubeconfig=/etc/kubernetes/copy.conf |' /host/var/lib/kubelet/kubeadm-flags.env";
    let unchanged = run("edit", "worker-1", format!("{edit} && {PS_KUBELET}"), true).await;
    assert_eq!(unchanged, first, "the running kubelet keeps its flags");
    let restarted = run(
        "restart",
        "worker-1",
        format!("nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart kubelet && {PS_KUBELET}"),
        true,
    )
    .await;
    assert_eq!(
        kubeconfig_flag(&restarted),
        Some("/etc/kubernetes/copy.conf"),
        "{restarted}"
    );
    assert_ne!(
        restarted.split_whitespace().next(),
        first.split_whitespace().next(),
        "a new process"
    );
    let other = run("ps2", "worker-2", PS_KUBELET.into(), true).await;
    assert_eq!(
        kubeconfig_flag(&other),
        Some("/etc/kubernetes/kubelet.conf"),
        "{other}"
    );
    // a stopped kubelet reports nothing, the Job's end included, until its operator starts it
    jobs.create(
        &PostParams::default(),
        &job(
            "stop",
            "worker-1",
            &format!("systemctl stop kubelet; {PS_KUBELET}; touch /host/stop-done"),
        ),
    )
    .await
    .unwrap();
    let done = c.sim.node_root("worker-1").join("stop-done");
    common::eventually(Duration::from_secs(10), "the stop Job's script", || async {
        done.exists().then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let j = jobs.get("stop").await.unwrap();
    assert_eq!(j.status.unwrap().succeeded.unwrap_or(0), 0, "not reported");
    c.sim.node_kubelet("worker-1", true).unwrap();
    assert_eq!(job_condition(&jobs, "stop").await, "Complete");
    let stopped = job_pod_log(&c.client, "stop").await;
    assert_eq!(stopped, "", "no kubelet process once it is stopped");
    c.sim.shutdown().await;
}

/// Points `node`'s kubelet at an address nothing serves and restarts it (a Job on the node);
/// returns once the kubelet runs with it.
async fn cut_off_from_its_api_server(c: &common::TestCluster, node: &'static str) {
    let conf = c.sim.node_root(node).join("etc/kubernetes/kubelet.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.contains("https://10.0.0.1:6443"));
    std::fs::write(
        &conf,
        text.replace("https://10.0.0.1:6443", "https://10.9.9.9:6443"),
    )
    .unwrap();
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &job("restart", node, "systemctl restart kubelet"),
    )
    .await
    .unwrap();
    let nodes: Api<Node> = Api::all(c.client.clone());
    common::eventually(Duration::from_secs(10), "the kubelet to notice", || async {
        let n = nodes.get(node).await.ok()?;
        (n.metadata
            .annotations?
            .get("yurtsim.openyurt.io/kubelet-server")?
            == "https://10.9.9.9:6443")
            .then_some(())
    })
    .await;
}

fn ready_status(n: &Node) -> String {
    n.status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap()
        .status
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_pointed_at_yurthub_is_ready_only_while_yurthub_runs() {
    let c = common::start(3, Layout::Kubeadm).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let root = c.sim.node_root("worker-1");
    // What a convert does on the node, by hand: a kubeconfig for YurtHub and the kubelet flag.
    std::fs::create_dir_all(root.join("var/lib/openyurt")).unwrap();
    std::fs::write(
        root.join("var/lib/openyurt/kubelet.conf"),
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: http://127.0.0.1:10261\n  name: default-cluster\ncontexts:\n- context:\n    cluster: default-cluster\n    namespace: default\n    user: default-auth\n  name: default-context\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user: {}\n",
    )
    .unwrap();
    let env = root.join("var/lib/kubelet/kubeadm-flags.env");
    let text = std::fs::read_to_string(&env).unwrap();
    std::fs::write(
        &env,
        text.replacen(
            "KUBELET_KUBEADM_ARGS=\"",
            "KUBELET_KUBEADM_ARGS=\"--kubeconfig=/var/lib/openyurt/kubelet.conf ",
            1,
        ),
    )
    .unwrap();
    // The servant restarts the kubelet through nsenter + systemctl; the sim's stubs make that real.
    // (the Job's own end is reported only once the kubelet reaches its API server again)
    jobs.create(&PostParams::default(), &job("restart", "worker-1", "nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart kubelet && systemctl is-active kubelet")).await.unwrap();
    let ann = common::eventually(Duration::from_secs(10), "the kubelet restarted", || async {
        let ann = nodes.get("worker-1").await.ok()?.metadata.annotations?;
        (ann.get("yurtsim.openyurt.io/kubelet-kubeconfig")?.as_str()
            == "/var/lib/openyurt/kubelet.conf")
            .then_some(ann)
    })
    .await;
    assert_eq!(
        ann["yurtsim.openyurt.io/kubelet-kubeconfig"],
        "/var/lib/openyurt/kubelet.conf"
    );
    assert_eq!(
        ann["yurtsim.openyurt.io/kubelet-server"],
        "http://127.0.0.1:10261"
    );
    common::eventually(
        Duration::from_secs(10),
        "worker-1 NotReady without a hub",
        || async { (ready_status(&nodes.get("worker-1").await.ok()?) != "True").then_some(()) },
    )
    .await;
    assert_eq!(
        ready_status(&nodes.get("worker-2").await.unwrap()),
        "True",
        "other nodes are unaffected"
    );

    // A running yurt-hub static pod makes the hub address reachable again.
    std::fs::write(
        root.join("etc/kubernetes/manifests/yurt-hub.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\n  namespace: kube-system\n  labels:\n    k8s-app: yurt-hub\nspec:\n  hostNetwork: true\n  containers:\n  - name: yurt-hub\n    image: openyurt/yurthub:v1.6.0\n    command: [\"yurthub\", \"--v=2\"]\n",
    )
    .unwrap();
    common::eventually(
        Duration::from_secs(10),
        "worker-1 Ready through YurtHub",
        || async { (ready_status(&nodes.get("worker-1").await.ok()?) == "True").then_some(()) },
    )
    .await;
    assert_eq!(job_condition(&jobs, "restart").await, "Complete");
    assert_eq!(job_pod_log(&c.client, "restart").await, "active\n");
    // The hub's node-local endpoint answers on that node's loopback only.
    let probe = job(
        "probe",
        "worker-1",
        "exec 3<>/dev/tcp/127.0.0.1/10267 && printf 'GET /v1/healthz HTTP/1.0\\r\\n\\r\\n' >&3 && tail -n1 <&3",
    );
    jobs.create(&PostParams::default(), &probe).await.unwrap();
    assert_eq!(job_condition(&jobs, "probe").await, "Complete");
    assert_eq!(job_pod_log(&c.client, "probe").await.trim(), "OK");
    jobs.create(
        &PostParams::default(),
        &job("probe2", "worker-2", "exec 3<>/dev/tcp/127.0.0.1/10267"),
    )
    .await
    .unwrap();
    assert_eq!(
        job_condition(&jobs, "probe2").await,
        "Failed",
        "worker-2 has no hub on its loopback"
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_not_ready_node_is_tainted_and_recovers() {
    let c = common::start(2, Layout::Minikube).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let name = c
        .sim
        .node_names()
        .into_iter()
        .find(|n| n != "minikube")
        .unwrap();
    c.sim.set_node_ready(&name, false).unwrap();
    let n = nodes.get(&name).await.unwrap();
    assert_eq!(ready_status(&n), "False");
    let taints: Vec<String> = n
        .spec
        .unwrap()
        .taints
        .unwrap_or_default()
        .into_iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect();
    assert!(
        taints.contains(&"node.kubernetes.io/not-ready:NoSchedule".to_string()),
        "{taints:?}"
    );
    c.sim.set_node_ready(&name, true).unwrap();
    let n = nodes.get(&name).await.unwrap();
    assert_eq!(ready_status(&n), "True");
    assert!(n.spec.unwrap().taints.unwrap_or_default().is_empty());
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurthub_ota_endpoint_installs_the_configmap_manifest_with_yurthubs_status_codes() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Patch, PatchParams};
    let c = common::start(2, Layout::Kubeadm).await;
    let dir = c.sim.node_root("worker-1").join("etc/kubernetes/manifests");
    std::fs::write(dir.join("yurt-hub.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\n  namespace: kube-system\n  labels: {k8s-app: yurt-hub}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: yurt-hub, image: openyurt/yurthub:v1.6.0}\n").unwrap();
    let nginx = |v: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nginx\n  namespace: default\nspec:\n  containers:\n  - name: nginx\n    image: nginx:{v}\n"
        )
    };
    std::fs::write(dir.join("nginx.yaml"), nginx("1.19.1")).unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    common::eventually(
        Duration::from_secs(10),
        "nginx and yurt-hub running",
        || async {
            let hub: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
            let running = |p: Pod| p.status.and_then(|s| s.phase).as_deref() == Some("Running");
            (running(pods.get("nginx-worker-1").await.ok()?)
                && running(hub.get("yurt-hub-worker-1").await.ok()?))
            .then_some(())
        },
    )
    .await;
    let ota = |pod: &str| {
        let shared = c.sim.shared().clone();
        let path = format!("/openyurt.io/v1/namespaces/default/pods/{pod}/upgrade");
        async move {
            let resp = yurtsim::nodes::kubelet::yurthub_endpoint(
                &shared,
                "worker-1",
                &hyper::Method::POST,
                &path,
            );
            let code = resp.status().as_u16();
            use http_body_util::BodyExt;
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (code, String::from_utf8_lossy(&body).into_owned())
        }
    };
    // No PodNeedUpgrade condition yet: refused, as YurtHub does.
    let (code, body) = ota("nginx-worker-1").await;
    assert_eq!(code, 403, "{body}");
    assert!(body.starts_with("Pre check update pod failed"), "{body}");
    pods.patch_status(
        "nginx-worker-1",
        &PatchParams::default(),
        &Patch::Strategic(
            json!({"status": {"conditions": [{"type": "PodNeedUpgrade", "status": "True"}]}}),
        ),
    )
    .await
    .unwrap();
    let (code, body) = ota("nginx-worker-1").await;
    assert_eq!(
        (code, body.as_str()),
        (403, "Configmap for static pod does not exist")
    );
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "yurt-static-set-nginx"}, "data": {"nginx": nginx("1.19.2")}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let (code, body) = ota("nginx-worker-1").await;
    assert_eq!(
        (code, body.as_str()),
        (200, "Start updating pod default/nginx-worker-1")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("nginx.yaml")).unwrap(),
        nginx("1.19.2")
    );
    common::eventually(
        Duration::from_secs(10),
        "the mirror pod to run the new image",
        || async {
            let p = pods.get("nginx-worker-1").await.ok()?;
            (p.spec?.containers[0].image.as_deref() == Some("nginx:1.19.2")).then_some(())
        },
    )
    .await;
    let (code, _) = ota("no-such-pod").await;
    assert_eq!(code, 500);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonsets_place_one_pod_per_eligible_node_and_report_status() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let c = common::start(4, Layout::Kind).await;
    let dss: Api<DaemonSet> = Api::namespaced(c.client.clone(), "kube-system");
    // kube-proxy tolerates everything: every node. A DaemonSet without tolerations skips the
    // control plane's NoSchedule taint.
    let ds: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "example.com/node-agent:1.0"}]}}}})).unwrap();
    dss.create(&PostParams::default(), &ds).await.unwrap();
    for (name, want) in [("kube-proxy", 4), ("agent", 3)] {
        common::eventually(
            Duration::from_secs(10),
            &format!("{name} ready on {want} nodes"),
            || async {
                let s = dss.get(name).await.ok()?.status?;
                (s.desired_number_scheduled == want
                    && s.number_ready == want
                    && s.updated_number_scheduled == Some(want))
                .then_some(())
            },
        )
        .await;
    }
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_nodes_go_unknown_only_while_the_nodelifecycle_controller_runs() {
    let c = common::start(3, Layout::Kubeadm).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let kcm = c
        .sim
        .node_root("control-plane-1")
        .join("etc/kubernetes/manifests/kube-controller-manager.yaml");
    let original = std::fs::read_to_string(&kcm).unwrap();
    assert!(original.contains("--controllers=*,bootstrapsigner,tokencleaner"));
    std::fs::write(
        &kcm,
        original.replace(
            "--controllers=*,bootstrapsigner,tokencleaner",
            "--controllers=*,bootstrapsigner,tokencleaner,-nodelifecycle",
        ),
    )
    .unwrap();
    // Break worker-1's kubelet: its kubeconfig now names a server nobody serves.
    cut_off_from_its_api_server(&c, "worker-1").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        ready_status(&nodes.get("worker-1").await.unwrap()),
        "True",
        "nobody marks the node while nodelifecycle is disabled"
    );
    std::fs::write(&kcm, original).unwrap();
    common::eventually(
        Duration::from_secs(10),
        "worker-1 Unknown once nodelifecycle runs again",
        || async { (ready_status(&nodes.get("worker-1").await.ok()?) == "Unknown").then_some(()) },
    )
    .await;
    c.sim.shutdown().await;
}

/// Runs `body` on a runtime in a thread of its own and fails after `limit`: a task wedged on a
/// std Mutex blocks its worker thread, where no tokio timeout fires and the runtime's drop hangs.
fn on_own_runtime<F>(limit: Duration, body: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(body)));
        rt.shutdown_background();
        let _ = tx.send(r);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("the test hung for {limit:?}: a sim task is wedged"),
    }
}

/// Issue 18: the control plane's kubelet goes silent past the node monitor grace; the node
/// lifecycle check reads that same node's kube-controller-manager manifest. The sim must mark
/// the node, keep serving and renewing the other nodes' Leases, and still shut down.
#[test]
fn a_control_plane_kubelet_that_loses_its_api_server_leaves_the_sim_live_and_stoppable() {
    on_own_runtime(Duration::from_secs(60), async {
        let c = common::start(3, Layout::Kubeadm).await;
        let nodes: Api<Node> = Api::all(c.client.clone());
        cut_off_from_its_api_server(&c, "control-plane-1").await;
        // The test grace is 600 ms; the deadlock struck at the first status pass after it.
        common::eventually(
            Duration::from_secs(10),
            "control-plane-1 Unknown after the node monitor grace",
            || async {
                (ready_status(&nodes.get("control-plane-1").await.ok()?) == "Unknown").then_some(())
            },
        )
        .await;
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(c.client.clone(), "kube-node-lease");
        let renewed = || async { leases.get("worker-1").await.ok()?.spec?.renew_time };
        let first = tokio::time::timeout(Duration::from_secs(5), renewed())
            .await
            .expect("the API answers")
            .expect("worker-1 has a Lease");
        common::eventually(
            Duration::from_secs(5),
            "worker-1's Lease renewed",
            || async { (renewed().await? != first).then_some(()) },
        )
        .await;
        tokio::time::timeout(Duration::from_secs(5), nodes.list(&ListParams::default()))
            .await
            .expect("the API answers")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(15), c.sim.shutdown())
            .await
            .expect("Sim::shutdown completes");
    });
}

/// A container that keeps exiting is restarted with the kubelet's doubling back-off and shows as
/// `CrashLoopBackOff` with its restart count and last exit, as `kubectl get pods` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exiting_daemon_crash_loops_with_growing_back_off() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "crasher"},
        "spec": {"nodeName": "worker-1", "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "echo boom; exit 3"]}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let seen = common::eventually(Duration::from_secs(20), "three restarts", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("crasher").await.ok()?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            (cs.restart_count >= 3 && cs.state.as_ref()?.waiting.is_some()).then_some(cs)
        }
    })
    .await;
    let waiting = seen.state.unwrap().waiting.unwrap();
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    assert!(
        waiting
            .message
            .as_deref()
            .unwrap_or("")
            .starts_with("back-off ")
            && waiting
                .message
                .as_deref()
                .unwrap_or("")
                .contains("restarting failed container=main pod=crasher_default("),
        "{waiting:?}"
    );
    let last = seen.last_state.unwrap().terminated.unwrap();
    assert_eq!((last.exit_code, last.reason.as_deref()), (3, Some("Error")));
    assert!(!seen.ready);
    let logs = pods.logs("crasher", &LogParams::default()).await.unwrap();
    assert_eq!(logs.trim(), "boom");
    // the back-off doubles per restart from the base (100 ms in tests; 10 s on a real kubelet)
    let wait = waiting.message.as_deref().unwrap();
    let shown: Vec<&str> = ["100ms", "200ms", "400ms", "800ms", "1.6s", "3s"]
        .into_iter()
        .filter(|d| wait.starts_with(&format!("back-off {d} ")))
        .collect();
    let expected = ["100ms", "200ms", "400ms", "800ms", "1.6s", "3s"]
        [(seen.restart_count as usize - 1).min(5)];
    assert_eq!(shown, vec![expected], "{wait}");
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "default");
    let evs = events
        .list(&ListParams::default().fields("involvedObject.name=crasher"))
        .await
        .unwrap();
    assert!(
        evs.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("BackOff")
                && e.message.as_deref().is_some_and(|m| m.starts_with(
                    "Back-off restarting failed container main in pod crasher_default("
                )))
    );
    c.sim.shutdown().await;
}

// kubernetes/kubernetes@v1.33.0 pkg/kubelet/status/status_manager.go (pod status is posted by
// the kubelet process: a stopped kubelet posts nothing while containerd keeps or has finished
// the containers), pkg/kubelet/kuberuntime (restarts are the kubelet's) and
// pkg/controller/nodelifecycle/node_lifecycle_controller.go (a node silent for
// --node-monitor-grace-period goes Ready=Unknown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelet_stops_reporting_its_pods_and_its_node() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "short"},
        "spec": {"restartPolicy": "Never", "nodeName": "worker-1", "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 1; exit 3"]}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let phase = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default()
    };
    common::eventually(Duration::from_secs(10), "the pod Running", || async {
        let p = pods.get("short").await.ok()?;
        (phase(&p) == "Running").then_some(())
    })
    .await;
    c.sim.node_kubelet("worker-1", false).unwrap();
    // the container has exited meanwhile; nobody tells the API server
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(phase(&pods.get("short").await.unwrap()), "Running");
    let nodes: Api<Node> = Api::all(c.client.clone());
    common::eventually(Duration::from_secs(10), "worker-1 Unknown", || async {
        let n = nodes.get("worker-1").await.ok()?;
        n.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "Unknown")
            .then_some(())
    })
    .await;
    assert_eq!(phase(&pods.get("short").await.unwrap()), "Running");
    // started again, it reports what the runtime kept
    c.sim.node_kubelet("worker-1", true).unwrap();
    let p = common::eventually(Duration::from_secs(10), "the pod Failed", || async {
        let p = pods.get("short").await.ok()?;
        (phase(&p) == "Failed").then_some(p)
    })
    .await;
    let cs = &p.status.unwrap().container_statuses.unwrap()[0];
    assert_eq!(
        cs.state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code,
        3
    );
    c.sim.shutdown().await;
}
