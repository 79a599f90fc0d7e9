//! The legacy v0.6 component models (the legacy-v0.6 profile's binaries): each test names the
//! upstream source of the behaviour it holds the model to (facts in
//! `tests/yurtsim/facts/yurt-controller-manager-v0.6.1.yaml`, `yurthub-v0.6.1.yaml`).

mod common;

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, LogParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use yurtsim::Layout;

const YCM_IMAGE: &str = "openyurt/yurt-controller-manager:v0.6.1";

async fn cluster(version: &str) -> common::TestCluster {
    let v = version.to_string();
    common::start_with(2, Layout::Kubeadm, move |cfg| cfg.kubernetes_version = v).await
}

/// The ServiceAccount, and upstream's ClusterRole and binding when `rbac` (facts: chartRbac,
/// openyurtio/openyurt@v0.6.1 pkg/yurtctl/constants/constants.go), with `drop` removed from
/// the role's resources.
fn ycm_objects(rbac: bool, drop: &str) -> Vec<Value> {
    let facts = common::chart::facts_with("yurt-controller-manager", "v0.6.1", "chartRbac");
    let mut v = vec![json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "yurt-controller-manager", "namespace": "kube-system"}})];
    if rbac {
        let role = &facts["chartRbac"]["objects"][0];
        let rules: Vec<Value> = role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resources"] != json!([drop]))
            .cloned()
            .collect();
        v.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "yurt-controller-manager"}, "rules": rules}),
        );
        v.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "yurt-controller-manager"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "yurt-controller-manager"},
            "subjects": [{"kind": "ServiceAccount", "name": "yurt-controller-manager", "namespace": "kube-system"}]}));
    }
    v
}

fn ycm_pod(args: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "yurt-controller-manager", "namespace": "kube-system"},
        "spec": {"serviceAccountName": "yurt-controller-manager", "nodeName": "control-plane-1", "hostNetwork": true,
            "containers": [{"name": "yurt-controller-manager", "image": YCM_IMAGE,
                "command": ["yurt-controller-manager"], "args": args}]}})
}

/// The pod's first container once it has crashed at least once: (exit code, its log).
async fn crashed(client: &kube::Client, name: &str) -> (i32, String) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let code = common::eventually(Duration::from_secs(30), "the container to crash", || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            (cs.restart_count >= 1).then_some(())?;
            Some(cs.last_state?.terminated?.exit_code)
        }
    })
    .await;
    let log = pods.logs(name, &LogParams::default()).await.unwrap();
    (code, log)
}

async fn log_with(client: &kube::Client, name: &str, what: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    common::eventually(Duration::from_secs(30), what, || {
        let pods = pods.clone();
        async move {
            let log = pods.logs(name, &LogParams::default()).await.ok()?;
            log.contains(what).then_some(log)
        }
    })
    .await
}

/// Waits until kube-system/`name` is Ready.
async fn pod_ready(client: &kube::Client, name: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    common::eventually(Duration::from_secs(20), "the pod Ready", || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            p.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        }
    })
    .await;
}

fn csr_api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(
            "certificates.k8s.io",
            version,
            "CertificateSigningRequest",
        ),
        "certificatesigningrequests",
    );
    Api::all_with(client.clone(), &ar)
}

/// A v1beta1 request of the legacy-unknown signer with subject O=`org`.
async fn legacy_csr(client: &kube::Client, name: &str, org: &str) {
    let key = yurtsim::pki::new_key();
    let subject = yurtsim::pki::Subject {
        common_name: "system:node:worker-1".into(),
        organizations: vec![org.into()],
        ..Default::default()
    };
    let pem = yurtsim::pki::csr_pem(&subject, &key);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1beta1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
                 "signerName": "kubernetes.io/legacy-unknown",
                 "usages": ["digital signature", "key encipherment", "client auth"]}}))
    .unwrap();
    csr_api(client, "v1beta1")
        .create(&PostParams::default(), &obj)
        .await
        .unwrap();
}

fn approved(csr: &DynamicObject) -> Option<String> {
    csr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Approved")
        .and_then(|c| c["message"].as_str().map(str::to_string))
}

// openyurtio/openyurt@v0.6.1:cmd/yurt-controller-manager/controller-manager.go (main: exit 1),
// spf13/cobra@v1.1.3 command.go: "Error: unknown flag" and the usage. The HTTP address is not
// a flag at this tag (facts: notAFlag).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_refuses_an_unknown_flag_like_the_real_binary() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "");
    objects.push(ycm_pod(&["--bind-address=0.0.0.0"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-controller-manager").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.starts_with(
            "Error: unknown flag: --bind-address\nUsage:\n  yurt-controller-manager [flags]"
        ),
        "{log}"
    );
    c.sim.shutdown().await;
}

