//! Custom resources across CRD versions, as OpenYurt v1.6 → v1.7 moves NodePools from
//! v1beta1 to v1beta2 storage, seen through kubectl and kube-rs. Sources:
//! kubernetes/kubernetes@v1.37.2 staging/src/k8s.io/apiextensions-apiserver
//! pkg/apiserver/customresource_handler.go, pkg/apiserver/conversion/webhook_converter.go,
//! pkg/registry/customresourcedefinition/strategy.go, pkg/apis/apiextensions/validation/
//! validation.go; openyurtio/openyurt@v1.7.0 pkg/apis/apps/v1beta1/nodepool_conversion.go,
//! charts/yurt-manager/crds/apps.openyurt.io_nodepools.yaml (templates/openyurt-v1.7);
//! openyurtio/openyurt@v1.6.1's (templates/openyurt-v1.6).

mod common;

use std::process::Command;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, WatchEvent, WatchParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const CRD: &str = "nodepools.apps.openyurt.io";
const NO_ENDPOINTS: &str = "Post \"https://yurt-manager-webhook-service.kube-system.svc:443/convert?timeout=30s\": no endpoints available for service \"yurt-manager-webhook-service\"";

fn kubectl(c: &common::TestCluster, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(c.sim.kubeconfig_path())
        .args(args)
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

/// A profile's NodePool CRD as yurtctl renders it for `kube-system`.
fn profile_crd(profile: &str) -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../templates/{profile}/crd-nodepools.yaml.hbs")),
    )
    .unwrap();
    let yaml = text.split_once("--}}").map_or(&*text, |(_, y)| y);
    serde_saphyr::from_str(&yaml.replace("{{namespace}}", "kube-system")).unwrap()
}

/// `kubectl get` of NodePool `name` in `version`, as JSON.
fn pool_at(c: &common::TestCluster, version: &str, name: &str) -> Result<Value, String> {
    let (ok, out, err) = kubectl(
        c,
        &[
            "get",
            &format!("nodepools.{version}.apps.openyurt.io"),
            name,
            "-o",
            "json",
        ],
    );
    if ok {
        Ok(serde_json::from_str(&out).unwrap())
    } else {
        Err(err)
    }
}

/// The events of a watch of NodePools at `version` from now (its initial ADDED events, or an
/// ERROR), until it ends.
async fn watch_at(c: &common::TestCluster, version: &str) -> Vec<WatchEvent<DynamicObject>> {
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("apps.openyurt.io", version, "NodePool"),
        "nodepools",
    );
    let pools: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
    let stream = pools
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap();
    stream.take(10).try_collect().await.unwrap()
}

