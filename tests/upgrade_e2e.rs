//! `yurtctl upgrade` end to end on yurtsim: a cluster converted with openyurt-v1.6 moved to
//! openyurt-v1.7 (yurt-manager replaced, NodePools stored at v1beta2, every node's YurtHub
//! moved from the static pod to the systemd service), the user's NodePool surviving the storage
//! migration, a run stopped half-way resumed, and `yurtctl revert` afterwards leaving every node
//! root as it was before the first convert.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::json;
use support::roots::{all_ready, assert_same_trees, trees};
use yurtsim::Layout;

const NS: &str = "kube-system";

fn nodepools(version: &str) -> ApiResource {
    ApiResource {
        group: "apps.openyurt.io".into(),
        version: version.into(),
        api_version: format!("apps.openyurt.io/{version}"),
        kind: "NodePool".into(),
        plural: "nodepools".into(),
    }
}

fn yurtstaticsets() -> ApiResource {
    ApiResource {
        group: "apps.openyurt.io".into(),
        version: "v1alpha1".into(),
        api_version: "apps.openyurt.io/v1alpha1".into(),
        kind: "YurtStaticSet".into(),
        plural: "yurtstaticsets".into(),
    }
}

/// A YurtStaticSet of the user's (no node runs its pod).
fn users_set() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.openyurt.io/v1alpha1",
        "kind": "YurtStaticSet",
        "metadata": {"name": "users-web", "namespace": "default"},
        "spec": {"staticPodManifest": "users-web", "upgradeStrategy": {"type": "OTA"},
            "template": {"metadata": {"labels": {"app": "users-web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}}},
    }))
    .unwrap()
}

async fn convert_v16(env: &support::Cluster) {
    support::convert_profile(&env.sim, "openyurt-v1.6").await;
}

/// A NodePool of the user's, made at v1beta1 (openyurt-v1.6's storage version).
async fn users_pool(env: &support::Cluster) {
    let api: Api<DynamicObject> = Api::all_with(env.client.clone(), &nodepools("v1beta1"));
    let pool: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.openyurt.io/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "hangzhou", "labels": {"team": "edge-ops"}},
        "spec": {"type": "Edge"},
    }))
    .unwrap();
    api.create(&PostParams::default(), &pool).await.unwrap();
}

fn upgrade_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    upgrade_to("openyurt-v1.7", extra)
}

/// `upgrade --profile PROFILE` with the tests' servant image, a 60 s Job timeout, `-y`, then
/// `extra`.
fn upgrade_to<'a>(profile: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "upgrade",
        "--profile",
        profile,
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
        "-y",
    ];
    args.extend_from_slice(extra);
    args
}

/// `env` converted with openyurt-v1.6, then the user's NodePool and YurtStaticSet made; the
/// sets' API and the set as created.
async fn converted_v16_with_users_objects(
    env: &support::Cluster,
) -> (Api<DynamicObject>, DynamicObject) {
    convert_v16(env).await;
    users_pool(env).await;
    let sets =
        Api::<DynamicObject>::namespaced_with(env.client.clone(), "default", &yurtstaticsets());
    let set = sets
        .create(&PostParams::default(), &users_set())
        .await
        .unwrap();
    (sets, set)
}

/// `upgrade --rollback` with the tests' servant image, a 60 s Job timeout, `-y`, then `extra`.
fn rollback<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "upgrade",
        "--rollback",
        "--servant-image",
        "openyurt/yurtctl:test",
        "--job-timeout",
        "60s",
        "-y",
    ];
    args.extend_from_slice(extra);
    args
}

/// `revert` succeeds, every node is Ready and every node root is as `before` (the first
/// convert's).
async fn revert_restores_every_root(
    env: &support::Cluster,
    before: &std::collections::BTreeMap<String, support::roots::Tree>,
) {
    let revert = support::yurtctl(&env.sim, &["revert", "--job-timeout", "60s", "-y"]).await;
    assert_eq!(revert.code, 0, "{}", revert.stderr);
    all_ready(&env.client).await;
    assert_same_trees(before, &trees(&env.sim));
}

/// The image yurt-manager's Deployment runs.
async fn manager_image(env: &support::Cluster) -> String {
    let manager = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("yurt-manager")
        .await
        .unwrap();
    manager.spec.unwrap().template.spec.unwrap().containers[0]
        .image
        .clone()
        .unwrap()
}

async fn nodepools_crd(env: &support::Cluster) -> CustomResourceDefinition {
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .get("nodepools.apps.openyurt.io")
        .await
        .unwrap()
}

