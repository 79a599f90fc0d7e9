//! Reads a service the way systemd (PID 1, system scope) does and computes the argv it
//! executes, remembering for every byte of every argument where it came from: which file,
//! which byte offset, and through which environment variable. That provenance is what lets
//! the kubelet editor change exactly the bytes that make a flag effective.
//!
//! Modelled: the unit search path (first fragment wins, masking), drop-ins `<unit>.d/*.conf`
//! and `service.d/*.conf` (same-name masking by directory priority, lexical order), line
//! continuations and comments, `[Service]` `ExecStart=` (resets, prefixes, quoting, C
//! escapes), `Environment=` (quoted multi-assignments), `EnvironmentFile=` (`-` optional,
//! globs in the last component; files override `Environment=`, later files override earlier),
//! `UnsetEnvironment=`, common `%` specifiers, and exec-time `$VAR` (word-split) versus
//! `${VAR}` (verbatim inside one word) and `$$`.

use std::collections::BTreeMap;

use super::error::{Result, ServantError};
use super::hostfs::HostFs;

/// System-scope unit directories, highest priority first. On merged-/usr hosts `/lib` is a
/// symlink to `usr/lib`; directories that resolve to the same place are searched once.
pub const UNIT_DIRS: &[&str] = &[
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

const WS: &[u8] = b" \t\n\r";

/// systemd's WHITESPACE; Rust's `trim` would also take form feeds and Unicode spaces, which
/// systemd keeps as part of a key.
fn is_ws(c: char) -> bool {
    c.is_ascii() && WS.contains(&(c as u8))
}

// ---------------------------------------------------------------------------------------
// Traced strings

/// Where one byte of a parsed string came from: a byte offset in one of the source files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: usize,
    pub offset: usize,
}

/// A string whose bytes remember their origin. `None` marks bytes that do not appear
/// verbatim in any file (escape results, specifier expansions, joined continuation lines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traced {
    pub text: String,
    pub origin: Vec<Option<Origin>>,
}

impl Traced {
    /// Text read verbatim from `file` starting at `offset`.
    pub fn verbatim(text: &str, file: usize, offset: usize) -> Traced {
        Traced {
            text: text.to_owned(),
            origin: (0..text.len())
                .map(|i| {
                    Some(Origin {
                        file,
                        offset: offset + i,
                    })
                })
                .collect(),
        }
    }

    fn synthetic(text: &str) -> Traced {
        Traced {
            text: text.to_owned(),
            origin: vec![None; text.len()],
        }
    }

    fn push_char(&mut self, c: char, at: Option<Origin>) {
        let n = c.len_utf8();
        self.text.push(c);
        for i in 0..n {
            self.origin.push(at.map(|o| Origin {
                file: o.file,
                offset: o.offset + i,
            }));
        }
    }

    fn push_traced(&mut self, t: &Traced) {
        self.text.push_str(&t.text);
        self.origin.extend_from_slice(&t.origin);
    }

    fn slice(&self, a: usize, b: usize) -> Traced {
        Traced {
            text: self.text[a..b].to_owned(),
            origin: self.origin[a..b].to_vec(),
        }
    }

    fn trim(&self) -> Traced {
        let s = self.text.as_bytes();
        let a = s.iter().position(|c| !WS.contains(c)).unwrap_or(s.len());
        let b = s.iter().rposition(|c| !WS.contains(c)).map_or(a, |i| i + 1);
        self.slice(a, b)
    }

    /// The file span holding bytes `a..b` verbatim, if they are contiguous in one file.
    /// An empty range is anchored at the origin of the byte before it (or after it).
    pub fn span(&self, a: usize, b: usize) -> Option<(usize, usize, usize)> {
        if a == b {
            if a > 0
                && let Some(Some(o)) = self.origin.get(a - 1)
            {
                return Some((o.file, o.offset + 1, o.offset + 1));
            }
            if let Some(Some(o)) = self.origin.get(a) {
                return Some((o.file, o.offset, o.offset));
            }
            return None;
        }
        let first = (*self.origin.get(a)?)?;
        for (i, o) in self.origin[a..b].iter().enumerate() {
            let o = (*o)?;
            if o.file != first.file || o.offset != first.offset + i {
                return None;
            }
        }
        Some((first.file, first.offset, first.offset + (b - a)))
    }
}

// ---------------------------------------------------------------------------------------
// Word splitting (systemd's extract_first_word semantics)

#[derive(Clone, Copy)]
struct WordRules {
    unquote: bool,
    cunescape: bool,
    relax: bool,
}

