use std::collections::BTreeMap;

use super::*;
use crate::cluster::journal::Journal;

fn node(name: &str, control_plane: bool, ready: bool) -> NodeInfo {
    let mut labels = BTreeMap::new();
    if control_plane {
        labels.insert(
            "node-role.kubernetes.io/control-plane".into(),
            String::new(),
        );
    }
    NodeInfo {
        name: name.into(),
        labels,
        annotations: BTreeMap::new(),
        taints: Vec::new(),
        ready,
        roles: if control_plane {
            vec!["control-plane".into()]
        } else {
            Vec::new()
        },
        internal_ip: None,
        kubelet_version: "v1.33.1".into(),
        kcm_static_pod: control_plane,
        ..Default::default()
    }
}

fn snap(nodes: Vec<NodeInfo>) -> ClusterSnapshot {
    ClusterSnapshot {
        server_version: "v1.33.1".into(),
        server_major: "1".into(),
        server_minor: "33".into(),
        nodes,
        managed_objects: Vec::new(),
        jobs: Vec::new(),
        lock: None,
        journal: None,
        pull_secrets: Default::default(),
    }
}

pub(super) fn three() -> ClusterSnapshot {
    snap(vec![
        node("cp-1", true, true),
        node("worker-1", false, true),
        node("worker-2", false, true),
    ])
}

pub(super) fn opts() -> ConvertOptions {
    ConvertOptions {
        profile: Profile::DEFAULT.into(),
        concurrency: Concurrency::new(10).unwrap(),
        job_timeout: Duration::from_secs(300),
        token_ttl: Duration::from_secs(6 * 3600),
        ..Default::default()
    }
}

pub(super) fn profile() -> Profile {
    Profile::load(Profile::DEFAULT).unwrap()
}

fn roles(p: &Plan) -> Vec<(String, Role, NodeAction)> {
    p.nodes
        .iter()
        .map(|n| (n.name.clone(), n.role, n.action))
        .collect()
}

pub(super) fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn node_selection_table() {
    use NodeAction::Convert as C;
    use Role::{Cloud, Edge};
    struct Case {
        name: &'static str,
        cloud: &'static [&'static str],
        edge: &'static [&'static str],
        all_edge: bool,
        want: Vec<(&'static str, Role, NodeAction)>,
    }
    let cases = [
        Case {
            name: "default: control plane cloud, workers edge",
            cloud: &[],
            edge: &[],
            all_edge: false,
            want: vec![
                ("cp-1", Cloud, C),
                ("worker-1", Edge, C),
                ("worker-2", Edge, C),
            ],
        },
        Case {
            name: "--all-edge is the default made explicit",
            cloud: &[],
            edge: &[],
            all_edge: true,
            want: vec![
                ("cp-1", Cloud, C),
                ("worker-1", Edge, C),
                ("worker-2", Edge, C),
            ],
        },
        Case {
            name: "--cloud-nodes takes a worker to the cloud",
            cloud: &["worker-2"],
            edge: &[],
            all_edge: false,
            want: vec![
                ("cp-1", Cloud, C),
                ("worker-1", Edge, C),
                ("worker-2", Cloud, C),
            ],
        },
        Case {
            name: "--edge-nodes: only those are edge, others left alone",
            cloud: &[],
            edge: &["worker-1"],
            all_edge: false,
            want: vec![("cp-1", Cloud, C), ("worker-1", Edge, C)],
        },
        Case {
            name: "a control plane named edge is edge",
            cloud: &[],
            edge: &["cp-1"],
            all_edge: false,
            want: vec![("cp-1", Edge, C)],
        },
    ];
    for c in cases {
        let mut o = opts();
        o.cloud_nodes = names(c.cloud);
        o.edge_nodes = names(c.edge);
        o.all_edge = c.all_edge;
        let p = plan_convert(&three(), &o, &profile()).unwrap();
        let want: Vec<_> = c
            .want
            .into_iter()
            .map(|(n, r, a)| (n.to_string(), r, a))
            .collect();
        assert_eq!(roles(&p), want, "{}", c.name);
    }
}

#[test]
fn usage_errors() {
    let cases: Vec<(&str, ConvertOptions)> = vec![
        ("both", {
            let mut o = opts();
            o.cloud_nodes = names(&["worker-1"]);
            o.edge_nodes = names(&["worker-1"]);
            o
        }),
        ("all-edge with edge-nodes", {
            let mut o = opts();
            o.all_edge = true;
            o.edge_nodes = names(&["worker-1"]);
            o
        }),
        ("unknown phase", {
            let mut o = opts();
            o.skip_phases.insert("nodes".into());
            o
        }),
        ("autonomous cloud node", {
            let mut o = opts();
            o.cloud_nodes = names(&["worker-1"]);
            o.autonomous_nodes = names(&["worker-1"]);
            o
        }),
        ("token too short to join", {
            let mut o = opts();
            o.token_ttl = Duration::from_secs(60);
            o
        }),
    ];
    for (name, o) in cases {
        assert!(
            matches!(
                plan_convert(&three(), &o, &profile()),
                Err(PlanError::Usage(_))
            ),
            "{name}"
        );
    }
}