// kubernetes/controller-manager@v0.20.11 options/generic.go (Validate) with the known
// controllers of openyurtio/openyurt@v0.6.1 cmd/yurt-controller-manager/app/controllermanager.go
// (NewControllerInitializers): stderr and exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_refuses_an_unknown_controller() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "");
    objects.push(ycm_pod(&["--controllers=*,-nodelifecycle,servicetopology"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-controller-manager").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.ends_with("\"servicetopology\" is not in the list of known controllers\n"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// kubernetes/client-go@v0.20.11 tools/leaderelection/leaderelection.go (acquire): a denied
// Lease read is logged every retry period, the process never exits and no controller starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_without_its_rbac_never_acquires_its_lease() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(false, "");
    objects.push(ycm_pod(&[]));
    common::apply(&c.client, &objects).await;
    let log = log_with(
        &c.client,
        "yurt-controller-manager",
        "error retrieving resource lock kube-system/yurt-controller-manager: leases.coordination.k8s.io \"yurt-controller-manager\" is forbidden: User \"system:serviceaccount:kube-system:yurt-controller-manager\" cannot get resource \"leases\"",
    )
    .await;
    assert!(!log.contains("successfully acquired lease"), "{log}");
    legacy_csr(&c.client, "hub", "openyurt:yurthub").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let csr = csr_api(&c.client, "v1").get("hub").await.unwrap();
    assert_eq!(approved(&csr), None, "no controller runs without the lease");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let p = pods.get("yurt-controller-manager").await.unwrap();
    assert_eq!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count,
        0
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v0.6.1: cmd/yurt-controller-manager/app/controllermanager.go (Run: Lease
// kube-system/yurt-controller-manager, hard-coded), pkg/controller/certificates/csrapprover.go
// (isYurtCSR: the request's organizations, nothing else; "self-approving yurt-csr"); and
// kube-controller-manager's legacy-unknown signer issues the approved request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_leads_on_its_fixed_lease_and_approves_only_yurt_csrs() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "");
    // the lock name flag is accepted and ignored at this tag
    objects.push(ycm_pod(&["--leader-elect-resource-name=other", "--v=2"]));
    common::apply(&c.client, &objects).await;
    log_with(
        &c.client,
        "yurt-controller-manager",
        "successfully acquired lease kube-system/yurt-controller-manager",
    )
    .await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.client.clone(), "kube-system");
    let lease = leases.get("yurt-controller-manager").await.unwrap();
    assert!(
        lease
            .spec
            .unwrap()
            .holder_identity
            .unwrap()
            .starts_with("control-plane-1_"),
        "hostname_uuid"
    );
    assert!(leases.get("other").await.is_err());
    legacy_csr(&c.client, "hub", "openyurt:yurthub").await;
    legacy_csr(&c.client, "tunnel", "openyurt:yurttunnel").await;
    legacy_csr(&c.client, "other", "system:nodes").await;
    let csrs = csr_api(&c.client, "v1");
    for name in ["hub", "tunnel"] {
        let csr = common::eventually(Duration::from_secs(20), "approval and issue", || {
            let csrs = csrs.clone();
            async move {
                let csr = csrs.get(name).await.ok()?;
                csr.data["status"]["certificate"].is_string().then_some(csr)
            }
        })
        .await;
        assert_eq!(approved(&csr).as_deref(), Some("self-approving yurt-csr"));
    }
    assert_eq!(approved(&csrs.get("other").await.unwrap()), None);
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v0.6.1 pkg/controller/nodelifecycle/node_lifecycle_controller.go (Run:
// WaitForNamedCacheSync "taint", no timeout) and kubernetes/client-go@v0.20.11
// tools/cache/reflector.go: without daemonsets list/watch the nodelifecycle controller never
// runs (silent nodes keep their status), the CSR approver is unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_nodelifecycle_waits_forever_for_a_denied_informer() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "daemonsets");
    objects.push(ycm_pod(&[]));
    common::apply(&c.client, &objects).await;
    let log = log_with(
        &c.client,
        "yurt-controller-manager",
        "Failed to watch *v1.DaemonSet",
    )
    .await;
    assert!(log.contains("daemonsets.apps is forbidden"), "{log}");
    assert!(!log.contains("Caches are synced for taint"), "{log}");
    legacy_csr(&c.client, "hub", "openyurt:yurthub").await;
    let csrs = csr_api(&c.client, "v1");
    common::eventually(Duration::from_secs(20), "approval", || {
        let csrs = csrs.clone();
        async move { approved(&csrs.get("hub").await.ok()?) }
    })
    .await;
    c.sim.shutdown().await;
}

// --- yurt-app-manager v0.4.0 ----------------------------------------------------------------

const YAM_IMAGE: &str = "openyurt/yurt-app-manager:v0.4.0";

/// The CRDs, a ServiceAccount with upstream's ClusterRole (facts: chartRbac,
/// openyurtio/openyurt@v0.6.1 pkg/yurtctl/constants/yurt-app-manager-tmpl.go) minus `drop`,
/// the empty Secret, the Service and, when `configs`, both webhook configurations.
fn yam_objects(drop: &str, configs: bool) -> Vec<Value> {
    let facts = common::chart::facts_with("yurt-app-manager", "v0.4.0", "chartRbac");
    let crd = |plural: &str, kind: &str, scope: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.apps.openyurt.io")},
            "spec": {"group": "apps.openyurt.io", "scope": scope,
                "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                "versions": [{"name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    let role = facts["chartRbac"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "ClusterRole")
        .unwrap();
    let rules: Vec<Value> = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resources"] != json!([drop]))
        .cloned()
        .collect();
    let mut v = vec![
        crd("nodepools", "NodePool", "Cluster"),
        crd("uniteddeployments", "UnitedDeployment", "Namespaced"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "yurt-app-manager", "namespace": "kube-system"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "yurt-app-manager-role"}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "yurt-app-manager-rolebinding"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "yurt-app-manager-role"},
            "subjects": [{"kind": "ServiceAccount", "name": "yurt-app-manager", "namespace": "kube-system"}]}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "yurt-app-webhook-certs", "namespace": "kube-system"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "yurt-app-webhook-service", "namespace": "kube-system"},
            "spec": {"ports": [{"port": 443, "targetPort": 9876}], "selector": {"control-plane": "yurt-app-manager"}}}),
    ];
    if configs {
        let wh = |name: &str, path: &str, ops: &[&str], plural: &str| {
            json!({"name": name, "admissionReviewVersions": ["v1beta1"], "sideEffects": "None", "failurePolicy": "Fail",
                "clientConfig": {"service": {"name": "yurt-app-webhook-service", "namespace": "kube-system", "path": path}},
                "rules": [{"apiGroups": ["apps.openyurt.io"], "apiVersions": ["v1alpha1"], "operations": ops, "resources": [plural]}]})
        };
        v.push(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "yurt-app-mutating-webhook-configuration"},
            "webhooks": [wh("mnodepool.kb.io", "/mutate-apps-openyurt-io-v1alpha1-nodepool", &["CREATE", "UPDATE"], "nodepools"),
                         wh("muniteddeployment.kb.io", "/mutate-apps-openyurt-io-v1alpha1-uniteddeployment", &["CREATE", "UPDATE"], "uniteddeployments")]}));
        v.push(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "yurt-app-validating-webhook-configuration"},
            "webhooks": [wh("vnodepool.kb.io", "/validate-apps-openyurt-io-v1alpha1-nodepool", &["CREATE", "UPDATE", "DELETE"], "nodepools"),
                         wh("vuniteddeployment.kb.io", "/validate-apps-openyurt-io-v1alpha1-uniteddeployment", &["CREATE", "UPDATE"], "uniteddeployments")]}));
    }
    v
}

