//! PURE parts of `yurtctl staticpod`: the desired pod template (from a mirror pod, `-f`, or
//! `--image`), its revision hash, the manifest written to nodes, and the `--dry-run` plan.

use serde::Serialize;
use serde_json::{Value, json};

use crate::rollout::{NodeInput, NodePhase, NodeResult, Options, Rollout};

pub use crate::naming::revision::{
    CONFIG_SOURCE, HASH_ANNOTATION, revision_hash, template_from_mirror,
};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("{what}: {message}")]
    Invalid { what: String, message: String },
    #[error("--image {spec}: no container named {container:?} (containers: {known})")]
    UnknownContainer {
        spec: String,
        container: String,
        known: String,
    },
    #[error("--image {spec}: the pod has {n} containers ({known}); name one as CONTAINER=IMAGE")]
    AmbiguousContainer {
        spec: String,
        n: usize,
        known: String,
    },
}

fn invalid(what: &str, message: impl Into<String>) -> TemplateError {
    TemplateError::Invalid {
        what: what.into(),
        message: message.into(),
    }
}

/// Checks that `doc` is one v1 Pod with at least one named container, each with a valid image
/// reference.
pub fn check_pod(what: &str, doc: &Value) -> Result<(), TemplateError> {
    if doc.get("apiVersion").and_then(Value::as_str) != Some("v1")
        || doc.get("kind").and_then(Value::as_str) != Some("Pod")
    {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("(none)");
        return Err(invalid(
            what,
            format!("expected a v1 Pod, found kind {kind}"),
        ));
    }
    let containers = doc
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| invalid(what, "spec.containers is missing or empty"))?;
    for (i, c) in containers.iter().enumerate() {
        if c.get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid(what, format!("container {i} has no name")));
        }
        match c.get("image").and_then(Value::as_str) {
            None | Some("") => return Err(invalid(what, format!("container {i} has no image"))),
            Some(image) => crate::reference::check_image(image)
                .map_err(|e| invalid(what, format!("container {i}: {e}")))?,
        }
    }
    Ok(())
}

/// Parses a `-f` file: exactly one YAML (or JSON) document holding a v1 Pod.
pub fn parse_pod_file(what: &str, text: &str) -> Result<Value, TemplateError> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| invalid(what, format!("not YAML: {e}")))?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    match docs.as_slice() {
        [one] => {
            check_pod(what, one)?;
            Ok(one.clone())
        }
        [] => Err(invalid(what, "the file holds no document")),
        many => Err(invalid(
            what,
            format!(
                "the file holds {} documents; give exactly one Pod",
                many.len()
            ),
        )),
    }
}

/// One `--image [CONTAINER=]IMAGE` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    pub container: Option<String>,
    pub image: String,
}

impl std::str::FromStr for ImageSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            Err(format!(
                "invalid --image {s:?}: {why}; expected [CONTAINER=]IMAGE"
            ))
        };
        let (container, image) = match s.split_once('=') {
            Some((c, i)) => (Some(c), i),
            None => (None, s),
        };
        if let Some(c) = container
            && !crate::selector::is_dns1123_label(c)
        {
            return bad("the container name is not a DNS-1123 label");
        }
        if let Err(e) = crate::reference::check_image(image) {
            return bad(&e.to_string());
        }
        Ok(ImageSpec {
            container: container.map(str::to_owned),
            image: image.to_owned(),
        })
    }
}

impl std::fmt::Display for ImageSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.container {
            Some(c) => write!(f, "{c}={}", self.image),
            None => f.write_str(&self.image),
        }
    }
}

/// `template` with the images replaced. An unnamed image needs a single-container pod.
pub fn with_images(template: &Value, images: &[ImageSpec]) -> Result<Value, TemplateError> {
    let mut out = template.clone();
    let containers = out
        .pointer_mut("/spec/containers")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| invalid("the current template", "has no containers"))?;
    let known: Vec<String> = containers
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect();
    for spec in images {
        let idx = match &spec.container {
            Some(name) => containers
                .iter()
                .position(|c| c["name"].as_str() == Some(name))
                .ok_or_else(|| TemplateError::UnknownContainer {
                    spec: spec.to_string(),
                    container: name.clone(),
                    known: known.join(", "),
                })?,
            None if containers.len() == 1 => 0,
            None => {
                return Err(TemplateError::AmbiguousContainer {
                    spec: spec.to_string(),
                    n: containers.len(),
                    known: known.join(", "),
                });
            }
        };
        containers[idx]["image"] = json!(spec.image);
    }
    Ok(out)
}

