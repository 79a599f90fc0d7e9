//! Tests of field sets, server-side apply and the ownership updates take.

use serde_json::json;

use super::patch_tests::deploy;
use super::*;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:01:00Z";
const T2: &str = "2024-01-01T00:02:00Z";

fn entries(obj: &Value) -> Vec<Value> {
    managed_fields_of(obj)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn entry<'a>(obj: &'a Value, manager: &str, op: &str) -> Option<&'a Value> {
    managed_fields_of(obj)?
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == op)
}

fn owns(obj: &Value, manager: &str, op: &str, path: &str) -> bool {
    let Some(e) = entry(obj, manager, op) else {
        return false;
    };
    let set = FieldSet::from_fields_v1(&e["fieldsV1"]).unwrap();
    set.iter().any(|p| path_to_string(p) == path)
}

#[test]
fn fields_v1_round_trip() {
    let fv1 = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {"v:\"a/x\"": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
            }}}
        }
    });
    let set = FieldSet::from_fields_v1(&fv1).unwrap();
    assert_eq!(set.to_fields_v1(), fv1);
    let strings: Vec<String> = set.iter().map(|p| path_to_string(p)).collect();
    for want in [
        ".metadata.labels",
        ".metadata.labels.app",
        ".metadata.finalizers[=\"a/x\"]",
        ".spec.replicas",
        ".spec.template.spec.containers[name=\"web\"]",
        ".spec.template.spec.containers[name=\"web\"].image",
        ".spec.template.spec.containers[name=\"web\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
    ] {
        assert!(
            strings.iter().any(|s| s == want),
            "missing {want} in {strings:?}"
        );
    }
    assert!(
        !strings.iter().any(|s| s == ".spec" || s == ".metadata"),
        "{strings:?}"
    );
    assert_eq!(set.len(), 9);
    // Key order inside k: is canonicalised.
    assert_eq!(
        PathElement::decode("k:{\"protocol\":\"TCP\", \"containerPort\":80}")
            .unwrap()
            .encode(),
        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
    );
    assert!(FieldSet::from_fields_v1(&json!({"x:bad": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    assert_eq!(PathElement::decode("i:3").unwrap(), PathElement::Index(3));
}

fn applied_deploy(replicas: i64, labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": labels},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}
    })
}

#[test]
fn apply_create_records_exact_fields_v1() {
    let cfg = applied_deploy(2, json!({"app": "web"}));
    let out = apply(None, &cfg, "kubectl", false, T0, &deploy()).unwrap();
    let mf = entries(&out);
    assert_eq!(mf.len(), 1);
    assert_eq!(
        mf[0],
        json!({
            "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}
            }
        })
    );
    assert_eq!(without_managed_fields(&out), cfg);
}

