use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::cluster::health::{CsrState, DeploymentState, Health, TokenState};
use crate::cluster::journal::{Journal, PhaseState};
use crate::cluster::lock::LockHolder;
use crate::cluster::snapshot::JobInfo;
use crate::plan::tests::three;
use crate::plan::{NODES_CLOUD, NODES_EDGE};

const NOW: &str = "2026-11-29T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn ago(secs: i64) -> Timestamp {
    now().checked_sub(SignedDuration::from_secs(secs)).unwrap()
}

/// `three()` converted with openyurt-v1.7, every node in its pool and Ready.
fn converted() -> ClusterSnapshot {
    let mut s = three();
    let mut j = Journal::new("convert", "openyurt-v1.7");
    j.token_id = Some("abcdef".into());
    j.set_phase("cp-1", NODES_CLOUD, PhaseState::Done, None);
    for w in ["worker-1", "worker-2"] {
        j.set_phase(w, NODES_EDGE, PhaseState::Done, None);
    }
    s.journal = Some(j);
    for n in &mut s.nodes {
        let pool = if n.name == "cp-1" { "cloud" } else { "edge" };
        n.labels
            .insert("apps.openyurt.io/nodepool".into(), pool.into());
    }
    s
}

fn healthy() -> Health {
    Health {
        token: Some(TokenState {
            id: "abcdef".into(),
            exists: true,
            expiration: Some(now().checked_add(SignedDuration::from_hours(6)).unwrap()),
        }),
        csrs: vec![csr("system:bootstrap:abcdef", &[], true, true, 600)],
        yurt_manager: Some(DeploymentState {
            replicas: 1,
            available: 1,
        }),
        leader: Ok(Some("yurt-manager-1".into())),
        webhook_endpoints: Some(1),
        node_pools: Some(BTreeSet::from(["cloud".into(), "edge".into()])),
    }
}

fn csr(user: &str, groups: &[&str], approved: bool, issued: bool, age: i64) -> CsrState {
    CsrState {
        name: format!("csr-{user}"),
        username: user.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        signer: "kubernetes.io/kube-apiserver-client".into(),
        created: Some(ago(age)),
        approved,
        denied: false,
        issued,
    }
}

fn run(s: &ClusterSnapshot, h: &Health) -> Vec<Diagnosis> {
    let profile = Profile::load("openyurt-v1.7").unwrap();
    diagnose(s, h, Some(&profile), now(), &[])
}

#[test]
fn a_healthy_converted_cluster_has_no_finding() {
    assert_eq!(run(&converted(), &healthy()), []);
}

