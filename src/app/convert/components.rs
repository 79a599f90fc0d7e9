//! The components phase of convert: the profile's objects rendered with the cluster's address,
//! CA and a bootstrap token, then server-side applied in declaration order (webhook servers
//! available before what their webhooks admit), each journaled as created or adopted.

use std::time::Duration;

use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::jobs::{BOOTSTRAP_KEY, BOOTSTRAP_SECRET, JOIN_TOKEN_KEY};
use crate::cluster::apply::{Applier, ApplyOptions};
use crate::cluster::journal::{Journal, ObjectRef};
use crate::cluster::{
    Cluster, ClusterError, LABEL_MANAGED_BY, MANAGED_BY, SYSTEM_NAMESPACE, bootstrap, wait,
};
use crate::exec::dry_run::Write;
use crate::output::{Event, Reporter};
use crate::plan::{self, Plan, Role};
use crate::render::{
    BootstrapTokenRef, Profile, RenderContext, RenderedObject, TokenSecret, WorkingMode,
    YurtHubCredential, YurtHubMode, base64, render_cluster_objects,
};

/// The token of an earlier run (journal) if its Secret still exists, else a new one.
async fn bootstrap_token(
    cluster: &Cluster,
    journal: &Journal,
) -> Result<(String, TokenSecret), ClusterError> {
    if let Some(id) = &journal.token_id
        && let Some(s) = bootstrap::token_secret(cluster, id).await?
        && let Ok(s) = TokenSecret::new(s)
    {
        return Ok((id.clone(), s));
    }
    let id = bootstrap::random_token_chars(6)?;
    let secret = TokenSecret::new(bootstrap::random_token_chars(16)?).map_err(|e| {
        ClusterError::InvalidObject {
            object: "bootstrap token".into(),
            message: e.to_string(),
        }
    })?;
    Ok((id, secret))
}

fn bootstrap_kubeconfig(server: &str, ca: &str, token: &str) -> String {
    let ca_line = if ca.is_empty() {
        String::new()
    } else {
        format!("    certificate-authority-data: {ca}\n")
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n{ca_line}    server: {server}\n  name: cluster\n\
         contexts:\n- context:\n    cluster: cluster\n    user: yurthub-bootstrap\n  name: bootstrap\n\
         current-context: bootstrap\nusers:\n- name: yurthub-bootstrap\n  user:\n    token: {token}\n"
    )
}

fn render_err(e: crate::render::RenderError) -> ClusterError {
    ClusterError::InvalidObject {
        object: "rendered components".into(),
        message: e.to_string(),
    }
}

/// The profile's objects as convert renders them for `plan`, in declaration order (the
/// bootstrap Secret aside).
fn render_profile(
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    server: &str,
    ca: &str,
    token_ref: BootstrapTokenRef,
    token_secret: TokenSecret,
) -> Result<Vec<RenderedObject>, ClusterError> {
    let mut ctx = RenderContext::new(profile, server, ca, token_ref, token_secret);
    if profile.yurthub.mode() == YurtHubMode::Systemd
        && let Err(why) = crate::render::ca_cert_hash(ca)
    {
        return Err(ClusterError::InvalidObject {
            object: "ConfigMap kube-public/cluster-info".into(),
            message: format!(
                "its certificate-authority-data is {why}; YurtHub's bootstrap pins the cluster \
                 CA by its hash (--discovery-token-ca-cert-hash), so it must be the cluster's CA \
                 certificate, as kubeadm writes it"
            ),
        });
    }
    ctx.use_images(&plan.settings.images);
    ctx.image_pull_secrets = plan.settings.pull_secrets.clone();
    ctx.features = opts.features.clone();
    for n in &plan.nodes {
        match n.role {
            Role::Edge => ctx.edge_nodes.push(n.name.clone()),
            Role::Cloud => ctx.cloud_nodes.push(n.name.clone()),
        }
    }
    ctx.node_pools = plan::plan_pools(&plan.nodes)
        .into_iter()
        .map(|(name, role)| crate::render::NodePoolRef {
            name: name.to_owned(),
            pool_type: role.pool_type().to_owned(),
        })
        .collect();
    render_cluster_objects(profile, &ctx).map_err(render_err)
}

