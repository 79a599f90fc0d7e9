//! kube-controller-manager's endpoints controller as the sim runs it (src/endpoints.rs): each
//! test names the upstream source it holds the sim to (kubernetes/kubernetes@v1.33.0).

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};
use yurtsim::Layout;

fn eps_api(client: &kube::Client) -> Api<Endpoints> {
    Api::namespaced(client.clone(), "default")
}

/// The Endpoints `name` as JSON, once `ok` holds for it.
async fn endpoints_where(
    client: &kube::Client,
    name: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let api = eps_api(client);
    common::eventually(Duration::from_secs(20), what, || {
        let api = api.clone();
        let ok = &ok;
        async move {
            let e = api.get(name).await.ok()?;
            let v = serde_json::to_value(e).ok()?;
            ok(&v).then_some(v)
        }
    })
    .await
}

fn count(v: &Value, field: &str) -> usize {
    v["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s[field].as_array().map_or(0, Vec::len))
        .sum()
}

fn web(name: &str, image: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "web", "image": image,
            "ports": [{"name": "http", "containerPort": 8080}]}]}})
}

// pkg/controller/endpoint/endpoints_controller.go (syncService, addEndpointSubset),
// pkg/api/v1/pod/util.go (FindPort), pkg/api/v1/endpoints/util.go (RepackSubsets): ready pods
// under addresses with their pod as targetRef, the named target port resolved to the
// container's port, unready ones under notReadyAddresses, the Service's labels copied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_services_endpoints_follow_its_pods_readiness_and_ports() {
    let c = common::start(3, Layout::Kubeadm).await;
    c.sim.faults().never_ready("web:never");
    common::apply(
        &c.client,
        &[
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"}, "ports": [
                    {"name": "http", "port": 80, "targetPort": "http"},
                    {"name": "metrics", "port": 9090},
                    {"name": "missing", "port": 81, "targetPort": "nope"}]}}),
            web("web-a", "web:1", json!({"app": "web"})),
            web("web-b", "web:never", json!({"app": "web"})),
            web("other", "web:1", json!({"app": "other"})),
        ],
    )
    .await;
    let v = endpoints_where(&c.client, "web", "one ready, one unready address", |v| {
        count(v, "addresses") == 1 && count(v, "notReadyAddresses") == 1
    })
    .await;
    assert_eq!(v["metadata"]["labels"], json!({"tier": "front"}), "{v:#}");
    let subsets = v["subsets"].as_array().unwrap();
    assert_eq!(subsets.len(), 1, "both pods offer the same ports: {v:#}");
    let s = &subsets[0];
    let mut ports: Vec<(String, i64)> = s["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["port"].as_i64().unwrap(),
            )
        })
        .collect();
    ports.sort();
    // the unresolvable named port is left out; the numbered one is taken as is
    assert_eq!(
        ports,
        [("http".to_string(), 8080), ("metrics".to_string(), 9090)]
    );
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let a = pods.get("web-a").await.unwrap();
    let st = a.status.unwrap();
    let ready = &s["addresses"][0];
    assert_eq!(ready["ip"], json!(st.pod_ip.unwrap()));
    assert_eq!(ready["nodeName"], json!(a.spec.unwrap().node_name.unwrap()));
    assert_eq!(
        ready["targetRef"],
        json!({"kind": "Pod", "namespace": "default", "name": "web-a", "uid": a.metadata.uid.unwrap()})
    );
    assert_eq!(s["notReadyAddresses"][0]["targetRef"]["name"], "web-b");

    // a pod that leaves the selector leaves the Endpoints
    pods.patch(
        "web-a",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"app": "gone"}}})),
    )
    .await
    .unwrap();
    let v = endpoints_where(&c.client, "web", "no ready address left", |v| {
        count(v, "addresses") == 0 && count(v, "notReadyAddresses") == 1
    })
    .await;
    assert!(v["subsets"][0]["addresses"].is_null(), "{v:#}");

    // publishNotReadyAddresses lists the unready pod as ready
    let svcs: Api<Service> = Api::namespaced(c.client.clone(), "default");
    svcs.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"publishNotReadyAddresses": true}})),
    )
    .await
    .unwrap();
    endpoints_where(&c.client, "web", "the unready pod published", |v| {
        count(v, "addresses") == 1 && count(v, "notReadyAddresses") == 0
    })
    .await;

    // the Service gone, its Endpoints go too
    svcs.delete("web", &DeleteParams::default()).await.unwrap();
    let api = eps_api(&c.client);
    common::eventually(Duration::from_secs(20), "the Endpoints deleted", || {
        let api = api.clone();
        async move { api.get("web").await.is_err().then_some(()) }
    })
    .await;
    c.sim.shutdown().await;
}

