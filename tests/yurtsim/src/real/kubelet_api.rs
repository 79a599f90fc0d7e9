//! The calls a node's kubelet makes to a real kube-apiserver, as the node's own identity and
//! through the server its kubelet kubeconfig names (nodes.rs builds that client): the pod
//! path of the sim's kubelet (nodes/kubelet/) makes them through [`KubeletApi`] when its node is
//! in front of the real control plane.
//!
//! The Node authorizer and NodeRestriction judge every one of them
//! (kubernetes/kubernetes@v1.37.2 plugin/pkg/auth/authorizer/node/node_authorizer.go,
//! plugin/pkg/admission/noderestriction/admission.go): a kubelet reads only the ConfigMaps and
//! Secrets its pods reference, writes only its pods' status, and asks for tokens only for its
//! pods' ServiceAccounts, bound to those pods.
//!
//! The sim's kubelet is synchronous where it reads and writes, so each call blocks its thread
//! (`block_in_place`: the runtime's other workers keep serving) on one request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::nodes::{NodeNet, NodeSpec, kubelet_client};
use crate::api::error::{ApiError, ApiResult};
use crate::nodes::pod_network::PodNetwork;
use crate::nodes::real_api::RealApi;

/// One node's kubelet client: built from the kubelet's kubeconfig on first use, dropped when
/// the kubelet restarts (it re-reads its kubeconfig then) or a request cannot get through.
pub struct KubeletApi {
    pub node: NodeSpec,
    /// The node's end of the pod network (nodes/pod_network.rs).
    pub pod_network: PodNetwork,
    net: NodeNet,
    client: Mutex<Option<kube::Client>>,
    /// Bumped each time the client is dropped: watches started with an older client restart.
    generation: watch::Sender<u64>,
    runtime: tokio::runtime::Handle,
    /// The pods its API source gave the kubelet (its pod watch, nodes.rs `watch_pods`), by
    /// namespace and name: the kubelet's pod manager, in which its server looks pods up
    /// (kubernetes/kubernetes@v1.37.2 pkg/kubelet/pod/pod_manager.go `GetPodByName`).
    pods: Mutex<HashMap<(String, String), Arc<Value>>>,
}

impl KubeletApi {
    pub fn new(
        node: NodeSpec,
        net: NodeNet,
        pod_network: PodNetwork,
        runtime: tokio::runtime::Handle,
    ) -> Arc<KubeletApi> {
        Arc::new(KubeletApi {
            node,
            pod_network,
            net,
            client: Mutex::new(None),
            generation: watch::channel(0).0,
            runtime,
            pods: Mutex::new(HashMap::new()),
        })
    }

    /// The kubelet's client as its kubeconfig now says, built if there is none.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        if let Some(c) = self.client.lock().unwrap().clone() {
            return Ok(c);
        }
        let c = kubelet_client(&self.node, &self.net).await?;
        *self.client.lock().unwrap() = Some(c.clone());
        Ok(c)
    }

    /// A pod of the kubelet's pod manager.
    pub fn pod(&self, ns: &str, name: &str) -> Option<Arc<Value>> {
        let key = (ns.to_string(), name.to_string());
        self.pods.lock().unwrap().get(&key).cloned()
    }

    /// The pod as the watch last gave it, or its deletion.
    pub fn pod_seen(&self, pod: &Value, deleted: bool) {
        let key = crate::api::store::key_of(pod);
        let mut pods = self.pods.lock().unwrap();
        if deleted {
            pods.remove(&key);
        } else {
            pods.insert(key, Arc::new(pod.clone()));
        }
    }

    /// The pods a fresh list gave, in place of what the manager held.
    pub fn pods_listed(&self, listed: Vec<Value>) {
        *self.pods.lock().unwrap() = listed
            .into_iter()
            .map(|p| (crate::api::store::key_of(&p), Arc::new(p)))
            .collect();
    }

    /// Changes each time the client is dropped.
    pub fn generations(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Runs one request to completion from synchronous code.
    fn block<T>(&self, f: impl Future<Output = T>) -> T {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => tokio::task::block_in_place(|| h.block_on(f)),
            Err(_) => self.runtime.block_on(f),
        }
    }

    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> ApiResult<Value> {
        tracing::debug!(node = %self.node.name, "kubelet: {method} {path}");
        let client = self
            .client()
            .await
            .map_err(|e| ApiError::new(503, "ServiceUnavailable", format!("{e:#}")))?;
        let mut req = http::Request::builder().method(method).uri(path);
        let bytes = match body {
            Some(b) => {
                req = req.header("Content-Type", "application/json");
                serde_json::to_vec(b).unwrap_or_default()
            }
            None => Vec::new(),
        };
        let req = req
            .body(bytes)
            .map_err(|e| ApiError::new(400, "BadRequest", e.to_string()))?;
        match client.request::<Value>(req).await {
            Ok(v) => Ok(v),
            Err(kube::Error::Api(s)) => {
                if !matches!(s.code, 404 | 409) {
                    tracing::warn!(node = %self.node.name, "kubelet: {path}: {} ({})", s.message, s.code);
                }
                Err(ApiError::new(s.code, reason_of_code(s.code), s.message))
            }
            Err(e) => {
                tracing::warn!(node = %self.node.name, "kubelet: {path}: {e}");
                // the connection, TLS or kubeconfig failed: read them again next time
                self.reset();
                Err(ApiError::new(503, "ServiceUnavailable", e.to_string()))
            }
        }
    }
}

