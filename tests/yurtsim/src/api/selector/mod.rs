//! Label and field selectors with kube-apiserver parsing and matching semantics: label
//! selectors here, field selectors in `field.rs`.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

mod field;

pub use field::*;

#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum SelectorError {
    /// A requirement (key, operator or values) could not be parsed or validated.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// Token-level syntax error between requirements.
    #[error("{0}")]
    Syntax(String),
    /// Invalid field selector.
    #[error("{0}")]
    Field(String),
    /// Invalid structured (metav1.LabelSelector) selector.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Requirement {
    key: String,
    op: Op,
    values: BTreeSet<String>,
}

impl Requirement {
    fn new(key: &str, op: Op, values: BTreeSet<String>) -> Result<Self, String> {
        validate_label_key(key).map_err(|m| format!("key: Invalid value: {key:?}: {m}"))?;
        match op {
            Op::In | Op::NotIn if values.is_empty() => {
                return Err("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty".into());
            }
            Op::Equals | Op::NotEquals if values.len() != 1 => {
                return Err(
                    "values: Invalid value: exact-match compatibility requires one single value"
                        .into(),
                );
            }
            Op::Exists | Op::DoesNotExist if !values.is_empty() => {
                return Err(
                    "values: Invalid value: values set must be empty for exists and does not exist"
                        .into(),
                );
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            validate_label_value(v)
                .map_err(|m| format!("values[{i}][{key}]: Invalid value: {v:?}: {m}"))?;
        }
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    }

    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let val = labels.and_then(|l| l.get(&self.key)).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        match self.op {
            Op::Equals | Op::In => val.is_some_and(|v| self.values.contains(&v)),
            Op::NotEquals | Op::NotIn => val.is_none_or(|v| !self.values.contains(&v)),
            Op::Exists => val.is_some(),
            Op::DoesNotExist => val.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.iter().next().map(String::as_str).unwrap_or("");
        let list = self.values.iter().cloned().collect::<Vec<_>>().join(",");
        match self.op {
            Op::Equals => write!(f, "{}={}", self.key, first),
            Op::NotEquals => write!(f, "{}!={}", self.key, first),
            Op::In => write!(f, "{} in ({})", self.key, list),
            Op::NotIn => write!(f, "{} notin ({})", self.key, list),
            Op::Exists => write!(f, "{}", self.key),
            Op::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A parsed label selector: an AND of requirements, kept sorted by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the query-string form (`?labelSelector=`). The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut p = Parser {
            toks: lex(s),
            pos: 0,
        };
        let mut reqs = Vec::new();
        loop {
            match p.peek(Mode::Key) {
                Tok::End => break,
                Tok::Ident(_) | Tok::Not => {
                    reqs.push(p.requirement().map_err(SelectorError::Requirement)?);
                    match p.next(Mode::Values) {
                        Tok::End => break,
                        Tok::Comma => match p.peek(Mode::Values) {
                            Tok::Ident(_) | Tok::Not => {}
                            t => {
                                return Err(SelectorError::Syntax(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.lit()
                                )));
                            }
                        },
                        t => {
                            return Err(SelectorError::Syntax(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.lit()
                            )));
                        }
                    }
                }
                t => {
                    return Err(SelectorError::Syntax(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.lit()
                    )));
                }
            }
        }
        reqs.sort();
        Ok(LabelSelector { reqs })
    }

    /// Converts a metav1.LabelSelector JSON object. `null` and `{}` select everything.
    pub fn from_json(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(Self::everything()),
            Value::Object(o) => o,
            other => {
                return Err(SelectorError::Invalid(format!(
                    "invalid label selector: expected an object, got {other}"
                )));
            }
        };
        let invalid = |m: String| SelectorError::Invalid(m);
        let mut reqs = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(ml)) => {
                for (k, val) in ml {
                    let Value::String(val) = val else {
                        return Err(invalid(format!(
                            "matchLabels.{k}: Invalid value: {val}: must be a string"
                        )));
                    };
                    reqs.push(
                        Requirement::new(k, Op::Equals, BTreeSet::from([val.clone()]))
                            .map_err(invalid)?,
                    );
                }
            }
            Some(other) => {
                return Err(invalid(format!(
                    "matchLabels: Invalid value: {other}: must be an object"
                )));
            }
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for e in exprs {
                    let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                    let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
                    let mut values = BTreeSet::new();
                    match e.get("values") {
                        None | Some(Value::Null) => {}
                        Some(Value::Array(vs)) => {
                            for x in vs {
                                let Value::String(x) = x else {
                                    return Err(invalid(format!(
                                        "values: Invalid value: {x}: must be a string"
                                    )));
                                };
                                values.insert(x.clone());
                            }
                        }
                        Some(other) => {
                            return Err(invalid(format!(
                                "values: Invalid value: {other}: must be an array"
                            )));
                        }
                    }
                    let op = match op {
                        "In" => Op::In,
                        "NotIn" => Op::NotIn,
                        "Exists" => Op::Exists,
                        "DoesNotExist" => Op::DoesNotExist,
                        other => {
                            return Err(invalid(format!(
                                "{other:?} is not a valid label selector operator"
                            )));
                        }
                    };
                    reqs.push(Requirement::new(key, op, values).map_err(invalid)?);
                }
            }
            Some(other) => {
                return Err(invalid(format!(
                    "matchExpressions: Invalid value: {other}: must be an array"
                )));
            }
        }
        reqs.sort();
        Ok(LabelSelector { reqs })
    }

    /// Equality selector from a plain label map (Service `spec.selector`, `nodeSelector`).
    pub fn from_map(m: &Map<String, Value>) -> Result<Self, SelectorError> {
        Self::from_json(&serde_json::json!({ "matchLabels": m }))
    }

    pub fn everything() -> Self {
        Self::default()
    }

    pub fn is_everything(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.reqs.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.reqs.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Not,
    NotEquals,
    Equals,
    DoubleEquals,
    In,
    NotIn,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

impl Tok {
    fn lit(&self) -> &str {
        match self {
            Tok::Ident(s) => s,
            Tok::Not => "!",
            Tok::NotEquals => "!=",
            Tok::Equals => "=",
            Tok::DoubleEquals => "==",
            Tok::In => "in",
            Tok::NotIn => "notin",
            Tok::Gt => ">",
            Tok::Lt => "<",
            Tok::Open => "(",
            Tok::Close => ")",
            Tok::Comma => ",",
            Tok::End => "",
        }
    }
}

/// Key mode treats `in`/`notin` as keywords; value mode treats them as identifiers.
#[derive(Clone, Copy)]
enum Mode {
    Key,
    Values,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn special_tok(s: &str) -> Option<Tok> {
    Some(match s {
        "!" => Tok::Not,
        "!=" => Tok::NotEquals,
        "=" => Tok::Equals,
        "==" => Tok::DoubleEquals,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        _ => return None,
    })
}

fn lex(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            i += 1;
        } else if is_special(c) {
            // Longest run of special characters that still forms a token.
            let mut buf = String::new();
            let mut best = None;
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                buf.push(chars[j]);
                if let Some(t) = special_tok(&buf) {
                    best = Some((t, j + 1));
                } else if best.is_some() {
                    break;
                }
                j += 1;
            }
            let (t, end) = best.expect("every single special char is a token");
            out.push(t);
            i = end;
        } else {
            let start = i;
            while i < chars.len()
                && !is_special(chars[i])
                && !matches!(chars[i], ' ' | '\t' | '\r' | '\n')
            {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        }
    }
    out
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self, mode: Mode) -> Tok {
        let t = self.toks.get(self.pos).cloned().unwrap_or(Tok::End);
        match (mode, t) {
            (Mode::Key, Tok::Ident(s)) if s == "in" => Tok::In,
            (Mode::Key, Tok::Ident(s)) if s == "notin" => Tok::NotIn,
            (_, t) => t,
        }
    }

    fn next(&mut self, mode: Mode) -> Tok {
        let t = self.peek(mode);
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = match self.next(Mode::Key) {
            Tok::Not => match self.next(Mode::Key) {
                Tok::Ident(k) => (k, Op::DoesNotExist),
                t => return Err(format!("found '{}', expected: identifier", t.lit())),
            },
            Tok::Ident(k) => match self.peek(Mode::Key) {
                Tok::End | Tok::Comma => (k, Op::Exists),
                _ => {
                    let op = match self.next(Mode::Key) {
                        Tok::Equals | Tok::DoubleEquals => Op::Equals,
                        Tok::NotEquals => Op::NotEquals,
                        Tok::In => Op::In,
                        Tok::NotIn => Op::NotIn,
                        Tok::Gt | Tok::Lt => {
                            return Err("operator 'gt'/'lt' is not supported by this server".into());
                        }
                        t => {
                            return Err(format!(
                                "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                                t.lit()
                            ));
                        }
                    };
                    (k, op)
                }
            },
            t => return Err(format!("found '{}', expected: identifier", t.lit())),
        };
        let values = match op {
            Op::Exists | Op::DoesNotExist => BTreeSet::new(),
            Op::In | Op::NotIn => self.value_set()?,
            Op::Equals | Op::NotEquals => self.exact_value()?,
        };
        Requirement::new(&key, op, values)
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        // `k=` (and `k=,...`) means the empty value, as in kube.
        match self.peek(Mode::Values) {
            Tok::End | Tok::Comma => Ok(BTreeSet::from([String::new()])),
            _ => match self.next(Mode::Values) {
                Tok::Ident(v) => Ok(BTreeSet::from([v])),
                t => Err(format!("found '{}', expected: identifier", t.lit())),
            },
        }
    }

    fn value_set(&mut self) -> Result<BTreeSet<String>, String> {
        match self.next(Mode::Values) {
            Tok::Open => {}
            t => return Err(format!("found '{}', expected: '('", t.lit())),
        }
        let mut set = BTreeSet::new();
        match self.peek(Mode::Values) {
            Tok::Close => {
                self.next(Mode::Values);
                return Ok(set);
            }
            Tok::Ident(_) | Tok::Comma => {}
            t => {
                return Err(format!(
                    "found '{}', expected: ',', ')' or identifier",
                    t.lit()
                ));
            }
        }
        loop {
            match self.next(Mode::Values) {
                Tok::Ident(v) => {
                    set.insert(v);
                    match self.peek(Mode::Values) {
                        Tok::Comma => {}
                        Tok::Close => break,
                        t => return Err(format!("found '{}', expected: ',' or ')'", t.lit())),
                    }
                }
                // Empty elements (`(,a)`, `(a,)`, `(a,,b)`) are the empty value, as in kube.
                Tok::Comma => match self.peek(Mode::Values) {
                    Tok::Close => {
                        set.insert(String::new());
                        break;
                    }
                    Tok::Comma => {
                        set.insert(String::new());
                    }
                    Tok::Ident(_) if set.is_empty() => {
                        set.insert(String::new());
                    }
                    Tok::Ident(_) => {}
                    t => return Err(format!("found '{}', expected: ',', or identifier", t.lit())),
                },
                t => return Err(format!("found '{}', expected: ',', or identifier", t.lit())),
            }
        }
        match self.next(Mode::Values) {
            Tok::Close => Ok(set),
            t => Err(format!("found '{}', expected: ')'", t.lit())),
        }
    }
}

const NAME_FMT_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_FMT_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// Qualified name: `[prefix/]name`, prefix a DNS subdomain, name ≤ 63 chars.
pub(crate) fn validate_label_key(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Err("prefix part must be non-empty".into());
            }
            if !is_dns_subdomain(prefix) {
                return Err("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
            }
            *name
        }
        _ => {
            return Err("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into());
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".into());
    }
    if !is_label_token(name) {
        return Err(NAME_FMT_MSG.into());
    }
    Ok(())
}

fn validate_label_value(v: &str) -> Result<(), String> {
    if v.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if !v.is_empty() && !is_label_token(v) {
        return Err(VALUE_FMT_MSG.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
