//! The yurt-manager v1.7.0 model, installed as upstream's chart renders it (objects built from
//! the facts files by `common::chart`). Each test names the upstream source it holds the model
//! to; facts and sources in `facts/yurt-manager-v1.7.0.yaml` and
//! `facts/yurt-manager-controllers-v1.7.0.yaml`.

mod common;

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, LogParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use yurtsim::Layout;
use yurtsim::pki;

const V: &str = "v1.7.0";
const NS: &str = "kube-system";

fn gvk(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(group, version, kind),
        plural,
    )
}

/// The yurt-manager pod of the chart's Deployment once it exists.
async fn manager_pod(client: &kube::Client) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    common::eventually(Duration::from_secs(20), "the yurt-manager pod", || {
        let pods = pods.clone();
        async move {
            let l = pods
                .list(&ListParams::default().labels("app.kubernetes.io/name=yurt-manager"))
                .await
                .ok()?;
            l.items.into_iter().next()
        }
    })
    .await
}

pub async fn ready(client: &kube::Client) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let name = manager_pod(client).await.metadata.name.unwrap();
    common::eventually(Duration::from_secs(30), "yurt-manager Ready", || {
        let (pods, name) = (pods.clone(), name.clone());
        async move {
            let p = pods.get(&name).await.ok()?;
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

/// (exit code, log) of the chart's pod after its first crash.
async fn crashed(client: &kube::Client) -> (i32, String) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let name = manager_pod(client).await.metadata.name.unwrap();
    let code = common::eventually(Duration::from_secs(30), "yurt-manager to crash", || {
        let (pods, name) = (pods.clone(), name.clone());
        async move {
            let cs = pods
                .get(&name)
                .await
                .ok()?
                .status?
                .container_statuses?
                .into_iter()
                .next()?;
            (cs.restart_count >= 1).then_some(())?;
            Some(cs.last_state?.terminated?.exit_code)
        }
    })
    .await;
    (code, pods.logs(&name, &LogParams::default()).await.unwrap())
}

/// The chart with default values, `edit` applied to its objects before install and `args`
/// replacing the Deployment's arguments of the same flags.
async fn install(c: &common::TestCluster, edit: impl Fn(&mut Vec<Value>), args: &[&str]) {
    let mut objects = common::chart::yurt_manager_objects(V, NS);
    edit(&mut objects);
    objects.push(common::chart::yurt_manager_deployment(V, NS, args));
    common::apply(&c.client, &objects).await;
}

fn csr(name: &str, signer: &str, cn: &str, orgs: &[&str], dns: &[&str], last_usage: &str) -> Value {
    let subject = pki::Subject {
        common_name: cn.into(),
        organizations: orgs.iter().map(|o| o.to_string()).collect(),
        dns_names: dns.iter().map(|d| d.to_string()).collect(),
        ips: vec![],
    };
    let pem = pki::csr_pem(&subject, &pki::new_key());
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem), "signerName": signer,
            "usages": ["key encipherment", "digital signature", last_usage]}})
}

