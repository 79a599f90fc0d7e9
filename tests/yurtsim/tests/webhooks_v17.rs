//! yurt-manager v1.7.0's node and NodePool webhooks, applied by the API server while a ready
//! yurt-manager pod serves them, seen through kubectl as a user sees them. Sources:
//! openyurtio/openyurt@v1.7.0 pkg/yurtmanager/webhook/node/v1/{node_default,node_validation}.go,
//! pkg/yurtmanager/webhook/nodepool/v1beta2/{nodepool_default,nodepool_validation}.go;
//! k8s.io/apiserver@v0.34.0 pkg/admission/plugin/webhook/errors/statuserror.go (ToStatusErr).

mod common;

use std::process::Command;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
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

/// `kubectl create -f` of `obj` (manager kubectl-create).
fn create(c: &common::TestCluster, obj: Value) -> (bool, String, String) {
    let name = obj["metadata"]["name"].as_str().unwrap();
    let path = c.dir.path().join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(&obj).unwrap()).unwrap();
    kubectl(c, &["create", "-f", path.to_str().unwrap()])
}

fn pool(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool", "metadata": {"name": name}, "spec": spec})
}

async fn chart_with_pools(c: &common::TestCluster) {
    common::chart::install_v17(
        c,
        |_| {},
        &["--controllers=-nodelifecycle,-yurtnodeconversion,*"],
    )
    .await;
    common::chart::manager_ready(&c.client).await;
    // created once the webhooks serve, so the defaulting webhook runs
    common::apply(
        &c.client,
        &[
            pool("hz", json!({"type": "Edge"})),
            pool("hn", json!({"type": "Edge", "hostNetwork": true})),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_labels_are_guarded_by_the_node_webhooks() {
    let c = common::start(3, Layout::Kubeadm).await;
    chart_with_pools(&c).await;
    let label = |args: &[&str]| {
        let mut a = vec!["label", "node"];
        a.extend_from_slice(args);
        kubectl(&c, &a)
    };
    // node_default.go: the pool must exist; its NotFound is the answer
    let (ok, _, err) = label(&["worker-1", "apps.openyurt.io/nodepool=ghost"]);
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (NotFound): admission webhook \"mutate.core.v1.node.openyurt.io\" denied the request: nodepools.apps.openyurt.io \"ghost\" not found"
    );
    assert!(label(&["worker-1", "apps.openyurt.io/nodepool=hz"]).0);
    // node_validation.go: added or removed, never changed in place (kubectl renders the
    // Invalid status from its causes)
    let (ok, _, err) = label(&["worker-1", "apps.openyurt.io/nodepool=hn", "--overwrite"]);
    assert!(!ok);
    assert_eq!(
        err,
        "The Node \"worker-1\" is invalid: metadata.labels.apps.openyurt.io/nodepool: Forbidden: apps.openyurt.io/nodepool can only be added or removed, not modified in-place"
    );
    assert!(label(&["worker-1", "apps.openyurt.io/nodepool-"]).0);
    // a hostNetwork pool adds the hostnetwork label, which then cannot change
    assert!(label(&["worker-2", "apps.openyurt.io/nodepool=hn"]).0);
    let (_, out, _) = kubectl(
        &c,
        &[
            "get",
            "node",
            "worker-2",
            "-o",
            "jsonpath={.metadata.labels.nodepool\\.openyurt\\.io/hostnetwork}",
        ],
    );
    assert_eq!(out, "true");
    // removing it is "successful", but the defaulting webhook (run before validation) puts it
    // back from the pool
    assert!(label(&["worker-2", "nodepool.openyurt.io/hostnetwork-"]).0);
    let (_, out, _) = kubectl(
        &c,
        &[
            "get",
            "node",
            "worker-2",
            "-o",
            "jsonpath={.metadata.labels.nodepool\\.openyurt\\.io/hostnetwork}",
        ],
    );
    assert_eq!(out, "true");
    // on a node in no pool (no defaulting), a set hostnetwork label is immutable
    assert!(label(&["worker-1", "nodepool.openyurt.io/hostnetwork=true"]).0);
    let (ok, _, err) = label(&[
        "worker-1",
        "nodepool.openyurt.io/hostnetwork=false",
        "--overwrite",
    ]);
    assert!(!ok);
    assert!(err.contains("metadata.labels.nodepool.openyurt.io/hostnetwork: Forbidden: nodepool.openyurt.io/hostnetwork can not be changed"), "{err}");
    // is-edge-worker: only nodes and the conversion controller's ServiceAccount (the
    // admission request's user is the impersonated one)
    let edge = "openyurt.io/is-edge-worker=true";
    let (ok, _, err) = label(&["worker-1", edge]);
    assert!(!ok);
    assert_eq!(
        err,
        "The Node \"worker-1\" is invalid: metadata.labels.openyurt.io/is-edge-worker: Forbidden: openyurt.io/is-edge-worker can only be modified by YurtNodeConversionController or the node certificate process"
    );
    assert!(
        label(&[
            "worker-1",
            edge,
            "--as=system:node:worker-1",
            "--as-group=system:nodes"
        ])
        .0
    );
    let sa = "--as=system:serviceaccount:kube-system:yurt-manager-yurt-node-conversion-controller";
    assert!(label(&["worker-1", "openyurt.io/is-edge-worker-", sa]).0);
    let (ok, _, err) = label(&[
        "worker-1",
        edge,
        "--as=system:serviceaccount:kube-system:yurt-manager",
    ]);
    assert!(!ok, "{err}");
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodepools_are_defaulted_and_validated_by_their_webhooks() {
    let c = common::start(3, Layout::Kubeadm).await;
    chart_with_pools(&c).await;
    let (_, out, _) = kubectl(&c, &["get", "nodepool", "hz", "-o", "json"]);
    let np: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        np["metadata"]["labels"]["nodepool.openyurt.io/type"],
        "edge"
    );
    assert_eq!(np["spec"]["leaderElectionStrategy"], "random");
    assert_eq!(np["spec"]["leaderReplicas"], 1);
    assert_eq!(
        np["spec"]["poolScopeMetadata"],
        json!([{"group": "", "version": "v1", "resource": "services"}, {"group": "discovery.k8s.io", "version": "v1", "resource": "endpointslices"}])
    );
    // create: spec validation, an Invalid status (422)
    let bad = serde_json::to_string(&pool("bad", json!({"type": "Foo"}))).unwrap();
    let path = c.dir.path().join("bad.json");
    std::fs::write(&path, bad).unwrap();
    let (ok, _, err) = kubectl(&c, &["create", "-f", path.to_str().unwrap()]);
    assert!(!ok);
    assert_eq!(
        err,
        "The NodePool \"bad\" is invalid: spec.type: Invalid value: \"Foo\": pool type should be Edge or Cloud"
    );
    // update: immutable type, a Forbidden status (403)
    let (ok, _, err) = kubectl(
        &c,
        &[
            "patch",
            "nodepool",
            "hz",
            "--type=merge",
            "-p",
            "{\"spec\":{\"type\":\"Cloud\"}}",
        ],
    );
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (Forbidden): admission webhook \"v.v1beta2.nodepool.kb.io\" denied the request: nodepools.apps.openyurt.io \"hz\" is forbidden: spec.type: Forbidden: pool type can't be changed"
    );
    // delete: refused while a node is a member
    assert!(
        kubectl(
            &c,
            &["label", "node", "worker-1", "apps.openyurt.io/nodepool=hz"]
        )
        .0
    );
    let (ok, _, err) = kubectl(&c, &["delete", "nodepool", "hz"]);
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (Forbidden): admission webhook \"v.v1beta2.nodepool.kb.io\" denied the request: nodepools.apps.openyurt.io \"hz\" is forbidden: metadata.name: Forbidden: cannot remove nonempty pool, please drain the pool before deleting"
    );
    assert!(
        kubectl(
            &c,
            &["label", "node", "worker-1", "apps.openyurt.io/nodepool-"]
        )
        .0
    );
    assert!(kubectl(&c, &["delete", "nodepool", "hz"]).0);
    c.sim.shutdown().await;
}

