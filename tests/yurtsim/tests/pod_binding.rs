//! yurt-manager's pod-binding-controller, as a user sees it: on an edge node marked autonomous
//! the pods' not-ready/unreachable NoExecute tolerations take the node's autonomy duration (the
//! originals kept in annotations), and get them back when autonomy is removed. Source:
//! openyurtio/openyurt@v1.6.1 and @v1.7.0 (same file)
//! pkg/yurtmanager/controller/yurtcoordinator/podbinding/pod_binding_controller.go; the chart's
//! ClusterRole yurt-manager-pod-binding-controller (facts: behaviour podbinding, chartRbac).

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const NODE: &str = "worker-1";
const CONTROLLER: &str = "system:serviceaccount:kube-system:yurt-manager-pod-binding-controller";
const NOT_READY_BACKUP: &str = "apps.openyurt.io/original-not-ready-toleration-duration";
const UNREACHABLE_BACKUP: &str = "apps.openyurt.io/original-unreachable-toleration-duration";

/// worker-1 as an edge node (labelled before yurt-manager's node webhook serves; in pool
/// `hangzhou`, so v1.7.0's conversion controller has nothing to do with it).
async fn edge_node(c: &common::TestCluster, node: &str) {
    annotate_node(
        c,
        node,
        json!({"labels": {"openyurt.io/is-edge-worker": "true", "apps.openyurt.io/nodepool": "hangzhou"}}),
    )
    .await;
}

async fn annotate_node(c: &common::TestCluster, node: &str, metadata: Value) {
    let nodes: Api<Node> = Api::all(c.client.clone());
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "metadata": metadata })),
        )
        .await
        .unwrap();
}

/// The chart of `version` (at v1.6.1 the chart's default image is v1.6.0, which the sim does
/// not model, so the v1.6.1 image is set as yurtctl's profile does), the Edge pool the node
/// belongs to, and the manager Ready.
async fn install(
    c: &common::TestCluster,
    version: &str,
    edit: impl Fn(&mut Vec<Value>),
    args: &[&str],
) {
    let mut objects = common::chart::yurt_manager_objects(version, "kube-system");
    edit(&mut objects);
    let mut deployment = common::chart::yurt_manager_deployment(version, "kube-system", args);
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(format!("openyurt/yurt-manager:{version}"));
    objects.push(deployment);
    common::apply(&c.client, &objects).await;
    if version == "v1.7.0" {
        common::apply(
            &c.client,
            &[
                json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool",
                "metadata": {"name": "hangzhou"}, "spec": {"type": "Edge"}}),
            ],
        )
        .await;
    }
    common::chart::manager_ready(&c.client).await;
}

/// A bare pod bound to `node`; DefaultTolerationSeconds gives it the two 300 s tolerations.
async fn pod_on(c: &common::TestCluster, name: &str, node: &str) {
    let meta = json!({"name": name, "namespace": "default"});
    common::apply(
        &c.client,
        &[json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx"}]}})],
    )
    .await;
}

/// The not-ready and unreachable NoExecute tolerationSeconds of a pod.
fn seconds(p: &Pod) -> (Option<i64>, Option<i64>) {
    let t = p.spec.as_ref().unwrap().tolerations.as_ref().unwrap();
    let of = |key: &str| {
        t.iter()
            .find(|t| t.key.as_deref() == Some(key) && t.effect.as_deref() == Some("NoExecute"))
            .unwrap()
            .toleration_seconds
    };
    (
        of("node.kubernetes.io/not-ready"),
        of("node.kubernetes.io/unreachable"),
    )
}

fn annotation<'a>(p: &'a Pod, key: &str) -> Option<&'a str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

async fn pod_where(
    c: &common::TestCluster,
    name: &str,
    what: &str,
    f: impl Fn(&Pod) -> bool,
) -> Pod {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    common::eventually(Duration::from_secs(20), what, || {
        let pods = pods.clone();
        let f = &f;
        async move { pods.get(name).await.ok().filter(|p| f(p)) }
    })
    .await
}

async fn get_pod(c: &common::TestCluster, name: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.get(name).await.unwrap()
}

/// Passes of the model's loop (2 s each, scaled by the tests' 0.05) with nothing to show for
/// them: the controller had many chances to act.
async fn let_the_controllers_run() {
    tokio::time::sleep(Duration::from_secs(3)).await;
}

