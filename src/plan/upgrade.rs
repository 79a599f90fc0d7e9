//! Upgrade's planning: what moving a converted cluster to a newer profile, or to a newer
//! OpenYurt patch release of its profile, changes — the route, the objects, the CRD versions,
//! the files on each node and kube-controller-manager's flags. PURE: from the two profiles,
//! their rendered objects and what the journal recorded; nothing here reads the cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use crate::cluster::journal::ObjectRef;
use crate::render::{Profile, RenderedObject, YurtHubCredential, YurtHubDecl};
use crate::servant::kcm::KCM_FILE;
use crate::servant::kubelet::OPENYURT_KUBECONFIG;
use crate::servant::yurthub::{
    BOOTSTRAP_FILE, HUB_BINARY, HUB_CACHE_DIR, HUB_DIR, HUB_DROP_IN_FILE, HUB_UNIT_FILE,
    JOIN_TOKEN_FILE,
};

/// An OpenYurt release, `vMAJOR.MINOR.PATCH`, ordered as numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpenYurtVersion(pub u32, pub u32, pub u32);

impl FromStr for OpenYurtVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not an OpenYurt release like v1.7.0");
        let mut parts = s.strip_prefix('v').ok_or_else(bad)?.split('.');
        let mut next =
            || -> Result<u32, String> { parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad) };
        let v = OpenYurtVersion(next()?, next()?, next()?);
        match parts.next() {
            None => Ok(v),
            Some(_) => Err(bad()),
        }
    }
}

impl fmt::Display for OpenYurtVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.0, self.1, self.2)
    }
}

/// A profile at one OpenYurt release: where a cluster is, or where an upgrade takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub profile: String,
    pub openyurt_version: String,
}

impl Release {
    /// `profile` at `version`, or at the profile's own release when none is given.
    pub fn of(profile: &Profile, version: Option<&str>) -> Release {
        Release {
            profile: profile.name.clone(),
            openyurt_version: version.unwrap_or(&profile.openyurt_version).to_owned(),
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (OpenYurt {})", self.profile, self.openyurt_version)
    }
}

/// What kind of move an upgrade is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteKind {
    /// A newer patch release of the same profile: images and binaries change, the layout not.
    Patch,
    /// Another profile, one of those the target names in `upgradeFrom`.
    Profile,
}

/// Where an upgrade goes from and to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    pub from: Release,
    pub to: Release,
    pub kind: RouteKind,
}

/// Why there is no upgrade from one release to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoRoute {
    /// The cluster is there already: nothing to do.
    AlreadyThere(Release),
    /// The target is older than what runs: a rollback's job, not an upgrade's.
    Downgrade { from: Release, to: Release },
    /// The target profile does not upgrade from the cluster's.
    NotFrom {
        from: Release,
        to: Release,
        sources: Vec<String>,
    },
    /// A release that is not `vX.Y.Z`.
    Version(String),
}

impl fmt::Display for NoRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoRoute::AlreadyThere(r) => write!(f, "the cluster already runs {r}"),
            NoRoute::Downgrade { from, to } => write!(
                f,
                "{to} is older than the {from} the cluster runs; an upgrade only moves forward \
                 (`yurtctl upgrade --rollback` returns to the release an upgrade came from)"
            ),
            NoRoute::NotFrom { from, to, sources } => {
                write!(
                    f,
                    "profile {} does not upgrade from {}",
                    to.profile, from.profile
                )?;
                match sources.as_slice() {
                    [] => write!(
                        f,
                        "; it upgrades from no other profile: revert and convert with it instead"
                    ),
                    s => write!(
                        f,
                        "; it upgrades from {}: upgrade to one of those first",
                        s.join(", ")
                    ),
                }
            }
            NoRoute::Version(m) => f.write_str(m),
        }
    }
}

/// The route from `from` at `from_version` to `to` at `to_version` (the profiles' own releases
/// when None), or why there is none. A patch route stays within the profile and moves forward;
/// a profile route must be one the target declares in `upgradeFrom`.
pub fn route(
    from: &Profile,
    from_version: Option<&str>,
    to: &Profile,
    to_version: Option<&str>,
) -> Result<Route, NoRoute> {
    let (a, b) = (Release::of(from, from_version), Release::of(to, to_version));
    let parse = |r: &Release| {
        r.openyurt_version
            .parse::<OpenYurtVersion>()
            .map_err(NoRoute::Version)
    };
    let (va, vb) = (parse(&a)?, parse(&b)?);
    if from.name == to.name {
        return match va.cmp(&vb) {
            std::cmp::Ordering::Equal => Err(NoRoute::AlreadyThere(a)),
            std::cmp::Ordering::Greater => Err(NoRoute::Downgrade { from: a, to: b }),
            std::cmp::Ordering::Less => Ok(Route {
                from: a,
                to: b,
                kind: RouteKind::Patch,
            }),
        };
    }
    if !to.upgrade_from.contains(&from.name) {
        return Err(NoRoute::NotFrom {
            from: a,
            to: b,
            sources: to.upgrade_from.clone(),
        });
    }
    if vb < va {
        return Err(NoRoute::Downgrade { from: a, to: b });
    }
    Ok(Route {
        from: a,
        to: b,
        kind: RouteKind::Profile,
    })
}

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

fn storage_of(v: &[CrdVersion]) -> Option<&str> {
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

/// What happens to one file (or directory) on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    Create,
    Replace,
    Delete,
    Keep,
}

