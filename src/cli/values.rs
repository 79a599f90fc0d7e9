//! Value parsers shared by the subcommands (validation at the edge: a bad value is a usage
//! error naming the value and saying what is valid, before any API call). PURE.

use crate::cluster::Concurrency;
use crate::selector::{Selector, is_dns1123_label, is_dns1123_subdomain};

/// A node name: a DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, at most 253
/// characters, alphanumeric at both ends of every label).
pub fn node_name(s: &str) -> Result<String, String> {
    dns1123_subdomain(s, "node name")
}

/// A Secret's name: a DNS-1123 subdomain.
pub fn secret_name(s: &str) -> Result<String, String> {
    dns1123_subdomain(s, "Secret name")
}

/// A NodePool name: a DNS-1123 subdomain, like every cluster-scoped object's.
pub fn nodepool_name(s: &str) -> Result<String, String> {
    dns1123_subdomain(s, "NodePool name")
}

fn dns1123_subdomain(s: &str, what: &str) -> Result<String, String> {
    if is_dns1123_subdomain(s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a valid {what} (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.')"
        ))
    }
}

/// A whole number of at least 1.
pub fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a positive integer")),
    }
}

/// `--concurrency`: a positive integer, checked once here into a type that cannot be 0.
pub fn concurrency(s: &str) -> Result<Concurrency, String> {
    positive(s)
        .and_then(|n| Concurrency::new(n).ok_or_else(|| format!("{s:?} is not a positive integer")))
}

/// `--qps`: requests per second, a finite number of at least 0 (0 turns the limit off).
pub fn qps(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if q.is_finite() && q >= 0.0 => Ok(q),
        _ => Err(format!(
            "{s:?} is not a valid rate: requests per second, a number of at least 0 (0: no limit)"
        )),
    }
}

/// A DNS-1123 label (object names like Services, namespaces): lower-case letters, digits and
/// `-`, at most 63 characters, alphanumeric at both ends.
pub fn dns1123_label(s: &str) -> Result<String, String> {
    if is_dns1123_label(s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a valid name (a DNS-1123 label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)"
        ))
    }
}

/// A Kubernetes label key (`[prefix/]name`).
pub fn label_key(s: &str) -> Result<String, String> {
    crate::selector::label_key(s).map(|()| s.to_owned())
}

/// A Kubernetes label value (empty, or at most 63 alphanumerics, `-`, `_`, `.`).
pub fn label_value(s: &str) -> Result<String, String> {
    crate::selector::label_value(s).map(|()| s.to_owned())
}

/// A label selector in kubectl's syntax (see [`crate::selector`]).
/// A `--profile` this yurtctl has.
pub fn known_profile(name: &str) -> Result<(), String> {
    let names = crate::render::Profile::names();
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    Err(format!(
        "unknown profile {name:?}; profiles are {}",
        names.join(", ")
    ))
}

/// `-l/--selector` of the nodes a command acts on: kubectl's label-selector syntax; an empty
/// one would select every node, which is what leaving the flag out means.
pub fn node_selector(s: &str) -> Result<Selector, String> {
    if s.trim().is_empty() {
        return Err("an empty selector; leave -l out to select every node".into());
    }
    label_selector(s)
}

pub fn label_selector(s: &str) -> Result<Selector, String> {
    Selector::parse(s).map_err(|e| {
        format!("{e}; expected kubectl's syntax, e.g. 'zone=edge,tier in (a,b),!legacy'")
    })
}

/// A ConfigMap key, also used as a manifest file name: 1-253 characters of letters, digits,
/// `-`, `_` and `.`; not `.` or `..`, no `..` anywhere, no `/`.
pub fn config_key(s: &str) -> Result<String, String> {
    let why = if s.is_empty() {
        Some("it is empty")
    } else if s.len() > 253 {
        Some("it is longer than 253 characters")
    } else if s.contains('/') {
        Some("it contains '/' (a file name, not a path)")
    } else if s.contains("..") || s == "." {
        Some("it contains '..' or is '.'")
    } else if !s
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        Some("only letters, digits, '-', '_' and '.' are allowed")
    } else {
        None
    };
    match why {
        None => Ok(s.to_owned()),
        Some(w) => Err(format!(
            "{s:?} is not a valid ConfigMap key or manifest name: {w}"
        )),
    }
}

