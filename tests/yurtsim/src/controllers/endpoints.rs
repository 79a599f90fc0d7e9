//! kube-controller-manager's endpoints controller: the Endpoints object of every Service with
//! a selector, kept to the pods it selects. Facts from kubernetes/kubernetes@v1.33.0:
//!
//! * `pkg/controller/endpoint/endpoints_controller.go` (syncService): a deleted Service's
//!   Endpoints are deleted; `ExternalName` Services and Services without a selector get none
//!   from the controller (their Endpoints are the user's); the pods of the Service's namespace
//!   matching its selector are taken when `ShouldPodBeInEndpoints` (below); each gives one
//!   address (`ip`, `nodeName`, `targetRef` Pod with namespace, name and uid; `hostname` when
//!   the pod's `hostname` is set and its `subdomain` is the Service's name) per Service port
//!   whose target port the pod has (`FindPort`), under `addresses` when the pod is Ready or the
//!   Service has `publishNotReadyAddresses`, else under `notReadyAddresses`; a headless Service
//!   without ports lists its pods with no ports. The Endpoints carry the Service's labels plus
//!   `service.kubernetes.io/headless: ""` when the Service has no cluster IP; nothing is written
//!   when subsets and labels are unchanged. Over 1000 addresses the list is truncated (ready
//!   ones kept first, per subset in proportion) and annotated
//!   `endpoints.kubernetes.io/over-capacity: truncated` (truncateEndpoints).
//! * `staging/src/k8s.io/endpointslice/util/controller_utils.go` (ShouldPodBeInEndpoints): not
//!   a terminal pod (Succeeded/Failed), has a pod IP, and not terminating unless the Service
//!   publishes not-ready addresses.
//! * `pkg/api/v1/pod/util.go` (FindPort): a named target port is looked up among the
//!   containers' (and restartable init containers') ports of the same protocol; a number is
//!   taken as is.
//! * `pkg/api/v1/endpoints/util.go` (RepackSubsets): addresses are de-duplicated by IP and pod
//!   UID, not-ready wins over ready for the same port, and addresses that offer the same ports
//!   share one subset; addresses are sorted by IP then UID.
//!
//! The API server's own Service `default/kubernetes` has no selector: its Endpoints are written
//! by the API server (`pkg/controlplane/reconcilers`), see `bootstrap_kubernetes`.
//!
//! The endpointslice controller runs beside it from the same Service syncs (`sync_slices`).
//!
//! Not modelled: the `endpoints.kubernetes.io/last-change-trigger-time` annotation is the time
//! of the write (upstream: the oldest unprocessed pod or Service change); ports and subsets are
//! ordered by name and number where upstream orders them by an md5 of their Go values; IPv6 and
//! dual-stack families; the events of failed writes; the endpointslice mirroring controller
//! (Endpoints written by users are not mirrored into slices).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::api::store::Filter;
use crate::api::{Api, Ctx};
use crate::nodes::layout::Layout;

