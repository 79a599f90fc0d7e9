//! Field selectors: parsed as kube-apiserver parses them (escaped commas and operators), and
//! matched against an object's fields.

use std::fmt;

use serde_json::Value;

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum FieldOp {
    Eq,
    NotEq,
}

/// A parsed field selector: an AND of `field=value` / `field!=value` terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, FieldOp, String)>,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for term in split_unescaped_commas(s) {
            // Empty terms (`a=b,`) are skipped, as kube does.
            if term.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(term) else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            terms.push((lhs.to_string(), op, unescape_value(rhs)?));
        }
        terms.sort();
        Ok(FieldSelector { terms })
    }

    pub fn everything() -> Self {
        Self::default()
    }

    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }

    /// Field paths referenced, for rejecting unsupported ones (`field label not supported: x`).
    pub fn fields(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.terms.iter().map(|(f, _, _)| f.as_str()).collect();
        v.dedup();
        v
    }

    /// Exact value required for `field`, if the selector pins it (`field=value`).
    pub fn requires_exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, op, _)| f == field && *op == FieldOp::Eq)
            .map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(field, op, want)| {
            let got = field_value(obj, field);
            match op {
                FieldOp::Eq => &got == want,
                FieldOp::NotEq => &got != want,
            }
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|(k, op, v)| {
                let v = v
                    .replace('\\', "\\\\")
                    .replace(',', "\\,")
                    .replace('=', "\\=");
                match op {
                    FieldOp::Eq => format!("{k}={v}"),
                    FieldOp::NotEq => format!("{k}!={v}"),
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Dotted path lookup; missing or null is "", strings are raw, other scalars their JSON text.
/// Fields a registry computes rather than reads are computed as it does.
fn field_value(obj: &Value, path: &str) -> String {
    // Jobs' "status.successful" is strconv.Itoa(int(job.Status.Succeeded)), "0" when unset
    // (kubernetes/kubernetes@v1.33.0 pkg/registry/batch/job/strategy.go JobToSelectableFields)
    if path == "status.successful" {
        return obj["status"]["succeeded"].as_i64().unwrap_or(0).to_string();
    }
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn split_unescaped_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op_s, op) in [
            ("!=", FieldOp::NotEq),
            ("==", FieldOp::Eq),
            ("=", FieldOp::Eq),
        ] {
            if let Some(rhs) = rest.strip_prefix(op_s) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

fn unescape_value(s: &str) -> Result<String, SelectorError> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n @ ('\\' | ',' | '=')) => out.push(n),
                Some(n) => {
                    return Err(SelectorError::Field(format!(
                        "invalid field selector: invalid escape sequence: \\{n}"
                    )));
                }
                None => {
                    return Err(SelectorError::Field(
                        "invalid field selector: invalid escape sequence: \\".into(),
                    ));
                }
            },
            // Go prints the rune with %v, i.e. its code point number.
            ',' | '=' => {
                return Err(SelectorError::Field(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}
