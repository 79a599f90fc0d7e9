//! The real tier: yurtsim's nodes in front of a real Kubernetes control plane built from
//! upstream's modules by `tests/real/build.sh` (docs/yurtsim.md#the-real-tier).
//!
//! - [`control_plane`]: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, each in
//!   its own process, with kubeadm's flags and PKI ([`pki`]);
//! - [`bootstrap`]: what `kubeadm init` creates in the cluster after the control plane is up;
//! - [`nodes`]: the nodes' kubelets, registered and heartbeating as real kubelets do;
//! - [`kubelet_server`]: each kubelet's server on `:10250` (`pods/log`), with
//!   [`kubelet_auth`] judging its callers.

pub mod bootstrap;
pub mod control_plane;
pub mod kubelet_api;
pub mod kubelet_auth;
pub mod kubelet_server;
pub mod network;
pub mod nodes;
pub mod pki;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::watch;

use crate::nodes::layout::{Layout, NodeSeed, Role, SeedOptions};
use crate::nodes::pod_network;
pub use crate::nodes::real_api::{
    ApiServerKind, OPENYURT_BUILT, build_script, openyurt_binary, openyurt_missing_reason, real_dir,
};
use crate::version::Version;

/// The Kubernetes release `tests/real/build.sh` builds by default, the newest.
pub const NEWEST_KUBERNETES: &str = "v1.37.2";

/// Every Kubernetes release `tests/real/build.sh` can build, oldest first: the newest that
/// OpenYurt v1.7.0 certifies, and the newest release.
pub const KUBERNETES_VERSIONS: [&str; 2] = ["v1.34.4", NEWEST_KUBERNETES];

/// The Kubernetes versions built into [`real_dir`], oldest first.
pub fn built_kubernetes_versions() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(real_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ver = name.strip_prefix("kubernetes-")?.to_string();
            e.path().join("realcp").is_file().then_some(ver)
        })
        .collect();
    v.sort_by_key(|s| Version::kubernetes(s));
    v
}

/// The control-plane binary of `version`, or an error that names the build command.
pub fn control_plane_binary(version: &str) -> anyhow::Result<PathBuf> {
    let bin = real_dir()
        .join(format!("kubernetes-{version}"))
        .join("realcp");
    if bin.is_file() {
        return Ok(bin);
    }
    let built = built_kubernetes_versions();
    let have = if built.is_empty() {
        "none is built yet".to_string()
    } else {
        format!("built: {}", built.join(", "))
    };
    bail!(
        "no real control plane for Kubernetes {version} in {} ({have}); build it with `{} {version}` \
         (the versions it knows: `{} --help`), or pass --kubernetes-version with a built one",
        real_dir().display(),
        build_script().display(),
        build_script().display(),
    )
}