/// The profile's rendered objects plus the bootstrap Secret, in declaration order.
fn render_objects(
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    server: &str,
    ca: &str,
    token_id: &str,
    token_secret: TokenSecret,
) -> Result<Vec<DynamicObject>, ClusterError> {
    let ttl = k8s_openapi::jiff::SignedDuration::try_from(opts.token_ttl).unwrap_or_default();
    let expiration = k8s_openapi::jiff::Timestamp::now()
        .checked_add(ttl)
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let token_ref = BootstrapTokenRef::new(token_id, expiration).map_err(render_err)?;
    let token = format!("{token_id}.{}", token_secret.expose());
    let kubeconfig = bootstrap_kubeconfig(server, ca, &token);
    let rendered = render_profile(plan, profile, opts, server, ca, token_ref, token_secret)?;
    let mut objects: Vec<DynamicObject> = rendered.into_iter().map(|r| r.object).collect();
    let secret: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": BOOTSTRAP_SECRET,
            "namespace": SYSTEM_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, crate::render::PROFILE_LABEL: profile.name},
        },
        "type": "Opaque",
        "data": match profile.yurthub.credential() {
            YurtHubCredential::BootstrapFile => json!({BOOTSTRAP_KEY: base64(kubeconfig.as_bytes())}),
            YurtHubCredential::JoinToken => json!({JOIN_TOKEN_KEY: base64(token.as_bytes())}),
        },
    }))
    .map_err(|e| ClusterError::InvalidObject {
        object: format!("Secret {SYSTEM_NAMESPACE}/{BOOTSTRAP_SECRET}"),
        message: e.to_string(),
    })?;
    objects.push(secret);
    Ok(objects)
}

/// What convert would apply, rendered with the cluster's real server address and CA and a
/// placeholder token (dry runs: no token is made).
async fn placeholder_objects(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
) -> Result<Vec<DynamicObject>, ClusterError> {
    let (server, ca) = bootstrap::cluster_info(cluster).await?;
    let secret = TokenSecret::new("0000000000000000").map_err(render_err)?;
    let objects = render_objects(plan, profile, opts, &server, &ca, "000000", secret)?;
    Ok(objects)
}

/// The profile's objects as convert would apply them for `plan`, rendered with the cluster's
/// server address and CA and the journal's bootstrap token id (its secret a placeholder): what
/// an upgrade compares between two releases. The bootstrap Secret itself
/// ([`BOOTSTRAP_SECRET`]) is not among them; every release has it.
pub(crate) async fn compared_objects(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    journal: &Journal,
) -> Result<Vec<RenderedObject>, ClusterError> {
    let (server, ca) = bootstrap::cluster_info(cluster).await?;
    let secret = TokenSecret::new("0000000000000000").map_err(render_err)?;
    let id = journal.token_id.as_deref().unwrap_or("000000");
    let token = BootstrapTokenRef::new(id, "2000-01-01T00:00:00Z").map_err(render_err)?;
    render_profile(plan, profile, opts, &server, &ca, token, secret)
}

/// The objects convert would apply, for `--dry-run=client -o json|yaml`: rendered with the
/// cluster's real server address and CA and a placeholder token; every Secret value redacted.
pub(super) async fn dry_run_objects(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
) -> Result<Vec<Value>, ClusterError> {
    let objects = placeholder_objects(cluster, plan, profile, opts).await?;
    Ok(objects
        .into_iter()
        .map(|o| {
            let mut v = serde_json::to_value(&o).unwrap_or_default();
            if v["kind"] == "Secret"
                && v["apiVersion"] == "v1"
                && let Some(Value::Object(data)) = v.get_mut("data")
            {
                for val in data.values_mut() {
                    *val = Value::String(crate::render::REDACTED.into());
                }
            }
            v
        })
        .collect())
}

