//! Who is asking, and may they: authentication (the admin token, ServiceAccount tokens the sim
//! issues, bootstrap tokens), impersonation, and authorization as kube-apiserver runs it with
//! `--authorization-mode=Node,RBAC`: the `system:masters` group first, then the Node
//! authorizer, then RBAC over the Roles and bindings in the store.
//!
//! Behaviour is taken from kubernetes/kubernetes at v1.33:
//! - RBAC rule matching and the allow reasons:
//!   `plugin/pkg/auth/authorizer/rbac/rbac.go`, `pkg/apis/rbac/v1/evaluation_helpers.go`,
//!   `pkg/registry/rbac/validation/rule.go` (`appliesTo`, `describeSubject`, binding describers);
//! - the 403 text: `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`
//!   (`forbiddenMessage`) and `staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`
//!   (`NewForbidden`);
//! - the Node authorizer: `plugin/pkg/auth/authorizer/node/node_authorizer.go` (graph-checked
//!   Secrets/ConfigMaps, "no relationship found between node … and this object") and its static
//!   rules `bootstrappolicy.NodeRules()`;
//! - bootstrap tokens: `plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go`;
//! - impersonation: `staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::api::Api;
use crate::api::error::ApiError;
use crate::api::store::Filter;
use crate::version::Version;

pub const MASTERS: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";
pub const NODES: &str = "system:nodes";
pub const BOOTSTRAPPERS: &str = "system:bootstrappers";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// An authenticated identity, as `user.Info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The kubeconfig's user: a cluster administrator through `system:masters`.
    pub fn admin() -> Self {
        UserInfo {
            name: "yurtsim-admin".into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
        }
    }

    pub fn service_account(ns: &str, name: &str) -> Self {
        UserInfo {
            name: format!("system:serviceaccount:{ns}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                AUTHENTICATED.into(),
            ],
        }
    }

    /// A node's client certificate: CN `system:node:<node>`, O `system:nodes` plus `extra`
    /// (YurtHub's certificates also carry `openyurt:yurthub`).
    pub fn node(node: &str, extra: &[&str]) -> Self {
        let mut groups = vec![NODES.to_string()];
        groups.extend(extra.iter().map(|g| g.to_string()));
        groups.push(AUTHENTICATED.into());
        UserInfo {
            name: format!("system:node:{node}"),
            groups,
        }
    }

    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
        }
    }

    pub fn in_group(&self, g: &str) -> bool {
        self.groups.iter().any(|x| x == g)
    }

    /// `system:serviceaccount:<ns>:<name>` split, when this is a ServiceAccount.
    pub fn service_account_parts(&self) -> Option<(&str, &str)> {
        self.name
            .strip_prefix("system:serviceaccount:")
            .and_then(|r| r.split_once(':'))
    }

    fn node_name(&self) -> Option<&str> {
        if !self.in_group(NODES) {
            return None;
        }
        self.name.strip_prefix("system:node:")
    }
}

