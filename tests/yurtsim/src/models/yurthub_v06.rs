//! YurtHub v0.6.1 as a static pod (the legacy profile): flags (exit 2) and validation (exit
//! 255) of the real binary; the hubself certificate manager — the root-dir clean-up, the CA
//! read anonymously from kube-public/cluster-info, bootstrap-hub.conf with the join token
//! (reused unchanged once written), the client certificate requested through
//! certificates.k8s.io/v1beta1 with signer kubernetes.io/legacy-unknown as the bootstrap
//! identity (or the kubelet's when the token is empty), the 4-minute wait it dies on; then the
//! serving certificate requested as the hub (waited for without a timeout), and the servers:
//! `/v1/healthz` and the proxy on 10261, with no readiness gating (v0.6 has no readyz).
//! Facts from `facts/yurthub-v0.6.1.yaml` (openyurtio/openyurt@v0.6.1: cmd/yurthub,
//! pkg/yurthub/certificate/hubself, pkg/util/certmanager, pkg/yurthub/server).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::yurthub::{PortClaim, kubeconfig_token, read_identity, stand_in_subject, write_file};
use super::{Caller, Env, legacy_csr};
use crate::api::auth::UserInfo;
use crate::facts::Facts;
use crate::pki::{self, Subject};

const HUB_ORG: &str = "openyurt:yurthub";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let parsed = match super::start_v0_command(env, facts, "yurthub") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let opt = |n: &str, d: &str| parsed.get(n).unwrap_or(d).to_string();
    let node = opt("node-name", "");
    let servers = opt("server-addr", "");
    let mode = opt("working-mode", "edge");
    let dummy_ip = opt("dummy-if-ip", "169.254.2.1");
    // ValidateOptions, in its order (facts: validation.order)
    let invalid = if node.is_empty() {
        Some("node name is empty".to_string())
    } else if servers.is_empty() {
        Some("server-address is empty".into())
    } else if !["rr", "priority"].contains(&opt("lb-mode", "rr").as_str()) {
        Some(format!(
            "lb mode({}) is not supported",
            opt("lb-mode", "rr")
        ))
    } else if opt("cert-mgr-mode", "hubself") != "hubself" {
        Some(format!(
            "cert manage mode {} is not supported",
            opt("cert-mgr-mode", "hubself")
        ))
    } else if !["edge", "cloud"].contains(&mode.as_str()) {
        Some(format!("working mode {mode} is not supported"))
    } else {
        dummy_ip_error(&dummy_ip).map(|e| format!("dummy ip {dummy_ip} is not invalid, {e}"))
    };
    if let Some(msg) = invalid {
        log.klog('F', "start.go:0", &format!("validate options: {msg}"));
        return 255;
    }
    // config.Complete: parseRemoteServers (https added when no scheme; others refused)
    let mut remote = Vec::new();
    for s in servers.split(',').filter(|s| !s.is_empty()) {
        let url = if s.contains("://") {
            s.to_string()
        } else {
            format!("https://{s}")
        };
        if !url.starts_with("https://") {
            log.klog(
                'F',
                "start.go:0",
                &format!(
                    "complete yurthub configuration error, only https scheme is supported for server address({s})"
                ),
            );
            return 255;
        }
        remote.push(url);
    }
    let Some(kubelet) = env.shared.kubelets.get(&env.container.node) else {
        return 255;
    };
    let hub = Hub {
        env,
        node: node.clone(),
        root: kubelet.host_path(&opt("root-dir", "/var/lib/yurthub")),
        server: remote[0].clone(),
        orgs: opt("hub-cert-organizations", ""),
        dummy_ip: dummy_ip.clone(),
        kubelet_pair: kubelet.host_path(&opt(
            "kubelet-client-certificate",
            "/var/lib/kubelet/pki/kubelet-client-current.pem",
        )),
        client_req: Default::default(),
        serving_req: Default::default(),
    };
    log.info("start.go:0", "1. register cert managers");
    log.info("certificate.go:0", "Registered certificate manager hubself");
    log.info("start.go:0", "2. create cert manager with hubself mode");
    let started = hub.start(&opt("join-token", ""));
    if let Err(e) = &started {
        log.error("cert_mgr.go:0", e);
    }
    // CertificateManagerRegistry.New: PollImmediate every 5 s for 4 minutes
    let deadline = Instant::now() + env.scaled(Duration::from_secs(240));
    let mut next_try = Instant::now();
    let mut backoff = Duration::from_secs(2);
    let me = loop {
        if let Some(me) = read_identity(&env.shared, &hub.pki("yurthub-current.pem")) {
            break me;
        }
        if started.is_ok() && Instant::now() >= next_try {
            match hub.client_certificate() {
                Ok(()) => {}
                Err(e) => {
                    log.error("certificate_manager.go:0", &e);
                    // client-go's rotation back-off: 2 s doubling to 32 s
                    next_try = Instant::now() + env.scaled(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(32));
                }
            }
            if let Some(me) = read_identity(&env.shared, &hub.pki("yurthub-current.pem")) {
                break me;
            }
        }
        if Instant::now() >= deadline {
            log.error(
                "certificate.go:0",
                "client certificate preparation failed, timed out waiting for the condition",
            );
            log.klog(
                'F',
                "start.go:0",
                "run yurthub failed, could not create certificate manager, timed out waiting for the condition",
            );
            return 255;
        }
        log.info(
            "certificate.go:0",
            "waiting for preparing client certificate",
        );
        env.sleep(Duration::from_secs(5)).await;
    };
    hub.write_hub_conf();
    // GenUseCertMgrAndTLSConfig: the serving certificate, waited for without a timeout
    loop {
        match hub.serving_certificate(&me) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => log.error("certificate_manager.go:0", &e),
        }
        log.info(
            "server.go:0",
            "waiting for the master to sign the yurthub certificate",
        );
        env.sleep(Duration::from_secs(5)).await;
    }
    // the servers listen now; a second hub on the node panics on the bind (exit 2)
    let Some(_ports) = PortClaim::take(&kubelet) else {
        let bind = format!(
            "{}:{}",
            opt("bind-address", "127.0.0.1"),
            opt("serve-port", "10267")
        );
        log.line(&format!(
            "panic: listen tcp {bind}: bind: address already in use"
        ));
        return 2;
    };
    // the filters this hub applies to the kubelet's view (v0.6 has no serviceenvupdater)
    let mut disabled: Vec<String> = parsed
        .values
        .get("disabled-resource-filters")
        .into_iter()
        .flatten()
        .flat_map(|v| v.split(',').map(str::to_string))
        .collect();
    disabled.push("serviceenvupdater".into());
    let get = |n: &str| parsed.get(n).map(str::to_string);
    *kubelet.hub_filters.lock().unwrap() =
        Some(crate::nodes::cri::HubFilters::from_flags(&get, &disabled));
    log.info(
        "start.go:0",
        &format!(
            "new yurthub server and begin to serve, proxy server: {}:{}, hub server: {}:{}",
            opt("bind-address", "127.0.0.1"),
            opt("proxy-port", "10261"),
            opt("bind-address", "127.0.0.1"),
            opt("serve-port", "10267")
        ),
    );
    let _ = env.serving.send(true);
    // no readyz and no readiness gating at this tag: the proxy serves once it listens
    let _ = env.ready.send(true);
    std::future::pending::<()>().await;
    0
}

