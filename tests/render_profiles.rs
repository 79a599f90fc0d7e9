//! The render layer: both profiles rendered with a fixed context (1 control plane + 2 workers),
//! snapshots of every object and of the node manifests, and table-driven checks of the facts
//! the profiles must get right.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};
use yurtctl::render::{
    self, BootstrapTokenRef, NodeContext, Profile, RenderContext, RenderError, RenderedObject,
    TokenSecret, WorkingMode,
};

const TOKEN_ID: &str = "abcdef";
const TOKEN_SECRET: &str = "0123456789abcdef";
const EXPIRY: &str = "2026-01-02T03:04:05Z";
const API: &str = "https://192.168.0.10:6443";
/// tests/fixtures/cluster-ca.crt, base64 (YurtHub v1.7's unit pins it by hash).
fn ca() -> String {
    yurtctl::render::base64(include_str!("fixtures/cluster-ca.crt").as_bytes())
}

fn profile(name: &str) -> Profile {
    Profile::load(name).unwrap_or_else(|e| panic!("{e}"))
}

/// 1 control plane + 2 workers; every feature flag of the profile on.
fn context(p: &Profile) -> RenderContext {
    let token = BootstrapTokenRef::new(TOKEN_ID, EXPIRY).unwrap();
    let mut ctx = RenderContext::new(p, API, ca(), token, TokenSecret::new(TOKEN_SECRET).unwrap());
    ctx.cloud_nodes = vec!["control-plane".into()];
    ctx.edge_nodes = vec!["worker-1".into(), "worker-2".into()];
    ctx.features = p.flags().into_iter().map(str::to_owned).collect();
    // fixed, so snapshots do not change with the crate version
    ctx.servant_image = "openyurt/yurtctl-servant:v0.0.0-test".into();
    ctx.images
        .insert("servant".into(), ctx.servant_image.clone());
    if p.name == "legacy-v0.6" {
        ctx.tunnel_server_address = Some("203.0.113.7".into());
    }
    if p.node_pools.is_some() {
        ctx.node_pools = [("cloud", "Cloud"), ("zone-a", "Edge")]
            .map(|(name, t)| render::NodePoolRef {
                name: name.into(),
                pool_type: t.into(),
            })
            .to_vec();
    }
    ctx
}

fn render_all(name: &str) -> (Profile, Vec<RenderedObject>) {
    let p = profile(name);
    let ctx = context(&p);
    let objs = render::render_cluster_objects(&p, &ctx).unwrap_or_else(|e| panic!("{e}"));
    (p, objs)
}

const PROFILES: &[&str] = &["openyurt-v1.7", "openyurt-v1.6", "legacy-v0.6"];

#[test]
fn every_template_file_is_embedded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut on_disk = BTreeSet::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap();
        assert!(dir.file_type().unwrap().is_dir(), "{:?}", dir.path());
        for f in std::fs::read_dir(dir.path()).unwrap() {
            let f = f.unwrap();
            on_disk.insert(format!(
                "{}/{}",
                dir.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            ));
        }
    }
    let embedded: BTreeSet<String> = render::embedded_files().map(str::to_owned).collect();
    assert_eq!(on_disk, embedded, "src/render/embedded.rs is out of date");
    // and every .hbs file is used by its profile
    for name in PROFILES {
        let p = profile(name);
        let used: BTreeSet<String> = p
            .components
            .iter()
            .flat_map(|c| c.templates.iter().cloned())
            .chain(p.yurthub.static_pod().map(|s| s.node_template.clone()))
            .map(|t| format!("{name}/{t}"))
            .collect();
        let hbs: BTreeSet<String> = embedded
            .iter()
            .filter(|f| f.starts_with(&format!("{name}/")) && f.ends_with(".hbs"))
            .cloned()
            .collect();
        assert_eq!(hbs, used, "{name}: unused or undeclared templates");
    }
}

