//! Shared by the benches that run the real yurtctl binary.

use std::thread::JoinHandle;
use std::time::Duration;

/// Samples a child's peak resident set (`VmHWM` in `/proc/<pid>/status`) until it exits.
///
/// Not `wait4`'s `ru_maxrss`: a child spawned from the bench (which hosts the simulated
/// cluster) inherits the parent's high-water mark at exec, so that figure is the bench's, not
/// yurtctl's. `VmHWM` belongs to the address space exec created. It is a high-water mark, so
/// sampling misses only growth in the last interval before exit.
/// It also keeps the child's CPU time (user + system clock ticks in `/proc/<pid>/stat`), last
/// read in the same loop (a zombie's stat still has it).
pub struct PeakRss(JoinHandle<(u64, u64)>);

impl PeakRss {
    pub fn watch(pid: u32) -> PeakRss {
        PeakRss(std::thread::spawn(move || {
            let (mut peak, mut ticks) = (0, 0);
            // A zombie's status has no VmHWM line: the loop ends when the child has exited.
            while let Some(kib) = vm_hwm_kib(pid) {
                peak = peak.max(kib);
                ticks = cpu_ticks(&format!("/proc/{pid}/stat")).unwrap_or(ticks);
                std::thread::sleep(Duration::from_millis(20));
            }
            ticks = cpu_ticks(&format!("/proc/{pid}/stat")).unwrap_or(ticks);
            (peak, ticks)
        }))
    }

    /// The peak in MiB and the CPU seconds; call after the child has exited.
    pub fn mib_and_cpu(self) -> (f64, f64) {
        let (kib, ticks) = self.0.join().expect("RSS sampler");
        (kib as f64 / 1024.0, ticks as f64 / clock_ticks_per_second())
    }
}

/// utime + stime of a `/proc/<pid>/stat` (fields 14 and 15).
pub fn cpu_ticks(stat_path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // the fields after the command name, which is in parentheses
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// `getconf CLK_TCK` (100 where it cannot be asked).
pub fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

/// A running process's peak resident set (`VmHWM`), in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
