//! Redirecting the kubelet to YurtHub: make `--kubeconfig=/var/lib/openyurt/kubelet.conf`
//! the kubelet's effective flag and disable TLS bootstrap, whatever the unit layout.
//!
//! The edit is found, not assumed: the effective argv is computed the way systemd builds it,
//! the `--kubeconfig` occurrence that wins is located in the file and byte span it came from,
//! and only its value is rewritten there; a winning non-empty `--bootstrap-kubeconfig` gets
//! its value emptied (or, in the two-word form, both words removed). After every edit the
//! argv is recomputed in memory and must differ from the previous one exactly as intended;
//! at the end our flag must be effective, otherwise nothing is written.

use serde_json::Value;

use super::edit::TextEdit;
use super::error::{Result, ServantError};
use super::hostfs::HostFs;
use super::systemd::{EffectiveArgv, load_unit};

pub const KUBELET_UNIT: &str = "kubelet.service";
/// The kubeconfig that points the kubelet at YurtHub.
pub const OPENYURT_KUBECONFIG: &str = "/var/lib/openyurt/kubelet.conf";
/// Where kubeadm-based layouts keep the kubelet's own kubeconfig.
pub const DEFAULT_KUBELET_KUBECONFIG: &str = "/etc/kubernetes/kubelet.conf";

/// Characters our replacement values may contain: safe verbatim in every context we edit
/// (unit files, quoted or unquoted env files, ExecStart words; no `%`, `$`, `\`, quotes,
/// whitespace or comment characters).
fn is_plain(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/._=:,-".contains(&c))
}

/// The kubelet's effective argv now (drop-ins and env files read through the overlay).
pub fn effective_argv(fs: &HostFs) -> Result<EffectiveArgv> {
    load_unit(fs, KUBELET_UNIT)?.effective_argv(fs)
}

/// One file edited by the redirect.
#[derive(Clone, Debug)]
pub struct FileEdits {
    pub path: String,
    pub original: String,
    pub new: String,
    pub edits: Vec<TextEdit>,
}

/// What the redirect would do.
#[derive(Clone, Debug, Default)]
pub struct RedirectPlan {
    pub files: Vec<FileEdits>,
    /// The `--kubeconfig` that was effective before (None when already redirected).
    pub previous_kubeconfig: Option<String>,
}

fn stage_edit(
    fs: &mut HostFs,
    files: &mut Vec<FileEdits>,
    path: &str,
    start: usize,
    end: usize,
    new: &str,
) -> Result<()> {
    let current = fs.read_text(path)?.ok_or_else(|| ServantError::Conflict {
        path: path.into(),
        message: "disappeared while planning".into(),
    })?;
    let (out, edit) = TextEdit::apply(&current, start, end, new);
    fs.stage(path, Some(out.clone().into_bytes()))?;
    match files.iter_mut().find(|f| f.path == path) {
        Some(f) => {
            f.new = out;
            f.edits.push(edit);
        }
        None => files.push(FileEdits {
            path: path.into(),
            original: current,
            new: out,
            edits: vec![edit],
        }),
    }
    Ok(())
}

fn not_editable(argv: &EffectiveArgv, i: usize, what: &str) -> ServantError {
    ServantError::Redirect {
        message: format!(
            "{what} {:?} (from {}) is not written verbatim in one place (escapes, specifiers or variables inside it), so it cannot be rewritten safely",
            argv.tokens[i].value.text,
            argv.describe(i)
        ),
    }
}

