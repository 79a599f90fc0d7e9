//! The real tier's control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler
//! built from upstream's modules) with yurtsim's nodes in front of it: what only the real parts
//! can show. The first run builds the tier (tests/real/build.sh); later runs reuse it.

mod common;

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use yurtsim::Layout;

const NEWEST: &str = yurtsim::real::NEWEST_KUBERNETES;
const CERTIFIED_BY_OPENYURT_1_7: &str = "v1.34.4";

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs (Debian's kubernetes-client; .ci/run installs it)");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A client that authenticates as `node`, with the certificate the cluster gave it.
async fn node_client(c: &common::TestCluster, node: &str) -> kube::Client {
    let pem = std::fs::read_to_string(
        c.sim
            .node_root(node)
            .join("var/lib/kubelet/pki/kubelet-client-2025-06-01-00-00-00.pem"),
    )
    .expect("the node's client certificate");
    let at = pem
        .find("-----BEGIN PRIVATE KEY-----")
        .expect("key in the pem");
    let pair = yurtsim::real::pki::Pair {
        cert: pem[..at].to_string(),
        key: pem[at..].to_string(),
    };
    let cp = &c.sim.real().expect("real tier").control_plane;
    let text = yurtsim::real::pki::kubeconfig(
        "kubernetes",
        &cp.server(),
        &cp.pki.ca.pair.cert,
        &format!("system:node:{node}"),
        &pair,
    );
    let kc = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_control_plane_serves_as_kubeadm_starts_it() {
    let c = common::start_real(4, Layout::Kubeadm, NEWEST).await;
    let kubeconfig = c.sim.kubeconfig_path();

    // the kubeconfig speaks HTTPS with a client certificate, as kubeadm's admin.conf does
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains("server: https://127.0.0.1:"), "{text}");
    assert!(text.contains("client-certificate-data:"), "{text}");
    let whoami = kubectl(&kubeconfig, &["auth", "whoami", "-o", "json"]);
    let whoami: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "kubernetes-admin");
    assert!(
        whoami["status"]["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("kubeadm:cluster-admins"))
    );

    // etcd behind the API server, its metrics, and the pinned version
    let livez = kubectl(&kubeconfig, &["get", "--raw", "/livez?verbose"]);
    assert!(livez.contains("[+]etcd ok"), "{livez}");
    let metrics = kubectl(&kubeconfig, &["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("apiserver_request_total{"),
        "no apiserver_request_total"
    );
    let version = kubectl(&kubeconfig, &["get", "--raw", "/version"]);
    let version: serde_json::Value = serde_json::from_str(&version).unwrap();
    assert_eq!(version["gitVersion"], NEWEST);

    // every node registered by its own kubelet, Ready, with a pod CIDR from
    // kube-controller-manager's node-ipam controller; the control plane labelled and tainted
    let nodes: Api<Node> = Api::all(c.client.clone());
    let list = common::eventually(
        Duration::from_secs(60),
        "4 Ready nodes with pod CIDRs",
        || {
            let nodes = nodes.clone();
            async move {
                let l = nodes.list(&Default::default()).await.ok()?.items;
                (l.len() == 4
                    && l.iter().all(ready)
                    && l.iter()
                        .all(|n| n.spec.as_ref().and_then(|s| s.pod_cidr.as_ref()).is_some()))
                .then_some(l)
            }
        },
    )
    .await;
    let cp = list
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some("control-plane-1"))
        .unwrap();
    assert!(
        cp.metadata
            .labels
            .as_ref()
            .unwrap()
            .contains_key("node-role.kubernetes.io/control-plane")
    );
    let taints = cp.spec.as_ref().unwrap().taints.clone().unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "node-role.kubernetes.io/control-plane" && t.effect == "NoSchedule")
    );

    // the kubelet mirrors its static pods (kubeadm's control-plane manifests), owned by its Node
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(c.client.clone(), "kube-system");
    let kcm = pods
        .get("kube-controller-manager-control-plane-1")
        .await
        .unwrap();
    let annotations = kcm.metadata.annotations.clone().unwrap();
    assert_eq!(annotations["kubernetes.io/config.source"], "file");
    assert!(annotations.contains_key("kubernetes.io/config.mirror"));
    let owner = &kcm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "control-plane-1")
    );
    assert_eq!(kcm.status.unwrap().phase.as_deref(), Some("Running"));

    // leases renewed by the kubelets
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), "kube-node-lease");
    let first = leases.get("worker-1").await.unwrap();
    let spec = first.spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("worker-1"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let renewed = spec.renew_time.clone().unwrap();
    common::eventually(Duration::from_secs(30), "worker-1's lease renewed", || {
        let leases = leases.clone();
        let renewed = renewed.clone();
        async move {
            let l = leases.get("worker-1").await.ok()?;
            (l.spec?.renew_time? != renewed).then_some(())
        }
    })
    .await;

    // NodeRestriction: a node changes its own Node, never another's, and never its role label
    let worker1 = node_client(&c, "worker-1").await;
    let as_worker1: Api<Node> = Api::all(worker1.clone());
    let label = |k: &str| Patch::Merge(json!({"metadata": {"labels": {k: "x"}}}));
    as_worker1
        .patch(
            "worker-1",
            &PatchParams::default(),
            &label("example.com/own"),
        )
        .await
        .expect("a node labels itself");
    let err = as_worker1
        .patch(
            "worker-2",
            &PatchParams::default(),
            &label("example.com/other"),
        )
        .await
        .expect_err("a node may not change another node");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    let err = as_worker1
        .patch(
            "worker-1",
            &PatchParams::default(),
            &label("node-role.kubernetes.io/edge"),
        )
        .await
        .expect_err("a kubelet may not set a node-role label");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );

    // a node's client-certificate renewal is approved and signed by kube-controller-manager
    // (csrapproving with kubeadm's selfnodeclient binding, csrsigning with the cluster CA)
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "system:node:worker-1");
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(worker1);
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "metadata": {"generateName": "csr-"},
        "spec": {"request": k8s_openapi::ByteString(request.into_bytes()),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"]}}))
    .unwrap();
    let name = csrs
        .create(&PostParams::default(), &csr)
        .await
        .expect("a node may request its own certificate")
        .metadata
        .name
        .unwrap();
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(c.client.clone());
    let signed = common::eventually(Duration::from_secs(60), "the CSR signed", || {
        let csrs = admin_csrs.clone();
        let name = name.clone();
        async move { csrs.get(&name).await.ok()?.status?.certificate }
    })
    .await;
    let pem = String::from_utf8(signed.0).unwrap();
    let cert = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap().1;
    let cert = cert.parse_x509().unwrap();
    assert!(
        cert.subject()
            .to_string()
            .contains("CN=system:node:worker-1")
    );
    assert!(cert.issuer().to_string().contains("CN=kubernetes"));

    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_plane_openyurt_v1_7_certifies_starts_too() {
    let c = common::start_real(2, Layout::Kind, CERTIFIED_BY_OPENYURT_1_7).await;
    let kubeconfig = c.sim.kubeconfig_path();
    let version = kubectl(&kubeconfig, &["get", "--raw", "/version"]);
    let version: serde_json::Value = serde_json::from_str(&version).unwrap();
    assert_eq!(version["gitVersion"], CERTIFIED_BY_OPENYURT_1_7);
    let nodes: Api<Node> = Api::all(c.client.clone());
    common::eventually(Duration::from_secs(60), "kind's 2 nodes Ready", || {
        let nodes = nodes.clone();
        async move {
            let l = nodes.list(&Default::default()).await.ok()?.items;
            let names: Vec<_> = l.iter().filter_map(|n| n.metadata.name.clone()).collect();
            (l.iter().all(ready) && names == ["kind-control-plane", "kind-worker"]).then_some(())
        }
    })
    .await;
    // kind's kubelet registers with its provider ID (kind's --provider-id)
    let worker = nodes.get("kind-worker").await.unwrap();
    assert_eq!(
        worker.spec.unwrap().provider_id.as_deref(),
        Some("kind://docker/kind/kind-worker")
    );
    // a control-plane component that dies is started again, as the kubelet restarts a static
    // pod: killed, kube-controller-manager comes back and takes its leader election again
    let pid_of = |c: &common::TestCluster| {
        c.sim
            .real()
            .unwrap()
            .control_plane
            .pids()
            .into_iter()
            .find(|(n, _)| *n == "kube-controller-manager")
            .unwrap()
            .1
    };
    let first = pid_of(&c);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.client.clone(), "kube-system");
    let holder = |l: k8s_openapi::api::coordination::v1::Lease| l.spec?.holder_identity;
    let before = holder(leases.get("kube-controller-manager").await.unwrap()).unwrap();
    // SAFETY: plain kill(2) of the component's process group.
    unsafe { libc::kill(-(first as i32), libc::SIGKILL) };
    common::eventually(
        Duration::from_secs(90),
        "kube-controller-manager leads again",
        || {
            let leases = leases.clone();
            let before = before.clone();
            async move {
                let now = holder(leases.get("kube-controller-manager").await.ok()?)?;
                (now != before).then_some(())
            }
        },
    )
    .await;
    assert_ne!(pid_of(&c), first);
    c.sim.shutdown().await;
}
