//! The terminal reporter: one bar per running phase (node Jobs done of the planned total,
//! failures, rate, ETA; a spinner for phases without node Jobs), a permanent line above the
//! bars for each finished phase and for each failure as it happens, and a line per node only
//! with `-v` (at 10,000 nodes a line or a spinner per node would flood the screen). Used only
//! when `terminal::resolve` says `Bars`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use console::{Term, style};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::progress::{PhaseCounts, rate};
use super::{Event, NodeStep, Reporter, event_lines};
use crate::cluster::jobs::{JobEvent, JobPhase};

/// How many failures of a phase are shown with their Job's log and events (all of them with
/// `-v`); later ones get their one line (the result has every log).
const DETAILED_FAILURES: usize = 3;

const TICK: Duration = Duration::from_millis(100);

/// The bars on screen, if any: log lines are written around them (see [`LogWriter`]).
static ACTIVE: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// stderr for log lines (tracing): while bars are drawn, the bars are cleared for the line
/// and redrawn below it, so neither overwrites the other.
pub struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let bars = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match bars {
            Some(bars) => bars.suspend(|| std::io::stderr().write(buf)),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

pub struct TtyReporter {
    bars: MultiProgress,
    state: Mutex<BTreeMap<String, PhaseBar>>,
    /// `-v`: every note and every node's end as a line; otherwise notes of a running phase only
    /// pass through its bar (except warnings) and only failures get lines.
    verbose: bool,
}

struct PhaseBar {
    bar: ProgressBar,
    started: Instant,
    counts: PhaseCounts,
    /// Nodes whose Job was created or adopted and has not ended.
    running: BTreeSet<String>,
}

impl PhaseBar {
    fn message(&self) -> String {
        // failures first: a narrow terminal cuts the end of the line
        let mut parts = Vec::new();
        if self.counts.failed > 0 {
            parts.push(format!("{} failed", self.counts.failed));
        }
        if self.counts.skipped > 0 {
            parts.push(format!("{} skipped", self.counts.skipped));
        }
        if !self.running.is_empty() {
            parts.push(format!("{} running", self.running.len()));
        }
        parts.join(", ")
    }

    /// `(200 succeeded, 3 failed)` for the phase's closing line.
    fn totals(&self) -> String {
        let c = &self.counts;
        let skipped = match c.skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        };
        match (c.succeeded, c.failed, c.skipped) {
            (0, 0, 0) => String::new(),
            (s, 0, _) => format!(" ({s} succeeded{skipped})"),
            (s, f, _) => format!(" ({s} succeeded, {f} failed{skipped})"),
        }
    }
}

fn phase_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {wide_msg} {elapsed:.dim}")
        .expect("a valid template")
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✔")
}

/// `⠋ [nodes/edge] ━━━━━━╸      412/1000 38/s ETA 15s 3 failed, 50 running` (the counts last:
/// a narrow terminal cuts the line's end).
fn nodes_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner:.cyan} {prefix:.bold} {bar:20.cyan/blue} {pos}/{len} {rate:.dim} {left:.dim} {msg}",
    )
    .expect("a valid template")
    .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = w.write_str(&rate(s.pos() as usize, s.elapsed()));
    })
    // before the first node ends there is nothing to estimate from
    .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = match s.pos() {
            0 => w.write_str("ETA -"),
            _ => write!(w, "ETA {:#}", indicatif::HumanDuration(s.eta())),
        };
    })
    .progress_chars("━╸ ")
    .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✔")
}