/// A NodePool written at v1beta1 goes through the v1beta2 webhooks (matchPolicy Equivalent):
/// the API server converts it with yurt-manager's conversion webhook (v1beta1 → v1beta2 sets
/// leaderElectionStrategy "random"), so the validation passes, and the defaults are converted
/// back (k8s.io/apiserver v0.37.2 pkg/admission/plugin/webhook/generic/webhook.go
/// ShouldCallHook; pkg/apis/apps/v1beta1/nodepool_conversion.go at v1.7.0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nodepool_written_at_v1beta1_is_admitted_at_v1beta2() {
    let c = common::start(3, Layout::Kubeadm).await;
    chart_with_pools(&c).await;
    let v1beta1 = json!({"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool",
        "metadata": {"name": "sh"}, "spec": {"type": "Edge"}});
    let (ok, _, err) = create(&c, v1beta1);
    assert!(ok, "{err}");
    let (_, out, _) = kubectl(
        &c,
        &[
            "get",
            "nodepools.v1beta2.apps.openyurt.io",
            "sh",
            "-o",
            "json",
        ],
    );
    let np: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(np["spec"]["leaderElectionStrategy"], "random");
    // the defaulting webhook's label came back through the conversion
    assert_eq!(
        np["metadata"]["labels"]["nodepool.openyurt.io/type"],
        "edge"
    );
    // and its validation still answers a v1beta1 write
    let (ok, _, err) = kubectl(
        &c,
        &[
            "patch",
            "nodepools.v1beta1.apps.openyurt.io",
            "sh",
            "--type=merge",
            "-p",
            "{\"spec\":{\"type\":\"Cloud\"}}",
        ],
    );
    assert!(!ok);
    assert!(err.contains("pool type can't be changed"), "{err}");
    c.sim.shutdown().await;
}

