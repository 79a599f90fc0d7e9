//! `yurtctl diagnose`'s findings: what is wrong in a converted cluster, with the evidence and
//! the fix in words a user can act on. PURE: from the snapshot, what `cluster::health` read,
//! the journal's profile and the time.

use std::fmt;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::converted_role;
use crate::cluster::health::Health;
use crate::cluster::snapshot::ClusterSnapshot;
use crate::render::Profile;

/// How bad a finding is: an error is what stops nodes or the components working; a warning
/// what will; information only says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One thing diagnose found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    pub severity: Severity,
    /// The check that found it (stable, CamelCase).
    pub check: &'static str,
    /// What it is about (`node/NAME`, `deployment/kube-system/yurt-manager`, `cluster`).
    pub subject: String,
    /// What was seen.
    pub evidence: String,
    /// What to do.
    pub fix: String,
}

fn finding(
    severity: Severity,
    check: &'static str,
    subject: impl Into<String>,
    evidence: impl Into<String>,
    fix: impl Into<String>,
) -> Diagnosis {
    Diagnosis {
        severity,
        check,
        subject: subject.into(),
        evidence: evidence.into(),
        fix: fix.into(),
    }
}

/// The checks this diagnose runs, in order (the result lists them).
pub const CHECKS: [&str; 8] = [
    "Leftovers",
    "BootstrapToken",
    "YurtHubCertificates",
    "YurtManager",
    "KubeControllerManager",
    "NodePoolLabels",
    "UpstreamConversion",
    "NodeReady",
];

/// How long a YurtHub certificate request may wait for approval before it is a finding.
pub const CSR_PENDING_AFTER: SignedDuration = SignedDuration::from_secs(300);

/// Everything wrong in the cluster, worst first; `nodes` limits the node findings to those
/// nodes (empty: every node).
pub fn diagnose(
    snap: &ClusterSnapshot,
    health: &Health,
    profile: Option<&Profile>,
    now: Timestamp,
    nodes: &[String],
) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    leftovers(snap, now, &mut out);
    bootstrap_token(health, now, &mut out);
    yurthub_certificates(health, now, &mut out);
    if let Some(p) = profile {
        yurt_manager(p, health, &mut out);
        node_lifecycle(p, snap, &mut out);
        pool_labels(p, snap, health, nodes, &mut out);
    }
    upstream_conversion(snap, nodes, &mut out);
    node_ready(snap, nodes, &mut out);
    out.sort_by_key(|d| std::cmp::Reverse(d.severity));
    out
}

fn leftovers(snap: &ClusterSnapshot, now: Timestamp, out: &mut Vec<Diagnosis>) {
    let live = snap.lock.as_ref().filter(|l| !l.expires_in(now).is_zero());
    if let Some(l) = &snap.lock
        && live.is_none()
    {
        out.push(finding(
            Severity::Warning,
            "Leftovers",
            "lease/kube-system/yurtctl-lock",
            format!("{} stopped renewing the run lock", l.describe()),
            "the run died or was killed: re-run the same command to go on from the journal (it \
             takes the lock over)",
        ));
    }
    if live.is_some() {
        return;
    }
    for j in &snap.jobs {
        if j.state == "Complete" {
            continue;
        }
        out.push(finding(
            Severity::Warning,
            "Leftovers",
            format!("job/kube-system/{}", j.name),
            format!(
                "a node Job of yurtctl's is {} with no run holding the lock{}",
                j.state.to_lowercase(),
                j.node
                    .as_deref()
                    .map(|n| format!(" (node {n})"))
                    .unwrap_or_default()
            ),
            "a run stopped before it cleaned up: re-run it (convert, revert) to go on, or look at \
             the Job's pod log (kubectl -n kube-system logs job/NAME) if it failed",
        ));
    }
    if let Some(j) = &snap.journal {
        let mut stuck: Vec<String> = j.unfinished().into_iter().map(|(n, _, _)| n).collect();
        stuck.dedup();
        if !stuck.is_empty() {
            out.push(finding(
                Severity::Error,
                "Leftovers",
                "configmap/kube-system/yurtctl-state",
                format!(
                    "the last {} did not finish on {} node(s): {}",
                    j.command,
                    stuck.len(),
                    super::first_names(&stuck.iter().map(String::as_str).collect::<Vec<_>>(), 5)
                ),
                format!(
                    "run `yurtctl {}` again to finish it, or `yurtctl revert --nodes …` to take \
                     those nodes out",
                    j.command
                ),
            ));
        }
    }
}

