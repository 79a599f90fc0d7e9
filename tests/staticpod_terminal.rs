//! What `yurtctl staticpod upgrade` shows on stderr at scale (issue 17), as convert does
//! (tests/terminal.rs): before the prompt a plan summary; in a terminal one bar for the node
//! rollout with done/total, failures, rate and ETA, a line for each failure as it happens and
//! none per upgraded node; at the end the nodes by result and the failed ones. In CI (plain
//! lines) a line per node event and a periodic count line.

mod support;

use std::time::Duration;

use support::terminal::{in_terminal, redraws, visible};
use yurtsim::Layout;

/// `workers` worker nodes running static pod `nginx` (nginx:1.19.1), all of them Ready.
async fn nginx_on(workers: usize) -> support::SimEnv {
    let env = support::start_sim(workers + 1, Layout::Kubeadm, |cfg| {
        cfg.pod_ready_delay = Duration::from_millis(100);
    })
    .await;
    install_nginx(&env, workers).await;
    env
}

/// Static pod `nginx` (nginx:1.19.1) on every worker of `env`'s `workers`, all of them Ready.
async fn install_nginx(env: &support::SimEnv, workers: usize) {
    let names: Vec<String> = env
        .sim
        .node_names()
        .into_iter()
        .filter(|n| n.starts_with("worker-"))
        .collect();
    for w in &names {
        let dir = env.sim.node_root(w).join("etc/kubernetes/manifests");
        std::fs::write(dir.join("nginx.yaml"), support::NGINX_119_1).unwrap();
    }
    let status = ["staticpod", "status", "nginx", "-o", "json"];
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let s = support::yurtctl(&env.sim, &status).await;
            if s.code == 0 && ready_count(&s.stdout) == workers {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("every worker runs nginx Ready");
}

fn ready_count(status_json: &str) -> usize {
    serde_json::from_str::<serde_json::Value>(status_json)
        .ok()
        .and_then(|v| v["ready"].as_u64())
        .unwrap_or(0) as usize
}

/// 120 nodes, two of whose upgrade Jobs fail, upgraded 20 at a time in a terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_120_nodes_a_staticpod_upgrade_shows_a_bar_and_a_summary() {
    let env = nginx_on(120).await;
    for n in ["worker-17", "worker-42"] {
        env.sim.faults().fail_jobs_named(n, &["yurtctl-sp-up-"], 3);
    }
    // (the exit code of tolerated failures is staticpod_e2e's to judge)
    let (_, raw) = in_terminal(
        &env.sim,
        "staticpod upgrade nginx --image nginx:1.19.2 --strategy advanced-rolling-update \
         --max-unavailable 20 --max-failures 2 -y",
        &[],
    )
    .await;
    let text = visible(&raw);
    assert!(redraws(&raw), "the bar is redrawn in place");

    // the plan summary: three windows of their first names, then the rest counted
    assert!(
        text.contains("on 120 of 120 node(s), at most 20 at a time"),
        "the plan's headline"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  window 1: ") && l.ends_with(", … and 17 more")),
        "a window lists its first names"
    );
    assert!(text.contains("  … and 3 more window(s) of 60 node(s)"));
    assert!(text.contains("(every node: --dry-run, or -o wide)"));

    // one bar for the node rollout, counting to the plan's total with failures, rate and ETA
    assert!(
        text.lines()
            .any(|l| l.contains("[nodes]") && l.contains("/120 ") && l.contains("/s ETA ")),
        "the nodes phase has a bar with its total, rate and ETA"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("[nodes]") && l.contains("/120 ") && l.contains("2 failed")),
        "the bar counts the failures"
    );
    assert!(!text.contains(": upgrading"), "no line per started node");
    assert!(!text.contains(": upgraded in"), "no line per upgraded node");

    // failures as they happen, with their node and reason
    for n in ["worker-17", "worker-42"] {
        assert!(
            text.lines().any(|l| l.contains(&format!(
                "✖ [nodes] node {n}: the upgrade Job failed: BackoffLimitExceeded"
            ))),
            "{n}'s failure has its line"
        );
    }
    assert!(
        text.contains("[nodes] done in"),
        "the phase ends with a line"
    );

    // the closing summary by result, then the failed nodes
    assert!(
        text.contains("Nodes: 118 upgraded, 2 failed"),
        "counts by result"
    );
    let failed: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Failed:"))
        .skip(1)
        .filter(|l| !l.starts_with("    "))
        .take(2)
        .collect();
    assert!(
        failed[0].starts_with("  worker-17 ")
            && failed[0].contains(" failed ")
            && failed[0].contains("BackoffLimitExceeded"),
        "{failed:?}"
    );
    assert!(failed[1].starts_with("  worker-42 "), "{failed:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("NODE ")),
        "the per-node table is -o wide's"
    );
    env.sim.shutdown().await;
}

