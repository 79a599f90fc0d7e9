//! The kube-controller-manager flag editor: the input replaces the `--controllers` line of a
//! seeded control plane's manifest. Whatever it is, disable never panics; when it edits, the
//! edit is idempotent (a second disable changes nothing) and enable restores the file byte for
//! byte (and then changes nothing either).
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

fuzz_target!(|data: &[u8]| checks::kcm_controllers(data));