fn bootstrap_token(health: &Health, now: Timestamp, out: &mut Vec<Diagnosis>) {
    let Some(t) = &health.token else {
        return;
    };
    let subject = format!("secret/kube-system/bootstrap-token-{}", t.id);
    let fix = "only a node whose YurtHub has no certificate yet (a new node, a certificate lost) \
               needs it: re-run `yurtctl convert` to issue a new token before converting more \
               nodes (--token-ttl sets how long it lives)";
    let problem = match t.expiration {
        _ if !t.exists => Some("is gone (the token cleaner deletes expired tokens)".to_owned()),
        Some(e) if e <= now => Some(format!("expired at {e:.0}")),
        _ => None,
    };
    if let Some(p) = problem {
        out.push(finding(
            Severity::Warning,
            "BootstrapToken",
            subject,
            format!("the bootstrap token convert made for YurtHub {p}"),
            fix,
        ));
    }
}

fn yurthub_certificates(health: &Health, now: Timestamp, out: &mut Vec<Diagnosis>) {
    let approver = match &health.leader {
        Ok(Some(l)) => format!("yurt-manager {l} leads and approves them"),
        Ok(None) => "no yurt-manager leads, so nothing approves them".into(),
        Err(e) => format!("whether yurt-manager leads could not be read ({e})"),
    };
    // YurtHub's: its client certificate's, asked with convert's bootstrap token, and those it
    // asks as itself (plan::revert::HubCsrs says why these two)
    let bootstrap_user = health
        .token
        .as_ref()
        .map(|t| format!("system:bootstrap:{}", t.id));
    let hubs = health.csrs.iter().filter(|c| {
        Some(&c.username) == bootstrap_user.as_ref()
            || c.groups
                .iter()
                .any(|g| g == super::revert::YURTHUB_CSR_GROUP)
    });
    for c in hubs {
        let subject = format!("certificatesigningrequest/{}", c.name);
        if c.denied {
            out.push(finding(
                Severity::Error,
                "YurtHubCertificates",
                subject,
                format!(
                    "YurtHub's certificate request from {} was denied",
                    c.username
                ),
                "YurtHub waits for a certificate that will not come: delete the request (kubectl \
                 delete csr NAME) and restart YurtHub on the node; if it is denied again, check \
                 who denies it (kubectl get csr NAME -o yaml)",
            ));
            continue;
        }
        let waited = c.created.map(|t| now.duration_since(t));
        if !c.approved && waited.is_some_and(|w| w >= CSR_PENDING_AFTER) {
            out.push(finding(
                Severity::Error,
                "YurtHubCertificates",
                subject,
                format!(
                    "YurtHub's certificate request from {} has waited {}s for approval; {approver}",
                    c.username,
                    waited.map_or(0, |w| w.as_secs())
                ),
                "YurtHub starts only with a certificate: get yurt-manager running (kubectl -n \
                 kube-system get pods -l app.kubernetes.io/name=yurt-manager), or approve it by \
                 hand (kubectl certificate approve NAME)",
            ));
        } else if c.approved && !c.issued && waited.is_some_and(|w| w >= CSR_PENDING_AFTER) {
            out.push(finding(
                Severity::Error,
                "YurtHubCertificates",
                subject,
                format!(
                    "YurtHub's certificate request from {} is approved but not signed (signer {})",
                    c.username, c.signer
                ),
                "kube-controller-manager signs it: check that it runs with --cluster-signing-cert-file \
                 and --cluster-signing-key-file, and its csrsigning controller is on",
            ));
        }
    }
}

fn yurt_manager(p: &Profile, health: &Health, out: &mut Vec<Diagnosis>) {
    if !p.images.contains_key("yurt-manager") {
        return;
    }
    let subject = "deployment/kube-system/yurt-manager";
    match &health.yurt_manager {
        None => out.push(finding(
            Severity::Error,
            "YurtManager",
            subject,
            format!(
                "profile {} installs yurt-manager, and it is not there",
                p.name
            ),
            "re-run `yurtctl convert` with the same profile: it applies the components again",
        )),
        Some(d) if d.replicas == 0 => out.push(finding(
            Severity::Error,
            "YurtManager",
            subject,
            "scaled to 0 replicas",
            "no controller approves YurtHub's certificates or serves the webhooks: scale it \
             back (kubectl -n kube-system scale deployment yurt-manager --replicas=1)",
        )),
        Some(d) if d.available < 1 => out.push(finding(
            Severity::Error,
            "YurtManager",
            subject,
            format!("{} of {} replicas available", d.available, d.replicas),
            "no controller approves YurtHub's certificates or serves the webhooks: look at its \
             pods (kubectl -n kube-system describe pods -l app.kubernetes.io/name=yurt-manager)",
        )),
        Some(_) => {}
    }
    if health.yurt_manager.is_some() && health.webhook_endpoints.unwrap_or(0) == 0 {
        out.push(finding(
            Severity::Error,
            "YurtManager",
            "service/kube-system/yurt-manager-webhook-service",
            "the webhook Service has no ready endpoint",
            "the API server cannot call yurt-manager's webhooks, so writes of the objects they \
             admit (NodePools, nodes' OpenYurt labels) fail until a yurt-manager pod is Ready",
        ));
    }
}

