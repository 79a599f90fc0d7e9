//! Label selectors in kubectl's syntax (apimachinery `labels.Parse`): comma-separated
//! requirements `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
//! `key notin (a,b)`. PURE: parse, render, match. An empty selector matches everything.
//!
//! Used to validate `--selector` style flags at the edge (exit 2 before any API call) and to
//! match nodes locally; the rendered form is what we send to the API server.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fmt;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
}

/// A parsed label selector; requirements in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
}

/// Why a selector does not parse: the whole input, where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {input:?}: {message}")]
pub struct SelectorError {
    pub input: String,
    pub message: String,
}

const OPERATORS: &str =
    "key, !key, key=value, key==value, key!=value, key in (v1,v2), key notin (v1,v2)";

impl Selector {
    pub fn parse(input: &str) -> Result<Selector, SelectorError> {
        let err = |message: String| SelectorError {
            input: input.to_owned(),
            message,
        };
        let mut p = Parser {
            s: input.as_bytes(),
            i: 0,
        };
        let mut requirements = Vec::new();
        p.skip_ws();
        if p.at_end() {
            return Ok(Selector { requirements });
        }
        loop {
            requirements.push(p.requirement().map_err(err)?);
            p.skip_ws();
            if p.at_end() {
                break;
            }
            if !p.eat(b',') {
                return Err(err(format!(
                    "expected ',' between requirements at {:?}",
                    p.rest()
                )));
            }
        }
        Ok(Selector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
        })
    }
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

fn set(f: &mut fmt::Formatter<'_>, vs: &BTreeSet<String>) -> fmt::Result {
    // a set holding only the empty value must not render as `()`, which is an error
    if vs.len() == 1 && vs.contains("") {
        return f.write_str("(,)");
    }
    f.write_str("(")?;
    for (i, v) in vs.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        f.write_str(v)?;
    }
    f.write_str(")")
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Exists(k) => f.write_str(k),
            Requirement::NotExists(k) => write!(f, "!{k}"),
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::In(k, vs) => {
                write!(f, "{k} in ")?;
                set(f, vs)
            }
            Requirement::NotIn(k, vs) => {
                write!(f, "{k} notin ")?;
                set(f, vs)
            }
        }
    }
}

impl fmt::Display for Selector {
    /// The canonical form: parses back to the same selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

fn is_word(c: u8) -> bool {
    !matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b'=' | b'!' | b'(' | b')'
    )
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn rest(&self) -> String {
        String::from_utf8_lossy(&self.s[self.i..]).into_owned()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> String {
        let start = self.i;
        while self.peek().is_some_and(is_word) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn key(&mut self) -> Result<String, String> {
        self.skip_ws();
        let k = self.word();
        if k.is_empty() {
            return Err(format!(
                "expected a label key at {:?}; requirements are {OPERATORS}",
                self.rest()
            ));
        }
        label_key(&k)?;
        Ok(k)
    }

    fn value(&mut self) -> Result<String, String> {
        self.skip_ws();
        let v = self.word();
        label_value(&v)?;
        Ok(v)
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        self.skip_ws();
        if self.eat(b'!') {
            return Ok(Requirement::NotExists(self.key()?));
        }
        let key = self.key()?;
        self.skip_ws();
        match self.peek() {
            None | Some(b',') => Ok(Requirement::Exists(key)),
            Some(b'=') => {
                self.i += 1;
                self.eat(b'=');
                Ok(Requirement::Equals(key, self.value()?))
            }
            Some(b'!') => {
                self.i += 1;
                if !self.eat(b'=') {
                    return Err(format!("expected '!=' after key {key:?}"));
                }
                Ok(Requirement::NotEquals(key, self.value()?))
            }
            _ => {
                let op = self.word();
                if op.is_empty() {
                    return Err(format!(
                        "expected an operator after key {key:?} at {:?}; requirements are {OPERATORS}",
                        self.rest()
                    ));
                }
                let negated = match op.as_str() {
                    "in" => false,
                    "notin" => true,
                    _ => {
                        return Err(format!(
                            "unknown operator {op:?} after key {key:?}; requirements are {OPERATORS}"
                        ));
                    }
                };
                let values = self.value_set(&key, &op)?;
                Ok(if negated {
                    Requirement::NotIn(key, values)
                } else {
                    Requirement::In(key, values)
                })
            }
        }
    }

    fn value_set(&mut self, key: &str, op: &str) -> Result<BTreeSet<String>, String> {
        self.skip_ws();
        if !self.eat(b'(') {
            return Err(format!("expected '(' after \"{key} {op}\""));
        }
        self.skip_ws();
        if self.eat(b')') {
            return Err(format!("the values of \"{key} {op}\" cannot be empty"));
        }
        // empty values are allowed inside a non-empty set, as apimachinery does: `in (,a)`
        let mut values = BTreeSet::new();
        loop {
            values.insert(self.value()?);
            self.skip_ws();
            if self.eat(b')') {
                break;
            }
            if !self.eat(b',') {
                return Err(format!(
                    "expected ',' or ')' in the values of {key:?} at {:?}",
                    self.rest()
                ));
            }
        }
        Ok(values)
    }
}

/// What is wrong with a label name segment (`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most
/// 63 characters), said of the segment: "is empty", "contains ' '; …".
fn name_problem(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Some("is empty".into());
    }
    if b.len() > 63 {
        return Some("is longer than 63 characters".into());
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!(
            "contains {c:?}; only letters, digits, '-', '_' and '.' are allowed"
        ));
    }
    if !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return Some("must start and end with a letter or digit".into());
    }
    None
}

