//! One name per thing (pure): the names, labels and annotations yurtctl gives what it
//! creates, the hash that shortens them, and a static pod's revision hash. Every layer may
//! use this module; it uses none.

/// `apiVersion` of every result object yurtctl prints (`-o json|yaml`).
pub const API_VERSION: &str = "yurtctl.openyurt.io/v1alpha1";

/// The first two fields of every result object yurtctl prints: `apiVersion` and `kind`
/// (flattened into the object).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultHeader {
    pub api_version: &'static str,
    pub kind: &'static str,
}

impl ResultHeader {
    pub const fn of(kind: &'static str) -> ResultHeader {
        ResultHeader {
            api_version: API_VERSION,
            kind,
        }
    }
}
/// The YurtHub endpoint the servant waits on before it redirects the kubelet, unless the profile
/// names another: `/v1/readyz` is OK once YurtHub's certificates are issued and yurt-hub-cfg and
/// its filters' informers synced, the same check that gates its proxy (openyurtio/openyurt@v1.6.1
/// pkg/yurthub/server/server.go); upstream's node-servant waits for it too. YurtHub v0.6 has no
/// readyz: its node-servant waits on `/v1/healthz` (openyurtio/openyurt@v0.6.1
/// pkg/node-servant/components/yurthub.go `hubHealthcheck`, pkg/yurthub/server/server.go
/// `registerHandlers`).
pub const YURTHUB_READYZ_PATH: &str = "/v1/readyz";

/// Field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "yurtctl";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "yurtctl";
pub const LABEL_ACTION: &str = "yurtctl.openyurt.io/action";
pub const LABEL_NODE: &str = "yurtctl.openyurt.io/node";
/// The full node name when it does not fit a label value.
pub const ANNOTATION_NODE: &str = "yurtctl.openyurt.io/node-name";

/// On a run lock's Lease: the command that holds it (`convert`, `revert`, `staticpod upgrade`).
pub const ANNOTATION_LOCK_COMMAND: &str = "yurtctl.openyurt.io/command";

/// Kubernetes' limit for names that also become label values (`job-name`).
pub const MAX_NAME: usize = 63;

/// FNV-1a, 32 bit: a stable, dependency-free hash (name suffixes, revisions).
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn shorten(original: &str, cleaned: String, max: usize) -> String {
    let cleaned_ok = cleaned == original
        && cleaned.len() <= max
        && cleaned.starts_with(|c: char| c.is_ascii_alphanumeric())
        && cleaned.ends_with(|c: char| c.is_ascii_alphanumeric());
    if cleaned_ok {
        return cleaned;
    }
    let suffix = format!("{:08x}", fnv1a32(original.as_bytes()));
    let keep = max - suffix.len() - 1;
    let prefix: String = cleaned.chars().take(keep).collect();
    let prefix = prefix.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if prefix.is_empty() {
        format!("x-{suffix}")
    } else {
        format!("{prefix}-{suffix}")
    }
}

/// A valid DNS-1123 label of at most 63 characters for `yurtctl-<action>-<node>`: the name
/// itself when it fits and is valid, else a cleaned prefix plus `-` and 8 hex digits of the
/// FNV-1a hash of the full name (stable across runs, distinct for distinct nodes).
pub fn job_name(action: &str, node: &str) -> String {
    let full = format!("yurtctl-{action}-{node}");
    let cleaned: String = full
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    shorten(&full, cleaned, MAX_NAME)
}

/// A label value for `v` (≤ 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends),
/// shortened with a hash suffix when needed.
pub fn label_value(v: &str) -> String {
    let cleaned: String = v
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    shorten(v, cleaned, MAX_NAME)
}

const LOCK_PREFIX: &str = "yurtctl-staticpod-";

/// The Lease that keeps two rollouts of static pod `name` apart (in the pod's namespace), so
/// rollouts of different static pods never block each other. A name too long for a Lease is
/// shortened with a stable hash.
pub fn static_pod_lock(name: &str) -> String {
    const MAX: usize = 253;
    let full = format!("{LOCK_PREFIX}{name}");
    if full.len() <= MAX {
        return full;
    }
    let h = fnv1a32(name.as_bytes());
    let keep = MAX - LOCK_PREFIX.len() - 9;
    let head = name[..keep].trim_end_matches(['.', '-']);
    format!("{LOCK_PREFIX}{head}-{h:08x}")
}

