//! YurtHub v1.6 as a static pod: flags and validation of the real binary, the client and
//! serving certificates it requests (with the bootstrap token, then as the node), the
//! 4-minute certificate wait it dies on, and what `/v1/readyz` — which also gates the proxy
//! the kubelet talks through — waits for. Facts from `facts/yurthub-v1.6.1.yaml`
//! (openyurtio/openyurt@v1.6.1: cmd/yurthub, pkg/yurthub).
//!
//! v1.7.0 (facts/yurthub-v1.7.0.yaml) differs where its source differs: `--nodepool-name` is
//! required in edge and cloud mode (cmd/yurthub/app/options/options.go Validate, "node-pool-name
//! is empty", klog.Fatalf exit 255), `--bootstrap-mode=kubeletcertificate` uses the kubelet's
//! files and identity (pkg/yurthub/certificate/kubeletcertificate/kubelet_certificate.go
//! NewKubeletCertManager), and readiness waits for the NodePool v1beta2 informer
//! (cmd/yurthub/app/config/config.go createClientAndSharedInformerFactories, ReadinessCheck).
//! Both versions bind their servers in config.Complete (prepareServerServing): a second hub on
//! the node dies on "bind: address already in use".

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::{Caller, Env};
use crate::facts::{self, Facts};
use crate::pki::{self, Subject};
use crate::version::Version;