#[test]
fn profiles_load_and_unknown_names_list_the_valid_ones() {
    assert_eq!(
        Profile::names(),
        vec!["legacy-v0.6", "openyurt-v1.6", "openyurt-v1.7"]
    );
    assert_eq!(profile(Profile::DEFAULT).name, "openyurt-v1.7");
    match Profile::load("openyurt-v9") {
        Err(e @ RenderError::UnknownProfile { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("openyurt-v9"), "{msg}");
            assert!(msg.contains("legacy-v0.6, openyurt-v1.6"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn profile_declarations() {
    struct Row {
        name: &'static str,
        openyurt: &'static str,
        k8s: (u32, u32),
        certified_max: u32,
        disable_nodelifecycle: bool,
        mode: render::YurtHubMode,
        credential: render::YurtHubCredential,
        manifest: Option<&'static str>,
        autonomy: (&'static str, &'static str),
        flags: &'static [&'static str],
    }
    let rows = [
        Row {
            name: "openyurt-v1.7",
            openyurt: "v1.7.0",
            k8s: (31, 37),
            certified_max: 34,
            disable_nodelifecycle: false,
            mode: render::YurtHubMode::Systemd,
            credential: render::YurtHubCredential::BootstrapFile,
            manifest: None,
            autonomy: ("node.openyurt.io/autonomy-duration", "0"),
            flags: &[],
        },
        Row {
            name: "openyurt-v1.6",
            openyurt: "v1.6.1",
            k8s: (21, 37),
            certified_max: 30,
            disable_nodelifecycle: false,
            mode: render::YurtHubMode::YurtStaticSet,
            credential: render::YurtHubCredential::BootstrapFile,
            manifest: Some("yurthub.yaml"),
            autonomy: ("node.openyurt.io/autonomy-duration", "0"),
            flags: &[],
        },
        Row {
            name: "legacy-v0.6",
            openyurt: "v0.6.1",
            k8s: (16, 21),
            certified_max: 21,
            disable_nodelifecycle: true,
            mode: render::YurtHubMode::StaticPod,
            credential: render::YurtHubCredential::JoinToken,
            manifest: Some("yurt-hub.yaml"),
            autonomy: ("node.beta.openyurt.io/autonomy", "true"),
            flags: &["deploy-yurttunnel", "enable-app-manager"],
        },
    ];
    for r in rows {
        let p = profile(r.name);
        assert_eq!(p.openyurt_version, r.openyurt, "{}", r.name);
        assert_eq!((p.kubernetes.min_minor, p.kubernetes.max_minor), r.k8s);
        assert_eq!(p.certified_max_minor(), r.certified_max, "{}", r.name);
        assert!(p.supports_minor(r.k8s.0) && p.supports_minor(r.k8s.1));
        assert!(!p.supports_minor(r.k8s.0 - 1) && !p.supports_minor(r.k8s.1 + 1));
        assert_eq!(
            p.disable_node_lifecycle, r.disable_nodelifecycle,
            "{}",
            r.name
        );
        assert_eq!(p.yurthub.mode(), r.mode);
        assert_eq!(p.yurthub.credential(), r.credential);
        assert_eq!(
            p.yurthub.static_pod().map(|s| s.manifest_file.as_str()),
            r.manifest
        );
        assert_eq!(p.labels.edge_worker.key, "openyurt.io/is-edge-worker");
        assert_eq!(
            (
                p.labels.autonomy.key.as_str(),
                p.labels.autonomy.value.as_str()
            ),
            r.autonomy
        );
        assert_eq!(p.flags().into_iter().collect::<Vec<_>>(), r.flags);
        let minor = r.openyurt.rsplit_once('.').unwrap().0;
        for (id, image) in &p.images {
            let tag = image.rsplit_once(':').unwrap().1;
            assert_ne!(tag, "latest", "{id}");
            if id == "servant" {
                assert_eq!(
                    image,
                    &format!("openyurt/yurtctl-servant:{}", env!("CARGO_PKG_VERSION"))
                );
            } else if id != "yurt-app-manager" {
                // yurt-app-manager has its own release line (v0.4.0 with OpenYurt v0.6)
                assert!(tag.starts_with(minor), "{id} = {image} not from {minor}");
            }
        }
    }
}

/// Snapshots: every object, grouped by template, Secret values redacted.
#[test]
fn snapshots_of_every_rendered_object() {
    for name in PROFILES {
        let (_, objs) = render_all(name);
        let mut by_template: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for o in render::redact(&objs) {
            by_template
                .entry(o.template.clone())
                .or_default()
                .push(o.to_value());
        }
        for (t, values) in by_template {
            let snap = format!("{name}__{}", t.trim_end_matches(".yaml.hbs"));
            insta::assert_yaml_snapshot!(snap, values);
        }
    }
}

#[test]
fn snapshots_of_node_manifests() {
    for name in PROFILES {
        let p = profile(name);
        if p.yurthub.static_pod().is_none() {
            continue;
        }
        let ctx = context(&p);
        for (node, mode) in [
            ("worker-1", WorkingMode::Edge),
            ("control-plane", WorkingMode::Cloud),
        ] {
            let n = NodeContext::new(&p, &ctx, node, mode);
            let yaml = render::render_node_manifest(&p, &ctx, &n).unwrap_or_else(|e| panic!("{e}"));
            insta::assert_snapshot!(format!("{name}__node_{}", mode.as_str()), yaml);
            assert!(!yaml.contains(TOKEN_SECRET));
            let pod: k8s_openapi::api::core::v1::Pod = serde_saphyr::from_str(&yaml).unwrap();
            assert_eq!(pod.metadata.name.as_deref(), p.yurthub_pod_name(mode));
        }
    }
}

#[test]
fn v16_static_sets_template_the_node_manifest_and_leave_the_config_maps_to_yurt_manager() {
    let (p, objs) = render_all("openyurt-v1.6");
    let ctx = context(&p);
    for (mode, yss) in [
        (WorkingMode::Edge, "yurt-hub"),
        (WorkingMode::Cloud, "yurt-hub-cloud"),
    ] {
        let n = NodeContext::new(&p, &ctx, "worker-1", mode);
        let yaml = render::render_node_manifest(&p, &ctx, &n).unwrap();
        assert!(yaml.contains("--bootstrap-file=/var/lib/yurthub/bootstrap-hub.conf"));
        assert!(yaml.contains(&format!("--working-mode={}", mode.as_str())));
        assert!(yaml.contains("--node-name=$(NODE_NAME)"));
        assert!(!yaml.contains("join-token"));
        let set = find(&objs, "YurtStaticSet", yss).to_value();
        assert_eq!(set["spec"]["staticPodManifest"], "yurthub");
        let pod: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(set["spec"]["template"]["spec"], pod["spec"]);
        assert_eq!(set["spec"]["template"]["metadata"]["name"], yss);
        // yurt-manager v1.6.1 panics on a pre-made ConfigMap without annotations
        // (yurt_static_set_controller.go syncConfigMap): it must create the ConfigMap itself.
        let cm = format!("yurt-static-set-{yss}");
        assert!(
            !objs
                .iter()
                .any(|o| o.gvk.kind == "ConfigMap" && o.name() == cm),
            "{cm} is rendered"
        );
    }
}

#[test]
fn legacy_node_manifest_reads_the_join_token_from_a_file() {
    let p = profile("legacy-v0.6");
    let ctx = context(&p);
    let n = NodeContext::new(&p, &ctx, "worker-2", WorkingMode::Edge);
    let yaml = render::render_node_manifest(&p, &ctx, &n).unwrap();
    assert!(
        yaml.contains("--join-token=$$(cat /var/lib/yurtctl/yurthub/join-token)"),
        "{yaml}"
    );
    // the node name comes from the downward API, so one manifest serves every node of a mode
    assert!(yaml.contains("--node-name=$(NODE_NAME)"), "{yaml}");
    assert!(yaml.contains("fieldPath: spec.nodeName"), "{yaml}");
    assert!(yaml.contains(&format!("--server-addr={API}")));
    assert!(!yaml.contains(TOKEN_SECRET) && !yaml.contains(TOKEN_ID));
    // the token's directory is mounted, and it is not yurthub v0.6's root dir, which it
    // empties on its first start
    let pod: Value = serde_saphyr::from_str(&yaml).unwrap();
    let dir = Path::new(render::JOIN_TOKEN_FILE).parent().unwrap();
    assert!(!dir.starts_with("/var/lib/yurthub"));
    let mounts = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap();
    assert!(
        mounts
            .iter()
            .any(|m| m["mountPath"] == dir.to_str().unwrap() && m["readOnly"] == true),
        "{yaml}"
    );
}

/// The manifest node Jobs install: the declared ConfigMap's text, rendered by the profile or,
/// for YurtStaticSets, by yurt-manager from the set's template (as the yurtsim model does).
#[test]
fn node_jobs_find_each_modes_manifest_in_the_declared_config_map() {
    use yurtctl::render::YurtHubDecl;
    use yurtsim::models::yurt_manager::{static_pod_manifest, template_hash};
    for name in Profile::names() {
        let p = profile(&name);
        let ctx = context(&p);
        let objs = render::render_cluster_objects(&p, &ctx).unwrap();
        for mode in [WorkingMode::Edge, WorkingMode::Cloud] {
            let cm_name = p.yurthub.config_map(mode);
            let hub = match &p.yurthub {
                YurtHubDecl::Systemd(_) => {
                    let v = find(&objs, "ConfigMap", cm_name).to_value();
                    let key = |k: &str| {
                        v["data"][k]
                            .as_str()
                            .unwrap_or_else(|| panic!("{name}: no key {k} in {v}"))
                            .to_owned()
                    };
                    let unit = key(render::ServiceHub::UNIT_KEY);
                    let drop_in = key(render::ServiceHub::DROP_IN_KEY);
                    assert!(unit.contains("WantedBy=multi-user.target"), "{unit}");
                    let mode_flag = format!("--working-mode={}", mode.as_str());
                    assert!(drop_in.contains(&mode_flag), "{name} {mode:?}: {drop_in}");
                    for var in ["$(NODE_NAME)", "$(NODEPOOL_NAME)"] {
                        assert!(drop_in.contains(var), "{name}: {var} missing: {drop_in}");
                    }
                    continue;
                }
                YurtHubDecl::StaticPod(s) => s,
                YurtHubDecl::YurtStaticSet(s) => s,
            };
            let text = match p.yurthub.mode() {
                render::YurtHubMode::YurtStaticSet => {
                    let set = find(&objs, "YurtStaticSet", hub.pod_name.get(mode)).to_value();
                    assert_eq!(set["spec"]["staticPodManifest"], hub.manifest_name.as_str());
                    assert_eq!(
                        cm_name,
                        format!("yurt-static-set-{}", hub.pod_name.get(mode))
                    );
                    let template = &set["spec"]["template"];
                    static_pod_manifest(template, &template_hash(template))
                }
                _ => {
                    let v = find(&objs, "ConfigMap", cm_name).to_value();
                    v["data"][&hub.manifest_name]
                        .as_str()
                        .unwrap_or_else(|| panic!("{name}: no key {} in {v}", hub.manifest_name))
                        .to_owned()
                }
            };
            let installed: Value = serde_saphyr::from_str(&text).unwrap();
            let rendered: Value =
                serde_saphyr::from_str(&render::yurthub_manifest(&p, &ctx, mode).unwrap()).unwrap();
            assert_eq!(installed["spec"], rendered["spec"], "{name} {mode:?}");
            assert_eq!(
                installed["metadata"]["name"],
                hub.pod_name.get(mode),
                "{name}"
            );
        }
    }
}

fn find<'a>(objs: &'a [RenderedObject], kind: &str, name: &str) -> &'a RenderedObject {
    objs.iter()
        .find(|o| o.gvk.kind == kind && o.name() == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn every_object_is_labelled_and_namespaced() {
    for name in PROFILES {
        let (p, objs) = render_all(name);
        assert!(!objs.is_empty());
        let mut seen = BTreeSet::new();
        for o in &objs {
            assert!(seen.insert(o.id()), "{name}: {} twice", o.id());
            let labels = o.object.metadata.labels.as_ref().unwrap();
            assert_eq!(
                labels["app.kubernetes.io/managed-by"],
                "yurtctl",
                "{}",
                o.id()
            );
            assert_eq!(labels["yurtctl.openyurt.io/profile"], p.name);
            let cluster_scoped = matches!(
                o.gvk.kind.as_str(),
                "ClusterRole"
                    | "ClusterRoleBinding"
                    | "CustomResourceDefinition"
                    | "NodePool"
                    | "MutatingWebhookConfiguration"
                    | "ValidatingWebhookConfiguration"
            );
            assert_eq!(
                o.namespace(),
                (!cluster_scoped).then_some("kube-system"),
                "{}",
                o.id()
            );
        }
    }
}

#[test]
fn components_follow_the_feature_flags() {
    let p = profile("legacy-v0.6");
    let mut ctx = context(&p);
    ctx.features.clear();
    let objs = render::render_cluster_objects(&p, &ctx).unwrap();
    let names: BTreeSet<&str> = objs.iter().map(|o| o.name()).collect();
    assert!(names.contains("yurt-controller-manager"));
    assert!(names.contains("yurt-hub-cfg"));
    assert!(
        !names
            .iter()
            .any(|n| n.contains("tunnel") || n.contains("yurt-app"))
    );

    ctx.features.insert("deploy-yurttunnel".into());
    let objs = render::render_cluster_objects(&p, &ctx).unwrap();
    assert!(
        objs.iter()
            .any(|o| o.gvk.kind == "DaemonSet" && o.name() == "yurt-tunnel-agent")
    );
    assert!(!objs.iter().any(|o| o.name() == "yurt-app-manager"));

    ctx.features.insert("no-such-flag".into());
    let e = render::render_cluster_objects(&p, &ctx).unwrap_err();
    assert!(matches!(e, RenderError::Context(_)), "{e}");
}

#[test]
fn declared_crds_are_the_rendered_crds() {
    for name in PROFILES {
        let (p, objs) = render_all(name);
        let rendered: BTreeSet<&str> = objs
            .iter()
            .filter(|o| o.gvk.kind == "CustomResourceDefinition")
            .map(|o| o.name())
            .collect();
        let declared: BTreeSet<&str> = p.crds.iter().map(String::as_str).collect();
        assert_eq!(rendered, declared, "{name}");
    }
}

/// Intended schemaless places: (CRD, schema path).
const PRESERVE_UNKNOWN: &[(&str, &str)] = &[
    ("yurtstaticsets.apps.openyurt.io", ".spec.template"),
    ("yurtappsets.apps.openyurt.io", ".spec"),
    ("yurtappsets.apps.openyurt.io", ".status"),
    ("yurtappdaemons.apps.openyurt.io", ".spec"),
    ("yurtappdaemons.apps.openyurt.io", ".status"),
    ("yurtappoverriders.apps.openyurt.io", ".entries[]"),
    ("platformadmins.iot.openyurt.io", ".spec"),
    ("platformadmins.iot.openyurt.io", ".status"),
    ("poolservices.network.openyurt.io", ".spec"),
    ("poolservices.network.openyurt.io", ".status"),
    ("gateways.raven.openyurt.io", ".spec"),
    ("gateways.raven.openyurt.io", ".status"),
    ("uniteddeployments.apps.openyurt.io", ".spec"),
    ("uniteddeployments.apps.openyurt.io", ".status"),
];

fn check_structural(crd: &str, path: &str, s: &Value, problems: &mut Vec<String>) {
    let int_or_string = s["x-kubernetes-int-or-string"] == json!(true);
    let preserve = s["x-kubernetes-preserve-unknown-fields"] == json!(true);
    if preserve && !PRESERVE_UNKNOWN.contains(&(crd, path)) {
        problems.push(format!(
            "{crd} {path}: unexpected x-kubernetes-preserve-unknown-fields"
        ));
    }
    let ty = s["type"].as_str();
    if ty.is_none() && !int_or_string {
        problems.push(format!("{crd} {path}: no type"));
    }
    if let Some(props) = s["properties"].as_object() {
        if ty != Some("object") {
            problems.push(format!("{crd} {path}: properties on a non-object"));
        }
        for (k, v) in props {
            check_structural(crd, &format!("{path}.{k}"), v, problems);
        }
    }
    if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
        check_structural(crd, &format!("{path}.*"), ap, problems);
    }
    if let Some(items) = s.get("items") {
        if ty != Some("array") {
            problems.push(format!("{crd} {path}: items on a non-array"));
        }
        check_structural(crd, &format!("{path}[]"), items, problems);
    }
    if ty == Some("array") && s.get("items").is_none() {
        problems.push(format!("{crd} {path}: array without items"));
    }
    if let Some(any) = s["anyOf"].as_array() {
        if !int_or_string {
            problems.push(format!("{crd} {path}: anyOf outside int-or-string"));
        }
        for a in any {
            if a.get("properties").is_some() || a.get("items").is_some() {
                problems.push(format!("{crd} {path}: anyOf with structure"));
            }
        }
    }
}

#[test]
fn every_crd_is_structural() {
    let mut problems = Vec::new();
    for name in PROFILES {
        let (_, objs) = render_all(name);
        for o in objs
            .iter()
            .filter(|o| o.gvk.kind == "CustomResourceDefinition")
        {
            let v = o.to_value();
            let versions = v["spec"]["versions"].as_array().unwrap();
            assert_eq!(
                versions
                    .iter()
                    .filter(|x| x["storage"] == json!(true))
                    .count(),
                1,
                "{}: exactly one storage version",
                o.name()
            );
            for ver in versions {
                let schema = &ver["schema"]["openAPIV3Schema"];
                if schema["type"] != "object" {
                    problems.push(format!("{}: root is not type object", o.name()));
                }
                check_structural(o.name(), "", schema, &mut problems);
            }
            let names = &v["spec"]["names"];
            assert_eq!(
                format!(
                    "{}.{}",
                    names["plural"].as_str().unwrap(),
                    v["spec"]["group"].as_str().unwrap()
                ),
                o.name()
            );
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// What `kubectl get all` (v1.6) or `kubectl get yurt` (v1.7) lists, and the columns
/// `kubectl get` prints, as the charts' CRDs have them
/// (openyurtio/openyurt@v1.6.1 and @v1.7.0 charts/yurt-manager/crds/).
#[test]
fn the_crds_show_in_kubectl_as_the_charts_make_them() {
    // the same CRDs in both; v1.7 moved them from `all` to a category of their own
    let in_it = [
        "gateways.raven.openyurt.io",
        "nodebuckets.apps.openyurt.io",
        "nodepools.apps.openyurt.io",
        "platformadmins.iot.openyurt.io",
        "poolservices.network.openyurt.io",
        "yurtappdaemons.apps.openyurt.io",
        "yurtappsets.apps.openyurt.io",
    ];
    for (profile, category) in [("openyurt-v1.6", "all"), ("openyurt-v1.7", "yurt")] {
        let (_, objs) = render_all(profile);
        let crds: Vec<Value> = objs
            .iter()
            .filter(|o| o.gvk.kind == "CustomResourceDefinition")
            .map(|o| o.to_value())
            .collect();
        let listed: BTreeSet<&str> = crds
            .iter()
            .filter(|c| c["spec"]["names"]["categories"] == json!([category]))
            .map(|c| c["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, in_it.iter().copied().collect(), "{profile}");
        let columns = |crd: &str, version: &str| -> Vec<String> {
            let c = crds.iter().find(|c| c["metadata"]["name"] == crd).unwrap();
            let v = c["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == version)
                .unwrap();
            v["additionalPrinterColumns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    format!(
                        "{}={}",
                        c["name"].as_str().unwrap(),
                        c["jsonPath"].as_str().unwrap()
                    )
                })
                .collect()
        };
        assert_eq!(
            columns("yurtappsets.apps.openyurt.io", "v1alpha1"),
            [
                "READY=.status.readyReplicas",
                "WorkloadTemplate=.status.templateType",
                "AGE=.metadata.creationTimestamp",
                "OverriderRef=.status.overriderRef"
            ],
            "{profile}"
        );
        assert_eq!(
            columns("platformadmins.iot.openyurt.io", "v1alpha1"),
            [
                "READY=.status.ready",
                "Service=.status.serviceReplicas",
                "ReadyService=.status.serviceReadyReplicas",
                "Deployment=.status.deploymentReplicas",
                "ReadyDeployment=.status.deploymentReadyReplicas"
            ],
            "{profile}"
        );
    }
}

/// Upstream facts for the two CRDs yurtctl itself uses.
#[test]
fn nodepool_and_yurtstaticset_crds_match_upstream() {
    let (_, objs) = render_all("openyurt-v1.6");
    struct Row {
        crd: &'static str,
        group: &'static str,
        kind: &'static str,
        plural: &'static str,
        singular: &'static str,
        short: &'static [&'static str],
        scope: &'static str,
        // (name, served, storage)
        versions: &'static [(&'static str, bool, bool)],
        // storage version printer columns (name, jsonPath, type)
        columns: &'static [(&'static str, &'static str, &'static str)],
        conversion_webhook: bool,
    }
    let rows = [
        Row {
            crd: "nodepools.apps.openyurt.io",
            group: "apps.openyurt.io",
            kind: "NodePool",
            plural: "nodepools",
            singular: "nodepool",
            short: &["np"],
            scope: "Cluster",
            versions: &[("v1alpha1", true, false), ("v1beta1", true, true)],
            columns: &[
                ("Type", ".spec.type", "string"),
                ("ReadyNodes", ".status.readyNodeNum", "integer"),
                ("NotReadyNodes", ".status.unreadyNodeNum", "integer"),
                ("Age", ".metadata.creationTimestamp", "date"),
            ],
            conversion_webhook: true,
        },
        Row {
            crd: "yurtstaticsets.apps.openyurt.io",
            group: "apps.openyurt.io",
            kind: "YurtStaticSet",
            plural: "yurtstaticsets",
            singular: "yurtstaticset",
            short: &["yss"],
            scope: "Namespaced",
            versions: &[("v1alpha1", true, true)],
            columns: &[
                ("AGE", ".metadata.creationTimestamp", "date"),
                ("Total", ".status.totalNumber", "integer"),
                ("Ready", ".status.readyNumber", "integer"),
                ("Upgraded", ".status.upgradedNumber", "integer"),
            ],
            conversion_webhook: false,
        },
    ];
    for r in rows {
        let v = find(&objs, "CustomResourceDefinition", r.crd).to_value();
        let spec = &v["spec"];
        assert_eq!(spec["group"], r.group);
        assert_eq!(spec["names"]["kind"], r.kind);
        assert_eq!(spec["names"]["listKind"], format!("{}List", r.kind));
        assert_eq!(spec["names"]["plural"], r.plural);
        assert_eq!(spec["names"]["singular"], r.singular);
        assert_eq!(spec["names"]["shortNames"], json!(r.short));
        assert_eq!(spec["scope"], r.scope);
        let versions = spec["versions"].as_array().unwrap();
        let got: Vec<(String, bool, bool)> = versions
            .iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_owned(),
                    x["served"].as_bool().unwrap(),
                    x["storage"].as_bool().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, bool, bool)> = r
            .versions
            .iter()
            .map(|(n, a, b)| ((*n).to_owned(), *a, *b))
            .collect();
        assert_eq!(got, want, "{}", r.crd);
        for x in versions {
            assert_eq!(
                x["subresources"]["status"],
                json!({}),
                "{} status subresource",
                r.crd
            );
        }
        let storage = versions
            .iter()
            .find(|x| x["storage"] == json!(true))
            .unwrap();
        let cols: Vec<(&str, &str, &str)> = storage["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap(),
                    c["jsonPath"].as_str().unwrap(),
                    c["type"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(cols, r.columns, "{}", r.crd);
        if r.conversion_webhook {
            assert_eq!(spec["conversion"]["strategy"], "Webhook");
            assert_eq!(
                spec["conversion"]["webhook"]["clientConfig"]["service"],
                json!({"name": "yurt-manager-webhook-service", "namespace": "kube-system", "path": "/convert"})
            );
        } else {
            assert!(spec.get("conversion").is_none());
        }
    }
    // the NodePool v1beta1 spec yurt-manager v1.6.1 stores
    // (openyurtio/openyurt@v1.6.1:charts/yurt-manager/crds/apps.openyurt.io_nodepools.yaml)
    let np = find(
        &objs,
        "CustomResourceDefinition",
        "nodepools.apps.openyurt.io",
    )
    .to_value();
    let v1beta1 =
        &np["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let fields: BTreeSet<&str> = v1beta1
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from(["annotations", "hostNetwork", "labels", "taints", "type"]),
        "NodePool v1beta1 spec"
    );
}

/// A profile that names an upstream node converter deploys yurt-manager with it switched off,
/// so that yurtctl stays the nodes' one converter.
#[test]
fn upstream_node_conversion_is_switched_off_where_declared() {
    let mut declared = 0;
    for name in PROFILES {
        let (p, objs) = render_all(name);
        let Some(u) = &p.upstream_node_conversion else {
            continue;
        };
        declared += 1;
        let d = find(&objs, "Deployment", "yurt-manager").to_value();
        let controllers: Vec<String> = d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str()?.strip_prefix("--controllers="))
            .flat_map(|l| l.split(',').map(str::to_owned))
            .collect();
        assert!(
            controllers.contains(&u.disabled_by),
            "{name}: --controllers {controllers:?} lacks {}",
            u.disabled_by
        );
    }
    assert_eq!(
        declared, 1,
        "openyurt-v1.7 declares yurt-manager's node conversion"
    );
}

#[test]
fn yurt_manager_deployment() {
    let (p, objs) = render_all("openyurt-v1.6");
    let d = find(&objs, "Deployment", "yurt-manager").to_value();
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--controllers=-nodelifecycle,*"), "{args:?}");
    assert!(args.contains(&"--working-namespace=kube-system"));
    let servant = format!("--node-servant-image={}", p.images["node-servant"]);
    assert!(args.contains(&servant.as_str()), "{args:?}");
    assert_eq!(c["image"], "openyurt/yurt-manager:v1.6.1");
    assert_eq!(
        d["spec"]["template"]["spec"]["serviceAccountName"],
        "yurt-manager"
    );
    // every controller ServiceAccount has its binding
    for o in objs.iter().filter(|o| o.gvk.kind == "ServiceAccount") {
        let n = o.name();
        if n == "yurt-manager" {
            continue;
        }
        find(&objs, "ClusterRole", n);
        find(&objs, "ClusterRoleBinding", &format!("{n}-binding"));
    }
    // the webhooks point at the Service yurtctl creates
    find(&objs, "Service", "yurt-manager-webhook-service");
    find(&objs, "Secret", "yurt-manager-webhook-certs");
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        for o in objs.iter().filter(|o| o.gvk.kind == kind) {
            for w in o.to_value()["webhooks"].as_array().unwrap() {
                assert_eq!(w["clientConfig"]["service"]["namespace"], "kube-system");
                assert_eq!(w["sideEffects"], "None");
            }
        }
    }
    // kube-controller-manager is not touched by anything rendered
    assert!(
        !objs
            .iter()
            .any(|o| o.to_yaml().contains("kube-controller-manager"))
    );
}

#[test]
fn legacy_components() {
    let (_, objs) = render_all("legacy-v0.6");
    let ycm = find(&objs, "Deployment", "yurt-controller-manager").to_value();
    assert_eq!(
        ycm["spec"]["template"]["spec"]["containers"][0]["image"],
        "openyurt/yurt-controller-manager:v0.6.1"
    );
    let svc = find(&objs, "Service", "x-tunnel-server-svc").to_value();
    assert_eq!(svc["spec"]["ports"][1]["nodePort"], 31008);
    let ts = find(&objs, "Deployment", "yurt-tunnel-server").to_value();
    let args = ts["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--cert-ips=203.0.113.7"), "{args}");
    let agent = find(&objs, "DaemonSet", "yurt-tunnel-agent").to_value();
    assert_eq!(
        agent["spec"]["template"]["spec"]["nodeSelector"]["openyurt.io/is-edge-worker"],
        "true"
    );
    find(
        &objs,
        "CustomResourceDefinition",
        "uniteddeployments.apps.openyurt.io",
    );
    find(&objs, "Deployment", "yurt-app-manager");
    find(&objs, "ConfigMap", "yurt-hub-cfg");
}

