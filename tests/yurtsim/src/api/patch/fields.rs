//! Field sets and the FieldsV1 encoding: the paths an applied configuration or an update sets,
//! and the comparison of an object's old and new content.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::*;

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
pub(super) struct Node {
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

    pub(super) fn retain(&mut self, f: impl Fn(&FieldPath) -> bool) {
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
pub(super) struct Comparison {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

/// Whether every item carries its keys and no key repeats (else the list is compared atomically).
pub(super) fn keyed_items<'a>(
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

pub(super) fn compare(old: &Value, new: &Value, schema: &dyn Schema) -> Comparison {
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