const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// yurthub's own organization in its client certificate (pkg/yurthub/certificate/token).
const HUB_ORG: &str = "openyurt:yurthub";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let parsed = match facts::parse_args(&facts.flags(), &env.container.args) {
        Ok(p) => p,
        Err(e) => {
            // cobra prints the error and usage; main panics with it (exit 2)
            log.line(&format!("Error: {e}"));
            log.line(&format!("panic: {e}"));
            return 2;
        }
    };
    log.line(&format!(
        "yurthub version: projectinfo.Info{{GitVersion:\"{}\", GitCommit:\"yurtsim\"}}",
        facts.version
    ));
    if parsed.get("version") == Some("true") {
        return 0;
    }
    let opt = |n: &str, d: &str| parsed.get(n).unwrap_or(d).to_string();
    let node = opt("node-name", "");
    let mode = opt("working-mode", "edge");
    let token = opt("join-token", "");
    let bootstrap_file = opt("bootstrap-file", "");
    let kubelet_certs = parsed.get("bootstrap-mode") == Some("kubeletcertificate");
    let v17 = facts.release >= Version::new(1, 7, 0);
    let invalid = if node.is_empty() {
        Some("node name is empty".to_string())
    } else if opt("server-addr", "").is_empty() {
        Some("server-address is empty".into())
    } else if mode != "local" && !kubelet_certs && token.is_empty() && bootstrap_file.is_empty() {
        Some("bootstrap token and bootstrap file are empty, one of them must be set".into())
    } else if !["edge", "cloud", "local"].contains(&mode.as_str()) {
        Some(format!("working mode {mode} is not supported"))
    } else if v17 && mode != "local" && opt("nodepool-name", "").is_empty() {
        Some("node-pool-name is empty".into())
    } else {
        None
    };
    if let Some(msg) = invalid {
        log.klog('F', "start.go:0", &format!("validate options: {msg}"));
        return 255;
    }
    let Some(kubelet) = env.shared.kubelets.get(&env.container.node) else {
        return 255;
    };
    let root = kubelet.host_path(&opt("root-dir", "/var/lib/yurthub"));
    let hub = Hub {
        env,
        node: node.clone(),
        root,
    };
    let kubelet_identity = if v17 && kubelet_certs {
        match kubelet_cert_identity(&env.shared, &kubelet.root) {
            Ok(me) => Some(me),
            Err(e) => {
                log.klog(
                    'F',
                    "start.go:0",
                    &format!("complete yurthub configuration error, {e}"),
                );
                return 255;
            }
        }
    } else {
        None
    };
    let credential = match if kubelet_identity.is_some() {
        Ok(String::new())
    } else {
        hub.bootstrap_token(&bootstrap_file, &token, &|p| kubelet.host_path(p))
            .inspect(|_| hub.ca_file(&bootstrap_file, &|p| kubelet.host_path(p)))
    } {
        Ok(t) => t,
        Err(e) => {
            log.klog(
                'F',
                "start.go:0",
                &format!("complete yurthub configuration error, {e}"),
            );
            return 255;
        }
    };
    // config.Complete: Ready() polled every 5 s for 4 minutes, then the process dies.
    let deadline = Instant::now() + env.scaled(Duration::from_secs(240));
    let identity = loop {
        let pass = match &kubelet_identity {
            Some(me) => hub.serving_certificate(me).map(|ok| ok.then(|| me.clone())),
            None => hub.certificates(&credential),
        };
        match pass {
            Ok(Some(me)) => break me,
            Ok(None) => {}
            Err(e) => log.error("certificate_manager.go:0", &e),
        }
        if Instant::now() >= deadline {
            log.klog(
                'F',
                "start.go:0",
                "complete yurthub configuration error, hub certificates preparation failed, context deadline exceeded",
            );
            return 255;
        }
        env.sleep(Duration::from_secs(5)).await;
    };
    // prepareServerServing: the listeners are created now; one hub per node holds them.
    let bind = format!(
        "{}:{}",
        opt("bind-address", "127.0.0.1"),
        opt("serve-port", "10267")
    );
    let Some(_ports) = PortClaim::take(&kubelet) else {
        log.klog(
            'F',
            "start.go:0",
            &format!(
                "complete yurthub configuration error, failed to create listener: failed to listen on {bind}: listen tcp {bind}: bind: address already in use"
            ),
        );
        return 255;
    };
    let _ = env.serving.send(true);
    let ns = opt("namespace", "kube-system");
    let node_pools = parsed.get("enable-node-pool") != Some("false")
        && parsed.get("enable-resource-filter") != Some("false")
        && !parsed
            .values
            .get("disabled-resource-filters")
            .into_iter()
            .flatten()
            .any(|v| v.split(',').any(|f| f == "servicetopology"));
    loop {
        let pools_version = if v17 { "v1beta2" } else { "v1beta1" };
        match readiness(&identity, &ns, node_pools, pools_version) {
            Ok(()) => {
                if !*env.ready.borrow() {
                    // What this hub's filters do to the kubelet's view from now on.
                    let disabled: Vec<String> = parsed
                        .values
                        .get("disabled-resource-filters")
                        .into_iter()
                        .flatten()
                        .flat_map(|v| v.split(',').map(str::to_string))
                        .collect();
                    let get = |n: &str| parsed.get(n).map(str::to_string);
                    *kubelet.hub_filters.lock().unwrap() =
                        Some(crate::nodes::cri::HubFilters::from_flags(&get, &disabled));
                    log.info("server.go:0", "yurthub is ready");
                    let _ = env.ready.send(true);
                }
            }
            Err(why) => log.error("server.go:0", &why),
        }
        env.sleep(Duration::from_secs(1)).await;
    }
}

/// `/v1/readyz` after the certificates: the yurt-hub-cfg informer has listed, and the
/// informers the servicetopology filter needs have synced (as the hub's node identity).
fn readiness(me: &Caller, ns: &str, node_pools: bool, pools_version: &str) -> Result<(), String> {
    me.list_watch("", "v1", "configmaps", ns, "yurt-hub-cfg")
        .map_err(|e| format!("yurt-hub-cfg configmap is not synced: {e}"))?;
    me.list_watch("", "v1", "services", "", "")
        .map_err(|e| format!("resources needed by filters are not synced: {e}"))?;
    if node_pools {
        me.list_watch("apps.openyurt.io", pools_version, "nodepools", "", "")
            .map_err(|e| format!("resources needed by filters are not synced: {e}"))?;
    }
    Ok(())
}

