//! The real tier's pod network, modelled on kind's: kindnetd with the CNI `ptp` plugin and
//! `host-local` IPAM (kubernetes-sigs/kind@v0.29.0 images/kindnetd/cmd/kindnetd/main.go,
//! cni.go `cniConfigTemplate`, routes.go `syncRoute`).
//!
//! - Each pod that is not `hostNetwork` gets a sandbox: a network namespace of its own, joined
//!   to its node's by a veth pair (`eth0` in the pod), with the next free address of the
//!   node's `spec.podCIDR`, which kube-controller-manager allocates (`--allocate-node-cidrs`).
//! - ptp: the node's end of the pair holds the gateway (the range's first address, /32) and a
//!   /32 route to the pod; the pod's only routes are to the gateway and the default through it.
//! - kindnetd: every node routes each other node's pod range through that node's address.
//! - The node forwards (`net.ipv4.ip_forward`, which kind's node image sets).
//!
//! Services are kube-proxy's (the real one, `--proxy-mode=nftables`, in each node's network).
//!
//! Also here: `ip -batch` in a node's namespaces ([`ip_batch`], which the real tier's
//! `real/network.rs` wires the nodes' network with too), and the stand-in for the dummy link
//! YurtHub makes in its node's network ([`dummy_link_stand_in`]).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};

use crate::nodes::runtime::NodeNamespaces;

/// A node's end of the pod network.
pub struct PodNetwork {
    node: Arc<NodeNamespaces>,
    /// The executable that holds each sandbox's namespaces (the sim's init stand-in).
    init: PathBuf,
    /// The node's pod range (network address, prefix length), once known.
    cidr: Mutex<Option<(Ipv4Addr, u8)>>,
    /// Host numbers in use, as host-local keeps them.
    used: Arc<Mutex<BTreeSet<u32>>>,
}

/// A pod's network: its namespace and address; dropping it ends the namespace (and with it
/// the veth pair) and frees the address.
pub struct PodSandbox {
    pub ip: Ipv4Addr,
    pub namespaces: NodeNamespaces,
    host: u32,
    used: Arc<Mutex<BTreeSet<u32>>>,
}

impl Drop for PodSandbox {
    fn drop(&mut self) {
        self.used.lock().unwrap().remove(&self.host);
    }
}

/// `10.244.1.0/24` → (10.244.1.0, 24).
pub fn parse_cidr(cidr: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let (addr, len) = cidr
        .split_once('/')
        .with_context(|| format!("{cidr} is not a CIDR"))?;
    let len: u8 = len
        .parse()
        .with_context(|| format!("{cidr}: prefix length"))?;
    if len > 30 {
        bail!("{cidr}: a pod range needs room for a gateway and pods");
    }
    let addr: Ipv4Addr = addr.parse().with_context(|| format!("{cidr}: address"))?;
    let mask = u32::MAX << (32 - len);
    Ok((Ipv4Addr::from(u32::from(addr) & mask), len))
}

/// The gateway (first address) and the `host`-th address of a range.
fn nth(base: Ipv4Addr, host: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base) + host)
}

impl PodNetwork {
    pub fn new(node: Arc<NodeNamespaces>, init: PathBuf) -> PodNetwork {
        PodNetwork {
            node,
            init,
            cidr: Mutex::new(None),
            used: Arc::default(),
        }
    }

    /// Takes the node's pod range and makes the node forward.
    pub fn set_cidr(&self, cidr: &str) -> anyhow::Result<()> {
        let parsed = parse_cidr(cidr)?;
        let mut cur = self.cidr.lock().unwrap();
        if *cur == Some(parsed) {
            return Ok(());
        }
        self.node
            .run_in(|| std::fs::write("/proc/sys/net/ipv4/ip_forward", "1"))?
            .context("net.ipv4.ip_forward=1 on the node")?;
        *cur = Some(parsed);
        Ok(())
    }

