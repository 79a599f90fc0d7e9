//! PlatformAdmins stay deletable on a cluster yurtctl converted, with OpenYurt v1.7.0's real
//! yurt-manager: its v1beta1 validating webhook also validates the old object on update, so a
//! PlatformAdmin whose NodePool was deleted took no update, its finalizer's removal included
//! (docs/profiles.md, PlatformAdmin webhooks).

mod support;

use std::time::{Duration, Instant};

use support::{kubectl, real};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platformadmin_whose_nodepool_is_gone_can_still_be_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let sim = real::converted_cluster(dir.path(), 2).await;
    let kc = sim.kubeconfig_path();

    tokio::task::block_in_place(|| {
        real::kubectl_create(
            &kc,
            r#"{"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool", "metadata": {"name": "hangzhou"}, "spec": {"type": "Edge"}}"#,
        );
        // a finalizer of the user's own, as a tool that cleans up after EdgeX would hold
        real::kubectl_create(
            &kc,
            r#"{"apiVersion": "iot.openyurt.io/v1beta1", "kind": "PlatformAdmin",
                "metadata": {"name": "edgex", "namespace": "default",
                  "finalizers": ["example.com/edgex-cleanup"]},
                "spec": {"platform": "edgex", "version": "napa", "nodepools": ["hangzhou"]}}"#,
        );
    });
    // its NodePool goes: the PlatformAdmin no longer passes validation; deleting it then
    // takes the update that removes the finalizer
    kubectl(&kc, &["delete", "nodepool", "hangzhou"]);
    kubectl(
        &kc,
        &[
            "-n",
            "default",
            "delete",
            "platformadmin",
            "edgex",
            "--wait=false",
        ],
    );
    kubectl(
        &kc,
        &[
            "-n",
            "default",
            "patch",
            "platformadmin",
            "edgex",
            "--type",
            "json",
            "-p",
            r#"[{"op": "remove", "path": "/metadata/finalizers"}]"#,
        ],
    );
    let start = Instant::now();
    loop {
        let left = kubectl(
            &kc,
            &["-n", "default", "get", "platformadmins", "-o", "name"],
        );
        if left.trim().is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "still deleting: {}",
            real::kubectl_json(&kc, &["-n", "default", "get", "platformadmin", "edgex"])
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    sim.shutdown().await;
}
