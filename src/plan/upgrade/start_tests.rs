use super::*;
use crate::cluster::journal::PhaseState;
use crate::cluster::snapshot::ClusterSnapshot;
use crate::plan::{NODES_CLOUD, NODES_EDGE, PlanError};
use crate::selector::Selector;

fn load(name: &str) -> Option<Profile> {
    Profile::load(name).ok()
}

/// `three()` converted with openyurt-v1.6 (its options recorded as convert records them).
fn converted_v16() -> ClusterSnapshot {
    let mut s = crate::plan::tests::three();
    s.server_version = "v1.34.2".into();
    s.server_minor = "34".into();
    let v16 = load("openyurt-v1.6").unwrap();
    let mut j = Journal::new("convert", "openyurt-v1.6");
    let opts = ConvertOptions {
        profile: "openyurt-v1.6".into(),
        ..crate::plan::tests::opts()
    };
    j.options = opts.journal_record(&ConvertSettings::resolve(&opts, &v16));
    j.set_phase("cp-1", NODES_CLOUD, PhaseState::Done, None);
    for w in ["worker-1", "worker-2"] {
        j.set_phase(w, NODES_EDGE, PhaseState::Done, None);
    }
    s.journal = Some(j);
    for n in &mut s.nodes {
        let edge = if n.name == "cp-1" { "false" } else { "true" };
        n.labels
            .insert("openyurt.io/is-edge-worker".into(), edge.into());
    }
    s
}

/// The journal's record of an upgrade from openyurt-v1.6 to openyurt-v1.7 that stopped.
fn v16_to_v17_unfinished() -> UpgradeRecord {
    UpgradeRecord {
        from_profile: "openyurt-v1.6".into(),
        from_version: "v1.6.1".into(),
        to_profile: "openyurt-v1.7".into(),
        to_version: "v1.7.0".into(),
        finished: false,
        from_options: converted_v16().journal.unwrap().options,
        rolling_back: false,
    }
}

fn to_v17() -> UpgradeOptions {
    UpgradeOptions {
        profile: "openyurt-v1.7".into(),
        ..Default::default()
    }
}

fn decided(s: &ClusterSnapshot, opts: &UpgradeOptions) -> Decision {
    match decide(s, opts, &load) {
        Ok(Upgrade::Move(d)) => *d,
        other => panic!("{other:?}"),
    }
}

