//! Patch types (JSON patch, merge patch, strategic merge patch) and server-side apply
//! with `metadata.managedFields` ownership tracking, following kube-apiserver semantics.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

#[derive(thiserror::Error, Debug)]
pub enum PatchError {
    /// Malformed patch document (HTTP 400).
    #[error("{0}")]
    BadRequest(String),
    /// Well-formed patch that cannot be applied (HTTP 422).
    #[error("{0}")]
    Unprocessable(String),
    /// Patch type not supported for this resource (HTTP 415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Server-side apply conflicts (HTTP 409).
    #[error("{message}")]
    Conflict {
        message: String,
        causes: Vec<ConflictCause>,
    },
}

/// One `status.details.causes[]` entry of an apply conflict (`reason: FieldManagerConflict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictCause {
    pub manager: String,
    pub field: String,
    pub message: String,
}

/// How a list field is merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced as a whole; owned as a single leaf.
    Atomic,
    /// Associative list keyed by these fields.
    Map { keys: Vec<&'static str> },
    /// Set of primitives (e.g. finalizers).
    Set,
}

pub trait Schema {
    /// `path` is the list's field path, field names only (list items are skipped).
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;
    fn is_builtin(&self) -> bool;
}

/// Merge strategies of built-in kinds.
#[derive(Clone, Debug)]
pub struct BuiltinSchema {
    kind: String,
}

impl BuiltinSchema {
    pub fn new(kind: impl Into<String>) -> Self {
        BuiltinSchema { kind: kind.into() }
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }
}

fn keyed(keys: &[&'static str]) -> ListStrategy {
    ListStrategy::Map {
        keys: keys.to_vec(),
    }
}

impl Schema for BuiltinSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        let kind = self.kind.as_str();
        match path {
            [.., "metadata", "finalizers"] => ListStrategy::Set,
            [.., "metadata", "ownerReferences"] => keyed(&["uid"]),
            [
                ..,
                "containers" | "initContainers" | "ephemeralContainers",
                "ports",
            ] => keyed(&["containerPort"]),
            [.., "containers" | "initContainers" | "ephemeralContainers"] => keyed(&["name"]),
            ["spec", "ports"] if kind == "Service" => keyed(&["port"]),
            [
                ..,
                "env" | "volumes" | "imagePullSecrets" | "schedulingGates" | "resourceClaims",
            ] => keyed(&["name"]),
            [.., "volumeMounts"] => keyed(&["mountPath"]),
            [.., "volumeDevices"] => keyed(&["devicePath"]),
            [.., "hostAliases"] => keyed(&["ip"]),
            [.., "conditions"] => keyed(&["type"]),
            [.., "topologySpreadConstraints"] => keyed(&["topologyKey"]),
            ["status", "addresses"] if kind == "Node" => keyed(&["type"]),
            ["spec", "taints"] if kind == "Node" => keyed(&["key"]),
            ["spec", "podCIDRs"] if kind == "Node" => ListStrategy::Set,
            ["status", "podIPs" | "hostIPs"] if kind == "Pod" => keyed(&["ip"]),
            ["webhooks"]
                if kind == "MutatingWebhookConfiguration"
                    || kind == "ValidatingWebhookConfiguration" =>
            {
                keyed(&["name"])
            }
            _ => ListStrategy::Atomic,
        }
    }

    fn is_builtin(&self) -> bool {
        true
    }
}

/// Custom resources: every list atomic, no strategic merge patch.
#[derive(Clone, Copy, Debug, Default)]
pub struct CustomResourceSchema;

impl Schema for CustomResourceSchema {
    fn list_strategy(&self, _path: &[&str]) -> ListStrategy {
        ListStrategy::Atomic
    }

    fn is_builtin(&self) -> bool {
        false
    }
}

fn bad(msg: impl Into<String>) -> PatchError {
    PatchError::BadRequest(msg.into())
}

fn strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// The merge-key object of a list item, or None when a key field is missing.
fn key_of(item: &Map<String, Value>, keys: &[&str]) -> Option<Map<String, Value>> {
    let mut k = Map::new();
    for name in keys {
        k.insert((*name).to_string(), item.get(*name)?.clone());
    }
    Some(k)
}

fn item_key(item: &Value, keys: &[&str]) -> Option<Map<String, Value>> {
    item.as_object().and_then(|m| key_of(m, keys))
}

// ---------------------------------------------------------------------------
// RFC 7386 and RFC 6902

/// RFC 7386 JSON merge patch.
pub fn json_merge_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    if !patch.is_object() {
        return Err(bad(format!(
            "error decoding merge patch: expected a JSON object, got {}",
            json_type(patch)
        )));
    }
    let mut doc = target.clone();
    json_patch::merge(&mut doc, patch);
    Ok(doc)
}

/// RFC 6902 JSON patch.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| bad(format!("error decoding patch: {e}")))?;
    let mut doc = target.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| PatchError::Unprocessable(e.to_string()))?;
    Ok(doc)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------
// Strategic merge patch

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// What kube answers for strategic merge patch on a custom resource.
pub const SMP_UNSUPPORTED_MESSAGE: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

pub fn strategic_merge_patch(
    target: &Value,
    patch: &Value,
    schema: &dyn Schema,
) -> Result<Value, PatchError> {
    if !schema.is_builtin() {
        return Err(PatchError::UnsupportedMediaType(
            SMP_UNSUPPORTED_MESSAGE.into(),
        ));
    }
    let Value::Object(p) = patch else {
        return Err(bad(format!(
            "error decoding strategic merge patch: expected a JSON object, got {}",
            json_type(patch)
        )));
    };
    let Value::Object(t) = target else {
        return Err(bad("strategic merge patch target must be a JSON object"));
    };
    let merged = smp_map(Some(t), p, &mut Vec::new(), schema)?;
    Ok(Value::Object(merged.unwrap_or_default()))
}

/// Merges a patch map; `None` means the map was deleted with `$patch: delete`.
fn smp_map(
    orig: Option<&Map<String, Value>>,
    patch: &Map<String, Value>,
    names: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Option<Map<String, Value>>, PatchError> {
    if let Some(d) = patch.get(DIRECTIVE) {
        return match d.as_str() {
            Some("replace") => {
                let mut p = patch.clone();
                p.remove(DIRECTIVE);
                // Merging into nothing strips nested directives and nulls.
                Ok(Some(smp_map(None, &p, names, schema)?.unwrap_or_default()))
            }
            Some("delete") => Ok(None),
            _ => Err(bad(format!(
                "unknown patch type: {d} in map: {}",
                Value::Object(patch.clone())
            ))),
        };
    }
    let mut out = orig.cloned().unwrap_or_default();

    if let Some(rk) = patch.get(RETAIN_KEYS) {
        let keep: BTreeSet<&str> = rk
            .as_array()
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<_>>())
            .ok_or_else(|| bad(format!("$retainKeys must be a list of strings, got {rk}")))?;
        if patch
            .keys()
            .any(|k| !k.starts_with('$') && !keep.contains(k.as_str()))
        {
            return Err(bad("patch content doesn't match retainKeys list"));
        }
        out.retain(|k, _| keep.contains(k.as_str()));
    }

    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE) {
            let Value::Array(del) = v else {
                return Err(bad(format!("{k} must be a list, got {v}")));
            };
            if let Some(Value::Array(list)) = out.get_mut(field) {
                list.retain(|x| !del.contains(x));
            }
        }
    }

    for (k, pv) in patch {
        // Directives (and unknown `$` keys, which typed decoding would drop) never get stored.
        if k.starts_with('$') {
            continue;
        }
        if pv.is_null() {
            out.remove(k);
            continue;
        }
        names.push(k.clone());
        let merged = smp_value(out.get(k), pv, names, schema);
        names.pop();
        match merged? {
            Some(v) => {
                out.insert(k.clone(), v);
            }
            None => {
                out.remove(k);
            }
        }
    }

    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let Value::Array(order) = v else {
                return Err(bad(format!("{k} must be a list, got {v}")));
            };
            if let Some(Value::Array(list)) = out.get_mut(field) {
                names.push(field.to_string());
                let strategy = schema.list_strategy(&strs(names));
                names.pop();
                reorder(list, order, &strategy);
            }
        }
    }
    Ok(Some(out))
}

