//! Value parsers shared by the subcommands (validation at the edge: a bad value is a usage
//! error naming the value and saying what is valid, before any API call). PURE.

use crate::selector::{Selector, is_dns1123_label, is_dns1123_subdomain};

/// A node name: a DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, at most 253
/// characters, alphanumeric at both ends of every label).
pub fn node_name(s: &str) -> Result<String, String> {
    dns1123_subdomain(s, "node name")
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
pub fn label_selector(s: &str) -> Result<Selector, String> {
    Selector::parse(s).map_err(|e| e.to_string())
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

/// A container image reference in the docker reference grammar:
/// `[host[:port]/]path[:tag][@sha256:<64 hex>]`. Path components are lower-case
/// alphanumerics joined by `.`, `_`, `__` or dashes; the first component is a registry host
/// when it contains `.` or `:` or is `localhost` (stricter than docker, which also takes an
/// upper-case first component for a host: `Openyurt/yurthub` is far more likely a typo). A
/// missing tag is fine (the runtime uses `latest`).
pub fn image_ref(s: &str) -> Result<String, String> {
    image_error(s)
        .map(|why| {
            Err(format!(
                "{s:?} is not a valid image reference: {why} (expected [REGISTRY[:PORT]/]PATH[:TAG][@sha256:DIGEST], e.g. docker.io/openyurt/yurthub:v1.6.0)"
            ))
        })
        .unwrap_or_else(|| Ok(s.to_owned()))
}

fn image_error(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("it is empty".into());
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!("it contains {c:?}"));
    }
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    if let Some(d) = digest {
        let hex = d.strip_prefix("sha256:").unwrap_or_default();
        let ok = hex.len() == 64 && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        if !ok {
            return Some(format!(
                "digest {d:?} must be sha256: followed by 64 lower-case hex digits"
            ));
        }
    }
    // a tag follows the last ':' after the last '/' (a ':' before it is a registry port)
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(t) = tag {
        let b = t.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 128
            && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
        if !ok {
            return Some(format!(
                "tag {t:?} must be 1-128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"
            ));
        }
    }
    if name.len() > 255 {
        return Some("the name is longer than 255 characters".into());
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 {
        let first = parts[0];
        if first.contains(['.', ':']) || first == "localhost" {
            if let Some(why) = registry_error(first) {
                return Some(why);
            }
            parts.remove(0);
        }
    }
    for p in parts {
        if !path_component(p) {
            return Some(format!(
                "path component {p:?} must be lower-case letters and digits, separated by '.', '_', '__' or '-'"
            ));
        }
    }
    None
}

fn registry_error(host: &str) -> Option<String> {
    let (name, port) = match host.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host, None),
    };
    if let Some(p) = port
        && (p.is_empty() || p.len() > 5 || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return Some(format!("registry port {p:?} must be a number"));
    }
    let ok = !name.is_empty()
        && name.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        });
    (!ok).then(|| format!("registry host {name:?} is not a valid host name"))
}

/// `[a-z0-9]+ (([._]|__|-+) [a-z0-9]+)*`
fn path_component(p: &str) -> bool {
    let b = p.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &p[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|c| c == b'-');
        if !ok {
            return false;
        }
    }
    true
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
    fn image_references() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let ok = [
            "busybox".to_string(),
            "busybox:1.36".into(),
            "openyurt/yurthub:v1.6.0".into(),
            "docker.io/openyurt/yurthub:v1.6.0".into(),
            "registry.example.com:5000/team/app_x__y.z-w:1.0-rc.1".into(),
            "localhost/app".into(),
            "localhost:5000/app:latest".into(),
            "Registry.Example.com/app".into(),
            format!("app@{digest}"),
            format!("quay.io/app:v1@{digest}"),
            "a/b/c/d:_tag".into(),
            "a---b".into(),
        ];
        for s in &ok {
            assert_eq!(image_ref(s).as_deref(), Ok(s.as_str()), "{s}");
        }
        // (input, part of the reason)
        let bad = [
            ("", "empty"),
            ("app: 1", "contains ' '"),
            ("Openyurt/yurthub", "path component \"Openyurt\""),
            ("openyurt/YurtHub:v1", "path component \"YurtHub\""),
            ("app:", "tag \"\""),
            ("app:-x", "tag \"-x\""),
            ("app:v1:v2", "path component \"app:v1\""),
            ("app@sha256:abc", "digest"),
            ("app@md5:abc", "digest"),
            ("registry:port/app", "registry port \"port\""),
            ("-reg.io/app", "registry host \"-reg.io\""),
            ("app/", "path component \"\""),
            ("/app", "path component \"\""),
            ("a..b", "path component \"a..b\""),
            ("a_.b", "path component"),
            ("app\n", "contains '\\n'"),
        ];
        for (s, why) in bad {
            let e = image_ref(s).expect_err(s);
            assert!(e.contains(&format!("{s:?}")), "{e}");
            assert!(e.contains(why), "{s:?}: {e}");
            assert!(e.contains("expected [REGISTRY"), "{e}");
        }
        assert!(image_ref(&format!("{}:1", "a".repeat(256))).is_err());
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
        assert!(e.contains("\"a in ()\""), "{e}");
        assert_eq!(label_selector("a=b").unwrap().to_string(), "a=b");
    }
}
