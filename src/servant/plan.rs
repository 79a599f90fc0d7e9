//! Node operations as plans: compute every file change in memory first, write later.
//!
//! * [`convert`]: YurtHub static pod + credential, the YurtHub kubeconfig, and the kubelet
//!   redirect. Idempotent; a second run yields no changes.
//! * [`revert`]: undo exactly what convert recorded; a never-converted node yields none.
//! * [`apply`]: writes a plan atomically, file by file, backups and record first.
//! * [`preflight`]: what the node looks like, without changing anything.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

pub use super::edit::{Change, NodeChanges, apply};
use super::error::{Result, ServantError};
use super::hostfs::HostFs;
use super::journal::{OperationRecord, Recorder, plan_revert};
use super::kcm::{KCM_FILE, KCM_OPERATION};
use super::kubeconfig::{ServerUrl, api_server, render_yurthub_kubeconfig};
use super::kubelet::{
    DEFAULT_KUBELET_KUBECONFIG, OPENYURT_KUBECONFIG, effective_argv, plan_redirect, static_pod_dir,
};
use super::systemd::{EffectiveArgv, SourceKind, load_unit};
use super::yurthub::{
    BOOTSTRAP_FILE, HUB_BINARY, HUB_CACHE_DIR, HUB_DIR, HUB_DROP_IN_FILE, HUB_UNIT, HUB_UNIT_FILE,
    HubInstall, JOIN_TOKEN_FILE, credential_file, credential_path,
};

pub const CONVERT_OPERATION: &str = "convert";
/// The convert record's key naming the YurtHub systemd unit it installed.
pub const HUB_SERVICE_KEY: &str = "yurthub_service";

/// The YurtHub systemd unit a convert record says was installed, if any.
pub fn recorded_hub_service(record: &OperationRecord) -> Option<&str> {
    record.extra.get(HUB_SERVICE_KEY).and_then(Value::as_str)
}

/// What convert does on this node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeConvertOptions {
    /// Install YurtHub, as a static pod or a systemd service (None = leave YurtHub alone).
    pub yurthub: Option<HubInstall>,
    /// Point the kubelet at YurtHub. Callers usually run convert once with this off,
    /// wait for YurtHub to be ready, then again with it on.
    pub redirect_kubelet: bool,
    /// With the redirect, record that the node's workload containers are to be restarted (so
    /// an interrupted run restarts them when re-run); see [`workloads_restarted`].
    pub restart_workloads: bool,
}

/// The convert record's key saying whether the workload containers still have to be restarted
/// after the redirect (`pending`) or were (`done`).
pub const WORKLOADS_KEY: &str = "workloads_restart";
const WORKLOADS_PENDING: &str = "pending";
const WORKLOADS_DONE: &str = "done";

/// True when the convert record says the workload containers are still to be restarted.
pub fn workloads_restart_pending(record: &OperationRecord) -> bool {
    record.extra.get(WORKLOADS_KEY).and_then(Value::as_str) == Some(WORKLOADS_PENDING)
}

/// Plans recording that the workload containers were restarted (only the record changes).
pub fn workloads_restarted(host_root: &Path) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let mut rec = Recorder::new(fs, CONVERT_OPERATION)?;
    if rec.has_previous() {
        rec.journal
            .extra
            .insert(WORKLOADS_KEY.into(), Value::String(WORKLOADS_DONE.into()));
    }
    rec.finish()
}

/// The kubeconfig the kubelet used before conversion: the effective one, or (already
/// redirected) the one recorded by the first convert, or kubeadm's default.
fn original_kubeconfig(argv: &EffectiveArgv, journal: Option<&OperationRecord>) -> String {
    match argv.flag_value("kubeconfig") {
        Some(k) if k != OPENYURT_KUBECONFIG && !k.is_empty() => k,
        _ => journal
            .and_then(|j| j.extra.get("kubelet_kubeconfig"))
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_KUBELET_KUBECONFIG)
            .to_owned(),
    }
}

/// Plans the conversion of this node (nothing is written).
pub fn convert(host_root: &Path, opts: &NodeConvertOptions) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let mut rec = Recorder::new(fs, CONVERT_OPERATION)?;
    let argv = effective_argv(&rec.fs)?;
    if let Some(install) = &opts.yurthub {
        install_hub(&mut rec, &argv, install)?;
    }
    if opts.redirect_kubelet {
        rec.create(
            OPENYURT_KUBECONFIG,
            render_yurthub_kubeconfig().into_bytes(),
            0o600,
        )?;
        let plan = plan_redirect(&mut rec.fs)?;
        if let Some(prev) = plan.previous_kubeconfig
            && !rec.journal.extra.contains_key("kubelet_kubeconfig")
        {
            rec.journal
                .extra
                .insert("kubelet_kubeconfig".into(), Value::String(prev));
        }
        if opts.restart_workloads && !plan.files.is_empty() {
            rec.journal.extra.insert(
                WORKLOADS_KEY.into(),
                Value::String(WORKLOADS_PENDING.into()),
            );
        }
        for f in plan.files {
            rec.modify(
                &f.path,
                f.original.as_bytes(),
                f.new.into_bytes(),
                f.edits,
                None,
            )?;
        }
    }
    rec.finish()
}

