//! Tests of the rollout driver (its node Jobs, the order of its actions).

use super::*;
use crate::cluster::staticset::{Revision, RolloutProgress};

fn set() -> StaticSet {
    StaticSet {
        namespace: "kube-system".into(),
        name: "yurt-hub".into(),
        manifest_key: "yurthub".into(),
        current: Revision {
            number: 2,
            hash: "abc123".into(),
            manifest: String::new(),
        },
        history: Vec::new(),
        progress: RolloutProgress::default(),
        created: None,
    }
}

fn pod_of(restore: bool) -> serde_json::Value {
    let (up, back) = crate::naming::static_pod_actions("yurt-hub");
    let action = if restore { back } else { up };
    let job = static_pod_job(
        &action,
        "edge-1",
        &set(),
        &crate::cluster::jobs::JobImage {
            image: "img:1".into(),
            pull_secrets: Vec::new(),
        },
        restore,
        Duration::from_secs(90),
    )
    .to_job("kube-system", Duration::from_secs(90));
    let v = serde_json::to_value(&job).unwrap();
    assert_eq!(v["spec"]["activeDeadlineSeconds"], 90);
    assert_eq!(v["spec"]["backoffLimit"], 0);
    v["spec"]["template"].clone()
}

#[test]
fn the_upgrade_job_is_the_servant_job_with_the_manifest_mounted() {
    let t = pod_of(false);
    assert_eq!(
        t["metadata"]["annotations"][crate::naming::revision::HASH_ANNOTATION],
        "abc123"
    );
    let pod = &t["spec"];
    assert_eq!(pod["nodeName"], "edge-1");
    assert_eq!(pod["hostPID"], true);
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["automountServiceAccountToken"], false);
    // what reached the cluster before (a blanket toleration was always replaced by these)
    let keys: Vec<&str> = pod["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, crate::cluster::jobs::JOB_TOLERATED_TAINTS);
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "img:1");
    assert_eq!(c["securityContext"]["privileged"], true);
    assert_eq!(
        c["command"],
        json!([
            "yurtctl",
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            "/host",
            "--name",
            "yurthub",
            "--manifest-file",
            "/yurtctl/manifest/manifest.yaml"
        ])
    );
    assert_eq!(
        c["env"],
        json!([
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}
        ])
    );
    assert_eq!(
        c["volumeMounts"],
        json!([
            {"name": "host", "mountPath": "/host"},
            {"name": "manifest", "mountPath": "/yurtctl/manifest", "readOnly": true}
        ])
    );
    assert_eq!(
        pod["volumes"],
        json!([
            {"name": "host", "hostPath": {"path": "/"}},
            {"name": "manifest", "configMap": {"name": "yurt-static-set-yurt-hub",
                "items": [{"key": "yurthub", "path": "manifest.yaml"}]}}
        ])
    );
}

#[test]
fn the_restore_job_mounts_only_the_host() {
    let pod = &pod_of(true)["spec"];
    assert_eq!(pod["nodeName"], "edge-1");
    let c = &pod["containers"][0];
    assert_eq!(
        c["command"],
        json!([
            "yurtctl",
            "node-servant",
            "static-pod-upgrade",
            "--host-root",
            "/host",
            "--name",
            "yurthub",
            "--restore"
        ])
    );
    assert_eq!(c["env"][0]["name"], "NODE_NAME");
    assert_eq!(
        pod["volumes"],
        json!([{"name": "host", "hostPath": {"path": "/"}}])
    );
}