#[test]
fn bootstrap_token_secret_and_redaction() {
    let b64_secret = render::base64(TOKEN_SECRET.as_bytes());
    for name in PROFILES {
        let (_, objs) = render_all(name);
        let secret_name = format!("bootstrap-token-{TOKEN_ID}");
        let s = find(&objs, "Secret", &secret_name);
        let v = s.to_value();
        assert_eq!(v["type"], "bootstrap.kubernetes.io/token");
        assert_eq!(v["data"]["token-secret"], b64_secret.as_str());
        assert_eq!(
            v["data"]["token-id"],
            render::base64(TOKEN_ID.as_bytes()).as_str()
        );
        assert_eq!(
            v["data"]["expiration"],
            render::base64(EXPIRY.as_bytes()).as_str()
        );
        let typed: k8s_openapi::api::core::v1::Secret = serde_json::from_value(v).unwrap();
        assert_eq!(
            typed.data.unwrap()["token-secret"].0,
            TOKEN_SECRET.as_bytes()
        );

        let red = s.redacted().to_value();
        for (k, val) in red["data"].as_object().unwrap() {
            assert_eq!(val, render::REDACTED, "{k}");
        }
        for o in render::redact(&objs) {
            let text = o.to_yaml();
            assert!(
                !text.contains(TOKEN_SECRET) && !text.contains(&b64_secret),
                "{}",
                o.id()
            );
        }
        // no non-Secret object carries the token secret in any form
        for o in objs.iter().filter(|o| o.gvk.kind != "Secret") {
            let text = serde_json::to_string(&o.to_value()).unwrap();
            assert!(
                !text.contains(TOKEN_SECRET) && !text.contains(&b64_secret),
                "{}",
                o.id()
            );
        }
    }
    // the secret never reaches templates or Debug output
    let p = profile("openyurt-v1.6");
    let ctx = context(&p);
    assert!(!format!("{ctx:?}").contains(TOKEN_SECRET));
    assert!(!serde_json::to_string(&ctx).unwrap().contains(TOKEN_SECRET));
}

