//! `yurtctl staticpod status NAME`: TOTAL / READY / UPGRADED from the mirror pods and the
//! revision store; `-o wide` per node; `--watch` prints again whenever that status changes.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;

use super::{Context, connect_context, namespace, run_lock};
use crate::app::common::print_structured;
use crate::app::error::CommandError;
use crate::cli::{GlobalArgs, OutputFormat, StaticPodStatusCmd as StatusCmd};
use crate::cluster::staticset::{self, MirrorPod, StaticSet};
use crate::cluster::watch::Change;
use crate::cluster::yurtstaticset::{self, YurtStaticSet};
use crate::exit::Exit;
use crate::output::staticpod::{
    NodeStatus, RevisionInfo, StaticPodStatus, YurtStaticSetInfo, human_age, status_lines,
};

/// The status of a static pod from what `ctx` read.
pub(crate) fn status_of(ctx: &Context) -> StaticPodStatus {
    let target = ctx.set.as_ref().map(|s| s.current.hash.clone());
    let nodes: Vec<NodeStatus> = ctx
        .mirrors
        .iter()
        .map(|(node, m)| NodeStatus {
            node: node.clone(),
            ready: m.ready,
            revision: m.revision.clone(),
            needs_upgrade: target.is_some() && m.revision != target,
            pod_need_upgrade: m.need_upgrade.clone(),
            last_result: ctx
                .set
                .as_ref()
                .and_then(|s| s.progress.nodes.get(node).copied()),
        })
        .collect();
    let (total, ready, upgraded) = match &ctx.yss {
        Some(y) => (
            y.count("totalNumber"),
            y.count("readyNumber"),
            y.count("upgradedNumber"),
        ),
        None => (
            nodes.len(),
            nodes.iter().filter(|n| n.ready).count(),
            nodes.iter().filter(|n| !n.needs_upgrade).count(),
        ),
    };
    StaticPodStatus {
        header: crate::naming::ResultHeader::of("Status"),
        name: ctx.name.clone(),
        namespace: ctx.ns.clone(),
        created: created(ctx).map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        revision: target,
        total,
        ready,
        upgraded,
        yurt_static_set: ctx.yss.as_ref().map(|y| YurtStaticSetInfo {
            upgrade_strategy: y.strategy.clone(),
            held_upgrade_strategy: y.held.clone(),
            controller_running: ctx.controller.as_ref().ok().map(Option::is_some),
            controller_leader: ctx.controller.clone().ok().flatten(),
        }),
        revisions: ctx
            .set
            .iter()
            .flat_map(|s| s.revisions())
            .map(|r| RevisionInfo {
                number: r.number,
                hash: r.hash.clone(),
                current: ctx.set.as_ref().is_some_and(|s| s.current.hash == r.hash),
            })
            .collect(),
        nodes,
    }
}

/// The YurtStaticSet's creation, else the store's.
fn created(ctx: &Context) -> Option<k8s_openapi::jiff::Timestamp> {
    match &ctx.yss {
        Some(y) => y.created,
        None => ctx.set.as_ref().and_then(|s| s.created),
    }
}

fn age(ctx: &Context) -> String {
    // kubectl's AGE of the YurtStaticSet or the store; before any rollout, the oldest mirror
    // pod's.
    let since = created(ctx).or_else(|| ctx.mirrors.values().filter_map(|m| m.created).min());
    match since {
        Some(t) => {
            let secs = k8s_openapi::jiff::Timestamp::now()
                .duration_since(t)
                .as_secs()
                .max(0) as u64;
            human_age(secs)
        }
        None => "<unknown>".into(),
    }
}

/// Prints the status; `again` for the prints of `--watch` after the first: kubectl-style, the
/// table's header is not repeated (without -o wide) and YAML documents are separated by `---`.
fn print(g: &GlobalArgs, ctx: &Context, s: &StaticPodStatus, again: bool) {
    if again && g.output == Some(OutputFormat::Yaml) {
        println!("---");
    }
    if print_structured(g, s) {
        return;
    }
    let wide = g.output == Some(OutputFormat::Wide);
    let lines = status_lines(s, &age(ctx), wide);
    match (again, wide) {
        (true, false) => lines.iter().skip(1).for_each(|l| println!("{l}")),
        (true, true) => {
            println!();
            lines.iter().for_each(|l| println!("{l}"));
        }
        (false, _) => lines.iter().for_each(|l| println!("{l}")),
    }
}

