//! systemd on a simulated node: how a unit becomes an argv (this file) and the services
//! systemd runs and `systemctl` manages ([`services`]).
//!
//! How systemd (PID 1, system scope) turns a service's unit file, its drop-ins and its
//! `EnvironmentFile=`s into the argv it executes.
//!
//! This is an oracle for yurtctl's own node-side editor, so it follows systemd's real
//! parsers (conf-parser.c, extract-word.c, env-file.c, env-util.c, load-fragment.c),
//! not yurtctl. Only what kubelet units use is modelled: `[Service]` `ExecStart=`,
//! `Environment=`, `EnvironmentFile=`, `UnsetEnvironment=` and `Type=`.
//!
//! Two moments, as in systemd:
//! * [`load_unit`] is `systemctl daemon-reload`: unit files and drop-ins are read and parsed
//!   into a [`LoadedUnit`] snapshot; later edits to them have no effect until the next load.
//! * [`LoadedUnit::command_line`] is `systemctl (re)start`: EnvironmentFiles are read now,
//!   then `$VAR`/`${VAR}` are expanded.
//!
//! All host paths are resolved inside a node root directory; symlinks are followed with
//! absolute targets taken relative to that root, and nothing may leave it.

pub mod services;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Errors from loading a unit or computing its command line.
#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    #[error("unit {unit} not found in any systemd unit directory")]
    NotFound { unit: String },
    #[error("unit {unit} is masked by {path}")]
    Masked { unit: String, path: String },
    #[error("invalid unit name {unit:?}")]
    InvalidName { unit: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Syntax {
        path: String,
        line: usize,
        message: String,
    },
    #[error("unit {unit} has no ExecStart= command (service lacks ExecStart=)")]
    NoExecStart { unit: String },
    #[error(
        "unit {unit} has {count} ExecStart= commands; only Type=oneshot services may have more than one"
    )]
    MultipleExecStart { unit: String, count: usize },
    #[error("unit {unit}: failed to load environment file {path}: {reason}")]
    EnvironmentFile {
        unit: String,
        path: String,
        reason: String,
    },
    #[error("path {path} leaves the node root")]
    EscapesRoot { path: String },
    #[error("too many levels of symbolic links resolving {path}")]
    SymlinkLoop { path: String },
}

/// System-scope unit search path, highest priority first (systemd's path-lookup.c,
/// RUNTIME_SCOPE_SYSTEM). `/lib/systemd/system` is only searched for legacy split-/usr
/// images, after `/usr/lib`; on merged-/usr systems `/lib` is a symlink to `usr/lib` and the
/// duplicate is dropped (we dedupe by resolved path).
pub const UNIT_SEARCH_PATH: &[&str] = &[
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
    "/run/systemd/generator.late",
];

/// PID 1's own environment that every service inherits (systemd's default PATH for
/// system services). Nothing else from the manager is modelled.
const MANAGER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin";

// ---------------------------------------------------------------------------------------
// Paths inside the node root

/// A host path resolved inside a node root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Canonical host path after following symlinks (always absolute, e.g. "/etc/x").
    pub host: String,
    /// The same file on disk: `root.join(host without leading '/')`.
    pub disk: PathBuf,
}

/// Resolves `host` ("/etc/x"; relative paths are taken from "/") inside `root`, following
/// symlinks the way the kernel would inside a chroot at `root`, except that a `..` that would
/// climb above the root is an error instead of being clamped. Missing files are fine: the
/// result then names where the file would be.
pub fn resolve_host_path(root: &Path, host: &str) -> Result<ResolvedPath, UnitError> {
    let mut todo: Vec<String> = host.split('/').rev().map(str::to_owned).collect();
    let mut cur: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if cur.pop().is_none() {
                    return Err(UnitError::EscapesRoot { path: host.into() });
                }
                continue;
            }
            _ => cur.push(c),
        }
        let disk = root.join(cur.join("/"));
        let Ok(meta) = fs::symlink_metadata(&disk) else {
            continue;
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        links += 1;
        if links > 40 {
            // Linux's MAXSYMLINKS
            return Err(UnitError::SymlinkLoop { path: host.into() });
        }
        let target = fs::read_link(&disk).map_err(|e| io_err(host, e))?;
        let target = target.to_string_lossy().into_owned();
        cur.pop();
        if target.starts_with('/') {
            cur.clear();
        }
        todo.extend(target.split('/').rev().map(str::to_owned));
    }
    let rel = cur.join("/");
    Ok(ResolvedPath {
        host: format!("/{rel}"),
        disk: root.join(rel),
    })
}

fn io_err(path: &str, source: std::io::Error) -> UnitError {
    UnitError::Io {
        path: path.into(),
        source,
    }
}