// openyurtio/openyurt@v1.7.0: charts/yurt-manager (Deployment args, RBAC, webhook
// configurations); pkg/yurtmanager/webhook/util/configuration/configuration.go (Ensure keeps
// only served paths: the chart's v1alpha2 platformadmin entries go); csr_approver_controller.go
// (recognizers: YurtHub's token-mode client CSR and its kubelet-serving CSR are approved, a
// v1.6-era yurt-coordinator client CSR is not); Lease cloud-yurt-manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v17_chart_starts_leads_prunes_webhooks_and_approves_yurthub_csrs() {
    let c = common::start(2, Layout::Kubeadm).await;
    install(&c, |_| {}, &[]).await;
    ready(&c.client).await;
    let validating: Api<DynamicObject> = Api::all_with(
        c.client.clone(),
        &gvk(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    );
    let v = validating
        .get("yurt-manager-validating-webhook-configuration")
        .await
        .unwrap();
    let names: Vec<&str> = v.data["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"v.v1beta2.nodepool.kb.io"), "{names:?}");
    assert!(
        names.contains(&"validate.core.v1.node.openyurt.io"),
        "{names:?}"
    );
    assert!(!names.contains(&"vplatformadmin.kb.io"), "{names:?}");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.client.clone(), NS);
    common::eventually(Duration::from_secs(10), "the lease", || {
        let leases = leases.clone();
        async move { leases.get("cloud-yurt-manager").await.ok() }
    })
    .await;

    let node = "system:node:worker-1";
    let objects = [
        csr(
            "hub-client",
            "kubernetes.io/kube-apiserver-client",
            node,
            &["openyurt:yurthub", "system:nodes"],
            &[],
            "client auth",
        ),
        csr(
            "hub-server",
            "kubernetes.io/kubelet-serving",
            node,
            &["system:nodes"],
            &["worker-1"],
            "server auth",
        ),
        csr(
            "coordinator",
            "kubernetes.io/kube-apiserver-client",
            "yurt-coordinator",
            &["openyurt:yurt-coordinator"],
            &[],
            "client auth",
        ),
    ];
    let csrs: Api<DynamicObject> = Api::all_with(
        c.client.clone(),
        &gvk(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
        ),
    );
    for o in &objects {
        csrs.create(
            &PostParams::default(),
            &serde_json::from_value(o.clone()).unwrap(),
        )
        .await
        .unwrap();
    }
    for (name, message) in [
        (
            "hub-client",
            "Auto approving yurthub node client certificate",
        ),
        (
            "hub-server",
            "Auto approving openyurt tls server certificate",
        ),
    ] {
        let cond = common::eventually(Duration::from_secs(10), name, || {
            let csrs = csrs.clone();
            async move {
                let o = csrs.get(name).await.ok()?;
                o.data["status"]["conditions"].as_array()?.first().cloned()
            }
        })
        .await;
        assert_eq!(cond["type"], "Approved");
        assert_eq!(cond["reason"], "AutoApproved");
        assert_eq!(cond["message"], message);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = csrs.get("coordinator").await.unwrap();
    assert!(
        left.data["status"]["conditions"].is_null(),
        "v1.7.0 has no yurt-coordinator recognizer"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.7.0:pkg/yurtmanager/controller/nodepool/nodepool_controller.go (Add
// looks up apps.openyurt.io/v1beta2 nodepools; not tolerated → exit 1): the v1.6.1 chart's
// NodePool CRD serves only v1alpha1 and v1beta1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v17_binary_exits_on_a_nodepool_crd_without_v1beta2() {
    let c = common::start(2, Layout::Kubeadm).await;
    let drop_v1beta2 = |objects: &mut Vec<Value>| {
        for o in objects.iter_mut() {
            if o["metadata"]["name"] == "nodepools.apps.openyurt.io" {
                let vs = o["spec"]["versions"].as_array_mut().unwrap();
                vs.retain(|v| v["name"] != "v1beta2");
                vs[1]["storage"] = json!(true);
            }
        }
    };
    install(&c, drop_v1beta2, &[]).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("resource apps.openyurt.io/v1beta2, Resource=nodepools doesn't exist"),
        "{log}"
    );
    assert!(
        log.contains("unable to setup controllers\t{\"error\": \"no matches for apps.openyurt.io/v1beta2, Resource=nodepools\"}"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.7.0:pkg/yurtmanager/controller/yurtnodeconversion/
// yurt_node_conversion_controller.go (Add: "node-servant-image is empty").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_node_servant_image_is_fatal_when_the_conversion_controller_is_on() {
    let c = common::start(2, Layout::Kubeadm).await;
    install(&c, |_| {}, &["--node-servant-image="]).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("unable to setup controllers\t{\"error\": \"node-servant-image is empty\"}"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.7.0:cmd/yurt-manager/names/controller_names.go (the v1.6 aliases
// yurtcoordinatorcert and yurtappdaemon are gone) and options/generic.go + options/
// yurtnodeconversioncontroller.go (Validate, aggregated in that order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v16_controller_names_and_bad_worker_counts_fail_validation() {
    let c = common::start(2, Layout::Kubeadm).await;
    install(
        &c,
        |_| {},
        &[
            "--controllers=yurtcoordinatorcert,yurtnodeconversion",
            "--concurrent-yurtnodeconversion-workers=0",
        ],
    )
    .await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("[\"yurtcoordinatorcert\" is not in the list of known controllers, concurrent-yurtnodeconversion-workers(0) is invalid, should greater than 0]"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// openyurtio/openyurt@v1.7.0:pkg/yurtmanager/webhook/server.go (Initialize: 20 s for the first
// webhook sync; the chart ships both configurations, without one the binary exits 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v17_binary_exits_without_its_mutating_webhook_configuration() {
    let c = common::start(2, Layout::Kubeadm).await;
    install(
        &c,
        |o| o.retain(|o| o["kind"] != "MutatingWebhookConfiguration"),
        &[],
    )
    .await;
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

// The chart's ClusterRole yurt-manager-basecontroller grants list/watch on jobs; without it the
// yurt-node-conversion-controller's Job informer never syncs and controller-runtime gives up
// after CacheSyncTimeout (2 min): "problem running manager", exit 1
// (kubernetes-sigs/controller-runtime@v0.19.5 pkg/internal/controller/controller.go Start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_base_roles_job_rule_the_conversion_controller_never_syncs() {
    let c = common::start(2, Layout::Kubeadm).await;
    let drop_jobs = |objects: &mut Vec<Value>| {
        for o in objects.iter_mut() {
            if o["kind"] == "ClusterRole" && o["metadata"]["name"] == "yurt-manager-basecontroller"
            {
                o["rules"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|r| r["apiGroups"] != json!(["batch"]));
            }
        }
    };
    install(&c, drop_jobs, &[]).await;
    let (code, log) = crashed(&c.client).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        // image-preheat and yurt-node-conversion both watch Jobs; which one fails first is
        // random upstream (a Go map)
        log.contains("caches to sync: timed out waiting for cache to be synced for Kind *v1.Job"),
        "{log}"
    );
    c.sim.shutdown().await;
}
