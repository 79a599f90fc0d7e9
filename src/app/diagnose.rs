//! `yurtctl diagnose`: what is wrong in a converted cluster and what to do; read-only.

use crate::app::common::{block_on, connect_and_snapshot, fail, print_structured};
use crate::cli::{DiagnoseCmd, GlobalArgs};
use crate::exit::Exit;
use crate::output::diagnose::{DiagnoseResult, diagnose_text};
use crate::output::redact::redact;
use crate::plan::diagnose::{CHECKS, diagnose};
use crate::render::Profile;
use std::path::{Path, PathBuf};

/// yurt-manager's Deployment and webhook Service, as every profile with it names them.
const YURT_MANAGER: &str = "yurt-manager";
const WEBHOOK_SERVICE: &str = "yurt-manager-webhook-service";

/// Runs `yurtctl diagnose`.
pub fn run(g: &GlobalArgs, cmd: &DiagnoseCmd) -> Exit {
    if let Some(dir) = &cmd.collect
        && dir.exists()
        && !dir.is_dir()
    {
        return crate::app::error::CommandError::Usage(format!(
            "--collect {}: it is a file, not a directory; name a directory (it is created if \
             missing)",
            dir.display()
        ))
        .report();
    }
    block_on(async {
        let (cluster, snap) = match connect_and_snapshot(g).await {
            Ok(c) => c,
            Err(exit) => return exit,
        };
        if let Some(n) = cmd
            .nodes
            .iter()
            .find(|n| !snap.nodes.iter().any(|x| &x.name == *n))
        {
            return crate::app::error::CommandError::Refused(format!(
                "node {n} does not exist (kubectl get nodes lists them); nothing was checked"
            ))
            .report();
        }
        let journal = snap.journal.as_ref();
        let token = journal.and_then(|j| j.token_id.as_deref());
        let health = match crate::cluster::health::read(
            &cluster,
            token,
            YURT_MANAGER,
            WEBHOOK_SERVICE,
        )
        .await
        {
            Ok(h) => h,
            Err(e) => return fail(&e),
        };
        let profile = journal.and_then(|j| Profile::load(&j.profile).ok());
        let findings = diagnose(
            &snap,
            &health,
            profile.as_ref(),
            k8s_openapi::jiff::Timestamp::now(),
            &cmd.nodes,
        );
        let result = DiagnoseResult::new(
            journal.map(|j| j.profile.clone()),
            cmd.nodes.clone(),
            CHECKS.to_vec(),
            findings,
        );
        if !print_structured(g, &result) {
            print!("{}", diagnose_text(&result));
        }
        if let Some(dir) = &cmd.collect {
            let mut files = match crate::cluster::collect::gather(&cluster).await {
                Ok(f) => f,
                Err(e) => return fail(&e),
            };
            let versions = serde_json::json!({
                "yurtctl": env!("CARGO_PKG_VERSION"),
                "kubernetes": snap.server_version,
                "profile": journal.map(|j| j.profile.clone()),
                "options": journal.map(|j| j.options.clone()),
            });
            files.insert(0, ("versions.json".into(), format!("{versions:#}\n")));
            files.insert(
                0,
                (
                    "diagnose.json".into(),
                    serde_json::to_string_pretty(&result).unwrap_or_default(),
                ),
            );
            match write_archive(dir, &files) {
                Ok(path) => eprintln!(
                    "collected {} files into {} (secrets and tokens redacted)",
                    files.len(),
                    path.display()
                ),
                Err(e) => {
                    return crate::app::error::CommandError::Local(format!(
                        "--collect {}: {e}; the findings above are complete",
                        dir.display()
                    ))
                    .report();
                }
            }
        }
        if result.has_errors() {
            Exit::Problems
        } else {
            Exit::Ok
        }
    })
}

/// Writes `files`, each redacted, into `DIR/yurtctl-diagnose-<time>.tar.gz` (DIR created if
/// missing); returns its path.
fn write_archive(dir: &Path, files: &[(String, String)]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let stamp = k8s_openapi::jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let path = dir.join(format!("yurtctl-diagnose-{stamp}.tar.gz"));
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path)?,
        flate2::Compression::default(),
    );
    let mut tar = tar::Builder::new(gz);
    let top = format!("yurtctl-diagnose-{stamp}");
    for (name, text) in files {
        let bytes = redact(text).into_bytes();
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(k8s_openapi::jiff::Timestamp::now().as_second().max(0) as u64);
        header.set_cksum();
        tar.append_data(&mut header, format!("{top}/{name}"), bytes.as_slice())?;
    }
    tar.into_inner()?.finish()?;
    Ok(path)
}