/// Reads a host file inside `root`. `/dev/null` reads as empty (it is what masking symlinks
/// point at, and systemd may read it).
pub fn read_host_file(root: &Path, host: &str) -> Result<String, UnitError> {
    let r = resolve_host_path(root, host)?;
    if r.host == "/dev/null" {
        return Ok(String::new());
    }
    let bytes = fs::read(&r.disk).map_err(|e| io_err(host, e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// True when `disk` is a symlink whose text is /dev/null, or resolves to it, or is an empty
/// regular file: systemd's null_or_empty(), which marks masked units and drop-ins.
fn is_null_or_empty(root: &Path, host: &str) -> Result<bool, UnitError> {
    let r = resolve_host_path(root, host)?;
    if r.host == "/dev/null" {
        return Ok(true);
    }
    Ok(fs::metadata(&r.disk)
        .map(|m| m.is_file() && m.len() == 0)
        .unwrap_or(false))
}

// ---------------------------------------------------------------------------------------
// Word splitting (extract-word.c)

const WHITESPACE: &[char] = &[' ', '\t', '\n', '\r'];

#[derive(Clone, Copy)]
struct Extract {
    unquote: bool,
    cunescape: bool,
    relax: bool,
}

const EXEC_WORDS: Extract = Extract {
    unquote: true,
    cunescape: true,
    relax: false,
};
const VAR_SPLIT: Extract = Extract {
    unquote: true,
    cunescape: false,
    relax: true,
};

/// systemd's cunescape_one(): the escape after a backslash. Returns the char and how many
/// bytes of `s` it used, or None for an invalid escape.
fn cunescape_one(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    let hex = |from: usize, n: usize| -> Option<u32> {
        let t = s.get(from..from + n)?;
        if !t.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(t, 16).ok()
    };
    let c = *b.first()?;
    let simple = match c {
        b'a' => Some('\u{7}'),
        b'b' => Some('\u{8}'),
        b'f' => Some('\u{c}'),
        b'n' => Some('\n'),
        b'r' => Some('\r'),
        b't' => Some('\t'),
        b'v' => Some('\u{b}'),
        b'\\' => Some('\\'),
        b'"' => Some('"'),
        b'\'' => Some('\''),
        b's' => Some(' '),
        _ => None,
    };
    if let Some(ch) = simple {
        return Some((ch, 1));
    }
    match c {
        b'x' => {
            let v = hex(1, 2)?;
            // \x00 would truncate a C string: systemd rejects it
            (v != 0).then(|| (char::from_u32(v).unwrap_or('\u{fffd}'), 3))
        }
        b'u' => {
            let v = hex(1, 4)?;
            (v != 0)
                .then_some(())
                .and(char::from_u32(v))
                .map(|ch| (ch, 5))
        }
        b'U' => {
            let v = hex(1, 8)?;
            (v != 0)
                .then_some(())
                .and(char::from_u32(v))
                .map(|ch| (ch, 9))
        }
        b'0'..=b'7' => {
            let t = s.get(0..3)?;
            let d: Vec<u32> = t.bytes().map(|c| u32::from(c.wrapping_sub(b'0'))).collect();
            if d.iter().any(|&x| x > 7) {
                return None;
            }
            let v = d[0] * 64 + d[1] * 8 + d[2];
            (v != 0 && v <= 255).then(|| (char::from_u32(v).unwrap_or('\u{fffd}'), 3))
        }
        _ => None,
    }
}

/// systemd's extract_first_word() with WHITESPACE separators. `Ok(None)` = no more words;
/// `Err` = syntax error (unbalanced quote, bad escape) when not relaxed.
fn extract_first_word(p: &mut &str, fl: Extract) -> Result<Option<String>, String> {
    let s = p.trim_start_matches(WHITESPACE);
    if s.is_empty() {
        *p = s;
        return Ok(None);
    }
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut chars = s.char_indices().peekable();
    let mut end = s.len();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            let rest = &s[i + 1..];
            if rest.is_empty() {
                if fl.relax {
                    break; // trailing backslash dropped
                }
                return Err("trailing backslash".into());
            }
            if fl.cunescape {
                match cunescape_one(rest) {
                    Some((ch, used)) => {
                        out.push(ch);
                        for _ in 0..used {
                            chars.next();
                        }
                    }
                    None => return Err(format!("invalid escape sequence in {s:?}")),
                }
            } else {
                let (_, ch) = chars.next().expect("non-empty rest");
                out.push(ch);
            }
            continue;
        }
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                out.push(c);
            }
            continue;
        }
        if fl.unquote && (c == '\'' || c == '"') {
            quote = Some(c);
            continue;
        }
        if WHITESPACE.contains(&c) {
            end = i;
            break;
        }
        out.push(c);
    }
    if quote.is_some() && !fl.relax {
        return Err(format!("unbalanced quoting in {s:?}"));
    }
    *p = s[end..].trim_start_matches(WHITESPACE);
    Ok(Some(out))
}

fn split_words(s: &str, fl: Extract) -> Result<Vec<String>, String> {
    let mut p = s;
    let mut v = Vec::new();
    while let Some(w) = extract_first_word(&mut p, fl)? {
        v.push(w);
    }
    Ok(v)
}

// ---------------------------------------------------------------------------------------
// Environment names and values (env-util.c)

/// env_name_is_valid(): non-empty, [A-Za-z0-9_], not starting with a digit.
pub fn env_name_is_valid(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn env_value_is_valid(v: &str) -> bool {
    // No control characters except tab and newline.
    !v.chars().any(|c| c.is_control() && c != '\t' && c != '\n')
}

fn env_assignment_split(a: &str) -> Option<(&str, &str)> {
    let (k, v) = a.split_once('=')?;
    (env_name_is_valid(k) && env_value_is_valid(v)).then_some((k, v))
}

// ---------------------------------------------------------------------------------------
// EnvironmentFile= parsing (env-file.c, parse_env_file_internal)

/// Parses an environment file the way systemd does: `KEY=value` lines, `#`/`;` comments,
/// single quotes (verbatim), double quotes (with `\"`, `\\`, `` \` ``, `\$` escapes; other
/// backslashes kept), unquoted values with trailing whitespace trimmed and backslash escapes,
/// backslash-newline continuation. Returns pairs in file order, including invalid names;
/// [`LoadedUnit::command_line`] drops invalid ones (so `export FOO=bar` is ignored, as
/// systemd's strv_env_clean does — `export` is not special).
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    #[derive(PartialEq, Clone, Copy)]
    enum S {
        PreKey,
        Key,
        PreValue,
        Value,
        ValueEscape,
        Single,
        Double,
        DoubleEscape,
        Comment,
        CommentEscape,
    }
    let nl = |c: char| c == '\n' || c == '\r';
    let ws = |c: char| WHITESPACE.contains(&c);
    let mut out = Vec::new();
    let mut st = S::PreKey;
    let mut key = String::new();
    let mut value = String::new();
    let mut key_ws: Option<usize> = None; // start of trailing whitespace in key
    let mut val_ws: Option<usize> = None; // start of trailing unescaped whitespace in value
    let mut push = |key: &mut String, value: &mut String, key_ws: &mut Option<usize>| {
        if let Some(n) = key_ws.take() {
            key.truncate(n);
        }
        out.push((std::mem::take(key), std::mem::take(value)));
    };
    for c in text.chars() {
        match st {
            S::PreKey => {
                if c == '#' || c == ';' {
                    st = S::Comment;
                } else if !ws(c) {
                    st = S::Key;
                    key.clear();
                    key.push(c);
                    key_ws = None;
                }
            }
            S::Key => {
                if nl(c) {
                    st = S::PreKey; // no '=': line ignored
                    key.clear();
                } else if c == '=' {
                    st = S::PreValue;
                    value.clear();
                    val_ws = None;
                } else {
                    if !ws(c) {
                        key_ws = None;
                    } else if key_ws.is_none() {
                        key_ws = Some(key.len());
                    }
                    key.push(c);
                }
            }
            S::PreValue => {
                if nl(c) {
                    st = S::PreKey;
                    push(&mut key, &mut value, &mut key_ws);
                } else if c == '\'' {
                    st = S::Single;
                } else if c == '"' {
                    st = S::Double;
                } else if c == '\\' {
                    st = S::ValueEscape;
                } else if !ws(c) {
                    st = S::Value;
                    value.push(c);
                }
            }
            S::Value => {
                if nl(c) {
                    st = S::PreKey;
                    if let Some(n) = val_ws.take() {
                        value.truncate(n);
                    }
                    push(&mut key, &mut value, &mut key_ws);
                } else if c == '\\' {
                    st = S::ValueEscape;
                    val_ws = None;
                } else {
                    if !ws(c) {
                        val_ws = None;
                    } else if val_ws.is_none() {
                        val_ws = Some(value.len());
                    }
                    value.push(c);
                }
            }
            S::ValueEscape => {
                st = S::Value;
                if !nl(c) {
                    value.push(c); // escaped newlines are eaten entirely
                }
            }
            S::Single => {
                if c == '\'' {
                    st = S::PreValue;
                } else {
                    value.push(c);
                }
            }
            S::Double => {
                if c == '"' {
                    st = S::PreValue;
                } else if c == '\\' {
                    st = S::DoubleEscape;
                } else {
                    value.push(c);
                }
            }
            S::DoubleEscape => {
                st = S::Double;
                if "\"\\`$".contains(c) {
                    value.push(c);
                } else if c == '\n' {
                    // escaped newline eaten
                } else {
                    value.push('\\');
                    value.push(c);
                }
            }
            S::Comment => {
                if c == '\\' {
                    st = S::CommentEscape;
                } else if nl(c) {
                    st = S::PreKey;
                }
            }
            S::CommentEscape => {
                // since v254 a backslash at the end of a comment does not continue it
                st = if nl(c) { S::PreKey } else { S::Comment };
            }
        }
    }
    match st {
        S::Value => {
            if let Some(n) = val_ws.take() {
                value.truncate(n);
            }
            push(&mut key, &mut value, &mut key_ws);
        }
        S::PreValue | S::ValueEscape | S::Single | S::Double | S::DoubleEscape => {
            push(&mut key, &mut value, &mut key_ws)
        }
        _ => {}
    }
    out
}

