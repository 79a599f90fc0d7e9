//! RBAC: rules and subjects matched against the Roles and bindings in the store, the allow
//! reasons and the rules a review lists, and the bootstrap policy. Rule matching and the allow
//! reasons from kubernetes/kubernetes v1.33 `plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `pkg/apis/rbac/v1/evaluation_helpers.go`, `pkg/registry/rbac/validation/rule.go`
//! (`appliesTo`, `describeSubject`, binding describers).

use serde_json::{Value, json};

use crate::api::Api;
use crate::api::store::Filter;

use super::*;

pub(super) fn subject_applies(subject: &Value, user: &UserInfo, binding_ns: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or("");
    match subject["kind"].as_str().unwrap_or("") {
        "User" => user.name == name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            let ns = subject["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_ns);
            user.name == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

pub(super) fn describe_subject(subject: &Value, binding_ns: &str) -> String {
    let kind = subject["kind"].as_str().unwrap_or("");
    let name = subject["name"].as_str().unwrap_or("");
    if kind == "ServiceAccount" {
        let ns = subject["namespace"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or(binding_ns);
        format!("{kind} \"{name}/{ns}\"")
    } else {
        format!("{kind} \"{name}\"")
    }
}

fn matches_item(items: &Value, want: &str) -> bool {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|x| x == "*" || x == want)
}

/// `RuleAllows` of `pkg/apis/rbac/v1/evaluation_helpers.go`.
pub fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    if !matches_item(&rule["verbs"], &attrs.verb) {
        return false;
    }
    if let Some(path) = &attrs.path {
        return rule["nonResourceURLs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|u| {
                u == "*"
                    || u == path
                    || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
            });
    }
    if !matches_item(&rule["apiGroups"], &attrs.group) {
        return false;
    }
    let combined = attrs.combined_resource();
    let resource_ok = rule["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|r| {
            r == "*"
                || r == combined
                || (!attrs.subresource.is_empty() && r == format!("*/{}", attrs.subresource))
        });
    if !resource_ok {
        return false;
    }
    match rule["resourceNames"].as_array() {
        Some(names) if !names.is_empty() => names
            .iter()
            .any(|n| n.as_str() == Some(attrs.name.as_str())),
        _ => true,
    }
}

