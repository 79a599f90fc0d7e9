//! Image pulls: an image reference as Docker normalizes it, the error containerd's CRI returns
//! when the registry's host cannot be resolved (the sim's unreachable-registry fault), and the
//! kubelet's pull before a container starts (kubernetes/kubernetes@v1.37.2
//! pkg/kubelet/images/image_manager.go `EnsureImageExists`, `pullImage`), with its events, the
//! container's Waiting state and the pull back-off.
//!
//! An image is present on a node once a pull of it succeeded there (the kubelet's or
//! `crictl pull`) or a container of it was created there ([`crate::nodes::cri::NodeRuntime`]).
//! Static pods pull the same way ([`StaticPull`]) before their containers (and a YurtHub
//! static pod's model) start.
//! Successful pulls are silent here: the real kubelet's `Pulling`/`Pulled` events on success
//! are not modelled.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::nodes::Cluster;
use crate::nodes::cri::crictl::go_quote;
use crate::nodes::kubelet::{NodeKubelet, pod_event};

/// A reference as github.com/distribution/reference@v0.6.0 normalize.go `ParseDockerRef`
/// reads it: domain, repository path, and tag (`latest` when neither tag nor digest is
/// given) or digest (a digest wins over a tag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    pub domain: String,
    pub path: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageRef {
    /// `docker.io/library/nginx:1.27`, `registry.k8s.io/pause@sha256:…`.
    pub fn full(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{}/{}@{d}", self.domain, self.path),
            (None, Some(t)) => format!("{}/{}:{t}", self.domain, self.path),
            (None, None) => format!("{}/{}:latest", self.domain, self.path),
        }
    }

    /// The host the registry API is asked at: Docker Hub's is `registry-1.docker.io`
    /// (containerd core/remotes/docker/resolver.go `DefaultHost`), any other registry's its
    /// own domain.
    pub fn api_host(&self) -> &str {
        if self.domain == "docker.io" {
            "registry-1.docker.io"
        } else {
            &self.domain
        }
    }

    /// What `/v2/<path>/manifests/<object>` names: the digest, else the tag.
    pub fn object(&self) -> String {
        self.digest
            .clone()
            .or_else(|| self.tag.clone())
            .unwrap_or_else(|| "latest".into())
    }
}

/// Normalizes `image` (github.com/distribution/reference@v0.6.0 normalize.go
/// `splitDockerDomain`): the first path component is the registry when it is `localhost`,
/// contains '.' or ':', or is not lower-case; `index.docker.io` is `docker.io`; anything else
/// is on `docker.io`, where a name without '/' gets `library/`.
pub fn normalize(image: &str) -> ImageRef {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (
            &name[..last_slash + i],
            Some(name[last_slash + i + 1..].to_string()),
        ),
        None => (name, None),
    };
    let (mut domain, mut path) = match name.split_once('/') {
        None => ("docker.io".to_string(), name.to_string()),
        Some((d, rest)) if d == "localhost" || d.contains(['.', ':']) || d.to_lowercase() != d => {
            (d.to_string(), rest.to_string())
        }
        Some(_) => ("docker.io".to_string(), name.to_string()),
    };
    if domain == "index.docker.io" {
        domain = "docker.io".into();
    }
    if domain == "docker.io" && !path.contains('/') {
        path = format!("library/{path}");
    }
    // ParseDockerRef: tagged and digested → digested only.
    let tag = if digest.is_some() { None } else { tag };
    ImageRef {
        domain,
        path,
        tag,
        digest,
    }
}

/// The error containerd's CRI returns when the registry's host name does not resolve
/// (an air-gapped node): containerd internal/cri/server/images/image_pull.go
/// `"failed to pull and unpack image %q: %w"` around client pull.go `"failed to resolve
/// reference %q: %w"` around core/remotes/docker/resolver.go `"failed to do request: %w"`
/// (main branch as indexed; the v1.7 branch has the same three wrappers), around Go's
/// `url.Error` (`Head "<url>": <err>`) and `net.OpError`/`DNSError`. Not verified: Go's
/// DNSError adds ` on <resolver>:53` when it knows the DNS server; that part is left out.
/// Every registry is asked over https (a plain-http localhost registry is not modelled).
pub fn pull_error(image: &str) -> String {
    let r = normalize(image);
    let full = r.full();
    let host = r.api_host();
    let lookup = host.split(':').next().unwrap_or(host);
    format!(
        "failed to pull and unpack image {q}: failed to resolve reference {q}: failed to do request: Head \"https://{host}/v2/{}/manifests/{}\": dial tcp: lookup {lookup}: no such host",
        r.path,
        r.object(),
        q = go_quote(&full),
    )
}

