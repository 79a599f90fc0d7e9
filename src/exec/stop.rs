//! The one way a run is asked to stop: SIGINT (Ctrl-C) or SIGTERM, caught by one listener
//! and latched, so a stop that comes between two places that look for it is not lost.
//!
//! While a command handles stops itself ([`handling`], nested: the lock's section around the
//! phase runner around the rollout driver) the listener only records the stop; the code that
//! holds the lock or the journal ends the run at its next safe point. With nothing handling it
//! (reading, printing, a command that holds nothing) the process exits 130 at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use tokio::sync::watch;

use crate::exit::Exit;

/// How many sections handle stops themselves, nested. A lock, not an atomic: latching a stop
/// and deciding whether to exit happen under it, so a section that sees the stop cannot end
/// (and leave the listener to exit 130) between the two.
static HANDLING: Mutex<usize> = Mutex::new(0);

fn sections() -> MutexGuard<'static, usize> {
    lock(&HANDLING)
}

fn lock(sections: &Mutex<usize>) -> MutexGuard<'_, usize> {
    sections
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many stops a part that ends in a state of its own has acted on ([`acted_on`]).
static ACTED_ON: AtomicU64 = AtomicU64::new(0);

/// How many stops were asked for.
fn latch() -> &'static watch::Sender<u64> {
    static LATCH: OnceLock<watch::Sender<u64>> = OnceLock::new();
    LATCH.get_or_init(|| watch::channel(0).0)
}

/// Starts the listener (once per process); `on_signal` runs on each signal first (the cursor
/// given back on a terminal).
pub fn listen(on_signal: fn()) {
    static STARTED: OnceLock<()> = OnceLock::new();
    if STARTED.set(()).is_err() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("stop-listener".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(on_each_signal(|| {
                on_signal();
                if !record_stop() {
                    std::process::exit(Exit::Interrupted.code().into());
                }
            }));
        });
}

/// Latches a stop; whether a section handles it (else the process is to exit 130).
fn record_stop() -> bool {
    record_stop_in(&HANDLING, latch())
}

fn record_stop_in(sections: &Mutex<usize>, latch: &watch::Sender<u64>) -> bool {
    let open = lock(sections);
    latch.send_modify(|n| *n += 1);
    *open > 0
}

/// Calls `f` on each SIGINT or SIGTERM, listened for from the start (a signal between two is
/// not missed); returns only when they cannot be listened for.
async fn on_each_signal(f: impl Fn()) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            tokio::select! {
                Some(()) = int.recv() => f(),
                Some(()) = term.recv() => f(),
                else => return,
            }
        }
    }
    #[cfg(not(unix))]
    while tokio::signal::ctrl_c().await.is_ok() {
        f();
    }
}

/// Held while a section ends the run itself on a stop; sections nest.
pub struct Handling(());

pub fn handling() -> Handling {
    *sections() += 1;
    Handling(())
}

impl Drop for Handling {
    fn drop(&mut self) {
        *sections() -= 1;
    }
}

/// Whether a stop was asked for during this process.
pub fn requested() -> bool {
    *latch().borrow() > 0
}

/// Resolves once a stop no part has acted on is asked for (at once if one was already);
/// never without a listener.
pub async fn asked() {
    let mut rx = latch().subscribe();
    let acted = ACTED_ON.load(Ordering::SeqCst);
    if rx.wait_for(|n| *n > acted).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The rollout driver ended in its own state on the stops asked for so far: the phases after
/// it still run (`ota apply` marks its pods) unless another stop comes.
pub fn acted_on() {
    ACTED_ON.store(*latch().borrow(), Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inner_section_ending_leaves_the_outer_one_handling() {
        let _outer = handling();
        drop(handling());
        assert!(*sections() > 0, "the outer section still handles a stop");
    }

    // the process's own latch is left alone: other tests run phase runners that watch it
    #[test]
    fn a_stop_is_latched_and_handled_while_a_section_is_open_and_exits_after() {
        let (open, (latch, seen)) = (Mutex::new(1), watch::channel(0));
        assert!(record_stop_in(&open, &latch), "a section handles it");
        *lock(&open) -= 1;
        assert!(!record_stop_in(&open, &latch), "nobody's: exit 130");
        assert_eq!(*seen.borrow(), 2, "both latched");
    }
}
