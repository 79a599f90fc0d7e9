//! `yurtctl staticpod upgrade` on the real tier, on a static pod that OpenYurt v1.7.0's real
//! yurt-manager also manages through a YurtStaticSet: its controller agrees with what yurtctl
//! rolled out and never rolls the nodes back.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{kubectl, real};

const YSS: &str = r#"{"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "YurtStaticSet",
  "metadata": {"name": "nginx", "namespace": "default"},
  "spec": {"staticPodManifest": "nginx", "upgradeStrategy": {"type": "OTA"},
    "template": {"metadata": {"name": "nginx"},
      "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}}}}"#;

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
    let sim = real::cluster(
        dir.path(),
        3,
        yurtsim::real::NEWEST_KUBERNETES,
        &["openyurt-v1.7.0"],
    )
    .await;
    let kc = sim.kubeconfig_path();
    let (code, out) = tokio::task::block_in_place(|| real::yurtctl(&kc, &["convert", "-y"]));
    assert_eq!(code, 0, "yurtctl convert -y:\n{out}");

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
    kubectl(
        &kc,
        &[
            "patch",
            "yurtstaticset",
            "nginx",
            "--type",
            "merge",
            "-p",
            r#"{"spec": {"upgradeStrategy": {"type": "AdvancedRollingUpdate", "maxUnavailable": 1}}}"#,
        ],
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
    sim.shutdown().await;
}