/// The CRI error as gRPC prints it: containerd answers a failed pull with code Unknown (its
/// plain Go error, not a status).
pub fn rpc_error(desc: &str) -> String {
    format!("rpc error: code = Unknown desc = {desc}")
}

/// The key an image is present under on a node.
pub(crate) fn present_key(image: &str) -> String {
    normalize(image).full()
}

/// `image_manager.go applyDefaultImageTag`: `:latest` appended when the reference has neither
/// tag nor digest (not otherwise normalized).
fn with_default_tag(image: &str) -> String {
    let r = normalize(image);
    if r.digest.is_none() && r.tag.is_none() {
        format!("{image}:latest")
    } else {
        image.to_string()
    }
}

/// `imagePullPolicy` as the API server defaults it when a pod did not go through it
/// (kubernetes pkg/apis/core/v1/defaults.go `SetDefaults_Container`): `Always` for `:latest`
/// or no tag, else `IfNotPresent`.
fn default_policy(image: &str) -> &'static str {
    let r = normalize(image);
    match (&r.digest, r.tag.as_deref()) {
        (Some(_), _) => "IfNotPresent",
        (None, None | Some("latest")) => "Always",
        _ => "IfNotPresent",
    }
}

/// Makes sure container `c`'s image is on the node before it starts, as `EnsureImageExists`
/// does. While it cannot be, `show` is handed the container's state (Waiting with
/// ErrImagePull, ImagePullBackOff or ErrImageNeverPull) and the pull is retried after a
/// back-off: the node config's `crash_backoff`, doubling up to `crash_backoff_max` (the real
/// kubelet: pkg/kubelet/kubelet.go imageBackOffPeriod 10 s, MaxImageBackOff 300 s). Returns
/// true if the pod was stopped meanwhile.
pub(crate) async fn ensure(
    shared: &Arc<Cluster>,
    k: &NodeKubelet,
    p: &Value,
    c: &Value,
    stop: &mut watch::Receiver<bool>,
    show: &mut (dyn FnMut(Value) + Send),
) -> bool {
    let requested = c["image"].as_str().unwrap_or("");
    let image = with_default_tag(requested);
    let policy = c["imagePullPolicy"]
        .as_str()
        .unwrap_or_else(|| default_policy(requested));
    let key = present_key(requested);
    let mut backoff = shared.cfg.crash_backoff;
    loop {
        if k.cri.has_image(&key) && policy != "Always" {
            return false;
        }
        if policy == "Never" {
            // imageNotPresentOnNeverPolicyError; then kuberuntime_container.go startContainer's
            // `"Error: %v"` event (reason Failed) with the error's text.
            let msg = format!(
                "Container image {} is not present with pull policy of Never",
                go_quote(requested)
            );
            pod_event(shared, p, "Warning", "ErrImageNeverPull", &msg);
            pod_event(shared, p, "Warning", "Failed", "Error: ErrImageNeverPull");
            show(json!({"waiting": {"reason": "ErrImageNeverPull", "message": msg}}));
            // Looked at again on the next sync (another pod may pull it meanwhile).
            if wait(stop, shared.cfg.crash_backoff).await {
                return true;
            }
            continue;
        }
        let Some(err) = shared.faults.cannot_pull(&k.name, requested) else {
            k.cri.add_image(&key);
            return false;
        };
        let cri = rpc_error(&err);
        let q = go_quote(&image);
        // pullImage: Pulling, then Failed "Failed to pull image %q: %v"; evalCRIPullErr gives
        // ErrImagePull with the CRI error's text as the message; startContainer adds
        // Failed "Error: ErrImagePull".
        pod_event(
            shared,
            p,
            "Normal",
            "Pulling",
            &format!("Pulling image {q}"),
        );
        pod_event(
            shared,
            p,
            "Warning",
            "Failed",
            &format!("Failed to pull image {q}: {cri}"),
        );
        pod_event(shared, p, "Warning", "Failed", "Error: ErrImagePull");
        show(json!({"waiting": {"reason": "ErrImagePull", "message": cri}}));
        // The next sync within the back-off: BackOff "Back-off pulling image %q", the
        // message wrapped with the stored `"%s: %s"` of error and message
        // (prevPullErrMsg), and Failed "Error: ImagePullBackOff".
        let first = backoff / 2;
        if wait(stop, first).await {
            return true;
        }
        pod_event(
            shared,
            p,
            "Normal",
            "BackOff",
            &format!("Back-off pulling image {q}"),
        );
        pod_event(shared, p, "Warning", "Failed", "Error: ImagePullBackOff");
        show(json!({"waiting": {"reason": "ImagePullBackOff",
            "message": format!("Back-off pulling image {q}: ErrImagePull: {cri}")}}));
        if wait(stop, backoff - first).await {
            return true;
        }
        backoff = (backoff * 2).min(shared.cfg.crash_backoff_max);
    }
}

