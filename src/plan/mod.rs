//! The planner (design §2): PURE functions from a cluster snapshot and the user's options to a
//! [`Plan`] of phases with stable ids. `--dry-run=client` prints exactly this; the executor
//! (`app::convert`) runs it. Nothing here talks to the API or prints.

pub mod staticpod;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::journal::PhaseState;
use crate::cluster::snapshot::{ClusterSnapshot, NodeInfo};
use crate::render::Profile;

pub mod revert;

/// Phase ids of `convert`, in execution order; usable in `--skip-phases` and named in errors.
pub const CONVERT_PHASES: [&str; 9] = [
    LOCK,
    PREFLIGHT,
    PREFLIGHT_NODES,
    LABEL_NODES,
    COMPONENTS,
    KCM,
    NODES_EDGE,
    NODES_CLOUD,
    VERIFY,
];
pub const PREFLIGHT: &str = "preflight";
pub const LOCK: &str = "lock";
/// Node-side preflight: a `node-servant preflight` Job on every node this run converts, after
/// the lock is held (so two runs never race on the Jobs) and before anything is changed.
pub const PREFLIGHT_NODES: &str = "preflight/nodes";
pub const LABEL_NODES: &str = "label-nodes";
pub const COMPONENTS: &str = "components";
pub const KCM: &str = "kcm";
pub const NODES_EDGE: &str = "nodes/edge";
pub const NODES_CLOUD: &str = "nodes/cloud";
pub const VERIFY: &str = "verify";

/// The Job action of node-side preflight (`yurtctl-preflight-<node>`).
pub const PREFLIGHT_ACTION: &str = "preflight";
/// The Job action of node conversion (`yurtctl-convert-<node>`).
pub const CONVERT_ACTION: &str = "convert";
/// The Job action that disables nodelifecycle in kube-controller-manager's manifest.
pub const KCM_ACTION: &str = "disable-nodelifecycle";

/// What the user asked for, validated at the CLI edge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvertOptions {
    /// Leave the nodes' containers running as they are after the kubelet's redirect.
    pub skip_workload_restart: bool,
    pub cloud_nodes: Vec<String>,
    pub edge_nodes: Vec<String>,
    pub all_edge: bool,
    pub profile: String,
    pub servant_image: Option<String>,
    pub concurrency: usize,
    #[serde(serialize_with = "ser_duration")]
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
    /// `--disable-nodelifecycle`: None = what the profile needs.
    pub disable_nodelifecycle: Option<bool>,
    /// A NotReady node blocks the whole run instead of only itself.
    pub require_all_ready: bool,
    /// Optional components (`deploy-yurttunnel`, `enable-app-manager`).
    pub features: BTreeSet<String>,
    /// Lifetime of the bootstrap token convert creates.
    #[serde(serialize_with = "ser_duration")]
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
}

/// The kind of cluster (`--provider`); nodes tell which one it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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

impl ConvertOptions {
    /// The profile's images with `--openyurt-version`, `--image` and `--servant-image` applied.
    pub fn images(&self, profile: &Profile) -> BTreeMap<String, String> {
        let mut images = profile.images.clone();
        if let Some(v) = &self.openyurt_version {
            let old = format!(":{}", profile.openyurt_version);
            for image in images.values_mut() {
                if let Some(repo) = image.strip_suffix(&old) {
                    *image = format!("{repo}:{v}");
                }
            }
        }
        images.extend(self.images.clone());
        if let Some(s) = &self.servant_image {
            images.insert("servant".into(), s.clone());
        }
        images
    }

    /// Whether kube-controller-manager's nodelifecycle controller gets disabled.
    pub fn disables_nodelifecycle(&self, profile: &Profile) -> bool {
        self.disable_nodelifecycle
            .unwrap_or(profile.disable_node_lifecycle)
    }
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs()))
}