fn yam_pod(args: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "yurt-app-manager", "namespace": "kube-system",
            "labels": {"control-plane": "yurt-app-manager"}},
        "spec": {"serviceAccountName": "yurt-app-manager", "nodeName": "control-plane-1",
            "containers": [{"name": "manager", "image": YAM_IMAGE,
                "command": ["/usr/local/bin/yurt-app-manager"], "args": args}]}})
}

fn node_pools(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "NodePool"),
        "nodepools",
    );
    Api::all_with(client.clone(), &ar)
}

fn pool(name: &str) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "apps.openyurt.io/v1alpha1", "kind": "NodePool",
        "metadata": {"name": name}, "spec": {"type": "Edge"}}),
    )
    .unwrap()
}

// openyurtio/yurt-app-manager@8696f1c4 main.go (panic on the cobra error: exit 2); the webhook
// port is an env variable at this revision, not a flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_app_manager_refuses_an_unknown_flag_like_the_real_binary() {
    let c = cluster("v1.20.15").await;
    let mut objects = yam_objects("", true);
    objects.push(yam_pod(&[
        "--enable-leader-election",
        "--webhook-port=9876",
    ]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-app-manager").await;
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("panic: unknown flag: --webhook-port"), "{log}");
    c.sim.shutdown().await;
}

// openyurtio/yurt-app-manager@8696f1c4 pkg/yurtappmanager/webhook/server.go (Initialize: 5 s)
// and webhook/util/controller/webhook_controller.go (sync: "not found
// MutatingWebhookConfiguration ..."): without its configurations it exits 1 after 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_app_manager_exits_when_its_webhook_configurations_are_missing() {
    let c = cluster("v1.20.15").await;
    let mut objects = yam_objects("", false);
    objects.push(yam_pod(&["--enable-leader-election", "--v=4"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-app-manager").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("sync \"\" failed with not found MutatingWebhookConfiguration yurt-app-mutating-webhook-configuration"),
        "{log}"
    );
    assert!(
        log.contains("setup \"msg\"=\"unable to initialize webhook\" \"error\"=\"failed to start webhook controller for waiting more than 5s\""),
        "{log}"
    );
    c.sim.shutdown().await;
}

// The webhook-controller's informers are admissionregistration.k8s.io/v1beta1 (facts:
// apiVersionNote), which Kubernetes 1.22 no longer serves: they never sync, the 5 s wait ends
// the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_app_manager_cannot_start_on_kubernetes_1_22() {
    let c = cluster("v1.22.17").await;
    let mut objects = yam_objects("", true);
    objects.push(yam_pod(&["--enable-leader-election", "--v=4"]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-app-manager").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("mutatingwebhookconfigurations.v1beta1"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// The secret writer fills the empty Secret (webhook_controller.go sync, writer/secret.go), the
// Lease is kube-system/yurt-app-manager (controller-runtime v0.7.0 leader election, ID
// yurt-app-manager) and, with the cache synced, the NodePool mutating webhook sets the pool's
// selector (webhook/nodepool/mutating/nodepool_create_update_handler.go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_app_manager_with_its_objects_serves_its_webhooks_and_leads() {
    let c = cluster("v1.20.15").await;
    let mut objects = yam_objects("", true);
    objects.push(yam_pod(&["--enable-leader-election", "--v=4"]));
    common::apply(&c.client, &objects).await;
    log_with(&c.client, "yurt-app-manager", "serving webhook server").await;
    log_with(
        &c.client,
        "yurt-app-manager",
        "successfully acquired lease kube-system/yurt-app-manager",
    )
    .await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(c.client.clone(), "kube-system");
    let s = secrets.get("yurt-app-webhook-certs").await.unwrap();
    assert!(s.data.unwrap().contains_key("tls.crt"));
    // the API server calls it once the pod is a ready endpoint of the Service
    pod_ready(&c.client, "yurt-app-manager").await;
    let created = node_pools(&c.client)
        .create(&PostParams::default(), &pool("hangzhou"))
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"]["selector"],
        json!({"matchLabels": {"apps.openyurt.io/nodepool": "hangzhou"}})
    );
    c.sim.shutdown().await;
}

// controller-runtime v0.7.0 pkg/manager/internal.go (the cache sync before the webhook server
// starts has no timeout) and the Pod field index (util/fieldindex/register.go): without pods
// list/watch the webhook server never listens, so the failurePolicy=Fail webhooks refuse
// NodePools; the process does not exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_app_manager_without_pods_access_never_serves_its_webhooks() {
    let c = cluster("v1.20.15").await;
    let mut objects = yam_objects("pods", true);
    objects.push(yam_pod(&["--enable-leader-election", "--v=4"]));
    common::apply(&c.client, &objects).await;
    let log = log_with(&c.client, "yurt-app-manager", "Failed to watch *v1.Pod").await;
    assert!(!log.contains("serving webhook server"), "{log}");
    // no readiness probe: the pod is a ready endpoint while nothing listens
    pod_ready(&c.client, "yurt-app-manager").await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let err = node_pools(&c.client)
        .create(&PostParams::default(), &pool("hangzhou"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("connection refused"), "{err}");
    let p = pods.get("yurt-app-manager").await.unwrap();
    assert_eq!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count,
        0
    );
    c.sim.shutdown().await;
}

