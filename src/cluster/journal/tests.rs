use super::*;

#[test]
fn merge_keeps_the_newer_entry_per_node_and_phase() {
    let mut a = Journal::new("convert", "openyurt-v1.6");
    a.set_phase("n1", "nodes/convert", PhaseState::Done, None);
    let mut b = Journal::new("convert", "openyurt-v1.6");
    b.set_phase(
        "n2",
        "nodes/convert",
        PhaseState::Failed,
        Some("boom".into()),
    );
    std::thread::sleep(std::time::Duration::from_millis(2));
    b.set_phase(
        "n1",
        "nodes/convert",
        PhaseState::Failed,
        Some("later".into()),
    );
    b.record_created(ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("kube-system".into()),
        name: "x".into(),
    });
    b.resource_version = Some("42".into());
    a.merge_from(&b);
    assert_eq!(
        a.phase("n1", "nodes/convert").unwrap().state,
        PhaseState::Failed
    );
    assert_eq!(
        a.phase("n2", "nodes/convert")
            .unwrap()
            .last_error
            .as_deref(),
        Some("boom")
    );
    assert_eq!(a.created_objects.len(), 1);
    assert_eq!(a.resource_version.as_deref(), Some("42"));
}

#[test]
fn the_run_record_round_trips_without_its_nodes() {
    let mut a = Journal::new("convert", "legacy-v0.6");
    a.options.insert("concurrency".into(), 5.into());
    a.set_phase("n1", "nodes/convert", PhaseState::Running, None);
    let s = serde_json::to_string(&a).unwrap();
    assert!(!s.contains("n1"), "the nodes live in the shards: {s}");
    assert!(!s.contains('\n'), "compact");
    let b: Journal = serde_json::from_str(&s).unwrap();
    assert_eq!((b.options, b.profile), (a.options, a.profile));
    assert!(b.nodes.is_empty());
}

#[test]
fn a_version_1_journal_is_read_with_its_nodes() {
    let v1 = r#"{"version":1,"command":"convert","profile":"openyurt-v1.6","options":{},
        "createdObjects":[],"nodes":{"w1":{"nodes/edge":{"state":"done","updatedAt":"2026-01-01T00:00:00Z"}}},
        "updatedAt":"2026-01-01T00:00:00Z"}"#;
    let j: Journal = serde_json::from_str(v1).unwrap();
    assert_eq!(j.phase("w1", "nodes/edge").unwrap().state, PhaseState::Done);
    assert_eq!(j.node_shards, 0, "laid out on its first save");
}

#[test]
fn a_save_sends_only_the_nodes_that_changed_and_the_record_only_when_it_changed() {
    let mut j = Journal::new("convert", "openyurt-v1.6");
    for i in 0..1200 {
        j.set_phase(&format!("w{i}"), "nodes/edge", PhaseState::Running, None);
    }
    let first = j.take_delta();
    assert_eq!(j.node_shards, 3, "1,200 nodes at {NODES_PER_SHARD} a shard");
    assert_eq!(first.nodes.len(), 1200);
    assert_eq!(first.shards.len(), 3);
    assert!(first.record.is_some(), "a new journal");
    let record = Sent {
        record: first.record.clone(),
    };
    j.sent(&first, record);
    assert!(!j.is_dirty());

    j.set_phase("w7", "nodes/edge", PhaseState::Done, None);
    let next = j.take_delta();
    assert_eq!(next.nodes.keys().collect::<Vec<_>>(), ["w7"]);
    assert_eq!(next.shards.len(), 1);
    let (shard, nodes) = &next.shards[0];
    assert_eq!(*shard, shard_of("w7", 3));
    let phases: BTreeMap<String, PhaseStatus> =
        serde_json::from_str(nodes["w7"].as_str().unwrap()).unwrap();
    assert_eq!(phases["nodes/edge"].state, PhaseState::Done);
    assert!(next.record.is_none(), "the run record did not change");

    // a save that failed or was dropped (Ctrl-C): the node is sent again with the next one
    drop(next);
    j.set_phase("w8", "nodes/edge", PhaseState::Done, None);
    let again = j.take_delta();
    assert_eq!(again.nodes.len(), 2);

    // a node that changed while its save was in flight stays to be saved
    j.set_phase("w8", "nodes/edge", PhaseState::Failed, Some("later".into()));
    j.sent(&again, Sent { record: None });
    assert_eq!(j.take_delta().nodes.keys().collect::<Vec<_>>(), ["w8"]);
}

#[test]
fn a_nodes_shard_is_stable_and_spread() {
    assert_eq!(shard_of("worker-1", 4), shard_of("worker-1", 4));
    assert_eq!(shard_of("anything", 1), 0);
    assert_eq!(shard_of("anything", 0), 0);
    let mut counts = [0usize; 10];
    for i in 0..10_000 {
        counts[shard_of(&format!("edge-{i:05}"), 10) as usize] += 1;
    }
    assert!(
        counts.iter().all(|&c| (800..1200).contains(&c)),
        "{counts:?}"
    );
}
