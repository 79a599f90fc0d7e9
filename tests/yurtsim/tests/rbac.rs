//! Authentication and authorization as kube-apiserver with `--authorization-mode=Node,RBAC`
//! decides them (kubernetes/kubernetes@v1.33: `plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `plugin/pkg/auth/authorizer/node/node_authorizer.go`,
//! `plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go`), and scheduling as the default
//! scheduler's filters do (`pkg/scheduler/framework/plugins/{tainttoleration,nodeaffinity}`).

mod common;

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use yurtsim::Layout;

/// A client that authenticates with `token` (and optionally impersonates `as_user`).
async fn client_with(url: &str, token: &str, as_user: Option<&str>) -> Client {
    let impersonate = as_user
        .map(|u| format!("\n    as: {u}"))
        .unwrap_or_default();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: {token}{impersonate}\n"
    );
    let kc = Kubeconfig::from_yaml(&yaml).unwrap();
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn status_of(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other}"),
    }
}

/// The status of a list that must be refused.
async fn list_refused<K>(api: &Api<K>) -> (u16, String)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    status_of(api.list(&ListParams::default()).await.unwrap_err())
}

async fn apply(client: &Client, doc: serde_json::Value) {
    let kind = doc["kind"].as_str().unwrap().to_string();
    let ns = doc["metadata"]["namespace"].as_str().map(str::to_string);
    let gvk = kube::api::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", &kind);
    let ar = kube::api::ApiResource::from_gvk(&gvk);
    let api: Api<kube::api::DynamicObject> = match &ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let obj: kube::api::DynamicObject = serde_json::from_value(doc).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
}

