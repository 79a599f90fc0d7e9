use std::collections::BTreeMap;

use super::*;
use crate::cluster::journal::Journal;
use crate::cluster::snapshot::{JobInfo, ManagedObject, NodeInfo};
use crate::plan::{COMPONENTS, VERIFY};

fn node(name: &str, cp: bool, ready: bool, labels: &[(&str, &str)]) -> NodeInfo {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if cp {
        l.insert(
            "node-role.kubernetes.io/control-plane".into(),
            String::new(),
        );
    }
    NodeInfo {
        name: name.into(),
        labels: l,
        annotations: BTreeMap::new(),
        taints: Vec::new(),
        ready,
        roles: if cp {
            vec!["control-plane".into()]
        } else {
            Vec::new()
        },
        internal_ip: None,
        kubelet_version: "v1.33.1".into(),
        kcm_static_pod: cp,
        ..Default::default()
    }
}

fn snap(nodes: Vec<NodeInfo>, journal: Option<Journal>) -> ClusterSnapshot {
    ClusterSnapshot {
        server_version: "v1.33.1".into(),
        server_major: "1".into(),
        server_minor: "33".into(),
        nodes,
        managed_objects: Vec::new(),
        jobs: Vec::new(),
        lock: None,
        journal,
        pull_secrets: Default::default(),
    }
}

fn opts() -> RevertOptions {
    RevertOptions {
        concurrency: Concurrency::new(10).unwrap(),
        job_timeout: Duration::from_secs(300),
        ..Default::default()
    }
}

fn profile() -> Profile {
    Profile::load(Profile::DEFAULT).unwrap()
}

fn obj(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: ns.map(str::to_owned),
        name: name.into(),
    }
}

const EDGE: (&str, &str) = ("openyurt.io/is-edge-worker", "true");
const CLOUD: (&str, &str) = ("openyurt.io/is-edge-worker", "false");

/// A journal after a successful convert of cp-1 (cloud) and worker-1/2 (edge).
fn converted() -> Journal {
    let mut j = Journal::new("convert", Profile::DEFAULT);
    j.set_phase("cp-1", NODES_CLOUD, PhaseState::Done, None);
    j.set_phase("worker-1", NODES_EDGE, PhaseState::Done, None);
    j.set_phase("worker-2", NODES_EDGE, PhaseState::Done, None);
    j.record_created(obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        "nodepools.apps.openyurt.io",
    ));
    j.record_created(obj(
        "v1",
        "Secret",
        Some("kube-system"),
        "yurtctl-yurthub-bootstrap",
    ));
    j.record_created(obj(
        "apps/v1",
        "Deployment",
        Some("kube-system"),
        "yurt-manager",
    ));
    j.record_created(obj(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        None,
        "yurt-manager",
    ));
    j.record_created(obj(
        "apps.openyurt.io/v1alpha1",
        "YurtStaticSet",
        Some("kube-system"),
        "yurt-hub",
    ));
    j.record_created(obj(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        "yurt-manager",
    ));
    j.record_adopted(obj("v1", "ConfigMap", Some("kube-system"), "yurt-hub-cfg"));
    j
}

fn three(labelled: bool) -> Vec<NodeInfo> {
    type Labels<'a> = &'a [(&'a str, &'a str)];
    let (c, e): (Labels, Labels) = if labelled {
        (&[CLOUD], &[EDGE])
    } else {
        (&[], &[])
    };
    vec![
        node("cp-1", true, true, c),
        node("worker-1", false, true, e),
        node("worker-2", false, true, e),
    ]
}

fn decisions(p: &RevertPlan) -> Vec<(String, Role, RevertAction)> {
    p.nodes
        .iter()
        .map(|n| (n.name.clone(), n.role, n.action))
        .collect()
}

fn d(name: &str, role: Role, action: RevertAction) -> (String, Role, RevertAction) {
    (name.into(), role, action)
}

