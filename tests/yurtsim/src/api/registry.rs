//! The resource types the sim serves: the built-in table plus whatever CRDs register.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    /// Plural, as in URLs.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub subresources: Vec<String>,
    pub builtin: bool,
    /// Only `create` is served (reviews).
    pub create_only: bool,
    /// CRD printer columns (name, type, jsonPath).
    pub printer_columns: Vec<(String, String, String)>,
}

impl ResourceInfo {
    /// `pods`, `jobs.batch`: the form apiserver messages use.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Storage key: one store per group+resource, shared by all served versions.
    pub fn key(&self) -> GroupResource {
        GroupResource {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }

    pub fn has_status(&self) -> bool {
        self.subresources.iter().any(|s| s == "status")
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            vec!["create"]
        } else {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

struct B {
    g: &'static str,
    v: &'static str,
    r: &'static str,
    k: &'static str,
    ns: bool,
    short: &'static [&'static str],
    sub: &'static [&'static str],
}

const ALL: &[&str] = &["all"];

const BUILTIN: &[B] = &[
    B {
        g: "",
        v: "v1",
        r: "namespaces",
        k: "Namespace",
        ns: false,
        short: &["ns"],
        sub: &["status", "finalize"],
    },
    B {
        g: "",
        v: "v1",
        r: "nodes",
        k: "Node",
        ns: false,
        short: &["no"],
        sub: &["status"],
    },
    B {
        g: "",
        v: "v1",
        r: "pods",
        k: "Pod",
        ns: true,
        short: &["po"],
        sub: &["status", "log", "binding", "eviction"],
    },
    // served by every API server; yurt-app-manager v0.4's cache waits on its informer
    B {
        g: "",
        v: "v1",
        r: "persistentvolumeclaims",
        k: "PersistentVolumeClaim",
        ns: true,
        short: &["pvc"],
        sub: &["status"],
    },
    B {
        g: "",
        v: "v1",
        r: "configmaps",
        k: "ConfigMap",
        ns: true,
        short: &["cm"],
        sub: &[],
    },
    B {
        g: "",
        v: "v1",
        r: "secrets",
        k: "Secret",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "",
        v: "v1",
        r: "serviceaccounts",
        k: "ServiceAccount",
        ns: true,
        short: &["sa"],
        sub: &["token"],
    },
    B {
        g: "",
        v: "v1",
        r: "services",
        k: "Service",
        ns: true,
        short: &["svc"],
        sub: &["status"],
    },
    B {
        g: "",
        v: "v1",
        r: "endpoints",
        k: "Endpoints",
        ns: true,
        short: &["ep"],
        sub: &[],
    },
    B {
        g: "",
        v: "v1",
        r: "events",
        k: "Event",
        ns: true,
        short: &["ev"],
        sub: &[],
    },
    B {
        g: "events.k8s.io",
        v: "v1",
        r: "events",
        k: "Event",
        ns: true,
        short: &["ev"],
        sub: &[],
    },
    B {
        g: "apps",
        v: "v1",
        r: "deployments",
        k: "Deployment",
        ns: true,
        short: &["deploy"],
        sub: &["status", "scale"],
    },
    B {
        g: "apps",
        v: "v1",
        r: "daemonsets",
        k: "DaemonSet",
        ns: true,
        short: &["ds"],
        sub: &["status"],
    },
    B {
        g: "apps",
        v: "v1",
        r: "replicasets",
        k: "ReplicaSet",
        ns: true,
        short: &["rs"],
        sub: &["status", "scale"],
    },
    B {
        g: "apps",
        v: "v1",
        r: "controllerrevisions",
        k: "ControllerRevision",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "batch",
        v: "v1",
        r: "jobs",
        k: "Job",
        ns: true,
        short: &[],
        sub: &["status"],
    },
    B {
        g: "coordination.k8s.io",
        v: "v1",
        r: "leases",
        k: "Lease",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "rbac.authorization.k8s.io",
        v: "v1",
        r: "clusterroles",
        k: "ClusterRole",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "rbac.authorization.k8s.io",
        v: "v1",
        r: "clusterrolebindings",
        k: "ClusterRoleBinding",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "rbac.authorization.k8s.io",
        v: "v1",
        r: "roles",
        k: "Role",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "rbac.authorization.k8s.io",
        v: "v1",
        r: "rolebindings",
        k: "RoleBinding",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "apiextensions.k8s.io",
        v: "v1",
        r: "customresourcedefinitions",
        k: "CustomResourceDefinition",
        ns: false,
        short: &["crd", "crds"],
        sub: &["status"],
    },
    B {
        g: "admissionregistration.k8s.io",
        v: "v1",
        r: "mutatingwebhookconfigurations",
        k: "MutatingWebhookConfiguration",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "admissionregistration.k8s.io",
        v: "v1",
        r: "validatingwebhookconfigurations",
        k: "ValidatingWebhookConfiguration",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "authorization.k8s.io",
        v: "v1",
        r: "selfsubjectaccessreviews",
        k: "SelfSubjectAccessReview",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "authorization.k8s.io",
        v: "v1",
        r: "subjectaccessreviews",
        k: "SubjectAccessReview",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "authorization.k8s.io",
        v: "v1",
        r: "localsubjectaccessreviews",
        k: "LocalSubjectAccessReview",
        ns: true,
        short: &[],
        sub: &[],
    },
    B {
        g: "authorization.k8s.io",
        v: "v1",
        r: "selfsubjectrulesreviews",
        k: "SelfSubjectRulesReview",
        ns: false,
        short: &[],
        sub: &[],
    },
    B {
        g: "certificates.k8s.io",
        v: "v1",
        r: "certificatesigningrequests",
        k: "CertificateSigningRequest",
        ns: false,
        short: &["csr"],
        sub: &["status", "approval"],
    },
    B {
        g: "discovery.k8s.io",
        v: "v1",
        r: "endpointslices",
        k: "EndpointSlice",
        ns: true,
        short: &[],
        sub: &[],
    },
];

fn singular_of(kind: &str) -> String {
    kind.to_ascii_lowercase()
}

fn builtin_infos() -> Vec<ResourceInfo> {
    BUILTIN
        .iter()
        .map(|b| ResourceInfo {
            group: b.g.into(),
            version: b.v.into(),
            resource: b.r.into(),
            singular: singular_of(b.k),
            kind: b.k.into(),
            namespaced: b.ns,
            short_names: b.short.iter().map(|s| s.to_string()).collect(),
            categories: if matches!(
                b.r,
                "pods" | "services" | "deployments" | "daemonsets" | "replicasets" | "jobs"
            ) {
                ALL.iter().map(|s| s.to_string()).collect()
            } else {
                vec![]
            },
            subresources: b.sub.iter().map(|s| s.to_string()).collect(),
            builtin: true,
            create_only: b.r.ends_with("reviews"),
            printer_columns: vec![],
        })
        .collect()
}

/// Thread-safe registry; CRDs add and remove entries at run time.
pub struct Registry {
    inner: RwLock<BTreeMap<(String, String, String), Arc<ResourceInfo>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Self {
        let mut m = BTreeMap::new();
        for info in builtin_infos() {
            m.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.resource.clone(),
                ),
                Arc::new(info),
            );
        }
        Registry {
            inner: RwLock::new(m),
        }
    }

    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .unwrap()
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// Serves `group/version` of a built-in resource already served at `from` (same store):
    /// a version an older Kubernetes still serves next to the current one.
    pub fn serve_builtin_version(&self, group: &str, from: &str, resource: &str, version: &str) {
        let Some(info) = self.lookup(group, from, resource) else {
            return;
        };
        let mut info = (*info).clone();
        info.version = version.to_string();
        self.inner.write().unwrap().insert(
            (group.to_string(), version.to_string(), resource.to_string()),
            Arc::new(info),
        );
    }

    /// The preferred version of a group+resource: the first in discovery's order.
    pub fn lookup_gr(&self, group: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .unwrap()
            .values()
            .filter(|r| r.group == group && r.resource == resource)
            .min_by(|a, b| by_priority(&a.version, &b.version))
            .cloned()
    }

    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .unwrap()
            .values()
            .find(|r| r.api_version() == api_version && r.kind == kind)
            .cloned()
    }

    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.inner.read().unwrap().values().cloned().collect()
    }

    /// Groups in discovery order: legacy core first, then built-in groups, then CRD groups.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let inner = self.inner.read().unwrap();
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        let mut push = |g: &str, v: &str| {
            if let Some(e) = out.iter_mut().find(|(eg, _)| eg == g) {
                if !e.1.iter().any(|x| x == v) {
                    e.1.push(v.to_string());
                }
            } else {
                out.push((g.to_string(), vec![v.to_string()]));
            }
        };
        for b in BUILTIN {
            if !b.g.is_empty() {
                push(b.g, b.v);
            }
        }
        for r in inner.values().filter(|r| !r.builtin) {
            push(&r.group, &r.version);
        }
        // a CRD group's versions, highest priority (the preferred one) first
        for (g, vs) in out.iter_mut() {
            if !BUILTIN.iter().any(|b| b.g == g) {
                vs.sort_by(|a, b| by_priority(a, b));
            }
        }
        out
    }

    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.inner
            .read()
            .unwrap()
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }

    /// Registers every served version of a CRD. Returns the infos registered.
    pub fn register_crd(&self, crd: &Value) -> Vec<Arc<ResourceInfo>> {
        let spec = &crd["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_string();
        let names = &spec["names"];
        let mut added = Vec::new();
        let mut inner = self.inner.write().unwrap();
        // Drop versions no longer served.
        let plural = names["plural"].as_str().unwrap_or_default().to_string();
        inner.retain(|(g, _, r), info| info.builtin || !(g == &group && r == &plural));
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"] == json!(false) {
                continue;
            }
            let info = ResourceInfo {
                group: group.clone(),
                version: v["name"].as_str().unwrap_or_default().to_string(),
                resource: plural.clone(),
                singular: names["singular"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| singular_of(names["kind"].as_str().unwrap_or_default())),
                kind: names["kind"].as_str().unwrap_or_default().to_string(),
                namespaced: spec["scope"] == json!("Namespaced"),
                short_names: str_list(&names["shortNames"]),
                categories: str_list(&names["categories"]),
                subresources: v["subresources"]
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default(),
                builtin: false,
                create_only: false,
                printer_columns: v["additionalPrinterColumns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or_default().to_string(),
                            c["type"].as_str().unwrap_or("string").to_string(),
                            c["jsonPath"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect(),
            };
            let info = Arc::new(info);
            inner.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.resource.clone(),
                ),
                info.clone(),
            );
            added.push(info);
        }
        added
    }

    pub fn unregister_crd(&self, group: &str, plural: &str) {
        self.inner
            .write()
            .unwrap()
            .retain(|(g, _, r), info| info.builtin || !(g == group && r == plural));
    }
}