// endpoints_controller.go (syncService: "services without a selector receive no endpoints
// from this controller"; a headless Service gets the headless label) and the API server's
// own Endpoints for default/kubernetes (pkg/controlplane/reconcilers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_without_a_selector_get_no_endpoints_and_headless_ones_are_labelled() {
    let c = common::start(2, Layout::Kubeadm).await;
    common::apply(
        &c.client,
        &[
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual", "namespace": "default"},
                "spec": {"ports": [{"port": 80}]}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default"},
                "spec": {"clusterIP": "None", "selector": {"app": "db"}}}),
            web("db-0", "db:1", json!({"app": "db"})),
        ],
    )
    .await;
    let v = endpoints_where(&c.client, "db", "the headless Service's pod", |v| {
        count(v, "addresses") == 1
    })
    .await;
    assert_eq!(
        v["metadata"]["labels"]["service.kubernetes.io/headless"], "",
        "{v:#}"
    );
    assert!(v["subsets"][0]["ports"].is_null(), "{v:#}");
    let k = endpoints_where(&c.client, "kubernetes", "the API server's", |_| true).await;
    assert_eq!(k["subsets"][0]["ports"][0]["name"], "https", "{k:#}");
    assert_eq!(k["subsets"][0]["ports"][0]["port"], 6443, "{k:#}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(eps_api(&c.client).get("manual").await.is_err());
    c.sim.shutdown().await;
}

// kubernetes/kubernetes@v1.33.0 pkg/controller/endpointslice/endpointslice_controller.go and
// staging/src/k8s.io/endpointslice (reconciler.go, utils.go podToEndpoint, getEndpointPorts,
// setEndpointSliceLabels): an IPv4 slice owned by the Service, with its labels, service-name
// and managed-by, one endpoint per pod with ready/serving/terminating, the resolved ports; a
// placeholder slice without endpoints when no pod is selected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_services_endpoint_slice_lists_its_pods_with_their_conditions() {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let c = common::start(2, Layout::Kubeadm).await;
    c.sim.faults().never_ready("web:never");
    common::apply(
        &c.client,
        &[
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty", "namespace": "default"},
                "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}}),
            web("web-a", "web:1", json!({"app": "web"})),
            web("web-b", "web:never", json!({"app": "web"})),
        ],
    )
    .await;
    let slices: Api<EndpointSlice> = Api::namespaced(c.client.clone(), "default");
    let list = |svc: &'static str| {
        let slices = slices.clone();
        async move {
            slices
                .list(&kube::api::ListParams::default().labels(&format!(
                    "kubernetes.io/service-name={svc},endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io"
                )))
                .await
                .unwrap()
                .items
        }
    };
    let s = common::eventually(
        Duration::from_secs(20),
        "web's slice with both pods",
        || async {
            let items = list("web").await;
            (items.len() == 1 && items[0].endpoints.len() == 2).then(|| items[0].clone())
        },
    )
    .await;
    assert_eq!(s.address_type, "IPv4");
    assert!(s.metadata.name.as_deref().unwrap().starts_with("web-"));
    assert_eq!(s.metadata.labels.as_ref().unwrap()["tier"], "front");
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );
    let port = &s.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("http"), Some(8080))
    );
    for e in &s.endpoints {
        let name = e.target_ref.as_ref().unwrap().name.clone().unwrap();
        let cond = &e.conditions.as_ref().unwrap();
        let ready = name == "web-a";
        assert_eq!(cond.ready, Some(ready), "{name}");
        assert_eq!(cond.serving, Some(ready), "{name}");
        assert_eq!(cond.terminating, Some(false), "{name}");
        assert!(e.node_name.is_some(), "{name}");
    }
    let placeholder = common::eventually(Duration::from_secs(20), "the placeholder", || async {
        list("empty").await.into_iter().next()
    })
    .await;
    assert!(placeholder.endpoints.is_empty());
    // a deleted slice is put back
    slices
        .delete(s.metadata.name.as_deref().unwrap(), &Default::default())
        .await
        .unwrap();
    common::eventually(Duration::from_secs(20), "the slice back", || async {
        let items = list("web").await;
        (items.len() == 1 && items[0].endpoints.len() == 2).then_some(())
    })
    .await;
    let k = slices.get("kubernetes").await.unwrap();
    assert_eq!(k.ports.unwrap()[0].port, Some(6443));
    c.sim.shutdown().await;
}
