//! YurtHub v1.7.0 as a systemd service on a simulated node, installed the way upstream's
//! node-servant / yurtadm do it (facts/yurthub-v1.7.0.yaml `systemd:`), driven through the
//! node's `systemctl` stub from a pod on that node.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use yurtsim::Layout;

const NODE: &str = "worker-1";
const UNIT: &str = "[Unit]\nDescription=YurtHub Service\nAfter=network.target\n\n[Service]\nType=simple\nExecStart=/usr/local/bin/yurthub\nRestart=always\n";

fn drop_in(pool: Option<&str>, bin: &str) -> String {
    let pool = pool
        .map(|p| format!(" --nodepool-name={p}"))
        .unwrap_or_default();
    format!(
        "[Service]\nEnvironment=\"YURTHUB_BOOTSTRAP_ARGS=--bootstrap-mode=kubeletcertificate\"\nEnvironment=\"YURTHUB_CONFIG_ARGS=--bind-address=127.0.0.1 --working-mode=edge --namespace=kube-system\"\nEnvironment=\"YURTHUB_EXTRA_ARGS=--v=2\"\nExecStart=\nExecStart={bin} --node-name={NODE}{pool} --server-addr=https://10.0.0.1:6443 $YURTHUB_BOOTSTRAP_ARGS $YURTHUB_CONFIG_ARGS $YURTHUB_EXTRA_ARGS\n"
    )
}

/// Writes the binary (the image's file), the unit and its drop-in into the node root.
fn install(c: &common::TestCluster, pool: Option<&str>, bin: &str) {
    let root = c.sim.node_root(NODE);
    let img = yurtsim::images::for_image("openyurt/yurthub:v1.7.0").unwrap();
    let f = img.command_file("/usr/local/bin/yurthub").unwrap();
    let b = root.join("usr/local/bin/yurthub");
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    std::fs::write(&b, f.content()).unwrap();
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(f.mode)).unwrap();
    let d = root.join("etc/systemd/system/yurthub.service.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(root.join("etc/systemd/system/yurthub.service"), UNIT).unwrap();
    std::fs::write(d.join("10-yurthub.conf"), drop_in(pool, bin)).unwrap();
}

/// Runs `script` with bash in a Job on the node; its output.
async fn on_node(c: &common::TestCluster, name: &str, script: &str) -> String {
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "nodeName": NODE, "hostNetwork": true,
            "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", script]}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    common::eventually(Duration::from_secs(30), name, || async {
        let list = pods
            .list(&ListParams::default().labels(&format!("job-name={name}")))
            .await
            .ok()?;
        let p = list.items.first()?;
        let phase = p.status.as_ref()?.phase.clone()?;
        if phase != "Succeeded" && phase != "Failed" {
            return None;
        }
        pods.logs(p.metadata.name.as_ref()?, &Default::default())
            .await
            .ok()
    })
    .await
}

/// What v1.7.0's yurthub needs in the cluster (charts/yurthub/templates/yurthub-cfg.yaml,
/// charts/yurt-manager/crds/apps.openyurt.io_nodepools.yaml at openyurtio/openyurt@v1.7.0).
async fn cluster_objects(client: &kube::Client) {
    let objects = [
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "nodepools.apps.openyurt.io"},
        "spec": {"group": "apps.openyurt.io", "scope": "Cluster",
            "names": {"plural": "nodepools", "singular": "nodepool", "kind": "NodePool", "listKind": "NodePoolList", "shortNames": ["np"]},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v1beta2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool",
        "metadata": {"name": "pool-a"}, "spec": {"type": "Edge"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "yurt-hub"},
        "rules": [
            {"apiGroups": [""], "resources": ["events"], "verbs": ["get"]},
            {"apiGroups": ["apps.openyurt.io"], "resources": ["nodepools"], "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["yurt-coordinator-yurthub-certs"], "verbs": ["list", "watch"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["list", "watch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "yurt-hub"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "yurt-hub"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "yurt-hub-cfg", "namespace": "kube-system", "labels": {"openyurt.io/configmap-name": "yurt-hub-cfg"}},
        "data": {"cache_agents": "", "servicetopology": "", "discardcloudservice": "", "masterservice": ""}}),
    ];
    common::apply(client, &objects).await;
}

