//! Where an upgrade starts (the release the journal records), what it asks for, the options
//! the target runs with, and the convert plan the target's components and node Jobs are made
//! from. PURE.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Refusal, Release, UpgradeNode};
use crate::cluster::journal::{Journal, UpgradeRecord};
use crate::plan::{
    Check, ConvertOptions, ConvertSettings, NodeAction, NodeDecision, Plan, Role, UPGRADE_ACTION,
};
use crate::render::Profile;

/// `yurtctl upgrade`'s options, as given.
#[derive(Clone, Debug, PartialEq)]
pub struct UpgradeOptions {
    /// `--profile`: the profile to go to.
    pub profile: String,
    /// `--openyurt-version`: a patch release of that profile's OpenYurt.
    pub openyurt_version: Option<String>,
    pub servant_image: Option<String>,
    pub image_repository: Option<String>,
    pub images: BTreeMap<String, String>,
    pub image_pull_secrets: Vec<String>,
    /// How the nodes are rolled: `--max-unavailable`, `--partition`, `--priority`,
    /// `--canary`, `--max-failures` (as `staticpod upgrade` rolls them).
    pub rollout: crate::rollout::Options,
    /// `--pause`: the components and labels change, no node moves.
    pub pause: bool,
    pub job_timeout: Duration,
    pub skip_phases: BTreeSet<String>,
    pub ignore_preflight_errors: BTreeSet<Check>,
    pub force_conflicts: bool,
    /// `-l/--selector`: only the nodes whose labels match move in this run (a canary); the
    /// upgrade finishes in a later run without it.
    pub selector: Option<crate::selector::Selector>,
    /// `--rollback`: back to the release and options the last upgrade came from (`profile`
    /// and the image options are not used).
    pub rollback: bool,
}

impl Default for UpgradeOptions {
    fn default() -> Self {
        UpgradeOptions {
            profile: Profile::DEFAULT.to_owned(),
            openyurt_version: None,
            servant_image: None,
            image_repository: None,
            images: BTreeMap::new(),
            image_pull_secrets: Vec::new(),
            rollout: crate::rollout::Options::default(),
            pause: false,
            job_timeout: Duration::from_secs(300),
            skip_phases: BTreeSet::new(),
            ignore_preflight_errors: BTreeSet::new(),
            force_conflicts: false,
            selector: None,
            rollback: false,
        }
    }
}

/// Where the cluster is and where this run takes it, read from the journal.
#[derive(Clone, Debug, PartialEq)]
pub struct Start {
    /// The release the cluster ran before this upgrade began (an unfinished upgrade's own
    /// starting point, when this run resumes it).
    pub from: Release,
    pub to: Release,
    /// The options the cluster was converted with.
    pub recorded: ConvertOptions,
    /// An earlier run of this same upgrade stopped: nodes it moved are not moved again.
    pub resuming: bool,
    /// The options the cluster ran with before the upgrade (the journal's form).
    pub from_options: serde_json::Map<String, serde_json::Value>,
    /// `--rollback`: the upgrade it undoes, as the journal records it.
    pub rollback: Option<UpgradeRecord>,
}

impl Start {
    /// The journal's record of this upgrade (a rollback keeps the upgrade's, marked).
    pub fn record(&self) -> UpgradeRecord {
        if let Some(u) = &self.rollback {
            return UpgradeRecord {
                rolling_back: true,
                ..u.clone()
            };
        }
        UpgradeRecord {
            from_profile: self.from.profile.clone(),
            from_version: self.from.openyurt_version.clone(),
            to_profile: self.to.profile.clone(),
            to_version: self.to.openyurt_version.clone(),
            finished: false,
            from_options: self.from_options.clone(),
            rolling_back: false,
        }
    }

    /// Nodes that need no move: for an upgrade, those an earlier run of it moved; for a
    /// rollback, those of `nodes` the upgrade never touched (or a run of the rollback moved
    /// back, which forgets the node's `upgrade` record).
    pub fn moved<'a>(
        &self,
        journal: &Journal,
        nodes: impl Iterator<Item = &'a str>,
    ) -> BTreeSet<String> {
        let upgraded = |n: &str| journal.nodes.get(n).and_then(|p| p.get(UPGRADE_ACTION));
        if self.rollback.is_some() {
            return nodes
                .filter(|n| upgraded(n).is_none())
                .map(str::to_owned)
                .collect();
        }
        if !self.resuming {
            return BTreeSet::new();
        }
        nodes
            .filter(|n| {
                upgraded(n).is_some_and(|s| s.state == crate::cluster::journal::PhaseState::Done)
            })
            .map(str::to_owned)
            .collect()
    }
}