const EXEC_RULES: WordRules = WordRules {
    unquote: true,
    cunescape: true,
    relax: false,
};
const SPLIT_RULES: WordRules = WordRules {
    unquote: true,
    cunescape: false,
    relax: true,
};

/// Decodes one C escape (the text after a backslash). Returns the char and bytes consumed.
fn c_escape(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    let hex = |from: usize, n: usize| -> Option<u32> {
        let t = s.get(from..from + n)?;
        if t.bytes().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(t, 16).ok()
        } else {
            None
        }
    };
    let simple = match *b.first()? {
        b'a' => '\u{7}',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'v' => '\u{b}',
        b'\\' => '\\',
        b'"' => '"',
        b'\'' => '\'',
        b's' => ' ',
        b'x' => {
            let v = hex(1, 2).filter(|v| *v != 0)?;
            return char::from_u32(v).map(|c| (c, 3));
        }
        b'u' => {
            let v = hex(1, 4).filter(|v| *v != 0)?;
            return char::from_u32(v).map(|c| (c, 5));
        }
        b'U' => {
            let v = hex(1, 8).filter(|v| *v != 0)?;
            return char::from_u32(v).map(|c| (c, 9));
        }
        b'0'..=b'7' => {
            let t = s.get(0..3)?;
            if !t.bytes().all(|c| (b'0'..=b'7').contains(&c)) {
                return None;
            }
            let v = u32::from_str_radix(t, 8)
                .ok()
                .filter(|v| *v != 0 && *v <= 255)?;
            return char::from_u32(v).map(|c| (c, 3));
        }
        _ => return None,
    };
    Some((simple, 1))
}

/// Splits a traced string into words. Err = unbalanced quote or bad escape (strict rules).
fn split_words(s: &Traced, rules: WordRules) -> std::result::Result<Vec<Traced>, String> {
    let text = s.text.as_str();
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && WS.contains(&bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            return Ok(words);
        }
        let mut w = Traced::default();
        let mut quote: Option<u8> = None;
        while i < bytes.len() {
            let c = bytes[i];
            if c == b'\\' {
                let rest = &text[i + 1..];
                if rest.is_empty() {
                    if rules.relax {
                        i += 1;
                        break;
                    }
                    return Err("trailing backslash".into());
                }
                if rules.cunescape {
                    let (ch, used) =
                        c_escape(rest).ok_or_else(|| format!("invalid escape in {text:?}"))?;
                    w.push_char(ch, None);
                    i += 1 + used;
                } else {
                    let ch = rest.chars().next().expect("non-empty");
                    w.push_char(ch, None);
                    i += 1 + ch.len_utf8();
                }
                continue;
            }
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                    i += 1;
                } else {
                    let ch = text[i..].chars().next().expect("in bounds");
                    w.push_char(ch, s.origin[i]);
                    i += ch.len_utf8();
                }
                continue;
            }
            if rules.unquote && (c == b'"' || c == b'\'') {
                quote = Some(c);
                i += 1;
                continue;
            }
            if WS.contains(&c) {
                break;
            }
            let ch = text[i..].chars().next().expect("in bounds");
            w.push_char(ch, s.origin[i]);
            i += ch.len_utf8();
        }
        if quote.is_some() && !rules.relax {
            return Err(format!("unbalanced quoting in {text:?}"));
        }
        words.push(w);
    }
}

// ---------------------------------------------------------------------------------------
// Unit files

/// A file that contributed to the unit or its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The path as referenced (search path entry, `EnvironmentFile=` value).
    pub host: String,
    /// The canonical host path after symlinks (what an edit must write).
    pub resolved: String,
    pub kind: SourceKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    Unit,
    DropIn,
    EnvironmentFile,
}

struct Assignment {
    section: String,
    key: String,
    value: Traced,
    line: usize,
}