/// Renders the profile's components and the bootstrap Secret and applies them (server-side
/// apply, field manager yurtctl); returns what this or an earlier run created.
pub(crate) async fn apply_components(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    journal: &mut Journal,
    rep: &dyn Reporter,
) -> Result<Vec<ObjectRef>, ClusterError> {
    let (server, ca) = bootstrap::cluster_info(cluster).await?;
    let (token_id, token_secret) = bootstrap_token(cluster, journal).await?;
    journal.token_id = Some(token_id.clone());
    let objects = render_objects(plan, profile, opts, &server, &ca, &token_id, token_secret)?;

    // Webhook configurations go with the Deployment that serves them, as the upstream charts
    // apply them: yurt-manager exits when its configurations are still missing 20 s after it
    // starts (openyurtio/openyurt@v1.6.1 pkg/yurtmanager/webhook/server.go). Everything after
    // the last of them is applied only once those Deployments are available, so a webhook
    // with failurePolicy Fail never refuses one of our writes while its server starts.
    let serves_or_registers = |o: &DynamicObject| {
        o.types.as_ref().is_some_and(|t| {
            (t.api_version == "admissionregistration.k8s.io/v1"
                && t.kind.ends_with("WebhookConfiguration"))
                || (t.api_version == "apps/v1" && t.kind == "Deployment")
        })
    };
    let first_batch = objects
        .iter()
        .rposition(serves_or_registers)
        .map_or(0, |i| i + 1);

    let applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            force: opts.force_conflicts,
            ..Default::default()
        },
    );
    // yurt-manager rewrites its webhook configurations from the template yurtctl writes
    // (below): its ownership of their webhooks derives from ours, and a yurt-manager of the
    // other release, still running while the Deployment rolls, may have rewritten them last
    let webhook_applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            force: true,
            ..Default::default()
        },
    );
    let mut refs = Vec::with_capacity(objects.len());
    let mut deployments = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        if i == first_batch && !deployments.is_empty() {
            rep.event(Event::Note {
                phase: plan::COMPONENTS,
                message: format!(
                    "waiting for Deployment(s) {} to be available before applying what their webhooks admit",
                    deployments.join(", ")
                ),
            });
            let timeout = availability_timeout(&objects, &deployments, opts.job_timeout);
            wait::deployments_available(cluster, SYSTEM_NAMESPACE, &deployments, timeout).await?;
        }
        let webhooks = is_webhook_configuration(o);
        let with = if webhooks { &webhook_applier } else { &applier };
        let (r, ours) = apply_journaled(with, o, journal).await?;
        if webhooks {
            set_webhook_template(&applier, o).await?;
        }
        if r.kind == "Deployment" && r.api_version == "apps/v1" {
            deployments.push(r.name.clone());
        }
        rep.event(Event::Note {
            phase: plan::COMPONENTS,
            message: format!(
                "applied {}",
                crate::cluster::apply::describe(&r.kind, r.namespace.as_deref(), &r.name)
            ),
        });
        if ours {
            refs.push(r);
        }
    }
    if profile.yurthub.mode() == YurtHubMode::YurtStaticSet {
        refs.extend(
            wait_static_set_config_maps(cluster, profile, journal, opts.job_timeout, rep).await?,
        );
    }
    Ok(refs)
}

/// yurt-manager rebuilds its webhook configurations from a template it keeps in annotation
/// `yurt-manager-template` of each, written from the webhooks it first sees and never again
/// (openyurtio/openyurt@v1.6.1 and @v1.7.0 pkg/yurtmanager/webhook/util/configuration/
/// configuration.go, parseMutatingTemplate / parseValidatingTemplate). After an upgrade the
/// template would still be the old release's, and the new yurt-manager would rebuild the old
/// webhooks, without the new ones (NodePool v1beta2's defaulting among them). So the template
/// is the configuration yurtctl just applied, written as yurt-manager reads it.
const WEBHOOK_TEMPLATE: &str = "yurt-manager-template";

fn is_webhook_configuration(o: &DynamicObject) -> bool {
    o.types.as_ref().is_some_and(|t| {
        t.api_version == "admissionregistration.k8s.io/v1"
            && t.kind.ends_with("WebhookConfiguration")
    })
}

async fn set_webhook_template(applier: &Applier, o: &DynamicObject) -> Result<(), ClusterError> {
    let webhooks = o
        .data
        .get("webhooks")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let mut a = serde_json::Map::new();
    a.insert(WEBHOOK_TEMPLATE.into(), Value::String(webhooks.to_string()));
    applier.annotate(o, &a).await
}

