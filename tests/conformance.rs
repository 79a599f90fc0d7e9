//! The upstream-conformance suite (issue 13): every rendered profile is held against what the
//! pinned upstream binaries and charts really do, as written down in `tests/yurtsim/facts/`.
//! Each check is a pure function of the rendered objects and the facts, returning findings;
//! the tests assert there are none, and the planted tests break one fact on purpose to show
//! that the same functions notice. Every finding names the upstream source and the fix.
//!
//! Facts this suite needs beyond the facts files live in `tests/conformance/`, each cited.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde_json::{Value, json};
use yurtctl::render::{self, BootstrapTokenRef, Profile, RenderContext, TokenSecret, WorkingMode};
use yurtsim::facts::{self, Facts, Parsed};

const PROFILES: &[&str] = &["openyurt-v1.7", "openyurt-v1.6", "legacy-v0.6"];
/// The namespace the profiles are rendered into (RenderContext's default).
const NAMESPACE: &str = "kube-system";
/// Set on every rendered object by this suite only: the template it came from, for findings.
const TEMPLATE: &str = "conformance.yurtctl.io/template";

// ---------------------------------------------------------------------------------------------
// Rendering, as tests/render_profiles.rs does it.
// ---------------------------------------------------------------------------------------------

/// 1 control plane + 2 workers; every feature flag of the profile on.
fn context(p: &Profile) -> RenderContext {
    let token = BootstrapTokenRef::new("abcdef", "2026-01-02T03:04:05Z").unwrap();
    let secret = TokenSecret::new("0123456789abcdef").unwrap();
    // a real CA certificate: YurtHub v1.7's unit pins it by hash
    let ca = render::base64(include_str!("fixtures/cluster-ca.crt").as_bytes());
    let mut ctx = RenderContext::new(p, "https://192.168.0.10:6443", ca, token, secret);
    assert_eq!(ctx.namespace, NAMESPACE);
    ctx.cloud_nodes = vec!["control-plane".into()];
    ctx.edge_nodes = vec!["worker-1".into(), "worker-2".into()];
    ctx.features = p.flags().into_iter().map(str::to_owned).collect();
    if p.name == "legacy-v0.6" {
        ctx.tunnel_server_address = Some("203.0.113.7".into());
    }
    if p.node_pools.is_some() {
        ctx.node_pools = vec![render::NodePoolRef {
            name: "pool-1".into(),
            pool_type: "Edge".into(),
        }];
    }
    ctx
}

struct Rendered {
    profile: Profile,
    /// The cluster objects and, as Pods, the YurtHub static pod of each working mode.
    objects: Vec<Value>,
    /// The facts of every image the profile pins.
    facts: Vec<&'static Facts>,
}

fn rendered(name: &str) -> Rendered {
    let profile = Profile::load(name).unwrap_or_else(|e| panic!("{e}"));
    let ctx = context(&profile);
    let mut objects: Vec<Value> = render::render_cluster_objects(&profile, &ctx)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|o| {
            let mut v = o.to_value();
            v["metadata"]["annotations"][TEMPLATE] =
                json!(format!("templates/{name}/{}", o.template));
            v
        })
        .collect();
    for mode in [WorkingMode::Edge, WorkingMode::Cloud] {
        let pod = match &profile.yurthub {
            render::YurtHubDecl::Systemd(hub) => service_as_pod(&profile, hub, &objects, mode),
            _ => {
                let yaml = render::yurthub_manifest(&profile, &ctx, mode)
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut pod: Value = serde_saphyr::from_str(&yaml).unwrap();
                pod["metadata"]["annotations"][TEMPLATE] = json!(format!(
                    "templates/{name}/{} ({} static pod)",
                    profile.yurthub.static_pod().unwrap().node_template,
                    mode.as_str()
                ));
                pod
            }
        };
        objects.push(pod);
    }
    let mut pinned: Vec<&'static Facts> = Vec::new();
    for image in profile.images.values() {
        for f in facts::for_image(image) {
            if !pinned.iter().any(|p| std::ptr::eq(*p, f)) {
                pinned.push(f);
            }
        }
    }
    Rendered {
        profile,
        objects,
        facts: pinned,
    }
}

/// YurtHub run as a service, seen as the pod the checks know: the unit and drop-in of the
/// mode's ConfigMap installed on a scratch root with the node's values filled in as the servant
/// does, the command line systemd would start (yurtsim's systemd: Environment= expansion,
/// ExecStart= reset), and the image the binary is copied from.
fn service_as_pod(
    profile: &Profile,
    hub: &render::ServiceHub,
    objects: &[Value],
    mode: WorkingMode,
) -> Value {
    let cm_name = hub.unit_config_map.get(mode);
    let cm = objects
        .iter()
        .find(|o| kind(o) == "ConfigMap" && name(o) == cm_name)
        .unwrap_or_else(|| panic!("{}: no ConfigMap {cm_name}", profile.name));
    let text = |k: &str| cm["data"][k].as_str().unwrap_or_default().to_owned();
    let root = tempfile::tempdir().unwrap();
    let unit_dir = root.path().join("etc/systemd/system");
    std::fs::create_dir_all(unit_dir.join("yurthub.service.d")).unwrap();
    std::fs::write(
        unit_dir.join("yurthub.service"),
        text(render::ServiceHub::UNIT_KEY),
    )
    .unwrap();
    let drop_in = text(render::ServiceHub::DROP_IN_KEY)
        .replace("$(NODE_NAME)", "worker-1")
        .replace("$(NODEPOOL_NAME)", "pool-1");
    std::fs::write(
        unit_dir
            .join("yurthub.service.d")
            .join(render::ServiceHub::DROP_IN_KEY),
        drop_in,
    )
    .unwrap();
    let unit = yurtsim::nodes::systemd::load_unit(root.path(), "yurthub.service")
        .unwrap_or_else(|e| panic!("{}: yurthub.service does not load: {e}", profile.name));
    let argv = unit
        .command_line(root.path())
        .unwrap_or_else(|e| panic!("{}: no command line: {e}", profile.name));
    assert_eq!(
        argv[0], hub.binary_path,
        "the service runs the installed binary"
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("yurthub-service-{}", mode.as_str()),
            "namespace": NAMESPACE,
            "annotations": {TEMPLATE: format!(
                "templates/{}/ (ConfigMap {cm_name}: yurthub.service, {} service)",
                profile.name,
                mode.as_str()
            )},
        },
        // a service sees the host's whole file system
        "spec": {
            "containers": [{
                "name": "yurthub",
                "image": profile.images[&hub.binary_image],
                "command": argv,
                "volumeMounts": [{"name": "host", "mountPath": "/"}],
            }],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Findings
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Finding {
    check: &'static str,
    /// The rendered object (and its template) the finding is about.
    object: String,
    problem: String,
    /// Where upstream says so: repository@tag:path, and the facts file.
    source: String,
    /// What to change.
    fix: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] {}\n    problem: {}\n    upstream: {}\n    fix: {}",
            self.check, self.object, self.problem, self.source, self.fix
        )
    }
}

fn assert_conforms(profile: &str, check: &str, findings: &[Finding]) {
    assert!(
        findings.is_empty(),
        "profile {profile} does not conform to upstream ({check}): {} finding(s)\n\n{}\n",
        findings.len(),
        findings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Reading facts and objects
// ---------------------------------------------------------------------------------------------

fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        _ => items(v)
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
    }
}

/// `repository@tag:path` of a fact (or of its enclosing block), and the facts file.
fn cite(f: &Facts, fact: &Value) -> String {
    let s = strings(&fact["source"]).join("; ");
    let s = if s.is_empty() {
        format!(
            "{}@{}",
            f.doc["repository"].as_str().unwrap_or("?"),
            f.version
        )
    } else {
        s
    };
    format!("{s} [tests/yurtsim/facts/{}]", f.file)
}

fn kind(o: &Value) -> &str {
    o["kind"].as_str().unwrap_or_default()
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

fn namespace(o: &Value) -> &str {
    o["metadata"]["namespace"].as_str().unwrap_or_default()
}

/// `Kind namespace/name (template)`, how findings name an object.
fn id(o: &Value) -> String {
    let ns = namespace(o);
    let at = if ns.is_empty() {
        name(o).to_owned()
    } else {
        format!("{ns}/{}", name(o))
    };
    let template = o["metadata"]["annotations"][TEMPLATE]
        .as_str()
        .unwrap_or("planted");
    format!("{} {at} ({template})", kind(o))
}

fn find<'a>(objects: &'a [Value], k: &str, n: &str) -> Option<&'a Value> {
    objects.iter().find(|o| kind(o) == k && name(o) == n)
}

/// Placeholders the facts use for "the namespace it is installed into".
fn norm_ns(ns: &str) -> String {
    // "--leader-election-namespace (kube-system)", "$POD_NAMESPACE (kube-system)": the default
    let ns = ns
        .split_once('(')
        .and_then(|(_, d)| d.split_once(')'))
        .map_or(ns, |(d, _)| d.trim());
    if ns.is_empty() || ns.contains("Release.Namespace") || ns.contains("release-namespace") {
        NAMESPACE.to_owned()
    } else {
        ns.to_owned()
    }
}

fn pod_spec(o: &Value) -> Option<&Value> {
    match kind(o) {
        "Deployment" | "DaemonSet" | "StatefulSet" => Some(&o["spec"]["template"]["spec"]),
        "Pod" => Some(&o["spec"]),
        _ => None,
    }
}

/// The facts of the binary an image runs, among `pinned`.
fn facts_for<'f>(image: &str, pinned: &[&'f Facts]) -> Vec<&'f Facts> {
    let (repo, tag) = facts::image_parts(image);
    pinned
        .iter()
        .copied()
        .filter(|f| f.version == tag && f.images.contains(&repo))
        .collect()
}

/// The facts file that carries the binary's command line.
fn flags_facts<'f>(image: &str, pinned: &[&'f Facts]) -> Option<&'f Facts> {
    facts_for(image, pinned)
        .into_iter()
        .find(|f| f.doc["flags"].as_array().is_some_and(|a| !a.is_empty()))
}

/// A step of the binary's start-up, from whichever of its facts files describes it.
fn startup_step<'f>(fs: &[&'f Facts], step: &str) -> Option<(&'f Facts, &'f Value)> {
    fs.iter().find_map(|f| {
        items(&f.doc["startup"])
            .find(|s| s["step"] == step)
            .map(|s| (*f, s))
    })
}

fn first_field<'f>(fs: &[&'f Facts], key: &str) -> Option<(&'f Facts, &'f Value)> {
    fs.iter()
        .find_map(|f| (!f.doc[key].is_null()).then(|| (*f, &f.doc[key])))
}

