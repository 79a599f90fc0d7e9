//! The plain reporter (CI logs, pipes, `--progress=plain`): a line per event, and every
//! `period` a count line per running phase of node Jobs, so a long phase shows how far it is.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::progress::PhaseCounts;
use super::{Event, Reporter, event_lines};

/// One plain line per event (CI logs, pipes), and every `period` a count line per running
/// phase that runs node Jobs ([`PhaseCounts::line`]), so a long phase shows how far it is.
pub struct PlainReporter {
    shared: Arc<Plain>,
    /// Dropped with the reporter: stops the thread printing count lines.
    _stop: Option<std::sync::mpsc::Sender<()>>,
}

struct Plain {
    out: Mutex<Box<dyn Write + Send>>,
    running: Mutex<BTreeMap<String, (Instant, PhaseCounts)>>,
}

impl Plain {
    fn write(&self, lines: &[String]) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = out.flush();
    }

    fn count_lines(&self) -> Vec<String> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running
            .iter()
            .filter(|(_, (_, c))| c.counts_nodes())
            .map(|(id, (started, c))| c.line(id, started.elapsed()))
            .collect()
    }
}

impl PlainReporter {
    pub fn stderr(period: Duration) -> Self {
        Self::to(Box::new(std::io::stderr()), period)
    }

    pub fn to(out: Box<dyn Write + Send>, period: Duration) -> Self {
        let shared = Arc::new(Plain {
            out: Mutex::new(out),
            running: Mutex::new(BTreeMap::new()),
        });
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let ticker = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("progress-counts".into())
            .spawn(move || {
                // the sender is never used: its drop (the reporter's) ends the wait early
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(period)
                {
                    ticker.write(&ticker.count_lines());
                }
            });
        PlainReporter {
            shared,
            _stop: spawned.is_ok().then_some(stop),
        }
    }
}

impl Reporter for PlainReporter {
    fn event(&self, e: Event<'_>) {
        {
            let mut running = self
                .shared
                .running
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match &e {
                Event::PhaseStarted(id) => {
                    running.insert((*id).to_owned(), (Instant::now(), PhaseCounts::default()));
                }
                Event::PhaseDone(id) => {
                    running.remove(*id);
                }
                Event::PhaseNodes { phase, total } => {
                    if let Some((_, c)) = running.get_mut(*phase) {
                        c.total = Some(*total);
                    }
                }
                Event::Job { phase, event } => {
                    if let Some((_, c)) = running.get_mut(*phase) {
                        c.count(&event.phase);
                    }
                }
                Event::Node { phase, step, .. } => {
                    if let Some((_, c)) = running.get_mut(*phase) {
                        c.count_node(*step);
                    }
                }
                Event::PhaseSkipped(_) | Event::Note { .. } => {}
            }
        }
        self.shared.write(&event_lines(&e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::jobs::{JobEvent, JobPhase};

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buf {
        fn lines(&self) -> Vec<String> {
            String::from_utf8_lossy(&self.0.lock().unwrap())
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    #[test]
    fn plain_mode_counts_each_running_phase_of_node_jobs_every_period() {
        let buf = Buf::default();
        let period = Duration::from_millis(20);
        let r = PlainReporter::to(Box::new(buf.clone()), period);
        r.event(Event::PhaseStarted("nodes/edge"));
        r.event(Event::PhaseNodes {
            phase: "nodes/edge",
            total: 200,
        });
        // a phase without node Jobs has nothing to count
        r.event(Event::PhaseStarted("components"));
        let ok = JobEvent {
            node: "w1".into(),
            job: "j".into(),
            phase: JobPhase::Succeeded {
                elapsed: Duration::from_millis(1500),
            },
        };
        r.event(Event::Job {
            phase: "nodes/edge",
            event: &ok,
        });
        std::thread::sleep(period * 8);
        r.event(Event::PhaseDone("nodes/edge"));
        let at_done = buf.lines().len();
        std::thread::sleep(period * 5);
        let lines = buf.lines();
        let counts = |ls: &[String]| {
            ls.iter()
                .filter(|l| {
                    l.starts_with("[nodes/edge] 1/200 done, 0 failed, ") && l.ends_with("/s")
                })
                .count()
        };
        assert!(counts(&lines) >= 1, "{lines:#?}");
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with("[components] ") && l.contains("done,"))
        );
        assert_eq!(
            counts(&lines[at_done..]),
            0,
            "no count line once the phase is done"
        );
        // the event lines themselves are unchanged
        assert_eq!(lines[0], "[nodes/edge] started");
        assert!(lines.contains(&"[nodes/edge] node w1 (Job j): succeeded in 1.5s".to_string()));
        drop(r);
    }
}