// nodepool_validation.go validateNodePoolSpecAnnotations: spec.annotations must pass
// apivalidation.ValidateAnnotations (k8s.io/apimachinery@v0.34.0 objectmeta.go: keys checked
// lower-cased as qualified names); the bad value is the whole map as json.Marshal writes it.
// Checked first on create (Invalid) and on update (Forbidden, first error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodepool_spec_annotations_must_be_valid_annotation_keys() {
    let c = common::start(3, Layout::Kubeadm).await;
    chart_with_pools(&c).await;
    let create = |name: &str, spec: Value| {
        let path = c.dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string(&pool(name, spec)).unwrap()).unwrap();
        kubectl(&c, &["create", "-f", path.to_str().unwrap()])
    };
    let (ok, _, err) = create(
        "annos",
        json!({"type": "Foo", "annotations": {"ok": "<y>", "bad key": "x"}}),
    );
    assert!(!ok);
    assert_eq!(
        err,
        "The NodePool \"annos\" is invalid: spec.annotations: Invalid value: {\"bad key\":\"x\",\"ok\":\"\\u003cy\\u003e\"}: invalid annotations"
    );
    // case does not matter, a DNS prefix is allowed
    let (ok, _, err) = create(
        "upper",
        json!({"type": "Edge", "annotations": {"Example.COM/Some_Key": "v"}}),
    );
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(
        &c,
        &[
            "patch",
            "nodepool",
            "hz",
            "--type=merge",
            "-p",
            "{\"spec\":{\"annotations\":{\"a/b/c\":\"x\"}}}",
        ],
    );
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (Forbidden): admission webhook \"v.v1beta2.nodepool.kb.io\" denied the request: nodepools.apps.openyurt.io \"hz\" is forbidden: spec.annotations: Invalid value: {\"a/b/c\":\"x\"}: invalid annotations"
    );
    c.sim.shutdown().await;
}

// Without a running yurt-manager the node webhooks (failurePolicy Ignore) are skipped and the
// NodePool ones (Fail) refuse every write: nothing of the logic above applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_serving_yurt_manager_only_failure_policies_apply() {
    let c = common::start(3, Layout::Kubeadm).await;
    common::apply(
        &c.client,
        &common::chart::yurt_manager_objects("v1.7.0", "kube-system"),
    )
    .await;
    assert!(
        kubectl(
            &c,
            &[
                "label",
                "node",
                "worker-1",
                "openyurt.io/is-edge-worker=true"
            ]
        )
        .0
    );
    let bad = serde_json::to_string(&pool("p", json!({"type": "Edge"}))).unwrap();
    let path = c.dir.path().join("p.json");
    std::fs::write(&path, bad).unwrap();
    let (ok, _, err) = kubectl(&c, &["create", "-f", path.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("failed calling webhook \"m.v1beta2.nodepool.kb.io\""),
        "{err}"
    );
    assert!(
        err.contains("no endpoints available for service \"yurt-manager-webhook-service\""),
        "{err}"
    );
    c.sim.shutdown().await;
}