/// What a request asks to do (`authorizer.Attributes`).
#[derive(Clone, Debug, Default)]
pub struct Attributes {
    pub verb: String,
    /// Set for non-resource requests (`/version`, `/apis`, …).
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    pub fn resource(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Self {
        let (resource, sub) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            verb: verb.into(),
            path: None,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes {
            verb: verb.into(),
            path: Some(path.into()),
            ..Default::default()
        }
    }

    fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// `forbiddenMessage` of the apiserver's response writers.
    fn forbidden_message(&self, user: &str) -> String {
        match &self.path {
            Some(p) => format!("User \"{user}\" cannot {} path \"{p}\"", self.verb),
            None if self.namespace.is_empty() => format!(
                "User \"{user}\" cannot {} resource \"{}\" in API group \"{}\" at the cluster scope",
                self.verb,
                self.combined_resource(),
                self.group
            ),
            None => format!(
                "User \"{user}\" cannot {} resource \"{}\" in API group \"{}\" in the namespace \"{}\"",
                self.verb,
                self.combined_resource(),
                self.group,
                self.namespace
            ),
        }
    }
}

/// An authorizer's answer, with the reason the apiserver would give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// The 403 the apiserver writes for a denied request (`NewForbidden` over `forbiddenMessage`).
pub fn forbidden(attrs: &Attributes, user: &UserInfo, reason: &str) -> ApiError {
    let mut msg = attrs.forbidden_message(&user.name);
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    if attrs.path.is_some() {
        return ApiError::forbidden(format!("forbidden: {msg}"));
    }
    let qualified = if attrs.group.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}.{}", attrs.resource, attrs.group)
    };
    let full = if attrs.name.is_empty() {
        format!("{qualified} is forbidden: {msg}")
    } else {
        format!("{qualified} \"{}\" is forbidden: {msg}", attrs.name)
    };
    let mut e = ApiError::forbidden(full);
    let mut details = json!({"kind": attrs.resource});
    if !attrs.group.is_empty() {
        details["group"] = json!(attrs.group);
    }
    if !attrs.name.is_empty() {
        details["name"] = json!(attrs.name);
    }
    e.details = Some(details);
    e
}

/// Tokens the sim has issued for ServiceAccounts (projected volumes and TokenRequests).
#[derive(Default)]
pub struct Tokens {
    issued: Mutex<HashMap<String, IssuedToken>>,
}

#[derive(Clone)]
struct IssuedToken {
    namespace: String,
    service_account: String,
    sa_uid: String,
    /// The pod the token is bound to: the token dies with it.
    pod: Option<(String, String)>,
    expires: SystemTime,
}

