//! `yurtctl playground` (cargo feature `playground`): flags only; `app::playground` runs it.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::positive;

/// Flags of `yurtctl playground`.
#[derive(Debug, Clone, Args)]
pub struct PlaygroundCmd {
    /// Nodes of the simulated cluster (one of them the control plane)
    #[arg(long, value_name = "N", default_value = "4", value_parser = positive)]
    pub nodes: usize,

    /// What the nodes' disks look like (kubelet unit files, kubeadm-flags.env, …):
    /// kubeadm (deb packages), kubeadm-usr (pkgs.k8s.io / rpm), kind or minikube
    #[arg(
        long,
        value_enum,
        value_name = "LAYOUT",
        default_value = "kubeadm",
        hide_possible_values = true
    )]
    pub layout: PlaygroundLayout,

    /// Component set convert installs
    #[arg(long, value_name = "PROFILE", default_value = crate::render::Profile::DEFAULT)]
    pub profile: String,

    /// The API server: yurtsim's own (sim), or a real Kubernetes v1.37.2 control plane with
    /// OpenYurt v1.7.0's real yurt-manager and YurtHub (real: a checkout of yurtctl where
    /// tests/real/build.sh has built them; profile openyurt-v1.7)
    #[arg(
        long,
        value_enum,
        value_name = "KIND",
        default_value = "sim",
        hide_possible_values = true
    )]
    pub apiserver: PlaygroundApiServer,

    /// Where the cluster keeps its state (kubeconfig, node file systems) [default: a new
    /// temporary directory, removed at the end]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Keep the cluster running after the last step until Ctrl-C [default: when stdin is a
    /// terminal]
    #[arg(long, overrides_with = "no_keep")]
    pub keep: bool,

    /// Shut the cluster down after the last step
    #[arg(long)]
    pub no_keep: bool,
}

/// `--apiserver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlaygroundApiServer {
    Sim,
    Real,
}

/// `--layout` (the layouts yurtsim seeds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlaygroundLayout {
    // kubeadm from deb packages (drop-in /etc/systemd/system/kubelet.service.d, /etc/default/kubelet)
    Kubeadm,
    // kubeadm from pkgs.k8s.io / rpm packages (unit and drop-in under /usr/lib/systemd/system)
    KubeadmUsr,
    // kind node containers
    Kind,
    // minikube (flags inline in ExecStart, no kubeadm-flags.env)
    Minikube,
}
