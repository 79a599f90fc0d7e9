//! Per-kind defaulting and validation, the parts of the apiserver's REST strategies that clients
//! notice: defaulted fields, 422 on invalid specs, immutable fields.

use serde_json::{Map, Value, json};

use crate::api::registry::ResourceInfo;
use crate::util::{is_dns_label, is_dns_subdomain};

pub type Causes = Vec<(String, String)>;

fn set_default(obj: &mut Value, key: &str, v: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = v;
    }
}

fn image_pull_policy(image: &str) -> &'static str {
    let tag = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        "IfNotPresent"
    } else if !tag.contains(':') || tag.ends_with(":latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// PodSpec defaults (shared by pods and every pod template).
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "enableServiceLinks", json!(true));
    for field in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(field).and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(image) = c["image"].as_str().map(str::to_string) {
                    set_default(c, "imagePullPolicy", json!(image_pull_policy(&image)));
                }
                set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "terminationMessagePolicy", json!("File"));
                set_default(c, "resources", json!({}));
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
    if let Some(vols) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in vols {
            if let Some(hp) = v.get_mut("hostPath") {
                set_default(hp, "type", json!(""));
            }
            for src in ["configMap", "secret"] {
                if let Some(s) = v.get_mut(src) {
                    set_default(s, "defaultMode", json!(420));
                }
            }
        }
    }
}

pub fn validate_pod_spec(spec: &Value, path: &str, causes: &mut Causes) {
    let containers = spec["containers"].as_array();
    if containers.is_none_or(|c| c.is_empty()) {
        causes.push((format!("{path}.containers"), "Required value".into()));
    }
    let volumes: Vec<&str> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect();
    for (i, v) in spec["volumes"].as_array().into_iter().flatten().enumerate() {
        let name = v["name"].as_str().unwrap_or("");
        if !is_dns_label(name) {
            causes.push((format!("{path}.volumes[{i}].name"), format!("Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'")));
        }
        if volumes.iter().filter(|n| **n == name).count() > 1 {
            causes.push((
                format!("{path}.volumes[{i}].name"),
                format!("Duplicate value: \"{name}\""),
            ));
        }
        if let Some(p) = v["hostPath"]["path"].as_str()
            && !p.starts_with('/')
        {
            causes.push((
                format!("{path}.volumes[{i}].hostPath.path"),
                format!("Invalid value: \"{p}\": must be an absolute path"),
            ));
        }
    }
    for field in ["initContainers", "containers"] {
        let list = spec[field].as_array().cloned().unwrap_or_default();
        for (i, c) in list.iter().enumerate() {
            let cp = format!("{path}.{field}[{i}]");
            let name = c["name"].as_str().unwrap_or("");
            if name.is_empty() {
                causes.push((format!("{cp}.name"), "Required value".into()));
            } else if !is_dns_label(name) {
                causes.push((format!("{cp}.name"), format!("Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'")));
            } else if list.iter().filter(|o| o["name"] == c["name"]).count() > 1 {
                causes.push((format!("{cp}.name"), format!("Duplicate value: \"{name}\"")));
            }
            if c["image"].as_str().is_none_or(|s| s.trim().is_empty()) {
                causes.push((format!("{cp}.image"), "Required value".into()));
            }
            for (j, m) in c["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let vn = m["name"].as_str().unwrap_or("");
                if !volumes.contains(&vn) {
                    causes.push((
                        format!("{cp}.volumeMounts[{j}].name"),
                        format!("Not found: \"{vn}\""),
                    ));
                }
                if m["mountPath"].as_str().is_none_or(str::is_empty) {
                    causes.push((
                        format!("{cp}.volumeMounts[{j}].mountPath"),
                        "Required value".into(),
                    ));
                }
            }
        }
    }
    if let Some(rp) = spec["restartPolicy"].as_str()
        && !matches!(rp, "Always" | "OnFailure" | "Never")
    {
        causes.push((format!("{path}.restartPolicy"), format!("Unsupported value: \"{rp}\": supported values: \"Always\", \"OnFailure\", \"Never\"")));
    }
    if let Some(n) = spec["nodeName"].as_str()
        && !n.is_empty()
        && !is_dns_subdomain(n)
    {
        causes.push((
            format!("{path}.nodeName"),
            format!("Invalid value: \"{n}\": a lowercase RFC 1123 subdomain"),
        ));
    }
}