struct Hub<'a> {
    env: &'a Env,
    node: String,
    root: PathBuf,
}

impl Hub<'_> {
    fn pki(&self, file: &str) -> PathBuf {
        self.root.join("pki").join(file)
    }

    /// `<root-dir>/pki/ca.crt`, written once from the bootstrap kubeconfig's cluster CA (the
    /// join-token path discovers it from cluster-info) and reused as it is afterwards, also
    /// when the cluster's CA has changed since (openyurtio/openyurt@v1.7.0
    /// pkg/yurthub/certificate/token/token.go, prepareConfigAndCaFile).
    fn ca_file(&self, bootstrap_file: &str, host: &dyn Fn(&str) -> PathBuf) {
        let ca = self.pki("ca.crt");
        if ca.exists() {
            return;
        }
        let file = if bootstrap_file.is_empty() {
            self.root.join("bootstrap-hub.conf")
        } else {
            host(bootstrap_file)
        };
        let data = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| kubeconfig_ca(&text))
            .unwrap_or_else(|| pki::cluster_ca_pem().as_bytes().to_vec());
        write_file(&ca, data);
    }

    /// The bootstrap token: from the bootstrap kubeconfig file (the current user's token), or
    /// `--join-token` written into `<root-dir>/bootstrap-hub.conf` (reused when present).
    fn bootstrap_token(
        &self,
        bootstrap_file: &str,
        join_token: &str,
        host: &dyn Fn(&str) -> PathBuf,
    ) -> Result<String, String> {
        let hub_conf = self.root.join("yurthub.conf");
        let file = if bootstrap_file.is_empty() {
            self.root.join("bootstrap-hub.conf")
        } else {
            host(bootstrap_file)
        };
        if let Some(t) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| kubeconfig_token(&text))
        {
            return Ok(t);
        }
        if !bootstrap_file.is_empty() {
            return if hub_conf.exists() {
                Ok(String::new())
            } else {
                Err(format!(
                    "neither bootstrap file({bootstrap_file}) nor kubeconfig file({}) exist when hub agent started",
                    hub_conf.display()
                ))
            };
        }
        let valid = join_token.split_once('.').is_some_and(|(id, secret)| {
            let ok = |s: &str, n| {
                s.len() == n
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            };
            ok(id, 6) && ok(secret, 16)
        });
        if !valid {
            return Err(format!(
                "the bootstrap token \"{join_token}\" was not of the form \"[a-z0-9]{{6}}.[a-z0-9]{{16}}\""
            ));
        }
        let conf = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n    server: https://{}\ncontexts:\n- name: bootstrap\n  context: {{cluster: kubernetes, user: token-bootstrap-client}}\ncurrent-context: bootstrap\nusers:\n- name: token-bootstrap-client\n  user:\n    token: {join_token}\n",
            self.env.shared.internal_endpoint
        );
        write_file(&file, &conf);
        Ok(join_token.to_string())
    }

    /// One pass of the certificate managers; the node identity once the client and serving
    /// certificates are both issued.
    fn certificates(&self, token: &str) -> Result<Option<Caller>, String> {
        let client = self.pki("yurthub-current.pem");
        let me = match read_identity(&self.env.shared, &client) {
            Some(me) => me,
            None => {
                let bootstrap = self
                    .env
                    .caller_with_token(token)
                    .map_err(|e| format!("{CLIENT_SIGNER}: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: {e}"))?;
                let subject = Subject {
                    common_name: format!("system:node:{}", self.node),
                    organizations: vec![HUB_ORG.into(), "system:nodes".into()],
                    ..Default::default()
                };
                if !self.request(&bootstrap, &client, CLIENT_SIGNER, &subject, "client auth")? {
                    return Ok(None);
                }
                match read_identity(&self.env.shared, &client) {
                    Some(me) => {
                        self.write_hub_conf();
                        me
                    }
                    None => return Ok(None),
                }
            }
        };
        Ok(self.serving_certificate(&me)?.then_some(me))
    }

    /// The serving certificate (kubelet-serving signer), requested as the hub's identity;
    /// true once stored.
    fn serving_certificate(&self, me: &Caller) -> Result<bool, String> {
        let serving = self.pki("yurthub-server-current.pem");
        if !serving.exists() {
            let svc = me
                .get("", "services", "default", "kubernetes")
                .map_err(|e| format!("could not get kubernetes service: {e}"))?;
            let mut ips = vec!["169.254.2.1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
            if let Some(ip) = svc["spec"]["clusterIP"]
                .as_str()
                .and_then(|s| s.parse().ok())
            {
                ips.insert(0, ip);
            }
            let subject = Subject {
                common_name: format!("system:node:{}", self.node),
                organizations: vec!["system:nodes".into()],
                dns_names: [
                    "kubernetes",
                    "kubernetes.default",
                    "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local",
                ]
                .map(String::from)
                .to_vec(),
                ips,
            };
            if !self.request(me, &serving, SERVING_SIGNER, &subject, "server auth")? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// client-go's certificate manager for one certificate: create the request (once per
    /// key) and store the issued certificate with its key at `store`. True once stored.
    fn request(
        &self,
        as_who: &Caller,
        store: &Path,
        signer: &str,
        subject: &Subject,
        usage: &str,
    ) -> Result<bool, String> {
        let key_file = store.with_extension("key");
        let key = match std::fs::read(&key_file) {
            Ok(k) => k,
            Err(_) => {
                let k = pki::new_key();
                write_file(&key_file, &k);
                k
            }
        };
        let name = format!("csr-{}", &crate::util::short_hash(&key));
        let b64 = base64::engine::general_purpose::STANDARD;
        let csr = match as_who.get(
            "certificates.k8s.io",
            "certificatesigningrequests",
            "",
            &name,
        ) {
            Ok(c) => c,
            Err(e) if e.code == 404 || e.code == 403 => {
                let body = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                    "metadata": {"name": name},
                    "spec": {"request": b64.encode(pki::csr_pem(subject, &key)), "signerName": signer,
                             "usages": ["key encipherment", "digital signature", usage]}});
                as_who
                    .create("certificates.k8s.io", "certificatesigningrequests", "", body)
                    .map_err(|e| format!("{signer}: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: {e}"))?;
                return Ok(false);
            }
            Err(e) => return Err(format!("{signer}: certificate request was not signed: {e}")),
        };
        let Some(cert) = csr["status"]["certificate"]
            .as_str()
            .and_then(|c| b64.decode(c).ok())
        else {
            return Ok(false);
        };
        let mut pem = cert;
        pem.extend_from_slice(pki::key_pem(&key).as_bytes());
        write_file(store, &pem);
        Ok(true)
    }

    fn write_hub_conf(&self) {
        let conf = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n    server: https://{}\ncontexts:\n- name: default-context\n  context: {{cluster: default-cluster, namespace: default, user: default-auth}}\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: {cert}\n    client-key: {cert}\n",
            self.env.shared.internal_endpoint,
            cert = self.pki("yurthub-current.pem").display()
        );
        write_file(&self.root.join("yurthub.conf"), &conf);
    }
}

