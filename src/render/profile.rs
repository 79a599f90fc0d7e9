//! Profile declarations (`templates/<profile>/profile.yaml`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::embedded::FILES;
use super::error::{RenderError, Result};

/// Substituted in image references of a declaration: yurtctl's own crate version.
pub const CRATE_VERSION_VAR: &str = "{{crateVersion}}";

/// A component set: what a profile installs and how.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// The OpenYurt release the templates and images follow (`vX.Y.Z`).
    pub openyurt_version: String,
    pub kubernetes: KubernetesRange,
    pub components: Vec<Component>,
    pub yurthub: YurtHubDecl,
    pub labels: LabelDecl,
    /// NodePools: every converted node joins one (OpenYurt v1.7: YurtHub's `--nodepool-name`
    /// is mandatory). None: the profile puts nodes in no pool.
    #[serde(default)]
    pub node_pools: Option<NodePoolDecl>,
    /// Whether kube-controller-manager's `nodelifecycle` controller must be disabled.
    pub disable_node_lifecycle: bool,
    /// Default images by component id; tags are pinned (never `latest`).
    pub images: BTreeMap<String, String>,
    /// Names of the CRDs this profile may install, so that revert knows what to delete.
    pub crds: Vec<String>,
    /// Objects the components write themselves (a leader-election Lease): revert deletes them
    /// once the pods that write them are gone, or they would come back.
    #[serde(default)]
    pub component_objects: Vec<ComponentObject>,
    /// An upstream controller that would convert and revert nodes by their NodePool label:
    /// the profile deploys it switched off, so that yurtctl is the nodes' one converter.
    #[serde(default)]
    pub upstream_node_conversion: Option<UpstreamNodeConversion>,
    /// The profiles a cluster converted with can be upgraded to this one (`yurtctl upgrade`).
    #[serde(default)]
    pub upgrade_from: Vec<String>,
}

/// yurt-manager's label-driven node conversion (OpenYurt v1.7), and how the profile turns it off.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpstreamNodeConversion {
    /// The controller's name, as yurt-manager logs it (`yurt-node-conversion-controller`).
    pub controller: String,
    /// The `--controllers` entry that switches it off in the profile's yurt-manager Deployment.
    pub disabled_by: String,
    pub why: String,
}

/// An object a component writes at run time.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentObject {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Label selector of the pods (in `namespace`) that write it.
    pub written_by: String,
    /// What writes it, for the plan.
    pub why: String,
}

/// Supported Kubernetes minor versions (1.minMinor ..= 1.maxMinor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesRange {
    pub min_minor: u32,
    pub max_minor: u32,
    /// The newest minor the pinned OpenYurt release certifies, where the profile converts newer
    /// ones too: those convert with a warning that names what upstream certifies. None: every
    /// supported minor is certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certified_max_minor: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Component {
    pub id: String,
    #[serde(default)]
    pub description: String,
    /// Template files, rendered in this order.
    pub templates: Vec<String>,
    /// The feature flag (a convert option such as `deploy-yurttunnel`) that enables this
    /// component; None = always installed.
    #[serde(default)]
    pub flag: Option<String>,
}

/// How YurtHub runs on nodes (`yurthub.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum YurtHubMode {
    /// Static pod whose manifest a YurtStaticSet (one per working mode) manages.
    YurtStaticSet,
    /// Plain static pod written by the servant.
    StaticPod,
    /// systemd service `yurthub.service` running the binary installed on the host
    /// (OpenYurt v1.7).
    Systemd,
}

/// What YurtHub authenticates with the first time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum YurtHubCredential {
    /// `--bootstrap-file` (a kubeconfig holding the bootstrap token).
    BootstrapFile,
    /// `--join-token` (read from a file when the container starts).
    JoinToken,
}

/// The declaration of how YurtHub runs on nodes, by `mode`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum YurtHubDecl {
    YurtStaticSet(StaticPodHub),
    StaticPod(StaticPodHub),
    Systemd(ServiceHub),
}

/// YurtHub as a static pod.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaticPodHub {
    pub credential: YurtHubCredential,
    /// The per-node static-pod template file.
    pub node_template: String,
    /// File name in the static-pod directory, e.g. `yurthub.yaml`.
    pub manifest_file: String,
    /// Static pod name per working mode (with `yurt-static-set`, also the YurtStaticSet names).
    pub pod_name: PerMode,
    /// The ConfigMap (in the profile's namespace) per working mode whose key `manifest_name`
    /// holds the rendered manifest; node Jobs mount it and install that text.
    pub manifest_config_map: PerMode,
    /// `manifest_file` without `.yaml`: the YurtStaticSet's `staticPodManifest` and the key of
    /// its ConfigMap. Derived on load.
    #[serde(default, skip_deserializing)]
    pub manifest_name: String,
    /// The endpoint the node servant waits on before redirecting the kubelet.
    #[serde(default = "default_ready_path")]
    pub ready_path: String,
}

fn default_ready_path() -> String {
    crate::naming::YURTHUB_READYZ_PATH.into()
}