// v1.7.0, node.openyurt.io/autonomy-duration: the pod's 300 s become the duration's whole
// seconds, the originals are backed up, the write is the controller's own Update
// (resolveNodeAutonomySetting, reconcilePod); removing the annotation restores them and keeps
// the backups (the node predicate fires on the annotation's change).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v17_autonomy_duration_sets_and_removal_restores_toleration_seconds() {
    let c = common::start(3, Layout::Kubeadm).await;
    edge_node(&c, NODE).await;
    install(&c, "v1.7.0", |_| {}, &[]).await;
    pod_on(&c, "app", NODE).await;
    annotate_node(
        &c,
        NODE,
        json!({"annotations": {"node.openyurt.io/autonomy-duration": "1h30m"}}),
    )
    .await;
    let p = pod_where(&c, "app", "tolerations of 5400 s", |p| {
        seconds(p) == (Some(5400), Some(5400))
    })
    .await;
    assert_eq!(annotation(&p, NOT_READY_BACKUP), Some("300"));
    assert_eq!(annotation(&p, UNREACHABLE_BACKUP), Some("300"));
    let managers: Vec<String> = p
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.contains(&CONTROLLER.to_string()), "{managers:?}");

    annotate_node(
        &c,
        NODE,
        json!({"annotations": {"node.openyurt.io/autonomy-duration": null}}),
    )
    .await;
    let p = pod_where(&c, "app", "tolerations back to 300 s", |p| {
        seconds(p) == (Some(300), Some(300))
    })
    .await;
    assert_eq!(annotation(&p, NOT_READY_BACKUP), Some("300"));
    c.sim.shutdown().await;
}

// v1.6.1 (same controller), node.beta.openyurt.io/autonomy "true": tolerate for ever (no
// tolerationSeconds). Pods created on an already autonomous node are handled on creation
// (the pod predicate's CreateFunc).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v16_beta_autonomy_tolerates_for_ever_including_pods_created_later() {
    let c = common::start(3, Layout::Kubeadm).await;
    edge_node(&c, NODE).await;
    install(&c, "v1.6.1", |_| {}, &[]).await;
    pod_on(&c, "before", NODE).await;
    annotate_node(
        &c,
        NODE,
        json!({"annotations": {"node.beta.openyurt.io/autonomy": "true"}}),
    )
    .await;
    let p = pod_where(&c, "before", "no tolerationSeconds", |p| {
        seconds(p) == (None, None)
    })
    .await;
    assert_eq!(annotation(&p, NOT_READY_BACKUP), Some("300"));
    pod_on(&c, "after", NODE).await;
    pod_where(&c, "after", "no tolerationSeconds on the new pod", |p| {
        seconds(p) == (None, None)
    })
    .await;
    let log = common::chart::manager_log(&c.client).await;
    assert!(
        log.contains("controller pod-binding-controller is added"),
        "{log}"
    );
    c.sim.shutdown().await;
}

