//! What a static pod command reads and decides on: the context (mirror pods, nodes, the
//! revision store, a YurtStaticSet), read once on a read-only look and again under the lock.

use super::*;

/// Why a run refuses, found in the static pod's context alone: checked once on a read-only
/// look (so nothing is written, not even the lock) and again on the context read under the
/// lock. A usage error (exit 2) or what the cluster shows wrong (exit 3).
pub(crate) use crate::app::error::CommandError as Refusal;

/// What the cluster says about a static pod.
pub(crate) struct Context {
    pub cluster: Cluster,
    pub ns: String,
    pub name: String,
    pub set: Option<StaticSet>,
    /// Mirror pods by node.
    pub mirrors: BTreeMap<String, MirrorPod>,
    /// What the first mirror pod runs (see [`staticset::MirrorPods`]).
    pub mirror_template: Option<Value>,
    /// Node → (labels, Ready).
    pub nodes: BTreeMap<String, (BTreeMap<String, String>, bool)>,
    /// The YurtStaticSet that manages the static pod, if any: then it is the source of truth.
    pub yss: Option<YurtStaticSet>,
    /// The yurt-manager leading now (its controller renders YurtStaticSets): `Ok(None)` when
    /// none does, `Err` with why it could not be told (its Leases not readable).
    pub controller: Result<Option<String>, String>,
    /// While a yurt-manager leads: whether an endpoint of its webhook Service is ready (None:
    /// none leads, or it could not be read).
    pub webhooks_serving: Option<bool>,
    /// The type of each Secret the run's `--image-pull-secret` names, in the static pod's
    /// namespace, where its node Jobs run (None: it does not exist).
    pub pull_secrets: BTreeMap<String, Option<String>>,
}

/// Connects (global flags) and reads the context; a failure is already reported.
pub(crate) async fn connect_context(g: &GlobalArgs, ns: &str, name: &str) -> Result<Context, Exit> {
    let cluster = connect_from(g).await?;
    context(cluster, ns, name, &[]).await.map_err(|e| fail(&e))
}

/// The mutating commands' start: connect; a read-only look, so that what the cluster shows
/// wrong (`refuses`) is refused with no write, and as exit 6 naming the run when another run
/// holds the lock; then take the static pod's rollout lock (not in a dry run). A failure is
/// already reported.
async fn connect_locked(
    g: &GlobalArgs,
    run: &LockedRun<'_>,
    refuses: impl Fn(&Context) -> Option<Refusal>,
) -> Result<(Cluster, Option<Held>), Exit> {
    let (ns, name) = (run.ns, run.name);
    let cluster = connect_from(g).await?;
    if g.dry_run.enabled() {
        run_lock::warn_if_held(&cluster, ns, name).await;
        return Ok((cluster, None));
    }
    let look = context(cluster.clone(), ns, name, run.pull_secrets)
        .await
        .map_err(|e| fail(&e))?;
    if let Some(r) = look.pull_secret_refused().or_else(|| refuses(&look)) {
        return Err(run_lock::refuse_unless_running(&cluster, ns, name, r).await);
    }
    let lock = run_lock::take(&cluster, ns, name, run.force_unlock, run.command).await?;
    Ok((cluster, Some(lock)))
}

/// Which lock a mutating command takes, and the command it records.
pub(super) struct LockedRun<'a> {
    pub(super) ns: &'a str,
    pub(super) name: &'a str,
    pub(super) force_unlock: bool,
    pub(super) command: &'static str,
    /// The Secrets `--image-pull-secret` names (checked before anything changes).
    pub(super) pull_secrets: &'a [String],
}

