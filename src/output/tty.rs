//! The terminal reporter: one spinner per running phase, one per node Job under its phase,
//! and a permanent line for each finished phase, node and failure (printed above the bars,
//! so nothing is lost when the bars go). Used only when `terminal::resolve` says `Bars`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use console::{Term, style};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Event, Reporter, event_lines};
use crate::cluster::jobs::{JobEvent, JobPhase};

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
    state: Mutex<BTreeMap<String, PhaseBars>>,
    /// Keep every note as a line (`-v`); otherwise notes of a running phase only pass
    /// through its spinner, except warnings.
    all_notes: bool,
}

struct PhaseBars {
    bar: ProgressBar,
    started: Instant,
    nodes: BTreeMap<String, ProgressBar>,
    succeeded: usize,
    failed: usize,
}

impl PhaseBars {
    fn counts(&self) -> String {
        let mut parts = Vec::new();
        if !self.nodes.is_empty() {
            parts.push(format!("{} running", self.nodes.len()));
        }
        if self.succeeded > 0 {
            parts.push(format!("{} succeeded", self.succeeded));
        }
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        parts.join(", ")
    }
}

fn phase_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {wide_msg} {elapsed:.dim}")
        .expect("a valid template")
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✔")
}

fn node_style() -> ProgressStyle {
    ProgressStyle::with_template("  {spinner:.blue} {prefix} {wide_msg} {elapsed:.dim}")
        .expect("a valid template")
        .tick_chars("⠁⠂⠄⡀⢀⠠⠐⠈·")
}

impl TtyReporter {
    /// Draws on stderr (even when it is not a terminal: `--progress=bars` asked for it).
    pub fn stderr(all_notes: bool) -> Self {
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(Term::stderr()), 10);
        let bars = MultiProgress::with_draw_target(target);
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(bars.clone());
        TtyReporter {
            bars,
            state: Mutex::new(BTreeMap::new()),
            all_notes,
        }
    }

    fn println(&self, line: String) {
        let _ = self.bars.println(line);
    }

    fn phase<'s>(&self, state: &'s mut BTreeMap<String, PhaseBars>, id: &str) -> &'s mut PhaseBars {
        state.entry(id.to_owned()).or_insert_with(|| {
            let bar = self.bars.add(ProgressBar::new_spinner());
            bar.set_style(phase_style());
            bar.set_prefix(format!("[{id}]"));
            bar.enable_steady_tick(TICK);
            PhaseBars {
                bar,
                started: Instant::now(),
                nodes: BTreeMap::new(),
                succeeded: 0,
                failed: 0,
            }
        })
    }

    fn job(&self, state: &mut BTreeMap<String, PhaseBars>, phase: &str, ev: &JobEvent) {
        let p = self.phase(state, phase);
        let status = match &ev.phase {
            JobPhase::Replacing { previous } => Some(format!("replacing a {previous} Job")),
            JobPhase::Created => Some("Job created".into()),
            JobPhase::Adopted => Some("adopted a running Job".into()),
            JobPhase::Running => Some("running".into()),
            _ => None,
        };
        if let Some(status) = status {
            let anchor = p.nodes.values().last().unwrap_or(&p.bar).clone();
            let bar = p.nodes.entry(ev.node.clone()).or_insert_with(|| {
                let bar = self.bars.insert_after(&anchor, ProgressBar::new_spinner());
                bar.set_style(node_style());
                bar.set_prefix(format!("node {}", ev.node));
                bar.enable_steady_tick(TICK);
                bar
            });
            bar.set_message(format!("{status} ({})", ev.job));
        } else {
            if let Some(bar) = p.nodes.remove(&ev.node) {
                bar.finish_and_clear();
                self.bars.remove(&bar);
            }
            let failed = !matches!(ev.phase, JobPhase::Succeeded { .. });
            if failed {
                p.failed += 1;
            } else {
                p.succeeded += 1;
            }
            let mark = if failed {
                style("✖").red().for_stderr()
            } else {
                style("✔").green().for_stderr()
            };
            let lines = event_lines(&Event::Job { phase, event: ev });
            for (i, l) in lines.into_iter().enumerate() {
                if i == 0 {
                    self.println(format!("  {mark} {l}"));
                } else {
                    self.println(format!("    {l}"));
                }
            }
        }
        let counts = p.counts();
        p.bar.set_message(counts);
    }
}

impl Reporter for TtyReporter {
    fn event(&self, e: Event<'_>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            Event::PhaseStarted(id) => {
                self.phase(&mut state, id).bar.set_message("running");
            }
            Event::PhaseSkipped(id) => {
                self.println(format!(
                    "{} [{id}] skipped (--skip-phases)",
                    style("-").dim().for_stderr()
                ));
            }
            Event::PhaseDone(id) => {
                let p = self.phase(&mut state, id);
                let counts = p.counts();
                let secs = p.started.elapsed().as_secs_f64();
                for bar in std::mem::take(&mut p.nodes).into_values() {
                    bar.finish_and_clear();
                    self.bars.remove(&bar);
                }
                p.bar.finish_and_clear();
                self.bars.remove(&p.bar);
                let detail = if counts.is_empty() {
                    String::new()
                } else {
                    format!(" ({counts})")
                };
                self.println(format!(
                    "{} [{id}] done in {secs:.1}s{detail}",
                    style("✔").green().for_stderr()
                ));
                state.remove(id);
            }
            Event::Note { phase, ref message } => {
                // a note may come from a phase that never starts (nothing to do)
                let running = state.get(phase);
                if let Some(p) = running {
                    p.bar.set_message(message.clone());
                }
                if running.is_none() || self.all_notes || message.starts_with("warning") {
                    self.println(format!(
                        "  {}",
                        style(format!("[{phase}] {message}")).dim().for_stderr()
                    ));
                }
            }
            Event::Job { phase, event } => self.job(&mut state, phase, event),
        }
    }
}

impl Drop for TtyReporter {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for p in std::mem::take(state).into_values() {
            for bar in p.nodes.into_values() {
                bar.finish_and_clear();
            }
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

    #[test]
    fn node_jobs_come_and_go_under_their_phase() {
        let r = TtyReporter {
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            state: Mutex::new(BTreeMap::new()),
            all_notes: false,
        };
        let ev = |node: &str, phase| JobEvent {
            node: node.into(),
            job: format!("yurtctl-convert-{node}"),
            phase,
        };
        r.event(Event::PhaseStarted("nodes/edge"));
        for n in ["w1", "w2"] {
            r.event(Event::Job {
                phase: "nodes/edge",
                event: &ev(n, JobPhase::Created),
            });
        }
        r.event(Event::Job {
            phase: "nodes/edge",
            event: &ev(
                "w1",
                JobPhase::Succeeded {
                    elapsed: Duration::from_secs(1),
                },
            ),
        });
        {
            let state = r.state.lock().unwrap();
            let p = &state["nodes/edge"];
            assert_eq!(p.nodes.keys().collect::<Vec<_>>(), ["w2"]);
            assert_eq!(p.counts(), "1 running, 1 succeeded");
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
}