fn qos_class(spec: &Value) -> &'static str {
    let cs: Vec<&Value> = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let any = cs
        .iter()
        .any(|c| c["resources"]["requests"].is_object() || c["resources"]["limits"].is_object());
    if !any {
        return "BestEffort";
    }
    let guaranteed = cs.iter().all(|c| {
        let l = &c["resources"]["limits"];
        let r = &c["resources"]["requests"];
        l["cpu"].is_string()
            && l["memory"].is_string()
            && (r.is_null() || (r["cpu"] == l["cpu"] && r["memory"] == l["memory"]))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Defaults applied on create, per kind.
pub fn default_on_create(res: &ResourceInfo, obj: &mut Value) {
    match (res.group.as_str(), res.resource.as_str()) {
        ("", "namespaces") => {
            obj["spec"]["finalizers"] = json!(["kubernetes"]);
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "pods") => {
            default_pod_spec(&mut obj["spec"]);
            let spec = &mut obj["spec"];
            // DefaultTolerationSeconds admission.
            let tols = spec["tolerations"].as_array().cloned().unwrap_or_default();
            let mut tols = tols;
            for key in [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
            ] {
                if !tols.iter().any(|t| {
                    t["key"] == json!(key)
                        || (t["operator"] == json!("Exists") && t["key"].is_null())
                }) {
                    tols.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
                }
            }
            spec["tolerations"] = json!(tols);
            spec["priority"] = json!(0);
            let qos = qos_class(spec);
            obj["status"] = json!({"phase": "Pending", "qosClass": qos});
        }
        ("batch", "jobs") => {
            let uid = obj["metadata"]["uid"].clone();
            let name = obj["metadata"]["name"].clone();
            let spec = &mut obj["spec"];
            set_default(spec, "backoffLimit", json!(6));
            set_default(spec, "completions", json!(1));
            set_default(spec, "parallelism", json!(1));
            set_default(spec, "completionMode", json!("NonIndexed"));
            set_default(spec, "suspend", json!(false));
            set_default(spec, "manualSelector", Value::Null);
            set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            if spec["manualSelector"] != json!(true) {
                spec["selector"] =
                    json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
                let labels = &mut spec["template"]["metadata"]["labels"];
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels["batch.kubernetes.io/controller-uid"] = uid.clone();
                labels["controller-uid"] = uid;
                labels["batch.kubernetes.io/job-name"] = name.clone();
                labels["job-name"] = name;
            }
            if let Some(m) = spec.as_object_mut() {
                m.remove("manualSelector");
            }
            default_pod_spec(&mut spec["template"]["spec"]);
            obj["status"] = json!({});
        }
        ("apps", "deployments") => {
            let spec = &mut obj["spec"];
            set_default(spec, "replicas", json!(1));
            set_default(
                spec,
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            default_pod_spec(&mut spec["template"]["spec"]);
            obj["status"] = json!({});
        }
        ("apps", "daemonsets") => {
            let spec = &mut obj["spec"];
            set_default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            set_default(spec, "revisionHistoryLimit", json!(10));
            default_pod_spec(&mut spec["template"]["spec"]);
            obj["status"] = json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0});
        }
        ("apps", "replicasets") => {
            default_pod_spec(&mut obj["spec"]["template"]["spec"]);
            set_default(&mut obj["spec"], "replicas", json!(1));
            obj["status"] = json!({"replicas": 0});
        }
        ("", "services") => {
            let spec = &mut obj["spec"];
            set_default(spec, "type", json!("ClusterIP"));
            set_default(spec, "sessionAffinity", json!("None"));
            set_default(spec, "ipFamilies", json!(["IPv4"]));
            set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
            set_default(spec, "internalTrafficPolicy", json!("Cluster"));
            let node_ports = matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer"));
            if node_ports {
                set_default(spec, "externalTrafficPolicy", json!("Cluster"));
            }
            let svc_name = obj["metadata"]["name"].to_string();
            let spec = &mut obj["spec"];
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports {
                    set_default(p, "protocol", json!("TCP"));
                    let port = p["port"].clone();
                    set_default(p, "targetPort", port);
                    // the apiserver allocates a node port from --service-node-port-range
                    // (default 30000-32767) to each port of a NodePort or LoadBalancer
                    // Service that names none (pkg/registry/core/service/portallocator);
                    // here a stable pick per Service and port, without the allocator's
                    // uniqueness bookkeeping
                    if node_ports && p["nodePort"].as_i64().is_none_or(|n| n == 0) {
                        let h = crate::util::fnv32a(format!("{svc_name}/{}", p["port"]).as_bytes());
                        p["nodePort"] = json!(30000 + (h % 2768));
                    }
                }
            }
            let spec = &mut obj["spec"];
            if spec["clusterIP"].as_str().is_none_or(str::is_empty) {
                let h = crate::util::fnv32a(obj["metadata"]["name"].to_string().as_bytes());
                let ip = format!("10.96.{}.{}", (h >> 8) % 256, (h % 253) + 2);
                obj["spec"]["clusterIP"] = json!(ip);
                obj["spec"]["clusterIPs"] = json!([ip]);
            }
            obj["status"] = json!({"loadBalancer": {}});
        }
        ("", "secrets") => {
            set_default(obj, "type", json!("Opaque"));
            merge_string_data(obj);
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            crate::api::crd::prepare_for_create(obj)
        }
        _ => {}
    }
}