/// YurtHub as a systemd service: the binary copied out of the pinned upstream image, the unit
/// and drop-in from a ConfigMap per working mode (keys [`ServiceHub::UNIT_KEY`] and
/// [`ServiceHub::DROP_IN_KEY`]; the drop-in's `$(NODE_NAME)` and `$(NODEPOOL_NAME)` are filled
/// in on the node).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceHub {
    pub credential: YurtHubCredential,
    /// The ConfigMap (in the profile's namespace) per working mode holding unit and drop-in.
    pub unit_config_map: PerMode,
    /// The image (an `images` key) the binary is copied from, and its path in that image.
    pub binary_image: String,
    pub binary_path: String,
    /// The endpoint the node servant waits on before redirecting the kubelet.
    #[serde(default = "default_ready_path")]
    pub ready_path: String,
    /// Ports this YurtHub binds on the node's IP, beyond its loopback ones: node preflight
    /// checks them free.
    #[serde(default)]
    pub node_ip_ports: Vec<u16>,
}

impl ServiceHub {
    pub const UNIT_KEY: &'static str = "yurthub.service";
    pub const DROP_IN_KEY: &'static str = "10-yurthub.conf";
}

impl YurtHubDecl {
    pub fn mode(&self) -> YurtHubMode {
        match self {
            YurtHubDecl::YurtStaticSet(_) => YurtHubMode::YurtStaticSet,
            YurtHubDecl::StaticPod(_) => YurtHubMode::StaticPod,
            YurtHubDecl::Systemd(_) => YurtHubMode::Systemd,
        }
    }

    /// The endpoint the node servant waits on before it redirects the kubelet.
    pub fn ready_path(&self) -> &str {
        match self {
            YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => &s.ready_path,
            YurtHubDecl::Systemd(s) => &s.ready_path,
        }
    }

    pub fn credential(&self) -> YurtHubCredential {
        match self {
            YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => s.credential,
            YurtHubDecl::Systemd(s) => s.credential,
        }
    }

    /// Ports YurtHub binds on the node's IP (besides 127.0.0.1:10261, :10267 and :10268).
    pub fn node_ip_ports(&self) -> &[u16] {
        match self {
            YurtHubDecl::YurtStaticSet(_) | YurtHubDecl::StaticPod(_) => &[],
            YurtHubDecl::Systemd(s) => &s.node_ip_ports,
        }
    }

    /// The static-pod declaration, unless YurtHub runs as a service.
    pub fn static_pod(&self) -> Option<&StaticPodHub> {
        match self {
            YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => Some(s),
            YurtHubDecl::Systemd(_) => None,
        }
    }