// ---------------------------------------------------------------------------------------
// Variable expansion at exec time (env-util.c replace_env / replace_env_argv)

/// `${FOO}` anywhere in a word is replaced verbatim (unset → ""), `$$` becomes `$`, any other
/// `$` is kept literally (`--x=$FOO` stays as is: braceless names only work as whole words).
fn replace_env(word: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(word.len());
    let b = word.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            if b[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if b[i + 1] == b'{' {
                if let Some(close) = word[i + 2..].find('}') {
                    let name = &word[i + 2..i + 2 + close];
                    if let Some(v) = env.get(name) {
                        out.push_str(v);
                    }
                    i += 2 + close + 1;
                    continue;
                }
                // unterminated ${ : rest kept verbatim
                out.push_str(&word[i..]);
                return out;
            }
        }
        let ch = word[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// replace_env_argv(): a word that is exactly `$NAME` becomes the variable's value split at
/// whitespace with quotes honoured (0..n args; unset or invalid name → nothing); every other
/// word goes through [`replace_env`] and stays exactly one argument.
pub fn expand_argv(argv: &[String], env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    for w in argv {
        let b = w.as_bytes();
        if b.first() == Some(&b'$') && !matches!(b.get(1), Some(b'{') | Some(b'$')) {
            let name = &w[1..];
            if env_name_is_valid(name)
                && let Some(v) = env.get(name)
            {
                // RELAX: cannot fail
                out.extend(split_words(v, VAR_SPLIT).unwrap_or_default());
            }
            continue;
        }
        out.push(replace_env(w, env));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Unit file syntax (conf-parser.c)

struct Assignment {
    section: String,
    key: String,
    value: String,
    line: usize,
}

/// Splits a unit file into assignments: comment lines (`#`, `;` after optional whitespace)
/// are skipped even inside a continuation; a line ending in an odd number of backslashes
/// continues on the next line with the backslash replaced by a space.
fn parse_unit_text(path: &str, text: &str) -> Result<(Vec<Assignment>, Vec<String>), UnitError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut section: Option<String> = None;
    let mut continuation: Option<String> = None;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (idx, raw) in text.split('\n').enumerate() {
        let lineno = idx + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let lead = raw.trim_start_matches(WHITESPACE);
        if lead.starts_with('#') || lead.starts_with(';') {
            continue;
        }
        let mut joined = match continuation.take() {
            Some(mut c) => {
                c.push_str(raw);
                c
            }
            None => raw.to_owned(),
        };
        let trailing = joined.bytes().rev().take_while(|&c| c == b'\\').count();
        if trailing % 2 == 1 {
            joined.pop();
            joined.push(' ');
            continuation = Some(joined);
            continue;
        }
        let l = joined.trim_matches(WHITESPACE);
        if l.is_empty() {
            continue;
        }
        if l.starts_with('[') {
            if !l.ends_with(']') || l.len() < 2 {
                return Err(UnitError::Syntax {
                    path: path.into(),
                    line: lineno,
                    message: format!("invalid section header {l:?}"),
                });
            }
            section = Some(l[1..l.len() - 1].to_owned());
            continue;
        }
        let Some(sec) = &section else {
            warnings.push(format!(
                "{path}:{lineno}: assignment outside of section, ignoring"
            ));
            continue;
        };
        let Some((k, v)) = l.split_once('=') else {
            warnings.push(format!("{path}:{lineno}: missing '=', ignoring line"));
            continue;
        };
        out.push(Assignment {
            section: sec.clone(),
            key: k.trim_matches(WHITESPACE).to_owned(),
            value: v.trim_matches(WHITESPACE).to_owned(),
            line: lineno,
        });
    }
    if let Some(c) = continuation {
        // EOF inside a continuation: systemd parses what it has
        let l = c.trim_matches(WHITESPACE);
        if let (Some(sec), Some((k, v))) = (&section, l.split_once('=')) {
            out.push(Assignment {
                section: sec.clone(),
                key: k.trim_matches(WHITESPACE).to_owned(),
                value: v.trim_matches(WHITESPACE).to_owned(),
                line: text.split('\n').count(),
            });
        }
    }
    Ok((out, warnings))
}

// ---------------------------------------------------------------------------------------
// Specifiers (%n, %%, ...) for the settings we parse

struct Specifiers {
    unit: String,
    hostname: String,
}

impl Specifiers {
    fn prefix(&self) -> &str {
        let stem = self
            .unit
            .rsplit_once('.')
            .map_or(self.unit.as_str(), |(a, _)| a);
        stem.split_once('@').map_or(stem, |(a, _)| a)
    }
    fn instance(&self) -> &str {
        let stem = self
            .unit
            .rsplit_once('.')
            .map_or(self.unit.as_str(), |(a, _)| a);
        stem.split_once('@').map_or("", |(_, b)| b)
    }

    /// Expands %-specifiers; unknown ones are an error (systemd then ignores the setting).
    fn expand(&self, s: &str) -> Result<String, String> {
        if !s.contains('%') {
            return Ok(s.to_owned());
        }
        let mut out = String::new();
        let mut it = s.chars();
        while let Some(c) = it.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(k) = it.next() else {
                out.push('%');
                break;
            };
            let short_host = self.hostname.split('.').next().unwrap_or_default();
            let stem = self
                .unit
                .rsplit_once('.')
                .map_or(self.unit.as_str(), |(a, _)| a);
            let v: String = match k {
                '%' => "%".into(),
                'n' => self.unit.clone(),
                'N' => stem.into(),
                'p' => self.prefix().into(),
                'P' => unit_name_unescape(self.prefix()),
                'i' => self.instance().into(),
                'I' => unit_name_unescape(self.instance()),
                'j' => self.prefix().rsplit('-').next().unwrap_or_default().into(),
                'J' => unit_name_unescape(self.prefix().rsplit('-').next().unwrap_or_default()),
                'f' => {
                    let base = if self.instance().is_empty() {
                        self.prefix()
                    } else {
                        self.instance()
                    };
                    let u = unit_name_unescape(base);
                    if u.starts_with('/') {
                        u
                    } else {
                        format!("/{u}")
                    }
                }
                't' => "/run".into(),
                'S' => "/var/lib".into(),
                'C' => "/var/cache".into(),
                'L' => "/var/log".into(),
                'E' => "/etc".into(),
                'T' => "/tmp".into(),
                'V' => "/var/tmp".into(),
                'h' => "/root".into(),
                'u' | 'g' => "root".into(),
                'U' | 'G' => "0".into(),
                's' => "/bin/sh".into(),
                'H' => self.hostname.clone(),
                'l' => short_host.into(),
                other => return Err(format!("unsupported specifier %{other}")),
            };
            out.push_str(&v);
        }
        Ok(out)
    }
}

fn unit_name_unescape(s: &str) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'-' {
            out.push('/');
            i += 1;
        } else if b[i] == b'\\'
            && b.get(i + 1) == Some(&b'x')
            && let Some(v) = s
                .get(i + 2..i + 4)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(char::from(v));
            i += 4;
        } else {
            let ch = s[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// ExecStart= (load-fragment.c config_parse_exec)

/// One parsed `ExecStart=` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecCommand {
    /// The program systemd executes (first word without prefixes).
    pub path: String,
    /// argv as stored at load time (quotes and C escapes resolved, `$` not yet expanded).
    pub argv: Vec<String>,
    /// `-`: failure exit status ignored.
    pub ignore_failure: bool,
    /// `:`: no environment variable expansion.
    pub no_env_expand: bool,
    /// `+`, `!`, `!!`: privilege prefixes (no effect on argv).
    pub privileged: bool,
}

fn parse_exec(rvalue: &str, spec: &Specifiers) -> Result<Vec<ExecCommand>, String> {
    let mut cmds = Vec::new();
    let mut p = rvalue;
    loop {
        p = p.trim_start_matches(WHITESPACE);
        let Some(first) = extract_first_word(&mut p, EXEC_WORDS)? else {
            break;
        };
        let mut f = first.as_str();
        let (mut ignore, mut at, mut colon, mut plus, mut bang, mut bangbang) =
            (false, false, false, false, false, false);
        loop {
            match f.chars().next() {
                Some('-') if !ignore => ignore = true,
                Some('@') if !at => at = true,
                Some(':') if !colon => colon = true,
                Some('+') if !(plus || bang || bangbang) => plus = true,
                Some('!') if !(plus || bang || bangbang) => bang = true,
                Some('!') if bang && !(plus || bangbang) => {
                    bang = false;
                    bangbang = true
                }
                _ => break,
            }
            f = &f[1..];
        }
        let path = spec.expand(f)?;
        let mut argv = Vec::new();
        if at {
            let Some(a0) = extract_first_word(&mut p, EXEC_WORDS)? else {
                return Err("empty executable name or zeroeth argument".into());
            };
            argv.push(spec.expand(&a0)?);
        } else {
            argv.push(path.clone());
        }
        if path.is_empty() {
            return Err("empty path in command line".into());
        }
        if path.contains('/') && !path.starts_with('/') {
            return Err(format!(
                "neither a valid executable name nor an absolute path: {path}"
            ));
        }
        let mut more = false;
        loop {
            p = p.trim_start_matches(WHITESPACE);
            let sep_after = |n: usize| p.len() == n || p[n..].starts_with(WHITESPACE);
            if p.starts_with(';') && sep_after(1) {
                p = &p[1..];
                more = true;
                break;
            }
            if p.starts_with("\\;") && sep_after(2) {
                argv.push(";".into());
                p = &p[2..];
                continue;
            }
            let Some(w) = extract_first_word(&mut p, EXEC_WORDS)? else {
                break;
            };
            argv.push(spec.expand(&w)?);
        }
        cmds.push(ExecCommand {
            path,
            argv,
            ignore_failure: ignore,
            no_env_expand: colon,
            privileged: plus || bang || bangbang,
        });
        if !more {
            break;
        }
    }
    Ok(cmds)
}

// ---------------------------------------------------------------------------------------
// Loading

/// A unit as systemd holds it after `daemon-reload`.
#[derive(Clone, Debug)]
pub struct LoadedUnit {
    name: String,
    sources: Vec<PathBuf>,
    service_type: String,
    exec_start: Vec<ExecCommand>,
    /// `Environment=` assignments, merged (later wins), in first-set order.
    environment: Vec<(String, String)>,
    /// `EnvironmentFile=` values as written (with optional leading `-`).
    environment_files: Vec<String>,
    unset_environment: Vec<String>,
    warnings: Vec<String>,
}

fn env_set(env: &mut Vec<(String, String)>, k: &str, v: &str) {
    match env.iter_mut().find(|(n, _)| n == k) {
        Some(e) => e.1 = v.to_owned(),
        None => env.push((k.to_owned(), v.to_owned())),
    }
}

/// Drop-in directory names for `unit` inside one search directory: `foo-bar.service.d`,
/// then the dash-prefix ones (`foo-.service.d`), then the type-wide `service.d` (v239+).
fn dropin_dir_names(unit: &str) -> Vec<String> {
    let mut names = vec![format!("{unit}.d")];
    if let Some((stem, ty)) = unit.rsplit_once('.') {
        let prefix = stem.split_once('@').map_or(stem, |(a, _)| a);
        let mut cut = prefix;
        while let Some(i) = cut.rfind('-') {
            cut = &cut[..i];
            names.push(format!("{}-.{ty}.d", cut));
        }
        names.push(format!("{ty}.d"));
    }
    names
}

/// Loads `unit` ("kubelet.service") from the node root like `systemctl daemon-reload`:
/// the first unit file found along [`UNIT_SEARCH_PATH`] wins; drop-ins `*.conf` are
/// collected from the `<unit>.d/` (and `service.d/`) directories of every search directory,
/// a same-named drop-in in a higher-priority directory hides the lower one (a /dev/null
/// symlink or empty file masks it), and they are applied in lexical file-name order.
pub fn load_unit(root: &Path, unit: &str) -> Result<LoadedUnit, UnitError> {
    if unit.is_empty() || unit.contains('/') || !unit.contains('.') {
        return Err(UnitError::InvalidName { unit: unit.into() });
    }
    // Search dirs, deduplicated by where they resolve (merged-/usr: /lib -> usr/lib).
    let mut dirs: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for d in UNIT_SEARCH_PATH {
        let r = resolve_host_path(root, d)?;
        if seen.insert(r.host.clone()) {
            dirs.push((*d).to_owned());
        }
    }

    let mut fragment: Option<String> = None;
    for d in &dirs {
        let host = format!("{d}/{unit}");
        let r = resolve_host_path(root, &host)?;
        let exists = r.host == "/dev/null" || fs::symlink_metadata(&r.disk).is_ok();
        if !exists {
            continue;
        }
        if is_null_or_empty(root, &host)? {
            return Err(UnitError::Masked {
                unit: unit.into(),
                path: host,
            });
        }
        if fs::metadata(&r.disk).map(|m| m.is_file()).unwrap_or(false) {
            fragment = Some(host);
            break;
        }
    }
    let Some(fragment) = fragment else {
        return Err(UnitError::NotFound { unit: unit.into() });
    };

    // Drop-ins: basename -> Some(host path) or None when masked; first directory wins.
    let mut dropins: BTreeMap<String, Option<String>> = BTreeMap::new();
    for d in &dirs {
        for name in dropin_dir_names(unit) {
            let dir_host = format!("{d}/{name}");
            let r = resolve_host_path(root, &dir_host)?;
            let Ok(rd) = fs::read_dir(&r.disk) else {
                continue;
            };
            let mut entries: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".conf") && !n.starts_with('.'))
                .collect();
            entries.sort();
            for n in entries {
                if dropins.contains_key(&n) {
                    continue; // overridden by a higher-priority directory
                }
                let host = format!("{dir_host}/{n}");
                if is_null_or_empty(root, &host)? {
                    dropins.insert(n, None);
                    continue;
                }
                let rr = resolve_host_path(root, &host)?;
                if fs::metadata(&rr.disk).map(|m| m.is_file()).unwrap_or(false) {
                    dropins.insert(n, Some(host));
                }
            }
        }
    }

    let hostname = read_host_file(root, "/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let spec = Specifiers {
        unit: unit.to_owned(),
        hostname,
    };
    let mut lu = LoadedUnit {
        name: unit.to_owned(),
        sources: Vec::new(),
        service_type: "simple".into(),
        exec_start: Vec::new(),
        environment: Vec::new(),
        environment_files: Vec::new(),
        unset_environment: Vec::new(),
        warnings: Vec::new(),
    };
    let files = std::iter::once(fragment).chain(dropins.into_values().flatten());
    for host in files {
        let text = read_host_file(root, &host)?;
        let (assignments, warnings) = parse_unit_text(&host, &text)?;
        lu.warnings.extend(warnings);
        for a in assignments {
            if a.section == "Service" {
                lu.apply(&a, &host, &spec);
            }
        }
        lu.sources.push(PathBuf::from(host.trim_start_matches('/')));
    }

    if lu.exec_start.is_empty() {
        return Err(UnitError::NoExecStart { unit: unit.into() });
    }
    if lu.exec_start.len() > 1 && lu.service_type != "oneshot" {
        return Err(UnitError::MultipleExecStart {
            unit: unit.into(),
            count: lu.exec_start.len(),
        });
    }
    Ok(lu)
}

