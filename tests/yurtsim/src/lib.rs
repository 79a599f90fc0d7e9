//! yurtsim: a simulated Kubernetes cluster for testing yurtctl end to end.
//!
//! A real HTTP Kubernetes API (kubectl and kube-rs talk to it unchanged), simulated nodes with
//! their own root file systems, and simulated kubelets that really run the pods bound to them.
//! See `docs/yurtsim.md` for the contract and what is (and is not) modelled.
//!
//! The modules are layers (docs/yurtsim.md#layers); a module imports only from its own layer
//! and the ones below it, which `tests/architecture.rs` checks. From the top:
//! - the cluster handle and its HTTP face: [`sim`], [`server`], [`control`], [`faults`];
//! - [`real`]: the real tier, the nodes in front of a real control plane;
//! - [`controllers`]: the controllers of kube-controller-manager and kube-scheduler;
//! - [`models`]: the OpenYurt components' models;
//! - [`nodes`]: simulated machines and their kubelets;
//! - [`api`]: the Kubernetes API server's semantics;
//! - the leaves: [`facts`], [`pki`], [`version`], [`http`], [`util`].

pub mod api;
pub mod control;
pub mod controllers;
pub mod facts;
pub mod faults;
pub mod http;
pub mod models;
pub mod nodes;
pub mod pki;
pub mod real;
pub mod server;
pub mod sim;
pub mod util;
pub mod version;

pub use nodes::layout::Layout;
pub use sim::{Sim, SimConfig};