/// The manifest nodes get: the template with `metadata.name`/`namespace` set and the revision
/// in `openyurt.io/static-pod-hash`, as YAML.
pub fn manifest_yaml(template: &Value, name: &str, namespace: &str, hash: &str) -> String {
    let mut t = template.clone();
    t["metadata"]["name"] = json!(name);
    t["metadata"]["namespace"] = json!(namespace);
    if !t["metadata"]["annotations"].is_object() {
        t["metadata"]["annotations"] = json!({});
    }
    t["metadata"]["annotations"][HASH_ANNOTATION] = json!(hash);
    serde_saphyr::to_string(&t).unwrap_or_default()
}

/// A ConfigMap data key / manifest file base name: `[-._a-zA-Z0-9]+`, no `..`, ≤ 253.
pub fn check_manifest_name(s: &str) -> Result<(), String> {
    if s.is_empty()
        || s.len() > 253
        || s == "."
        || s.contains("..")
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(format!(
            "invalid manifest name {s:?}: use the file's base name without directories or '..' \
             (letters, digits, '-', '_', '.'; it is also the ConfigMap key)"
        ));
    }
    Ok(())
}

/// One node in the `--dry-run` plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedNode {
    pub name: String,
    /// 1-based position in the upgrade order.
    pub order: usize,
    /// 1-based window it starts in when all nodes take equally long.
    pub window: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedNode {
    pub name: String,
    pub reason: NodeResult,
}

/// The `--dry-run` plan of a static-pod rollout (`kind: Plan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPlan {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub name: String,
    pub namespace: String,
    pub strategy: String,
    pub revision: String,
    pub total: usize,
    pub max_unavailable: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canary: Option<usize>,
    pub nodes: Vec<PlannedNode>,
    pub skipped: Vec<SkippedNode>,
    /// The nodes that would remain after `--canary` (not started in this run).
    pub after_canary: usize,
}

/// The plan the machine would follow from these nodes.
pub fn rollout_plan(
    name: &str,
    namespace: &str,
    strategy: &str,
    nodes: Vec<NodeInput>,
    options: &Options,
    target: &str,
) -> RolloutPlan {
    let r = Rollout::new(nodes, options, target);
    let mut planned = Vec::new();
    for (w, window) in r.planned_windows().into_iter().enumerate() {
        for n in window {
            planned.push(PlannedNode {
                name: n.to_string(),
                order: planned.len() + 1,
                window: w + 1,
            });
        }
    }
    let skipped = r
        .nodes()
        .filter_map(|(n, p)| match p {
            NodePhase::Skipped(reason) => Some(SkippedNode {
                name: n.to_string(),
                reason: reason.into(),
            }),
            _ => None,
        })
        .collect();
    RolloutPlan {
        header: crate::naming::ResultHeader::of("Plan"),
        name: name.into(),
        namespace: namespace.into(),
        strategy: strategy.into(),
        revision: target.into(),
        total: r.summary().total,
        max_unavailable: r.budget(),
        canary: options.canary,
        after_canary: r.pending().saturating_sub(planned.len()),
        nodes: planned,
        skipped,
    }
}

/// The plan as text: one line per window, then the skipped nodes.
pub fn plan_lines(p: &RolloutPlan) -> Vec<String> {
    let mut out = vec![headline(p)];
    let mut w = 0;
    for n in &p.nodes {
        if n.window != w {
            w = n.window;
            let names: Vec<&str> = p
                .nodes
                .iter()
                .filter(|x| x.window == w)
                .map(|x| x.name.as_str())
                .collect();
            out.push(format!("  window {w}: {}", names.join(", ")));
        }
    }
    out.extend(canary_line(p));
    for s in &p.skipped {
        out.push(format!("  skip {}: {}", s.name, s.reason));
    }
    out
}

/// How many windows the plan summary shows.
pub const SUMMARY_WINDOWS: usize = 3;