fn smp_value(
    orig: Option<&Value>,
    pv: &Value,
    names: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Option<Value>, PatchError> {
    match pv {
        Value::Object(pm) => {
            let om = orig.and_then(Value::as_object);
            Ok(smp_map(om, pm, names, schema)?.map(Value::Object))
        }
        Value::Array(pl) => {
            let ol = orig
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            Ok(Some(Value::Array(smp_list(ol, pl, names, schema)?)))
        }
        _ => Ok(Some(pv.clone())),
    }
}

fn clean_items(
    items: &[&Value],
    names: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Vec<Value>, PatchError> {
    let mut out = Vec::new();
    for it in items {
        if let Some(v) = smp_value(None, it, names, schema)? {
            out.push(v);
        }
    }
    Ok(out)
}

fn smp_list(
    orig: &[Value],
    patch: &[Value],
    names: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Vec<Value>, PatchError> {
    let strategy = schema.list_strategy(&strs(names));
    let mut replace = false;
    let mut deletes = Vec::new();
    let mut rest = Vec::new();
    for item in patch {
        match item.as_object().and_then(|m| m.get(DIRECTIVE)) {
            None => rest.push(item),
            Some(d) => match d.as_str() {
                Some("replace") => replace = true,
                Some("delete") => deletes.push(item),
                Some("merge") => {
                    return Err(bad("merging lists cannot yet be specified in the patch"));
                }
                _ => return Err(bad(format!("unknown patch type: {d} in map: {item}"))),
            },
        }
    }
    if replace {
        return clean_items(&rest, names, schema);
    }
    match strategy {
        ListStrategy::Atomic => clean_items(&rest, names, schema),
        ListStrategy::Set => {
            let mut out = orig.to_vec();
            for v in clean_items(&rest, names, schema)? {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            Ok(out)
        }
        ListStrategy::Map { keys } => {
            let missing_key = |item: &Value| {
                bad(format!(
                    "map: {item} does not contain declared merge key: {}",
                    keys.join(",")
                ))
            };
            let mut out = orig.to_vec();
            for d in deletes {
                let k = item_key(d, &keys).ok_or_else(|| missing_key(d))?;
                out.retain(|o| item_key(o, &keys).as_ref() != Some(&k));
            }
            for item in rest {
                let Value::Object(pm) = item else {
                    return Err(bad(format!(
                        "{}: expected a list of objects merged by {}, got item {item}",
                        names.join("."),
                        keys.join(",")
                    )));
                };
                let k = key_of(pm, &keys).ok_or_else(|| missing_key(item))?;
                let pos = out
                    .iter()
                    .position(|o| item_key(o, &keys).as_ref() == Some(&k));
                match pos {
                    Some(pos) => match smp_map(out[pos].as_object(), pm, names, schema)? {
                        Some(m) => out[pos] = Value::Object(m),
                        None => {
                            out.remove(pos);
                        }
                    },
                    None => {
                        if let Some(m) = smp_map(None, pm, names, schema)? {
                            out.push(Value::Object(m));
                        }
                    }
                }
            }
            Ok(out)
        }
    }
}

/// `$setElementOrder`: items named in `order` take the slots they occupy, in that order;
/// other items keep their positions.
fn reorder(list: &mut [Value], order: &[Value], strategy: &ListStrategy) {
    let id = |v: &Value| -> Option<Value> {
        match strategy {
            ListStrategy::Map { keys } => item_key(v, keys).map(Value::Object),
            _ => Some(v.clone()),
        }
    };
    let wanted: Vec<Value> = order.iter().filter_map(id).collect();
    let rank = |v: &Value| id(v).and_then(|i| wanted.iter().position(|w| *w == i));
    let slots: Vec<usize> = (0..list.len())
        .filter(|&i| rank(&list[i]).is_some())
        .collect();
    let mut items: Vec<Value> = slots.iter().map(|&i| list[i].clone()).collect();
    items.sort_by_key(|v| rank(v));
    for (slot, item) in slots.into_iter().zip(items) {
        list[slot] = item;
    }
}

// ---------------------------------------------------------------------------
// Field sets and the FieldsV1 encoding

/// One step of a field path, as in fieldsV1: `f:name`, `k:{json}`, `v:json`, `i:n`.
/// `Key` and `Value` hold canonical (sorted, compact) JSON text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    Field(String),
    Key(String),
    Value(String),
    Index(usize),
}

impl PathElement {
    pub fn field(name: &str) -> Self {
        PathElement::Field(name.to_string())
    }

    pub fn key(key: &Map<String, Value>) -> Self {
        PathElement::Key(canonical_json(&Value::Object(key.clone())))
    }

    pub fn value(v: &Value) -> Self {
        PathElement::Value(canonical_json(v))
    }

    /// The fieldsV1 key form.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(n) => format!("f:{n}"),
            PathElement::Key(j) => format!("k:{j}"),
            PathElement::Value(j) => format!("v:{j}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    pub fn decode(s: &str) -> Result<Self, PatchError> {
        let err = || bad(format!("invalid fieldsV1 path element {s:?}"));
        if let Some(n) = s.strip_prefix("f:") {
            return Ok(PathElement::Field(n.to_string()));
        }
        if let Some(j) = s.strip_prefix("k:") {
            let v: Value = serde_json::from_str(j).map_err(|_| err())?;
            return match v {
                Value::Object(_) => Ok(PathElement::Key(canonical_json(&v))),
                _ => Err(err()),
            };
        }
        if let Some(j) = s.strip_prefix("v:") {
            let v: Value = serde_json::from_str(j).map_err(|_| err())?;
            return Ok(PathElement::Value(canonical_json(&v)));
        }
        if let Some(i) = s.strip_prefix("i:") {
            return i.parse().map(PathElement::Index).map_err(|_| err());
        }
        Err(err())
    }
}

pub type FieldPath = Vec<PathElement>;

/// Human form used in conflict messages: `.spec.containers[name="web"].image`.
pub fn path_to_string(path: &[PathElement]) -> String {
    let scalar = |v: &Value| match v {
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        other => other.to_string(),
    };
    let mut out = String::new();
    for pe in path {
        match pe {
            PathElement::Field(n) => {
                out.push('.');
                out.push_str(n);
            }
            PathElement::Key(j) => {
                let m: Map<String, Value> = serde_json::from_str(j).unwrap_or_default();
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", scalar(v)))
                    .collect();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            PathElement::Value(j) => {
                let v: Value = serde_json::from_str(j).unwrap_or(Value::Null);
                out.push_str(&format!("[={}]", scalar(&v)));
            }
            PathElement::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// JSON text with object keys sorted, independent of serde_json's map ordering.
fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).unwrap_or_default(),
                        canonical_json(v)
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(canonical_json).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// A set of field paths (the members; parents are implicit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    paths: BTreeSet<FieldPath>,
}

#[derive(Default)]
struct Node {
    member: bool,
    children: BTreeMap<PathElement, Node>,
}

impl Node {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        // "." marks a node that is itself owned and also has owned children.
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (pe, child) in &self.children {
            m.insert(pe.encode(), child.to_json());
        }
        Value::Object(m)
    }
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, path: FieldPath) {
        if !path.is_empty() {
            self.paths.insert(path);
        }
    }

    pub fn remove(&mut self, path: &[PathElement]) -> bool {
        self.paths.remove(path)
    }

    pub fn contains(&self, path: &[PathElement]) -> bool {
        self.paths.contains(path)
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &FieldPath> {
        self.paths.iter()
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.union(&other.paths).cloned().collect(),
        }
    }

    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.difference(&other.paths).cloned().collect(),
        }
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.intersection(&other.paths).cloned().collect(),
        }
    }

    /// Whether some member lies strictly below `path`.
    pub fn has_descendant(&self, path: &[PathElement]) -> bool {
        self.paths
            .range(path.to_vec()..)
            .take_while(|p| p.starts_with(path))
            .any(|p| p.len() > path.len())
    }

    pub fn to_fields_v1(&self) -> Value {
        let mut root = Node::default();
        for path in &self.paths {
            let mut node = &mut root;
            for pe in path {
                node = node.children.entry(pe.clone()).or_default();
            }
            node.member = true;
        }
        root.to_json()
    }

    pub fn from_fields_v1(v: &Value) -> Result<Self, PatchError> {
        fn walk(v: &Value, prefix: &mut FieldPath, out: &mut FieldSet) -> Result<(), PatchError> {
            let Value::Object(m) = v else {
                return Err(bad(format!(
                    "invalid fieldsV1: expected an object, got {v}"
                )));
            };
            if m.is_empty() {
                out.insert(prefix.clone());
            }
            for (k, child) in m {
                if k == "." {
                    out.insert(prefix.clone());
                    continue;
                }
                prefix.push(PathElement::decode(k)?);
                walk(child, prefix, out)?;
                prefix.pop();
            }
            Ok(())
        }
        let mut out = FieldSet::new();
        walk(v, &mut Vec::new(), &mut out)?;
        Ok(out)
    }

    fn retain(&mut self, f: impl Fn(&FieldPath) -> bool) {
        self.paths.retain(|p| f(p));
    }
}