impl TtyReporter {
    /// Draws on stderr (even when it is not a terminal: `--progress=bars` asked for it).
    pub fn stderr(verbose: bool) -> Self {
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(Term::stderr()), 10);
        let bars = MultiProgress::with_draw_target(target);
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(bars.clone());
        TtyReporter {
            bars,
            state: Mutex::new(BTreeMap::new()),
            verbose,
        }
    }

    fn println(&self, line: String) {
        let _ = self.bars.println(line);
    }

    fn phase<'s>(&self, state: &'s mut BTreeMap<String, PhaseBar>, id: &str) -> &'s mut PhaseBar {
        state.entry(id.to_owned()).or_insert_with(|| {
            let bar = self.bars.add(ProgressBar::new_spinner());
            bar.set_style(phase_style());
            bar.set_prefix(format!("[{id}]"));
            bar.enable_steady_tick(TICK);
            PhaseBar {
                bar,
                started: Instant::now(),
                counts: PhaseCounts::default(),
                running: BTreeSet::new(),
            }
        })
    }

    fn job(&self, state: &mut BTreeMap<String, PhaseBar>, phase: &str, ev: &JobEvent) {
        let p = self.phase(state, phase);
        let failed = match p.counts.count(&ev.phase) {
            None => {
                if matches!(ev.phase, JobPhase::Created | JobPhase::Adopted) {
                    p.running.insert(ev.node.clone());
                }
                p.bar.set_message(p.message());
                return;
            }
            Some(failed) => failed,
        };
        let lines = event_lines(&Event::Job { phase, event: ev });
        self.ended(p, &ev.node, failed, true, lines);
    }

    fn node(&self, state: &mut BTreeMap<String, PhaseBar>, e: &Event<'_>) {
        let Event::Node {
            phase, node, step, ..
        } = e
        else {
            return;
        };
        let p = self.phase(state, phase);
        let Some(failed) = p.counts.count_node(*step) else {
            p.running.insert((*node).to_owned());
            p.bar.set_message(p.message());
            return;
        };
        // a regressed node was counted done when it succeeded
        self.ended(
            p,
            node,
            failed,
            *step != NodeStep::Regressed,
            event_lines(e),
        );
    }

    /// A node's end (or its failure after one): the bar moves on (`advance`); a failure gets
    /// its line (and the first few their details), a success only with `-v`.
    fn ended(&self, p: &mut PhaseBar, node: &str, failed: bool, advance: bool, lines: Vec<String>) {
        let verbose = self.verbose;
        p.running.remove(node);
        if advance {
            p.bar.inc(1);
        }
        p.bar.set_message(p.message());
        if !failed && !verbose {
            return;
        }
        let mark = if failed {
            style("✖").red().for_stderr()
        } else {
            style("✔").green().for_stderr()
        };
        let detailed = verbose || p.counts.failed <= DETAILED_FAILURES;
        for (i, l) in lines.into_iter().enumerate() {
            if i == 0 {
                self.println(format!("  {mark} {l}"));
            } else if detailed {
                self.println(format!("    {l}"));
            }
        }
        if failed && p.counts.failed == DETAILED_FAILURES + 1 && !verbose {
            self.println(format!(
                "    {}",
                style(
                    "(the logs of later failures: -v, or the result's nodes[].logs with -o json)"
                )
                .dim()
                .for_stderr()
            ));
        }
    }
}

impl Reporter for TtyReporter {
    fn event(&self, e: Event<'_>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            Event::PhaseStarted(id) => {
                self.phase(&mut state, id).bar.set_message("running");
            }
            Event::PhaseNodes { phase, total } => {
                let p = self.phase(&mut state, phase);
                p.counts.total = Some(total);
                p.bar.set_style(nodes_style());
                p.bar.set_length(total as u64);
                p.bar.set_message(p.message());
            }
            Event::PhaseSkipped(id) => {
                self.println(format!(
                    "{} [{id}] skipped (--skip-phases)",
                    style("-").dim().for_stderr()
                ));
            }
            Event::PhaseDone(id) => {
                let p = self.phase(&mut state, id);
                let secs = p.started.elapsed().as_secs_f64();
                let totals = p.totals();
                p.bar.finish_and_clear();
                self.bars.remove(&p.bar);
                self.println(format!(
                    "{} [{id}] done in {secs:.1}s{totals}",
                    style("✔").green().for_stderr()
                ));
                state.remove(id);
            }
            Event::Note { phase, ref message } => {
                // a note may come from a phase that never starts (nothing to do)
                let running = state.get(phase);
                if let Some(p) = running
                    && p.counts.total.is_none()
                {
                    p.bar.set_message(message.clone());
                }
                if running.is_none() || self.verbose || message.starts_with("warning") {
                    self.println(format!(
                        "  {}",
                        style(format!("[{phase}] {message}")).dim().for_stderr()
                    ));
                }
            }
            Event::Job { phase, event } => self.job(&mut state, phase, event),
            Event::Node { .. } => self.node(&mut state, &e),
        }
    }
}

