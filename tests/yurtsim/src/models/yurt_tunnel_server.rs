//! yurt-tunnel-server v0.6.1 (the legacy profile's `--deploy-yurttunnel`): flags and
//! validation (every error ends in `klog.Fatalf("yurttunnel-server failed: …")`, exit 255),
//! the DNS controller's leader election on Lease kube-system/tunnel-dns-controller and its
//! ConfigMap kube-system/yurt-tunnel-nodes, the serving certificate requested through
//! certificates.k8s.io/v1beta1 with signer legacy-unknown and waited for without a timeout,
//! then the node and ConfigMap informers the handler wrapper waits on (no timeout) before any
//! listener opens. Facts from `facts/yurt-tunnel-server-v0.6.1.yaml` (openyurtio/openyurt@v0.6.1
//! cmd/yurt-tunnel-server, pkg/yurttunnel, pkg/util/certmanager).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Caller, Env, legacy_csr, serveraddr};
use crate::facts::Facts;
use crate::pki::Subject;
use crate::util;

const NS: &str = "kube-system";
const INTERNAL_SVC: &str = "x-tunnel-server-internal-svc";
const CFG: &str = "yurt-tunnel-server-cfg";
const NODES_CM: &str = "yurt-tunnel-nodes";
const DNS_LEASE: &str = "tunnel-dns-controller";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let fatal = |msg: &str| {
        log.klog(
            'F',
            "server.go:0",
            &format!("yurttunnel-server failed: {msg}"),
        );
        255
    };
    let (parsed, info) = match super::start_v0_tunnel_command(
        env,
        facts,
        "yurttunnel-server",
        "yurttunnel-server",
        &fatal,
    ) {
        Ok(p) => p,
        Err(code) => return code,
    };
    log.line(&format!("yurttunnel-server version: {info}"));
    if parsed.get("bind-address") == Some("") {
        return fatal("yurttunnel-server's bind address can't be empty");
    }
    let me = match env.pod_identity() {
        Ok(c) => c,
        Err(e) => return fatal(&format!("fail to create the clientset: {e}")),
    };
    // the Deployment has no probes: Ready once running
    let _ = env.ready.send(true);
    let ts = Tunnel {
        env,
        me,
        holder: format!("{}_{}", env.container.node, util::new_uid()),
    };
    let dns = parsed.get("enable-dns-controller") != Some("false");
    let cert_ips: Vec<String> = parsed
        .get("cert-ips")
        .unwrap_or("")
        .split(',')
        .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
        .map(str::to_string)
        .collect();
    let cert_dns: Vec<String> = parsed
        .get("cert-dns-names")
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let subject = ts.subject(&cert_dns, &cert_ips);
    let request = legacy_csr::Request::default();
    let mut dns_leading = false;
    let mut dns_synced = false;
    let mut renewed = Instant::now();
    let mut certified = false;
    let mut serving = false;
    let mut failures = 0u32;
    loop {
        if dns {
            match ts.try_lease() {
                Ok(true) => {
                    if !dns_leading {
                        log.info(
                            "leaderelection.go:0",
                            &format!("successfully acquired lease {NS}/{DNS_LEASE}"),
                        );
                    }
                    dns_leading = true;
                    renewed = Instant::now();
                }
                Ok(false) => {}
                Err(e) => {
                    if dns_leading && renewed.elapsed() > env.scaled(Duration::from_secs(10)) {
                        log.klog('F', "dns.go:0", "leaderelection lost");
                        return 255;
                    }
                    if !dns_leading {
                        log.error(
                            "leaderelection.go:0",
                            &format!("error retrieving resource lock {NS}/{DNS_LEASE}: {e}"),
                        );
                    }
                }
            }
            if dns_leading && !dns_synced {
                // the node, service and configmap informers ("tunnel-dns-controller")
                if ts.informers_synced(&mut failures, true) {
                    dns_synced = true;
                    ts.ensure_dns_configmap();
                }
            }
        }
        if !certified {
            match request.attempt(
                &ts.me,
                &subject,
                &[
                    "key encipherment",
                    "digital signature",
                    "server auth",
                    "client auth",
                ],
            ) {
                Ok(Some(_)) => {
                    certified = true;
                    if parsed.get("egress-selector-enable") == Some("true") {
                        return fatal(
                            "fail to run the proxier: DOESN'T SUPPROT EGRESS SELECTOR YET",
                        );
                    }
                }
                Ok(None) => log.info(
                    "start.go:0",
                    "waiting for the master to sign the yurttunnel-server certificate",
                ),
                Err(e) => log.error("certificate_manager.go:0", &e),
            }
        }
        // the handler wrapper waits for the node and configmap informers, then the listeners
        if certified && !serving && ts.informers_synced(&mut failures, false) {
            serving = true;
            let _ = env.serving.send(true);
            log.info("anpserver.go:0", "start handling connection from agents");
        }
        env.sleep(Duration::from_secs(2)).await;
    }
}