/// A node's role after conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Edge,
    Cloud,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Edge => "edge",
            Role::Cloud => "cloud",
        }
    }

    /// YurtHub's working mode on nodes of this role.
    pub fn working_mode(self) -> crate::render::WorkingMode {
        match self {
            Role::Edge => crate::render::WorkingMode::Edge,
            Role::Cloud => crate::render::WorkingMode::Cloud,
        }
    }

    /// The NodePool `spec.type` of a pool of nodes of this role.
    pub fn pool_type(self) -> &'static str {
        match self {
            Role::Edge => "Edge",
            Role::Cloud => "Cloud",
        }
    }

    /// The role named by a compile-time flag: phase tables hold plain `fn` pointers, so one
    /// generic node phase per role stands for a closure over the role.
    pub const fn edge_if(edge: bool) -> Role {
        if edge { Role::Edge } else { Role::Cloud }
    }

    /// The role a node phase (`nodes/edge`, `nodes/cloud`) is about.
    pub fn of_phase(id: &str) -> Role {
        if id == NODES_EDGE {
            Role::Edge
        } else {
            Role::Cloud
        }
    }

    /// The phase that converts nodes of this role.
    pub fn phase(self) -> &'static str {
        match self {
            Role::Edge => NODES_EDGE,
            Role::Cloud => NODES_CLOUD,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeAction {
    /// Labelled, then converted by a node Job.
    Convert,
    /// Labelled and recorded as converted by an earlier run: nothing to do.
    AlreadyConverted,
    /// Not Ready now: left alone this run (a later run converts it).
    SkipNotReady,
}

/// One node's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeDecision {
    pub name: String,
    pub role: Role,
    pub action: NodeAction,
    /// Gets the profile's autonomy annotation (edge nodes only).
    pub autonomous: bool,
    /// The NodePool the node joins (profiles with NodePools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

/// One step of a phase: what is done, to what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `check`, `lock`, `label`, `apply`, `job`, `wait`.
    pub action: String,
    /// The node, object or component the step is about.
    pub target: String,
    pub detail: String,
}

impl Step {
    fn new(action: &str, target: impl Into<String>, detail: impl Into<String>) -> Self {
        Step {
            action: action.into(),
            target: target.into(),
            detail: detail.into(),
        }
    }
}

/// A phase with a stable id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub id: String,
    /// Named in `--skip-phases`.
    pub skipped: bool,
    pub steps: Vec<Step>,
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub profile: String,
    pub server_version: String,
    pub nodes: Vec<NodeDecision>,
    /// Control-plane nodes whose kube-controller-manager gets nodelifecycle disabled this run.
    pub kcm_nodes: Vec<String>,
    /// Preflight findings `--ignore-preflight-errors` turned into warnings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Finding>,
    pub phases: Vec<Phase>,
}

impl Plan {
    /// Nodes a Job converts in this run, for one role.
    pub fn to_convert(&self, role: Role) -> impl Iterator<Item = &NodeDecision> {
        self.nodes
            .iter()
            .filter(move |n| n.role == role && n.action == NodeAction::Convert)
    }

    /// No node needs converting and no kube-controller-manager needs changing: the cluster is
    /// already converted (or nothing was selected).
    pub fn nothing_to_do(&self) -> bool {
        !self.nodes.iter().any(|n| n.action == NodeAction::Convert) && self.kcm_nodes.is_empty()
    }

    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// Whether phase `id` runs (present and not skipped).
    pub fn runs(&self, id: &str) -> bool {
        self.phase(id).is_some_and(|p| !p.skipped)
    }
}

/// A cluster preflight check, named as `--ignore-preflight-errors` takes it. kubeadm's rules:
/// CamelCase names matched case-insensitively, `all` only alone (kubernetes/kubernetes
/// cmd/kubeadm/app/apis/kubeadm/validation/validation.go `ValidateIgnorePreflightErrors`,
/// current source). Unlike kubeadm, a name we do not know is refused rather than ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Check {
    /// The server's Kubernetes minor is outside the profile's supported range.
    KubernetesVersion,
    /// The nodes say the cluster is another kind than `--provider`.
    Provider,
    /// A node named on the command line does not exist.
    NodeExists,
    /// A selected node is NotReady and `--require-all-ready` is set.
    NodeReady,
    /// `--autonomous-nodes` names a node that is not an edge node in this run.
    AutonomousNodes,
    /// nodelifecycle is to be disabled but no kube-controller-manager static pod exists.
    KubeControllerManager,
    /// The caller lacks a permission the command needs.
    Permissions,
    /// A node cannot join the NodePool this run puts it in.
    NodePool,
    /// The journal names a profile this yurtctl does not know.
    JournalProfile,
}

