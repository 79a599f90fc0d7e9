//! Reporters and result printers (docs/architecture.md#progress-and-output): progress goes to
//! stderr (bars on a terminal, see `tty`, or one plain line per event with periodic counts, see
//! `plain`; `terminal::resolve` decides); results go to stdout (`-o json`). Only `app/` calls
//! these.

use std::io::Write;

use serde::Serialize;

pub mod diagnose;
mod plain;
pub mod progress;
pub mod redact;
pub mod staticpod;

use std::collections::BTreeMap;

use crate::cluster::jobs::{JobEvent, JobFailure, JobPhase};

pub mod status;
pub mod terminal;
pub mod tty;
mod upgrade;

pub use plain::PlainReporter;
pub use tty::{SilentReporter, TtyReporter};
pub use upgrade::UpgradeResult;

pub use crate::naming::API_VERSION;

/// `-o json|yaml` of `yurtctl images list` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageList {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub profile: String,
    pub openyurt_version: String,
    pub images: Vec<crate::render::PulledImage>,
}

/// Something worth a line on stderr.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    PhaseStarted(&'a str),
    PhaseSkipped(&'a str),
    PhaseDone(&'a str),
    /// The phase that just started runs node Jobs on `total` nodes (what its counts and bar
    /// measure against).
    PhaseNodes {
        phase: &'a str,
        total: usize,
    },
    /// A free-form note within a phase.
    Note {
        phase: &'a str,
        message: String,
    },
    /// Progress of a node Job.
    Job {
        phase: &'a str,
        event: &'a JobEvent,
    },
    /// Progress of a node in a phase whose nodes are done when more than their Job is (a
    /// static-pod rollout: the Job succeeded and the new pod is Ready); counted and shown as a
    /// node Job's end is. `details` (a failure's Job log, the pod's state) follow the line.
    Node {
        phase: &'a str,
        node: &'a str,
        step: NodeStep,
        message: String,
        details: Vec<String>,
    },
}

/// Where a node of an [`Event::Node`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStep {
    Started,
    Succeeded,
    Failed,
    /// Not done this run (it went NotReady before its turn); it counts as done.
    Skipped,
    /// Counted as succeeded earlier, it failed afterwards (NotReady after its upgrade).
    Regressed,
}