#[test]
fn node_selection_table() {
    use RevertAction::{AlreadyReverted, Revert, SkipNotReady};
    use Role::{Cloud, Edge};
    let mut failed = Journal::new("convert", Profile::DEFAULT);
    failed.set_phase("worker-1", NODES_EDGE, PhaseState::Done, None);
    failed.set_phase(
        "worker-2",
        NODES_EDGE,
        PhaseState::Failed,
        Some("boom".into()),
    );
    let mut interrupted = Journal::new("convert", Profile::DEFAULT);
    interrupted.set_phase("worker-1", NODES_EDGE, PhaseState::Running, None);
    let mut half_reverted = converted();
    half_reverted.set_phase("worker-1", NODES_EDGE, PhaseState::Pending, None);
    half_reverted.set_phase("worker-1", REVERTED, PhaseState::Done, None);
    // revert removes a node's label once its Job succeeded
    let mut reverted_unlabelled = three(true);
    reverted_unlabelled[1].labels.remove(EDGE.0);
    let mut not_ready = three(true);
    not_ready[2].ready = false;
    let mut jobs_only = snap(three(false), None);
    jobs_only.jobs.push(JobInfo {
        name: "yurtctl-convert-worker-2".into(),
        action: Some("convert".into()),
        node: Some("worker-2".into()),
        state: "Running".into(),
    });
    struct Case {
        name: &'static str,
        snap: ClusterSnapshot,
        nodes: Vec<&'static str>,
        want: Vec<(String, Role, RevertAction)>,
    }
    let cases = vec![
        Case {
            name: "after success: every node",
            snap: snap(three(true), Some(converted())),
            nodes: vec![],
            want: vec![
                d("cp-1", Cloud, Revert),
                d("worker-1", Edge, Revert),
                d("worker-2", Edge, Revert),
            ],
        },
        Case {
            name: "no journal, labels only",
            snap: snap(three(true), None),
            nodes: vec![],
            want: vec![
                d("cp-1", Cloud, Revert),
                d("worker-1", Edge, Revert),
                d("worker-2", Edge, Revert),
            ],
        },
        Case {
            name: "nothing of ours",
            snap: snap(three(false), None),
            nodes: vec![],
            want: vec![],
        },
        Case {
            name: "failed node job: the failed node too",
            snap: snap(three(false), Some(failed)),
            nodes: vec![],
            want: vec![d("worker-1", Edge, Revert), d("worker-2", Edge, Revert)],
        },
        Case {
            name: "ctrl-c: journal says running",
            snap: snap(three(false), Some(interrupted)),
            nodes: vec![],
            want: vec![d("worker-1", Edge, Revert)],
        },
        Case {
            name: "ctrl-c: journal behind, a convert Job exists",
            snap: jobs_only,
            nodes: vec![],
            want: vec![d("worker-2", Cloud, Revert)],
        },
        Case {
            name: "resumed revert: a reverted node is not reverted again",
            snap: snap(three(true), Some(half_reverted.clone())),
            nodes: vec![],
            want: vec![
                d("cp-1", Cloud, Revert),
                d("worker-1", Edge, AlreadyReverted),
                d("worker-2", Edge, Revert),
            ],
        },
        Case {
            name: "resumed revert: a reverted worker without its label is still an edge node",
            snap: snap(reverted_unlabelled, Some(half_reverted.clone())),
            nodes: vec![],
            want: vec![
                d("cp-1", Cloud, Revert),
                d("worker-1", Edge, AlreadyReverted),
                d("worker-2", Edge, Revert),
            ],
        },
        Case {
            name: "--nodes",
            snap: snap(three(true), Some(converted())),
            nodes: vec!["worker-2"],
            want: vec![d("worker-2", Edge, Revert)],
        },
        Case {
            name: "not ready: skipped",
            snap: snap(not_ready, Some(converted())),
            nodes: vec![],
            want: vec![
                d("cp-1", Cloud, Revert),
                d("worker-1", Edge, Revert),
                d("worker-2", Edge, SkipNotReady),
            ],
        },
    ];
    for c in cases {
        let mut o = opts();
        o.nodes = c.nodes.iter().map(|s| s.to_string()).collect();
        let p = plan_revert(&c.snap, &o, &profile()).unwrap();
        assert_eq!(decisions(&p), c.want, "{}", c.name);
        assert_eq!(p.complete, c.nodes.is_empty(), "{}", c.name);
    }
}

#[test]
fn nothing_to_revert_without_journal_or_labels() {
    let p = plan_revert(&snap(three(false), None), &opts(), &profile()).unwrap();
    assert!(p.nothing_to_do());
    // an empty journal left behind is still removed
    let empty = Journal::new("revert", Profile::DEFAULT);
    let p = plan_revert(
        &snap(three(false), Some(empty.clone())),
        &opts(),
        &profile(),
    )
    .unwrap();
    assert!(!p.nothing_to_do());
    assert!(p.delete_journal);
    let mut o = opts();
    o.nodes = vec!["worker-1".into()];
    let p = plan_revert(&snap(three(false), Some(empty)), &o, &profile()).unwrap();
    assert!(
        p.nothing_to_do(),
        "a partial revert never deletes the journal"
    );
    let p = plan_revert(&snap(three(false), Some(converted())), &opts(), &profile()).unwrap();
    assert!(!p.nothing_to_do(), "objects are still there");
}

#[test]
fn objects_are_deleted_webhooks_first_crds_last() {
    let p = plan_revert(&snap(three(true), Some(converted())), &opts(), &profile()).unwrap();
    let kinds: Vec<&str> = p.objects.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ValidatingWebhookConfiguration",
            "YurtStaticSet",
            "Deployment",
            "ClusterRole",
            "Secret",
            "CustomResourceDefinition"
        ]
    );
    assert_eq!(p.adopted_objects.len(), 1, "kept, not deleted");
    assert!(!p.objects.iter().any(|o| o.name == "yurt-hub-cfg"));
}

