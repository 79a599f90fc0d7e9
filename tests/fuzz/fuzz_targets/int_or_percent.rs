//! --max-unavailable / --partition: parse never panics; accepted values render and re-parse
//! to themselves; percentages stay within 0..=100 and scale to at most the total.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;
// yurtsim's node layouts (std only), compiled in so the fuzz build skips the simulator
#[allow(dead_code)]
#[path = "../../yurtsim/src/nodes/layout/mod.rs"]
mod layout;
#[path = "../../yurtsim/src/version.rs"]
mod version;

fuzz_target!(|data: &[u8]| checks::int_or_percent(data));