// --- yurt-tunnel-server v0.6.1 --------------------------------------------------------------

const YTS_IMAGE: &str = "openyurt/yurt-tunnel-server:v0.6.1";

/// The ServiceAccount with upstream's ClusterRole (facts: chartRbac,
/// openyurtio/openyurt@v0.6.1 pkg/yurtctl/constants/yurt-tunnel-server-tmpl.go) minus `drop`,
/// the two Services and the ConfigMap.
fn yts_objects(drop: &str) -> Vec<Value> {
    let facts = common::chart::facts_with("yurt-tunnel-server", "v0.6.1", "chartRbac");
    let rules: Vec<Value> = facts["chartRbac"]["objects"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resources"] != json!([drop]))
        .cloned()
        .collect();
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "yurt-tunnel-server", "namespace": "kube-system"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "yurt-tunnel-server"}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "yurt-tunnel-server"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "yurt-tunnel-server"},
            "subjects": [{"kind": "ServiceAccount", "name": "yurt-tunnel-server", "namespace": "kube-system"}]}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x-tunnel-server-svc", "namespace": "kube-system", "labels": {"name": "yurt-tunnel-server"}},
            "spec": {"type": "NodePort", "selector": {"k8s-app": "yurt-tunnel-server"},
                "ports": [{"name": "https", "port": 10263, "targetPort": 10263}, {"name": "tcp", "port": 10262, "targetPort": 10262, "nodePort": 31008}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x-tunnel-server-internal-svc", "namespace": "kube-system", "labels": {"name": "yurt-tunnel-server"}},
            "spec": {"selector": {"k8s-app": "yurt-tunnel-server"},
                "ports": [{"name": "https", "port": 10250, "targetPort": 10263}, {"name": "http", "port": 10255, "targetPort": 10264}]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yurt-tunnel-server-cfg", "namespace": "kube-system"},
            "data": {"localhost-proxy-ports": "10266, 10267", "http-proxy-ports": "", "https-proxy-ports": "", "dnat-ports-pair": ""}}),
    ]
}

fn yts_pod(args: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "yurt-tunnel-server", "namespace": "kube-system",
            "labels": {"k8s-app": "yurt-tunnel-server"}},
        "spec": {"serviceAccountName": "yurt-tunnel-server", "nodeName": "control-plane-1", "hostNetwork": true,
            "containers": [{"name": "yurt-tunnel-server", "image": YTS_IMAGE, "command": ["yurt-tunnel-server"], "args": args}]}})
}

// openyurtio/openyurt@v0.6.1 cmd/yurt-tunnel-server/server.go (main: klog.Fatalf on any
// command error, exit 255) and spf13/pflag@v1.0.5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_server_refuses_an_unknown_flag_and_an_empty_bind_address() {
    let c = cluster("v1.20.15").await;
    let mut objects = yts_objects("");
    objects.push(yts_pod(&[
        "--bind-address=10.0.0.1",
        "--tunnel-server-address=x",
    ]));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-server").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.contains("yurttunnel-server failed: unknown flag: --tunnel-server-address"),
        "{log}"
    );
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    pods.delete("yurt-tunnel-server", &Default::default())
        .await
        .unwrap();
    common::eventually(Duration::from_secs(20), "the pod gone", || {
        let pods = pods.clone();
        async move { pods.get("yurt-tunnel-server").await.is_err().then_some(()) }
    })
    .await;
    common::apply(&c.client, &[yts_pod(&["--bind-address="])]).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-server").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.contains("yurttunnel-server failed: yurttunnel-server's bind address can't be empty"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v0.6.1 pkg/util/certmanager/certmanager.go (NewYurttunnelServerCertManager:
// CN kube-apiserver-kubelet-client, O system:masters + openyurt:yurttunnel, legacy-unknown),
// cmd/yurt-tunnel-server/app/start.go (waits for the certificate without a timeout) and
// pkg/yurttunnel/trafficforward/dns/dns.go (Lease kube-system/tunnel-dns-controller, ConfigMap
// yurt-tunnel-nodes): with yurt-controller-manager approving it serves; without it, it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_server_serves_once_yurt_controller_manager_approves_its_certificate() {
    let c = cluster("v1.20.15").await;
    let mut objects = yts_objects("");
    objects.push(yts_pod(&[
        "--bind-address=10.0.0.1",
        "--insecure-bind-address=10.0.0.1",
        "--server-count=1",
    ]));
    common::apply(&c.client, &objects).await;
    log_with(
        &c.client,
        "yurt-tunnel-server",
        "waiting for the master to sign the yurttunnel-server certificate",
    )
    .await;
    let csrs = csr_api(&c.client, "v1beta1")
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(csrs.items.len(), 1);
    assert_eq!(
        csrs.items[0].data["spec"]["signerName"],
        "kubernetes.io/legacy-unknown"
    );
    let mut ycm = ycm_objects(true, "");
    ycm.push(ycm_pod(&[]));
    common::apply(&c.client, &ycm).await;
    log_with(
        &c.client,
        "yurt-tunnel-server",
        "start handling connection from agents",
    )
    .await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(c.client.clone(), "kube-system");
    assert!(cms.get("yurt-tunnel-nodes").await.is_ok());
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.client.clone(), "kube-system");
    assert!(leases.get("tunnel-dns-controller").await.is_ok());
    c.sim.shutdown().await;
}

