//! Who is asking, and may they: authentication (the admin token, ServiceAccount tokens the sim
//! issues, bootstrap tokens), impersonation, and authorization as kube-apiserver runs it with
//! `--authorization-mode=Node,RBAC`: the `system:masters` group first, then the Node
//! authorizer, then RBAC over the Roles and bindings in the store.
//!
//! Behaviour is taken from kubernetes/kubernetes at v1.33 (each file names its sources):
//! - this file: who is asking and what about, the authorizers in their order, and the 403 text:
//!   `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`
//!   (`forbiddenMessage`) and `staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`
//!   (`NewForbidden`);
//! - `authn.rs`: the tokens, bootstrap tokens and impersonation;
//! - `node.rs`: the Node authorizer;
//! - `rbac.rs`: RBAC rule matching, the allow reasons and the bootstrap policy.

use serde_json::json;

use crate::api::Api;
use crate::api::error::ApiError;

mod authn;
mod node;
mod rbac;

pub use authn::*;
use node::*;
pub use rbac::*;

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
mod tests;