/// The field manager the controller's writes carry.
const MANAGER: &str = "kube-controller-manager";
/// `maxCapacity` of endpoints_controller.go.
const MAX_CAPACITY: usize = 1000;
const HEADLESS: &str = "service.kubernetes.io/headless";
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// The Services of `ns` whose selector matches one of `labels` (a pod's labels before and after
/// a change: `GetServicesToUpdateOnPodChange`).
pub fn services_selecting(api: &Api, ns: &str, labels: &[&Value]) -> Vec<String> {
    let svcs = api.info("", "services");
    let filter = Filter {
        namespace: Some(ns.to_string()),
        ..Default::default()
    };
    api.list(&svcs, &filter)
        .0
        .iter()
        .filter(|s| {
            let Some(sel) = s["spec"]["selector"].as_object() else {
                return false;
            };
            labels.iter().any(|l| selects(sel, l))
        })
        .map(|s| s["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A Service selector (a plain label map; an empty one selects every pod).
fn selects(selector: &Map<String, Value>, labels: &Value) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.get(k).is_some_and(|x| x == v))
}

fn pod_ready(p: &Value) -> bool {
    p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// ShouldPodBeInEndpoints.
fn should_be_in_endpoints(p: &Value, include_terminating: bool) -> bool {
    let phase = p["status"]["phase"].as_str().unwrap_or("");
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    let has_ip = p["status"]["podIP"].as_str().is_some_and(|s| !s.is_empty())
        || p["status"]["podIPs"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
    if !has_ip {
        return false;
    }
    include_terminating || p["metadata"]["deletionTimestamp"].is_null()
}

/// FindPort: the pod's port for a Service port, or None ("no suitable port for manifest").
fn find_port(p: &Value, svc_port: &Value) -> Option<i64> {
    let target = &svc_port["targetPort"];
    if let Some(n) = target.as_i64() {
        return Some(n);
    }
    // a number given as a string is an IntOrString of type String too, matched by name
    let name = target.as_str()?;
    let protocol = svc_port["protocol"].as_str().unwrap_or("TCP");
    let spec = &p["spec"];
    let init = spec["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["restartPolicy"] == "Always");
    spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(init)
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .find(|port| port["name"] == name && port["protocol"].as_str().unwrap_or("TCP") == protocol)
        .and_then(|port| port["containerPort"].as_i64())
}

/// The EndpointAddress of a pod (podToEndpointAddressForService, IPv4).
fn address(p: &Value, svc: &Value) -> Option<Value> {
    let ip = p["status"]["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str())
        .chain(p["status"]["podIP"].as_str())
        .find(|i| !i.contains(':'))?;
    let mut a = json!({"ip": ip, "nodeName": p["spec"]["nodeName"].as_str().unwrap_or(""),
        "targetRef": {"kind": "Pod", "namespace": p["metadata"]["namespace"],
            "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}});
    // ShouldSetHostname
    let hostname = p["spec"]["hostname"].as_str().unwrap_or("");
    if !hostname.is_empty()
        && p["spec"]["subdomain"] == svc["metadata"]["name"]
        && p["metadata"]["namespace"] == svc["metadata"]["namespace"]
    {
        a["hostname"] = json!(hostname);
    }
    Some(a)
}

fn endpoint_port(svc_port: &Value, port: i64) -> Value {
    let mut p = json!({"port": port, "protocol": svc_port["protocol"].as_str().unwrap_or("TCP")});
    if let Some(n) = svc_port["name"].as_str().filter(|n| !n.is_empty()) {
        p["name"] = json!(n);
    }
    if let Some(a) = svc_port["appProtocol"].as_str() {
        p["appProtocol"] = json!(a);
    }
    p
}

/// Sort key of an address: IP, then pod UID (LessEndpointAddress).
fn addr_key(a: &Value) -> (String, String) {
    (
        a["ip"].as_str().unwrap_or("").to_string(),
        a["targetRef"]["uid"].as_str().unwrap_or("").to_string(),
    )
}

/// An address's sort key (IP, pod UID).
type AddrKey = (String, String);
/// The addresses offering one port, with their readiness.
type AddrSet = BTreeMap<AddrKey, bool>;

/// RepackSubsets over (address, port, ready) triples; `None` ports: a headless Service
/// without ports.
fn repack(entries: Vec<(Value, Option<Value>, bool)>) -> Vec<Value> {
    let mut addrs: BTreeMap<AddrKey, Value> = BTreeMap::new();
    // port (as its JSON text, with the value) → address key → ready
    let mut by_port: BTreeMap<String, (Option<Value>, AddrSet)> = BTreeMap::new();
    for (a, port, ready) in entries {
        let key = addr_key(&a);
        addrs.entry(key.clone()).or_insert(a);
        let pk = port.as_ref().map(port_sort_key).unwrap_or_default();
        let set = &mut by_port
            .entry(pk)
            .or_insert_with(|| (port, BTreeMap::new()))
            .1;
        // not ready always trumps ready
        let e = set.entry(key).or_insert(ready);
        *e = *e && ready;
    }
    // addresses (with readiness) → the ports they offer
    let mut groups: BTreeMap<Vec<(AddrKey, bool)>, Vec<Option<Value>>> = BTreeMap::new();
    for (_, (port, set)) in by_port {
        let key: Vec<_> = set.into_iter().collect();
        groups.entry(key).or_default().push(port);
    }
    groups
        .into_iter()
        .map(|(set, ports)| {
            let pick = |ready: bool| -> Vec<Value> {
                set.iter()
                    .filter(|(_, r)| *r == ready)
                    .map(|(k, _)| addrs[k].clone())
                    .collect()
            };
            let mut s = json!({});
            let (ready, not_ready) = (pick(true), pick(false));
            if !ready.is_empty() {
                s["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                s["notReadyAddresses"] = json!(not_ready);
            }
            let ports: Vec<Value> = ports.into_iter().flatten().collect();
            if !ports.is_empty() {
                s["ports"] = json!(ports);
            }
            s
        })
        .collect()
}

fn port_sort_key(p: &Value) -> String {
    format!(
        "{}/{:>5}/{}",
        p["name"].as_str().unwrap_or(""),
        p["port"].as_i64().unwrap_or(0),
        p["protocol"].as_str().unwrap_or("")
    )
}

/// truncateEndpoints: true when over capacity (then `subsets` is cut to MAX_CAPACITY).
fn truncate(subsets: &mut [Value]) -> bool {
    let count = |s: &Value, f: &str| s[f].as_array().map_or(0, Vec::len);
    let ready: usize = subsets.iter().map(|s| count(s, "addresses")).sum();
    let not_ready: usize = subsets.iter().map(|s| count(s, "notReadyAddresses")).sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready {
        (MAX_CAPACITY, ready)
    } else {
        (MAX_CAPACITY - ready, not_ready)
    };
    let mut can_add = max;
    for s in subsets.iter_mut() {
        let field = if truncate_ready {
            "addresses"
        } else {
            "notReadyAddresses"
        };
        let n = count(s, field);
        let to_add = ((n as f64 / total as f64) * max as f64).ceil() as usize;
        let to_add = to_add.min(can_add);
        if let Some(a) = s[field].as_array_mut() {
            a.truncate(to_add);
        }
        if truncate_ready {
            s["notReadyAddresses"] = json!([]);
        }
        can_add -= count(s, field);
    }
    true
}

/// syncService for `ns/name`.
pub fn sync(api: &Api, ns: &str, name: &str) {
    let eps_info = api.info("", "endpoints");
    let ctx = Ctx::system(MANAGER);
    let Some(svc) = api.get_opt("", "services", ns, name) else {
        if api.get_opt("", "endpoints", ns, name).is_some() {
            let _ = api.delete(&eps_info, ns, name, &Default::default(), &ctx);
        }
        return;
    };
    if svc["spec"]["type"] == "ExternalName" || svc["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    let Some(selector) = svc["spec"]["selector"].as_object() else {
        return;
    };
    let publish = svc["spec"]["publishNotReadyAddresses"] == true;
    let headless = svc["spec"]["clusterIP"] == "None";
    let svc_ports: Vec<Value> = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let pods = api.info("", "pods");
    let filter = Filter {
        namespace: Some(ns.to_string()),
        ..Default::default()
    };
    let selected: Vec<Arc<Value>> = api
        .list(&pods, &filter)
        .0
        .into_iter()
        .filter(|p| selects(selector, &p["metadata"]["labels"]))
        .collect();
    sync_slices(api, &svc, &selected);
    let mut entries = Vec::new();
    for p in selected {
        if !should_be_in_endpoints(&p, publish) {
            continue;
        }
        let Some(a) = address(&p, &svc) else { continue };
        let ready = publish || pod_ready(&p);
        if svc_ports.is_empty() {
            if headless {
                entries.push((a, None, ready));
            }
            continue;
        }
        for sp in &svc_ports {
            if let Some(n) = find_port(&p, sp) {
                entries.push((a.clone(), Some(endpoint_port(sp, n)), ready));
            }
        }
    }
    let mut subsets = repack(entries);
    let mut labels = svc["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let current = api.get_opt("", "endpoints", ns, name);
    if let Some(cur) = &current {
        let mut cur_labels = cur["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        cur_labels.remove(HEADLESS);
        let cur_subsets = cur["subsets"].as_array().cloned().unwrap_or_default();
        let over = subsets.iter().map(count_all).sum::<usize>() > MAX_CAPACITY;
        let annotated = cur["metadata"]["annotations"][OVER_CAPACITY].is_string();
        if cur_subsets == subsets && cur_labels == labels && !over && !annotated {
            return;
        }
    }
    let truncated = truncate(&mut subsets);
    if headless {
        labels.insert(HEADLESS.into(), json!(""));
    }
    let mut annotations = current
        .as_ref()
        .and_then(|c| c["metadata"]["annotations"].as_object().cloned())
        .unwrap_or_default();
    annotations.insert(TRIGGER_TIME.into(), json!(crate::util::now()));
    if truncated {
        annotations.insert(OVER_CAPACITY.into(), json!("truncated"));
    } else {
        annotations.remove(OVER_CAPACITY);
    }
    match current {
        None => {
            let body = json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
                "subsets": subsets});
            let _ = api.create(&eps_info, ns, body, &ctx);
        }
        Some(_) => {
            let _ = api.modify(&eps_info, ns, name, None, MANAGER, &|o| {
                o["metadata"]["labels"] = json!(labels);
                o["metadata"]["annotations"] = json!(annotations);
                o["subsets"] = json!(subsets);
                true
            });
        }
    }
}

fn count_all(s: &Value) -> usize {
    let n = |f: &str| s[f].as_array().map_or(0, Vec::len);
    n("addresses") + n("notReadyAddresses")
}

/// The API server's Endpoints for Service `default/kubernetes` (its lease endpoint reconciler,
/// kubernetes/kubernetes@v1.33.0 pkg/controlplane/reconcilers/lease.go with
/// endpointsadapter.go): the control plane's advertise address and secure port as `https`.
pub fn bootstrap_kubernetes(api: &Api, layout: Layout, internal_endpoint: &str) {
    // the first control plane's IP; the port of the endpoint the nodes know (kind and
    // minikube name the host by DNS there)
    let host = layout.node_ip(0);
    let port: i64 = internal_endpoint
        .rsplit_once(':')
        .and_then(|(_, p)| p.trim_end_matches('/').parse().ok())
        .unwrap_or(6443);
    let body = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]});
    let _ = api.create(
        &api.info("", "endpoints"),
        "default",
        body,
        &Ctx::system("kube-apiserver"),
    );
    // and its EndpointSlice of the same name (endpointsadapter.go endpointSliceFromEndpoints)
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {LABEL_SERVICE: "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [host], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]});
    let _ = api.create(
        &api.info("discovery.k8s.io", "endpointslices"),
        "default",
        slice,
        &Ctx::system("kube-apiserver"),
    );
}

/// `--max-endpoints-per-slice` default (kube-controller-manager).
const MAX_PER_SLICE: usize = 100;
const SLICE_CONTROLLER: &str = "endpointslice-controller.k8s.io";
const LABEL_SERVICE: &str = "kubernetes.io/service-name";
const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";

/// The endpointslice controller's view of one pod (staging/src/k8s.io/endpointslice/utils.go
/// podToEndpoint, getEndpointPorts): its endpoint and the ports it offers.
fn slice_endpoint(api: &Api, p: &Value, svc: &Value) -> Option<(Value, Vec<Value>)> {
    let publish = svc["spec"]["publishNotReadyAddresses"] == true;
    // ShouldPodBeInEndpoints(pod, true): terminating pods stay, as not ready
    if !should_be_in_endpoints(p, true) {
        return None;
    }
    let addresses: Vec<&str> = p["status"]["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str())
        .filter(|i| !i.contains(':'))
        .collect();
    if addresses.is_empty() {
        return None;
    }
    let serving = pod_ready(p);
    let terminating = p["metadata"]["deletionTimestamp"].is_string();
    let ready = publish || (serving && !terminating);
    let mut ep = json!({"addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": p["metadata"]["namespace"],
            "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}});
    if let Some(n) = p["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        ep["nodeName"] = json!(n);
        let zone = api.get_opt("", "nodes", "", n).and_then(|node| {
            node["metadata"]["labels"]["topology.kubernetes.io/zone"]
                .as_str()
                .map(str::to_string)
        });
        if let Some(z) = zone.filter(|z| !z.is_empty()) {
            ep["zone"] = json!(z);
        }
    }
    let hostname = p["spec"]["hostname"].as_str().unwrap_or("");
    if !hostname.is_empty()
        && p["spec"]["subdomain"] == svc["metadata"]["name"]
        && p["metadata"]["namespace"] == svc["metadata"]["namespace"]
    {
        ep["hostname"] = json!(hostname);
    }
    let mut ports = Vec::new();
    let svc_ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    for sp in &svc_ports {
        if let Some(n) = find_port(p, sp) {
            let mut port = json!({"name": sp["name"].as_str().unwrap_or(""), "port": n,
                "protocol": sp["protocol"].as_str().unwrap_or("TCP")});
            if let Some(a) = sp["appProtocol"].as_str() {
                port["appProtocol"] = json!(a);
            }
            ports.push(port);
        }
    }
    Some((ep, ports))
}

/// The endpointslice controller's reconcile for a Service with a selector
/// (pkg/controller/endpointslice/endpointslice_controller.go syncService and
/// staging/src/k8s.io/endpointslice/reconciler.go): IPv4 slices named `<service>-<random>`,
/// owned by the Service, labelled with its labels, `kubernetes.io/service-name` and
/// `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`; the pods' endpoints
/// grouped by the ports they offer, at most 100 per slice; a placeholder slice without
/// endpoints when there are none. Not modelled: the reconciler's minimal-churn packing (here
/// slices are refilled in order), topology hints, IPv6.
fn sync_slices(api: &Api, svc: &Value, pods: &[Arc<Value>]) {
    let ns = svc["metadata"]["namespace"].as_str().unwrap_or("");
    let name = svc["metadata"]["name"].as_str().unwrap_or("");
    // the endpoints grouped by their ports
    let mut groups: BTreeMap<String, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for p in pods {
        if let Some((ep, ports)) = slice_endpoint(api, p, svc) {
            let key = serde_json::to_string(&ports).unwrap_or_default();
            let g = groups.entry(key).or_insert_with(|| (ports, Vec::new()));
            g.1.push(ep);
        }
    }
    let mut desired: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    for (_, (ports, mut eps)) in groups {
        eps.sort_by_key(|e| e["targetRef"]["uid"].as_str().unwrap_or("").to_string());
        for chunk in eps.chunks(MAX_PER_SLICE) {
            desired.push((ports.clone(), chunk.to_vec()));
        }
    }
    if desired.is_empty() {
        desired.push((Vec::new(), Vec::new()));
    }
    let mut labels = svc["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.retain(|k, _| k != LABEL_SERVICE && k != LABEL_MANAGED_BY && k != HEADLESS);
    if svc["spec"]["clusterIP"] == "None" || svc["spec"]["clusterIP"].as_str().is_none() {
        labels.insert(HEADLESS.into(), json!(""));
    }
    labels.insert(LABEL_SERVICE.into(), json!(name));
    labels.insert(LABEL_MANAGED_BY.into(), json!(SLICE_CONTROLLER));
    let info = api.info("discovery.k8s.io", "endpointslices");
    let filter = Filter {
        namespace: Some(ns.to_string()),
        label: crate::api::selector::LabelSelector::parse(&format!(
            "{LABEL_SERVICE}={name},{LABEL_MANAGED_BY}={SLICE_CONTROLLER}"
        ))
        .unwrap_or_default(),
        ..Default::default()
    };
    let mut existing = api.list(&info, &filter).0;
    existing.sort_by_key(|e| e["metadata"]["name"].as_str().unwrap_or("").to_string());
    let as_set = |v: &[(Vec<Value>, Vec<Value>)]| {
        let mut k: Vec<String> = v
            .iter()
            .map(|(p, e)| serde_json::to_string(&(p, e)).unwrap_or_default())
            .collect();
        k.sort();
        k
    };
    let have: Vec<(Vec<Value>, Vec<Value>)> = existing
        .iter()
        .map(|e| {
            let arr = |f: &str| e[f].as_array().cloned().unwrap_or_default();
            (arr("ports"), arr("endpoints"))
        })
        .collect();
    let labels_ok = existing
        .iter()
        .all(|e| e["metadata"]["labels"] == Value::Object(labels.clone()));
    if labels_ok && as_set(&have) == as_set(&desired) {
        return;
    }
    let ctx = Ctx::system(MANAGER);
    let now = crate::util::now();
    for (i, (ports, eps)) in desired.iter().enumerate() {
        match existing.get(i) {
            Some(cur) => {
                let cur_name = cur["metadata"]["name"].as_str().unwrap_or("").to_string();
                let _ = api.modify(&info, ns, &cur_name, None, MANAGER, &|o| {
                    o["metadata"]["labels"] = json!(labels);
                    o["metadata"]["annotations"][TRIGGER_TIME] = json!(now);
                    o["ports"] = json!(ports);
                    o["endpoints"] = json!(eps);
                    true
                });
            }
            None => {
                let body = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"generateName": format!("{name}-"), "namespace": ns,
                        "labels": labels, "annotations": {TRIGGER_TIME: now},
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name,
                            "uid": svc["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]},
                    "addressType": "IPv4", "ports": ports, "endpoints": eps});
                let _ = api.create(&info, ns, body, &ctx);
            }
        }
    }
    for extra in existing.iter().skip(desired.len()) {
        let n = extra["metadata"]["name"].as_str().unwrap_or("");
        let _ = api.delete(&info, ns, n, &Default::default(), &ctx);
    }
}
