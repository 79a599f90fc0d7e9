//! Server-side apply, the lock, the journal and the snapshot against yurtsim.

mod support;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::json;
use yurtctl::app::error::CommandError;
use yurtctl::cluster::apply::{Applier, ApplyOptions, Deleted};
use yurtctl::cluster::client::{ClientOptions, ConfigEnv, connect_with_env};
use yurtctl::cluster::jobs::NodeJob;
use yurtctl::cluster::journal::{Journal, JournalStore, ObjectRef, PhaseState};
use yurtctl::cluster::lock::{self, LockOptions};
use yurtctl::cluster::snapshot::{SnapshotOptions, snapshot};
use yurtctl::cluster::{Cluster, ClusterError};
use yurtctl::exit::Exit;
use yurtsim::{Layout, Sim};

struct T {
    sim: Sim,
    cluster: Cluster,
    _dir: tempfile::TempDir,
}

async fn start(nodes: usize) -> T {
    let env = support::start_sim(nodes, Layout::Kubeadm, |cfg| {
        cfg.pod_ready_delay = Duration::from_millis(50)
    })
    .await;
    let cluster = support::yurtctl_cluster(&env.sim).await;
    T {
        sim: env.sim,
        cluster,
        _dir: env.dir,
    }
}

fn cm(name: &str, data: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "yurtctl"}},
        "data": data}))
    .unwrap()
}