    /// A new sandbox with the next free address, wired as ptp wires it.
    pub fn sandbox(&self) -> anyhow::Result<PodSandbox> {
        let Some((base, len)) = *self.cidr.lock().unwrap() else {
            bail!("network is not ready: the node has no podCIDR yet");
        };
        let size = 1u32 << (32 - len);
        let host = {
            let mut used = self.used.lock().unwrap();
            // .0 is the network, .1 the gateway, the last the broadcast address
            let Some(h) = (2..size - 1).find(|h| !used.contains(h)) else {
                bail!("failed to allocate for range {base}/{len}: no IP addresses available");
            };
            used.insert(h);
            h
        };
        let sandbox = PodSandbox {
            ip: nth(base, host),
            namespaces: NodeNamespaces::create(&self.init)
                .context("the pod's network namespace")?,
            host,
            used: self.used.clone(),
        };
        let gateway = nth(base, 1);
        let ip = sandbox.ip;
        let veth = format!("veth{:08x}", u32::from(ip));
        ip_batch(
            &self.node,
            format!(
                "link add {veth} type veth peer name eth0 netns {pid}\n\
                 link set {veth} up\n\
                 addr add {gateway}/32 dev {veth} scope link\n\
                 route replace {ip}/32 dev {veth} scope host\n",
                pid = sandbox.namespaces.init_pid()
            ),
        )
        .context("the pod's veth pair")?;
        ip_batch(
            &sandbox.namespaces,
            format!(
                "addr add {ip}/32 dev eth0\n\
                 link set eth0 up\n\
                 route add {gateway}/32 dev eth0 scope link\n\
                 route add default via {gateway} dev eth0\n"
            ),
        )
        .context("the pod's eth0")?;
        Ok(sandbox)
    }
}

/// kindnetd's routes: on `on`, each other node's pod range through that node's address.
pub fn sync_routes(on: &NodeNamespaces, others: &[(Ipv4Addr, String)]) -> anyhow::Result<()> {
    if others.is_empty() {
        return Ok(());
    }
    let batch: String = others
        .iter()
        .map(|(via, cidr)| format!("route replace {cidr} via {via}\n"))
        .collect();
    ip_batch(on, batch)
}

/// Runs `ip -batch -` with `commands` inside `ns`.
pub(crate) fn ip_batch(ns: &NodeNamespaces, commands: String) -> anyhow::Result<()> {
    let out = ns.run_in(move || {
        use std::io::Write;
        let mut child = std::process::Command::new("ip")
            .args(["-batch", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        child.stdin.take().unwrap().write_all(commands.as_bytes())?;
        child.wait_with_output()
    })??;
    if !out.status.success() {
        bail!(
            "ip -batch failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether this machine's kernel makes `dummy` links (CONFIG_DUMMY); asked once, in a
/// namespace of its own.
fn kernel_has_dummy(init: &Path) -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        NodeNamespaces::create(init)
            .ok()
            .is_some_and(|ns| ip_batch(&ns, "link add probe0 type dummy\n".into()).is_ok())
    })
}

/// Makes `name` exist in `ns` for a YurtHub about to start, when the kernel has no `dummy`
/// link type to create it with (this machine's has none; a node's has). YurtHub v1.7.0 takes a
/// link of that name as it finds it and only sets its address
/// (openyurtio/openyurt@v1.7.0 pkg/yurthub/network/dummyif_linux.go `EnsureDummyInterface`),
/// so a portless bridge stands in: local addresses work on it as on a dummy link. YurtHub
/// deletes the link when it exits (network.go), as it would a dummy one.
pub fn dummy_link_stand_in(ns: &NodeNamespaces, init: &Path, name: &str) -> anyhow::Result<()> {
    if kernel_has_dummy(init) {
        return Ok(());
    }
    let exists = ns
        .run_in({
            let path = format!("/sys/class/net/{name}");
            move || Path::new(&path).exists()
        })
        .unwrap_or(false);
    if exists {
        return Ok(());
    }
    ip_batch(
        ns,
        format!("link add {name} type bridge\nlink set {name} up\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ranges_parse_to_their_network() {
        assert_eq!(
            parse_cidr("10.244.1.0/24").unwrap(),
            (Ipv4Addr::new(10, 244, 1, 0), 24)
        );
        assert_eq!(
            parse_cidr("10.244.1.7/24").unwrap(),
            (Ipv4Addr::new(10, 244, 1, 0), 24)
        );
        assert!(parse_cidr("10.244.1.0").is_err());
        assert!(parse_cidr("10.244.1.0/31").is_err());
        assert_eq!(
            nth(Ipv4Addr::new(10, 244, 1, 0), 2),
            Ipv4Addr::new(10, 244, 1, 2)
        );
    }
}
