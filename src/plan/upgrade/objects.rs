//! What an upgrade does to the cluster's objects and CRD versions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::cluster::journal::ObjectRef;
use crate::render::RenderedObject;

/// An object by what names it across API versions: group, kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn of_rendered(o: &RenderedObject) -> ObjectKey {
        ObjectKey {
            group: o.gvk.group.clone(),
            kind: o.gvk.kind.clone(),
            namespace: o.namespace().map(str::to_owned),
            name: o.name().to_owned(),
        }
    }

    pub fn of_ref(r: &ObjectRef) -> ObjectKey {
        let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        ObjectKey {
            group: group.to_owned(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }
    }
}

impl fmt::Display for ObjectKey {
    /// kubectl's `kind.group/name`, with the namespace before the name when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.to_lowercase();
        match self.group.as_str() {
            "" => f.write_str(&kind)?,
            g => write!(f, "{kind}.{g}")?,
        }
        match &self.namespace {
            Some(ns) => write!(f, "/{ns}/{}", self.name),
            None => write!(f, "/{}", self.name),
        }
    }
}

/// An object both releases have, whose content differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectUpdate {
    pub key: ObjectKey,
    /// The fields that differ, as dotted paths (`spec.template.spec.containers`).
    pub fields: Vec<String>,
}

/// A CRD the target no longer has, kept because objects of it exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptCrd {
    pub key: ObjectKey,
    pub objects: usize,
}

/// What the upgrade does to the cluster's objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChanges {
    /// Objects only the target has: applied (an existing one of the same name is adopted, as
    /// convert adopts it).
    pub create: Vec<ObjectKey>,
    /// Objects both have, changed: applied.
    pub update: Vec<ObjectUpdate>,
    /// Objects convert created that the target does not have: deleted.
    pub delete: Vec<ObjectKey>,
    /// Objects convert adopted that the target does not have: left in place, with the fields
    /// yurtctl applied given up (as revert gives them up).
    pub release: Vec<ObjectKey>,
    /// CRDs convert created that the target does not have but that still hold objects (the
    /// user's, which an upgrade never deletes): left in place, and in the journal for revert.
    pub keep: Vec<KeptCrd>,
    /// Objects both have, the same.
    pub unchanged: usize,
}

/// The changes from the objects `before` (the cluster's release, rendered) to `after` (the
/// target's): created, updated, deleted (convert created them), released (convert adopted
/// them) and kept (CRDs with objects, counted in `crd_objects` by CRD name).
pub fn object_changes(
    before: &[RenderedObject],
    after: &[RenderedObject],
    created: &[ObjectRef],
    adopted: &[ObjectRef],
    crd_objects: &BTreeMap<String, usize>,
) -> ObjectChanges {
    let old: BTreeMap<ObjectKey, &RenderedObject> = before
        .iter()
        .map(|o| (ObjectKey::of_rendered(o), o))
        .collect();
    let new: BTreeSet<ObjectKey> = after.iter().map(ObjectKey::of_rendered).collect();
    let mut out = ObjectChanges::default();
    for o in after {
        let key = ObjectKey::of_rendered(o);
        match old.get(&key) {
            None => out.create.push(key),
            Some(was) => {
                let fields = changed_fields(&was.to_value(), &o.to_value());
                if fields.is_empty() {
                    out.unchanged += 1;
                } else {
                    out.update.push(ObjectUpdate { key, fields });
                }
            }
        }
    }
    for key in created.iter().map(ObjectKey::of_ref) {
        if new.contains(&key) {
            continue;
        }
        let objects = crd_objects.get(&key.name).copied().unwrap_or(0);
        if is_crd(&key) && objects > 0 {
            out.keep.push(KeptCrd { key, objects });
        } else {
            out.delete.push(key);
        }
    }
    out.release = adopted
        .iter()
        .map(ObjectKey::of_ref)
        .filter(|k| !new.contains(k))
        .collect();
    out
}

fn is_crd(key: &ObjectKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition"
}

/// How deep [`changed_fields`] names a difference: `spec.template.spec.containers`, not each
/// container's field.
const FIELD_DEPTH: usize = 4;

/// The dotted paths at which `a` and `b` differ, down to [`FIELD_DEPTH`] levels of maps
/// (lists compare whole); `apiVersion` is left out, the key names the object across versions.
pub fn changed_fields(a: &Value, b: &Value) -> Vec<String> {
    fn walk(a: &Value, b: &Value, path: &str, depth: usize, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) if depth < FIELD_DEPTH => {
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    if path.is_empty() && k == "apiVersion" {
                        continue;
                    }
                    let sub = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let null = Value::Null;
                    walk(
                        x.get(k).unwrap_or(&null),
                        y.get(k).unwrap_or(&null),
                        &sub,
                        depth + 1,
                        out,
                    );
                }
            }
            _ if a != b => out.push(path.to_owned()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, "", 0, &mut out);
    out
}