/// YurtHub's files and their record: the static pod's manifest or the service's binary, unit
/// and drop-in, the credential, and the data directories revert removes.
fn install_hub(rec: &mut Recorder, argv: &EffectiveArgv, install: &HubInstall) -> Result<()> {
    match install {
        HubInstall::StaticPod(hub) => {
            hub.validate()?;
            let dir = static_pod_dir(&rec.fs, argv)?;
            let (cred_path, cred) = credential_file(&hub.credential)?;
            rec.create(cred_path, cred, 0o600)?;
            rec.create(
                &format!("{}/{}", dir.trim_end_matches('/'), hub.manifest_file),
                hub.manifest.clone().into_bytes(),
                0o600,
            )?;
        }
        HubInstall::Service(svc) => {
            svc.validate()?;
            if let Some(c) = &svc.credential {
                let (cred_path, cred) = credential_file(c)?;
                rec.create(cred_path, cred, 0o600)?;
            }
            rec.create(HUB_BINARY, svc.binary.clone(), 0o755)?;
            rec.create(HUB_UNIT_FILE, svc.unit.clone().into_bytes(), 0o644)?;
            rec.create(HUB_DROP_IN_FILE, svc.drop_in.clone().into_bytes(), 0o644)?;
            // `systemctl enable` links the unit into each WantedBy= target's .wants
            // directory; disable removes the link but not a directory it created
            for target in svc.wanted_by() {
                rec.note_dirs(&format!("/etc/systemd/system/{target}.wants/{HUB_UNIT}"))?;
            }
            // revert stops and disables the unit before removing its files
            rec.journal
                .extra
                .insert(HUB_SERVICE_KEY.into(), Value::String(HUB_UNIT.into()));
        }
    }
    for d in [HUB_DIR, HUB_CACHE_DIR] {
        if !rec.journal.remove_on_revert.iter().any(|x| x == d) {
            rec.journal.remove_on_revert.push(d.to_owned());
        }
    }
    Ok(())
}

/// Plans moving this converted node's YurtHub to `install`: another release, or a systemd
/// service instead of a static pod (or back, for a rollback). It changes convert's record, so
/// revert undoes the result: the new files are created as convert creates them, and the old
/// installation's files the new one has no use for are removed, their entries kept, so revert
/// still knows them should a run stop in between. YurtHub's certificates and cache, and the
/// kubelet's redirect, stay. Writes come before removals in the result.
pub fn upgrade(host_root: &Path, install: &HubInstall) -> Result<NodeChanges> {
    let fs = HostFs::new(host_root)?;
    let mut rec = Recorder::new(fs, CONVERT_OPERATION)?;
    if !rec.journal.extra.contains_key("kubelet_kubeconfig") {
        return Err(ServantError::Conflict {
            path: super::journal::journal_path(CONVERT_OPERATION),
            message: "yurtctl has no record of converting this node (its kubelet was never \
                      redirected); convert it instead of upgrading it"
                .into(),
        });
    }
    let argv = effective_argv(&rec.fs)?;
    let dir = static_pod_dir(&rec.fs, &argv)?;
    let dir = dir.trim_end_matches('/');
    let wanted: Vec<String> = match install {
        HubInstall::StaticPod(hub) => vec![
            format!("{dir}/{}", hub.manifest_file),
            credential_path(&hub.credential).to_owned(),
        ],
        HubInstall::Service(svc) => [HUB_BINARY, HUB_UNIT_FILE, HUB_DROP_IN_FILE]
            .into_iter()
            .map(str::to_owned)
            .chain(
                svc.credential
                    .as_ref()
                    .map(|c| credential_path(c).to_owned()),
            )
            .collect(),
    };
    let hub_file = |p: &str| {
        [
            HUB_BINARY,
            HUB_UNIT_FILE,
            HUB_DROP_IN_FILE,
            BOOTSTRAP_FILE,
            JOIN_TOKEN_FILE,
        ]
        .contains(&p)
            || p.strip_prefix(dir)
                .and_then(|f| f.strip_prefix('/'))
                .is_some_and(|f| !f.contains('/') && f.ends_with(".yaml"))
    };
    let retired: Vec<String> = rec
        .journal
        .files
        .iter()
        .filter(|f| f.created && hub_file(&f.path) && !wanted.contains(&f.path))
        .map(|f| f.path.clone())
        .collect();
    // the old YurtHub may have written the new one's credential file into its own directory
    for p in &wanted {
        rec.claim_state(p)?;
    }
    install_hub(&mut rec, &argv, install)?;
    for p in &retired {
        rec.remove_ours(p)?;
    }
    let mut out = rec.finish()?;
    // writes (the record first) before removals
    out.changes
        .sort_by_key(|c| matches!(c, Change::Remove { .. }));
    Ok(out)
}

