//! Tests of label and field selectors: parsing, errors, rendering and matching.

use super::*;
use serde_json::json;

fn labels(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn label_selector_matching_table() {
    let l = labels(json!({"app": "web", "tier": "front", "env": ""}));
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app = web", true),
        ("app=db", false),
        ("app!=db", true),
        ("app!=web", false),
        ("missing!=x", true),
        ("app in (web,db)", true),
        ("app in(db)", false),
        ("app notin (db)", true),
        ("app notin (web)", false),
        ("missing notin (x)", true),
        ("missing in (x)", false),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("! app", false),
        ("app=web,tier=front", true),
        ("app=web, tier=back", false),
        ("env=", true),
        ("env in (,x)", true),
        ("env", true),
        ("  app  in  ( web , db )  ,  !missing  ", true),
    ];
    for (sel, want) in cases {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches(Some(&l)), *want, "selector {sel:?}");
    }
    // No labels at all behaves like an empty map.
    assert!(LabelSelector::parse("a!=b").unwrap().matches(None));
    assert!(!LabelSelector::parse("a").unwrap().matches(None));
    assert!(LabelSelector::parse("").unwrap().is_everything());
    // Values may be the keywords in value position.
    let l2 = labels(json!({"mode": "in"}));
    assert!(
        LabelSelector::parse("mode in (in, notin)")
            .unwrap()
            .matches(Some(&l2))
    );
    assert!(LabelSelector::parse("mode=in").unwrap().matches(Some(&l2)));
}

#[test]
fn a_jobs_status_successful_is_its_succeeded_count() {
    let sel = FieldSelector::parse("status.successful=1").unwrap();
    assert!(sel.matches(&json!({"status": {"succeeded": 1}})));
    assert!(!sel.matches(&json!({"status": {"failed": 1}})));
    let zero = FieldSelector::parse("status.successful=0").unwrap();
    assert!(zero.matches(&json!({"status": {}})), "unset is 0");
}

#[test]
fn label_selector_parse_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "in=x",
            "found 'in', expected: !, identifier, or 'end of string'",
        ),
        (
            "app in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        (
            "app in (a",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        ("app in ()", "values set can't be empty"),
        ("app notin ()", "values set can't be empty"),
        (
            "app in a",
            "unable to parse requirement: found 'a', expected: '('",
        ),
        (
            "app in",
            "unable to parse requirement: found '', expected: '('",
        ),
        (
            "app x",
            "unable to parse requirement: found 'x', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("app=a b", "found 'b', expected: ',' or 'end of string'"),
        ("app=a,", "found '', expected: identifier after ','"),
        (
            ",",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        (
            "a=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "a b=c",
            "unable to parse requirement: found 'b', expected: in, notin",
        ),
        ("-bad=x", "key: Invalid value: \"-bad\""),
        ("a/b/c=x", "key: Invalid value"),
        ("/a=x", "prefix part must be non-empty"),
        (
            "Example.com/a=x",
            "prefix part a lowercase RFC 1123 subdomain",
        ),
        ("a=-x", "values[0][a]: Invalid value: \"-x\""),
        ("a>1", "not supported"),
    ];
    for (sel, want) in cases {
        let err = LabelSelector::parse(sel).expect_err(sel).to_string();
        assert!(
            err.contains(want),
            "selector {sel:?}: got {err:?}, want {want:?}"
        );
    }
    let long = "a".repeat(64);
    assert!(
        LabelSelector::parse(&long)
            .unwrap_err()
            .to_string()
            .contains("no more than 63")
    );
    assert!(LabelSelector::parse(&format!("k={long}")).is_err());
    assert!(LabelSelector::parse(&format!("example.com/{}", "a".repeat(63))).is_ok());
}

#[test]
fn label_selector_from_json() {
    let l = labels(json!({"app": "web", "tier": "front"}));
    let cases: &[(Value, bool)] = &[
        (Value::Null, true),
        (json!({}), true),
        (json!({"matchLabels": {"app": "web"}}), true),
        (json!({"matchLabels": {"app": "db"}}), false),
        (
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]}),
            true,
        ),
        (
            json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}),
            true,
        ),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
            true,
        ),
        (
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
            false,
        ),
    ];
    for (sel, want) in cases {
        let s = LabelSelector::from_json(sel).unwrap();
        assert_eq!(s.matches(Some(&l)), *want, "{sel}");
    }
    assert!(
        LabelSelector::from_json(&json!({}))
            .unwrap()
            .is_everything()
    );
    let errs: &[(Value, &str)] = &[
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "\"Gt\" is not a valid label selector operator",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            "can't be empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "must be empty",
        ),
        (json!({"matchLabels": {"a": 1}}), "must be a string"),
        (
            json!({"matchLabels": {"bad key": "x"}}),
            "key: Invalid value",
        ),
        (json!("app=web"), "expected an object"),
    ];
    for (sel, want) in errs {
        let err = LabelSelector::from_json(sel)
            .expect_err("must fail")
            .to_string();
        assert!(err.contains(want), "{sel}: {err}");
    }
    assert_eq!(
        LabelSelector::from_json(&json!({"matchLabels": {"app": "web"}})).unwrap(),
        LabelSelector::parse("app=web").unwrap()
    );
    let m = labels(json!({"app": "web"}));
    assert!(LabelSelector::from_map(&m).unwrap().matches(Some(&l)));
}

#[test]
fn label_selector_display_roundtrips() {
    let s = LabelSelector::parse("b in (y,x), a=1, !c, d, e notin (z)").unwrap();
    assert_eq!(s.to_string(), "a=1,b in (x,y),!c,d,e notin (z)");
    assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
}

#[test]
fn field_selector_table() {
    let pod = json!({
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"nodeName": "node-a", "unschedulable": true, "priority": 3},
        "status": {"phase": "Running"}
    });
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("metadata.name=web-1", true),
        ("metadata.name==web-1", true),
        ("metadata.name!=web-1", false),
        ("metadata.name=web-2", false),
        ("spec.nodeName=node-a,status.phase=Running", true),
        ("spec.nodeName=node-a,status.phase!=Running", false),
        ("spec.missing=", true),
        ("spec.missing!=", false),
        ("spec.nodeName!=", true),
        ("spec.unschedulable=true", true),
        ("spec.priority=3", true),
        ("metadata.name=web-1,", true),
    ];
    for (sel, want) in cases {
        let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches(&pod), *want, "selector {sel:?}");
    }
    let s = FieldSelector::parse("status.phase!=Failed,metadata.name=x").unwrap();
    assert_eq!(s.fields(), vec!["metadata.name", "status.phase"]);
    assert_eq!(s.requires_exact("metadata.name"), Some("x"));
    assert_eq!(s.requires_exact("status.phase"), None);
}

#[test]
fn field_selector_escapes_and_errors() {
    let obj = json!({"metadata": {"name": "a,b=c\\d"}});
    let s = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").unwrap();
    assert!(s.matches(&obj));
    assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d");
    let errs: &[(&str, &str)] = &[
        (
            "metadata.name",
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
        ),
        ("a=b,c", "can't understand 'c'"),
        (
            r"a=b\x",
            r"invalid field selector: invalid escape sequence: \x",
        ),
        (
            "a=b=c",
            "invalid field selector: unescaped character in value: 61",
        ),
        (r"a=b\", "invalid escape sequence"),
    ];
    for (sel, want) in errs {
        let err = FieldSelector::parse(sel).expect_err(sel).to_string();
        assert!(err.contains(want), "{sel}: {err}");
    }
}
