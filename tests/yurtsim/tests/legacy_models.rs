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
    let key = yurtsim::models::pki::new_key();
    let subject = yurtsim::models::pki::Subject {
        common_name: "system:node:worker-1".into(),
        organizations: vec![org.into()],
        ..Default::default()
    };
    let pem = yurtsim::models::pki::csr_pem(&subject, &key);
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
