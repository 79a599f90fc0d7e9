//! The cluster handle: configuration, start-up (state dir, nodes, kubeconfig, API server,
//! controllers, kubelets) and shutdown. The binary and in-process tests both use this.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::api::{Api, Ctx};
use crate::faults::{Faults, Metrics};
use crate::nodes::cluster::{Cluster, NodesConfig};
use crate::nodes::layout::{Layout, NodeSeed, Role, SeedOptions};
use crate::version::Version;

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub nodes: usize,
    pub control_planes: usize,
    pub layout: Layout,
    pub state_dir: PathBuf,
    /// `yurtctl` in pod commands resolves to this binary.
    pub yurtctl: Option<PathBuf>,
    /// 0 = pick a free port.
    pub port: u16,
    pub pod_ready_delay: Duration,
    /// Per-node ready delay of static pods (overrides `pod_ready_delay` for mirror pods on
    /// those nodes): benchmarks give each node its own seeded upgrade time.
    pub static_pod_ready_delays: std::collections::HashMap<String, Duration>,
    pub kubernetes_version: String,
    pub heartbeat_interval: Duration,
    pub node_monitor_grace: Duration,
    pub history_limit: usize,
    pub watch_buffer: usize,
    pub bookmark_interval: Duration,
    pub static_pod_poll: Duration,
    pub job_backoff: Duration,
    /// The kubelet's first restart back-off of a crashed container, doubled per restart up to
    /// `crash_backoff_max` (a real kubelet: 10 s and 300 s).
    pub crash_backoff: Duration,
    pub crash_backoff_max: Duration,
    /// Scales the upstream durations the component models enforce (yurt-manager's 20 s webhook
    /// wait, YurtHub's 4 min certificate wait, …): 1.0 is real time; tests run them faster,
    /// which only makes the deadlines stricter.
    pub model_time_scale: f64,
    pub seed: SeedOptions,
    /// yurtsim's own API server, or a real control plane built by tests/real/build.sh
    /// (`kubernetes_version` picks which).
    pub apiserver: crate::nodes::real_api::ApiServerKind,
}

impl SimConfig {
    /// The parts of this configuration the nodes read.
    fn nodes_config(&self) -> NodesConfig {
        NodesConfig {
            kubernetes_version: self.kubernetes_version.clone(),
            layout: self.layout,
            state_dir: self.state_dir.clone(),
            yurtctl: self.yurtctl.clone(),
            pod_ready_delay: self.pod_ready_delay,
            static_pod_ready_delays: self.static_pod_ready_delays.clone(),
            heartbeat_interval: self.heartbeat_interval,
            node_monitor_grace: self.node_monitor_grace,
            static_pod_poll: self.static_pod_poll,
            crash_backoff: self.crash_backoff,
            crash_backoff_max: self.crash_backoff_max,
            model_time_scale: self.model_time_scale,
            apiserver: self.apiserver,
        }
    }

    /// The parts of this configuration the real tier reads.
    fn real(&self) -> crate::real::RealConfig {
        crate::real::RealConfig {
            layout: self.layout,
            state_dir: self.state_dir.clone(),
            port: self.port,
            kubernetes_version: self.kubernetes_version.clone(),
            control_planes: self.control_planes,
            heartbeat_interval: self.heartbeat_interval,
            crash_backoff: self.crash_backoff,
            crash_backoff_max: self.crash_backoff_max,
            seed: self.seed.clone(),
        }
    }