impl FileAction {
    /// The plan's mark: `+`, `~`, `-` or `=`.
    pub fn mark(self) -> char {
        match self {
            FileAction::Create => '+',
            FileAction::Replace => '~',
            FileAction::Delete => '-',
            FileAction::Keep => '=',
        }
    }
}

/// One file of a node and what the upgrade does to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFile {
    /// The host path; a static pod's as `<static-pod dir>/NAME` (the kubelet's flag decides).
    pub path: String,
    pub action: FileAction,
    pub why: String,
}

/// The static-pod directory, as the plan names it (each node's kubelet decides where it is).
pub const STATIC_POD_DIR: &str = "<static-pod dir>";

fn credential_path(c: YurtHubCredential) -> &'static str {
    match c {
        YurtHubCredential::BootstrapFile => BOOTSTRAP_FILE,
        YurtHubCredential::JoinToken => JOIN_TOKEN_FILE,
    }
}

fn file(path: impl Into<String>, action: FileAction, why: impl Into<String>) -> NodeFile {
    NodeFile {
        path: path.into(),
        action,
        why: why.into(),
    }
}

/// The files the upgrade changes and keeps on every converted node, from how the two
/// profiles run YurtHub: a static pod's manifest gives way to the systemd service's binary,
/// unit and drop-in (or is replaced, or the binary is), the credential follows the target's
/// kind, and YurtHub's certificates, its cache and the kubelet's redirect stay.
pub fn node_files(from: &Profile, to: &Profile, route: &Route) -> Vec<NodeFile> {
    use FileAction::*;
    let hub = format!("YurtHub {}", route.to.openyurt_version);
    let mut out = Vec::new();
    match (&from.yurthub, &to.yurthub) {
        (
            YurtHubDecl::StaticPod(a) | YurtHubDecl::YurtStaticSet(a),
            YurtHubDecl::StaticPod(b) | YurtHubDecl::YurtStaticSet(b),
        ) => {
            let old = format!("{STATIC_POD_DIR}/{}", a.manifest_file);
            let new = format!("{STATIC_POD_DIR}/{}", b.manifest_file);
            if old == new {
                out.push(file(new, Replace, format!("the {hub} static pod")));
            } else {
                out.push(file(old, Delete, "the old YurtHub static pod"));
                out.push(file(new, Create, format!("the {hub} static pod")));
            }
        }
        (YurtHubDecl::StaticPod(a) | YurtHubDecl::YurtStaticSet(a), YurtHubDecl::Systemd(_)) => {
            out.push(file(
                format!("{STATIC_POD_DIR}/{}", a.manifest_file),
                Delete,
                "the YurtHub static pod, stopped just before the service starts",
            ));
            out.push(file(HUB_BINARY, Create, format!("the {hub} binary")));
            out.push(file(
                HUB_UNIT_FILE,
                Create,
                "YurtHub's systemd unit, enabled",
            ));
            out.push(file(HUB_DROP_IN_FILE, Create, "its flags (drop-in)"));
        }
        (YurtHubDecl::Systemd(_), YurtHubDecl::Systemd(_)) => {
            out.push(file(HUB_BINARY, Replace, format!("the {hub} binary")));
            out.push(file(HUB_UNIT_FILE, Replace, "when the unit changed"));
            out.push(file(HUB_DROP_IN_FILE, Replace, "when the flags changed"));
        }
        (YurtHubDecl::Systemd(_), _) => {
            // no profile moves YurtHub from a service back into a static pod; `route` refuses
            // it before this is asked (no static-pod profile upgrades from a systemd one)
        }
    }
    let (ca, cb) = (from.yurthub.credential(), to.yurthub.credential());
    if ca != cb {
        out.push(file(
            credential_path(ca),
            Delete,
            "the old bootstrap credential",
        ));
        out.push(file(
            credential_path(cb),
            Create,
            "YurtHub's bootstrap credential (used only when its certificate is missing)",
        ));
    }
    out.push(file(
        HUB_DIR,
        Keep,
        "YurtHub's client certificate and state",
    ));
    out.push(file(
        HUB_CACHE_DIR,
        Keep,
        "YurtHub's cache of the API objects",
    ));
    out.push(file(
        OPENYURT_KUBECONFIG,
        Keep,
        "the kubelet's kubeconfig through YurtHub (127.0.0.1:10261 in both releases)",
    ));
    out
}

/// What happens to kube-controller-manager's `nodelifecycle` controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KcmChange {
    /// The target needs it off and the cluster's profile left it on.
    Disable,
    /// The cluster's profile turned it off and the target does not need that: convert's edit
    /// is undone (before the old profile's replacement controller goes, so some controller
    /// always watches the nodes).
    Enable,
}

impl KcmChange {
    pub fn of(from: &Profile, to: &Profile) -> Option<KcmChange> {
        match (from.disable_node_lifecycle, to.disable_node_lifecycle) {
            (false, true) => Some(KcmChange::Disable),
            (true, false) => Some(KcmChange::Enable),
            _ => None,
        }
    }

    /// The plan's line for it.
    pub fn describe(self) -> String {
        match self {
            KcmChange::Disable => {
                format!("~ {STATIC_POD_DIR}/{KCM_FILE}: -nodelifecycle added to --controllers")
            }
            KcmChange::Enable => format!(
                "~ {STATIC_POD_DIR}/{KCM_FILE}: convert's -nodelifecycle taken out of \
                 --controllers"
            ),
        }
    }
}

#[cfg(test)]
#[path = "upgrade_tests.rs"]
mod tests;