impl Tokens {
    /// Issues a token for `ns/sa` (which must exist), optionally bound to a pod.
    pub fn issue(
        &self,
        api: &Api,
        ns: &str,
        sa: &str,
        pod: Option<(&str, &str)>,
        ttl: Duration,
    ) -> Option<String> {
        let account = api.get_opt("", "serviceaccounts", ns, sa)?;
        let token = format!(
            "yurtsim-sa.{}",
            crate::util::random_suffix(40).to_ascii_lowercase()
        );
        let mut issued = self.issued.lock().unwrap();
        let now = SystemTime::now();
        issued.retain(|_, t| t.expires > now);
        issued.insert(
            token.clone(),
            IssuedToken {
                namespace: ns.into(),
                service_account: sa.into(),
                sa_uid: account["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                pod: pod.map(|(a, b)| (a.to_string(), b.to_string())),
                expires: now + ttl,
            },
        );
        Some(token)
    }

    /// The identity of a token the sim issued, while it is valid: not expired, its
    /// ServiceAccount not recreated, its pod (if bound) still there.
    fn resolve(&self, api: &Api, token: &str) -> Option<UserInfo> {
        let t = self.issued.lock().unwrap().get(token).cloned()?;
        if t.expires <= SystemTime::now() {
            return None;
        }
        let sa = api.get_opt("", "serviceaccounts", &t.namespace, &t.service_account)?;
        if sa["metadata"]["uid"].as_str() != Some(&t.sa_uid) {
            return None;
        }
        if let Some((ns, pod)) = &t.pod
            && api.get_opt("", "pods", ns, pod).is_none()
        {
            return None;
        }
        Some(UserInfo::service_account(&t.namespace, &t.service_account))
    }
}

/// A bootstrap token `<id>.<secret>` checked against Secret
/// `kube-system/bootstrap-token-<id>` as the bootstrap authenticator does: the secret matches,
/// `usage-bootstrap-authentication` is "true" and the expiration has not passed.
fn bootstrap_token_user(api: &Api, token: &str) -> Option<UserInfo> {
    let (id, secret) = token.split_once('.')?;
    let valid =
        |s: &str, n| s.len() == n && s.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9'));
    if !valid(id, 6) || !valid(secret, 16) {
        return None;
    }
    let s = api.get_opt(
        "",
        "secrets",
        "kube-system",
        &format!("bootstrap-token-{id}"),
    )?;
    if s["type"] != json!("bootstrap.kubernetes.io/token")
        || s["metadata"]["deletionTimestamp"].is_string()
    {
        return None;
    }
    let field = |k: &str| crate::util::secret_field(&s, k);
    if field("token-secret").as_deref() != Some(secret)
        || field("usage-bootstrap-authentication").as_deref() != Some("true")
    {
        return None;
    }
    if let Some(exp) = field("expiration")
        && crate::util::parse_rfc3339(&exp).is_none_or(|t| t <= SystemTime::now())
    {
        return None;
    }
    let mut groups = vec![BOOTSTRAPPERS.to_string()];
    for g in field("auth-extra-groups").unwrap_or_default().split(',') {
        let g = g.trim();
        if !g.is_empty() {
            groups.push(g.into());
        }
    }
    groups.push(AUTHENTICATED.into());
    Some(UserInfo {
        name: format!("system:bootstrap:{id}"),
        groups,
    })
}

/// Who sent this request. No credentials: the admin (over plain HTTP kubectl sends none, as
/// with the old insecure port); a bearer token: the admin token, a token the sim issued, or a
/// valid bootstrap token — anything else is 401.
pub fn authenticate(api: &Api, authorization: Option<&str>) -> Result<UserInfo, ApiError> {
    let Some(v) = authorization else {
        return Ok(UserInfo::admin());
    };
    let token = v
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(ApiError::unauthorized)?;
    if token == api.token {
        return Ok(UserInfo::admin());
    }
    api.tokens
        .resolve(api, token)
        .or_else(|| bootstrap_token_user(api, token))
        .ok_or_else(ApiError::unauthorized)
}

/// `Impersonate-User` / `Impersonate-Group` (what `kubectl --as/--as-group` send): the requester
/// needs the `impersonate` verb on each; the result gets the ServiceAccount groups for an SA and
/// `system:authenticated` unless it is anonymous.
pub fn impersonate(
    api: &Api,
    requester: UserInfo,
    user: Option<&str>,
    groups: &[String],
) -> Result<UserInfo, ApiError> {
    let Some(name) = user else {
        if groups.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::new(
            500,
            "InternalError",
            "Internal error occurred: requested [Impersonate-Group] without impersonating a user",
        ));
    };
    let check = |attrs: Attributes| {
        let d = authorize(api, &requester, &attrs);
        if d.allowed {
            Ok(())
        } else {
            Err(forbidden(&attrs, &requester, &d.reason))
        }
    };
    let target = UserInfo {
        name: name.to_string(),
        groups: vec![],
    };
    match target.service_account_parts() {
        Some((ns, sa)) => check(Attributes::resource(
            "impersonate",
            "",
            "serviceaccounts",
            ns,
            sa,
        ))?,
        None => check(Attributes::resource("impersonate", "", "users", "", name))?,
    }
    for g in groups {
        check(Attributes::resource("impersonate", "", "groups", "", g))?;
    }
    let mut out = groups.to_vec();
    if groups.is_empty()
        && let Some((ns, _)) = target.service_account_parts()
    {
        out.push("system:serviceaccounts".into());
        out.push(format!("system:serviceaccounts:{ns}"));
    }
    if name != ANONYMOUS && !out.iter().any(|g| g == AUTHENTICATED) {
        out.push(AUTHENTICATED.into());
    }
    Ok(UserInfo {
        name: name.into(),
        groups: out,
    })
}

