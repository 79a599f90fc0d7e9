//! Value parsers shared by the subcommands (validation at the edge: a bad value is a usage
//! error naming the value, before any API call).

/// A node name: a DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, at most 253
/// characters, alphanumeric at both ends of every label).
pub fn node_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a valid node name (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.')"
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
}
