//! The node Job that runs one `yurtctl node-servant` subcommand on one node
//! (docs/architecture.md#talking-to-the-cluster-and-to-nodes):
//! pinned by the runner, privileged, hostPID, hostNetwork, host `/` at /host, no
//! service-account token, a deadline. Convert, revert, the kcm phases and the staticpod
//! rollout all build theirs here.

use std::time::Duration;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use crate::cluster::jobs::NodeJob;

/// A volume mounted read-only into the servant container (a Secret or ConfigMap the Job
/// needs), besides the host root.
pub struct ServantVolume<'a> {
    pub name: &'a str,
    pub mount_path: &'a str,
    /// The volume's source, e.g. `{"secret": {"secretName": …}}`.
    pub source: Value,
}

/// The Job running `yurtctl node-servant <subcommand> --host-root /host <args…>` on `node`.
pub fn servant_job(
    action: &str,
    node: &str,
    servant_image: &str,
    subcommand: &str,
    args: &[&str],
    job_timeout: Duration,
    extra: &[ServantVolume<'_>],
) -> NodeJob {
    let mut command = vec![
        "yurtctl",
        "node-servant",
        subcommand,
        "--host-root",
        "/host",
    ];
    command.extend_from_slice(args);
    let mut mounts = vec![json!({"name": "host", "mountPath": "/host"})];
    let mut volumes = vec![json!({"name": "host", "hostPath": {"path": "/"}})];
    for v in extra {
        mounts.push(json!({"name": v.name, "mountPath": v.mount_path, "readOnly": true}));
        let mut volume = v.source.clone();
        volume["name"] = json!(v.name);
        volumes.push(volume);
    }
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "spec": {
            "restartPolicy": "Never",
            "hostNetwork": true,
            "hostPID": true,
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "servant",
                "image": servant_image,
                "command": command,
                "securityContext": {"privileged": true},
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    // a workload restart leaves the servant's own pod alone
                    {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                ],
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        }
    }))
    .expect("a valid pod template");
    let mut job = NodeJob::new(action, node, template);
    job.backoff_limit = 0;
    job.active_deadline = Some(job_timeout);
    job
}

/// Runs read-only servant Jobs (`specs`, one per node) and returns each node's log, or why
/// its Job gave none; the Jobs are deleted afterwards, whatever their end (so they never show
/// as a stopped run's leftovers). `log_lines`: how much of a succeeded Job's log to read.
pub async fn read_on_nodes(
    cluster: &crate::cluster::Cluster,
    specs: Vec<NodeJob>,
    timeout: Duration,
    log_lines: i64,
) -> Vec<(String, Result<String, String>)> {
    use crate::cluster::jobs::{JobOutcome, RunJobsOptions, run_jobs};
    let nodes: Vec<String> = specs.iter().map(|s| s.node.clone()).collect();
    let names: Vec<String> = specs.iter().map(|s| s.name()).collect();
    let opts = RunJobsOptions {
        per_job_timeout: timeout,
        success_log_lines: Some(log_lines),
        ..Default::default()
    };
    let results = run_jobs(
        cluster,
        crate::cluster::SYSTEM_NAMESPACE,
        specs,
        &opts,
        &|_| {},
    )
    .await;
    crate::cluster::diagnose::delete_jobs(cluster, &names).await;
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            let why = format!("its Job could not be run: {e}");
            return nodes.into_iter().map(|n| (n, Err(why.clone()))).collect();
        }
    };
    results
        .into_iter()
        .map(|r| {
            let log = match &r.outcome {
                JobOutcome::Succeeded => Ok(r.log.clone().unwrap_or_default()),
                JobOutcome::Failed(f) | JobOutcome::TimedOut(f) => Err(format!(
                    "Job {}: {}",
                    r.job,
                    crate::output::failure_summary(f)
                )),
                other => Err(format!("Job {}: {other:?}", r.job)),
            };
            (r.node, log)
        })
        .collect()
}

/// The servant's result line in a Job's log: the last JSON object that has `field`.
pub fn result_field(log: &str, field: &str) -> Option<Value> {
    log.lines().rev().find_map(|l| {
        let v: Value = serde_json::from_str(l.trim()).ok()?;
        v.get(field).cloned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revert_job_follows_the_contract() {
        let j = servant_job(
            "revert",
            "worker-1",
            "img:1",
            "revert",
            &[],
            Duration::from_secs(60),
            &[],
        )
        .to_job("kube-system", Duration::from_secs(60));
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["metadata"]["name"], "yurtctl-revert-worker-1");
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
        let pod = &v["spec"]["template"]["spec"];
        assert_eq!(pod["nodeName"], "worker-1");
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["hostPID"], true);
        assert_eq!(
            pod["containers"][0]["command"],
            json!(["yurtctl", "node-servant", "revert", "--host-root", "/host"])
        );
        assert_eq!(pod["volumes"].as_array().unwrap().len(), 1);
    }
}