/// A node's `result` in an `UpgradeResult` ("" when it is not listed).
fn result_of(r: &serde_json::Value, node: &str) -> String {
    r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .map(|n| n["result"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn node_labels(
    env: &support::Cluster,
    node: &str,
) -> std::collections::BTreeMap<String, String> {
    let n = Api::<Node>::all(env.client.clone())
        .get(node)
        .await
        .unwrap();
    n.metadata.labels.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_v1_6_cluster_moves_to_v1_7_and_revert_still_restores_every_node() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.34.2").await;
    let before = trees(&env.sim);
    let (sets, set_before) = converted_v16_with_users_objects(&env).await;
    let worker = support::first_worker(&env.sim);
    let root = env.sim.node_root(&worker);
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());
    let journal_before = support::journal_state(&env.client).await.unwrap();

    // the plan names the changes, and a dry run changes nothing
    let dry = support::yurtctl(&env.sim, &upgrade_args(&["--dry-run"])).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    for words in [
        "Plan: upgrade openyurt-v1.6 (OpenYurt v1.6.1) to openyurt-v1.7 (OpenYurt v1.7.0)",
        "Job yurtctl-upgrade-",
        "customresourcedefinition/nodepools.apps.openyurt.io",
        "yurtstaticset.apps.openyurt.io/kube-system/yurt-hub convert created it",
    ] {
        assert!(dry.stdout.contains(words), "{words}:\n{}", dry.stdout);
    }
    assert_eq!(
        support::journal_state(&env.client).await.unwrap()["profile"],
        journal_before["profile"]
    );
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());

    let run = support::yurtctl(&env.sim, &upgrade_args(&["-o", "json"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["kind"], "UpgradeResult");
    assert_eq!(r["from"]["profile"], "openyurt-v1.6");
    assert_eq!(r["to"]["openyurtVersion"], "v1.7.0");
    assert_eq!(r["finished"], true);
    let nodes = r["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3, "{r:#}");
    assert!(nodes.iter().all(|n| n["result"] == "upgraded"), "{r:#}");
    // each node's Job measured how long YurtHub's address went unserved
    for n in nodes {
        let ms = n["yurthubUnavailableMs"].as_u64();
        assert!(ms.is_some_and(|ms| ms < 60_000), "{r:#}");
    }
    assert!(
        run.stderr
            .contains("YurtHub's address went unserved for at most"),
        "{}",
        run.stderr
    );
    // the user's pool and the ones convert made, written again at v1beta2
    assert!(
        r["migrated"]["nodepools.apps.openyurt.io"]
            .as_u64()
            .unwrap()
            >= 1,
        "{r:#}"
    );
    let deleted: Vec<&str> = r["deletedObjects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        deleted
            .iter()
            .any(|d| d.contains("YurtStaticSet") && d.contains("yurt-hub")),
        "{deleted:?}"
    );

    // each node runs YurtHub v1.7 as the service, in its NodePool, and is Ready
    assert!(!root.join("etc/kubernetes/manifests/yurthub.yaml").exists());
    assert!(root.join("etc/systemd/system/yurthub.service").is_file());
    assert_eq!(
        node_labels(&env, &worker)
            .await
            .get("apps.openyurt.io/nodepool")
            .map(String::as_str),
        Some("edge")
    );
    all_ready(&env.client).await;
    let image = manager_image(&env).await;
    assert!(image.ends_with(":v1.7.0"), "{image}");

    // the user's NodePool is there as it was, stored at v1beta2 only
    let crd = nodepools_crd(&env).await;
    assert_eq!(crd.status.unwrap().stored_versions.unwrap(), ["v1beta2"]);
    let pool = Api::<DynamicObject>::all_with(env.client.clone(), &nodepools("v1beta2"))
        .get("hangzhou")
        .await
        .unwrap();
    assert_eq!(pool.data["spec"]["type"], "Edge", "{:#}", pool.data);
    // v1beta1 → v1beta2 conversion gives it yurt-manager's election defaults
    // (openyurtio/openyurt@v1.7.0 pkg/apis/apps/v1beta1/nodepool_conversion.go ConvertTo)
    assert_eq!(
        pool.data["spec"]["leaderElectionStrategy"], "random",
        "{:#}",
        pool.data
    );
    assert_eq!(r["migrated"]["nodepools.apps.openyurt.io"], 3, "{r:#}");
    assert_eq!(pool.metadata.labels.unwrap()["team"], "edge-ops");

    // the user's YurtStaticSet too, as it was
    let set = sets.get("users-web").await.unwrap();
    assert_eq!(set.data["spec"], set_before.data["spec"], "{:#}", set.data);

    let journal = support::journal_state(&env.client).await.unwrap();
    assert_eq!(journal["profile"], "openyurt-v1.7");
    assert_eq!(journal["upgrade"]["finished"], true);

    // run again: there is nothing to do
    let again = support::yurtctl(&env.sim, &upgrade_args(&[])).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already runs openyurt-v1.7"),
        "{}",
        again.stderr
    );

    // revert undoes convert and the upgrade: every node root as before the first convert (the
    // user's set goes first: revert deletes the CRD convert created)
    sets.delete("users-web", &Default::default()).await.unwrap();
    revert_restores_every_root(&env, &before).await;
    // the user's pool stays with its CRD, which revert keeps while it holds objects
    assert!(support::journal_state(&env.client).await.is_none());
}

/// `upgrade --rollback` from a half-upgraded cluster (a canary moved one worker to v1.7): the
/// NodePools are stored at v1beta1 again while v1.7's webhook still converts, v1.6's
/// components come back, the moved worker's YurtHub goes back into its static pod, the others
/// are left alone, and what only v1.7 had is deleted. The user's pool and set survive; the
/// journal is as before the upgrade, so `revert` still restores every node root.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_half_upgraded_cluster_rolls_back_and_revert_still_restores_every_node() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.34.2").await;
    let before = trees(&env.sim);
    let (sets, set_before) = converted_v16_with_users_objects(&env).await;
    let journal_v16 = support::journal_state(&env.client).await.unwrap();
    let workers = support::workers(&env.sim);
    let labels_v16 = node_labels(&env, &workers[0]).await;

    // nothing to roll back yet
    let none = support::yurtctl(&env.sim, &["upgrade", "--rollback", "-y"]).await;
    assert_eq!(none.code, 3, "{}", none.stderr);
    assert!(
        none.stderr.contains("nothing to roll back"),
        "{}",
        none.stderr
    );

    let canary = support::yurtctl(&env.sim, &upgrade_args(&["--canary", "1", "-o", "json"])).await;
    assert_eq!(canary.code, 0, "{}", canary.stderr);
    let moved: Vec<String> = workers
        .iter()
        .filter(|w| result_of(&canary.json(), w) == "upgraded")
        .cloned()
        .collect();
    assert_eq!(moved.len(), 1, "{:#}", canary.json());
    let (moved, root) = (&moved[0], env.sim.node_root(&moved[0]));
    assert!(root.join("etc/systemd/system/yurthub.service").is_file());

    // the plan says the storage goes back first, and a dry run changes nothing
    let dry = support::yurtctl(&env.sim, &rollback(&["--dry-run"])).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    for words in [
        "Plan: roll back openyurt-v1.7 (OpenYurt v1.7.0) to openyurt-v1.6 (OpenYurt v1.6.1)",
        "customresourcedefinition/nodepools.apps.openyurt.io first the running CRD with \
         v1beta1 as storage",
        &format!("Job yurtctl-upgrade-{moved}: node-servant upgrade to YurtHub v1.6.1"),
        "/etc/systemd/system/yurthub.service: YurtHub's systemd unit, stopped and disabled first",
    ] {
        assert!(dry.stdout.contains(words), "{words}:\n{}", dry.stdout);
    }
    assert!(root.join("etc/systemd/system/yurthub.service").is_file());

    let run = support::yurtctl(&env.sim, &rollback(&["-o", "json"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["rollback"], true, "{r:#}");
    assert_eq!(r["to"]["openyurtVersion"], "v1.6.1", "{r:#}");
    assert_eq!(r["finished"], true, "{r:#}");
    for n in support::workers(&env.sim) {
        let want = if &n == moved {
            "rolled-back"
        } else {
            "already-rolled-back"
        };
        assert_eq!(result_of(&r, &n), want, "{n}: {r:#}");
    }
    assert!(
        r["migrated"]["nodepools.apps.openyurt.io"]
            .as_u64()
            .unwrap()
            >= 1,
        "{r:#}"
    );

    // the moved worker runs YurtHub v1.6 in its static pod again, the service gone
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());
    for gone in [
        "etc/systemd/system/yurthub.service",
        "etc/systemd/system/yurthub.service.d/10-yurthub.conf",
        "usr/local/bin/yurthub",
    ] {
        assert!(!root.join(gone).exists(), "{gone} is still there");
    }
    all_ready(&env.client).await;
    assert_eq!(node_labels(&env, &workers[0]).await, labels_v16);
    let image = manager_image(&env).await;
    assert!(image.ends_with(":v1.6.1"), "{image}");

    // NodePools are stored at v1beta1 only, under v1.6's CRD; the user's pool as it was
    let crd = nodepools_crd(&env).await;
    let served: Vec<String> = crd.spec.versions.iter().map(|v| v.name.clone()).collect();
    assert_eq!(served, ["v1alpha1", "v1beta1"]);
    assert_eq!(crd.status.unwrap().stored_versions.unwrap(), ["v1beta1"]);
    let pool = Api::<DynamicObject>::all_with(env.client.clone(), &nodepools("v1beta1"))
        .get("hangzhou")
        .await
        .unwrap();
    assert_eq!(pool.data["spec"]["type"], "Edge", "{:#}", pool.data);
    assert_eq!(pool.metadata.labels.unwrap()["team"], "edge-ops");
    let set = sets.get("users-web").await.unwrap();
    assert_eq!(set.data["spec"], set_before.data["spec"], "{:#}", set.data);

    // v1.6's YurtStaticSets are back, and the journal is as before the upgrade
    let hub_sets = Api::<DynamicObject>::namespaced_with(env.client.clone(), NS, &yurtstaticsets());
    assert!(hub_sets.get_opt("yurt-hub").await.unwrap().is_some());
    let journal = support::journal_state(&env.client).await.unwrap();
    assert_eq!(journal["profile"], "openyurt-v1.6");
    assert!(journal.get("upgrade").is_none(), "{journal:#}");
    assert_eq!(journal["options"], journal_v16["options"]);

    // rolled back: nothing is left to roll back
    let again = support::yurtctl(&env.sim, &rollback(&[])).await;
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(
        again.stderr.contains("nothing to roll back"),
        "{}",
        again.stderr
    );

    sets.delete("users-web", &Default::default()).await.unwrap();
    revert_restores_every_root(&env, &before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upgrade_stopped_after_the_edge_nodes_resumes_where_it_stopped() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.34.2").await;
    convert_v16(&env).await;

    // the cloud node's phase and what follows are left out: the upgrade is unfinished
    let first = support::yurtctl(
        &env.sim,
        &upgrade_args(&["--skip-phases", "nodes/cloud,cleanup,migrate", "-o", "json"]),
    )
    .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    // the NodePools the upgrade made went through yurt-manager v1.7's webhooks: defaulted
    let pools = Api::<DynamicObject>::all_with(env.client.clone(), &nodepools("v1beta2"));
    let cloud = pools.get("cloud").await.unwrap();
    assert_eq!(
        cloud.data["spec"]["leaderElectionStrategy"], "random",
        "{:#}",
        cloud.data
    );
    let j = support::journal_state(&env.client).await.unwrap();
    assert_eq!(j["upgrade"]["finished"], false, "{j:#}");
    assert_eq!(j["upgrade"]["fromProfile"], "openyurt-v1.6");

    // convert refuses to run over it, and an upgrade to another release is refused too
    let convert =
        support::yurtctl(&env.sim, &["convert", "--profile", "openyurt-v1.7", "-y"]).await;
    assert_eq!(convert.code, 3, "{}", convert.stderr);
    assert!(
        convert.stderr.contains("did not finish"),
        "{}",
        convert.stderr
    );
    let other = support::yurtctl(
        &env.sim,
        &[
            "upgrade",
            "--profile",
            "openyurt-v1.6",
            "--openyurt-version",
            "v1.6.2",
            "-y",
        ],
    )
    .await;
    assert_eq!(other.code, 3, "{}", other.stderr);
    assert!(
        other
            .stderr
            .contains("the upgrade to openyurt-v1.7 (OpenYurt v1.7.0) did not finish"),
        "{}",
        other.stderr
    );

    let rest = support::yurtctl(&env.sim, &upgrade_args(&["-o", "json"])).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    assert_eq!(r["from"]["profile"], "openyurt-v1.6", "{r:#}");
    assert_eq!(r["finished"], true);
    let result_of = |role: &str| -> Vec<String> {
        r["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["role"] == role)
            .map(|n| n["result"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        result_of("edge").iter().all(|x| x == "already-upgraded"),
        "{r:#}"
    );
    assert_eq!(result_of("cloud"), ["upgraded"], "{r:#}");
    all_ready(&env.client).await;
}

/// A canary first (`-l`: one worker moves, the old release's objects stay), then the rest in
/// a run SIGKILLed while it moves the edge nodes, then that run taken over with
/// `--force-unlock`: it finishes what the killed one left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_canary_then_a_killed_run_then_the_rest() {
    let env = support::cluster(4, Layout::Kubeadm, "v1.34.2").await;
    convert_v16(&env).await;
    let canary = support::first_worker(&env.sim);
    let selector = format!("kubernetes.io/hostname={canary}");
    let run = support::yurtctl(&env.sim, &upgrade_args(&["-l", &selector, "-o", "json"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["finished"], false, "{r:#}");
    for n in r["nodes"].as_array().unwrap() {
        let want = if n["name"] == canary.as_str() {
            "upgraded"
        } else {
            "not-selected"
        };
        assert_eq!(n["result"], want, "{r:#}");
    }
    assert!(
        run.stderr
            .contains("the old release's objects stay until every node is moved"),
        "{}",
        run.stderr
    );
    let sets: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), NS, &yurtstaticsets());
    assert!(sets.get_opt("yurt-hub").await.unwrap().is_some());
    all_ready(&env.client).await;

    // status says where each node stands while the upgrade is under way
    let status = support::yurtctl(&env.sim, &["status", "-o", "json"]).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    let st = status.json();
    for n in st["nodes"].as_array().unwrap() {
        let (version, mode) = if n["name"] == canary.as_str() {
            ("v1.7.0", "service")
        } else {
            ("v1.6.1", "static-pod")
        };
        assert_eq!(n["openyurtVersion"], version, "{st:#}");
        assert_eq!(n["yurthubMode"], mode, "{st:#}");
    }
    let table = support::yurtctl(&env.sim, &["status"]).await;
    assert!(table.stdout.contains("OPENYURT"), "{}", table.stdout);

    // the rest, killed while it moves the edge nodes
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args(upgrade_args(&["--max-unavailable", "1"]));
    let (code, _) = support::act_at(
        cmd,
        |l| l.starts_with("[nodes/edge]"),
        |child| {
            let pid = child.id().unwrap().to_string();
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .unwrap();
            assert!(killed.success());
        },
    )
    .await;
    assert_eq!(code, None, "killed by a signal");
    let held = support::yurtctl(&env.sim, &upgrade_args(&[])).await;
    assert_eq!(held.code, 6, "{}", held.stderr);
    let rest = support::yurtctl(&env.sim, &upgrade_args(&["--force-unlock", "-o", "json"])).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    assert_eq!(r["finished"], true, "{r:#}");
    for n in r["nodes"].as_array().unwrap() {
        let ok = n["result"] == "upgraded" || n["result"] == "already-upgraded";
        assert!(ok, "{r:#}");
        if n["name"] == canary.as_str() {
            assert_eq!(n["result"], "already-upgraded", "{r:#}");
        }
    }
    assert!(sets.get_opt("yurt-hub").await.unwrap().is_none());
    all_ready(&env.client).await;
}

/// A finished upgrade rolled back by a run SIGKILLed while it moves the edge nodes: an upgrade
/// is refused until the rollback finishes, status says where each node stands (as its files
/// do), the rollback resumes and finishes, and the cluster then upgrades again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollback_killed_half_way_resumes_and_the_cluster_upgrades_again() {
    let env = support::cluster(4, Layout::Kubeadm, "v1.34.2").await;
    convert_v16(&env).await;
    let up = support::yurtctl(&env.sim, &upgrade_args(&[])).await;
    assert_eq!(up.code, 0, "{}", up.stderr);

    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args(rollback(&["--max-unavailable", "1"]));
    let (code, _) = support::act_at(
        cmd,
        |l| l.starts_with("[nodes/edge]"),
        |child| {
            // SAFETY: kill sends a signal to this test's own child
            assert_eq!(
                unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGKILL) },
                0
            );
        },
    )
    .await;
    assert_eq!(code, None, "killed by a signal");

    // an upgrade is refused while the rollback is unfinished, the dead run's lock or not
    let refused = support::yurtctl(&env.sim, &upgrade_args(&["--force-unlock"])).await;
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("run `yurtctl upgrade --rollback` to finish it"),
        "{}",
        refused.stderr
    );

    // each node where its files say it is
    let status = support::yurtctl(&env.sim, &["status", "-o", "json"]).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    let st = status.json();
    for n in st["nodes"].as_array().unwrap() {
        let name = n["name"].as_str().unwrap();
        let service = env
            .sim
            .node_root(name)
            .join("etc/systemd/system/yurthub.service")
            .is_file();
        let (version, mode) = if service {
            ("v1.7.0", "service")
        } else {
            ("v1.6.1", "static-pod")
        };
        assert_eq!(n["openyurtVersion"], version, "{name}: {st:#}");
        assert_eq!(n["yurthubMode"], mode, "{name}: {st:#}");
    }

    let rest = support::yurtctl(&env.sim, &rollback(&["--force-unlock", "-o", "json"])).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    assert_eq!(r["finished"], true, "{r:#}");
    let results: Vec<String> = env
        .sim
        .node_names()
        .iter()
        .map(|n| result_of(&r, n))
        .collect();
    assert!(
        results
            .iter()
            .all(|x| x == "rolled-back" || x == "already-rolled-back"),
        "{r:#}"
    );
    assert!(results.iter().any(|x| x == "rolled-back"), "{r:#}");
    for n in env.sim.node_names() {
        let root = env.sim.node_root(&n);
        assert!(
            root.join("etc/kubernetes/manifests/yurthub.yaml").is_file(),
            "{n}"
        );
        assert!(
            !root.join("etc/systemd/system/yurthub.service").exists(),
            "{n}"
        );
    }
    all_ready(&env.client).await;

    let again = support::yurtctl(&env.sim, &upgrade_args(&["-o", "json"])).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let r = again.json();
    assert_eq!(r["finished"], true, "{r:#}");
    assert!(
        r["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["result"] == "upgraded"),
        "{r:#}"
    );
    all_ready(&env.client).await;
}

/// legacy-v0.6 → openyurt-v1.6 → openyurt-v1.7, one profile at a time, on Kubernetes 1.21 (the
/// one minor legacy and v1.6 share; the second step names the version check it overrides, as a
/// user whose Kubernetes upgrade comes later would): kube-controller-manager gets nodelifecycle
/// back before the legacy controllers go, YurtHub's join token gives way to the bootstrap file,
/// and revert afterwards still restores every node root.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_to_v1_6_to_v1_7_one_profile_at_a_time() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.21.14").await;
    let before = trees(&env.sim);
    let kcm = "etc/kubernetes/manifests/kube-controller-manager.yaml";
    let cp = env.sim.node_root("control-plane-1");
    let kcm_before = std::fs::read_to_string(cp.join(kcm)).unwrap();
    support::convert_profile(&env.sim, "legacy-v0.6").await;
    assert_ne!(std::fs::read_to_string(cp.join(kcm)).unwrap(), kcm_before);
    let worker = support::first_worker(&env.sim);
    let root = env.sim.node_root(&worker);
    assert!(root.join("var/lib/yurtctl/yurthub/join-token").is_file());

    // straight to v1.7 is no route
    let skip = support::yurtctl(&env.sim, &upgrade_args(&[])).await;
    assert_eq!(skip.code, 3, "{}", skip.stderr);
    assert!(
        skip.stderr.contains("upgrade to one of those first"),
        "{}",
        skip.stderr
    );

    let run = support::yurtctl(&env.sim, &upgrade_to("openyurt-v1.6", &["-o", "json"])).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let r = run.json();
    assert_eq!(r["finished"], true, "{r:#}");
    // nodelifecycle is back: the manifest as before convert
    assert_eq!(std::fs::read_to_string(cp.join(kcm)).unwrap(), kcm_before);
    assert!(!root.join("var/lib/yurtctl/yurthub/join-token").exists());
    assert!(!root.join("etc/kubernetes/manifests/yurt-hub.yaml").exists());
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());
    let deleted = r["deletedObjects"].to_string();
    assert!(deleted.contains("yurt-controller-manager"), "{deleted}");
    all_ready(&env.client).await;

    let run = support::yurtctl(
        &env.sim,
        &upgrade_args(&["--ignore-preflight-errors", "KubernetesVersion"]),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(root.join("etc/systemd/system/yurthub.service").is_file());
    all_ready(&env.client).await;

    revert_restores_every_root(&env, &before).await;
}

/// A node whose move fails halts the upgrade before another node is touched; once its cause is
/// gone the same upgrade goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_node_halts_the_upgrade_before_the_next_one() {
    let env = support::cluster(4, Layout::Kubeadm, "v1.34.2").await;
    convert_v16(&env).await;
    // someone else's yurthub binary where v1.7's service goes: the servant never overwrites it
    let first = "worker-1";
    let planted = env.sim.node_root(first).join("usr/local/bin/yurthub");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::fs::write(&planted, "someone else's").unwrap();

    let run = support::yurtctl(
        &env.sim,
        &upgrade_args(&["--max-unavailable", "1", "-o", "json"]),
    )
    .await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("[nodes/edge] halted: worker-1 did not come back healthy"),
        "{}",
        run.stderr
    );
    let r = run.json();
    assert_eq!(result_of(&r, first), "failed", "{r:#}");
    for n in ["worker-2", "worker-3"] {
        assert_eq!(result_of(&r, n), "not-started", "{r:#}");
        let root = env.sim.node_root(n);
        assert!(
            root.join("etc/kubernetes/manifests/yurthub.yaml").is_file(),
            "{n} untouched"
        );
    }
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "someone else's");

    std::fs::remove_file(&planted).unwrap();
    let rest = support::yurtctl(&env.sim, &upgrade_args(&["-o", "json"])).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    assert_eq!(r["finished"], true, "{r:#}");
    all_ready(&env.client).await;
}

