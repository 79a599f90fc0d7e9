//! yurt-tunnel-agent v0.6.1 (the legacy profile's `--deploy-yurttunnel`): flags and
//! validation (every error returned from the command ends in
//! `klog.Fatalf("yurttunnel-agent failed: …")`, exit 255), the clientset built from the host's
//! `/etc/kubernetes/kubelet.conf` (so it acts as the node), the tunnel server's address
//! discovered once from Service and Endpoints `kube-system/x-tunnel-server-svc` (and the cloud
//! nodes for a NodePort Service) when `--tunnelserver-addr` is empty, the client certificate
//! requested through certificates.k8s.io/v1beta1 with signer legacy-unknown and waited for
//! without a timeout, then the TLS configuration (the pod's ServiceAccount CA file) before it
//! dials the server. Facts from `facts/yurt-tunnel-agent-v0.6.1.yaml` (openyurtio/openyurt@v0.6.1
//! cmd/yurt-tunnel-agent, pkg/yurttunnel/server/serveraddr/addr.go, pkg/util/certmanager).

use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use super::{Caller, Env, legacy_csr, serveraddr};
use crate::api::auth::UserInfo;
use crate::facts::Facts;
use crate::pki::Subject;

const PROGRAM: &str = "yurttunnel-agent";
const NS: &str = "kube-system";
const SVC: &str = serveraddr::SVC;
const DEFAULT_KUBECONFIG: &str = "/etc/kubernetes/kubelet.conf";
const DEFAULT_CERT_DIR: &str = "/var/lib/yurttunnel-agent/pki";
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let fatal = |msg: &str| {
        log.klog('F', "agent.go:0", &format!("{PROGRAM} failed: {msg}"));
        255
    };
    // the command sets no Use, so its path is ""
    let (parsed, info) = match super::start_v0_tunnel_command(env, facts, PROGRAM, "", &fatal) {
        Ok(p) => p,
        Err(code) => return code,
    };
    log.info("start.go:0", &format!("{PROGRAM} version: {info}"));
    let flag = |n: &str| parsed.get(n).unwrap_or("").to_string();
    let env_var = |n: &str| env.container.env_var(n).unwrap_or("").to_string();
    // AgentOptions.Validate
    let mut node_name = flag("node-name");
    if node_name.is_empty() {
        node_name = env_var("NODE_NAME");
        if node_name.is_empty() {
            log.line("Error: either --node-name or $NODE_NAME has to be set");
            return fatal("either --node-name or $NODE_NAME has to be set");
        }
    }
    let mut node_ip = flag("node-ip");
    if node_ip.is_empty() {
        node_ip = env_var("NODE_IP");
        if node_ip.is_empty() {
            log.line("Error: either --node-ip or $NODE_IP has to be set");
            return fatal("either --node-ip or $NODE_IP has to be set");
        }
    }
    if !identifiers_valid(&flag("agent-identifiers")) {
        let e = "--agent-identifiers are invalid, format should be host={node-name}";
        log.line(&format!("Error: {e}"));
        return fatal(e);
    }
    // AgentOptions.Config
    let mut identifiers = flag("agent-identifiers");
    if identifiers.is_empty() {
        identifiers = format!("ipv4={node_ip}&host={node_name}");
    }
    log.info(
        "options.go:0",
        &format!("{identifiers} is set for agent identifies"),
    );
    let me = match client(env, &flag("kube-config"), &flag("apiserver-addr")) {
        Ok(c) => c,
        Err(e) => {
            log.line(&format!("Error: {e}"));
            return fatal(&e);
        }
    };
    // the DaemonSet has no probes: Ready once running
    let _ = env.ready.send(true);
    // 1. the tunnel server's address
    let mut server_addr = flag("tunnelserver-addr");
    if server_addr.is_empty() {
        server_addr = match me.clone().and_then(|c| tunnel_server_addr(&c)) {
            Ok(a) => a,
            Err(e) => {
                log.line(&format!("Error: {e}"));
                return fatal(&e);
            }
        };
    }
    log.info(
        "start.go:0",
        &format!("yurttunnel-server address: {server_addr}"),
    );
    // 2. the certificate manager (NewYurttunnelAgentCertManager)
    let pod_ip = env_var("POD_IP");
    if pod_ip.is_empty() {
        log.line("Error: env POD_IP is not set");
        return fatal("env POD_IP is not set");
    }
    let cert_dir = match flag("cert-dir") {
        d if d.is_empty() => DEFAULT_CERT_DIR.to_string(),
        d => d,
    };
    let store = env.container_path(&format!("{cert_dir}/{PROGRAM}-current.pem"));
    let subject = Subject {
        common_name: PROGRAM.into(),
        organizations: vec!["openyurt:yurttunnel".into()],
        // the NODE_NAME env, not the flag (certmanager.go)
        dns_names: vec![env_var("NODE_NAME")],
        ips: pod_ip.parse::<IpAddr>().into_iter().collect(),
    };
    let request = legacy_csr::Request::default();
    // a certificate kept from an earlier run is loaded (the file store), else requested
    let kept = store.as_ref().is_some_and(|p| p.is_file());
    // 2.1 wait.PollUntil(5s) for the certificate, without a timeout; the manager's own
    // attempts run meanwhile
    if !kept {
        loop {
            let attempt = me.as_ref().map_err(Clone::clone).and_then(|me| {
                request.attempt(
                    me,
                    &subject,
                    &["key encipherment", "digital signature", "client auth"],
                )
            });
            match attempt {
                Ok(Some(pem)) => {
                    if let Some(p) = &store {
                        super::yurthub::write_file(p, &pem);
                    }
                    break;
                }
                Ok(None) => {}
                Err(e) => log.error("certificate_manager.go:0", &e),
            }
            log.info(
                "start.go:0",
                &format!("certificate {PROGRAM} not signed, waiting..."),
            );
            env.sleep(Duration::from_secs(5)).await;
        }
    }
    log.info("start.go:0", &format!("certificate {PROGRAM} ok"));
    // 3. GenTLSConfigUseCertMgrAndCA
    let ca = format!("{SA_DIR}/ca.crt");
    if !env.container_path(&ca).is_some_and(|p| p.is_file()) {
        let e = format!("CA file({ca}) doesn't exist");
        log.line(&format!("Error: {e}"));
        return fatal(&e);
    }
    if let Err(e) = serveraddr::split_host_port(&server_addr) {
        log.line(&format!("Error: {e}"));
        return fatal(&e);
    }
    // 4. the anp agent client set dials and redials in the background, never exiting
    log.info(
        "anpagent.go:0",
        &format!("start serving grpc request redirected from yurttunnel-server: {server_addr}"),
    );
    let _ = env.serving.send(true);
    loop {
        env.sleep(Duration::from_secs(3600)).await;
    }
}