    /// Timings for tests: pods start in 100 ms, a silent node goes Unknown after 600 ms, and
    /// kubelets and controllers react within ~100 ms, so end-to-end tests take seconds.
    pub fn for_tests(state_dir: impl Into<PathBuf>) -> Self {
        SimConfig {
            pod_ready_delay: Duration::from_millis(100),
            node_monitor_grace: Duration::from_millis(600),
            heartbeat_interval: Duration::from_millis(200),
            static_pod_poll: Duration::from_millis(100),
            job_backoff: Duration::from_millis(50),
            crash_backoff: Duration::from_millis(100),
            crash_backoff_max: Duration::from_secs(3),
            model_time_scale: 0.05,
            ..SimConfig::new(state_dir)
        }
    }

    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        SimConfig {
            nodes: 3,
            control_planes: 1,
            layout: Layout::Kubeadm,
            state_dir: state_dir.into(),
            yurtctl: None,
            port: 0,
            pod_ready_delay: Duration::from_millis(200),
            static_pod_ready_delays: Default::default(),
            kubernetes_version: "v1.33.1".into(),
            heartbeat_interval: Duration::from_secs(10),
            node_monitor_grace: Duration::from_secs(4),
            history_limit: 1000,
            watch_buffer: 10_000,
            bookmark_interval: Duration::from_secs(5),
            static_pod_poll: Duration::from_millis(250),
            job_backoff: Duration::from_millis(200),
            crash_backoff: Duration::from_secs(10),
            crash_backoff_max: Duration::from_secs(300),
            model_time_scale: 1.0,
            seed: SeedOptions::default(),
            apiserver: crate::nodes::real_api::ApiServerKind::Sim,
        }
    }
}

/// The sim-wide state: the configuration, the nodes' part of the cluster (the `Api`, the
/// kubelets, ...; reached through `Deref`), the faults and request counters, and the address
/// the API server listens on.
pub struct Shared {
    pub cfg: SimConfig,
    /// What the nodes, the models they start and the real tier's nodes are handed.
    pub nodes: Arc<Cluster>,
    pub faults: Arc<Faults>,
    pub metrics: Metrics,
    pub addr: SocketAddr,
}

impl std::ops::Deref for Shared {
    type Target = Cluster;

    fn deref(&self) -> &Cluster {
        &self.nodes
    }
}

impl Shared {
    /// The sim-wide state of a cluster configured by `cfg`, its nodes' part built from it.
    fn new(
        cfg: SimConfig,
        api: Api,
        addr: SocketAddr,
        internal_endpoint: String,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<Shared> {
        let faults = Arc::new(Faults::default());
        let nodes = Cluster::new(
            cfg.nodes_config(),
            Arc::new(api),
            faults.clone(),
            internal_endpoint,
            crate::models::start,
            shutdown,
        );
        Arc::new(Shared {
            cfg,
            nodes,
            faults,
            metrics: Metrics::default(),
            addr,
        })
    }

    pub fn server_address(&self) -> String {
        self.addr.to_string()
    }

    pub fn version_info(&self) -> Value {
        let v = self.cfg.kubernetes_version.trim_start_matches('v');
        let mut parts = v.split('.');
        json!({"major": parts.next().unwrap_or("1"), "minor": parts.next().unwrap_or("0"), "gitVersion": self.cfg.kubernetes_version,
            "gitCommit": "yurtsim", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64",
            "emulationMajor": parts.clone().next().map(|_| "1"), "emulationMinor": null})
    }
}

pub struct Sim {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The real control plane and its nodes, with `--apiserver real`; the sim's own API server,
    /// controllers and kubelets are then not started, and `shared` only holds the configuration.
    real: Option<crate::real::RealCluster>,
}

fn check_state_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create state dir {}", dir.display()))?;
    let probe = dir.join(".yurtsim-write-test");
    std::fs::write(&probe, b"")
        .with_context(|| format!("state dir {} is not writable", dir.display()))?;
    std::fs::remove_file(&probe).ok();
    if dir.join("nodes").exists() {
        bail!(
            "state dir {} already holds a cluster (nodes/ exists); remove it or choose another --state-dir",
            dir.display()
        );
    }
    Ok(())
}