/// The release a journal says the cluster runs: the profile it names at the OpenYurt version
/// its options name (the profile's own without one).
fn journal_release(journal: &Journal, recorded: &ConvertOptions, profile: &Profile) -> Release {
    Release {
        profile: journal.profile.clone(),
        openyurt_version: recorded
            .openyurt_version
            .clone()
            .unwrap_or_else(|| profile.openyurt_version.clone()),
    }
}

/// Where this upgrade starts and goes. `load` loads a profile by name (the journal's). An
/// upgrade that stopped is resumed only towards the same target.
pub fn start(
    journal: &Journal,
    opts: &UpgradeOptions,
    to: &Profile,
    load: &dyn Fn(&str) -> Option<Profile>,
) -> Result<Start, Refusal> {
    let recorded = ConvertOptions::from_journal(&journal.options).ok_or_else(|| {
        Refusal::Journal(
            "the journal's options are not ones this yurtctl can read (written by a newer \
             yurtctl?): upgrade with that yurtctl"
                .into(),
        )
    })?;
    let current = load(&journal.profile).ok_or_else(|| {
        Refusal::Journal(format!(
            "the journal names profile {}, which this yurtctl does not have",
            journal.profile
        ))
    })?;
    if opts.rollback {
        let u = journal.upgrade.as_ref().ok_or(Refusal::NothingToRollBack)?;
        if ConvertOptions::from_journal(&u.from_options).is_none() || u.from_options.is_empty() {
            return Err(Refusal::Journal(format!(
                "the journal does not record the options the upgrade from {} started with (an \
                 older yurtctl upgraded this cluster): there is nothing to roll back to; \
                 `yurtctl revert` undoes the conversion",
                release(&u.from_profile, &u.from_version)
            )));
        }
        return Ok(Start {
            from: release(&u.to_profile, &u.to_version),
            to: release(&u.from_profile, &u.from_version),
            recorded,
            resuming: u.rolling_back,
            from_options: u.from_options.clone(),
            rollback: Some(u.clone()),
        });
    }
    let here = journal_release(journal, &recorded, &current);
    let wanted = Release::of(to, opts.openyurt_version.as_deref());
    let unfinished = journal.upgrade.as_ref().filter(|u| !u.finished);
    match journal.upgrade.as_ref() {
        Some(u) if u.rolling_back => Err(Refusal::RollbackUnfinished {
            to: release(&u.from_profile, &u.from_version),
        }),
        _ => match unfinished {
            Some(u)
                if u.to_profile == wanted.profile && u.to_version == wanted.openyurt_version =>
            {
                Ok(Start {
                    from: release(&u.from_profile, &u.from_version),
                    to: wanted,
                    recorded,
                    resuming: true,
                    from_options: u.from_options.clone(),
                    rollback: None,
                })
            }
            Some(u) => Err(Refusal::UpgradeUnfinished {
                to: release(&u.to_profile, &u.to_version),
            }),
            None => Ok(Start {
                from: here,
                to: wanted,
                recorded,
                resuming: false,
                from_options: journal.options.clone(),
                rollback: None,
            }),
        },
    }
}

/// The profile an upgrade goes to: `--profile`, or with `--rollback` the one the journal's
/// upgrade came from (none: that refusal).
pub fn target_profile(journal: &Journal, opts: &UpgradeOptions) -> Result<String, Refusal> {
    if !opts.rollback {
        return Ok(opts.profile.clone());
    }
    journal
        .upgrade
        .as_ref()
        .map(|u| u.from_profile.clone())
        .ok_or(Refusal::NothingToRollBack)
}

fn release(profile: &str, version: &str) -> Release {
    Release {
        profile: profile.to_owned(),
        openyurt_version: version.to_owned(),
    }
}

