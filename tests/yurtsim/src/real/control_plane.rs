//! etcd, kube-apiserver, kube-controller-manager and kube-scheduler from upstream's modules
//! (tests/real/controlplane), each in its own process, started with the flags kubeadm gives
//! them (kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/phases/controlplane/manifests.go
//! `getAPIServerCommand`, `getControllerManagerCommand`, `getSchedulerCommand`; etcd as kwok
//! runs it on loopback, kubernetes-sigs/kwok pkg/kwokctl/components/etcd.go).

use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::pki::{self, ClusterPki};
use crate::nodes::runtime::NodeNamespaces;

/// The `kubernetes` Service's ClusterIP: the first address of kubeadm's default
/// `--service-cluster-ip-range` 10.96.0.0/12.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
pub const SERVICE_IP: &str = "10.96.0.1";
/// kubeadm's `podSubnet` as kind sets it (kind pkg/apis/config/v1alpha4/default.go).
pub const POD_CIDR: &str = "10.244.0.0/16";

/// Each node's pod range within [`POD_CIDR`]: kube-controller-manager's default /24 holds 256
/// nodes (the rest get no podCIDR: "there are no remaining CIDRs left to allocate"), so a
/// larger cluster gets smaller ranges, as its operator sets `--node-cidr-mask-size` (at 1,000
/// nodes a /26: 62 pods each). kubernetes/kubernetes@v1.37.2
/// cmd/kube-controller-manager/app/core.go (the default mask 24),
/// pkg/controller/nodeipam/ipam/cidrset/cidr_set.go (ErrCIDRRangeNoCIDRsRemaining).
pub fn node_cidr_mask_size(nodes: usize) -> u32 {
    let bits = nodes.max(1).next_power_of_two().trailing_zeros();
    (16 + bits).clamp(24, 30)
}

