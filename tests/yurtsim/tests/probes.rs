//! The kubelet's probes on real processes (kubernetes/kubernetes@v1.37.2 pkg/kubelet/prober):
//! readiness decides Ready, a failed liveness or startup probe restarts the container, and
//! each failure is an `Unhealthy` event worded as the kubelet words it.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use yurtsim::Layout;

fn pod(name: &str, container: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"nodeName": "worker-1", "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1, "containers": [container]}}))
    .unwrap()
}

async fn events_of(client: &kube::Client, pod: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events
        .list(&ListParams::default().fields(&format!("involvedObject.name={pod}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_decide_readiness_and_restart_what_fails_liveness_or_startup() {
    let c = common::start(2, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let server = |script: &str| json!(["sh", "-c", script]);
    // serves only after 2 s: not ready until a readiness probe reaches it
    pods.create(
        &PostParams::default(),
        &pod(
            "late",
            json!({"name": "main", "image": "busybox",
        "command": server("sleep 2; exec python3 -m http.server 8080 --bind 0.0.0.0"),
        "ports": [{"name": "web", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "web"}, "periodSeconds": 1}}),
        ),
    )
    .await
    .unwrap();
    // answers 404 where its liveness probe asks
    pods.create(
        &PostParams::default(),
        &pod(
            "unhealthy",
            json!({"name": "main", "image": "busybox",
        "command": server("exec python3 -m http.server 8081 --bind 0.0.0.0"),
        "livenessProbe": {"httpGet": {"path": "/healthz-missing", "port": 8081},
            "periodSeconds": 1, "failureThreshold": 2}}),
        ),
    )
    .await
    .unwrap();
    // a startup probe that never passes; the readiness probe must never run meanwhile
    pods.create(
        &PostParams::default(),
        &pod(
            "never-starts",
            json!({"name": "main", "image": "busybox",
        "command": ["sleep", "600"],
        "startupProbe": {"exec": {"command": ["sh", "-c", "echo not yet; exit 1"]},
            "periodSeconds": 1, "failureThreshold": 2},
        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}),
        ),
    )
    .await
    .unwrap();

    // running but not ready while nothing listens
    let first = common::eventually(Duration::from_secs(20), "late running", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("late").await.ok()?;
            let cs = p.status.clone()?.container_statuses?.into_iter().next()?;
            cs.state?.running.is_some().then_some(p)
        }
    })
    .await;
    assert!(
        !ready(&first),
        "ready before its probe passed: {:?}",
        first.status
    );
    common::eventually(Duration::from_secs(20), "late ready", || {
        let pods = pods.clone();
        async move { pods.get("late").await.ok().filter(ready) }
    })
    .await;
    let late = events_of(&c.client, "late").await;
    assert!(
        late.iter().any(|(r, m)| r == "Unhealthy"
            && m.starts_with("Readiness probe failed: Get \"http://")
            && m.contains(":8080: connect: connection refused")),
        "{late:?}"
    );

    // the liveness failures kill and restart it, with the kubelet's words
    let restarted = common::eventually(Duration::from_secs(30), "unhealthy restarted", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("unhealthy").await.ok()?;
            let cs = p.status?.container_statuses?.into_iter().next()?;
            (cs.restart_count >= 1).then_some(cs)
        }
    })
    .await;
    assert!(restarted.last_state.and_then(|s| s.terminated).is_some());
    let unhealthy = events_of(&c.client, "unhealthy").await;
    assert!(
        unhealthy.iter().any(|(r, m)| r == "Unhealthy"
            && m == "Liveness probe failed: HTTP probe failed with statuscode: 404"),
        "{unhealthy:?}"
    );
    assert!(
        unhealthy.iter().any(|(r, m)| r == "Killing"
            && m == "Container main failed liveness probe, will be restarted"),
        "{unhealthy:?}"
    );

    // never started, never ready, killed for its startup probe with the command's output
    let stuck = common::eventually(Duration::from_secs(30), "never-starts restarted", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("never-starts").await.ok()?;
            let cs = p.status.clone()?.container_statuses?.into_iter().next()?;
            (cs.restart_count >= 1).then_some((p, cs))
        }
    })
    .await;
    assert!(!ready(&stuck.0));
    assert_eq!(stuck.1.started, Some(false));
    let never = events_of(&c.client, "never-starts").await;
    assert!(
        never
            .iter()
            .any(|(r, m)| r == "Unhealthy" && m == "Startup probe failed: not yet\n"),
        "{never:?}"
    );
    assert!(
        never.iter().any(|(r, m)| r == "Killing"
            && m == "Container main failed startup probe, will be restarted"),
        "{never:?}"
    );
    c.sim.shutdown().await;
}
