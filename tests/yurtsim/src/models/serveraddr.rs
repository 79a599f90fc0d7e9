//! openyurtio/openyurt@v0.6.1 `pkg/yurttunnel/server/serveraddr/addr.go`, shared by the
//! yurt-tunnel-agent (where to dial) and the yurt-tunnel-server (its certificate's SANs):
//! `getTunnelServerResources` and `extractTunnelServerDNSandIPs`.

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::Value;

use super::Caller;

pub(super) const NS: &str = "kube-system";
pub(super) const SVC: &str = "x-tunnel-server-svc";
/// pkg/projectinfo (GetEdgeWorkerLabelKey).
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
/// pkg/yurttunnel/constants (YurttunnelServerExternalAddrKey).
const EXTERNAL_ADDR: &str = "x-tunnel-server-external-addr";

/// The Service, its Endpoints and the cloud nodes.
pub(super) type Resources = (Arc<Value>, Arc<Value>, Vec<Arc<Value>>);

/// getTunnelServerResources: GET the Service, GET its Endpoints, and for a NodePort Service
/// LIST the cloud nodes (`openyurt.io/is-edge-worker=false`); the first error ends it.
pub(super) fn resources(me: &Caller) -> Result<Resources, String> {
    let svc = me
        .get("", "services", NS, SVC)
        .map_err(|e| e.message.clone())?;
    let eps = me
        .get("", "endpoints", NS, SVC)
        .map_err(|e| e.message.clone())?;
    let nodes = if svc["spec"]["type"] == "NodePort" {
        me.list("", "nodes", "", &format!("{EDGE_LABEL}=false"))
            .map_err(|e| e.message.clone())?
    } else {
        Vec::new()
    };
    Ok((svc, eps, nodes))
}

/// net.SplitHostPort's errors for an address without a port.
pub(super) fn split_host_port(addr: &str) -> Result<(), String> {
    let missing = || Err(format!("address {addr}: missing port in address"));
    if let Some(rest) = addr.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((_, p)) if p.starts_with(':') => Ok(()),
            _ => missing(),
        };
    }
    match addr.matches(':').count() {
        0 => missing(),
        1 => Ok(()),
        _ => Err(format!("address {addr}: too many colons in address")),
    }
}

/// extractTunnelServerDNSandIPs: (DNS names, IPs) in upstream's order — the Service type's own
/// (LoadBalancer ingress, the ClusterIP Service's external-address annotation, the NodePort
/// Service's cloud nodes), then the Service's default domains, its cluster IP, 127.0.0.1 and
/// the Endpoints' addresses.
pub(super) fn extract(
    svc: &Value,
    eps: &Value,
    nodes: &[Arc<Value>],
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut dns: Vec<String> = Vec::new();
    let mut ips: Vec<String> = Vec::new();
    match svc["spec"]["type"].as_str().unwrap_or("") {
        "LoadBalancer" => {
            let ingress = svc["status"]["loadBalancer"]["ingress"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if ingress.is_empty() {
                return Err("load balancer is not ready".into());
            }
            for i in ingress {
                if let Some(ip) = i["ip"].as_str().filter(|s| !s.is_empty()) {
                    ips.push(ip.into());
                }
                if let Some(h) = i["hostname"].as_str().filter(|s| !s.is_empty()) {
                    dns.push(h.into());
                }
            }
        }
        "ClusterIP" => {
            if let Some(addr) = svc["metadata"]["annotations"][EXTERNAL_ADDR].as_str() {
                split_host_port(addr)?;
                let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if host.parse::<IpAddr>().is_ok() {
                    ips.push(host.into());
                } else {
                    dns.push(host.into());
                }
            }
        }
        "NodePort" => {
            if nodes.is_empty() {
                return Err("there is no cloud node".into());
            }
            let mut found = false;
            for n in nodes {
                for a in n["status"]["addresses"].as_array().into_iter().flatten() {
                    let addr = a["address"].as_str().unwrap_or("").to_string();
                    match a["type"].as_str() {
                        Some("InternalIP") => {
                            found = true;
                            ips.push(addr);
                        }
                        Some("Hostname") => dns.push(addr),
                        _ => {}
                    }
                }
            }
            if !found {
                return Err("can't find node IP".into());
            }
        }
        other => return Err(format!("unsupported service type: {other}")),
    }
    dns.extend(default_domains(SVC));
    let cluster_ip = svc["spec"]["clusterIP"].as_str().unwrap_or("");
    if cluster_ip != "None" {
        ips.push(cluster_ip.into());
    }
    ips.push("127.0.0.1".into());
    for s in eps["subsets"].as_array().into_iter().flatten() {
        for a in s["addresses"].as_array().into_iter().flatten() {
            if let Some(ip) = a["ip"].as_str().filter(|s| !s.is_empty()) {
                ips.push(ip.into());
            }
            if let Some(h) = a["hostname"].as_str().filter(|s| !s.is_empty()) {
                dns.push(h.into());
            }
        }
    }
    Ok((dns, ips))
}

/// GetDefaultDomainsForSvc.
pub(super) fn default_domains(svc: &str) -> [String; 4] {
    [
        svc.to_string(),
        format!("{svc}.{NS}"),
        format!("{svc}.{NS}.svc"),
        format!("{svc}.{NS}.svc.cluster.local"),
    ]
}