impl Sim {
    pub async fn start(cfg: SimConfig) -> anyhow::Result<Sim> {
        if cfg.nodes == 0 {
            bail!("--nodes must be at least 1");
        }
        if cfg.control_planes == 0 || cfg.control_planes > cfg.nodes {
            bail!(
                "--control-planes must be between 1 and --nodes ({}), got {}",
                cfg.nodes,
                cfg.control_planes
            );
        }
        if let Some(y) = &cfg.yurtctl
            && !y.is_file()
        {
            bail!("--exec yurtctl={}: no such file", y.display());
        }
        check_state_dir(&cfg.state_dir)?;
        raise_open_files_limit(cfg.nodes);
        if cfg.apiserver == crate::nodes::real_api::ApiServerKind::Real {
            return Self::start_real(cfg).await;
        }
        let listener = TcpListener::bind(("127.0.0.1", cfg.port)).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                anyhow::anyhow!("port {} is already in use on 127.0.0.1; choose another with --port or stop what is listening there", cfg.port)
            } else {
                anyhow::anyhow!("cannot listen on 127.0.0.1:{}: {e}", cfg.port)
            }
        })?;
        let addr = listener.local_addr()?;
        let token = crate::util::random_suffix(32);
        let names = cfg
            .layout
            .node_names(cfg.control_planes, cfg.nodes - cfg.control_planes);
        let internal_endpoint = cfg.layout.api_server(&cfg.layout.node_ip(0));
        let (stop, shutdown) = watch::channel(false);
        let api = Api::new(
            cfg.history_limit,
            cfg.watch_buffer,
            Version::kubernetes(&cfg.kubernetes_version),
            token,
        );
        let shared = Shared::new(cfg, api, addr, internal_endpoint, shutdown);
        // certificates.k8s.io/v1beta1 CertificateSigningRequests are served up to 1.21 (removed
        // in 1.22: kubernetes/kubernetes@v1.22.0 CHANGELOG/CHANGELOG-1.22.md, "Removal of
        // deprecated beta APIs"); YurtHub v0.6 creates its requests through it.
        // The same for admissionregistration.k8s.io/v1beta1 webhook configurations, which
        // yurt-app-manager v0.4 watches and updates.
        if shared.api.version < Version::new(1, 22, 0) {
            for (group, resource) in [
                ("certificates.k8s.io", "certificatesigningrequests"),
                (
                    "admissionregistration.k8s.io",
                    "mutatingwebhookconfigurations",
                ),
                (
                    "admissionregistration.k8s.io",
                    "validatingwebhookconfigurations",
                ),
            ] {
                shared
                    .api
                    .registry
                    .serve_builtin_version(group, "v1", resource, "v1beta1");
            }
        }
        bootstrap_objects(&shared);
        seed_nodes(&shared, &names)?;
        write_kubeconfig(&shared)?;
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn(crate::controllers::run(
            Arc::new(crate::controllers::Cluster {
                api: shared.api.clone(),
                job_backoff: shared.cfg.job_backoff,
            }),
            shared.shutting_down(),
        )));
        tasks.extend(crate::nodes::kubelet::start(shared.nodes.clone(), &names));
        tasks.push(tokio::spawn(serve(shared.clone(), listener)));
        tasks.push(tokio::spawn(crate::util::release_free_heap(
            Duration::from_secs(10),
            shared.shutting_down(),
        )));
        Ok(Sim {
            shared,
            stop,
            tasks,
            real: None,
        })
    }

    /// The real tier: the control plane of `cfg.kubernetes_version` and the nodes' kubelets
    /// against it (crate::real).
    async fn start_real(cfg: SimConfig) -> anyhow::Result<Sim> {
        let names = cfg
            .layout
            .node_names(cfg.control_planes, cfg.nodes - cfg.control_planes);
        let mut real = crate::real::RealCluster::start(cfg.real(), &names).await?;
        let addr = real.url().trim_start_matches("https://").parse()?;
        let (stop, shutdown) = watch::channel(false);
        let api = Api::new(
            1,
            1,
            Version::kubernetes(&cfg.kubernetes_version),
            String::new(),
        );
        let internal_endpoint = cfg.layout.api_server(&cfg.layout.node_ip(0));
        let shared = Shared::new(cfg, api, addr, internal_endpoint, shutdown);
        if let Err(e) = real.start_nodes(&shared.nodes).await {
            let _ = stop.send(true);
            crate::nodes::kubelet::stop_all(&shared).await;
            real.shutdown().await;
            return Err(e);
        }
        Ok(Sim {
            shared,
            stop,
            tasks: Vec::new(),
            real: Some(real),
        })
    }

    /// The real control plane, when the cluster runs one.
    pub fn real(&self) -> Option<&crate::real::RealCluster> {
        self.real.as_ref()
    }

    /// The sim's own state, for what only it has (its store, faults, counters, kubelets).
    fn sim_only(&self, what: &str) -> &Arc<Shared> {
        assert!(
            self.real.is_none(),
            "{what} is yurtsim's own API server's; this cluster runs the real control plane (--apiserver real)"
        );
        &self.shared
    }

    pub fn shared(&self) -> &Arc<Shared> {
        self.sim_only("Sim::shared")
    }

    pub fn url(&self) -> String {
        match &self.real {
            Some(r) => r.url(),
            None => format!("http://{}", self.shared.addr),
        }
    }

    /// The directory the cluster keeps its files in (`--state-dir`).
    pub fn state_dir(&self) -> &Path {
        &self.shared.cfg.state_dir
    }

    pub fn kubeconfig_path(&self) -> PathBuf {
        self.shared.cfg.state_dir.join("kubeconfig")
    }

    pub fn node_root(&self, node: &str) -> PathBuf {
        self.shared.node_root(node)
    }

    pub fn node_names(&self) -> Vec<String> {
        match &self.real {
            Some(r) => r.node_names().to_vec(),
            None => self.shared.kubelets.names(),
        }
    }

    pub fn api(&self) -> &Api {
        &self.sim_only("Sim::api").api
    }

    pub fn faults(&self) -> &Faults {
        &self.sim_only("Sim::faults").faults
    }

    pub fn metrics(&self) -> &Metrics {
        &self.sim_only("Sim::metrics").metrics
    }

    /// Requests by `agent` (its User-Agent's product, e.g. `yurtctl`) with `verb` on `resource`
    /// (`jobs.batch`), on either tier: the sim's counters, or the real API server's audit log
    /// (which records the admin's requests).
    pub fn requests(&self, agent: &str, verb: &str, resource: &str) -> u64 {
        match &self.real {
            Some(r) => r
                .audited_requests(agent, verb, resource)
                .unwrap_or_else(|e| panic!("{e:#}")),
            None => self.shared.metrics.count_by(agent, verb, resource),
        }
    }

    /// `systemctl start kubelet` (`true`) or `systemctl stop kubelet` (`false`) run on `node`
    /// by its operator, as over ssh (pods on the node use the node's `systemctl` stub instead).
    pub fn node_kubelet(&self, node: &str, start: bool) -> anyhow::Result<()> {
        crate::nodes::kubelet::operator_kubelet(self.sim_only("Sim::node_kubelet"), node, start)
    }

    /// A process on `node` listening on `addr` of the node's network (a port some other program
    /// holds there), until the returned listener is dropped.
    pub fn node_listen(
        &self,
        node: &str,
        addr: std::net::SocketAddr,
    ) -> anyhow::Result<std::net::TcpListener> {
        let shared = self.sim_only("Sim::node_listen");
        let k = shared
            .kubelets
            .get(node)
            .ok_or_else(|| anyhow::anyhow!("no node {node}"))?;
        let ns = crate::nodes::host_processes::node_namespaces(shared, &k)?;
        Ok(ns.bind_tcp(addr)?)
    }

    /// Forces a node NotReady (`false`) or back to what its kubelet reports (`true`).
    pub fn set_node_ready(&self, node: &str, ready: bool) -> anyhow::Result<()> {
        crate::nodes::kubelet::force_ready(
            self.sim_only("Sim::set_node_ready"),
            node,
            if ready { None } else { Some(false) },
        )
    }

    /// The containers `node`'s runtime knows (running, and the last exited one per container),
    /// newest first — what `crictl ps -a` lists there.
    pub fn containers(&self, node: &str) -> Vec<crate::nodes::cri::Container> {
        self.shared
            .kubelets
            .get(node)
            .map(|k| k.cri.list())
            .unwrap_or_default()
    }

    /// The environment the newest container `container` of pod `namespace/pod` on `node` was
    /// started with (service variables as its kubelet saw the Services then).
    pub fn container_env(
        &self,
        node: &str,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let k = self.shared.kubelets.get(node)?;
        let c = k.cri.latest(namespace, pod, container)?;
        Some(c.env.into_iter().collect())
    }

    /// How often the kubelet has restarted that container: the newest one's CRI attempt.
    pub fn container_restarts(
        &self,
        node: &str,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<u32> {
        let k = self.shared.kubelets.get(node)?;
        Some(k.cri.latest(namespace, pod, container)?.attempt)
    }

    /// The CRI endpoint `node`'s kubelet uses (its flag, else its config file, else the
    /// kubelet default).
    pub fn kubelet_runtime_endpoint(&self, node: &str) -> Option<String> {
        self.shared.kubelets.get(node)?.runtime_endpoint()
    }

    /// The API server `node`'s running kubelet talks to (what it loaded at its last start), on
    /// either tier.
    pub fn kubelet_server(&self, node: &str) -> Option<String> {
        self.shared.kubelets.get(node)?.server()
    }

    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        if let Some(real) = self.real {
            crate::nodes::kubelet::stop_all(&self.shared).await;
            real.shutdown().await;
            return;
        }
        crate::nodes::kubelet::stop_all(&self.shared).await;
        for t in self.tasks {
            t.abort();
        }
    }
}