/// Splits unit-file text into assignments with traced values. Comment lines are skipped
/// (also inside a continuation); an odd number of trailing backslashes continues the line,
/// the backslash becoming a space.
fn parse_unit_text(
    host: &str,
    file: usize,
    text: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Assignment>> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    let mut pending: Option<(Traced, usize)> = None;
    let mut offset = 0usize;
    let body_start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let lines: Vec<&str> = text[body_start..].split('\n').collect();
    offset += body_start;
    let mut finish = |logical: Traced, lineno: usize, section: &mut Option<String>| -> Result<()> {
        let l = logical.trim();
        if l.text.is_empty() {
            return Ok(());
        }
        if l.text.starts_with('[') {
            if !l.text.ends_with(']') || l.text.len() < 2 {
                return Err(ServantError::UnitSyntax {
                    path: host.into(),
                    line: lineno,
                    message: format!("invalid section header {:?}", l.text),
                });
            }
            *section = Some(l.text[1..l.text.len() - 1].to_owned());
            return Ok(());
        }
        let Some(sec) = section.clone() else {
            warnings.push(format!(
                "{host}:{lineno}: assignment outside of a section, ignored"
            ));
            return Ok(());
        };
        let Some(eq) = l.text.find('=') else {
            warnings.push(format!("{host}:{lineno}: missing '=', line ignored"));
            return Ok(());
        };
        out.push(Assignment {
            section: sec,
            key: l.text[..eq].trim_matches(is_ws).to_owned(),
            value: l.slice(eq + 1, l.text.len()).trim(),
            line: lineno,
        });
        Ok(())
    };
    for (idx, raw_full) in lines.iter().enumerate() {
        let lineno = idx + 1;
        let raw = raw_full.strip_suffix('\r').unwrap_or(raw_full);
        let line_start = offset;
        offset += raw_full.len() + 1;
        let lead = raw.trim_start_matches([' ', '\t']);
        if lead.starts_with('#') || lead.starts_with(';') {
            continue;
        }
        let mut logical = match pending.take() {
            Some((t, _)) => t,
            None => Traced::default(),
        };
        let start_line = if logical.text.is_empty() {
            lineno
        } else {
            lineno - 1
        };
        let piece = Traced::verbatim(raw, file, line_start);
        let trailing = raw.bytes().rev().take_while(|&c| c == b'\\').count();
        if trailing % 2 == 1 {
            logical.push_traced(&piece.slice(0, raw.len() - 1));
            logical.push_char(' ', None);
            pending = Some((logical, start_line));
            continue;
        }
        logical.push_traced(&piece);
        finish(logical, lineno, &mut section)?;
    }
    if let Some((t, l)) = pending {
        finish(t, l, &mut section)?;
    }
    Ok(out)
}

/// `%` specifiers systemd would expand in the settings we read.
struct Specifiers {
    unit: String,
    hostname: String,
}

impl Specifiers {
    fn expand(&self, s: &Traced) -> std::result::Result<Traced, String> {
        if !s.text.contains('%') {
            return Ok(s.clone());
        }
        let stem = self
            .unit
            .rsplit_once('.')
            .map_or(self.unit.as_str(), |p| p.0);
        let prefix = stem.split_once('@').map_or(stem, |p| p.0);
        let instance = stem.split_once('@').map_or("", |p| p.1);
        let mut out = Traced::default();
        let mut it = s.text.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if c != '%' {
                out.push_char(c, s.origin[i]);
                continue;
            }
            let Some((_, k)) = it.next() else {
                out.push_char('%', None);
                break;
            };
            let v: String = match k {
                '%' => "%".into(),
                'n' => self.unit.clone(),
                'N' => stem.into(),
                'p' => prefix.into(),
                'i' => instance.into(),
                'H' => self.hostname.clone(),
                'l' => self.hostname.split('.').next().unwrap_or_default().into(),
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
                other => return Err(format!("unsupported specifier %{other}")),
            };
            out.push_traced(&Traced::synthetic(&v));
        }
        Ok(out)
    }
}

fn env_name_ok(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn env_value_ok(v: &str) -> bool {
    !v.chars().any(|c| c.is_control() && c != '\t' && c != '\n')
}

/// Where a variable's value was set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSource {
    pub file: usize,
    pub line: usize,
    pub kind: SourceKind,
}

#[derive(Clone, Debug)]
struct Var {
    value: Traced,
    source: VarSource,
}

/// The `ExecStart=` command as loaded (before `$` expansion).
#[derive(Clone, Debug)]
struct Exec {
    argv: Vec<Traced>,
    no_env_expand: bool,
}

/// A unit after `systemctl daemon-reload`.
#[derive(Clone, Debug)]
pub struct LoadedUnit {
    pub name: String,
    pub files: Vec<SourceFile>,
    pub warnings: Vec<String>,
    environment: Vec<(String, Var)>,
    environment_files: Vec<String>,
    unset: Vec<String>,
    exec: Vec<Exec>,
    service_type: String,
}

fn dropin_dirs(unit: &str) -> Vec<String> {
    let mut v = vec![format!("{unit}.d")];
    if let Some((stem, ty)) = unit.rsplit_once('.') {
        let prefix = stem.split_once('@').map_or(stem, |p| p.0);
        let mut cut = prefix;
        while let Some(i) = cut.rfind('-') {
            cut = &cut[..i];
            v.push(format!("{cut}-.{ty}.d"));
        }
        v.push(format!("{ty}.d"));
    }
    v
}