#[test]
fn engine_is_strict_and_does_not_escape() {
    // (template, data, expected output or error fragment)
    let ok: &[(&str, Value, &str)] = &[
        ("{{v}}", json!({"v": "a&b<c>"}), "a&b<c>"),
        (
            "{{quote v}}",
            json!({"v": "a&b<c>\"q\""}),
            r#""a&b<c>\"q\"""#,
        ),
        ("{{b64 v}}", json!({"v": "abc"}), "YWJj"),
        ("{{b64 v}}", json!({"v": "ab"}), "YWI="),
        (
            "{{json v}}",
            json!({"v": {"a": [1, "x"]}}),
            r#"{"a":[1,"x"]}"#,
        ),
        ("x: {{indent 2 v}}", json!({"v": "a\nb\n"}), "x: a\n  b\n"),
        (
            "{{images.yurt-manager}}",
            json!({"images": {"yurt-manager": "i:1"}}),
            "i:1",
        ),
        ("{{#if o}}yes{{else}}no{{/if}}", json!({"o": null}), "no"),
    ];
    for (t, data, want) in ok {
        assert_eq!(render::render_str("t", t, data).unwrap(), *want, "{t}");
    }
    let bad: &[(&str, Value, &str)] = &[
        ("a: 1\nb: {{missing}}", json!({}), "missing"),
        ("{{a.b}}", json!({"a": {}}), "a.b"),
        ("{{#each nope}}x{{/each}}", json!({}), "nope"),
        ("{{#if x}}", json!({"x": 1}), ""),
    ];
    for (t, data, fragment) in bad {
        let e = render::render_str("t.yaml.hbs", t, data).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("t.yaml.hbs") && msg.contains(fragment),
            "{t}: {msg}"
        );
        assert!(matches!(e, RenderError::Template { .. }), "{t}: {e:?}");
    }
    let e = render::render_str("t", "a: 1\nb: {{missing}}", &json!({})).unwrap_err();
    let RenderError::Template { line, .. } = e else {
        panic!()
    };
    assert_eq!(line, Some(2));
}

