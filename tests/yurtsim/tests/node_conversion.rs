//! yurt-manager v1.7.0's yurt-node-conversion-controller, as a user sees it: labelling a Node
//! with a NodePool starts (or does not start) a node-servant Job, cordons the node and reports
//! in condition YurtNodeConversionFailed. Source: openyurtio/openyurt@v1.7.0
//! pkg/yurtmanager/controller/yurtnodeconversion/yurt_node_conversion_controller.go,
//! pkg/node-servant/constant.go and job.go (facts: behaviour yurtnodeconversion).

mod common;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use yurtsim::Layout;

const NODE: &str = "worker-1";
const JOB: &str = "node-servant-conversion-worker-1";
const CONTROLLER: &str =
    "system:serviceaccount:kube-system:yurt-manager-yurt-node-conversion-controller";

fn pool(name: &str, kind: &str) -> Value {
    json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool",
        "metadata": {"name": name}, "spec": {"type": kind}})
}

async fn label(c: &common::TestCluster, labels: Value) {
    let nodes: Api<Node> = Api::all(c.client.clone());
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": labels}})),
        )
        .await
        .unwrap();
}

fn conversion_condition(n: &Node) -> Option<(String, String, String)> {
    let c = n
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "YurtNodeConversionFailed")?;
    Some((c.status.clone(), c.reason.clone()?, c.message.clone()?))
}

async fn node_where(c: &common::TestCluster, what: &str, f: impl Fn(&Node) -> bool) -> Node {
    let nodes: Api<Node> = Api::all(c.client.clone());
    common::eventually(Duration::from_secs(20), what, || {
        let nodes = nodes.clone();
        let f = &f;
        async move { nodes.get(NODE).await.ok().filter(|n| f(n)) }
    })
    .await
}

fn cordoned(n: &Node) -> bool {
    n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

// A round: cordon, condition Converting, Job with upstream's spec created by the controller's
// own ServiceAccount; on success the edge label, condition Converted and uncordon
// (Reconcile → startNewConversionRound, reconcileExistingJob → handleSuccessfulAction).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labelling_a_node_into_an_edge_pool_runs_a_conversion_round() {
    let c = common::start(3, Layout::Kubeadm).await;
    // the node-servant container is not modelled: make its pod exit 0
    c.sim
        .faults()
        .fail_jobs_named(NODE, &["node-servant-conversion"], 0);
    common::chart::install_v17(&c, |_| {}, &[]).await;
    common::apply(&c.client, &[pool("hangzhou", "Edge")]).await;
    common::chart::manager_ready(&c.client).await;
    label(&c, json!({"apps.openyurt.io/nodepool": "hangzhou"})).await;

    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "kube-system");
    let job = common::eventually(Duration::from_secs(20), "the conversion Job", || {
        let jobs = jobs.clone();
        async move { jobs.get(JOB).await.ok() }
    })
    .await;
    let managers: Vec<String> = job
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.contains(&CONTROLLER.to_string()), "{managers:?}");
    assert_eq!(
        job.metadata.labels.unwrap()["openyurt.io/conversion-node"],
        NODE
    );
    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit, Some(3));
    assert_eq!(spec.ttl_seconds_after_finished, Some(7200));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.host_pid, Some(true));
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(pod.node_name.as_deref(), Some(NODE));
    assert_eq!(
        pod.volumes.unwrap()[0].host_path.as_ref().unwrap().path,
        "/"
    );
    let ctr = &pod.containers[0];
    assert_eq!(ctr.image.as_deref(), Some("openyurt/node-servant:latest"));
    assert_eq!(ctr.command.as_ref().unwrap(), &["/bin/sh", "-c"]);
    assert_eq!(
        ctr.args.as_ref().unwrap(),
        &["/usr/local/bin/entry.sh convert --node-name=worker-1 --nodepool-name=hangzhou"]
    );
    assert_eq!(
        ctr.security_context.as_ref().unwrap().privileged,
        Some(true)
    );
    assert_eq!(
        ctr.volume_mounts.as_ref().unwrap()[0].mount_path,
        "/openyurt"
    );

    // handleSuccessfulAction writes the condition, then uncordons: two writes, so wait for both
    let done = node_where(&c, "the node converted and uncordoned", |n| {
        conversion_condition(n).is_some_and(|c| c.1 == "Converted") && !cordoned(n)
    })
    .await;
    assert_eq!(
        conversion_condition(&done).unwrap(),
        (
            "False".into(),
            "Converted".into(),
            "YurtHub installed and node converted successfully".into()
        )
    );
    assert_eq!(
        done.metadata.labels.as_ref().unwrap()["openyurt.io/is-edge-worker"],
        "true"
    );
    assert!(!cordoned(&done));
    c.sim.shutdown().await;
}

