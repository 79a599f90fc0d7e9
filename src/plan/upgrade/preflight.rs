//! What an upgrade checks before it changes anything, and which nodes it moves. PURE: from the
//! cluster snapshot (its journal included) and the two profiles.

use std::collections::BTreeSet;
use std::fmt;

use super::{NoRoute, Route};
use crate::cluster::journal::PhaseState;
use crate::cluster::snapshot::ClusterSnapshot;
use crate::plan::convert::{pool_of, server_minor};
use crate::plan::{Check, ConvertOptions, Role, UPGRADE_ACTION, converted_role};
use crate::render::Profile;

/// Why an upgrade cannot start; each says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No journal: yurtctl did not convert this cluster.
    NotConverted,
    /// A convert or revert stopped or failed on these nodes (node, phase, state).
    Unfinished {
        command: String,
        nodes: Vec<(String, String, PhaseState)>,
    },
    /// The server's Kubernetes is outside the target profile's range.
    KubernetesVersion {
        version: String,
        profile: String,
        min: u32,
        max: u32,
    },
    /// Nodes carry OpenYurt's edge-worker label with no conversion of yurtctl's recorded.
    ForeignNodes { label: String, nodes: Vec<String> },
    /// A node cannot join the NodePool the target needs it in.
    NodePool(String),
    /// No route from the cluster's release to the target.
    Route(NoRoute),
    /// The journal cannot be read as a conversion of this yurtctl's.
    Journal(String),
    /// An upgrade to another release stopped half-way.
    UpgradeUnfinished { to: super::Release },
    /// `-l` selects none of the nodes still to move.
    NoneSelected(String),
    /// `--rollback` with no upgrade in the journal to return from.
    NothingToRollBack,
    /// A rollback stopped half-way; only `--rollback` finishes it.
    RollbackUnfinished { to: super::Release },
}

impl Refusal {
    /// The check `--ignore-preflight-errors` names to turn it into a warning, for the one
    /// refusal that may be: the cluster looks different from what the profile was made for.
    pub fn ignorable_as(&self) -> Option<Check> {
        match self {
            Refusal::KubernetesVersion { .. } => Some(Check::KubernetesVersion),
            _ => None,
        }
    }

    /// The preflight check it is reported under.
    pub fn check(&self) -> Check {
        match self {
            Refusal::KubernetesVersion { .. } => Check::KubernetesVersion,
            Refusal::NodePool(_) => Check::NodePool,
            Refusal::NotConverted | Refusal::Journal(_) => Check::JournalProfile,
            Refusal::Unfinished { .. }
            | Refusal::ForeignNodes { .. }
            | Refusal::Route(_)
            | Refusal::UpgradeUnfinished { .. }
            | Refusal::NoneSelected(_)
            | Refusal::NothingToRollBack
            | Refusal::RollbackUnfinished { .. } => Check::Upgrade,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotConverted => f.write_str(
                "this cluster was not converted by yurtctl (no journal kube-system/yurtctl-state): \
                 there is nothing of yurtctl's to upgrade; convert it with the profile you want",
            ),
            Refusal::Unfinished { command, nodes } => {
                let shown: Vec<String> = nodes
                    .iter()
                    .take(5)
                    .map(|(n, p, s)| format!("{n} ({p} {})", s.as_str()))
                    .collect();
                let more = nodes.len().saturating_sub(shown.len());
                write!(
                    f,
                    "the last {command} did not finish on {}{}: run `yurtctl {command}` again to \
                     finish it (or `yurtctl revert --nodes …` to take those nodes out), then \
                     upgrade",
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                )
            }
            Refusal::KubernetesVersion {
                version,
                profile,
                min,
                max,
            } => write!(
                f,
                "Kubernetes {version} is outside what profile {profile} supports (1.{min} to \
                 1.{max}): upgrade Kubernetes into that range first, or pass \
                 --ignore-preflight-errors=KubernetesVersion if you know better"
            ),
            Refusal::ForeignNodes { label, nodes } => write!(
                f,
                "node(s) {} carry {label} but yurtctl has no record of converting them (another \
                 tool did): an upgrade moves only what yurtctl converted; revert them with that \
                 tool, or convert them with yurtctl first",
                nodes.join(", ")
            ),
            Refusal::NodePool(why) | Refusal::Journal(why) => f.write_str(why),
            Refusal::Route(r) => write!(f, "{r}"),
            Refusal::NoneSelected(sel) => write!(
                f,
                "-l {sel} selects none of the nodes still to move: check the nodes' labels \
                 (kubectl get nodes -l '{sel}')"
            ),
            Refusal::NothingToRollBack => f.write_str(
                "the journal records no upgrade: there is nothing to roll back (`yurtctl revert` \
                 undoes a conversion)",
            ),
            Refusal::RollbackUnfinished { to } => write!(
                f,
                "a rollback to {to} did not finish: run `yurtctl upgrade --rollback` to finish \
                 it first"
            ),
            Refusal::UpgradeUnfinished { to } => write!(
                f,
                "the upgrade to {to} did not finish: run `yurtctl upgrade --profile {} \
                 --openyurt-version {}` to finish it first",
                to.profile, to.openyurt_version
            ),
        }
    }
}

