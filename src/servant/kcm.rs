//! kube-controller-manager's static-pod manifest: disable the `nodelifecycle` controller by
//! adding `-nodelifecycle` to `--controllers` (once), and remove exactly what we added.
//!
//! The manifest is parsed as YAML to check what it is (a Pod with a container named
//! kube-controller-manager) and to verify the result, but edited as text: only the bytes
//! of the `--controllers` value (or one new list item) change.

use std::path::Path;

use serde_json::Value;

use super::edit::{NodeChanges, TextEdit};
use super::error::{Result, ServantError};
use super::hostfs::HostFs;
use super::journal::{FileRecord, OperationRecord, Recorder, plan_revert};
use super::kubelet::{effective_argv, static_pod_dir};

pub const KCM_CONTAINER: &str = "kube-controller-manager";
pub const KCM_FILE: &str = "kube-controller-manager.yaml";
pub const KCM_OPERATION: &str = "kcm-nodelifecycle";
const TOKEN: &str = "-nodelifecycle";
const FLAG: &str = "--controllers=";

/// The kube-controller-manager container's command + args (as the container runs them).
fn kcm_argv(path: &str, text: &str) -> Result<Vec<String>> {
    let err = |message: String| ServantError::Manifest {
        path: path.into(),
        message,
    };
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| ServantError::Yaml {
        path: path.into(),
        message: e.to_string(),
    })?;
    if doc.get("kind").and_then(Value::as_str) != Some("Pod")
        || doc.get("apiVersion").and_then(Value::as_str) != Some("v1")
    {
        return Err(err(format!(
            "is not a v1 Pod (kind {:?}); is this really kube-controller-manager's static-pod manifest?",
            doc.get("kind")
        )));
    }
    let c = doc
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(KCM_CONTAINER))
        .ok_or_else(|| err(format!("has no container named {KCM_CONTAINER}")))?;
    let list = |k: &str| -> Vec<String> {
        c.get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    };
    let mut v = list("command");
    v.extend(list("args"));
    Ok(v)
}

fn controllers(argv: &[String]) -> Vec<&str> {
    argv.iter().filter_map(|a| a.strip_prefix(FLAG)).collect()
}

/// Byte range of the `--controllers=` value on its line, and the line's range.
struct FlagLine {
    value_start: usize,
    value_end: usize,
    line_start: usize,
    line_end: usize,
}

fn find_flag_lines(text: &str) -> Vec<FlagLine> {
    let mut out = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim_start();
        if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("-\t")) {
            let rest_trim = rest.trim_start();
            let (quote, inner) = match rest_trim.chars().next() {
                Some(q @ ('"' | '\'')) => (Some(q), &rest_trim[1..]),
                _ => (None, rest_trim),
            };
            if let Some(tail) = inner.strip_prefix(FLAG) {
                let value_start = line_start + (body.len() - inner.len()) + FLAG.len();
                let len = match quote {
                    Some(q) => tail.find(q).unwrap_or(tail.len()),
                    None => {
                        let end = tail.find(" #").unwrap_or(tail.len());
                        tail[..end].trim_end().len()
                    }
                };
                out.push(FlagLine {
                    value_start,
                    value_end: value_start + len,
                    line_start,
                    line_end: line_start + line.len(),
                });
            }
        }
        line_start += line.len();
    }
    out
}

fn manifest_path(fs: &HostFs) -> Result<String> {
    let argv = effective_argv(fs)?;
    let dir = static_pod_dir(fs, &argv)?;
    Ok(format!("{}/{KCM_FILE}", dir.trim_end_matches('/')))
}

/// Plans adding `-nodelifecycle` to kube-controller-manager's `--controllers`.
pub fn disable_nodelifecycle(host_root: &Path) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let path = manifest_path(&fs)?;
    let mut rec = Recorder::new(fs, KCM_OPERATION)?;
    let text = rec.fs.read_text(&path)?.ok_or_else(|| ServantError::Manifest {
        path: path.clone(),
        message: "does not exist: kube-controller-manager does not run as a static pod on this node; disable the nodelifecycle controller where it runs (--controllers=*,-nodelifecycle)".into(),
    })?;
    let before = kcm_argv(&path, &text)?;
    let ctl = controllers(&before);
    if ctl.last().is_some_and(|v| v.split(',').any(|i| i == TOKEN)) {
        return rec.finish(); // already disabled (by us or by the operator)
    }
    let lines = find_flag_lines(&text);
    let (new_text, edit, added) = match (ctl.len(), lines.len()) {
        (0, 0) => {
            let (at, indent) = insertion_point(&path, &text, &before)?;
            let line = format!("{indent}- {FLAG}*,{TOKEN}\n");
            let (t, e) = TextEdit::apply(&text, at, at, &line);
            (t, e, "flag")
        }
        (1, 1) => {
            let l = &lines[0];
            let ins = if l.value_start == l.value_end {
                format!("*,{TOKEN}")
            } else {
                format!(",{TOKEN}")
            };
            let (t, e) = TextEdit::apply(&text, l.value_end, l.value_end, &ins);
            (t, e, "item")
        }
        (n, m) => {
            return Err(ServantError::Manifest {
                path,
                message: format!(
                    "--controllers appears {n} times in the container and on {m} lines of the file; edit it by hand"
                ),
            });
        }
    };
    // verify: same arguments, except --controllers now disables nodelifecycle exactly once
    let after = kcm_argv(&path, &new_text)?;
    let strip = |v: &[String]| -> Vec<String> {
        v.iter().filter(|a| !a.starts_with(FLAG)).cloned().collect()
    };
    let ok = strip(&before) == strip(&after)
        && controllers(&after).len() == 1
        && controllers(&after)[0]
            .split(',')
            .filter(|i| *i == TOKEN)
            .count()
            == 1;
    if !ok {
        return Err(ServantError::Manifest {
            path,
            message: format!(
                "the edit did not have the intended effect (before {before:?}, after {after:?}); edit it by hand"
            ),
        });
    }
    rec.journal
        .extra
        .insert("added".into(), Value::String(added.into()));
    let added_kind = added.to_owned();
    let p2 = path.clone();
    let rebase = move |cur: &str| remove_token(&p2, cur, &added_kind);
    rec.modify(
        &path,
        text.as_bytes(),
        new_text.into_bytes(),
        vec![edit],
        Some(&rebase),
    )?;
    rec.finish()
}

