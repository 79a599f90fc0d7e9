//! yurt-manager v1.6 and v1.7.0: the start-up contract of the real binary and the controllers yurtctl
//! depends on (CSR approval for YurtHub, YurtStaticSet → ConfigMap and status, pod binding). Facts from
//! `facts/yurt-manager-V.yaml` and `facts/yurt-manager-controllers-V.yaml` for the image's
//! version V (openyurtio/openyurt@V: cmd/yurt-manager, pkg/yurtmanager); what differs between
//! the tags (controllers, their lookups, CSR recognizers, webhook paths) is read from them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::version::Version;
use base64::Engine;
use serde_json::{Value, json};

mod admission_webhooks;
mod crd_conversion;
mod csr;
mod node_conversion;
mod pod_binding;
mod static_set;
mod webhooks;

pub use static_set::{static_pod_manifest, template_hash};

use super::{Caller, Env};
use crate::api::error::ApiResult;
use crate::facts::{self, Facts};
use crate::pki;
use crate::util;

const SETUP: &str = "setup";
const WEBHOOK_CERTS: &str = "yurt-manager-webhook-certs";
const WEBHOOK_SERVICE: &str = "yurt-manager-webhook-service";
const MUTATING: &str = "yurt-manager-mutating-webhook-configuration";
const VALIDATING: &str = "yurt-manager-validating-webhook-configuration";
/// The annotation the webhook controller keeps each configuration's original webhooks in
/// (pkg/yurtmanager/webhook/util/configuration/configuration.go).
const TEMPLATE_ANNOTATION: &str = "yurt-manager-template";
pub const STATIC_POD_HASH: &str = "openyurt.io/static-pod-hash";
const CONFIGMAP_PREFIX: &str = "yurt-static-set-";
const CSR_APPROVER: &str = "csr-approver-controller";
const YURT_STATIC_SET: &str = "yurt-static-set-controller";
const COORDINATOR_CERT: &str = "yurt-coordinator-cert-controller";

/// The exit code of the real process for the run described by `env`.
pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let flags = facts.flags();
    let parsed = match facts::parse_args(&flags, &env.container.args) {
        Ok(p) => p,
        Err(e) => return usage_error(env, &e),
    };
    if let Some(arg) = parsed.positional.first() {
        return usage_error(
            env,
            &format!("\"yurt-manager\" does not take any arguments, got [\"{arg}\"]"),
        );
    }
    log.line(&format!(
        "yurt-manager version: projectinfo.Info{{GitVersion:\"{}\", GitCommit:\"yurtsim\", NodePoolLabelKey:\"apps.openyurt.io/nodepool\"}}",
        facts.version
    ));
    if parsed.get("version") == Some("true") {
        return 0;
    }
    let startup = step(facts, "parse-controllers");
    let enabled = match validate(&parsed, facts, startup) {
        Ok(e) => e,
        Err(msg) => {
            log.line(&msg);
            return 1;
        }
    };
    let ns = parsed
        .get("working-namespace")
        .unwrap_or("kube-system")
        .to_string();
    let base = match env.pod_identity() {
        Ok(c) => c,
        Err(e) => {
            log.zap_error(SETUP, "unable to get kubeconfig", &e);
            return 1;
        }
    };
    let ym = YurtManager {
        env,
        facts,
        base,
        enabled,
        ns,
        node_servant_image: parsed
            .get("node-servant-image")
            .unwrap_or("openyurt/node-servant:latest")
            .to_string(),
    };
    ym.start(&parsed).await
}

/// cobra's output for a command line it cannot parse: the error, then the usage (exit 1).
fn usage_error(env: &Env, e: &str) -> i32 {
    env.log.line(&format!("Error: {e}"));
    env.log.line("Usage:");
    env.log.line("  yurt-manager [flags]");
    1
}

fn step<'a>(facts: &'a Facts, id: &str) -> &'a Value {
    facts.doc["startup"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["step"] == json!(id))
        .unwrap_or(&Value::Null)
}

