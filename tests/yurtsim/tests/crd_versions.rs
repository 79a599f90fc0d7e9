//! Custom resources across CRD versions, seen through kubectl. Sources:
//! kubernetes/kubernetes@v1.37.2 staging/src/k8s.io/apiextensions-apiserver
//! pkg/apiserver/customresource_handler.go, pkg/apiserver/conversion/,
//! pkg/registry/customresourcedefinition/strategy.go, pkg/apis/apiextensions/validation/
//! validation.go.

mod common;

use std::process::Command;

use serde_json::{Value, json};
use yurtsim::Layout;

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

fn stored_versions_of(c: &common::TestCluster, crd: &str) -> Value {
    let (ok, out, err) = kubectl(
        c,
        &["get", "crd", crd, "-o", "jsonpath={.status.storedVersions}"],
    );
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn write_file(c: &common::TestCluster, name: &str, v: &Value) -> String {
    let path = c.dir.path().join(name);
    std::fs::write(&path, serde_json::to_string(v).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
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
