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

/// The status once every node's YurtHub mirror pod is Ready (they start after a delay).
async fn settled_status(sim: &Sim) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = status_json(sim).await;
        let nodes = s["nodes"].as_array().unwrap();
        if nodes
            .iter()
            .all(|n| n["yurthubReady"] == true && n["ready"] == true)
        {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "YurtHub not Ready everywhere: {s:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_before_after_convert_and_after_revert() {
    let env = support::start_sim(3, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.30.2".into()
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

    let convert = yurtctl(
        sim,
        &[
            "convert",
            "--servant-image",
            "openyurt/yurtctl:test",
            "--job-timeout",
            "60s",
            "-y",
        ],
    )
    .await;
    assert_eq!(convert.code, 0, "{}", convert.stderr);

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
    insta::assert_json_snapshot!("status_after_convert", s, {
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
    for (node, role) in [("control-plane-1", "cloud"), ("worker-1", "edge")] {
        let row = rows
            .iter()
            .find(|l| l.starts_with(node))
            .unwrap_or_else(|| panic!("{node}: {}", table.stdout));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1..6], [role, "yes", "Ready", "yes", "done"], "{row}");
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