/// Where progress goes.
pub trait Reporter: Send + Sync {
    fn event(&self, e: Event<'_>);
}

/// The lines for one event (without trailing newlines).
pub fn event_lines(e: &Event<'_>) -> Vec<String> {
    match e {
        Event::PhaseStarted(p) => vec![format!("[{p}] started")],
        Event::PhaseSkipped(p) => vec![format!("[{p}] skipped (--skip-phases)")],
        Event::PhaseDone(p) => vec![format!("[{p}] done")],
        // the count lines say it
        Event::PhaseNodes { .. } => Vec::new(),
        Event::Note { phase, message } => vec![format!("[{phase}] {message}")],
        Event::Node {
            phase,
            node,
            message,
            details,
            ..
        } => {
            let mut out = vec![format!("[{phase}] node {node}: {message}")];
            out.extend(details.iter().cloned());
            out
        }
        Event::Job { phase, event } => {
            let head = format!("[{phase}] node {} (Job {}):", event.node, event.job);
            match &event.phase {
                JobPhase::Replacing { previous } => {
                    vec![format!(
                        "{head} replacing a {previous} Job from an earlier run"
                    )]
                }
                JobPhase::Created => vec![format!("{head} created")],
                JobPhase::Adopted => {
                    vec![format!("{head} adopted a running Job of an earlier run")]
                }
                JobPhase::Running => vec![format!("{head} running")],
                JobPhase::Succeeded { elapsed } => {
                    vec![format!("{head} succeeded in {:.1}s", elapsed.as_secs_f64())]
                }
                JobPhase::Failed(f) => failure_lines(&format!("{head} FAILED"), f),
                JobPhase::TimedOut(f) => failure_lines(&format!("{head} TIMED OUT"), f),
                JobPhase::Error(err) => vec![format!("{head} error: {err}")],
            }
        }
    }
}

fn failure_lines(head: &str, f: &JobFailure) -> Vec<String> {
    let mut out = vec![format!("{head}: {}", failure_summary(f))];
    out.extend(failure_details(f));
    out
}

/// A failed Job's log tail and events, indented under its line.
pub fn failure_details(f: &JobFailure) -> Vec<String> {
    let mut out = Vec::new();
    if !f.logs_tail.trim().is_empty() {
        out.push(format!(
            "  log of pod {}:",
            f.pod.as_deref().unwrap_or("(unknown)")
        ));
        out.extend(f.logs_tail.lines().map(|l| format!("    | {l}")));
    }
    if !f.events.is_empty() {
        out.push("  events:".into());
        out.extend(f.events.iter().map(|e| format!("    {e}")));
    }
    out
}

/// `BackoffLimitExceeded: … (exit code 1)`.
pub fn failure_summary(f: &JobFailure) -> String {
    let mut s = f.reason.clone();
    if !f.message.is_empty() {
        s.push_str(": ");
        s.push_str(&f.message);
    }
    if let Some(c) = f.exit_code {
        s.push_str(&format!(" (exit code {c})"));
    }
    if let Some(w) = &f.waiting {
        s.push_str(&format!(" (its container waits: {w})"));
    }
    s
}

/// How one node ended (ordered as the closing summary counts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeOutcome {
    Converted,
    AlreadyConverted,
    /// Not attempted this run because it is NotReady (the run counts as partial).
    Skipped,
    /// Not attempted this run because its phase was named in `--skip-phases`.
    PhaseSkipped,
    Failed,
    TimedOut,
    /// Revert: the node's Job undid convert's changes.
    Reverted,
    /// Revert: the journal records the node reverted by an earlier run.
    AlreadyReverted,
    /// Upgrade: the node's Job moved its YurtHub to the target release.
    Upgraded,
    /// Upgrade: an earlier run of the same upgrade moved it.
    AlreadyUpgraded,
    /// Upgrade: left for a later run by `-l/--selector`.
    NotSelected,
    /// Upgrade: not started, the run halted at a node before it.
    NotStarted,
    /// Upgrade: kept on the old release by `--partition`.
    Partitioned,
    /// Upgrade: left for a later run by `--canary` or `--pause`.
    Pending,
    /// `upgrade --rollback`: the node's Job moved its YurtHub back to the release the upgrade
    /// came from.
    RolledBack,
    /// `upgrade --rollback`: on that release already (the upgrade never moved it, or an
    /// earlier run of the rollback moved it back).
    AlreadyRolledBack,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeResult {
    pub name: String,
    pub role: String,
    pub result: NodeOutcome,
    pub message: String,
    /// The last lines of the node Job's log, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<String>,
    /// The node's NodePool (profiles with NodePools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Upgrade: how long YurtHub's address went unserved on the node while the old YurtHub
    /// gave way to the new one, as its Job measured it.
    #[serde(
        rename = "yurthubUnavailableMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub yurthub_unavailable_ms: Option<u64>,
}

/// `-o json` result of `yurtctl convert` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvertResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub profile: String,
    /// `ok`, `partial`, `timeout`, … ([`crate::exit::Exit::reason`]).
    pub result: String,
    pub exit_code: u8,
    pub message: String,
    pub nodes: Vec<NodeResult>,
}

impl ConvertResult {
    pub fn new(profile: &str) -> Self {
        ConvertResult {
            header: crate::naming::ResultHeader::of("ConvertResult"),
            profile: profile.into(),
            result: crate::exit::Exit::Ok.reason().into(),
            exit_code: 0,
            message: String::new(),
            nodes: Vec::new(),
        }
    }
}

/// `-o json` result of `yurtctl revert` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub profile: String,
    /// `ok`, `partial`, `timeout`, … ([`crate::exit::Exit::reason`]).
    pub result: String,
    pub exit_code: u8,
    pub message: String,
    pub nodes: Vec<NodeResult>,
    /// Objects deleted (`Kind ns/name`).
    pub deleted_objects: Vec<String>,
    /// Objects that existed before convert and were kept.
    pub kept_objects: Vec<String>,
    /// The journal and the lock were deleted: nothing of the conversion is left.
    pub complete: bool,
}

impl RevertResult {
    pub fn new(profile: &str) -> Self {
        RevertResult {
            header: crate::naming::ResultHeader::of("RevertResult"),
            profile: profile.into(),
            result: crate::exit::Exit::Ok.reason().into(),
            exit_code: 0,
            message: String::new(),
            nodes: Vec::new(),
            deleted_objects: Vec::new(),
            kept_objects: Vec::new(),
            complete: false,
        }
    }
}

/// The closing summary on stderr of a convert ([`result_lines`]).
pub fn summary_lines(r: &ConvertResult, wide: bool) -> Vec<String> {
    result_lines(&r.nodes, &r.message, wide)
}