/// Whether a write to this resource bumps metadata.generation on spec changes.
pub fn tracks_generation(res: &ResourceInfo) -> bool {
    !res.builtin
        || matches!(
            res.group.as_str(),
            "apps" | "batch" | "apiextensions.k8s.io" | "admissionregistration.k8s.io"
        )
}

/// Validation on create and update (`old` is Some on update).
/// The API server's limit on a ConfigMap's (and a Secret's) data: 1 MiB.
pub const MAX_CONFIG_SIZE: usize = 1024 * 1024;

pub fn validate(res: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Causes {
    let mut causes = Causes::new();
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let name_ok = match res.resource.as_str() {
        "namespaces" | "services" => is_dns_label(name),
        // RBAC and events allow path-segment names; keep to the common DNS rules elsewhere.
        "clusterroles" | "clusterrolebindings" | "roles" | "rolebindings" | "events" => {
            !name.is_empty() && !name.contains('/') && name != "." && name != ".."
        }
        _ => is_dns_subdomain(name),
    };
    if !name_ok {
        causes.push(("metadata.name".into(), format!("Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")));
    }
    validate_labels(obj, &mut causes);
    match (res.group.as_str(), res.resource.as_str()) {
        ("", "pods") => {
            validate_pod_spec(&obj["spec"], "spec", &mut causes);
            if let Some(old) = old
                && strip_mutable_pod_fields(&old["spec"]) != strip_mutable_pod_fields(&obj["spec"])
            {
                causes.push(("spec".into(), "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".into()));
            }
        }
        ("batch", "jobs") => {
            let t = &obj["spec"]["template"];
            validate_pod_spec(&t["spec"], "spec.template.spec", &mut causes);
            let rp = t["spec"]["restartPolicy"].as_str().unwrap_or("");
            if !matches!(rp, "Never" | "OnFailure") {
                causes.push((
                    "spec.template.spec.restartPolicy".into(),
                    format!(
                        "Unsupported value: \"{rp}\": supported values: \"OnFailure\", \"Never\""
                    ),
                ));
            }
            for f in [
                "backoffLimit",
                "activeDeadlineSeconds",
                "ttlSecondsAfterFinished",
                "parallelism",
                "completions",
            ] {
                if obj["spec"][f].as_i64().is_some_and(|v| v < 0) {
                    causes.push((
                        format!("spec.{f}"),
                        format!(
                            "Invalid value: {}: must be greater than or equal to 0",
                            obj["spec"][f]
                        ),
                    ));
                }
            }
            if obj["spec"]["activeDeadlineSeconds"].as_i64() == Some(0) {
                causes.push((
                    "spec.activeDeadlineSeconds".into(),
                    "Invalid value: 0: must be greater than 0".into(),
                ));
            }
            if let Some(old) = old {
                if old["spec"]["template"] != obj["spec"]["template"] {
                    causes.push((
                        "spec.template".into(),
                        "Invalid value: field is immutable".into(),
                    ));
                }
                if old["spec"]["selector"] != obj["spec"]["selector"] {
                    causes.push((
                        "spec.selector".into(),
                        "Invalid value: field is immutable".into(),
                    ));
                }
            }
        }
        ("apps", "deployments") | ("apps", "daemonsets") | ("apps", "replicasets") => {
            validate_pod_spec(
                &obj["spec"]["template"]["spec"],
                "spec.template.spec",
                &mut causes,
            );
            let sel = &obj["spec"]["selector"];
            if sel.is_null() {
                causes.push(("spec.selector".into(), "Required value".into()));
            } else {
                match crate::api::selector::LabelSelector::from_json(sel) {
                    Ok(s) if s.is_everything() => causes.push((
                        "spec.selector".into(),
                        "Invalid value: empty selector is invalid for deployment".into(),
                    )),
                    Ok(s) => {
                        if !s.matches(obj["spec"]["template"]["metadata"]["labels"].as_object()) {
                            causes.push((
                                "spec.template.metadata.labels".into(),
                                "Invalid value: `selector` does not match template `labels`".into(),
                            ));
                        }
                    }
                    Err(e) => causes.push(("spec.selector".into(), format!("Invalid value: {e}"))),
                }
            }
            if let Some(old) = old
                && old["spec"]["selector"] != obj["spec"]["selector"]
            {
                causes.push((
                    "spec.selector".into(),
                    "Invalid value: field is immutable".into(),
                ));
            }
        }
        ("", "configmaps") | ("", "secrets") => {
            for field in ["data", "binaryData"] {
                for k in obj[field].as_object().into_iter().flatten().map(|(k, _)| k) {
                    let ok = !k.is_empty()
                        && k.len() <= 253
                        && k.bytes()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
                        && k != "."
                        && k != "..";
                    if !ok {
                        causes.push((format!("{field}[{k}]"), format!("Invalid value: \"{k}\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'")));
                    }
                }
            }
            // Like the API server (and etcd's request limit behind it): keys plus values of
            // the data together at most 1 MiB; base64 values count decoded (3 bytes per 4).
            let base64_data = if res.resource == "secrets" { 3 } else { 1 };
            let size: usize = [("data", base64_data), ("binaryData", 3)]
                .iter()
                .flat_map(|(f, num)| {
                    let den = if *num == 3 { 4 } else { 1 };
                    obj[*f]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(move |(k, v)| k.len() + v.as_str().map_or(0, |v| v.len() * num / den))
                })
                .sum();
            if size > MAX_CONFIG_SIZE {
                causes.push((
                    "data".into(),
                    format!("Too long: must have at most {MAX_CONFIG_SIZE} bytes"),
                ));
            }
            if res.resource == "secrets" {
                use base64::Engine;
                for (k, v) in obj["data"].as_object().into_iter().flatten() {
                    if v.as_str().is_none_or(|s| {
                        base64::engine::general_purpose::STANDARD.decode(s).is_err()
                    }) {
                        causes.push((
                            format!("data[{k}]"),
                            "Invalid value: illegal base64 data".into(),
                        ));
                    }
                }
            }
            if let Some(old) = old {
                if old["immutable"] == json!(true)
                    && (old["data"] != obj["data"] || old["binaryData"] != obj["binaryData"])
                {
                    causes.push((
                        "data".into(),
                        "Forbidden: field is immutable when `immutable` is set".into(),
                    ));
                }
                if res.resource == "secrets" && old["type"] != obj["type"] {
                    causes.push(("type".into(), "Invalid value: field is immutable".into()));
                }
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            crate::api::crd::validate_spec(obj, &mut causes)
        }
        ("", "services") => {
            if let Some(old) = old {
                let (a, b) = (&old["spec"]["clusterIP"], &obj["spec"]["clusterIP"]);
                if !b.is_null() && a != b {
                    causes.push((
                        "spec.clusterIP".into(),
                        "Invalid value: field is immutable".into(),
                    ));
                }
            }
        }
        _ => {}
    }
    causes
}

fn strip_mutable_pod_fields(spec: &Value) -> Value {
    let mut s = spec.clone();
    for f in ["containers", "initContainers"] {
        if let Some(cs) = s.get_mut(f).and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(m) = c.as_object_mut() {
                    m.remove("image");
                }
            }
        }
    }
    if let Some(m) = s.as_object_mut() {
        m.remove("activeDeadlineSeconds");
        m.remove("tolerations");
        m.remove("terminationGracePeriodSeconds");
    }
    s
}

