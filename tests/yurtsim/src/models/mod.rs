//! Models of the OpenYurt binaries our profiles deploy. A pod whose image is a component and
//! version the sim has a model for runs that model instead of the absent binary: it parses its
//! command line against the real flag set, enforces the real binary's start-up contract and
//! talks to the API with the identity the real binary would use (every request authorized as
//! the API server would), so RBAC, served API versions and ordering are exercised for real.
//! The facts each model enforces live in `tests/yurtsim/facts/` with their upstream sources.
//!
//! A model ends like a process: with an exit code and its last log lines in the container's log.

mod lease;
pub mod legacy_csr;
pub mod node_servant;
mod serveraddr;
pub mod yurt_app_manager;
pub mod yurt_controller_manager;
pub mod yurt_manager;
pub mod yurt_tunnel_agent;
pub mod yurt_tunnel_server;
pub mod yurthub;
pub mod yurthub_v06;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api::auth::{self, Attributes, UserInfo};
use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::store::Filter;
use crate::api::{Ctx, DeleteOptions, PatchType, Propagation};
use crate::facts::{self, Facts};
use crate::nodes::Cluster;
use crate::nodes::programs::{Component, Container, Model, Run};

/// What a model sees: the sim, its container, its log and its readiness switches.
pub struct Env {
    pub shared: Arc<Cluster>,
    pub container: Container,
    pub log: Log,
    /// The readiness endpoint answers OK.
    pub ready: watch::Sender<bool>,
    /// The process has started serving (health endpoints and, for YurtHub, its proxy).
    pub serving: watch::Sender<bool>,
}

impl Env {
    /// An upstream duration, scaled by `SimConfig::model_time_scale` (tests run them faster).
    pub fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.shared.cfg.model_time_scale)
    }

    pub async fn sleep(&self, d: Duration) {
        tokio::time::sleep(self.scaled(d)).await
    }

    /// The identity of the pod's ServiceAccount, by a token bound to the pod (the projected
    /// token the real process reads), authenticated like any request's bearer token.
    pub fn pod_identity(&self) -> Result<Caller, String> {
        let c = &self.container;
        let sa = c.service_account.as_deref().unwrap_or("default");
        let token = self
            .shared
            .api
            .tokens
            .issue(
                &self.shared.api,
                &c.namespace,
                sa,
                Some((&c.namespace, &c.pod)),
                // the kube-api-access volume's expirationSeconds: kubernetes/kubernetes
                // pkg/serviceaccount/claims.go WarnOnlyBoundTokenExpirationSeconds, set by
                // plugin/pkg/admission/serviceaccount/admission.go (current source, no tag)
                Duration::from_secs(3607),
            )
            .ok_or_else(|| format!("serviceaccounts \"{sa}\" not found"))?;
        self.caller_with_token(&token)
    }

    /// The real path of a file as the container sees it: under the mount covering it (the
    /// longest), or for a service under the node's root. None when nothing mounts it.
    pub fn container_path(&self, path: &str) -> Option<PathBuf> {
        let path = crate::util::clean_path(path);
        let c = &self.container;
        if c.namespace.is_empty() {
            return self
                .shared
                .kubelets
                .get(&c.node)
                .map(|k| k.host_path(&path));
        }
        c.mounts
            .iter()
            .filter_map(|(mount, real)| {
                let mount = crate::util::clean_path(mount);
                let rest = if path == mount {
                    ""
                } else {
                    path.strip_prefix(&format!("{}/", mount.trim_end_matches('/')))?
                };
                Some((mount.len(), real.join(rest)))
            })
            .max_by_key(|(n, _)| *n)
            .map(|(_, p)| p)
    }

    /// Reads a file as the container's process would: through its mounts, following symbolic
    /// links as the container sees them (an absolute target is looked up through the mounts
    /// again, as kubeadm's `kubelet-client-current.pem` link needs). None when it cannot.
    pub fn read_container_file(&self, path: &str) -> Option<Vec<u8>> {
        let mut path = crate::util::clean_path(path);
        for _ in 0..40 {
            let real = self.container_path(&path)?;
            match std::fs::read_link(&real) {
                Ok(target) => {
                    let target = target.to_string_lossy().into_owned();
                    path = if target.starts_with('/') {
                        crate::util::clean_path(&target)
                    } else {
                        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                        crate::util::clean_path(&format!("{dir}/{target}"))
                    };
                }
                Err(_) => return std::fs::read(&real).ok(),
            }
        }
        None
    }

    pub fn caller_with_token(&self, token: &str) -> Result<Caller, String> {
        auth::authenticate(&self.shared.api, Some(&format!("Bearer {token}")))
            .map(|user| Caller::new(&self.shared, user))
            .map_err(|e| e.message)
    }
}