/// Sleeps `d`; true if the pod was stopped first.
async fn wait(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = crate::nodes::containers::stopped(stop) => true,
    }
}

/// A static pod's pulls: the same `EnsureImageExists` before its containers start, stepped
/// on each sync of the kubelet's file source (which runs static pods from the kubelet's own
/// loop, not from a pod worker of the sim's), with the same events, Waiting states and
/// back-off as [`ensure`]. The containers' images are pulled in order; none starts until all
/// are there.
#[derive(Clone, Debug, Default)]
pub(crate) struct StaticPull {
    done: bool,
    /// (container name, its Waiting state) while a pull fails.
    waiting: Option<(String, Value)>,
    /// The failed pull whose back-off is running: (the image as the events name it, the
    /// CRI error).
    failed: Option<(String, String)>,
    /// When the next step is due.
    next: Option<std::time::Instant>,
    backoff: Duration,
}

/// An event to record on the static pod's mirror pod: (type, reason, message).
pub(crate) type PullEvent = (&'static str, &'static str, String);

impl StaticPull {
    /// Every container's image is on the node.
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// The container whose image is not there, and its Waiting state.
    pub(crate) fn waiting(&self) -> Option<&(String, Value)> {
        self.waiting.as_ref()
    }

    /// One step of the pulls of `manifest`'s containers on node `k`, when one is due; the
    /// events it would record.
    pub(crate) fn step(
        &mut self,
        shared: &Cluster,
        k: &NodeKubelet,
        manifest: &Value,
    ) -> Vec<PullEvent> {
        let now = std::time::Instant::now();
        if self.done || self.next.is_some_and(|t| now < t) {
            return Vec::new();
        }
        if self.backoff.is_zero() {
            self.backoff = shared.cfg.crash_backoff;
        }
        if let Some((q, cri)) = self.failed.take() {
            // half the back-off passed: ImagePullBackOff until it ends (as `ensure`)
            let first = self.backoff / 2;
            if let Some((_, state)) = self.waiting.as_mut() {
                *state = json!({"waiting": {"reason": "ImagePullBackOff",
                    "message": format!("Back-off pulling image {q}: ErrImagePull: {cri}")}});
            }
            self.next = Some(now + (self.backoff - first));
            self.backoff = (self.backoff * 2).min(shared.cfg.crash_backoff_max);
            return vec![
                ("Normal", "BackOff", format!("Back-off pulling image {q}")),
                ("Warning", "Failed", "Error: ImagePullBackOff".into()),
            ];
        }
        for c in manifest["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let requested = c["image"].as_str().unwrap_or("");
            let name = c["name"].as_str().unwrap_or("main").to_string();
            let policy = c["imagePullPolicy"]
                .as_str()
                .unwrap_or_else(|| default_policy(requested));
            let key = present_key(requested);
            if k.cri.has_image(&key) && policy != "Always" {
                continue;
            }
            if policy == "Never" {
                let msg = format!(
                    "Container image {} is not present with pull policy of Never",
                    go_quote(requested)
                );
                self.waiting = Some((
                    name,
                    json!({"waiting": {"reason": "ErrImageNeverPull", "message": msg}}),
                ));
                self.next = Some(now + shared.cfg.crash_backoff);
                return vec![
                    ("Warning", "ErrImageNeverPull", msg),
                    ("Warning", "Failed", "Error: ErrImageNeverPull".into()),
                ];
            }
            let Some(err) = shared.faults.cannot_pull(&k.name, requested) else {
                k.cri.add_image(&key);
                continue;
            };
            let cri = rpc_error(&err);
            let q = go_quote(&with_default_tag(requested));
            self.waiting = Some((
                name,
                json!({"waiting": {"reason": "ErrImagePull", "message": cri}}),
            ));
            self.next = Some(now + self.backoff / 2);
            self.failed = Some((q.clone(), cri.clone()));
            return vec![
                ("Normal", "Pulling", format!("Pulling image {q}")),
                (
                    "Warning",
                    "Failed",
                    format!("Failed to pull image {q}: {cri}"),
                ),
                ("Warning", "Failed", "Error: ErrImagePull".into()),
            ];
        }
        self.done = true;
        self.waiting = None;
        Vec::new()
    }
}