/// One control-plane process, watched by a thread of its own: the child is started with
/// `PR_SET_PDEATHSIG`, which fires when the thread that forked it ends, so the thread lives
/// exactly as long as the process is wanted. An exited process is started again after the
/// kubelet's crash-loop back-off, as the kubelet restarts kubeadm's static pods
/// (`restartPolicy: Always`; kubernetes/kubernetes pkg/kubelet/kubelet.go `backOffPeriod`
/// 10 s, `MaxContainerBackOff` 300 s, the sim's `crash_backoff` defaults; the tag is not
/// checked here): kube-controller-manager and kube-scheduler exit when
/// they lose their leader election on a slow API server.
struct Proc {
    name: String,
    pid: Arc<AtomicU32>,
    /// How the last run ended (None: it has not ended yet).
    exited: Arc<Mutex<Option<String>>>,
    stopping: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The first back-off after an exit and its cap.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Proc {
    /// Starts `cmd` from a thread that joined `netns` (the child's network is its forker's).
    fn spawn(
        name: String,
        mut cmd: Command,
        log: &Path,
        netns: &NodeNamespaces,
        backoff: Backoff,
    ) -> anyhow::Result<Proc> {
        let net = netns.net_fd()?;
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        cmd.stdin(Stdio::null());
        // SAFETY: only async-signal-safe calls (prctl, setpgid) between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::setpgid(0, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let exited = Arc::new(Mutex::new(None));
        let pid = Arc::new(AtomicU32::new(0));
        let stopping = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<u32>>();
        let (status, child_pid, stop, what) =
            (exited.clone(), pid.clone(), stopping.clone(), name.clone());
        let thread = std::thread::Builder::new()
            .name(format!("yurtsim-{name}"))
            .spawn(move || {
                // SAFETY: setns on this thread only, with a namespace fd we own.
                if unsafe { libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let _ = tx.send(Err(std::io::Error::last_os_error()));
                    return;
                }
                let mut tx = Some(tx);
                let mut wait = backoff.initial;
                loop {
                    let started = out
                        .try_clone()
                        .and_then(|o| Ok((o.try_clone()?, o)))
                        .and_then(|(o, e)| cmd.stdout(o).stderr(e).spawn());
                    let how = match started {
                        Ok(mut child) => {
                            child_pid.store(child.id(), Ordering::SeqCst);
                            if let Some(tx) = tx.take() {
                                let _ = tx.send(Ok(child.id()));
                            }
                            match child.wait() {
                                Ok(s) => s.to_string(),
                                Err(e) => e.to_string(),
                            }
                        }
                        Err(e) => match tx.take() {
                            Some(tx) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                            None => e.to_string(),
                        },
                    };
                    *status.lock().unwrap() = Some(how.clone());
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    tracing::warn!(component = %what, "exited ({how}); restarting in {wait:?}");
                    let until = Instant::now() + wait;
                    while Instant::now() < until {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    wait = (wait * 2).min(backoff.max);
                }
            })?;
        let first = rx
            .recv()
            .context("the process thread ended before starting it")?
            .with_context(|| format!("cannot start {name}"))?;
        pid.store(first, Ordering::SeqCst);
        Ok(Proc {
            name,
            pid,
            exited,
            stopping,
            thread: Some(thread),
        })
    }

    fn exit_status(&self) -> Option<String> {
        self.exited.lock().unwrap().clone()
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the watcher thread.
    fn stop(&mut self, grace: Duration) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stopping.store(true, Ordering::SeqCst);
        let pid = self.pid.load(Ordering::SeqCst) as i32;
        let running = || !thread.is_finished();
        // SAFETY: plain kill(2) on the process group this child leads.
        unsafe { libc::kill(-pid, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if running() {
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = thread.join();
    }
}

/// etcd's client and peer ports on the control-plane node's loopback (kubeadm's).
/// Audits only the admin (kubeadm's admin.conf user `kubernetes-admin`,
/// kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go) so the
/// nodes' and controllers' traffic
/// costs nothing: each request once, when its response is complete (a watch when it ends);
/// ConfigMap writes at `Request` level so their bytes can be counted
/// (k8s.io/apiserver@v0.37.2 pkg/apis/audit/v1 Policy).
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Request
  users: [kubernetes-admin]
  verbs: [create, update, patch]
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
  users: [kubernetes-admin]
- level: None
"#;

const ETCD_CLIENT_PORT: u16 = 2379;
const ETCD_PEER_PORT: u16 = 2380;

pub struct ControlPlane {
    pub dir: PathBuf,
    pub pki: ClusterPki,
    /// The API server as the host reaches it (admin.conf's server).
    host_server: String,
    /// The API server as the nodes reach it (the control plane's address).
    node_server: String,
    procs: Vec<Proc>,
    netns: std::sync::Arc<NodeNamespaces>,
    backoff: Backoff,
}

/// Where the control plane's files go and what it serves.
pub struct Options<'a> {
    pub binary: &'a Path,
    pub dir: &'a Path,
    /// The control-plane node's network, where the components run (`hostNetwork` static pods).
    pub netns: std::sync::Arc<NodeNamespaces>,
    /// `--secure-port` in that network: 6443, minikube's 8443.
    pub apiserver_port: u16,
    /// The port on the host's 127.0.0.1 that forwards to it.
    pub host_port: u16,
    /// The control-plane node's address (`--advertise-address`) and the names the layout's
    /// nodes reach the API server by (its serving certificate's SANs).
    pub advertise: IpAddr,
    pub endpoint_hosts: Vec<String>,
    pub cluster_name: &'a str,
    /// How many nodes will join: the size of each node's pod range follows.
    pub nodes: usize,
    /// How an exited component is started again.
    pub restart: Backoff,
}

impl ControlPlane {
    pub fn start(o: &Options) -> anyhow::Result<ControlPlane> {
        let dir = o.dir.to_path_buf();
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs)?;
        let hosts: Vec<&str> = o.endpoint_hosts.iter().map(String::as_str).collect();
        let pki = pki::generate(
            &dir.join("pki"),
            SERVICE_IP.parse().expect("literal"),
            o.advertise,
            &hosts,
        )?;
        // the user's kubeconfigs name the host's port, as kind's do; the components' name the
        // node's address (kubeconfig.go: one file per component, its own client certificate)
        let host_server = format!("https://127.0.0.1:{}", o.host_port);
        let node_server = format!("https://{}:{}", o.advertise, o.apiserver_port);
        for (file, user, orgs, server) in [
            (
                "admin.conf",
                "kubernetes-admin",
                &["kubeadm:cluster-admins"][..],
                &host_server,
            ),
            (
                "super-admin.conf",
                "kubernetes-super-admin",
                &["system:masters"][..],
                &host_server,
            ),
            (
                "controller-manager.conf",
                "system:kube-controller-manager",
                &[][..],
                &node_server,
            ),
            (
                "scheduler.conf",
                "system:kube-scheduler",
                &[][..],
                &node_server,
            ),
        ] {
            let client = pki.ca.client(user, orgs)?;
            pki::write_private(
                &dir.join(file),
                &pki::kubeconfig(o.cluster_name, server, &pki.ca.pair.cert, user, &client),
            )?;
        }
        let mut cp = ControlPlane {
            dir,
            pki,
            host_server,
            node_server,
            procs: Vec::new(),
            netns: o.netns.clone(),
            backoff: o.restart,
        };
        cp.spawn_etcd(o.binary)?;
        cp.spawn_apiserver(o.binary, o.advertise, o.apiserver_port)?;
        cp.spawn_controllers(o.binary, o.nodes)?;
        Ok(cp)
    }

    fn spawn(
        &mut self,
        binary: &Path,
        name: &'static str,
        args: Vec<String>,
    ) -> anyhow::Result<()> {
        let mut cmd = Command::new(binary);
        cmd.arg(name).args(args);
        let log = self.dir.join("logs").join(format!("{name}.log"));
        self.procs.push(Proc::spawn(
            name.to_string(),
            cmd,
            &log,
            &self.netns,
            self.backoff,
        )?);
        Ok(())
    }

    /// Starts kube-proxy for `node` in the node's network, as kubeadm's kube-proxy DaemonSet
    /// runs it there (`hostNetwork`), with kubeadm's configuration
    /// (cmd/kubeadm/app/componentconfigs/kubeproxy.go: `clusterCIDR` from the pod subnet) and
    /// kind's (pkg/cluster/internal/kubeadm/config.go: `conntrack.maxPerCore: 0`, a node in a
    /// container leaves the host's conntrack table alone), in nftables mode. Its identity is
    /// `system:kube-proxy`, which the bootstrap policy binds to `system:node-proxier`; the
    /// server is the control plane's address (the node's resolver is the host's).
    pub fn start_kube_proxy(
        &mut self,
        binary: &Path,
        node: &str,
        netns: &NodeNamespaces,
    ) -> anyhow::Result<()> {
        let client = self.pki.ca.client("system:kube-proxy", &[])?;
        let kubeconfig = self.dir.join(format!("kube-proxy-{node}.conf"));
        pki::write_private(
            &kubeconfig,
            &pki::kubeconfig(
                "kubernetes",
                &self.node_server,
                &self.pki.ca.pair.cert,
                "system:kube-proxy",
                &client,
            ),
        )?;
        let mut cmd = Command::new(binary);
        cmd.arg("kube-proxy").args([
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--hostname-override={node}"),
            "--proxy-mode=nftables".into(),
            format!("--cluster-cidr={POD_CIDR}"),
            "--conntrack-max-per-core=0".into(),
            "--v=2".into(),
        ]);
        let name = format!("kube-proxy-{node}");
        let log = self.dir.join("logs").join(format!("{name}.log"));
        self.procs
            .push(Proc::spawn(name, cmd, &log, netns, self.backoff)?);
        Ok(())
    }

    fn spawn_etcd(&mut self, binary: &Path) -> anyhow::Result<()> {
        let client = format!("http://127.0.0.1:{ETCD_CLIENT_PORT}");
        let peer = format!("http://127.0.0.1:{ETCD_PEER_PORT}");
        let data = self.dir.join("etcd");
        self.spawn(
            binary,
            "etcd",
            vec![
                "--name=default".into(),
                format!("--data-dir={}", data.display()),
                format!("--listen-client-urls={client}"),
                format!("--advertise-client-urls={client}"),
                format!("--listen-peer-urls={peer}"),
                format!("--initial-advertise-peer-urls={peer}"),
                format!("--initial-cluster=default={peer}"),
                // a test cluster's data dies with it; fsync only slows every write
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
        )
    }

    fn spawn_apiserver(
        &mut self,
        binary: &Path,
        advertise: IpAddr,
        port: u16,
    ) -> anyhow::Result<()> {
        let p = |f: &str| self.pki.path(f);
        let policy = self.dir.join("audit-policy.yaml");
        std::fs::write(&policy, AUDIT_POLICY)
            .with_context(|| format!("cannot write {}", policy.display()))?;
        let args = vec![
            format!("--advertise-address={advertise}"),
            "--allow-privileged=true".into(),
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", self.audit_log().display()),
            // one file, whatever its size: the benchmark counts every line
            "--audit-log-maxsize=0".into(),
            "--authorization-mode=Node,RBAC".into(),
            format!("--client-ca-file={}", p("ca.crt")),
            "--enable-admission-plugins=NodeRestriction".into(),
            "--enable-bootstrap-token-auth=true".into(),
            // webhook Services resolve to their endpoints: nothing here routes ClusterIPs
            // (cmd/kube-apiserver/app/server.go buildServiceResolver)
            "--enable-aggregator-routing=true".into(),
            format!("--etcd-servers=http://127.0.0.1:{ETCD_CLIENT_PORT}"),
            format!(
                "--kubelet-client-certificate={}",
                p("apiserver-kubelet-client.crt")
            ),
            format!("--kubelet-client-key={}", p("apiserver-kubelet-client.key")),
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname".into(),
            format!("--proxy-client-cert-file={}", p("front-proxy-client.crt")),
            format!("--proxy-client-key-file={}", p("front-proxy-client.key")),
            "--requestheader-allowed-names=front-proxy-client".into(),
            format!("--requestheader-client-ca-file={}", p("front-proxy-ca.crt")),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            format!("--secure-port={port}"),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p("sa.pub")),
            format!("--service-account-signing-key-file={}", p("sa.key")),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            format!("--tls-cert-file={}", p("apiserver.crt")),
            format!("--tls-private-key-file={}", p("apiserver.key")),
        ];
        self.spawn(binary, "kube-apiserver", args)
    }

    fn spawn_controllers(&mut self, binary: &Path, nodes: usize) -> anyhow::Result<()> {
        let conf = |f: &str| self.dir.join(f).display().to_string();
        let kcm = conf("controller-manager.conf");
        let sched = conf("scheduler.conf");
        let p = |f: &str| self.pki.path(f);
        let args = vec![
            "--allocate-node-cidrs=true".into(),
            format!("--authentication-kubeconfig={kcm}"),
            format!("--authorization-kubeconfig={kcm}"),
            "--bind-address=127.0.0.1".into(),
            format!("--client-ca-file={}", p("ca.crt")),
            format!("--cluster-cidr={POD_CIDR}"),
            format!("--node-cidr-mask-size={}", node_cidr_mask_size(nodes)),
            "--cluster-name=kubernetes".into(),
            format!("--cluster-signing-cert-file={}", p("ca.crt")),
            format!("--cluster-signing-key-file={}", p("ca.key")),
            "--controllers=*,bootstrapsigner,tokencleaner".into(),
            format!("--kubeconfig={kcm}"),
            "--leader-elect=true".into(),
            format!("--requestheader-client-ca-file={}", p("front-proxy-ca.crt")),
            format!("--root-ca-file={}", p("ca.crt")),
            format!("--service-account-private-key-file={}", p("sa.key")),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--use-service-account-credentials=true".into(),
        ];
        self.spawn(binary, "kube-controller-manager", args)?;
        let args = vec![
            format!("--authentication-kubeconfig={sched}"),
            format!("--authorization-kubeconfig={sched}"),
            "--bind-address=127.0.0.1".into(),
            format!("--kubeconfig={sched}"),
            "--leader-elect=true".into(),
        ];
        self.spawn(binary, "kube-scheduler", args)
    }

    /// A component that has exited, with how, and the tail of its log. Checked while the
    /// cluster starts, where an exit means a component that cannot run; later exits are
    /// restarted.
    pub fn failed(&self) -> Option<String> {
        self.procs.iter().find_map(|p| {
            let how = p.exit_status()?;
            let log = self.dir.join("logs").join(format!("{}.log", p.name));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Some(format!(
                "{} exited ({how}); last lines of {}:\n{}",
                p.name,
                log.display(),
                tail.join("\n")
            ))
        })
    }

    /// The API server's audit log: one JSON line per finished request of the admin user
    /// (admin.conf, what yurtctl and kubectl use), ConfigMap writes with their body.
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join("audit.log")
    }

    pub fn pids(&self) -> Vec<(&str, u32)> {
        self.procs
            .iter()
            .map(|p| (p.name.as_str(), p.pid.load(Ordering::SeqCst)))
            .collect()
    }

    /// Stops the components in the reverse order of their start.
    pub fn stop(&mut self) {
        for p in self.procs.iter_mut().rev() {
            p.stop(Duration::from_secs(5));
        }
    }

    /// The API server as the host reaches it.
    pub fn server(&self) -> String {
        self.host_server.clone()
    }

    /// Fails when a component is found to have exited.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(why) = self.failed() {
            bail!("{why}");
        }
        Ok(())
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_node_gets_a_pod_range_within_the_cluster_cidr() {
        for (nodes, expected) in [(3, 24), (256, 24), (257, 25), (1000, 26), (4096, 28)] {
            let mask = super::node_cidr_mask_size(nodes);
            assert_eq!(mask, expected, "{nodes} nodes");
            assert!(
                nodes <= 1 << (mask - 16),
                "{nodes} nodes fit /{mask} ranges"
            );
        }
    }
}