pub fn start(shared: &Arc<Cluster>, model: Model, container: Container) -> Run {
    let (ready_tx, ready) = watch::channel(false);
    let (serving_tx, serving) = watch::channel(false);
    let env = Env {
        log: Log::create(&container.log, container.append_log),
        shared: shared.clone(),
        container,
        ready: ready_tx,
        serving: serving_tx,
    };
    let (exited_tx, exited) = watch::channel(None);
    let exit = tokio::spawn(async move {
        let code = match model.component {
            Component::YurtManager => yurt_manager::run(&env, model.facts).await,
            Component::YurtHub => yurthub::run(&env, model.facts).await,
            Component::YurtControllerManager => {
                yurt_controller_manager::run(&env, model.facts).await
            }
            Component::YurtAppManager => yurt_app_manager::run(&env, model.facts).await,
            Component::YurtTunnelServer => yurt_tunnel_server::run(&env, model.facts).await,
            Component::YurtTunnelAgent => yurt_tunnel_agent::run(&env, model.facts).await,
            Component::YurtHubV06 => yurthub_v06::run(&env, model.facts).await,
            Component::NodeServant => node_servant::run(&env, model.facts).await,
        };
        let _ = exited_tx.send(Some(code));
        code
    });
    Run {
        exit,
        exited,
        ready,
        serving,
    }
}

/// The container's log file, written as the real process writes stderr.
pub struct Log {
    file: Mutex<Option<std::fs::File>>,
}

impl Log {
    fn create(path: &std::path::Path, append: bool) -> Log {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if !append {
            let _ = std::fs::File::create(path);
        }
        // Always appending, as a runtime writes a container's log: whatever else writes to the
        // file (the runtime, a test) is never overwritten.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok();
        Log {
            file: Mutex::new(file),
        }
    }

    pub fn line(&self, text: &str) {
        // YURTSIM_MODEL_LOG=1 echoes every model's log to stderr (a failing test shows it)
        if std::env::var_os("YURTSIM_MODEL_LOG").is_some() {
            eprintln!("[model] {text}");
        }
        if let Some(f) = self.file.lock().unwrap().as_mut() {
            let _ = writeln!(f, "{text}");
        }
    }

    /// A klog line: `I1124 10:00:00.000000       1 file.go:0] msg`.
    pub fn klog(&self, severity: char, file: &str, msg: &str) {
        self.line(&format!(
            "{}{} {:>7} {file}] {msg}",
            severity,
            klog_time(),
            1
        ));
    }

    pub fn info(&self, file: &str, msg: &str) {
        self.klog('I', file, msg)
    }

    pub fn error(&self, file: &str, msg: &str) {
        self.klog('E', file, msg)
    }

    /// A controller-runtime zap development line: `<time>\tERROR\t<logger>\t<msg>\t{"error": …}`.
    pub fn zap_error(&self, logger: &str, msg: &str, error: &str) {
        self.line(&format!(
            "{}\tERROR\t{logger}\t{msg}\t{{\"error\": {}}}",
            crate::util::now(),
            serde_json::Value::String(error.into())
        ));
    }
}

fn klog_time() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    // "YYYY-MM-DDTHH:MM:SS.ffffffZ" → "MMDD HH:MM:SS.ffffff"
    let t = crate::util::format_unix(d.as_secs() as i64, Some(d.subsec_micros()));
    format!("{}{} {}", &t[5..7], &t[8..10], &t[11..26])
}