/// How a container is started, after the kubelet's `$(VAR)` expansion and, for `sh -c`, the
/// shell's word splitting: what the binary's flag parser sees.
struct Invocation<'a> {
    object: String,
    image: String,
    container: &'a Value,
    pod: &'a Value,
    env: BTreeMap<String, String>,
    /// argv with argv[0] the binary, or why it cannot be known.
    argv: Result<Vec<String>, String>,
}

impl Invocation<'_> {
    fn parse(&self, f: &Facts) -> Result<Parsed, String> {
        let argv = self.argv.as_ref().map_err(Clone::clone)?;
        facts::parse_args(&f.flags(), &argv[1..])
    }
}

fn invocations(objects: &[Value]) -> Vec<Invocation<'_>> {
    let mut out = Vec::new();
    for o in objects {
        let Some(pod) = pod_spec(o) else { continue };
        for c in items(&pod["containers"]).chain(items(&pod["initContainers"])) {
            // sample values: only their syntax matters to the flag parser
            let env: BTreeMap<String, String> = items(&c["env"])
                .filter_map(|e| {
                    let value = match (
                        &e["value"],
                        e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
                    ) {
                        (Value::String(v), _) => v.clone(),
                        (_, Some("spec.nodeName")) => "worker-1".into(),
                        (_, Some(p)) if p.ends_with("IP") => "192.0.2.10".into(),
                        _ => "sample".into(),
                    };
                    Some((e["name"].as_str()?.to_owned(), value))
                })
                .collect();
            let raw: Vec<String> = strings(&c["command"])
                .into_iter()
                .chain(strings(&c["args"]))
                .map(|a| kubelet_expand(&a, &env))
                .collect();
            out.push(Invocation {
                object: format!("{} container {}", id(o), c["name"].as_str().unwrap_or("?")),
                image: c["image"].as_str().unwrap_or_default().to_owned(),
                container: c,
                pod,
                env,
                argv: shell_words(raw),
            });
        }
    }
    out
}

