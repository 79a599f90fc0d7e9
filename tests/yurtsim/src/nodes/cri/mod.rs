//! The node's container runtime as CRI clients see it: one record per container the kubelet
//! created (running or exited), the runtime's socket in the node root, and the environment each
//! container was started with. `crictl` (crictl.rs) reads and stops containers through it; the
//! kubelet registers every container it starts and restarts the ones the runtime stopped.
//!
//! Pause/sandbox containers are not CRI containers, so they are never listed
//! (kubernetes/cri-api@v0.33.0 `api.proto` ListContainers vs ListPodSandbox).

pub mod crictl;
pub mod env;
pub mod statics;

use std::collections::BTreeMap;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio::sync::watch;

pub use env::{HubFilters, ServiceView};

/// Which runtime answers on the node's CRI socket (defined with the layouts, which choose it).
pub use crate::nodes::layout::Flavor;

impl Flavor {
    /// Prefix of `containerID` in pod status (kubernetes/kubernetes@v1.33.0
    /// pkg/kubelet/container/runtime.go `ContainerID.String`: `<type>://<id>`).
    pub fn id_prefix(self) -> &'static str {
        match self {
            Flavor::Containerd => "containerd://",
            Flavor::CriDockerd => "docker://",
        }
    }
}

/// CRI container state names (kubernetes/cri-api@v0.33.0 api.proto `ContainerState`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    Exited {
        code: i32,
        reason: String,
        finished_at: SystemTime,
    },
}

#[derive(Clone, Debug)]
pub struct Container {
    pub id: String,
    pub sandbox_id: String,
    pub pod_uid: String,
    pub namespace: String,
    pub pod: String,
    pub name: String,
    pub attempt: u32,
    pub image: String,
    pub created_at: SystemTime,
    pub state: State,
    /// The environment the process was started with (kubelet-computed).
    pub env: Vec<(String, String)>,
    pub annotations: BTreeMap<String, String>,
    /// Process group to SIGKILL when the runtime stops a process container.
    pub pgid: Option<u32>,
    /// The log file the kubelet gave CreateContainer (CRI `ContainerConfig.log_path`, which
    /// `ContainerStatus.log_path` reports back): the file its instance writes, `crictl logs`
    /// reads (kubernetes-sigs/cri-tools@v1.33.0 cmd/crictl/logs.go).
    pub log_path: std::path::PathBuf,
}

impl Container {
    /// Labels exactly as the kubelet sets them (kubernetes/kubernetes@v1.33.0
    /// pkg/kubelet/kuberuntime/labels.go `newContainerLabels`).
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("io.kubernetes.container.name".into(), self.name.clone()),
            ("io.kubernetes.pod.name".into(), self.pod.clone()),
            ("io.kubernetes.pod.namespace".into(), self.namespace.clone()),
            ("io.kubernetes.pod.uid".into(), self.pod_uid.clone()),
        ])
    }

    pub fn image_id(&self) -> String {
        image_id(&self.image)
    }

    pub fn running(&self) -> bool {
        self.state == State::Running
    }
}

/// The image ID the kubelet passes to CreateContainer (containerd resolves it to `sha256:…`).
pub fn image_id(image: &str) -> String {
    format!("sha256:{}", hex64(&format!("image:{image}")))
}

