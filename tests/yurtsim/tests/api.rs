//! The API behaves like kube-apiserver where clients notice: conflicts, AlreadyExists,
//! generateName, selectors, watch resumption and 410, dry run, SSA ownership, Status bodies.

mod common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::Status;
use serde_json::json;
use yurtsim::Layout;

fn api_err(e: kube::Error) -> Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_update_conflict_and_already_exists() {
    let c = common::start(2, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("a", json!({"app": "x"})))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());

    let dup = api_err(
        cms.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"a\" already exists");

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data.as_mut().unwrap().insert("k".into(), "v2".into());
    cms.replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    stale.data.as_mut().unwrap().insert("k".into(), "v3".into());
    let conflict = api_err(
        cms.replace("a", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert!(
        conflict.message.contains("the object has been modified"),
        "{}",
        conflict.message
    );

    let missing = api_err(cms.get("nope").await.unwrap_err());
    assert_eq!(
        (
            missing.code,
            missing.reason.as_str(),
            missing.message.as_str()
        ),
        (404, "NotFound", "configmaps \"nope\" not found")
    );

    let generated: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let g = cms
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = g.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    let in_missing_ns: Api<ConfigMap> = Api::namespaced(c.client.clone(), "no-such-ns");
    let e = api_err(
        in_missing_ns
            .create(&PostParams::default(), &cm("b", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "namespaces \"no-such-ns\" not found")
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_and_field_selectors() {
    let c = common::start(3, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    for (n, l) in [
        ("a", json!({"app": "x", "tier": "web"})),
        ("b", json!({"app": "y"})),
        ("c", json!({})),
    ] {
        cms.create(&PostParams::default(), &cm(n, l)).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        let mut v: Vec<String> = l
            .items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .filter(|n| n != "kube-root-ca.crt")
            .collect();
        v.sort();
        v
    };
    for (sel, want) in [
        ("app=x", vec!["a"]),
        ("app!=x", vec!["b", "c"]),
        ("app in (x,y)", vec!["a", "b"]),
        ("app notin (x)", vec!["b", "c"]),
        ("tier", vec!["a"]),
        ("!app", vec!["c"]),
    ] {
        let got = names(cms.list(&ListParams::default().labels(sel)).await.unwrap());
        assert_eq!(got, want, "selector {sel}");
    }
    let got = names(
        cms.list(&ListParams::default().fields("metadata.name=b"))
            .await
            .unwrap(),
    );
    assert_eq!(got, vec!["b"]);
    let bad = api_err(
        cms.list(&ListParams::default().fields("data.k=v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (bad.code, bad.message.as_str()),
        (400, "field label not supported: data.k")
    );
    let bad = api_err(
        cms.list(&ListParams::default().labels("app in ("))
            .await
            .unwrap_err(),
    );
    assert_eq!(bad.code, 400);

    let nodes: Api<Node> = Api::all(c.client.clone());
    let workers = nodes
        .list(&ListParams::default().labels("!node-role.kubernetes.io/control-plane"))
        .await
        .unwrap();
    assert_eq!(workers.items.len(), 2);
    let pods: Api<Pod> = Api::all(c.client.clone());
    let on_cp = pods
        .list(&ListParams::default().fields("spec.nodeName=control-plane-1"))
        .await
        .unwrap();
    assert!(
        on_cp
            .items
            .iter()
            .all(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some("control-plane-1"))
    );
    assert!(
        on_cp
            .items
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some("kube-controller-manager-control-plane-1"))
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paginated_lists_visit_every_item_once() {
    let c = common::start(1, Layout::Kind).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    for i in 0..25 {
        cms.create(
            &PostParams::default(),
            &cm(&format!("p{i:02}"), json!({"page": "yes"})),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut lp = ListParams::default().labels("page=yes").limit(10);
    loop {
        let page = cms.list(&lp).await.unwrap();
        seen.extend(page.items.into_iter().map(|o| o.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => lp = lp.continue_token(&t),
            _ => break,
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("p{i:02}")).collect();
    assert_eq!(seen, want);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_from_revision_and_expired_revisions_get_410() {
    let c = common::start(1, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("w1", json!({"w": "1"})))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();
    cms.create(&PostParams::default(), &cm("w2", json!({"w": "1"})))
        .await
        .unwrap();
    cms.delete("w1", &DeleteParams::default()).await.unwrap();

    // Resuming from the first object's revision replays exactly what happened after it.
    let mut stream = cms
        .watch(&WatchParams::default().labels("w=1"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut got = Vec::new();
    while got.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(o) => got.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => got.push(format!("DELETED {}", o.metadata.name.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(got, vec!["ADDED w2", "DELETED w1"]);

    // After compaction the old revision is gone. Like kube-apiserver, the watch is accepted and
    // its first event is a 410 Expired Status (the form watchers re-list on).
    c.sim.api().store.compact();
    let stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("the watch itself is accepted");
    let gone = match stream.boxed().try_next().await {
        Ok(Some(WatchEvent::Error(e))) => *e,
        other => panic!("expected an ERROR event, got {other:?}"),
    };
    assert_eq!(
        (gone.code, gone.reason.as_str()),
        (410, "Expired"),
        "{gone:?}"
    );
    assert!(
        gone.message.starts_with("too old resource version"),
        "{}",
        gone.message
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_tracks_owners_and_reports_conflicts() {
    let c = common::start(1, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "labels": {"a": "1", "b": "2"}}, "data": {"k": "1"}});
    cms.patch("ssa", &PatchParams::apply("yurtctl"), &Patch::Apply(&cfg))
        .await
        .unwrap();
    // Another manager changes a field yurtctl owns.
    cms.patch(
        "ssa",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    let err = api_err(
        cms.patch("ssa", &PatchParams::apply("yurtctl"), &Patch::Apply(&cfg))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .starts_with("Apply failed with 1 conflict: conflict with"),
        "{}",
        err.message
    );
    assert!(err.message.ends_with(".data.k"), "{}", err.message);
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldManagerConflict", ".data.k")
    );
    // Forcing takes ownership back; dropping a label from the applied config removes it.
    let cfg2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "labels": {"a": "1"}}, "data": {"k": "1"}});
    let out = cms
        .patch(
            "ssa",
            &PatchParams::apply("yurtctl").force(),
            &Patch::Apply(&cfg2),
        )
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "1");
    assert_eq!(out.metadata.labels.unwrap().len(), 1);
    // Re-applying the same config is a no-op: no new revision.
    let rv = cms.get("ssa").await.unwrap().metadata.resource_version;
    cms.patch("ssa", &PatchParams::apply("yurtctl"), &Patch::Apply(&cfg2))
        .await
        .unwrap();
    assert_eq!(cms.get("ssa").await.unwrap().metadata.resource_version, rv);
    // Apply creates when absent.
    let created = cms.patch("new", &PatchParams::apply("yurtctl"), &Patch::Apply(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}, "data": {"x": "1"}}))).await.unwrap();
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(
        (
            mf.len(),
            mf[0].manager.as_deref(),
            mf[0].operation.as_deref()
        ),
        (1, Some("yurtctl"), Some("Apply"))
    );
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_writes_nothing_and_injected_faults_answer_with_status() {
    let c = common::start(1, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let out = cms
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &cm("dry", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("dry"));
    assert_eq!(api_err(cms.get("dry").await.unwrap_err()).code, 404);

    c.sim.faults().add(yurtsim::faults::RequestFault {
        verb: "create".into(),
        resource: "configmaps".into(),
        count: 1,
        status: 500,
        delay_ms: 0,
        message: None,
        probability: None,
        after: false,
    });
    let e = api_err(
        cms.create(&PostParams::default(), &cm("f", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    cms.create(&PostParams::default(), &cm("f", json!({})))
        .await
        .expect("the fault was for one request only");
    let m = c.sim.metrics();
    assert_eq!(m.count("create", "configmaps"), 3);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_job_orphans_its_pods_by_default_as_batch_v1_does() {
    use k8s_openapi::api::batch::v1::Job;
    use kube::api::PropagationPolicy;
    let c = common::start(2, Layout::Kubeadm).await;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let job = |name: &str| -> Job {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "30"]}]}}}})).unwrap()
    };
    let pods_of = |name: &'static str| {
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().labels(&format!("job-name={name}")))
                .await
                .unwrap()
                .items
        }
    };
    jobs.create(&PostParams::default(), &job("orphaning"))
        .await
        .unwrap();
    jobs.create(&PostParams::default(), &job("cascading"))
        .await
        .unwrap();
    common::eventually(Duration::from_secs(10), "job pods", || async {
        (pods_of("orphaning").await.len() == 1 && pods_of("cascading").await.len() == 1)
            .then_some(())
    })
    .await;

    jobs.delete("orphaning", &DeleteParams::default())
        .await
        .unwrap();
    let orphan = pods_of("orphaning").await;
    assert_eq!(orphan.len(), 1, "the pod survives its Job");
    assert!(
        orphan[0]
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty()),
        "and is released"
    );

    jobs.delete(
        "cascading",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    common::eventually(
        Duration::from_secs(10),
        "background deletion of the pod",
        || async {
            pods_of("cascading")
                .await
                .iter()
                .all(|p| p.metadata.deletion_timestamp.is_some())
                .then_some(())
        },
    )
    .await;
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_serves_its_resource_until_deleted() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    let c = common::start(1, Layout::Kubeadm).await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "nodepools.apps.openyurt.io"},
        "spec": {"group": "apps.openyurt.io", "scope": "Cluster",
            "names": {"plural": "nodepools", "singular": "nodepool", "kind": "NodePool", "shortNames": ["np"]},
            "versions": [{"name": "v1beta2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}}]}})).unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = created
        .status
        .unwrap()
        .conditions
        .unwrap()
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    assert!(established);
    let gvk = GroupVersionKind::gvk("apps.openyurt.io", "v1beta2", "NodePool");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "nodepools");
    let pools: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
    let pool: DynamicObject = serde_json::from_value(json!({"apiVersion": "apps.openyurt.io/v1beta2", "kind": "NodePool", "metadata": {"name": "hangzhou"}, "spec": {"type": "Edge"}})).unwrap();
    pools.create(&PostParams::default(), &pool).await.unwrap();
    assert_eq!(
        pools
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // Strategic merge is not available for custom resources, as on a real apiserver.
    let e = api_err(
        pools
            .patch(
                "hangzhou",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {"type": "Cloud"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 415);
    crds.delete("nodepools.apps.openyurt.io", &DeleteParams::default())
        .await
        .unwrap();
    let gone = pools.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_err(gone).code, 404, "the resource is no longer served");
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_verbs_are_forbidden_and_self_subject_access_review_says_so() {
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let c = common::start(1, Layout::Kubeadm).await;
    c.sim.faults().deny("create", "jobs.batch");
    let reviews: Api<SelfSubjectAccessReview> = Api::all(c.client.clone());
    let ask = |verb: &str| -> SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes": {"verb": verb, "group": "batch", "resource": "jobs", "namespace": "kube-system"}}})).unwrap()
    };
    let denied = reviews
        .create(&PostParams::default(), &ask("create"))
        .await
        .unwrap();
    assert!(!denied.status.unwrap().allowed);
    let allowed = reviews
        .create(&PostParams::default(), &ask("list"))
        .await
        .unwrap();
    assert!(allowed.status.unwrap().allowed);
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(c.client.clone(), "kube-system");
    let job = serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    let e = api_err(jobs.create(&PostParams::default(), &job).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(e.message.contains("cannot create resource \"jobs\" in API group \"batch\" in the namespace \"kube-system\""), "{}", e.message);
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_arrive_and_dropped_watches_end_the_stream() {
    let c = common::start_with(1, Layout::Kubeadm, |cfg| {
        cfg.bookmark_interval = Duration::from_millis(200)
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms
        .watch(
            &WatchParams {
                bookmarks: true,
                ..Default::default()
            },
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Bookmark(_)), "{ev:?}");
    assert!(c.sim.api().store.drop_watches() >= 1);
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.try_next().await {
                Ok(Some(WatchEvent::Bookmark(_))) => continue,
                other => return other.map(|o| o.is_none()).unwrap_or(true),
            }
        }
    })
    .await
    .unwrap();
    assert!(end, "the stream ends after the watches are dropped");
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_tokens_sign_cluster_info_and_expire() {
    use k8s_openapi::api::core::v1::Secret;
    let c = common::start(1, Layout::Kubeadm).await;
    let secrets: Api<Secret> = Api::namespaced(c.client.clone(), "kube-system");
    let info: Api<ConfigMap> = Api::namespaced(c.client.clone(), "kube-public");
    let expiry = yurtsim::util::rfc3339(std::time::SystemTime::now() + Duration::from_secs(2));
    let token: Secret = serde_json::from_value(json!({"metadata": {"name": "bootstrap-token-abcdef"}, "type": "bootstrap.kubernetes.io/token",
        "stringData": {"token-id": "abcdef", "token-secret": "0123456789abcdef", "expiration": expiry,
            "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true"}})).unwrap();
    secrets
        .create(&PostParams::default(), &token)
        .await
        .unwrap();
    common::eventually(
        Duration::from_secs(5),
        "cluster-info signed for the token",
        || async {
            info.get("cluster-info")
                .await
                .ok()?
                .data?
                .contains_key("jws-kubeconfig-abcdef")
                .then_some(())
        },
    )
    .await;
    common::eventually(
        Duration::from_secs(10),
        "the expired token deleted and its signature gone",
        || async {
            let gone = secrets.get("bootstrap-token-abcdef").await.is_err();
            let unsigned = !info
                .get("cluster-info")
                .await
                .ok()?
                .data?
                .contains_key("jws-kubeconfig-abcdef");
            (gone && unsigned).then_some(())
        },
    )
    .await;
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_without_ready_endpoints_refuse_matching_writes_when_they_must() {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Service;
    let c = common::start(2, Layout::Kubeadm).await;
    let hooks: Api<ValidatingWebhookConfiguration> = Api::all(c.client.clone());
    let hook = |policy: &str| -> ValidatingWebhookConfiguration {
        serde_json::from_value(json!({"metadata": {"name": format!("guard-{}", policy.to_lowercase())}, "webhooks": [{
            "name": format!("{}.guard.example.io", policy.to_lowercase()), "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": policy,
            "clientConfig": {"service": {"name": "guard", "namespace": "kube-system", "path": "/validate"}},
            "objectSelector": {"matchLabels": {"guarded": policy.to_lowercase()}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]}]})).unwrap()
    };
    hooks
        .create(&PostParams::default(), &hook("Fail"))
        .await
        .unwrap();
    hooks
        .create(&PostParams::default(), &hook("Ignore"))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let e = api_err(
        cms.create(&PostParams::default(), &cm("a", json!({"guarded": "fail"})))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 500);
    assert!(
        e.message
            .contains("failed calling webhook \"fail.guard.example.io\"")
            && e.message.contains("service \"guard\" not found"),
        "{}",
        e.message
    );
    cms.create(
        &PostParams::default(),
        &cm("b", json!({"guarded": "ignore"})),
    )
    .await
    .expect("Ignore lets it through");
    cms.create(&PostParams::default(), &cm("c", json!({})))
        .await
        .expect("objects outside the selector are not sent");

    let svcs: Api<Service> = Api::namespaced(c.client.clone(), "kube-system");
    svcs.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "guard"}, "spec": {"selector": {"app": "guard"}, "ports": [{"port": 443, "targetPort": 9443}]}})).unwrap()).await.unwrap();
    let e = api_err(
        cms.create(&PostParams::default(), &cm("a", json!({"guarded": "fail"})))
            .await
            .unwrap_err(),
    );
    assert!(
        e.message
            .contains("no endpoints available for service \"guard\""),
        "{}",
        e.message
    );
    let deploys: Api<Deployment> = Api::namespaced(c.client.clone(), "kube-system");
    deploys.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "guard"}, "spec": {"selector": {"matchLabels": {"app": "guard"}},
        "template": {"metadata": {"labels": {"app": "guard"}}, "spec": {"containers": [{"name": "guard", "image": "example.io/guard:v1"}]}}}})).unwrap()).await.unwrap();
    common::eventually(
        Duration::from_secs(10),
        "the webhook's pod to be ready and the write admitted",
        || async {
            cms.create(&PostParams::default(), &cm("a", json!({"guarded": "fail"})))
                .await
                .ok()
        },
    )
    .await;
    c.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_maps_over_one_mib_are_refused_as_the_api_server_does() {
    let c = common::start(1, Layout::Kubeadm).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.client.clone(), "default");
    let with = |name: &str, bytes: usize| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name},
            "data": {"k": "x".repeat(bytes)}}))
        .unwrap()
    };
    // key "k" plus the value: exactly 1 MiB is allowed, one byte more is not
    let max = yurtsim::api::kinds::MAX_CONFIG_SIZE;
    cms.create(&PostParams::default(), &with("fits", max - 1))
        .await
        .unwrap();
    let e = api_err(
        cms.create(&PostParams::default(), &with("too-big", max))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert!(
        e.message.contains("must have at most 1048576 bytes"),
        "{e:?}"
    );
    // growing an existing one past the limit is refused too, and nothing is stored
    let grown = api_err(
        cms.replace("fits", &PostParams::default(), &with("fits", max + 10))
            .await
            .unwrap_err(),
    );
    assert_eq!(grown.code, 422);
    assert_eq!(
        cms.get("fits").await.unwrap().data.unwrap()["k"].len(),
        max - 1
    );
}