impl Caller {
    /// Approves CSR `name` through its `approval` subresource, as the OpenYurt approvers do
    /// (condition Approved, reason AutoApproved, `message`); `transition_time`: the approver
    /// also sets `lastTransitionTime` (yurt-manager's does, yurt-controller-manager v0.6's not).
    pub fn approve_csr(
        &self,
        name: &str,
        message: &str,
        transition_time: bool,
    ) -> ApiResult<Option<Value>> {
        let now = crate::util::now();
        let mut cond = serde_json::json!({"type": "Approved", "status": "True",
            "reason": "AutoApproved", "message": message, "lastUpdateTime": now});
        if transition_time {
            cond["lastTransitionTime"] = serde_json::json!(now);
        }
        let approve = |o: &mut Value| {
            match o["status"]["conditions"].as_array_mut() {
                Some(c) => c.push(cond.clone()),
                None => o["status"]["conditions"] = serde_json::json!([cond.clone()]),
            }
            true
        };
        self.update(
            "certificates.k8s.io",
            "certificatesigningrequests/approval",
            "",
            name,
            &approve,
        )
    }
}

/// k8s.io/apimachinery pkg/util/errors `NewAggregate` as its `Error()` prints it: duplicates
/// collapse, one message stands alone, several are bracketed.
pub(crate) fn aggregate(mut errors: Vec<String>) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Registers a pod's webhook server with the API server for as long as the process runs.
pub(crate) struct WebhookServing<'a>(&'a Env);

impl<'a> WebhookServing<'a> {
    pub(crate) fn register(
        env: &'a Env,
        server: Arc<dyn crate::api::admission::WebhookServer>,
    ) -> Self {
        let c = &env.container;
        env.shared
            .api
            .webhook_servers
            .register(&c.namespace, &c.pod, server);
        WebhookServing(env)
    }
}

impl Drop for WebhookServing<'_> {
    fn drop(&mut self) {
        let c = &self.0.container;
        self.0
            .shared
            .api
            .webhook_servers
            .unregister(&c.namespace, &c.pod);
    }
}

/// The start of a cobra command whose `main` panics on a flag error (exit 2: `cmd.Execute()`
/// then `panic(err)` in openyurtio/openyurt@v0.6.1 cmd/yurthub/yurthub.go and
/// openyurtio/yurt-app-manager@8696f1c (v0.4.0) main.go) and that logs its
/// `projectinfo.Info` first: the parsed flags, or the exit code it ends with (0 for
/// `--version`, printed as `<program>: <info>`).
pub(crate) fn start_v0_command(
    env: &Env,
    facts: &'static Facts,
    program: &str,
) -> Result<facts::Parsed, i32> {
    let log = &env.log;
    let panics = |e: &str| {
        // cobra printed the error and the usage; main panics with it (exit 2)
        log.line(&format!("panic: {e}"));
        facts.unknown_flag().0
    };
    let (parsed, info) = start_v0(env, facts, program, None, &panics)?;
    log.line(&format!("{program} version: {info}"));
    Ok(parsed)
}

/// The start of a v0.6 tunnel command (openyurtio/openyurt@v0.6.1 cmd/yurt-tunnel-server and
/// cmd/yurt-tunnel-agent): cobra prints a flag error or a positional argument (`cobra.NoArgs`;
/// `unknown command "ARG" for "USE"`) and main ends it with `fatal` (klog.Fatalf, exit 255).
/// The parsed flags and the `projectinfo.Info` text, or the exit code (0 for `--version`,
/// printed as `<program>: <info>`).
pub(crate) fn start_v0_tunnel_command(
    env: &Env,
    facts: &'static Facts,
    program: &str,
    cobra_use: &str,
    fatal: &dyn Fn(&str) -> i32,
) -> Result<(facts::Parsed, String), i32> {
    start_v0(env, facts, program, Some(cobra_use), fatal)
}

/// Flags parsed as cobra does (`Error: …` logged, then `failed` decides the exit), positional
/// arguments refused when the command is `cobra.NoArgs` (`no_args`: its Use), `--version`.
fn start_v0(
    env: &Env,
    facts: &'static Facts,
    program: &str,
    no_args: Option<&str>,
    failed: &dyn Fn(&str) -> i32,
) -> Result<(facts::Parsed, String), i32> {
    let log = &env.log;
    let parsed = match facts::parse_args(&facts.flags(), &env.container.args) {
        Ok(p) => p,
        Err(e) => {
            log.line(&format!("Error: {e}"));
            return Err(failed(&e));
        }
    };
    if let (Some(cobra_use), Some(arg)) = (no_args, parsed.positional.first()) {
        let e = format!("unknown command \"{arg}\" for \"{cobra_use}\"");
        log.line(&format!("Error: {e}"));
        return Err(failed(&e));
    }
    let info = format!(
        "projectinfo.Info{{GitVersion:\"{}\", GitCommit:\"yurtsim\"}}",
        facts.version
    );
    if parsed.get("version") == Some("true") {
        log.line(&format!("{program}: {info}"));
        return Err(0);
    }
    Ok((parsed, info))
}