fn refused(s: &ClusterSnapshot, opts: &UpgradeOptions) -> String {
    match decide(s, opts, &load) {
        Err(PlanError::Preflight(f)) => f.iter().map(ToString::to_string).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_converted_cluster_upgrades_from_the_release_its_journal_names() {
    let opts = to_v17();
    let d = decided(&converted_v16(), &opts);
    assert_eq!(d.start.from.to_string(), "openyurt-v1.6 (OpenYurt v1.6.1)");
    assert_eq!(d.start.to.to_string(), "openyurt-v1.7 (OpenYurt v1.7.0)");
    assert!(!d.start.resuming);
    assert_eq!(d.to_move.len(), 3);
    assert!(d.moved.is_empty());
    // v1.6 had no NodePool labels: every node gets its pool
    assert_eq!(d.unlabelled.len(), 3);
    assert_eq!(d.kcm, None, "both leave nodelifecycle on");
    assert_eq!(d.target_options.profile, "openyurt-v1.7");
}

#[test]
fn an_unfinished_upgrade_resumes_towards_its_target_and_refuses_another() {
    let opts = to_v17();
    let s = half_upgraded();
    let d = decided(&s, &opts);
    assert!(d.start.resuming);
    assert_eq!(d.start.from.profile, "openyurt-v1.6");
    assert_eq!(d.moved, BTreeSet::from(["worker-1".to_owned()]));
    assert_eq!(
        d.to_move,
        BTreeSet::from(["cp-1".to_owned(), "worker-2".to_owned()])
    );

    let other = UpgradeOptions {
        openyurt_version: Some("v1.7.1".into()),
        ..opts
    };
    let why = refused(&s, &other);
    assert!(
        why.contains("the upgrade to openyurt-v1.7 (OpenYurt v1.7.0) did not finish"),
        "{why}"
    );
}

#[test]
fn a_finished_upgrade_is_where_the_cluster_is() {
    let opts = to_v17();
    let mut s = converted_v16();
    let j = s.journal.as_mut().unwrap();
    j.profile = "openyurt-v1.7".into();
    j.options.remove("openyurtVersion");
    j.upgrade = Some(UpgradeRecord {
        finished: true,
        ..v16_to_v17_unfinished()
    });
    match decide(&s, &opts, &load) {
        Ok(Upgrade::AlreadyThere(r)) => assert_eq!(r.openyurt_version, "v1.7.0"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_canary_selector_moves_only_what_it_selects_and_must_select_something() {
    let mut opts = to_v17();
    opts.selector = Some(Selector::parse("kubernetes.io/hostname=worker-1").unwrap());
    let mut s = converted_v16();
    for n in &mut s.nodes {
        n.labels
            .insert("kubernetes.io/hostname".into(), n.name.clone());
    }
    let d = decided(&s, &opts);
    assert_eq!(d.to_move, BTreeSet::from(["worker-1".to_owned()]));
    assert_eq!(d.nodes.len(), 3, "every node still gets the target's pool");

    opts.selector = Some(Selector::parse("kubernetes.io/hostname=nowhere").unwrap());
    let why = refused(&s, &opts);
    assert!(
        why.contains("selects none of the nodes still to move"),
        "{why}"
    );
}

#[test]
fn the_rollout_controls_order_the_nodes_a_resumed_run_has_left() {
    let mut opts = to_v17();
    let mut s = converted_v16();
    for n in &mut s.nodes {
        if n.name == "worker-2" {
            n.labels.insert("zone".into(), "canary".into());
        }
    }
    opts.rollout.priority = crate::rollout::Priority::parse(&["zone=canary:5"]).unwrap();
    opts.rollout.partition = "1".parse().unwrap();
    let d = decided(&s, &opts);
    assert_eq!(
        d.order.order,
        ["worker-2", "worker-1"],
        "by priority, edge first"
    );
    assert_eq!(d.order.kept, ["cp-1"], "the last of the order stays");
    assert_eq!(d.to_move.len(), 2);

    // a later run of the same upgrade: worker-2 moved, the partition counts it
    let j = s.journal.as_mut().unwrap();
    j.upgrade = Some(v16_to_v17_unfinished());
    j.set_phase("worker-2", UPGRADE_ACTION, PhaseState::Done, None);
    opts.rollout.partition = "0".parse().unwrap();
    opts.pause = true;
    let d = decided(&s, &opts);
    assert!(d.order.order.is_empty(), "--pause moves no node");
    assert_eq!(d.order.later, ["worker-1", "cp-1"]);
    opts.pause = false;
    opts.rollout.canary = Some(1);
    let d = decided(&s, &opts);
    assert_eq!(d.order.order, ["worker-1"]);
    assert_eq!(d.order.later, ["cp-1"]);
}

#[test]
fn the_target_keeps_the_conversions_choices_and_drops_what_it_cannot_take() {
    let legacy = load("legacy-v0.6").unwrap();
    let v16 = load("openyurt-v1.6").unwrap();
    let recorded = ConvertOptions {
        profile: legacy.name.clone(),
        image_repository: Some("registry.example.com/openyurt".into()),
        image_pull_secrets: vec!["mirror".into()],
        images: BTreeMap::from([("yurthub".into(), "mine/yurthub:v0.6.1".into())]),
        features: BTreeSet::from(["deploy-yurttunnel".to_owned()]),
        autonomous_nodes: vec!["worker-1".into()],
        ..crate::plan::tests::opts()
    };
    let o = target_options(&recorded, &UpgradeOptions::default(), &v16);
    assert_eq!(o.profile, "openyurt-v1.6");
    assert_eq!(
        o.image_repository.as_deref(),
        Some("registry.example.com/openyurt")
    );
    assert_eq!(o.image_pull_secrets, ["mirror"]);
    assert!(
        o.images.is_empty(),
        "the old release's images do not carry over"
    );
    assert!(o.features.is_empty(), "v1.6 has no yurt-tunnel");
    assert_eq!(o.autonomous_nodes, ["worker-1"]);
    assert!(crate::plan::check_options(&o, &v16).is_ok());
}

/// `upgrade --rollback`'s options.
fn rolling_back() -> UpgradeOptions {
    UpgradeOptions {
        rollback: true,
        ..Default::default()
    }
}

/// `converted_v16()` half-way through its upgrade to v1.7: the components phase moved the
/// journal to v1.7 with v1.7's options, worker-1 moved, worker-2's move failed, cp-1 untouched.
fn half_upgraded() -> ClusterSnapshot {
    let mut s = converted_v16();
    let j = s.journal.as_mut().unwrap();
    j.upgrade = Some(v16_to_v17_unfinished());
    j.profile = "openyurt-v1.7".into();
    let v17 = load("openyurt-v1.7").unwrap();
    let before = ConvertOptions::from_journal(&j.options).unwrap();
    let now = target_options(&before, &to_v17(), &v17);
    j.options = now.journal_record(&ConvertSettings::resolve(&now, &v17));
    j.set_phase("worker-1", UPGRADE_ACTION, PhaseState::Done, None);
    j.set_phase(
        "worker-2",
        UPGRADE_ACTION,
        PhaseState::Failed,
        Some("x".into()),
    );
    s
}

#[test]
fn a_rollback_returns_the_nodes_the_upgrade_touched_to_the_release_and_options_it_came_from() {
    let rollback = rolling_back();
    let d = decided(&half_upgraded(), &rollback);
    assert_eq!(d.route.kind, super::super::RouteKind::Rollback);
    assert_eq!(d.start.from.to_string(), "openyurt-v1.7 (OpenYurt v1.7.0)");
    assert_eq!(d.start.to.to_string(), "openyurt-v1.6 (OpenYurt v1.6.1)");
    assert_eq!(d.to.name, "openyurt-v1.6");
    assert!(!d.start.resuming, "the first run of the rollback");
    // the options convert recorded for v1.6, not v1.7's
    let recorded = converted_v16().journal.unwrap().options;
    assert_eq!(
        d.target_options,
        rollback_options(&ConvertOptions::from_journal(&recorded).unwrap(), &rollback)
    );
    assert_eq!(d.target_options.profile, "openyurt-v1.6");
    // worker-1 moved and worker-2 was cut short: both go back; cp-1 never moved
    assert_eq!(d.moved, BTreeSet::from(["cp-1".to_owned()]));
    assert_eq!(
        d.to_move,
        BTreeSet::from(["worker-1".to_owned(), "worker-2".to_owned()])
    );
    // the journal's record stays the upgrade's, marked as being rolled back
    let record = d.start.record();
    assert!(record.rolling_back);
    assert_eq!(record.from_profile, "openyurt-v1.6");

    // once it started, an upgrade is refused until the rollback finishes; the rollback resumes
    let mut s = half_upgraded();
    s.journal.as_mut().unwrap().upgrade = Some(record);
    let why = refused(&s, &to_v17());
    assert!(
        why.contains("a rollback to openyurt-v1.6 (OpenYurt v1.6.1) did not finish"),
        "{why}"
    );
    assert!(decided(&s, &rollback).start.resuming);
}

#[test]
fn a_rollback_needs_an_upgrade_with_its_options_recorded() {
    let rollback = rolling_back();
    let why = refused(&converted_v16(), &rollback);
    assert!(why.contains("nothing to roll back"), "{why}");
    // an older yurtctl's upgrade recorded no options to return to
    let mut s = half_upgraded();
    let u = s.journal.as_mut().unwrap().upgrade.as_mut().unwrap();
    u.from_options.clear();
    let why = refused(&s, &rollback);
    assert!(why.contains("does not record the options"), "{why}");
}
