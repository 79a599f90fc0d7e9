//! Server-side apply: the `metadata.managedFields` entries, the merge of an applied
//! configuration, conflicts, and the ownership an update takes.

use serde_json::{Map, Value, json};

use super::*;

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

pub(super) fn managed_fields_of(obj: &Value) -> Option<&Value> {
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

pub(super) fn without_managed_fields(v: &Value) -> Value {
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
