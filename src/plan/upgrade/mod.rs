//! Upgrade's planning: what moving a converted cluster to a newer profile, or to a newer
//! OpenYurt patch release of its profile, changes — the route, the objects, the CRD versions,
//! the files on each node and kube-controller-manager's flags. PURE: from the two profiles,
//! their rendered objects and what the journal recorded; nothing here reads the cluster.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::render::Profile;

mod nodes;
mod objects;
mod order;
mod phases;
mod preflight;
mod start;

pub use nodes::*;
pub use objects::*;
pub use order::*;
pub use phases::*;
pub use preflight::*;
pub use start::*;

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
    /// `--rollback`: back to the release the last upgrade came from.
    Rollback,
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

#[cfg(test)]
mod tests;
