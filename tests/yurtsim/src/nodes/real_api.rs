//! The node side of the real tier (docs/yurtsim.md#the-real-tier) that the nodes use: which
//! API server a cluster runs, the calls a node's kubelet makes to a real kube-apiserver
//! ([`RealApi`], which the real tier's `real/kubelet_api.rs` implements), and the real OpenYurt
//! binaries `tests/real/build.sh` builds, which a node runs in place of their models.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::api::error::ApiResult;
use crate::nodes::pod_network::PodNetwork;

/// Which API server a cluster runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiServerKind {
    /// yurtsim's own API server and controllers, with its fault controls (the default).
    #[default]
    Sim,
    /// etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from upstream's
    /// modules (tests/real/build.sh).
    Real,
}

/// Where `tests/real/build.sh` puts what it builds: `YURTSIM_REAL_DIR`, else `target/real` of
/// this checkout.
pub fn real_dir() -> PathBuf {
    match std::env::var_os("YURTSIM_REAL_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            std::fs::canonicalize(&checkout)
                .unwrap_or(checkout)
                .join("target/real")
        }
    }
}

/// The build script, in this checkout.
pub fn build_script() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../real/build.sh");
    std::fs::canonicalize(&p).unwrap_or(p)
}

/// The calls a node's kubelet makes to a real kube-apiserver, as the node's own identity: the
/// pod path of the sim's kubelet (nodes/kubelet/pod_sync.rs, pod_env.rs) makes them through this when its node is
/// in front of the real control plane (real/kubelet_api.rs has the client).
pub trait RealApi: Send + Sync {
    /// GET one core/v1 object.
    fn get(&self, resource: &str, ns: &str, name: &str) -> ApiResult<Value>;

    /// The items of a core/v1 list across namespaces.
    fn list(&self, resource: &str) -> ApiResult<Vec<Value>>;

    /// Creates a core/v1 object in `ns`: the object as created.
    fn create(&self, resource: &str, ns: &str, obj: &Value) -> ApiResult<Value>;

    /// A pod as the kubelet's pod manager holds it, from its pod watch, without a request
    /// (kubernetes/kubernetes@v1.37.2 pkg/kubelet/pod/pod_manager.go `GetPodByName`: the
    /// kubelet finds its static pods' mirror pods there, kubelet.go `SyncPod`).
    fn known_pod(&self, ns: &str, name: &str) -> Option<std::sync::Arc<Value>>;

    /// The pods the pod manager holds.
    fn known_pods(&self) -> Vec<std::sync::Arc<Value>>;

    /// Reads the object, lets `f` change it (false: leave it), and writes it back through
    /// `subresource`, again on a conflict, as client-go's `RetryOnConflict` does.
    fn modify(
        &self,
        resource: &str,
        ns: &str,
        name: &str,
        subresource: Option<&str>,
        f: &dyn Fn(&mut Value) -> bool,
    ) -> ApiResult<()>;

    /// The kubelet's final delete of a pod it stopped: no grace left, and only that pod (uid).
    fn delete_pod(&self, ns: &str, name: &str, uid: Option<&str>) -> ApiResult<()>;

    /// Records an event, as the kubelet's event recorder does (source: kubelet on this node).
    fn event(&self, involved: &Value, kind: &str, typ: &str, reason: &str, message: &str);

    /// A token for the pod's ServiceAccount bound to the pod, as the kubelet's token manager
    /// gets one for a projected `serviceAccountToken` source (pkg/kubelet/token).
    fn pod_token(
        &self,
        pod: &Value,
        service_account: &str,
        audience: Option<&str>,
        expiration_seconds: u64,
    ) -> ApiResult<String>;

    /// Forgets the client: the next request reads the kubeconfig again.
    fn reset(&self);

    /// The node's end of the pod network (nodes/pod_network.rs).
    fn pod_network(&self) -> &PodNetwork;
}

/// The OpenYurt releases `tests/real/build.sh` builds real binaries of.
pub const OPENYURT_BUILT: &[&str] = &["v1.7.0"];

/// The real binary of OpenYurt `component` at `version`, when it is built.
pub fn openyurt_binary(component: &str, version: &str) -> Option<PathBuf> {
    let bin = real_dir()
        .join(format!("openyurt-{version}"))
        .join(component);
    bin.is_file().then_some(bin)
}

/// Why there is no real binary of an OpenYurt `version`.
pub fn openyurt_missing_reason(version: &str) -> String {
    if OPENYURT_BUILT.contains(&version) {
        format!(
            "build it with `{} openyurt-{version}`",
            build_script().display()
        )
    } else {
        format!(
            "the Go module proxy does not serve github.com/openyurtio/openyurt {version} (docs/yurtsim.md#the-real-tier); only the sim tier runs its model"
        )
    }
}
