//! The render layer: template profiles under `templates/<profile>/` rendered with handlebars
//! (strict mode, no HTML escaping) and parsed into typed Kubernetes objects, so a template
//! mistake fails at render time (and in tests), never at apply time.
//!
//! - [`Profile::load`] reads a profile's declaration (what it installs, supported Kubernetes
//!   versions, how YurtHub runs, labels and annotations, whether kube-controller-manager's
//!   `nodelifecycle` must be disabled, images, CRDs).
//! - [`render_cluster_objects`] renders the enabled components into [`RenderedObject`]s, each
//!   labelled `app.kubernetes.io/managed-by: yurtctl` and `yurtctl.openyurt.io/profile`, and
//!   put in the context's namespace unless cluster-scoped.
//! - [`render_node_manifest`] renders the YurtHub static pod for one node.
//! - [`redact`] hides Secret values before anything is printed.
//!
//! Templates never see the bootstrap token's secret half: the context carries only its id and
//! expiry, and the secret is added to the token Secret's data after rendering.

mod context;
mod embedded;
mod engine;
mod error;
mod images;
mod profile;
mod validate;

use std::collections::BTreeMap;

use kube::core::{DynamicObject, GroupVersionKind};
use serde_json::{Map, Value, json};

pub use context::{
    BOOTSTRAP_FILE, BootstrapTokenRef, JOIN_TOKEN_FILE, NodeContext, NodePoolRef, RenderContext,
    TokenSecret, WorkingMode, ca_cert_hash,
};
pub use engine::{base64, render_str};
pub use error::{RenderError, Result};
pub use images::{PulledImage, SERVANT_IMAGE_KEY, node_pulls, pulled_images};
pub use profile::{
    CRATE_VERSION_VAR, Component, ComponentObject, EdgeWorkerLabel, KeyValue, KubernetesRange,
    LabelDecl, NodePoolDecl, PerMode, Profile, ServiceHub, StaticPodHub, UpstreamNodeConversion,
    YurtHubCredential, YurtHubDecl, YurtHubMode,
};

use crate::naming::{LABEL_MANAGED_BY, MANAGED_BY};

pub const PROFILE_LABEL: &str = "yurtctl.openyurt.io/profile";
/// What [`redact`] puts in place of a Secret value.
pub const REDACTED: &str = "REDACTED";

/// Paths (relative to `templates/`) of every embedded file.
pub fn embedded_files() -> impl Iterator<Item = &'static str> {
    embedded::FILES.iter().map(|(p, _)| *p)
}

/// One rendered Kubernetes object and the template it came from.
#[derive(Clone, Debug)]
pub struct RenderedObject {
    /// Template file name within the profile directory.
    pub template: String,
    pub object: DynamicObject,
    pub gvk: GroupVersionKind,
}

impl RenderedObject {
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or("")
    }

    pub fn namespace(&self) -> Option<&str> {
        self.object.metadata.namespace.as_deref()
    }

    /// The object as JSON (apiVersion, kind, metadata, the rest).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(&self.object).expect("a DynamicObject serialises")
    }

    /// YAML of the object, values as rendered (use [`RenderedObject::redacted`] to print).
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(&self.to_value()).expect("JSON serialises as YAML")
    }

    /// A copy with every Secret value (`data`, `stringData`) replaced by [`REDACTED`].
    pub fn redacted(&self) -> RenderedObject {
        let mut out = self.clone();
        if self.gvk.group.is_empty() && self.gvk.kind == "Secret" {
            for key in ["data", "stringData"] {
                if let Some(Value::Object(m)) = out.object.data.get_mut(key) {
                    for v in m.values_mut() {
                        *v = Value::String(REDACTED.into());
                    }
                }
            }
        }
        out
    }

    /// `Kind/name` or `Kind/namespace/name`.
    pub fn id(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{}/{}/{}", self.gvk.kind, ns, self.name()),
            None => format!("{}/{}", self.gvk.kind, self.name()),
        }
    }
}

/// Redacted copies of `objects` (for plan printers and logs).
pub fn redact(objects: &[RenderedObject]) -> Vec<RenderedObject> {
    objects.iter().map(RenderedObject::redacted).collect()
}