/// A container image reference in the docker reference grammar ([`crate::reference`]).
pub fn image_ref(s: &str) -> Result<String, String> {
    crate::reference::check_image(s)
        .map(|()| s.to_owned())
        .map_err(|e| e.to_string())
}

/// A revision number of a static pod: revisions are numbered from 1.
pub fn revision(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "{s:?} is not a revision number (revisions are numbered 1, 2, …; see `yurtctl staticpod status NAME -o yaml`)"
        )),
    }
}

/// `--max-unavailable`: an integer or a percentage.
pub fn max_unavailable(s: &str) -> Result<crate::rollout::MaxUnavailable, String> {
    s.parse()
        .map_err(|e: crate::rollout::BudgetParseError| e.to_string())
}

/// `--partition`: an integer or a percentage.
pub fn partition(s: &str) -> Result<crate::rollout::Partition, String> {
    s.parse()
        .map_err(|e: crate::rollout::BudgetParseError| e.to_string())
}

/// `--priority LABEL=VALUE:WEIGHT`.
pub fn priority(s: &str) -> Result<crate::rollout::PriorityTerm, String> {
    s.parse()
        .map_err(|e: crate::rollout::PriorityParseError| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names() {
        for ok in ["a", "node-1", "n1.example.com", &"a".repeat(63)] {
            assert!(node_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Node", "-a", "a-", "a..b", "a_b", &"a".repeat(64)] {
            assert!(node_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn image_references_use_the_one_grammar() {
        assert_eq!(
            image_ref("openyurt/yurthub:v1.6.0").as_deref(),
            Ok("openyurt/yurthub:v1.6.0")
        );
        let e = image_ref("NGINX::").unwrap_err();
        assert!(
            e.contains("\"NGINX::\" is not a valid image reference"),
            "{e}"
        );
    }

    #[test]
    fn rates() {
        for (s, want) in [("0", Some(0.0)), ("200", Some(200.0)), ("0.5", Some(0.5))] {
            assert_eq!(qps(s).ok(), want, "{s}");
        }
        for bad in ["-1", "NaN", "inf", "-0.1", "fast", ""] {
            let e = qps(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?} is not a valid rate")), "{e}");
        }
    }

    #[test]
    fn revisions() {
        for (s, want) in [
            ("1", Some(1)),
            ("42", Some(42)),
            ("0", None),
            ("-1", None),
            ("latest", None),
            ("", None),
        ] {
            assert_eq!(revision(s).ok(), want, "{s}");
        }
        assert!(revision("0").unwrap_err().contains("numbered 1, 2"));
    }

    #[test]
    fn config_keys_and_manifest_names() {
        for ok in [
            "yurt-hub.yaml",
            "kube_apiserver",
            "A.b-c_d",
            &"a".repeat(253),
        ] {
            assert!(config_key(ok).is_ok(), "{ok}");
        }
        // (input, part of the reason)
        for (bad, why) in [
            ("", "empty"),
            ("a/b", "'/'"),
            ("..", "'..'"),
            (".", "'..'"),
            ("a..yaml", "'..'"),
            ("a b", "only letters"),
            ("ä", "only letters"),
            (&"a".repeat(254), "253"),
        ] {
            let e = config_key(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")) && e.contains(why), "{e}");
        }
    }

    #[test]
    fn labels_and_names() {
        assert!(label_key("openyurt.io/is-edge-worker").is_ok());
        assert!(label_key("a_b.C").is_ok());
        for bad in ["", "/a", "a/", "A.io/b", "a/b/c", "-a", &"a".repeat(64)] {
            let e = label_key(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        assert!(label_value("").is_ok());
        assert!(label_value("True").is_ok());
        for bad in ["a b", "-a", "a/b", &"a".repeat(64)] {
            assert!(label_value(bad).is_err(), "{bad}");
        }
        assert!(dns1123_label("kube-system").is_ok());
        for bad in ["Kube", "a.b", "", "-a"] {
            let e = dns1123_label(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        let e = label_selector("a in ()").unwrap_err();
        assert!(
            e.contains("\"a in ()\"") && e.contains("e.g. 'zone=edge"),
            "{e}"
        );
        assert_eq!(label_selector("a=b").unwrap().to_string(), "a=b");
    }
}