/// API requests as one identity, each authorized as the API server would (`Node,RBAC`) and
/// answered from the sim's store, with admission (webhooks) applied to writes.
#[derive(Clone)]
pub struct Caller {
    shared: Arc<Cluster>,
    pub user: UserInfo,
}

impl Caller {
    pub fn new(shared: &Arc<Cluster>, user: UserInfo) -> Caller {
        Caller {
            shared: shared.clone(),
            user,
        }
    }

    pub fn authorize(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        let attrs = Attributes::resource(verb, group, resource, ns, name);
        let d = auth::authorize(&self.shared.api, &self.user, &attrs);
        if d.allowed {
            Ok(())
        } else {
            Err(auth::forbidden(&attrs, &self.user, &d.reason))
        }
    }

    /// A non-resource request (`/healthz`), authorized as the API server would.
    pub fn authorize_path(&self, verb: &str, path: &str) -> ApiResult<()> {
        let attrs = Attributes::non_resource(verb, path);
        let d = auth::authorize(&self.shared.api, &self.user, &attrs);
        if d.allowed {
            Ok(())
        } else {
            Err(auth::forbidden(&attrs, &self.user, &d.reason))
        }
    }

    /// Whether discovery lists `group/version` with `resource` (a REST mapper's lookup).
    pub fn served(&self, group: &str, version: &str, resource: &str) -> bool {
        self.shared
            .api
            .registry
            .lookup(group, version, resource)
            .is_some()
    }

    fn info(&self, group: &str, resource: &str) -> ApiResult<Arc<ResourceInfo>> {
        self.shared
            .api
            .registry
            .lookup_gr(group, resource)
            .ok_or_else(ApiError::path_not_found)
    }

    pub fn get(&self, group: &str, resource: &str, ns: &str, name: &str) -> ApiResult<Arc<Value>> {
        self.authorize("get", group, resource, ns, name)?;
        let info = self.info(group, resource)?;
        self.shared.api.get(&info, ns, name)
    }

    /// A LIST of `resource` (in `ns`, or cluster-wide when empty) with a label selector.
    pub fn list(
        &self,
        group: &str,
        resource: &str,
        ns: &str,
        label_selector: &str,
    ) -> ApiResult<Vec<Arc<Value>>> {
        self.authorize("list", group, resource, ns, "")?;
        let info = self.info(group, resource)?;
        let label = crate::api::selector::LabelSelector::parse(label_selector)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let filter = Filter {
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            label,
            ..Default::default()
        };
        Ok(self.shared.api.list(&info, &filter).0)
    }