/// Applies `o` and journals it: as created when this or an earlier run made it, as adopted
/// when it was there before (and is not ours), at once, so an interrupted run still tells
/// revert, which deletes only what convert created. Returns its reference and whether it is
/// ours.
async fn apply_journaled(
    applier: &Applier,
    o: &DynamicObject,
    journal: &mut Journal,
) -> Result<(ObjectRef, bool), ClusterError> {
    let before = match applier.get_opt(o).await {
        Err(ClusterError::UnknownKind { .. }) => None,
        other => other?,
    };
    let stored = apply_retrying_discovery(applier, o).await?;
    let types = o.types.clone().unwrap_or_default();
    let r = ObjectRef {
        api_version: types.api_version,
        kind: types.kind,
        namespace: stored.metadata.namespace.clone(),
        name: stored.metadata.name.clone().unwrap_or_default(),
    };
    let ours = !journal.adopted_objects.contains(&r)
        && before.is_none_or(|b| {
            journal.created_objects.contains(&r)
                || b.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(LABEL_MANAGED_BY))
                    .is_some_and(|v| v == MANAGED_BY)
        });
    if ours {
        journal.record_created(r.clone());
    } else {
        journal.record_adopted(r.clone());
    }
    Ok((r, ours))
}

/// Makes sure no node is labelled with a NodePool that does not exist while yurt-manager's
/// node webhook is registered: its defaulting gets the pool a node's
/// `apps.openyurt.io/nodepool` names and refuses the write when it is missing
/// (openyurtio/openyurt@v1.6.1 and @v1.7.0 pkg/yurtmanager/webhook/node/v1/node_default.go).
/// On a first run no webhook configuration of ours exists yet and this does nothing. A run
/// resumed after an earlier one registered them waits for that run's Deployments (their
/// webhooks admit the writes) and applies this run's NodePools (journaled) before
/// `label-nodes` names them; they go through the NodePool webhooks registered beside the node
/// one, as in `components` (a pool applied before them lacks their defaults, and their
/// validation refuses it later).
pub(crate) async fn pools_before_labels(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
    journal: &mut Journal,
    rep: &dyn Reporter,
) -> Result<(), ClusterError> {
    if profile.node_pools.is_none() {
        return Ok(());
    }
    let objects = placeholder_objects(cluster, plan, profile, opts).await?;
    let kind_of = |o: &DynamicObject, kind: &str| o.types.as_ref().is_some_and(|t| t.kind == kind);
    let applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            force: opts.force_conflicts,
            ..Default::default()
        },
    );
    let mut registered = false;
    for w in objects
        .iter()
        .filter(|o| kind_of(o, "MutatingWebhookConfiguration"))
    {
        registered |= applier.get_opt(w).await?.is_some();
    }
    if !registered {
        return Ok(());
    }
    let mut running = Vec::new();
    for d in objects.iter().filter(|o| kind_of(o, "Deployment")) {
        if applier.get_opt(d).await?.is_some() {
            running.extend(d.metadata.name.clone());
        }
    }
    rep.event(Event::Note {
        phase: plan::LABEL_NODES,
        message: format!(
            "an earlier run registered the webhooks of {}: waiting for it to be available, and applying the NodePools, before the nodes name them",
            running.join(", ")
        ),
    });
    let timeout = availability_timeout(&objects, &running, opts.job_timeout);
    wait::deployments_available(cluster, SYSTEM_NAMESPACE, &running, timeout).await?;
    for o in objects.iter().filter(|o| kind_of(o, "NodePool")) {
        apply_journaled(&applier, o, journal).await?;
    }
    Ok(())
}