/// A profile that needs kube-controller-manager's nodelifecycle off (its own controller
/// replaces it): every kube-controller-manager whose `--controllers` still runs it.
fn node_lifecycle(p: &Profile, snap: &ClusterSnapshot, out: &mut Vec<Diagnosis>) {
    if !p.disable_node_lifecycle || snap.journal.is_none() {
        return;
    }
    let kcm: Vec<_> = snap.nodes.iter().filter(|n| n.kcm_static_pod).collect();
    if kcm.is_empty() {
        out.push(finding(
            Severity::Warning,
            "KubeControllerManager",
            "cluster",
            format!(
                "profile {} needs kube-controller-manager's nodelifecycle controller off, and no \
                 kube-controller-manager runs as a static pod here, so it could not be checked",
                p.name
            ),
            "make sure its --controllers holds -nodelifecycle wherever it runs; otherwise edge \
             nodes cut off from the cloud are marked NotReady and their pods evicted",
        ));
    }
    for n in kcm {
        if n.kcm_runs_nodelifecycle() != Some(true) {
            continue;
        }
        out.push(finding(
            Severity::Error,
            "KubeControllerManager",
            format!("pod/kube-system/kube-controller-manager-{}", n.name),
            format!(
                "nodelifecycle runs (--controllers={}), and profile {} replaces it with its own \
                 controller: edge nodes cut off from the cloud are marked NotReady and their \
                 pods evicted (openyurtio/openyurt#267)",
                n.kcm_controllers.as_deref().unwrap_or_default(),
                p.name
            ),
            "re-run `yurtctl convert`: its kcm phase puts -nodelifecycle back in the manifest \
             (a kubeadm upgrade that rewrote the manifest takes it out)",
        ));
    }
}

/// yurt-manager's own node-conversion controller failed on a node (yurtctl converts nodes with
/// it off; it ran where another tool or an older setup turned it on).
fn upstream_conversion(snap: &ClusterSnapshot, nodes: &[String], out: &mut Vec<Diagnosis>) {
    for n in selected(snap, nodes) {
        let Some(why) = &n.upstream_conversion_failed else {
            continue;
        };
        out.push(finding(
            Severity::Error,
            "UpstreamConversion",
            format!("node/{}", n.name),
            format!(
                "yurt-manager's node-conversion controller reports YurtNodeConversionFailed ({why})"
            ),
            "its Job node-servant-conversion-NODE in kube-system has the log; yurtctl converts \
             nodes with that controller off (docs/profiles.md): run yurt-manager with \
             --controllers=-yurtnodeconversion,* and convert or revert the node with yurtctl",
        ));
    }
}

fn pool_labels(
    p: &Profile,
    snap: &ClusterSnapshot,
    health: &Health,
    nodes: &[String],
    out: &mut Vec<Diagnosis>,
) {
    let (Some(decl), Some(pools)) = (&p.node_pools, &health.node_pools) else {
        return;
    };
    for n in selected(snap, nodes) {
        if let Some(pool) = n.labels.get(&decl.label)
            && !pools.contains(pool)
        {
            out.push(finding(
                Severity::Error,
                "NodePoolLabels",
                format!("node/{}", n.name),
                format!("{}={pool} names a NodePool that does not exist", decl.label),
                format!(
                    "YurtHub on the node serves its pool's data from NodePool {pool}: create it \
                     (kubectl apply a NodePool named {pool}), or move the node to an existing \
                     pool"
                ),
            ));
        }
    }
}

fn node_ready(snap: &ClusterSnapshot, nodes: &[String], out: &mut Vec<Diagnosis>) {
    let Some(j) = &snap.journal else {
        return;
    };
    for n in selected(snap, nodes) {
        if n.ready || converted_role(j, &n.name).is_none() {
            continue;
        }
        out.push(finding(
            Severity::Error,
            "NodeReady",
            format!("node/{}", n.name),
            "a converted node is NotReady: its kubelet reaches the API server only through \
             YurtHub (127.0.0.1:10261)",
            "on the node: systemctl status yurthub (or the yurt-hub static pod: crictl ps), \
             journalctl -u kubelet; YurtHub's certificate and its bootstrap token are checked \
             above",
        ));
    }
}

fn selected<'a>(
    snap: &'a ClusterSnapshot,
    nodes: &'a [String],
) -> impl Iterator<Item = &'a crate::cluster::snapshot::NodeInfo> {
    snap.nodes
        .iter()
        .filter(move |n| nodes.is_empty() || nodes.contains(&n.name))
}

#[cfg(test)]
#[path = "diagnose_tests.rs"]
mod tests;
