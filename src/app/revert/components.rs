//! The components phase of revert: delete what convert created (in deletion-rank order,
//! custom resources gone before their CRDs), give up yurtctl's fields on what existed before.

use kube::core::DynamicObject;
use serde_json::json;

use crate::cluster::Cluster;
use crate::cluster::ClusterError;
use crate::cluster::apply::{Applier, ApplyOptions, Deleted, describe};
use crate::cluster::journal::{Journal, ObjectRef};
use crate::exec::dry_run::{self, Write};
use crate::output::{Event, Reporter, RevertResult};
use crate::plan;
use crate::plan::revert::{RevertOptions, RevertPlan};

fn component_ref(o: &crate::render::ComponentObject) -> ObjectRef {
    ObjectRef {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        namespace: Some(o.namespace.clone()),
        name: o.name.clone(),
    }
}

pub(super) fn dynamic(r: &ObjectRef) -> Result<DynamicObject, ClusterError> {
    let mut meta = json!({"name": r.name});
    if let Some(ns) = &r.namespace {
        meta["namespace"] = json!(ns);
    }
    serde_json::from_value(json!({"apiVersion": r.api_version, "kind": r.kind, "metadata": meta}))
        .map_err(|e| ClusterError::InvalidObject {
            object: describe(&r.kind, r.namespace.as_deref(), &r.name),
            message: e.to_string(),
        })
}

/// Deletes what convert created, in [`crate::plan::revert::deletion_rank`] order, waiting
/// for custom resources to be gone before their CRDs go; gives up yurtctl's fields on the
/// objects that existed before convert (an apply naming no field).
pub(super) async fn delete_components(
    cluster: &Cluster,
    plan: &RevertPlan,
    opts: &RevertOptions,
    journal: &mut Journal,
    result: &mut RevertResult,
    rep: &dyn Reporter,
) -> Result<(), ClusterError> {
    let applier = Applier::new(cluster.clone(), ApplyOptions::default());
    let gone = delete_and_release(
        &applier,
        &plan.objects,
        &plan.adopted_objects,
        opts.job_timeout,
        journal,
        rep,
        plan::COMPONENTS,
    )
    .await?;
    result.deleted_objects.extend(gone.deleted);
    result.kept_objects.extend(gone.kept);
    // what the components wrote, once no pod of theirs can write it again
    for o in &plan.component_objects {
        let r = component_ref(o);
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        crate::cluster::wait::pods_gone(cluster, &o.namespace, &o.written_by, opts.job_timeout)
            .await?;
        if applier.delete(&dynamic(&r)?).await? == Deleted::Deleted {
            rep.event(Event::Note {
                phase: plan::COMPONENTS,
                message: format!("deleted {what} ({})", o.why),
            });
            result.deleted_objects.push(what);
        }
    }
    // YurtHub's certificate requests, once no YurtHub is left to make them
    for r in yurthub_csrs(cluster, plan).await? {
        let what = describe(&r.kind, None, &r.name);
        if applier.delete(&dynamic(&r)?).await? == Deleted::Deleted {
            rep.event(Event::Note {
                phase: plan::COMPONENTS,
                message: format!("deleted {what} (YurtHub's certificate request)"),
            });
            result.deleted_objects.push(what);
        }
    }
    Ok(())
}

/// What [`delete_and_release`] did, as `Kind ns/name`.
#[derive(Default)]
pub(crate) struct Gone {
    pub deleted: Vec<String>,
    pub kept: Vec<String>,
}