// pkg/yurttunnel/handlerwrapper/localhostproxy/handler.go (WrapHandler waits for the node
// informer with no timeout): without nodes list/watch it never serves and never exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_server_without_nodes_access_never_serves() {
    let c = cluster("v1.20.15").await;
    let mut objects = yts_objects("nodes");
    objects.extend(ycm_objects(true, ""));
    objects.push(ycm_pod(&[]));
    objects.push(yts_pod(&["--bind-address=10.0.0.1"]));
    common::apply(&c.client, &objects).await;
    let log = log_with(&c.client, "yurt-tunnel-server", "Failed to watch *v1.Node").await;
    assert!(log.contains("nodes is forbidden"), "{log}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let log = pods
        .logs("yurt-tunnel-server", &LogParams::default())
        .await
        .unwrap();
    assert!(
        !log.contains("start handling connection from agents"),
        "{log}"
    );
    let p = pods.get("yurt-tunnel-server").await.unwrap();
    assert_eq!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count,
        0
    );
    c.sim.shutdown().await;
}

// --- YurtHub v0.6.1 -------------------------------------------------------------------------

const HUB_IMAGE: &str = "openyurt/yurthub:v0.6.1";
const WORKER: &str = "worker-1";
const TOKEN_ID: &str = "abcdef";
const TOKEN_SECRET: &str = "0123456789abcdef";

/// The legacy profile's static pod: the join token read by the shell from a file
/// (templates/legacy-v0.6/yurthub-node.yaml.hbs), server address `server`.
fn hub_manifest(server: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: yurt-hub\n  namespace: kube-system\n  labels:\n    k8s-app: yurt-hub\nspec:\n  hostNetwork: true\n  containers:\n  - name: yurt-hub\n    image: {HUB_IMAGE}\n    command:\n    - /bin/sh\n    - -c\n    - \"exec yurthub --v=2 --server-addr={server} --node-name=$(NODE_NAME) --join-token=$$(cat /var/lib/yurtctl/yurthub/join-token) --working-mode=edge{extra}\"\n    env:\n    - name: NODE_NAME\n      valueFrom:\n        fieldRef: {{apiVersion: v1, fieldPath: spec.nodeName}}\n    volumeMounts:\n    - {{name: hub-dir, mountPath: /var/lib/yurthub}}\n    - {{name: join-token-dir, mountPath: /var/lib/yurtctl/yurthub, readOnly: true}}\n  volumes:\n  - name: hub-dir\n    hostPath: {{path: /var/lib/yurthub, type: DirectoryOrCreate}}\n  - name: join-token-dir\n    hostPath: {{path: /var/lib/yurtctl/yurthub, type: DirectoryOrCreate}}\n"
    )
}

fn token_secret(expiration: &str) -> Value {
    let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": format!("bootstrap-token-{TOKEN_ID}"), "namespace": "kube-system"},
        "data": {"token-id": b(TOKEN_ID), "token-secret": b(TOKEN_SECRET), "expiration": b(expiration),
                 "usage-bootstrap-authentication": b("true"), "usage-bootstrap-signing": b("true"),
                 "auth-extra-groups": b("system:bootstrappers:kubeadm:default-node-token")}})
}

fn install_hub(c: &common::TestCluster, server: &str, extra: &str) {
    let root = c.sim.node_root(WORKER);
    let t = root.join("var/lib/yurtctl/yurthub");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("join-token"), format!("{TOKEN_ID}.{TOKEN_SECRET}\n")).unwrap();
    // something stale that v0.6 removes on its first start (verifyServerAddrOrCleanup)
    std::fs::create_dir_all(root.join("var/lib/yurthub")).unwrap();
    std::fs::write(root.join("var/lib/yurthub/stale"), "x").unwrap();
    std::fs::write(
        root.join("etc/kubernetes/manifests/yurt-hub.yaml"),
        hub_manifest(server, extra),
    )
    .unwrap();
}

fn hub_get(c: &common::TestCluster, path: &str) -> u16 {
    yurtsim::nodes::kubelet::yurthub_endpoint(c.sim.shared(), WORKER, &hyper::Method::GET, path)
        .status()
        .as_u16()
}

fn server(c: &common::TestCluster) -> String {
    c.sim.shared().internal_endpoint.clone()
}

// openyurtio/openyurt@v0.6.1: pkg/yurthub/certificate/hubself/cert_mgr.go (Start: clean-up,
// cluster-info CA, bootstrap-hub.conf with the join token, client CSR through v1beta1 with
// signer legacy-unknown), pkg/util/certmanager/certmanager.go (the serving CSR as the hub),
// pkg/yurthub/server/server.go (registerHandlers: /v1/healthz, no readyz): with a valid token
// and yurt-controller-manager approving, the hub serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn yurthub_v06_joins_with_a_valid_token_once_yurt_controller_manager_approves() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "");
    objects.push(token_secret("2099-01-01T00:00:00Z"));
    objects.push(ycm_pod(&[]));
    common::apply(&c.client, &objects).await;
    install_hub(&c, &server(&c), "");
    common::eventually(
        Duration::from_secs(30),
        "yurthub v0.6 /v1/healthz",
        || async { (hub_get(&c, "/v1/healthz") == 200).then_some(()) },
    )
    .await;
    assert_eq!(hub_get(&c, "/v1/readyz"), 404, "no readyz at v0.6");
    let root = c.sim.node_root(WORKER).join("var/lib/yurthub");
    assert!(
        !root.join("stale").exists(),
        "the first start empties the root dir"
    );
    for f in [
        "pki/ca.crt",
        "pki/yurthub-current.pem",
        "pki/yurthub-server-current.pem",
        "yurthub.conf",
    ] {
        assert!(root.join(f).exists(), "{f}");
    }
    let conf = std::fs::read_to_string(root.join("bootstrap-hub.conf")).unwrap();
    assert!(
        conf.contains(&format!("{TOKEN_ID}.{TOKEN_SECRET}")),
        "{conf}"
    );
    let csrs = csr_api(&c.client, "v1beta1")
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(csrs.items.len(), 2, "client and serving");
    for csr in &csrs.items {
        assert_eq!(
            csr.data["spec"]["signerName"],
            "kubernetes.io/legacy-unknown"
        );
    }
    c.sim.shutdown().await;
}