/// Plans the redirect on `fs` (edits are staged into its overlay). Errors leave the caller
/// free to drop the overlay: nothing is written here.
pub fn plan_redirect(fs: &mut HostFs) -> Result<RedirectPlan> {
    assert!(is_plain(OPENYURT_KUBECONFIG));
    let mut plan = RedirectPlan::default();
    for _round in 0..16 {
        let argv = effective_argv(fs)?;
        let before = argv.argv();
        let (path, start, end, new, expect): (String, usize, usize, String, Vec<String>);
        if let Some(h) = argv.last_flag("kubeconfig") {
            let value = argv.value_of("kubeconfig", h);
            if value != OPENYURT_KUBECONFIG {
                if plan.previous_kubeconfig.is_none() {
                    plan.previous_kubeconfig = Some(value.clone());
                }
                let span = argv
                    .value_span("kubeconfig", h)
                    .ok_or_else(|| not_editable(&argv, h.value, "the effective --kubeconfig"))?;
                let mut e = before.clone();
                e[h.value] = if h.inline {
                    format!("--kubeconfig={OPENYURT_KUBECONFIG}")
                } else {
                    OPENYURT_KUBECONFIG.into()
                };
                (path, start, end, new, expect) = (
                    span.path,
                    span.start,
                    span.end,
                    OPENYURT_KUBECONFIG.into(),
                    e,
                );
                stage_and_check(fs, &mut plan, &path, start, end, &new, &expect, &before)?;
                continue;
            }
        } else {
            return Err(ServantError::Redirect {
                message: format!(
                    "the kubelet has no --kubeconfig at all (argv: {before:?}); a standalone kubelet cannot be converted"
                ),
            });
        }
        if let Some(h) = argv.last_flag("bootstrap-kubeconfig") {
            let value = argv.value_of("bootstrap-kubeconfig", h);
            if !value.is_empty() {
                if h.inline {
                    let span = argv.value_span("bootstrap-kubeconfig", h).ok_or_else(|| {
                        not_editable(&argv, h.value, "the effective --bootstrap-kubeconfig")
                    })?;
                    let mut e = before.clone();
                    e[h.value] = "--bootstrap-kubeconfig=".into();
                    stage_and_check(
                        fs, &mut plan, &span.path, span.start, span.end, "", &e, &before,
                    )?;
                } else {
                    let (a, b) = match (argv.token_span(h.flag), argv.token_span(h.value)) {
                        (Some(a), Some(b)) if a.path == b.path && a.end <= b.start => (a, b),
                        _ => return Err(not_editable(&argv, h.flag, "--bootstrap-kubeconfig")),
                    };
                    let text = fs.read_text(&a.path)?.unwrap_or_default();
                    let gap = &text[a.end..b.start];
                    if !gap.bytes().all(|c| c == b' ' || c == b'\t') || gap.is_empty() {
                        return Err(not_editable(&argv, h.flag, "--bootstrap-kubeconfig"));
                    }
                    let tb = text.as_bytes();
                    let mut s = a.start;
                    while s > 0 && (tb[s - 1] == b' ' || tb[s - 1] == b'\t') {
                        s -= 1;
                    }
                    let mut e_ = b.end;
                    if s == a.start {
                        while e_ < tb.len() && (tb[e_] == b' ' || tb[e_] == b'\t') {
                            e_ += 1;
                        }
                    } else {
                        s = a.start - 1; // drop exactly one separator
                    }
                    let mut e = before.clone();
                    e.drain(h.flag..=h.value);
                    stage_and_check(fs, &mut plan, &a.path, s, e_, "", &e, &before)?;
                }
                continue;
            }
        }
        // both conditions hold
        verify(fs)?;
        return Ok(plan);
    }
    Err(ServantError::Redirect {
        message: "too many --kubeconfig/--bootstrap-kubeconfig occurrences to rewrite".into(),
    })
}

#[allow(clippy::too_many_arguments)]
fn stage_and_check(
    fs: &mut HostFs,
    plan: &mut RedirectPlan,
    path: &str,
    start: usize,
    end: usize,
    new: &str,
    expect: &[String],
    before: &[String],
) -> Result<()> {
    stage_edit(fs, &mut plan.files, path, start, end, new)?;
    let after = effective_argv(fs)?.argv();
    if after != expect {
        return Err(ServantError::Redirect {
            message: format!(
                "editing {path} bytes {start}..{end} would change other kubelet arguments too (before {before:?}, expected {expect:?}, got {after:?}); the value is probably shared"
            ),
        });
    }
    Ok(())
}