/// The union authorizer of `--authorization-mode=Node,RBAC` behind the privileged-group check.
pub fn authorize(api: &Api, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.in_group(MASTERS) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut reasons = Vec::new();
    if let Some(node) = user.node_name() {
        match node_authorize(api, node, attrs) {
            NodeDecision::Allow => {
                return Decision {
                    allowed: true,
                    reason: String::new(),
                };
            }
            NodeDecision::NoOpinion(r) => {
                if !r.is_empty() {
                    reasons.push(r)
                }
            }
        }
    }
    let rbac = rbac_authorize(api, user, attrs);
    if rbac.allowed {
        return rbac;
    }
    if !rbac.reason.is_empty() {
        reasons.push(rbac.reason);
    }
    Decision {
        allowed: false,
        reason: reasons.join("\n"),
    }
}

enum NodeDecision {
    Allow,
    NoOpinion(String),
}

/// The static part of the Node authorizer (`bootstrappolicy.NodeRules()`, v1.33) for what a
/// node identity may do anywhere, as RBAC-style rules (group, resources, verbs).
const NODE_RULES: &[(&str, &[&str], &[&str])] = &[
    ("authentication.k8s.io", &["tokenreviews"], &["create"]),
    (
        "authorization.k8s.io",
        &["subjectaccessreviews", "localsubjectaccessreviews"],
        &["create"],
    ),
    ("", &["services"], &["get", "list", "watch"]),
    (
        "",
        &["nodes"],
        &["create", "get", "list", "watch", "patch", "update"],
    ),
    ("", &["nodes/status"], &["patch", "update"]),
    ("", &["events"], &["create", "update", "patch"]),
    ("events.k8s.io", &["events"], &["create", "update", "patch"]),
    ("", &["pods"], &["get", "list", "watch", "create", "delete"]),
    ("", &["pods/status"], &["update", "patch"]),
    ("", &["pods/eviction"], &["create"]),
    (
        "certificates.k8s.io",
        &["certificatesigningrequests"],
        &["create", "get", "list", "watch"],
    ),
    (
        "coordination.k8s.io",
        &["leases"],
        &["get", "create", "update", "patch", "delete"],
    ),
    ("storage.k8s.io", &["csidrivers"], &["get", "list", "watch"]),
    (
        "node.k8s.io",
        &["runtimeclasses"],
        &["get", "list", "watch"],
    ),
];

fn node_authorize(api: &Api, node: &str, attrs: &Attributes) -> NodeDecision {
    if attrs.path.is_some() {
        return NodeDecision::NoOpinion(String::new());
    }
    let no_relationship = || {
        NodeDecision::NoOpinion(format!(
            "no relationship found between node '{node}' and this object"
        ))
    };
    // Graph-checked kinds: only `get`, only of objects a pod bound to this node uses.
    if attrs.group.is_empty()
        && attrs.subresource.is_empty()
        && matches!(attrs.resource.as_str(), "secrets" | "configmaps")
    {
        if attrs.verb != "get" || attrs.name.is_empty() {
            return NodeDecision::NoOpinion(format!(
                "can only read individual {} (get), not {}",
                attrs.resource, attrs.verb
            ));
        }
        let kind = if attrs.resource == "secrets" {
            "secret"
        } else {
            "configMap"
        };
        return if pod_on_node_uses(api, node, &attrs.namespace, kind, &attrs.name) {
            NodeDecision::Allow
        } else {
            no_relationship()
        };
    }
    if attrs.group == "coordination.k8s.io" && attrs.resource == "leases" {
        // A node may only touch its own Lease in kube-node-lease.
        return if attrs.namespace == "kube-node-lease"
            && (attrs.name == node || (attrs.verb == "create" && attrs.name.is_empty()))
        {
            NodeDecision::Allow
        } else {
            NodeDecision::NoOpinion(String::new())
        };
    }
    // `get` of any Endpoints ("Needed for glusterfs volumes", NodeRules in
    // plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, as read at the v1.20/v1.21
    // state of that file); kept to the releases it was read at: whether v1.22+ still grants
    // it is not checked here, so those get the stricter answer.
    if attrs.group.is_empty()
        && attrs.resource == "endpoints"
        && attrs.subresource.is_empty()
        && attrs.verb == "get"
        && api.version < Version::new(1, 22, 0)
    {
        return NodeDecision::Allow;
    }
    let combined = attrs.combined_resource();
    let allowed = NODE_RULES.iter().any(|(g, rs, vs)| {
        *g == attrs.group && rs.contains(&combined.as_str()) && vs.contains(&attrs.verb.as_str())
    });
    if allowed {
        NodeDecision::Allow
    } else {
        NodeDecision::NoOpinion(String::new())
    }
}

