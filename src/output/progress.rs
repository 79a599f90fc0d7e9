//! What both progress reporters count per running phase (node Jobs done of the planned total,
//! failures, rate) and the periodic count line of plain mode. PURE apart from the clock the
//! caller reads.

use std::time::Duration;

use super::NodeStep;
use crate::cluster::jobs::JobPhase;

/// How often plain mode prints a count line per running phase, unless
/// `YURTCTL_PROGRESS_PERIOD` says otherwise (read by `app::common::reporter`).
pub const COUNT_PERIOD: Duration = Duration::from_secs(10);

/// The node Jobs of one running phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseCounts {
    /// Nodes the plan gives the phase, when it runs node Jobs.
    pub total: Option<usize>,
    pub succeeded: usize,
    pub failed: usize,
    /// Nodes not done this run (a rollout's node that went NotReady before its turn).
    pub skipped: usize,
}

impl PhaseCounts {
    /// Counts a Job's end; returns whether `phase` is one (and whether it failed).
    pub fn count(&mut self, phase: &JobPhase) -> Option<bool> {
        let failed = match phase {
            JobPhase::Succeeded { .. } => false,
            JobPhase::Failed(_) | JobPhase::TimedOut(_) | JobPhase::Error(_) => true,
            _ => return None,
        };
        if failed {
            self.failed += 1;
        } else {
            self.succeeded += 1;
        }
        Some(failed)
    }

    /// Counts a node's step ([`super::Event::Node`]); returns whether the node failed, when
    /// the step is an end or a failure after one (a regressed node was done already).
    pub fn count_node(&mut self, step: NodeStep) -> Option<bool> {
        match step {
            NodeStep::Started => return None,
            NodeStep::Succeeded => self.succeeded += 1,
            NodeStep::Skipped => self.skipped += 1,
            NodeStep::Failed => self.failed += 1,
            NodeStep::Regressed => {
                self.succeeded = self.succeeded.saturating_sub(1);
                self.failed += 1;
            }
        }
        Some(matches!(step, NodeStep::Failed | NodeStep::Regressed))
    }

    /// Nodes that ended, well or not.
    pub fn done(&self) -> usize {
        self.succeeded + self.failed + self.skipped
    }

    /// Whether the phase has anything to count (node Jobs planned or seen).
    pub fn counts_nodes(&self) -> bool {
        self.total.is_some() || self.done() > 0
    }

    /// `[nodes/edge] 412/1000 done, 3 failed, 38/s` after `elapsed` of the phase (`, 2
    /// skipped` before the rate when nodes were skipped).
    pub fn line(&self, phase: &str, elapsed: Duration) -> String {
        let done = match self.total {
            Some(t) => format!("{}/{t}", self.done()),
            None => self.done().to_string(),
        };
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!("{n} skipped, "),
        };
        format!(
            "[{phase}] {done} done, {} failed, {skipped}{}",
            self.failed,
            rate(self.done(), elapsed)
        )
    }
}

/// `38/s`, `2.5/s`, `0.1/s`: whole numbers from 10 up, one decimal below.
pub fn rate(done: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let r = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    if r >= 10.0 {
        format!("{r:.0}/s")
    } else {
        format!("{r:.1}/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::jobs::JobFailure;

    #[test]
    fn count_lines() {
        let c = |total, succeeded, failed| PhaseCounts {
            total,
            succeeded,
            failed,
            skipped: 0,
        };
        let s = Duration::from_secs;
        for (counts, elapsed, want) in [
            (
                c(Some(1000), 409, 3),
                s(11),
                "[nodes/edge] 412/1000 done, 3 failed, 37/s",
            ),
            (
                c(Some(200), 0, 0),
                s(10),
                "[nodes/edge] 0/200 done, 0 failed, 0.0/s",
            ),
            (c(None, 5, 0), s(2), "[nodes/edge] 5 done, 0 failed, 2.5/s"),
            (
                c(Some(3), 1, 0),
                Duration::ZERO,
                "[nodes/edge] 1/3 done, 0 failed, 0.0/s",
            ),
            (
                PhaseCounts {
                    skipped: 2,
                    ..c(Some(10), 3, 1)
                },
                s(2),
                "[nodes/edge] 6/10 done, 1 failed, 2 skipped, 3.0/s",
            ),
        ] {
            assert_eq!(counts.line("nodes/edge", elapsed), want);
        }
    }

    #[test]
    fn node_steps_count_like_job_ends() {
        let mut c = PhaseCounts::default();
        for (step, want) in [
            (NodeStep::Started, None),
            (NodeStep::Succeeded, Some(false)),
            (NodeStep::Succeeded, Some(false)),
            (NodeStep::Skipped, Some(false)),
            (NodeStep::Failed, Some(true)),
            // a node counted as succeeded fails afterwards: still one node done
            (NodeStep::Regressed, Some(true)),
        ] {
            assert_eq!(c.count_node(step), want, "{step:?}");
        }
        assert_eq!((c.succeeded, c.failed, c.skipped, c.done()), (1, 2, 1, 4));
    }

    #[test]
    fn only_ends_count() {
        let failure = || {
            Box::new(JobFailure {
                reason: "BackoffLimitExceeded".into(),
                message: String::new(),
                exit_code: Some(1),
                waiting: None,
                pod: None,
                logs_tail: String::new(),
                events: Vec::new(),
            })
        };
        let mut c = PhaseCounts::default();
        assert!(!c.counts_nodes());
        for (phase, want) in [
            (JobPhase::Created, None),
            (JobPhase::Running, None),
            (JobPhase::Adopted, None),
            (
                JobPhase::Succeeded {
                    elapsed: Duration::from_secs(1),
                },
                Some(false),
            ),
            (JobPhase::Failed(failure()), Some(true)),
            (JobPhase::TimedOut(failure()), Some(true)),
        ] {
            assert_eq!(c.count(&phase), want, "{phase:?}");
        }
        assert_eq!((c.succeeded, c.failed, c.done()), (1, 2, 3));
        assert!(c.counts_nodes());
    }
}