impl Check {
    /// The checks a user may turn into warnings: the cluster looks different from what the
    /// profile was made for, and the user may know better. The others mean the run cannot do
    /// what was asked (a named node is missing, a permission is denied).
    pub const IGNORABLE: [Check; 2] = [Check::KubernetesVersion, Check::Provider];

    pub fn name(self) -> &'static str {
        match self {
            Check::KubernetesVersion => "KubernetesVersion",
            Check::Provider => "Provider",
            Check::NodeExists => "NodeExists",
            Check::NodeReady => "NodeReady",
            Check::AutonomousNodes => "AutonomousNodes",
            Check::KubeControllerManager => "KubeControllerManager",
            Check::Permissions => "Permissions",
            Check::NodePool => "NodePool",
            Check::JournalProfile => "JournalProfile",
        }
    }

    /// One `--ignore-preflight-errors` value: a check name in any case (`Some`), or `all`
    /// (`None`).
    pub fn parse_ignorable(v: &str) -> Result<Option<Check>, String> {
        if v.eq_ignore_ascii_case("all") {
            return Ok(None);
        }
        Check::IGNORABLE
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(v))
            .map(Some)
            .ok_or_else(|| {
                let names: Vec<&str> = Check::IGNORABLE.iter().map(|c| c.name()).collect();
                format!(
                    "{v:?} is not a check that can be ignored; the checks are {}, or all",
                    names.join(", ")
                )
            })
    }

    /// The checks `--ignore-preflight-errors` names (`None` = all); `all` must come alone,
    /// as in kubeadm.
    pub fn ignored(values: &[Option<Check>]) -> Result<BTreeSet<Check>, String> {
        if values.contains(&None) {
            if values.len() > 1 {
                return Err(
                    "--ignore-preflight-errors: all already names every check; leave \
                            the others out"
                        .into(),
                );
            }
            return Ok(Check::IGNORABLE.into_iter().collect());
        }
        Ok(values.iter().flatten().copied().collect())
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one preflight check found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: Check,
    pub message: String,
}

impl Finding {
    pub fn new(check: Check, message: impl Into<String>) -> Self {
        Finding {
            check,
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.check, self.message)
    }
}

/// Why no plan could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Bad options (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The cluster does not allow the conversion (exit 3); every finding, not just the first.
    #[error("{}", preflight_failed(.0))]
    Preflight(Vec<Finding>),
}

fn preflight_failed(findings: &[Finding]) -> String {
    let mut s = String::from("preflight failed:");
    for f in findings {
        s.push_str(&format!("\n  - {f}"));
    }
    let ignorable: BTreeSet<Check> = findings
        .iter()
        .map(|f| f.check)
        .filter(|c| Check::IGNORABLE.contains(c))
        .collect();
    if !ignorable.is_empty() {
        let names: Vec<&str> = ignorable.iter().map(|c| c.name()).collect();
        s.push_str(&format!(
            "\n  if you know the cluster is fine, turn these into warnings with \
             --ignore-preflight-errors={}",
            names.join(",")
        ));
    }
    s
}

/// Whether the journal records `node` as converted in its role's phase.
fn journal_done(snap: &ClusterSnapshot, node: &str) -> bool {
    let Some(j) = &snap.journal else { return false };
    [NODES_EDGE, NODES_CLOUD].iter().any(|p| {
        j.phase(node, p)
            .is_some_and(|s| s.state == PhaseState::Done)
    })
}

/// Minor version number from `/version` (`"30"`, `"30+"`) or `gitVersion` (`v1.30.2`).
fn server_minor(snap: &ClusterSnapshot) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    digits(&snap.server_minor).or_else(|| {
        let v = snap.server_version.trim_start_matches('v');
        v.split('.').nth(1).and_then(digits)
    })
}

