//! `yurtctl diagnose`: what is wrong in a converted cluster and what to do; read-only.

use crate::app::common::{block_on, connect_and_snapshot, fail, print_structured};
use crate::cli::{DiagnoseCmd, GlobalArgs};
use crate::exit::Exit;
use crate::output::diagnose::{DiagnoseResult, diagnose_text};
use crate::plan::diagnose::{CHECKS, diagnose};
use crate::render::Profile;

/// yurt-manager's Deployment and webhook Service, as every profile with it names them.
const YURT_MANAGER: &str = "yurt-manager";
const WEBHOOK_SERVICE: &str = "yurt-manager-webhook-service";

/// Runs `yurtctl diagnose`.
pub fn run(g: &GlobalArgs, cmd: &DiagnoseCmd) -> Exit {
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
        if result.has_errors() {
            Exit::Problems
        } else {
            Exit::Ok
        }
    })
}