/// The closing summary on stderr: how many nodes ended how, every node that failed or timed out
/// with its reason, then `message`. With `-o wide` ([`node_summary_lines`]) a line per node
/// instead: at 10,000 nodes that table is for asking, not for every run.
pub fn result_lines(nodes: &[NodeResult], message: &str, wide: bool) -> Vec<String> {
    if wide {
        return node_summary_lines(nodes, message);
    }
    let mut by_result: BTreeMap<NodeOutcome, usize> = BTreeMap::new();
    for n in nodes {
        *by_result.entry(n.result).or_default() += 1;
    }
    let counts: Vec<(String, usize)> = by_result
        .into_iter()
        .map(|(o, n)| (outcome_name(o), n))
        .collect();
    let failed: Vec<FailedNode<'_>> = nodes
        .iter()
        .filter(|n| matches!(n.result, NodeOutcome::Failed | NodeOutcome::TimedOut))
        .map(|n| FailedNode {
            name: &n.name,
            result: outcome_name(n.result),
            message: &n.message,
            details: Vec::new(),
        })
        .collect();
    closing_lines(&counts, &failed, message)
}

/// A node the closing summary lists by name: its result (as `-o json` spells it), its reason,
/// and lines shown under it.
pub struct FailedNode<'a> {
    pub name: &'a str,
    pub result: String,
    pub message: &'a str,
    pub details: Vec<String>,
}