impl LoadedUnit {
    fn warn(&mut self, path: &str, line: usize, msg: impl std::fmt::Display) {
        self.warnings.push(format!("{path}:{line}: {msg}"));
    }

    fn apply(&mut self, a: &Assignment, path: &str, spec: &Specifiers) {
        let v = a.value.as_str();
        match a.key.as_str() {
            "Type" => {
                self.service_type = if v.is_empty() {
                    "simple".into()
                } else {
                    v.into()
                }
            }
            "ExecStart" => {
                if v.is_empty() {
                    self.exec_start.clear();
                    return;
                }
                match parse_exec(v, spec) {
                    Ok(c) => self.exec_start.extend(c),
                    Err(e) => self.warn(path, a.line, format_args!("ExecStart ignored: {e}")),
                }
            }
            "Environment" => {
                if v.is_empty() {
                    self.environment.clear();
                    return;
                }
                let mut p = v;
                loop {
                    let w = match extract_first_word(&mut p, EXEC_WORDS) {
                        Ok(Some(w)) => w,
                        Ok(None) => break,
                        Err(e) => {
                            self.warn(path, a.line, format_args!("Environment: {e}, ignoring"));
                            break;
                        }
                    };
                    let w = match spec.expand(&w) {
                        Ok(w) => w,
                        Err(e) => {
                            self.warn(path, a.line, e);
                            continue;
                        }
                    };
                    match env_assignment_split(&w) {
                        Some((k, val)) => env_set(&mut self.environment, k, val),
                        None => self.warn(
                            path,
                            a.line,
                            format_args!("invalid environment assignment {w:?}, ignoring"),
                        ),
                    }
                }
            }
            "EnvironmentFile" => {
                if v.is_empty() {
                    self.environment_files.clear();
                    return;
                }
                match spec.expand(v) {
                    Ok(e) if e.trim_start_matches('-').starts_with('/') => {
                        self.environment_files.push(e)
                    }
                    Ok(e) => self.warn(
                        path,
                        a.line,
                        format_args!("EnvironmentFile path {e:?} is not absolute, ignoring"),
                    ),
                    Err(e) => self.warn(path, a.line, e),
                }
            }
            "UnsetEnvironment" => {
                if v.is_empty() {
                    self.unset_environment.clear();
                    return;
                }
                match split_words(v, EXEC_WORDS) {
                    Ok(ws) => {
                        for w in ws {
                            if env_name_is_valid(&w) || env_assignment_split(&w).is_some() {
                                self.unset_environment.push(w);
                            } else {
                                self.warn(
                                    path,
                                    a.line,
                                    format_args!("invalid UnsetEnvironment entry {w:?}"),
                                );
                            }
                        }
                    }
                    Err(e) => self.warn(path, a.line, e),
                }
            }
            _ => {}
        }
    }

