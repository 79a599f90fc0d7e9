//! The component models: a pod whose image is a modelled OpenYurt binary runs that binary's
//! start-up contract (facts and sources in `tests/yurtsim/facts/`). Each test names the
//! upstream source of the behaviour it holds the model to.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DynamicObject, LogParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use yurtsim::Layout;

const IMAGE: &str = "openyurt/yurt-manager:v1.6.1";

fn service_account(admin: bool) -> Vec<Value> {
    let mut v = vec![json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "yurt-manager", "namespace": "kube-system"}})];
    if admin {
        let subjects = [
            "yurt-manager",
            "yurt-manager-yurt-static-set-controller",
            "yurt-manager-csr-approver-controller",
        ]
        .map(|sa| json!({"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}));
        v.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "yurt-manager-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            // the base identity and the per-controller ones it mints tokens for
            "subjects": subjects}));
    }
    v
}

/// What yurt-manager's webhook wait needs: the certificate Secret and both configurations.
fn webhook_objects() -> Vec<Value> {
    let wh = |kind: &str, name: &str, path: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": "n.openyurt.io", "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
                "clientConfig": {"service": {"name": "yurt-manager-webhook-service", "namespace": "kube-system", "path": path}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"]}]}]})
    };
    vec![
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "yurt-manager-webhook-certs", "namespace": "kube-system"}}),
        wh(
            "MutatingWebhookConfiguration",
            "yurt-manager-mutating-webhook-configuration",
            "/mutate-core-openyurt-io-v1-node",
        ),
        wh(
            "ValidatingWebhookConfiguration",
            "yurt-manager-validating-webhook-configuration",
            "/validate-apps-openyurt-io-v1beta2-nodepool",
        ),
    ]
}

fn yurt_manager_pod(args: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "yurt-manager", "namespace": "kube-system"},
        "spec": {"serviceAccountName": "yurt-manager", "nodeName": "control-plane-1",
            "containers": [{"name": "yurt-manager", "image": IMAGE, "command": ["/usr/local/bin/yurt-manager"], "args": args}]}})
}

/// The pod once its container has crashed at least once: (exit code, its log).
async fn crashed(client: &kube::Client) -> (i32, String) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let code = common::eventually(Duration::from_secs(20), "yurt-manager to crash", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("yurt-manager").await.ok()?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            (cs.restart_count >= 1).then_some(())?;
            Some(cs.last_state?.terminated?.exit_code)
        }
    })
    .await;
    // while the container waits out its back-off, its log is the terminated instance's
    let log = pods
        .logs("yurt-manager", &LogParams::default())
        .await
        .unwrap();
    (code, log)
}

async fn ready(client: &kube::Client, what: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    common::eventually(Duration::from_secs(20), what, || {
        let pods = pods.clone();
        async move {
            let p = pods.get("yurt-manager").await.ok()?;
            let ready = p
                .status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            ready.then_some(p)
        }
    })
    .await
}