/// Loads `unit` from the host like `systemctl daemon-reload`.
pub fn load_unit(fs: &HostFs, unit: &str) -> Result<LoadedUnit> {
    if unit.is_empty() || unit.contains('/') || !unit.contains('.') || unit.contains("..") {
        return Err(ServantError::InvalidName {
            name: unit.into(),
            reason: "not a unit name".into(),
        });
    }
    let mut dirs: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for d in UNIT_DIRS {
        if seen.insert(fs.resolve(d)?) {
            dirs.push(d);
        }
    }
    let mut fragment = None;
    for d in &dirs {
        let host = format!("{d}/{unit}");
        let resolved = fs.resolve(&host)?;
        let present = resolved == "/dev/null"
            || std::fs::symlink_metadata(fs.disk_path(&resolved)).is_ok()
            || fs.is_file(&host)?;
        if !present {
            continue;
        }
        if fs.is_null_or_empty(&host)? {
            return Err(ServantError::UnitMasked {
                unit: unit.into(),
                path: host,
            });
        }
        if fs.is_file(&host)? {
            fragment = Some(host);
            break;
        }
    }
    let Some(fragment) = fragment else {
        return Err(ServantError::UnitNotFound { unit: unit.into() });
    };

    let mut dropins: BTreeMap<String, Option<String>> = BTreeMap::new();
    for d in &dirs {
        for name in dropin_dirs(unit) {
            let dir = format!("{d}/{name}");
            for n in fs.list_dir(&dir)? {
                if !n.ends_with(".conf") || n.starts_with('.') || dropins.contains_key(&n) {
                    continue;
                }
                let host = format!("{dir}/{n}");
                if fs.is_null_or_empty(&host)? {
                    dropins.insert(n, None);
                } else if fs.is_file(&host)? {
                    dropins.insert(n, Some(host));
                }
            }
        }
    }

    let hostname = fs
        .read_text("/etc/hostname")
        .ok()
        .flatten()
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let spec = Specifiers {
        unit: unit.into(),
        hostname,
    };
    let mut lu = LoadedUnit {
        name: unit.into(),
        files: Vec::new(),
        warnings: Vec::new(),
        environment: Vec::new(),
        environment_files: Vec::new(),
        unset: Vec::new(),
        exec: Vec::new(),
        service_type: "simple".into(),
    };
    let all = std::iter::once((fragment, SourceKind::Unit)).chain(
        dropins
            .into_values()
            .flatten()
            .map(|h| (h, SourceKind::DropIn)),
    );
    for (host, kind) in all {
        let text = fs.read_text(&host)?.unwrap_or_default();
        let idx = lu.files.len();
        lu.files.push(SourceFile {
            resolved: fs.resolve(&host)?,
            host: host.clone(),
            kind,
        });
        let mut warnings = Vec::new();
        let assignments = parse_unit_text(&host, idx, &text, &mut warnings)?;
        lu.warnings.extend(warnings);
        for a in assignments.into_iter().filter(|a| a.section == "Service") {
            lu.apply(&a, idx, &spec);
        }
    }
    let n = lu.exec.len();
    if n == 0 || (n > 1 && lu.service_type != "oneshot") {
        return Err(ServantError::ExecStart {
            unit: unit.into(),
            count: n,
        });
    }
    Ok(lu)
}

impl LoadedUnit {
    fn warn(&mut self, file: usize, line: usize, msg: impl std::fmt::Display) {
        let host = self.files[file].host.clone();
        self.warnings.push(format!("{host}:{line}: {msg}"));
    }

