use std::collections::BTreeMap;

use super::*;
use crate::plan::upgrade::tests::{refs, rendered};
use crate::plan::upgrade::{NodeOrder, crd_changes, node_files, object_changes, route};

fn load(name: &str) -> Profile {
    Profile::load(name).unwrap()
}

fn node(name: &str, role: Role, pool: &str) -> UpgradeNode {
    UpgradeNode {
        name: name.into(),
        role,
        pool: Some(pool.into()),
    }
}

/// openyurt-v1.6 to openyurt-v1.7 on a control plane and two workers, with two NodePools of
/// the user's to migrate.
fn v16_to_v17() -> UpgradePlan {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let r = route(&v16, None, &v17, None).unwrap();
    let (before, after) = (rendered(&v16, None), rendered(&v17, None));
    let counts = BTreeMap::from([("nodepools.apps.openyurt.io".to_owned(), 2)]);
    let objects = object_changes(&before, &after, &refs(&before), &[], &counts);
    let crds = crd_changes(&before, &after, &counts);
    let files = node_files(&v16, &v17, &r);
    let nodes = [
        node("cp-1", Role::Cloud, "cloud"),
        node("worker-1", Role::Edge, "edge"),
        node("worker-2", Role::Edge, "edge"),
    ];
    let unlabelled = ["cp-1".to_owned(), "worker-1".into(), "worker-2".into()];
    UpgradePlan::new(&UpgradeInputs {
        route: &r,
        to: &v17,
        server_version: "v1.34.2",
        nodes: &nodes,
        objects: &objects,
        crds: &crds,
        node_files: &files,
        kcm: KcmChange::of(&v16, &v17),
        kcm_nodes: &[],
        unlabelled: &unlabelled,
        order: &NodeOrder {
            order: nodes.iter().map(|n| n.name.clone()).collect(),
            budget: 1,
            ..Default::default()
        },
        skip_phases: &Default::default(),
    })
}

fn steps(p: &UpgradePlan, id: &str) -> Vec<String> {
    p.phases
        .iter()
        .find(|ph| ph.id == id)
        .unwrap()
        .steps
        .iter()
        .map(|s| format!("{} {} {}", s.action, s.target, s.detail))
        .collect()
}

#[test]
fn the_plan_names_every_change_before_anything_is_made() {
    let p = v16_to_v17();
    let ids: Vec<&str> = p.phases.iter().map(|ph| ph.id.as_str()).collect();
    assert_eq!(ids, UpgradePhase::IDS);
    let has = |id: &str, words: &str| {
        let s = steps(&p, id);
        assert!(
            s.iter().any(|l| l.contains(words)),
            "{id}: {s:#?}\nshould say: {words}"
        );
    };
    has(
        "preflight",
        "openyurt-v1.6 (OpenYurt v1.6.1) to openyurt-v1.7 (OpenYurt v1.7.0)",
    );
    has("preflight", "node/worker-1 upgrade as edge, NodePool edge");
    has(
        "components",
        "apply configmap/kube-system/yurtctl-yurthub-service create",
    );
    let deploy = steps(&p, "components")
        .into_iter()
        .find(|s| s.starts_with("apply deployment.apps/kube-system/yurt-manager change "))
        .unwrap();
    assert!(deploy.contains("spec.template.spec.containers"), "{deploy}");
    has(
        "components",
        "nodepools.apps.openyurt.io versions v1alpha1 (served), v1beta1 (served, storage) → \
         v1alpha1 (served), v1beta1 (served), v1beta2 (served, storage)",
    );
    has(
        "label-nodes",
        "label node/cp-1 label apps.openyurt.io/nodepool=cloud",
    );
    has(
        "nodes/edge",
        "job node/worker-2 Job yurtctl-upgrade-worker-2: node-servant upgrade",
    );
    has(
        "nodes/edge",
        "files node/worker-1 - <static-pod dir>/yurthub.yaml: the YurtHub static pod",
    );
    has("nodes/cloud", "job node/cp-1 Job yurtctl-upgrade-cp-1");
    has(
        "cleanup",
        "delete yurtstaticset.apps.openyurt.io/kube-system/yurt-hub convert created it",
    );
    has(
        "migrate",
        "customresourcedefinition/nodepools.apps.openyurt.io 2 object(s) written again, stored \
         at v1beta2; status.storedVersions [v1beta2]",
    );
    has("verify", "wait node/worker-2 Ready");
    assert!(
        steps(&p, "kcm").is_empty(),
        "v1.6 and v1.7 both leave nodelifecycle on"
    );
    insta::assert_snapshot!("upgrade_plan_v16_to_v17_text", p.render_text());
}

#[test]
fn from_legacy_the_kcm_phase_gives_nodelifecycle_back_before_its_replacement_goes() {
    let (legacy, v16) = (load("legacy-v0.6"), load("openyurt-v1.6"));
    let r = route(&legacy, None, &v16, None).unwrap();
    let (before, after) = (rendered(&legacy, None), rendered(&v16, None));
    let objects = object_changes(&before, &after, &refs(&before), &[], &BTreeMap::new());
    let p = UpgradePlan::new(&UpgradeInputs {
        route: &r,
        to: &v16,
        server_version: "v1.31.0",
        nodes: &[],
        objects: &objects,
        crds: &[],
        node_files: &[],
        kcm: KcmChange::of(&legacy, &v16),
        kcm_nodes: &["cp-1".to_owned()],
        unlabelled: &[],
        order: &Default::default(),
        skip_phases: &Default::default(),
    });
    assert_eq!(
        steps(&p, "kcm"),
        [
            "job node/cp-1 Job yurtctl-enable-nodelifecycle-cp-1: node-servant enable-nodelifecycle",
            "files node/cp-1 ~ <static-pod dir>/kube-controller-manager.yaml: convert's \
             -nodelifecycle taken out of --controllers",
        ]
    );
    let order: Vec<&str> = p.phases.iter().map(|ph| ph.id.as_str()).collect();
    let at = |id| order.iter().position(|x| *x == id).unwrap();
    assert!(
        at("kcm") < at("cleanup"),
        "yurt-controller-manager goes after: {order:?}"
    );
    assert!(
        steps(&p, "cleanup")
            .iter()
            .any(|s| s.contains("deployment.apps/kube-system/yurt-controller-manager"))
    );
}