#[test]
fn apply_same_manager_prunes_fields_it_stopped_applying() {
    let s = deploy();
    let v1 = apply(
        None,
        &applied_deploy(2, json!({"app": "web", "old": "x"})),
        "kubectl",
        false,
        T0,
        &s,
    )
    .unwrap();
    let mut cfg2 = applied_deploy(2, json!({"app": "web"}));
    cfg2["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "web", "image": "nginx:2"}, {"name": "side", "image": "envoy"}]);
    let v2 = apply(Some(&v1), &cfg2, "kubectl", false, T1, &s).unwrap();
    assert_eq!(v2["metadata"]["labels"], json!({"app": "web"}));
    assert!(!owns(&v2, "kubectl", "Apply", ".metadata.labels.old"));
    assert_eq!(entry(&v2, "kubectl", "Apply").unwrap()["time"], T1);
    // Dropping the sidecar from the config removes it from the object.
    let v3 = apply(
        Some(&v2),
        &applied_deploy(2, json!({"app": "web"})),
        "kubectl",
        false,
        T2,
        &s,
    )
    .unwrap();
    assert_eq!(
        v3["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "nginx:1"}])
    );
    // A label someone else also owns survives pruning.
    let mut edited = v3.clone();
    edited["metadata"]["labels"]["team"] = json!("a");
    let v4 = record_update(Some(&v3), edited.clone(), "kubectl-label", T2, None, &s);
    let v5 = apply(
        Some(&v4),
        &applied_deploy(2, json!({"app": "web", "team": "a"})),
        "kubectl",
        false,
        T2,
        &s,
    )
    .unwrap();
    let v6 = apply(
        Some(&v5),
        &applied_deploy(2, json!({"app": "web"})),
        "kubectl",
        false,
        T2,
        &s,
    )
    .unwrap();
    assert_eq!(v6["metadata"]["labels"]["team"], "a");
    assert!(owns(
        &v6,
        "kubectl-label",
        "Update",
        ".metadata.labels.team"
    ));
}

#[test]
fn apply_conflicts_shared_ownership_and_force() {
    let s = deploy();
    let v1 = apply(
        None,
        &applied_deploy(2, json!({"app": "web"})),
        "alice",
        false,
        T0,
        &s,
    )
    .unwrap();
    let bob = |replicas: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                     "metadata": {"name": "web"}, "spec": {"replicas": replicas}})
    };

    let err = apply(Some(&v1), &bob(5), "bob", false, T1, &s).unwrap_err();
    let PatchError::Conflict { message, causes } = err else {
        panic!("want conflict")
    };
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    assert_eq!(
        causes,
        vec![ConflictCause {
            manager: "alice".into(),
            field: ".spec.replicas".into(),
            message: "conflict with \"alice\"".into()
        }]
    );

    // Same value: no conflict, both own it.
    let v2 = apply(Some(&v1), &bob(2), "bob", false, T1, &s).unwrap();
    assert!(owns(&v2, "alice", "Apply", ".spec.replicas"));
    assert!(owns(&v2, "bob", "Apply", ".spec.replicas"));
    assert_eq!(entry(&v2, "bob", "Apply").unwrap()["time"], T1);

    // Force: value changes and ownership moves to bob only.
    let v3 = apply(Some(&v1), &bob(5), "bob", true, T1, &s).unwrap();
    assert_eq!(v3["spec"]["replicas"], 5);
    assert!(owns(&v3, "bob", "Apply", ".spec.replicas"));
    assert!(!owns(&v3, "alice", "Apply", ".spec.replicas"));
    assert!(owns(&v3, "alice", "Apply", ".metadata.labels.app"));
    // Alice re-applying her old value now conflicts with bob.
    let err = apply(
        Some(&v3),
        &applied_deploy(2, json!({"app": "web"})),
        "alice",
        false,
        T2,
        &s,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas"
    );
    // Alice dropping replicas from her config does not remove bob's field.
    let v4 = apply(Some(&v3), &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                      "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}),
                   "alice", false, T2, &s).unwrap();
    assert_eq!(v4["spec"]["replicas"], 5);
}

#[test]
fn apply_multiple_conflicts_message() {
    let s = deploy();
    let v1 = apply(
        None,
        &applied_deploy(2, json!({"app": "web"})),
        "alice",
        false,
        T0,
        &s,
    )
    .unwrap();
    let cfg = applied_deploy(3, json!({"app": "db"}));
    let err = apply(Some(&v1), &cfg, "bob", false, T1, &s).unwrap_err();
    let PatchError::Conflict { message, causes } = err else {
        panic!("want conflict")
    };
    assert_eq!(
        message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .metadata.labels.app\n- .spec.replicas"
    );
    assert_eq!(causes.len(), 2);
    assert_eq!(causes[1].field, ".spec.replicas");
}

#[test]
fn record_update_takes_ownership_then_apply_conflicts() {
    let s = deploy();
    let v1 = apply(
        None,
        &applied_deploy(2, json!({"app": "web"})),
        "kubectl",
        false,
        T0,
        &s,
    )
    .unwrap();
    let mut edited = v1.clone();
    edited["spec"]["replicas"] = json!(5);
    let v2 = record_update(Some(&v1), edited.clone(), "kubectl-edit", T1, None, &s);
    assert_eq!(v2["spec"]["replicas"], 5);
    assert!(owns(&v2, "kubectl-edit", "Update", ".spec.replicas"));
    assert!(!owns(&v2, "kubectl", "Apply", ".spec.replicas"));
    // The Apply entry lost a field but keeps its time; the Update entry is stamped now.
    assert_eq!(entry(&v2, "kubectl", "Apply").unwrap()["time"], T0);
    assert_eq!(entry(&v2, "kubectl-edit", "Update").unwrap()["time"], T1);
    assert_eq!(
        entry(&v2, "kubectl-edit", "Update").unwrap()["apiVersion"],
        "apps/v1"
    );
    // Apply entries sort before Update entries.
    assert_eq!(entries(&v2)[0]["operation"], "Apply");

    let err = apply(
        Some(&v2),
        &applied_deploy(2, json!({"app": "web"})),
        "kubectl",
        false,
        T2,
        &s,
    )
    .unwrap_err();
    assert!(matches!(&err, PatchError::Conflict { .. }));
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas"
    );
    // Re-applying the new value is fine and shares ownership.
    let v3 = apply(
        Some(&v2),
        &applied_deploy(5, json!({"app": "web"})),
        "kubectl",
        false,
        T2,
        &s,
    )
    .unwrap();
    assert!(owns(&v3, "kubectl", "Apply", ".spec.replicas"));
    assert!(owns(&v3, "kubectl-edit", "Update", ".spec.replicas"));
}

