//! `yurtctl images list` against what a conversion really runs, and `--image-repository`
//! (kubeadm's flag) moving every image a conversion pulls, on yurtsim.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use yurtsim::Layout;

/// The repository the test mirrors into. Its last segment stays `openyurt`: a mirror keeps the
/// images' names, and the sim knows a component's binary by its last two path segments.
const MIRROR: &str = "registry.example.com/openyurt";

/// Every image of every container and init container of `pod`.
fn images_of(pod: &Pod) -> Vec<String> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.image.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn images_list_is_what_convert_pulls_and_image_repository_moves_all_of_it() {
    let env = support::start_sim(3, Layout::Kubeadm, |_| {}).await;
    let client = support::kube_client(&env.sim).await;

    // the list first: it needs no cluster
    let listed = support::yurtctl(
        &env.sim,
        &["images", "list", "--image-repository", MIRROR, "-o", "json"],
    )
    .await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let doc = listed.json();
    assert_eq!(doc["kind"], "ImageList");
    let listed: BTreeMap<String, String> = doc["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["component"].as_str().unwrap().to_owned(),
                i["image"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let plain = support::yurtctl(&env.sim, &["images", "list", "--image-repository", MIRROR]).await;
    assert_eq!(
        plain.stdout.lines().collect::<BTreeSet<_>>(),
        listed.values().map(String::as_str).collect(),
        "one image per line, the same images"
    );

    // every pod created from now on, the node Jobs' included (deleted once they succeed)
    let (watch, pods) = support::new_pods(&client).await;
    let run = support::yurtctl(&env.sim, &["convert", "-y", "--image-repository", MIRROR]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // the last Job pods' deletions reach the watch shortly after convert returns
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    watch.abort();
    let seen: BTreeSet<String> = pods.lock().unwrap().iter().flat_map(images_of).collect();

    // nothing convert started pulls from anywhere but the mirror
    assert!(!seen.is_empty());
    let off: Vec<&String> = seen.iter().filter(|i| !i.starts_with(MIRROR)).collect();
    assert!(
        off.is_empty(),
        "pulled from elsewhere: {off:?} (all: {seen:?})"
    );
    // and each is listed
    let unlisted: Vec<&String> = seen
        .iter()
        .filter(|i| !listed.values().any(|l| l == *i))
        .collect();
    assert!(unlisted.is_empty(), "pulled but not listed: {unlisted:?}");
    // what is listed but no pod of the conversion ran is handed on: yurt-manager starts its
    // node-servant Jobs (YurtStaticSet upgrades) with it
    let idle: Vec<(&String, &String)> = listed
        .iter()
        .filter(|(_, image)| !seen.contains(*image))
        .collect();
    assert_eq!(
        idle,
        vec![(
            &"node-servant".to_owned(),
            &format!("{MIRROR}/node-servant:v1.7.0")
        )],
        "listed, not run: {idle:?}"
    );
    let manager = Api::<Deployment>::namespaced(client.clone(), "kube-system")
        .get("yurt-manager")
        .await
        .unwrap();
    let args = manager.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(
        args.contains(&format!(
            "--node-servant-image={MIRROR}/node-servant:v1.7.0"
        )),
        "{args:?}"
    );
    env.sim.shutdown().await;
}

#[tokio::test]
async fn image_flags_are_checked_against_the_profile_before_anything_else() {
    let env = support::start_sim(1, Layout::Kubeadm, |_| {}).await;
    for (args, want) in [
        (
            vec![
                "images",
                "list",
                "--image-repository",
                "registry.example.com/",
            ],
            "\"registry.example.com/\" is not an image repository: it ends with '/'",
        ),
        (
            vec!["images", "list", "--image", "tunnel=x:1"],
            "--image tunnel=…: profile openyurt-v1.7 has no component \"tunnel\"",
        ),
        (
            vec!["images", "list", "--openyurt-version", "v1.6.1"],
            "--openyurt-version v1.6.1: profile openyurt-v1.7 is for OpenYurt v1.7.0",
        ),
        (
            vec![
                "convert",
                "-y",
                "--image-repository",
                "https://registry.example.com",
            ],
            "a repository has no scheme (leave out https://)",
        ),
    ] {
        let run = support::yurtctl(&env.sim, &args).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    }
    // convert refused before it changed anything: no journal
    let client = support::kube_client(&env.sim).await;
    assert_eq!(support::journal_state(&client).await, None);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_image_pull_secret_reaches_every_pod_convert_and_revert_create() {
    let env = support::start_sim(2, Layout::Kubeadm, |_| {}).await;
    let client = support::kube_client(&env.sim).await;
    // refused before anything changes while the Secret is missing
    let refused = support::yurtctl(
        &env.sim,
        &["convert", "-y", "--image-pull-secret", "regcred"],
    )
    .await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "[ImagePullSecret] Secret kube-system/regcred (--image-pull-secret) does not exist"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(support::journal_state(&client).await, None);

    support::create_registry_secret(&client, "kube-system", "regcred").await;
    let (watch, pods) = support::new_pods(&client).await;
    let run = support::yurtctl(
        &env.sim,
        &["convert", "-y", "--image-pull-secret", "regcred"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reverted = support::yurtctl(&env.sim, &["revert", "-y"]).await;
    assert_eq!(reverted.code, 0, "{}", reverted.stderr);
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    watch.abort();
    let pods = pods.lock().unwrap().clone();
    // pod name → the Secrets it pulls with
    let pulls: BTreeMap<String, Vec<String>> = pods
        .iter()
        .map(|p| {
            let names = p
                .spec
                .as_ref()
                .and_then(|s| s.image_pull_secrets.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|r| r.name)
                .collect();
            (p.metadata.name.clone().unwrap_or_default(), names)
        })
        .collect();
    let without: Vec<&String> = pulls
        .iter()
        .filter(|(_, s)| s.as_slice() != ["regcred"])
        .map(|(n, _)| n)
        .collect();
    assert!(
        without.is_empty(),
        "pods pulling without regcred: {without:?} (all: {pulls:?})"
    );
    // preflight, convert and revert Jobs, and yurt-manager's pods, all came by
    for prefix in [
        "yurtctl-preflight-",
        "yurtctl-convert-",
        "yurtctl-revert-",
        "yurt-manager-",
    ] {
        assert!(
            pulls.keys().any(|n| n.starts_with(prefix)),
            "no {prefix}* pod: {pulls:?}"
        );
    }
    env.sim.shutdown().await;
}

/// `images pull` before convert in an air gap (yurtsim's registry fault: a node that cannot
/// resolve the mirror's host): the nodes that reach the mirror pull every image; the one that
/// does not is a finding per image in its runtime's words, exit 7; its Jobs are gone
/// afterwards. Once the mirror is reachable every node pulls. A node that cannot pull the
/// servant's own image says that its Job's container waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn images_pull_finds_the_node_that_cannot_reach_the_mirror() {
    let env = support::start_sim(3, Layout::Kubeadm, |_| {}).await;
    let client = support::kube_client(&env.sim).await;
    let workers = support::workers(&env.sim);
    let cut = &workers[0];
    env.sim
        .faults()
        .unreachable_registry("registry.example.com", Some(cut));
    fn pull<'a>(servant: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "images",
            "pull",
            "--image-repository",
            MIRROR,
            // the node Jobs' image stays where the nodes reach it
            "--servant-image",
            servant,
            "--job-timeout",
            "20s",
            "-o",
            "json",
        ];
        args.extend_from_slice(extra);
        args
    }
    let run = support::yurtctl(&env.sim, &pull("openyurt/yurtctl:test", &[])).await;
    assert_eq!(run.code, 7, "{}\n{}", run.stderr, run.stdout);
    let r = run.json();
    assert_eq!(r["kind"], "ImagePullResult", "{r:#}");
    let listed = support::yurtctl(
        &env.sim,
        &["images", "list", "--image-repository", MIRROR, "-o", "json"],
    )
    .await
    .json();
    let wanted: BTreeSet<String> = listed["images"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i.get("feature").is_none() && i["component"] != "servant")
        .map(|i| i["image"].as_str().unwrap().to_owned())
        .collect();
    for n in r["nodes"].as_array().unwrap() {
        let pulled: BTreeSet<String> = n["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["image"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(pulled, wanted, "{r:#}");
        let all = n["images"].as_array().unwrap();
        if n["name"] == cut.as_str() {
            assert_eq!(n["result"], "failed", "{r:#}");
            for i in all {
                assert_eq!(i["pulled"], false, "{r:#}");
                let m = i["message"].as_str().unwrap();
                assert!(
                    m.contains("registry.example.com") && m.contains("no such host"),
                    "{m}"
                );
            }
        } else {
            assert_eq!(n["result"], "pulled", "{r:#}");
            assert!(all.iter().all(|i| i["pulled"] == true), "{r:#}");
        }
    }
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(client.clone(), "kube-system");
    let left: Vec<String> = jobs
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .filter(|n| n.contains("pull-images"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "the Jobs are deleted");

    env.sim.faults().reachable_again();
    let run = support::yurtctl(&env.sim, &pull("openyurt/yurtctl:test", &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    // a servant image the node does not have yet and cannot pull: the Job's container waits
    env.sim
        .faults()
        .unreachable_registry("docker.io", Some(cut));
    let run = support::yurtctl(&env.sim, &pull("openyurt/yurtctl:air-gapped", &[cut])).await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    let r = run.json();
    let n = &r["nodes"][0];
    assert_eq!(n["name"], cut.as_str(), "{r:#}");
    assert_eq!(n["result"], "failed", "{r:#}");
    let m = n["message"].as_str().unwrap();
    assert!(
        m.contains("ImagePullBackOff") || m.contains("ErrImagePull"),
        "{m}"
    );
    assert!(m.contains("openyurt/yurtctl:air-gapped"), "{m}");
    env.sim.shutdown().await;
}

/// `convert --pull-images`: each node's preflight Job pulls the images first; a node that
/// cannot reach the mirror refuses the conversion (exit 3) with its runtime's words, before
/// anything changes; once it can, the conversion goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn convert_pull_images_refuses_before_anything_changes() {
    let env = support::start_sim(3, Layout::Kubeadm, |_| {}).await;
    let client = support::kube_client(&env.sim).await;
    let cut = support::first_worker(&env.sim);
    env.sim
        .faults()
        .unreachable_registry("registry.example.com", Some(&cut));
    let convert = [
        "convert",
        "-y",
        "--pull-images",
        "--image-repository",
        MIRROR,
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
    ];
    let refused = support::yurtctl(&env.sim, &convert).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    for words in [
        format!("node {cut}"),
        "cannot pull registry.example.com/openyurt/".to_owned(),
        "no such host".to_owned(),
        "nothing was changed".to_owned(),
    ] {
        assert!(
            refused.stderr.contains(&words),
            "{words}: {}",
            refused.stderr
        );
    }
    assert!(
        support::journal_state(&client).await.is_none(),
        "no journal"
    );
    let node = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .get(&cut)
        .await
        .unwrap();
    assert!(
        !node
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("openyurt.io/is-edge-worker"),
        "the node is not labelled"
    );

    env.sim.faults().reachable_again();
    let run = support::yurtctl(&env.sim, &convert).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    env.sim.shutdown().await;
}