/// Renders the cluster objects of every component `ctx.features` enables, in declaration order.
pub fn render_cluster_objects(
    profile: &Profile,
    ctx: &RenderContext,
) -> Result<Vec<RenderedObject>> {
    ctx.check(profile)?;
    let data = cluster_data(profile, ctx)?;
    let mut values: Vec<(String, Value)> = Vec::new();
    for component in profile.enabled_components(&ctx.features) {
        for t in &component.templates {
            let text = profile
                .template_text(t)
                .ok_or_else(|| RenderError::Profile {
                    profile: profile.name.clone(),
                    message: format!("template {t} is missing"),
                })?;
            let rendered = engine::render_str(t, text, &data)?;
            for v in parse_documents(t, &rendered)? {
                values.push((t.clone(), v));
            }
        }
    }
    // scopes of the custom kinds whose CRDs are rendered here
    let mut crd_scopes: BTreeMap<(String, String), bool> = BTreeMap::new();
    for (_, v) in &values {
        if v["apiVersion"] == "apiextensions.k8s.io/v1" && v["kind"] == "CustomResourceDefinition" {
            let spec = &v["spec"];
            let group = spec["group"].as_str().unwrap_or_default().to_owned();
            let kind = spec["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            crd_scopes.insert((group, kind), spec["scope"] == "Cluster");
        }
    }
    let mut out = Vec::with_capacity(values.len());
    for (t, mut v) in values {
        inject_token_secret(&mut v, ctx);
        inject_pull_secrets(&mut v, ctx);
        out.push(finish(profile, ctx, &t, v, &crd_scopes)?);
    }
    Ok(out)
}

/// Renders an ad-hoc template (not from the profile directory) with the same data, checks and
/// labels as the profile's cluster templates; for extra manifests and tests.
pub fn render_template(
    profile: &Profile,
    ctx: &RenderContext,
    name: &str,
    text: &str,
) -> Result<Vec<RenderedObject>> {
    ctx.check(profile)?;
    let data = cluster_data(profile, ctx)?;
    let rendered = engine::render_str(name, text, &data)?;
    parse_documents(name, &rendered)?
        .into_iter()
        .map(|mut v| {
            inject_token_secret(&mut v, ctx);
            finish(profile, ctx, name, v, &BTreeMap::new())
        })
        .collect()
}

/// The YurtHub static-pod manifest for one node (YAML of a validated `v1/Pod`).
pub fn render_node_manifest(
    profile: &Profile,
    ctx: &RenderContext,
    node: &NodeContext,
) -> Result<String> {
    ctx.check(profile)?;
    node.check()?;
    node_pod(profile, ctx, node).map(|v| to_yaml(&v))
}

/// The node-independent YurtHub manifest of a working mode (the node name left to the
/// downward API): what the profile's manifest ConfigMaps hold and node Jobs install.
pub fn yurthub_manifest(
    profile: &Profile,
    ctx: &RenderContext,
    mode: WorkingMode,
) -> Result<String> {
    ctx.check(profile)?;
    node_pod(profile, ctx, &any_node(profile, ctx, mode)).map(|v| to_yaml(&v))
}

fn any_node(profile: &Profile, ctx: &RenderContext, mode: WorkingMode) -> NodeContext {
    NodeContext::new(profile, ctx, "$(NODE_NAME)", mode)
}

/// The YurtHub static pod for one node, as JSON.
fn node_pod(profile: &Profile, ctx: &RenderContext, node: &NodeContext) -> Result<Value> {
    let Some(hub) = profile.yurthub.static_pod() else {
        return Err(RenderError::Profile {
            profile: profile.name.clone(),
            message: "YurtHub runs as a systemd service in this profile: it has no static pod"
                .into(),
        });
    };
    let t = &hub.node_template;
    let text = profile
        .template_text(t)
        .ok_or_else(|| RenderError::Profile {
            profile: profile.name.clone(),
            message: format!("node template {t} is missing"),
        })?;
    let mut data = base_data(profile, ctx)?;
    data.insert("node".into(), to_json(node)?);
    let rendered = engine::render_str(t, text, &Value::Object(data))?;
    let mut docs = parse_documents(t, &rendered)?;
    if docs.len() != 1 || docs[0]["kind"] != "Pod" || docs[0]["apiVersion"] != "v1" {
        return Err(invalid(
            t,
            &docs.first().cloned().unwrap_or_default(),
            "kind",
            "the node template must render exactly one v1 Pod",
        ));
    }
    let obj = finish(profile, ctx, t, docs.remove(0), &BTreeMap::new())?;
    Ok(obj.to_value())
}

/// Manifest YAML for files on nodes: plain or quoted scalars only (no folded block strings).
fn to_yaml(v: &Value) -> String {
    let mut o = serde_saphyr::SerializerOptions::default();
    o.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(v, o).expect("JSON serialises as YAML")
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| RenderError::Context(e.to_string()))
}