#[test]
fn typed_checks_catch_template_mistakes() {
    let p = profile("openyurt-v1.6");
    let ctx = context(&p);
    let deployment = |extra: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  selector: {{matchLabels: {{a: b}}}}\n  template:\n    metadata: {{labels: {{a: b}}}}\n    spec:\n      containers:\n      - name: c\n        image: i:1\n{extra}"
        )
    };
    // (template text, expected field fragment)
    let cases: Vec<(String, &str)> = vec![
        (deployment("        imagePullPolic: Always\n"), "imagePullPolic"),
        (deployment("        ports: [{containerPort: \"eighty\"}]\n"), "(object)"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatta: {a: b}\n".into(), "datta"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labelz: {a: b}}\n".into(), "metadata.labelz"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n".into(), "metadata.name"),
        ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x, namespace: y}\n".into(), "metadata.namespace"),
        ("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n".into(), "apiVersion/kind"),
        ("apiVersion: apps.openyurt.io/v1alpha1\nkind: YurtStaticSet\nmetadata: {name: x}\nspec: {staticPodManifest: m, template: {spec: {containerz: []}}}\n".into(), "spec.template.spec.containerz"),
        ("apiVersion: apps.openyurt.io/v1alpha1\nkind: YurtStaticSet\nmetadata: {name: x}\nspec: {staticPodManifest: m, upgradeStrategy: {type: Rolling}}\n".into(), "spec.upgradeStrategy.type"),
    ];
    for (text, field) in &cases {
        let e = render::render_template(&p, &ctx, "bad.yaml.hbs", text).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("bad.yaml.hbs") && msg.contains(field),
            "{field}: {msg}"
        );
    }
    // bad YAML names the template and the document
    let e = render::render_template(&p, &ctx, "bad.yaml.hbs", "a: 1\n---\nb: [\n").unwrap_err();
    assert!(matches!(e, RenderError::Yaml { document: 2, .. }), "{e}");
    // and a good one passes, labelled and namespaced
    let objs = render::render_template(&p, &ctx, "ok.yaml.hbs", &deployment("")).unwrap();
    assert_eq!(objs[0].namespace(), Some("kube-system"));
}

