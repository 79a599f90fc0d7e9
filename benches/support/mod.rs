//! Shared by the benches that run the real yurtctl binary.

use std::thread::JoinHandle;
use std::time::Duration;

/// Samples a child's peak resident set (`VmHWM` in `/proc/<pid>/status`) until it exits.
///
/// Not `wait4`'s `ru_maxrss`: a child spawned from the bench (which hosts the simulated
/// cluster) inherits the parent's high-water mark at exec, so that figure is the bench's, not
/// yurtctl's. `VmHWM` belongs to the address space exec created. It is a high-water mark, so
/// sampling misses only growth in the last interval before exit.
pub struct PeakRss(JoinHandle<u64>);

impl PeakRss {
    pub fn watch(pid: u32) -> PeakRss {
        PeakRss(std::thread::spawn(move || {
            let mut peak = 0;
            // A zombie's status has no VmHWM line: the loop ends when the child has exited.
            while let Some(kib) = vm_hwm_kib(pid) {
                peak = peak.max(kib);
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        }))
    }

    /// The peak in MiB; call after the child has exited.
    pub fn mib(self) -> f64 {
        self.0.join().expect("RSS sampler") as f64 / 1024.0
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
