//! Tests of authentication, impersonation and the authorizers.

use super::*;

fn attrs(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes::resource(verb, group, resource, ns, name)
}

#[test]
fn rule_matching_follows_rbac_evaluation_helpers() {
    let rule = json!({"apiGroups": [""], "resources": ["configmaps", "pods/status", "*/scale"], "verbs": ["get", "update"], "resourceNames": ["a"]});
    let cases = [
        (attrs("get", "", "configmaps", "ns", "a"), true),
        (attrs("get", "", "configmaps", "ns", "b"), false),
        // list carries no name, so resourceNames can never allow it
        (attrs("list", "", "configmaps", "ns", ""), false),
        (attrs("update", "", "pods/status", "ns", "a"), true),
        (attrs("update", "", "pods", "ns", "a"), false),
        (
            attrs("update", "apps", "deployments/scale", "ns", "a"),
            false,
        ),
        (attrs("update", "", "deployments/scale", "ns", "a"), true),
        (attrs("delete", "", "configmaps", "ns", "a"), false),
        (attrs("get", "apps", "configmaps", "ns", "a"), false),
    ];
    for (a, want) in cases {
        assert_eq!(rule_allows(&rule, &a), want, "{a:?}");
    }
    let urls = json!({"nonResourceURLs": ["/apis/*", "/version"], "verbs": ["get"]});
    assert!(rule_allows(
        &urls,
        &Attributes::non_resource("get", "/apis/apps/v1")
    ));
    assert!(rule_allows(
        &urls,
        &Attributes::non_resource("get", "/version")
    ));
    assert!(!rule_allows(
        &urls,
        &Attributes::non_resource("get", "/version/x")
    ));
    assert!(!rule_allows(
        &urls,
        &Attributes::non_resource("post", "/version")
    ));
}

#[test]
fn forbidden_messages_read_like_the_apiserver() {
    let sa = UserInfo::service_account("kube-system", "yurt-manager");
    let e = forbidden(&attrs("list", "", "pods", "", ""), &sa, "");
    assert_eq!(
        e.message,
        "pods is forbidden: User \"system:serviceaccount:kube-system:yurt-manager\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
    );
    let e = forbidden(
        &attrs(
            "patch",
            "apps.openyurt.io",
            "yurtstaticsets/status",
            "kube-system",
            "yurt-hub",
        ),
        &sa,
        "",
    );
    assert_eq!(
        e.message,
        "yurtstaticsets.apps.openyurt.io \"yurt-hub\" is forbidden: User \"system:serviceaccount:kube-system:yurt-manager\" cannot patch resource \"yurtstaticsets/status\" in API group \"apps.openyurt.io\" in the namespace \"kube-system\""
    );
    let node = UserInfo::node("edge-1", &[]);
    let e = forbidden(
        &attrs("get", "", "configmaps", "kube-system", "x"),
        &node,
        "no relationship found between node 'edge-1' and this object",
    );
    assert!(e.message.ends_with("in the namespace \"kube-system\": no relationship found between node 'edge-1' and this object"), "{}", e.message);
    assert_eq!(e.code, 403);
}

#[test]
fn subjects_match_users_groups_and_service_accounts() {
    let sa = UserInfo::service_account("kube-system", "yurt-manager");
    let s = |k: &str, n: &str, ns: Option<&str>| {
        let mut v = json!({"kind": k, "name": n});
        if let Some(ns) = ns {
            v["namespace"] = json!(ns);
        }
        v
    };
    assert!(subject_applies(
        &s("ServiceAccount", "yurt-manager", Some("kube-system")),
        &sa,
        ""
    ));
    // a RoleBinding's ServiceAccount subject without namespace means the binding's
    assert!(subject_applies(
        &s("ServiceAccount", "yurt-manager", None),
        &sa,
        "kube-system"
    ));
    assert!(!subject_applies(
        &s("ServiceAccount", "yurt-manager", Some("default")),
        &sa,
        ""
    ));
    assert!(subject_applies(
        &s("Group", "system:serviceaccounts:kube-system", None),
        &sa,
        ""
    ));
    assert!(subject_applies(&s("Group", AUTHENTICATED, None), &sa, ""));
    assert!(!subject_applies(&s("User", "yurt-manager", None), &sa, ""));
    assert_eq!(
        describe_subject(&s("ServiceAccount", "a", None), "ns"),
        "ServiceAccount \"a/ns\""
    );
}