impl Drop for TtyReporter {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for p in std::mem::take(state).into_values() {
            p.bar.finish_and_clear();
        }
        let _ = self.bars.clear();
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let _ = Term::stderr().show_cursor();
    }
}

/// Shows nothing (`--progress=none`, `-q`).
pub struct SilentReporter;

impl Reporter for SilentReporter {
    fn event(&self, _: Event<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::jobs::JobFailure;

    fn hidden(verbose: bool) -> TtyReporter {
        TtyReporter {
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            state: Mutex::new(BTreeMap::new()),
            verbose,
        }
    }

    fn ev(node: &str, phase: JobPhase) -> JobEvent {
        JobEvent {
            node: node.into(),
            job: format!("yurtctl-convert-{node}"),
            phase,
        }
    }

    fn failed() -> JobPhase {
        JobPhase::Failed(Box::new(JobFailure {
            reason: "BackoffLimitExceeded".into(),
            message: String::new(),
            exit_code: Some(1),
            waiting: None,
            pod: None,
            logs_tail: "boom\n".into(),
            events: Vec::new(),
        }))
    }

    #[test]
    fn one_bar_per_phase_counts_its_nodes() {
        let r = hidden(false);
        r.event(Event::PhaseStarted("nodes/edge"));
        r.event(Event::PhaseNodes {
            phase: "nodes/edge",
            total: 200,
        });
        for i in 0..200 {
            r.event(Event::Job {
                phase: "nodes/edge",
                event: &ev(&format!("w{i}"), JobPhase::Created),
            });
        }
        for i in 0..150 {
            let end = if i % 50 == 0 {
                failed()
            } else {
                JobPhase::Succeeded {
                    elapsed: Duration::from_secs(1),
                }
            };
            r.event(Event::Job {
                phase: "nodes/edge",
                event: &ev(&format!("w{i}"), end),
            });
        }
        {
            let state = r.state.lock().unwrap();
            // one bar for the phase, whatever the number of nodes
            assert_eq!(state.len(), 1);
            let p = &state["nodes/edge"];
            assert_eq!(
                (p.bar.position(), p.bar.length()),
                (150, Some(200)),
                "done of the planned total"
            );
            assert_eq!(p.message(), "3 failed, 50 running");
            assert_eq!(p.totals(), " (147 succeeded, 3 failed)");
        }
        r.event(Event::PhaseDone("nodes/edge"));
        assert!(r.state.lock().unwrap().is_empty());
        // a note outside a running phase draws no bar that would outlive the run
        r.event(Event::Note {
            phase: "kcm",
            message: "nothing to do".into(),
        });
        assert!(r.state.lock().unwrap().is_empty());
    }

    #[test]
    fn node_steps_share_the_bar_of_node_jobs() {
        let r = hidden(false);
        r.event(Event::PhaseStarted("nodes"));
        r.event(Event::PhaseNodes {
            phase: "nodes",
            total: 5,
        });
        let step = |node: &str, step: NodeStep| {
            r.event(Event::Node {
                phase: "nodes",
                node,
                step,
                message: format!("{step:?}"),
                details: Vec::new(),
            })
        };
        for n in ["w1", "w2", "w3", "w4"] {
            step(n, NodeStep::Started);
        }
        step("w1", NodeStep::Succeeded);
        step("w2", NodeStep::Succeeded);
        step("w3", NodeStep::Failed);
        step("w5", NodeStep::Skipped);
        // w2 went NotReady after its upgrade: a failure, not one more node done
        step("w2", NodeStep::Regressed);
        let state = r.state.lock().unwrap();
        let p = &state["nodes"];
        assert_eq!((p.bar.position(), p.bar.length()), (4, Some(5)));
        assert_eq!(p.message(), "2 failed, 1 skipped, 1 running");
        assert_eq!(p.totals(), " (1 succeeded, 2 failed, 1 skipped)");
    }

    #[test]
    fn a_phase_without_node_jobs_keeps_its_spinner() {
        let r = hidden(true);
        r.event(Event::PhaseStarted("components"));
        let state = r.state.lock().unwrap();
        let p = &state["components"];
        assert_eq!((p.bar.length(), p.totals()), (None, String::new()));
    }
}
