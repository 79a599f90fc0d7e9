//! Authentication: the tokens the sim issues and the admin token, bootstrap tokens, and
//! impersonation (kubernetes/kubernetes v1.33):
//! - bootstrap tokens: `plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go`;
//! - impersonation: `staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::api::Api;
use crate::api::error::ApiError;

use super::*;

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
