//! `plan_convert`: a snapshot and the options to the phases, node decisions and steps of a
//! convert run.

use super::*;

/// Whether the journal records `node` as converted in its role's phase.
pub(super) fn journal_done(snap: &ClusterSnapshot, node: &str) -> bool {
    let Some(j) = &snap.journal else { return false };
    [NODES_EDGE, NODES_CLOUD].iter().any(|p| {
        j.phase(node, p)
            .is_some_and(|s| s.state == PhaseState::Done)
    })
}

/// Minor version number from `/version` (`"30"`, `"30+"`) or `gitVersion` (`v1.30.2`).
pub(super) fn server_minor(snap: &ClusterSnapshot) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    digits(&snap.server_minor).or_else(|| {
        let v = snap.server_version.trim_start_matches('v');
        v.split('.').nth(1).and_then(digits)
    })
}

/// The NodePool `n` joins in role `role`, or why it cannot.
pub(super) fn pool_of(
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
pub(super) fn pool_conflicts(nodes: &[NodeDecision]) -> Vec<Finding> {
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
    let settings = ConvertSettings::resolve(opts, profile);

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
    if let Some(j) = snap.journal.as_ref().filter(|j| j.profile != profile.name) {
        // the nodes it converted run that profile's YurtHub: converting them again with
        // another one would mix both, and revert would undo the wrong one
        findings.push(Finding::new(
            Check::JournalProfile,
            format!(
                "this cluster was converted with profile {} (journal {}/{}, last written by \
                 {}), not {}: re-run with --profile {} to go on with that conversion, or run \
                 `yurtctl revert` first and then convert with --profile {}",
                j.profile,
                crate::cluster::SYSTEM_NAMESPACE,
                crate::cluster::journal::JOURNAL_NAME,
                j.command,
                profile.name,
                j.profile,
                profile.name
            ),
        ));
    }
    if let Some(u) = snap
        .journal
        .as_ref()
        .and_then(|j| j.upgrade.as_ref())
        .filter(|u| !u.finished)
    {
        // its nodes are half on one release, half on the other
        findings.push(Finding::new(
            Check::JournalProfile,
            format!(
                "an upgrade of this cluster to {} (OpenYurt {}) did not finish: run `yurtctl \
                 upgrade --profile {} --openyurt-version {}` to finish it before converting more \
                 nodes",
                u.to_profile, u.to_version, u.to_profile, u.to_version
            ),
        ));
    }
    for name in &opts.image_pull_secrets {
        let Some(found) = snap.pull_secrets.get(name) else {
            continue;
        };
        let ns = crate::cluster::SYSTEM_NAMESPACE;
        if let Some(problem) = pull_secret_problem(ns, name, found.as_deref()) {
            findings.push(Finding::new(Check::ImagePullSecret, problem));
        }
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
    if settings.disable_nodelifecycle
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
    let (mut warnings, findings): (Vec<Finding>, Vec<Finding>) = findings
        .into_iter()
        .partition(|f| opts.ignore_preflight_errors.contains(&f.check));
    if !findings.is_empty() {
        return Err(PlanError::Preflight(findings));
    }
    if let Some(m) = server_minor(snap)
        && profile.supports_minor(m)
        && m > profile.certified_max_minor()
    {
        warnings.push(Finding::new(
            Check::KubernetesVersion,
            format!(
                "Kubernetes {} (1.{m}) is newer than OpenYurt {} certifies (1.{}-1.{}); upstream \
                 expects newer releases to work but has not verified them",
                snap.server_version,
                profile.openyurt_version,
                profile.kubernetes.min_minor,
                profile.certified_max_minor()
            ),
        ));
    }
    let kcm_done = |node: &str| {
        snap.journal
            .as_ref()
            .and_then(|j| j.phase(node, KCM))
            .is_some_and(|s| s.state == PhaseState::Done)
    };
    let kcm_nodes: Vec<String> = if settings.disable_nodelifecycle {
        snap.nodes
            .iter()
            // done, unless its manifest was rewritten since (a kubeadm upgrade does)
            .filter(|n| {
                n.ready
                    && (!kcm_done(&n.name) && n.kcm_static_pod
                        || n.kcm_runs_nodelifecycle() == Some(true))
            })
            .map(|n| n.name.clone())
            .collect()
    } else {
        Vec::new()
    };

    let inputs = ConvertInputs {
        snap,
        opts,
        profile,
        nodes: &nodes,
        kcm_nodes: &kcm_nodes,
        warnings: &warnings,
    };
    let phases = phases::plan_phases::<ConvertPhase>(&opts.skip_phases, |steps| steps(&inputs));
    Ok(Plan {
        profile: profile.name.clone(),
        server_version: snap.server_version.clone(),
        nodes,
        kcm_nodes,
        warnings,
        phases,
        settings,
    })
}

pub(super) fn role_of(n: &NodeInfo, opts: &ConvertOptions) -> Option<Role> {
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

/// What a node Job changes in the node's files (`+` new, `~` edited), for the plan. The exact
/// unit or environment file that sets the kubelet's `--kubeconfig` is known only on the node:
/// node preflight reports it.
/// Whether the node Job restarts the node's workload containers after the redirect: on edge
/// nodes, unless `--skip-workload-restart` (upstream restarts them only there too).
pub fn restarts_workloads(opts: &ConvertOptions, role: Role) -> bool {
    !opts.skip_workload_restart && role == Role::Edge
}

pub(super) fn node_files(profile: &Profile, restart_workloads: bool) -> String {
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