    fn apply(&mut self, a: &Assignment, file: usize, spec: &Specifiers) {
        let empty = a.value.text.is_empty();
        match a.key.as_str() {
            "Type" => {
                self.service_type = if empty {
                    "simple".into()
                } else {
                    a.value.text.clone()
                }
            }
            "ExecStart" => {
                if empty {
                    self.exec.clear();
                    return;
                }
                match parse_exec(&a.value, spec) {
                    Ok(cmds) => self.exec.extend(cmds),
                    Err(e) => self.warn(file, a.line, format_args!("ExecStart= ignored: {e}")),
                }
            }
            "Environment" => {
                if empty {
                    self.environment.clear();
                    return;
                }
                let words = match split_words(&a.value, EXEC_RULES) {
                    Ok(w) => w,
                    Err(e) => {
                        self.warn(file, a.line, format_args!("Environment= ignored: {e}"));
                        return;
                    }
                };
                for w in words {
                    let w = match spec.expand(&w) {
                        Ok(w) => w,
                        Err(e) => {
                            self.warn(file, a.line, e);
                            continue;
                        }
                    };
                    let Some(eq) = w.text.find('=') else {
                        self.warn(
                            file,
                            a.line,
                            format_args!("invalid assignment {:?}", w.text),
                        );
                        continue;
                    };
                    let (k, v) = (&w.text[..eq], w.slice(eq + 1, w.text.len()));
                    if !env_name_ok(k) || !env_value_ok(&v.text) {
                        self.warn(
                            file,
                            a.line,
                            format_args!("invalid assignment {:?}", w.text),
                        );
                        continue;
                    }
                    let var = Var {
                        value: v,
                        source: VarSource {
                            file,
                            line: a.line,
                            kind: self.files[file].kind,
                        },
                    };
                    self.environment.retain(|(n, _)| n != k);
                    self.environment.push((k.to_owned(), var));
                }
            }
            "EnvironmentFile" => {
                if empty {
                    self.environment_files.clear();
                    return;
                }
                match spec.expand(&a.value) {
                    Ok(e) if e.text.trim_start_matches('-').starts_with('/') => {
                        self.environment_files.push(e.text)
                    }
                    Ok(e) => self.warn(
                        file,
                        a.line,
                        format_args!("EnvironmentFile={} is not absolute, ignored", e.text),
                    ),
                    Err(e) => self.warn(file, a.line, e),
                }
            }
            "UnsetEnvironment" => {
                if empty {
                    self.unset.clear();
                    return;
                }
                if let Ok(ws) = split_words(&a.value, EXEC_RULES) {
                    self.unset.extend(ws.into_iter().map(|w| w.text));
                }
            }
            _ => {}
        }
    }

    /// `EnvironmentFile=` entries as written (`-` prefix = optional).
    pub fn environment_files(&self) -> &[String] {
        &self.environment_files
    }

    /// Computes the argv systemd would execute now (environment files read now).
    pub fn effective_argv(&self, fs: &HostFs) -> Result<EffectiveArgv> {
        let mut files = self.files.clone();
        let mut env: BTreeMap<String, Var> = BTreeMap::new();
        for (k, v) in &self.environment {
            env.insert(k.clone(), v.clone());
        }
        for entry in &self.environment_files {
            let (optional, pattern) = match entry.strip_prefix('-') {
                Some(p) => (true, p),
                None => (false, entry.as_str()),
            };
            let fail = |reason: &str| ServantError::EnvironmentFile {
                unit: self.name.clone(),
                path: pattern.into(),
                reason: reason.into(),
            };
            let matches = expand_glob(fs, pattern)?;
            if matches.is_empty() {
                if optional {
                    continue;
                }
                return Err(fail("no such file"));
            }
            for host in matches {
                let Some(text) = fs.read_text(&host)? else {
                    if optional {
                        continue;
                    }
                    return Err(fail("no such file"));
                };
                let idx = files.len();
                files.push(SourceFile {
                    resolved: fs.resolve(&host)?,
                    host: host.clone(),
                    kind: SourceKind::EnvironmentFile,
                });
                for (k, line, v) in parse_env_file(&text, idx) {
                    if env_name_ok(&k) && env_value_ok(&v.text) {
                        env.insert(
                            k,
                            Var {
                                value: v,
                                source: VarSource {
                                    file: idx,
                                    line,
                                    kind: SourceKind::EnvironmentFile,
                                },
                            },
                        );
                    }
                }
            }
        }
        for u in &self.unset {
            match u.split_once('=') {
                Some((k, v)) => {
                    if env.get(k).is_some_and(|cur| cur.value.text == v) {
                        env.remove(k);
                    }
                }
                None => {
                    env.remove(u);
                }
            }
        }
        let exec = &self.exec[0];
        let mut tokens = Vec::new();
        for (word_index, w) in exec.argv.iter().enumerate() {
            if exec.no_env_expand {
                tokens.push(ArgToken {
                    value: w.clone(),
                    via: None,
                    word_index,
                });
                continue;
            }
            let b = w.text.as_bytes();
            if b.first() == Some(&b'$') && !matches!(b.get(1), Some(b'{') | Some(b'$')) {
                let name = &w.text[1..];
                if env_name_ok(name) {
                    if let Some(var) = env.get(name) {
                        for t in split_words(&var.value, SPLIT_RULES).unwrap_or_default() {
                            tokens.push(ArgToken {
                                value: t,
                                via: Some(Via {
                                    variable: name.to_owned(),
                                    source: var.source.clone(),
                                }),
                                word_index,
                            });
                        }
                    }
                    continue;
                }
            }
            let (value, via) = replace_braced(w, &env);
            tokens.push(ArgToken {
                value,
                via,
                word_index,
            });
        }
        Ok(EffectiveArgv {
            tokens,
            files,
            unit: self.name.clone(),
        })
    }
}