fn rv(o: &DynamicObject) -> String {
    o.metadata.resource_version.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_is_idempotent_and_conflicts_name_the_other_manager() {
    let t = start(1).await;
    let a = Applier::new(t.cluster.clone(), ApplyOptions::default());
    let first = a
        .apply(&cm("yurt-hub-cfg", json!({"k": "v"})))
        .await
        .unwrap();
    assert_eq!(first.metadata.namespace.as_deref(), Some("kube-system"));
    let again = a
        .apply(&cm("yurt-hub-cfg", json!({"k": "v"})))
        .await
        .unwrap();
    assert_eq!(
        rv(&first),
        rv(&again),
        "re-applying the same object changes nothing"
    );
    let ms = again.metadata.managed_fields.unwrap_or_default();
    assert!(ms.iter().any(|m| m.manager.as_deref() == Some("yurtctl")));
    // A ConfigMap, a Deployment: one discovery each, then cached.
    a.apply(&cm("other", json!({"x": "1"}))).await.unwrap();
    assert_eq!(a.discovered_kinds(), 1);

    // Someone else takes over a field.
    let cms: Api<ConfigMap> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yurt-hub-cfg"}, "data": {"k": "edited"}});
    cms.patch(
        "yurt-hub-cfg",
        &PatchParams::apply("kubectl").force(),
        &Patch::Apply(&theirs),
    )
    .await
    .unwrap();
    let e = a
        .apply(&cm("yurt-hub-cfg", json!({"k": "v"})))
        .await
        .unwrap_err();
    let ClusterError::ApplyConflict { object, conflicts } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(object, "ConfigMap kube-system/yurt-hub-cfg");
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].manager, "kubectl");
    assert_eq!(conflicts[0].field, ".data.k");
    let msg = e.to_string();
    assert!(msg.contains(".data.k owned by \"kubectl\""), "{msg}");
    assert!(msg.contains("--force-conflicts"), "{msg}");

    let forced = Applier::new(
        t.cluster.clone(),
        ApplyOptions {
            force: true,
            ..Default::default()
        },
    );
    let o = forced
        .apply(&cm("yurt-hub-cfg", json!({"k": "v"})))
        .await
        .unwrap();
    assert_eq!(o.data["data"]["k"], "v");
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_stores_nothing_and_delete_of_a_missing_object_succeeds() {
    let t = start(1).await;
    let dry = Applier::new(
        t.cluster.clone(),
        ApplyOptions {
            dry_run: true,
            ..Default::default()
        },
    );
    let o = dry.apply(&cm("dry", json!({"a": "b"}))).await.unwrap();
    assert_eq!(o.data["data"]["a"], "b", "the server answered");
    let cms: Api<ConfigMap> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    assert!(cms.get_opt("dry").await.unwrap().is_none());

    let a = Applier::new(t.cluster.clone(), ApplyOptions::default());
    let (created, fresh) = a
        .create_or_get(&cm("token", json!({"t": "1"})))
        .await
        .unwrap();
    assert!(fresh);
    let (kept, fresh) = a
        .create_or_get(&cm("token", json!({"t": "2"})))
        .await
        .unwrap();
    assert!(!fresh);
    assert_eq!(kept.data["data"]["t"], "1");
    assert_eq!(rv(&kept), rv(&created));
    assert_eq!(a.delete(&kept).await.unwrap(), Deleted::Deleted);
    assert_eq!(a.delete(&kept).await.unwrap(), Deleted::AlreadyGone);

    let unknown: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "apps.openyurt.io/v1beta1",
        "kind": "YurtStaticSet", "metadata": {"name": "yurt-hub"}}))
        .unwrap();
    let e = a.apply(&unknown).await.unwrap_err();
    assert!(matches!(e, ClusterError::UnknownKind { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("apps.openyurt.io/v1beta1/YurtStaticSet"),
        "{e}"
    );
    t.sim.shutdown().await;
}

fn opts(identity: &str, secs: u64) -> LockOptions {
    LockOptions {
        identity: identity.into(),
        duration: Duration::from_secs(secs),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_racing_acquirers_exactly_one_wins() {
    let t = start(1).await;
    for round in 0..3 {
        let (a, b) = tokio::join!(
            lock::acquire(&t.cluster, opts("alice@host/1#a", 30)),
            lock::acquire(&t.cluster, opts("bob@host/2#b", 30)),
        );
        let (winner, loser) = match (a, b) {
            (Ok(g), Err(e)) | (Err(e), Ok(g)) => (g, e),
            (a, b) => panic!("round {round}: {:?} / {:?}", a.is_ok(), b.is_ok()),
        };
        let ClusterError::Lock(yurtctl::cluster::lock::LockError::Held {
            holder, expires_in, ..
        }) = &loser
        else {
            panic!("{loser:?}")
        };
        assert_eq!(holder, winner.identity());
        assert!(*expires_in > Duration::from_secs(20));
        assert_eq!(CommandError::from(loser.clone()).exit(), Exit::Locked);
        assert!(loser.to_string().contains(winner.identity()), "{loser}");
        assert!(loser.to_string().contains("--force-unlock"), "{loser}");
        winner.release().await.unwrap();
    }
    let leases: Api<Lease> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    assert!(
        leases.get_opt("yurtctl-lock").await.unwrap().is_none(),
        "released"
    );

    // Racing over an expired lease: both read it, both try to replace it on the same
    // resourceVersion; the server lets only one through.
    let old =
        (k8s_openapi::jiff::Timestamp::now() - std::time::Duration::from_secs(120)).to_string();
    let stale: Lease = serde_json::from_value(json!({"metadata": {"name": "yurtctl-lock"},
        "spec": {"holderIdentity": "dead@host/0#0", "leaseDurationSeconds": 10, "renewTime": old}}))
    .unwrap();
    leases.create(&PostParams::default(), &stale).await.unwrap();
    let (a, b) = tokio::join!(
        lock::acquire(&t.cluster, opts("alice@host/1#a", 30)),
        lock::acquire(&t.cluster, opts("bob@host/2#b", 30)),
    );
    assert!(a.is_ok() != b.is_ok(), "exactly one takes over");
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_lease_is_taken_over_and_a_live_one_is_renewed() {
    let t = start(1).await;
    let leases: Api<Lease> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    let old =
        (k8s_openapi::jiff::Timestamp::now() - std::time::Duration::from_secs(120)).to_string();
    let stale: Lease = serde_json::from_value(json!({"metadata": {"name": "yurtctl-lock"},
        "spec": {"holderIdentity": "carol@dead/9#c", "leaseDurationSeconds": 30,
                 "acquireTime": old, "renewTime": old, "leaseTransitions": 3}}))
    .unwrap();
    leases.create(&PostParams::default(), &stale).await.unwrap();
    assert_eq!(
        lock::holder(&t.cluster, "kube-system")
            .await
            .unwrap()
            .unwrap()
            .identity,
        "carol@dead/9#c"
    );

    let g = lock::acquire(&t.cluster, opts("dave@host/4#d", 1))
        .await
        .expect("stale lease taken over");
    let l = leases.get("yurtctl-lock").await.unwrap().spec.unwrap();
    assert_eq!(l.holder_identity.as_deref(), Some("dave@host/4#d"));
    assert_eq!(l.lease_transitions, Some(4));
    let first_renew = l.renew_time.unwrap().0;
    // Held past its 1 s duration thanks to renewals every ~333 ms.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let l = leases.get("yurtctl-lock").await.unwrap().spec.unwrap();
    assert!(l.renew_time.unwrap().0 > first_renew, "renewed");
    let e = lock::acquire(&t.cluster, opts("eve@host/5#e", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClusterError::Lock(yurtctl::cluster::lock::LockError::Held { .. })
        ),
        "{e:?}"
    );
    assert!(g.lost().is_none());

    // --force-unlock removes it; the holder notices it lost the lock at its next renewal.
    let prev = lock::force_unlock(&t.cluster, "kube-system").await.unwrap();
    assert_eq!(prev.unwrap().identity, "dave@host/4#d");
    let other = lock::acquire(&t.cluster, opts("eve@host/5#e", 30))
        .await
        .unwrap();
    let mut g = g;
    let lost = tokio::time::timeout(Duration::from_secs(3), g.wait_lost())
        .await
        .expect("loss noticed");
    assert!(
        matches!(&lost, ClusterError::Lock(yurtctl::cluster::lock::LockError::Lost { holder, .. }) if holder == "eve@host/5#e"),
        "{lost:?}"
    );
    // Releasing a lost lock leaves the new holder alone.
    g.release().await.unwrap();
    assert_eq!(
        lock::holder(&t.cluster, "kube-system")
            .await
            .unwrap()
            .unwrap()
            .identity,
        "eve@host/5#e"
    );
    drop(other);
    // Dropping the guard releases in the background.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        lock::holder(&t.cluster, "kube-system")
            .await
            .unwrap()
            .is_none()
    );
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_saves_merge_concurrent_writers_per_node() {
    let t = start(1).await;
    let store = JournalStore::new(&t.cluster);
    assert!(store.load().await.unwrap().is_none());
    let mut j = Journal::new("convert", "openyurt-v1.6");
    j.options.insert("concurrency".into(), json!(5));
    j.token_id = Some("abcdef".into());
    store.save(&mut j).await.unwrap();

    // Two writers start from the same copy and record different nodes.
    let mut a = store.load().await.unwrap().unwrap();
    let mut b = a.clone();
    a.set_phase("worker-1", "nodes/convert", PhaseState::Done, None);
    a.record_created(ObjectRef {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("kube-system".into()),
        name: "yurt-manager".into(),
    });
    b.set_phase(
        "worker-2",
        "nodes/convert",
        PhaseState::Failed,
        Some("kubelet did not come back".into()),
    );
    store.save(&mut a).await.unwrap();
    store
        .save(&mut b)
        .await
        .expect("conflict merged and retried");

    let stored = store.load().await.unwrap().unwrap();
    assert_eq!(
        stored.phase("worker-1", "nodes/convert").unwrap().state,
        PhaseState::Done
    );
    let w2 = stored.phase("worker-2", "nodes/convert").unwrap();
    assert_eq!(w2.state, PhaseState::Failed);
    assert_eq!(w2.last_error.as_deref(), Some("kubelet did not come back"));
    assert!(w2.finished_at.is_some());
    assert_eq!(stored.created_objects.len(), 1);
    assert_eq!(stored.token_id.as_deref(), Some("abcdef"));
    assert_eq!(stored.options["concurrency"], json!(5));

    // Garbage in the ConfigMap is a clear error, not a panic or a silent reset.
    let cms: Api<ConfigMap> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    cms.patch(
        "yurtctl-state",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"state.json": "{not json"}})),
    )
    .await
    .unwrap();
    let e = store.load().await.unwrap_err();
    assert!(
        matches!(
            e,
            ClusterError::Journal(yurtctl::cluster::journal::JournalError::Corrupt { .. })
        ),
        "{e}"
    );
    assert_eq!(store.delete().await.unwrap(), Deleted::Deleted);
    assert!(store.load().await.unwrap().is_none());
    assert_eq!(store.delete().await.unwrap(), Deleted::AlreadyGone);
    t.sim.shutdown().await;
}

