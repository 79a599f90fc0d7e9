//! The API server address of the kubelet's kubeconfig: URL parsing never panics and is
//! idempotent on its own output; reading a kubeconfig file of arbitrary bytes never panics.
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

fuzz_target!(|data: &[u8]| checks::kubeconfig_server(data));