fn stored_versions_of(c: &common::TestCluster, crd: &str) -> Value {
    let (ok, out, err) = kubectl(
        c,
        &["get", "crd", crd, "-o", "jsonpath={.status.storedVersions}"],
    );
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn stored_versions(c: &common::TestCluster) -> Value {
    stored_versions_of(c, CRD)
}

fn write_file(c: &common::TestCluster, name: &str, v: &Value) -> String {
    let path = c.dir.path().join(name);
    std::fs::write(&path, serde_json::to_string(v).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// The Deployment's pods gone: nothing serves the webhook Service.
async fn stop_yurt_manager(c: &common::TestCluster) {
    assert!(
        kubectl(
            c,
            &["-n", "kube-system", "delete", "deployment", "yurt-manager"]
        )
        .0
    );
    common::eventually(
        Duration::from_secs(30),
        "yurt-manager's pods gone",
        || async {
            let (_, out, _) = kubectl(
                c,
                &[
                    "-n",
                    "kube-system",
                    "get",
                    "pods",
                    "-l",
                    "app.kubernetes.io/name=yurt-manager",
                    "-o",
                    "name",
                ],
            );
            out.is_empty().then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodepools_move_to_v1beta2_storage_through_yurt_managers_conversion_webhook() {
    let c = common::start(3, Layout::Kubeadm).await;
    // v1.6: v1alpha1 and v1beta1, stored as v1beta1, conversion by webhook
    common::apply(&c.client, &[profile_crd("openyurt-v1.6")]).await;
    assert_eq!(stored_versions(&c), json!(["v1beta1"]));
    for (name, annotations) in [
        ("hz", json!({})),
        ("hn", json!({"nodepool.openyurt.io/hostnetwork": "true"})),
    ] {
        let pool = json!({"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"type": "Edge", "labels": {"team": "a"}}});
        let (ok, _, err) = kubectl(&c, &["create", "-f", &write_file(&c, name, &pool)]);
        assert!(ok, "{err}");
    }
    // v1.7: v1beta2 is the storage version, recorded next to v1beta1
    common::apply(&c.client, &[profile_crd("openyurt-v1.7")]).await;
    assert_eq!(stored_versions(&c), json!(["v1beta1", "v1beta2"]));
    // a version still stored may not leave spec.versions
    let (_, out, _) = kubectl(&c, &["get", "crd", CRD, "-o", "json"]);
    let mut dropped: Value = serde_json::from_str(&out).unwrap();
    let versions = dropped["spec"]["versions"].as_array_mut().unwrap();
    versions.retain(|v| v["name"] != "v1beta1");
    let (ok, _, err) = kubectl(&c, &["replace", "-f", &write_file(&c, "dropped", &dropped)]);
    assert!(!ok);
    assert!(
        err.contains("status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions"),
        "{err}"
    );

    // the chart's Service without yurt-manager: the stored version reads, another does not
    common::apply(
        &c.client,
        &common::chart::yurt_manager_objects("v1.7.0", "kube-system"),
    )
    .await;
    assert_eq!(
        pool_at(&c, "v1beta1", "hz").unwrap()["spec"]["type"],
        "Edge"
    );
    let err = pool_at(&c, "v1beta2", "hz").unwrap_err();
    assert_eq!(
        err,
        format!(
            "Error from server: conversion webhook for apps.openyurt.io/v1beta1, Kind=NodePool failed: {NO_ENDPOINTS}"
        )
    );

    // yurt-manager v1.7.0 converts: its ConvertTo's leader election defaults, hostNetwork
    // from the annotation
    common::chart::install_v17(
        &c,
        |_| {},
        &["--controllers=-nodelifecycle,-yurtnodeconversion,*"],
    )
    .await;
    common::chart::manager_ready(&c.client).await;
    let hz = common::eventually(Duration::from_secs(20), "hz at v1beta2", || async {
        pool_at(&c, "v1beta2", "hz").ok()
    })
    .await;
    assert_eq!(
        hz["spec"],
        json!({"type": "Edge", "labels": {"team": "a"}, "leaderElectionStrategy": "random", "leaderReplicas": 1})
    );
    assert_eq!(hz["apiVersion"], "apps.openyurt.io/v1beta2");
    let hn = pool_at(&c, "v1beta2", "hn").unwrap();
    assert_eq!(hn["spec"]["hostNetwork"], true);
    // watch events are converted too
    let added: Vec<Value> = watch_at(&c, "v1beta2")
        .await
        .into_iter()
        .filter_map(|e| match e {
            WatchEvent::Added(o) => Some(o.data["spec"]["leaderElectionStrategy"].clone()),
            _ => None,
        })
        .collect();
    assert_eq!(added, vec![json!("random"), json!("random")]);

    // written back at v1beta2 it is stored as v1beta2, and read at v1beta1 in v1beta1's shape
    let (ok, _, err) = kubectl(&c, &["replace", "-f", &write_file(&c, "hz2", &hz)]);
    assert!(ok, "{err}");
    let hz1 = pool_at(&c, "v1beta1", "hz").unwrap();
    assert_eq!(hz1["apiVersion"], "apps.openyurt.io/v1beta1");
    assert_eq!(
        hz1["spec"],
        json!({"type": "Edge", "labels": {"team": "a"}})
    );
    assert_eq!(
        hz1["status"],
        json!({"readyNodeNum": 0, "unreadyNodeNum": 0})
    );

    // the storage version migrator's last step: storedVersions through the status subresource
    let (ok, _, err) = kubectl(
        &c,
        &[
            "patch",
            "crd",
            CRD,
            "--subresource=status",
            "--type=merge",
            "-p",
            "{\"status\":{\"storedVersions\":[\"v1beta2\"]}}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(stored_versions(&c), json!(["v1beta2"]));

    // without yurt-manager, hz (now v1beta2) reads only at v1beta2, hn (still v1beta1) only at v1beta1
    stop_yurt_manager(&c).await;
    assert!(pool_at(&c, "v1beta2", "hz").is_ok());
    assert_eq!(
        pool_at(&c, "v1beta1", "hz").unwrap_err(),
        format!(
            "Error from server: conversion webhook for apps.openyurt.io/v1beta2, Kind=NodePool failed: {NO_ENDPOINTS}"
        )
    );
    assert!(pool_at(&c, "v1beta1", "hn").is_ok());
    let (ok, _, err) = kubectl(&c, &["get", "nodepools.v1beta2.apps.openyurt.io"]);
    assert!(!ok);
    assert!(
        err.contains("conversion webhook for apps.openyurt.io/v1beta1, Kind=NodePool failed"),
        "{err}"
    );
    // a watch whose event cannot be converted ends with the error
    let events = watch_at(&c, "v1beta1").await;
    match events.last() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 500);
            assert!(
                e.message.starts_with(
                    "conversion webhook for apps.openyurt.io/v1beta2, Kind=NodePool failed"
                ),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    // a delete reads the object through its version first
    let (ok, _, err) = kubectl(&c, &["delete", "nodepools.v1beta2.apps.openyurt.io", "hn"]);
    assert!(!ok);
    assert_eq!(
        err,
        format!(
            "Error from server: conversion webhook for apps.openyurt.io/v1beta1, Kind=NodePool failed: {NO_ENDPOINTS}"
        )
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1: the hub is v1beta1 (pkg/apis/apps/v1alpha1/nodepool_conversion.go)
// and its scheme has no v1beta2, so with the v1.7 CRD (storage v1beta2) the v1.6.1 webhook
// cannot convert: yurt-manager must be v1.7 before NodePools are read or written as v1beta2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_v161_converts_to_v1alpha1_but_not_to_v1beta2() {
    let c = common::start(3, Layout::Kubeadm).await;
    let mut objects = common::chart::yurt_manager_objects("v1.6.1", "kube-system");
    let mut deployment = common::chart::yurt_manager_deployment("v1.6.1", "kube-system", &[]);
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("openyurt/yurt-manager:v1.6.1");
    objects.push(profile_crd("openyurt-v1.6"));
    objects.push(deployment);
    common::apply(&c.client, &objects).await;
    common::chart::manager_ready(&c.client).await;
    let pool = json!({"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool",
        "metadata": {"name": "hn"}, "spec": {"type": "Edge", "hostNetwork": true}});
    let path = write_file(&c, "hn", &pool);
    common::eventually(Duration::from_secs(20), "hn created", || async {
        kubectl(&c, &["create", "-f", &path]).0.then_some(())
    })
    .await;
    let hn = common::eventually(Duration::from_secs(20), "hn at v1alpha1", || async {
        pool_at(&c, "v1alpha1", "hn").ok()
    })
    .await;
    // v1alpha1 has no hostNetwork: ConvertFrom records it as the annotation
    assert_eq!(hn["spec"], json!({"type": "Edge"}));
    assert_eq!(
        hn["metadata"]["annotations"]["nodepool.openyurt.io/hostnetwork"],
        "true"
    );
    common::apply(&c.client, &[profile_crd("openyurt-v1.7")]).await;
    let err = pool_at(&c, "v1beta2", "hn").unwrap_err();
    assert_eq!(
        err,
        "Error from server: conversion webhook for apps.openyurt.io/v1beta1, Kind=NodePool failed: no kind \"NodePool\" is registered for version \"apps.openyurt.io/v1beta2\" in scheme \"pkg/runtime/scheme.go:100\""
    );
    c.sim.shutdown().await;
}

/// CRD `widgets.example.com` with these versions (the first the storage one) and no
/// conversion (strategy None).
fn widgets(versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"name": v, "served": true, "storage": i == 0,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}))
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"}, "versions": vs}})
}

// strategy None (conversion/nop_converter.go) rewrites apiVersion only; both versions must be
// in spec.versions (conversion/converter.go crConverter.ConvertToVersion), so an object left
// in a version a CRD no longer lists cannot be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_webhook_versions_are_relabelled_and_must_stay_listed() {
    let c = common::start(1, Layout::Kubeadm).await;
    let widget = |name: &str, version: &str| {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": 1}})
    };
    let at = |version: &str, name: &str| {
        let (ok, out, err) = kubectl(
            &c,
            &[
                "get",
                &format!("widgets.{version}.example.com"),
                name,
                "-o",
                "json",
            ],
        );
        if ok {
            Ok(serde_json::from_str::<Value>(&out).unwrap())
        } else {
            Err(err)
        }
    };
    let crd = |edit: &dyn Fn(&mut Value)| {
        let (_, out, _) = kubectl(&c, &["get", "crd", "widgets.example.com", "-o", "json"]);
        let mut v: Value = serde_json::from_str(&out).unwrap();
        edit(&mut v);
        kubectl(&c, &["replace", "-f", &write_file(&c, "crd", &v)])
    };
    common::apply(&c.client, &[widgets(&["v1", "v2"])]).await;
    let (ok, out, err) = kubectl(
        &c,
        &[
            "create",
            "-f",
            &write_file(&c, "w1", &widget("w1", "v2")),
            "-o",
            "json",
        ],
    );
    assert!(ok, "{err}");
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created["apiVersion"], "example.com/v2");
    let w1 = at("v1", "w1").unwrap();
    assert_eq!(w1["apiVersion"], "example.com/v1");
    assert_eq!(w1["spec"], json!({"size": 1}));
    // storage moves to v2; once storedVersions is trimmed, v1 may leave the CRD, and w1,
    // still stored as v1, is lost to reads
    let (ok, _, err) = crd(&|v| {
        v["spec"]["versions"][0]["storage"] = json!(false);
        v["spec"]["versions"][1]["storage"] = json!(true);
    });
    assert!(ok, "{err}");
    assert_eq!(
        stored_versions_of(&c, "widgets.example.com"),
        json!(["v1", "v2"])
    );
    let (ok, _, err) = kubectl(
        &c,
        &[
            "patch",
            "crd",
            "widgets.example.com",
            "--subresource=status",
            "--type=merge",
            "-p",
            "{\"status\":{\"storedVersions\":[\"v2\"]}}",
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = crd(&|v| {
        v["spec"]["versions"].as_array_mut().unwrap().remove(0);
    });
    assert!(ok, "{err}");
    assert!(
        kubectl(
            &c,
            &["create", "-f", &write_file(&c, "w2", &widget("w2", "v2"))]
        )
        .0
    );
    assert_eq!(at("v2", "w2").unwrap()["spec"], json!({"size": 1}));
    assert_eq!(
        at("v2", "w1").unwrap_err(),
        "Error from server: request to convert CR from an invalid group/version: example.com/v1"
    );
    c.sim.shutdown().await;
}
