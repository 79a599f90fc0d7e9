//! Strategic merge patch: the directives, and maps and lists merged by their strategy.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::*;

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