/// Plans undoing what convert recorded on this node.
pub fn revert(host_root: &Path) -> Result<NodeChanges> {
    let mut fs = HostFs::new(host_root)?;
    let Some(journal) = OperationRecord::load(&fs, CONVERT_OPERATION)? else {
        return super::journal::plan_orphans(&fs, CONVERT_OPERATION);
    };
    let changes = plan_revert(&fs, &journal, &|_, _| None)?;
    // verify in memory: afterwards the kubelet must not use YurtHub's kubeconfig
    for c in &changes.changes {
        match c {
            Change::Write { path, new, .. } => fs.stage(path, Some(new.clone()))?,
            Change::Remove { path, .. } => fs.stage(path, None)?,
            _ => {}
        }
    }
    if let Ok(argv) = effective_argv(&fs)
        && argv.flag_value("kubeconfig").as_deref() == Some(OPENYURT_KUBECONFIG)
    {
        return Err(ServantError::Redirect {
            message: format!(
                "after revert the kubelet would still use {OPENYURT_KUBECONFIG} ({}), which revert deletes; fix that file by hand",
                argv.describe(argv.last_flag("kubeconfig").map_or(0, |h| h.value))
            ),
        });
    }
    Ok(changes)
}

/// What [`preflight`] found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PreflightReport {
    pub host_root: String,
    /// kubeadm | kubeadm-usr | kind | minikube | unknown
    pub layout: String,
    pub unit_files: Vec<String>,
    pub environment_files: Vec<String>,
    pub kubelet_argv: Vec<String>,
    pub kubeconfig: Option<String>,
    /// Where the effective --kubeconfig comes from.
    pub kubeconfig_source: Option<String>,
    pub bootstrap_kubeconfig: Option<String>,
    pub converted: bool,
    pub redirect_possible: bool,
    pub static_pod_dir: Option<String>,
    pub api_server: Option<ServerUrl>,
    pub kcm_manifest: Option<String>,
    pub kcm_nodelifecycle_disabled_by_yurtctl: bool,
    pub problems: Vec<String>,
}

fn detect_layout(argv: &EffectiveArgv) -> String {
    let names: Vec<&str> = argv
        .files
        .iter()
        .filter(|f| f.kind == SourceKind::DropIn)
        .map(|f| f.host.as_str())
        .collect();
    if names.iter().any(|n| n.ends_with("/11-kind.conf")) {
        return "kind".into();
    }
    if argv
        .tokens
        .first()
        .is_some_and(|t| t.value.text.contains("/minikube/"))
    {
        return "minikube".into();
    }
    match names.iter().find(|n| n.ends_with("/10-kubeadm.conf")) {
        Some(n) if n.starts_with("/etc/") => "kubeadm".into(),
        Some(_) => "kubeadm-usr".into(),
        None => "unknown".into(),
    }
}

/// Inspects the node; changes nothing. Errors only for an unusable host root.
pub fn preflight(host_root: &Path) -> Result<PreflightReport> {
    let fs = HostFs::new(host_root)?;
    let mut r = PreflightReport {
        host_root: host_root.display().to_string(),
        layout: "unknown".into(),
        ..Default::default()
    };
    let journal = match OperationRecord::load(&fs, CONVERT_OPERATION) {
        Ok(j) => j,
        Err(e) => {
            r.problems.push(e.to_string());
            None
        }
    };
    r.converted = journal.is_some();
    let argv = match load_unit(&fs, super::kubelet::KUBELET_UNIT).and_then(|u| {
        r.environment_files = u.environment_files().to_vec();
        u.effective_argv(&fs)
    }) {
        Ok(a) => a,
        Err(e) => {
            r.problems.push(e.to_string());
            return Ok(r);
        }
    };
    r.layout = detect_layout(&argv);
    r.unit_files = argv.files.iter().map(|f| f.host.clone()).collect();
    r.kubelet_argv = argv.argv();
    r.kubeconfig = argv.flag_value("kubeconfig");
    r.kubeconfig_source = argv.last_flag("kubeconfig").map(|h| argv.describe(h.value));
    r.bootstrap_kubeconfig = argv.flag_value("bootstrap-kubeconfig");
    let mut scratch = fs.clone();
    match plan_redirect(&mut scratch) {
        Ok(_) => r.redirect_possible = true,
        Err(e) => r.problems.push(e.to_string()),
    }
    if r.layout == "kubeadm-usr" {
        r.problems.push(
            "the kubelet drop-in is package-owned (under /usr/lib or /lib): a kubelet package upgrade may undo the redirect; re-run convert after upgrades".into(),
        );
    }
    match static_pod_dir(&fs, &argv) {
        Ok(d) => {
            let kcm = format!("{}/{KCM_FILE}", d.trim_end_matches('/'));
            if fs.is_file(&kcm)? {
                r.kcm_manifest = Some(kcm);
            }
            r.static_pod_dir = Some(d);
        }
        Err(e) => r.problems.push(e.to_string()),
    }
    r.kcm_nodelifecycle_disabled_by_yurtctl =
        matches!(OperationRecord::load(&fs, KCM_OPERATION), Ok(Some(_)));
    let kc = original_kubeconfig(&argv, journal.as_ref());
    match api_server(&fs, &kc) {
        Ok(u) => r.api_server = Some(u),
        Err(e) => r.problems.push(e.to_string()),
    }
    Ok(r)
}
