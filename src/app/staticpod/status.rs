//! `yurtctl staticpod status NAME`: TOTAL / READY / UPGRADED from the mirror pods and the
//! revision store; `-o wide` per node; `--watch` prints again on every mirror-pod change.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};

use super::{Context, context, namespace};
use crate::app::common::{connect_from, fail, print_structured};
use crate::cli::{GlobalArgs, OutputFormat, StaticPodStatusCmd as StatusCmd};
use crate::cluster::staticset;
use crate::exit::Exit;
use crate::output::staticpod::{
    NodeStatus, RevisionInfo, StaticPodStatus, human_age, status_lines,
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
    StaticPodStatus {
        api_version: crate::output::API_VERSION,
        kind: "Status",
        name: ctx.name.clone(),
        namespace: ctx.ns.clone(),
        created: ctx
            .set
            .as_ref()
            .and_then(|s| s.created)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        revision: target,
        total: nodes.len(),
        ready: nodes.iter().filter(|n| n.ready).count(),
        upgraded: nodes.iter().filter(|n| !n.needs_upgrade).count(),
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

fn age(ctx: &Context) -> String {
    // The store's age; before any rollout, the oldest mirror pod's.
    let since = ctx
        .set
        .as_ref()
        .and_then(|s| s.created)
        .or_else(|| ctx.mirrors.values().filter_map(|m| m.created).min());
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

fn print(g: &GlobalArgs, ctx: &Context) {
    let s = status_of(ctx);
    if !print_structured(g, &s) {
        let wide = g.output == Some(OutputFormat::Wide);
        for l in status_lines(&s, &age(ctx), wide) {
            println!("{l}");
        }
    }
}

pub async fn run(g: &GlobalArgs, cmd: StatusCmd) -> Exit {
    let ns = namespace(g);
    let cluster = match connect_from(g).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let ctx = match context(cluster.clone(), &ns, &cmd.name).await {
        Ok(c) => c,
        Err(e) => return fail(&e),
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
    print(g, &ctx);
    if !cmd.watch {
        return Exit::Ok;
    }
    // One watch on the namespace's pods; print again when a mirror pod of ours changes.
    let api: Api<Pod> = Api::namespaced(cluster.client().clone(), &ns);
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .boxed();
    let mut ctx = ctx;
    loop {
        tokio::select! {
            ev = stream.next() => match ev {
                Some(Ok(p)) => {
                    let Some(m) = staticset::mirror_of(&p, &cmd.name) else { continue };
                    let before = ctx.mirrors.get(&m.node).cloned();
                    if before.as_ref() == Some(&m) {
                        continue;
                    }
                    ctx.mirrors.insert(m.node.clone(), m);
                    if let Ok(Some(s)) = staticset::load(&ctx.cluster, &ns, &cmd.name).await {
                        ctx.set = Some(s);
                    }
                    print(g, &ctx);
                }
                Some(Err(_)) => continue,
                None => return Exit::Ok,
            },
            _ = tokio::signal::ctrl_c() => return Exit::Ok,
        }
    }
}
