//! The Job controller: its pods from the template, failed pods and the back-off before the
//! next, the Job's status and conditions, and its TTL after finishing.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::api::{Ctx, DeleteOptions, Propagation};
use crate::util;

use super::*;

fn has_condition(o: &Value, typ: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == json!(typ) && c["status"] == json!("True"))
}

pub(super) fn job(cluster: &Cluster, queue: &Arc<Queue>, ns: &str, name: &str) {
    let jobs = cluster.api.info("batch", "jobs");
    let pods_info = cluster.api.info("", "pods");
    let Ok(job) = cluster.api.get(&jobs, ns, name) else {
        return;
    };
    if deleting(&job) {
        return;
    }
    let uid = s(&job["metadata"]["uid"]);
    let now = SystemTime::now();
    let finished = has_condition(&job, "Complete") || has_condition(&job, "Failed");
    if finished {
        if let Some(ttl) = job["spec"]["ttlSecondsAfterFinished"].as_u64() {
            let done = job["status"]["completionTime"].as_str().or_else(|| {
                job["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == json!("Failed"))?["lastTransitionTime"]
                    .as_str()
            });
            let done = done.and_then(util::parse_rfc3339).unwrap_or(now);
            let due = done + Duration::from_secs(ttl);
            if now >= due {
                let _ = cluster.api.delete(
                    &jobs,
                    ns,
                    name,
                    &DeleteOptions {
                        propagation: Some(Propagation::Background),
                        ..Default::default()
                    },
                    &Ctx::system("ttl-after-finished-controller"),
                );
            } else {
                queue.add_after(
                    Key::Job(ns.into(), name.into()),
                    due.duration_since(now).unwrap_or_default() + Duration::from_millis(50),
                );
            }
        }
        return;
    }
    let pods = pods_owned_by(cluster, ns, &uid);
    let active: Vec<&Arc<Value>> = pods
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed") && !deleting(p))
        .collect();
    let succeeded_now = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed_now = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let succeeded = succeeded_now.max(job["status"]["succeeded"].as_i64().unwrap_or(0));
    let failed = failed_now.max(job["status"]["failed"].as_i64().unwrap_or(0));
    let completions = job["spec"]["completions"].as_i64().unwrap_or(1);
    let parallelism = job["spec"]["parallelism"].as_i64().unwrap_or(1);
    let backoff_limit = job["spec"]["backoffLimit"].as_i64().unwrap_or(6);
    let start = job["status"]["startTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(util::now);
    let started_at = util::parse_rfc3339(&start).unwrap_or(now);
    let mut fail: Option<(&str, String)> = None;
    if let Some(ads) = job["spec"]["activeDeadlineSeconds"].as_u64() {
        let deadline = started_at + Duration::from_secs(ads);
        if now >= deadline {
            fail = Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline".into(),
            ));
        } else {
            queue.add_after(
                Key::Job(ns.into(), name.into()),
                deadline.duration_since(now).unwrap_or_default() + Duration::from_millis(20),
            );
        }
    }
    if fail.is_none() && failed > backoff_limit {
        fail = Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".into(),
        ));
    }
    let ctx = Ctx::system("job-controller");
    let mut created = 0;
    if fail.is_some() {
        for p in &active {
            let (pns, pname) = crate::api::store::key_of(p);
            let _ = cluster
                .api
                .delete(&pods_info, &pns, &pname, &DeleteOptions::default(), &ctx);
        }
    } else if succeeded < completions {
        let want = (parallelism.min(completions - succeeded) - active.len() as i64).max(0);
        if want > 0 {
            // Exponential back-off after failures, as the Job controller does (scaled down for the sim).
            let last_failure = pods
                .iter()
                .filter(|p| phase(p) == "Failed")
                .filter_map(|p| {
                    p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
                        .as_str()
                        .and_then(util::parse_rfc3339)
                })
                .max();
            let backoff = if failed > 0 {
                cluster.job_backoff * 2u32.saturating_pow((failed - 1).min(6) as u32)
            } else {
                Duration::ZERO
            };
            let ready_at = last_failure.map(|t| t + backoff).unwrap_or(now);
            if now < ready_at {
                queue.add_after(
                    Key::Job(ns.into(), name.into()),
                    ready_at.duration_since(now).unwrap_or_default() + Duration::from_millis(10),
                );
            } else {
                for _ in 0..want {
                    let pod = pod_from_template(
                        &job["spec"]["template"],
                        &format!("{name}-"),
                        owner_ref(&jobs, &job),
                        &[],
                    );
                    match cluster.api.create(&pods_info, ns, pod, &ctx) {
                        Ok(out) => {
                            created += 1;
                            event(
                                cluster,
                                &job,
                                &jobs,
                                "Normal",
                                "SuccessfulCreate",
                                &format!("Created pod: {}", s(&out.body["metadata"]["name"])),
                                "job-controller",
                            );
                        }
                        Err(e) => event(
                            cluster,
                            &job,
                            &jobs,
                            "Warning",
                            "FailedCreate",
                            &format!("Error creating: {}", e.message),
                            "job-controller",
                        ),
                    }
                }
            }
        }
    }
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let nowt = util::now();
    let mut status = job["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    status["startTime"] = json!(start);
    status["active"] = json!(if fail.is_some() {
        0
    } else {
        active.len() + created
    });
    status["ready"] = json!(ready);
    status["terminating"] = json!(0);
    status["uncountedTerminatedPods"] = json!({});
    if succeeded > 0 {
        status["succeeded"] = json!(succeeded);
    }
    if failed > 0 {
        status["failed"] = json!(failed);
    }
    let mut conds = status["conditions"].as_array().cloned().unwrap_or_default();
    if let Some((reason, msg)) = &fail {
        for t in ["FailureTarget", "Failed"] {
            conds.push(json!({"type": t, "status": "True", "reason": reason, "message": msg, "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        }
        event(
            cluster,
            &job,
            &jobs,
            "Warning",
            reason,
            msg,
            "job-controller",
        );
    } else if succeeded >= completions {
        conds.push(json!({"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        conds.push(json!({"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": nowt, "lastTransitionTime": nowt}));
        status["completionTime"] = json!(nowt);
        status["active"] = json!(0);
        event(
            cluster,
            &job,
            &jobs,
            "Normal",
            "Completed",
            "Job completed",
            "job-controller",
        );
        if job["spec"]["ttlSecondsAfterFinished"].is_u64() {
            queue.add_after(Key::Job(ns.into(), name.into()), Duration::from_millis(10));
        }
    }
    if !conds.is_empty() {
        status["conditions"] = json!(conds);
    }
    if status != job["status"] {
        let _ = cluster
            .api
            .modify(&jobs, ns, name, Some("status"), "job-controller", &|o| {
                o["status"] = status.clone();
                true
            });
    }
}
