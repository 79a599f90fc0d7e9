//! CustomResourceDefinitions: what the API server's CRD strategy does on create and update
//! (`status.storedVersions`) and the parts of their validation the sim checks. Sources:
//! kubernetes/kubernetes@v1.37.2 (k8s.io/apiextensions-apiserver v0.37.2; the same at v1.34.4)
//! staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/strategy.go
//! and pkg/apis/apiextensions/validation/validation.go.

use serde_json::{Value, json};

use crate::api::kinds::Causes;

/// The version marked `storage: true`, if exactly one is.
pub fn storage_version(crd: &Value) -> Option<String> {
    let mut it = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == json!(true));
    let first = it.next()?;
    if it.next().is_some() {
        return None;
    }
    first["name"].as_str().map(str::to_string)
}

/// Every version named in `spec.versions`, served or not.
pub fn version_names(crd: &Value) -> Vec<String> {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect()
}

fn stored_versions(crd: &Value) -> Vec<String> {
    crd["status"]["storedVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The first version marked storage is appended to `status.storedVersions` unless listed
/// (strategy.go PrepareForCreate and PrepareForUpdate: `IsStoredVersion`, then append).
fn record_storage_version(crd: &mut Value) {
    let Some(storage) = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == json!(true))
        .and_then(|v| v["name"].as_str())
        .map(str::to_string)
    else {
        return;
    };
    let mut stored = stored_versions(crd);
    if !stored.contains(&storage) {
        stored.push(storage);
        crd["status"]["storedVersions"] = json!(stored);
    }
}

/// PrepareForCreate clears the status and records the storage version; the conditions and
/// accepted names are what the naming and establishing controllers then write.
pub fn prepare_for_create(obj: &mut Value) {
    let names = obj["spec"]["names"].clone();
    let mut accepted = names.clone();
    if accepted["singular"].is_null() {
        accepted["singular"] = json!(
            names["kind"]
                .as_str()
                .unwrap_or_default()
                .to_ascii_lowercase()
        );
    }
    if accepted["listKind"].is_null() {
        accepted["listKind"] = json!(format!(
            "{}List",
            names["kind"].as_str().unwrap_or_default()
        ));
    }
    let now = crate::util::now();
    obj["status"] = json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
    });
    record_storage_version(obj);
}

/// PrepareForUpdate of the main resource (after the status was taken from the old object): a
/// new storage version is appended to `status.storedVersions`.
pub fn prepare_for_update(new: &mut Value) {
    record_storage_version(new);
}

/// The spec checks of ValidateCustomResourceDefinition the sim makes.
pub fn validate_spec(obj: &Value, causes: &mut Causes) {
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let spec = &obj["spec"];
    let plural = spec["names"]["plural"].as_str().unwrap_or("");
    let group = spec["group"].as_str().unwrap_or("");
    if name != format!("{plural}.{group}") {
        causes.push((
            "metadata.name".into(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if spec["names"]["kind"].as_str().is_none_or(str::is_empty) {
        causes.push(("spec.names.kind".into(), "Required value".into()));
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced" | "Cluster")) {
        causes.push((
            "spec.scope".into(),
            "Unsupported value: supported values: \"Cluster\", \"Namespaced\"".into(),
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions
        .iter()
        .filter(|v| v["storage"] == json!(true))
        .count()
        != 1
    {
        causes.push((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v["schema"]["openAPIV3Schema"].is_null() {
            causes.push((
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "Required value: schemas are required".into(),
            ));
        }
    }
}

/// ValidateCustomResourceDefinitionStoredVersions, part of the main resource's validation on
/// create and update (not of a `status` write: ValidateUpdateCustomResourceDefinitionStatus
/// checks only metadata and accepted names). Go reports the missing versions in map order;
/// here in the order they are listed.
pub fn validate_stored_versions(obj: &Value, causes: &mut Causes) {
    let stored = stored_versions(obj);
    let field = "status.storedVersions";
    if stored.is_empty() {
        // json.Marshal of the nil slice the strategy leaves without a storage version
        causes.push((
            field.into(),
            "Invalid value: null: must have at least one stored version".into(),
        ));
        return;
    }
    let listed = serde_json::to_string(&stored).unwrap_or_default();
    let mut unseen: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in obj["spec"]["versions"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap_or("");
        let found = stored.iter().any(|s| s == name);
        if v["storage"] == json!(true) && !found {
            causes.push((
                field.into(),
                format!("Invalid value: {listed}: must have the storage version {name}"),
            ));
        }
        unseen.retain(|(_, s)| s.as_str() != name);
    }
    for (i, v) in unseen {
        causes.push((
            format!("{field}[{i}]"),
            format!("Invalid value: \"{v}\": missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
}

/// The `nullable` of the schema at `path` (field names; list items skipped) in a version's
/// `openAPIV3Schema`; false where the schema does not reach.
pub fn nullable_at(schema: &Value, path: &[&str]) -> bool {
    let mut s = schema;
    for p in path {
        let props = &s["properties"][*p];
        s = if props.is_object() {
            props
        } else if s["additionalProperties"].is_object() {
            &s["additionalProperties"]
        } else {
            return false;
        };
        while s["items"].is_object() {
            s = &s["items"];
        }
    }
    s["nullable"] == json!(true)
}

/// A version's `openAPIV3Schema`.
pub fn schema_of<'a>(crd: &'a Value, version: &str) -> &'a Value {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == json!(version))
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .unwrap_or(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: Value, stored: Value) -> Value {
        json!({"spec": {"versions": versions}, "status": {"storedVersions": stored}})
    }

    #[test]
    fn a_new_storage_version_is_appended_once() {
        let mut c = crd(
            json!([{"name": "v1beta1", "storage": false}, {"name": "v1beta2", "storage": true}]),
            json!(["v1beta1"]),
        );
        prepare_for_update(&mut c);
        prepare_for_update(&mut c);
        assert_eq!(c["status"]["storedVersions"], json!(["v1beta1", "v1beta2"]));
    }

    #[test]
    fn stored_versions_must_stay_in_spec_and_hold_the_storage_version() {
        let c = crd(
            json!([{"name": "v1beta2", "storage": true}]),
            json!(["v1beta1"]),
        );
        let mut causes = Causes::new();
        validate_stored_versions(&c, &mut causes);
        assert_eq!(
            causes,
            vec![
                (
                    "status.storedVersions".to_string(),
                    "Invalid value: [\"v1beta1\"]: must have the storage version v1beta2"
                        .to_string()
                ),
                (
                    "status.storedVersions[0]".to_string(),
                    "Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions".to_string()
                ),
            ]
        );
    }

    #[test]
    fn nullable_follows_properties_items_and_maps() {
        let s = json!({"properties": {"status": {"properties": {
            "t": {"type": "string", "nullable": true},
            "l": {"type": "array", "items": {"properties": {"x": {"nullable": true}}}},
            "m": {"additionalProperties": {"nullable": true}}}}}});
        assert!(nullable_at(&s, &["status", "t"]));
        assert!(nullable_at(&s, &["status", "l", "x"]));
        assert!(nullable_at(&s, &["status", "m", "k"]));
        assert!(!nullable_at(&s, &["status", "u"]));
    }
}
