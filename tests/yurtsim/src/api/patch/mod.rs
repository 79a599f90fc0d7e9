//! Patch types (JSON patch, merge patch, strategic merge patch) and server-side apply
//! with `metadata.managedFields` ownership tracking, following kube-apiserver semantics.
//!
//! This file holds the errors and the schemas lists merge by; the rest is by seam:
//! - `json`: JSON merge patch and JSON patch;
//! - `strategic`: strategic merge patch;
//! - `fields`: field sets and the FieldsV1 encoding;
//! - `apply`: managedFields entries and server-side apply.

use serde_json::{Map, Value};

mod apply;
mod fields;
mod json;
mod strategic;

pub use apply::*;
pub use fields::*;
pub use json::*;
pub use strategic::*;

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

#[cfg(test)]
mod patch_tests;

#[cfg(test)]
mod apply_tests;