#[test]
fn minor_from_git_version_and_plus_suffix() {
    let mut s = three();
    s.server_minor = "33+".into();
    assert!(plan_convert(&s, &opts(), &profile()).is_ok());
    s.server_minor = String::new();
    s.server_version = "v1.32.0-eks".into();
    assert!(plan_convert(&s, &opts(), &profile()).is_ok());
}

#[test]
fn converted_and_not_ready_nodes_are_skipped() {
    let mut s = three();
    // worker-1: labelled and journaled → already converted
    s.nodes[1]
        .labels
        .insert("openyurt.io/is-edge-worker".into(), "true".into());
    // worker-2: NotReady
    s.nodes[2].ready = false;
    // cp-1: labelled but the journal says its Job failed → converted again
    s.nodes[0]
        .labels
        .insert("openyurt.io/is-edge-worker".into(), "false".into());
    let mut j = Journal::new("convert", Profile::DEFAULT);
    j.set_phase("worker-1", NODES_EDGE, PhaseState::Done, None);
    j.set_phase("cp-1", NODES_CLOUD, PhaseState::Failed, Some("boom".into()));
    s.journal = Some(j);
    let p = plan_convert(&s, &opts(), &profile()).unwrap();
    assert_eq!(
        roles(&p),
        vec![
            ("cp-1".into(), Role::Cloud, NodeAction::Convert),
            ("worker-1".into(), Role::Edge, NodeAction::AlreadyConverted),
            ("worker-2".into(), Role::Edge, NodeAction::SkipNotReady),
        ]
    );
    assert!(!p.nothing_to_do());
    assert!(job_steps(&p, NODES_EDGE).is_empty());
    assert_eq!(job_steps(&p, NODES_CLOUD).len(), 1);
}

#[test]
fn label_without_journal_is_not_converted() {
    let mut s = three();
    s.nodes[1]
        .labels
        .insert("openyurt.io/is-edge-worker".into(), "true".into());
    let p = plan_convert(&s, &opts(), &profile()).unwrap();
    assert_eq!(p.nodes[1].action, NodeAction::Convert);
}

#[test]
fn everything_converted_is_nothing_to_do() {
    let mut s = three();
    let mut j = Journal::new("convert", Profile::DEFAULT);
    for n in &mut s.nodes {
        n.labels
            .insert("openyurt.io/is-edge-worker".into(), "true".into());
        let phase = if n.is_control_plane() {
            NODES_CLOUD
        } else {
            NODES_EDGE
        };
        j.set_phase(&n.name, phase, PhaseState::Done, None);
    }
    s.journal = Some(j);
    let p = plan_convert(&s, &opts(), &profile()).unwrap();
    assert!(p.nothing_to_do());
    assert!(p.phase(COMPONENTS).unwrap().steps.is_empty());
}

#[test]
fn skip_phases_mark_phases() {
    let mut o = opts();
    o.skip_phases.insert(VERIFY.into());
    o.skip_phases.insert(NODES_CLOUD.into());
    let p = plan_convert(&three(), &o, &profile()).unwrap();
    let ids: Vec<_> = p.phases.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, CONVERT_PHASES);
    assert!(!p.runs(VERIFY) && !p.runs(NODES_CLOUD) && p.runs(NODES_EDGE));
}

#[test]
fn legacy_profile_plans_kcm_jobs() {
    let legacy = Profile::load("legacy-v0.6").unwrap();
    let mut s = three();
    s.server_version = "v1.21.0".into();
    s.server_minor = "21".into();
    let p = plan_convert(&s, &opts(), &legacy).unwrap();
    let kcm = job_steps(&p, KCM);
    assert_eq!(kcm.len(), 1);
    assert_eq!(kcm[0].target, "node/cp-1");
    let files = &p.phase(KCM).unwrap().steps[1];
    assert_eq!(files.action, "files");
    assert!(
        files.detail.contains("kube-controller-manager.yaml"),
        "{files:?}"
    );
    // without a kube-controller-manager static pod: a finding, unless kcm is skipped
    for n in &mut s.nodes {
        n.kcm_static_pod = false;
    }
    assert!(matches!(
        plan_convert(&s, &opts(), &legacy),
        Err(PlanError::Preflight(_))
    ));
    let mut o = opts();
    o.skip_phases.insert(KCM.into());
    assert!(plan_convert(&s, &o, &legacy).is_ok());
}

