//! The nodes layer: simulated machines and their kubelets (docs/yurtsim.md#layers).
//!
//! - [`cluster`]: what the nodes are handed of the cluster ([`Cluster`]);
//! - [`layout`]: a node's root file system as each cluster layout seeds it;
//! - [`systemd`]: unit files to argv, and the services `systemctl` manages;
//! - [`kubelet`], [`kubelet_config`]: the kubelet, and what it concludes from its flags;
//! - [`init_containers`], [`pod_worker`], [`containers`]: a pod's containers, run;
//! - [`runtime`]: the OS sandbox containers run in; [`cri`]: the container runtime as CRI
//!   clients (crictl) see it; [`host_processes`]: the node's own processes;
//! - [`programs`]: what a node knows of the modelled programs it runs (the models are above:
//!   it is handed their start); [`shell`]: a modelled binary started through `sh -c`;
//! - [`images`]: the file systems of the images the sim knows; [`image_pull`]: pulling them
//!   (Docker reference normalization, a failed pull's error, the kubelet's pull and back-off);
//! - [`real_api`], [`pod_network`]: the node side of the real tier (docs/yurtsim.md#the-real-tier):
//!   which API server the cluster runs, a kubelet's calls to a real one, the real OpenYurt
//!   binaries, and a node's end of the pod network.

pub mod cluster;
pub mod containers;
pub mod cri;
pub mod host_processes;
pub mod image_pull;
pub mod images;
pub mod init_containers;
pub mod kubelet;
pub mod kubelet_config;
pub mod layout;
pub mod pod_network;
pub mod pod_worker;
pub mod prober;
pub mod programs;
pub mod real_api;
pub mod runtime;
pub mod shell;
pub mod systemd;

pub use cluster::Cluster;
