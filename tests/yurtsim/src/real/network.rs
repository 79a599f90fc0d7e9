//! The real tier's network, shaped as kind's: every node is a network namespace with its own
//! loopback and one interface `eth0` holding the node's address, all on one switch (a Linux
//! bridge in a namespace of its own, standing for the docker network kind puts its nodes on,
//! kind pkg/cluster/internal/providers/docker/network.go). The control plane runs in the first
//! control-plane node's namespace, as kubeadm's static pods run with `hostNetwork` there, on
//! kubeadm's ports; the host reaches its API server through a port on 127.0.0.1, as kind
//! publishes 6443 (kind pkg/cluster/internal/providers/docker/provision.go
//! `generatePortMappings`).
//!
//! A node's name for the control plane (kind's `kind-control-plane`, minikube's
//! `control-plane.minikube.internal`) resolves to that node's address, as docker's DNS and
//! minikube's `/etc/hosts` entry make it resolve (minikube pkg/minikube/constants
//! `ControlPlaneAlias`).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::sync::watch;

use crate::nodes::layout::Layout;
use crate::nodes::pod_network::ip_batch;
use crate::nodes::runtime::NodeNamespaces;

/// The prefix length of each layout's node network: kubeadm's nodes are numbered through
/// 10.0.0.0/8, kind's docker network is 172.18.0.0/16, minikube's 192.168.49.0/24 and the /24s
/// after it (Layout::node_ip).
fn prefix_len(layout: Layout) -> u8 {
    match layout {
        Layout::Kubeadm | Layout::KubeadmUsr => 8,
        Layout::Kind | Layout::Minikube => 16,
    }
}

/// The network's gateway, which each node's default route goes through, as docker's network
/// gives kind's and minikube's nodes one (the network's first address; the layouts number
/// their nodes from .2; kubernetes-sigs/kind@v0.29.0
/// pkg/cluster/internal/providers/docker/network.go creates the `kind` network with a
/// gateway, minikube@v1.36.0 pkg/drivers/kic/oci/network_create.go the `.1` gateway of
/// 192.168.49.0/24). kubeadm's nodes are numbered from 10.0.0.1, so its gateway is the
/// range's last address.
fn gateway(layout: Layout) -> &'static str {
    match layout {
        Layout::Kind => "172.18.0.1",
        Layout::Minikube => "192.168.49.1",
        Layout::Kubeadm | Layout::KubeadmUsr => "10.255.255.254",
    }
}

/// The switch and the nodes' namespaces, with their addresses.
pub struct ClusterNetwork {
    switch: NodeNamespaces,
    nodes: Vec<(String, IpAddr, Arc<NodeNamespaces>)>,
    layout: Layout,
}

impl ClusterNetwork {
    /// Creates the switch and one namespace per node (`init` holds each, as the sim's nodes'
    /// init does), and wires them.
    pub fn create(
        init: &Path,
        layout: Layout,
        nodes: &[(String, IpAddr)],
    ) -> anyhow::Result<ClusterNetwork> {
        let switch = NodeNamespaces::create(init).context("the switch's network namespace")?;
        let mut net = ClusterNetwork {
            switch,
            nodes: Vec::new(),
            layout,
        };
        let gw = gateway(layout);
        let mut on_switch = format!(
            "link add br0 type bridge\nlink set br0 up\naddr add {gw}/{} dev br0\n",
            prefix_len(layout)
        );
        for (i, (name, ip)) in nodes.iter().enumerate() {
            let ns = Arc::new(
                NodeNamespaces::create(init)
                    .with_context(|| format!("node {name}'s network namespace"))?,
            );
            // the node's end is eth0 in the node; the switch's end is its port
            on_switch.push_str(&format!(
                "link add p{i} type veth peer name eth0 netns {}\nlink set p{i} master br0\nlink set p{i} up\n",
                ns.init_pid()
            ));
            net.nodes.push((name.clone(), *ip, ns));
        }
        ip_batch(&net.switch, on_switch).context("wiring the switch")?;
        for (name, ip, ns) in &net.nodes {
            ip_batch(
                ns,
                format!(
                    "addr add {ip}/{} dev eth0\nlink set eth0 up\nroute add default via {gw}\n",
                    prefix_len(layout)
                ),
            )
            .with_context(|| format!("node {name}'s eth0"))?;
        }
        Ok(net)
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeNamespaces>> {
        self.nodes
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, ns)| ns)
    }

    /// The address `host` names from a node: an IP as written, or the layout's name for the
    /// first control-plane node.
    pub fn resolve(&self, host: &str) -> Option<IpAddr> {
        if let Ok(ip) = host.trim_matches(['[', ']']).parse() {
            return Some(ip);
        }
        let control_plane = self.nodes.first()?.1;
        let alias = self
            .layout
            .api_server(&control_plane.to_string())
            .trim_start_matches("https://")
            .rsplit_once(':')
            .map(|(h, _)| h.to_string())?;
        (alias == host).then_some(control_plane)
    }
}

/// What a forwarded connection dials, from inside a node's network: changed when the client
/// behind it is rebuilt for another server.
#[derive(Clone)]
pub struct Target(Arc<Mutex<Option<SocketAddr>>>);

impl Target {
    pub fn new(addr: Option<SocketAddr>) -> Target {
        Target(Arc::new(Mutex::new(addr)))
    }

    pub fn set(&self, addr: SocketAddr) {
        *self.0.lock().unwrap() = Some(addr);
    }

    fn get(&self) -> Option<SocketAddr> {
        *self.0.lock().unwrap()
    }
}

/// Forwards connections accepted on 127.0.0.1:`port` of the host (0: a free port) to `target`
/// as dialled from inside `ns`: the connection leaves from the node's own network, so it
/// reaches what the node reaches (its own loopback, the switch) and nothing else. Returns the
/// port.
pub async fn forward(
    port: u16,
    ns: Arc<NodeNamespaces>,
    target: Target,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<u16> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                anyhow::anyhow!("port {port} is already in use on 127.0.0.1; choose another with --port or stop what is listening there")
            } else {
                anyhow::anyhow!("cannot listen on 127.0.0.1:{port}: {e}")
            }
        })?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(_) => continue,
                },
                _ = stop.changed() => return,
            };
            let ns = ns.clone();
            let target = target.clone();
            tokio::spawn(async move {
                let Some(addr) = target.get() else { return };
                let Ok(mut outbound) = ns.connect_tcp(addr).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    Ok(port)
}