/// Approves pending kubelet-serving requests (yurt-manager's csrapprover does it in a cluster).
async fn approve_serving_csrs(client: &kube::Client) {
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    for csr in csrs.list(&Default::default()).await.unwrap().items {
        let pending = csr
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_none();
        if pending && csr.spec.signer_name == "kubernetes.io/kubelet-serving" {
            let _ = csrs
                .patch_approval(
                    csr.metadata.name.as_deref().unwrap(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "approved by the test"}]}})),
                )
                .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurthub_runs_as_a_systemd_service_and_serves_its_node() {
    let c = common::start(2, Layout::Kubeadm).await;
    cluster_objects(&c.client).await;
    install(&c, Some("pool-a"), "/usr/local/bin/yurthub");
    let out = on_node(
        &c,
        "install",
        "systemctl daemon-reload && systemctl enable yurthub 2>&1; echo rc=$?; systemctl start yurthub; echo rc=$?",
    )
    .await;
    assert!(
        out.contains("The unit files have no installation config"),
        "{out}"
    );
    assert!(out.contains("rc=0\nrc=0\n"), "{out}");
    let active = common::eventually(Duration::from_secs(30), "yurthub readyz OK", || async {
        approve_serving_csrs(&c.client).await;
        let out = on_node(
            &c,
            &format!("check-{}", yurtsim::util::random_suffix(5)),
            "systemctl is-active yurthub; curl -s http://127.0.0.1:10267/v1/readyz",
        )
        .await;
        out.ends_with("active\nOK").then_some(out)
    })
    .await;
    assert!(active.starts_with("active"), "{active}");
    let log = std::fs::read_to_string(
        c.sim
            .node_root(NODE)
            .join("var/log/yurtsim/yurthub.service.log"),
    )
    .unwrap();
    assert!(log.contains("yurthub is ready"), "{log}");

    // stop + disable
    let out = on_node(
        &c,
        "remove",
        "systemctl stop yurthub; systemctl disable yurthub; systemctl is-active yurthub; echo rc=$?; journalctl -u yurthub -n 1 --no-pager",
    )
    .await;
    assert!(out.contains("inactive\nrc=3\n"), "{out}");
    assert!(
        out.ends_with("Stopped yurthub.service - YurtHub Service.\n"),
        "{out}"
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurthub_service_failures_are_systemds_and_yurthubs() {
    let c = common::start(2, Layout::Kubeadm).await;
    // no --nodepool-name: validation fails, Restart=always until the start limit
    install(&c, None, "/usr/local/bin/yurthub");
    let out = common::eventually(Duration::from_secs(30), "start-limit-hit", || async {
        let out = on_node(
            &c,
            &format!("np-{}", yurtsim::util::random_suffix(5)),
            "systemctl daemon-reload; systemctl start yurthub.service; sleep 2; systemctl is-active yurthub.service; journalctl -u yurthub",
        )
        .await;
        out.contains("\nfailed\n").then_some(out)
    })
    .await;
    assert!(
        out.contains("validate options: node-pool-name is empty"),
        "{out}"
    );
    assert!(out.contains("status=255/FAILURE"), "{out}");
    assert!(
        out.contains("Failed with result 'start-limit-hit'."),
        "{out}"
    );

    // a missing binary: 203/EXEC
    install(&c, Some("pool-a"), "/usr/local/bin/no-such-yurthub");
    let out = on_node(
        &c,
        "exec",
        "systemctl stop yurthub; systemctl reset-failed yurthub; systemctl daemon-reload; systemctl start yurthub; sleep 0.5; journalctl -u yurthub -n 8",
    )
    .await;
    assert!(
        out.contains(
            "Failed at step EXEC spawning /usr/local/bin/no-such-yurthub: No such file or directory"
        ),
        "{out}"
    );
    assert!(out.contains("status=203/EXEC"), "{out}");

    // a missing kubelet certificate file
    let root = c.sim.node_root(NODE);
    std::fs::remove_file(root.join("var/lib/kubelet/pki/kubelet-client-current.pem")).unwrap();
    install(&c, Some("pool-a"), "/usr/local/bin/yurthub");
    let out = on_node(
        &c,
        "cert",
        "systemctl stop yurthub; systemctl reset-failed yurthub; systemctl daemon-reload; systemctl start yurthub; sleep 0.5; journalctl -u yurthub",
    )
    .await;
    assert!(out.contains("complete yurthub configuration error, /var/lib/kubelet/pki/kubelet-client-current.pem file doesn't exist"), "{out}");

    // unknown unit
    let out = on_node(&c, "unknown", "systemctl start nope; echo rc=$?").await;
    assert_eq!(
        out,
        "Failed to start nope.service: Unit nope.service not found.\nrc=5\n"
    );
    c.sim.shutdown().await;
}
