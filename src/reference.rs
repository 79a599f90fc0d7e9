//! The one check of container image references, every flag and file that names an image goes
//! through (`--image`, `--servant-image`, `staticpod upgrade --image|-f`). PURE.
//!
//! The grammar is docker's (github.com/distribution/reference, `reference.go` and
//! `regexp.go`, v0.6.0):
//!
//! ```text
//! reference        := name [ ":" tag ] [ "@" digest ]
//! name             := [domain '/'] path-component ['/' path-component]*   (at most 255)
//! domain           := (domain-name | '[' ipv6 ']') [':' port-number]
//! domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
//! path-component   := [a-z0-9]+ ([_.] | __ | [-]+ [a-z0-9]+)*
//! tag              := [\w][\w.-]{0,127}
//! digest           := algorithm ':' hex
//! ```
//!
//! A digest must also pass go-digest's `Validate` (which `reference.Parse` calls): only
//! `sha256`, `sha384` and `sha512`, with exactly 64, 96 or 128 lower-case hex digits.
//!
//! The first path component is a registry when it contains `.` or `:` or is `localhost`
//! (`normalize.go`, `splitDockerDomain`). Docker also takes an upper-case first component for a
//! registry; here it is refused, because `Openyurt/yurthub` is far more likely a typo.

/// Why a string is not an image reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a valid image reference: {reason} (expected [REGISTRY[:PORT]/]PATH[:TAG][@sha256:DIGEST], e.g. docker.io/openyurt/yurthub:v1.6.0)"
)]
pub struct ImageRefError {
    pub input: String,
    pub reason: String,
}

/// Checks `s` against the reference grammar.
pub fn check_image(s: &str) -> Result<(), ImageRefError> {
    match reason(s) {
        None => Ok(()),
        Some(reason) => Err(ImageRefError {
            input: s.to_owned(),
            reason,
        }),
    }
}

/// The digest algorithms go-digest validates, with their hex lengths.
const DIGESTS: [(&str, usize); 3] = [("sha256", 64), ("sha384", 96), ("sha512", 128)];

fn reason(s: &str) -> Option<String> {
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
        let ok = d.split_once(':').is_some_and(|(algo, hex)| {
            DIGESTS.iter().any(|(a, n)| {
                *a == algo
                    && hex.len() == *n
                    && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            })
        });
        if !ok {
            return Some(format!(
                "digest {d:?} must be sha256: followed by 64 lower-case hex digits (or sha384:/96, sha512:/128)"
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
        let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
        let ok = !b.is_empty()
            && b.len() <= 128
            && word(&b[0])
            && b.iter().all(|c| word(c) || matches!(c, b'.' | b'-'));
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
            if let Some(why) = registry_reason(first) {
                return Some(why);
            }
            parts.remove(0);
        }
    }
    parts.into_iter().find(|p| !path_component(p)).map(|p| {
        format!(
            "path component {p:?} must be lower-case letters and digits, separated by '.', '_', '__' or '-'"
        )
    })
}

fn registry_reason(domain: &str) -> Option<String> {
    // a bracketed IPv6 address holds ':' itself; the port follows the ']'
    let (host, port) = match domain.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, tail)) => {
                let ok =
                    !addr.is_empty() && addr.bytes().all(|c| c.is_ascii_hexdigit() || c == b':');
                if !ok {
                    return Some(format!("registry host [{addr}] is not an IPv6 address"));
                }
                match tail {
                    "" => (None, None),
                    t => match t.strip_prefix(':') {
                        Some(p) => (None, Some(p)),
                        None => {
                            return Some(format!("registry {domain:?}: expected :PORT after ']'"));
                        }
                    },
                }
            }
            None => return Some(format!("registry {domain:?} lacks its closing ']'")),
        },
        None => match domain.rsplit_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(domain), None),
        },
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return Some(format!("registry port {p:?} must be a number"));
    }
    let component = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    };
    match host {
        Some(h) if !h.split('.').all(component) => {
            Some(format!("registry host {h:?} is not a valid host name"))
        }
        _ => None,
    }
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

/// `image` in `repository`, as kubeadm's `--image-repository` names its images
/// (`<repository>/<name>:<tag>`; kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/images
/// `GetGenericImage`): everything before the image's last path component is replaced, so
/// `openyurt/yurthub:v1.7.0` in `registry.example.com/mirror` is
/// `registry.example.com/mirror/yurthub:v1.7.0`; tag and digest are kept.
pub fn in_repository(image: &str, repository: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    format!("{repository}/{last}")
}