    /// The unit name ("kubelet.service").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Root-relative files that made the unit ("etc/systemd/system/kubelet.service.d/10-kubeadm.conf"),
    /// the unit file first, then drop-ins in the order applied.
    pub fn sources(&self) -> &[PathBuf] {
        &self.sources
    }

    /// The `ExecStart=` commands after resets (exactly one unless Type=oneshot).
    pub fn exec_start(&self) -> &[ExecCommand] {
        &self.exec_start
    }

    /// `EnvironmentFile=` entries as written (a leading `-` marks optional ones).
    pub fn environment_files(&self) -> &[String] {
        &self.environment_files
    }

    /// Merged `Environment=` assignments.
    pub fn environment(&self) -> &[(String, String)] {
        &self.environment
    }

    /// Lines systemd would have logged and ignored while loading.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The environment the service starts with: manager PATH, then `Environment=`, then each
    /// `EnvironmentFile=` in order (files override `Environment=` whatever their position;
    /// later files override earlier ones), then `UnsetEnvironment=`. Files are read now.
    pub fn exec_environment(&self, root: &Path) -> Result<BTreeMap<String, String>, UnitError> {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_owned(), MANAGER_PATH.to_owned());
        for (k, v) in &self.environment {
            env.insert(k.clone(), v.clone());
        }
        for entry in &self.environment_files {
            let (optional, pattern) = match entry.strip_prefix('-') {
                Some(p) => (true, p),
                None => (false, entry.as_str()),
            };
            let fail = |reason: String| UnitError::EnvironmentFile {
                unit: self.name.clone(),
                path: pattern.to_owned(),
                reason,
            };
            let files = match expand_glob(root, pattern) {
                Ok(f) if !f.is_empty() => f,
                Ok(_) if optional => continue,
                Ok(_) => return Err(fail("no such file or directory".into())),
                Err(e) if optional => {
                    let _ = e;
                    continue;
                }
                Err(e) => return Err(fail(e.to_string())),
            };
            for f in files {
                let text = match read_host_file(root, &f) {
                    Ok(t) => t,
                    Err(_) if optional => continue,
                    Err(e) => return Err(fail(e.to_string())),
                };
                for (k, v) in parse_env_file(&text) {
                    if env_name_is_valid(&k) && env_value_is_valid(&v) {
                        env.insert(k, v);
                    }
                }
            }
        }
        for u in &self.unset_environment {
            match u.split_once('=') {
                Some((k, v)) => {
                    if env.get(k).is_some_and(|cur| cur == v) {
                        env.remove(k);
                    }
                }
                None => {
                    env.remove(u);
                }
            }
        }
        Ok(env)
    }

    /// Expands the (first) `ExecStart=` command at (re)start time and returns its argv,
    /// argv[0] included (with `@`, argv[0] is the name given after the path).
    pub fn command_line(&self, root: &Path) -> Result<Vec<String>, UnitError> {
        let env = self.exec_environment(root)?;
        let cmd = self
            .exec_start
            .first()
            .ok_or_else(|| UnitError::NoExecStart {
                unit: self.name.clone(),
            })?;
        if cmd.no_env_expand {
            return Ok(cmd.argv.clone());
        }
        Ok(expand_argv(&cmd.argv, &env))
    }
}