/// ServiceAccount admission leaves mirror pods alone (no token volume, which would make the
/// spec differ from the manifest) and refuses one that names a ServiceAccount
/// (kubernetes/kubernetes plugin/pkg/admission/serviceaccount/admission.go, Admit/Validate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_pods_get_no_service_account_token() {
    let c = common::start(1, Layout::Kubeadm).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let pod = |name: &str, mirror: bool, sa: Option<&str>| -> Pod {
        let mut p = json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        if mirror {
            p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc",
                "kubernetes.io/config.source": "file"});
        }
        if let Some(sa) = sa {
            p["spec"]["serviceAccountName"] = json!(sa);
        }
        serde_json::from_value(p).unwrap()
    };
    let mounts = |p: &Pod| {
        p.spec.as_ref().unwrap().containers[0]
            .volume_mounts
            .clone()
            .unwrap_or_default()
            .len()
    };
    let plain = pods
        .create(&PostParams::default(), &pod("plain", false, None))
        .await
        .unwrap();
    assert_eq!(mounts(&plain), 1, "a plain pod gets the token");
    let mirror = pods
        .create(&PostParams::default(), &pod("mirror", true, None))
        .await
        .unwrap();
    assert_eq!(mounts(&mirror), 0);
    assert!(mirror.spec.unwrap().service_account_name.is_none());
    let e = api_err(
        pods.create(&PostParams::default(), &pod("named", true, Some("default")))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message
            .contains("a mirror pod may not reference service accounts"),
        "{e:?}"
    );
    let mut with_secret = pod("secret", true, None);
    with_secret.spec.as_mut().unwrap().volumes = Some(vec![
        serde_json::from_value(json!({"name": "s", "secret": {"secretName": "x"}})).unwrap(),
    ]);
    let e = api_err(
        pods.create(&PostParams::default(), &with_secret)
            .await
            .unwrap_err(),
    );
    assert!(
        e.message.contains("a mirror pod may not reference secrets"),
        "{e:?}"
    );
}
