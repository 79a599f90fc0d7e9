//! YurtHub v1.7.0 as a systemd service on a simulated node, installed the way upstream's
//! node-servant / yurtadm do it (facts/yurthub-v1.7.0.yaml `systemd:`), driven through the
//! node's `systemctl` stub from a pod on that node.

mod common;

use common::hub;

use std::time::Duration;

use yurtsim::Layout;

const NODE: &str = "worker-1";

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
    hub::install(&c.sim.node_root(NODE), &drop_in(pool, bin));
}

/// Runs `script` with bash in a Job on the node; its output.
async fn on_node(c: &common::TestCluster, name: &str, script: &str) -> String {
    hub::on_node(c, NODE, name, script).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yurthub_runs_as_a_systemd_service_and_serves_its_node() {
    let c = common::start(2, Layout::Kubeadm).await;
    hub::cluster_objects(&c.client).await;
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
        hub::approve_serving_csrs(&c.client).await;
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
