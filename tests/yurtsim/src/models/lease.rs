//! Leader election as client-go does it on a Lease (kubernetes/client-go@v0.20.11
//! tools/leaderelection/leaderelection.go `tryAcquireOrRenew`): one acquire-or-renew as
//! `holder`. A record held by someone else counts as live until its last renewal is older than
//! our own lease duration (client-go measures from when it observed the record change; the
//! renewal time is that moment here); taking it over sets `acquireTime` and counts a
//! transition.

use std::time::Duration;

use serde_json::json;

use super::{Caller, Env};
use crate::api::error::ApiResult;
use crate::util;

impl Caller {
    /// `Ok(true)` while `holder` holds Lease `ns/name`.
    pub fn try_acquire_or_renew(
        &self,
        env: &Env,
        ns: &str,
        name: &str,
        holder: &str,
        duration: Duration,
    ) -> ApiResult<bool> {
        let now = util::now_micro();
        let secs = duration.as_secs().max(1);
        match self.get("coordination.k8s.io", "leases", ns, name) {
            Err(e) if e.code == 404 => {
                let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"holderIdentity": holder, "leaseDurationSeconds": secs,
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}});
                self.create("coordination.k8s.io", "leases", ns, body)?;
                Ok(true)
            }
            Err(e) => Err(e),
            Ok(cur) => {
                let theirs = cur["spec"]["holderIdentity"].as_str().unwrap_or("");
                let expired = cur["spec"]["renewTime"]
                    .as_str()
                    .and_then(util::parse_rfc3339)
                    .is_none_or(|t| t.elapsed().unwrap_or_default() > env.scaled(duration));
                if theirs != holder && !theirs.is_empty() && !expired {
                    return Ok(false);
                }
                let taking = theirs != holder;
                let holder = holder.to_string();
                self.update("coordination.k8s.io", "leases", ns, name, &|o| {
                    o["spec"]["holderIdentity"] = json!(holder);
                    o["spec"]["renewTime"] = json!(now);
                    o["spec"]["leaseDurationSeconds"] = json!(secs);
                    if taking {
                        o["spec"]["acquireTime"] = json!(now);
                        let n = o["spec"]["leaseTransitions"].as_i64().unwrap_or(0);
                        o["spec"]["leaseTransitions"] = json!(n + 1);
                    }
                    true
                })?;
                Ok(true)
            }
        }
    }
}