/// Context + profile declarations every template sees.
fn base_data(profile: &Profile, ctx: &RenderContext) -> Result<Map<String, Value>> {
    let Value::Object(mut data) = to_json(ctx)? else {
        unreachable!("RenderContext serialises as a map")
    };
    data.insert("yurthub".into(), to_json(&profile.yurthub)?);
    data.insert("labels".into(), to_json(&profile.labels)?);
    data.insert("bootstrapFile".into(), Value::String(BOOTSTRAP_FILE.into()));
    data.insert(
        "disableNodeLifecycle".into(),
        Value::Bool(profile.disable_node_lifecycle),
    );
    Ok(data)
}

/// Cluster templates also see the YurtHub pod per working mode, rendered node-independently
/// (node name `$(NODE_NAME)`, which the kubelet expands from the pod's env):
/// `yurthubManifests.{edge,cloud}` (YAML text) and `yurthubPodTemplates.{edge,cloud}`.
fn cluster_data(profile: &Profile, ctx: &RenderContext) -> Result<Value> {
    let mut data = base_data(profile, ctx)?;
    if profile.yurthub.static_pod().is_none() {
        return Ok(Value::Object(data));
    }
    let mut manifests = Map::new();
    let mut templates = Map::new();
    for mode in [WorkingMode::Edge, WorkingMode::Cloud] {
        let pod = node_pod(profile, ctx, &any_node(profile, ctx, mode))?;
        manifests.insert(mode.as_str().into(), Value::String(to_yaml(&pod)));
        templates.insert(
            mode.as_str().into(),
            json!({"metadata": pod["metadata"], "spec": pod["spec"]}),
        );
    }
    data.insert("yurthubManifests".into(), Value::Object(manifests));
    data.insert("yurthubPodTemplates".into(), Value::Object(templates));
    Ok(Value::Object(data))
}

/// Splits on `---` lines and parses each non-empty document.
fn parse_documents(template: &str, text: &str) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    let mut current = String::new();
    let mut start_line = 1;
    let mut line_no = 0;
    let flush = |doc: &str, start: usize, docs: &mut Vec<Value>| -> Result<()> {
        let n = docs.len() + 1;
        let v: Value = serde_saphyr::from_str(doc).map_err(|e| RenderError::Yaml {
            template: template.to_owned(),
            document: n,
            message: format!("{e} (the document starts at line {start} of the rendered text)"),
        })?;
        if !v.is_null() {
            docs.push(v);
        }
        Ok(())
    };
    for line in text.split_inclusive('\n') {
        line_no += 1;
        if line.trim_end() == "---" {
            flush(&current, start_line, &mut docs)?;
            current.clear();
            start_line = line_no + 1;
        } else {
            current.push_str(line);
        }
    }
    flush(&current, start_line, &mut docs)?;
    Ok(docs)
}