/// A DNS-1123 subdomain: lower-case alphanumerics, `-` and `.`, at most 253 characters,
/// alphanumeric at both ends of every dot-separated label.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A DNS-1123 label: lower-case alphanumerics and `-`, at most 63, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A label key: `[prefix/]name`, the prefix a DNS-1123 subdomain, the name at most 63
/// characters of alphanumerics, `-`, `_`, `.`, alphanumeric at both ends.
pub fn label_key(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    match prefix {
        Some("") => return Err(format!("label key {k:?} has an empty prefix")),
        Some(p) if !is_dns1123_subdomain(p) => {
            return Err(format!(
                "label key {k:?}: the prefix {p:?} is not a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253)"
            ));
        }
        _ => {}
    }
    match name_problem(name) {
        Some(why) => Err(format!("label key {k:?}: the label key name {why}")),
        None => Ok(()),
    }
}

/// A label value: empty, or at most 63 characters of alphanumerics, `-`, `_`, `.`,
/// alphanumeric at both ends.
pub fn label_value(v: &str) -> Result<(), String> {
    match name_problem(v) {
        Some(why) if !v.is_empty() => Err(format!("label value {v:?}: the value {why}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator_and_renders_canonically() {
        // (input, canonical form)
        let rows = [
            ("", ""),
            ("  ", ""),
            ("a", "a"),
            ("!a", "!a"),
            ("! a", "!a"),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a = b", "a=b"),
            ("a=", "a="),
            ("a!=b", "a!=b"),
            ("a in (x,y)", "a in (x,y)"),
            ("a in ( y , x )", "a in (x,y)"),
            ("a notin (x)", "a notin (x)"),
            ("a in (,x)", "a in (,x)"),
            // fuzz finding: only empty values rendered as `a in ()`, which does not parse
            ("a in (, )", "a in (,)"),
            ("a notin (,)", "a notin (,)"),
            (
                "example.com/role=edge,!node-role.kubernetes.io/control-plane",
                "example.com/role=edge,!node-role.kubernetes.io/control-plane",
            ),
            (
                "tier=web , env in (prod,staging), gpu",
                "tier=web,env in (prod,staging),gpu",
            ),
        ];
        for (input, canonical) in rows {
            let s = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(s.to_string(), canonical, "{input:?}");
            assert_eq!(Selector::parse(canonical).unwrap(), s, "{input:?}");
        }
    }

    #[test]
    fn rejects_bad_selectors_naming_the_input() {
        // (input, part of the message)
        let rows = [
            ("a=b=c", "expected ',' between requirements at \"=c\""),
            ("a in x", "expected '('"),
            ("a in (x", "expected ',' or ')'"),
            ("a in ()", "cannot be empty"),
            ("a foo (x)", "unknown operator \"foo\""),
            ("a=b,", "expected a label key"),
            (",a", "expected a label key"),
            ("a b", "unknown operator \"b\""),
            ("a!b", "expected '!='"),
            ("-a=b", "label key \"-a\""),
            ("Example.com/a=b", "prefix \"Example.com\""),
            ("a=b c", "expected ','"),
            ("a=-b", "label value \"-b\""),
            ("a)", "expected an operator"),
        ];
        for (input, msg) in rows {
            let e = Selector::parse(input).expect_err(input);
            let text = e.to_string();
            assert!(text.contains(&format!("{input:?}")), "{text}");
            assert!(text.contains(msg), "{input:?}: {text}");
        }
        let long = format!("a={}", "v".repeat(64));
        assert!(Selector::parse(&long).is_err());
    }

    #[test]
    fn matches_like_the_api_server() {
        let l = labels(&[("env", "prod"), ("gpu", "")]);
        // (selector, matches l)
        let rows = [
            ("", true),
            ("env", true),
            ("!env", false),
            ("!missing", true),
            ("env=prod", true),
            ("env!=prod", false),
            ("missing!=x", true),
            ("env in (prod,dev)", true),
            ("env notin (prod)", false),
            ("missing notin (prod)", true),
            ("missing in (prod)", false),
            ("gpu=", true),
            ("env=prod,gpu", true),
            ("env=prod,!gpu", false),
        ];
        for (s, want) in rows {
            assert_eq!(Selector::parse(s).unwrap().matches(&l), want, "{s}");
        }
    }

    #[test]
    fn dns1123() {
        for ok in ["a", "a-1", "0", &"a".repeat(63)] {
            assert!(is_dns1123_label(ok), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a.b", "a_b", &"a".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("a..b"));
    }
}
