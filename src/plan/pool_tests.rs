//! NodePools: which pool each node joins, and what refuses a run (profile openyurt-v1.7).

use super::tests::{names, opts, three};
use super::*;

const ZONE: &str = "topology.kubernetes.io/zone";
const POOL_LABEL: &str = "apps.openyurt.io/nodepool";

fn v17() -> Profile {
    Profile::load("openyurt-v1.7").unwrap()
}

/// Three nodes on Kubernetes 1.33; `labels` are (node, key, value) added to them.
fn cluster(labels: &[(&str, &str, &str)]) -> ClusterSnapshot {
    let mut s = three();
    s.server_version = "v1.33.1".into();
    s.server_minor = "33".into();
    for (node, k, v) in labels {
        let n = s.nodes.iter_mut().find(|n| n.name == *node).unwrap();
        n.labels.insert((*k).into(), (*v).into());
    }
    s
}

fn v17_opts() -> ConvertOptions {
    ConvertOptions {
        profile: "openyurt-v1.7".into(),
        ..opts()
    }
}

fn pools(p: &Plan) -> Vec<(&str, Option<&str>)> {
    p.nodes
        .iter()
        .map(|n| (n.name.as_str(), n.pool.as_deref()))
        .collect()
}

#[test]
fn pool_assignment_table() {
    struct Case {
        name: &'static str,
        labels: &'static [(&'static str, &'static str, &'static str)],
        nodepool: Option<&'static str>,
        from_label: Option<&'static str>,
        cloud: Option<&'static str>,
        want: [(&'static str, Option<&'static str>); 3],
    }
    let cases = [
        Case {
            name: "defaults: one edge pool, one cloud pool",
            labels: &[],
            nodepool: None,
            from_label: None,
            cloud: None,
            want: [
                ("cp-1", Some("cloud")),
                ("worker-1", Some("edge")),
                ("worker-2", Some("edge")),
            ],
        },
        Case {
            name: "--nodepool and --cloud-nodepool",
            labels: &[],
            nodepool: Some("site-1"),
            from_label: None,
            cloud: Some("central"),
            want: [
                ("cp-1", Some("central")),
                ("worker-1", Some("site-1")),
                ("worker-2", Some("site-1")),
            ],
        },
        Case {
            name: "--nodepools-from-label: one pool per zone; the control plane's zone is ignored",
            labels: &[
                ("cp-1", ZONE, "zone-c"),
                ("worker-1", ZONE, "zone-a"),
                ("worker-2", ZONE, "zone-b"),
            ],
            nodepool: None,
            from_label: Some(ZONE),
            cloud: None,
            want: [
                ("cp-1", Some("cloud")),
                ("worker-1", Some("zone-a")),
                ("worker-2", Some("zone-b")),
            ],
        },
        Case {
            name: "a node already in the pool it would join",
            labels: &[("worker-1", POOL_LABEL, "edge")],
            nodepool: None,
            from_label: None,
            cloud: None,
            want: [
                ("cp-1", Some("cloud")),
                ("worker-1", Some("edge")),
                ("worker-2", Some("edge")),
            ],
        },
    ];
    for c in cases {
        let mut o = v17_opts();
        o.nodepool = c.nodepool.map(str::to_owned);
        o.nodepools_from_label = c.from_label.map(str::to_owned);
        o.cloud_nodepool = c.cloud.map(str::to_owned);
        let p = plan_convert(&cluster(c.labels), &o, &v17())
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(pools(&p), c.want, "{}", c.name);
        let mut want_pools: Vec<&str> = c.want.iter().filter_map(|(_, p)| *p).collect();
        want_pools.sort();
        want_pools.dedup();
        let applied: Vec<String> = p
            .phase(COMPONENTS)
            .unwrap()
            .steps
            .iter()
            .filter_map(|s| s.target.strip_prefix("nodepool/").map(str::to_owned))
            .collect();
        assert_eq!(
            applied, want_pools,
            "{}: the plan applies each pool once",
            c.name
        );
        let label = &p.phase(LABEL_NODES).unwrap().steps[1];
        assert_eq!(label.target, "node/worker-1");
        assert!(
            label
                .detail
                .contains(&format!("{POOL_LABEL}={}", c.want[1].1.unwrap())),
            "{}: {label:?}",
            c.name
        );
    }
}

#[test]
fn nodes_that_cannot_join_their_pool_are_preflight_findings() {
    struct Case {
        name: &'static str,
        labels: &'static [(&'static str, &'static str, &'static str)],
        from_label: Option<&'static str>,
        cloud: Option<&'static str>,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "a worker without the grouping label",
            labels: &[("worker-1", ZONE, "zone-a")],
            from_label: Some(ZONE),
            cloud: None,
            want: &["node worker-2 has no label topology.kubernetes.io/zone"],
        },
        Case {
            name: "a label value that is no NodePool name",
            labels: &[("worker-1", ZONE, "Zone_A"), ("worker-2", ZONE, "zone-b")],
            from_label: Some(ZONE),
            cloud: None,
            want: &[
                "node worker-1: topology.kubernetes.io/zone=Zone_A is not a valid NodePool name",
            ],
        },
        Case {
            name: "a node in another pool already",
            labels: &[("worker-2", POOL_LABEL, "old-site")],
            from_label: None,
            cloud: None,
            want: &[
                "node worker-2 is in NodePool old-site (apps.openyurt.io/nodepool=old-site), not edge",
            ],
        },
        Case {
            name: "the cloud pool is also an edge pool",
            labels: &[],
            from_label: None,
            cloud: Some("edge"),
            want: &["NodePool edge would hold edge and cloud nodes (cp-1 and worker-1)"],
        },
    ];
    for c in cases {
        let mut o = v17_opts();
        o.nodepools_from_label = c.from_label.map(str::to_owned);
        o.cloud_nodepool = c.cloud.map(str::to_owned);
        let Err(PlanError::Preflight(f)) = plan_convert(&cluster(c.labels), &o, &v17()) else {
            panic!("{}: expected findings", c.name)
        };
        assert_eq!(f.len(), c.want.len(), "{}: {f:?}", c.name);
        for (got, want) in f.iter().zip(c.want) {
            assert_eq!(got.check, Check::NodePool, "{}", c.name);
            assert!(got.message.starts_with(want), "{}: {}", c.name, got.message);
        }
    }
}

#[test]
fn pool_flags_need_a_profile_with_pools_and_exclude_each_other() {
    let mut o = opts();
    o.nodepool = Some("site-1".into());
    let Err(PlanError::Usage(m)) = check_options(&o, &Profile::load("openyurt-v1.6").unwrap())
    else {
        panic!("openyurt-v1.6 has no NodePools")
    };
    assert!(
        m.starts_with("--nodepool: profile openyurt-v1.6 puts nodes in no NodePool"),
        "{m}"
    );
    let mut o = v17_opts();
    o.nodepool = Some("site-1".into());
    o.nodepools_from_label = Some(ZONE.into());
    let Err(PlanError::Usage(m)) = check_options(&o, &v17()) else {
        panic!("one way to name the edge pools")
    };
    assert!(m.contains("exclude each other"), "{m}");
    o.nodepools_from_label = None;
    o.edge_nodes = names(&["worker-1"]);
    assert!(check_options(&o, &v17()).is_ok());
}
