//! Init containers run to completion, one after another, before the app containers, sharing
//! the pod's volumes; images the sim knows show their files (a modelled binary is a one-line
//! file naming its model). Checked through the API and through `kubectl get pod`.

mod common;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams, PostParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const NODE: &str = "worker-1";

fn pod(name: &str, restart: &str, init_script: &[&str], main_script: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"restartPolicy": restart, "nodeName": NODE, "automountServiceAccountToken": false,
            "initContainers": [{"name": "fetch", "image": "openyurt/yurthub:v1.7.0",
                "command": init_script,
                "volumeMounts": [{"name": "bin", "mountPath": "/opt/yurtctl/bin"}]}],
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", main_script],
                "volumeMounts": [{"name": "bin", "mountPath": "/opt/yurtctl/bin"}]}],
            "volumes": [{"name": "bin", "emptyDir": {}}]}
    }))
    .unwrap()
}

/// `kubectl get pod NAME --no-headers` columns: (READY, STATUS, RESTARTS).
fn kubectl_row(c: &common::TestCluster, name: &str) -> (String, String, String) {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(c.sim.kubeconfig_path())
        .args(["get", "pod", name, "--no-headers"])
        .output()
        .expect("kubectl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let cols: Vec<&str> = text.split_whitespace().collect();
    assert!(
        cols.len() >= 4,
        "kubectl get pod {name}: {text:?} {:?}",
        out.stderr
    );
    (cols[1].into(), cols[2].into(), cols[3].into())
}

async fn pod_json(pods: &Api<Pod>, name: &str) -> Value {
    serde_json::to_value(pods.get(name).await.unwrap()).unwrap()
}

async fn wait_phase(pods: &Api<Pod>, name: &str, phase: &str) -> Value {
    common::eventually(
        Duration::from_secs(20),
        &format!("pod {name} phase {phase}"),
        || async {
            let p = pod_json(pods, name).await;
            (p["status"]["phase"] == phase).then_some(p)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_container_copies_the_yurthub_binary_out_of_its_image_for_the_app_container() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let main = "head -1 /opt/yurtctl/bin/yurthub; stat -c %a /opt/yurtctl/bin/yurthub; \
                test -e /usr/local/bin/yurthub || echo image-files-only-in-their-image";
    pods.create(
        &PostParams::default(),
        &pod(
            "copy",
            "Never",
            &[
                "cp",
                "-p",
                "/usr/local/bin/yurthub",
                "/opt/yurtctl/bin/yurthub",
            ],
            main,
        ),
    )
    .await
    .unwrap();
    let p = wait_phase(&pods, "copy", "Succeeded").await;
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed", "{p}");
    assert_eq!(init["ready"], true);
    let log = pods
        .logs(
            "copy",
            &LogParams {
                container: Some("main".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        log,
        "#!yurtsim-model yurthub v1.7.0\n755\nimage-files-only-in-their-image\n"
    );
    assert_eq!(kubectl_row(&c, "copy").1, "Completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_missing_from_the_image_fails_the_init_container_and_the_job() {
    let c = common::start(2, Layout::Kubeadm).await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let p = pod(
        "x",
        "Never",
        // the yurthub image has no node-servant
        &["cp", "/usr/local/bin/node-servant", "/opt/yurtctl/bin/"],
        "touch /opt/yurtctl/bin/app-ran",
    );
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "fetch"},
        "spec": {"backoffLimit": 0, "template": {"spec": serde_json::to_value(p.spec).unwrap()}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    common::eventually(Duration::from_secs(20), "job fetch Failed", || async {
        let j = jobs.get("fetch").await.ok()?;
        j.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Failed" && c.status == "True")
    })
    .await;
    let list = pods
        .list(&kube::api::ListParams::default().labels("job-name=fetch"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let name = list.items[0].metadata.name.clone().unwrap();
    let p = wait_phase(&pods, &name, "Failed").await;
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 1, "{p}");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "PodInitializing",
        "the app container never started: {p}"
    );
    let init_log = pods
        .logs(
            &name,
            &LogParams {
                container: Some("fetch".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        init_log.contains("/usr/local/bin/node-servant") && init_log.contains("No such file"),
        "{init_log}"
    );
    assert_eq!(kubectl_row(&c, &name).1, "Init:Error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_init_container_is_retried_with_back_off_under_on_failure() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    // fails on its first run, waits a little on its second, then succeeds
    let init = "if [ -e /opt/yurtctl/bin/tried ]; then sleep 1; exit 0; fi; \
                touch /opt/yurtctl/bin/tried; exit 3";
    pods.create(
        &PostParams::default(),
        &pod("retry", "OnFailure", &["sh", "-c", init], "echo app"),
    )
    .await
    .unwrap();
    let statuses = common::eventually(Duration::from_secs(20), "init restart", || async {
        let p = pod_json(&pods, "retry").await;
        let init = &p["status"]["initContainerStatuses"][0];
        (init["restartCount"] == 1 && init["state"]["running"].is_object()).then_some(p)
    })
    .await;
    assert_eq!(statuses["status"]["phase"], "Pending");
    assert_eq!(
        statuses["status"]["initContainerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        3
    );
    let cond = statuses["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Initialized")
        .unwrap()
        .clone();
    assert_eq!(cond["status"], "False");
    assert_eq!(
        cond["message"],
        "containers with incomplete status: [fetch]"
    );
    assert_eq!(kubectl_row(&c, "retry").1, "Init:0/1");
    let done = wait_phase(&pods, "retry", "Succeeded").await;
    assert_eq!(
        done["status"]["initContainerStatuses"][0]["restartCount"],
        1
    );
    let log = pods
        .logs(
            "retry",
            &LogParams {
                container: Some("main".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log, "app\n");
}