/// What was broken → the one finding expected: severity, check, subject, words of the evidence.
type Case = (
    &'static str,
    fn(&mut ClusterSnapshot, &mut Health),
    (Severity, &'static str, &'static str, &'static str),
);

#[test]
fn each_problem_is_one_finding_with_what_was_seen_and_what_to_do() {
    let table: [Case; 12] = [
        (
            "a dead run's lock",
            |s, _| {
                s.lock = Some(LockHolder {
                    identity: "laptop-42".into(),
                    command: Some("convert".into()),
                    acquire_time: Some(ago(3600)),
                    renew_time: Some(ago(3000)),
                    duration: Duration::from_secs(60),
                })
            },
            (
                Severity::Warning,
                "Leftovers",
                "lease/kube-system/yurtctl-lock",
                "a convert run by laptop-42",
            ),
        ),
        (
            "a failed node Job",
            |s, _| {
                s.jobs.push(JobInfo {
                    name: "yurtctl-convert-worker-1".into(),
                    action: Some("convert".into()),
                    node: Some("worker-1".into()),
                    state: "Failed".into(),
                })
            },
            (
                Severity::Warning,
                "Leftovers",
                "job/kube-system/yurtctl-convert-worker-1",
                "is failed with no run holding the lock (node worker-1)",
            ),
        ),
        (
            "an unfinished convert",
            |s, _| {
                if let Some(j) = &mut s.journal {
                    j.set_phase("worker-2", NODES_EDGE, PhaseState::Failed, None);
                }
            },
            (
                Severity::Error,
                "Leftovers",
                "configmap/kube-system/yurtctl-state",
                "the last convert did not finish on 1 node(s): worker-2",
            ),
        ),
        (
            "an expired token",
            |_, h| {
                if let Some(t) = &mut h.token {
                    t.expiration = Some(ago(60));
                }
            },
            (
                Severity::Warning,
                "BootstrapToken",
                "secret/kube-system/bootstrap-token-abcdef",
                "expired at",
            ),
        ),
        (
            "a token the cleaner deleted",
            |_, h| {
                if let Some(t) = &mut h.token {
                    t.exists = false;
                }
            },
            (
                Severity::Warning,
                "BootstrapToken",
                "secret/kube-system/bootstrap-token-abcdef",
                "is gone",
            ),
        ),
        (
            "a YurtHub request nobody approves",
            |_, h| {
                h.leader = Ok(None);
                h.csrs.push(csr(
                    "system:node:worker-1",
                    &["openyurt:yurthub"],
                    false,
                    false,
                    900,
                ));
            },
            (
                Severity::Error,
                "YurtHubCertificates",
                "certificatesigningrequest/csr-system:node:worker-1",
                "has waited 900s for approval; no yurt-manager leads",
            ),
        ),
        (
            "a denied YurtHub request",
            |_, h| {
                let mut c = csr("system:bootstrap:abcdef", &[], false, false, 30);
                c.denied = true;
                h.csrs.push(c);
            },
            (
                Severity::Error,
                "YurtHubCertificates",
                "certificatesigningrequest/csr-system:bootstrap:abcdef",
                "was denied",
            ),
        ),
        (
            "yurt-manager down",
            |_, h| {
                h.yurt_manager = Some(DeploymentState {
                    replicas: 1,
                    available: 0,
                });
            },
            (
                Severity::Error,
                "YurtManager",
                "deployment/kube-system/yurt-manager",
                "0 of 1 replicas available",
            ),
        ),
        (
            "no webhook endpoint",
            |_, h| h.webhook_endpoints = Some(0),
            (
                Severity::Error,
                "YurtManager",
                "service/kube-system/yurt-manager-webhook-service",
                "no ready endpoint",
            ),
        ),
        (
            "a pool that does not exist",
            |_, h| {
                if let Some(p) = &mut h.node_pools {
                    p.remove("edge");
                }
            },
            (
                Severity::Error,
                "NodePoolLabels",
                "node/worker-1",
                "apps.openyurt.io/nodepool=edge names a NodePool that does not exist",
            ),
        ),
        (
            "upstream's conversion failed",
            |s, _| {
                s.nodes[1].upstream_conversion_failed = Some(
                    "ConvertFailed: conversion Job node-servant-conversion-worker-1 failed".into(),
                )
            },
            (
                Severity::Error,
                "UpstreamConversion",
                "node/worker-1",
                "YurtNodeConversionFailed (ConvertFailed",
            ),
        ),
        (
            "a converted node NotReady",
            |s, _| s.nodes[2].ready = false,
            (
                Severity::Error,
                "NodeReady",
                "node/worker-2",
                "a converted node is NotReady",
            ),
        ),
    ];
    for (what, break_it, (severity, check, subject, words)) in table {
        let (mut s, mut h) = (converted(), healthy());
        break_it(&mut s, &mut h);
        let mut got = run(&s, &h);
        if check == "NodePoolLabels" {
            // both workers are in the missing pool
            got.retain(|d| d.subject == subject);
        }
        assert_eq!(got.len(), 1, "{what}: {got:#?}");
        let d = &got[0];
        assert_eq!(
            (d.severity, d.check, d.subject.as_str()),
            (severity, check, subject),
            "{what}"
        );
        assert!(
            d.evidence.contains(words),
            "{what}: {d:#?}\nshould say: {words}"
        );
        assert!(!d.fix.is_empty(), "{what}");
    }
}

#[test]
fn a_live_run_is_no_leftover_and_the_node_list_narrows_node_findings() {
    let mut s = converted();
    s.lock = Some(LockHolder {
        identity: "ci-7".into(),
        command: Some("convert".into()),
        acquire_time: Some(ago(30)),
        renew_time: Some(ago(5)),
        duration: Duration::from_secs(60),
    });
    s.jobs.push(JobInfo {
        name: "yurtctl-convert-worker-1".into(),
        action: Some("convert".into()),
        node: Some("worker-1".into()),
        state: "Running".into(),
    });
    s.nodes[1].ready = false;
    s.nodes[2].ready = false;
    let profile = Profile::load("openyurt-v1.7").unwrap();
    let got = diagnose(&s, &healthy(), Some(&profile), now(), &["worker-2".into()]);
    let subjects: Vec<&str> = got.iter().map(|d| d.subject.as_str()).collect();
    assert_eq!(subjects, ["node/worker-2"], "{got:#?}");
}

#[test]
fn a_profile_that_needs_nodelifecycle_off_finds_every_kube_controller_manager_that_runs_it() {
    let legacy = Profile::load("legacy-v0.6").unwrap();
    let check = |controllers: Option<&str>, static_pod: bool| {
        let mut s = converted();
        if let Some(j) = &mut s.journal {
            j.profile = legacy.name.clone();
        }
        s.nodes[0].kcm_static_pod = static_pod;
        s.nodes[0].kcm_controllers = controllers.map(str::to_owned);
        diagnose(&s, &healthy(), Some(&legacy), now(), &[])
            .into_iter()
            .filter(|d| d.check == "KubeControllerManager")
            .map(|d| (d.severity, d.subject, d.evidence))
            .collect::<Vec<_>>()
    };
    assert_eq!(check(Some("-nodelifecycle,*,bootstrapsigner"), true), []);
    let on = check(Some("*,bootstrapsigner,tokencleaner"), true);
    assert_eq!(on.len(), 1, "{on:#?}");
    assert_eq!(
        (on[0].0, on[0].1.as_str()),
        (
            Severity::Error,
            "pod/kube-system/kube-controller-manager-cp-1"
        )
    );
    assert!(
        on[0]
            .2
            .contains("--controllers=*,bootstrapsigner,tokencleaner"),
        "{on:#?}"
    );
    assert_eq!(check(None, true), [], "no flag read: nothing is said");
    let unseen = check(None, false);
    assert_eq!(
        (unseen.len(), unseen[0].0),
        (1, Severity::Warning),
        "{unseen:#?}"
    );
    // openyurt-v1.7 leaves nodelifecycle on: nothing to find
    let mut s = converted();
    s.nodes[0].kcm_static_pod = true;
    s.nodes[0].kcm_controllers = Some("*".into());
    assert_eq!(run(&s, &healthy()), []);
}