/// 64 hex characters derived from `seed` (deterministic; used for image IDs).
fn hex64(seed: &str) -> String {
    let mut out = String::with_capacity(64);
    for round in 0u8..4 {
        let mut h: u64 = 0xcbf29ce484222325 ^ u64::from(round);
        for b in seed.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// A fresh 64-hex ID, as containerd and docker generate them (random).
fn random_id() -> String {
    use rand::Rng;
    let mut r = rand::rng();
    (0..4)
        .map(|_| format!("{:016x}", r.random::<u64>()))
        .collect()
}

/// What the kubelet tells the runtime when it creates a container.
pub struct Create<'a> {
    pub pod: &'a Value,
    pub pod_uid: &'a str,
    pub container: &'a Value,
    pub attempt: u32,
    pub env: Vec<(String, String)>,
    pub pgid: Option<u32>,
    /// Where the container's output goes (the kubelet's log path for it).
    pub log_path: std::path::PathBuf,
}

/// One node's runtime: its socket(s) and containers.
pub struct NodeRuntime {
    pub flavor: Flavor,
    inner: Mutex<Inner>,
    /// Static pods' containers (the kubelet's file source).
    pub statics: Mutex<statics::Statics>,
    /// Bound listeners keep the sockets in the node root alive (nobody dials them: `crictl`
    /// is a stub answered by the sim).
    _sockets: Vec<UnixListener>,
}

#[derive(Default)]
struct Inner {
    containers: Vec<Container>,
    sandboxes: BTreeMap<String, String>,
    /// Stop requests for running containers, by ID; the kubelet's pod worker waits on them.
    stops: BTreeMap<String, watch::Sender<bool>>,
    /// Images on the node (normalized references, `nodes::image_pull::present_key`): pulled
    /// here, or run by a container here.
    images: std::collections::HashSet<String>,
}

impl NodeRuntime {
    /// The runtime of a node whose root is `root`: binds its sockets (host paths in
    /// `sockets`, e.g. `/run/containerd/containerd.sock`).
    pub fn new(root: &Path, flavor: Flavor, sockets: &[&str]) -> NodeRuntime {
        let mut bound = Vec::new();
        for s in sockets {
            match bind_socket(root, s) {
                Ok(l) => bound.push(l),
                Err(e) => {
                    tracing::warn!(root = %root.display(), socket = s, "cannot create the CRI socket: {e}")
                }
            }
        }
        NodeRuntime {
            flavor,
            inner: Mutex::new(Inner::default()),
            statics: Mutex::new(Default::default()),
            _sockets: bound,
        }
    }

    /// Whether the image (a normalized reference) is on the node.
    pub fn has_image(&self, key: &str) -> bool {
        self.inner.lock().unwrap().images.contains(key)
    }

    /// The image (a normalized reference) is on the node now: pulled.
    pub fn add_image(&self, key: &str) {
        self.inner.lock().unwrap().images.insert(key.to_string());
    }

    /// Registers a started container; the receiver turns true when the runtime stops it.
    pub fn create(&self, c: Create<'_>) -> (String, watch::Receiver<bool>) {
        let p = c.pod;
        let meta = &p["metadata"];
        let mut inner = self.inner.lock().unwrap();
        let sandbox_id = inner
            .sandboxes
            .entry(c.pod_uid.to_string())
            .or_insert_with(random_id)
            .clone();
        let id = random_id();
        let (tx, rx) = watch::channel(false);
        inner.stops.insert(id.clone(), tx);
        if let Some(image) = c.container["image"].as_str() {
            inner
                .images
                .insert(crate::nodes::image_pull::present_key(image));
        }
        // The runtime opens the container's log file (appending) when it starts it, so a
        // container that writes nothing still has an empty log.
        if let Some(dir) = c.log_path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&c.log_path);
        inner.containers.push(Container {
            id: id.clone(),
            sandbox_id,
            pod_uid: c.pod_uid.to_string(),
            namespace: meta["namespace"].as_str().unwrap_or("default").to_string(),
            pod: meta["name"].as_str().unwrap_or_default().to_string(),
            name: c.container["name"].as_str().unwrap_or("main").to_string(),
            attempt: c.attempt,
            image: c.container["image"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            created_at: SystemTime::now(),
            state: State::Running,
            env: c.env,
            annotations: annotations(p, c.container, c.attempt),
            pgid: c.pgid,
            log_path: c.log_path,
        });
        // The kubelet's container GC keeps one dead container per container name
        // (kubernetes/kubernetes@v1.33.0 pkg/kubelet/kubelet.go MaxPerPodContainer: 1).
        let (uid, name) = (
            c.pod_uid.to_string(),
            inner.containers.last().unwrap().name.clone(),
        );
        let dead: Vec<usize> = inner
            .containers
            .iter()
            .enumerate()
            .filter(|(_, x)| x.pod_uid == uid && x.name == name && !x.running())
            .map(|(i, _)| i)
            .collect();
        if dead.len() > 1 {
            let drop_upto = dead.len() - 1;
            for i in dead[..drop_upto].iter().rev() {
                inner.containers.remove(*i);
            }
        }
        (id, rx)
    }

    /// Records a natural exit (the process or model ended by itself).
    pub fn exited(&self, id: &str, code: i32, reason: &str) {
        let mut inner = self.inner.lock().unwrap();
        inner.stops.remove(id);
        if let Some(c) = inner.containers.iter_mut().find(|c| c.id == id)
            && c.running()
        {
            c.state = State::Exited {
                code,
                reason: reason.to_string(),
                finished_at: SystemTime::now(),
            };
        }
    }

    /// StopContainer: a running container is killed (SIGKILL; `crictl stop` sends timeout 0)
    /// and reported exited with 137, reason "Error" (containerd internal/cri/server
    /// container_status.go: non-zero exit without a runtime reason is "Error"). Stopping an
    /// exited container is a no-op. `None` when no container has that ID (or unique prefix).
    pub fn stop(&self, id_or_prefix: &str) -> Option<String> {
        let mut inner = self.inner.lock().unwrap();
        let id = resolve(&inner.containers, id_or_prefix)?;
        let c = inner.containers.iter_mut().find(|c| c.id == id)?;
        if c.running() {
            if let Some(pgid) = c.pgid.and_then(|p| libc::pid_t::try_from(p).ok()) {
                // SAFETY: plain syscall on the container's own process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
            c.state = State::Exited {
                code: 137,
                reason: "Error".into(),
                finished_at: SystemTime::now(),
            };
            if let Some(tx) = inner.stops.remove(&id) {
                let _ = tx.send(true);
            }
        }
        Some(id)
    }

    /// Forgets a pod's containers (the pod was deleted; the kubelet removes them).
    pub fn remove_pod(&self, pod_uid: &str) {
        let mut inner = self.inner.lock().unwrap();
        let gone: Vec<String> = inner
            .containers
            .iter()
            .filter(|c| c.pod_uid == pod_uid)
            .map(|c| c.id.clone())
            .collect();
        for id in gone {
            inner.stops.remove(&id);
        }
        inner.containers.retain(|c| c.pod_uid != pod_uid);
        inner.sandboxes.remove(pod_uid);
    }

    /// Every container, newest first (crictl sorts by creation time, descending).
    pub fn list(&self) -> Vec<Container> {
        let mut v = self.inner.lock().unwrap().containers.clone();
        v.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        v
    }

    pub fn get(&self, id_or_prefix: &str) -> Option<Container> {
        let inner = self.inner.lock().unwrap();
        let id = resolve(&inner.containers, id_or_prefix)?;
        inner.containers.iter().find(|c| c.id == id).cloned()
    }

    /// The file holding this container instance's log: its log path while it is the newest
    /// instance of its pod's container, else where the last terminated instance's log is kept
    /// (the sim's runtime keeps one, as the kubelet's container GC keeps one dead container).
    pub fn log_file(&self, c: &Container) -> std::path::PathBuf {
        let newer = self
            .inner
            .lock()
            .unwrap()
            .containers
            .iter()
            .any(|x| x.pod_uid == c.pod_uid && x.name == c.name && x.attempt > c.attempt);
        if newer {
            crate::nodes::kubelet::previous_log_file(&c.log_path)
        } else {
            c.log_path.clone()
        }
    }

    /// The newest container of a pod's container `name` (running or not).
    pub fn latest(&self, namespace: &str, pod: &str, name: &str) -> Option<Container> {
        self.list()
            .into_iter()
            .find(|c| c.namespace == namespace && c.pod == pod && c.name == name)
    }
}

/// Full ID for an ID or a unique prefix of one (containerd's truncindex and docker accept
/// prefixes).
fn resolve(cs: &[Container], id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    let mut hits = cs.iter().filter(|c| c.id.starts_with(id));
    let first = hits.next()?;
    hits.next().is_none().then(|| first.id.clone())
}

/// Annotations as the kubelet sets them (kubernetes/kubernetes@v1.33.0
/// pkg/kubelet/kuberuntime/labels.go `newContainerAnnotations`).
fn annotations(p: &Value, c: &Value, restart_count: u32) -> BTreeMap<String, String> {
    let mut a = BTreeMap::new();
    a.insert(
        "io.kubernetes.container.hash".into(),
        format!("{:x}", crate::util::fnv32a(c.to_string().as_bytes())),
    );
    a.insert(
        "io.kubernetes.container.restartCount".into(),
        restart_count.to_string(),
    );
    a.insert(
        "io.kubernetes.container.terminationMessagePath".into(),
        c["terminationMessagePath"]
            .as_str()
            .unwrap_or("/dev/termination-log")
            .into(),
    );
    a.insert(
        "io.kubernetes.container.terminationMessagePolicy".into(),
        c["terminationMessagePolicy"]
            .as_str()
            .unwrap_or("File")
            .into(),
    );
    if let Some(s) = p["metadata"]["deletionGracePeriodSeconds"].as_i64() {
        a.insert(
            "io.kubernetes.pod.deletionGracePeriod".into(),
            s.to_string(),
        );
    }
    // The API server defaults terminationGracePeriodSeconds to 30.
    let grace = p["spec"]["terminationGracePeriodSeconds"]
        .as_i64()
        .unwrap_or(30);
    a.insert(
        "io.kubernetes.pod.terminationGracePeriod".into(),
        grace.to_string(),
    );
    if let Some(ports) = c["ports"].as_array().filter(|p| !p.is_empty()) {
        let ports: Vec<Value> = ports
            .iter()
            .map(|p| {
                let mut q = p.clone();
                if q["protocol"].is_null() {
                    q["protocol"] = json!("TCP");
                }
                q
            })
            .collect();
        a.insert(
            "io.kubernetes.container.ports".into(),
            Value::Array(ports).to_string(),
        );
    }
    if c["lifecycle"]["preStop"].is_object() {
        a.insert(
            "io.kubernetes.container.preStopHandler".into(),
            c["lifecycle"]["preStop"].to_string(),
        );
    }
    a
}

/// Binds a unix socket at host path `host` under `root`, however long the real path is:
/// through `/proc/self/fd/N/` of the parent directory, which stays under `sun_path`'s 108 bytes.
fn bind_socket(root: &Path, host: &str) -> std::io::Result<UnixListener> {
    use std::os::fd::AsRawFd;
    let path = crate::nodes::kubelet::resolve_under(root, host);
    let parent = path.parent().ok_or(std::io::ErrorKind::InvalidInput)?;
    std::fs::create_dir_all(parent)?;
    let _ = std::fs::remove_file(&path);
    let dir = std::fs::File::open(parent)?;
    let name = path
        .file_name()
        .ok_or(std::io::ErrorKind::InvalidInput)?
        .to_string_lossy()
        .into_owned();
    UnixListener::bind(format!("/proc/self/fd/{}/{name}", dir.as_raw_fd()))
}

/// Nanoseconds since the epoch (CRI `created_at`).
pub fn unix_nanos(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
