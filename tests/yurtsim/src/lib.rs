//! yurtsim: a simulated Kubernetes cluster for testing yurtctl end to end.
//!
//! A real HTTP Kubernetes API (kubectl and kube-rs talk to it unchanged), simulated nodes with
//! their own root file systems, and simulated kubelets that really run the pods bound to them.
//! See `docs/yurtsim.md` for the contract and what is (and is not) modelled.

pub mod admission;
pub mod api;
pub mod auth;
pub mod containers;
pub mod control;
pub mod controllers;
pub mod cri;
pub mod endpoints;
pub mod error;
pub mod facts;
pub mod faults;
pub mod host_processes;
pub mod images;
pub mod init_containers;
pub mod kinds;
pub mod kubelet;
pub mod kubelet_config;
pub mod layout;
pub mod models;
pub mod openapi;
pub mod patch;
pub mod pod_worker;
pub mod protobuf;
pub mod real;
pub mod registry;
pub mod runtime;
pub mod selector;
pub mod server;
pub mod services;
pub mod sim;
pub mod store;
pub mod systemd;
pub mod table;
pub mod util;

pub use layout::Layout;
pub use sim::{Sim, SimConfig};
