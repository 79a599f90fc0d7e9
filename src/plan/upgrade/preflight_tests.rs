use std::collections::BTreeSet;

use super::*;
use crate::cluster::journal::{Journal, PhaseState};
use crate::cluster::snapshot::ClusterSnapshot;
use crate::plan::tests::{opts, three};
use crate::plan::upgrade::route;
use crate::plan::{Check, NODES_CLOUD, NODES_EDGE, Role};
use crate::render::Profile;

fn load(name: &str) -> Profile {
    Profile::load(name).unwrap()
}

/// `three()` converted with openyurt-v1.6: the control plane as cloud, the workers as edge.
fn converted_v16() -> ClusterSnapshot {
    let mut s = three();
    let mut j = Journal::new("convert", "openyurt-v1.6");
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

fn run(s: &ClusterSnapshot, ignored: &[Check]) -> Result<Vec<UpgradeNode>, Vec<Refusal>> {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let r = route(&v16, None, &v17, None);
    let ignored: BTreeSet<Check> = ignored.iter().copied().collect();
    preflight(s, &v16, &v17, &r, &opts(), &ignored)
}

fn refusals(s: &ClusterSnapshot) -> Vec<String> {
    run(s, &[])
        .expect_err("refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_converted_cluster_moves_every_node_into_the_pool_the_target_needs() {
    let nodes = run(&converted_v16(), &[]).unwrap();
    let got: Vec<(&str, Role, Option<&str>)> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.role, n.pool.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("cp-1", Role::Cloud, Some("cloud")),
            ("worker-1", Role::Edge, Some("edge")),
            ("worker-2", Role::Edge, Some("edge")),
        ]
    );
}

#[test]
fn each_refusal_says_what_is_wrong_and_what_to_do() {
    let mut none = three();
    none.journal = None;
    let mut old = converted_v16();
    old.server_version = "v1.30.2".into();
    old.server_minor = "30".into();
    let mut failed = converted_v16();
    if let Some(j) = &mut failed.journal {
        j.set_phase(
            "worker-2",
            NODES_EDGE,
            PhaseState::Failed,
            Some("timed out".into()),
        );
    }
    let mut foreign = converted_v16();
    if let Some(j) = &mut foreign.journal {
        j.nodes.remove("worker-1");
    }
    let table: [(&ClusterSnapshot, &str); 4] = [
        (&none, "was not converted by yurtctl"),
        (
            &old,
            "Kubernetes v1.30.2 is outside what profile openyurt-v1.7 supports (1.31 to 1.37)",
        ),
        (
            &failed,
            "the last convert did not finish on worker-2 (nodes/edge failed): run `yurtctl convert` again",
        ),
        (
            &foreign,
            "node(s) worker-1 carry openyurt.io/is-edge-worker but yurtctl has no record of converting them",
        ),
    ];
    for (snap, words) in table {
        let got = refusals(snap);
        assert!(
            got.iter().any(|r| r.contains(words)),
            "{got:#?}\nshould say: {words}"
        );
    }
}

#[test]
fn every_refusal_is_reported_at_once_and_only_the_version_can_be_ignored() {
    let mut s = converted_v16();
    s.server_version = "v1.30.2".into();
    s.server_minor = "30".into();
    if let Some(j) = &mut s.journal {
        j.set_phase("worker-2", NODES_EDGE, PhaseState::Running, None);
    }
    assert_eq!(refusals(&s).len(), 2, "{:#?}", refusals(&s));
    let ignored = run(&s, &[Check::KubernetesVersion]).unwrap_err();
    assert_eq!(ignored.len(), 1, "{ignored:#?}");
    assert!(matches!(ignored[0], Refusal::Unfinished { .. }));
}

#[test]
fn no_route_and_pools_that_cannot_be_had_are_refused() {
    let (legacy, v16, v17) = (
        load("legacy-v0.6"),
        load("openyurt-v1.6"),
        load("openyurt-v1.7"),
    );
    let s = converted_v16();
    let r = route(&legacy, None, &v17, None);
    let got = preflight(&s, &legacy, &v17, &r, &opts(), &BTreeSet::new()).unwrap_err();
    assert!(
        got.iter()
            .any(|r| r.to_string().contains("upgrade to one of those first")),
        "{got:#?}"
    );
    // the journal's convert put edge nodes in pools by their zone label: worker-2 has none
    let mut o = opts();
    o.nodepools_from_label = Some("topology.kubernetes.io/zone".into());
    let mut s = converted_v16();
    s.nodes[1]
        .labels
        .insert("topology.kubernetes.io/zone".into(), "zone-a".into());
    let r = route(&v16, None, &v17, None);
    let got = preflight(&s, &v16, &v17, &r, &o, &BTreeSet::new()).unwrap_err();
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0]
            .to_string()
            .contains("node worker-2 has no label topology.kubernetes.io/zone"),
        "{got:#?}"
    );
}