fn invalid(template: &str, v: &Value, field: &str, message: &str) -> RenderError {
    RenderError::Invalid {
        template: template.to_owned(),
        kind: v["kind"].as_str().unwrap_or("?").to_owned(),
        name: v["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

/// `--image-pull-secret` on the pod template of every workload the profile renders. Static
/// pods cannot use one (the kubelet's mirror pods may not reference Secrets), so a
/// YurtStaticSet's template is left alone.
fn inject_pull_secrets(v: &mut Value, ctx: &RenderContext) {
    let workload = matches!(
        (v["apiVersion"].as_str(), v["kind"].as_str()),
        (
            Some("apps/v1"),
            Some("Deployment" | "DaemonSet" | "StatefulSet")
        ) | (Some("batch/v1"), Some("Job"))
    );
    if ctx.image_pull_secrets.is_empty() || !workload {
        return;
    }
    if let Some(spec) = v
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    {
        let names: Vec<Value> = ctx
            .image_pull_secrets
            .iter()
            .map(|n| json!({ "name": n }))
            .collect();
        spec.insert("imagePullSecrets".into(), Value::Array(names));
    }
}

fn inject_token_secret(v: &mut Value, ctx: &RenderContext) {
    if v["apiVersion"] == "v1"
        && v["kind"] == "Secret"
        && v["type"] == "bootstrap.kubernetes.io/token"
        && v["metadata"]["name"] == ctx.bootstrap_token.secret_name.as_str()
        && let Some(obj) = v.as_object_mut()
    {
        let data = obj
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(d) = data.as_object_mut() {
            d.insert(
                "token-secret".into(),
                Value::String(base64(ctx.token_secret.expose().as_bytes())),
            );
        }
    }
}

/// Labels, namespace, typed validation, DynamicObject.
fn finish(
    profile: &Profile,
    ctx: &RenderContext,
    template: &str,
    mut v: Value,
    crd_scopes: &BTreeMap<(String, String), bool>,
) -> Result<RenderedObject> {
    let api_version = v["apiVersion"].as_str().unwrap_or("").to_owned();
    let kind = v["kind"].as_str().unwrap_or("").to_owned();
    if api_version.is_empty() || kind.is_empty() {
        return Err(invalid(template, &v, "apiVersion/kind", "missing"));
    }
    if v["metadata"]["name"].as_str().is_none_or(str::is_empty) {
        return Err(invalid(template, &v, "metadata.name", "missing"));
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, ver)) => (g.to_owned(), ver.to_owned()),
        None => (String::new(), api_version.clone()),
    };
    let yss =
        (api_version == "apps.openyurt.io/v1alpha1" && kind == "YurtStaticSet").then_some(false);
    let cluster_scoped = validate::builtin_cluster_scoped(&api_version, &kind)
        .or_else(|| crd_scopes.get(&(group.clone(), kind.clone())).copied())
        .or(yss)
        .ok_or_else(|| {
            invalid(
                template,
                &v,
                "apiVersion/kind",
                &format!("{api_version} {kind} is not a kind yurtctl knows how to check"),
            )
        })?;

    let meta = v
        .as_object_mut()
        .expect("a document with apiVersion is a map")
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return Err(invalid(template, &Value::Null, "metadata", "not a map"));
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(labels) = labels.as_object_mut() else {
        return Err(invalid(
            template,
            &Value::Null,
            "metadata.labels",
            "not a map",
        ));
    };
    labels.insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
    labels.insert(PROFILE_LABEL.into(), profile.name.clone().into());
    if cluster_scoped {
        if meta.contains_key("namespace") {
            return Err(invalid(
                template,
                &v,
                "metadata.namespace",
                "set on a cluster-scoped object",
            ));
        }
    } else if !meta.contains_key("namespace") {
        meta.insert("namespace".into(), ctx.namespace.clone().into());
    }

    let checked = match validate::check_builtin(&v) {
        Ok(true) => Ok(()),
        Ok(false) if kind == "YurtStaticSet" => validate::check_yurtstaticset(&v),
        Ok(false) => validate::check_metadata(&v),
        Err(p) => Err(p),
    };
    if let Err((field, message)) = checked {
        return Err(invalid(template, &v, &field, &message));
    }
    let object: DynamicObject = serde_json::from_value(v.clone())
        .map_err(|e| invalid(template, &v, "(object)", &e.to_string()))?;
    Ok(RenderedObject {
        template: template.to_owned(),
        object,
        gvk: GroupVersionKind::gvk(&group, &version, &kind),
    })
}