/// The static-pod rollout's controls on the nodes: `--pause` moves the components and no
/// node; then `--priority` picks the first edge node, `--partition` keeps the last ones of the
/// order on the old release (the cloud node last of all), and a run without them finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn paused_then_by_priority_with_a_partition_then_the_rest() {
    let env = support::cluster(4, Layout::Kubeadm, "v1.34.2").await;
    convert_v16(&env).await;
    let nodes: Api<Node> = Api::all(env.client.clone());
    let patch = json!({"metadata": {"labels": {"zone": "first"}}});
    nodes
        .patch(
            "worker-3",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    let on_static_pod = |n: &str| {
        env.sim
            .node_root(n)
            .join("etc/kubernetes/manifests/yurthub.yaml")
            .is_file()
    };

    let paused = support::yurtctl(&env.sim, &upgrade_args(&["--pause", "-o", "json"])).await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    let r = paused.json();
    assert_eq!(r["finished"], false, "{r:#}");
    for n in ["control-plane-1", "worker-1", "worker-2", "worker-3"] {
        assert_eq!(result_of(&r, n), "pending", "{r:#}");
        assert!(on_static_pod(n), "{n} not moved while paused");
    }
    let j = support::journal_state(&env.client).await.unwrap();
    assert_eq!(j["profile"], "openyurt-v1.7", "the components moved: {j:#}");

    let run = support::yurtctl(
        &env.sim,
        &upgrade_args(&[
            "--priority",
            "zone=first:10",
            "--partition",
            "2",
            "--max-unavailable",
            "1",
            "-o",
            "json",
        ]),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["finished"], false, "{r:#}");
    for (n, want) in [
        ("worker-3", "upgraded"),
        ("worker-1", "upgraded"),
        ("worker-2", "partitioned"),
        ("control-plane-1", "partitioned"),
    ] {
        assert_eq!(result_of(&r, n), want, "{n}: {r:#}");
        assert_eq!(on_static_pod(n), want == "partitioned", "{n}");
    }
    let started = |n: &str| {
        run.stderr
            .lines()
            .position(|l| l.starts_with("[nodes/edge]") && l.contains(n))
            .unwrap_or_else(|| panic!("no line for {n}:\n{}", run.stderr))
    };
    assert!(
        started("worker-3") < started("worker-1"),
        "the higher priority first:\n{}",
        run.stderr
    );
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("2 kept on the old release by --partition"),
        "{r:#}"
    );

    let rest = support::yurtctl(&env.sim, &upgrade_args(&["-o", "json"])).await;
    assert_eq!(rest.code, 0, "{}", rest.stderr);
    let r = rest.json();
    assert_eq!(r["finished"], true, "{r:#}");
    for (n, want) in [
        ("worker-3", "already-upgraded"),
        ("worker-1", "already-upgraded"),
        ("worker-2", "upgraded"),
        ("control-plane-1", "upgraded"),
    ] {
        assert_eq!(result_of(&r, n), want, "{n}: {r:#}");
    }
    all_ready(&env.client).await;
}

