//! Schedule quality of the static-pod rollout state machine, in logical time.
//!
//! 1,000 simulated nodes, `--max-unavailable 10%`, per-node upgrade times from a seeded
//! distribution (splitmix64; exponential and lognormal). The pure state machine is driven by the
//! discrete-event simulator in `yurtctl::rollout::sim`, and its makespan is compared with
//! - the ideal sliding-window makespan for the same durations and order (greedy list
//!   scheduling on k slots, no control overhead), and
//! - YurtStaticSet's batch barrier (rounds of k; a round starts when the previous one is done).
//!
//! Run: `cargo bench --bench rollout_schedule`. This measures the scheduling logic only; the
//! API-level benchmark against yurtsim (requests per node, peak RSS) comes later.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

use yurtctl::rollout::sim::{End, NodeScript, simulate};
use yurtctl::rollout::{Completion, NodeInput, Options, Rollout};

const NODES: usize = 1000;
const MAX_UNAVAILABLE: &str = "10%";
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];
/// Per-start control-loop overhead to model (ms): Job creation, watch delivery.
const OVERHEADS_MS: [u64; 2] = [0, 250];

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, deterministic.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }

    fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        // Box–Muller.
        let z = (-2.0 * self.unit().ln()).sqrt() * (2.0 * std::f64::consts::PI * self.unit()).cos();
        median * (sigma * z).exp()
    }
}

#[derive(Clone, Copy)]
enum Dist {
    /// mean 60 s
    Exponential,
    /// 10 s floor + lognormal(median 40 s, σ 0.6)
    Lognormal,
}

impl Dist {
    fn name(self) -> &'static str {
        match self {
            Dist::Exponential => "exponential(mean 60s)",
            Dist::Lognormal => "10s + lognormal(median 40s, sigma 0.6)",
        }
    }

    fn durations(self, seed: u64, n: usize) -> Vec<u64> {
        let mut rng = SplitMix64(seed);
        (0..n)
            .map(|_| {
                let s = match self {
                    Dist::Exponential => rng.exponential(60.0),
                    Dist::Lognormal => 10.0 + rng.lognormal(40.0, 0.6),
                };
                ((s * 1000.0).round() as u64).max(1)
            })
            .collect()
    }
}

/// Greedy list scheduling on k slots in the given order: the ideal sliding window.
fn ideal_sliding(durations: &[u64], k: usize) -> u64 {
    let mut slots: BinaryHeap<Reverse<u64>> =
        (0..k.min(durations.len())).map(|_| Reverse(0)).collect();
    let mut end = 0;
    for &d in durations {
        let Reverse(free) = slots.pop().expect("k ≥ 1");
        let finish = free + d;
        end = end.max(finish);
        slots.push(Reverse(finish));
    }
    end
}

/// YurtStaticSet: rounds of k nodes; the next round starts when the whole round is done.
fn batch_barrier(durations: &[u64], k: usize, overhead: u64) -> u64 {
    durations
        .chunks(k)
        .map(|round| round.iter().max().expect("non-empty") + overhead)
        .sum()
}

fn harmonic(n: usize) -> f64 {
    (1..=n).map(|j| 1.0 / j as f64).sum()
}

fn main() {
    println!("rollout_schedule: {NODES} simulated nodes, --max-unavailable {MAX_UNAVAILABLE}");
    println!(
        "(pure state machine in logical time; the API-level benchmark against yurtsim, with API requests per node and peak RSS, comes later)"
    );
    let names: Vec<String> = (0..NODES).map(|i| format!("edge-{i:04}")).collect();
    let mut worst_ratio: f64 = 0.0;
    for dist in [Dist::Exponential, Dist::Lognormal] {
        println!();
        println!("durations: {}", dist.name());
        println!(
            "{:>4} {:>9} {:>4} {:>11} {:>11} {:>13} {:>13} {:>8} {:>8} {:>8} {:>9}",
            "seed",
            "overhead",
            "k",
            "makespan",
            "ideal",
            "sliding/ideal",
            "barrier/ideal",
            "lb/ideal",
            "actions",
            "events",
            "cpu/node"
        );
        for overhead in OVERHEADS_MS {
            for seed in SEEDS {
                let durations = dist.durations(seed, NODES);
                let inputs: Vec<NodeInput> = names
                    .iter()
                    .map(|n| NodeInput {
                        name: n.clone(),
                        labels: BTreeMap::new(),
                        revision: Some("old".into()),
                        ready: true,
                    })
                    .collect();
                let options = Options {
                    max_unavailable: MAX_UNAVAILABLE.parse().expect("valid"),
                    ..Options::default()
                };
                let cpu = Instant::now();
                let mut rollout = Rollout::new(inputs, &options, "new");
                let k = rollout.budget();
                let trace = simulate(
                    &mut rollout,
                    |n| NodeScript::ok(durations[n[5..].parse::<usize>().expect("index")]),
                    overhead,
                    false,
                );
                let cpu = cpu.elapsed();
                assert_eq!(trace.end, End::Done(Completion::All));
                // The machine starts nodes in name order here, the same order as the durations.
                let ideal = ideal_sliding(&durations, k);
                let barrier = batch_barrier(&durations, k, overhead);
                let sum: u64 = durations.iter().sum();
                let lower = (sum as f64 / k as f64).max(*durations.iter().max().unwrap() as f64);
                let ratio = trace.makespan as f64 / ideal as f64;
                worst_ratio = worst_ratio.max(ratio);
                println!(
                    "{:>4} {:>7}ms {:>4} {:>10.1}s {:>10.1}s {:>13.4} {:>13.3} {:>8.3} {:>8.2} {:>8.2} {:>7.1}µs",
                    seed,
                    overhead,
                    k,
                    trace.makespan as f64 / 1000.0,
                    ideal as f64 / 1000.0,
                    ratio,
                    barrier as f64 / ideal as f64,
                    lower / ideal as f64,
                    trace.actions as f64 / NODES as f64,
                    trace.events as f64 / NODES as f64,
                    cpu.as_secs_f64() * 1e6 / NODES as f64,
                );
            }
        }
        if let Dist::Exponential = dist {
            let k = 100;
            let mu = 60.0;
            let rounds = NODES.div_ceil(k);
            let sliding = (NODES - k) as f64 * mu / k as f64 + mu * harmonic(k);
            let barrier =
                (rounds - 1) as f64 * mu * harmonic(k) + mu * harmonic(NODES - (rounds - 1) * k);
            println!(
                "expected (§9.3, i.i.d. exponential, no overhead): sliding {sliding:.0}s, barrier {barrier:.0}s, barrier/sliding {:.2}",
                barrier / sliding
            );
        }
    }
    println!();
    println!(
        "worst sliding/ideal: {worst_ratio:.4} (target <= 1.05) {}",
        if worst_ratio <= 1.05 { "OK" } else { "MISSED" }
    );
    println!(
        "columns: ideal = greedy sliding window on k slots with zero overhead; lb = max(sum t / k, max t); actions/events per node over the whole run; cpu/node = wall time of machine + simulator"
    );
}
