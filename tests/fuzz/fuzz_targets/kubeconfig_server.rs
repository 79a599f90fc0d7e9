//! The API server address of the kubelet's kubeconfig: URL parsing never panics and is
//! idempotent on its own output; reading a kubeconfig file of arbitrary bytes never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::kubeconfig_server(data));