/// Visits every rule that applies to `user` in `namespace` (cluster-wide bindings always;
/// RoleBindings of that namespace when it is set), with the binding's description; stops when
/// the visitor returns true. Roles a binding names that do not exist become RBAC errors.
fn visit_rules(
    api: &Api,
    user: &UserInfo,
    namespace: &str,
    errors: &mut Vec<String>,
    visit: &mut dyn FnMut(&str, &Value) -> bool,
) -> bool {
    let role_rules =
        |kind: &str, ns: &str, name: &str, errors: &mut Vec<String>| -> Option<Value> {
            let (resource, ns) = if kind == "Role" {
                ("roles", ns)
            } else {
                ("clusterroles", "")
            };
            match api.get_opt(RBAC_GROUP, resource, ns, name) {
                Some(r) => Some(r["rules"].clone()),
                None => {
                    errors.push(format!(
                        "{}.{RBAC_GROUP} \"{name}\" not found",
                        kind.to_ascii_lowercase()
                    ));
                    None
                }
            }
        };
    let crbs = api
        .list(
            &api.info(RBAC_GROUP, "clusterrolebindings"),
            &Filter::default(),
        )
        .0;
    let mut bindings: Vec<(std::sync::Arc<Value>, bool)> =
        crbs.into_iter().map(|b| (b, true)).collect();
    if !namespace.is_empty() {
        let filter = Filter {
            namespace: Some(namespace.into()),
            ..Default::default()
        };
        bindings.extend(
            api.list(&api.info(RBAC_GROUP, "rolebindings"), &filter)
                .0
                .into_iter()
                .map(|b| (b, false)),
        );
    }
    for (b, cluster) in bindings {
        let bns = b["metadata"]["namespace"].as_str().unwrap_or("");
        let Some(subject) = b["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| subject_applies(s, user, bns))
        else {
            continue;
        };
        let kind = b["roleRef"]["kind"].as_str().unwrap_or("ClusterRole");
        let role = b["roleRef"]["name"].as_str().unwrap_or("");
        let Some(rules) = role_rules(kind, bns, role, errors) else {
            continue;
        };
        let bname = b["metadata"]["name"].as_str().unwrap_or("");
        let source = if cluster {
            format!(
                "ClusterRoleBinding \"{bname}\" of {kind} \"{role}\" to {}",
                describe_subject(subject, bns)
            )
        } else {
            format!(
                "RoleBinding \"{bname}/{bns}\" of {kind} \"{role}\" to {}",
                describe_subject(subject, bns)
            )
        };
        for rule in rules.as_array().into_iter().flatten() {
            if visit(&source, rule) {
                return true;
            }
        }
    }
    false
}

pub(super) fn rbac_authorize(api: &Api, user: &UserInfo, attrs: &Attributes) -> Decision {
    let mut errors = Vec::new();
    let mut reason = String::new();
    let allowed = visit_rules(
        api,
        user,
        &attrs.namespace,
        &mut errors,
        &mut |source, rule| {
            if rule_allows(rule, attrs) {
                reason = format!("RBAC: allowed by {source}");
                true
            } else {
                false
            }
        },
    );
    if allowed {
        return Decision { allowed, reason };
    }
    let reason = match errors.len() {
        0 => String::new(),
        1 => format!("RBAC: {}", errors[0]),
        _ => format!("RBAC: [{}]", errors.join(", ")),
    };
    Decision {
        allowed: false,
        reason,
    }
}

/// The rules that apply to `user` in `namespace`, for SelfSubjectRulesReview.
pub fn rules_review(api: &Api, user: &UserInfo, namespace: &str) -> Value {
    if user.in_group(MASTERS) {
        return json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": false});
    }
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules(api, user, namespace, &mut errors, &mut |_, rule| {
        if rule["nonResourceURLs"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            non_resource_rules
                .push(json!({"verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}));
        } else {
            let mut r = json!({"verbs": rule["verbs"], "apiGroups": rule["apiGroups"], "resources": rule["resources"]});
            if rule["resourceNames"].is_array() {
                r["resourceNames"] = rule["resourceNames"].clone();
            }
            resource_rules.push(r);
        }
        false
    });
    let mut out = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
        "incomplete": user.node_name().is_some()});
    if !errors.is_empty() {
        out["evaluationError"] = json!(errors.join(", "));
    }
    out
}

/// The RBAC objects a fresh kubeadm cluster has that matter to what yurtctl and OpenYurt do:
/// the apiserver's bootstrap policy (kubernetes/kubernetes@v1.33:
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `ClusterRoles()` and
/// `ClusterRoleBindings()`) and kubeadm's bootstrap-token and node bindings
/// (`cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go`, `.../clusterinfo/clusterinfo.go`,
/// `cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go`).
pub fn bootstrap_policy() -> Vec<(&'static str, &'static str, Value)> {
    let defaults = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    let cr = |name: &str, rules: Value| {
        (
            "clusterroles",
            "",
            json!({"metadata": {"name": name, "labels": defaults, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}, "rules": rules}),
        )
    };
    let crb = |name: &str, role: &str, subjects: Value| {
        (
            "clusterrolebindings",
            "",
            json!({"metadata": {"name": name, "labels": defaults, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects}),
        )
    };
    let group = |g: &str| json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": g});
    let kubeadm_crb = |name: &str, role: &str, subjects: Value| {
        (
            "clusterrolebindings",
            "",
            json!({"metadata": {"name": name}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects}),
        )
    };
    let token_group = "system:bootstrappers:kubeadm:default-node-token";
    vec![
        cr(
            "cluster-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        cr(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        cr(
            "system:basic-user",
            json!([{"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]}]),
        ),
        cr(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        cr(
            "system:node-bootstrapper",
            json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]}]),
        ),
        cr(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/nodeclient"], "verbs": ["create"]}]),
        ),
        cr(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/selfnodeclient"], "verbs": ["create"]}]),
        ),
        crb("cluster-admin", "cluster-admin", json!([group(MASTERS)])),
        crb(
            "system:discovery",
            "system:discovery",
            json!([group(AUTHENTICATED)]),
        ),
        crb(
            "system:basic-user",
            "system:basic-user",
            json!([group(AUTHENTICATED)]),
        ),
        crb(
            "system:public-info-viewer",
            "system:public-info-viewer",
            json!([group(AUTHENTICATED), group(UNAUTHENTICATED)]),
        ),
        (
            "clusterroles",
            "",
            json!({"metadata": {"name": "kubeadm:get-nodes"}, "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}),
        ),
        kubeadm_crb(
            "kubeadm:get-nodes",
            "kubeadm:get-nodes",
            json!([group(token_group)]),
        ),
        kubeadm_crb(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            json!([group(token_group)]),
        ),
        kubeadm_crb(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            json!([group(token_group)]),
        ),
        kubeadm_crb(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            json!([group(NODES)]),
        ),
        (
            "roles",
            "kube-system",
            json!({"metadata": {"name": "kubeadm:nodes-kubeadm-config"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["kubeadm-config"], "verbs": ["get"]}]}),
        ),
        (
            "rolebindings",
            "kube-system",
            json!({"metadata": {"name": "kubeadm:nodes-kubeadm-config"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "kubeadm:nodes-kubeadm-config"},
            "subjects": [group(token_group), group(NODES)]}),
        ),
        (
            "roles",
            "kube-public",
            json!({"metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]}),
        ),
        (
            "rolebindings",
            "kube-public",
            json!({"metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": ANONYMOUS}]}),
        ),
    ]
}
