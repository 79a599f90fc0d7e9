//! Tests of the schema, JSON patch, merge patch and strategic merge patch.

use serde_json::json;

use super::*;

pub(super) fn deploy() -> BuiltinSchema {
    BuiltinSchema::new("Deployment")
}

fn no_directives(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .all(|(k, v)| !k.starts_with('$') && no_directives(v)),
        Value::Array(a) => a.iter().all(no_directives),
        _ => true,
    }
}

#[test]
fn builtin_schema_table() {
    let map = |k: &'static str| ListStrategy::Map { keys: vec![k] };
    let cases: Vec<(&str, &[&str], ListStrategy)> = vec![
        (
            "Deployment",
            &["spec", "template", "spec", "containers"],
            map("name"),
        ),
        ("Pod", &["spec", "initContainers"], map("name")),
        ("Pod", &["spec", "ephemeralContainers"], map("name")),
        ("Pod", &["spec", "containers", "env"], map("name")),
        ("Pod", &["spec", "volumes"], map("name")),
        (
            "Pod",
            &["spec", "containers", "volumeMounts"],
            map("mountPath"),
        ),
        (
            "Pod",
            &["spec", "containers", "volumeDevices"],
            map("devicePath"),
        ),
        (
            "Pod",
            &["spec", "containers", "ports"],
            map("containerPort"),
        ),
        ("Service", &["spec", "ports"], map("port")),
        ("Pod", &["spec", "imagePullSecrets"], map("name")),
        ("Pod", &["spec", "hostAliases"], map("ip")),
        ("Pod", &["metadata", "ownerReferences"], map("uid")),
        ("Deployment", &["status", "conditions"], map("type")),
        ("Node", &["status", "addresses"], map("type")),
        ("Node", &["spec", "taints"], map("key")),
        (
            "Pod",
            &["spec", "topologySpreadConstraints"],
            map("topologyKey"),
        ),
        ("Pod", &["metadata", "finalizers"], ListStrategy::Set),
        ("MutatingWebhookConfiguration", &["webhooks"], map("name")),
        ("ValidatingWebhookConfiguration", &["webhooks"], map("name")),
        ("ClusterRole", &["rules"], ListStrategy::Atomic),
        ("RoleBinding", &["subjects"], ListStrategy::Atomic),
        ("Pod", &["spec", "containers", "args"], ListStrategy::Atomic),
        (
            "Pod",
            &["spec", "containers", "command"],
            ListStrategy::Atomic,
        ),
        ("Pod", &["spec", "tolerations"], ListStrategy::Atomic),
        (
            "Pod",
            &["spec", "containers", "envFrom"],
            ListStrategy::Atomic,
        ),
        ("Pod", &["status", "addresses"], ListStrategy::Atomic),
        ("EndpointSlice", &["ports"], ListStrategy::Atomic),
        ("Pod", &["spec", "taints"], ListStrategy::Atomic),
    ];
    for (kind, path, want) in cases {
        assert_eq!(
            BuiltinSchema::new(kind).list_strategy(path),
            want,
            "{kind} {path:?}"
        );
    }
    assert!(BuiltinSchema::new("Pod").is_builtin());
    assert!(!CustomResourceSchema.is_builtin());
    assert_eq!(
        CustomResourceSchema.list_strategy(&["spec", "containers"]),
        ListStrategy::Atomic
    );
}