/// Deletes `objects` (yurtctl created them; sorted by
/// [`crate::plan::revert::deletion_rank`]), custom resources gone (by uid) before their
/// controller and CRDs go, and gives up yurtctl's fields on `adopted` (they existed before
/// convert: an apply naming no field), each forgotten by the journal as it goes. Revert's
/// components phase and upgrade's cleanup.
pub(crate) async fn delete_and_release(
    applier: &Applier,
    objects: &[ObjectRef],
    adopted: &[ObjectRef],
    timeout: std::time::Duration,
    journal: &mut Journal,
    rep: &dyn Reporter,
    phase: &'static str,
) -> Result<Gone, ClusterError> {
    let mut gone = Gone::default();
    let mut pending_crs: Vec<(DynamicObject, String)> = Vec::new();
    for r in objects {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let rank = crate::plan::revert::deletion_rank(r);
        if rank >= 2 && !pending_crs.is_empty() {
            for (obj, uid) in pending_crs.drain(..) {
                applier.wait_deleted(&obj, &uid, timeout).await?;
            }
        }
        let obj = dynamic(r)?;
        // custom resources are waited for (by uid) before their CRDs go; the rest are just
        // deleted, gone already being fine
        let live = if rank == 1 {
            match applier.get_opt(&obj).await {
                Ok(Some(l)) => Some(l),
                Ok(None) | Err(ClusterError::UnknownKind { .. }) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let deleted = match applier.delete(&obj).await {
            Ok(d) => d == Deleted::Deleted,
            // its CRD is gone already: so is the object
            Err(ClusterError::UnknownKind { .. }) => false,
            Err(e) => return Err(e),
        };
        if deleted {
            if let Some(live) = live {
                pending_crs.push((obj.clone(), live.metadata.uid.unwrap_or_default()));
            }
            rep.event(Event::Note {
                phase,
                message: format!("deleted {what}"),
            });
        }
        journal.created_objects.retain(|x| x != r);
        gone.deleted.push(what);
    }
    for r in adopted {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let obj = dynamic(r)?;
        // an apply would create it if it is gone meanwhile
        let live = match applier.get_opt(&obj).await {
            Ok(l) => l,
            Err(ClusterError::UnknownKind { .. }) => None,
            Err(e) => return Err(e),
        };
        if live.is_some() {
            applier.apply(&obj).await?;
        }
        rep.event(Event::Note {
            phase,
            message: format!("kept {what} (it existed before convert); gave up yurtctl's fields"),
        });
        journal.adopted_objects.retain(|x| x != r);
        gone.kept.push(what);
    }
    Ok(gone)
}

/// The plan's YurtHub certificate requests that exist now.
async fn yurthub_csrs(
    cluster: &Cluster,
    plan: &RevertPlan,
) -> Result<Vec<ObjectRef>, ClusterError> {
    let Some(hub) = &plan.yurthub_csrs else {
        return Ok(Vec::new());
    };
    Ok(crate::cluster::bootstrap::certificate_requests(cluster)
        .await?
        .into_iter()
        .filter(|c| hub.matches(&c.username, &c.groups))
        .map(|c| ObjectRef {
            api_version: "certificates.k8s.io/v1".into(),
            kind: "CertificateSigningRequest".into(),
            namespace: None,
            name: c.name,
        })
        .collect())
}

/// The webhooks (name, "Kind name" of their configuration) of the admission webhook
/// configurations this revert deletes: they go first, so their refusals of later deletes in a
/// dry run do not hold for the real run.
async fn webhooks_deleted_first(
    applier: &Applier,
    plan: &RevertPlan,
) -> Result<Vec<(String, String)>, ClusterError> {
    let mut hooks = Vec::new();
    for r in plan.objects.iter().filter(|r| {
        r.kind == "ValidatingWebhookConfiguration" || r.kind == "MutatingWebhookConfiguration"
    }) {
        let Some(live) = applier.get_opt(&dynamic(r)?).await? else {
            continue;
        };
        let config = format!("{} {}", r.kind, r.name);
        for h in live.data["webhooks"].as_array().into_iter().flatten() {
            if let Some(name) = h["name"].as_str() {
                hooks.push((name.to_owned(), config.clone()));
            }
        }
    }
    Ok(hooks)
}

/// `--dry-run=server` of the components phase: each delete (and each give-up apply) with
/// `dryRun=All`.
pub(super) async fn dry_run_writes(
    cluster: &Cluster,
    plan: &RevertPlan,
) -> Result<Vec<Write>, ClusterError> {
    let applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            dry_run: true,
            ..Default::default()
        },
    );
    let removed_webhooks = webhooks_deleted_first(&applier, plan).await?;
    let mut out = Vec::new();
    for r in &plan.objects {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let obj = dynamic(r)?;
        let row = match applier.delete(&obj).await {
            Err(ClusterError::UnknownKind { .. }) => {
                Write::accepted_with("delete", what, "its CRD is gone, and so is the object")
            }
            // a webhook the real run deletes before this object: its refusal is no answer
            Err(e)
                if let Some((hook, config)) = e
                    .denying_webhook()
                    .and_then(|h| removed_webhooks.iter().find(|(n, _)| n == h)) =>
            {
                Write::unchecked(
                    "delete",
                    what,
                    format!(
                        "admission webhook {hook:?} refused the dry run, but revert deletes its {config} before this object"
                    ),
                )
            }
            res => dry_run::deleted("delete", what, res, "already gone"),
        };
        out.push(row);
    }
    for o in &plan.component_objects {
        let r = component_ref(o);
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let res = applier.delete(&dynamic(&r)?).await;
        out.push(dry_run::deleted("delete", what, res, "not there"));
    }
    for r in yurthub_csrs(cluster, plan).await? {
        let what = describe(&r.kind, None, &r.name);
        let res = applier.delete(&dynamic(&r)?).await;
        out.push(dry_run::deleted("delete", what, res, "not there"));
    }
    for r in &plan.adopted_objects {
        let what = describe(&r.kind, r.namespace.as_deref(), &r.name);
        let obj = dynamic(r)?;
        match applier.get_opt(&obj).await {
            Ok(Some(_)) => out.push(Write::of(
                "apply",
                what,
                applier.apply(&obj).await.map(drop),
            )),
            Ok(None) | Err(ClusterError::UnknownKind { .. }) => {}
            Err(e) => out.push(Write::of("apply", what, Err(e))),
        }
    }
    Ok(out)
}