async fn serve(shared: Arc<Shared>, listener: TcpListener) {
    let mut stop = shared.shutting_down();
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            _ = stop.changed() => return,
        };
        let Ok((stream, _)) = conn else { continue };
        let sh = shared.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc = hyper::service::service_fn(move |req| crate::server::handle(sh.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(io, svc)
                .await;
        });
    }
}

fn bootstrap_objects(shared: &Shared) {
    let api = &shared.api;
    let ctx = Ctx::system("kube-apiserver");
    let ns = api.info("", "namespaces");
    for n in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        api.create(
            &ns,
            "",
            json!({"metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}}),
            &ctx,
        )
        .expect("bootstrap namespace");
    }
    for (resource, ns, obj) in crate::api::auth::bootstrap_policy() {
        api.create(
            &api.info("rbac.authorization.k8s.io", resource),
            ns,
            obj,
            &ctx,
        )
        .expect("bootstrap RBAC policy");
    }
    let svc = api.info("", "services");
    let _ = api.create(&svc, "default", json!({"metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}}), &ctx);
    crate::controllers::endpoints::bootstrap_kubernetes(
        &shared.api,
        shared.cfg.layout,
        &shared.internal_endpoint,
    );
    let cm = api.info("", "configmaps");
    let server = shared.internal_endpoint.clone();
    let kubeconfig = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: {server}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {{}}\nusers: null\n",
        ca = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            crate::pki::cluster_ca_pem()
        )
    );
    let _ = api.create(
        &cm,
        "kube-public",
        json!({"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": kubeconfig}}),
        &Ctx::system("kubeadm"),
    );
    let cluster_config = format!(
        "apiServer: {{}}\napiVersion: kubeadm.k8s.io/v1beta4\nclusterName: {}\ncontrolPlaneEndpoint: {}\nkind: ClusterConfiguration\nkubernetesVersion: {}\nnetworking:\n  dnsDomain: cluster.local\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/12\n",
        shared.cfg.layout.cluster_name(),
        server.trim_start_matches("https://"),
        shared.cfg.kubernetes_version
    );
    let _ = api.create(&cm, "kube-system", json!({"metadata": {"name": "kubeadm-config"}, "data": {"ClusterConfiguration": cluster_config}}), &Ctx::system("kubeadm"));
    let ds = api.info("apps", "daemonsets");
    let _ = api.create(&ds, "kube-system", json!({"metadata": {"name": "kube-proxy", "labels": {"k8s-app": "kube-proxy"}},
        "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}}, "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
        "spec": {"hostNetwork": true, "priorityClassName": "system-node-critical", "tolerations": [{"operator": "Exists"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [{"name": "kube-proxy", "image": format!("registry.k8s.io/kube-proxy:{}", shared.cfg.kubernetes_version)}]}}}}), &Ctx::system("kubeadm"));
    let dep = api.info("apps", "deployments");
    let _ = api.create(&dep, "kube-system", json!({"metadata": {"name": "coredns", "labels": {"k8s-app": "kube-dns"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}, "template": {"metadata": {"labels": {"k8s-app": "kube-dns"}},
        "spec": {"tolerations": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
        "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.0", "args": ["-conf", "/etc/coredns/Corefile"]}]}}}}), &Ctx::system("kubeadm"));
}