/// Fields never tracked by managedFields.
fn is_untracked(path: &[PathElement]) -> bool {
    let f = |i: usize| match path.get(i) {
        Some(PathElement::Field(n)) => Some(n.as_str()),
        _ => None,
    };
    matches!(
        (path.len(), f(0), f(1)),
        (1, Some("apiVersion" | "kind" | "metadata"), _)
            | (
                2,
                Some("metadata"),
                Some(
                    "name"
                        | "namespace"
                        | "uid"
                        | "resourceVersion"
                        | "generation"
                        | "creationTimestamp"
                        | "selfLink"
                        | "deletionTimestamp",
                ),
            )
            | (_, Some("metadata"), Some("managedFields"))
    )
}

/// Field set of an applied configuration: leaves, map-list items (and their fields), set items.
pub fn applied_field_set(applied: &Value, schema: &dyn Schema) -> Result<FieldSet, PatchError> {
    fn walk_map(
        m: &Map<String, Value>,
        path: &mut FieldPath,
        names: &mut Vec<String>,
        schema: &dyn Schema,
        set: &mut FieldSet,
    ) -> Result<(), PatchError> {
        for (k, v) in m {
            if v.is_null() {
                continue;
            }
            path.push(PathElement::field(k));
            names.push(k.clone());
            let r = match v {
                Value::Object(cm) if !cm.is_empty() => walk_map(cm, path, names, schema, set),
                Value::Array(items) => walk_list(items, path, names, schema, set),
                _ => {
                    set.insert(path.clone());
                    Ok(())
                }
            };
            path.pop();
            names.pop();
            r?;
        }
        Ok(())
    }
    fn walk_list(
        items: &[Value],
        path: &mut FieldPath,
        names: &mut Vec<String>,
        schema: &dyn Schema,
        set: &mut FieldSet,
    ) -> Result<(), PatchError> {
        fn dup(pe: &PathElement, path: &FieldPath) -> PatchError {
            bad(format!(
                "{}: duplicate entries for key {}",
                path_to_string(path),
                path_to_string(std::slice::from_ref(pe))
            ))
        }
        let mut seen = BTreeSet::new();
        match schema.list_strategy(&strs(names)) {
            ListStrategy::Atomic => set.insert(path.clone()),
            ListStrategy::Set => {
                for it in items {
                    if it.is_object() || it.is_array() {
                        return Err(bad(format!(
                            "{}: expected a list of scalars, got item {it}",
                            path_to_string(path)
                        )));
                    }
                    let pe = PathElement::value(it);
                    if !seen.insert(pe.clone()) {
                        return Err(dup(&pe, path));
                    }
                    path.push(pe);
                    set.insert(path.clone());
                    path.pop();
                }
            }
            ListStrategy::Map { keys } => {
                for it in items {
                    let Value::Object(im) = it else {
                        return Err(bad(format!(
                            "{}: expected a list of objects, got item {it}",
                            path_to_string(path)
                        )));
                    };
                    let Some(k) = key_of(im, &keys) else {
                        let missing = keys.iter().find(|k| !im.contains_key(**k)).unwrap_or(&"");
                        return Err(bad(format!(
                            "{}: associative list with keys has an element that omits key field {missing:?}",
                            path_to_string(path)
                        )));
                    };
                    let pe = PathElement::key(&k);
                    if !seen.insert(pe.clone()) {
                        return Err(dup(&pe, path));
                    }
                    path.push(pe);
                    set.insert(path.clone());
                    let r = walk_map(im, path, names, schema, set);
                    path.pop();
                    r?;
                }
            }
        }
        Ok(())
    }
    let Value::Object(m) = applied else {
        return Err(bad("apply configuration must be a JSON object"));
    };
    let mut set = FieldSet::new();
    walk_map(m, &mut Vec::new(), &mut Vec::new(), schema, &mut set)?;
    set.retain(|p| !is_untracked(p));
    Ok(set)
}

#[derive(Default)]
struct Comparison {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

/// Whether every item carries its keys and no key repeats (else the list is compared atomically).
fn keyed_items<'a>(
    items: &'a [Value],
    keys: &[&str],
) -> Option<Vec<(PathElement, &'a Map<String, Value>)>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for it in items {
        let m = it.as_object()?;
        let pe = PathElement::key(&key_of(m, keys)?);
        if !seen.insert(pe.clone()) {
            return None;
        }
        out.push((pe, m));
    }
    Some(out)
}

/// Every node of a subtree: map entries, list items and leaves.
fn all_nodes(
    v: &Value,
    path: &mut FieldPath,
    names: &mut Vec<String>,
    schema: &dyn Schema,
    set: &mut FieldSet,
) {
    set.insert(path.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                path.push(PathElement::field(k));
                names.push(k.clone());
                all_nodes(c, path, names, schema, set);
                path.pop();
                names.pop();
            }
        }
        Value::Array(items) => match schema.list_strategy(&strs(names)) {
            ListStrategy::Atomic => {}
            ListStrategy::Set => {
                for it in items {
                    path.push(PathElement::value(it));
                    set.insert(path.clone());
                    path.pop();
                }
            }
            ListStrategy::Map { keys } => {
                for (pe, m) in keyed_items(items, &keys).unwrap_or_default() {
                    path.push(pe);
                    all_nodes(&Value::Object(m.clone()), path, names, schema, set);
                    path.pop();
                }
            }
        },
        _ => {}
    }
}