/// The mirror pod's container once it has ended at least once: (exit code, log).
async fn hub_crashed(c: &common::TestCluster) -> (i32, String) {
    crashed(&c.client, &format!("yurt-hub-{WORKER}")).await
}

// openyurtio/openyurt@v0.6.1 pkg/yurthub/certificate/certificate.go (New: 5 s polls for 4
// minutes) and cmd/yurthub/app/start.go (klog.Fatalf, exit 255): an expired token is refused
// by the bootstrap authenticator, no certificate, the hub exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn yurthub_v06_with_an_expired_join_token_exits_after_its_certificate_wait() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "");
    objects.push(token_secret("2020-01-01T00:00:00Z"));
    objects.push(ycm_pod(&[]));
    common::apply(&c.client, &objects).await;
    install_hub(&c, &server(&c), "");
    let (code, _) = hub_crashed(&c).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let previous = LogParams {
        previous: true,
        ..Default::default()
    };
    let log = pods
        .logs(&format!("yurt-hub-{WORKER}"), &previous)
        .await
        .unwrap();
    assert_eq!(code, 255, "{log}");
    assert!(
        log.contains("cannot create certificate signing request: Unauthorized"),
        "{log}"
    );
    assert!(
        log.contains("run yurthub failed, could not create certificate manager, timed out waiting for the condition"),
        "{log}"
    );
    assert_eq!(hub_get(&c, "/v1/healthz"), 503);
    c.sim.shutdown().await;
}

// kubernetes/client-go@v0.20.11 util/certificate/csr/csr.go (create: the legacy-unknown signer
// goes through v1beta1), removed from the API in Kubernetes 1.22: the hub never gets a
// certificate there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn yurthub_v06_cannot_request_its_certificate_from_kubernetes_1_22() {
    let c = cluster("v1.22.17").await;
    let mut objects = ycm_objects(true, "");
    objects.push(token_secret("2099-01-01T00:00:00Z"));
    common::apply(&c.client, &objects).await;
    install_hub(&c, &server(&c), "");
    log_with(
        &c.client,
        &format!("yurt-hub-{WORKER}"),
        "cannot create certificate signing request: the server could not find the requested resource",
    )
    .await;
    c.sim.shutdown().await;
}

// spf13/pflag@v1.0.5 flag.go and openyurtio/openyurt@v0.6.1 cmd/yurthub/yurthub.go (main
// panics on the cobra error: exit 2): v1.x's --bootstrap-file does not exist at v0.6.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn yurthub_v06_refuses_a_flag_of_later_versions() {
    let c = cluster("v1.20.15").await;
    install_hub(
        &c,
        &server(&c),
        " --bootstrap-file=/var/lib/yurthub/bootstrap-hub.conf",
    );
    let (code, log) = hub_crashed(&c).await;
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("Error: unknown flag: --bootstrap-file"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// --- yurt-tunnel-agent v0.6.1 ---------------------------------------------------------------

const YTA_IMAGE: &str = "openyurt/yurt-tunnel-agent:v0.6.1";

/// The agent's pod spec as upstream's manifest has it (facts: chartRbac.otherObjects,
/// openyurtio/openyurt@v0.6.1 pkg/yurtctl/constants/yurt-tunnel-agent-tmpl.go), with `args`;
/// without `env` the three fieldRef variables are left out.
fn yta_spec(args: &[&str], env: bool) -> Value {
    let mut spec = json!({"nodeSelector": {"beta.kubernetes.io/os": "linux", "openyurt.io/is-edge-worker": "true"},
        "hostNetwork": true, "restartPolicy": "Always",
        "containers": [{"name": "yurt-tunnel-agent", "image": YTA_IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["yurt-tunnel-agent"], "args": args,
            "volumeMounts": [{"name": "k8s-dir", "mountPath": "/etc/kubernetes"},
                {"name": "kubelet-pki", "mountPath": "/var/lib/kubelet/pki"},
                {"name": "tunnel-agent-dir", "mountPath": "/var/lib/yurttunnel-agent"}]}],
        "volumes": [{"name": "k8s-dir", "hostPath": {"path": "/etc/kubernetes", "type": "Directory"}},
            {"name": "kubelet-pki", "hostPath": {"path": "/var/lib/kubelet/pki", "type": "Directory"}},
            {"name": "tunnel-agent-dir", "hostPath": {"path": "/var/lib/yurttunnel-agent", "type": "DirectoryOrCreate"}}]});
    if env {
        spec["containers"][0]["env"] = json!([
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]);
    }
    spec
}

fn yta_pod(args: &[&str], env: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "yurt-tunnel-agent", "namespace": "kube-system",
            "labels": {"k8s-app": "yurt-tunnel-agent"}},
        "spec": yta_spec(args, env)})
}

/// Cloud and edge labels as yurtctl's conversion leaves them (control-plane-1 cloud,
/// worker-1 edge).
fn edge_labels() -> Vec<Value> {
    [("control-plane-1", "false"), ("worker-1", "true")]
        .iter()
        .map(|(n, v)| {
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n,
                "labels": {"openyurt.io/is-edge-worker": v}}})
        })
        .collect()
}

async fn delete_pod(client: &kube::Client, name: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    pods.delete(name, &Default::default()).await.unwrap();
    common::eventually(Duration::from_secs(20), "the pod gone", || {
        let pods = pods.clone();
        async move { pods.get(name).await.is_err().then_some(()) }
    })
    .await;
}