/// The identity a stored client certificate gives: CN the user, every O a group.
pub(super) fn read_identity(
    shared: &std::sync::Arc<crate::nodes::Cluster>,
    pem: &Path,
) -> Option<Caller> {
    let text = std::fs::read_to_string(pem).ok()?;
    let s = pki::certificate_subject(&text)?;
    let mut groups = s.organizations;
    groups.push("system:authenticated".into());
    Some(Caller::new(
        shared,
        crate::api::auth::UserInfo {
            name: s.common_name,
            groups,
        },
    ))
}

/// The token of the current context's user in a kubeconfig.
pub(super) fn kubeconfig_token(text: &str) -> Option<String> {
    let (v, ctx) = current_context(text)?;
    let user = ctx["context"]["user"].as_str()?;
    v["users"]
        .as_array()?
        .iter()
        .find(|u| u["name"] == json!(user))?["user"]["token"]
        .as_str()
        .map(str::to_string)
}

/// A kubeconfig and the entry of its current context.
fn current_context(text: &str) -> Option<(Value, Value)> {
    let v: Value = serde_saphyr::from_str(text).ok()?;
    let ctx_name = v["current-context"].as_str()?;
    let ctx = v["contexts"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == json!(ctx_name))?
        .clone();
    Some((v, ctx))
}