// openyurtio/openyurt@v1.6.1:cmd/yurt-manager/yurt-manager.go (main: exit 1), spf13/pflag@v1.0.5
// flag.go ("unknown flag: --%s"): cobra prints "Error: <err>" and the usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_refuses_an_unknown_flag_like_the_real_binary() {
    let c = common::start(2, Layout::Kubeadm).await;
    let mut objects = service_account(true);
    objects.push(yurt_manager_pod(&["--controllers=*", "--zap-devel"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.starts_with("Error: unknown flag: --zap-devel\nUsage:"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1:pkg/yurtmanager/controller/platformadmin/platform_admin_controller.go
// (Add: REST-mapper lookup of iot.openyurt.io/v1beta1 platformadmins; pkg/yurtmanager/controller/
// base/controller.go SetupWithManager does not tolerate NoResourceMatchError → exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_exits_when_a_version_a_controller_looks_up_is_not_served() {
    let c = common::start(2, Layout::Kubeadm).await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "platformadmins.iot.openyurt.io"},
        "spec": {"group": "iot.openyurt.io", "scope": "Namespaced",
            "names": {"plural": "platformadmins", "singular": "platformadmin", "kind": "PlatformAdmin", "listKind": "PlatformAdminList"},
            "versions": [{"name": "v1alpha2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let mut objects = service_account(true);
    objects.push(crd);
    objects.push(yurt_manager_pod(&["--controllers=platformadmin"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("resource iot.openyurt.io/v1beta1, Resource=platformadmins doesn't exist"),
        "{log}"
    );
    assert!(
        log.contains("unable to setup controllers\t{\"error\": \"no matches for iot.openyurt.io/v1beta1, Resource=platformadmins\"}"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1:pkg/yurtmanager/webhook/server.go (Initialize: the first sync must
// succeed within 20 s, else "could not prepare certificate for webhook within 20s", exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_exits_when_its_webhook_configurations_are_missing() {
    let c = common::start(2, Layout::Kubeadm).await;
    let mut objects = service_account(true);
    objects.push(webhook_objects().remove(0));
    objects.push(yurt_manager_pod(&["--controllers=csrapprover"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains(
            "not found MutatingWebhookConfiguration yurt-manager-mutating-webhook-configuration"
        ),
        "{log}"
    );
    assert!(log.contains("unable to initialize webhook\t{\"error\": \"could not prepare certificate for webhook within 20s\"}"), "{log}");
    c.sim.shutdown().await;
}

// The same wait, with the objects present but the ServiceAccount without RBAC: the webhook
// controller's informers cannot list the configurations, so the sync never succeeds
// (openyurtio/openyurt@v1.6.1:pkg/yurtmanager/webhook/util/controller/webhook_controller.go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_without_its_rbac_never_gets_past_the_webhook_wait() {
    let c = common::start(2, Layout::Kubeadm).await;
    let mut objects = service_account(false);
    objects.extend(webhook_objects());
    objects.push(yurt_manager_pod(&["--controllers=csrapprover"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(log.contains("User \"system:serviceaccount:kube-system:yurt-manager\" cannot list resource \"mutatingwebhookconfigurations\""), "{log}");
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1: webhook_controller.go/configuration.go (CA injected, paths the
// process does not serve pruned, template kept in annotation yurt-manager-template),
// cmd/yurt-manager/app/manager.go (Lease cloud-yurt-manager via --leader-elect-resource-name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_manager_with_its_objects_becomes_ready_prunes_unserved_webhooks_and_leads() {
    let c = common::start(2, Layout::Kubeadm).await;
    let mut objects = service_account(true);
    objects.extend(webhook_objects());
    objects.push(yurt_manager_pod(&[
        "--controllers=csrapprover",
        "--leader-elect-resource-name=cloud-yurt-manager",
    ]));
    common::apply(&c.client, &objects).await;
    ready(&c.client, "yurt-manager Ready").await;
    let api = |plural: &str, kind: &str| {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        Api::<DynamicObject>::all_with(c.client.clone(), &ar)
    };
    let mutating = api(
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
    )
    .get("yurt-manager-mutating-webhook-configuration")
    .await
    .unwrap();
    let hooks = mutating.data["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "the node webhook is served");
    assert!(hooks[0]["clientConfig"]["caBundle"].is_string());
    assert!(
        mutating
            .metadata
            .annotations
            .unwrap()
            .contains_key("yurt-manager-template")
    );
    let validating = api(
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
    )
    .get("yurt-manager-validating-webhook-configuration")
    .await
    .unwrap();
    assert_eq!(
        validating.data["webhooks"],
        json!([]),
        "v1.6.1 serves no v1beta2 NodePool path, so that webhook is pruned"
    );
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.client.clone(), "kube-system");
    let lease = common::eventually(Duration::from_secs(10), "the lease", || {
        let leases = leases.clone();
        async move { leases.get("cloud-yurt-manager").await.ok() }
    })
    .await;
    assert!(
        lease
            .spec
            .unwrap()
            .holder_identity
            .unwrap()
            .starts_with("yurt-manager_")
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1:pkg/yurtmanager/controller/yurtstaticset/yurt_static_set_controller.go
// (syncConfigMap: ConfigMap yurt-static-set-<name>, key = spec.staticPodManifest, annotation
// openyurt.io/static-pod-hash, rewritten when the hash differs; a ConfigMap without
// annotations panics on every reconcile, lines 428-430).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_yurtstaticset_controller_owns_its_configmap_and_breaks_on_one_without_annotations() {
    let c = common::start(2, Layout::Kubeadm).await;
    // the profile's CRD, without the template's leading comment
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../templates/openyurt-v1.6/crd-yurtstaticsets.yaml.hbs"),
    )
    .unwrap();
    let crd: Value =
        serde_saphyr::from_str(text.split_once("--}}").map_or(&*text, |(_, y)| y)).unwrap();
    let yss = |name: &str| {
        json!({"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "YurtStaticSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"staticPodManifest": "demo", "upgradeStrategy": {"type": "OTA"},
                "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}})
    };
    let mut objects = service_account(true);
    objects.extend(webhook_objects());
    objects.push(crd);
    objects.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "yurt-static-set-preexisting", "namespace": "kube-system"}, "data": {"demo": "x"}}));
    objects.push(yss("fresh"));
    objects.push(yss("preexisting"));
    objects.push(yurt_manager_pod(&["--controllers=yurtstaticset"]));
    common::apply(&c.client, &objects).await;
    ready(&c.client, "yurt-manager Ready").await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-system");
    let created = common::eventually(
        Duration::from_secs(10),
        "the controller's ConfigMap",
        || {
            let cms = cms.clone();
            async move { cms.get("yurt-static-set-fresh").await.ok() }
        },
    )
    .await;
    let hash = created.metadata.annotations.clone().unwrap()["openyurt.io/static-pod-hash"].clone();
    let manifest = &created.data.clone().unwrap()["demo"];
    assert!(
        manifest.contains(&format!("openyurt.io/static-pod-hash: {hash}")),
        "{manifest}"
    );
    // a foreign edit of the data is kept while the hash annotation matches; one of the hash is reverted
    let edit = json!({"metadata": {"annotations": {"openyurt.io/static-pod-hash": "someone-else"}}, "data": {"demo": "edited"}});
    cms.patch(
        "yurt-static-set-fresh",
        &PatchParams::default(),
        &Patch::Merge(&edit),
    )
    .await
    .unwrap();
    common::eventually(Duration::from_secs(10), "the ConfigMap restored", || {
        let cms = cms.clone();
        let manifest = manifest.clone();
        async move {
            let cm = cms.get("yurt-static-set-fresh").await.ok()?;
            (cm.data?["demo"] == manifest).then_some(())
        }
    })
    .await;
    // the pre-existing ConfigMap without annotations is never rewritten, and the set gets no status
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stuck = cms.get("yurt-static-set-preexisting").await.unwrap();
    assert_eq!(stuck.data.unwrap()["demo"], "x");
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "YurtStaticSet"),
        "yurtstaticsets",
    );
    let sets: Api<DynamicObject> = Api::namespaced_with(c.client.clone(), "kube-system", &ar);
    assert!(sets.get("preexisting").await.unwrap().data["status"].is_null());
    assert_eq!(
        sets.get("fresh").await.unwrap().data["status"],
        json!({"totalNumber": 0, "readyNumber": 0, "upgradedNumber": 0})
    );
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let log = pods
        .logs("yurt-manager", &LogParams::default())
        .await
        .unwrap();
    assert!(log.contains("\"name\": \"preexisting\", \"error\": \"panic: assignment to entry in nil map [recovered]\""), "{log}");
    c.sim.shutdown().await;
}

/// The profile's YurtStaticSet CRD (without the template's leading comment).
fn yss_crd() -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../templates/openyurt-v1.6/crd-yurtstaticsets.yaml.hbs"),
    )
    .unwrap();
    serde_saphyr::from_str(text.split_once("--}}").map_or(&*text, |(_, y)| y)).unwrap()
}

/// Set `demo` in kube-system whose static pod runs `sleep <secs>`; the template carries the
/// name and namespace the mutating webhook would add.
fn demo_set(secs: u32, strategy: Value) -> Value {
    json!({"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "YurtStaticSet",
        "metadata": {"name": "demo", "namespace": "kube-system"},
        "spec": {"staticPodManifest": "demo", "upgradeStrategy": strategy,
            "template": {"metadata": {"name": "demo", "namespace": "kube-system", "labels": {"app": "demo"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["sleep", secs.to_string()]}]}}}})
}

fn yss_api(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "YurtStaticSet"),
        "yurtstaticsets",
    );
    Api::namespaced_with(client.clone(), "kube-system", &ar)
}

/// Starts the yurtstaticset controller with set `set`, puts the ConfigMap's manifest on every
/// node (as yurtadm join or yurtctl would) and waits for the status to count them all
/// upgraded; the first hash.
async fn demo_on_every_node(c: &common::TestCluster, set: Value) -> String {
    let mut objects = service_account(true);
    objects.extend(webhook_objects());
    objects.push(yss_crd());
    objects.push(set);
    objects.push(yurt_manager_pod(&["--controllers=yurtstaticset"]));
    common::apply(&c.client, &objects).await;
    ready(&c.client, "yurt-manager Ready").await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-system");
    let cm = common::eventually(Duration::from_secs(10), "the set's ConfigMap", || {
        let cms = cms.clone();
        async move { cms.get("yurt-static-set-demo").await.ok() }
    })
    .await;
    let nodes = c.sim.node_names();
    for n in &nodes {
        let dir = c.sim.node_root(n).join("etc/kubernetes/manifests");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("demo.yaml"), &cm.data.clone().unwrap()["demo"]).unwrap();
    }
    let want = json!({"totalNumber": nodes.len(), "readyNumber": nodes.len(), "upgradedNumber": nodes.len()});
    let sets = yss_api(&c.client);
    common::eventually(
        Duration::from_secs(30),
        "every node counted upgraded",
        || {
            let sets = sets.clone();
            let want = want.clone();
            async move { (sets.get("demo").await.ok()?.data["status"] == want).then_some(()) }
        },
    )
    .await;
    cm.metadata.annotations.unwrap()["openyurt.io/static-pod-hash"].clone()
}

fn is_worker(p: &Pod) -> bool {
    p.metadata
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with("yss-upgrade-worker-demo-"))
}

// openyurtio/openyurt@v1.6.1 (same at v1.7.0): pkg/yurtmanager/controller/yurtstaticset/
// yurt_static_set_controller.go (Reconcile, advancedRollingUpdate, createUpgradeWorker),
// upgradeinfo/upgrade_info.go (ReadyUpgradeWaitingNodes, CalculateOperateInfoFromUpgradeInfoMap),
// util/util.go (UnavailableCount); pkg/node-servant/static-pod-upgrade (AutoUpgrade,
// WaitForPodRunning on YurtHub's /pods): with AdvancedRollingUpdate and maxUnavailable 1 a
// template change rolls the nodes one worker pod at a time, each worker rewrites the node's
// manifest from the ConfigMap and waits for the new static pod, finished workers are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_rolling_update_rolls_every_node_with_worker_pods_within_max_unavailable() {
    let c = common::start(3, Layout::Kubeadm).await;
    let nodes = c.sim.node_names();
    assert_eq!(nodes.len(), 3);
    // the worker checks the new static pod through YurtHub's /pods on its node
    for n in &nodes {
        common::hub::run_yurthub(&c, n).await;
    }
    let strategy = json!({"type": "AdvancedRollingUpdate", "maxUnavailable": 1});
    let old = demo_on_every_node(&c, demo_set(3600, strategy)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    assert!(
        !pods
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(is_worker),
        "no worker while every node is current"
    );
    let sets = yss_api(&c.client);
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["sleep", "7200"]}]}}}});
    sets.patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut most_at_once = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let new = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "nodes not rolled; workers seen {seen:?}"
        );
        let list = pods.list(&Default::default()).await.unwrap().items;
        let workers: Vec<&Pod> = list.iter().filter(|p| is_worker(p)).collect();
        let active = workers
            .iter()
            .filter(|p| {
                let phase = p
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default();
                phase != "Succeeded" && phase != "Failed"
            })
            .count();
        most_at_once = most_at_once.max(active);
        for w in &workers {
            let phase = w
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            assert_ne!(phase, "Failed", "worker failed: {w:?}");
            seen.insert(w.metadata.name.clone().unwrap());
        }
        let set = sets.get("demo").await.unwrap();
        let hash = set.data["status"].clone();
        let cm: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-system");
        let cur = cm
            .get("yurt-static-set-demo")
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap()["openyurt.io/static-pod-hash"]
            .clone();
        let all_new = nodes.iter().all(|n| {
            list.iter().any(|p| {
                p.metadata.name.as_deref() == Some(&format!("demo-{n}"))
                    && p.metadata.annotations.as_ref().unwrap()["openyurt.io/static-pod-hash"]
                        == cur
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
        });
        if cur != old
            && all_new
            && hash == json!({"totalNumber": 3, "readyNumber": 3, "upgradedNumber": 3})
            && workers.is_empty()
        {
            break cur;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(new, old);
    assert_eq!(most_at_once, 1, "maxUnavailable 1: one worker at a time");
    // one worker per node, named yss-upgrade-worker-<set>-<node>-<hash>
    let want: std::collections::BTreeSet<String> = nodes
        .iter()
        .map(|n| format!("yss-upgrade-worker-demo-{n}-{new}"))
        .collect();
    assert_eq!(seen, want);
    for n in &nodes {
        let text = std::fs::read_to_string(
            c.sim
                .node_root(n)
                .join("etc/kubernetes/manifests/demo.yaml"),
        )
        .unwrap();
        assert!(text.contains("7200"), "{n}: {text}");
    }
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1 (same at v1.7.0): yurt_static_set_controller.go (otaUpgrade),
// util/util.go (SetPodUpgradeCondition): with OTA the controller only writes the mirror pods'
// PodNeedUpgrade condition (False while current, True once the template changed); it creates
// no worker pod and leaves the nodes' manifests alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ota_only_marks_pod_need_upgrade_and_creates_no_worker() {
    let c = common::start(2, Layout::Kubeadm).await;
    let nodes = c.sim.node_names();
    demo_on_every_node(&c, demo_set(3600, json!({"type": "OTA"}))).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let sets = yss_api(&c.client);
    let need = |p: &Pod| {
        p.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodNeedUpgrade")
            .map(|c| c.status.clone())
    };
    // all current: the reconcile returns before the OTA branch, so no condition yet
    tokio::time::sleep(Duration::from_secs(1)).await;
    for n in &nodes {
        let p = pods.get(&format!("demo-{n}")).await.unwrap();
        assert_eq!(need(&p), None, "{n}");
    }
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["sleep", "7200"]}]}}}});
    sets.patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    for n in &nodes {
        let pods = pods.clone();
        let name = format!("demo-{n}");
        common::eventually(Duration::from_secs(20), "PodNeedUpgrade True", || {
            let pods = pods.clone();
            let name = name.clone();
            async move { (need(&pods.get(&name).await.ok()?)? == "True").then_some(()) }
        })
        .await;
    }
    let want = json!({"totalNumber": nodes.len(), "readyNumber": nodes.len(), "upgradedNumber": 0});
    common::eventually(
        Duration::from_secs(20),
        "status counts none upgraded",
        || {
            let sets = sets.clone();
            let want = want.clone();
            async move { (sets.get("demo").await.ok()?.data["status"] == want).then_some(()) }
        },
    )
    .await;
    // upgrade one node by hand (what YurtHub's OTA endpoint does): a node upgraded while
    // another is not gets False
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-system");
    let cm = cms.get("yurt-static-set-demo").await.unwrap();
    let first = &nodes[0];
    std::fs::write(
        c.sim
            .node_root(first)
            .join("etc/kubernetes/manifests/demo.yaml"),
        &cm.data.unwrap()["demo"],
    )
    .unwrap();
    let name = format!("demo-{first}");
    common::eventually(
        Duration::from_secs(20),
        "PodNeedUpgrade False on the upgraded node",
        || {
            let pods = pods.clone();
            let name = name.clone();
            async move { (need(&pods.get(&name).await.ok()?)? == "False").then_some(()) }
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let list = pods.list(&Default::default()).await.unwrap().items;
    assert!(!list.iter().any(is_worker), "OTA creates no worker pod");
    let other = nodes[1].clone();
    let text = std::fs::read_to_string(
        c.sim
            .node_root(&other)
            .join("etc/kubernetes/manifests/demo.yaml"),
    )
    .unwrap();
    assert!(text.contains("3600") && !text.contains("7200"), "{text}");
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1 (same at v1.7.0): pkg/node-servant/static-pod-upgrade/util/util.go
// (WaitForPodRunning asks YurtHub's /pods on the node, 2 m timeout), upgrade.go (AutoUpgrade:
// rollbackManifest on a failed verify), cmd/yurt-node-servant/static-pod-upgrade/upgrade.go
// (klog.Fatalf); upgradeinfo/upgrade_info.go (initWorkerPodInfo: a Failed worker is an error)
// and yurt_static_set_controller.go (Reconcile returns it): on a node without YurtHub the
// worker cannot see the new pod, puts the old manifest back and fails, and the set stops there
// with the Failed worker left in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_yurthub_the_worker_times_out_restores_the_manifest_and_stops_the_set() {
    let c = common::start(2, Layout::Kubeadm).await;
    let nodes = c.sim.node_names();
    let strategy = json!({"type": "AdvancedRollingUpdate", "maxUnavailable": "50%"});
    demo_on_every_node(&c, demo_set(3600, strategy)).await;
    let sets = yss_api(&c.client);
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["sleep", "7200"]}]}}}});
    sets.patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    // 50 % of 2 nodes: one worker; the timeout is 2 m of model time
    let failed = common::eventually(Duration::from_secs(60), "a Failed worker", || {
        let pods = pods.clone();
        async move {
            let list = pods.list(&Default::default()).await.ok()?.items;
            let workers: Vec<Pod> = list.into_iter().filter(is_worker).collect();
            assert!(workers.len() <= 1, "{workers:?}");
            let w = workers.into_iter().next()?;
            (w.status.as_ref()?.phase.as_deref() == Some("Failed")).then_some(w)
        }
    })
    .await;
    let name = failed.metadata.name.clone().unwrap();
    let node = failed.spec.clone().unwrap().node_name.unwrap();
    let log = pods.logs(&name, &LogParams::default()).await.unwrap();
    assert!(
        log.contains(
            "could not upgrade static pod, timeout waiting for static pod kube-system/demo-"
        ),
        "{log}"
    );
    for n in &nodes {
        let text = std::fs::read_to_string(
            c.sim
                .node_root(n)
                .join("etc/kubernetes/manifests/demo.yaml"),
        )
        .unwrap();
        assert!(
            text.contains("3600") && !text.contains("7200"),
            "{n} (worker on {node}): {text}"
        );
    }
    // the set stops: the failed worker stays and no other is created
    tokio::time::sleep(Duration::from_secs(2)).await;
    let list = pods.list(&Default::default()).await.unwrap().items;
    let workers: Vec<String> = list
        .iter()
        .filter(|p| is_worker(p))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(workers, vec![name.clone()]);
    let manager = pods
        .logs("yurt-manager", &LogParams::default())
        .await
        .unwrap();
    assert!(
        manager.contains(&format!(
            "fail to init worker pod info, cause worker pod {name} failed"
        )),
        "{manager}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.6.1 (same at v1.7.0): upgradeinfo/upgrade_info.go (initStaticPodInfo:
// a node counts as upgraded by the mirror pod's hash alone; ReadyUpgradeWaitingNodes needs the
// node Ready, not the pod), pkg/node-servant/static-pod-upgrade/util/util.go (WaitForPodRunning
// accepts phase Running with the new hash; readiness is never looked at): under
// AdvancedRollingUpdate a template whose pod never becomes Ready is still rolled onto every
// node, one maxUnavailable round after another, and the status ends TOTAL 3, READY 0,
// UPGRADED 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_rolling_update_rolls_a_never_ready_revision_onto_every_node() {
    let c = common::start(3, Layout::Kubeadm).await;
    let nodes = c.sim.node_names();
    for n in &nodes {
        common::hub::run_yurthub(&c, n).await;
    }
    let strategy = json!({"type": "AdvancedRollingUpdate", "maxUnavailable": 1});
    demo_on_every_node(&c, demo_set(3600, strategy)).await;
    c.sim.faults().never_ready("busybox:9.9.9");
    let sets = yss_api(&c.client);
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:9.9.9", "command": ["sleep", "3600"]}]}}}});
    sets.patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let want = json!({"totalNumber": 3, "readyNumber": 0, "upgradedNumber": 3});
    common::eventually(
        Duration::from_secs(60),
        "every node on the never-ready revision",
        || {
            let sets = sets.clone();
            let want = want.clone();
            async move { (sets.get("demo").await.ok()?.data["status"] == want).then_some(()) }
        },
    )
    .await;
    for n in &nodes {
        let text = std::fs::read_to_string(
            c.sim
                .node_root(n)
                .join("etc/kubernetes/manifests/demo.yaml"),
        )
        .unwrap();
        assert!(text.contains("busybox:9.9.9"), "{n}: {text}");
    }
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.7.0 (same at v1.5.0, v1.6.1): pkg/yurtmanager/controller/yurtstaticset/
// yurt_static_set_controller.go (`add` step 4: every static pod's event reconciles the set of
// its name without `-<node>`; `Reconcile`: no such set → deleteConfigMap), and
// pkg/yurtmanager/controller/util/pod/pod_util.go (IsStaticPod: config.source not "api").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_pods_configmap_without_a_set_goes_at_the_next_change_of_its_mirror_pods() {
    let c = common::start(2, Layout::Kubeadm).await;
    let hash = demo_on_every_node(&c, demo_set(3600, json!({"type": "OTA"}))).await;
    // a static pod of the user's, in default, with no YurtStaticSet
    let worker = c
        .sim
        .node_names()
        .into_iter()
        .find(|n| n.starts_with("worker"))
        .unwrap();
    let dir = c.sim.node_root(&worker).join("etc/kubernetes/manifests");
    std::fs::write(
        dir.join("web.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx:1.19.1\n",
    )
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mirror = format!("web-{worker}");
    common::eventually(Duration::from_secs(10), "the mirror pod", || {
        let (pods, mirror) = (pods.clone(), mirror.clone());
        async move { pods.get(&mirror).await.ok() }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // a store written once the mirror pod is steady stays until the pod's next change
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let store = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "yurt-static-set-web", "namespace": "default",
            "annotations": {"openyurt.io/static-pod-hash": "abc"}},
        "data": {"web": "kept until a mirror pod changes"}});
    common::apply(&c.client, &[store]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(cms.get("yurt-static-set-web").await.is_ok());
    let condition =
        json!({"status": {"conditions": [{"type": "PodNeedUpgrade", "status": "True"}]}});
    pods.patch_status(
        &mirror,
        &PatchParams::default(),
        &Patch::Strategic(&condition),
    )
    .await
    .unwrap();
    common::eventually(Duration::from_secs(10), "the store deleted", || {
        let cms = cms.clone();
        async move { cms.get("yurt-static-set-web").await.is_err().then_some(()) }
    })
    .await;
    // the set's own ConfigMap stays, however often its pods change
    let kube_system: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-system");
    let kept = kube_system.get("yurt-static-set-demo").await.unwrap();
    assert_eq!(
        kept.metadata.annotations.unwrap()["openyurt.io/static-pod-hash"],
        hash
    );
    let log = Api::<Pod>::namespaced(c.client.clone(), "kube-system")
        .logs("yurt-manager", &LogParams::default())
        .await
        .unwrap();
    assert!(
        log.contains("Delete ConfigMap yurt-static-set-web from YurtStaticSet web"),
        "{log}"
    );
    c.sim.shutdown().await;
}