/// The plan summary printed before the confirmation prompt: [`plan_lines`] with at most
/// [`SUMMARY_WINDOWS`] windows of their first [`super::SUMMARY_NAMES`] names each, and one
/// line per skip reason, so 10,000 nodes (or `--max-unavailable 1` over them) stay a dozen
/// lines. `--dry-run` and `-o wide` print the full plan.
pub fn summary_lines(p: &RolloutPlan) -> Vec<String> {
    use super::{SUMMARY_NAMES, first_names};
    let mut out = vec![headline(p)];
    let mut windows: Vec<(usize, Vec<&str>)> = Vec::new();
    for n in &p.nodes {
        match windows.last_mut() {
            Some((w, names)) if *w == n.window => names.push(&n.name),
            _ => windows.push((n.window, vec![&n.name])),
        }
    }
    let mut elided = false;
    for (w, names) in windows.iter().take(SUMMARY_WINDOWS) {
        elided |= names.len() > SUMMARY_NAMES;
        out.push(format!(
            "  window {w}: {}",
            first_names(names, SUMMARY_NAMES)
        ));
    }
    if let Some(rest) = windows.get(SUMMARY_WINDOWS..).filter(|r| !r.is_empty()) {
        elided = true;
        let nodes: usize = rest.iter().map(|(_, n)| n.len()).sum();
        out.push(format!(
            "  … and {} more window(s) of {nodes} node(s)",
            rest.len()
        ));
    }
    out.extend(canary_line(p));
    let mut reasons: Vec<(NodeResult, Vec<&str>)> = Vec::new();
    for s in &p.skipped {
        match reasons.iter_mut().find(|(r, _)| *r == s.reason) {
            Some((_, names)) => names.push(&s.name),
            None => reasons.push((s.reason, vec![&s.name])),
        }
    }
    for (reason, names) in reasons {
        if let [name] = names.as_slice() {
            out.push(format!("  skip {name}: {reason}"));
            continue;
        }
        elided |= names.len() > SUMMARY_NAMES;
        out.push(format!("  skip {} node(s): {reason}", names.len()));
        out.push(format!("    {}", first_names(&names, SUMMARY_NAMES)));
    }
    if elided {
        out.push("(every node: --dry-run, or -o wide)".into());
    }
    out
}

fn headline(p: &RolloutPlan) -> String {
    format!(
        "static pod {}/{}: {} to revision {} on {} of {} node(s), at most {} at a time (sliding window)",
        p.namespace,
        p.name,
        p.strategy,
        p.revision,
        p.nodes.len(),
        p.total,
        p.max_unavailable
    )
}