fn parse_exec(v: &Traced, spec: &Specifiers) -> std::result::Result<Vec<Exec>, String> {
    let words = split_words(v, EXEC_RULES)?;
    let mut cmds = Vec::new();
    let mut it = words.into_iter().peekable();
    while it.peek().is_some() {
        let first = it.next().expect("peeked");
        let mut skip = 0;
        let mut no_env = false;
        for c in first.text.bytes() {
            match c {
                b'-' | b'@' | b'+' | b'!' => skip += 1,
                b':' => {
                    no_env = true;
                    skip += 1
                }
                _ => break,
            }
        }
        let path = spec.expand(&first.slice(skip, first.text.len()))?;
        let mut argv = vec![path];
        for w in it.by_ref() {
            if w.text == ";" {
                break;
            }
            argv.push(spec.expand(&w)?);
        }
        cmds.push(Exec {
            argv,
            no_env_expand: no_env,
        });
    }
    Ok(cmds)
}

/// `${NAME}` replaced verbatim (unset → ""), `$$` → `$`, other `$` kept.
fn replace_braced(w: &Traced, env: &BTreeMap<String, Var>) -> (Traced, Option<Via>) {
    let t = &w.text;
    let b = t.as_bytes();
    let mut out = Traced::default();
    let mut via = None;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            if b[i + 1] == b'$' {
                out.push_char('$', None);
                i += 2;
                continue;
            }
            if b[i + 1] == b'{' {
                if let Some(close) = t[i + 2..].find('}') {
                    let name = &t[i + 2..i + 2 + close];
                    if let Some(v) = env.get(name) {
                        out.push_traced(&v.value);
                        via = Some(Via {
                            variable: name.to_owned(),
                            source: v.source.clone(),
                        });
                    }
                    i += close + 3;
                    continue;
                }
                out.push_traced(&w.slice(i, b.len()));
                return (out, via);
            }
        }
        let ch = t[i..].chars().next().expect("in bounds");
        out.push_char(ch, w.origin[i]);
        i += ch.len_utf8();
    }
    (out, via)
}

/// The files an `EnvironmentFile=` pattern names: `*` and `?` in the last component, as systemd
/// globs it (systemd/systemd v255 src/core/execute.c, exec_context_load_environment).
fn expand_glob(fs: &HostFs, pattern: &str) -> Result<Vec<String>> {
    let (dir, base) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    if !base.contains(['*', '?']) {
        return Ok(if fs.read(pattern)?.is_some() {
            vec![pattern.to_owned()]
        } else {
            vec![]
        });
    }
    let dir_host = if dir.is_empty() { "/" } else { dir };
    Ok(fs
        .list_dir(dir_host)?
        .into_iter()
        .filter(|n| !n.starts_with('.') && glob(base.as_bytes(), n.as_bytes()))
        .map(|n| format!("{dir}/{n}"))
        .collect())
}