/// Checks that the kubelet (as the files are now, overlay included) uses our kubeconfig
/// and does not bootstrap.
pub fn verify(fs: &HostFs) -> Result<()> {
    let argv = effective_argv(fs)?;
    let kc = argv.flag_value("kubeconfig");
    if kc.as_deref() != Some(OPENYURT_KUBECONFIG) {
        return Err(ServantError::Redirect {
            message: format!("after editing, the effective --kubeconfig is {kc:?}"),
        });
    }
    if let Some(b) = argv.flag_value("bootstrap-kubeconfig")
        && !b.is_empty()
    {
        return Err(ServantError::Redirect {
            message: format!("after editing, --bootstrap-kubeconfig is still {b:?}"),
        });
    }
    Ok(())
}

/// The kubelet's static-pod directory: `--pod-manifest-path`, else `staticPodPath` from the
/// `--config` file (overridden by `--config-dir` drop-ins). Relative paths resolve against
/// the config file's directory.
pub fn static_pod_dir(fs: &HostFs, argv: &EffectiveArgv) -> Result<String> {
    if let Some(p) = argv
        .flag_value("pod-manifest-path")
        .filter(|p| !p.is_empty())
    {
        return Ok(p);
    }
    let Some(cfg) = argv.flag_value("config").filter(|c| !c.is_empty()) else {
        return Err(ServantError::KubeletConfig {
            path: "kubelet.service".into(),
            message: "the kubelet has neither --pod-manifest-path nor --config, so it runs no static pods; set staticPodPath first".into(),
        });
    };
    match config_path(fs, argv, &["staticPodPath"])?.filter(|p| !p.is_empty()) {
        Some(p) => Ok(p),
        None => Err(ServantError::KubeletConfig {
            path: cfg,
            message: "staticPodPath is not set, so the kubelet runs no static pods; set it (kubeadm uses /etc/kubernetes/manifests) and restart the kubelet".into(),
        }),
    }
}

/// The CA file the kubelet checks client certificates against (the API server's, for logs,
/// exec and port-forward): `--client-ca-file`, else the config's
/// `authentication.x509.clientCAFile` (None: neither is set).
pub fn client_ca_file(fs: &HostFs, argv: &EffectiveArgv) -> Result<Option<String>> {
    if let Some(p) = argv.flag_value("client-ca-file").filter(|p| !p.is_empty()) {
        return Ok(Some(p));
    }
    config_path(fs, argv, &["authentication", "x509", "clientCAFile"])
}

/// A path field of the kubelet's configuration: the `--config` file's, overridden by the
/// `--config-dir` drop-ins in name order; relative paths are the file's directory's, as the
/// kubelet resolves them (kubernetes/kubernetes@v1.37.2 pkg/kubelet/apis/config/helpers.go
/// KubeletConfigurationPathRefs). None without `--config` or without the field.
fn config_path(fs: &HostFs, argv: &EffectiveArgv, field: &[&str]) -> Result<Option<String>> {
    let Some(cfg) = argv.flag_value("config").filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let mut path = config_path_in(fs, &cfg, field)?;
    if let Some(dir) = argv.flag_value("config-dir").filter(|d| !d.is_empty()) {
        for n in fs.list_dir(&dir)? {
            if n.ends_with(".conf") {
                let f = format!("{}/{n}", dir.trim_end_matches('/'));
                if let Some(p) = config_path_in(fs, &f, field)? {
                    path = Some(p);
                }
            }
        }
    }
    Ok(path)
}

fn config_path_in(fs: &HostFs, file: &str, field: &[&str]) -> Result<Option<String>> {
    let text = fs
        .read_text(file)?
        .ok_or_else(|| ServantError::KubeletConfig {
            path: file.into(),
            message: "the kubelet config file named by --config does not exist".into(),
        })?;
    let doc: Value = serde_saphyr::from_str(&text).map_err(|e| ServantError::Yaml {
        path: file.into(),
        message: e.to_string(),
    })?;
    let value = field.iter().try_fold(&doc, |v, k| v.get(k));
    Ok(value.and_then(Value::as_str).map(|p| {
        if p.is_empty() || p.starts_with('/') {
            p.to_owned()
        } else {
            let dir = file.rsplit_once('/').map_or("", |d| d.0);
            format!("{dir}/{p}")
        }
    }))
}