/// One version of a CRD.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
}

impl fmt::Display for CrdVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut how = Vec::new();
        if self.served {
            how.push("served");
        }
        if self.storage {
            how.push("storage");
        }
        if how.is_empty() {
            how.push("listed");
        }
        write!(f, "{} ({})", self.name, how.join(", "))
    }
}

/// A CRD whose versions change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdChange {
    pub name: String,
    pub before: Vec<CrdVersion>,
    pub after: Vec<CrdVersion>,
    /// The storage version moves and objects exist: each is written again so it is stored at
    /// the new version, then the CRD's `status.storedVersions` names only that one (what
    /// kube-storage-version-migrator does), so no object is left at a version a later release
    /// may stop listing.
    pub migrate: bool,
    /// Objects of the CRD in the cluster (the user's included).
    pub objects: usize,
}

impl CrdChange {
    /// The version a rollback first stores this CRD's objects at, in a bridge (see
    /// [`StorageBridge`]): the target's storage version, where it differs from the one running
    /// and the running CRD serves it.
    pub fn bridge_version(&self) -> Option<&str> {
        let version = storage_of(&self.after)?;
        let served_now = self.before.iter().any(|v| v.name == version && v.served);
        (storage_of(&self.before) != Some(version) && served_now).then_some(version)
    }
}

fn crd_versions(o: &RenderedObject) -> Option<(String, Vec<CrdVersion>)> {
    let v = o.to_value();
    if v["kind"] != "CustomResourceDefinition" {
        return None;
    }
    let versions = v["spec"]["versions"]
        .as_array()?
        .iter()
        .map(|x| CrdVersion {
            name: x["name"].as_str().unwrap_or_default().to_owned(),
            served: x["served"] == true,
            storage: x["storage"] == true,
        })
        .collect();
    Some((o.name().to_owned(), versions))
}

pub(super) fn storage_of(v: &[CrdVersion]) -> Option<&str> {
    v.iter().find(|x| x.storage).map(|x| x.name.as_str())
}

/// The CRDs both releases install whose versions differ, with whether their objects must be
/// migrated to a new storage version (`crd_objects`: objects per CRD name).
pub fn crd_changes(
    before: &[RenderedObject],
    after: &[RenderedObject],
    crd_objects: &BTreeMap<String, usize>,
) -> Vec<CrdChange> {
    let old: BTreeMap<String, Vec<CrdVersion>> = before.iter().filter_map(crd_versions).collect();
    after
        .iter()
        .filter_map(crd_versions)
        .filter_map(|(name, after)| {
            let before = old.get(&name)?.clone();
            if before == after {
                return None;
            }
            let objects = crd_objects.get(&name).copied().unwrap_or(0);
            let migrate = objects > 0 && storage_of(&before) != storage_of(&after);
            Some(CrdChange {
                name,
                before,
                after,
                migrate,
                objects,
            })
        })
        .collect()
}

/// A rollback's first step for a CRD whose storage version goes back: the CRD as the release
/// that runs now installs it, with the target's storage version marked as storage instead.
/// Once it is applied, every object is written again at that version and
/// `status.storedVersions` names only it; only then does the API server accept the target's
/// CRD, which may drop the newer version: a version in `status.storedVersions` must stay in
/// `spec.versions` (k8s.io/apiextensions-apiserver v0.37.2
/// pkg/apis/apiextensions/validation/validation.go,
/// ValidateCustomResourceDefinitionStoredVersions). The objects are converted by the webhook of
/// the release that runs now, which serves both versions.
#[derive(Clone, Debug)]
pub struct StorageBridge {
    pub crd: RenderedObject,
    /// The version the objects are stored at from here on.
    pub version: String,
}

/// The bridges of a rollback: one per CRD of `crds` whose storage version differs, made from
/// the running release's CRD in `before` (none where that release does not serve the target's
/// storage version, so no bridge can be built).
pub fn storage_bridges(before: &[RenderedObject], crds: &[CrdChange]) -> Vec<StorageBridge> {
    crds.iter()
        .filter_map(|c| {
            let version = c.bridge_version()?;
            let mut crd = before
                .iter()
                .find(|o| o.gvk.kind == "CustomResourceDefinition" && o.name() == c.name)?
                .clone();
            for v in crd.object.data["spec"]["versions"].as_array_mut()? {
                v["storage"] = Value::Bool(v["name"] == version);
            }
            Some(StorageBridge {
                crd,
                version: version.to_owned(),
            })
        })
        .collect()
}
