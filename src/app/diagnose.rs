//! `yurtctl diagnose`: what is wrong in a converted cluster and what to do; read-only.

use crate::app::common::{block_on, connect_and_snapshot, fail, print_structured};
use crate::cli::{DiagnoseCmd, GlobalArgs};
use crate::exit::Exit;
use crate::output::diagnose::{DiagnoseResult, diagnose_text};
use crate::output::redact::redact;
use crate::plan::diagnose::{CHECKS, diagnose};
use crate::plan::diagnose_node::{ClusterSide, NODE_CHECKS, NodeRead, node_findings};
use crate::render::Profile;
use std::path::{Path, PathBuf};

/// yurt-manager's Deployment and webhook Service, as every profile with it names them.
const YURT_MANAGER: &str = "yurt-manager";

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
            crate::cluster::yurtstaticset::WEBHOOK_SERVICE,
        )
        .await
        {
            Ok(h) => h,
            Err(e) => return fail(&e),
        };
        let profile = journal.and_then(|j| Profile::load(&j.profile).ok());
        let now = k8s_openapi::jiff::Timestamp::now();
        let mut findings = diagnose(&snap, &health, profile.as_ref(), now, &cmd.nodes);
        let mut checks = CHECKS.to_vec();
        let mut reads = Vec::new();
        if !cmd.nodes.is_empty() {
            checks.extend(NODE_CHECKS);
            reads = read_nodes(&cluster, &snap, profile.as_ref(), cmd).await;
            let side = ClusterSide {
                ca_pin: crate::cluster::diagnose::cluster_ca_pin(&cluster).await,
                api_service_ip: crate::cluster::diagnose::api_service_ip(&cluster).await,
            };
            for (node, read) in &reads {
                let converted = journal.and_then(|j| crate::plan::converted_role(j, node));
                findings.extend(node_findings(node, converted, read, &side, now));
            }
            findings.sort_by_key(|d| std::cmp::Reverse(d.severity));
        }
        let result = DiagnoseResult::new(
            journal.map(|j| j.profile.clone()),
            cmd.nodes.clone(),
            checks,
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
            for (node, read) in &reads {
                if let Ok(Some(log)) = read.as_ref().map(|f| &f.yurthub_log) {
                    files.push((format!("nodes/{node}/yurthub.log"), log.clone()));
                }
            }
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

/// Runs a read-only `node-servant diagnose` Job on each named node and reads its result from
/// the Job's log; the Jobs are deleted afterwards, whatever their end.
async fn read_nodes(
    cluster: &crate::cluster::Cluster,
    snap: &crate::cluster::snapshot::ClusterSnapshot,
    profile: Option<&Profile>,
    cmd: &DiagnoseCmd,
) -> Vec<(String, NodeRead)> {
    let recorded = snap.journal.as_ref().and_then(|j| {
        let o = crate::plan::ConvertOptions::from_journal(&j.options)?;
        Some(crate::plan::ConvertSettings::resolve(&o, profile?))
    });
    let image = cmd
        .servant_image
        .clone()
        .or_else(|| recorded.as_ref().map(|s| s.servant_image.clone()))
        .unwrap_or_else(|| crate::cli::DEFAULT_SERVANT_IMAGE.to_owned());
    let secrets = recorded.map(|s| s.pull_secrets).unwrap_or_default();
    let ready_path = profile
        .map(|p| p.yurthub.ready_path().to_owned())
        .unwrap_or_else(|| crate::naming::YURTHUB_READYZ_PATH.to_owned());
    let specs: Vec<_> = cmd
        .nodes
        .iter()
        .map(|n| {
            crate::exec::servant_job::servant_job(
                DIAGNOSE_ACTION,
                n,
                &image,
                "diagnose",
                &["--yurthub-ready-path", &ready_path],
                cmd.job_timeout,
                &[],
            )
            .pulling_with(&secrets)
        })
        .collect();
    crate::exec::servant_job::read_on_nodes(cluster, specs, cmd.job_timeout, 40)
        .await
        .into_iter()
        .map(|(node, log)| {
            let read = log.and_then(|log| {
                crate::exec::servant_job::result_field(&log, "nodeFacts")
                    .and_then(|v| serde_json::from_value(v).ok())
                    .ok_or_else(|| format!("the Job on {node} printed no node facts"))
            });
            (node, read)
        })
        .collect()
}

/// The node Jobs' action label (`yurtctl-diagnose-NODE`).
const DIAGNOSE_ACTION: &str = "diagnose";

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