fn seed_nodes(shared: &Shared, names: &[(String, Role)]) -> anyhow::Result<()> {
    let cfg = &shared.cfg;
    let nodes = shared.api.info("", "nodes");
    let leases = shared.api.info("coordination.k8s.io", "leases");
    let ctx = Ctx::system("kubelet");
    for (i, (name, role)) in names.iter().enumerate() {
        let ip = cfg.layout.node_ip(i);
        let seed = NodeSeed {
            name: name.clone(),
            role: *role,
            internal_ip: ip.clone(),
            api_server: shared.internal_endpoint.clone(),
            kubernetes_version: cfg.kubernetes_version.clone(),
            cluster_name: cfg.layout.cluster_name().to_string(),
        };
        let root = shared.node_root(name);
        crate::nodes::layout::seed_node(&root, cfg.layout, &seed, &cfg.seed)
            .with_context(|| format!("seeding node {name} at {}", root.display()))?;
        let labels: serde_json::Map<String, Value> = cfg
            .layout
            .node_labels(name, *role)
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let taints: Vec<Value> = if *role == Role::ControlPlane {
            cfg.layout
                .control_plane_taints()
                .into_iter()
                .map(|(k, e)| json!({"key": k, "effect": e}))
                .collect()
        } else {
            vec![]
        };
        let now = crate::util::now();
        // kubeadm (which kind and minikube run too) records the CRI socket; kind's nodes carry
        // its provider ID
        let mut spec = json!({"podCIDR": format!("10.244.{}.0/24", i % 256), "taints": taints});
        if cfg.layout == Layout::Kind {
            spec["providerID"] = json!(format!("kind://docker/kind/{name}"));
        }
        let node = json!({"metadata": {"name": name, "labels": labels, "annotations": {
                "kubeadm.alpha.kubernetes.io/cri-socket": cfg.layout.cri_endpoint(),
                "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": spec,
            "status": {
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                "capacity": {"cpu": "4", "memory": "8148828Ki", "pods": "110", "ephemeral-storage": "102626232Ki"},
                "allocatable": {"cpu": "4", "memory": "8046428Ki", "pods": "110", "ephemeral-storage": "94580335255"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available", "lastHeartbeatTime": now, "lastTransitionTime": now},
                    {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure", "lastHeartbeatTime": now, "lastTransitionTime": now},
                    {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available", "lastHeartbeatTime": now, "lastTransitionTime": now},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"architecture": "amd64", "bootID": crate::util::new_uid(), "containerRuntimeVersion": "containerd://2.0.3",
                    "kernelVersion": "6.8.0-yurtsim", "kubeProxyVersion": "", "kubeletVersion": cfg.kubernetes_version, "machineID": format!("{:032x}", crate::util::fnv32a(name.as_bytes())),
                    "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": crate::util::new_uid()}}});
        shared
            .api
            .create(&nodes, "", node, &ctx)
            .map_err(|e| anyhow::anyhow!("registering node {name}: {e}"))?;
        let uid = shared
            .api
            .get(&nodes, "", name)
            .map(|n| n["metadata"]["uid"].clone())
            .unwrap_or_default();
        shared.api.create(&leases, "kube-node-lease", json!({"metadata": {"name": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": crate::util::now_micro()}}), &ctx)
            .map_err(|e| anyhow::anyhow!("creating lease for {name}: {e}"))?;
    }
    Ok(())
}

fn write_kubeconfig(shared: &Shared) -> anyhow::Result<()> {
    let path = shared.cfg.state_dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: yurtsim\n  cluster:\n    server: http://{}\ncontexts:\n- name: yurtsim\n  context:\n    cluster: yurtsim\n    user: yurtsim-admin\n    namespace: default\ncurrent-context: yurtsim\nusers:\n- name: yurtsim-admin\n  user:\n    token: {}\n",
        shared.addr, shared.api.token
    );
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Descriptors a node may hold, with headroom: its CRI socket for its life (its namespaces are
/// held by its init, not by fds: nodes/runtime/namespaces.rs) and, while a container runs, its pidfd,
/// log and pipes. Real nodes are machines of their own; here 10,000 of them share one process,
/// whose usual limit is 1,024 to 20,000.
const OPEN_FILES_PER_NODE: u64 = 8;

/// Raises this process's open-files limit (soft and, as root may, hard, up to `fs.nr_open`) to
/// what `nodes` need; never lowers it. Failing leaves the limit as it was.
fn raise_open_files_limit(nodes: usize) {
    let want = 4096 + OPEN_FILES_PER_NODE * nodes as u64;
    let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= want {
            return;
        }
        let target = want.min(ceiling.max(lim.rlim_max));
        let raised = libc::rlimit {
            rlim_cur: target,
            rlim_max: lim.rlim_max.max(target),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
            // not root: as far as the hard limit goes
            let soft = libc::rlimit {
                rlim_cur: target.min(lim.rlim_max),
                rlim_max: lim.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &soft);
        }
    }
}

#[cfg(test)]
mod shutdown_tests {
    use std::sync::mpsc;
    use std::time::Duration;

    /// A node task wedged while holding its node's state (as issue 18's deadlock did) soon
    /// wedges every runtime worker that visits the node; shutdown must still end.
    #[test]
    fn shutdown_ends_while_a_node_state_stays_locked() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let sim = rt
            .block_on(crate::Sim::start(crate::SimConfig::for_tests(
                dir.path().join("state"),
            )))
            .unwrap();
        let k = sim.shared().kubelets.get("worker-1").unwrap();
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            k.with_state_locked(|| {
                held_tx.send(()).unwrap();
                let _ = release_rx.recv();
            })
        });
        held_rx.recv().unwrap();
        // The tick and heartbeat loops visit worker-1 within this and block on its lock.
        std::thread::sleep(Duration::from_millis(500));
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            rt.block_on(sim.shutdown());
            let _ = done_tx.send(());
            rt.shutdown_background();
        });
        let ended =
            done_rx.recv_timeout(crate::nodes::kubelet::STOP_GRACE + Duration::from_secs(5));
        // Let go either way, so a failure ends instead of hanging.
        let _ = release_tx.send(());
        holder.join().unwrap();
        assert!(
            ended.is_ok(),
            "Sim::shutdown did not end while worker-1's state stayed locked"
        );
    }
}