fn glob(p: &[u8], s: &[u8]) -> bool {
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

/// Parses an environment file like systemd's env-file parser: `KEY=value` lines, `#`/`;`
/// comments, single quotes verbatim, double quotes with `\"`, `\\`, `` \` ``, `\$` escapes,
/// unquoted values trimmed with backslash escapes, backslash-newline continuations.
/// Returns (key, line, value) in file order.
pub fn parse_env_file(text: &str, file: usize) -> Vec<(String, usize, Traced)> {
    #[derive(PartialEq, Clone, Copy)]
    enum St {
        PreKey,
        Key,
        PreValue,
        Value,
        ValueEsc,
        Single,
        Double,
        DoubleEsc,
        Comment,
        CommentEsc,
    }
    let nl = |c: char| c == '\n' || c == '\r';
    let ws = is_ws;
    let mut out = Vec::new();
    let mut st = St::PreKey;
    let mut key = String::new();
    let mut key_line = 1;
    let mut line = 1;
    let mut value = Traced::default();
    let mut last_good = 0usize; // value length up to the last non-whitespace (unquoted)
    let done = |out: &mut Vec<(String, usize, Traced)>, key: &str, l: usize, v: Traced| {
        out.push((key.trim_end_matches(is_ws).to_owned(), l, v));
    };
    for (i, c) in text.char_indices() {
        let here = Some(Origin { file, offset: i });
        match st {
            St::PreKey => {
                if c == '#' || c == ';' {
                    st = St::Comment;
                } else if !ws(c) {
                    st = St::Key;
                    key.clear();
                    key.push(c);
                    key_line = line;
                }
            }
            St::Key => {
                if nl(c) {
                    st = St::PreKey;
                } else if c == '=' {
                    st = St::PreValue;
                    value = Traced::default();
                    last_good = 0;
                } else {
                    key.push(c);
                }
            }
            St::PreValue => {
                if nl(c) {
                    st = St::PreKey;
                    done(&mut out, &key, key_line, std::mem::take(&mut value));
                } else if c == '\'' {
                    st = St::Single;
                } else if c == '"' {
                    st = St::Double;
                } else if c == '\\' {
                    st = St::ValueEsc;
                } else if !ws(c) {
                    st = St::Value;
                    value.push_char(c, here);
                    last_good = value.text.len();
                }
            }
            St::Value => {
                if nl(c) {
                    st = St::PreKey;
                    let v = value.slice(0, last_good);
                    done(&mut out, &key, key_line, v);
                    value = Traced::default();
                } else if c == '\\' {
                    st = St::ValueEsc;
                } else {
                    value.push_char(c, here);
                    if !ws(c) {
                        last_good = value.text.len();
                    }
                }
            }
            St::ValueEsc => {
                st = St::Value;
                if !nl(c) {
                    value.push_char(c, None);
                    last_good = value.text.len();
                }
            }
            St::Single => {
                if c == '\'' {
                    st = St::PreValue;
                } else {
                    value.push_char(c, here);
                }
            }
            St::Double => {
                if c == '"' {
                    st = St::PreValue;
                } else if c == '\\' {
                    st = St::DoubleEsc;
                } else {
                    value.push_char(c, here);
                }
            }
            St::DoubleEsc => {
                st = St::Double;
                if "\"\\`$".contains(c) {
                    value.push_char(c, None);
                } else if c != '\n' {
                    value.push_char('\\', None);
                    value.push_char(c, None);
                }
            }
            St::Comment => {
                if c == '\\' {
                    st = St::CommentEsc;
                } else if nl(c) {
                    st = St::PreKey;
                }
            }
            St::CommentEsc => st = if nl(c) { St::PreKey } else { St::Comment },
        }
        if c == '\n' {
            line += 1;
        }
    }
    match st {
        St::Value => {
            let v = value.slice(0, last_good);
            done(&mut out, &key, key_line, v);
        }
        St::PreValue | St::ValueEsc | St::Single | St::Double | St::DoubleEsc => {
            done(&mut out, &key, key_line, value)
        }
        _ => {}
    }
    out
}

// ---------------------------------------------------------------------------------------
// The effective argv

/// The variable an argument came through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Via {
    pub variable: String,
    pub source: VarSource,
}

/// One argument of the executed command, with provenance.
#[derive(Clone, Debug)]
pub struct ArgToken {
    pub value: Traced,
    pub via: Option<Via>,
    /// Index of the `ExecStart=` word that produced it.
    pub word_index: usize,
}

/// Where a piece of an argument sits in a file (byte span of the resolved host path).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Span {
    pub path: String,
    pub start: usize,
    pub end: usize,
}

/// A flag found in the argv: `--name=value` (one token) or `--name value` (two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagHit {
    pub flag: usize,
    pub value: usize,
    pub inline: bool,
}

/// The executed argv of a unit, argv[0] included.
#[derive(Clone, Debug)]
pub struct EffectiveArgv {
    pub unit: String,
    pub tokens: Vec<ArgToken>,
    pub files: Vec<SourceFile>,
}

impl EffectiveArgv {
    pub fn argv(&self) -> Vec<String> {
        self.tokens.iter().map(|t| t.value.text.clone()).collect()
    }

    /// Every occurrence of `--name` (pflag rules: `--` ends flags, argv[0] skipped).
    pub fn flag_hits(&self, name: &str) -> Vec<FlagHit> {
        let long = format!("--{name}");
        let with_eq = format!("--{name}=");
        let mut hits = Vec::new();
        let mut i = 1;
        while i < self.tokens.len() {
            let a = self.tokens[i].value.text.as_str();
            if a == "--" {
                break;
            }
            if a.starts_with(&with_eq) {
                hits.push(FlagHit {
                    flag: i,
                    value: i,
                    inline: true,
                });
            } else if a == long && i + 1 < self.tokens.len() {
                hits.push(FlagHit {
                    flag: i,
                    value: i + 1,
                    inline: false,
                });
                i += 1;
            }
            i += 1;
        }
        hits
    }