/// verifyDummyIP's checks (cmd/yurthub/app/options/options.go).
fn dummy_ip_error(ip: &str) -> Option<String> {
    let Ok(addr) = ip.parse::<std::net::Ipv4Addr>() else {
        return Some(format!("dummy ip {ip} is invalid"));
    };
    let o = addr.octets();
    if o[0] != 169 || o[1] != 254 {
        return Some(format!("dummy ip {ip} is not in cidr(169.254.0.0/16)"));
    }
    if o[2] == 31 {
        return Some(format!(
            "dummy ip {ip} is in reserved cidr(169.254.31.0/24)"
        ));
    }
    if ip == "169.254.1.1" {
        return Some("dummy ip is a reserved ip(169.254.1.1)".into());
    }
    None
}

struct Hub<'a> {
    env: &'a Env,
    node: String,
    root: PathBuf,
    /// the first --server-addr, as https://host:port
    server: String,
    orgs: String,
    dummy_ip: String,
    kubelet_pair: PathBuf,
    client_req: legacy_csr::Request,
    serving_req: legacy_csr::Request,
}

impl Hub<'_> {
    fn pki(&self, file: &str) -> PathBuf {
        self.root.join("pki").join(file)
    }

    fn bootstrap_conf(&self) -> PathBuf {
        self.root.join("bootstrap-hub.conf")
    }

    /// Whether the first --server-addr reaches this cluster's API server (the address nodes
    /// know it by).
    fn reaches_api(&self) -> bool {
        let host = |u: &str| {
            u.trim_start_matches("https://")
                .trim_end_matches('/')
                .to_string()
        };
        host(&self.server) == host(&self.env.shared.internal_endpoint)
    }

    /// The hubself manager's Start: clean-up, CA, bootstrap conf. An error ends Start early:
    /// no certificate manager runs and the caller's wait times out.
    fn start(&self, join_token: &str) -> Result<(), String> {
        let log = &self.env.log;
        // verifyServerAddrOrCleanup
        let kept = std::fs::read_to_string(self.bootstrap_conf())
            .ok()
            .and_then(|t| cluster_server(&t, "kubernetes"));
        match kept {
            Some(old) if old == self.server => {
                log.info(
                    "cert_mgr.go:0",
                    &format!("apiServer name {old} not changed"),
                );
            }
            other => {
                if let Some(old) = other {
                    log.info(
                        "cert_mgr.go:0",
                        &format!(
                            "config for apiServer {old} found, need to recycle for new server {}",
                            self.server
                        ),
                    );
                }
                log.info("cert_mgr.go:0", "clean up any stale files");
                remove_dir_contents(&self.root);
            }
        }
        // initCaCert: kube-public/cluster-info, anonymously
        let ca_file = self.pki("ca.crt");
        let anonymous = Caller::new(&self.env.shared, UserInfo::anonymous());
        let got = if self.reaches_api() {
            anonymous.get("", "configmaps", "kube-public", "cluster-info")
        } else {
            Err(crate::api::error::ApiError::new(
                503,
                "ServiceUnavailable",
                format!(
                    "Get \"{}/api/v1/namespaces/kube-public/configmaps/cluster-info\": dial tcp: connect: no route to host",
                    self.server
                ),
            ))
        };
        let cm = match got {
            Ok(cm) => cm,
            Err(e) => {
                if ca_file.exists() && e.code >= 500 {
                    log.error(
                        "cert_mgr.go:0",
                        &format!(
                            "couldn't reach server, use existed {} file",
                            ca_file.display()
                        ),
                    );
                    return self.init_bootstrap(join_token);
                }
                log.error(
                    "cert_mgr.go:0",
                    &format!("failed to get cluster-info configmap, {e}"),
                );
                return Err(format!("failed to init ca cert, {e}"));
            }
        };
        let Some(kubeconfig) = cm["data"]["kubeconfig"].as_str() else {
            return Err("failed to init ca cert, no kubeconfig in cluster-info configmap of kube-public namespace".into());
        };
        let ca = cluster_ca(kubeconfig).ok_or_else(|| {
            "failed to init ca cert, more than one cluster setting in cluster-info configmap"
                .to_string()
        })?;
        match std::fs::read(&ca_file) {
            Ok(old) if old == ca => {}
            Ok(_) => {
                log.info(
                    "cert_mgr.go:0",
                    &format!(
                        "{} file is outdated, need to create a new one",
                        ca_file.display()
                    ),
                );
                remove_dir_contents(&self.root);
                write_file(&ca_file, &ca);
            }
            Err(_) => write_file(&ca_file, &ca),
        }
        self.init_bootstrap(join_token)
    }

    /// initBootstrap: bootstrap-hub.conf written with the join token unless it exists.
    fn init_bootstrap(&self, join_token: &str) -> Result<(), String> {
        let file = self.bootstrap_conf();
        if std::fs::metadata(&file).is_ok_and(|m| m.len() > 0) {
            self.env.log.info(
                "cert_mgr.go:0",
                "yurthub bootstrap conf file already exists, skip init bootstrap",
            );
            return Ok(());
        }
        let conf = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n    server: {}\n    certificate-authority: {}\ncontexts:\n- name: token-bootstrap-client@kubernetes\n  context: {{cluster: kubernetes, user: token-bootstrap-client}}\ncurrent-context: token-bootstrap-client@kubernetes\nusers:\n- name: token-bootstrap-client\n  user:\n    token: \"{join_token}\"\n",
            self.server,
            self.pki("ca.crt").display()
        );
        write_file(&file, conf);
        Ok(())
    }

    /// The identity the client certificate is requested with: the bootstrap token of
    /// bootstrap-hub.conf, or the kubelet's certificate when that token is empty.
    fn requester(&self) -> Result<Caller, String> {
        let token = std::fs::read_to_string(self.bootstrap_conf())
            .ok()
            .and_then(|t| kubeconfig_token(&t))
            .unwrap_or_default();
        if !token.is_empty() {
            return self.env.caller_with_token(&token);
        }
        self.env.log.info(
            "cert_mgr.go:0",
            "no join token, so use kubelet config to bootstrap hub",
        );
        let text = std::fs::read_to_string(&self.kubelet_pair).map_err(|e| {
            format!(
                "could not load kubelet client certificate {}: {e}",
                self.kubelet_pair.display()
            )
        })?;
        let (cn, orgs) = pki::certificate_subject(&text)
            .map(|s| (s.common_name, s.organizations))
            .or_else(|| stand_in_subject(&text))
            .ok_or("tls: failed to find any PEM data in certificate input")?;
        let mut groups = orgs;
        groups.push("system:authenticated".into());
        Ok(Caller::new(&self.env.shared, UserInfo { name: cn, groups }))
    }

    /// One attempt of the client certificate manager.
    fn client_certificate(&self) -> Result<(), String> {
        let fail = |e: String| {
            format!(
                "Failed while requesting a signed certificate from the master: cannot create certificate signing request: {e}"
            )
        };
        if !self.reaches_api() {
            return Err(fail(format!(
                "Post \"{}/apis/certificates.k8s.io/v1beta1/certificatesigningrequests\": dial tcp: connect: no route to host",
                self.server
            )));
        }
        let me = self.requester().map_err(fail)?;
        let mut orgs = vec![HUB_ORG.to_string(), "system:nodes".to_string()];
        for o in self
            .orgs
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
        {
            if !orgs.iter().any(|x| x == o) {
                orgs.push(o.to_string());
            }
        }
        let subject = Subject {
            common_name: format!("system:node:{}", self.node),
            organizations: orgs,
            ..Default::default()
        };
        self.request(
            &me,
            &self.pki("yurthub-current.pem"),
            &subject,
            "client auth",
        )
        .map(|_| ())
    }

    /// The serving certificate, requested as the hub; true once stored.
    fn serving_certificate(&self, me: &Caller) -> Result<bool, String> {
        let store = self.pki("yurthub-server-current.pem");
        if store.exists() {
            return Ok(true);
        }
        let subject = Subject {
            common_name: "kube-apiserver-kubelet-client".into(),
            organizations: vec!["system:masters".into(), HUB_ORG.into()],
            dns_names: vec![],
            ips: ["127.0.0.1", self.dummy_ip.as_str()]
                .iter()
                .filter_map(|i| i.parse().ok())
                .collect(),
        };
        self.request(me, &store, &subject, "server auth")
    }

    /// One attempt of the certificate manager storing at `store` (cert + key); true once
    /// stored.
    fn request(
        &self,
        me: &Caller,
        store: &Path,
        subject: &Subject,
        usage: &str,
    ) -> Result<bool, String> {
        let req = if store.ends_with("yurthub-current.pem") {
            &self.client_req
        } else {
            &self.serving_req
        };
        match req.attempt(
            me,
            subject,
            &["digital signature", "key encipherment", usage],
        )? {
            Some(pem) => {
                write_file(store, &pem);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn write_hub_conf(&self) {
        let file = self.root.join("yurthub.conf");
        if file.exists() {
            return;
        }
        let conf = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n    server: {}\n    certificate-authority: {}\ncontexts:\n- name: default-context\n  context: {{cluster: kubernetes, user: default-auth}}\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: {cert}\n    client-key: {cert}\n",
            self.server,
            self.pki("ca.crt").display(),
            cert = self.pki("yurthub-current.pem").display()
        );
        write_file(&file, conf);
    }
}

/// The server of cluster `name` in a kubeconfig.
fn cluster_server(text: &str, name: &str) -> Option<String> {
    let v: Value = serde_saphyr::from_str(text).ok()?;
    v["clusters"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == json!(name))?["cluster"]["server"]
        .as_str()
        .map(str::to_string)
}

/// The CA of the single cluster of cluster-info's kubeconfig.
fn cluster_ca(text: &str) -> Option<Vec<u8>> {
    let v: Value = serde_saphyr::from_str(text).ok()?;
    let clusters = v["clusters"].as_array()?;
    if clusters.len() != 1 {
        return None;
    }
    let data = clusters[0]["cluster"]["certificate-authority-data"]
        .as_str()
        .unwrap_or("");
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap_or_default(),
    )
}

/// removeDirContents: every entry of `dir`, the directory itself kept; errors ignored.
fn remove_dir_contents(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            let _ = std::fs::remove_dir_all(&p);
        } else {
            let _ = std::fs::remove_file(&p);
        }
    }
}
