//! --max-unavailable / --partition: parse never panics; accepted values render and re-parse
//! to themselves; percentages stay within 0..=100 and scale to at most the total.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::int_or_percent(data));
