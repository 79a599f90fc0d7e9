//! What the rollout driver says about a node that failed: the mirror pod's state, the Job's
//! reason, log and events (for the failure's line as it happens and for the result).

use crate::cluster::jobs::{JobOutcome, NodeJobResult, not_ready_message};
use crate::cluster::staticset::MirrorPod;
use crate::output::{failure_details, failure_summary};

/// `nginx-w1 phase=Running ready=false revision=…`, or that there is none.
pub(super) fn pod_state(p: Option<&MirrorPod>) -> String {
    match p {
        None => "no mirror pod".into(),
        Some(p) => format!(
            "{} phase={} ready={} revision={}",
            p.pod,
            if p.phase.is_empty() { "-" } else { &p.phase },
            p.ready,
            p.revision.as_deref().unwrap_or("<none>")
        ),
    }
}

/// The Job's reason, log tail and events as one text (the result's `logs`).
pub(super) fn failure_logs(r: &NodeJobResult) -> Option<String> {
    match &r.outcome {
        JobOutcome::Failed(f) | JobOutcome::TimedOut(f) => {
            let mut s = format!("{}: {}", f.reason, f.message);
            if !f.logs_tail.is_empty() {
                s.push('\n');
                s.push_str(f.logs_tail.trim_end());
            }
            for e in &f.events {
                s.push('\n');
                s.push_str(e);
            }
            Some(s)
        }
        JobOutcome::Error(e) => Some(e.to_string()),
        JobOutcome::NodeNotReady(d) => Some(not_ready_message(*d)),
        JobOutcome::Succeeded => None,
    }
}

/// Why a node's upgrade Job failed, and its log and events to show under that line.
pub(super) fn failure_line(r: &NodeJobResult) -> (String, Vec<String>) {
    match &r.outcome {
        JobOutcome::Failed(f) | JobOutcome::TimedOut(f) => (failure_summary(f), failure_details(f)),
        JobOutcome::Error(e) => (e.to_string(), Vec::new()),
        JobOutcome::NodeNotReady(d) => (not_ready_message(*d), Vec::new()),
        JobOutcome::Succeeded => (String::new(), Vec::new()),
    }
}