/// The options the target runs with: the conversion's, on the target's profile and release,
/// with this run's image flags (a recorded `--image-repository` and pull Secrets stay unless
/// given again; per-component `--image`s named the old release's images and do not carry
/// over), and only the optional features the target has.
pub fn target_options(
    recorded: &ConvertOptions,
    opts: &UpgradeOptions,
    to: &Profile,
) -> ConvertOptions {
    let mut o = recorded.clone();
    o.profile = to.name.clone();
    o.openyurt_version = opts.openyurt_version.clone();
    o.servant_image = opts.servant_image.clone();
    if opts.image_repository.is_some() {
        o.image_repository = opts.image_repository.clone();
    }
    o.images = opts.images.clone();
    if !opts.image_pull_secrets.is_empty() {
        o.image_pull_secrets = opts.image_pull_secrets.clone();
    }
    let flags = to.flags();
    o.features.retain(|f| flags.contains(&f.as_str()));
    if to.node_pools.is_none() {
        o.nodepool = None;
        o.cloud_nodepool = None;
        o.nodepools_from_label = None;
    }
    o.job_timeout = opts.job_timeout;
    o.force_conflicts = opts.force_conflicts;
    o.skip_phases = BTreeSet::new();
    o.ignore_preflight_errors = opts.ignore_preflight_errors.clone();
    o
}

/// The options a rollback returns to: those the upgrade started from, with this run's node Job
/// image, timeout and preflight choices.
pub fn rollback_options(before: &ConvertOptions, opts: &UpgradeOptions) -> ConvertOptions {
    let mut o = before.clone();
    if opts.servant_image.is_some() {
        o.servant_image = opts.servant_image.clone();
    }
    if !opts.image_pull_secrets.is_empty() {
        o.image_pull_secrets = opts.image_pull_secrets.clone();
    }
    o.job_timeout = opts.job_timeout;
    o.force_conflicts = opts.force_conflicts;
    o.skip_phases = BTreeSet::new();
    o.ignore_preflight_errors = opts.ignore_preflight_errors.clone();
    o
}

/// The convert plan of `profile` for the nodes an upgrade moves: what its components are
/// rendered from (every node, in its NodePool when the profile has them) and its node Jobs
/// are built from.
pub fn component_plan(
    nodes: &[UpgradeNode],
    opts: &ConvertOptions,
    profile: &Profile,
    server_version: &str,
) -> Plan {
    let autonomous = |n: &UpgradeNode| {
        n.role == Role::Edge
            && (opts.autonomous_nodes.is_empty() || opts.autonomous_nodes.contains(&n.name))
    };
    Plan {
        profile: profile.name.clone(),
        server_version: server_version.to_owned(),
        nodes: nodes
            .iter()
            .map(|n| NodeDecision {
                name: n.name.clone(),
                role: n.role,
                action: NodeAction::Convert,
                autonomous: autonomous(n),
                pool: n.pool.clone().filter(|_| profile.node_pools.is_some()),
            })
            .collect(),
        kcm_nodes: Vec::new(),
        warnings: Vec::new(),
        phases: Vec::new(),
        settings: ConvertSettings::resolve(opts, profile),
    }
}

/// What an upgrade decided from the snapshot, before anything is rendered or changed.
#[derive(Clone, Debug)]
pub struct Decision {
    pub start: Start,
    pub route: super::Route,
    pub from: Profile,
    /// The profile the upgrade goes to (`--profile`, or the one a rollback returns to).
    pub to: Profile,
    /// Every node the upgrade moves, with its role and target NodePool.
    pub nodes: Vec<UpgradeNode>,
    /// Nodes an earlier run of this upgrade moved already.
    pub moved: BTreeSet<String>,
    /// Nodes this run moves: not moved yet, and selected by `-l` when it is given.
    pub to_move: BTreeSet<String>,
    /// The same, in the order they move; and the nodes `--partition`, `--canary` and
    /// `--pause` leave where they are.
    pub order: super::NodeOrder,
    /// The options the target runs with.
    pub target_options: ConvertOptions,
    pub kcm: Option<super::KcmChange>,
    /// The control-plane nodes whose kube-controller-manager changes.
    pub kcm_nodes: Vec<String>,
    /// Nodes without the target's NodePool label.
    pub unlabelled: Vec<String>,
}

/// What `yurtctl upgrade` does with a cluster.
#[derive(Clone, Debug)]
pub enum Upgrade {
    /// The cluster runs the target already, and no upgrade is unfinished.
    AlreadyThere(Release),
    Move(Box<Decision>),
}