#[test]
fn strategic_merge_patch_table() {
    let dep = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a/x"],
                     "annotations": {"keep": "1"}},
        "spec": {"replicas": 1, "template": {"spec": {
            "containers": [
                {"name": "web", "image": "nginx:1", "args": ["-a", "-b"],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "old", "image": "busybox"}
            ],
            "securityContext": {"runAsUser": 1, "fsGroup": 2}
        }}},
        "status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "x"},
            {"type": "Progressing", "status": "True"}
        ]}
    });
    let ctrs = |v: &Value| v["spec"]["template"]["spec"]["containers"].clone();
    type Check = fn(&Value) -> bool;
    let cases: Vec<(&str, Value, Check)> = vec![
        (
            "containers merged by name: update, add, delete",
            json!({"spec": {"template": {"spec": {"containers": [
             {"name": "web", "image": "nginx:2"},
             {"name": "sidecar", "image": "envoy"},
             {"name": "old", "$patch": "delete"}]}}}}),
            |v| {
                let c = &v["spec"]["template"]["spec"]["containers"];
                c.as_array().unwrap().len() == 2
                    && c[0]["name"] == "web"
                    && c[0]["image"] == "nginx:2"
                    && c[0]["args"] == json!(["-a", "-b"])
                    && c[0]["env"].as_array().unwrap().len() == 2
                    && c[1] == json!({"name": "sidecar", "image": "envoy"})
            },
        ),
        (
            "env merged by name",
            json!({"spec": {"template": {"spec": {"containers": [
             {"name": "web", "env": [{"name": "B", "value": "22"}, {"name": "C", "value": "3"}]}]}}}}),
            |v| {
                v["spec"]["template"]["spec"]["containers"][0]["env"]
                    == json!([
             {"name": "A", "value": "1"}, {"name": "B", "value": "22"}, {"name": "C", "value": "3"}])
            },
        ),
        (
            "$patch: replace replaces the whole list",
            json!({"spec": {"template": {"spec": {"containers": [
             {"$patch": "replace"}, {"name": "only", "image": "x"}]}}}}),
            |v| {
                v["spec"]["template"]["spec"]["containers"]
                    == json!([{"name": "only", "image": "x"}])
            },
        ),
        (
            "atomic list (args) replaced",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "args": ["-c"]}]}}}}),
            |v| v["spec"]["template"]["spec"]["containers"][0]["args"] == json!(["-c"]),
        ),
        (
            "null deletes a map key",
            json!({"metadata": {"labels": {"tier": null, "new": "y"}}}),
            |v| v["metadata"]["labels"] == json!({"app": "web", "new": "y"}),
        ),
        (
            "null for an absent key is a no-op",
            json!({"metadata": {"labels": {"nothere": null}}}),
            |v| v["metadata"]["labels"] == json!({"app": "web", "tier": "front"}),
        ),
        (
            "finalizers are unioned",
            json!({"metadata": {"finalizers": ["b/y", "a/x"]}}),
            |v| v["metadata"]["finalizers"] == json!(["a/x", "b/y"]),
        ),
        (
            "$deleteFromPrimitiveList removes set items",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}}),
            |v| v["metadata"]["finalizers"] == json!([]),
        ),
        (
            "conditions merged by type",
            json!({"status": {"conditions": [{"type": "Available", "status": "True", "reason": null},
                                          {"type": "ReplicaFailure", "status": "False"}]}}),
            |v| {
                v["status"]["conditions"]
                    == json!([
             {"type": "Available", "status": "True"},
             {"type": "Progressing", "status": "True"},
             {"type": "ReplicaFailure", "status": "False"}])
            },
        ),
        (
            "$patch: replace on a map",
            json!({"spec": {"template": {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 5}}}}}),
            |v| v["spec"]["template"]["spec"]["securityContext"] == json!({"runAsUser": 5}),
        ),
        (
            "$patch: delete on a map removes it",
            json!({"spec": {"template": {"spec": {"securityContext": {"$patch": "delete"}}}}}),
            |v| {
                v["spec"]["template"]["spec"]
                    .get("securityContext")
                    .is_none()
                    && v["spec"]["template"]["spec"]["containers"]
                        .as_array()
                        .unwrap()
                        .len()
                        == 2
            },
        ),
        (
            "$retainKeys drops unlisted keys",
            json!({"spec": {"template": {"spec": {"securityContext": {"$retainKeys": ["runAsUser"], "runAsUser": 9}}}}}),
            |v| v["spec"]["template"]["spec"]["securityContext"] == json!({"runAsUser": 9}),
        ),
        (
            "$setElementOrder reorders",
            json!({"spec": {"template": {"spec": {
             "$setElementOrder/containers": [{"name": "old"}, {"name": "web"}],
             "containers": [{"name": "web", "image": "nginx:3"}]}}}}),
            |v| {
                let c = &v["spec"]["template"]["spec"]["containers"];
                c[0]["name"] == "old" && c[1]["name"] == "web" && c[1]["image"] == "nginx:3"
            },
        ),
        (
            "scalar replaced, other fields kept",
            json!({"spec": {"replicas": 3}}),
            |v| v["spec"]["replicas"] == 3 && v["metadata"]["annotations"]["keep"] == "1",
        ),
        (
            "new subtree has directives and nulls stripped",
            json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null,
                                      "x": {"$patch": "delete"}}}}),
            |v| v["spec"]["strategy"] == json!({"type": "Recreate"}),
        ),
    ];
    for (name, patch, check) in cases {
        let out = strategic_merge_patch(&dep, &patch, &deploy())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(check(&out), "{name}: got {out:#}");
        assert!(no_directives(&out), "{name}: directive leaked: {out}");
    }
    // Untouched lists keep their content.
    let out = strategic_merge_patch(&dep, &json!({"spec": {"replicas": 2}}), &deploy()).unwrap();
    assert_eq!(ctrs(&out), ctrs(&dep));

    let svc = json!({"kind": "Service", "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
    let out = strategic_merge_patch(
        &svc,
        &json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}),
        &BuiltinSchema::new("Service"),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}])
    );
}

