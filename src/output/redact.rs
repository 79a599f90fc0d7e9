//! Secrets taken out of text a bug report carries (`diagnose --collect`): bootstrap tokens,
//! ServiceAccount tokens (JWTs), private keys, and the values of credential fields of
//! kubeconfigs and JSON. PURE.

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Fields whose value is a credential (kubeconfig YAML `key: value` or JSON `"key": "value"`).
const SECRET_FIELDS: [&str; 7] = [
    "token",
    "client-key-data",
    "password",
    "token-secret",
    "join-token",
    "bootstrap-token",
    "client-key",
];

/// `text` with every secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    let text = private_keys(text);
    let text: Vec<String> = text.lines().map(redact_line).collect();
    let mut out = text.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// PEM private key blocks, whole.
fn private_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let head = &rest[start..];
        let is_key = head
            .lines()
            .next()
            .is_some_and(|l| l.contains("PRIVATE KEY-----"));
        let end = head.find("-----END ").and_then(|e| {
            head[e..]
                .find("-----\n")
                .map(|x| e + x + 6)
                .or_else(|| head[e..].rfind("-----").map(|x| e + x + 5))
        });
        match (is_key, end) {
            (true, Some(end)) => {
                out.push_str(&rest[..start]);
                out.push_str(REDACTED);
                if head[..end].ends_with('\n') {
                    out.push('\n');
                }
                rest = &head[end..];
            }
            _ => {
                out.push_str(&rest[..start + 11]);
                rest = &rest[start + 11..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn redact_line(line: &str) -> String {
    let mut line = field_values(line);
    line = replace_runs(&line, is_bootstrap_token);
    replace_runs(&line, is_jwt)
}

/// `key: value` and `"key": "value"` of a credential field.
fn field_values(line: &str) -> String {
    let mut out = line.to_owned();
    for key in SECRET_FIELDS {
        for pattern in [format!("\"{key}\": \""), format!("\"{key}\":\"")] {
            let mut from = 0;
            while let Some(i) = out[from..].find(&pattern) {
                let start = from + i + pattern.len();
                let end = out[start..].find('"').map_or(out.len(), |e| start + e);
                if end > start && &out[start..end] != REDACTED {
                    out.replace_range(start..end, REDACTED);
                }
                from = start + REDACTED.len().min(out.len() - start);
            }
        }
        let trimmed = out.trim_start().trim_start_matches("- ");
        if let Some(v) = trimmed.strip_prefix(&format!("{key}:")) {
            let v = v.trim();
            if !v.is_empty() && v != REDACTED && !v.starts_with('{') && !v.starts_with('[') {
                let at = out.rfind(v).unwrap_or(out.len());
                out.replace_range(at..at + v.len(), REDACTED);
            }
        }
    }
    out
}

/// Every maximal run of token characters that `secret` says is one, replaced.
fn replace_runs(line: &str, secret: fn(&str) -> bool) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    let mut out = String::with_capacity(line.len());
    let mut run = String::new();
    for c in line.chars().chain(std::iter::once('\u{0}')) {
        if token_char(c) {
            run.push(c);
            continue;
        }
        if secret(&run) {
            out.push_str(REDACTED);
        } else {
            out.push_str(&run);
        }
        run.clear();
        if c != '\u{0}' {
            out.push(c);
        }
    }
    out
}

/// A bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}` (kubeadm's `BootstrapTokenPattern`).
fn is_bootstrap_token(s: &str) -> bool {
    let ok = |p: &str, n: usize| {
        p.len() == n
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    s.split_once('.')
        .is_some_and(|(id, secret)| ok(id, 6) && ok(secret, 16))
}

/// A JWT (a ServiceAccount token): three base64url parts, the first a JSON header (`eyJ`).
fn is_jwt(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts.iter().all(|p| {
            p.len() >= 8
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_secret_is_taken_out_and_the_rest_kept() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\n";
        let cert = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n";
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlX2J5dGVz";
        let table = [
            (
                "I1129 token abcdef.0123456789abcdef used",
                "I1129 token <redacted> used",
            ),
            (
                "    token: abcdef.0123456789abcdef",
                "    token: <redacted>",
            ),
            (
                "    client-key-data: LS0tLS1CRUdJTg==",
                "    client-key-data: <redacted>",
            ),
            (
                r#"{"token":"s3cr3t","user":"me"}"#,
                r#"{"token":"<redacted>","user":"me"}"#,
            ),
            (
                r#"{"password": "hunter2"}"#,
                r#"{"password": "<redacted>"}"#,
            ),
            ("Authorization: Bearer ", "Authorization: Bearer "),
            (
                "node worker-1 is Ready (v1.34.2)",
                "node worker-1 is Ready (v1.34.2)",
            ),
            (
                "kube-system/yurt-hub-worker-1.18a2f0c3d4e5f6a7",
                "kube-system/yurt-hub-worker-1.18a2f0c3d4e5f6a7",
            ),
        ];
        for (input, want) in table {
            assert_eq!(redact(input), format!("{want}\n"), "{input}");
        }
        let bearer = format!("Authorization: Bearer {jwt}");
        assert_eq!(redact(&bearer), "Authorization: Bearer <redacted>\n");
        let pem = format!("before\n{key}{cert}after");
        let got = redact(&pem);
        assert!(!got.contains("MIIEowIBAAKCAQEA"), "{got}");
        assert!(
            got.contains("<redacted>\n-----BEGIN CERTIFICATE-----\nMIIC"),
            "{got}"
        );
        assert!(
            got.starts_with("before\n") && got.ends_with("after\n"),
            "{got}"
        );
    }
}