/// The per-node gap at a larger size, a benchmark (ignored by default; run with
/// `cargo test --test upgrade_e2e upgrade_gap_at_scale -- --ignored --nocapture`, UPGRADE_NODES
/// and UPGRADE_MAX_UNAVAILABLE to change it): how long each node's YurtHub address went
/// unserved (the servants' own measure), how often a node's Ready condition left True while
/// its YurtHub moved (a watch of every node throughout), the makespan and the API requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn upgrade_gap_at_scale() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let nodes: usize = std::env::var("UPGRADE_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let window = std::env::var("UPGRADE_MAX_UNAVAILABLE").unwrap_or_else(|_| "20%".into());
    // kube-controller-manager's --node-monitor-grace-period and the kubelet's
    // nodeStatusUpdateFrequency at their defaults (kubernetes/kubernetes@v1.37.2
    // pkg/controller/nodelifecycle/config/v1alpha1/defaults.go: 50 s; the kubelet: 10 s), not
    // the tests' compressed ones: whether a node's Ready leaves True is the question
    let started = support::start_sim(nodes, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.34.2".into();
        cfg.node_monitor_grace = std::time::Duration::from_secs(50);
        cfg.heartbeat_interval = std::time::Duration::from_secs(10);
    })
    .await;
    let client = support::kube_client(&started.sim).await;
    let env = support::Cluster {
        sim: started.sim,
        client,
        dir: started.dir,
    };
    convert_v16(&env).await;
    all_ready(&env.client).await;

    // every NotReady a node shows while the upgrade runs
    let flips = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = flips.clone();
    let api: Api<Node> = Api::all(env.client.clone());
    let watch = tokio::spawn(async move {
        let mut s = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(n)) = s.next().await {
            let ready = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
            if let Some(c) = ready.filter(|c| c.status != "True") {
                seen.lock().unwrap().push(format!(
                    "{}: {} {}",
                    n.metadata.name.clone().unwrap_or_default(),
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or("")
                ));
            }
        }
    });
    let m = env.sim.metrics();
    let requests = m.total(None, false);
    let started = std::time::Instant::now();
    let run = support::yurtctl(
        &env.sim,
        &upgrade_args(&["--max-unavailable", &window, "--qps", "0", "-o", "json"]),
    )
    .await;
    let took = started.elapsed();
    watch.abort();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    let mut gaps: Vec<u64> = r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["yurthubUnavailableMs"].as_u64())
        .collect();
    assert_eq!(gaps.len(), nodes, "every node measured its gap: {r:#}");
    gaps.sort_unstable();
    let at = |q: f64| gaps[((gaps.len() - 1) as f64 * q).round() as usize];
    let flipped: std::collections::BTreeSet<String> =
        flips.lock().unwrap().iter().cloned().collect();
    let r = m.total(None, false) - requests;
    println!(
        "measure: upgrade openyurt-v1.6 → openyurt-v1.7 of {nodes} nodes (--max-unavailable \
         {window}): {:.1}s, {r} API requests ({:.1}/node); YurtHub's address unserved per node: \
         min {} ms, median {} ms, p95 {} ms, max {} ms; nodes whose Ready left True: {} {:?}",
        took.as_secs_f64(),
        r as f64 / nodes as f64,
        gaps[0],
        at(0.5),
        at(0.95),
        gaps[gaps.len() - 1],
        flipped.len(),
        flipped
    );
    all_ready(&env.client).await;
}