/// A token for `kube-system/<sa>` from the TokenRequest API, as yurt-manager v1.7 gets its
/// per-controller tokens.
async fn sa_token(client: &Client, sa: &str) -> String {
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "kube-system");
    let _ = sas
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": sa}})).unwrap(),
        )
        .await;
    let tr = sas
        .create_token_request(
            sa,
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
                .unwrap(),
        )
        .await
        .unwrap();
    tr.status.unwrap().token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_gets_exactly_what_its_role_bindings_grant() {
    let c = common::start(2, Layout::Kubeadm).await;
    let url = c.sim.url();
    let token = sa_token(&c.client, "yurt-manager").await;
    let sa = client_with(&url, &token, None).await;
    let pods: Api<Pod> = Api::all(sa.clone());
    let (code, msg) = list_refused(&pods).await;
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        "pods is forbidden: User \"system:serviceaccount:kube-system:yurt-manager\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
    );
    // discovery is open to every authenticated user (system:discovery)
    sa.apiserver_version().await.unwrap();

    apply(&c.client, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]})).await;
    apply(&c.client, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "yurt-manager", "namespace": "kube-system"}]})).await;
    pods.list(&ListParams::default()).await.unwrap();
    // list does not imply get
    let one: Api<Pod> = Api::namespaced(sa.clone(), "kube-system");
    let (code, msg) = status_of(one.get("nothing").await.unwrap_err());
    assert_eq!(code, 403, "{msg}");
    assert!(msg.starts_with("pods \"nothing\" is forbidden: "), "{msg}");

    // a Role in one namespace with resourceNames: that object only, that namespace only
    apply(&c.client, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cfg", "namespace": "kube-system"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["yurt-hub-cfg"], "verbs": ["get"]}]})).await;
    apply(&c.client, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cfg", "namespace": "kube-system"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cfg"},
        "subjects": [{"kind": "ServiceAccount", "name": "yurt-manager"}]})).await;
    let cms: Api<ConfigMap> = Api::namespaced(sa.clone(), "kube-system");
    let (code, _) = status_of(cms.get("yurt-hub-cfg").await.unwrap_err());
    assert_eq!(code, 404, "allowed, and absent");
    let (code, _) = status_of(cms.get("kubeadm-config").await.unwrap_err());
    assert_eq!(code, 403);
    let (code, _) = list_refused(&cms).await;
    assert_eq!(code, 403, "resourceNames never allow a list");
    let elsewhere: Api<ConfigMap> = Api::namespaced(sa.clone(), "default");
    let (code, _) = status_of(elsewhere.get("yurt-hub-cfg").await.unwrap_err());
    assert_eq!(code, 403);

    // a binding to a role that does not exist grants nothing and says why
    apply(&c.client, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "not-there"},
        "subjects": [{"kind": "ServiceAccount", "name": "yurt-manager", "namespace": "kube-system"}]})).await;
    let secrets: Api<Secret> = Api::all(sa.clone());
    let (code, msg) = list_refused(&secrets).await;
    assert_eq!(code, 403);
    assert!(
        msg.ends_with("at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"not-there\" not found"),
        "{msg}"
    );

    // a token is bound to its ServiceAccount: recreated SA, old token rejected
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(c.client.clone(), "kube-system");
    sas.delete("yurt-manager", &Default::default())
        .await
        .unwrap();
    let (code, _) = list_refused(&pods).await;
    assert_eq!(code, 401);
    // an unknown token is 401 as well
    let stranger = client_with(&url, "not-a-token", None).await;
    let (code, _) = list_refused(&Api::<Pod>::all(stranger)).await;
    assert_eq!(code, 401);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_reviews_and_impersonation_answer_from_rbac() {
    let c = common::start(2, Layout::Kubeadm).await;
    let url = c.sim.url();
    let _ = sa_token(&c.client, "yurt-manager").await;
    let sar = |verb: &str, resource: &str, user: &str, groups: Vec<String>| SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(groups),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                group: Some("certificates.k8s.io".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(c.client.clone());
    // kubeadm lets bootstrap tokens of its default group create CSRs
    let r = reviews
        .create(
            &PostParams::default(),
            &sar(
                "create",
                "certificatesigningrequests",
                "system:bootstrap:abcdef",
                vec![
                    "system:bootstrappers".into(),
                    "system:bootstrappers:kubeadm:default-node-token".into(),
                    "system:authenticated".into(),
                ],
            ),
        )
        .await
        .unwrap();
    let st = r.status.unwrap();
    assert!(st.allowed);
    assert_eq!(
        st.reason.as_deref(),
        Some(
            "RBAC: allowed by ClusterRoleBinding \"kubeadm:kubelet-bootstrap\" of ClusterRole \"system:node-bootstrapper\" to Group \"system:bootstrappers:kubeadm:default-node-token\""
        )
    );
    // …but not approve them
    let r = reviews
        .create(
            &PostParams::default(),
            &sar(
                "update",
                "certificatesigningrequests",
                "system:bootstrap:abcdef",
                vec!["system:bootstrappers".into(), "system:authenticated".into()],
            ),
        )
        .await
        .unwrap();
    assert!(!r.status.unwrap().allowed);

    // impersonation (kubectl --as) is RBAC-checked for the impersonated user
    let admin_token = std::fs::read_to_string(c.sim.kubeconfig_path()).unwrap();
    let admin_token = admin_token
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .unwrap()
        .to_string();
    let as_sa = client_with(
        &url,
        &admin_token,
        Some("system:serviceaccount:kube-system:yurt-manager"),
    )
    .await;
    let (code, msg) = list_refused(&Api::<Pod>::all(as_sa)).await;
    assert_eq!(code, 403);
    assert!(
        msg.contains("User \"system:serviceaccount:kube-system:yurt-manager\" cannot list"),
        "{msg}"
    );
    // a ServiceAccount may not impersonate others
    let token = sa_token(&c.client, "yurt-manager").await;
    let sneaky = client_with(&url, &token, Some("yurtsim-admin")).await;
    let (code, msg) = list_refused(&Api::<Pod>::all(sneaky)).await;
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        "users \"yurtsim-admin\" is forbidden: User \"system:serviceaccount:kube-system:yurt-manager\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_tokens_authenticate_until_they_expire() {
    let c = common::start(2, Layout::Kubeadm).await;
    let url = c.sim.url();
    let secrets: Api<Secret> = Api::namespaced(c.client.clone(), "kube-system");
    let token_secret = |id: &str, expiration: &str| -> Secret {
        serde_json::from_value(json!({"metadata": {"name": format!("bootstrap-token-{id}")}, "type": "bootstrap.kubernetes.io/token",
            "stringData": {"token-id": id, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
                "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token", "expiration": expiration}}))
        .unwrap()
    };
    secrets
        .create(
            &PostParams::default(),
            &token_secret("abcdef", "2099-01-01T00:00:00Z"),
        )
        .await
        .unwrap();
    let joiner = client_with(&url, "abcdef.0123456789abcdef", None).await;
    let csrs: Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest> =
        Api::all(joiner.clone());
    csrs.list(&ListParams::default()).await.unwrap();
    let (code, msg) = list_refused(&Api::<Secret>::all(joiner)).await;
    assert_eq!(code, 403);
    assert!(
        msg.contains("User \"system:bootstrap:abcdef\" cannot list resource \"secrets\""),
        "{msg}"
    );
    // wrong secret, and an expired token: 401 (the tokencleaner also deletes the expired one)
    let wrong = client_with(&url, "abcdef.ffffffffffffffff", None).await;
    let (code, _) = list_refused(&Api::<
        k8s_openapi::api::certificates::v1::CertificateSigningRequest,
    >::all(wrong))
    .await;
    assert_eq!(code, 401);
    secrets
        .create(
            &PostParams::default(),
            &token_secret("zzzzzz", "2001-01-01T00:00:00Z"),
        )
        .await
        .unwrap();
    let expired = client_with(&url, "zzzzzz.0123456789abcdef", None).await;
    let (code, _) = list_refused(&Api::<
        k8s_openapi::api::certificates::v1::CertificateSigningRequest,
    >::all(expired))
    .await;
    assert_eq!(code, 401);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pods_projected_token_is_its_service_account_until_the_pod_is_gone() {
    let c = common::start(2, Layout::Kubeadm).await;
    let url = c.sim.url();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    // `sleep` exists on this machine, so the container really runs and its volume is mounted
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "reader"},
        "spec": {"nodeName": "worker-1", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "30"]}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let state = c.sim.shared().cfg.state_dir.clone();
    let token = common::eventually(Duration::from_secs(10), "the projected token file", || {
        let state = state.clone();
        async move {
            let pods_dir = state.join("sim/pods");
            std::fs::read_dir(&pods_dir).ok()?.flatten().find_map(|e| {
                let dir = e.path();
                if !dir.file_name()?.to_str()?.starts_with("default_reader_") {
                    return None;
                }
                std::fs::read_dir(dir.join("volumes"))
                    .ok()?
                    .flatten()
                    .find_map(|v| std::fs::read_to_string(v.path().join("token")).ok())
                    // an empty token would make a client without credentials
                    .filter(|t| !t.is_empty())
            })
        }
    })
    .await;
    let as_pod = client_with(&url, &token, None).await;
    let (code, msg) = list_refused(&Api::<Pod>::all(as_pod.clone())).await;
    assert_eq!(code, 403);
    assert!(
        msg.contains("User \"system:serviceaccount:default:default\""),
        "{msg}"
    );
    pods.delete(
        "reader",
        &kube::api::DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    common::eventually(
        Duration::from_secs(10),
        "the pod's token to die with it",
        || {
            let as_pod = as_pod.clone();
            async move {
                let r = Api::<Pod>::all(as_pod).list(&ListParams::default()).await;
                matches!(r, Err(kube::Error::Api(s)) if s.code == 401).then_some(())
            }
        },
    )
    .await;
    c.sim.shutdown().await;
}

/// The node the scheduler binds `name` to.
async fn bound_node(pods: &Api<Pod>, name: &str) -> String {
    common::eventually(
        Duration::from_secs(10),
        "the pod's binding",
        || async move { pods.get(name).await.ok()?.spec?.node_name },
    )
    .await
}

async fn pending_message(client: &Client, name: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    common::eventually(Duration::from_secs(10), "PodScheduled=False", || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            let cond = p
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
            cond.message
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_node_affinity_and_taints_decide_placement_as_the_scheduler_does() {
    let c = common::start(3, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "kube-system");
    let on_control_plane = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}]}}});
    // yurt-manager's affinity without its tolerations: nowhere to go
    let pod = |name: &str, spec: serde_json::Value| -> Pod {
        let mut s = json!({"containers": [{"name": "c", "image": "openyurt/example:v1"}]});
        for (k, v) in spec.as_object().unwrap() {
            s[k] = v.clone();
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": s})).unwrap()
    };
    pods.create(
        &PostParams::default(),
        &pod("no-toleration", json!({"affinity": on_control_plane})),
    )
    .await
    .unwrap();
    let msg = pending_message(&c.client, "no-toleration").await;
    assert_eq!(
        msg,
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    // the scheduler's events are recorded asynchronously (client-go's event broadcaster), after
    // or before the status update: wait for it
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "kube-system");
    common::eventually(
        Duration::from_secs(10),
        "the FailedScheduling event",
        || {
            let (events, msg) = (events.clone(), msg.clone());
            async move {
                let evs = events
                    .list(&ListParams::default().fields("involvedObject.name=no-toleration"))
                    .await
                    .ok()?;
                evs.items
                    .iter()
                    .any(|e| {
                        e.reason.as_deref() == Some("FailedScheduling")
                            && e.message.as_deref() == Some(msg.as_str())
                    })
                    .then_some(())
            }
        },
    )
    .await;

    // with the control-plane toleration it lands on the control plane, never on a worker
    pods.create(&PostParams::default(), &pod("tolerating", json!({"affinity": on_control_plane,
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]}))).await.unwrap();
    let node = bound_node(&pods, "tolerating").await;
    assert_eq!(node, "control-plane-1");

    // matchFields on metadata.name, NotIn: any worker but worker-1
    pods.create(&PostParams::default(), &pod("fields", json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["worker-1"]}]}]}}}}))).await.unwrap();
    let node = bound_node(&pods, "fields").await;
    assert_eq!(node, "worker-2");

    // a pending pod is placed once a node gets the label it selects
    pods.create(
        &PostParams::default(),
        &pod(
            "selector",
            json!({"nodeSelector": {"topology.kubernetes.io/zone": "z1"}}),
        ),
    )
    .await
    .unwrap();
    let msg = pending_message(&c.client, "selector").await;
    assert!(
        msg.contains("2 node(s) didn't match Pod's node affinity/selector"),
        "{msg}"
    );
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(c.client.clone());
    nodes
        .patch(
            "worker-1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"labels": {"topology.kubernetes.io/zone": "z1"}}}),
            ),
        )
        .await
        .unwrap();
    let node = bound_node(&pods, "selector").await;
    assert_eq!(node, "worker-1");
    c.sim.shutdown().await;
}