/// The Job actions of a static pod's rollout (upgrade, restore): ≤ 40 characters, stable.
pub fn static_pod_actions(name: &str) -> (String, String) {
    let short = if name.len() <= 28 && !name.contains('.') {
        name.to_string()
    } else {
        format!("{:08x}", fnv1a32(name.as_bytes()))
    };
    (format!("sp-up-{short}"), format!("sp-restore-{short}"))
}

/// A static pod's revision: what identifies a pod template whatever node it runs on.
pub mod revision {
    use std::collections::BTreeMap;

    use serde_json::{Map, Value, json};

    /// The revision annotation OpenYurt uses on the ConfigMap, inside the manifest and therefore on
    /// mirror pods.
    pub const HASH_ANNOTATION: &str = "openyurt.io/static-pod-hash";
    /// `kubernetes.io/config.source`: `api` for ordinary pods, `file`/`http` for static ones.
    pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";

    /// The pod template a mirror pod was made from: its name without `-<node>`, its labels and
    /// annotations without the kubelet's `kubernetes.io/config.*` and our revision, its spec
    /// without `nodeName`; no status.
    pub fn template_from_mirror(pod: &Value, name: &str) -> Value {
        let meta = &pod["metadata"];
        let mut out_meta = Map::new();
        out_meta.insert("name".into(), json!(name));
        if let Some(ns) = meta.get("namespace") {
            out_meta.insert("namespace".into(), ns.clone());
        }
        if let Some(l) = meta
            .get("labels")
            .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        {
            out_meta.insert("labels".into(), l.clone());
        }
        let ann: Map<String, Value> = meta
            .get("annotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, _)| !k.starts_with("kubernetes.io/config.") && *k != HASH_ANNOTATION)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !ann.is_empty() {
            out_meta.insert("annotations".into(), Value::Object(ann));
        }
        let mut spec = pod["spec"].clone();
        strip_admission(&mut spec);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": out_meta, "spec": spec})
    }

    /// Removes what the API server, not the manifest, put into a mirror pod's spec: `nodeName`,
    /// the service-account token volume (`kube-api-access-*`, which a static pod may not use) and
    /// its mounts, the service account, and the admission-set priority. Node-independent, so every
    /// node's mirror pod of one manifest gives the same template.
    fn strip_admission(spec: &mut Value) {
        let Some(s) = spec.as_object_mut() else {
            return;
        };
        for k in [
            "nodeName",
            "serviceAccount",
            "serviceAccountName",
            "priority",
        ] {
            s.remove(k);
        }
        let injected = |v: &Value| {
            v["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("kube-api-access-"))
        };
        if let Some(v) = s.get_mut("volumes").and_then(Value::as_array_mut) {
            v.retain(|x| !injected(x));
            if v.is_empty() {
                s.remove("volumes");
            }
        }
        for list in ["containers", "initContainers"] {
            for c in s
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(c) = c.as_object_mut()
                    && let Some(m) = c.get_mut("volumeMounts").and_then(Value::as_array_mut)
                {
                    m.retain(|x| !injected(x));
                    if m.is_empty() {
                        c.remove("volumeMounts");
                    }
                }
            }
        }
    }

    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let sorted: BTreeMap<&String, &Value> = m.iter().collect();
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    canonical(v, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    /// The revision of a template: FNV-32a over its canonical JSON (sorted keys, no whitespace;
    /// our own hash annotation left out), the decimal value encoded with Kubernetes'
    /// `SafeEncodeString` alphabet, so it looks like OpenYurt's (which a non-Go client cannot
    /// reproduce, reference §9.1).
    pub fn revision_hash(template: &Value) -> String {
        let mut t = template.clone();
        if let Some(a) = t
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove(HASH_ANNOTATION);
            if a.is_empty() {
                t["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("annotations"));
            }
        }
        let mut s = String::new();
        canonical(&t, &mut s);
        let h = super::fnv1a32(s.as_bytes());
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        h.to_string()
            .bytes()
            .map(|c| ALPHABET[usize::from(c) % ALPHABET.len()] as char)
            .collect()
    }
}