/// Every check the options and the profile alone decide (usage errors, exit 2): run before
/// the cluster is contacted, and again by the planner for callers that build options
/// themselves.
pub fn check_options(opts: &ConvertOptions, profile: &Profile) -> Result<(), PlanError> {
    for p in &opts.skip_phases {
        if !CONVERT_PHASES.contains(&p.as_str()) {
            return Err(PlanError::Usage(format!(
                "--skip-phases: unknown phase {p:?}; phases are {}",
                CONVERT_PHASES.join(", ")
            )));
        }
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

/// The NodePool `n` joins in role `role`, or why it cannot.
fn pool_of(
    n: &NodeInfo,
    role: Role,
    opts: &ConvertOptions,
    decl: &crate::render::NodePoolDecl,
) -> Result<String, String> {
    let want = match (role, &opts.nodepools_from_label) {
        (Role::Cloud, _) => opts
            .cloud_nodepool
            .clone()
            .unwrap_or_else(|| decl.default_cloud_pool.clone()),
        (Role::Edge, Some(key)) => match n.labels.get(key) {
            None => {
                return Err(format!(
                    "node {} has no label {key} (--nodepools-from-label): label it, or put it \
                     in a pool with --nodepool",
                    n.name
                ));
            }
            Some(v) if !crate::selector::is_dns1123_subdomain(v) => {
                return Err(format!(
                    "node {}: {key}={v} is not a valid NodePool name (a DNS-1123 subdomain: \
                     lower-case letters, digits, '-' and '.')",
                    n.name
                ));
            }
            Some(v) => v.clone(),
        },
        (Role::Edge, None) => opts
            .nodepool
            .clone()
            .unwrap_or_else(|| decl.default_edge_pool.clone()),
    };
    match n.labels.get(&decl.label) {
        Some(have) if *have != want => Err(format!(
            "node {} is in NodePool {have} ({}={have}), not {want}: yurt-manager refuses to move \
             a node between pools in place; choose {have} for it, or revert the node first",
            n.name, decl.label
        )),
        _ => Ok(want),
    }
}

/// The NodePools of a plan's nodes and their role, by name.
pub fn plan_pools(nodes: &[NodeDecision]) -> BTreeMap<&str, Role> {
    nodes
        .iter()
        .filter_map(|n| Some((n.pool.as_deref()?, n.role)))
        .collect()
}

/// A pool that would hold edge and cloud nodes (a NodePool has one type), once per pool.
fn pool_conflicts(nodes: &[NodeDecision]) -> Vec<Finding> {
    let mut first: BTreeMap<&str, &NodeDecision> = BTreeMap::new();
    let mut reported = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        let Some(pool) = n.pool.as_deref() else {
            continue;
        };
        let other = *first.entry(pool).or_insert(n);
        if other.role != n.role && reported.insert(pool) {
            out.push(Finding::new(
                Check::NodePool,
                format!(
                    "NodePool {pool} would hold edge and cloud nodes ({} and {}); a pool has \
                     one type: give cloud nodes another pool with --cloud-nodepool",
                    other.name, n.name
                ),
            ));
        }
    }
    out
}

/// Plans `yurtctl convert`.
///
/// Roles: nodes in `--cloud-nodes` are cloud; with `--edge-nodes`, exactly those are edge and
/// control-plane nodes not named anywhere are cloud (other nodes are left alone); otherwise
/// (`--all-edge`, the default) every node is edge except control-plane nodes and
/// `--cloud-nodes`. A node is already converted when it carries the profile's edge-worker label
/// and the journal records its conversion; a NotReady node is skipped (and reported).
pub fn plan_convert(
    snap: &ClusterSnapshot,
    opts: &ConvertOptions,
    profile: &Profile,
) -> Result<Plan, PlanError> {
    check_options(opts, profile)?;

    let mut findings = Vec::new();
    match server_minor(snap) {
        Some(m) if profile.supports_minor(m) => {}
        Some(m) => findings.push(Finding::new(
            Check::KubernetesVersion,
            format!(
                "Kubernetes {} (1.{m}) is not supported by profile {} (1.{}-1.{})",
                snap.server_version,
                profile.name,
                profile.kubernetes.min_minor,
                profile.kubernetes.max_minor
            ),
        )),
        None => findings.push(Finding::new(
            Check::KubernetesVersion,
            format!(
                "cannot tell the Kubernetes minor version from {:?}",
                snap.server_version
            ),
        )),
    }
    for n in opts.cloud_nodes.iter().chain(&opts.edge_nodes) {
        if !snap.nodes.iter().any(|x| &x.name == n) {
            findings.push(Finding::new(
                Check::NodeExists,
                format!("node {n} does not exist"),
            ));
        }
    }
    if let Some(want) = opts.provider {
        for n in &snap.nodes {
            if let Some(is) = Provider::of_node(n).filter(|is| *is != want) {
                findings.push(Finding::new(
                    Check::Provider,
                    format!(
                        "node {} looks like a {} node, not {} (--provider); leave --provider at \
                         auto or point --kubeconfig at the right cluster",
                        n.name,
                        is.as_str(),
                        want.as_str()
                    ),
                ));
            }
        }
    }
    for n in &opts.autonomous_nodes {
        if !snap.nodes.iter().any(|x| &x.name == n) {
            findings.push(Finding::new(
                Check::NodeExists,
                format!("node {n} (--autonomous-nodes) does not exist"),
            ));
        }
    }
    if opts.disables_nodelifecycle(profile)
        && !opts.skip_phases.contains(KCM)
        && !snap.nodes.iter().any(|n| n.kcm_static_pod)
    {
        findings.push(Finding::new(
            Check::KubeControllerManager,
            format!(
                "nodelifecycle is to be disabled in kube-controller-manager (profile {}, \
                 --disable-nodelifecycle), but no kube-controller-manager static pod was found: \
                 disable it where your kube-controller-manager is configured, then re-run with \
                 --disable-nodelifecycle=false or --skip-phases {KCM}",
                profile.name
            ),
        ));
    }
    let edge_key = &profile.labels.edge_worker.key;
    let nodes: Vec<NodeDecision> = snap
        .nodes
        .iter()
        .filter_map(|n| {
            let role = role_of(n, opts)?;
            let action = if n.labels.contains_key(edge_key) && journal_done(snap, &n.name) {
                NodeAction::AlreadyConverted
            } else if !n.ready {
                NodeAction::SkipNotReady
            } else {
                NodeAction::Convert
            };
            Some(NodeDecision {
                name: n.name.clone(),
                role,
                action,
                autonomous: role == Role::Edge
                    && (opts.autonomous_nodes.is_empty()
                        || opts.autonomous_nodes.contains(&n.name)),
                pool: profile.node_pools.as_ref().and_then(|decl| {
                    pool_of(n, role, opts, decl)
                        .map_err(|m| findings.push(Finding::new(Check::NodePool, m)))
                        .ok()
                }),
            })
        })
        .collect();
    findings.extend(pool_conflicts(&nodes));
    for n in &opts.autonomous_nodes {
        if nodes.iter().any(|d| &d.name == n && d.role != Role::Edge) {
            findings.push(Finding::new(
                Check::AutonomousNodes,
                format!("node {n} (--autonomous-nodes) is not an edge node in this conversion"),
            ));
        }
    }
    if opts.require_all_ready {
        for n in nodes
            .iter()
            .filter(|n| n.action == NodeAction::SkipNotReady)
        {
            findings.push(Finding::new(
                Check::NodeReady,
                format!(
                    "node {} is NotReady (--require-all-ready); bring it back or leave the flag \
                     out to skip it",
                    n.name
                ),
            ));
        }
    }
    let (warnings, findings): (Vec<Finding>, Vec<Finding>) = findings
        .into_iter()
        .partition(|f| opts.ignore_preflight_errors.contains(&f.check));
    if !findings.is_empty() {
        return Err(PlanError::Preflight(findings));
    }
    let kcm_done = |node: &str| {
        snap.journal
            .as_ref()
            .and_then(|j| j.phase(node, KCM))
            .is_some_and(|s| s.state == PhaseState::Done)
    };
    let kcm_nodes: Vec<String> = if opts.disables_nodelifecycle(profile) {
        snap.nodes
            .iter()
            .filter(|n| n.kcm_static_pod && n.ready && !kcm_done(&n.name))
            .map(|n| n.name.clone())
            .collect()
    } else {
        Vec::new()
    };

    let phases = CONVERT_PHASES
        .iter()
        .map(|id| Phase {
            id: (*id).to_string(),
            skipped: opts.skip_phases.contains(*id),
            steps: steps(id, snap, opts, profile, &nodes, &kcm_nodes, &warnings),
        })
        .collect();
    Ok(Plan {
        profile: profile.name.clone(),
        server_version: snap.server_version.clone(),
        nodes,
        kcm_nodes,
        warnings,
        phases,
    })
}

fn role_of(n: &NodeInfo, opts: &ConvertOptions) -> Option<Role> {
    if opts.cloud_nodes.contains(&n.name) {
        return Some(Role::Cloud);
    }
    if opts.edge_nodes.contains(&n.name) {
        return Some(Role::Edge);
    }
    if n.is_control_plane() {
        return Some(Role::Cloud);
    }
    opts.edge_nodes.is_empty().then_some(Role::Edge)
}

fn steps(
    id: &str,
    snap: &ClusterSnapshot,
    opts: &ConvertOptions,
    profile: &Profile,
    nodes: &[NodeDecision],
    kcm_nodes: &[String],
    warnings: &[Finding],
) -> Vec<Step> {
    let converting = || nodes.iter().filter(|n| n.action == NodeAction::Convert);
    let labels = &profile.labels;
    match id {
        PREFLIGHT => {
            let mut s = Vec::new();
            if !warnings.iter().any(|w| w.check == Check::KubernetesVersion) {
                s.push(Step::new(
                    "check",
                    "cluster",
                    format!(
                        "Kubernetes {} is supported by profile {}",
                        snap.server_version, profile.name
                    ),
                ));
            }
            for w in warnings {
                s.push(Step::new(
                    "warn",
                    "cluster",
                    format!("{w} (ignored: --ignore-preflight-errors)"),
                ));
            }
            for n in nodes {
                let detail = match n.action {
                    NodeAction::Convert => format!("convert as {}", n.role),
                    NodeAction::AlreadyConverted => format!("already converted ({})", n.role),
                    NodeAction::SkipNotReady => format!("skip: NotReady ({})", n.role),
                };
                s.push(Step::new("check", format!("node/{}", n.name), detail));
            }
            s
        }
        LOCK => vec![Step::new(
            "lock",
            "lease/kube-system/yurtctl-lock",
            "taken before the cluster is read, renewed while running",
        )],
        PREFLIGHT_NODES => converting()
            .filter(|n| !opts.skip_phases.contains(n.role.phase()))
            .map(|n| {
                Step::new(
                    "job",
                    format!("node/{}", n.name),
                    format!(
                        "Job {}: node-servant preflight (changes nothing)",
                        crate::cluster::jobs::job_name(PREFLIGHT_ACTION, &n.name)
                    ),
                )
            })
            .collect(),
        LABEL_NODES => converting()
            .map(|n| {
                let value = match n.role {
                    Role::Edge => &labels.edge_worker.edge,
                    Role::Cloud => &labels.edge_worker.cloud,
                };
                let mut d = format!("label {}={value}", labels.edge_worker.key);
                if let (Some(decl), Some(pool)) = (&profile.node_pools, &n.pool) {
                    d.push_str(&format!(" and {}={pool}", decl.label));
                }
                if n.autonomous {
                    d.push_str(&format!(
                        ", annotate {}={}",
                        labels.autonomy.key, labels.autonomy.value
                    ));
                }
                Step::new("label", format!("node/{}", n.name), d)
            })
            .collect(),
        COMPONENTS => {
            if converting().next().is_none() {
                return Vec::new();
            }
            let mut s: Vec<Step> = profile
                .enabled_components(&opts.features)
                .map(|c| Step::new("apply", c.id.clone(), c.templates.join(", ")))
                .collect();
            s.extend(plan_pools(nodes).into_iter().map(|(pool, role)| {
                Step::new(
                    "apply",
                    format!("nodepool/{pool}"),
                    format!("NodePool {pool} (type {})", role.pool_type()),
                )
            }));
            s.push(Step::new(
                "apply",
                "yurthub-bootstrap",
                "Secret kube-system/yurtctl-yurthub-bootstrap (bootstrap-hub.conf)",
            ));
            s
        }
        KCM => kcm_nodes
            .iter()
            .flat_map(|n| {
                [
                    Step::new(
                        "job",
                        format!("node/{n}"),
                        format!(
                            "Job {}: node-servant disable-nodelifecycle",
                            crate::cluster::jobs::job_name(KCM_ACTION, n)
                        ),
                    ),
                    Step::new(
                        "files",
                        format!("node/{n}"),
                        format!(
                            "~ <static-pod dir>/{}: -nodelifecycle added to --controllers \
                             (that line only; backup in {})",
                            crate::servant::kcm::KCM_FILE,
                            crate::servant::journal::BACKUP_DIR
                        ),
                    ),
                ]
            })
            .collect(),
        NODES_EDGE | NODES_CLOUD => {
            let role = Role::of_phase(id);
            converting()
                .filter(|n| n.role == role)
                .flat_map(|n| {
                    [
                        Step::new(
                            "job",
                            format!("node/{}", n.name),
                            format!(
                                "Job {}: node-servant convert, YurtHub from ConfigMap {} \
                                 (timeout {}s, {} at a time)",
                                crate::cluster::jobs::job_name(CONVERT_ACTION, &n.name),
                                profile.yurthub.config_map(role.working_mode()),
                                opts.job_timeout.as_secs(),
                                opts.concurrency.max(1)
                            ),
                        ),
                        Step::new(
                            "files",
                            format!("node/{}", n.name),
                            node_files(profile, restarts_workloads(opts, role)),
                        ),
                    ]
                })
                .collect()
        }
        VERIFY => converting()
            .map(|n| Step::new("wait", format!("node/{}", n.name), "Ready"))
            .collect(),
        _ => Vec::new(),
    }
}

/// What a node Job changes in the node's files (`+` new, `~` edited), for the plan. The exact
/// unit or environment file that sets the kubelet's `--kubeconfig` is known only on the node:
/// node preflight reports it.
/// Whether the node Job restarts the node's workload containers after the redirect: on edge
/// nodes, unless `--skip-workload-restart` (upstream restarts them only there too).
pub fn restarts_workloads(opts: &ConvertOptions, role: Role) -> bool {
    !opts.skip_workload_restart && role == Role::Edge
}

fn node_files(profile: &Profile, restart_workloads: bool) -> String {
    use crate::servant::{journal::BACKUP_DIR, kubelet::OPENYURT_KUBECONFIG, yurthub};
    let credential = match profile.yurthub.credential() {
        crate::render::YurtHubCredential::BootstrapFile => yurthub::BOOTSTRAP_FILE,
        crate::render::YurtHubCredential::JoinToken => yurthub::JOIN_TOKEN_FILE,
    };
    let hub = match profile.yurthub.static_pod() {
        Some(s) => format!("+ <static-pod dir>/{}", s.manifest_file),
        None => format!(
            "+ {} (0755), + {} and + {} (0644), systemctl enable --now {}",
            yurthub::HUB_BINARY,
            yurthub::HUB_UNIT_FILE,
            yurthub::HUB_DROP_IN_FILE,
            yurthub::HUB_UNIT
        ),
    };
    let workloads = if restart_workloads {
        ", then the node's workload containers restarted (not static pods) so they reach the \
         API server through YurtHub"
    } else {
        ""
    };
    format!(
        "{hub}, + {credential} (0600), + {OPENYURT_KUBECONFIG}; \
         ~ the kubelet's --kubeconfig value → {OPENYURT_KUBECONFIG} where its unit or env file \
         sets it, then kubelet restart{workloads}; backups in {BACKUP_DIR}"
    )
}

/// The plan as text, one line per step (for `--dry-run=client` without `-o json`).
pub fn render_text(plan: &Plan) -> String {
    let mut out = format!(
        "Plan: convert to {} (Kubernetes {})\n",
        plan.profile, plan.server_version
    );
    out.push_str(&render_phases(&plan.phases, 6, 28));
    out
}

/// Phases as text: a `phase ID` line each (noting skipped or empty ones), then one line per
/// step in columns of the given widths.
pub fn render_phases(phases: &[Phase], action_width: usize, target_width: usize) -> String {
    let mut out = String::new();
    for p in phases {
        let note = if p.skipped {
            " (skipped)"
        } else if p.steps.is_empty() {
            " (nothing to do)"
        } else {
            ""
        };
        out.push_str(&format!("phase {}{note}\n", p.id));
        for s in &p.steps {
            out.push_str(&format!(
                "  {:<action_width$} {:<target_width$} {}\n",
                s.action, s.target, s.detail
            ));
        }
    }
    out
}

#[cfg(test)]
mod pool_tests;
#[cfg(test)]
mod preflight_tests;
#[cfg(test)]
mod tests;