/// The CA certificate (PEM) of the current context's cluster: `certificate-authority-data`.
fn kubeconfig_ca(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let (v, ctx) = current_context(text)?;
    let cluster = ctx["context"]["cluster"].as_str()?;
    let data = v["clusters"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == json!(cluster))?["cluster"]["certificate-authority-data"]
        .as_str()?;
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()
}

pub(super) fn write_file(path: &Path, data: impl AsRef<[u8]>) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, data);
}

/// kubeletcertificate mode: the three files NewKubeletCertManager checks, in its order, with
/// its errors; the identity is the kubelet client certificate's subject (system:node:<n>,
/// system:nodes). The sim's layouts write a stand-in PEM for that certificate
/// (nodes/layout/mod.rs fake_pem), read here like a real one.
fn kubelet_cert_identity(
    shared: &std::sync::Arc<crate::nodes::Cluster>,
    root: &Path,
) -> Result<Caller, String> {
    let exists = |p: &str| crate::nodes::systemd::read_host_file(root, p).is_ok();
    if !exists("/etc/kubernetes/kubelet.conf") {
        return Err("/etc/kubernetes/kubelet.conf file doesn't exist".into());
    }
    if !exists("/etc/kubernetes/pki/ca.crt") {
        return Err("/etc/kubernetes/pki/ca.crt file doesn't exist".into());
    }
    let pem = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    let text = crate::nodes::systemd::read_host_file(root, pem)
        .map_err(|_| format!("{pem} file doesn't exist"))?;
    let subject = pki::certificate_subject(&text)
        .map(|s| (s.common_name, s.organizations))
        .or_else(|| stand_in_subject(&text))
        .ok_or_else(|| format!("could not load client certificate({pem}), tls: failed to find any PEM data in certificate input"))?;
    let mut groups = subject.1;
    groups.push("system:authenticated".into());
    Ok(Caller::new(
        shared,
        crate::api::auth::UserInfo {
            name: subject.0,
            groups,
        },
    ))
}

/// (CN, [O]) of the layouts' stand-in certificate ("yurtsim FAKE CERTIFICATE for O=..., CN=...").
pub(super) fn stand_in_subject(text: &str) -> Option<(String, Vec<String>)> {
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    let s = String::from_utf8(raw).ok()?;
    let subject = s.split(" for ").nth(1)?.split(". Not a real").next()?;
    let mut cn = None;
    let mut orgs = Vec::new();
    for part in subject.split(", ") {
        if let Some(v) = part.strip_prefix("CN=") {
            cn = Some(v.to_string());
        } else if let Some(v) = part.strip_prefix("O=") {
            orgs.push(v.to_string());
        }
    }
    Some((cn?, orgs))
}

/// The hub's listeners on a node, held until the process ends (dropped with its task).
pub(super) struct PortClaim {
    k: std::sync::Arc<crate::nodes::kubelet::NodeKubelet>,
    id: u64,
}

impl PortClaim {
    pub(super) fn take(
        k: &std::sync::Arc<crate::nodes::kubelet::NodeKubelet>,
    ) -> Option<PortClaim> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut held = k.hub_ports.lock().unwrap();
        if held.is_some() {
            return None;
        }
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *held = Some(id);
        Some(PortClaim { k: k.clone(), id })
    }
}

impl Drop for PortClaim {
    fn drop(&mut self) {
        let mut held = self.k.hub_ports.lock().unwrap();
        if *held == Some(self.id) {
            *held = None;
        }
    }
}