/// A journal written by the previous yurtctl (version 1: every node inside `state.json`) is
/// read with its nodes; the first save moves them to the node shards and leaves a run record
/// without them, so a resume or revert after upgrading yurtctl loses nothing. Deleting the
/// journal deletes the shards too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_journal_is_read_and_moved_to_node_shards_on_its_first_save() {
    let t = start(1).await;
    let cms: Api<ConfigMap> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    let v1 = json!({"version": 1, "command": "convert", "profile": "openyurt-v1.6",
        "options": {"concurrency": 5}, "createdObjects": [], "tokenId": "abcdef",
        "nodes": {
            "worker-1": {"nodes/edge": {"state": "done", "updatedAt": "2026-01-01T00:00:00Z"}},
            "worker-2": {"nodes/edge": {"state": "running", "updatedAt": "2026-01-01T00:00:00Z"}}},
        "updatedAt": "2026-01-01T00:00:00Z"});
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "yurtctl-state", "namespace": "kube-system",
            "labels": {"app.kubernetes.io/managed-by": "yurtctl"}},
        "data": {"state.json": serde_json::to_string_pretty(&v1).unwrap()}}))
    .unwrap();
    cms.create(&Default::default(), &cm).await.unwrap();

    let store = JournalStore::new(&t.cluster);
    let mut j = store.load().await.unwrap().unwrap();
    assert_eq!(
        j.phase("worker-1", "nodes/edge").unwrap().state,
        PhaseState::Done
    );
    j.set_phase("worker-2", "nodes/edge", PhaseState::Done, None);
    store.save(&mut j).await.unwrap();

    let record = cms.get("yurtctl-state").await.unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&record.data.unwrap()["state.json"]).unwrap();
    assert_eq!(state["version"], 2);
    assert!(state.get("nodes").is_none(), "{state}");
    assert_eq!(state["tokenId"], "abcdef");
    let shard = cms.get("yurtctl-state-nodes-0").await.unwrap();
    assert_eq!(
        shard.data.as_ref().unwrap().keys().collect::<Vec<_>>(),
        ["worker-1", "worker-2"]
    );
    let again = store.load().await.unwrap().unwrap();
    for w in ["worker-1", "worker-2"] {
        assert_eq!(
            again.phase(w, "nodes/edge").unwrap().state,
            PhaseState::Done,
            "{w}"
        );
    }
    assert_eq!(again.options["concurrency"], json!(5));

    assert_eq!(store.delete().await.unwrap(), Deleted::Deleted);
    assert!(
        cms.get_opt("yurtctl-state-nodes-0")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.load().await.unwrap().is_none());
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_sees_nodes_control_planes_our_objects_jobs_lock_and_journal() {
    let t = start(3).await;
    // Mirror pods appear once the simulated kubelets have read their manifests.
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(t.cluster.client().clone(), "kube-system");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pods
        .get_opt("kube-controller-manager-control-plane-1")
        .await
        .unwrap()
        .is_none()
    {
        assert!(std::time::Instant::now() < deadline, "no kcm mirror pod");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let a = Applier::new(t.cluster.clone(), ApplyOptions::default());
    a.apply(&cm("yurt-hub-cfg", json!({"k": "v"})))
        .await
        .unwrap();
    let g = lock::acquire(&t.cluster, LockOptions::default())
        .await
        .unwrap();
    let mut j = Journal::new("convert", "openyurt-v1.6");
    JournalStore::new(&t.cluster).save(&mut j).await.unwrap();
    let jobs: Api<Job> = Api::namespaced(t.cluster.client().clone(), "kube-system");
    let tpl = serde_json::from_value(json!({"spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "5"]}]}})).unwrap();
    jobs.create(
        &PostParams::default(),
        &NodeJob::new("convert", "worker-1", tpl).to_job("kube-system", Duration::from_secs(30)),
    )
    .await
    .unwrap();

    t.sim.metrics().reset();
    let s = snapshot(&t.cluster, &SnapshotOptions::default())
        .await
        .unwrap();
    let requests = t.sim.metrics().total(Some("yurtctl"), false);
    eprintln!("snapshot: {requests} requests");
    // version, nodes, kube-controller-manager pods, Jobs, lock, journal, one list per kind
    // yurtctl may have created, and a read of each custom kind's CRD (its storage version)
    let kinds = SnapshotOptions::default().managed_kinds;
    let crds = kinds
        .iter()
        .filter(|k| yurtctl::cluster::snapshot::is_custom(k))
        .count();
    let budget = 6 + (kinds.len() + crds) as u64;
    assert!(requests <= budget, "{requests} requests, budget {budget}");
    assert_eq!(s.server_version, "v1.33.1");
    let names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["control-plane-1", "worker-1", "worker-2"]);
    let cp = &s.nodes[0];
    assert!(cp.is_control_plane() && cp.kcm_static_pod);
    assert!(
        cp.taints
            .iter()
            .any(|t| t.key == "node-role.kubernetes.io/control-plane")
    );
    assert!(cp.internal_ip.is_some());
    assert_eq!(cp.kubelet_version, "v1.33.1");
    let w = &s.nodes[1];
    assert!(!w.is_control_plane() && !w.kcm_static_pod && w.ready);
    assert!(
        s.managed_objects
            .iter()
            .any(|o| o.kind == "ConfigMap" && o.name == "yurt-hub-cfg")
    );
    assert_eq!(s.jobs.len(), 1);
    assert_eq!(s.jobs[0].node.as_deref(), Some("worker-1"));
    assert_eq!(s.jobs[0].action.as_deref(), Some("convert"));
    assert_eq!(s.lock.as_ref().unwrap().identity, g.identity());
    assert_eq!(s.journal.as_ref().unwrap().profile, "openyurt-v1.6");
    g.release().await.unwrap();
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_qps_paces_api_calls_and_requests_carry_our_user_agent() {
    let t = start(1).await;
    let opts = ClientOptions {
        kubeconfig: Some(t.sim.kubeconfig_path()),
        qps: 20.0,
        burst: 2,
        ..Default::default()
    };
    let slow = connect_with_env(&opts, &ConfigEnv::default())
        .await
        .unwrap();
    let store = JournalStore::new(&slow);
    t.sim.metrics().reset();
    let begin = std::time::Instant::now();
    for _ in 0..8 {
        store.load().await.unwrap();
    }
    let e = begin.elapsed();
    // The connect probe and the first load use the burst; the rest come at 20/s.
    assert!(e >= Duration::from_millis(250), "{e:?}");
    assert!(e < Duration::from_secs(2), "{e:?}");
    assert_eq!(t.sim.metrics().total(Some("yurtctl"), false), 8);
    t.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_map_pages_through_everything_once() {
    use futures::StreamExt;
    let t = start(1).await;
    let api: Api<ConfigMap> = Api::namespaced(t.cluster.client().clone(), "default");
    let n = 2 * yurtctl::cluster::LIST_PAGE as usize + 7;
    futures::stream::iter(0..n)
        .for_each_concurrent(16, |i| {
            let api = api.clone();
            async move {
                let c: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": format!("cm-{i:05}"), "labels": {"paged": "yes"}}
                }))
                .unwrap();
                api.create(&PostParams::default(), &c).await.unwrap();
            }
        })
        .await;
    let lists_before = t.sim.metrics().count("list", "configmaps");
    let lp = kube::api::ListParams::default().labels("paged=yes");
    let mut names = t
        .cluster
        .list_map(&api, &lp, |c| c.metadata.name)
        .await
        .unwrap();
    assert_eq!(
        t.sim.metrics().count("list", "configmaps") - lists_before,
        3,
        "pages of {}",
        yurtctl::cluster::LIST_PAGE
    );
    let listed = names.len();
    names.sort();
    names.dedup();
    assert_eq!((listed, names.len()), (n, n), "each object exactly once");
    // `None` drops an object
    let even = t
        .cluster
        .list_map(&api, &lp, |c| {
            let name = c.metadata.name?;
            name.ends_with(['0', '2', '4', '6', '8']).then_some(name)
        })
        .await
        .unwrap();
    assert_eq!(even.len(), n.div_ceil(2));
    t.sim.shutdown().await;
}