/// Versions in Kubernetes' priority order, highest first: GA, then beta, then alpha, each by
/// major then minor number, descending; other names after them, alphabetically
/// (k8s.io/apimachinery@v0.37.2 pkg/version/helpers.go CompareKubeAwareVersionStrings, by
/// which k8s.io/apiextensions-apiserver@v0.37.2 pkg/apiserver/customresource_discovery_controller.go
/// sorts a group's versions and takes the first as preferred).
pub fn by_priority(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (kind, minor) = if tail.is_empty() {
            (2, "0")
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((kind, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_lookup_and_group_resource_names() {
        let r = Registry::new();
        let jobs = r.lookup("batch", "v1", "jobs").unwrap();
        assert_eq!(jobs.group_resource(), "jobs.batch");
        assert!(jobs.namespaced && jobs.has_status());
        assert_eq!(r.lookup("", "v1", "pods").unwrap().group_resource(), "pods");
        assert!(r.lookup("", "v1", "widgets").is_none());
        assert_eq!(
            r.by_kind("apps/v1", "DaemonSet").unwrap().resource,
            "daemonsets"
        );
    }

    #[test]
    fn versions_sort_as_kubernetes_ranks_them() {
        let mut vs = vec![
            "v1alpha1", "foo", "v1beta1", "v2beta1", "v1", "v1beta2", "v2", "bar",
        ];
        vs.sort_by(|a, b| by_priority(a, b));
        assert_eq!(
            vs,
            vec![
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
    }

    #[test]
    fn crd_registration_serves_each_version_and_can_be_removed() {
        let r = Registry::new();
        let crd = json!({"spec": {"group": "apps.openyurt.io", "scope": "Namespaced",
            "names": {"plural": "yurtstaticsets", "kind": "YurtStaticSet", "shortNames": ["yss"]},
            "versions": [{"name": "v1alpha1", "served": true, "subresources": {"status": {}}},
                         {"name": "v1beta1", "served": false}]}});
        let added = r.register_crd(&crd);
        assert_eq!(added.len(), 1);
        let info = r
            .lookup("apps.openyurt.io", "v1alpha1", "yurtstaticsets")
            .unwrap();
        assert!(info.has_status() && !info.builtin);
        assert_eq!(info.short_names, vec!["yss"]);
        assert!(
            r.lookup("apps.openyurt.io", "v1beta1", "yurtstaticsets")
                .is_none()
        );
        assert!(
            r.groups()
                .iter()
                .any(|(g, v)| g == "apps.openyurt.io" && v == &vec!["v1alpha1".to_string()])
        );
        r.unregister_crd("apps.openyurt.io", "yurtstaticsets");
        assert!(
            r.lookup("apps.openyurt.io", "v1alpha1", "yurtstaticsets")
                .is_none()
        );
    }
}
