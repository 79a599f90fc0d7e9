//! `yurtctl staticpod status NAME`: TOTAL / READY / UPGRADED from the mirror pods and the
//! revision store; `-o wide` per node; `--watch` prints again whenever that status changes.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};

use super::{Context, connect_context, namespace};
use crate::app::common::print_structured;
use crate::cli::{GlobalArgs, OutputFormat, StaticPodStatusCmd as StatusCmd};
use crate::cluster::staticset::{self, MirrorPod, StaticSet};
use crate::cluster::yurtstaticset;
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
                .and_then(|s| s.progress.nodes.get(node).cloned()),
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
        api_version: crate::output::API_VERSION,
        kind: "Status",
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
    if ctx.mirrors.is_empty() && ctx.set.is_none() {
        eprintln!(
            "error: static pod {ns}/{} not found (no mirror pod {}-<node>, no ConfigMap {})",
            cmd.name,
            cmd.name,
            staticset::configmap_name(&cmd.name)
        );
        return Exit::Preflight;
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

enum Change {
    Pod(Box<watcher::Event<Pod>>),
    Store(Box<watcher::Event<ConfigMap>>),
    Set(Box<watcher::Event<kube::api::DynamicObject>>),
}

/// `--watch`: one watch on the namespace's pods (mirror pods) and one on the store's
/// ConfigMap; prints again whenever the status they make changes, until Ctrl-C (exit 0) or
/// until the API server ends both watches for good.
async fn watch(g: &GlobalArgs, mut ctx: Context) -> Exit {
    let _handled = crate::output::terminal::handles_interrupt();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let client = ctx.cluster.client().clone();
    let pods = watcher(
        Api::<Pod>::namespaced(client.clone(), &ctx.ns),
        watcher::Config::default(),
    )
    .default_backoff()
    .map(|e| e.map(|p| Change::Pod(Box::new(p))));
    let store = watcher(
        Api::<ConfigMap>::namespaced(client, &ctx.ns),
        watcher::Config::default().fields(&format!(
            "metadata.name={}",
            staticset::configmap_name(&ctx.name)
        )),
    )
    .default_backoff()
    .map(|e| e.map(|c| Change::Store(Box::new(c))));
    let mut changes = futures::stream::select(pods.boxed(), store.boxed()).boxed();
    // the YurtStaticSet's counts change with its controller's status writes
    if ctx.yss.is_some() {
        let sets = watcher(
            yurtstaticset::api(&ctx.cluster, &ctx.ns),
            watcher::Config::default().fields(&format!("metadata.name={}", ctx.name)),
        )
        .default_backoff()
        .map(|e| e.map(|o| Change::Set(Box::new(o))));
        changes = futures::stream::select(changes, sets.boxed()).boxed();
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
            _ = &mut ctrl_c => return Exit::Ok,
        };
        let (ns, name) = (ctx.ns.clone(), ctx.name.clone());
        match change {
            None => return Exit::Ok,
            Some(Err(e)) => tracing::debug!("watch: {e}; retrying"),
            Some(Ok(Change::Pod(ev))) => match *ev {
                watcher::Event::Init => listing_pods = Some(BTreeMap::new()),
                watcher::Event::InitApply(p) => {
                    if let (Some(l), Some(m)) =
                        (listing_pods.as_mut(), staticset::mirror_of(&p, &name))
                    {
                        l.insert(m.node.clone(), m);
                    }
                }
                watcher::Event::InitDone => {
                    if let Some(l) = listing_pods.take() {
                        ctx.mirrors = l;
                    }
                }
                watcher::Event::Apply(p) => {
                    if let Some(m) = staticset::mirror_of(&p, &name) {
                        ctx.mirrors.insert(m.node.clone(), m);
                    }
                }
                watcher::Event::Delete(p) => {
                    if let Some(m) = staticset::mirror_of(&p, &name) {
                        ctx.mirrors.remove(&m.node);
                    }
                }
            },
            Some(Ok(Change::Store(ev))) => {
                let read = |cm: ConfigMap| match staticset::from_configmap(&ns, &name, cm) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::warn!("{e}");
                        None
                    }
                };
                match *ev {
                    watcher::Event::Init => listing_store = Some(None),
                    watcher::Event::InitApply(cm) => {
                        if let Some(l) = listing_store.as_mut() {
                            *l = read(cm);
                        }
                    }
                    watcher::Event::InitDone => {
                        if let Some(l) = listing_store.take() {
                            ctx.set = l;
                        }
                    }
                    watcher::Event::Apply(cm) => ctx.set = read(cm),
                    watcher::Event::Delete(_) => ctx.set = None,
                }
            }
            Some(Ok(Change::Set(ev))) => match *ev {
                watcher::Event::InitApply(o) | watcher::Event::Apply(o) => {
                    ctx.yss = Some(yurtstaticset::from_dynamic(&ns, &name, o));
                }
                watcher::Event::Delete(_) => ctx.yss = None,
                watcher::Event::Init | watcher::Event::InitDone => {}
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