#[test]
fn partial_revert_keeps_components_and_journal() {
    let mut o = opts();
    o.nodes = vec!["worker-1".into()];
    let p = plan_revert(&snap(three(true), Some(converted())), &o, &profile()).unwrap();
    assert!(p.objects.is_empty() && p.adopted_objects.is_empty());
    assert!(p.phase(COMPONENTS).unwrap().steps.is_empty());
    assert!(!render_text(&p).contains("yurtctl-state"));
}

/// A complete revert that deletes convert's bootstrap token also deletes YurtHub's
/// certificate requests: the token's and those of the nodes' YurtHubs, not the kubelet's.
#[test]
fn yurthub_certificate_requests_go_with_the_bootstrap_token() {
    let mut j = converted();
    j.record_created(obj(
        "v1",
        "Secret",
        Some("kube-system"),
        "bootstrap-token-qn9v53",
    ));
    let p = plan_revert(&snap(three(true), Some(j.clone())), &opts(), &profile()).unwrap();
    let hub = p
        .yurthub_csrs
        .as_ref()
        .expect("a complete revert deletes them");
    let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases = [
        (
            "system:bootstrap:qn9v53",
            groups(&["system:bootstrappers"]),
            true,
        ),
        (
            "system:bootstrap:other1",
            groups(&["system:bootstrappers"]),
            false,
        ),
        (
            "system:node:worker-1",
            groups(&["system:nodes", "openyurt:yurthub"]),
            true,
        ),
        // the kubelet's own requests, and a YurtHub on a node this revert does not name
        ("system:node:worker-1", groups(&["system:nodes"]), false),
        (
            "system:node:elsewhere",
            groups(&["system:nodes", "openyurt:yurthub"]),
            false,
        ),
    ];
    for (user, g, want) in cases {
        assert_eq!(hub.matches(user, &g), want, "{user} {g:?}");
    }
    assert!(render_text(&p).contains("YurtHub's CertificateSigningRequests"));
    // a partial revert keeps them, as it keeps the token
    let mut o = opts();
    o.nodes = vec!["worker-1".into()];
    let p = plan_revert(&snap(three(true), Some(j)), &o, &profile()).unwrap();
    assert_eq!(p.yurthub_csrs, None);
}

#[test]
fn without_journal_labelled_objects_are_deleted_but_not_the_journal() {
    let mut s = snap(three(true), None);
    for (kind, name) in [
        ("ConfigMap", "yurtctl-state"),
        ("ConfigMap", "yurt-hub-cfg"),
    ] {
        s.managed_objects.push(ManagedObject {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: Some("kube-system".into()),
            name: name.into(),
        });
    }
    let p = plan_revert(&s, &opts(), &profile()).unwrap();
    let names: Vec<&str> = p.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["yurt-hub-cfg"]);
}

#[test]
fn kcm_runs_where_the_journal_disabled_nodelifecycle() {
    let mut j = converted();
    j.set_phase("cp-1", KCM, PhaseState::Done, None);
    let p = plan_revert(&snap(three(true), Some(j)), &opts(), &profile()).unwrap();
    let kcm = p.phase(KCM).unwrap();
    assert_eq!(kcm.steps.len(), 1);
    assert_eq!(kcm.steps[0].target, "node/cp-1");
    assert!(
        kcm.steps[0]
            .detail
            .contains("yurtctl-enable-nodelifecycle-cp-1")
    );
}

#[test]
fn bad_input() {
    let mut o = opts();
    o.skip_phases.insert("nodes/convert".into());
    assert!(matches!(
        plan_revert(&snap(three(true), None), &o, &profile()),
        Err(PlanError::Usage(_))
    ));
    let mut o = opts();
    o.nodes = vec!["ghost".into()];
    match plan_revert(&snap(three(true), None), &o, &profile()) {
        Err(PlanError::Preflight(f)) => assert_eq!(
            f,
            [Finding::new(Check::NodeExists, "node ghost does not exist")]
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn skipped_phases_are_marked() {
    let mut o = opts();
    o.skip_phases.insert(VERIFY.into());
    let p = plan_revert(&snap(three(true), Some(converted())), &o, &profile()).unwrap();
    assert!(!p.runs(VERIFY));
    assert!(p.runs(NODES_EDGE));
    assert_eq!(
        p.phases.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        REVERT_PHASES
    );
}

#[test]
fn plan_text_snapshot() {
    let p = plan_revert(&snap(three(true), Some(converted())), &opts(), &profile()).unwrap();
    insta::assert_snapshot!("revert_plan_three_nodes_text", render_text(&p));
}