/// Builds what `targets` name with `tests/real/build.sh` (one build at a time: the script locks
/// the cache directory), reusing what is built: tests call it before starting a real cluster,
/// so the README's test command builds the real tier on first use.
pub fn ensure_built(targets: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new(build_script())
        .args(targets)
        .env("YURTSIM_REAL_DIR", real_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", build_script().display()))?;
    if !out.status.success() {
        bail!(
            "{} {} failed ({}):\n{}{}",
            build_script().display(),
            targets.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// What the real tier is started with: the parts of the cluster's configuration it reads
/// (sim.rs builds it from `SimConfig`).
#[derive(Clone, Debug)]
pub struct RealConfig {
    pub layout: Layout,
    /// Node roots, the control plane's files and the kubeconfig go under it.
    pub state_dir: PathBuf,
    /// The host's port to the API server; 0 = a free port.
    pub port: u16,
    /// A release built by tests/real/build.sh.
    pub kubernetes_version: String,
    pub control_planes: usize,
    pub heartbeat_interval: Duration,
    /// The first back-off after a control-plane component exits, and its cap.
    pub crash_backoff: Duration,
    pub crash_backoff_max: Duration,
    pub seed: SeedOptions,
}

/// A running real-tier cluster.
pub struct RealCluster {
    cfg: RealConfig,
    pub control_plane: control_plane::ControlPlane,
    /// The nodes' networks; the control plane runs in the first node's.
    pub network: Arc<network::ClusterNetwork>,
    kubeconfig: PathBuf,
    nodes: Vec<(String, Role)>,
    endpoint: String,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl RealCluster {
    /// Starts the control plane of `cfg.kubernetes_version` in the first node's network and
    /// creates what `kubeadm init` does; [`RealCluster::start_nodes`] then starts the nodes.
    pub async fn start(cfg: RealConfig, names: &[(String, Role)]) -> anyhow::Result<RealCluster> {
        let binary = control_plane_binary(&cfg.kubernetes_version)?;
        for (tool, package, why) in [
            ("ip", "iproute2", "wires the nodes' and pods' networks"),
            (
                "nft",
                "nftables",
                "is what kube-proxy writes each node's Service rules with",
            ),
        ] {
            if !on_path(tool) {
                bail!(
                    "the real tier needs `{tool}` on PATH: it {why}; install it (Debian: apt-get install {package})"
                );
            }
        }
        let layout = cfg.layout;
        let advertise = layout.node_ip(0);
        let endpoint = layout.api_server(&advertise);
        let (endpoint_host, apiserver_port) = endpoint
            .trim_start_matches("https://")
            .rsplit_once(':')
            .map(|(h, p)| (h.to_string(), p.parse::<u16>()))
            .context("the layout's API endpoint has no port")?;
        let apiserver_port = apiserver_port?;
        let cluster_name = layout.cluster_name();
        let addresses = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| Ok((n.clone(), layout.node_ip(i).parse()?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let host_bin = cfg.state_dir.join("sim/host-bin");
        crate::nodes::host_processes::write_stand_ins(&host_bin)?;
        let network = Arc::new(tokio::task::block_in_place(|| {
            network::ClusterNetwork::create(&host_bin.join("systemd"), layout, &addresses)
        })?);
        let cp_ns = network
            .node(&names[0].0)
            .context("no control-plane node")?
            .clone();
        let (stop, stop_rx) = watch::channel(false);
        // the host's port to the API server, as kind publishes it
        let host_port = network::forward(
            cfg.port,
            cp_ns.clone(),
            network::Target::new(Some(SocketAddr::from(([127, 0, 0, 1], apiserver_port)))),
            stop_rx.clone(),
        )
        .await?;
        let dir = cfg.state_dir.join("control-plane");
        let cp = tokio::task::block_in_place(|| {
            control_plane::ControlPlane::start(&control_plane::Options {
                binary: &binary,
                dir: &dir,
                netns: cp_ns,
                apiserver_port,
                host_port,
                advertise: advertise.parse()?,
                endpoint_hosts: vec![endpoint_host],
                cluster_name,
                nodes: names.len(),
                restart: control_plane::Backoff {
                    initial: cfg.crash_backoff,
                    max: cfg.crash_backoff_max,
                },
            })
        })?;
        // written once the cluster is ready (start_nodes): a client that finds it never meets
        // a cluster whose RBAC bindings kubeadm's init has not created yet
        let kubeconfig = cfg.state_dir.join("kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig);
        let kubernetes_version = cfg.kubernetes_version.clone();
        let cluster = RealCluster {
            cfg,
            control_plane: cp,
            kubeconfig,
            nodes: names.to_vec(),
            endpoint: endpoint.clone(),
            stop,
            tasks: Vec::new(),
            network: network.clone(),
        };
        let super_admin = client_from(&cluster.control_plane.dir.join("super-admin.conf")).await?;
        wait_ready(
            &cluster.control_plane,
            &super_admin,
            Duration::from_secs(120),
        )
        .await?;
        bootstrap::kubeadm_init(
            &super_admin,
            &bootstrap::Init {
                cluster_name,
                endpoint: &endpoint,
                ca_pem: &cluster.control_plane.pki.ca.pair.cert,
                kubernetes_version: &kubernetes_version,
            },
        )
        .await?;
        Ok(cluster)
    }

    /// Seeds the nodes' roots with the cluster's real certificates and starts their kubelets
    /// in `shared` (each from inside its node's network, as its node's identity). Returns once
    /// every node is registered and marked as kubeadm marks it, the `default` ServiceAccount
    /// exists (pods can be created) and the control plane's mirror pods run.
    pub async fn start_nodes(&mut self, shared: &Arc<crate::nodes::Cluster>) -> anyhow::Result<()> {
        let cfg = &self.cfg.clone();
        let layout = cfg.layout;
        let cluster_name = layout.cluster_name();
        let stop_rx = self.stop.subscribe();
        let host_bin = cfg.state_dir.join("sim/host-bin");
        let mut apis = Vec::new();
        for (i, (name, role)) in self.nodes.iter().enumerate() {
            let node = nodes::NodeSpec {
                name: name.clone(),
                role: *role,
                ip: layout.node_ip(i),
                root: cfg.state_dir.join("nodes").join(name),
                layout,
                kubernetes_version: cfg.kubernetes_version.clone(),
            };
            seed_node(
                &node,
                &self.endpoint,
                cluster_name,
                &cfg.seed,
                &self.control_plane.pki,
            )?;
            let namespaces = self.network.node(name).context("node network")?.clone();
            let target = network::Target::new(None);
            let local_port =
                network::forward(0, namespaces.clone(), target.clone(), stop_rx.clone()).await?;
            let net = nodes::NodeNet {
                network: self.network.clone(),
                target,
                local_port,
            };
            let pod_network =
                pod_network::PodNetwork::new(namespaces.clone(), host_bin.join("systemd"));
            let api = kubelet_api::KubeletApi::new(
                node,
                net,
                pod_network,
                tokio::runtime::Handle::current(),
            );
            let k = crate::nodes::kubelet::add_node(
                shared,
                name,
                *role,
                layout.node_ip(i),
                crate::nodes::kubelet::NodeApi::Real(api.clone()),
                Some(namespaces.clone()),
            );
            // the kubelet's server, in the node's network as the API server reaches the node
            let server = tokio::task::block_in_place(|| {
                kubelet_server::start(
                    shared.clone(),
                    k.clone(),
                    api.clone(),
                    &namespaces,
                    stop_rx.clone(),
                )
            })
            .with_context(|| format!("node {name}'s kubelet server on :10250"))?;
            self.tasks.push(server);
            self.tasks.push(tokio::spawn(nodes::run(
                k.clone(),
                api.clone(),
                cfg.heartbeat_interval,
                stop_rx.clone(),
            )));
            self.tasks.push(tokio::spawn(nodes::run_static_pods(
                k.clone(),
                api.clone(),
                stop_rx.clone(),
            )));
            self.tasks.push(tokio::spawn(nodes::watch_pods(
                shared.clone(),
                k,
                api.clone(),
                stop_rx.clone(),
            )));
            apis.push(api);
        }
        self.tasks
            .push(tokio::spawn(crate::nodes::kubelet::tick_loop(
                shared.clone(),
            )));
        let admin_conf = self.control_plane.dir.join("admin.conf");
        let admin = client_from(&admin_conf).await?;
        // a thousand kubelets register at once through one API server on two cores: the
        // wait grows with the count, as a large cluster's join takes longer
        let settle = Duration::from_secs(60) + Duration::from_millis(150) * self.nodes.len() as u32;
        bootstrap::mark_nodes(&admin, layout, &self.nodes, settle, || {
            self.control_plane.check()
        })
        .await?;
        self.start_pod_network(&admin, apis, settle).await?;
        let binary = control_plane_binary(&cfg.kubernetes_version)?;
        for (name, _) in &self.nodes {
            let netns = self.network.node(name).context("node network")?.clone();
            tokio::task::block_in_place(|| {
                self.control_plane.start_kube_proxy(&binary, name, &netns)
            })?;
        }
        bootstrap::wait_default_service_account(&admin, Duration::from_secs(60)).await?;
        bootstrap::wait_control_plane_pods(&admin, cfg.control_planes, Duration::from_secs(60))
            .await?;
        pki::write_private(&self.kubeconfig, &std::fs::read_to_string(&admin_conf)?)?;
        Ok(())
    }

    /// Waits for kube-controller-manager to give every node its pod range, then keeps the
    /// nodes' routes to each other's ranges as kindnetd does (nodes/pod_network.rs).
    async fn start_pod_network(
        &mut self,
        admin: &kube::Client,
        apis: Vec<Arc<kubelet_api::KubeletApi>>,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            let ranges = node_ranges(admin).await?;
            if apis
                .iter()
                .all(|a| ranges.iter().any(|(n, _, _)| *n == a.node.name))
            {
                break;
            }
            self.control_plane.check()?;
            if start.elapsed() > timeout {
                bail!(
                    "kube-controller-manager gave no podCIDR to every node within {timeout:?} (it has: {ranges:?})"
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let admin = admin.clone();
        let mut stop = self.stop.subscribe();
        let network = self.network.clone();
        let sync = move |ranges: &[(String, std::net::Ipv4Addr, String)]| -> anyhow::Result<()> {
            for api in &apis {
                let me = &api.node.name;
                if let Some((_, _, cidr)) = ranges.iter().find(|(n, _, _)| n == me) {
                    api.pod_network.set_cidr(cidr)?;
                }
                let others: Vec<_> = ranges
                    .iter()
                    .filter(|(n, _, _)| n != me)
                    .map(|(_, ip, cidr)| (*ip, cidr.clone()))
                    .collect();
                let ns = network.node(me).context("node network")?;
                pod_network::sync_routes(ns, &others)
                    .with_context(|| format!("node {me}'s routes to the other nodes' pods"))?;
            }
            Ok(())
        };
        let ranges = node_ranges(&admin).await?;
        tokio::task::block_in_place(|| sync(&ranges))?;
        self.tasks.push(tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                    _ = stop.changed() => return,
                }
                match node_ranges(&admin).await {
                    Ok(r) => {
                        if let Err(e) = tokio::task::block_in_place(|| sync(&r)) {
                            tracing::warn!("pod network: {e:#}");
                        }
                    }
                    Err(e) => tracing::debug!("pod network: {e:#}"),
                }
            }
        }));
        Ok(())
    }

    pub fn url(&self) -> String {
        self.control_plane.server()
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The admin's requests by `agent` (its User-Agent's product) with `verb` on `resource`
    /// (`jobs.batch`, no subresource), from the API server's audit log, which records the
    /// admin's requests only (`control_plane::AUDIT_POLICY`).
    pub fn audited_requests(&self, agent: &str, verb: &str, resource: &str) -> anyhow::Result<u64> {
        let log = self.control_plane.audit_log();
        let text = std::fs::read_to_string(&log)
            .with_context(|| format!("the audit log {}", log.display()))?;
        let mut n = 0;
        for line in text.lines() {
            let e: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("an audit event in {}", log.display()))?;
            let object = &e["objectRef"];
            let named = match object["apiGroup"].as_str().unwrap_or_default() {
                "" => object["resource"].as_str().unwrap_or_default().to_string(),
                group => format!(
                    "{}.{group}",
                    object["resource"].as_str().unwrap_or_default()
                ),
            };
            let by_agent = e["userAgent"]
                .as_str()
                .and_then(|a| a.split('/').next())
                .is_some_and(|a| a == agent);
            if by_agent && e["verb"] == verb && named == resource && object["subresource"].is_null()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        tokio::task::block_in_place(|| self.control_plane.stop());
    }
}

/// A client from a kubeconfig file, as kubectl would read it.
pub async fn client_from(path: &Path) -> anyhow::Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    Ok(kube::Client::try_from(config)?)
}

/// Waits for `/readyz` (etcd, informers, RBAC bootstrap roles, priority and fairness), failing
/// early with the log's tail when a component exits.
async fn wait_ready(
    cp: &control_plane::ControlPlane,
    client: &kube::Client,
    timeout: Duration,
) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        cp.check()?;
        let req = http::Request::get("/readyz").body(Vec::new())?;
        let last = match client.request_text(req).await {
            Ok(body) if body.trim() == "ok" => return Ok(()),
            Ok(body) => body,
            Err(e) => e.to_string(),
        };
        if start.elapsed() > timeout {
            bail!(
                "kube-apiserver at {} was not ready within {timeout:?}: {last}; its log: {}",
                cp.server(),
                cp.dir.join("logs/kube-apiserver.log").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Seeds the node's files as the sim does, then gives it the cluster's real CA and a client
/// certificate for `system:node:NAME` (what TLS bootstrap would have left there).
fn seed_node(
    node: &nodes::NodeSpec,
    endpoint: &str,
    cluster_name: &str,
    seed: &crate::nodes::layout::SeedOptions,
    pki: &pki::ClusterPki,
) -> anyhow::Result<()> {
    let s = NodeSeed {
        name: node.name.clone(),
        role: node.role,
        internal_ip: node.ip.clone(),
        api_server: endpoint.to_string(),
        kubernetes_version: node.kubernetes_version.clone(),
        cluster_name: cluster_name.to_string(),
    };
    crate::nodes::layout::seed_node(&node.root, node.layout, &s, seed)
        .with_context(|| format!("seeding node {} at {}", node.name, node.root.display()))?;
    let client = pki
        .ca
        .client(&format!("system:node:{}", node.name), &["system:nodes"])?;
    crate::nodes::layout::install_cluster_pki(
        &node.root,
        node.layout,
        &s,
        &pki.ca.pair.cert,
        &format!("{}{}", client.cert, client.key),
    )
    .with_context(|| {
        format!(
            "installing the cluster's certificates on node {}",
            node.name
        )
    })?;
    // the serving pair the kubelet made at its first start (kubelet_server.rs), in place of the
    // seed's stand-ins, which are no certificates: a kubelet that found those would not start
    let dir = node.root.join("var/lib/kubelet/pki");
    let serving = pki::kubelet_self_signed(&node.name.to_lowercase())?;
    std::fs::write(dir.join("kubelet.crt"), &serving.cert)?;
    pki::write_private(&dir.join("kubelet.key"), &serving.key)
}

/// Each node with a pod range: (name, InternalIP, podCIDR).
async fn node_ranges(
    admin: &kube::Client,
) -> anyhow::Result<Vec<(String, std::net::Ipv4Addr, String)>> {
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(admin.clone());
    let list = nodes.list(&Default::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|n| {
            let name = n.metadata.name?;
            let cidr = n.spec?.pod_cidr?;
            let ip = n
                .status?
                .addresses?
                .into_iter()
                .find(|a| a.type_ == "InternalIP")?
                .address
                .parse()
                .ok()?;
            Some((name, ip, cidr))
        })
        .collect())
}

/// Whether `tool` is an executable file in a directory of `PATH`.
fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}