impl RealApi for KubeletApi {
    fn get(&self, resource: &str, ns: &str, name: &str) -> ApiResult<Value> {
        self.block(self.send(
            http::Method::GET,
            &core_path(resource, ns, Some(name)),
            None,
        ))
    }

    fn list(&self, resource: &str) -> ApiResult<Vec<Value>> {
        let list =
            self.block(self.send(http::Method::GET, &core_path(resource, "", None), None))?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    fn create(&self, resource: &str, ns: &str, obj: &Value) -> ApiResult<Value> {
        self.block(self.send(
            http::Method::POST,
            &core_path(resource, ns, None),
            Some(obj),
        ))
    }

    fn known_pod(&self, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.pod(ns, name)
    }

    fn known_pods(&self) -> Vec<Arc<Value>> {
        self.pods.lock().unwrap().values().cloned().collect()
    }

    fn modify(
        &self,
        resource: &str,
        ns: &str,
        name: &str,
        subresource: Option<&str>,
        f: &dyn Fn(&mut Value) -> bool,
    ) -> ApiResult<()> {
        // the object is read whole: a node may write `pods/status` but not read it (the
        // system:node ClusterRole, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go)
        let object = core_path(resource, ns, Some(name));
        let path = match subresource {
            Some(sub) => format!("{object}/{sub}"),
            None => object.clone(),
        };
        let mut last = None;
        for _ in 0..5 {
            let mut obj = self.block(self.send(http::Method::GET, &object, None))?;
            if !f(&mut obj) {
                return Ok(());
            }
            match self.block(self.send(http::Method::PUT, &path, Some(&obj))) {
                Err(e) if e.code == 409 => last = Some(e),
                Err(e) => {
                    tracing::warn!(node = %self.node.name, "kubelet: PUT {path}: {} ({})", e.message, e.code);
                    return Err(e);
                }
                Ok(_) => return Ok(()),
            }
        }
        Err(last.unwrap_or_else(|| ApiError::new(409, "Conflict", "conflict")))
    }

    fn delete_pod(&self, ns: &str, name: &str, uid: Option<&str>) -> ApiResult<()> {
        let mut body =
            json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0});
        if let Some(uid) = uid {
            body["preconditions"] = json!({"uid": uid});
        }
        self.block(self.send(
            http::Method::DELETE,
            &core_path("pods", ns, Some(name)),
            Some(&body),
        ))
        .map(|_| ())
    }

    fn event(&self, involved: &Value, kind: &str, typ: &str, reason: &str, message: &str) {
        let ns = involved["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let name = involved["metadata"]["name"].as_str().unwrap_or_default();
        let now = crate::util::now();
        let ev = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.{}", crate::util::random_suffix(16)), "namespace": ns},
            "involvedObject": {"kind": kind, "apiVersion": "v1", "namespace": ns, "name": name,
                "uid": involved["metadata"]["uid"], "resourceVersion": involved["metadata"]["resourceVersion"]},
            "reason": reason, "message": message, "type": typ, "count": 1,
            "source": {"component": "kubelet", "host": self.node.name},
            "firstTimestamp": now, "lastTimestamp": now,
            "reportingComponent": "kubelet", "reportingInstance": self.node.name});
        if let Err(e) = self.block(self.send(
            http::Method::POST,
            &core_path("events", ns, None),
            Some(&ev),
        )) {
            tracing::debug!(node = %self.node.name, "event {reason} on {ns}/{name}: {}", e.message);
        }
    }

    fn pod_token(
        &self,
        pod: &Value,
        service_account: &str,
        audience: Option<&str>,
        expiration_seconds: u64,
    ) -> ApiResult<String> {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
        let mut spec = json!({"expirationSeconds": expiration_seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}});
        if let Some(a) = audience.filter(|a| !a.is_empty()) {
            spec["audiences"] = json!([a]);
        }
        let req =
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
        let path = format!(
            "{}/token",
            core_path("serviceaccounts", ns, Some(service_account))
        );
        let out = self.block(self.send(http::Method::POST, &path, Some(&req)))?;
        out["status"]["token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ApiError::new(500, "InternalError", "TokenRequest returned no token"))
    }

    fn reset(&self) {
        if self.client.lock().unwrap().take().is_some() {
            self.generation.send_modify(|g| *g += 1);
        }
    }

    fn pod_network(&self) -> &PodNetwork {
        &self.pod_network
    }
}

fn core_path(resource: &str, ns: &str, name: Option<&str>) -> String {
    let mut p = String::from("/api/v1");
    if !ns.is_empty() {
        p.push_str(&format!("/namespaces/{ns}"));
    }
    p.push_str(&format!("/{resource}"));
    if let Some(n) = name {
        p.push_str(&format!("/{n}"));
    }
    p
}

/// The `reason` the API server gives with `code` (apimachinery's StatusReason).
fn reason_of_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Gone",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        _ => "InternalError",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn core_paths_are_the_api_servers() {
        assert_eq!(
            super::core_path("pods", "ns1", Some("p")),
            "/api/v1/namespaces/ns1/pods/p"
        );
        assert_eq!(super::core_path("services", "", None), "/api/v1/services");
        assert_eq!(
            super::core_path("events", "kube-system", None),
            "/api/v1/namespaces/kube-system/events"
        );
    }
}