#[test]
fn plan_for_three_nodes() {
    let p = plan_convert(&three(), &opts(), &profile()).unwrap();
    insta::assert_json_snapshot!("plan_three_nodes", p);
    insta::assert_snapshot!("plan_three_nodes_text", render_text(&p));
}

fn legacy_snap() -> ClusterSnapshot {
    let mut s = three();
    s.server_version = "v1.20.15".into();
    s.server_minor = "20".into();
    s
}

#[test]
fn nodelifecycle_follows_the_profile_and_the_flag() {
    let legacy = Profile::load("legacy-v0.6").unwrap();
    let mut done = Journal::new("convert", "legacy-v0.6");
    done.set_phase("cp-1", KCM, PhaseState::Done, None);
    for (name, profile, snap, flag, want) in [
        (
            "legacy disables it",
            &legacy,
            legacy_snap(),
            None,
            vec!["cp-1"],
        ),
        (
            "legacy, turned off",
            &legacy,
            legacy_snap(),
            Some(false),
            vec![],
        ),
        ("default leaves it", &profile(), three(), None, vec![]),
        (
            "default, turned on",
            &profile(),
            three(),
            Some(true),
            vec!["cp-1"],
        ),
        (
            "already done by an earlier run",
            &legacy,
            ClusterSnapshot {
                journal: Some(done.clone()),
                ..legacy_snap()
            },
            None,
            vec![],
        ),
    ] {
        let mut o = opts();
        o.profile = profile.name.clone();
        o.disable_nodelifecycle = flag;
        let p = plan_convert(&snap, &o, profile).unwrap();
        assert_eq!(p.kcm_nodes, names(&want), "{name}");
        assert_eq!(job_steps(&p, KCM).len(), want.len(), "{name}");
    }
}

#[test]
fn a_pending_kcm_change_is_something_to_do() {
    let legacy = Profile::load("legacy-v0.6").unwrap();
    let mut j = Journal::new("convert", "legacy-v0.6");
    for n in ["cp-1", "worker-1", "worker-2"] {
        let phase = if n == "cp-1" { NODES_CLOUD } else { NODES_EDGE };
        j.set_phase(n, phase, PhaseState::Done, None);
    }
    let mut s = legacy_snap();
    for n in &mut s.nodes {
        n.labels
            .insert(legacy.labels.edge_worker.key.clone(), "true".into());
    }
    s.journal = Some(j.clone());
    let mut o = opts();
    o.profile = legacy.name.clone();
    let p = plan_convert(&s, &o, &legacy).unwrap();
    assert!(
        p.nodes
            .iter()
            .all(|n| n.action == NodeAction::AlreadyConverted)
    );
    assert!(
        !p.nothing_to_do(),
        "kube-controller-manager still needs its change"
    );
    j.set_phase("cp-1", KCM, PhaseState::Done, None);
    s.journal = Some(j);
    assert!(plan_convert(&s, &o, &legacy).unwrap().nothing_to_do());
    // a manifest rewritten since (a kubeadm upgrade) runs nodelifecycle again: done again
    s.nodes[0].kcm_controllers = Some("*,bootstrapsigner".into());
    assert_eq!(plan_convert(&s, &o, &legacy).unwrap().kcm_nodes, ["cp-1"]);
    s.nodes[0].kcm_controllers = Some("-nodelifecycle,*".into());
    assert!(plan_convert(&s, &o, &legacy).unwrap().nothing_to_do());
}