    /// The occurrence that wins (the last one).
    pub fn last_flag(&self, name: &str) -> Option<FlagHit> {
        self.flag_hits(name).pop()
    }

    /// The effective value of `--name`.
    pub fn flag_value(&self, name: &str) -> Option<String> {
        self.last_flag(name).map(|h| self.value_of(name, h))
    }

    fn value_start(&self, name: &str, h: FlagHit) -> usize {
        if h.inline { name.len() + 3 } else { 0 }
    }

    pub fn value_of(&self, name: &str, h: FlagHit) -> String {
        let t = &self.tokens[h.value].value.text;
        t[self.value_start(name, h)..].to_owned()
    }

    /// The verbatim file span of a flag's value, if it is editable in place.
    pub fn value_span(&self, name: &str, h: FlagHit) -> Option<Span> {
        let tok = &self.tokens[h.value].value;
        let a = self.value_start(name, h);
        let (file, s, e) = tok.span(a, tok.text.len())?;
        if a == tok.text.len() && !h.inline {
            return None;
        }
        Some(Span {
            path: self.files[file].resolved.clone(),
            start: s,
            end: e,
        })
    }

    /// The verbatim file span of a whole token.
    pub fn token_span(&self, i: usize) -> Option<Span> {
        let tok = &self.tokens[i].value;
        let (file, s, e) = tok.span(0, tok.text.len())?;
        Some(Span {
            path: self.files[file].resolved.clone(),
            start: s,
            end: e,
        })
    }

    /// Human-readable description of where token `i` came from.
    pub fn describe(&self, i: usize) -> String {
        let t = &self.tokens[i];
        match &t.via {
            Some(v) => format!(
                "${} set in {}:{}",
                v.variable, self.files[v.source.file].host, v.source.line
            ),
            None => match t.value.origin.iter().flatten().next() {
                Some(o) => format!("ExecStart= in {}", self.files[o.file].host),
                None => "ExecStart=".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &std::path::Path, host: &str, text: &str) {
        let p = root.join(host.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn env_file_values_and_spans() {
        let text = "# c\nA=\"x y\"\nB=plain  \nexport C=1\nD='q\"' \nE=a\\\nb\n";
        let v = parse_env_file(text, 0);
        let get = |k: &str| v.iter().rev().find(|(n, _, _)| n == k).unwrap().2.clone();
        assert_eq!(get("A").text, "x y");
        assert_eq!(get("B").text, "plain");
        assert_eq!(get("D").text, "q\"");
        assert_eq!(get("E").text, "ab");
        let a = get("A");
        let (_, s, e) = a.span(0, 3).unwrap();
        assert_eq!(&text[s..e], "x y");
        assert!(v.iter().any(|(k, _, _)| k == "export C"));
        // only systemd's WHITESPACE ends a key: a form feed stays in it (fuzz finding)
        let keys: Vec<_> = parse_env_file("\u{c}=\"en", 0)
            .into_iter()
            .map(|(k, _, _)| k)
            .collect();
        assert_eq!(keys, ["\u{c}"]);
    }

    #[test]
    fn dollar_forms() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "/etc/systemd/system/x.service",
            "[Service]\nEnvironment=\"A=--a=1 --b=2\" B=z\nExecStart=/bin/x $A ${A} --c=${B} $$A $B\\\n  --d\n",
        );
        let fs = HostFs::new(d.path()).unwrap();
        let u = load_unit(&fs, "x.service").unwrap();
        let a = u.effective_argv(&fs).unwrap();
        assert_eq!(
            a.argv(),
            [
                "/bin/x",
                "--a=1",
                "--b=2",
                "--a=1 --b=2",
                "--c=z",
                "$A",
                "z",
                "--d"
            ]
        );
        assert_eq!(a.tokens[1].via.as_ref().unwrap().variable, "A");
        let s = a.value_span("b", a.last_flag("b").unwrap()).unwrap();
        let text = std::fs::read_to_string(d.path().join("etc/systemd/system/x.service")).unwrap();
        assert_eq!(&text[s.start..s.end], "2");
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
            assert_eq!(glob(p.as_bytes(), s.as_bytes()), want, "{p} ~ {s}");
        }
        // the fuzzer's pathological pattern: exponential with plain recursion
        let p = format!("{}kubeadm-flags.env", "*".repeat(60));
        assert!(!glob(p.as_bytes(), "x".repeat(200).as_bytes()));
        assert!(glob(
            p.as_bytes(),
            format!("{}kubeadm-flags.env", "x".repeat(200)).as_bytes()
        ));
    }
}