/// Decides an upgrade from the snapshot and the options: where it starts, the route, the
/// preflight refusals (all of them, each with what to do), the nodes it moves and what
/// changes on the control plane. `load` loads a profile by name.
pub fn decide(
    snap: &crate::cluster::snapshot::ClusterSnapshot,
    opts: &UpgradeOptions,
    load: &dyn Fn(&str) -> Option<Profile>,
) -> Result<Upgrade, crate::plan::PlanError> {
    use crate::plan::{Finding, PlanError};
    let refused = |r: Vec<Refusal>| {
        PlanError::Preflight(
            r.into_iter()
                .map(|r| Finding::new(r.check(), r.to_string()))
                .collect(),
        )
    };
    let Some(journal) = &snap.journal else {
        return Err(refused(vec![Refusal::NotConverted]));
    };
    let to_name = target_profile(journal, opts).map_err(|r| refused(vec![r]))?;
    let to = &load(&to_name).ok_or_else(|| {
        refused(vec![Refusal::Journal(format!(
            "profile {to_name} is not one this yurtctl has"
        ))])
    })?;
    let start = start(journal, opts, to, load).map_err(|r| refused(vec![r]))?;
    let from = load(&start.from.profile).ok_or_else(|| {
        refused(vec![Refusal::Journal(format!(
            "the upgrade started from profile {}, which this yurtctl does not have",
            start.from.profile
        ))])
    })?;
    let route = match start.rollback {
        Some(_) => Ok(super::Route {
            from: start.from.clone(),
            to: start.to.clone(),
            kind: super::RouteKind::Rollback,
        }),
        None => super::route(
            &from,
            Some(&start.from.openyurt_version),
            to,
            Some(&start.to.openyurt_version),
        ),
    };
    if let Err(super::NoRoute::AlreadyThere(r)) = &route
        && !start.resuming
    {
        return Ok(Upgrade::AlreadyThere(r.clone()));
    }
    let target_options = match ConvertOptions::from_journal(&start.from_options) {
        // start() refused a rollback without them
        Some(before) if start.rollback.is_some() => rollback_options(&before, opts),
        _ => target_options(&start.recorded, opts, to),
    };
    crate::plan::check_options(&target_options, to)?;
    let nodes = super::preflight(
        snap,
        &from,
        to,
        &route,
        &target_options,
        &opts.ignore_preflight_errors,
    )
    .map_err(refused)?;
    let route = route.map_err(|r| refused(vec![Refusal::Route(r)]))?;
    let before = ConvertSettings::resolve(&start.recorded, &from).disable_nodelifecycle;
    let after = ConvertSettings::resolve(&target_options, to).disable_nodelifecycle;
    let kcm = super::KcmChange::between(before, after);
    let kcm_done = |n: &str| {
        journal
            .phase(n, crate::plan::KCM)
            .is_some_and(|s| s.state == crate::cluster::journal::PhaseState::Done)
    };
    let kcm_nodes = snap
        .nodes
        .iter()
        .filter(|n| match kcm {
            Some(super::KcmChange::Enable) => kcm_done(&n.name),
            Some(super::KcmChange::Disable) => n.kcm_static_pod && !kcm_done(&n.name),
            None => false,
        })
        .map(|n| n.name.clone())
        .collect();
    let labels: std::collections::HashMap<&str, &BTreeMap<String, String>> = snap
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), &n.labels))
        .collect();
    let unlabelled = match &to.node_pools {
        None => Vec::new(),
        Some(decl) => nodes
            .iter()
            .filter(|u| {
                labels.get(u.name.as_str()).and_then(|l| l.get(&decl.label)) != u.pool.as_ref()
            })
            .map(|u| u.name.clone())
            .collect(),
    };
    let moved = start.moved(journal, nodes.iter().map(|n| n.name.as_str()));
    let targets: Vec<&UpgradeNode> = nodes
        .iter()
        .filter(|u| {
            opts.selector
                .as_ref()
                .is_none_or(|sel| labels.get(u.name.as_str()).is_some_and(|l| sel.matches(l)))
        })
        .collect();
    if let Some(sel) = &opts.selector
        && !targets.iter().any(|u| !moved.contains(&u.name))
        && nodes.iter().any(|u| !moved.contains(&u.name))
    {
        return Err(refused(vec![Refusal::NoneSelected(sel.to_string())]));
    }
    let order = super::node_order(
        &targets,
        &moved,
        &|n| labels.get(n).copied(),
        &opts.rollout,
        opts.pause,
    );
    let to_move = order.order.iter().cloned().collect();
    Ok(Upgrade::Move(Box::new(Decision {
        moved,
        to_move,
        order,
        start,
        route,
        from,
        to: to.clone(),
        nodes,
        target_options,
        kcm,
        kcm_nodes,
        unlabelled,
    })))
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