/// Where to insert a new `- --controllers=…` item: after the line of the last element of
/// the container's args (or command), with the same indentation.
fn insertion_point(path: &str, text: &str, argv: &[String]) -> Result<(usize, String)> {
    let last = argv.last().ok_or_else(|| ServantError::Manifest {
        path: path.into(),
        message: "the kube-controller-manager container has no command or args".into(),
    })?;
    let mut hits = Vec::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim_start();
        if let Some(rest) = t.strip_prefix("- ") {
            let r = rest.trim();
            let unq = r
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .or_else(|| r.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
                .unwrap_or(r);
            if unq == last {
                let indent = &body[..body.len() - t.len()];
                hits.push((pos + line.len(), indent.to_owned(), line.ends_with('\n')));
            }
        }
        pos += line.len();
    }
    match hits.as_slice() {
        [(at, indent, true)] => Ok((*at, indent.clone())),
        _ => Err(ServantError::Manifest {
            path: path.into(),
            message: format!(
                "cannot find a unique block-style list item {last:?} to add --controllers after (flow-style lists are not edited); add `--controllers=*,-nodelifecycle` by hand"
            ),
        }),
    }
}

/// Removes one `-nodelifecycle` item from the `--controllers` value of `text` (the last
/// one), or the whole item line if it is exactly the one we added.
fn remove_token(path: &str, text: &str, added: &str) -> Result<String> {
    let lines = find_flag_lines(text);
    let [l] = lines.as_slice() else {
        if lines.is_empty() {
            return Ok(text.to_owned()); // flag gone: nothing of ours left
        }
        return Err(ServantError::Manifest {
            path: path.into(),
            message: "--controllers appears on several lines; cannot tell which to revert".into(),
        });
    };
    let value = &text[l.value_start..l.value_end];
    let line = &text[l.line_start..l.line_end];
    if added == "flag" && value == format!("*,{TOKEN}") && line.trim_start().starts_with("- --") {
        return Ok(format!("{}{}", &text[..l.line_start], &text[l.line_end..]));
    }
    let items: Vec<&str> = value.split(',').collect();
    let Some(idx) = items.iter().rposition(|i| *i == TOKEN) else {
        return Ok(text.to_owned()); // someone re-enabled it already
    };
    if items.len() == 1 {
        return Err(ServantError::Manifest {
            path: path.into(),
            message: "--controllers=-nodelifecycle would become empty; fix it by hand".into(),
        });
    }
    let mut rest = items.clone();
    rest.remove(idx);
    Ok(format!(
        "{}{}{}",
        &text[..l.value_start],
        rest.join(","),
        &text[l.value_end..]
    ))
}

/// Plans removing exactly what [`disable_nodelifecycle`] added. Other changes made to the
/// manifest since (image bumps, new flags) are kept.
pub fn enable_nodelifecycle(host_root: &Path) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let Some(journal) = OperationRecord::load(&fs, KCM_OPERATION)? else {
        return Ok(NodeChanges::default());
    };
    let added = journal
        .extra
        .get("added")
        .and_then(Value::as_str)
        .unwrap_or("item")
        .to_owned();
    let inverse = |r: &FileRecord, current: &str| -> Option<Result<String>> {
        Some((|| {
            kcm_argv(&r.path, current)?;
            let out = remove_token(&r.path, current, &added)?;
            kcm_argv(&r.path, &out)?;
            Ok(out)
        })())
    };
    plan_revert(&fs, &journal, &inverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_lines() {
        let t = "    - --controllers=*,a # c\n    - \"--controllers=x\"\n";
        let l = find_flag_lines(t);
        assert_eq!(&t[l[0].value_start..l[0].value_end], "*,a");
        assert_eq!(&t[l[1].value_start..l[1].value_end], "x");
    }
}
