//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

use serde_json::Value;

use super::*;

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

pub(super) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
