//! What the user asked convert for, validated at the CLI edge, and the checks across flags
//! and the profile that need no cluster.

use super::*;

/// What the user asked for, validated at the CLI edge. The journal records it (its `options`),
/// so it reads back what it wrote; a key missing from an older journal takes its default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConvertOptions {
    /// Leave the nodes' containers running as they are after the kubelet's redirect.
    pub skip_workload_restart: bool,
    pub cloud_nodes: Vec<String>,
    pub edge_nodes: Vec<String>,
    pub all_edge: bool,
    pub profile: String,
    pub servant_image: Option<String>,
    pub concurrency: Concurrency,
    #[serde(serialize_with = "ser_duration", deserialize_with = "de_duration")]
    pub job_timeout: Duration,
    pub skip_phases: BTreeSet<String>,
    /// Edge nodes that get the autonomy annotation; empty: every edge node.
    pub autonomous_nodes: Vec<String>,
    /// `--provider`: None = auto (whatever the nodes say).
    pub provider: Option<Provider>,
    /// `--openyurt-version`: another patch release of the profile's OpenYurt minor.
    pub openyurt_version: Option<String>,
    /// `--image COMPONENT=IMAGE`, by the profile's image keys.
    pub images: BTreeMap<String, String>,
    /// `--image-repository`: the registry (and path) every image is pulled from instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// `--image-pull-secret`: kube-system Secrets the node Jobs and components pull with.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<String>,
    /// `--disable-nodelifecycle`: None = what the profile needs.
    pub disable_nodelifecycle: Option<bool>,
    /// A NotReady node blocks the whole run instead of only itself.
    pub require_all_ready: bool,
    /// Optional components (`deploy-yurttunnel`, `enable-app-manager`).
    pub features: BTreeSet<String>,
    /// Lifetime of the bootstrap token convert creates.
    #[serde(serialize_with = "ser_duration", deserialize_with = "de_duration")]
    pub token_ttl: Duration,
    /// Take over fields other managers own (server-side apply `force`).
    pub force_conflicts: bool,
    /// `--ignore-preflight-errors`: these checks' findings are warnings, not errors.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub ignore_preflight_errors: BTreeSet<Check>,
    /// `--nodepool`: the NodePool every edge node joins (None: the profile's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodepool: Option<String>,
    /// `--nodepools-from-label`: one edge NodePool per value of this node label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodepools_from_label: Option<String>,
    /// `--cloud-nodepool`: the NodePool cloud nodes join (None: the profile's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_nodepool: Option<String>,
    /// `--pull-images`: the node-side preflight pulls the images first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pull_images: bool,
}

/// The kind of cluster (`--provider`); nodes tell which one it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Kubeadm,
    Kind,
    Minikube,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Kubeadm => "kubeadm",
            Provider::Kind => "kind",
            Provider::Minikube => "minikube",
        }
    }

    /// What a node's object says about the tool that made it: kind sets `providerID kind://…`,
    /// minikube labels `minikube.k8s.io/name`, kubeadm annotates the CRI socket.
    pub fn of_node(n: &NodeInfo) -> Option<Provider> {
        if n.provider_id
            .as_deref()
            .is_some_and(|p| p.starts_with("kind://"))
        {
            Some(Provider::Kind)
        } else if n.labels.contains_key("minikube.k8s.io/name") {
            Some(Provider::Minikube)
        } else if n
            .annotations
            .contains_key("kubeadm.alpha.kubernetes.io/cri-socket")
        {
            Some(Provider::Kubeadm)
        } else {
            None
        }
    }
}

/// Convert's settings, resolved once from its options and the profile (ripgrep's low-level to
/// high-level arguments): every phase reads them from the plan instead of deriving them again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSettings {
    /// Every image by the profile's keys, with `--openyurt-version`, `--image-repository`,
    /// `--image` and `--servant-image` applied, in that order (the named ones win).
    pub images: BTreeMap<String, String>,
    /// The image every node Job of this run runs (`images["servant"]`).
    pub servant_image: String,
    /// The Secrets (in kube-system) every node Job and component pulls its images with.
    pub pull_secrets: Vec<String>,
    /// Whether kube-controller-manager's nodelifecycle controller gets disabled.
    pub disable_nodelifecycle: bool,
}

impl ConvertSettings {
    pub fn resolve(opts: &ConvertOptions, profile: &Profile) -> ConvertSettings {
        let mut images = profile.images.clone();
        if let Some(v) = &opts.openyurt_version {
            let old = format!(":{}", profile.openyurt_version);
            for image in images.values_mut() {
                if let Some(repo) = image.strip_suffix(&old) {
                    *image = format!("{repo}:{v}");
                }
            }
        }
        if let Some(repo) = &opts.image_repository {
            for image in images.values_mut() {
                *image = crate::reference::in_repository(image, repo);
            }
        }
        images.extend(opts.images.clone());
        if let Some(s) = &opts.servant_image {
            images.insert("servant".into(), s.clone());
        }
        ConvertSettings {
            servant_image: images.get("servant").cloned().unwrap_or_default(),
            pull_secrets: opts.image_pull_secrets.clone(),
            images,
            disable_nodelifecycle: opts
                .disable_nodelifecycle
                .unwrap_or(profile.disable_node_lifecycle),
        }
    }
}