/// Checks a value of `--image-repository`: a registry and optional path, without tag, digest
/// or trailing `/`, such that the images moved into it are references.
pub fn check_repository(repository: &str) -> Result<(), String> {
    let why = if repository.is_empty() {
        Some("it is empty".to_owned())
    } else if repository.contains('@') {
        Some("a repository has no digest".to_owned())
    } else if repository.contains("://") {
        Some("a repository has no scheme (leave out https://)".to_owned())
    } else if repository.ends_with('/') {
        Some("it ends with '/'".to_owned())
    } else {
        reason(&format!("{repository}/name:tag"))
    };
    match why {
        None => Ok(()),
        Some(why) => Err(format!(
            "{repository:?} is not an image repository: {why} (expected REGISTRY[:PORT][/PATH] \
             without a tag, e.g. registry.example.com/openyurt)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_docker_accepts() {
        let sha = |n| "a".repeat(n);
        let ok = [
            "busybox".to_string(),
            "busybox:1.36".into(),
            "openyurt/yurthub:v1.6.0".into(),
            "docker.io/openyurt/yurthub:v1.6.0".into(),
            "registry.example.com:5000/team/app_x__y.z-w:1.0-rc.1".into(),
            "localhost/app".into(),
            "localhost:5000/app:latest".into(),
            "Registry.Example.com/app".into(),
            "[::1]:5000/app:v1".into(),
            "[fe80::1]/app".into(),
            "10.0.0.1:5000/app".into(),
            format!("app@sha256:{}", sha(64)),
            format!("quay.io/app:v1@sha256:{}", sha(64)),
            format!("app@sha384:{}", sha(96)),
            format!("app@sha512:{}", sha(128)),
            "a/b/c/d:_tag".into(),
            "a---b".into(),
            format!("app:{}", "t".repeat(128)),
        ];
        for s in &ok {
            assert_eq!(check_image(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn references_docker_refuses_say_why() {
        let long_tag = format!("app:{}", "t".repeat(129));
        let upper_hex = format!("app@sha256:{}", "A".repeat(64));
        let short_sha512 = format!("app@sha512:{}", "a".repeat(64));
        let long_name = format!("{}:1", "a".repeat(256));
        // (input, part of the reason)
        let bad = [
            ("", "empty".to_string()),
            ("app: 1", "contains ' '".into()),
            ("NGINX::", "tag \"\"".into()),
            ("NGINX", "path component \"NGINX\"".into()),
            ("Openyurt/yurthub", "path component \"Openyurt\"".into()),
            ("openyurt/YurtHub:v1", "path component \"YurtHub\"".into()),
            ("app:", "tag \"\"".into()),
            ("app:-x", "tag \"-x\"".into()),
            ("app:.x", "tag \".x\"".into()),
            ("app:v1:v2", "path component \"app:v1\"".into()),
            (&*long_tag, "tag".into()),
            ("app@sha256:abc", "digest \"sha256:abc\"".into()),
            ("app@md5:abc", "digest".into()),
            (&*upper_hex, "lower-case hex".into()),
            (&*short_sha512, "digest".into()),
            ("app@", "digest \"\"".into()),
            ("registry:port/app", "registry port \"port\"".into()),
            ("reg.io:/app", "registry port \"\"".into()),
            ("-reg.io/app", "registry host \"-reg.io\"".into()),
            ("reg..io/app", "registry host \"reg..io\"".into()),
            ("[zz::1]/app", "IPv6".into()),
            ("[::1/app", "closing ']'".into()),
            ("app/", "path component \"\"".into()),
            ("/app", "path component \"\"".into()),
            ("a..b", "path component \"a..b\"".into()),
            ("a_.b", "path component".into()),
            ("a=b", "path component \"a=b\"".into()),
            ("app\n", "contains '\\n'".into()),
            (&*long_name, "255".into()),
        ];
        for (s, why) in &bad {
            let e = check_image(s).expect_err(s).to_string();
            assert!(e.contains(&format!("{s:?}")), "{e}");
            assert!(e.contains(why.as_str()), "{s:?}: {e}");
            assert!(e.contains("expected [REGISTRY"), "{e}");
        }
    }

    #[test]
    fn image_repository_replaces_everything_before_the_name_as_kubeadms_does() {
        let sha = format!("sha256:{}", "a".repeat(64));
        for (image, repo, want) in [
            (
                "openyurt/yurthub:v1.7.0",
                "registry.example.com/mirror",
                "registry.example.com/mirror/yurthub:v1.7.0",
            ),
            (
                "docker.io/openyurt/yurt-manager:v1.7.0",
                "localhost:5000",
                "localhost:5000/yurt-manager:v1.7.0",
            ),
            ("busybox", "r.example.com/a/b", "r.example.com/a/b/busybox"),
            (
                &format!("openyurt/yurthub@{sha}"),
                "r.example.com",
                &format!("r.example.com/yurthub@{sha}"),
            ),
        ] {
            let moved = in_repository(image, repo);
            assert_eq!(moved, want);
            assert_eq!(check_image(&moved), Ok(()), "{moved}");
        }
        for ok in [
            "registry.example.com",
            "localhost:5000",
            "r.example.com/team/openyurt",
            "[::1]:5000/x",
        ] {
            assert_eq!(check_repository(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "it is empty"),
            ("r.example.com/", "ends with '/'"),
            ("https://r.example.com", "no scheme"),
            ("r.example.com/openyurt:v1", "not an image repository"),
            ("r.example.com@sha256:00", "no digest"),
            ("R.example.com/Openyurt", "not an image repository"),
        ] {
            let e = check_repository(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