/// Pulls the app containers' images before any of them starts, the pod Pending meanwhile with
/// each container Waiting (ContainerCreating, or why its image is not there). The real kubelet
/// starts the containers whose images it has and leaves the others waiting; here none starts
/// until every image is there. Returns true if the pod was stopped.
pub(crate) async fn ensure_app_images(
    shared: &Arc<Cluster>,
    k: &NodeKubelet,
    p: &Value,
    first_start: &str,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let containers: Vec<Value> = p["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut states: Vec<Value> = containers
        .iter()
        .map(|_| json!({"waiting": {"reason": "ContainerCreating"}}))
        .collect();
    for (i, c) in containers.iter().enumerate() {
        let mut show = |state: Value| {
            states[i] = state;
            let Some(cur) = crate::nodes::kubelet::current_pod(shared, p) else {
                return;
            };
            let mut st = crate::nodes::kubelet::pod_status(
                k,
                &cur,
                "Pending",
                false,
                &cur["spec"]["containers"],
                None,
                first_start.to_string(),
            );
            for (cs, s) in st["containerStatuses"]
                .as_array_mut()
                .into_iter()
                .flatten()
                .zip(&states)
            {
                cs["state"] = s.clone();
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            }
            let _ = crate::nodes::kubelet::set_pod_status(shared, &cur, st);
        };
        if ensure(shared, k, p, c, stop, &mut show).await {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_as_docker_does() {
        let full = |i: &str| normalize(i).full();
        assert_eq!(full("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(full("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(
            full("openyurt/yurthub:v1.7.0"),
            "docker.io/openyurt/yurthub:v1.7.0"
        );
        assert_eq!(
            full("index.docker.io/busybox"),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            full("localhost/app:1"),
            "localhost/app:1",
            "localhost is a domain"
        );
        assert_eq!(full("reg:5000/app"), "reg:5000/app:latest");
        assert_eq!(normalize("reg:5000/app").domain, "reg:5000");
        assert_eq!(
            full("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            full(&format!("quay.io/x/y:1@{d}")),
            format!("quay.io/x/y@{d}")
        );
    }

    #[test]
    fn pull_errors_name_the_api_host_and_object() {
        assert_eq!(
            pull_error("openyurt/yurthub:v1.7.0"),
            "failed to pull and unpack image \"docker.io/openyurt/yurthub:v1.7.0\": failed to resolve reference \"docker.io/openyurt/yurthub:v1.7.0\": failed to do request: Head \"https://registry-1.docker.io/v2/openyurt/yurthub/manifests/v1.7.0\": dial tcp: lookup registry-1.docker.io: no such host"
        );
        let d = format!("sha256:{}", "b".repeat(64));
        assert!(
            pull_error(&format!("reg.example:5000/a/b@{d}")).ends_with(&format!(
                "Head \"https://reg.example:5000/v2/a/b/manifests/{d}\": dial tcp: lookup reg.example: no such host"
            ))
        );
    }

    #[test]
    fn default_tag_and_policy() {
        assert_eq!(with_default_tag("busybox"), "busybox:latest");
        assert_eq!(with_default_tag("nginx:1.27"), "nginx:1.27");
        assert_eq!(default_policy("busybox"), "Always");
        assert_eq!(default_policy("busybox:latest"), "Always");
        assert_eq!(default_policy("nginx:1.27"), "IfNotPresent");
    }
}