struct Tunnel<'a> {
    env: &'a Env,
    me: Caller,
    holder: String,
}

impl Tunnel<'_> {
    /// The certificate's SANs (NewYurttunnelServerCertManager): what
    /// serveraddr.GetYurttunelServerDNSandIP finds — for the NodePort Service the cloud nodes'
    /// addresses first, then its names, cluster IP, 127.0.0.1 and Endpoints — plus the
    /// internal Service's cluster IP and names, then the flags'; the lookup stops at its first
    /// error and then only the flags' SANs stay.
    fn subject(&self, dns: &[String], ips: &[String]) -> Subject {
        let mut dns_names: Vec<String> = Vec::new();
        let mut addrs: Vec<std::net::IpAddr> = Vec::new();
        let found = serveraddr::resources(&self.me)
            .and_then(|(svc, eps, nodes)| serveraddr::extract(&svc, &eps, &nodes));
        match found {
            Ok((d, i)) => {
                dns_names.extend(d);
                addrs.extend(i.iter().filter_map(|i| i.parse::<std::net::IpAddr>().ok()));
                // the internal Service through the clientset: not found or denied, it adds
                // nothing
                if let Ok(s) = self.me.get("", "services", NS, INTERNAL_SVC)
                    && let Some(ip) = s["spec"]["clusterIP"].as_str().and_then(|i| i.parse().ok())
                {
                    addrs.push(ip);
                    dns_names.extend(serveraddr::default_domains(INTERNAL_SVC));
                }
            }
            Err(e) => self.env.log.info(
                "certmanager.go:0",
                &format!("failed to get the tunnel server's addresses, only the user-given SANs are used: {e}"),
            ),
        }
        // the user's SANs come last
        dns_names.extend(dns.iter().cloned());
        addrs.extend(
            ips.iter()
                .filter_map(|i| i.parse::<std::net::IpAddr>().ok()),
        );
        self.env.log.info(
            "certmanager.go:0",
            &format!("subject of tunnel server certificate, ips={addrs:?}, dnsNames={dns_names:?}"),
        );
        Subject {
            common_name: "kube-apiserver-kubelet-client".into(),
            organizations: vec!["system:masters".into(), "openyurt:yurttunnel".into()],
            dns_names,
            ips: addrs,
        }
    }

    /// The shared informers: nodes (all), configmaps (kube-system, yurt-tunnel-server-cfg)
    /// and, for the DNS controller, services (kube-system).
    fn informers_synced(&self, failures: &mut u32, with_services: bool) -> bool {
        let mut lists = vec![("nodes", "", ""), ("configmaps", NS, CFG)];
        if with_services {
            lists.push(("services", NS, ""));
        }
        let mut ok = true;
        for (r, ns, name) in lists {
            if let Err(e) = self.me.list_watch("", "v1", r, ns, name) {
                ok = false;
                *failures += 1;
                if *failures <= 4 || failures.is_power_of_two() {
                    let kind = match r {
                        "nodes" => "Node",
                        "configmaps" => "ConfigMap",
                        _ => "Service",
                    };
                    self.env.log.error(
                        "reflector.go:0",
                        &format!("Failed to watch *v1.{kind}: failed to list *v1.{kind}: {e}"),
                    );
                }
            }
        }
        ok
    }

    /// ensureCoreDNSRecordConfigMap: GET, CREATE with an empty record when missing; failures
    /// only logged.
    fn ensure_dns_configmap(&self) {
        match self.me.get("", "configmaps", NS, NODES_CM) {
            Ok(_) => {}
            Err(e) if e.code == 404 => {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": NODES_CM, "namespace": NS}, "data": {"tunnel-nodes": ""}});
                if let Err(e) = self.me.create("", "configmaps", NS, body) {
                    self.env.log.error(
                        "dns.go:0",
                        &format!("failed to ensure dns record ConfigMap {NS}/{NODES_CM}, {e}"),
                    );
                }
            }
            Err(e) => self.env.log.error(
                "dns.go:0",
                &format!("failed to ensure dns record ConfigMap {NS}/{NODES_CM}, {e}"),
            ),
        }
    }

    fn try_lease(&self) -> crate::api::error::ApiResult<bool> {
        let fifteen = Duration::from_secs(15);
        self.me
            .try_acquire_or_renew(self.env, NS, DNS_LEASE, &self.holder, fifteen)
    }
}