// A failed Job ends the round: condition True/ConvertFailed with the Job's Failed message, and
// the node stays cordoned (reconcileExistingJob, isJobFailed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_conversion_job_leaves_the_node_cordoned_and_says_so() {
    let c = common::start(3, Layout::Kubeadm).await;
    c.sim
        .faults()
        .fail_jobs_named(NODE, &["node-servant-conversion"], 1);
    common::chart::install_v17(&c, |_| {}, &[]).await;
    common::apply(&c.client, &[pool("hangzhou", "Edge")]).await;
    common::chart::manager_ready(&c.client).await;
    label(&c, json!({"apps.openyurt.io/nodepool": "hangzhou"})).await;
    let converting = node_where(&c, "Converting", |n| {
        conversion_condition(n).is_some_and(|c| c.1 == "Converting")
    })
    .await;
    assert!(cordoned(&converting));
    assert_eq!(
        conversion_condition(&converting).unwrap(),
        (
            "False".into(),
            "Converting".into(),
            format!("conversion Job {JOB} is running")
        )
    );
    let failed = node_where(&c, "ConvertFailed", |n| {
        conversion_condition(n).is_some_and(|c| c.1 == "ConvertFailed")
    })
    .await;
    let (status, _, message) = conversion_condition(&failed).unwrap();
    assert_eq!(status, "True");
    assert_eq!(message, "Job has reached the specified backoff limit");
    assert!(cordoned(&failed));
    assert!(
        !failed
            .metadata
            .labels
            .unwrap()
            .contains_key("openyurt.io/is-edge-worker")
    );
    c.sim.shutdown().await;
}

// startNewConversionRound → isEdgeNodePool: a missing pool is an error (requeued, nothing done
// until it exists); a Cloud pool is skipped with a log line and never gets a Job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_round_starts_for_a_missing_pool_or_a_cloud_pool() {
    let c = common::start(4, Layout::Kubeadm).await;
    // labelled before yurt-manager serves its node webhook (failurePolicy Ignore), which would
    // refuse a pool that does not exist
    label(&c, json!({"apps.openyurt.io/nodepool": "nowhere"})).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let pool_label = json!({"metadata": {"labels": {"apps.openyurt.io/nodepool": "cloud"}}});
    nodes
        .patch(
            "worker-2",
            &PatchParams::default(),
            &Patch::Merge(&pool_label),
        )
        .await
        .unwrap();
    common::chart::install_v17(&c, |_| {}, &[]).await;
    common::chart::manager_ready(&c.client).await;
    common::apply(&c.client, &[pool("cloud", "Cloud")]).await;
    common::eventually(Duration::from_secs(20), "both reconciled", || {
        let c = &c;
        async move {
            let log = common::chart::manager_log(&c.client).await;
            (log.contains("nodepools.apps.openyurt.io \\\"nowhere\\\" not found")
                && log.contains(
                    "node(worker-2) skips conversion: nodepool \"cloud\" is not Edge type",
                ))
            .then_some(())
        }
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "kube-system");
    for n in [NODE, "worker-2"] {
        assert!(
            jobs.get_opt(&format!("node-servant-conversion-{n}"))
                .await
                .unwrap()
                .is_none()
        );
        let node = nodes.get(n).await.unwrap();
        assert!(!cordoned(&node), "{n}");
        assert!(conversion_condition(&node).is_none(), "{n}");
    }
    // the missing pool appears: the requeued node starts its round
    common::apply(&c.client, &[pool("nowhere", "Edge")]).await;
    common::eventually(
        Duration::from_secs(20),
        "the Job once the pool exists",
        || {
            let jobs = jobs.clone();
            async move { jobs.get_opt(JOB).await.ok().flatten() }
        },
    )
    .await;
    c.sim.shutdown().await;
}

// Writes are the controller's own: without its ClusterRoleBinding it cannot cordon, so no Job
// is ever created (chart: yurt-manager-yurt-node-conversion-controller-binding).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_rbac_the_controller_cannot_cordon_or_create_a_job() {
    let c = common::start(3, Layout::Kubeadm).await;
    common::chart::install_v17(
        &c,
        |o| {
            o.retain(|o| {
                o["metadata"]["name"] != "yurt-manager-yurt-node-conversion-controller-binding"
            })
        },
        &[],
    )
    .await;
    common::apply(&c.client, &[pool("hangzhou", "Edge")]).await;
    common::chart::manager_ready(&c.client).await;
    label(&c, json!({"apps.openyurt.io/nodepool": "hangzhou"})).await;
    common::eventually(Duration::from_secs(20), "the forbidden cordon", || {
        let c = &c;
        async move {
            let log = common::chart::manager_log(&c.client).await;
            log.contains(&format!("cordon node worker-1 before starting convert: nodes \\\"worker-1\\\" is forbidden: User \\\"{CONTROLLER}\\\" cannot patch resource \\\"nodes\\\""))
                .then_some(())
        }
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "kube-system");
    assert!(jobs.get_opt(JOB).await.unwrap().is_none());
    c.sim.shutdown().await;
}