fn pod_on_node_uses(api: &Api, node: &str, ns: &str, kind: &str, name: &str) -> bool {
    let pods = api.info("", "pods");
    let filter = Filter {
        namespace: Some(ns.into()),
        ..Default::default()
    };
    let key = if kind == "secret" {
        "secretName"
    } else {
        "name"
    };
    api.list(&pods, &filter).0.iter().any(|p| {
        if p["spec"]["nodeName"].as_str() != Some(node) {
            return false;
        }
        let spec = &p["spec"];
        let in_volumes = spec["volumes"].as_array().into_iter().flatten().any(|v| {
            v[kind][key].as_str() == Some(name)
                || v["projected"]["sources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| s[kind]["name"].as_str() == Some(name))
        });
        let ref_key = if kind == "secret" {
            "secretKeyRef"
        } else {
            "configMapKeyRef"
        };
        let from_key = if kind == "secret" {
            "secretRef"
        } else {
            "configMapRef"
        };
        let in_env = ["containers", "initContainers"].iter().any(|f| {
            spec[*f].as_array().into_iter().flatten().any(|c| {
                c["env"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| e["valueFrom"][ref_key]["name"].as_str() == Some(name))
                    || c["envFrom"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|e| e[from_key]["name"].as_str() == Some(name))
            })
        });
        let pull = kind == "secret"
            && spec["imagePullSecrets"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["name"].as_str() == Some(name));
        in_volumes || in_env || pull
    })
}

fn subject_applies(subject: &Value, user: &UserInfo, binding_ns: &str) -> bool {
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

fn describe_subject(subject: &Value, binding_ns: &str) -> String {
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

fn rbac_authorize(api: &Api, user: &UserInfo, attrs: &Attributes) -> Decision {
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

/// The CertificateSigningRequest approval admission plugin (kubernetes/kubernetes@v1.33.0
/// `plugin/pkg/admission/certificates/approval/admission.go` Validate, with
/// `plugin/pkg/admission/certificates/util.go` IsAuthorizedForSignerName): an update of
/// `certificatesigningrequests/approval` is refused unless the requester may `approve`
/// resource `signers` of group `certificates.k8s.io` named the request's `signerName`, or named
/// `<domain>/*` for the signer's domain; the signer is read from the submitted (new) object.
pub fn csr_approval_admission(
    api: &Api,
    user: &UserInfo,
    csr_name: &str,
    signer: &str,
) -> Result<(), ApiError> {
    let allowed = |name: &str| {
        let attrs = Attributes::resource("approve", "certificates.k8s.io", "signers", "", name);
        authorize(api, user, &attrs).allowed
    };
    let domain = signer.split('/').next().unwrap_or("");
    if allowed(signer) || allowed(&format!("{domain}/*")) {
        return Ok(());
    }
    // admission.NewForbidden: the request's resource and name, then the plugin's error
    let mut e = ApiError::forbidden(format!(
        "certificatesigningrequests.certificates.k8s.io \"{csr_name}\" is forbidden: user not permitted to approve requests with signerName \"{signer}\""
    ));
    e.details = Some(json!({"name": csr_name, "group": "certificates.k8s.io",
        "kind": "certificatesigningrequests"}));
    Err(e)
}

#[cfg(test)]
mod tests {
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
}