#[test]
fn strategic_merge_patch_errors() {
    let cr = json!({"apiVersion": "x.io/v1", "kind": "Foo", "spec": {}});
    let err =
        strategic_merge_patch(&cr, &json!({"spec": {"a": 1}}), &CustomResourceSchema).unwrap_err();
    assert!(
        matches!(&err, PatchError::UnsupportedMediaType(m) if m.contains("application/merge-patch+json")),
        "{err:?}"
    );

    let dep = json!({"spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}});
    let bad_cases: Vec<(Value, &str)> = vec![
        (json!([1]), "expected a JSON object"),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            "does not contain declared merge key: name",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}),
            "does not contain declared merge key",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
            "merging lists cannot yet be specified",
        ),
        (json!({"spec": {"$patch": "bogus"}}), "unknown patch type"),
        (
            json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
            "doesn't match retainKeys",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": ["web"]}}}}),
            "expected a list of objects",
        ),
    ];
    for (patch, want) in bad_cases {
        let err = strategic_merge_patch(&dep, &patch, &deploy()).expect_err(&patch.to_string());
        assert!(
            matches!(&err, PatchError::BadRequest(m) if m.contains(want)),
            "{patch}: {err:?}"
        );
    }
}

#[test]
fn json_patch_table() {
    let doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}});
    let ok: Vec<(Value, Value)> = vec![
        (
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2, 3]}}),
        ),
        (
            json!([{"op": "add", "path": "/spec/list/-", "value": 4}]),
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3, 4]}}),
        ),
        (
            json!([{"op": "remove", "path": "/spec/list/0"}]),
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [2, 3]}}),
        ),
        (
            json!([{"op": "replace", "path": "/metadata/labels/a", "value": "9"}]),
            json!({"metadata": {"labels": {"a": "9"}}, "spec": {"list": [1, 2, 3]}}),
        ),
        (
            json!([{"op": "move", "from": "/metadata/labels/a", "path": "/spec/a"}]),
            json!({"metadata": {"labels": {}}, "spec": {"list": [1, 2, 3], "a": "1"}}),
        ),
        (
            json!([{"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"}]),
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "labels": {"a": "1"}}}),
        ),
        (
            json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "remove", "path": "/spec"}]),
            json!({"metadata": {"labels": {"a": "1"}}}),
        ),
    ];
    for (patch, want) in ok {
        assert_eq!(
            json_patch(&doc, &patch).unwrap_or_else(|e| panic!("{patch}: {e}")),
            want,
            "{patch}"
        );
    }
    let unprocessable = [
        json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
        json!([{"op": "remove", "path": "/metadata/missing"}]),
        json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
        json!([{"op": "add", "path": "/spec/list/9", "value": 1}]),
    ];
    for patch in unprocessable {
        let err = json_patch(&doc, &patch).unwrap_err();
        assert!(
            matches!(err, PatchError::Unprocessable(_)),
            "{patch}: {err:?}"
        );
    }
    let malformed = [
        json!({"op": "add", "path": "/a", "value": 1}),
        json!([{"op": "frobnicate", "path": "/a"}]),
        json!([{"op": "add", "value": 1}]),
        json!([{"op": "move", "path": "/a"}]),
        json!("nope"),
    ];
    for patch in malformed {
        let err = json_patch(&doc, &patch).unwrap_err();
        assert!(matches!(err, PatchError::BadRequest(_)), "{patch}: {err:?}");
    }
}

#[test]
fn json_merge_patch_table() {
    let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2]}});
    let cases: Vec<(Value, Value)> = vec![
        (
            json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"list": [1, 2]}}),
        ),
        // Lists are always replaced by merge patch.
        (
            json!({"spec": {"list": [9]}}),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [9]}}),
        ),
        (
            json!({"spec": null}),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
        ),
        (json!({}), doc.clone()),
    ];
    for (patch, want) in cases {
        assert_eq!(json_merge_patch(&doc, &patch).unwrap(), want, "{patch}");
    }
    for patch in [json!([1]), json!("x"), json!(null)] {
        assert!(
            matches!(
                json_merge_patch(&doc, &patch),
                Err(PatchError::BadRequest(_))
            ),
            "{patch}"
        );
    }
}
