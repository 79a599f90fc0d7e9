//! `--dry-run=server`, shared by every command: each write the run would make,
//! sent with `dryRun=All` (admission, validation and RBAC answer; nothing is stored), and the
//! server's answer as one row of `serverDryRun[]` in the `-o json` plan.

use std::time::Duration;

use serde::Serialize;

use crate::cluster::jobs::NodeJob;
use crate::cluster::{Cluster, ClusterError};
use crate::naming::ResultHeader;

pub const ACCEPTED: &str = "accepted";
pub const REFUSED: &str = "refused";
/// The server could not judge it yet (its kind comes from a CRD the run installs).
pub const UNCHECKED: &str = "unchecked";

/// The writes a phase would send, for `--dry-run=server`.
pub type WritesFuture<'r> = futures::future::LocalBoxFuture<'r, Result<Vec<Write>, ClusterError>>;

/// One write and the server's answer (`serverDryRun[]` in the `-o json` plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Write {
    /// `apply`, `create`, `update`, `patch` or `delete`.
    pub verb: &'static str,
    pub object: String,
    /// `accepted`, `refused` or `unchecked`.
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Write {
    pub fn of(verb: &'static str, object: String, r: Result<(), ClusterError>) -> Self {
        match r {
            Ok(()) => Write {
                verb,
                object,
                result: ACCEPTED,
                message: None,
            },
            Err(e) => Write {
                verb,
                object,
                result: REFUSED,
                message: Some(e.to_string()),
            },
        }
    }

    /// Accepted, with a note (what the answer does not prove).
    pub fn accepted_with(verb: &'static str, object: String, note: impl Into<String>) -> Self {
        Write {
            message: Some(note.into()),
            ..Write::of(verb, object, Ok(()))
        }
    }

    pub fn unchecked(verb: &'static str, object: String, why: impl Into<String>) -> Self {
        Write {
            verb,
            object,
            result: UNCHECKED,
            message: Some(why.into()),
        }
    }

    pub fn refused(&self) -> bool {
        self.result == REFUSED
    }

    /// `VERB OBJECT: MESSAGE`, for the error line of a refused write.
    pub fn describe(&self) -> String {
        format!(
            "{} {}: {}",
            self.verb,
            self.object,
            self.message.as_deref().unwrap_or_default()
        )
    }
}

/// A node Job's create, sent with `dryRun=All` (a leftover Job of that name is accepted: the
/// real run adopts or replaces it).
pub async fn create_job(
    cluster: &Cluster,
    namespace: &str,
    spec: &NodeJob,
    job_timeout: Duration,
) -> Write {
    let what = format!("Job {namespace}/{}", spec.name());
    let r = crate::cluster::jobs::create_dry_run(cluster, namespace, spec, job_timeout).await;
    Write::of("create", what, r)
}

/// Node Jobs' creates, with `dryRun=All`: the writes of a phase that runs node Jobs.
pub fn create_jobs(
    cluster: &Cluster,
    jobs: Vec<NodeJob>,
    job_timeout: Duration,
) -> WritesFuture<'_> {
    Box::pin(async move {
        let mut writes = Vec::with_capacity(jobs.len());
        for j in &jobs {
            let ns = crate::cluster::SYSTEM_NAMESPACE;
            writes.push(create_job(cluster, ns, j, job_timeout).await);
        }
        Ok(writes)
    })
}

/// A delete's row: a thing already gone is accepted with the note `gone`.
pub fn deleted(
    verb: &'static str,
    what: String,
    r: Result<crate::cluster::apply::Deleted, ClusterError>,
    gone: &str,
) -> Write {
    match r {
        Ok(crate::cluster::apply::Deleted::Deleted) => Write::of(verb, what, Ok(())),
        Ok(crate::cluster::apply::Deleted::AlreadyGone) => Write::accepted_with(verb, what, gone),
        Err(e) => Write::of(verb, what, Err(e)),
    }
}

/// The `--dry-run -o json|yaml` document of every command: the plan (`kind: Plan`), for convert
/// the objects it would apply, and under `=server` the server's answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanDocument<'a, P> {
    /// Absent when the plan carries its own (staticpod's rollout plan).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub header: Option<ResultHeader>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<&'static str>,
    #[serde(flatten)]
    pub plan: &'a P,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_dry_run: Option<&'a [Write]>,
}

impl<'a, P> PlanDocument<'a, P> {
    /// The document of a plan without a header of its own; `command` when the plan's fields
    /// do not say which command it is.
    pub fn of(plan: &'a P, command: Option<&'static str>) -> Self {
        PlanDocument {
            header: Some(ResultHeader::of("Plan")),
            command,
            plan,
            objects: None,
            server_dry_run: None,
        }
    }
}

/// The plain-text line after the plan.
pub fn summary_line(writes: &[Write]) -> String {
    format!(
        "server dry run: {} of {} writes accepted (dryRun=All: nothing was stored)",
        writes.iter().filter(|w| !w.refused()).count(),
        writes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_serialise_in_one_shape_and_count_refusals() {
        let ok = Write::of("create", "Job kube-system/a".into(), Ok(()));
        let no = Write::of(
            "delete",
            "Deployment kube-system/b".into(),
            Err(ClusterError::InvalidObject {
                object: "b".into(),
                message: "denied".into(),
            }),
        );
        let later = Write::unchecked("apply", "NodePool x".into(), "its CRD is not there yet");
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            serde_json::json!({"verb": "create", "object": "Job kube-system/a", "result": "accepted"})
        );
        assert_eq!(serde_json::to_value(&no).unwrap()["result"], "refused");
        assert!(no.refused() && !ok.refused() && !later.refused());
        assert!(
            no.describe()
                .starts_with("delete Deployment kube-system/b: ")
        );
        assert_eq!(
            summary_line(&[ok, no, later]),
            "server dry run: 2 of 3 writes accepted (dryRun=All: nothing was stored)"
        );
    }
}
