//! Table tests of the components phase's pure parts.

use super::*;

#[test]
fn the_wait_for_components_starts_after_their_readiness_probes_delay() {
    let deployment = |name: &str, delays: &[Option<u64>]| -> DynamicObject {
        let containers: Vec<Value> = delays
            .iter()
            .map(|d| match d {
                Some(d) => json!({"name": "c", "readinessProbe": {"initialDelaySeconds": d}}),
                None => json!({"name": "c"}),
            })
            .collect();
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": containers}}}}))
        .unwrap()
    };
    let objects = vec![
        deployment("yurt-manager", &[Some(60)]),
        deployment("other", &[Some(10), Some(90)]),
        deployment("plain", &[None]),
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "yurt-manager"}, "data": {}}))
        .unwrap(),
    ];
    let minute = Duration::from_secs(60);
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (waited_on, want) in [
        (names(&["yurt-manager"]), 120),
        (names(&["yurt-manager", "other"]), 150),
        (names(&["plain"]), 60),
        (names(&[]), 60),
    ] {
        assert_eq!(
            availability_timeout(&objects, &waited_on, minute),
            Duration::from_secs(want),
            "{waited_on:?}"
        );
    }
}

#[test]
fn bootstrap_kubeconfig_parses() {
    let k = bootstrap_kubeconfig("https://10.0.0.1:6443", "Q0E=", "abcdef.0123456789abcdef");
    let v: Value = serde_saphyr::from_str(&k).unwrap();
    assert_eq!(
        v["clusters"][0]["cluster"]["server"],
        "https://10.0.0.1:6443"
    );
    assert_eq!(v["users"][0]["user"]["token"], "abcdef.0123456789abcdef");
    assert_eq!(v["current-context"], "bootstrap");
}