#[test]
fn context_validation() {
    let p = profile("openyurt-v1.6");
    assert!(BootstrapTokenRef::new("ABCDEF", EXPIRY).is_err());
    assert!(BootstrapTokenRef::new("abcdef", "tomorrow").is_err());
    assert!(BootstrapTokenRef::new("abcdef", "2026-01-02T03:04:05.5+08:00").is_ok());
    assert!(TokenSecret::new("short").is_err());
    let mut ctx = context(&p);
    ctx.api_server = "http://x:6443".into();
    assert!(render::render_cluster_objects(&p, &ctx).is_err());
    let ctx = context(&profile("legacy-v0.6"));
    assert!(
        render::render_cluster_objects(&p, &ctx).is_err(),
        "context of another profile"
    );
    let ctx = context(&p);
    let n = NodeContext::new(&p, &ctx, "Bad_Node", WorkingMode::Edge);
    assert!(render::render_node_manifest(&p, &ctx, &n).is_err());
}

/// A PlatformAdmin whose NodePool is gone can still lose its finalizer: the v1beta1 handler
/// both releases serve validates the old object on update too
/// (openyurtio/openyurt@v1.6.1 and @v1.7.0
/// pkg/yurtmanager/webhook/platformadmin/v1beta1/platformadmin_validation.go ValidateUpdate).
#[test]
fn platformadmins_can_always_be_deleted() {
    let platformadmin_hooks = |profile: &str| -> Vec<Value> {
        let (_, objs) = render_all(profile);
        objs.iter()
            .filter(|o| o.gvk.kind.ends_with("WebhookConfiguration"))
            .flat_map(|o| {
                o.to_value()["webhooks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|h| h["rules"][0]["resources"] == json!(["platformadmins"]))
            .collect()
    };
    // v1.6 runs on 1.21+, below matchConditions (1.28): none, as after a chart install
    assert_eq!(platformadmin_hooks("openyurt-v1.6"), Vec::<Value>::new());
    // v1.7: validated, but not once it is being deleted
    let v17 = platformadmin_hooks("openyurt-v1.7");
    let names: Vec<&str> = v17.iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mplatformadmin.kb.io", "vplatformadmin.kb.io"]);
    assert_eq!(v17[0].get("matchConditions"), None);
    assert_eq!(
        v17[1]["matchConditions"],
        json!([{"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"}])
    );
}

/// `--image-pull-secret` reaches every workload's pods, and no static pod: the kubelet's
/// mirror pods may not reference Secrets, so a YurtStaticSet's template is left alone.
#[test]
fn image_pull_secrets_go_on_every_workload_and_no_static_pod() {
    for name in PROFILES {
        let p = profile(name);
        let mut ctx = context(&p);
        ctx.image_pull_secrets = vec!["regcred".into()];
        let objs = render::render_cluster_objects(&p, &ctx).unwrap();
        let mut workloads = 0;
        for o in &objs {
            let v = o.to_value();
            let pulls = &v["spec"]["template"]["spec"]["imagePullSecrets"];
            match o.gvk.kind.as_str() {
                "Deployment" | "DaemonSet" | "StatefulSet" | "Job" => {
                    workloads += 1;
                    assert_eq!(pulls, &json!([{"name": "regcred"}]), "{name}: {}", o.id());
                }
                _ => assert!(pulls.is_null(), "{name}: {}", o.id()),
            }
        }
        assert!(workloads > 0, "{name} renders a workload");
        // without the flag nothing changes
        let (_, plain) = render_all(name);
        assert!(
            plain
                .iter()
                .all(|o| o.to_value()["spec"]["template"]["spec"]["imagePullSecrets"].is_null())
        );
    }
}
