//! The kubelet's systemd unit as the servant reads it: the input (split at the first NUL)
//! replaces the kubeadm drop-in and kubeadm-flags.env of a seeded node. Loading, expanding and
//! locating flags never panic, and every span the servant would edit lies inside its file.
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

fuzz_target!(|data: &[u8]| checks::systemd_unit(data));
