//! Label selectors: parse never panics; what parses renders to a canonical form that parses
//! back to the same selector and renders identically (a fixed point).
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

fuzz_target!(|data: &[u8]| checks::selector(data));