#[test]
fn autonomy_goes_to_the_named_edge_nodes_only() {
    let mut o = opts();
    let all = plan_convert(&three(), &o, &profile()).unwrap();
    let autonomous = |p: &Plan| {
        p.nodes
            .iter()
            .filter(|n| n.autonomous)
            .map(|n| n.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(autonomous(&all), names(&["worker-1", "worker-2"]));
    o.autonomous_nodes = names(&["worker-2"]);
    let some = plan_convert(&three(), &o, &profile()).unwrap();
    assert_eq!(autonomous(&some), names(&["worker-2"]));
    let label = &some.phase(LABEL_NODES).unwrap().steps;
    assert!(!label[1].detail.contains("annotate"), "{label:?}");
    assert!(label[2].detail.contains("annotate"), "{label:?}");
}

#[test]
fn option_errors_name_what_is_wrong() {
    let legacy = Profile::load("legacy-v0.6").unwrap();
    type Tweak = fn(&mut ConvertOptions);
    let cases: [(&str, Tweak, bool, &str); 8] = [
        (
            "unknown feature",
            |o| {
                o.features.insert("deploy-yurttunnel".into());
            },
            false,
            "--deploy-yurttunnel",
        ),
        (
            "unknown image component",
            |o| {
                o.images.insert("yurt-tunnel".into(), "x:1".into());
            },
            false,
            "no component \"yurt-tunnel\"",
        ),
        (
            "another OpenYurt minor",
            |o| o.openyurt_version = Some("v1.5.0".into()),
            false,
            "v1.5.0",
        ),
        (
            "autonomous cloud node",
            |o| o.autonomous_nodes = vec!["cp-1".into()],
            true,
            "cp-1",
        ),
        (
            "autonomous ghost",
            |o| o.autonomous_nodes = vec!["ghost".into()],
            true,
            "ghost",
        ),
        (
            "wrong provider",
            |o| o.provider = Some(Provider::Minikube),
            true,
            "not minikube",
        ),
        (
            "not ready, all required",
            |o| o.require_all_ready = true,
            true,
            "worker-2 is NotReady",
        ),
        (
            "no kcm static pod",
            |o| o.disable_nodelifecycle = Some(true),
            true,
            "no kube-controller-manager static pod",
        ),
    ];
    for (name, tweak, preflight, want) in cases {
        let mut s = three();
        s.nodes[2].ready = false;
        for n in &mut s.nodes {
            n.annotations.insert(
                "kubeadm.alpha.kubernetes.io/cri-socket".into(),
                "unix:///run/containerd/containerd.sock".into(),
            );
        }
        if name == "no kcm static pod" {
            s.nodes[0].kcm_static_pod = false;
        }
        let mut o = opts();
        tweak(&mut o);
        let e = plan_convert(&s, &o, &profile()).unwrap_err();
        assert_eq!(
            matches!(e, PlanError::Preflight(_)),
            preflight,
            "{name}: {e}"
        );
        assert!(e.to_string().contains(want), "{name}: {e}");
    }
    // the legacy profile knows its optional components and its image keys
    let mut o = opts();
    o.profile = legacy.name.clone();
    o.features.insert("deploy-yurttunnel".into());
    o.images
        .insert("yurt-tunnel-agent".into(), "x/agent:1".into());
    o.openyurt_version = Some("v0.6.0".into());
    assert!(plan_convert(&legacy_snap(), &o, &legacy).is_ok());
    assert_eq!(
        ConvertSettings::resolve(&o, &legacy).images["yurthub"],
        "openyurt/yurthub:v0.6.0"
    );
    assert_eq!(
        ConvertSettings::resolve(&o, &legacy).images["yurt-tunnel-agent"],
        "x/agent:1"
    );
    assert_eq!(
        ConvertSettings::resolve(&o, &legacy).images["yurt-app-manager"],
        "openyurt/yurt-app-manager:v0.4.0"
    );
}

/// The `job` steps of phase `id` (each node Job also has a `files` step).
fn job_steps<'a>(p: &'a Plan, id: &str) -> Vec<&'a Step> {
    p.phase(id)
        .unwrap()
        .steps
        .iter()
        .filter(|s| s.action == "job")
        .collect()
}

#[test]
fn the_journal_records_the_servant_image_the_run_used_and_reads_its_options_back() {
    let profile = profile();
    let mut o = opts();
    o.skip_phases.insert(KCM.into());
    o.ignore_preflight_errors.insert(Check::Provider);
    o.provider = Some(Provider::Kind);
    o.job_timeout = Duration::from_secs(321);
    o.images.insert("yurthub".into(), "x/hub:1".into());
    let settings = ConvertSettings::resolve(&o, &profile);
    let record = o.journal_record(&settings);
    // the keys are the journal's contract
    assert_eq!(record["jobTimeout"], "321s");
    assert_eq!(record["provider"], "kind");
    assert_eq!(record["ignorePreflightErrors"][0], "Provider");
    // without --servant-image the profile's servant, which revert then runs too
    assert_eq!(record["servantImage"], profile.images["servant"].as_str());
    let back = ConvertOptions::from_journal(&record).expect("readable");
    assert_eq!(
        back,
        ConvertOptions {
            servant_image: Some(settings.servant_image.clone()),
            ..o.clone()
        }
    );
    // a journal written before the record was typed: the keys it lacks take their defaults,
    // and a servant image it did not record is None (revert falls back to the profile's)
    let older: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        r#"{"profile": "openyurt-v1.6", "servantImage": null, "concurrency": 5}"#,
    )
    .unwrap();
    let back = ConvertOptions::from_journal(&older).expect("readable");
    assert_eq!((back.servant_image, back.concurrency.get()), (None, 5));
    // a record this yurtctl cannot read is not guessed at
    let bad: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"jobTimeout": "ten minutes"}"#).unwrap();
    assert_eq!(ConvertOptions::from_journal(&bad), None);
}

#[test]
fn only_node_phases_have_a_role() {
    assert_eq!(Role::of_phase(NODES_EDGE), Some(Role::Edge));
    assert_eq!(Role::of_phase(NODES_CLOUD), Some(Role::Cloud));
    for other in [KCM, VERIFY, PREFLIGHT, "nodes/other"] {
        assert_eq!(Role::of_phase(other), None, "{other}");
    }
}