/// legacy-v0.6 → openyurt-v1.6 rolled back: kube-controller-manager's nodelifecycle goes off
/// again, the legacy controllers come back and v1.6's yurt-manager goes, each node's YurtHub
/// returns to its join-token static pod, and revert afterwards still restores every node root.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_to_v1_6_rolls_back_to_legacy() {
    let env = support::cluster(3, Layout::Kubeadm, "v1.21.14").await;
    let before = trees(&env.sim);
    let kcm = "etc/kubernetes/manifests/kube-controller-manager.yaml";
    let cp = env.sim.node_root("control-plane-1");
    support::convert_profile(&env.sim, "legacy-v0.6").await;
    let kcm_legacy = std::fs::read_to_string(cp.join(kcm)).unwrap();
    let worker = support::first_worker(&env.sim);
    let root = env.sim.node_root(&worker);
    let hub_legacy =
        std::fs::read_to_string(root.join("etc/kubernetes/manifests/yurt-hub.yaml")).unwrap();
    let run = support::yurtctl(&env.sim, &upgrade_to("openyurt-v1.6", &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(root.join("etc/kubernetes/manifests/yurthub.yaml").is_file());

    let back = support::yurtctl(&env.sim, &rollback(&["-o", "json"])).await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    let r = back.json();
    assert_eq!(r["to"]["profile"], "legacy-v0.6", "{r:#}");
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(std::fs::read_to_string(cp.join(kcm)).unwrap(), kcm_legacy);
    assert!(!root.join("etc/kubernetes/manifests/yurthub.yaml").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("etc/kubernetes/manifests/yurt-hub.yaml")).unwrap(),
        hub_legacy
    );
    assert!(root.join("var/lib/yurtctl/yurthub/join-token").is_file());
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), NS);
    assert!(deployments.get_opt("yurt-manager").await.unwrap().is_none());
    assert!(
        deployments
            .get_opt("yurt-controller-manager")
            .await
            .unwrap()
            .is_some()
    );
    all_ready(&env.client).await;

    revert_restores_every_root(&env, &before).await;
}