// kubernetes/kubernetes@v1.33.0 pkg/registry/certificates/certificates/strategy.go
// (PrepareForCreate: spec.username and spec.groups are the requester's, whatever was sent) and
// plugin/pkg/admission/certificates/approval/admission.go with
// plugin/pkg/admission/certificates/util.go (IsAuthorizedForSignerName): an approval needs
// `approve` on `signers` named the signerName or `<domain>/*`, beyond the update of
// certificatesigningrequests/approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csr_records_its_requester_and_its_approval_needs_the_signers_approve_verb() {
    use base64::Engine;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let c = common::start(2, Layout::Kubeadm).await;
    let url = c.sim.url();
    apply(
        &c.client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "approver"}, "rules": [
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get"]},
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"], "verbs": ["update"]}]}),
    )
    .await;
    apply(
        &c.client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "approver"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "approver"},
            "subjects": [{"kind": "ServiceAccount", "name": "approver", "namespace": "kube-system"}]}),
    )
    .await;
    let token = sa_token(&c.client, "approver").await;
    let sa = client_with(&url, &token, None).await;
    let key = yurtsim::pki::new_key();
    let subject = yurtsim::pki::Subject {
        common_name: "someone".into(),
        ..Default::default()
    };
    let pem = yurtsim::pki::csr_pem(&subject, &key);
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "metadata": {"name": "mine"},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
                 "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
                 "username": "system:admin", "groups": ["system:masters"]}}))
    .unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(sa.clone());
    let created = csrs.create(&PostParams::default(), &csr).await.unwrap();
    let spec = created.spec;
    assert_eq!(
        spec.username.as_deref(),
        Some("system:serviceaccount:kube-system:approver")
    );
    assert_eq!(
        spec.groups.unwrap_or_default(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated"
        ]
    );
    let approve = |mut csr: CertificateSigningRequest| {
        csr.status = Some(
            serde_json::from_value(json!({"conditions": [{"type": "Approved", "status": "True",
                "reason": "Test", "message": "approved by the test"}]}))
            .unwrap(),
        );
        csr
    };
    let cur = csrs.get("mine").await.unwrap();
    let err = csrs
        .replace_subresource("approval", "mine", &PostParams::default(), &approve(cur))
        .await
        .unwrap_err();
    let (code, msg) = status_of(err);
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        "certificatesigningrequests.certificates.k8s.io \"mine\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
    );
    // another signer's name does not help; the signer's domain with `/*` does
    for (name, names) in [
        ("signer-other", json!(["kubernetes.io/kubelet-serving"])),
        ("signer-domain", json!(["kubernetes.io/*"])),
    ] {
        apply(
            &c.client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": [
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": names, "verbs": ["approve"]}]}),
        )
        .await;
        apply(
            &c.client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": "approver", "namespace": "kube-system"}]}),
        )
        .await;
        let cur = csrs.get("mine").await.unwrap();
        let res = csrs
            .replace_subresource("approval", "mine", &PostParams::default(), &approve(cur))
            .await;
        match name {
            "signer-other" => assert_eq!(status_of(res.unwrap_err()).0, 403),
            _ => {
                let done = res.unwrap();
                assert_eq!(
                    done.status.unwrap().conditions.unwrap()[0].type_,
                    "Approved"
                );
            }
        }
    }
    c.sim.shutdown().await;
}