/// The kubelet's expansion of command and args: `$(VAR)` of a defined variable becomes its
/// value, `$$` becomes `$`, anything else stays as written.
fn kubelet_expand(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("$$") {
            out.push('$');
            rest = r;
        } else if let Some((var, r)) = rest
            .strip_prefix("$(")
            .and_then(|r| r.split_once(')'))
            .filter(|(var, _)| env.contains_key(*var))
        {
            out.push_str(&env[var]);
            rest = r;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// `sh -c "exec bin --flag ..."` becomes `bin --flag ...`; other commands are kept. Only a
/// single simple command is understood (words, quotes, `$(...)`), which is all templates need.
fn shell_words(argv: Vec<String>) -> Result<Vec<String>, String> {
    let is_shell = argv
        .first()
        .is_some_and(|a| matches!(a.rsplit('/').next(), Some("sh" | "bash")));
    if !is_shell {
        return if argv.is_empty() {
            Err("no command: the image's entrypoint is not known to the facts".into())
        } else {
            Ok(argv)
        };
    }
    let script = match argv.as_slice() {
        [_, c, script] if c == "-c" => script,
        _ => return Err(format!("a shell started as {argv:?}")),
    };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut depth = 0;
    for c in script.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') if depth == 0 => {
                quote = Some(c);
                in_word = true;
            }
            (None, '(') if word.ends_with('$') || depth > 0 => {
                depth += 1;
                word.push(c);
            }
            (None, ')') if depth > 0 => {
                depth -= 1;
                word.push(c);
            }
            (None, c) if depth == 0 && c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, ';' | '&' | '|' | '<' | '>' | '`') if depth == 0 => {
                return Err(format!("shell script is more than one command: {script:?}"));
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.first().is_some_and(|w| w == "exec") {
        words.remove(0);
    }
    if words.is_empty() {
        return Err(format!("empty shell script {script:?}"));
    }
    Ok(words)
}

/// The --controllers entries of yurt-manager (a stringSlice: repeated and comma-separated).
fn slice_values(parsed: &Parsed, flag: &str) -> Vec<String> {
    parsed
        .values
        .get(flag)
        .into_iter()
        .flatten()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The value of a flag as the binary sees it: given, or its default.
fn flag_value(f: &Facts, parsed: &Parsed, flag: &str) -> Option<String> {
    parsed.get(flag).map(str::to_owned).or_else(|| {
        items(&f.doc["flags"])
            .find(|x| x["name"] == flag)
            .and_then(|x| match &x["default"] {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                v => Some(v.to_string()),
            })
    })
}

/// yurt-manager's enabled controllers, from `--controllers` with the facts' alias map,
/// known controllers and disabled-by-default set (k8s.io/controller-manager's
/// IsControllerEnabled: first exact match wins, else `*` enables the on-by-default ones).
/// Err: the entries the binary rejects as unknown.
fn enabled_controllers(step: &Value, entries: &[String]) -> Result<BTreeSet<String>, Vec<String>> {
    let aliases = &step["aliases"];
    let known = strings(&step["knownControllers"]);
    let off_by_default = strings(&step["disabledByDefault"]);
    let canonical = |n: &str| aliases[n].as_str().unwrap_or(n).to_owned();
    let normalised: Vec<String> = entries
        .iter()
        .map(|e| match e.strip_prefix('-') {
            Some(n) => format!("-{}", canonical(n)),
            None if e == "*" => e.clone(),
            None => canonical(e),
        })
        .collect();
    let unknown: Vec<String> = entries
        .iter()
        .zip(&normalised)
        .filter(|(_, n)| *n != "*" && !known.contains(&n.trim_start_matches('-').to_owned()))
        .map(|(e, _)| e.trim_start_matches('-').to_owned())
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    Ok(known
        .iter()
        .filter(|c| {
            normalised
                .iter()
                .find_map(|e| {
                    if e == *c {
                        Some(true)
                    } else if e.strip_prefix('-') == Some(c.as_str()) {
                        Some(false)
                    } else {
                        None
                    }
                })
                .unwrap_or_else(|| {
                    normalised.iter().any(|e| e == "*") && !off_by_default.contains(c)
                })
        })
        .cloned()
        .collect())
}

/// For every invocation of a binary with a `parse-controllers` step: its enabled controllers.
fn controllers_of<'f>(
    objects: &[Value],
    pinned: &[&'f Facts],
) -> Vec<(&'f Facts, BTreeSet<String>, Parsed)> {
    let mut out = Vec::new();
    for inv in invocations(objects) {
        let fs = facts_for(&inv.image, pinned);
        let (Some(ff), Some((_, step))) = (
            flags_facts(&inv.image, pinned),
            startup_step(&fs, "parse-controllers"),
        ) else {
            continue;
        };
        let Ok(parsed) = inv.parse(ff) else { continue };
        if let Ok(on) = enabled_controllers(step, &slice_values(&parsed, "controllers")) {
            out.push((ff, on, parsed));
        }
    }
    out
}

/// The rendered CRDs: (group, version, plural) served, and kind -> plural per group.
struct Crds {
    served: BTreeSet<(String, String, String)>,
    plural: BTreeMap<(String, String), String>,
}

fn crds(objects: &[Value]) -> Crds {
    let mut out = Crds {
        served: BTreeSet::new(),
        plural: BTreeMap::new(),
    };
    for o in objects
        .iter()
        .filter(|o| kind(o) == "CustomResourceDefinition")
    {
        let spec = &o["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_owned();
        let plural = spec["names"]["plural"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(k) = spec["names"]["kind"].as_str() {
            out.plural
                .insert((group.clone(), k.to_owned()), plural.clone());
        }
        for v in items(&spec["versions"]).filter(|v| v["served"] == true) {
            let version = v["name"].as_str().unwrap_or_default().to_owned();
            out.served.insert((group.clone(), version, plural.clone()));
        }
    }
    out
}

/// Kubernetes' own API groups (the core group and `*.k8s.io`): served by every cluster the
/// profile supports, not by a CRD the profile must render.
fn builtin(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io")
}

// ---------------------------------------------------------------------------------------------
// 1. Flags
// ---------------------------------------------------------------------------------------------

/// Flag rules the facts state in prose (validation messages), as data: tests/conformance/.
fn flag_rules() -> Vec<Value> {
    let text = include_str!("conformance/flag-rules.yaml");
    let doc: Value = serde_saphyr::from_str(text).unwrap();
    items(&doc["rules"]).cloned().collect()
}

fn check_flags(objects: &[Value], pinned: &[&Facts]) -> Vec<Finding> {
    let mut out = Vec::new();
    for inv in invocations(objects) {
        let Some(f) = flags_facts(&inv.image, pinned) else {
            continue;
        };
        let binary = format!("{} {}", f.component, f.version);
        let finding = |problem: String, source: String, fix: String| Finding {
            check: "flags",
            object: inv.object.clone(),
            problem,
            source,
            fix,
        };
        let parsed = match inv.parse(f) {
            Ok(p) => p,
            Err(e) => {
                let (code, _) = f.unknown_flag();
                out.push(finding(
                    format!("{binary} refuses its command line: {e:?} (exit {code} before it starts)"),
                    cite(f, &f.doc["unknownFlag"]),
                    format!(
                        "pass only flags {binary} defines (see `flags` in the facts file); remove or rename the offending argument"
                    ),
                ));
                continue;
            }
        };
        for flag in items(&f.doc["flags"]).filter(|x| x["required"] == true) {
            let n = flag["name"].as_str().unwrap_or_default();
            if !parsed.values.contains_key(n) {
                out.push(finding(
                    format!("required flag --{n} is missing; {binary} does not start without it"),
                    cite(f, flag),
                    format!("add `- --{n}=<value>` to the container's command/args"),
                ));
            }
        }
        for req in items(&f.doc["requiredFlags"]) {
            let n = req["flag"].as_str().or(req.as_str()).unwrap_or_default();
            let by_env = req["orEnv"]
                .as_str()
                .is_some_and(|e| inv.env.contains_key(e));
            if !parsed.values.contains_key(n) && !by_env {
                out.push(finding(
                    format!(
                        "required flag --{n} is missing: {}",
                        req["message"].as_str().unwrap_or("")
                    ),
                    cite(f, req),
                    format!(
                        "add `- --{n}=<value>`{}",
                        req["orEnv"]
                            .as_str()
                            .map(|e| format!(" or env {e}"))
                            .unwrap_or_default()
                    ),
                ));
            }
        }
        for req in items(&f.doc["requiredEnv"]) {
            let e = req["env"].as_str().unwrap_or_default();
            if !inv.env.contains_key(e) {
                out.push(finding(
                    format!(
                        "required environment variable {e} is not set: {}",
                        req["message"].as_str().unwrap_or("")
                    ),
                    cite(f, req),
                    format!("add `env: [{{name: {e}, valueFrom: ...}}]` to the container"),
                ));
            }
        }
        for flag in items(&f.doc["flags"]).filter(|x| x["values"].is_array()) {
            let n = flag["name"].as_str().unwrap_or_default();
            let allowed = strings(&flag["values"]);
            for v in slice_values(&parsed, n) {
                if !allowed.contains(&v) {
                    out.push(finding(
                        format!("--{n}={v} is not a value {binary} knows ({allowed:?})"),
                        cite(f, flag),
                        format!("use one of {allowed:?} for --{n}"),
                    ));
                }
            }
        }
        if let Some((sf, step)) = startup_step(&facts_for(&inv.image, pinned), "parse-controllers")
            && let Err(unknown) = enabled_controllers(step, &slice_values(&parsed, "controllers"))
        {
            out.push(finding(
                format!("--controllers names controllers {binary} does not know: {unknown:?} (\"%q is not in the list of known controllers\", exit 1)"),
                cite(sf, step),
                "use names from knownControllers or the alias map of the facts' parse-controllers step".into(),
            ));
        }
        for rule in flag_rules().iter().filter(|r| {
            r["component"] == f.component.as_str() && r["version"] == f.version.as_str()
        }) {
            let exempt = rule["unless"]
                .as_object()
                .into_iter()
                .flatten()
                .any(|(flag, v)| flag_value(f, &parsed, flag).as_deref() == v.as_str());
            let one_of = strings(&rule["oneOf"]);
            let given = one_of
                .iter()
                .any(|n| parsed.get(n).is_some_and(|v| !v.is_empty()));
            if !exempt && !given {
                out.push(finding(
                    format!(
                        "none of {one_of:?} is given: {binary} exits with \"validate options: {}\"",
                        rule["message"].as_str().unwrap_or("")
                    ),
                    format!(
                        "{} [tests/conformance/flag-rules.yaml]",
                        rule["source"].as_str().unwrap_or("")
                    ),
                    format!("pass one of {one_of:?}"),
                ));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 2. API versions looked up or watched at start
// ---------------------------------------------------------------------------------------------

/// One group/version/resource a binary needs served, and what happens when it is not.
struct Need<'f> {
    facts: &'f Facts,
    who: String,
    group: String,
    version: String,
    resource: String,
    effect: String,
    fact: &'f Value,
}

/// `apps.openyurt.io/v1beta1 NodePool` or `v1 Node` (a watch entry) -> (group, version, kind).
fn split_watch(w: &str) -> Option<(String, String, String)> {
    let mut words = w.split_whitespace();
    let gv = words.next()?;
    let k = words.next()?;
    let (g, v) = gv.rsplit_once('/').unwrap_or(("", gv));
    Some((g.to_owned(), v.to_owned(), k.to_owned()))
}

fn needs<'f>(objects: &[Value], pinned: &[&'f Facts]) -> Vec<Need<'f>> {
    let rendered = crds(objects);
    let mut out = Vec::new();
    // yurt-manager: the lookups and watches of every enabled controller
    for (ff, enabled, _) in controllers_of(objects, pinned) {
        let fs: Vec<&Facts> = pinned
            .iter()
            .copied()
            .filter(|f| f.component == ff.component && f.version == ff.version)
            .collect();
        let Some((f, step)) = startup_step(&fs, "setup-controllers") else {
            continue;
        };
        for c in items(&step["controllers"]) {
            let who = c["name"].as_str().unwrap_or_default().to_owned();
            if !enabled.contains(&who) {
                continue;
            }
            for l in items(&c["lookups"]).filter(|l| l["onFailure"] == "fatal") {
                out.push(Need {
                    facts: f,
                    who: who.clone(),
                    group: l["group"].as_str().unwrap_or_default().into(),
                    version: l["version"].as_str().unwrap_or_default().into(),
                    resource: l["resource"].as_str().unwrap_or_default().into(),
                    effect: "looked up when the controller is added: 'unable to setup controllers', exit 1".into(),
                    fact: c,
                });
            }
            for (g, v, k) in items(&c["watches"]).filter_map(|w| split_watch(w.as_str()?)) {
                let resource = rendered
                    .plural
                    .get(&(g.clone(), k.clone()))
                    .cloned()
                    .unwrap_or_else(|| format!("{}s", k.to_lowercase()));
                out.push(Need {
                    facts: f,
                    who: who.clone(),
                    group: g,
                    version: v,
                    resource,
                    effect: format!(
                        "watched as {k}: caches never sync, the manager exits 1 after 2m ('failed to wait for caches to sync')"
                    ),
                    fact: c,
                });
            }
        }
    }
    for f in pinned {
        // informers a binary starts (yurt-app-manager)
        for i in items(&f.doc["informers"]) {
            out.push(Need {
                facts: f,
                who: i["by"].as_str().unwrap_or("informer").to_owned(),
                group: i["group"].as_str().unwrap_or_default().into(),
                version: i["version"].as_str().unwrap_or_default().into(),
                resource: i["resource"].as_str().unwrap_or_default().into(),
                effect: format!(
                    "informer waited on by {} ",
                    i["waitedOnBy"].as_str().unwrap_or("start-up")
                ),
                fact: i,
            });
        }
        // kinds discovered before main (yurt-app-manager's custom resource gate)
        if let Some(gate) = items(&f.doc["startup"]).find(|s| s["step"] == "package-init-crd-gate")
        {
            let g = gate["group"].as_str().unwrap_or_default();
            for k in strings(&gate["kinds"]) {
                out.push(Need {
                    facts: f,
                    who: "custom resource gate".into(),
                    group: g.into(),
                    version: gate["version"].as_str().unwrap_or_default().into(),
                    resource: rendered
                        .plural
                        .get(&(g.to_owned(), k.clone()))
                        .cloned()
                        .unwrap_or_else(|| format!("{}s", k.to_lowercase())),
                    effect: gate["consequence"]
                        .as_str()
                        .unwrap_or_default()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    fact: gate,
                });
            }
        }
        // versioned informers in apiAccess (yurthub's NodePool informer gates its /v1/readyz)
        for access in items(&f.doc["apiAccess"]) {
            for r in items(&access["rules"]).filter(|r| r["version"].is_string()) {
                if !flag_condition_holds(objects, pinned, f, &r["when"]) {
                    continue;
                }
                for g in strings(&r["apiGroups"]) {
                    for res in strings(&r["resources"]) {
                        out.push(Need {
                            facts: f,
                            who: format!(
                                "{} ({})",
                                f.component,
                                access["identity"].as_str().unwrap_or("")
                            ),
                            group: g.clone(),
                            version: r["version"].as_str().unwrap_or_default().into(),
                            resource: res,
                            effect: format!(
                                "{} on it: {}",
                                strings(&r["verbs"]).join("/"),
                                r["when"].as_str().unwrap_or("always")
                            ),
                            fact: r,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether a `when: "--flag ..."` condition holds for the rendered invocations of the binary
/// (the flag given, or its default, is true); conditions that name no flag hold.
fn flag_condition_holds(objects: &[Value], pinned: &[&Facts], f: &Facts, when: &Value) -> bool {
    let Some(flag) = when
        .as_str()
        .and_then(|w| w.strip_prefix("--"))
        .and_then(|w| w.split(|c: char| c.is_whitespace()).next())
    else {
        return true;
    };
    invocations(objects)
        .iter()
        .filter(|inv| {
            facts_for(&inv.image, pinned)
                .iter()
                .any(|x| std::ptr::eq(*x, f))
        })
        .filter_map(|inv| inv.parse(f).ok())
        .any(|p| flag_value(f, &p, flag).as_deref() == Some("true"))
}

fn check_api_versions(objects: &[Value], pinned: &[&Facts]) -> Vec<Finding> {
    let served = crds(objects).served;
    // one finding per (binary, consumer, group/version/resource): a lookup and a watch of the
    // same thing are one problem
    let mut by_key: BTreeMap<(String, String, String), Finding> = BTreeMap::new();
    for n in needs(objects, pinned) {
        if builtin(&n.group) {
            continue;
        }
        if served.contains(&(n.group.clone(), n.version.clone(), n.resource.clone())) {
            continue;
        }
        let gvr = format!("{}/{}, Resource={}", n.group, n.version, n.resource);
        let crd = format!("{}.{}", n.resource, n.group);
        let binary = format!("{} {}", n.facts.component, n.facts.version);
        let entry = by_key
            .entry((binary.clone(), n.who.clone(), gvr.clone()))
            .or_insert_with(|| Finding {
                check: "api-versions",
                object: format!("CustomResourceDefinition {crd}"),
                problem: format!("{binary} ({}) needs {gvr} served, which no rendered CRD serves", n.who),
                source: cite(n.facts, n.fact),
                fix: format!(
                    "in the CRD {crd}, add (or set) `- name: {}` with `served: true` under spec.versions",
                    n.version
                ),
            });
        entry.problem.push_str(&format!("; {}", n.effect.trim()));
    }
    by_key.into_values().collect()
}

// ---------------------------------------------------------------------------------------------
// 3. CRDs
// ---------------------------------------------------------------------------------------------

fn check_crds(objects: &[Value], pinned: &[&Facts]) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in pinned {
        for fact in items(&f.doc["crds"]) {
            let crd_name = fact["name"].as_str().unwrap_or_default();
            let finding = |object: String, problem: String, fix: String| Finding {
                check: "crds",
                object,
                problem,
                source: cite(f, fact),
                fix,
            };
            let Some(o) = find(objects, "CustomResourceDefinition", crd_name) else {
                out.push(finding(
                    format!("CustomResourceDefinition {crd_name}"),
                    format!("upstream ships the CRD {crd_name} with {} {}; the profile does not render it", f.component, f.version),
                    "render it (add it to the profile's crds and templates)".into(),
                ));
                continue;
            };
            let spec = &o["spec"];
            for (field, want, have) in [
                ("spec.group", &fact["group"], &spec["group"]),
                ("spec.names.kind", &fact["kind"], &spec["names"]["kind"]),
                ("spec.scope", &fact["scope"], &spec["scope"]),
            ] {
                if !want.is_null() && want != have {
                    out.push(finding(
                        id(o),
                        format!("{field} is {have}, upstream {want}"),
                        format!("set {field}: {want}"),
                    ));
                }
            }
            let versions = |list: &Value| -> BTreeMap<String, (bool, bool, BTreeSet<String>)> {
                items(list)
                    .map(|v| {
                        let subs: BTreeSet<String> = match &v["subresources"] {
                            Value::Array(a) => a
                                .iter()
                                .filter_map(|s| s.as_str().map(str::to_owned))
                                .collect(),
                            Value::Object(m) => m.keys().cloned().collect(),
                            // yurt-app-manager's facts give the subresources once, for all versions
                            _ => fact["subresources"]
                                .as_object()
                                .into_iter()
                                .flatten()
                                .map(|(k, _)| k.clone())
                                .collect(),
                        };
                        (
                            v["name"].as_str().unwrap_or_default().to_owned(),
                            (v["served"] == true, v["storage"] == true, subs),
                        )
                    })
                    .collect()
            };
            let want = versions(&fact["versions"]);
            let have = versions(&spec["versions"]);
            let pick = |m: &BTreeMap<String, (bool, bool, BTreeSet<String>)>,
                        storage: bool|
             -> Vec<String> {
                m.iter()
                    .filter(|(_, (s, st, _))| if storage { *st } else { *s })
                    .map(|(n, _)| n.clone())
                    .collect()
            };
            if pick(&want, false) != pick(&have, false) {
                out.push(finding(
                    id(o),
                    format!(
                        "served versions are {:?}; upstream's CRD for {} {} serves {:?}",
                        pick(&have, false),
                        f.component,
                        f.version,
                        pick(&want, false)
                    ),
                    format!(
                        "serve exactly {:?} (spec.versions[].served), as upstream's CRD",
                        pick(&want, false)
                    ),
                ));
            }
            if pick(&want, true) != pick(&have, true) {
                out.push(finding(
                    id(o),
                    format!(
                        "storage version is {:?}, upstream {:?}",
                        pick(&have, true),
                        pick(&want, true)
                    ),
                    format!("set `storage: true` on {:?} only", pick(&want, true)),
                ));
            }
            for (v, (_, _, subs)) in &want {
                if let Some((_, _, got)) = have.get(v)
                    && got != subs
                {
                    out.push(finding(
                        id(o),
                        format!("version {v} has subresources {got:?}, upstream {subs:?}"),
                        format!(
                            "set spec.versions[{v}].subresources to {}",
                            subs.iter()
                                .map(|s| format!("{s}: {{}}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
            let want_conv = fact["conversion"]["strategy"].as_str().unwrap_or("None");
            let have_conv = spec["conversion"]["strategy"].as_str().unwrap_or("None");
            if want_conv != have_conv {
                out.push(finding(
                    id(o),
                    format!("conversion strategy {have_conv}, upstream {want_conv}"),
                    format!("set spec.conversion.strategy: {want_conv}"),
                ));
            } else if want_conv == "Webhook" {
                let svc = &spec["conversion"]["webhook"]["clientConfig"]["service"];
                let want_svc = fact["conversion"]["service"]
                    .as_str()
                    .and_then(|s| s.rsplit('/').next())
                    .unwrap_or_default();
                let want_path = fact["conversion"]["path"].as_str().unwrap_or_default();
                if svc["name"] != want_svc || svc["path"] != want_path {
                    out.push(finding(
                        id(o),
                        format!("conversion webhook is service {} path {}, upstream {want_svc} {want_path}", svc["name"], svc["path"]),
                        format!("spec.conversion.webhook.clientConfig.service: {{name: {want_svc}, namespace: {NAMESPACE}, path: {want_path}}}"),
                    ));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 4. Webhooks
// ---------------------------------------------------------------------------------------------

/// What a binary's webhook server serves and which objects it needs, from either shape of
/// facts (yurt-manager's `endpoints[].paths` + `webhookStartup`, yurt-app-manager's
/// `endpoints` + `environment` + the `webhook-configurations-wait` step).
struct WebhookFacts<'f> {
    facts: &'f Facts,
    /// (path, mutating|validating|conversion, gatedBy, source)
    served: Vec<(String, String, Value, String)>,
    port: Option<i64>,
    mutating: Option<String>,
    validating: Option<String>,
    secret: Option<String>,
    service: Option<String>,
    /// the flag or env variable naming the namespace of the Secret and Service, and its default
    namespace: (Option<String>, Option<String>, String),
    names_source: String,
}

fn after_default(s: &str) -> String {
    s.rsplit_once("default ")
        .map_or(s, |(_, d)| d)
        .trim()
        .to_owned()
}

fn webhook_facts<'f>(f: &'f Facts) -> Option<WebhookFacts<'f>> {
    let mut w = WebhookFacts {
        facts: f,
        served: Vec::new(),
        port: None,
        mutating: None,
        validating: None,
        secret: None,
        service: None,
        namespace: (None, None, NAMESPACE.into()),
        names_source: String::new(),
    };
    for e in items(&f.doc["endpoints"]) {
        for p in items(&e["paths"]) {
            w.port = e["port"].as_i64();
            w.served.push((
                p["path"].as_str().unwrap_or_default().into(),
                p["kind"].as_str().unwrap_or_default().into(),
                p["gatedBy"].clone(),
                cite(f, e),
            ));
        }
        let path = e["path"].as_str().unwrap_or_default();
        for (prefix, k) in [("/mutate-", "mutating"), ("/validate-", "validating")] {
            if path.starts_with(prefix) {
                w.port = e["port"].as_i64();
                w.served
                    .push((path.into(), k.into(), Value::Null, cite(f, e)));
            }
        }
    }
    if w.served.is_empty() {
        return None;
    }
    let start = &f.doc["webhookStartup"];
    if start.is_object() {
        w.mutating = start["configurationNames"]["mutating"]
            .as_str()
            .map(str::to_owned);
        w.validating = start["configurationNames"]["validating"]
            .as_str()
            .map(str::to_owned);
        w.secret = start["certSecret"]["name"].as_str().map(after_default);
        w.service = start["serviceName"].as_str().map(after_default);
        w.namespace.0 = start["certSecret"]["namespace"]
            .as_str()
            .and_then(|s| s.strip_prefix("--"))
            .map(str::to_owned);
        w.names_source = cite(f, &start["configurationNames"]);
    } else if let Some(step) =
        items(&f.doc["startup"]).find(|s| s["step"] == "webhook-configurations-wait")
    {
        for o in items(&step["waitsFor"]) {
            let n = o["name"].as_str().map(str::to_owned);
            match o["kind"].as_str() {
                Some("MutatingWebhookConfiguration") => w.mutating = n,
                Some("ValidatingWebhookConfiguration") => w.validating = n,
                _ => {}
            }
        }
        let env = |n: &str| items(&f.doc["environment"]).find(|e| e["name"] == n);
        w.secret = env("SECRET_NAME")
            .and_then(|e| e["default"].as_str())
            .map(str::to_owned);
        w.service = env("SERVICE_NAME")
            .and_then(|e| e["default"].as_str())
            .map(str::to_owned);
        if let Some(e) = env("POD_NAMESPACE") {
            w.namespace = (
                None,
                Some("POD_NAMESPACE".into()),
                e["default"].as_str().unwrap_or(NAMESPACE).into(),
            );
        }
        w.names_source = cite(f, step);
    }
    Some(w)
}

/// The namespace a binary keeps its webhook Secret and Service in, as rendered.
fn webhook_namespace(w: &WebhookFacts, inv: &Invocation) -> String {
    match &w.namespace {
        (Some(flag), _, _) => inv
            .parse(w.facts)
            .ok()
            .and_then(|p| flag_value(w.facts, &p, flag))
            .unwrap_or_else(|| NAMESPACE.into()),
        (_, Some(var), default) => inv.env.get(var).cloned().unwrap_or_else(|| default.clone()),
        (None, None, default) => default.clone(),
    }
}

fn rules_set(v: &Value, key: &str) -> BTreeSet<String> {
    items(v).flat_map(|r| strings(&r[key])).collect()
}

/// `[a, b]`, as a YAML flow sequence (`""` for the core group).
fn flow(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let quoted: Vec<String> = items
        .into_iter()
        .map(|s| match s.as_ref() {
            "" => "\"\"".to_owned(),
            s => s.to_owned(),
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

fn check_webhooks(objects: &[Value], pinned: &[&Facts]) -> Vec<Finding> {
    let mut out = Vec::new();
    let enabled: Vec<(&Facts, BTreeSet<String>, Parsed)> = controllers_of(objects, pinned);
    for inv in invocations(objects) {
        for f in facts_for(&inv.image, pinned) {
            let Some(w) = webhook_facts(f) else { continue };
            let binary = format!("{} {}", f.component, f.version);
            let ns = webhook_namespace(&w, &inv);
            let controllers = enabled
                .iter()
                .find(|(ff, ..)| ff.version == f.version && ff.component == f.component);
            let gate_open = |gate: &Value| -> Result<(), String> {
                if let Some(c) = gate["controller"].as_str()
                    && controllers.is_some_and(|(_, on, _)| !on.contains(c))
                {
                    return Err(format!("controller {c} is disabled by --controllers"));
                }
                if let Some(i) = gate["independentWebhook"].as_str()
                    && let Some((_, _, parsed)) = controllers
                {
                    let off = slice_values(parsed, "disable-independent-webhooks");
                    if off.iter().any(|x| x == i || x == "*") {
                        return Err(format!("--disable-independent-webhooks names {i}"));
                    }
                }
                Ok(())
            };
            for (k, want) in [
                ("MutatingWebhookConfiguration", &w.mutating),
                ("ValidatingWebhookConfiguration", &w.validating),
            ] {
                let Some(want) = want else { continue };
                let Some(config) = find(objects, k, want) else {
                    out.push(Finding {
                        check: "webhooks",
                        object: format!("{k} {want}"),
                        problem: format!("{binary} waits for {k} {want} at start and exits 1 when it does not exist"),
                        source: w.names_source.clone(),
                        fix: format!("render a {k} named {want}"),
                    });
                    continue;
                };
                let config_kind = if k.starts_with("Mutating") {
                    "mutating"
                } else {
                    "validating"
                };
                for hook in items(&config["webhooks"]) {
                    let svc = &hook["clientConfig"]["service"];
                    let path = svc["path"].as_str().unwrap_or_default();
                    let hook_name = hook["name"].as_str().unwrap_or_default();
                    let object = format!("{} webhook {hook_name}", id(config));
                    match w.served.iter().find(|(p, kk, ..)| p == path && kk == config_kind) {
                        None => out.push(Finding {
                            check: "webhooks",
                            object: object.clone(),
                            problem: format!(
                                "{binary} serves no {config_kind} webhook at {path}: at start it drops this entry from the configuration, so it never runs"
                            ),
                            source: w.served.first().map(|s| s.3.clone()).unwrap_or_default(),
                            fix: format!(
                                "point it at a path {binary} serves, one of: {}",
                                w.served.iter().filter(|s| s.1 == config_kind).map(|s| s.0.as_str()).collect::<Vec<_>>().join(", ")
                            ),
                        }),
                        Some((_, _, gate, source)) => {
                            if let Err(why) = gate_open(gate) {
                                out.push(Finding {
                                    check: "webhooks",
                                    object: object.clone(),
                                    problem: format!("{binary} does not register {path} because {why}; the entry is dropped at start"),
                                    source: source.clone(),
                                    fix: "enable the controller or drop the entry".into(),
                                });
                            }
                        }
                    }
                    if let Some(want_svc) = &w.service
                        && (svc["name"] != want_svc.as_str() || svc["namespace"] != ns.as_str())
                    {
                        out.push(Finding {
                            check: "webhooks",
                            object,
                            problem: format!("clientConfig.service is {}/{}, but {binary} serves as {ns}/{want_svc}", svc["namespace"], svc["name"]),
                            source: w.names_source.clone(),
                            fix: format!("clientConfig.service: {{name: {want_svc}, namespace: {ns}, path: {path}}}"),
                        });
                    }
                }
            }
            // the chart's configuration entries the binary serves must all be there, alike
            for chart in items(&f.doc["webhooks"]) {
                let (k, cname) = chart["configuration"]
                    .as_str()
                    .and_then(|c| c.split_once('/'))
                    .unwrap_or_default();
                for hook in items(&chart["webhooks"]).filter(|h| h["registeredByBinary"] == true) {
                    let path = hook["path"].as_str().unwrap_or_default();
                    let have = find(objects, k, cname).and_then(|c| {
                        items(&c["webhooks"]).find(|h| h["clientConfig"]["service"]["path"] == path)
                    });
                    let wanted_rules = format!(
                        "rules: [{{apiGroups: {}, apiVersions: {}, resources: {}, operations: {}}}], failurePolicy: {}, sideEffects: {}",
                        flow(rules_set(&hook["rules"], "apiGroups")),
                        flow(rules_set(&hook["rules"], "apiVersions")),
                        flow(rules_set(&hook["rules"], "resources")),
                        flow(rules_set(&hook["rules"], "operations")),
                        hook["failurePolicy"].as_str().unwrap_or(""),
                        hook["sideEffects"].as_str().unwrap_or(""),
                    );
                    let object = format!("{k} {cname}");
                    let hook_name = hook["name"].as_str().unwrap_or_default();
                    match have {
                        None => out.push(Finding {
                            check: "webhooks",
                            object,
                            problem: format!("upstream's {hook_name} at {path} (served by {binary}) is missing, so that admission never runs"),
                            source: cite(f, chart),
                            fix: format!("add webhook {hook_name}: clientConfig.service.path {path}, {wanted_rules}"),
                        }),
                        Some(h) => {
                            let differs = ["apiGroups", "apiVersions", "resources", "operations"]
                                .iter()
                                .any(|key| rules_set(&h["rules"], key) != rules_set(&hook["rules"], key))
                                || h["failurePolicy"] != hook["failurePolicy"]
                                || h["sideEffects"] != hook["sideEffects"];
                            if differs {
                                out.push(Finding {
                                    check: "webhooks",
                                    object: format!("{object} webhook {}", h["name"].as_str().unwrap_or_default()),
                                    problem: format!("the entry for {path} differs from upstream's {hook_name}"),
                                    source: cite(f, chart),
                                    fix: format!("set {wanted_rules}"),
                                });
                            }
                        }
                    }
                }
            }
            for (k, want) in [("Secret", &w.secret), ("Service", &w.service)] {
                let Some(want) = want else { continue };
                if !objects
                    .iter()
                    .any(|o| kind(o) == k && name(o) == want && namespace(o) == ns)
                {
                    out.push(Finding {
                        check: "webhooks",
                        object: format!("{k} {ns}/{want}"),
                        problem: format!("{binary} uses {k} {ns}/{want} for its webhook server; it is not rendered"),
                        source: w.names_source.clone(),
                        fix: format!("render {k} {want} in {ns}"),
                    });
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 5. RBAC
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    names: Vec<String>,
}

fn rule_of(v: &Value) -> Option<Rule> {
    v["apiGroups"].is_array().then(|| Rule {
        groups: strings(&v["apiGroups"]),
        resources: strings(&v["resources"]),
        verbs: strings(&v["verbs"]),
        names: strings(&v["resourceNames"]),
    })
}

/// One (group, resource, verb, resourceName) request.
type Atom = (String, String, String, Option<String>);

fn atoms(r: &Rule) -> Vec<Atom> {
    let names: Vec<Option<String>> = if r.names.is_empty() {
        vec![None]
    } else {
        r.names.iter().cloned().map(Some).collect()
    };
    let mut out = Vec::new();
    for g in &r.groups {
        for res in &r.resources {
            for v in &r.verbs {
                for n in &names {
                    out.push((g.clone(), res.clone(), v.clone(), n.clone()));
                }
            }
        }
    }
    out
}

/// Kubernetes RBAC's matching (k8s.io/kubernetes pkg/apis/rbac/v1 evaluation_helpers.go:
/// VerbMatches, APIGroupMatches, ResourceMatches with `*` and `*/subresource`,
/// ResourceNameMatches).
fn covers(have: &Rule, (g, res, v, n): &Atom) -> bool {
    let any = |list: &[String], x: &str| list.iter().any(|p| p == "*" || p == x);
    let resource = have.resources.iter().any(|p| {
        p == "*"
            || p == res
            || res
                .split_once('/')
                .is_some_and(|(_, sub)| p.strip_prefix("*/") == Some(sub))
    });
    let named = have.names.is_empty() || n.as_ref().is_some_and(|n| have.names.contains(n));
    any(&have.groups, g) && resource && any(&have.verbs, v) && named
}

/// What a subject may do where: `ServiceAccount:ns/name`, `Group:name`, `User:name`; a
/// namespace of None is cluster-wide.
#[derive(Clone, Debug)]
struct Grant {
    subject: String,
    namespace: Option<String>,
    rule: Rule,
    via: String,
}

fn subject_of(s: &Value, binding_ns: &str) -> String {
    match s["kind"].as_str() {
        Some("ServiceAccount") => format!(
            "ServiceAccount:{}/{}",
            norm_ns(s["namespace"].as_str().unwrap_or(binding_ns)),
            s["name"].as_str().unwrap_or_default()
        ),
        Some(k) => format!("{k}:{}", s["name"].as_str().unwrap_or_default()),
        None => String::new(),
    }
}

/// Bindings resolved against roles, for rendered objects and for chart objects alike.
fn grants(objects: &[Value]) -> Vec<Grant> {
    let mut out = Vec::new();
    for b in objects
        .iter()
        .filter(|o| matches!(kind(o), "RoleBinding" | "ClusterRoleBinding"))
    {
        let ns = norm_ns(namespace(b));
        let cluster_wide = kind(b) == "ClusterRoleBinding";
        let role_kind = b["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = b["roleRef"]["name"].as_str().unwrap_or_default();
        let Some(role) = objects.iter().find(|o| {
            kind(o) == role_kind
                && name(o) == role_name
                && (role_kind == "ClusterRole" || norm_ns(namespace(o)) == ns)
        }) else {
            continue;
        };
        for s in items(&b["subjects"]) {
            for r in items(&role["rules"]).filter_map(rule_of) {
                out.push(Grant {
                    subject: subject_of(s, &ns),
                    namespace: (!cluster_wide).then(|| ns.clone()),
                    rule: r,
                    via: format!("{role_kind} {role_name}"),
                });
            }
        }
    }
    out
}

/// The chart's RBAC objects of a facts file, as objects `grants` understands.
fn chart_rbac_objects(f: &Facts) -> Vec<Value> {
    let c = &f.doc["chartRbac"];
    let mut out: Vec<Value> = items(&c["objects"]).cloned().collect();
    for (key, k) in [
        ("roles", "Role"),
        ("clusterRoles", "ClusterRole"),
        ("roleBindings", "RoleBinding"),
        ("clusterRoleBindings", "ClusterRoleBinding"),
    ] {
        out.extend(items(&c[key]).map(|o| {
            let mut o = o.clone();
            o["kind"] = json!(k);
            o
        }));
    }
    for o in &mut out {
        // the facts write name/namespace flat; `grants` reads metadata
        if o["metadata"].is_null() {
            o["metadata"] = json!({"name": o["name"], "namespace": o["namespace"]});
        }
        if o["roleRef"]["kind"].is_null() && o["roleRef"].is_object() {
            o["roleRef"]["kind"] = json!("ClusterRole");
        }
    }
    out
}

/// Resources that are not namespaced: a named request for one of them is cluster-wide.
const CLUSTER_SCOPED: &[&str] = &[
    "nodes",
    "nodes/status",
    "namespaces",
    "certificatesigningrequests",
    "certificatesigningrequests/approval",
    "signers",
    "customresourcedefinitions",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "nodepools",
    "nodebuckets",
    "gateways",
];

/// One rule upstream grants or needs, for one subject.
struct Requirement<'f> {
    subject: String,
    namespace: Option<String>,
    rule: Rule,
    /// a chart grant (may be waived as a deliberate difference) or a request the code makes
    code_needs_it: bool,
    origin: String,
    facts: &'f Facts,
    fact: Value,
}

/// `system:serviceaccount:ns:name` -> `ServiceAccount:ns/name`; a description of "the pod's
/// ServiceAccount" -> the ServiceAccount the rendered workload of that binary runs as.
fn identity_subject(identity: &str, f: &Facts, objects: &[Value]) -> Option<String> {
    if let Some(rest) = identity.strip_prefix("system:serviceaccount:") {
        let (ns, n) = rest.split_once(':')?;
        return Some(format!("ServiceAccount:{}/{n}", norm_ns(ns)));
    }
    if !identity.to_lowercase().contains("serviceaccount") {
        return None;
    }
    objects.iter().find_map(|o| {
        let pod = pod_spec(o)?;
        items(&pod["containers"])
            .any(|c| {
                c["image"].as_str().is_some_and(|i| {
                    facts::for_image(i)
                        .iter()
                        .any(|x| x.component == f.component)
                })
            })
            .then(|| {
                format!(
                    "ServiceAccount:{}/{}",
                    norm_ns(namespace(o)),
                    pod["serviceAccountName"].as_str().unwrap_or("default")
                )
            })
    })
}

fn requirements<'f>(objects: &[Value], pinned: &[&'f Facts]) -> Vec<Requirement<'f>> {
    let mut out = Vec::new();
    for f in pinned {
        let chart = chart_rbac_objects(f);
        for g in grants(&chart) {
            // cite the role itself where the facts do
            let fact = chart
                .iter()
                .find(|o| format!("{} {}", kind(o), name(o)) == g.via && o["source"].is_string())
                .unwrap_or(&f.doc["chartRbac"])
                .clone();
            out.push(Requirement {
                subject: g.subject,
                namespace: g.namespace,
                rule: g.rule,
                code_needs_it: false,
                origin: format!("upstream {} bound to it", g.via),
                facts: f,
                fact,
            });
        }
        for access in items(&f.doc["apiAccess"]) {
            let Some(subject) = access["identity"]
                .as_str()
                .and_then(|i| identity_subject(i, f, objects))
            else {
                continue;
            };
            // yurt-manager-V.yaml's apiAccess repeats the chart's roles (with `role:`); the
            // controllers file's is what the code requests
            let from_chart = !access["via"].is_null();
            for r in items(&access["rules"]) {
                let Some(rule) = rule_of(r) else { continue };
                let named_in_ns = !rule.names.is_empty()
                    && rule
                        .resources
                        .iter()
                        .all(|x| !CLUSTER_SCOPED.contains(&x.as_str()));
                let namespace = match r["namespace"].as_str() {
                    Some(ns) => Some(norm_ns(ns)),
                    None => named_in_ns.then(|| NAMESPACE.to_owned()),
                };
                let mut fact = r.clone();
                if fact["source"].is_null() {
                    fact["source"] = access["source"].clone();
                }
                out.push(Requirement {
                    subject: subject.clone(),
                    namespace,
                    rule,
                    code_needs_it: !from_chart,
                    origin: if from_chart {
                        "upstream chart role".into()
                    } else {
                        "a request its code makes".into()
                    },
                    facts: f,
                    fact,
                });
            }
        }
    }
    out
}

fn deliberate_differences() -> Value {
    serde_saphyr::from_str(include_str!("conformance/deliberate-differences.yaml")).unwrap()
}

fn check_rbac(
    objects: &[Value],
    pinned: &[&Facts],
    profile: &str,
    differences: &Value,
) -> Vec<Finding> {
    let ours = |s: &str| -> String {
        items(&differences["identities"])
            .find(|d| d["profile"] == profile && d["upstream"] == s)
            .and_then(|d| d["ours"].as_str())
            .unwrap_or(s)
            .to_owned()
    };
    let waivers: Vec<(&Value, Rule)> = items(&differences["rbac"])
        .filter(|d| d["profile"] == profile)
        .filter_map(|d| Some((d, rule_of(&d["rule"])?)))
        .collect();
    let have = grants(objects);
    let mut out = Vec::new();
    // subject, namespace, group, resource, names -> (missing verbs, sources, fix subject)
    type Key = (String, Option<String>, String, String, Option<String>);
    // (missing verbs, sources, whether the code itself makes the request)
    let mut missing: BTreeMap<Key, (BTreeSet<String>, BTreeSet<String>, bool)> = BTreeMap::new();
    let mut waived_used = vec![false; waivers.len()];
    for req in requirements(objects, pinned) {
        let subject = ours(&req.subject);
        let usable: Vec<&Grant> = have
            .iter()
            .filter(|g| {
                g.subject == subject && (g.namespace.is_none() || g.namespace == req.namespace)
            })
            .collect();
        for atom in atoms(&req.rule) {
            if usable.iter().any(|g| covers(&g.rule, &atom)) {
                continue;
            }
            let waiver = waivers
                .iter()
                .position(|(d, r)| d["identity"] == req.subject.as_str() && covers(r, &atom));
            if let Some(i) = waiver {
                waived_used[i] = true;
                if !req.code_needs_it {
                    continue;
                }
                out.push(Finding {
                    check: "rbac",
                    object: format!("tests/conformance/deliberate-differences.yaml rbac[{i}]"),
                    problem: format!("waives {} {} for {}, which its code requests: a deliberate difference may only drop chart grants the code does not use", atom.2, atom.1, req.subject),
                    source: cite(req.facts, &req.fact),
                    fix: "remove the waiver and grant it".into(),
                });
            }
            let (verbs, sources, code) = missing
                .entry((
                    subject.clone(),
                    req.namespace.clone(),
                    atom.0.clone(),
                    atom.1.clone(),
                    atom.3.clone(),
                ))
                .or_default();
            verbs.insert(atom.2.clone());
            sources.insert(format!("{} ({})", cite(req.facts, &req.fact), req.origin));
            *code |= req.code_needs_it;
        }
    }
    for ((subject, ns, group, resource, rname), (verbs, sources, code)) in missing {
        let verbs: Vec<String> = verbs.into_iter().collect();
        let scope = ns
            .as_deref()
            .map_or("cluster-wide".to_owned(), |n| format!("in namespace {n}"));
        let names = rname
            .as_deref()
            .map(|n| format!(", resourceNames: [{n}]"))
            .unwrap_or_default();
        out.push(Finding {
            check: "rbac",
            object: subject.clone(),
            problem: format!("{subject} may not {verbs:?} {group:?} {resource}{names} {scope}, which upstream grants/needs"),
            source: sources.into_iter().collect::<Vec<_>>().join(" | "),
            fix: format!(
                "add to a {} bound to {subject}: `- {{apiGroups: [{group:?}], resources: [{resource}], verbs: [{}]{names}}}`{}",
                if ns.is_some() { "Role" } else { "ClusterRole" },
                verbs.join(", "),
                if code {
                    ""
                } else {
                    " (or, as upstream's code never makes the request, list it with why in tests/conformance/deliberate-differences.yaml and docs/profiles.md)"
                }
            ),
        });
    }
    for (i, ((d, _), used)) in waivers.iter().zip(waived_used).enumerate() {
        if !used {
            out.push(Finding {
                check: "rbac",
                object: format!(
                    "tests/conformance/deliberate-differences.yaml rbac[{i}] ({})",
                    d["id"].as_str().unwrap_or("")
                ),
                problem: "the waiver matches nothing the profile lacks: it is stale".into(),
                source: d["source"].as_str().unwrap_or("").into(),
                fix: "remove the entry (and its line in docs/profiles.md)".into(),
            });
        }
    }
    // an identity mapping must name the ServiceAccount the workload really runs as
    for d in items(&differences["identities"]).filter(|d| d["profile"] == profile) {
        let want = d["ours"].as_str().unwrap_or_default();
        let runs_as = objects.iter().any(|o| {
            pod_spec(o).is_some_and(|p| {
                format!(
                    "ServiceAccount:{}/{}",
                    norm_ns(namespace(o)),
                    p["serviceAccountName"].as_str().unwrap_or("default")
                ) == want
            })
        });
        if !runs_as {
            out.push(Finding {
                check: "rbac",
                object: format!(
                    "tests/conformance/deliberate-differences.yaml identities ({})",
                    d["id"].as_str().unwrap_or("")
                ),
                problem: format!("no rendered workload runs as {want}"),
                source: d["source"].as_str().unwrap_or("").into(),
                fix: "fix the mapping or the workload's serviceAccountName".into(),
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 6. Paths, ports, names, labels
// ---------------------------------------------------------------------------------------------

fn port_of(container: &Value, port: &Value) -> Option<i64> {
    port.as_i64().or_else(|| {
        items(&container["ports"])
            .find(|p| p["name"] == *port)
            .and_then(|p| p["containerPort"].as_i64())
    })
}

/// The facts' endpoints as (port, path) pairs the binary answers; `present: false` ones are
/// paths it does not serve.
fn endpoints(f: &Facts) -> Vec<(i64, String, bool, &Value)> {
    let mut out = Vec::new();
    for e in items(&f.doc["endpoints"]) {
        let Some(port) = e["port"].as_i64() else {
            continue;
        };
        for p in e["path"].as_str().into_iter().flat_map(|p| p.split(", ")) {
            let p = p.split_whitespace().next().unwrap_or_default().to_owned();
            out.push((port, p, e["present"] != false, e));
        }
    }
    out
}

/// Objects a chart ships besides RBAC (Services, ConfigMaps, workloads), in any facts shape.
fn chart_objects(f: &Facts) -> Vec<Value> {
    let mut out: Vec<Value> = items(&f.doc["chartRbac"]["objects"])
        .chain(items(&f.doc["chartRbac"]["otherObjects"]))
        .chain(items(&f.doc["chartDeployment"]["companions"]))
        .cloned()
        .collect();
    out.extend(items(&f.doc["yurthubChart"]["configMaps"]).map(|c| {
        let mut c = c.clone();
        c["kind"] = json!("ConfigMap");
        c
    }));
    out
}

fn check_paths_ports(objects: &[Value], pinned: &[&Facts]) -> Vec<Finding> {
    let mut out = Vec::new();
    let invs = invocations(objects);
    for inv in &invs {
        for f in facts_for(&inv.image, pinned) {
            let binary = format!("{} {}", f.component, f.version);
            // probes must hit an endpoint the binary serves
            let served = endpoints(f);
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                let get = &inv.container[probe]["httpGet"];
                let (Some(path), Some(port)) =
                    (get["path"].as_str(), port_of(inv.container, &get["port"]))
                else {
                    continue;
                };
                if served.is_empty() {
                    continue;
                }
                let hit = served.iter().find(|(p, x, ..)| *p == port && x == path);
                if !hit.is_some_and(|h| h.2) {
                    let on_port: Vec<&str> = served
                        .iter()
                        .filter(|e| e.0 == port && e.2)
                        .map(|e| e.1.as_str())
                        .collect();
                    out.push(Finding {
                        check: "paths-ports",
                        object: format!("{} {probe}", inv.object),
                        problem: format!("{binary} serves no {path} on port {port} (it serves {on_port:?} there): the probe always fails"),
                        source: hit.map_or_else(|| cite(f, &f.doc["endpoints"][0]), |h| cite(f, h.3)),
                        fix: format!("probe one of {on_port:?} on {port}, or drop the {probe}"),
                    });
                }
            }
            // files the binary keeps must be on a hostPath mounted at the same place
            let mounts: Vec<(String, String)> = items(&inv.container["volumeMounts"])
                .filter_map(|m| {
                    let vol = items(&inv.pod["volumes"]).find(|v| v["name"] == m["name"])?;
                    Some((
                        m["mountPath"].as_str()?.to_owned(),
                        vol["hostPath"]["path"].as_str()?.to_owned(),
                    ))
                })
                .collect();
            for file in items(&f.doc["files"]) {
                let Some(path) = file["path"].as_str() else {
                    continue;
                };
                let on_host = mounts.iter().any(|(m, h)| {
                    let m = m.trim_end_matches('/');
                    m == h.trim_end_matches('/')
                        && (path == m || path.starts_with(&format!("{m}/")))
                });
                if !on_host {
                    out.push(Finding {
                        check: "paths-ports",
                        object: inv.object.clone(),
                        problem: format!("{binary} keeps {path} on the node, but no hostPath is mounted there: it is lost on restart"),
                        source: cite(f, file),
                        fix: format!("mount the hostPath {} at the same path", Path::new(path).parent().map_or(path.into(), |p| p.display().to_string())),
                    });
                }
            }
            // the lease yurt-manager's chart uses, so two managers contend for one lock
            if let Some((lf, le)) = first_field(&[f], "leaderElection")
                && let Some(want) = le["chartName"].as_str()
                && let Ok(parsed) = inv.parse(lf)
                && flag_value(lf, &parsed, "leader-elect-resource-name").as_deref() != Some(want)
            {
                out.push(Finding {
                    check: "paths-ports",
                    object: inv.object.clone(),
                    problem: format!("the leader-election lease is not upstream's {want}"),
                    source: cite(lf, le),
                    fix: format!("pass --leader-elect-resource-name={want}"),
                });
            }
        }
    }
    // Services, ConfigMaps and nodeSelectors the charts ship
    for f in pinned {
        for c in chart_objects(f) {
            let n = c["name"].as_str().unwrap_or_default();
            let Some(o) = find(objects, c["kind"].as_str().unwrap_or_default(), n) else {
                if matches!(c["kind"].as_str(), Some("Service" | "ConfigMap")) && !n.is_empty() {
                    out.push(Finding {
                        check: "paths-ports",
                        object: format!("{} {n}", c["kind"].as_str().unwrap_or_default()),
                        problem: format!(
                            "upstream ships {} {n} for {} {}; the profile does not render it",
                            c["kind"].as_str().unwrap_or_default(),
                            f.component,
                            f.version
                        ),
                        source: cite(f, &c),
                        fix: format!("render it as upstream: {c}"),
                    });
                }
                continue;
            };
            for p in items(&c["ports"]) {
                let ok = items(&o["spec"]["ports"]).any(|have| {
                    ["port", "targetPort", "nodePort", "name"]
                        .iter()
                        .all(|k| p[k].is_null() || p[k] == have[k])
                });
                if !ok {
                    out.push(Finding {
                        check: "paths-ports",
                        object: id(o),
                        problem: format!("no port like upstream's {p}"),
                        source: cite(f, &c),
                        fix: format!("add `- {p}` to spec.ports"),
                    });
                }
            }
            for key in c["data"].as_object().into_iter().flat_map(|m| m.keys()) {
                if o["data"][key].is_null() {
                    out.push(Finding {
                        check: "paths-ports",
                        object: id(o),
                        problem: format!("data key {key} of upstream's {n} is missing"),
                        source: cite(f, &c),
                        fix: format!("add `{key}: \"\"` to data"),
                    });
                }
            }
            if let (Some(want), Some(spec)) = (c["nodeSelector"].as_object(), pod_spec(o)) {
                for (k, v) in want.iter().filter(|(k, _)| k.contains("openyurt.io")) {
                    if spec["nodeSelector"][k] != *v {
                        out.push(Finding {
                            check: "paths-ports",
                            object: id(o),
                            problem: format!(
                                "nodeSelector {k} is {}, upstream {v}",
                                spec["nodeSelector"][k]
                            ),
                            source: cite(f, &c),
                            fix: format!("nodeSelector: {{{k}: {v}}}"),
                        });
                    }
                }
            }
        }
        // objects a binary reads but does not create
        for need in items(&f.doc["objectsItNeeds"]).filter(|n| n["created"] == false) {
            let (k, n) = (
                need["kind"].as_str().unwrap_or_default(),
                need["name"].as_str().unwrap_or_default(),
            );
            // the endpoints controller creates the Endpoints of a Service with a selector
            if k == "Endpoints"
                && find(objects, "Service", n).is_some_and(|s| s["spec"]["selector"].is_object())
            {
                continue;
            }
            match find(objects, k, n) {
                None => out.push(Finding {
                    check: "paths-ports",
                    object: format!(
                        "{k} {}/{n}",
                        norm_ns(need["namespace"].as_str().unwrap_or_default())
                    ),
                    problem: format!(
                        "{} {} reads {k} {n} and does not create it",
                        f.component, f.version
                    ),
                    source: cite(f, need),
                    fix: format!("render {k} {n}"),
                }),
                Some(o) => {
                    for key in strings(&need["keys"]) {
                        if o["data"][&key].is_null() {
                            out.push(Finding {
                                check: "paths-ports",
                                object: id(o),
                                problem: format!(
                                    "{} {} reads data key {key}; it is missing",
                                    f.component, f.version
                                ),
                                source: cite(f, need),
                                fix: format!("add `{key}: \"\"` to data"),
                            });
                        }
                    }
                }
            }
        }
        // YurtStaticSet: the controller creates ConfigMap yurt-static-set-<name> itself (key
        // staticPodManifest, hash annotation). A pre-rendered one must carry annotations, or every
        // reconcile panics on the nil map, and must hold exactly that key.
        for b in items(&f.doc["behaviour"]).filter(|b| b["name"] == "yurtstaticset-configmap") {
            let fact_about = |needle: &str| {
                items(&b["facts"]).find(|x| x["what"].as_str().is_some_and(|w| w.contains(needle)))
            };
            let Some(naming) = fact_about("ConfigMap name '") else {
                continue;
            };
            let prefix = naming["what"]
                .as_str()
                .and_then(|w| w.split('\'').nth(1))
                .unwrap_or_default();
            for set in objects.iter().filter(|o| kind(o) == "YurtStaticSet") {
                let cm_name = format!("{prefix}{}", name(set));
                let key = set["spec"]["staticPodManifest"]
                    .as_str()
                    .unwrap_or_default();
                let Some(cm) = objects.iter().find(|o| {
                    kind(o) == "ConfigMap" && name(o) == cm_name && namespace(o) == namespace(set)
                }) else {
                    continue;
                };
                let keys: Vec<&String> = cm["data"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.keys())
                    .collect();
                let annotated = cm["metadata"]["annotations"]
                    .as_object()
                    .is_some_and(|a| !a.is_empty());
                if !annotated {
                    out.push(Finding {
                        check: "paths-ports",
                        object: id(cm),
                        problem: format!("{} {} assigns into this ConfigMap's annotations without creating the map; rendered without annotations, every reconcile of YurtStaticSet {} panics", f.component, f.version, name(set)),
                        source: fact_about("nil map").map_or_else(|| cite(f, naming), |x| cite(f, x)),
                        fix: format!("do not render ConfigMap {cm_name}: the controller creates it"),
                    });
                } else if keys != [key] {
                    out.push(Finding {
                        check: "paths-ports",
                        object: id(set),
                        problem: format!("the controller writes ConfigMap {cm_name} with the single data key {key:?}; rendered: keys {keys:?}"),
                        source: format!("{} | {}", cite(f, naming), fact_about("data key").map_or(String::new(), |x| cite(f, x))),
                        fix: format!("do not render ConfigMap {cm_name}: the controller creates it"),
                    });
                }
            }
        }
    }
    out
}

/// The node labels and annotations a profile declares, against the binaries that read them.
fn check_node_labels(p: &Profile, pinned: &[&Facts]) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in pinned {
        for c in items(&f.doc["controllers"]).filter(|c| c["autonomy"].is_object()) {
            let a = &c["autonomy"];
            let want = (
                a["annotation"].as_str().unwrap_or_default(),
                a["value"].as_str().unwrap_or_default(),
            );
            let have = (
                p.labels.autonomy.key.as_str(),
                p.labels.autonomy.value.as_str(),
            );
            if want != have {
                out.push(Finding {
                    check: "labels",
                    object: format!("templates/{}/profile.yaml labels.autonomy", p.name),
                    problem: format!(
                        "declares {have:?}; {} {} reads autonomy from {want:?}",
                        f.component, f.version
                    ),
                    source: cite(f, c),
                    fix: format!("labels.autonomy: {{key: {}, value: {:?}}}", want.0, want.1),
                });
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The tests: each check on each profile.
// ---------------------------------------------------------------------------------------------

fn run(profile: &str, check: &str) {
    let r = rendered(profile);
    let findings = match check {
        "flags" => check_flags(&r.objects, &r.facts),
        "api-versions" => check_api_versions(&r.objects, &r.facts),
        "crds" => check_crds(&r.objects, &r.facts),
        "webhooks" => check_webhooks(&r.objects, &r.facts),
        "rbac" => check_rbac(&r.objects, &r.facts, profile, &deliberate_differences()),
        "paths-ports" => {
            let mut f = check_paths_ports(&r.objects, &r.facts);
            f.extend(check_node_labels(&r.profile, &r.facts));
            f
        }
        _ => unreachable!("{check}"),
    };
    assert_conforms(profile, check, &findings);
}

/// The real OpenYurt v1.7.0 binary (tests/real, built on first use) that runs `image`, if any.
fn real_v17_binary(image: &str) -> Option<std::path::PathBuf> {
    let (repo, tag) = image.rsplit_once(':')?;
    let name = repo.rsplit('/').next()?;
    (tag == "v1.7.0" && matches!(name, "yurt-manager" | "yurthub" | "node-servant"))
        .then(|| yurtsim::real::real_dir().join("openyurt-v1.7.0").join(name))
}

/// Runs `binary` with `args` and `--help`: its flag parser (cobra/pflag) rejects an unknown
/// flag or a value of the wrong type before it looks at `--help`, and changes nothing.
fn real_flag_parser_refusal(binary: &Path, args: &[String]) -> Option<String> {
    let out = std::process::Command::new(binary)
        .args(args)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    (!out.status.success()).then(|| stderr.lines().next().unwrap_or_default().to_string())
}

#[test]
fn v17_flags_are_accepted_by_the_real_binaries() {
    yurtsim::real::ensure_built(&["openyurt-v1.7.0"]).expect("tests/real/build.sh openyurt");
    let r = rendered("openyurt-v1.7");
    let mut checked = BTreeSet::new();
    let mut refusals = Vec::new();
    for inv in invocations(&r.objects) {
        let Some(binary) = real_v17_binary(&inv.image) else {
            continue;
        };
        let argv = inv
            .argv
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", inv.object));
        if let Some(why) = real_flag_parser_refusal(&binary, &argv[1..]) {
            refusals.push(format!("{}: {why}", inv.object));
        }
        checked.insert(binary.file_name().unwrap().to_string_lossy().into_owned());
    }
    assert!(
        refusals.is_empty(),
        "the real binaries refuse: {refusals:#?}"
    );
    assert_eq!(
        checked,
        BTreeSet::from(["yurt-manager".to_owned(), "yurthub".to_owned()]),
        "every v1.7 component the profile starts is checked"
    );
    // the same check refuses what the real parser refuses
    let hub = real_v17_binary("openyurt/yurthub:v1.7.0").unwrap();
    let why = real_flag_parser_refusal(&hub, &["--gc-frequency=often".into()]);
    assert!(why.is_some_and(|w| w.contains("--gc-frequency")));
    let why = real_flag_parser_refusal(&hub, &["--no-such-flag".into()]);
    assert!(why.is_some_and(|w| w.contains("unknown flag")));
}

#[test]
fn v17_flags_are_accepted_by_the_pinned_binaries() {
    run("openyurt-v1.7", "flags");
}

#[test]
fn v17_api_versions_looked_up_at_start_are_served() {
    run("openyurt-v1.7", "api-versions");
}

#[test]
fn v17_crds_match_upstream() {
    run("openyurt-v1.7", "crds");
}

#[test]
fn v17_webhooks_are_served_by_the_pinned_binary() {
    run("openyurt-v1.7", "webhooks");
}

#[test]
fn v17_rbac_covers_upstream() {
    run("openyurt-v1.7", "rbac");
}

#[test]
fn v17_paths_ports_and_names_match_upstream() {
    run("openyurt-v1.7", "paths-ports");
}

#[test]
fn v16_flags_are_accepted_by_the_pinned_binaries() {
    run("openyurt-v1.6", "flags");
}

#[test]
fn legacy_flags_are_accepted_by_the_pinned_binaries() {
    run("legacy-v0.6", "flags");
}

#[test]
fn v16_api_versions_looked_up_at_start_are_served() {
    run("openyurt-v1.6", "api-versions");
}

#[test]
fn legacy_api_versions_looked_up_at_start_are_served() {
    run("legacy-v0.6", "api-versions");
}

#[test]
fn v16_crds_match_upstream() {
    run("openyurt-v1.6", "crds");
}

#[test]
fn legacy_crds_match_upstream() {
    run("legacy-v0.6", "crds");
}

#[test]
fn v16_webhooks_are_served_by_the_pinned_binary() {
    run("openyurt-v1.6", "webhooks");
}

#[test]
fn legacy_webhooks_are_served_by_the_pinned_binary() {
    run("legacy-v0.6", "webhooks");
}

#[test]
fn v16_rbac_covers_upstream() {
    run("openyurt-v1.6", "rbac");
}

#[test]
fn legacy_rbac_covers_upstream() {
    run("legacy-v0.6", "rbac");
}

#[test]
fn v16_paths_ports_and_names_match_upstream() {
    run("openyurt-v1.6", "paths-ports");
}

#[test]
fn legacy_paths_ports_and_names_match_upstream() {
    run("legacy-v0.6", "paths-ports");
}

/// Without facts a component is not checked at all; say which.
#[test]
fn every_pinned_upstream_image_has_facts() {
    for profile in PROFILES {
        let p = Profile::load(profile).unwrap();
        for (component, image) in &p.images {
            // ours, and the upgrade worker yurt-manager / our Jobs start (no start-up contract)
            if matches!(component.as_str(), "servant" | "node-servant") {
                continue;
            }
            assert!(
                !facts::for_image(image).is_empty(),
                "{profile}: no facts for {image}: add tests/yurtsim/facts/<component>-<version>.yaml"
            );
        }
    }
}

/// The data files are honest: rules tie to the facts' own messages, differences are documented.
#[test]
fn conformance_data_is_cited_and_documented() {
    for rule in flag_rules() {
        let f = facts::all()
            .iter()
            .find(|f| {
                rule["component"] == f.component.as_str() && rule["version"] == f.version.as_str()
            })
            .unwrap_or_else(|| panic!("flag rule for unknown facts: {rule}"));
        assert!(
            items(&f.doc["validation"]["order"]).any(|v| v["message"] == rule["message"]),
            "flag rule {rule} does not quote a validation message of {}",
            f.file
        );
    }
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profiles.md"))
            .unwrap();
    let d = deliberate_differences();
    for entry in items(&d["identities"]).chain(items(&d["rbac"])) {
        for key in ["id", "profile", "why", "source"] {
            assert!(
                entry[key].is_string(),
                "deliberate difference without {key}: {entry}"
            );
        }
        let id = entry["id"].as_str().unwrap();
        assert!(
            docs.contains(&format!("`{id}`")),
            "docs/profiles.md does not list the deliberate difference `{id}`"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Planted breakage: the checks must notice exactly what was broken.
// ---------------------------------------------------------------------------------------------

/// The findings `check` reports for `broken` that it does not report for the profile as is.
fn new_findings(
    profile: &str,
    check: impl Fn(&[Value], &[&Facts]) -> Vec<Finding>,
    break_it: impl FnOnce(&mut Vec<Value>),
) -> Vec<Finding> {
    let r = rendered(profile);
    let before: BTreeSet<Finding> = check(&r.objects, &r.facts).into_iter().collect();
    let mut broken = r.objects.clone();
    break_it(&mut broken);
    check(&broken, &r.facts)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect()
}

fn object_mut<'a>(objects: &'a mut [Value], k: &str, n: &str) -> &'a mut Value {
    objects
        .iter_mut()
        .find(|o| kind(o) == k && name(o) == n)
        .unwrap_or_else(|| panic!("no {k} {n}"))
}

#[test]
fn planted_unknown_flag_is_reported() {
    let found = new_findings("openyurt-v1.6", check_flags, |objects| {
        let d = object_mut(objects, "Deployment", "yurt-manager");
        d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array_mut()
            .unwrap()
            .push(json!("--no-such-flag=1"));
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].problem.contains("unknown flag: --no-such-flag"),
        "{}",
        found[0]
    );
    assert!(
        found[0]
            .object
            .starts_with("Deployment kube-system/yurt-manager"),
        "{}",
        found[0]
    );
    assert!(
        found[0].source.contains("openyurtio/openyurt@v1.6.1:"),
        "{}",
        found[0]
    );
}

#[test]
fn planted_missing_required_flag_is_reported() {
    let found = new_findings("openyurt-v1.6", check_flags, |objects| {
        let pod = objects.iter_mut().find(|o| kind(o) == "Pod").unwrap();
        let cmd = pod["spec"]["containers"][0]["command"]
            .as_array_mut()
            .unwrap();
        cmd.retain(|a| !a.as_str().unwrap().starts_with("--server-addr"));
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].problem.contains("--server-addr"), "{}", found[0]);
}

#[test]
fn planted_rbac_rule_removal_is_reported() {
    let differences = deliberate_differences();
    let found = new_findings(
        "openyurt-v1.6",
        |o, f| check_rbac(o, f, "openyurt-v1.6", &differences),
        |objects| {
            let role = object_mut(
                objects,
                "ClusterRole",
                "yurt-manager-yurt-static-set-controller",
            );
            role["rules"]
                .as_array_mut()
                .unwrap()
                .retain(|r| r["resources"] != json!(["yurtstaticsets/status"]));
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(
        f.object,
        "ServiceAccount:kube-system/yurt-manager-yurt-static-set-controller"
    );
    assert!(f.problem.contains("yurtstaticsets/status"), "{f}");
    assert!(f.problem.contains("\"update\""), "{f}");
    assert!(f.source.contains("charts/yurt-manager"), "{f}");
}

#[test]
fn planted_unserved_crd_version_is_reported() {
    let found = new_findings("openyurt-v1.6", check_api_versions, |objects| {
        let crd = object_mut(
            objects,
            "CustomResourceDefinition",
            "yurtstaticsets.apps.openyurt.io",
        );
        for v in crd["spec"]["versions"].as_array_mut().unwrap() {
            if v["name"] == "v1alpha1" {
                v["served"] = json!(false);
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].problem.contains("yurt-static-set-controller"),
        "{}",
        found[0]
    );
    assert!(
        found[0]
            .problem
            .contains("apps.openyurt.io/v1alpha1, Resource=yurtstaticsets"),
        "{}",
        found[0]
    );
    assert!(
        found[0].source.contains("yurt_static_set_controller.go"),
        "{}",
        found[0]
    );
}

#[test]
fn planted_static_set_config_map_without_annotations_is_reported() {
    let found = new_findings("openyurt-v1.6", check_paths_ports, |objects| {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "yurt-static-set-yurt-hub", "namespace": "kube-system"},
            "data": {"yurthub": "apiVersion: v1\nkind: Pod\n"},
        }));
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].problem.contains("panics"), "{}", found[0]);
    assert!(
        found[0].source.contains("syncConfigMap lines 428-430"),
        "{}",
        found[0]
    );
}

#[test]
fn planted_unserved_webhook_path_is_reported() {
    let found = new_findings("openyurt-v1.6", check_webhooks, |objects| {
        let c = object_mut(
            objects,
            "ValidatingWebhookConfiguration",
            "yurt-manager-validating-webhook-configuration",
        );
        c["webhooks"][0]["clientConfig"]["service"]["path"] = json!("/validate-nothing");
    });
    // the entry now points nowhere, and upstream's entry it replaced is gone
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0]
            .problem
            .contains("serves no validating webhook at /validate-nothing"),
        "{}",
        found[0]
    );
    assert!(
        found[1]
            .problem
            .contains("validate.gateway.v1beta1.raven.openyurt.io at /validate-raven-openyurt-io-v1beta1-gateway"),
        "{}",
        found[1]
    );
}

/// The helpers the checks stand on behave as the kubelet, the shell and RBAC do.
#[test]
fn command_lines_and_rules_are_read_as_kubernetes_does() {
    let env = BTreeMap::from([("NODE_NAME".to_owned(), "n1".to_owned())]);
    assert_eq!(
        kubelet_expand("--node-name=$(NODE_NAME)", &env),
        "--node-name=n1"
    );
    assert_eq!(
        kubelet_expand("$$(cat f) $(OTHER) $", &env),
        "$(cat f) $(OTHER) $"
    );
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shell_words(argv(&[
            "/bin/sh",
            "-c",
            "exec yurthub --a=$(cat /x y) --b='c d'"
        ]))
        .unwrap(),
        argv(&["yurthub", "--a=$(cat /x y)", "--b=c d"])
    );
    assert!(shell_words(argv(&["sh", "-c", "a; b"])).is_err());
    let rule = |g: &[&str], r: &[&str], v: &[&str], n: &[&str]| {
        rule_of(&json!({"apiGroups": g, "resources": r, "verbs": v, "resourceNames": n})).unwrap()
    };
    let atom = |g: &str, r: &str, v: &str, n: Option<&str>| {
        (
            g.to_owned(),
            r.to_owned(),
            v.to_owned(),
            n.map(str::to_owned),
        )
    };
    assert!(covers(
        &rule(&["*"], &["*"], &["*"], &[]),
        &atom("apps", "deployments/status", "get", None)
    ));
    assert!(covers(
        &rule(&[""], &["*/status"], &["update"], &[]),
        &atom("", "pods/status", "update", None)
    ));
    assert!(!covers(
        &rule(&[""], &["pods"], &["update"], &[]),
        &atom("", "pods/status", "update", None)
    ));
    assert!(!covers(
        &rule(&[""], &["secrets"], &["get"], &["a"]),
        &atom("", "secrets", "get", None)
    ));
    assert!(covers(
        &rule(&[""], &["secrets"], &["get"], &["a"]),
        &atom("", "secrets", "get", Some("a"))
    ));
    let step = json!({"aliases": {"np": "nodepool"}, "knownControllers": ["nodepool", "other"], "disabledByDefault": []});
    let entries = |e: &[&str]| e.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        enabled_controllers(&step, &entries(&["-np", "*"])).unwrap(),
        BTreeSet::from(["other".to_owned()])
    );
    assert!(
        enabled_controllers(&step, &entries(&[]))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        enabled_controllers(&step, &entries(&["x"])).unwrap_err(),
        ["x"]
    );
}