    /// An informer's first list (and the watch it then opens): both verbs must be allowed and
    /// the version served, else the informer never syncs.
    pub fn list_watch(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> ApiResult<Vec<Arc<Value>>> {
        self.may_list_watch(group, version, resource, ns, name)?;
        let info = self.info_in(group, version, resource)?;
        let filter = Filter {
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            ..Default::default()
        };
        let (items, _) = self.shared.api.list(&info, &filter);
        let items = items
            .into_iter()
            .filter(|o| name.is_empty() || o["metadata"]["name"] == name)
            .collect();
        // in the informer's version: custom resources convert from the stored one
        self.shared.api.present_all(&info, items)
    }

    fn info_in(&self, group: &str, version: &str, resource: &str) -> ApiResult<Arc<ResourceInfo>> {
        self.shared
            .api
            .registry
            .lookup(group, version, resource)
            .ok_or_else(ApiError::path_not_found)
    }

    /// What an informer of the kind needs: the version served, list and watch allowed.
    fn may_list_watch(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        if !self.served(group, version, resource) {
            return Err(ApiError::path_not_found());
        }
        self.authorize("list", group, resource, ns, name)?;
        self.authorize("watch", group, resource, ns, name)
    }

    /// A controller-runtime cache read: served from a cluster-wide informer of the kind, so
    /// it needs list and watch over all namespaces, not get.
    pub fn cached_get(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> ApiResult<Arc<Value>> {
        self.may_list_watch(group, version, resource, "", "")?;
        let info = self.info_in(group, version, resource)?;
        let obj = self.shared.api.get(&info, ns, name)?;
        Ok(match self.shared.api.present(&info, &obj)? {
            std::borrow::Cow::Borrowed(_) => obj.clone(),
            std::borrow::Cow::Owned(v) => Arc::new(v),
        })
    }

    pub fn create(&self, group: &str, resource: &str, ns: &str, body: Value) -> ApiResult<Value> {
        let (res, sub) = resource.split_once('/').unwrap_or((resource, ""));
        let name = if sub.is_empty() {
            ""
        } else {
            body["metadata"]["name"].as_str().unwrap_or("")
        };
        self.authorize("create", group, resource, ns, name)?;
        let info = self.info(group, res)?;
        Ok(self.shared.api.create(&info, ns, body, &self.ctx())?.body)
    }

    /// A create through one `version` of the resource: 404 when that version is not served
    /// (what a client pinned to an API version gets from a newer API server).
    pub fn create_in(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        ns: &str,
        body: Value,
    ) -> ApiResult<Value> {
        self.authorize("create", group, resource, ns, "")?;
        let info = self
            .shared
            .api
            .registry
            .lookup(group, version, resource)
            .ok_or_else(ApiError::path_not_found)?;
        Ok(self.shared.api.create(&info, ns, body, &self.ctx())?.body)
    }

    /// A read-modify-write `update` of `name` (or of its `subresource`); `f` returns false when
    /// there is nothing to change. None when the object does not exist.
    pub fn update(
        &self,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
        f: &dyn Fn(&mut Value) -> bool,
    ) -> ApiResult<Option<Value>> {
        self.authorize("update", group, resource, ns, name)?;
        let (res, sub) = resource.split_once('/').unwrap_or((resource, ""));
        let info = self.info(group, res)?;
        let Ok(cur) = self.shared.api.get(&info, ns, name) else {
            return Ok(None);
        };
        // read and written back in the version it is stored in, when that one is served
        let stored = cur["apiVersion"].as_str().unwrap_or("");
        let stored = stored.rsplit_once('/').map_or(stored, |(_, v)| v);
        let info = match self.shared.api.registry.lookup(group, stored, res) {
            Some(i) if !info.builtin => i,
            _ => info,
        };
        let mut new = (*cur).clone();
        if !f(&mut new) {
            return Ok(Some(new));
        }
        if group == "certificates.k8s.io" && resource == "certificatesigningrequests/approval" {
            let signer = new["spec"]["signerName"].as_str().unwrap_or("");
            auth::csr_approval_admission(&self.shared.api, &self.user, name, signer)?;
        }
        new["apiVersion"] = json!(info.api_version());
        let sub = (!sub.is_empty()).then_some(sub);
        Ok(Some(
            self.shared
                .api
                .update(&info, ns, name, new, sub, &self.ctx())?
                .body,
        ))
    }

    /// A JSON merge patch (controller-runtime's `client.MergeFrom`) of `name` or its subresource.
    pub fn merge_patch(
        &self,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
        patch: Value,
    ) -> ApiResult<Value> {
        self.authorize("patch", group, resource, ns, name)?;
        let (res, sub) = resource.split_once('/').unwrap_or((resource, ""));
        let info = self.info(group, res)?;
        let sub = (!sub.is_empty()).then_some(sub);
        Ok(self
            .shared
            .api
            .patch(&info, ns, name, PatchType::Merge, patch, sub, &self.ctx())?
            .body)
    }

    /// A delete with `propagationPolicy=Background`.
    pub fn delete_background(
        &self,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        self.authorize("delete", group, resource, ns, name)?;
        let info = self.info(group, resource)?;
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        self.shared
            .api
            .delete(&info, ns, name, &opts, &self.ctx())?;
        Ok(())
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            groups: self.user.groups.clone(),
            ..Ctx::system(&self.user.name)
        }
    }
}