impl ConvertOptions {
    /// The journal's record of a run with these options: the options as given, except that
    /// `servantImage` is the image the run used (revert runs the same servant).
    pub fn journal_record(
        &self,
        settings: &ConvertSettings,
    ) -> serde_json::Map<String, serde_json::Value> {
        let recorded = ConvertOptions {
            servant_image: Some(settings.servant_image.clone()),
            ..self.clone()
        };
        match serde_json::to_value(recorded) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }

    /// The options a journal recorded (see [`ConvertOptions::journal_record`]); `None` when
    /// they are not ones this yurtctl can read.
    pub fn from_journal(
        record: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<ConvertOptions> {
        serde_json::from_value(serde_json::Value::Object(record.clone())).ok()
    }
}

pub(super) fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs()))
}

/// The inverse of [`ser_duration`]: whole seconds with an `s`.
fn de_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    text.strip_suffix('s')
        .and_then(|n| n.parse().ok())
        .map(Duration::from_secs)
        .ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a number of seconds like \"600s\""))
        })
}

/// Every check the options and the profile alone decide (usage errors, exit 2): run before
/// the cluster is contacted, and again by the planner for callers that build options
/// themselves.
pub fn check_options(opts: &ConvertOptions, profile: &Profile) -> Result<(), PlanError> {
    for p in &opts.skip_phases {
        phases::parse::<ConvertPhase>(p)
            .map_err(|e| PlanError::Usage(format!("--skip-phases: {e}")))?;
    }
    if let Some(n) = opts
        .cloud_nodes
        .iter()
        .find(|n| opts.edge_nodes.contains(n))
    {
        return Err(PlanError::Usage(format!(
            "node {n} is named in both --cloud-nodes and --edge-nodes"
        )));
    }
    if let Some(n) = opts
        .autonomous_nodes
        .iter()
        .find(|n| opts.cloud_nodes.contains(n))
    {
        return Err(PlanError::Usage(format!(
            "node {n} is named in --autonomous-nodes and --cloud-nodes; only edge nodes are \
             autonomous"
        )));
    }
    if opts.token_ttl < Duration::from_secs(10 * 60) {
        return Err(PlanError::Usage(format!(
            "--token-ttl {}s is too short for nodes to join; use at least 10m",
            opts.token_ttl.as_secs()
        )));
    }
    if opts.all_edge && !opts.edge_nodes.is_empty() {
        return Err(PlanError::Usage(
            "--all-edge and --edge-nodes exclude each other".into(),
        ));
    }
    let known = profile.flags();
    if let Some(f) = opts.features.iter().find(|f| !known.contains(f.as_str())) {
        return Err(PlanError::Usage(format!(
            "--{f}: profile {} has no such component{}",
            profile.name,
            if known.is_empty() {
                String::new()
            } else {
                format!(
                    " (it knows --{})",
                    known.into_iter().collect::<Vec<_>>().join(", --")
                )
            }
        )));
    }
    let pool_flags = [
        ("--nodepool", &opts.nodepool),
        ("--nodepools-from-label", &opts.nodepools_from_label),
        ("--cloud-nodepool", &opts.cloud_nodepool),
    ];
    if profile.node_pools.is_none()
        && let Some((flag, _)) = pool_flags.iter().find(|(_, v)| v.is_some())
    {
        return Err(PlanError::Usage(format!(
            "{flag}: profile {} puts nodes in no NodePool; use a profile with NodePools \
             (openyurt-v1.7)",
            profile.name
        )));
    }
    if opts.nodepool.is_some() && opts.nodepools_from_label.is_some() {
        return Err(PlanError::Usage(
            "--nodepool and --nodepools-from-label exclude each other".into(),
        ));
    }
    check_images(opts, profile)?;
    Ok(())
}

/// The checks of the image flags against the profile (`--image` keys, `--openyurt-version`),
/// which `images list` shares with convert.
pub fn check_images(opts: &ConvertOptions, profile: &Profile) -> Result<(), PlanError> {
    if let Some(c) = opts
        .images
        .keys()
        .find(|c| !profile.images.contains_key(*c))
    {
        return Err(PlanError::Usage(format!(
            "--image {c}=…: profile {} has no component {c:?}; its components are {}",
            profile.name,
            profile
                .images
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(v) = &opts.openyurt_version {
        let minor = |s: &str| s.rsplit_once('.').map(|(m, _)| m.to_owned());
        if minor(v) != minor(&profile.openyurt_version) {
            return Err(PlanError::Usage(format!(
                "--openyurt-version {v}: profile {} is for OpenYurt {}; pick a patch release of \
                 {} or another profile",
                profile.name,
                profile.openyurt_version,
                minor(&profile.openyurt_version).unwrap_or_default()
            )));
        }
    }
    Ok(())
}