/// Options validation, aggregated as utilerrors does; the enabled controllers when valid.
/// Order as YurtManagerOptions.Validate (cmd/yurt-manager/app/options/options.go at both
/// tags): the generic options (webhook port, then each --controllers entry), then the
/// per-controller options in their order — yurtnodeconversion (v1.7.0 only) before nodebucket.
fn validate(
    parsed: &facts::Parsed,
    facts: &Facts,
    controllers: &Value,
) -> Result<BTreeSet<String>, String> {
    let known: BTreeSet<String> = controllers["knownControllers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    let alias = |n: &str| -> String {
        controllers["aliases"][n]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| n.to_string())
    };
    let mut errors = Vec::new();
    if parsed.get("webhook-port") == Some("0") {
        errors.push("webhook server can not be switched off with 0".to_string());
    }
    let entries: Vec<String> = parsed
        .values
        .get("controllers")
        .into_iter()
        .flatten()
        .flat_map(|v| v.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for e in &entries {
        let bare = e.strip_prefix('-').unwrap_or(e);
        if bare != "*" && !known.contains(&alias(bare)) {
            errors.push(format!(
                "\"{bare}\" is not in the list of known controllers"
            ));
        }
    }
    // positive-count options, each only where the tag has the flag (facts: validate-options)
    for flag in [
        "concurrent-yurtnodeconversion-workers",
        "max-nodes-per-bucket",
    ] {
        if let Some(n) = parsed.get(flag)
            && facts.flags().contains_key(flag)
            && n.parse::<i64>().is_ok_and(|n| n <= 0)
        {
            errors.push(format!("{flag}({n}) is invalid, should greater than 0"));
        }
    }
    super::aggregate(errors)?;
    // k8s.io/controller-manager IsControllerEnabled: first explicit match wins, else '*'.
    Ok(known
        .into_iter()
        .filter(|c| {
            for e in &entries {
                if let Some(off) = e.strip_prefix('-') {
                    if alias(off) == *c {
                        return false;
                    }
                } else if alias(e) == *c {
                    return true;
                }
            }
            entries.iter().any(|e| e == "*")
        })
        .collect())
}

struct YurtManager<'a> {
    env: &'a Env,
    facts: &'static Facts,
    base: Caller,
    enabled: BTreeSet<String>,
    ns: String,
    /// --node-servant-image (the yurtstaticset option the conversion controller reuses)
    node_servant_image: String,
}

