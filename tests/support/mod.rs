//! What yurtctl's integration tests share: a simulated cluster whose Jobs run this crate's own
//! `yurtctl` binary, and a kube-rs client for it.
#![allow(dead_code)]

use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use yurtsim::{Layout, Sim, SimConfig};

pub struct SimEnv {
    pub sim: Sim,
    pub dir: tempfile::TempDir,
}

/// Starts yurtsim with test timings; `tweak` adjusts the config before start.
pub async fn start_sim(nodes: usize, layout: Layout, tweak: impl FnOnce(&mut SimConfig)) -> SimEnv {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = SimConfig::for_tests(dir.path().join("state"));
    cfg.nodes = nodes;
    cfg.layout = layout;
    cfg.yurtctl = Some(PathBuf::from(env!("CARGO_BIN_EXE_yurtctl")));
    tweak(&mut cfg);
    let sim = Sim::start(cfg).await.expect("sim starts");
    SimEnv { sim, dir }
}

/// A plain kube-rs client from the sim's kubeconfig.
pub async fn kube_client(sim: &Sim) -> Client {
    let kc = Kubeconfig::read_from(sim.kubeconfig_path()).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig usable");
    Client::try_from(config).expect("client")
}

/// yurtctl's own API layer, connected to the sim the way the CLI connects (`--kubeconfig`).
pub async fn yurtctl_cluster(sim: &Sim) -> yurtctl::cluster::Cluster {
    use yurtctl::cluster::client::{ClientOptions, ConfigEnv, connect_with_env};
    let opts = ClientOptions {
        kubeconfig: Some(sim.kubeconfig_path()),
        ..Default::default()
    };
    connect_with_env(&opts, &ConfigEnv::default())
        .await
        .expect("connects")
}
