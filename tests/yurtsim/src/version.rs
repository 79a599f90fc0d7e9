//! Versions as upstream tags spell them (`v1.33.1`, `v0.6.1`), parsed once and compared as
//! numbers: `v1.10.0` is newer than `v1.9.3`, and "from v1.7.0 on" is one comparison, not a
//! string match that a new tag silently misses.
//!
//! std only: `nodes/layout/` uses it, and the fuzz targets compile both in.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// `v1.33.1`, `1.33.1` or `v1.33` (patch 0); a pre-release or build suffix
    /// (`v1.34.0-rc.1`, `v1.33.1+k3s1`) is ignored. `None` when it is not a version.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let core = s.split(['-', '+']).next().unwrap_or(s);
        let mut parts = core.split('.');
        let number = |p: Option<&str>| p?.parse::<u32>().ok();
        let major = number(parts.next())?;
        let minor = number(parts.next())?;
        let patch = match parts.next() {
            None => 0,
            p => number(p)?,
        };
        parts
            .next()
            .is_none()
            .then_some(Version::new(major, minor, patch))
    }

    /// A cluster's or node's Kubernetes version (`--kubernetes-version`). One that does not
    /// parse counts as v1.33.0, the sim's default, as it always has.
    pub fn kubernetes(s: &str) -> Version {
        Version::parse(s).unwrap_or(Version::new(1, 33, 0))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::Version;

    #[test]
    fn tags_parse_and_compare_as_numbers() {
        assert_eq!(Version::parse("v1.33.1"), Some(Version::new(1, 33, 1)));
        assert_eq!(Version::parse("1.7.0"), Some(Version::new(1, 7, 0)));
        assert_eq!(Version::parse("v1.33"), Some(Version::new(1, 33, 0)));
        assert_eq!(Version::parse("v1.34.0-rc.1"), Some(Version::new(1, 34, 0)));
        assert_eq!(Version::parse("v1.33.1+k3s1"), Some(Version::new(1, 33, 1)));
        for bad in ["", "v", "latest", "v1", "v1.x.0", "v1.2.3.4", "v-1.2.3"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert!(Version::parse("v1.10.0") > Version::parse("v1.9.3"));
        assert!(Version::parse("v1.6.1") < Version::parse("v1.7.0"));
        assert_eq!(Version::new(0, 6, 1).to_string(), "v0.6.1");
    }

    #[test]
    fn an_unparsed_kubernetes_version_is_the_default() {
        assert_eq!(Version::kubernetes("v1.21.14"), Version::new(1, 21, 14));
        assert_eq!(Version::kubernetes("nonsense"), Version::new(1, 33, 0));
    }
}