fn compare(old: &Value, new: &Value, schema: &dyn Schema) -> Comparison {
    fn cmp_map(
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        path: &mut FieldPath,
        names: &mut Vec<String>,
        schema: &dyn Schema,
        c: &mut Comparison,
    ) {
        let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        let in_metadata = matches!(path.as_slice(), [PathElement::Field(f)] if f == "metadata");
        for k in keys {
            // Never a tracked field: not walked, so callers need not copy objects without it.
            if in_metadata && k == "managedFields" {
                continue;
            }
            path.push(PathElement::field(k));
            names.push(k.clone());
            match (old.get(k), new.get(k)) {
                (Some(o), Some(n)) => cmp_value(o, n, path, names, schema, c),
                (None, Some(n)) => all_nodes(n, path, names, schema, &mut c.added),
                (Some(o), None) => all_nodes(o, path, names, schema, &mut c.removed),
                (None, None) => {}
            }
            path.pop();
            names.pop();
        }
    }
    fn cmp_value(
        o: &Value,
        n: &Value,
        path: &mut FieldPath,
        names: &mut Vec<String>,
        schema: &dyn Schema,
        c: &mut Comparison,
    ) {
        match (o, n) {
            (Value::Object(om), Value::Object(nm)) => cmp_map(om, nm, path, names, schema, c),
            (Value::Array(ol), Value::Array(nl)) => match schema.list_strategy(&strs(names)) {
                ListStrategy::Set => {
                    for it in ol.iter().filter(|it| !nl.contains(it)) {
                        path.push(PathElement::value(it));
                        c.removed.insert(path.clone());
                        path.pop();
                    }
                    for it in nl.iter().filter(|it| !ol.contains(it)) {
                        path.push(PathElement::value(it));
                        c.added.insert(path.clone());
                        path.pop();
                    }
                }
                ListStrategy::Map { keys } => {
                    match (keyed_items(ol, &keys), keyed_items(nl, &keys)) {
                        (Some(oi), Some(ni)) => {
                            let om: BTreeMap<_, _> = oi.into_iter().collect();
                            let nm: BTreeMap<_, _> = ni.into_iter().collect();
                            for (pe, item) in &om {
                                path.push(pe.clone());
                                match nm.get(pe) {
                                    Some(n) => cmp_map(item, n, path, names, schema, c),
                                    None => all_nodes(
                                        &Value::Object((*item).clone()),
                                        path,
                                        names,
                                        schema,
                                        &mut c.removed,
                                    ),
                                }
                                path.pop();
                            }
                            for (pe, item) in nm.iter().filter(|(pe, _)| !om.contains_key(*pe)) {
                                path.push(pe.clone());
                                all_nodes(
                                    &Value::Object((*item).clone()),
                                    path,
                                    names,
                                    schema,
                                    &mut c.added,
                                );
                                path.pop();
                            }
                        }
                        _ if o != n => c.modified.insert(path.clone()),
                        _ => {}
                    }
                }
                ListStrategy::Atomic => {
                    if o != n {
                        c.modified.insert(path.clone());
                    }
                }
            },
            _ if o != n => c.modified.insert(path.clone()),
            _ => {}
        }
    }
    let mut c = Comparison::default();
    let empty = Map::new();
    let om = old.as_object().unwrap_or(&empty);
    let nm = new.as_object().unwrap_or(&empty);
    cmp_map(om, nm, &mut Vec::new(), &mut Vec::new(), schema, &mut c);
    c.added.retain(|p| !is_untracked(p));
    c.modified.retain(|p| !is_untracked(p));
    c.removed.retain(|p| !is_untracked(p));
    c
}

// ---------------------------------------------------------------------------
// managedFields entries

#[derive(Clone, Debug)]
struct Entry {
    manager: String,
    operation: String,
    subresource: Option<String>,
    api_version: String,
    time: Option<String>,
    set: FieldSet,
}

impl Entry {
    fn is(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// How kube names a manager in conflict messages.
    fn display(&self) -> String {
        let mut s = serde_json::to_string(&self.manager).unwrap_or_default();
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(
                " with subresource {}",
                serde_json::to_string(sub).unwrap_or_default()
            ));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        Value::Object(m)
    }
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("managedFields"))
}

/// Decodes managedFields; malformed entries are skipped (kube also tolerates and resets them).
fn decode_entries(list: &[Value]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in list {
        let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(manager), Some(operation)) = (s("manager"), s("operation")) else {
            continue;
        };
        let Ok(set) = FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&json!({}))) else {
            continue;
        };
        let subresource = s("subresource").filter(|x| !x.is_empty());
        if let Some(prev) = out
            .iter_mut()
            .find(|x| x.is(&manager, &operation, subresource.as_deref()))
        {
            prev.set = prev.set.union(&set);
            continue;
        }
        out.push(Entry {
            manager,
            operation,
            subresource,
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time"),
            set,
        });
    }
    out
}

/// Writes entries in kube's order (operation, time, manager, apiVersion, subresource).
fn set_managed_fields(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.set.is_empty());
    entries.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Value::Object(root) = obj else { return };
    let meta = root.entry("metadata").or_insert_with(|| json!({}));
    let Value::Object(meta) = meta else { return };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