/// A mutating command from its read-only look to the end: [`connect_locked`], then in the
/// lock's section (`exec::lock::run_section`) the context read again, so that what the run
/// decides is read under the lock, and `decided` on it (told when the lock is lost); the lock
/// released whatever happened.
pub(super) async fn run_locked<Fut: std::future::Future<Output = Exit>>(
    g: &GlobalArgs,
    run: LockedRun<'_>,
    refuses: impl Fn(&Context) -> Option<Refusal>,
    decided: impl FnOnce(Context, LostSignal) -> Fut,
) -> Exit {
    let (cluster, lock) = match connect_locked(g, &run, refuses).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let lost = lock.as_ref().map(Held::lost);
    let work = async {
        match context(cluster, run.ns, run.name, run.pull_secrets).await {
            Ok(ctx) => match ctx.pull_secret_refused() {
                Some(r) => r.report(),
                None => decided(ctx, lost).await,
            },
            Err(e) => fail(&e),
        }
    };
    let rep = crate::output::PlainReporter::stderr(crate::app::common::count_period());
    let section = crate::exec::lock::run_section(lock, &rep, work).await;
    crate::app::common::section_exit(section, run.command)
}

pub(crate) async fn context(
    cluster: Cluster,
    ns: &str,
    name: &str,
    pull_secrets: &[String],
) -> Result<Context, ClusterError> {
    let pull_secrets = crate::cluster::bootstrap::secret_types(&cluster, ns, pull_secrets).await?;
    let set = staticset::load(&cluster, ns, name).await?;
    let yss = yurtstaticset::get(&cluster, ns, name).await?;
    let controller = yurtstaticset::controller_leader(&cluster)
        .await
        .map_err(|e| e.to_string());
    let webhooks_serving = match controller {
        Ok(Some(_)) => crate::cluster::health::ready_endpoints(
            &cluster,
            crate::cluster::SYSTEM_NAMESPACE,
            yurtstaticset::WEBHOOK_SERVICE,
        )
        .await
        .ok()
        .map(|ready| ready.unwrap_or(0) > 0),
        _ => None,
    };
    let mirrors = staticset::mirror_pods(&cluster, ns, name).await?;
    let nodes = list_node_states(&cluster)
        .await?
        .into_iter()
        .map(|n| (n.name, (n.labels, n.ready)))
        .collect();
    Ok(Context {
        cluster,
        ns: ns.into(),
        name: name.into(),
        set,
        mirrors: mirrors.by_node,
        mirror_template: mirrors.first_template,
        nodes,
        yss,
        controller,
        webhooks_serving,
        pull_secrets,
    })
}

impl Context {
    /// Target nodes: nodes with a mirror pod, matching the selector.
    pub(super) fn targets(&self, selector: Option<&crate::selector::Selector>) -> Vec<NodeInput> {
        self.mirrors
            .iter()
            .filter_map(|(node, m)| {
                let (labels, ready) = self.nodes.get(node).cloned().unwrap_or_default();
                if selector.is_some_and(|s| !s.matches(&labels)) {
                    return None;
                }
                Some(NodeInput {
                    name: node.clone(),
                    labels,
                    revision: m.revision.clone(),
                    ready,
                })
            })
            .collect()
    }

    /// A YurtStaticSet's template only reaches the nodes once yurt-manager renders it: with
    /// none leading, an upgrade, a rollback or an adopt would wait for that until it timed
    /// out; with one leading whose webhooks serve from no ready endpoint yet, the API server
    /// refuses the set's writes. `adopting`: the set is about to be created.
    pub(super) fn controller_down(&self, adopting: bool) -> Option<Refusal> {
        if self.yss.is_none() && !adopting {
            return None;
        }
        if let (Ok(Some(leader)), Some(false)) = (&self.controller, self.webhooks_serving) {
            return Some(Refusal::Refused(format!(
                "yurt-manager leads ({leader}), but no endpoint of its webhook Service \
                 kube-system/{service} is ready yet (its pod turns Ready only once its readiness \
                 probe passes, 60 s after it starts at the earliest), and until one is the API \
                 server refuses every write of YurtStaticSet {}/{}; nothing was changed. Re-run \
                 once `kubectl -n kube-system rollout status deployment/yurt-manager` says it \
                 is available",
                self.ns,
                self.name,
                service = yurtstaticset::WEBHOOK_SERVICE,
            )));
        }
        if !matches!(self.controller, Ok(None)) {
            return None;
        }
        let leases = yurtstaticset::CONTROLLER_LEASES.map(|l| format!("Lease kube-system/{l}"));
        let alone = if adopting {
            ""
        } else {
            ", or delete the YurtStaticSet to roll the static pod out with yurtctl alone"
        };
        Some(Refusal::Refused(format!(
            "YurtStaticSet {}/{} needs yurt-manager to render its template into ConfigMap {}, but no yurt-manager leads (no live {}); nothing was changed. Start yurt-manager (kubectl -n kube-system get deployments,pods | grep yurt-manager) and re-run{alone}",
            self.ns,
            self.name,
            staticset::configmap_name(&self.name),
            leases.join(" or ")
        )))
    }

