//! Typed errors of the cluster layer (kube-rs style: a leaf, importing nothing of the layer).
//! Each says what failed, on which object, and what to do. The connection's, the lock's and
//! the journal's own errors are here too; `client`, `lock` and `journal` re-export theirs.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// One field owned by another manager that an apply would have changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldConflict {
    /// The other field manager, e.g. `kubectl-client-side-apply`.
    pub manager: String,
    /// The field path as the server reports it, e.g. `.spec.replicas`.
    pub field: String,
}

/// Why no client for the cluster could be made: the kubeconfig, the context, the server's
/// address or its TLS.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "kubeconfig {} (from {origin}) does not exist; pass an existing file with --kubeconfig{}",
        path.display(),
        if *origin == "KUBECONFIG" { " or fix KUBECONFIG" } else { "" }
    )]
    KubeconfigNotFound { path: PathBuf, origin: &'static str },

    #[error(
        "cannot use kubeconfig {path}: {message}; fix the file or choose another with --kubeconfig"
    )]
    KubeconfigInvalid { path: String, message: String },

    #[error(
        "no kubeconfig found (tried {tried}) and not running inside a cluster; pass --kubeconfig or set KUBECONFIG"
    )]
    NoConfiguration { tried: String },

    #[error("cannot use the in-cluster configuration: {message}")]
    InCluster { message: String },

    #[error(
        "context \"{context}\" is not defined in {source_desc}; available contexts: {}; choose one with --context",
        list_or_none(available)
    )]
    ContextNotFound {
        context: String,
        source_desc: String,
        available: Vec<String>,
    },

    #[error(
        "{source_desc} has no current-context; choose one of {} with --context",
        list_or_none(available)
    )]
    NoCurrentContext {
        source_desc: String,
        available: Vec<String>,
    },

    #[error(
        "context \"{context}\" refers to {what} \"{name}\", which is not defined in {source_desc}; fix the kubeconfig or choose another --context"
    )]
    DanglingReference {
        context: String,
        what: &'static str,
        name: String,
        source_desc: String,
    },

    #[error("cannot build a client for {server}: {message}")]
    ClientSetup { server: String, message: String },

    #[error(
        "cannot reach the API server at {server}: {message}; check the server address in the kubeconfig and the network (VPN, proxy, firewall)"
    )]
    Unreachable { server: String, message: String },

    #[error(
        "TLS with the API server at {server} failed: {message}; check the server URL's scheme (https:// or http://) and port, and that certificate-authority(-data) in the kubeconfig is the cluster's CA"
    )]
    Tls { server: String, message: String },
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

/// The run lock's own failures; its API requests fail as [`ClusterError`].
#[derive(Clone, Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the lock (Lease {lease}) is held by {run} ({}); wait for that run to finish, or if it is dead re-run with --force-unlock",
        expiry(*expires_in)
    )]
    Held {
        /// `namespace/name` of the Lease.
        lease: String,
        holder: String,
        /// The holder as messages name it: command, identity and since when.
        run: String,
        /// The holder's last renewal, RFC 3339.
        renew_time: Option<String>,
        /// Time until the lease expires without renewal (zero if it has expired).
        expires_in: Duration,
    },

    #[error(
        "the lock (Lease {lease}) was taken over by {holder} while this run held it; stop and check what that run did before continuing"
    )]
    Lost { lease: String, holder: String },
}

fn expiry(d: Duration) -> String {
    if d.is_zero() {
        "its lease has expired and can be taken over".into()
    } else {
        format!("expires in {}s unless renewed", d.as_secs().max(1))
    }
}

/// The journal's own failures; its API requests fail as [`ClusterError`].
#[derive(Clone, Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "could not save the journal kube-system/yurtctl-state: it kept changing under us ({attempts} attempts); is another yurtctl running without the lock?"
    )]
    Conflict { attempts: u32 },

    #[error(
        "the journal ConfigMap kube-system/yurtctl-state is unreadable: {message}; inspect it with `kubectl -n kube-system get configmap yurtctl-state -o yaml`, or delete it to start over"
    )]
    Corrupt { message: String },

    #[error(
        "the journal (ConfigMap kube-system/yurtctl-state and its node shards) could not be saved {saves} times in a row ({message}), so no further node was started; the node Jobs already started keep running, and each node started is in the journal: once the API server takes writes again, re-run the same command to finish (or revert)"
    )]
    Unsaved { saves: u32, message: String },
}