fn without_managed_fields(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(Value::Object(meta)) = v.get_mut("metadata") {
        meta.remove("managedFields");
    }
    v
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// Server-side apply

/// Merges an applied configuration into the live object (no pruning).
fn merge_applied(live: &Value, cfg: &Value, names: &mut Vec<String>, schema: &dyn Schema) -> Value {
    match (live, cfg) {
        (Value::Object(lm), Value::Object(cm)) => {
            let mut out = lm.clone();
            for (k, cv) in cm {
                names.push(k.clone());
                let v = match lm.get(k) {
                    Some(lv) => merge_applied(lv, cv, names, schema),
                    None => cv.clone(),
                };
                names.pop();
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        (Value::Array(ll), Value::Array(cl)) => match schema.list_strategy(&strs(names)) {
            ListStrategy::Atomic => cfg.clone(),
            ListStrategy::Set => {
                let mut out = ll.clone();
                for it in cl {
                    if !out.contains(it) {
                        out.push(it.clone());
                    }
                }
                Value::Array(out)
            }
            ListStrategy::Map { keys } => {
                if keyed_items(ll, &keys).is_none() {
                    return cfg.clone();
                }
                let mut out = ll.clone();
                for it in cl {
                    let k = item_key(it, &keys);
                    match out.iter().position(|o| item_key(o, &keys) == k) {
                        Some(pos) => out[pos] = merge_applied(&out[pos], it, names, schema),
                        None => out.push(it.clone()),
                    }
                }
                Value::Array(out)
            }
        },
        _ => cfg.clone(),
    }
}

/// Removes the node at `path` from the object, if present.
fn remove_path(obj: &mut Value, path: &[PathElement]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for pe in parents {
        let next = match (pe, cur) {
            (PathElement::Field(n), Value::Object(m)) => m.get_mut(n),
            (PathElement::Key(k), Value::Array(items)) => {
                let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                items.iter_mut().find(|it| key_matches(it, &key))
            }
            (PathElement::Value(j), Value::Array(items)) => {
                let v: Value = serde_json::from_str(j).unwrap_or(Value::Null);
                items.iter_mut().find(|it| **it == v)
            }
            (PathElement::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match (last, cur) {
        (PathElement::Field(n), Value::Object(m)) => {
            m.remove(n);
        }
        (PathElement::Key(k), Value::Array(items)) => {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            items.retain(|it| !key_matches(it, &key));
        }
        (PathElement::Value(j), Value::Array(items)) => {
            let v: Value = serde_json::from_str(j).unwrap_or(Value::Null);
            items.retain(|it| *it != v);
        }
        (PathElement::Index(i), Value::Array(items)) if *i < items.len() => {
            items.remove(*i);
        }
        _ => {}
    }
}

fn key_matches(item: &Value, key: &Map<String, Value>) -> bool {
    !key.is_empty() && key.iter().all(|(k, v)| item.get(k) == Some(v))
}

/// Server-side apply (`application/apply-patch+yaml`, already decoded to JSON).
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
    schema: &dyn Schema,
) -> Result<Value, PatchError> {
    let Value::Object(cfg) = applied else {
        return Err(bad("apply configuration must be a JSON object"));
    };
    if manager.is_empty() {
        return Err(bad(
            "PATCH requests with apply content type must specify a fieldManager",
        ));
    }
    let api_version = cfg.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = cfg.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version.is_empty() || kind.is_empty() {
        return Err(bad(format!(
            "invalid object type: {api_version}, Kind={kind}: apiVersion and kind must be set"
        )));
    }
    if managed_fields_of(applied).is_some_and(|m| !m.is_null()) {
        return Err(bad("metadata.managedFields must be nil"));
    }
    let new_set = applied_field_set(applied, schema)?;
    let live_obj = match live {
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(PatchError::Unprocessable(
                "live object is not a JSON object".into(),
            ));
        }
        None => json!({}),
    };
    let mut entries = match managed_fields_of(&live_obj) {
        Some(Value::Array(list)) => decode_entries(list),
        _ => Vec::new(),
    };
    let live_clean = without_managed_fields(&live_obj);
    let mut merged = merge_applied(&live_clean, &strip_nulls(applied), &mut Vec::new(), schema);

    // Prune what this manager applied before and nobody (including its new config) owns now.
    let me = |e: &Entry| e.is(manager, "Apply", None);
    let last_set = entries
        .iter()
        .find(|e| me(e))
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let mut owned = new_set.clone();
    for e in entries.iter().filter(|e| !me(e)) {
        owned = owned.union(&e.set);
    }
    for p in last_set.difference(&owned).iter() {
        if !owned.has_descendant(p) {
            remove_path(&mut merged, p);
        }
    }

    let cmp = compare(&live_clean, &merged, schema);
    let changed = cmp.added.union(&cmp.modified);
    let mut conflicts: Vec<(usize, FieldSet)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !me(e))
        .map(|(i, e)| (i, e.set.intersection(&changed)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !conflicts.is_empty() && !force {
        conflicts.sort_by_key(|(i, _)| entries[*i].display());
        return Err(conflict_error(&entries, &conflicts));
    }
    for (i, c) in &conflicts {
        entries[*i].set = entries[*i].set.difference(c);
    }
    for e in entries.iter_mut().filter(|e| !me(e)) {
        e.set = e.set.difference(&cmp.removed);
    }

    let object_changed = merged != live_clean;
    match entries.iter_mut().find(|e| me(e)) {
        Some(e) => {
            e.set = new_set;
            e.api_version = api_version.to_string();
            if object_changed || e.time.is_none() {
                e.time = Some(now.to_string());
            }
        }
        None => entries.push(Entry {
            manager: manager.to_string(),
            operation: "Apply".into(),
            subresource: None,
            api_version: api_version.to_string(),
            time: Some(now.to_string()),
            set: new_set,
        }),
    }
    set_managed_fields(&mut merged, entries);
    Ok(merged)
}

fn conflict_error(entries: &[Entry], conflicts: &[(usize, FieldSet)]) -> PatchError {
    let mut causes = Vec::new();
    let mut lines = Vec::new();
    for (i, set) in conflicts {
        let who = entries[*i].display();
        lines.push(format!("conflicts with {who}:"));
        for p in set.iter() {
            let field = path_to_string(p);
            lines.push(format!("- {field}"));
            causes.push(ConflictCause {
                manager: entries[*i].manager.clone(),
                field,
                message: format!("conflict with {who}"),
            });
        }
    }
    let message = if causes.len() == 1 {
        format!(
            "Apply failed with 1 conflict: {}: {}",
            causes[0].message, causes[0].field
        )
    } else {
        format!(
            "Apply failed with {} conflicts: {}",
            causes.len(),
            lines.join("\n")
        )
    };
    PatchError::Conflict { message, causes }
}

/// Records ownership for a non-apply write (create, PUT, JSON/merge/strategic PATCH, status write).
///
/// Uses the managedFields carried in `new` when present (`[]` resets them), else those of `old`.
pub fn record_update(
    old: Option<&Value>,
    mut new: Value,
    manager: &str,
    now: &str,
    subresource: Option<&str>,
    schema: &dyn Schema,
) -> Value {
    let new_entries = new
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"));
    let old_entries = || match old.and_then(managed_fields_of) {
        Some(Value::Array(list)) => decode_entries(list),
        _ => Vec::new(),
    };
    let mut entries = match &new_entries {
        Some(Value::Array(list)) if list.is_empty() => Vec::new(),
        Some(Value::Array(list)) => {
            let decoded = decode_entries(list);
            if decoded.is_empty() {
                old_entries()
            } else {
                decoded
            }
        }
        _ => old_entries(),
    };
    let empty = json!({});
    let cmp = compare(old.unwrap_or(&empty), &new, schema);
    let mut taken = cmp.added.union(&cmp.modified);
    if schema.is_builtin() {
        // spec/status are plain structs in typed objects: never "added" themselves.
        taken.retain(
            |p| !matches!(p.as_slice(), [PathElement::Field(f)] if f == "spec" || f == "status"),
        );
    }
    for e in entries.iter_mut() {
        e.set = e.set.difference(&taken).difference(&cmp.removed);
    }
    if !taken.is_empty() {
        let api_version = new
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match entries
            .iter_mut()
            .find(|e| e.is(manager, "Update", subresource))
        {
            Some(e) => {
                e.set = e.set.union(&taken);
                e.api_version = api_version;
                e.time = Some(now.to_string());
            }
            None => entries.push(Entry {
                manager: manager.to_string(),
                operation: "Update".into(),
                subresource: subresource.map(str::to_string),
                api_version,
                time: Some(now.to_string()),
                set: taken,
            }),
        }
    }
    set_managed_fields(&mut new, entries);
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2024-01-01T00:00:00Z";
    const T1: &str = "2024-01-01T00:01:00Z";
    const T2: &str = "2024-01-01T00:02:00Z";

    fn deploy() -> BuiltinSchema {
        BuiltinSchema::new("Deployment")
    }

    fn no_directives(v: &Value) -> bool {
        match v {
            Value::Object(m) => m
                .iter()
                .all(|(k, v)| !k.starts_with('$') && no_directives(v)),
            Value::Array(a) => a.iter().all(no_directives),
            _ => true,
        }
    }

    fn entries(obj: &Value) -> Vec<Value> {
        managed_fields_of(obj)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    fn entry<'a>(obj: &'a Value, manager: &str, op: &str) -> Option<&'a Value> {
        managed_fields_of(obj)?
            .as_array()?
            .iter()
            .find(|e| e["manager"] == manager && e["operation"] == op)
    }

    fn owns(obj: &Value, manager: &str, op: &str, path: &str) -> bool {
        let Some(e) = entry(obj, manager, op) else {
            return false;
        };
        let set = FieldSet::from_fields_v1(&e["fieldsV1"]).unwrap();
        set.iter().any(|p| path_to_string(p) == path)
    }

    #[test]
    fn builtin_schema_table() {
        let map = |k: &'static str| ListStrategy::Map { keys: vec![k] };
        let cases: Vec<(&str, &[&str], ListStrategy)> = vec![
            (
                "Deployment",
                &["spec", "template", "spec", "containers"],
                map("name"),
            ),
            ("Pod", &["spec", "initContainers"], map("name")),
            ("Pod", &["spec", "ephemeralContainers"], map("name")),
            ("Pod", &["spec", "containers", "env"], map("name")),
            ("Pod", &["spec", "volumes"], map("name")),
            (
                "Pod",
                &["spec", "containers", "volumeMounts"],
                map("mountPath"),
            ),
            (
                "Pod",
                &["spec", "containers", "volumeDevices"],
                map("devicePath"),
            ),
            (
                "Pod",
                &["spec", "containers", "ports"],
                map("containerPort"),
            ),
            ("Service", &["spec", "ports"], map("port")),
            ("Pod", &["spec", "imagePullSecrets"], map("name")),
            ("Pod", &["spec", "hostAliases"], map("ip")),
            ("Pod", &["metadata", "ownerReferences"], map("uid")),
            ("Deployment", &["status", "conditions"], map("type")),
            ("Node", &["status", "addresses"], map("type")),
            ("Node", &["spec", "taints"], map("key")),
            (
                "Pod",
                &["spec", "topologySpreadConstraints"],
                map("topologyKey"),
            ),
            ("Pod", &["metadata", "finalizers"], ListStrategy::Set),
            ("MutatingWebhookConfiguration", &["webhooks"], map("name")),
            ("ValidatingWebhookConfiguration", &["webhooks"], map("name")),
            ("ClusterRole", &["rules"], ListStrategy::Atomic),
            ("RoleBinding", &["subjects"], ListStrategy::Atomic),
            ("Pod", &["spec", "containers", "args"], ListStrategy::Atomic),
            (
                "Pod",
                &["spec", "containers", "command"],
                ListStrategy::Atomic,
            ),
            ("Pod", &["spec", "tolerations"], ListStrategy::Atomic),
            (
                "Pod",
                &["spec", "containers", "envFrom"],
                ListStrategy::Atomic,
            ),
            ("Pod", &["status", "addresses"], ListStrategy::Atomic),
            ("EndpointSlice", &["ports"], ListStrategy::Atomic),
            ("Pod", &["spec", "taints"], ListStrategy::Atomic),
        ];
        for (kind, path, want) in cases {
            assert_eq!(
                BuiltinSchema::new(kind).list_strategy(path),
                want,
                "{kind} {path:?}"
            );
        }
        assert!(BuiltinSchema::new("Pod").is_builtin());
        assert!(!CustomResourceSchema.is_builtin());
        assert_eq!(
            CustomResourceSchema.list_strategy(&["spec", "containers"]),
            ListStrategy::Atomic
        );
    }

    #[test]
    fn strategic_merge_patch_table() {
        let dep = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a/x"],
                         "annotations": {"keep": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {
                "containers": [
                    {"name": "web", "image": "nginx:1", "args": ["-a", "-b"],
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "old", "image": "busybox"}
                ],
                "securityContext": {"runAsUser": 1, "fsGroup": 2}
            }}},
            "status": {"conditions": [
                {"type": "Available", "status": "False", "reason": "x"},
                {"type": "Progressing", "status": "True"}
            ]}
        });
        let ctrs = |v: &Value| v["spec"]["template"]["spec"]["containers"].clone();
        type Check = fn(&Value) -> bool;
        let cases: Vec<(&str, Value, Check)> = vec![
            (
                "containers merged by name: update, add, delete",
                json!({"spec": {"template": {"spec": {"containers": [
                 {"name": "web", "image": "nginx:2"},
                 {"name": "sidecar", "image": "envoy"},
                 {"name": "old", "$patch": "delete"}]}}}}),
                |v| {
                    let c = &v["spec"]["template"]["spec"]["containers"];
                    c.as_array().unwrap().len() == 2
                        && c[0]["name"] == "web"
                        && c[0]["image"] == "nginx:2"
                        && c[0]["args"] == json!(["-a", "-b"])
                        && c[0]["env"].as_array().unwrap().len() == 2
                        && c[1] == json!({"name": "sidecar", "image": "envoy"})
                },
            ),
            (
                "env merged by name",
                json!({"spec": {"template": {"spec": {"containers": [
                 {"name": "web", "env": [{"name": "B", "value": "22"}, {"name": "C", "value": "3"}]}]}}}}),
                |v| {
                    v["spec"]["template"]["spec"]["containers"][0]["env"]
                        == json!([
                 {"name": "A", "value": "1"}, {"name": "B", "value": "22"}, {"name": "C", "value": "3"}])
                },
            ),
            (
                "$patch: replace replaces the whole list",
                json!({"spec": {"template": {"spec": {"containers": [
                 {"$patch": "replace"}, {"name": "only", "image": "x"}]}}}}),
                |v| {
                    v["spec"]["template"]["spec"]["containers"]
                        == json!([{"name": "only", "image": "x"}])
                },
            ),
            (
                "atomic list (args) replaced",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "args": ["-c"]}]}}}}),
                |v| v["spec"]["template"]["spec"]["containers"][0]["args"] == json!(["-c"]),
            ),
            (
                "null deletes a map key",
                json!({"metadata": {"labels": {"tier": null, "new": "y"}}}),
                |v| v["metadata"]["labels"] == json!({"app": "web", "new": "y"}),
            ),
            (
                "null for an absent key is a no-op",
                json!({"metadata": {"labels": {"nothere": null}}}),
                |v| v["metadata"]["labels"] == json!({"app": "web", "tier": "front"}),
            ),
            (
                "finalizers are unioned",
                json!({"metadata": {"finalizers": ["b/y", "a/x"]}}),
                |v| v["metadata"]["finalizers"] == json!(["a/x", "b/y"]),
            ),
            (
                "$deleteFromPrimitiveList removes set items",
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}}),
                |v| v["metadata"]["finalizers"] == json!([]),
            ),
            (
                "conditions merged by type",
                json!({"status": {"conditions": [{"type": "Available", "status": "True", "reason": null},
                                              {"type": "ReplicaFailure", "status": "False"}]}}),
                |v| {
                    v["status"]["conditions"]
                        == json!([
                 {"type": "Available", "status": "True"},
                 {"type": "Progressing", "status": "True"},
                 {"type": "ReplicaFailure", "status": "False"}])
                },
            ),
            (
                "$patch: replace on a map",
                json!({"spec": {"template": {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 5}}}}}),
                |v| v["spec"]["template"]["spec"]["securityContext"] == json!({"runAsUser": 5}),
            ),
            (
                "$patch: delete on a map removes it",
                json!({"spec": {"template": {"spec": {"securityContext": {"$patch": "delete"}}}}}),
                |v| {
                    v["spec"]["template"]["spec"]
                        .get("securityContext")
                        .is_none()
                        && v["spec"]["template"]["spec"]["containers"]
                            .as_array()
                            .unwrap()
                            .len()
                            == 2
                },
            ),
            (
                "$retainKeys drops unlisted keys",
                json!({"spec": {"template": {"spec": {"securityContext": {"$retainKeys": ["runAsUser"], "runAsUser": 9}}}}}),
                |v| v["spec"]["template"]["spec"]["securityContext"] == json!({"runAsUser": 9}),
            ),
            (
                "$setElementOrder reorders",
                json!({"spec": {"template": {"spec": {
                 "$setElementOrder/containers": [{"name": "old"}, {"name": "web"}],
                 "containers": [{"name": "web", "image": "nginx:3"}]}}}}),
                |v| {
                    let c = &v["spec"]["template"]["spec"]["containers"];
                    c[0]["name"] == "old" && c[1]["name"] == "web" && c[1]["image"] == "nginx:3"
                },
            ),
            (
                "scalar replaced, other fields kept",
                json!({"spec": {"replicas": 3}}),
                |v| v["spec"]["replicas"] == 3 && v["metadata"]["annotations"]["keep"] == "1",
            ),
            (
                "new subtree has directives and nulls stripped",
                json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null,
                                          "x": {"$patch": "delete"}}}}),
                |v| v["spec"]["strategy"] == json!({"type": "Recreate"}),
            ),
        ];
        for (name, patch, check) in cases {
            let out = strategic_merge_patch(&dep, &patch, &deploy())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(check(&out), "{name}: got {out:#}");
            assert!(no_directives(&out), "{name}: directive leaked: {out}");
        }
        // Untouched lists keep their content.
        let out =
            strategic_merge_patch(&dep, &json!({"spec": {"replicas": 2}}), &deploy()).unwrap();
        assert_eq!(ctrs(&out), ctrs(&dep));

        let svc = json!({"kind": "Service", "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let out = strategic_merge_patch(
            &svc,
            &json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}),
            &BuiltinSchema::new("Service"),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}])
        );
    }

    #[test]
    fn strategic_merge_patch_errors() {
        let cr = json!({"apiVersion": "x.io/v1", "kind": "Foo", "spec": {}});
        let err = strategic_merge_patch(&cr, &json!({"spec": {"a": 1}}), &CustomResourceSchema)
            .unwrap_err();
        assert!(
            matches!(&err, PatchError::UnsupportedMediaType(m) if m.contains("application/merge-patch+json")),
            "{err:?}"
        );

        let dep = json!({"spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}});
        let bad_cases: Vec<(Value, &str)> = vec![
            (json!([1]), "expected a JSON object"),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                "does not contain declared merge key: name",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}),
                "does not contain declared merge key",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
                "merging lists cannot yet be specified",
            ),
            (json!({"spec": {"$patch": "bogus"}}), "unknown patch type"),
            (
                json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
                "doesn't match retainKeys",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": ["web"]}}}}),
                "expected a list of objects",
            ),
        ];
        for (patch, want) in bad_cases {
            let err = strategic_merge_patch(&dep, &patch, &deploy()).expect_err(&patch.to_string());
            assert!(
                matches!(&err, PatchError::BadRequest(m) if m.contains(want)),
                "{patch}: {err:?}"
            );
        }
    }

    #[test]
    fn json_patch_table() {
        let doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}});
        let ok: Vec<(Value, Value)> = vec![
            (
                json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2, 3]}}),
            ),
            (
                json!([{"op": "add", "path": "/spec/list/-", "value": 4}]),
                json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3, 4]}}),
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/0"}]),
                json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [2, 3]}}),
            ),
            (
                json!([{"op": "replace", "path": "/metadata/labels/a", "value": "9"}]),
                json!({"metadata": {"labels": {"a": "9"}}, "spec": {"list": [1, 2, 3]}}),
            ),
            (
                json!([{"op": "move", "from": "/metadata/labels/a", "path": "/spec/a"}]),
                json!({"metadata": {"labels": {}}, "spec": {"list": [1, 2, 3], "a": "1"}}),
            ),
            (
                json!([{"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"}]),
                json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "labels": {"a": "1"}}}),
            ),
            (
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
                    {"op": "remove", "path": "/spec"}]),
                json!({"metadata": {"labels": {"a": "1"}}}),
            ),
        ];
        for (patch, want) in ok {
            assert_eq!(
                json_patch(&doc, &patch).unwrap_or_else(|e| panic!("{patch}: {e}")),
                want,
                "{patch}"
            );
        }
        let unprocessable = [
            json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
            json!([{"op": "remove", "path": "/metadata/missing"}]),
            json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
            json!([{"op": "add", "path": "/spec/list/9", "value": 1}]),
        ];
        for patch in unprocessable {
            let err = json_patch(&doc, &patch).unwrap_err();
            assert!(
                matches!(err, PatchError::Unprocessable(_)),
                "{patch}: {err:?}"
            );
        }
        let malformed = [
            json!({"op": "add", "path": "/a", "value": 1}),
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "value": 1}]),
            json!([{"op": "move", "path": "/a"}]),
            json!("nope"),
        ];
        for patch in malformed {
            let err = json_patch(&doc, &patch).unwrap_err();
            assert!(matches!(err, PatchError::BadRequest(_)), "{patch}: {err:?}");
        }
    }

    #[test]
    fn json_merge_patch_table() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2]}});
        let cases: Vec<(Value, Value)> = vec![
            (
                json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
                json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"list": [1, 2]}}),
            ),
            // Lists are always replaced by merge patch.
            (
                json!({"spec": {"list": [9]}}),
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [9]}}),
            ),
            (
                json!({"spec": null}),
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            ),
            (json!({}), doc.clone()),
        ];
        for (patch, want) in cases {
            assert_eq!(json_merge_patch(&doc, &patch).unwrap(), want, "{patch}");
        }
        for patch in [json!([1]), json!("x"), json!(null)] {
            assert!(
                matches!(
                    json_merge_patch(&doc, &patch),
                    Err(PatchError::BadRequest(_))
                ),
                "{patch}"
            );
        }
    }

    #[test]
    fn fields_v1_round_trip() {
        let fv1 = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {"v:\"a/x\"": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
                }}}
            }
        });
        let set = FieldSet::from_fields_v1(&fv1).unwrap();
        assert_eq!(set.to_fields_v1(), fv1);
        let strings: Vec<String> = set.iter().map(|p| path_to_string(p)).collect();
        for want in [
            ".metadata.labels",
            ".metadata.labels.app",
            ".metadata.finalizers[=\"a/x\"]",
            ".spec.replicas",
            ".spec.template.spec.containers[name=\"web\"]",
            ".spec.template.spec.containers[name=\"web\"].image",
            ".spec.template.spec.containers[name=\"web\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
        ] {
            assert!(
                strings.iter().any(|s| s == want),
                "missing {want} in {strings:?}"
            );
        }
        assert!(
            !strings.iter().any(|s| s == ".spec" || s == ".metadata"),
            "{strings:?}"
        );
        assert_eq!(set.len(), 9);
        // Key order inside k: is canonicalised.
        assert_eq!(
            PathElement::decode("k:{\"protocol\":\"TCP\", \"containerPort\":80}")
                .unwrap()
                .encode(),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert!(FieldSet::from_fields_v1(&json!({"x:bad": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert_eq!(PathElement::decode("i:3").unwrap(), PathElement::Index(3));
    }

    fn applied_deploy(replicas: i64, labels: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": labels},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}
        })
    }

    #[test]
    fn apply_create_records_exact_fields_v1() {
        let cfg = applied_deploy(2, json!({"app": "web"}));
        let out = apply(None, &cfg, "kubectl", false, T0, &deploy()).unwrap();
        let mf = entries(&out);
        assert_eq!(mf.len(), 1);
        assert_eq!(
            mf[0],
            json!({
                "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}
                }
            })
        );
        assert_eq!(without_managed_fields(&out), cfg);
    }

    #[test]
    fn apply_same_manager_prunes_fields_it_stopped_applying() {
        let s = deploy();
        let v1 = apply(
            None,
            &applied_deploy(2, json!({"app": "web", "old": "x"})),
            "kubectl",
            false,
            T0,
            &s,
        )
        .unwrap();
        let mut cfg2 = applied_deploy(2, json!({"app": "web"}));
        cfg2["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "web", "image": "nginx:2"}, {"name": "side", "image": "envoy"}]);
        let v2 = apply(Some(&v1), &cfg2, "kubectl", false, T1, &s).unwrap();
        assert_eq!(v2["metadata"]["labels"], json!({"app": "web"}));
        assert!(!owns(&v2, "kubectl", "Apply", ".metadata.labels.old"));
        assert_eq!(entry(&v2, "kubectl", "Apply").unwrap()["time"], T1);
        // Dropping the sidecar from the config removes it from the object.
        let v3 = apply(
            Some(&v2),
            &applied_deploy(2, json!({"app": "web"})),
            "kubectl",
            false,
            T2,
            &s,
        )
        .unwrap();
        assert_eq!(
            v3["spec"]["template"]["spec"]["containers"],
            json!([{"name": "web", "image": "nginx:1"}])
        );
        // A label someone else also owns survives pruning.
        let mut edited = v3.clone();
        edited["metadata"]["labels"]["team"] = json!("a");
        let v4 = record_update(Some(&v3), edited.clone(), "kubectl-label", T2, None, &s);
        let v5 = apply(
            Some(&v4),
            &applied_deploy(2, json!({"app": "web", "team": "a"})),
            "kubectl",
            false,
            T2,
            &s,
        )
        .unwrap();
        let v6 = apply(
            Some(&v5),
            &applied_deploy(2, json!({"app": "web"})),
            "kubectl",
            false,
            T2,
            &s,
        )
        .unwrap();
        assert_eq!(v6["metadata"]["labels"]["team"], "a");
        assert!(owns(
            &v6,
            "kubectl-label",
            "Update",
            ".metadata.labels.team"
        ));
    }

    #[test]
    fn apply_conflicts_shared_ownership_and_force() {
        let s = deploy();
        let v1 = apply(
            None,
            &applied_deploy(2, json!({"app": "web"})),
            "alice",
            false,
            T0,
            &s,
        )
        .unwrap();
        let bob = |replicas: i64| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                         "metadata": {"name": "web"}, "spec": {"replicas": replicas}})
        };

        let err = apply(Some(&v1), &bob(5), "bob", false, T1, &s).unwrap_err();
        let PatchError::Conflict { message, causes } = err else {
            panic!("want conflict")
        };
        assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
        );
        assert_eq!(
            causes,
            vec![ConflictCause {
                manager: "alice".into(),
                field: ".spec.replicas".into(),
                message: "conflict with \"alice\"".into()
            }]
        );

        // Same value: no conflict, both own it.
        let v2 = apply(Some(&v1), &bob(2), "bob", false, T1, &s).unwrap();
        assert!(owns(&v2, "alice", "Apply", ".spec.replicas"));
        assert!(owns(&v2, "bob", "Apply", ".spec.replicas"));
        assert_eq!(entry(&v2, "bob", "Apply").unwrap()["time"], T1);

        // Force: value changes and ownership moves to bob only.
        let v3 = apply(Some(&v1), &bob(5), "bob", true, T1, &s).unwrap();
        assert_eq!(v3["spec"]["replicas"], 5);
        assert!(owns(&v3, "bob", "Apply", ".spec.replicas"));
        assert!(!owns(&v3, "alice", "Apply", ".spec.replicas"));
        assert!(owns(&v3, "alice", "Apply", ".metadata.labels.app"));
        // Alice re-applying her old value now conflicts with bob.
        let err = apply(
            Some(&v3),
            &applied_deploy(2, json!({"app": "web"})),
            "alice",
            false,
            T2,
            &s,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas"
        );
        // Alice dropping replicas from her config does not remove bob's field.
        let v4 = apply(Some(&v3), &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                          "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}),
                       "alice", false, T2, &s).unwrap();
        assert_eq!(v4["spec"]["replicas"], 5);
    }

    #[test]
    fn apply_multiple_conflicts_message() {
        let s = deploy();
        let v1 = apply(
            None,
            &applied_deploy(2, json!({"app": "web"})),
            "alice",
            false,
            T0,
            &s,
        )
        .unwrap();
        let cfg = applied_deploy(3, json!({"app": "db"}));
        let err = apply(Some(&v1), &cfg, "bob", false, T1, &s).unwrap_err();
        let PatchError::Conflict { message, causes } = err else {
            panic!("want conflict")
        };
        assert_eq!(
            message,
            "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .metadata.labels.app\n- .spec.replicas"
        );
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[1].field, ".spec.replicas");
    }

    #[test]
    fn record_update_takes_ownership_then_apply_conflicts() {
        let s = deploy();
        let v1 = apply(
            None,
            &applied_deploy(2, json!({"app": "web"})),
            "kubectl",
            false,
            T0,
            &s,
        )
        .unwrap();
        let mut edited = v1.clone();
        edited["spec"]["replicas"] = json!(5);
        let v2 = record_update(Some(&v1), edited.clone(), "kubectl-edit", T1, None, &s);
        assert_eq!(v2["spec"]["replicas"], 5);
        assert!(owns(&v2, "kubectl-edit", "Update", ".spec.replicas"));
        assert!(!owns(&v2, "kubectl", "Apply", ".spec.replicas"));
        // The Apply entry lost a field but keeps its time; the Update entry is stamped now.
        assert_eq!(entry(&v2, "kubectl", "Apply").unwrap()["time"], T0);
        assert_eq!(entry(&v2, "kubectl-edit", "Update").unwrap()["time"], T1);
        assert_eq!(
            entry(&v2, "kubectl-edit", "Update").unwrap()["apiVersion"],
            "apps/v1"
        );
        // Apply entries sort before Update entries.
        assert_eq!(entries(&v2)[0]["operation"], "Apply");

        let err = apply(
            Some(&v2),
            &applied_deploy(2, json!({"app": "web"})),
            "kubectl",
            false,
            T2,
            &s,
        )
        .unwrap_err();
        assert!(matches!(&err, PatchError::Conflict { .. }));
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas"
        );
        // Re-applying the new value is fine and shares ownership.
        let v3 = apply(
            Some(&v2),
            &applied_deploy(5, json!({"app": "web"})),
            "kubectl",
            false,
            T2,
            &s,
        )
        .unwrap();
        assert!(owns(&v3, "kubectl", "Apply", ".spec.replicas"));
        assert!(owns(&v3, "kubectl-edit", "Update", ".spec.replicas"));
    }

    #[test]
    fn record_update_semantics() {
        let s = BuiltinSchema::new("Pod");
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "p", "resourceVersion": "1", "labels": {"a": "1"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        // Create: every field is owned, with "." on created maps and items.
        let v1 = record_update(None, pod.clone(), "kubectl-create", T0, None, &s);
        let e = entry(&v1, "kubectl-create", "Update").unwrap();
        assert_eq!(
            e["fieldsV1"],
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                "f:spec": {"f:containers": {".": {}, "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}
            })
        );
        assert!(e.get("subresource").is_none());

        // Status write by the kubelet goes to its own (manager, Update, status) entry.
        let mut st = v1.clone();
        st["status"] = json!({"phase": "Running"});
        let v2 = record_update(Some(&v1), st.clone(), "kubelet", T1, Some("status"), &s);
        let k = entry(&v2, "kubelet", "Update").unwrap();
        assert_eq!(k["subresource"], "status");
        assert_eq!(k["fieldsV1"], json!({"f:status": {"f:phase": {}}}));

        // Removing the only field an entry owned drops the entry; a no-op write changes nothing.
        let mut no_status = v2.clone();
        no_status.as_object_mut().unwrap().remove("status");
        let v3 = record_update(Some(&v2), no_status.clone(), "other", T2, None, &s);
        assert!(entry(&v3, "kubelet", "Update").is_none());
        assert!(
            entry(&v3, "other", "Update").is_none(),
            "pure removals grant nothing"
        );
        let v4 = record_update(Some(&v3), v3.clone(), "noop", T2, None, &s);
        assert_eq!(v4, v3);

        // resourceVersion and other untracked fields are never owned.
        let mut bumped = v3.clone();
        bumped["metadata"]["resourceVersion"] = json!("2");
        assert!(
            entry(
                &record_update(Some(&v3), bumped.clone(), "rv", T2, None, &s),
                "rv",
                "Update"
            )
            .is_none()
        );

        // `managedFields: []` in the request resets ownership.
        let mut reset = v3.clone();
        reset["metadata"]["managedFields"] = json!([]);
        let v5 = record_update(Some(&v3), reset.clone(), "x", T2, None, &s);
        assert!(managed_fields_of(&v5).is_none());
    }

    #[test]
    fn apply_validation() {
        let s = deploy();
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"metadata": {"name": "x"}}),
                "apiVersion and kind must be set",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"managedFields": [{}]}}),
                "metadata.managedFields must be nil",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                "omits key field \"name\"",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}),
                "duplicate entries for key [name=\"a\"]",
            ),
            (json!([1]), "must be a JSON object"),
        ];
        for (cfg, want) in cases {
            let err = apply(None, &cfg, "m", false, T0, &s).expect_err(&cfg.to_string());
            assert!(
                matches!(&err, PatchError::BadRequest(m) if m.contains(want)),
                "{cfg}: {err:?}"
            );
        }
        assert!(matches!(
            apply(None, &applied_deploy(1, json!({})), "", false, T0, &s),
            Err(PatchError::BadRequest(_))
        ));
    }

    #[test]
    fn apply_custom_resource_lists_are_atomic() {
        let cfg = json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
                         "spec": {"items": [{"name": "a"}], "finalizers": ["x"]}});
        let out = apply(None, &cfg, "m", false, T0, &CustomResourceSchema).unwrap();
        assert_eq!(
            entry(&out, "m", "Apply").unwrap()["fieldsV1"],
            json!({"f:spec": {"f:finalizers": {}, "f:items": {}}})
        );
        let cfg2 = json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
                          "spec": {"items": [{"name": "b"}]}});
        let out2 = apply(Some(&out), &cfg2, "m", false, T1, &CustomResourceSchema).unwrap();
        assert_eq!(out2["spec"], json!({"items": [{"name": "b"}]}));
    }
}