    /// A static pod no YurtStaticSet manages, while yurt-manager leads: its YurtStaticSet
    /// controller reconciles a static pod's name on every change of one of its mirror pods and,
    /// finding no YurtStaticSet of that name, deletes ConfigMap `yurt-static-set-NAME`
    /// (openyurtio/openyurt@v1.5.0 to @v1.7.0
    /// pkg/yurtmanager/controller/yurtstaticset/yurt_static_set_controller.go, `Reconcile` and
    /// its static-pod watch), the store a client-side rollout keeps its revisions in and
    /// YurtHub's OTA endpoint reads. The rollout goes through a YurtStaticSet instead.
    pub(super) fn store_deleted_by_controller(&self) -> Option<Refusal> {
        let Ok(Some(leader)) = &self.controller else {
            return None;
        };
        self.yss.is_none().then(|| {
            Refusal::Refused(format!(
                "yurt-manager leads ({leader}), and its YurtStaticSet controller deletes \
                 ConfigMap {ns}/{cm} of a static pod that no YurtStaticSet manages whenever one \
                 of its mirror pods changes, so the revisions of a rollout would vanish under it; \
                 nothing was changed. Hand the static pod to a YurtStaticSet first (`yurtctl \
                 staticpod adopt {name} -n {ns}`) and roll it out through that",
                ns = self.ns,
                name = self.name,
                cm = staticset::configmap_name(&self.name),
            ))
        })
    }

    /// A Secret `--image-pull-secret` names that the node Jobs could not pull with.
    pub(super) fn pull_secret_refused(&self) -> Option<Refusal> {
        let problems: Vec<String> = self
            .pull_secrets
            .iter()
            .filter_map(|(name, t)| crate::plan::pull_secret_problem(&self.ns, name, t.as_deref()))
            .collect();
        (!problems.is_empty())
            .then(|| Refusal::Refused(format!("{}; nothing was changed", problems.join("; "))))
    }

    pub(super) fn no_mirrors(&self) -> Option<Refusal> {
        self.mirrors.is_empty().then(|| {
            Refusal::Refused(format!(
                "no node runs static pod {}/{} (no mirror pod {}-<node> with kubernetes.io/config.source other than api); install it on the nodes first (or check -n)",
                self.ns, self.name, self.name
            ))
        })
    }

    /// The template nodes should run now: the YurtStaticSet's, else the stored one, else the
    /// first mirror pod's.
    pub(super) fn current_template(&self) -> Option<Value> {
        if let Some(y) = &self.yss {
            return Some(y.template.clone());
        }
        if let Some(s) = &self.set
            && let Ok(v) = serde_saphyr::from_str::<Value>(&s.current.manifest)
        {
            return Some(v);
        }
        self.mirror_template.clone()
    }

    /// The store, created from the running template when there is none (so rollback has a
    /// revision to go back to).
    pub(super) fn store(&self, manifest_key: &str) -> StaticSet {
        if let Some(s) = &self.set {
            let mut s = s.clone();
            s.manifest_key = manifest_key.into();
            return s;
        }
        let (hash, manifest) = match self.current_template() {
            Some(t) => {
                let h = revision_hash(&t);
                let m = plan::manifest_yaml(&t, &self.name, &self.ns, &h);
                (h, m)
            }
            None => (String::new(), String::new()),
        };
        StaticSet {
            namespace: self.ns.clone(),
            name: self.name.clone(),
            manifest_key: manifest_key.into(),
            current: Revision {
                number: 1,
                hash,
                manifest,
            },
            history: Vec::new(),
            progress: RolloutProgress::default(),
            created: None,
        }
    }
}