/// One node the upgrade moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeNode {
    pub name: String,
    pub role: Role,
    /// The NodePool it is in after the upgrade (a target with NodePools).
    pub pool: Option<String>,
}

/// The nodes the upgrade moves, or every reason it cannot start. `opts` are the options the
/// journal recorded (the pools are chosen as that convert chose them); `ignored`, the checks
/// the upgrade's `--ignore-preflight-errors` names.
pub fn preflight(
    snap: &ClusterSnapshot,
    from: &Profile,
    to: &Profile,
    route: &Result<Route, NoRoute>,
    opts: &ConvertOptions,
    ignored: &BTreeSet<Check>,
) -> Result<Vec<UpgradeNode>, Vec<Refusal>> {
    let Some(journal) = &snap.journal else {
        return Err(vec![Refusal::NotConverted]);
    };
    let mut refused = Vec::new();
    if let Err(r) = route {
        refused.push(Refusal::Route(r.clone()));
    }
    if let Some(minor) = server_minor(snap)
        && !to.supports_minor(minor)
    {
        refused.push(Refusal::KubernetesVersion {
            version: snap.server_version.clone(),
            profile: to.name.clone(),
            min: to.kubernetes.min_minor,
            max: to.kubernetes.max_minor,
        });
    }
    // an unfinished upgrade to this same release is what this run resumes; a rollback takes
    // the nodes from wherever the upgrade left them
    let resuming = journal.upgrade.as_ref().is_some_and(|u| {
        route.as_ref().is_ok_and(|r| {
            r.kind == super::RouteKind::Rollback
                || (!u.finished
                    && r.to.profile == u.to_profile
                    && r.to.openyurt_version == u.to_version)
        })
    });
    let unfinished: Vec<_> = journal
        .unfinished()
        .into_iter()
        .filter(|(_, phase, _)| !(resuming && phase == UPGRADE_ACTION))
        .collect();
    if !unfinished.is_empty() {
        refused.push(Refusal::Unfinished {
            command: journal.command.clone(),
            nodes: unfinished,
        });
    }
    let label = &from.labels.edge_worker.key;
    let foreign: Vec<String> = snap
        .nodes
        .iter()
        // a node the journal knows but did not finish is the unfinished run's, said above
        .filter(|n| n.labels.contains_key(label) && !journal.nodes.contains_key(&n.name))
        .map(|n| n.name.clone())
        .collect();
    if !foreign.is_empty() {
        refused.push(Refusal::ForeignNodes {
            label: label.clone(),
            nodes: foreign,
        });
    }
    let mut nodes = Vec::new();
    for n in &snap.nodes {
        let Some(role) = converted_role(journal, &n.name) else {
            continue;
        };
        let pool = match &to.node_pools {
            None => None,
            Some(decl) => match pool_of(n, role, opts, decl) {
                Ok(p) => Some(p),
                Err(why) => {
                    refused.push(Refusal::NodePool(why));
                    None
                }
            },
        };
        nodes.push(UpgradeNode {
            name: n.name.clone(),
            role,
            pool,
        });
    }
    refused.retain(|r| r.ignorable_as().is_none_or(|c| !ignored.contains(&c)));
    if refused.is_empty() {
        Ok(nodes)
    } else {
        Err(refused)
    }
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