/// Plain mode (CI): a line per node event and every `YURTCTL_PROGRESS_PERIOD` a count line
/// of the node rollout; the snapshot (count lines and timings normalized) is what a CI log
/// shows for three nodes upgraded one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_mode_prints_a_line_per_node_event_and_periodic_counts() {
    let env = nginx_on(3).await;
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args([
        "staticpod",
        "upgrade",
        "nginx",
        "--image",
        "nginx:1.19.2",
        "--strategy",
        "advanced-rolling-update",
        "--max-unavailable",
        "1",
        "-y",
    ])
    .env_remove("CI")
    .env("YURTCTL_PROGRESS_PERIOD", "100ms");
    let run = support::run(cmd, "staticpod upgrade").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let is_count = |l: &str| l.contains(" done, ") && l.ends_with("/s");
    let counts: Vec<&str> = run.stderr.lines().filter(|l| is_count(l)).collect();
    assert!(!counts.is_empty(), "count lines every 100ms");
    for l in &counts {
        let rest = l
            .strip_prefix("[nodes] ")
            .expect("only the node rollout is counted");
        let (n, total) = rest.split(' ').next().unwrap().split_once('/').unwrap();
        assert_eq!(total, "3", "{l}");
        assert!(n.parse::<usize>().unwrap() <= 3, "{l}");
    }
    // a Job watch the sim keeps dropping is retried with a warning, whenever it happens
    let retried = |l: &str| l.starts_with(" WARN watching Jobs failed; retrying");
    let without_counts: String = run
        .stderr
        .lines()
        .filter(|l| !is_count(l) && !retried(l))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::with_settings!({filters => vec![(r"in \d+\.\ds", "in [elapsed]")]}, {
        insta::assert_snapshot!("staticpod_plain_progress", without_counts);
    });
    env.sim.shutdown().await;
}

/// Ctrl-C on a terminal while `staticpod upgrade` settles a YurtStaticSet after its last
/// node (the user's strategy going back): the settle finishes, the lock is released, and the
/// run exits 130; the next run is not refused for a held lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_settle_finishes_it_and_releases_the_lock() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
    use yurtsim::faults::RequestFault;
    // nginx on three workers, handed to yurt-manager: a YurtStaticSet manages it
    let env = support::start_sim(4, Layout::Kubeadm, |cfg| {
        cfg.kubernetes_version = "v1.30.2".into();
    })
    .await;
    let sim = &env.sim;
    let convert = [
        "convert",
        "-y",
        "--profile",
        "openyurt-v1.6",
        "--servant-image",
        "openyurt/yurtctl:test",
    ];
    let converted = support::yurtctl(sim, &convert).await;
    assert_eq!(converted.code, 0, "{}", converted.stderr);
    install_nginx(&env, 3).await;
    let adopt = support::yurtctl(sim, &["staticpod", "adopt", "nginx", "-y"]).await;
    assert_eq!(adopt.code, 0, "{}", adopt.stderr);

    // the set's update that gives the strategy back takes 3 s; Ctrl-C once it is under way
    let updates = || {
        sim.metrics()
            .count("update", "yurtstaticsets.apps.openyurt.io")
    };
    let mut delayed_from = None;
    let mut pressed = false;
    let upgrade =
        "staticpod upgrade nginx --image nginx:1.19.2 --strategy advanced-rolling-update -y";
    let (code, text) =
        support::terminal::ctrl_c_in_terminal(sim, upgrade, |text| match delayed_from {
            None if text.contains("[nodes]") => {
                sim.faults().add(RequestFault {
                    delay_ms: 3000,
                    ..RequestFault::fail("update", "yurtstaticsets", 10, 0)
                });
                delayed_from = Some(updates());
                false
            }
            Some(before) if !pressed => {
                pressed = text.contains("[nodes] done") && updates() > before;
                pressed
            }
            _ => false,
        })
        .await;
    let client = support::kube_client(sim).await;
    let lease = Api::<Lease>::namespaced(client.clone(), "default")
        .get_opt("yurtctl-staticpod-nginx")
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.openyurt.io", "v1alpha1", "YurtStaticSet"),
        "yurtstaticsets",
    );
    let set = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar)
        .get("nginx")
        .await
        .unwrap();
    sim.faults().clear();
    assert!(pressed);
    assert_eq!(code, 130, "interrupted:\n{text}");
    assert!(lease.is_none(), "the lock is released: {lease:?}");
    assert_eq!(
        set.data["spec"]["upgradeStrategy"]["type"], "AdvancedRollingUpdate",
        "the settle finished: the user's strategy is back"
    );
    let again: Vec<&str> = upgrade.split(' ').collect();
    let again = support::yurtctl(sim, &again).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    env.sim.shutdown().await;
}