/// Everything that can go wrong in `cluster/` (kube-rs style): the connection's, the lock's and
/// the journal's own errors apart, and the errors of any API request.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Connect(#[from] ConnectError),

    #[error(transparent)]
    Lock(#[from] LockError),

    #[error(transparent)]
    Journal(#[from] JournalError),

    #[error(
        "{action} failed: the API server rejected the kubeconfig's credentials (401 Unauthorized: {message}); refresh the token or client certificate in the kubeconfig (or log in again) and re-run"
    )]
    Unauthorized { action: String, message: String },

    #[error(
        "{action} failed: permission denied (403 Forbidden: {message}); grant the kubeconfig's user that permission (see docs/security.md for what yurtctl needs; check with `kubectl auth can-i {verb} {resource}`) or use an admin kubeconfig"
    )]
    Forbidden {
        action: String,
        /// The verb and resource denied, as `kubectl auth can-i` takes them.
        verb: String,
        resource: String,
        message: String,
    },

    #[error("{action} failed: {code} {reason}: {message}{}", hint_for(*code))]
    Api {
        action: String,
        code: u16,
        reason: String,
        message: String,
    },

    #[error("{action} failed: {message}; is the API server reachable?")]
    Transport { action: String, message: String },

    #[error(
        "server-side apply of {object} conflicts with other field managers: {}; re-run with --force-conflicts to take those fields over, or change them back",
        Conflicts(conflicts)
    )]
    ApplyConflict {
        object: String,
        conflicts: Vec<FieldConflict>,
    },

    #[error(
        "the API server does not serve {gvk} ({message}); install its CRD first or check that this Kubernetes version supports it"
    )]
    UnknownKind { gvk: String, message: String },

    #[error("invalid object {object}: {message}")]
    InvalidObject { object: String, message: String },

    #[error("watching {what} failed: {message}")]
    Watch { what: String, message: String },

    #[error("timed out after {}s waiting for {what}", after.as_secs_f64())]
    Timeout { what: String, after: Duration },
}

fn hint_for(code: u16) -> &'static str {
    match code {
        429 | 500..=599 => "; the API server is overloaded or failing, retry later",
        _ => "",
    }
}

struct Conflicts<'a>(&'a [FieldConflict]);

impl fmt::Display for Conflicts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} owned by \"{}\"", c.field, c.manager)?;
        }
        Ok(())
    }
}

impl ClusterError {
    /// The HTTP status of an API error, if this is one.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            ClusterError::Api { code, .. } => Some(*code),
            ClusterError::Unauthorized { .. } => Some(401),
            ClusterError::Forbidden { .. } => Some(403),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }

    /// Maps a kube error for `action` (e.g. "create Job kube-system/x").
    /// The admission webhook that refused the request, when one did: the API server words its
    /// refusal `admission webhook "NAME" denied the request: …` (kubernetes/kubernetes@v1.33
    /// staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go).
    pub fn denying_webhook(&self) -> Option<&str> {
        let message = match self {
            ClusterError::Forbidden { message, .. } | ClusterError::Api { message, .. } => message,
            _ => return None,
        };
        let rest = message.split("admission webhook \"").nth(1)?;
        let (name, tail) = rest.split_once('"')?;
        tail.starts_with(" denied the request").then_some(name)
    }

    pub fn from_kube(action: impl Into<String>, e: kube::Error) -> Self {
        let action = action.into();
        match e {
            kube::Error::Api(s) if s.code == 401 => ClusterError::Unauthorized {
                action,
                message: s.message.clone(),
            },
            // a webhook's refusal is no missing permission: what it names is to be fixed
            kube::Error::Api(s) if s.code == 403 && !s.message.contains(" denied the request") => {
                let (verb, resource) = denied(&s.message, &action);
                ClusterError::Forbidden {
                    action,
                    verb,
                    resource,
                    message: s.message.clone(),
                }
            }
            kube::Error::Api(s) => ClusterError::Api {
                action,
                code: s.code,
                reason: if s.reason.is_empty() {
                    "Unknown".into()
                } else {
                    s.reason.clone()
                },
                message: s.message.clone(),
            },
            other => ClusterError::Transport {
                action,
                message: error_chain(&other),
            },
        }
    }
}