/// The closing summary of every command with node results: `Nodes: 197 converted, 1 failed`
/// (`counts` in the order given), every failed node with its reason, then `message`.
pub fn closing_lines(
    counts: &[(String, usize)],
    failed: &[FailedNode<'_>],
    message: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    if !counts.is_empty() {
        let counts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        out.push(format!("Nodes: {}", counts.join(", ")));
    }
    if !failed.is_empty() {
        let width = failed
            .iter()
            .map(|n| n.name.len())
            .max()
            .unwrap_or(0)
            .min(30);
        let rwidth = failed
            .iter()
            .map(|n| n.result.len())
            .max()
            .unwrap_or(0)
            .max(9);
        out.push("Failed:".into());
        for n in failed {
            out.push(format!(
                "  {:<width$} {:<rwidth$} {}",
                n.name, n.result, n.message
            ));
            out.extend(n.details.iter().map(|d| format!("    {d}")));
        }
    }
    out.push(message.to_string());
    out
}

/// `converted`, `already-converted`, `timed-out`, … (as `-o json` spells it).
fn outcome_name(o: NodeOutcome) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// How many of a run's nodes failed, timed out or were skipped, and the closing message's
/// tail naming them (`; failed: a, b; timed out: c; skipped: d`, empty when all went well).
pub struct NodeFailures {
    pub tail: String,
    pub failed: usize,
    pub timed_out: usize,
    pub skipped: usize,
}

pub fn node_failures(nodes: &[NodeResult]) -> NodeFailures {
    let names = |o: NodeOutcome| {
        nodes
            .iter()
            .filter(|n| n.result == o)
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
    };
    let (failed, timed_out, skipped) = (
        names(NodeOutcome::Failed),
        names(NodeOutcome::TimedOut),
        names(NodeOutcome::Skipped),
    );
    let mut tail = String::new();
    for (what, names) in [
        ("failed", &failed),
        ("timed out", &timed_out),
        ("skipped", &skipped),
    ] {
        if !names.is_empty() {
            tail.push_str(&format!("; {what}: {}", names.join(", ")));
        }
    }
    NodeFailures {
        tail,
        failed: failed.len(),
        timed_out: timed_out.len(),
        skipped: skipped.len(),
    }
}

/// A NODE / ROLE / RESULT / MESSAGE table, then `message`.
pub fn node_summary_lines(nodes: &[NodeResult], message: &str) -> Vec<String> {
    let mut out = vec![format!(
        "{:<30} {:<6} {:<18} MESSAGE",
        "NODE", "ROLE", "RESULT"
    )];
    for n in nodes {
        let result = outcome_name(n.result);
        out.push(format!(
            "{:<30} {:<6} {:<18} {}",
            n.name, n.role, result, n.message
        ));
    }
    out.push(message.to_string());
    out
}

/// Prints a result object as pretty JSON on stdout.
pub fn print_json<T: Serialize>(v: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn failed_job_lines_show_log_and_events() {
        let ev = JobEvent {
            node: "w1".into(),
            job: "yurtctl-convert-w1".into(),
            phase: JobPhase::Failed(Box::new(JobFailure {
                reason: "BackoffLimitExceeded".into(),
                message: "Job has reached the specified backoff limit".into(),
                exit_code: Some(1),
                waiting: None,
                pod: Some("yurtctl-convert-w1-abcde".into()),
                logs_tail: "line one\nline two\n".into(),
                events: vec!["Warning BackoffLimitExceeded: x".into()],
            })),
        };
        let lines = event_lines(&Event::Job {
            phase: "nodes/edge",
            event: &ev,
        });
        assert_eq!(
            lines,
            vec![
                "[nodes/edge] node w1 (Job yurtctl-convert-w1): FAILED: BackoffLimitExceeded: Job has reached the specified backoff limit (exit code 1)",
                "  log of pod yurtctl-convert-w1-abcde:",
                "    | line one",
                "    | line two",
                "  events:",
                "    Warning BackoffLimitExceeded: x",
            ]
        );
        let ok = JobEvent {
            node: "w1".into(),
            job: "j".into(),
            phase: JobPhase::Succeeded {
                elapsed: Duration::from_millis(1500),
            },
        };
        assert_eq!(
            event_lines(&Event::Job {
                phase: "nodes/edge",
                event: &ok
            }),
            vec!["[nodes/edge] node w1 (Job j): succeeded in 1.5s"]
        );
    }

    fn node(name: &str, result: NodeOutcome, message: &str) -> NodeResult {
        NodeResult {
            name: name.into(),
            role: "edge".into(),
            result,
            message: message.into(),
            logs: None,
            pool: None,
            yurthub_unavailable_ms: None,
        }
    }

    #[test]
    fn closing_summary_counts_by_result_and_lists_failures() {
        use NodeOutcome::*;
        let mut many: Vec<NodeResult> = (0..197)
            .map(|i| node(&format!("w{i}"), Converted, "converted in 1.0s"))
            .collect();
        many.push(node("w-17", Failed, "BackoffLimitExceeded (exit code 1)"));
        many.push(node("w-200", TimedOut, "no end within 300s"));
        many.push(node("cp-1", AlreadyConverted, "already converted"));
        // (nodes, wide, lines)
        let cases: Vec<(Vec<NodeResult>, bool, Vec<&str>)> = vec![
            (vec![], false, vec!["nothing to do"]),
            (
                vec![node("w1", Converted, "ok")],
                false,
                vec!["Nodes: 1 converted", "nothing to do"],
            ),
            (
                many.clone(),
                false,
                vec![
                    "Nodes: 197 converted, 1 already-converted, 1 failed, 1 timed-out",
                    "Failed:",
                    "  w-17  failed    BackoffLimitExceeded (exit code 1)",
                    "  w-200 timed-out no end within 300s",
                    "nothing to do",
                ],
            ),
        ];
        for (nodes, wide, want) in cases {
            assert_eq!(result_lines(&nodes, "nothing to do", wide), want);
        }
        // -o wide: the table, a line per node
        let wide = result_lines(&many, "nothing to do", true);
        assert_eq!(wide.len(), many.len() + 2);
        assert!(wide[0].starts_with("NODE"));
        assert!(wide[1].starts_with("w0 ") && wide[1].contains("converted"));
    }

    #[test]
    fn result_json_shape() {
        let mut r = ConvertResult::new("openyurt-v1.6");
        r.message = "converted 1 node".into();
        r.nodes.push(NodeResult {
            name: "w1".into(),
            role: "edge".into(),
            result: NodeOutcome::AlreadyConverted,
            message: "already converted".into(),
            logs: None,
            pool: None,
            yurthub_unavailable_ms: None,
        });
        insta::assert_json_snapshot!("convert_result", r);
    }

    #[test]
    fn revert_result_json_shape() {
        let mut r = RevertResult::new("openyurt-v1.6");
        r.message = "reverted 1 node(s), deleted 1 object(s)".into();
        r.complete = true;
        r.deleted_objects
            .push("Secret kube-system/yurtctl-yurthub-bootstrap".into());
        r.nodes.push(NodeResult {
            name: "w1".into(),
            role: "edge".into(),
            result: NodeOutcome::Reverted,
            message: "reverted in 0.4s".into(),
            logs: None,
            pool: None,
            yurthub_unavailable_ms: None,
        });
        insta::assert_json_snapshot!("revert_result", r);
    }
}
