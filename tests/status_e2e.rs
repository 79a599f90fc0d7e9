//! `yurtctl status` end to end on yurtsim: before convert (not converted by yurtctl), after
//! convert (journal, objects, per-node YurtHub and Ready), after revert (not converted again).

mod support;

use std::time::Duration;

use serde_json::Value;
use yurtsim::{Layout, Sim};

use support::yurtctl;

async fn status_json(sim: &Sim) -> Value {
    let run = yurtctl(sim, &["status", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The status once every node's YurtHub mirror pod is Ready (they start after a delay), or,
/// for a YurtHub run as a service, once every node is Ready.
async fn settled_status(sim: &Sim) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = status_json(sim).await;
        let nodes = s["nodes"].as_array().unwrap();
        if nodes.iter().all(|n| {
            (n["yurthubReady"] == true || n["yurthubService"] == true) && n["ready"] == true
        }) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "YurtHub not Ready everywhere: {s:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The default profile: YurtHub a systemd service, nodes in NodePools.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_before_after_convert_and_after_revert() {
    status_round_trip(
        "openyurt-v1.7",
        "v1.33.1",
        ["cloud", "edge"],
        ["v1.7.0", "service"],
    )
    .await;
}

/// YurtHub a static pod whose mirror pod status reads, no NodePools.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_of_a_static_pod_yurthub() {
    status_round_trip("openyurt-v1.6", "v1.30.2", ["-", "-"], ["v1.6.1", "Ready"]).await;
}

/// status before convert, after convert (`pools` of control-plane-1 and worker-1, and the
/// OPENYURT and YURTHUB columns as the table shows them), and after revert.
async fn status_round_trip(
    profile: &str,
    kubernetes: &str,
    pools: [&str; 2],
    [openyurt, hub]: [&str; 2],
) {
    let env = support::start_sim(3, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = kubernetes.into()
    })
    .await;
    let sim = &env.sim;

    let before = yurtctl(sim, &["status"]).await;
    assert_eq!(before.code, 0, "{}", before.stderr);
    assert!(
        before.stdout.contains("not converted by yurtctl"),
        "{}",
        before.stdout
    );
    let s = status_json(sim).await;
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["converted"], false);
    assert!(
        s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["yurthub"] == false)
    );

    support::convert_profile(sim, profile).await;

    let mut s = settled_status(sim).await;
    assert_eq!(s["converted"], true);
    for n in s["nodes"].as_array().unwrap() {
        assert_eq!(n["converted"], true, "{n:#}");
        assert_eq!(n["lastResult"], "done", "{n:#}");
    }
    // the bootstrap token's name is random
    for o in s["createdObjects"].as_array_mut().unwrap() {
        if o["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("bootstrap-token-"))
        {
            o["name"] = "bootstrap-token-[id]".into();
        }
    }
    insta::assert_json_snapshot!(format!("status_after_convert_{profile}"), s, {
        ".updatedAt" => "[timestamp]",
    });

    let table = yurtctl(sim, &["status"]).await;
    assert_eq!(table.code, 0);
    let rows: Vec<&str> = table.stdout.lines().collect();
    assert!(
        rows.iter().any(|l| l.starts_with("NODE")),
        "{}",
        table.stdout
    );
    for ((node, role), pool) in [("control-plane-1", "cloud"), ("worker-1", "edge")]
        .into_iter()
        .zip(pools)
    {
        let row = rows
            .iter()
            .find(|l| l.starts_with(node))
            .unwrap_or_else(|| panic!("{node}: {}", table.stdout));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cols[1..8],
            [role, pool, "yes", openyurt, hub, "yes", "done"],
            "{row}"
        );
    }

    let revert = yurtctl(sim, &["revert", "--job-timeout", "60s", "-y"]).await;
    assert_eq!(revert.code, 0, "{}", revert.stderr);
    let after = status_json(sim).await;
    assert_eq!(after["converted"], false, "{after:#}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = status_json(sim).await;
        if s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["yurthub"] == false)
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "YurtHub pods stay: {s:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    env.sim.shutdown().await;
}