/// The verb and resource of a 403: from the apiserver's message (`… User "u" cannot list
/// resource "nodes" in API group "" …`), else from our own action (`list Nodes`).
fn denied(message: &str, action: &str) -> (String, String) {
    let quoted = |after: &str| -> Option<String> {
        let rest = message.split_once(after)?.1;
        let rest = rest.strip_prefix('"')?;
        Some(rest.split('"').next()?.to_string())
    };
    let from_message = message.split_once(" cannot ").and_then(|(_, rest)| {
        let verb = rest.split_whitespace().next()?.to_string();
        let resource = quoted("resource ")?;
        let group = quoted("in API group ").unwrap_or_default();
        Some((
            verb,
            if group.is_empty() {
                resource
            } else {
                format!("{resource}.{group}")
            },
        ))
    });
    from_message.unwrap_or_else(|| {
        let mut words = action.split_whitespace();
        let verb = words.next().unwrap_or("").to_lowercase();
        let resource = words.next().unwrap_or("").to_lowercase();
        (verb, resource)
    })
}

/// `e: cause: cause`, for messages built from foreign errors.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// The status code of a kube error, if the server answered.
pub(crate) fn kube_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_denying_webhook_is_read_from_the_api_servers_wording() {
        let forbidden = |m: &str| ClusterError::Forbidden {
            action: "delete NodePool edge".into(),
            verb: "delete".into(),
            resource: "nodepool".into(),
            message: m.into(),
        };
        let e = forbidden(
            "admission webhook \"v.v1beta2.nodepool.kb.io\" denied the request: nodepools.apps.openyurt.io \"edge\" is forbidden: cannot remove nonempty pool",
        );
        assert_eq!(e.denying_webhook(), Some("v.v1beta2.nodepool.kb.io"));
        let e = ClusterError::Api {
            action: "label Node w".into(),
            code: 422,
            reason: "Invalid".into(),
            message: "admission webhook \"validate.core.v1.node.openyurt.io\" denied the request: Node \"w\" is invalid".into(),
        };
        assert_eq!(
            e.denying_webhook(),
            Some("validate.core.v1.node.openyurt.io")
        );
        // RBAC, and a webhook that failed rather than refused, are no webhook's denial
        assert_eq!(
            forbidden("User \"bob\" cannot delete resource").denying_webhook(),
            None
        );
        let failed =
            forbidden("failed calling webhook \"v.v1beta2.nodepool.kb.io\": connection refused");
        assert_eq!(failed.denying_webhook(), None);
    }

    #[test]
    fn a_webhooks_403_is_its_refusal_not_a_missing_permission() {
        let status = kube::core::Status {
            code: 403,
            reason: "Forbidden".into(),
            message: "admission webhook \"v.v1beta2.nodepool.kb.io\" denied the request: \
                      nodepools.apps.openyurt.io \"cloud\" is forbidden: spec.leaderElectionStrategy: \
                      Invalid value: \"\""
                .into(),
            ..Default::default()
        };
        let e = ClusterError::from_kube("apply NodePool cloud", kube::Error::Api(status.into()));
        assert_eq!(e.denying_webhook(), Some("v.v1beta2.nodepool.kb.io"));
        let shown = e.to_string();
        assert!(
            shown.starts_with("apply NodePool cloud failed: 403 Forbidden: admission webhook"),
            "{shown}"
        );
        assert!(!shown.contains("permission"), "{shown}");
    }

    #[test]
    fn a_403_names_the_verb_and_resource() {
        // (apiserver message, our action, verb, resource)
        let rows = [
            (
                r#"nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope"#,
                "list Nodes",
                "list",
                "nodes",
            ),
            (
                r#"jobs.batch "x" is forbidden: User "bob" cannot create resource "jobs" in API group "batch" in the namespace "kube-system""#,
                "create Job kube-system/x",
                "create",
                "jobs.batch",
            ),
            // no apiserver wording: our own action says it
            ("access denied", "patch Node worker-1", "patch", "node"),
        ];
        for (message, action, verb, resource) in rows {
            assert_eq!(
                denied(message, action),
                (verb.to_string(), resource.to_string()),
                "{message}"
            );
        }
    }
}