/// Waits until yurt-manager has rendered each YurtStaticSet's manifest into its ConfigMap
/// (the node Jobs install YurtHub from there), and journals those ConfigMaps as ours: they
/// exist because our YurtStaticSets do.
async fn wait_static_set_config_maps(
    cluster: &Cluster,
    profile: &Profile,
    journal: &mut Journal,
    timeout: Duration,
    rep: &dyn Reporter,
) -> Result<Vec<ObjectRef>, ClusterError> {
    let names: Vec<String> = [WorkingMode::Edge, WorkingMode::Cloud]
        .map(|m| profile.yurthub.config_map(m).to_string())
        .to_vec();
    rep.event(Event::Note {
        phase: plan::COMPONENTS,
        message: format!(
            "waiting for yurt-manager to render the YurtHub manifests into ConfigMap(s) {}",
            names.join(", ")
        ),
    });
    let missing = wait::config_maps(
        cluster,
        SYSTEM_NAMESPACE,
        &names,
        timeout,
        wait::conditions::is_static_set_rendered,
    )
    .await;
    if !missing.is_empty() {
        return Err(ClusterError::Timeout {
            what: format!(
                "yurt-manager to render ConfigMap(s) {} in kube-system (check the yurt-manager pod's log; a ConfigMap of that name without annotations, made by someone else, stops yurt-manager v1.6's YurtStaticSet controller: delete it and re-run)",
                missing.join(", ")
            ),
            after: timeout,
        });
    }
    let mut ours = Vec::new();
    for name in names {
        let r = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some(SYSTEM_NAMESPACE.into()),
            name,
        };
        if !journal.adopted_objects.contains(&r) && !journal.created_objects.contains(&r) {
            journal.record_created(r.clone());
            ours.push(r);
        }
    }
    Ok(ours)
}

/// Applies `o`; a kind that is not served yet (a CRD applied a moment ago) is retried for a
/// few seconds.
async fn apply_retrying_discovery(
    applier: &Applier,
    o: &DynamicObject,
) -> Result<DynamicObject, ClusterError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        match applier.apply(o).await {
            Err(ClusterError::UnknownKind { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => return other,
        }
    }
}

/// `--dry-run=server` of the components phase: each object applied with `dryRun=All`. Objects
/// of kinds whose CRD this very run installs cannot be checked before the CRD exists and say so.
pub async fn dry_run_writes(
    cluster: &Cluster,
    plan: &Plan,
    profile: &Profile,
    opts: &plan::ConvertOptions,
) -> Result<Vec<Write>, ClusterError> {
    let objects = placeholder_objects(cluster, plan, profile, opts).await?;
    let applier = Applier::new(
        cluster.clone(),
        ApplyOptions {
            force: opts.force_conflicts,
            dry_run: true,
            ..Default::default()
        },
    );
    let mut writes = Vec::with_capacity(objects.len());
    for o in &objects {
        let t = o.types.clone().unwrap_or_default();
        let what = crate::cluster::apply::describe(
            &t.kind,
            o.metadata.namespace.as_deref(),
            o.metadata.name.as_deref().unwrap_or_default(),
        );
        writes.push(match applier.apply(o).await {
            Err(ClusterError::UnknownKind { .. }) => {
                Write::unchecked("apply", what, "its kind comes from a CRD this run installs")
            }
            r => Write::of("apply", what, r.map(drop)),
        });
    }
    Ok(writes)
}

/// How long convert waits for the named Deployments to be available: `--job-timeout` after the
/// longest readiness-probe `initialDelaySeconds` of their containers, before which the kubelet
/// never marks their pods Ready (yurt-manager's is 60 s, openyurtio/openyurt@v1.7.0
/// charts/yurt-manager/templates/yurt-manager.yaml: a `--job-timeout 60s` that also counted
/// that minute could never be met on a real cluster).
fn availability_timeout(
    objects: &[DynamicObject],
    names: &[String],
    timeout: Duration,
) -> Duration {
    let delay = objects
        .iter()
        .filter(|o| o.types.as_ref().is_some_and(|t| t.kind == "Deployment"))
        .filter(|o| names.iter().any(|n| o.metadata.name.as_ref() == Some(n)))
        .flat_map(|o| {
            o.data["spec"]["template"]["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c["readinessProbe"]["initialDelaySeconds"].as_u64())
        .max()
        .unwrap_or(0);
    timeout + Duration::from_secs(delay)
}

#[cfg(test)]
#[path = "components_tests.rs"]
mod tests;
