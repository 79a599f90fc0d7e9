//! `yurtctl staticpod upgrade` on the real tier, on a static pod that OpenYurt v1.7.0's real
//! yurt-manager also manages through a YurtStaticSet: its controller agrees with what yurtctl
//! rolled out and never rolls the nodes back, and the real YurtHub applies an OTA revision.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{kubectl, real};

const YSS: &str = r#"{"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "YurtStaticSet",
  "metadata": {"name": "nginx", "namespace": "default"},
  "spec": {"staticPodManifest": "nginx", "upgradeStrategy": {"type": "OTA"},
    "template": {"metadata": {"name": "nginx"},
      "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}}}}"#;

/// The user sets the YurtStaticSet's `upgradeStrategy` (JSON).
fn set_strategy(kubeconfig: &Path, strategy: &str) {
    let patch = format!(r#"{{"spec": {{"upgradeStrategy": {strategy}}}}}"#);
    kubectl(
        kubeconfig,
        &[
            "patch",
            "yurtstaticset",
            "nginx",
            "--type",
            "merge",
            "-p",
            &patch,
        ],
    );
}

/// yurt-manager's running pod (`pod/NAME`), not one being deleted.
fn manager_pod(kubeconfig: &Path) -> String {
    real::yurt_manager_pods(kubeconfig)["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| format!("pod/{}", p["metadata"]["name"].as_str().unwrap()))
        .unwrap_or_default()
}

fn upgrade_workers(kubeconfig: &Path) -> Vec<String> {
    kubectl(kubeconfig, &["get", "pods", "-A", "-o", "name"])
        .lines()
        .filter(|l| l.contains("yss-upgrade-worker"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_yurtstaticset_controller_keeps_what_staticpod_upgrade_rolled_out() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real::converted_cluster(dir.path(), 3).await;
    let kc = sim.kubeconfig_path();

    let workers = ["worker-1", "worker-2"];
    let manifest = |w: &str| sim.node_root(w).join("etc/kubernetes/manifests/nginx.yaml");
    for w in workers {
        std::fs::write(manifest(w), support::NGINX_119_1).unwrap();
    }
    let start = Instant::now();
    loop {
        let pods = kubectl(&kc, &["get", "pods", "-o", "name"]);
        if workers
            .iter()
            .all(|w| pods.contains(&format!("pod/nginx-{w}")))
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "mirror pods: {pods}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // the user's YurtStaticSet, on OTA, so that its controller starts no upgrade of its own
    tokio::task::block_in_place(|| real::kubectl_create(&kc, YSS));

    // yurt-manager restarts: its new pod leads within seconds, but its webhooks serve only once
    // its readiness probe passed (60 s), and the API server refuses the set's writes until
    // then. An upgrade in between is refused before any write, saying what to wait for.
    let old = manager_pod(&kc);
    kubectl(
        &kc,
        &[
            "-n",
            "kube-system",
            "delete",
            &old,
            "--grace-period=1",
            "--wait=false",
        ],
    );
    let start = Instant::now();
    let new = loop {
        let pod = manager_pod(&kc);
        let lease = real::kubectl_json(
            &kc,
            &["-n", "kube-system", "get", "lease", "cloud-yurt-manager"],
        );
        let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
        if pod != old && holder.starts_with(pod.trim_start_matches("pod/")) {
            break pod;
        }
        assert!(
            start.elapsed() < Duration::from_secs(50),
            "a new yurt-manager pod leading: {pod}, {lease}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let refused = tokio::task::block_in_place(|| {
        real::yurtctl(
            &kc,
            &[
                "staticpod",
                "upgrade",
                "nginx",
                "--image",
                "nginx:1.19.2",
                "--strategy",
                "advanced-rolling-update",
                "-y",
            ],
        )
    });
    let ready = real::kubectl_json(&kc, &["-n", "kube-system", "get", &new]);
    assert_eq!(refused.0, 3, "{}\n{ready}", refused.1);
    assert!(
        refused.1.contains("no endpoint of its webhook Service kube-system/yurt-manager-webhook-service is ready yet"),
        "{}",
        refused.1
    );
    kubectl(
        &kc,
        &[
            "-n",
            "kube-system",
            "rollout",
            "status",
            "deployment/yurt-manager",
            "--timeout=120s",
        ],
    );

    let (code, out) = tokio::task::block_in_place(|| {
        real::yurtctl(
            &kc,
            &[
                "staticpod",
                "upgrade",
                "nginx",
                "--image",
                "nginx:1.19.2",
                "--strategy",
                "advanced-rolling-update",
                "-y",
                "-o",
                "json",
            ],
        )
    });
    assert_eq!(code, 0, "yurtctl staticpod upgrade:\n{out}");
    let json_start = out.find('{').unwrap();
    let result: serde_json::Value = serde_json::Deserializer::from_str(&out[json_start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    for w in workers {
        let node = result["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == w)
            .unwrap_or_else(|| panic!("{w} in {result}"));
        assert_eq!(node["result"], "upgraded", "{node}");
        assert!(
            std::fs::read_to_string(manifest(w))
                .unwrap()
                .contains("nginx:1.19.2")
        );
    }
    let rolled: Vec<String> = workers
        .iter()
        .map(|w| std::fs::read_to_string(manifest(w)).unwrap())
        .collect();

    // the real controller counts both nodes on its template, which yurtctl set, and the
    // user's strategy is back
    let yss = real::kubectl_json(&kc, &["get", "yurtstaticset", "nginx"]);
    assert_eq!(
        yss["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.19.2",
        "{yss}"
    );
    assert_eq!(yss["spec"]["upgradeStrategy"]["type"], "OTA", "{yss}");
    let start = Instant::now();
    loop {
        let yss = real::kubectl_json(&kc, &["get", "yurtstaticset", "nginx"]);
        if yss["status"]["upgradedNumber"] == 2 && yss["status"]["totalNumber"] == 2 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{yss}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // switched to AdvancedRollingUpdate, the controller finds every node on its revision: it
    // starts no upgrade worker and the manifests stay what yurtctl wrote
    set_strategy(
        &kc,
        r#"{"type": "AdvancedRollingUpdate", "maxUnavailable": 1}"#,
    );
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        assert_eq!(upgrade_workers(&kc), Vec::<String>::new());
        for (w, before) in workers.iter().zip(&rolled) {
            assert_eq!(
                &std::fs::read_to_string(manifest(w)).unwrap(),
                before,
                "{w}"
            );
        }
        let yss = real::kubectl_json(&kc, &["get", "yurtstaticset", "nginx"]);
        assert_eq!(yss["status"]["upgradedNumber"], 2, "{yss}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }

    // OTA: yurtctl publishes the revision, the real controller marks the pods, and the real
    // YurtHub on worker-1 applies it when asked through its OTA API (openyurtio/openyurt@v1.7.0
    // pkg/yurthub/server/server.go, otaupdate/ota.go UpdatePod); worker-2 keeps its revision
    set_strategy(&kc, r#"{"type": "OTA", "maxUnavailable": null}"#);
    let (code, out) = tokio::task::block_in_place(|| {
        real::yurtctl(
            &kc,
            &[
                "staticpod",
                "upgrade",
                "nginx",
                "--image",
                "nginx:1.19.3",
                "--strategy",
                "ota",
                "-y",
            ],
        )
    });
    assert_eq!(code, 0, "yurtctl staticpod upgrade --strategy ota:\n{out}");
    let need_upgrade = |pod: &str| {
        let p = real::kubectl_json(&kc, &["get", "pod", pod]);
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "PodNeedUpgrade")
            .map(|c| c["status"].as_str().unwrap_or_default().to_owned())
    };
    let start = Instant::now();
    while need_upgrade("nginx-worker-1").as_deref() != Some("True") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "PodNeedUpgrade on nginx-worker-1"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let hub = sim
        .real()
        .unwrap()
        .network
        .node("worker-1")
        .unwrap()
        .init_pid();
    let answer = tokio::task::block_in_place(|| {
        let out = std::process::Command::new("nsenter")
            .args(["-n", "-t", &hub.to_string(), "curl", "-s", "-X", "POST", "-w", "\n%{http_code}"])
            .arg("http://127.0.0.1:10267/openyurt.io/v1/namespaces/default/pods/nginx-worker-1/upgrade")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    assert_eq!(
        answer.rsplit_once('\n'),
        Some(("Start updating pod default/nginx-worker-1", "200")),
        "{answer}"
    );
    let start = Instant::now();
    while !std::fs::read_to_string(manifest("worker-1"))
        .unwrap()
        .contains("nginx:1.19.3")
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "worker-1's manifest"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        std::fs::read_to_string(manifest("worker-2"))
            .unwrap()
            .contains("nginx:1.19.2")
    );
    sim.shutdown().await;
}