impl YurtManager<'_> {
    async fn start(&self, parsed: &facts::Parsed) -> i32 {
        let log = &self.env.log;
        log.info("manager.go:0", "setup controllers");
        if let Err(msg) = self.setup_controllers() {
            log.zap_error(SETUP, "unable to setup controllers", &msg);
            return 1;
        }
        log.info("server.go:0", "setup webhook");
        let paths = self.admission_paths(parsed);
        if !paths.is_empty() {
            log.info("server.go:0", "initialize webhook");
            let wait = step(self.facts, "webhook-configurations-wait");
            let timeout = go_secs(wait["timeout"].as_str().unwrap_or("20s"));
            if let Err(e) = self.prepare_webhooks(&paths, timeout).await {
                log.zap_error(SETUP, "unable to initialize webhook", &e);
                return 1;
            }
        }
        log.info("manager.go:0", "starting manager");
        // the webhook server runs on every replica; the API server calls it while this pod
        // is a ready endpoint of the webhook Service: v1.7.0's node and NodePool handlers
        // (admission_webhooks.rs) and both tags' /convert (crd_conversion.rs), which the
        // webhook of a convertible type (NodePool, YurtAppSet, Gateway) registers
        let v17 = self.facts.release >= Version::new(1, 7, 0);
        let converts = [
            "nodepool-controller",
            "yurt-app-set-controller",
            "gateway-pickup-controller",
        ]
        .iter()
        .any(|c| self.enabled.contains(*c));
        let _serving = (!paths.is_empty()).then(|| {
            super::WebhookServing::register(
                self.env,
                std::sync::Arc::new(crd_conversion::Server {
                    admission: v17.then(|| admission_webhooks::Handlers {
                        paths: paths.clone(),
                        namespace: self.ns.clone(),
                        base: self.base.clone(),
                    }),
                    paths: paths.clone(),
                    converts,
                    release: self.facts.release,
                }),
            )
        });
        let _ = self.env.serving.send(true);
        let _ = self.env.ready.send(true);
        let lease = parsed
            .get("leader-elect-resource-name")
            .unwrap_or("yurt-manager")
            .to_string();
        let elect = parsed.get("leader-elect") != Some("false");
        match self.lead_and_run(&lease, elect).await {
            Ok(()) => 0,
            Err(e) => {
                log.zap_error(SETUP, "problem running manager", &e);
                1
            }
        }
    }

    /// A `behaviour` entry of the tag's controllers facts (`yurt-manager-controllers-V.yaml`).
    fn behaviour(&self, name: &str) -> &'static Value {
        facts::all()
            .iter()
            .filter(|f| f.component == self.facts.component && f.version == self.facts.version)
            .flat_map(|f| f.doc["behaviour"].as_array().into_iter().flatten())
            .find(|b| b["name"] == json!(name))
            .unwrap_or(&Value::Null)
    }

    fn controller(&self, name: &str) -> &Value {
        step(self.facts, "setup-controllers")["controllers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == json!(name))
            .unwrap_or(&Value::Null)
    }

    /// Each enabled controller's Add: the REST-mapper lookups (a missing version is fatal
    /// unless tolerated) and the coordinator-cert controller's Secrets.
    fn setup_controllers(&self) -> Result<(), String> {
        for name in &self.enabled {
            for l in self.controller(name)["lookups"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let (g, v, r) = (
                    l["group"].as_str().unwrap_or(""),
                    l["version"].as_str().unwrap_or(""),
                    l["resource"].as_str().unwrap_or(""),
                );
                if self.base.served(g, v, r) {
                    continue;
                }
                if l["onFailure"] == json!("tolerated") {
                    self.env.log.error(
                        "controller.go:0",
                        &format!("{g}/{v}, Resource={r} is not served, using the fallback"),
                    );
                    continue;
                }
                // load-balancer-set's own lookup wraps its error instead (facts: its log)
                let own = l["log"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|x| x.as_str().is_some_and(|x| x.contains("isn't exist")));
                if own {
                    return Err(format!("resource {g}/{v}, Resource={r} isn't exist"));
                }
                self.env.log.info(
                    "controller.go:0",
                    &format!("resource {g}/{v}, Resource={r} doesn't exist"),
                );
                return Err(format!("no matches for {g}/{v}, Resource={r}"));
            }
            // checks an Add makes before anything else (v1.7.0 yurt-node-conversion-controller:
            // an explicitly empty --node-servant-image)
            for p in self.controller(name)["preconditions"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let cond = p["condition"].as_str().unwrap_or("");
                if cond.contains("--node-servant-image is the empty string")
                    && self.node_servant_image.is_empty()
                {
                    return Err(p["error"].as_str().unwrap_or(cond).to_string());
                }
            }
            if name == pod_binding::POD_BINDING {
                // Add's own line (controllerKind is apps/v1 Node upstream, sic)
                self.env.log.info(
                    "pod_binding_controller.go:0",
                    "podbinding-controller add controller apps/v1, Kind=Node",
                );
            }
            if name == COORDINATOR_CERT {
                self.init_coordinator_certs()
                    .map_err(|e| format!("init yurtcoordinator failed: {e}"))?;
            }
            self.env
                .log
                .info("controller.go:0", &format!("controller {name} is added"));
        }
        Ok(())
    }

    /// The per-controller identity (cmd/yurt-manager/app/client/token.go): the base identity
    /// gets (or creates) ServiceAccount kube-system/yurt-manager-<controller> and asks for a
    /// token for it. The namespace is always kube-system at v1.6.1 (see the facts).
    fn controller_identity(&self, controller: &str) -> ApiResult<Caller> {
        let sa = format!("yurt-manager-{controller}");
        let ns = "kube-system";
        if let Err(e) = self.base.get("", "serviceaccounts", ns, &sa) {
            if e.code != 404 {
                return Err(e);
            }
            let body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}});
            match self.base.create("", "serviceaccounts", ns, body) {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        self.base
            .authorize("create", "", "serviceaccounts/token", ns, &sa)?;
        let shared = &self.env.shared;
        let token = shared
            .api
            .tokens
            .issue(&shared.api, ns, &sa, None, Duration::from_secs(3600))
            .ok_or_else(|| {
                crate::api::error::ApiError::not_found(&shared.api.info("", "serviceaccounts"), &sa)
            })?;
        self.env
            .caller_with_token(&token)
            .map_err(crate::api::error::ApiError::internal)
    }

    /// The yurt-coordinator CA and certificate Secrets in the working namespace, written as
    /// the controller's own identity at set-up.
    fn init_coordinator_certs(&self) -> Result<(), String> {
        let me = self
            .controller_identity(COORDINATOR_CERT)
            .map_err(|e| e.message)?;
        for (name, keys) in [
            ("yurt-coordinator-ca-certs", ["ca.key", "ca.crt"]),
            ("yurt-coordinator-static-certs", ["sa.key", "sa.pub"]),
            (
                "yurt-coordinator-yurthub-certs",
                ["yurt-coordinator-yurthub-client.key", "ca.crt"],
            ),
        ] {
            match me.get("", "secrets", &self.ns, name) {
                Ok(_) => continue,
                Err(e) if e.code != 404 => {
                    return Err(format!(
                        "could not write CA assets into secret when initializing yurtcoordinator: {e}"
                    ));
                }
                Err(_) => {}
            }
            let key = pki::key_pem(&pki::new_key());
            let data: BTreeMap<&str, String> = keys.iter().map(|k| (*k, base64_of(&key))).collect();
            let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": self.ns}, "data": data});
            me.create("", "secrets", &self.ns, body).map_err(|e| {
                format!(
                    "could not write CA assets into secret when initializing yurtcoordinator: {e}"
                )
            })?;
        }
        Ok(())
    }

    /// Leader election on the Lease (15 s duration, 10 s renew deadline, 2 s retry: the
    /// controller-runtime defaults yurt-manager keeps), then the controllers while leading.
    async fn lead_and_run(&self, lease: &str, elect: bool) -> Result<(), String> {
        let holder = format!("{}_{}", self.env.container.pod, util::new_uid());
        let retry = Duration::from_secs(2);
        let renew_deadline = self.env.scaled(Duration::from_secs(10));
        if elect {
            loop {
                match self.try_lease(lease, &holder) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) => self.env.log.error(
                        "leaderelection.go:0",
                        &format!("error retrieving resource lock {}/{lease}: {e}", self.ns),
                    ),
                }
                self.env.sleep(retry).await;
            }
            self.env.log.info(
                "leaderelection.go:0",
                &format!("successfully acquired lease {}/{lease}", self.ns),
            );
        }
        self.wait_for_caches().await?;
        let approver = self
            .enabled
            .contains(CSR_APPROVER)
            .then(|| self.controller_identity(CSR_APPROVER))
            .transpose()
            .map_err(|e| e.message)?;
        let yss = self
            .enabled
            .contains(YURT_STATIC_SET)
            .then(|| self.controller_identity(YURT_STATIC_SET))
            .transpose()
            .map_err(|e| e.message)?;
        let conversion = self
            .enabled
            .contains(node_conversion::NODE_CONVERSION)
            .then(|| self.controller_identity(node_conversion::NODE_CONVERSION))
            .transpose()
            .map_err(|e| e.message)?;
        let binding = self
            .enabled
            .contains(pod_binding::POD_BINDING)
            .then(|| self.controller_identity(pod_binding::POD_BINDING))
            .transpose()
            .map_err(|e| e.message)?;
        let mut conversion_state = node_conversion::Conversion::default();
        let mut binding_state = pod_binding::PodBinding::default();
        let mut static_pods = static_set::StaticPodWatch::default();
        let mut renewed = Instant::now();
        let mut panics: BTreeMap<String, u32> = BTreeMap::new();
        loop {
            if let Some(me) = &approver {
                self.approve_csrs(me);
            }
            if let Some(me) = &conversion {
                self.convert_nodes(me, &mut conversion_state);
            }
            if let Some(me) = &binding {
                self.bind_pods(me, &mut binding_state);
            }
            if let Some(me) = &yss {
                self.reconcile_static_pods(me, &mut static_pods);
                for (name, error) in self.reconcile_static_sets(me) {
                    let n = panics.entry(name.clone()).or_default();
                    *n += 1;
                    if *n == 1 || n.is_power_of_two() {
                        self.env.log.line(&error);
                    }
                }
            }
            self.env.sleep(retry).await;
            if elect {
                match self.try_lease(lease, &holder) {
                    Ok(true) => renewed = Instant::now(),
                    _ if renewed.elapsed() > renew_deadline => {
                        return Err("leader election lost".into());
                    }
                    _ => {}
                }
            }
        }
    }

    /// One acquire-or-renew of the Lease as the base identity (controller-runtime's 15 s);
    /// Ok(true) when we hold it.
    fn try_lease(&self, name: &str, holder: &str) -> ApiResult<bool> {
        let fifteen = Duration::from_secs(15);
        self.base
            .try_acquire_or_renew(self.env, &self.ns, name, holder, fifteen)
    }

    /// controller-runtime starts one informer per watched kind, as the base identity; a kind
    /// it cannot list and watch (or that is not served) never syncs, and the controller gives
    /// up after CacheSyncTimeout (2 min), taking the manager down.
    async fn wait_for_caches(&self) -> Result<(), String> {
        let deadline = Instant::now() + self.env.scaled(Duration::from_secs(120));
        loop {
            let mut missing = None;
            'all: for name in &self.enabled {
                for w in self.controller(name)["watches"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let w = w.as_str().unwrap_or("");
                    let Some((api_version, kind)) = w.split_once(' ') else {
                        continue;
                    };
                    // "(or v1beta1)" style notes name a fallback, already settled at set-up
                    let kind = kind.split_whitespace().next().unwrap_or(kind);
                    let ok = self
                        .env
                        .shared
                        .api
                        .registry
                        .by_kind(api_version, kind)
                        .is_some_and(|info| {
                            let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
                            self.base.list_watch(g, v, &info.resource, "", "").is_ok()
                        });
                    if !ok {
                        // the Go type's package is named for its version: *v1.Job, *v1beta2.NodePool
                        let pkg = api_version.rsplit('/').next().unwrap_or(api_version);
                        missing = Some((name.clone(), format!("{pkg}.{kind}")));
                        break 'all;
                    }
                }
            }
            let Some((controller, kind)) = missing else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "failed to wait for {controller} caches to sync: timed out waiting for cache to be synced for Kind *{kind}"
                ));
            }
            self.env.sleep(Duration::from_secs(10)).await;
        }
    }
}
fn base64_of(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// "20s", "2m" → Duration (the facts' timeouts).
fn go_secs(s: &str) -> Duration {
    let (n, unit) = s.split_at(s.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = n.parse().unwrap_or(0);
    Duration::from_secs(match unit {
        "m" => n * 60,
        "h" => n * 3600,
        _ => n,
    })
}
