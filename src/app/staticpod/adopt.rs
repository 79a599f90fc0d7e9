//! `yurtctl staticpod adopt NAME`: a YurtStaticSet from what the static pod runs, so
//! yurt-manager manages it from then on.

use serde_json::{Value, json};

use super::{Context, LockedRun, RENDER_TIMEOUT, Refusal, namespace, run_locked};
use crate::app::common::{confirm, fail, print_structured};
use crate::app::error::CommandError;
use crate::cli::{AdoptCmd, GlobalArgs, SetStrategy};
use crate::cluster::staticset;
use crate::cluster::yurtstaticset::{self, Created};
use crate::exit::Exit;

/// The set's `spec`: the manifest key, the strategy and the template (`pod`'s labels,
/// annotations but the hash, and spec, named NAME).
pub(super) fn spec(name: &str, key: &str, pod: &Value, cmd: &AdoptCmd) -> Value {
    let template = yurtstaticset::template_for(&json!({"metadata": {"name": name}}), pod);
    let strategy = match cmd.strategy {
        SetStrategy::AdvancedRollingUpdate => {
            // an IntOrString: a number, or a string only as a percentage (intstr rejects "1")
            let text = cmd.max_unavailable.to_string();
            let max = text
                .parse::<u64>()
                .map_or_else(|_| json!(text), |n| json!(n));
            json!({"type": "AdvancedRollingUpdate", "maxUnavailable": max})
        }
        SetStrategy::Ota => json!({"type": "OTA"}),
    };
    json!({"staticPodManifest": key, "upgradeStrategy": strategy, "template": template})
}

pub(super) async fn run(g: &GlobalArgs, cmd: AdoptCmd) -> Exit {
    let ns = namespace(g);
    // "exists already" is decided under the lock; a look refuses only what cannot be adopted
    let refuses = |ctx: &Context| {
        ctx.yss
            .is_none()
            .then(|| not_adoptable(ctx).or_else(|| ctx.controller_down(true)))
            .flatten()
    };
    let run = LockedRun {
        ns: &ns,
        name: &cmd.name,
        force_unlock: false,
        command: "staticpod adopt",
        pull_secrets: &[],
    };
    // adopt writes once (the set) and needs no notice of a lost lock
    let cmd = &cmd;
    let decided = |ctx: Context, _lost| async move { adopt(g, cmd, &ctx).await };
    run_locked(g, run, refuses, decided).await
}

/// Why there is nothing to build a YurtStaticSet from.
fn not_adoptable(ctx: &Context) -> Option<Refusal> {
    ctx.no_mirrors().or_else(|| {
        ctx.current_template()
            .is_none()
            .then(|| Refusal::Refused("cannot read the template the nodes run".into()))
    })
}

/// `adopt` from the context read under the lock.
async fn adopt(g: &GlobalArgs, cmd: &AdoptCmd, ctx: &Context) -> Exit {
    let ns = ctx.ns.clone();
    let what = format!("YurtStaticSet {ns}/{}", cmd.name);
    if ctx.yss.is_some() {
        eprintln!("{what} exists already: nothing to do");
        return Exit::Ok;
    }
    if let Some(r) = not_adoptable(ctx) {
        return r.report();
    }
    let Some(pod) = ctx.current_template() else {
        unreachable!("not_adoptable checks there is a template");
    };
    let key = cmd
        .manifest
        .clone()
        .or_else(|| ctx.set.as_ref().map(|s| s.manifest_key.clone()))
        .unwrap_or_else(|| cmd.name.clone());
    let spec = spec(&cmd.name, &key, &pod, cmd);
    let object = json!({
        "apiVersion": "apps.openyurt.io/v1alpha1",
        "kind": "YurtStaticSet",
        "metadata": {"name": cmd.name, "namespace": ns},
        "spec": spec,
    });
    if g.dry_run.enabled() {
        if g.dry_run == crate::cli::DryRun::Server {
            match yurtstaticset::create(&ctx.cluster, &ns, &cmd.name, &spec, true).await {
                Ok(Created::NotServed) => return not_served(&what),
                Ok(_) => {}
                Err(e) => return fail(&e),
            }
        }
        if !print_structured(g, &object) {
            print!("{}", serde_saphyr::to_string(&object).unwrap_or_default());
        }
        return Exit::Ok;
    }
    if let Err(e) = confirm(
        g,
        &format!(
            "create {what} from what {} node(s) run, for yurt-manager to manage?",
            ctx.mirrors.len()
        ),
    )
    .await
    {
        return e;
    }
    match yurtstaticset::create(&ctx.cluster, &ns, &cmd.name, &spec, false).await {
        Ok(Created::NotServed) => not_served(&what),
        Ok(Created::AlreadyExists) => {
            eprintln!("{what} exists already: nothing to do");
            Exit::Ok
        }
        Ok(Created::Created) => {
            let rendered = yurtstaticset::wait_rendered(
                &ctx.cluster,
                &ns,
                &cmd.name,
                &key,
                &spec["template"],
                RENDER_TIMEOUT,
            )
            .await;
            match rendered {
                Ok((hash, _)) => {
                    eprintln!(
                        "{what} created; yurt-manager rendered it as revision {hash} into ConfigMap {ns}/{}",
                        staticset::configmap_name(&cmd.name)
                    );
                    print_structured(g, &object);
                    Exit::Ok
                }
                Err(e) => CommandError::at(format!("{what} was created, but "), e).report(),
            }
        }
        Err(e) => fail(&e),
    }
}

fn not_served(what: &str) -> Exit {
    Refusal::Refused(format!(
        "{what}: the cluster does not serve apps.openyurt.io/v1alpha1 yurtstaticsets (the CRD is not installed); run `yurtctl convert` first"
    ))
    .report()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_names_the_pod_and_carries_the_chosen_strategy() {
        let pod = json!({"metadata": {"name": "nginx", "namespace": "default",
            "labels": {"app": "web"}, "annotations": {"openyurt.io/static-pod-hash": "h"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}});
        let cmd = |strategy| AdoptCmd {
            name: "nginx".into(),
            manifest: None,
            strategy,
            max_unavailable: "1".parse().unwrap(),
        };
        let s = spec(
            "nginx",
            "web",
            &pod,
            &cmd(SetStrategy::AdvancedRollingUpdate),
        );
        assert_eq!(
            s,
            json!({"staticPodManifest": "web",
                "upgradeStrategy": {"type": "AdvancedRollingUpdate", "maxUnavailable": 1},
                "template": {"metadata": {"name": "nginx", "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.19.1"}]}}})
        );
        let ota = spec("nginx", "web", &pod, &cmd(SetStrategy::Ota));
        assert_eq!(ota["upgradeStrategy"], json!({"type": "OTA"}));
    }
}