pub(crate) fn validate_labels(obj: &Value, causes: &mut Causes) {
    for (k, v) in obj["metadata"]["labels"].as_object().into_iter().flatten() {
        let probe = format!("{k}={}", v.as_str().unwrap_or("\u{0}"));
        if !v.is_string() || crate::api::selector::LabelSelector::parse(&probe).is_err() {
            causes.push(("metadata.labels".to_string(), format!("Invalid value: \"{}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'", v.as_str().unwrap_or(&v.to_string()))));
        }
    }
    for (k, v) in obj["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if !v.is_string() {
            causes.push((
                format!("metadata.annotations[{k}]"),
                "Invalid value: annotation values must be strings".into(),
            ));
        }
    }
}

/// Field selectors a resource supports, beyond metadata.name / metadata.namespace.
pub fn selectable_fields(res: &ResourceInfo) -> &'static [&'static str] {
    match (res.group.as_str(), res.resource.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("batch", "jobs") => &["status.successful"],
        ("apps", "replicasets") => &["status.replicas"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["spec.signerName"],
        _ => &[],
    }
}

/// A Secret's `stringData` overwrites its `data` on every write, create, update or patch (the
/// API server converts it on decoding: kubernetes/kubernetes@v1.36.2
/// pkg/apis/core/v1/conversion.go `Convert_v1_Secret_To_core_Secret`); it is never stored.
pub fn merge_string_data(obj: &mut Value) {
    let Some(sd) = obj.get("stringData").and_then(Value::as_object).cloned() else {
        return;
    };
    use base64::Engine;
    let mut data: Map<String, Value> = obj["data"].as_object().cloned().unwrap_or_default();
    for (k, v) in sd {
        let s = v.as_str().unwrap_or_default();
        data.insert(
            k,
            json!(base64::engine::general_purpose::STANDARD.encode(s)),
        );
    }
    obj["data"] = Value::Object(data);
    obj.as_object_mut().unwrap().remove("stringData");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::registry::Registry;

    fn info(g: &str, r: &str) -> std::sync::Arc<ResourceInfo> {
        Registry::new().lookup_gr(g, r).unwrap()
    }

    #[test]
    fn job_defaults_and_validation() {
        let jobs = info("batch", "jobs");
        let mut job = json!({"metadata": {"name": "j", "uid": "u"}, "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}}});
        default_on_create(&jobs, &mut job);
        assert_eq!(job["spec"]["backoffLimit"], json!(6));
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            json!("j")
        );
        assert_eq!(
            job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            json!("Always")
        );
        let causes = validate(&jobs, &job, None);
        assert!(
            causes
                .iter()
                .any(|(f, _)| f == "spec.template.spec.restartPolicy"),
            "{causes:?}"
        );
    }

    #[test]
    fn pod_spec_is_immutable_except_images() {
        let pods = info("", "pods");
        let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a:1"}]}});
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("a:2");
        assert!(validate(&pods, &new, Some(&old)).is_empty());
        new["spec"]["containers"][0]["args"] = json!(["x"]);
        assert_eq!(validate(&pods, &new, Some(&old))[0].0, "spec");
    }

    #[test]
    fn selector_must_match_template() {
        let d = info("apps", "deployments");
        let obj = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}});
        assert_eq!(
            validate(&d, &obj, None)[0].0,
            "spec.template.metadata.labels"
        );
    }

    #[test]
    fn configmap_keys_and_immutability() {
        let cm = info("", "configmaps");
        let bad = json!({"metadata": {"name": "c"}, "data": {"../x": "1"}});
        assert_eq!(validate(&cm, &bad, None).len(), 1);
        let old = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "1"}});
        let new = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "2"}});
        assert_eq!(validate(&cm, &new, Some(&old))[0].0, "data");
    }
}