pub async fn run(g: &GlobalArgs, cmd: StatusCmd) -> Exit {
    let ns = namespace(g);
    let ctx = match connect_context(g, &ns, &cmd.name).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    run_lock::warn_if_held(&ctx.cluster, &ns, &cmd.name).await;
    if let (Some(y), Ok(None)) = (&ctx.yss, &ctx.controller) {
        eprintln!(
            "warning: no yurt-manager leads: YurtStaticSet {}/{} is not reconciled (its status may be stale, and a new template is not rendered)",
            y.namespace, y.name
        );
    }
    if ctx.mirrors.is_empty() && ctx.set.is_none() {
        return CommandError::Refused(format!(
            "static pod {ns}/{} not found (no mirror pod {}-<node>, no ConfigMap {})",
            cmd.name,
            cmd.name,
            staticset::configmap_name(&cmd.name)
        ))
        .report();
    }
    if !cmd.watch {
        print(g, &ctx, &status_of(&ctx), false);
        return Exit::Ok;
    }
    watch(g, ctx).await
}

/// What a print of `s` shows (without AGE): `--watch` prints again only when it changes.
fn what_shows(g: &GlobalArgs, s: &StaticPodStatus) -> String {
    match g.output {
        Some(OutputFormat::Json | OutputFormat::Yaml) => {
            serde_json::to_string(s).unwrap_or_default()
        }
        _ => status_lines(s, "", g.output == Some(OutputFormat::Wide)).join("\n"),
    }
}

enum Seen {
    Pod(Box<Change<MirrorPod>>),
    Store(Box<Change<ConfigMap>>),
    Set(Box<Change<YurtStaticSet>>),
}

/// `--watch`: one watch on the namespace's pods (mirror pods) and one on the store's
/// ConfigMap; prints again whenever the status they make changes, until Ctrl-C (exit 0) or
/// until the API server ends both watches for good.
async fn watch(g: &GlobalArgs, mut ctx: Context) -> Exit {
    let _handling = crate::exec::stop::handling();
    let stop = crate::exec::stop::asked();
    tokio::pin!(stop);
    let pods = staticset::mirror_pod_changes(&ctx.cluster, &ctx.ns, &ctx.name)
        .map(|e| e.map(|c| Seen::Pod(Box::new(c))));
    let store = staticset::store_changes(&ctx.cluster, &ctx.ns, &ctx.name)
        .map(|e| e.map(|c| Seen::Store(Box::new(c))));
    let mut changes = futures::stream::select(pods, store).boxed();
    // the YurtStaticSet's counts change with its controller's status writes
    if ctx.yss.is_some() {
        let sets = yurtstaticset::set_changes(&ctx.cluster, &ctx.ns, &ctx.name)
            .map(|e| e.map(|c| Seen::Set(Box::new(c))));
        changes = futures::stream::select(changes, sets).boxed();
    }
    let first = status_of(&ctx);
    let mut shown = what_shows(g, &first);
    print(g, &ctx, &first, false);
    // A (re-)list replaces what we know once it is complete.
    let mut listing_pods: Option<BTreeMap<String, MirrorPod>> = None;
    let mut listing_store: Option<Option<StaticSet>> = None;
    loop {
        let change = tokio::select! {
            c = changes.next() => c,
            () = &mut stop => return Exit::Ok,
        };
        let (ns, name) = (ctx.ns.clone(), ctx.name.clone());
        match change {
            None => return Exit::Ok,
            Some(Err(e)) => tracing::debug!("watch: {e}; retrying"),
            Some(Ok(Seen::Pod(ev))) => match *ev {
                Change::Init => listing_pods = Some(BTreeMap::new()),
                Change::InitApply(m) => {
                    if let Some(l) = listing_pods.as_mut() {
                        l.insert(m.node.clone(), m);
                    }
                }
                Change::InitDone => {
                    if let Some(l) = listing_pods.take() {
                        ctx.mirrors = l;
                    }
                }
                Change::Apply(m) => {
                    ctx.mirrors.insert(m.node.clone(), m);
                }
                Change::Delete(m) => {
                    ctx.mirrors.remove(&m.node);
                }
            },
            Some(Ok(Seen::Store(ev))) => {
                let read = |cm: ConfigMap| match staticset::from_configmap(&ns, &name, cm) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::warn!("{e}");
                        None
                    }
                };
                match *ev {
                    Change::Init => listing_store = Some(None),
                    Change::InitApply(cm) => {
                        if let Some(l) = listing_store.as_mut() {
                            *l = read(cm);
                        }
                    }
                    Change::InitDone => {
                        if let Some(l) = listing_store.take() {
                            ctx.set = l;
                        }
                    }
                    Change::Apply(cm) => ctx.set = read(cm),
                    Change::Delete(_) => ctx.set = None,
                }
            }
            Some(Ok(Seen::Set(ev))) => match *ev {
                Change::InitApply(y) | Change::Apply(y) => ctx.yss = Some(y),
                Change::Delete(_) => ctx.yss = None,
                Change::Init | Change::InitDone => {}
            },
        }
        let now = status_of(&ctx);
        let key = what_shows(g, &now);
        if key != shown {
            print(g, &ctx, &now, true);
            shown = key;
        }
    }
}