#[test]
fn record_update_semantics() {
    let s = BuiltinSchema::new("Pod");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p", "resourceVersion": "1", "labels": {"a": "1"}},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}});
    // Create: every field is owned, with "." on created maps and items.
    let v1 = record_update(None, pod.clone(), "kubectl-create", T0, None, &s);
    let e = entry(&v1, "kubectl-create", "Update").unwrap();
    assert_eq!(
        e["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
            "f:spec": {"f:containers": {".": {}, "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}
        })
    );
    assert!(e.get("subresource").is_none());

    // Status write by the kubelet goes to its own (manager, Update, status) entry.
    let mut st = v1.clone();
    st["status"] = json!({"phase": "Running"});
    let v2 = record_update(Some(&v1), st.clone(), "kubelet", T1, Some("status"), &s);
    let k = entry(&v2, "kubelet", "Update").unwrap();
    assert_eq!(k["subresource"], "status");
    assert_eq!(k["fieldsV1"], json!({"f:status": {"f:phase": {}}}));

    // Removing the only field an entry owned drops the entry; a no-op write changes nothing.
    let mut no_status = v2.clone();
    no_status.as_object_mut().unwrap().remove("status");
    let v3 = record_update(Some(&v2), no_status.clone(), "other", T2, None, &s);
    assert!(entry(&v3, "kubelet", "Update").is_none());
    assert!(
        entry(&v3, "other", "Update").is_none(),
        "pure removals grant nothing"
    );
    let v4 = record_update(Some(&v3), v3.clone(), "noop", T2, None, &s);
    assert_eq!(v4, v3);

    // resourceVersion and other untracked fields are never owned.
    let mut bumped = v3.clone();
    bumped["metadata"]["resourceVersion"] = json!("2");
    assert!(
        entry(
            &record_update(Some(&v3), bumped.clone(), "rv", T2, None, &s),
            "rv",
            "Update"
        )
        .is_none()
    );

    // `managedFields: []` in the request resets ownership.
    let mut reset = v3.clone();
    reset["metadata"]["managedFields"] = json!([]);
    let v5 = record_update(Some(&v3), reset.clone(), "x", T2, None, &s);
    assert!(managed_fields_of(&v5).is_none());
}

#[test]
fn apply_validation() {
    let s = deploy();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"metadata": {"name": "x"}}),
            "apiVersion and kind must be set",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"managedFields": [{}]}}),
            "metadata.managedFields must be nil",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            "omits key field \"name\"",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}),
            "duplicate entries for key [name=\"a\"]",
        ),
        (json!([1]), "must be a JSON object"),
    ];
    for (cfg, want) in cases {
        let err = apply(None, &cfg, "m", false, T0, &s).expect_err(&cfg.to_string());
        assert!(
            matches!(&err, PatchError::BadRequest(m) if m.contains(want)),
            "{cfg}: {err:?}"
        );
    }
    assert!(matches!(
        apply(None, &applied_deploy(1, json!({})), "", false, T0, &s),
        Err(PatchError::BadRequest(_))
    ));
}

#[test]
fn apply_custom_resource_lists_are_atomic() {
    let cfg = json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
                     "spec": {"items": [{"name": "a"}], "finalizers": ["x"]}});
    let out = apply(None, &cfg, "m", false, T0, &CustomResourceSchema).unwrap();
    assert_eq!(
        entry(&out, "m", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:finalizers": {}, "f:items": {}}})
    );
    let cfg2 = json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
                      "spec": {"items": [{"name": "b"}]}});
    let out2 = apply(Some(&out), &cfg2, "m", false, T1, &CustomResourceSchema).unwrap();
    assert_eq!(out2["spec"], json!({"items": [{"name": "b"}]}));
}