/// EnvironmentFile= accepts glob patterns (systemd/systemd v255 src/core/execute.c,
/// exec_context_load_environment: `safe_glob(path, GLOB_NOSORT|GLOB_BRACE, …)`); we support `*`,
/// `?` in the last component, not braces, and return the matches sorted where systemd takes
/// them in directory order. A plain path is returned if it exists.
fn expand_glob(root: &Path, pattern: &str) -> Result<Vec<String>, UnitError> {
    let (dir, base) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    if !base.contains(['*', '?']) {
        let r = resolve_host_path(root, pattern)?;
        if r.host == "/dev/null" || r.disk.exists() {
            return Ok(vec![pattern.to_owned()]);
        }
        return Ok(vec![]);
    }
    let rd = resolve_host_path(root, if dir.is_empty() { "/" } else { dir })?;
    let Ok(entries) = fs::read_dir(&rd.disk) else {
        return Ok(vec![]);
    };
    let mut v: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && glob_match(base.as_bytes(), n.as_bytes()))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    v.sort();
    Ok(v)
}

fn glob_match(p: &[u8], s: &[u8]) -> bool {
    // one saved `*` to backtrack to (fnmatch's greedy-star walk): linear, where plain recursion
    // on `*` is exponential in the number of stars (found by fuzzing: tests/fuzz systemd_unit)
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    star = Some((sp, ss + 1));
                    pi = sp + 1;
                    si = ss + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The kubelet parses flags with pflag: `--name=value` or `--name value`, the last occurrence
/// wins, and `--` ends flag parsing. Other flags are assumed not to consume the next argument
/// (we do not know the kubelet's boolean flags), argv[0] is skipped. A trailing `--name` with no
/// value is ignored (pflag would fail).
pub fn last_flag<'a>(argv: &'a [String], name: &str) -> Option<&'a str> {
    let long = format!("--{name}");
    let with_eq = format!("--{name}=");
    let mut found = None;
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix(with_eq.as_str()) {
            found = Some(v);
        } else if a == long
            && let Some(v) = argv.get(i + 1)
        {
            found = Some(v.as_str());
            i += 1;
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, host: &str, text: &str) {
        let p = root.join(host.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn symlink(root: &Path, host: &str, target: &str) {
        let p = root.join(host.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = fs::remove_file(&p);
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    const BASE: &str = "[Unit]\nDescription=k\n[Service]\nExecStart=/usr/bin/kubelet\n";

    #[test]
    fn env_file_parsing() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("A=b\n", &[("A", "b")]),
            ("A=\"x y\"\n", &[("A", "x y")]),
            ("A='x \\n y'\n", &[("A", "x \\n y")]),
            ("A=\"a\\\"b\\$c\\qd\"\n", &[("A", "a\"b$c\\qd")]),
            ("A=--x --y   \n", &[("A", "--x --y")]),
            ("  A = v\n", &[("A", "v")]),
            ("# c\n; c\n\nA=1\nA=2\n", &[("A", "1"), ("A", "2")]),
            ("A=x\\\ny\n", &[("A", "xy")]),
            ("A=\"x\" \"y\"\n", &[("A", "xy")]),
            ("A=x \"y\"\n", &[("A", "x \"y\"")]),
            ("noequals\nB=1", &[("B", "1")]),
            ("export A=1\n", &[("export A", "1")]),
            ("A=\"unterminated", &[("A", "unterminated")]),
            ("A=\n", &[("A", "")]),
            (
                "KUBELET_KUBEADM_ARGS=\"--a=1 --b \"\n",
                &[("KUBELET_KUBEADM_ARGS", "--a=1 --b ")],
            ),
        ];
        for (input, want) in cases {
            let got = parse_env_file(input);
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "input {input:?}");
        }
    }

    #[test]
    fn argv_expansion() {
        let env: BTreeMap<String, String> = [
            ("A", "--x=1 --y=2"),
            ("E", ""),
            ("Q", "--labels=\"a b\" 'c d'"),
            ("S", "sp ace"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cases: &[(&[&str], &[&str])] = &[
            (&["k", "$A"], &["k", "--x=1", "--y=2"]),
            (&["k", "${A}"], &["k", "--x=1 --y=2"]),
            (&["k", "$E", "$UNSET", "z"], &["k", "z"]),
            (&["k", "${UNSET}"], &["k", ""]),
            (&["k", "--p=${S}/x"], &["k", "--p=sp ace/x"]),
            (&["k", "--p=$S"], &["k", "--p=$S"]),
            (&["k", "$$A", "a$$b"], &["k", "$A", "a$b"]),
            (&["k", "$Q"], &["k", "--labels=a b", "c d"]),
            (&["k", "$A-x"], &["k"]),
            (&["k", "${A"], &["k", "${A"]),
        ];
        for (argv, want) in cases {
            assert_eq!(expand_argv(&s(argv), &env), s(want), "argv {argv:?}");
        }
    }

    #[test]
    fn exec_parsing() {
        let spec = Specifiers {
            unit: "kubelet.service".into(),
            hostname: "node-1.example".into(),
        };
        let cases: &[(&str, Result<&[&str], ()>)] = &[
            (
                "/usr/bin/kubelet $A ${B}",
                Ok(&["/usr/bin/kubelet", "$A", "${B}"]),
            ),
            (
                "/bin/k \"a b\" 'c d' e\\tf",
                Ok(&["/bin/k", "a b", "c d", "e\tf"]),
            ),
            ("/bin/k --x=\"a b\"c", Ok(&["/bin/k", "--x=a bc"])),
            ("-/bin/k a", Ok(&["/bin/k", "a"])),
            ("@/bin/k kubelet a", Ok(&["kubelet", "a"])),
            (
                "/bin/k %n %H %l %%",
                Ok(&["/bin/k", "kubelet.service", "node-1.example", "node-1", "%"]),
            ),
            ("/bin/k \"unterminated", Err(())),
            ("/bin/k \\q", Err(())),
            ("/bin/k %z", Err(())),
            ("rel/k", Err(())),
            ("/bin/k \\; x", Ok(&["/bin/k", ";", "x"])),
        ];
        for (line, want) in cases {
            let got = parse_exec(line, &spec);
            match want {
                Ok(w) => assert_eq!(got.unwrap()[0].argv, s(w), "line {line:?}"),
                Err(()) => assert!(got.is_err(), "line {line:?} should fail: {got:?}"),
            }
        }
        let two = parse_exec("/bin/a 1 ; /bin/b 2", &spec).unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].argv, s(&["/bin/b", "2"]));
    }

    #[test]
    fn search_path_dropins_and_masking() {
        struct Case {
            name: &'static str,
            files: &'static [(&'static str, &'static str)],
            links: &'static [(&'static str, &'static str)],
            want: Result<&'static [&'static str], &'static str>,
            want_sources: usize,
        }
        const USR_UNIT: &str = "/usr/lib/systemd/system/kubelet.service";
        let cases = [
            Case {
                name: "etc unit beats usr/lib unit",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/etc/systemd/system/kubelet.service",
                        "[Service]\nExecStart=/etc/kubelet\n",
                    ),
                ],
                links: &[],
                want: Ok(&["/etc/kubelet"]),
                want_sources: 1,
            },
            Case {
                name: "etc drop-in masks same-named usr drop-in",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
                        "[Service]\nExecStart=\nExecStart=/usr/version\n",
                    ),
                    (
                        "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                        "[Service]\nExecStart=\nExecStart=/etc/version\n",
                    ),
                ],
                links: &[],
                want: Ok(&["/etc/version"]),
                want_sources: 2,
            },
            Case {
                name: "lexical order across directories",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/etc/systemd/system/kubelet.service.d/20-b.conf",
                        "[Service]\nExecStart=\nExecStart=/b\n",
                    ),
                    (
                        "/usr/lib/systemd/system/kubelet.service.d/30-c.conf",
                        "[Service]\nEnvironment=X=1\n",
                    ),
                    (
                        "/run/systemd/system/kubelet.service.d/10-a.conf",
                        "[Service]\nExecStart=\nExecStart=/a $X\n",
                    ),
                ],
                links: &[],
                want: Ok(&["/b"]),
                want_sources: 4,
            },
            Case {
                name: "drop-in masked by /dev/null symlink",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
                        "[Service]\nExecStart=\nExecStart=/x\n",
                    ),
                ],
                links: &[(
                    "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                    "/dev/null",
                )],
                want: Ok(&["/usr/bin/kubelet"]),
                want_sources: 1,
            },
            Case {
                name: "second ExecStart without reset",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/etc/systemd/system/kubelet.service.d/10.conf",
                        "[Service]\nExecStart=/x\n",
                    ),
                ],
                links: &[],
                want: Err("MultipleExecStart"),
                want_sources: 0,
            },
            Case {
                name: "oneshot may have two",
                files: &[(
                    USR_UNIT,
                    "[Service]\nType=oneshot\nExecStart=/a\nExecStart=/b\n",
                )],
                links: &[],
                want: Ok(&["/a"]),
                want_sources: 1,
            },
            Case {
                name: "reset leaves nothing",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/etc/systemd/system/kubelet.service.d/10.conf",
                        "[Service]\nExecStart=\n",
                    ),
                ],
                links: &[],
                want: Err("NoExecStart"),
                want_sources: 0,
            },
            Case {
                name: "masked unit",
                files: &[(USR_UNIT, BASE)],
                links: &[("/etc/systemd/system/kubelet.service", "/dev/null")],
                want: Err("Masked"),
                want_sources: 0,
            },
            Case {
                name: "not found",
                files: &[],
                links: &[],
                want: Err("NotFound"),
                want_sources: 0,
            },
            Case {
                name: "lib dir, /lib symlink to usr/lib is not searched twice",
                files: &[("/usr/lib/systemd/system/kubelet.service", BASE)],
                links: &[("/lib", "usr/lib")],
                want: Ok(&["/usr/bin/kubelet"]),
                want_sources: 1,
            },
            Case {
                name: "split /lib dir is searched last",
                files: &[
                    (
                        "/lib/systemd/system/kubelet.service",
                        "[Service]\nExecStart=/lib-version\n",
                    ),
                    (
                        "/lib/systemd/system/kubelet.service.d/10.conf",
                        "[Service]\nEnvironment=A=1\n",
                    ),
                ],
                links: &[],
                want: Ok(&["/lib-version"]),
                want_sources: 2,
            },
            Case {
                name: "bad section header fails the load",
                files: &[(USR_UNIT, "[Service\nExecStart=/x\n")],
                links: &[],
                want: Err("Syntax"),
                want_sources: 0,
            },
            Case {
                name: "continuation and comments inside it",
                files: &[(
                    USR_UNIT,
                    "[Service]\nExecStart=/k \\\n# comment\n  --a=1 \\\n  --b=2\n[Install]\nExecStart=/ignored\n",
                )],
                links: &[],
                want: Ok(&["/k", "--a=1", "--b=2"]),
                want_sources: 1,
            },
            Case {
                name: "service.d type-wide drop-in applies",
                files: &[
                    (USR_UNIT, BASE),
                    (
                        "/etc/systemd/system/service.d/50.conf",
                        "[Service]\nExecStart=\nExecStart=/typewide\n",
                    ),
                ],
                links: &[],
                want: Ok(&["/typewide"]),
                want_sources: 2,
            },
        ];
        for c in cases {
            let dir = tempfile::tempdir().unwrap();
            for (p, t) in c.files {
                write(dir.path(), p, t);
            }
            for (p, t) in c.links {
                symlink(dir.path(), p, t);
            }
            let got = load_unit(dir.path(), "kubelet.service");
            match c.want {
                Ok(argv) => {
                    let u = got.unwrap_or_else(|e| panic!("{}: {e}", c.name));
                    assert_eq!(u.command_line(dir.path()).unwrap(), s(argv), "{}", c.name);
                    assert_eq!(
                        u.sources().len(),
                        c.want_sources,
                        "{}: {:?}",
                        c.name,
                        u.sources()
                    );
                }
                Err(kind) => {
                    let e = got
                        .err()
                        .unwrap_or_else(|| panic!("{}: expected error", c.name));
                    assert!(format!("{e:?}").starts_with(kind), "{}: {e:?}", c.name);
                }
            }
        }
    }

    #[test]
    fn environment_files_at_start_time() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "/etc/systemd/system/kubelet.service",
            "[Service]\n\
             EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n\
             Environment=\"KUBELET_KUBECONFIG_ARGS=--kubeconfig=/etc/kubernetes/kubelet.conf\" B=unit\n\
             EnvironmentFile=-/etc/default/kubelet\n\
             ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS --b=${B}\n",
        );
        let u = load_unit(r, "kubelet.service").unwrap();
        // Neither optional file exists yet.
        assert_eq!(
            u.command_line(r).unwrap(),
            s(&[
                "/usr/bin/kubelet",
                "--kubeconfig=/etc/kubernetes/kubelet.conf",
                "--b=unit"
            ])
        );
        // Files are read at start time, not load time; files override Environment= even
        // when the EnvironmentFile= line comes first.
        write(
            r,
            "/var/lib/kubelet/kubeadm-flags.env",
            "KUBELET_KUBEADM_ARGS=\"--a=1\"\nB=file\n",
        );
        write(
            r,
            "/etc/default/kubelet",
            "KUBELET_EXTRA_ARGS=--kubeconfig=/other\nexport B=ignored\n",
        );
        assert_eq!(
            u.command_line(r).unwrap(),
            s(&[
                "/usr/bin/kubelet",
                "--kubeconfig=/etc/kubernetes/kubelet.conf",
                "--a=1",
                "--kubeconfig=/other",
                "--b=file"
            ])
        );
        // Editing the unit without reload changes nothing.
        write(
            r,
            "/etc/systemd/system/kubelet.service",
            "[Service]\nExecStart=/changed\n",
        );
        assert_eq!(u.command_line(r).unwrap()[0], "/usr/bin/kubelet");
    }

    #[test]
    fn required_vs_optional_environment_file() {
        let cases = [
            ("EnvironmentFile=/missing.env\n", Some("/missing.env")),
            ("EnvironmentFile=-/missing.env\n", None),
            ("EnvironmentFile=-/etc/kubelet.d/*.env\n", None),
            (
                "EnvironmentFile=/etc/kubelet.d/*.env\n",
                Some("/etc/kubelet.d/*.env"),
            ),
        ];
        for (line, err) in cases {
            let dir = tempfile::tempdir().unwrap();
            write(
                dir.path(),
                "/etc/systemd/system/k.service",
                &format!("[Service]\n{line}ExecStart=/k\n"),
            );
            let u = load_unit(dir.path(), "k.service").unwrap();
            match (u.command_line(dir.path()), err) {
                (Ok(_), None) => {}
                (Err(UnitError::EnvironmentFile { path, .. }), Some(p)) => {
                    assert_eq!(path, p, "{line}")
                }
                (got, _) => panic!("{line}: {got:?}"),
            }
        }
        // Glob matches are read in sorted order.
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "/etc/systemd/system/k.service",
            "[Service]\nEnvironmentFile=/etc/k/*.env\nExecStart=/k $A\n",
        );
        write(r, "/etc/k/b.env", "A=b");
        write(r, "/etc/k/a.env", "A=a");
        let u = load_unit(r, "k.service").unwrap();
        assert_eq!(u.command_line(r).unwrap(), s(&["/k", "b"]));
    }

    #[test]
    fn unset_and_no_expand_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "/etc/systemd/system/k.service",
            "[Service]\nEnvironment=A=1 B=2\nUnsetEnvironment=A B=3\nExecStart=/k $A $B\n",
        );
        write(
            r,
            "/etc/systemd/system/c.service",
            "[Service]\nEnvironment=A=1\nExecStart=:/k $A\n",
        );
        assert_eq!(
            load_unit(r, "k.service").unwrap().command_line(r).unwrap(),
            s(&["/k", "2"])
        );
        assert_eq!(
            load_unit(r, "c.service").unwrap().command_line(r).unwrap(),
            s(&["/k", "$A"])
        );
    }

    #[test]
    fn root_confinement_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "/var/lib/kubelet/pki/kubelet-client-2025.pem", "x");
        symlink(
            r,
            "/var/lib/kubelet/pki/kubelet-client-current.pem",
            "/var/lib/kubelet/pki/kubelet-client-2025.pem",
        );
        symlink(r, "/a/rel", "../var/lib");
        symlink(r, "/loop", "/loop");
        let cases: &[(&str, Result<&str, &str>)] = &[
            (
                "/var/lib/kubelet/pki/kubelet-client-current.pem",
                Ok("/var/lib/kubelet/pki/kubelet-client-2025.pem"),
            ),
            ("/a/rel/kubelet", Ok("/var/lib/kubelet")),
            ("/etc/../etc/x", Ok("/etc/x")),
            ("/../etc", Err("EscapesRoot")),
            ("/etc/../../x", Err("EscapesRoot")),
            ("/loop", Err("SymlinkLoop")),
        ];
        for (p, want) in cases {
            match (resolve_host_path(r, p), want) {
                (Ok(got), Ok(w)) => {
                    assert_eq!(got.host, *w, "{p}");
                    assert_eq!(got.disk, r.join(w.trim_start_matches('/')));
                }
                (Err(e), Err(k)) => assert!(format!("{e:?}").starts_with(k), "{p}: {e:?}"),
                (got, _) => panic!("{p}: {got:?}"),
            }
        }
    }

    #[test]
    fn last_flag_forms() {
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["k", "--kubeconfig=/a"], Some("/a")),
            (&["k", "--kubeconfig", "/a"], Some("/a")),
            (&["k", "--kubeconfig=/a", "--kubeconfig", "/b"], Some("/b")),
            (&["k", "--kubeconfig", "/a", "--kubeconfig=/c"], Some("/c")),
            (&["k", "--kubeconfig="], Some("")),
            (&["k", "--kubeconfig-dir=/x"], None),
            (&["k", "--bootstrap-kubeconfig=/x"], None),
            (
                &["k", "--kubeconfig=/a", "--", "--kubeconfig=/b"],
                Some("/a"),
            ),
            (&["k", "--kubeconfig"], None),
            (&["--kubeconfig=/argv0"], None),
        ];
        for (argv, want) in cases {
            let argv = s(argv);
            assert_eq!(last_flag(&argv, "kubeconfig"), *want, "{argv:?}");
        }
    }

    #[test]
    fn globs_match_like_fnmatch_and_stay_linear() {
        for (p, s, want) in [
            ("*.env", "kubeadm-flags.env", true),
            ("*.env", "kubeadm-flags.conf", false),
            ("kube?dm-*", "kubeadm-flags.env", true),
            ("k*f*s.env", "kubeadm-flags.env", true),
            ("*a*a*a", "aaa", true),
            ("*a*a*a*a", "aaa", false),
            ("*", "", true),
            ("?", "", false),
            ("a*b", "ab", true),
            ("a*b", "abc", false),
        ] {
            assert_eq!(glob_match(p.as_bytes(), s.as_bytes()), want, "{p} ~ {s}");
        }
        // the fuzzer's pathological pattern: exponential with plain recursion
        let p = format!("{}kubeadm-flags.env", "*".repeat(60));
        assert!(!glob_match(p.as_bytes(), "x".repeat(200).as_bytes()));
        assert!(glob_match(
            p.as_bytes(),
            format!("{}kubeadm-flags.env", "x".repeat(200)).as_bytes()
        ));
    }
}