fn canary_line(p: &RolloutPlan) -> Option<String> {
    p.canary.map(|c| {
        format!(
            "  --canary {c}: stops after these; {} node(s) wait for a re-run",
            p.after_canary
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nginx"},
               "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}})
    }

    #[test]
    fn hash_is_stable_and_ignores_its_own_annotation() {
        let a = revision_hash(&pod());
        let mut b = pod();
        b["metadata"]["annotations"] = json!({HASH_ANNOTATION: "x"});
        assert_eq!(a, revision_hash(&b));
        assert!(a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        let c = with_images(&pod(), &["nginx:1.19.2".parse().unwrap()]).unwrap();
        assert_ne!(a, revision_hash(&c));
    }

    #[test]
    fn images_name_containers() {
        let two = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        assert!(matches!(
            with_images(&two, &["z".parse().unwrap()]),
            Err(TemplateError::AmbiguousContainer { .. })
        ));
        assert!(matches!(
            with_images(&two, &["c=z".parse().unwrap()]),
            Err(TemplateError::UnknownContainer { .. })
        ));
        let t = with_images(&two, &["b=z".parse().unwrap()]).unwrap();
        assert_eq!(t["spec"]["containers"][1]["image"], "z");
        // (input, part of the reason)
        for (bad, why) in [
            ("", "is not a valid image reference: it is empty"),
            ("A=x", "the container name"),
            ("a=", "\"\" is not a valid image reference"),
            ("a b", "contains ' '"),
            ("-a=x", "the container name"),
            ("web=NGINX::", "tag \"\""),
            ("NGINX", "path component \"NGINX\""),
            ("web=nginx=1", "path component \"nginx=1\""),
        ] {
            let e = bad.parse::<ImageSpec>().expect_err(bad);
            assert!(
                e.contains(why) && e.contains("expected [CONTAINER=]IMAGE"),
                "{bad}: {e}"
            );
        }
        let ok: ImageSpec = "web=registry.local:5000/nginx:1.19.2".parse().unwrap();
        assert_eq!(
            (ok.container.as_deref(), ok.image.as_str()),
            (Some("web"), "registry.local:5000/nginx:1.19.2")
        );
    }

    #[test]
    fn pod_files_are_checked() {
        let cases = [
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n",
                true,
            ),
            (
                "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n",
                false,
            ),
            ("apiVersion: apps/v1\nkind: Deployment\nspec: {}\n", false),
            ("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n", false),
            (
                "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n",
                false,
            ),
            (
                "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: 'NGINX::'}]}\n",
                false,
            ),
            ("", false),
            ("{{{", false),
        ];
        for (text, ok) in cases {
            assert_eq!(parse_pod_file("-f x", text).is_ok(), ok, "{text}");
        }
    }

    #[test]
    fn manifest_names() {
        for ok in ["nginx", "yurt-hub", "a.b_c"] {
            assert!(check_manifest_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "../x", "a..b", "a b", "x\\y"] {
            assert!(check_manifest_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mirror_pods_give_back_the_template() {
        let mirror = json!({"metadata": {"name": "nginx-w1", "namespace": "default",
            "annotations": {"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "1", HASH_ANNOTATION: "h", "team": "a"}},
            "spec": {"nodeName": "w1", "serviceAccountName": "default", "priority": 0,
                "containers": [{"name": "web", "image": "nginx:1.19.1",
                    "volumeMounts": [{"name": "kube-api-access-x1", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
                "volumes": [{"name": "kube-api-access-x1", "projected": {}}]},
            "status": {"phase": "Running"}});
        let t = template_from_mirror(&mirror, "nginx");
        assert_eq!(
            t,
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "nginx", "namespace": "default", "annotations": {"team": "a"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}})
        );
    }

    #[test]
    fn the_plan_summary_stays_short_at_scale() {
        let node = |i: usize, revision: &str, ready: bool| NodeInput {
            name: format!("w-{i:04}"),
            labels: Default::default(),
            revision: Some(revision.into()),
            ready,
        };
        // 1,000 nodes one at a time, 3 already updated, 1 NotReady, 2 partitioned
        let mut nodes: Vec<NodeInput> = (0..1000).map(|i| node(i, "old", i != 7)).collect();
        for i in [10, 11, 12] {
            nodes[i] = node(i, "new", true);
        }
        let opts = Options {
            max_unavailable: "1".parse().unwrap(),
            partition: "2".parse().unwrap(),
            ..Options::default()
        };
        let plan = rollout_plan(
            "nginx",
            "default",
            "advanced-rolling-update",
            nodes,
            &opts,
            "new",
        );
        assert_eq!(plan.nodes.len(), 994);
        assert_eq!(
            plan_lines(&plan).len(),
            1 + 994 + 6,
            "the full plan: a line a window"
        );
        let head = "static pod default/nginx: advanced-rolling-update to revision new on 994 of 1000 node(s), at most 1 at a time (sliding window)";
        assert_eq!(
            summary_lines(&plan),
            vec![
                head,
                "  window 1: w-0000",
                "  window 2: w-0001",
                "  window 3: w-0002",
                "  … and 991 more window(s) of 991 node(s)",
                "  skip 3 node(s): already-updated",
                "    w-0010, w-0011, w-0012",
                "  skip w-0007: skipped-not-ready",
                "  skip 2 node(s): partitioned",
                "    w-0998, w-0999",
                "(every node: --dry-run, or -o wide)",
            ]
        );
        // a small plan is the full plan, without the hint
        let small: Vec<NodeInput> = (0..3).map(|i| node(i, "old", true)).collect();
        let plan = rollout_plan("nginx", "default", "ota", small, &Options::default(), "new");
        assert_eq!(summary_lines(&plan), plan_lines(&plan));
    }
}