// openyurtio/openyurt@v0.6.1 cmd/yurt-tunnel-agent/agent.go (main: klog.Fatalf on any command
// error, exit 255), app/options/options.go (Validate: node name from the flag or $NODE_NAME,
// node IP from the flag or $NODE_IP) and spf13/pflag@v1.0.5 (unknown flag).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_agent_refuses_a_bad_flag_and_a_missing_node_name() {
    let c = cluster("v1.20.15").await;
    let mut objects = edge_labels();
    objects.push(yta_pod(
        &["--node-name=$(NODE_NAME)", "--tunnel-server-addr=x:1"],
        true,
    ));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.contains("yurttunnel-agent failed: unknown flag: --tunnel-server-addr"),
        "{log}"
    );
    delete_pod(&c.client, "yurt-tunnel-agent").await;
    common::apply(&c.client, &[yta_pod(&[], false)]).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.trim_end()
            .ends_with("yurttunnel-agent failed: either --node-name or $NODE_NAME has to be set"),
        "{log}"
    );
    delete_pod(&c.client, "yurt-tunnel-agent").await;
    // the flag alone is not enough: the node IP has no flag in the manifest
    common::apply(&c.client, &[yta_pod(&["--node-name=worker-1"], false)]).await;
    let (_, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert!(
        log.contains("yurttunnel-agent failed: either --node-ip or $NODE_IP has to be set"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v0.6.1 cmd/yurt-tunnel-agent/app/start.go (Run: the server address from
// serveraddr.GetTunnelServerAddr when --tunnelserver-addr is empty, one attempt, its error
// returned) and pkg/yurttunnel/server/serveraddr/addr.go (getTunnelServerResources: GET the
// Service, GET its Endpoints, LIST the cloud nodes of a NodePort Service): as the node, without
// the Service it exits; without a cloud node it exits; without the Endpoints it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_agent_exits_without_a_tunnel_server_endpoint() {
    let c = cluster("v1.20.15").await;
    let mut objects = vec![edge_labels()[1].clone()];
    objects.push(yta_pod(&["--node-name=$(NODE_NAME)"], true));
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.contains("neither --kube-config nor --apiserver-addr is set, will use /etc/kubernetes/kubelet.conf as the kubeconfig"),
        "{log}"
    );
    assert!(
        log.trim_end()
            .ends_with("yurttunnel-agent failed: services \"x-tunnel-server-svc\" not found"),
        "{log}"
    );
    delete_pod(&c.client, "yurt-tunnel-agent").await;
    // the Service (NodePort, tcp port 31008) with its Endpoints, but no node labelled cloud
    let svc = yts_objects("")[3].clone();
    common::apply(&c.client, &[svc]).await;
    common::apply(&c.client, &[yta_pod(&["--node-name=$(NODE_NAME)"], true)]).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.trim_end()
            .ends_with("yurttunnel-agent failed: there is no cloud node"),
        "{log}"
    );
    delete_pod(&c.client, "yurt-tunnel-agent").await;
    // a Service without a selector: the endpoints controller keeps no Endpoints for it
    let svcs: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(c.client.clone(), "kube-system");
    svcs.delete("x-tunnel-server-svc", &Default::default())
        .await
        .unwrap();
    let eps: Api<k8s_openapi::api::core::v1::Endpoints> =
        Api::namespaced(c.client.clone(), "kube-system");
    common::eventually(Duration::from_secs(20), "the Endpoints deleted", || {
        let eps = eps.clone();
        async move { eps.get("x-tunnel-server-svc").await.is_err().then_some(()) }
    })
    .await;
    common::apply(
        &c.client,
        &[json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x-tunnel-server-svc", "namespace": "kube-system"},
            "spec": {"type": "ClusterIP", "ports": [{"name": "tcp", "port": 10262}]}})],
    )
    .await;
    common::apply(&c.client, &[yta_pod(&["--node-name=$(NODE_NAME)"], true)]).await;
    let (_, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert!(
        log.trim_end()
            .ends_with("yurttunnel-agent failed: endpoints \"x-tunnel-server-svc\" not found"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// Upstream's own manifest (pkg/yurtctl/constants/yurt-tunnel-agent-tmpl.go) next to the
// tunnel server's objects: the agent finds the server at the cloud node's InternalIP and the
// tcp port's nodePort (serveraddr/addr.go), requests its certificate as the node
// (pkg/util/certmanager/certmanager.go NewYurttunnelAgentCertManager: CN yurttunnel-agent,
// O openyurt:yurttunnel, legacy-unknown via v1beta1), waits for it without a timeout
// (start.go), and dials once yurt-controller-manager approves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_agent_from_upstreams_manifest_connects_once_its_certificate_is_approved() {
    let c = cluster("v1.20.15").await;
    let mut objects = edge_labels();
    objects.extend(yts_objects(""));
    objects.push(yts_pod(&["--bind-address=10.0.0.1"]));
    objects.push(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "yurt-tunnel-agent", "namespace": "kube-system", "labels": {"k8s-app": "yurt-tunnel-agent"}},
        "spec": {"selector": {"matchLabels": {"k8s-app": "yurt-tunnel-agent"}},
            "template": {"metadata": {"labels": {"k8s-app": "yurt-tunnel-agent"}},
                "spec": yta_spec(&["--node-name=$(NODE_NAME)"], true)}}}));
    common::apply(&c.client, &objects).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let agent = common::eventually(Duration::from_secs(20), "the agent's pod", || {
        let pods = pods.clone();
        async move {
            let l = pods
                .list(&kube::api::ListParams::default().labels("k8s-app=yurt-tunnel-agent"))
                .await
                .ok()?;
            let p = l.items.into_iter().next()?;
            (p.spec.as_ref()?.node_name.as_deref() == Some(WORKER)).then_some(())?;
            p.metadata.name
        }
    })
    .await;
    let log = log_with(
        &c.client,
        &agent,
        "certificate yurttunnel-agent not signed, waiting...",
    )
    .await;
    assert!(
        log.contains("yurttunnel-server address: 10.0.0.1:31008"),
        "{log}"
    );
    // the server's Endpoints list its pod once Ready (host network: the node's IP)
    let eps: Api<k8s_openapi::api::core::v1::Endpoints> =
        Api::namespaced(c.client.clone(), "kube-system");
    common::eventually(
        Duration::from_secs(20),
        "the server's ready address",
        || {
            let eps = eps.clone();
            async move {
                let e = eps.get("x-tunnel-server-svc").await.ok()?;
                e.subsets?
                    .iter()
                    .flat_map(|s| s.addresses.iter().flatten())
                    .any(|a| a.ip == "10.0.0.1")
                    .then_some(())
            }
        },
    )
    .await;
    let csrs = csr_api(&c.client, "v1beta1")
        .list(&Default::default())
        .await
        .unwrap();
    let mine: Vec<_> = csrs
        .items
        .iter()
        .filter(|c| {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(c.data["spec"]["request"].as_str().unwrap_or(""))
                .unwrap_or_default();
            yurtsim::pki::parse_csr(&String::from_utf8_lossy(&pem))
                .is_some_and(|(s, _)| s.common_name == "yurttunnel-agent")
        })
        .collect();
    assert_eq!(mine.len(), 1, "{csrs:?}");
    assert_eq!(
        mine[0].data["spec"]["signerName"],
        "kubernetes.io/legacy-unknown"
    );
    let mut ycm = ycm_objects(true, "");
    ycm.push(ycm_pod(&[]));
    common::apply(&c.client, &ycm).await;
    log_with(
        &c.client,
        &agent,
        "start serving grpc request redirected from yurttunnel-server: 10.0.0.1:31008",
    )
    .await;
    // the host the agent dials is a SAN of the server's certificate (the TLS ServerName,
    // pkg/util/certmanager/pki.go; the server's SANs from the same serveraddr lookup)
    let csrs = csr_api(&c.client, "v1beta1")
        .list(&Default::default())
        .await
        .unwrap();
    let server_ips: Vec<String> = csrs
        .items
        .iter()
        .filter_map(|c| {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(c.data["spec"]["request"].as_str().unwrap_or(""))
                .ok()?;
            let (s, _) = yurtsim::pki::parse_csr(&String::from_utf8_lossy(&pem))?;
            (s.common_name == "kube-apiserver-kubelet-client")
                .then(|| s.ips.iter().map(|i| i.to_string()).collect::<Vec<_>>())
        })
        .next()
        .unwrap();
    assert!(server_ips.iter().any(|i| i == "10.0.0.1"), "{server_ips:?}");
    let p = pods.get(&agent).await.unwrap();
    assert_eq!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count,
        0
    );
    c.sim.shutdown().await;
}