    /// The ConfigMap node Jobs of a working mode install YurtHub from.
    pub fn config_map(&self, mode: super::WorkingMode) -> &str {
        match self {
            YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => {
                s.manifest_config_map.get(mode)
            }
            YurtHubDecl::Systemd(s) => s.unit_config_map.get(mode),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PerMode {
    pub edge: String,
    pub cloud: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelDecl {
    /// The edge/cloud node label and its two values.
    pub edge_worker: EdgeWorkerLabel,
    /// The node annotation that makes a node autonomous, and the value yurtctl sets.
    pub autonomy: KeyValue,
}

/// How nodes join NodePools.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePoolDecl {
    /// The node label naming the node's pool (`apps.openyurt.io/nodepool`).
    pub label: String,
    /// The pool cloud nodes join unless the user names another.
    pub default_cloud_pool: String,
    /// The pool edge nodes join unless the user names another or groups them by a label.
    pub default_edge_pool: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeWorkerLabel {
    pub key: String,
    pub edge: String,
    pub cloud: String,
    /// The ServiceAccount (in kube-system) whose identity the profile's admission webhooks let
    /// change this label; yurtctl writes it as that account once the account may patch nodes.
    #[serde(default, rename = "writerServiceAccount")]
    pub writer_service_account: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

impl Profile {
    /// The default profile.
    pub const DEFAULT: &'static str = "openyurt-v1.7";

    /// The ServiceAccount yurtctl writes its node labels as, when the profile names one.
    pub fn label_writer_account(&self) -> Option<&str> {
        self.labels.edge_worker.writer_service_account.as_deref()
    }

    /// Names of all embedded profiles, sorted.
    pub fn names() -> Vec<String> {
        let set: BTreeSet<&str> = FILES
            .iter()
            .filter_map(|(p, _)| p.strip_suffix("/profile.yaml"))
            .collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// Loads and checks an embedded profile.
    pub fn load(name: &str) -> Result<Profile> {
        let path = format!("{name}/profile.yaml");
        let Some(text) = file(&path) else {
            return Err(RenderError::UnknownProfile {
                name: name.to_owned(),
                valid: Self::names(),
            });
        };
        let mut p: Profile = serde_saphyr::from_str(text).map_err(|e| RenderError::Profile {
            profile: name.to_owned(),
            message: format!("profile.yaml: {e}"),
        })?;
        let version = env!("CARGO_PKG_VERSION");
        for image in p.images.values_mut() {
            *image = image.replace(CRATE_VERSION_VAR, version);
        }
        if let YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) = &mut p.yurthub {
            s.manifest_name = s
                .manifest_file
                .strip_suffix(".yaml")
                .unwrap_or(&s.manifest_file)
                .to_owned();
        }
        p.check(name)?;
        Ok(p)
    }

    fn check(&self, dir: &str) -> Result<()> {
        let bad = |m: String| {
            Err(RenderError::Profile {
                profile: dir.to_owned(),
                message: m,
            })
        };
        if self.name != dir {
            return bad(format!("declares name {:?} in directory {dir}", self.name));
        }
        if self.kubernetes.min_minor > self.kubernetes.max_minor {
            return bad("kubernetes.minMinor is above maxMinor".into());
        }
        if let Some(c) = self.kubernetes.certified_max_minor
            && !(self.kubernetes.min_minor..=self.kubernetes.max_minor).contains(&c)
        {
            return bad("kubernetes.certifiedMaxMinor is outside minMinor..maxMinor".into());
        }
        let known = Self::names();
        if let Some(p) = self
            .upgrade_from
            .iter()
            .find(|p| *p == dir || !known.contains(p))
        {
            return bad(format!(
                "upgradeFrom names {p:?}, which is not another profile ({})",
                known.join(", ")
            ));
        }
        let mut ids = BTreeSet::new();
        for c in &self.components {
            if !ids.insert(c.id.as_str()) {
                return bad(format!("component {} declared twice", c.id));
            }
        }
        for t in self.all_templates() {
            if self.template_text(t).is_none() {
                return bad(format!("template {t} is not in templates/{dir}/"));
            }
        }
        for (id, image) in &self.images {
            let tag = image.rsplit_once(':').map(|(_, t)| t);
            match tag {
                Some(t) if !t.is_empty() && t != "latest" && !t.contains('/') => {}
                _ => return bad(format!("image {id} = {image:?} needs a pinned tag")),
            }
        }
        for key in ["yurthub", "servant"] {
            if !self.images.contains_key(key) {
                return bad(format!("images.{key} is required"));
            }
        }
        match &self.yurthub {
            YurtHubDecl::YurtStaticSet(s) | YurtHubDecl::StaticPod(s) => {
                if !s.manifest_file.ends_with(".yaml") {
                    return bad("yurthub.manifestFile must end in .yaml".into());
                }
            }
            YurtHubDecl::Systemd(s) => {
                if !self.images.contains_key(&s.binary_image) {
                    return bad(format!(
                        "yurthub.binaryImage {:?} is not one of the profile's images",
                        s.binary_image
                    ));
                }
                if !s.binary_path.starts_with('/') {
                    return bad("yurthub.binaryPath must be an absolute path".into());
                }
                // the service's drop-in names the node's pool (YurtHub v1.7's --nodepool-name)
                if self.node_pools.is_none() {
                    return bad(
                        "yurthub.mode systemd needs nodePools: YurtHub's --nodepool-name \
                                names the node's pool"
                            .into(),
                    );
                }
            }
        }
        Ok(())
    }

    fn all_templates(&self) -> impl Iterator<Item = &str> {
        self.components
            .iter()
            .flat_map(|c| c.templates.iter().map(String::as_str))
            .chain(self.yurthub.static_pod().map(|s| s.node_template.as_str()))
    }

    /// The text of one of this profile's template files.
    pub fn template_text(&self, file_name: &str) -> Option<&'static str> {
        file(&format!("{}/{file_name}", self.name))
    }

    /// Whether the profile supports Kubernetes 1.`minor`.
    pub fn supports_minor(&self, minor: u32) -> bool {
        (self.kubernetes.min_minor..=self.kubernetes.max_minor).contains(&minor)
    }

    /// The newest minor upstream certifies (`certifiedMaxMinor`, else `maxMinor`).
    pub fn certified_max_minor(&self) -> u32 {
        self.kubernetes
            .certified_max_minor
            .unwrap_or(self.kubernetes.max_minor)
    }

    /// Components enabled by the given feature flags (flag-less components always are).
    pub fn enabled_components<'a>(
        &'a self,
        features: &'a BTreeSet<String>,
    ) -> impl Iterator<Item = &'a Component> + 'a {
        self.components
            .iter()
            .filter(|c| c.flag.as_ref().is_none_or(|f| features.contains(f)))
    }

    /// Feature flags this profile understands.
    pub fn flags(&self) -> BTreeSet<&str> {
        self.components
            .iter()
            .filter_map(|c| c.flag.as_deref())
            .collect()
    }

    /// The static pod name for a working mode (None when YurtHub runs as a service).
    pub fn yurthub_pod_name(&self, mode: super::WorkingMode) -> Option<&str> {
        self.yurthub.static_pod().map(|s| s.pod_name.get(mode))
    }
}

impl PerMode {
    pub fn get(&self, mode: super::WorkingMode) -> &str {
        match mode {
            super::WorkingMode::Edge => &self.edge,
            super::WorkingMode::Cloud => &self.cloud,
        }
    }
}

fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
}
