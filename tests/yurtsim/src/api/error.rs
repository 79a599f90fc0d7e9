//! Kubernetes `Status` errors, with the codes, reasons and message shapes the real apiserver uses,
//! because clients (kube-rs, kubectl, yurtctl) branch on `reason` and `code`.

use serde_json::{Value, json};

use crate::api::registry::ResourceInfo;

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, res: &ResourceInfo, name: &str) -> Self {
        let mut d = json!({ "name": name, "kind": res.resource });
        if !res.group.is_empty() {
            d["group"] = json!(res.group);
        }
        self.details = Some(d);
        self
    }

    pub fn not_found(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", res.group_resource(), name),
        )
        .with_details(res, name)
    }

    pub fn already_exists(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", res.group_resource(), name),
        )
        .with_details(res, name)
    }

    pub fn conflict(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                res.group_resource(),
                name
            ),
        )
        .with_details(res, name)
    }

    pub fn conflict_msg(res: &ResourceInfo, name: &str, msg: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                res.group_resource(),
                name,
                msg
            ),
        )
        .with_details(res, name)
    }

    /// 422 with field causes, message shaped like `Job.batch "x" is invalid: spec.foo: Required value`.
    pub fn invalid(res: &ResourceInfo, name: &str, causes: &[(String, String)]) -> Self {
        let summary: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let kind_group = if res.group.is_empty() {
            res.kind.clone()
        } else {
            format!("{}.{}", res.kind, res.group)
        };
        let msg = if summary.len() == 1 {
            format!("{kind_group} \"{name}\" is invalid: {}", summary[0])
        } else {
            format!(
                "{kind_group} \"{name}\" is invalid: [{}]",
                summary.join(", ")
            )
        };
        let mut e = Self::new(422, "Invalid", msg);
        let mut d = json!({ "name": name, "kind": res.kind,
            "causes": causes.iter().map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f})).collect::<Vec<_>>() });
        if !res.group.is_empty() {
            d["group"] = json!(res.group);
        }
        e.details = Some(d);
        e
    }

    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", msg)
    }

    pub fn forbidden(msg: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", msg)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn gone(msg: impl Into<String>) -> Self {
        Self::new(410, "Expired", msg)
    }

    pub fn method_not_allowed(msg: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", msg)
    }

    pub fn unsupported_media_type(msg: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", msg)
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", msg.into()),
        )
    }

    /// An error that is not an API status (a conversion failure, say): the apiserver answers
    /// 500 with no reason and the error's text (k8s.io/apiserver@v0.37.2
    /// pkg/endpoints/handlers/responsewriters/status.go ErrorToAPIStatus, StatusReasonUnknown).
    pub fn unknown(msg: impl Into<String>) -> Self {
        Self::new(500, "", msg)
    }

    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// The body kube clients parse: a `meta.k8s.io/v1` Status.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        // metav1.Status omits an empty reason
        if self.reason.is_empty()
            && let Some(m) = s.as_object_mut()
        {
            m.remove("reason");
        }
        s
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