/// agentIdentifiersAreValid: empty, or `type=value` pairs separated by commas with type
/// host, cidr, ipv4, ipv6 or uid.
fn identifiers_valid(s: &str) -> bool {
    s.is_empty()
        || s.split(',').all(|e| {
            let parts: Vec<&str> = e.split('=').collect();
            parts.len() == 2 && matches!(parts[0], "host" | "cidr" | "ipv4" | "ipv6" | "uid")
        })
}

/// The clientset (options.Config, pkg/yurttunnel/kubernetes): a kubeconfig (the host's
/// kubelet.conf by default: the node's identity) or, with only `--apiserver-addr`, the pod's
/// ServiceAccount token. An `Err` inside `Ok` is a client whose every request fails with it
/// (a server it cannot reach).
fn client(
    env: &Env,
    kube_config: &str,
    apiserver_addr: &str,
) -> Result<Result<Caller, String>, String> {
    let log = &env.log;
    let mut kc = kube_config.to_string();
    if kc.is_empty() && apiserver_addr.is_empty() {
        kc = DEFAULT_KUBECONFIG.to_string();
        log.info(
            "options.go:0",
            &format!(
                "neither --kube-config nor --apiserver-addr is set, will use {kc} as the kubeconfig"
            ),
        );
    }
    if kc.is_empty() {
        log.info(
            "options.go:0",
            &format!("create the clientset based on the apiserver address({apiserver_addr})."),
        );
        let token = format!("{SA_DIR}/token");
        if !env.container_path(&token).is_some_and(|p| p.is_file()) {
            return Err(format!("open {token}: no such file or directory"));
        }
        return Ok(env.pod_identity());
    }
    log.info(
        "options.go:0",
        &format!("create the clientset based on the kubeconfig({kc})."),
    );
    let read = |p: &str| -> Result<String, String> {
        env.read_container_file(p)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| format!("open {p}: no such file or directory"))
    };
    let text = read(&kc).map_err(|_| format!("stat {kc}: no such file or directory"))?;
    let doc: Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("fail to create the clientset based on {kc}: {e}"))?;
    let named = |list: &str, name: &str| -> Option<Value> {
        doc[list]
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
            .cloned()
    };
    let invalid = |what: String| {
        format!("fail to create the clientset based on {kc}: invalid configuration: {what}")
    };
    let ctx_name = doc["current-context"].as_str().unwrap_or("");
    let ctx = named("contexts", ctx_name)
        .ok_or_else(|| invalid("no configuration has been provided".into()))?;
    let cluster = named("clusters", ctx["context"]["cluster"].as_str().unwrap_or(""))
        .ok_or_else(|| invalid("no configuration has been provided".into()))?;
    let user = named("users", ctx["context"]["user"].as_str().unwrap_or(""))
        .map(|u| u["user"].clone())
        .unwrap_or(Value::Null);
    let server = cluster["cluster"]["server"].as_str().unwrap_or("");
    // loadTLSFiles (client-go transport): the files named are read when the clientset is made
    for key in ["certificate-authority", "client-certificate", "client-key"] {
        let holder = if key == "certificate-authority" {
            &cluster["cluster"]
        } else {
            &user
        };
        if let Some(p) = holder[key].as_str().filter(|p| !p.is_empty()) {
            read(p)?;
        }
    }
    let reachable = {
        let host = |u: &str| {
            u.trim_start_matches("https://")
                .trim_end_matches('/')
                .to_string()
        };
        host(server) == host(&env.shared.internal_endpoint)
    };
    if !reachable {
        return Ok(Err(format!(
            "Get \"{server}/api/v1/namespaces/{NS}/services/{SVC}\": dial tcp: connect: no route to host"
        )));
    }
    if let Some(token) = user["token"].as_str().filter(|t| !t.is_empty()) {
        return Ok(env.caller_with_token(token));
    }
    let pem = match user["client-certificate"].as_str() {
        Some(p) if !p.is_empty() => read(p)?,
        _ => {
            use base64::Engine;
            let data = user["client-certificate-data"].as_str().unwrap_or("");
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default()
        }
    };
    let (cn, orgs) = crate::pki::certificate_subject(&pem)
        .map(|s| (s.common_name, s.organizations))
        .or_else(|| super::yurthub::stand_in_subject(&pem))
        // no client credentials: the requests are anonymous
        .unwrap_or_else(|| (crate::api::auth::ANONYMOUS.to_string(), vec![]));
    let mut groups = orgs;
    if cn == crate::api::auth::ANONYMOUS {
        groups = vec![crate::api::auth::UNAUTHENTICATED.to_string()];
    } else {
        groups.push(crate::api::auth::AUTHENTICATED.to_string());
    }
    Ok(Ok(Caller::new(&env.shared, UserInfo { name: cn, groups })))
}

/// serveraddr.GetTunnelServerAddr: one attempt, no retry.
fn tunnel_server_addr(me: &Caller) -> Result<String, String> {
    let (svc, eps, nodes) = serveraddr::resources(me)?;
    let (dns, ips) = serveraddr::extract(&svc, &eps, &nodes)?;
    // the first IP that is not the loopback one, else the first DNS name
    let host = match ips.iter().find(|ip| ip.as_str() != "127.0.0.1") {
        Some(ip) => ip.clone(),
        None => dns.first().cloned().ok_or("there is no available ip")?,
    };
    let typ = svc["spec"]["type"].as_str().unwrap_or("");
    let port = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "tcp")
        .map(|p| {
            if typ == "NodePort" {
                p["nodePort"].as_i64().unwrap_or(0)
            } else {
                p["port"].as_i64().unwrap_or(0)
            }
        })
        .unwrap_or(0);
    if port == 0 {
        return Err("fail to get the port number".into());
    }
    Ok(format!("{host}:{port}"))
}
