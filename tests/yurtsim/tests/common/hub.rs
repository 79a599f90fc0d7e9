//! Running YurtHub v1.7.0 as a systemd service on a node (as tests/services.rs does) and
//! redirecting that node's kubelet through it, the way node-servant does.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// upstream's `YurtHubServiceContent` (openyurtio/openyurt@v1.7.0 pkg/yurtadm/constants/constants.go).
pub const UNIT: &str = "[Unit]\nDescription=YurtHub Service\nAfter=network.target\n\n[Service]\nType=simple\nExecStart=/usr/local/bin/yurthub\nRestart=always\n";

/// Runs `script` with bash in a Job on `node`; its log once it finished.
pub async fn on_node(c: &super::TestCluster, node: &str, name: &str, script: &str) -> String {
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "nodeName": node, "hostNetwork": true, "hostPID": true,
            "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox", "command": ["bash", "-c", script]}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    super::eventually(Duration::from_secs(30), name, || async {
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

/// Writes yurthub v1.7.0's binary (the image's file), the unit and the drop-in `drop_in` into
/// the node root `root`.
pub fn install(root: &std::path::Path, drop_in: &str) {
    let img = yurtsim::nodes::images::for_image("openyurt/yurthub:v1.7.0").unwrap();
    let f = img.command_file("/usr/local/bin/yurthub").unwrap();
    let b = root.join("usr/local/bin/yurthub");
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    std::fs::write(&b, f.content()).unwrap();
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(f.mode)).unwrap();
    let d = root.join("etc/systemd/system/yurthub.service.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(root.join("etc/systemd/system/yurthub.service"), UNIT).unwrap();
    std::fs::write(d.join("10-yurthub.conf"), drop_in).unwrap();
}

/// Installs yurthub v1.7.0 as a service on `node` and waits until its readyz is OK.
pub async fn run_yurthub(c: &super::TestCluster, node: &str) {
    cluster_objects(&c.client).await;
    install(
        &c.sim.node_root(node),
        &format!(
            "[Service]\nExecStart=\nExecStart=/usr/local/bin/yurthub --node-name={node} --nodepool-name=pool-a --server-addr=https://10.0.0.1:6443 --bootstrap-mode=kubeletcertificate --bind-address=127.0.0.1 --working-mode=edge --namespace=kube-system --v=2\n"
        ),
    );
    let out = on_node(
        c,
        node,
        &format!("hub-install-{node}"),
        "systemctl daemon-reload; systemctl start yurthub; echo rc=$?",
    )
    .await;
    assert!(out.ends_with("rc=0\n"), "{out}");
    super::eventually(Duration::from_secs(30), "yurthub readyz OK", || async {
        approve_serving_csrs(&c.client).await;
        let out = on_node(
            c,
            node,
            &format!("hub-check-{}", yurtsim::util::random_suffix(5)),
            "curl -s http://127.0.0.1:10267/v1/readyz",
        )
        .await;
        (out == "OK").then_some(())
    })
    .await;
}

/// node-servant's kubelet redirect (openyurtio/openyurt@v1.7.0
/// pkg/node-servant/components/kubelet.go): kubeconfig to YurtHub, flag appended to
/// kubeadm-flags.env, kubelet restarted.
pub async fn redirect_kubelet(c: &super::TestCluster, node: &str) {
    let root = c.sim.node_root(node);
    std::fs::create_dir_all(root.join("var/lib/openyurt")).unwrap();
    std::fs::write(root.join("var/lib/openyurt/kubelet.conf"), "apiVersion: v1\nclusters:\n- cluster:\n    server: http://127.0.0.1:10261\n  name: default-cluster\ncontexts:\n- context:\n    cluster: default-cluster\n    namespace: default\n    user: default-auth\n  name: default-context\ncurrent-context: default-context\nkind: Config\npreferences: {}\nusers:\n- name: default-auth\n  user: {}\n").unwrap();
    let env = root.join("var/lib/kubelet/kubeadm-flags.env");
    let text = std::fs::read_to_string(&env).unwrap();
    let text = text.replacen(
        "\"\n",
        " --kubeconfig=/var/lib/openyurt/kubelet.conf --bootstrap-kubeconfig= \"\n",
        1,
    );
    std::fs::write(&env, text).unwrap();
    let out = on_node(c, node, "redirect", "systemctl restart kubelet; echo rc=$?").await;
    assert!(out.ends_with("rc=0\n"), "{out}");
}

/// What v1.7.0's yurthub needs in the cluster (charts/yurthub/templates/yurthub-cfg.yaml,
/// charts/yurt-manager/crds/apps.openyurt.io_nodepools.yaml at openyurtio/openyurt@v1.7.0).
pub async fn cluster_objects(client: &kube::Client) {
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
    super::apply(client, &objects).await;
}

/// Approves pending kubelet-serving requests (yurt-manager's csrapprover does it in a cluster).
pub async fn approve_serving_csrs(client: &kube::Client) {
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