// Left alone: pods on a node without the edge label (reconcilePod returns early; the node
// predicate drops non-edge nodes), DaemonSet pods (isDaemonSetPodOrStaticPod), and pods on an
// edge node whose autonomy-duration Go cannot parse ("could not parse autonomy duration").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_edge_nodes_daemonset_pods_and_bad_durations_are_left_alone() {
    let c = common::start(4, Layout::Kubeadm).await;
    edge_node(&c, NODE).await;
    edge_node(&c, "worker-2").await;
    install(&c, "v1.7.0", |_| {}, &[]).await;
    // a DaemonSet pod on the autonomous node: its not-ready toleration has no seconds, so were
    // it reconciled, upstream would panic (and log the request)
    common::apply(
        &c.client,
        &[json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}},
                    "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                        "containers": [{"name": "agent", "image": "agent"}]}}}})],
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let ds_pod = common::eventually(Duration::from_secs(20), "the DaemonSet pod", || {
        let pods = pods.clone();
        async move {
            let l = pods
                .list(&ListParams::default().labels("app=agent"))
                .await
                .ok()?;
            l.items.into_iter().next()
        }
    })
    .await;
    let ds_pod = ds_pod.metadata.name.unwrap();
    pod_on(&c, "cloud-pod", "worker-3").await;
    pod_on(&c, "bad-duration-pod", "worker-2").await;
    pod_on(&c, "witness", NODE).await;
    let duration = |d: &str| json!({"annotations": {"node.openyurt.io/autonomy-duration": d}});
    annotate_node(&c, "worker-3", duration("10m")).await;
    annotate_node(&c, "worker-2", duration("1d")).await;
    annotate_node(&c, NODE, duration("10m")).await;
    // the same pass that reached the witness had the others in view
    pod_where(&c, "witness", "the witness at 600 s", |p| {
        seconds(p) == (Some(600), Some(600))
    })
    .await;
    let_the_controllers_run().await;
    for name in ["cloud-pod", "bad-duration-pod"] {
        let p = get_pod(&c, name).await;
        assert_eq!(seconds(&p), (Some(300), Some(300)), "{name}");
        assert_eq!(annotation(&p, NOT_READY_BACKUP), None, "{name}");
    }
    let p = get_pod(&c, &ds_pod).await;
    assert_eq!(seconds(&p), (None, None));
    assert_eq!(annotation(&p, NOT_READY_BACKUP), None);
    let log = common::chart::manager_log(&c.client).await;
    assert!(
        log.contains("reconcile pod request: default/witness"),
        "{log}"
    );
    assert!(
        !log.contains(&format!("reconcile pod request: default/{ds_pod}")),
        "{log}"
    );
    assert!(!log.contains("panic"), "{log}");
    assert!(
        log.contains(
            "could not parse autonomy duration 1d, time: unknown unit \"d\" in duration \"1d\""
        ),
        "{log}"
    );
    assert!(
        log.contains("node worker-3 is not a edge node, skip node autonomy settings reconcile.")
    );
    c.sim.shutdown().await;
}

// The write is the controller's own: without its ClusterRoleBinding (chart:
// yurt-manager-pod-binding-controller-binding) the Update is forbidden, logged as reconcilePod
// logs it and retried by controller-runtime; the pod keeps its tolerations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_rbac_the_controller_cannot_update_the_pod() {
    let c = common::start(3, Layout::Kubeadm).await;
    edge_node(&c, NODE).await;
    install(
        &c,
        "v1.7.0",
        |o| o.retain(|o| o["metadata"]["name"] != "yurt-manager-pod-binding-controller-binding"),
        &[],
    )
    .await;
    pod_on(&c, "app", NODE).await;
    annotate_node(
        &c,
        NODE,
        json!({"annotations": {"node.openyurt.io/autonomy-duration": "0"}}),
    )
    .await;
    let log = common::eventually(Duration::from_secs(20), "the forbidden update", || {
        let c = &c;
        async move {
            let log = common::chart::manager_log(&c.client).await;
            log.contains(&format!(
                "could not update pod(default/app), pods \"app\" is forbidden: User \"{CONTROLLER}\" cannot update resource \"pods\" in API group \"\" in the namespace \"default\""
            ))
            .then_some(log)
        }
    })
    .await;
    assert!(
        log.contains("Reconciler error\t{\"controller\": \"pod-binding-controller\", \"namespace\": \"default\", \"name\": \"app\""),
        "{log}"
    );
    let p = get_pod(&c, "app").await;
    assert_eq!(seconds(&p), (Some(300), Some(300)));
    assert_eq!(annotation(&p, NOT_READY_BACKUP), None);
    c.sim.shutdown().await;
}

// --controllers without it (IsControllerEnabled: "-podbinding" before "*"): nothing rewrites
// the pod, while the same set-up with the chart's default list does (the tests above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_by_controllers_nothing_happens() {
    let c = common::start(3, Layout::Kubeadm).await;
    edge_node(&c, NODE).await;
    install(
        &c,
        "v1.6.1",
        |_| {},
        &["--controllers=-nodelifecycle,-podbinding,*"],
    )
    .await;
    pod_on(&c, "app", NODE).await;
    annotate_node(
        &c,
        NODE,
        json!({"annotations": {"node.beta.openyurt.io/autonomy": "true"}}),
    )
    .await;
    let_the_controllers_run().await;
    let p = get_pod(&c, "app").await;
    assert_eq!(seconds(&p), (Some(300), Some(300)));
    let log = common::chart::manager_log(&c.client).await;
    // the manager ran its other controllers all along
    assert!(
        log.contains("controller yurt-static-set-controller is added"),
        "{log}"
    );
    assert!(!log.contains("reconcile pod request"), "{log}");
    assert!(
        !log.contains("controller pod-binding-controller is added"),
        "{log}"
    );
    c.sim.shutdown().await;
}