// kubernetes/kubernetes plugin/pkg/admission/certificates/approval/admission.go (the approver
// needs `approve` on signers kubernetes.io/legacy-unknown; present since v1.18, so at v1.20)
// and openyurtio/openyurt@v0.6.1 pkg/controller/certificates/csrapprover.go (an approval error
// is logged and retried): upstream's ClusterRole without its signers rule approves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_controller_manager_without_the_signers_rule_cannot_approve() {
    let c = cluster("v1.20.15").await;
    let mut objects = ycm_objects(true, "signers");
    objects.push(ycm_pod(&[]));
    common::apply(&c.client, &objects).await;
    legacy_csr(&c.client, "hub", "openyurt:yurthub").await;
    let log = log_with(
        &c.client,
        "yurt-controller-manager",
        "failed to approve yurt-csr(hub)",
    )
    .await;
    assert!(
        log.contains("user not permitted to approve requests with signerName \"kubernetes.io/legacy-unknown\""),
        "{log}"
    );
    let csr = csr_api(&c.client, "v1beta1").get("hub").await.unwrap();
    assert_eq!(approved(&csr), None);
    // the request records its creator (the admin here), not what the client could claim
    assert_eq!(csr.data["spec"]["username"], "yurtsim-admin");
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v0.6.1 cmd/yurt-tunnel-agent/app/options/options.go (Config: without
// --kube-config and --apiserver-addr the host's /etc/kubernetes/kubelet.conf) and
// pkg/yurttunnel/kubernetes/kubernetes.go (CreateClientSetKubeConfig: os.Stat's error as is):
// the agent's identity comes from the mounted kubelet kubeconfig; without the mount it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurt_tunnel_agent_without_the_hosts_kubelet_kubeconfig_exits() {
    let c = cluster("v1.20.15").await;
    let mut pod = yta_pod(&["--node-name=$(NODE_NAME)"], true);
    let spec = &mut pod["spec"];
    spec["containers"][0]["volumeMounts"] =
        json!([{"name": "tunnel-agent-dir", "mountPath": "/var/lib/yurttunnel-agent"}]);
    spec["volumes"] = json!([{"name": "tunnel-agent-dir",
        "hostPath": {"path": "/var/lib/yurttunnel-agent", "type": "DirectoryOrCreate"}}]);
    let mut objects = edge_labels();
    objects.push(pod);
    common::apply(&c.client, &objects).await;
    let (code, log) = crashed(&c.client, "yurt-tunnel-agent").await;
    assert_eq!(code, 255, "{log}");
    assert!(
        log.trim_end().ends_with(
            "yurttunnel-agent failed: stat /etc/kubernetes/kubelet.conf: no such file or directory"
        ),
        "{log}"
    );
    c.sim.shutdown().await;
}