// kube-apiserver computes managedFields before mutating admission (kubernetes/kubernetes@v1.37.2
// staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go: applyPatch, then
// applyAdmission; create.go and update.go: FieldManager.UpdateNoErrors, then Admit), so what
// the defaulting webhooks add belongs to no manager and a re-apply that does not name it
// leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_a_mutating_webhook_sets_are_not_the_appliers() {
    let c = common::start(3, Layout::Kubeadm).await;
    common::chart::install_v17(
        &c,
        |_| {},
        &["--controllers=-nodelifecycle,-yurtnodeconversion,*"],
    )
    .await;
    common::chart::manager_ready(&c.client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("apps.openyurt.io", "v1beta2", "NodePool"),
        "nodepools",
    );
    let pools: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
    let config: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "apps.openyurt.io/v1beta2",
        "kind": "NodePool", "metadata": {"name": "edge"}, "spec": {"type": "Edge"}}))
        .unwrap();
    let pp = PatchParams::apply("yurtctl");
    let first = common::eventually(Duration::from_secs(20), "the first apply", || async {
        pools.patch("edge", &pp, &Patch::Apply(&config)).await.ok()
    })
    .await;
    let spec = |o: &DynamicObject| o.data["spec"].clone();
    assert_eq!(spec(&first)["leaderElectionStrategy"], "random");
    let again = pools
        .patch("edge", &pp, &Patch::Apply(&config))
        .await
        .expect("the same apply again");
    assert_eq!(spec(&again)["leaderElectionStrategy"], "random");
    assert_eq!(spec(&again)["leaderReplicas"], 1);
    assert!(spec(&again)["poolScopeMetadata"].is_array());
    let entries = again.metadata.managed_fields.clone().unwrap();
    let mine: Vec<_> = entries
        .iter()
        .filter(|e| e.manager.as_deref() == Some("yurtctl"))
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].operation.as_deref(), Some("Apply"));
    let fields = serde_json::to_value(&mine[0].fields_v1).unwrap();
    assert_eq!(fields, json!({"f:spec": {"f:type": {}}}));
    // a create by another client: its Update entry does not own them either
    let (ok, _, err) = create(&c, pool("p2", json!({"type": "Edge"})));
    assert!(ok, "{err}");
    let (_, out, _) = kubectl(
        &c,
        &[
            "get",
            "nodepools.v1beta2.apps.openyurt.io",
            "p2",
            "-o",
            "json",
            "--show-managed-fields",
        ],
    );
    let p2: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(p2["spec"]["leaderElectionStrategy"], "random");
    let created = &p2["metadata"]["managedFields"][0];
    assert_eq!(created["manager"], "kubectl-create");
    assert_eq!(
        created["fieldsV1"],
        json!({"f:spec": {".": {}, "f:type": {}}})
    );
    // an update (update.go: the field manager, then admission): the node webhook's
    // hostnetwork label is not kubectl-label's
    let (ok, _, err) = create(&c, pool("hn", json!({"type": "Edge", "hostNetwork": true})));
    assert!(ok, "{err}");
    assert!(
        kubectl(
            &c,
            &["label", "node", "worker-1", "apps.openyurt.io/nodepool=hn"]
        )
        .0
    );
    let (_, out, _) = kubectl(
        &c,
        &[
            "get",
            "node",
            "worker-1",
            "-o",
            "json",
            "--show-managed-fields",
        ],
    );
    let node: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        node["metadata"]["labels"]["nodepool.openyurt.io/hostnetwork"],
        "true"
    );
    let label = node["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "kubectl-label")
        .unwrap();
    assert_eq!(
        label["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:apps.openyurt.io/nodepool": {}}}})
    );
    c.sim.shutdown().await;
}
