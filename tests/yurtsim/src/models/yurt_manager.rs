//! yurt-manager v1.6: the start-up contract of the real binary and the controllers yurtctl
//! depends on (CSR approval for YurtHub, YurtStaticSet → ConfigMap and status). Facts from
//! `facts/yurt-manager-v1.6.1.yaml` and `facts/yurt-manager-controllers-v1.6.1.yaml`
//! (openyurtio/openyurt@v1.6.1: cmd/yurt-manager, pkg/yurtmanager).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::{Caller, Env, pki};
use crate::error::ApiResult;
use crate::facts::{self, Facts};
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
    let enabled = match validate(&parsed, startup) {
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
fn validate(parsed: &facts::Parsed, controllers: &Value) -> Result<BTreeSet<String>, String> {
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
    if let Some(n) = parsed.get("max-nodes-per-bucket")
        && n.parse::<i64>().is_ok_and(|n| n <= 0)
    {
        errors.push(format!(
            "max-nodes-per-bucket({n}) is invalid, should greater than 0"
        ));
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
    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0)),
        _ => return Err(format!("[{}]", errors.join(", "))),
    }
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
                self.env.log.info(
                    "controller.go:0",
                    &format!("resource {g}/{v}, Resource={r} doesn't exist"),
                );
                return Err(format!("no matches for {g}/{v}, Resource={r}"));
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
            .tokens
            .issue(shared, ns, &sa, None, Duration::from_secs(3600))
            .ok_or_else(|| {
                crate::error::ApiError::not_found(&shared.api.info("", "serviceaccounts"), &sa)
            })?;
        self.env
            .caller_with_token(&token)
            .map_err(crate::error::ApiError::internal)
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

    /// The admission paths this process registers: the independent webhooks not disabled, and
    /// those of the enabled controllers.
    fn admission_paths(&self, parsed: &facts::Parsed) -> BTreeSet<String> {
        let disabled: BTreeSet<&str> = parsed
            .values
            .get("disable-independent-webhooks")
            .into_iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .collect();
        self.facts.doc["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["paths"].as_array().into_iter().flatten())
            .filter(|p| p["kind"] != json!("conversion"))
            .filter(|p| {
                match (
                    p["gatedBy"]["independentWebhook"].as_str(),
                    p["gatedBy"]["controller"].as_str(),
                ) {
                    (Some(w), _) => !disabled.contains(w) && !disabled.contains("*"),
                    (_, Some(c)) => self.enabled.contains(c),
                    _ => false,
                }
            })
            .filter_map(|p| p["path"].as_str().map(str::to_string))
            .collect()
    }

    /// The webhook controller's first successful sync, within `timeout`: the certificate
    /// Secret exists (filled when empty), both configurations exist and are rewritten with the
    /// CA and only the paths this process serves.
    async fn prepare_webhooks(
        &self,
        paths: &BTreeSet<String>,
        timeout: Duration,
    ) -> Result<(), String> {
        let deadline = Instant::now() + self.env.scaled(timeout);
        loop {
            match self.sync_webhooks(paths) {
                Ok(()) => return Ok(()),
                Err(e) => self.env.log.error(
                    "webhook_controller.go:0",
                    &format!("sync \"\" failed with {e}"),
                ),
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "could not prepare certificate for webhook within {}",
                    util::go_duration(timeout)
                ));
            }
            self.env.sleep(Duration::from_secs(1)).await;
        }
    }

    fn sync_webhooks(&self, paths: &BTreeSet<String>) -> Result<(), String> {
        // The webhook controller's informers: without list/watch they never deliver an event.
        for r in [
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ] {
            self.base
                .list_watch("admissionregistration.k8s.io", "v1", r, "", "")
                .map_err(|e| format!("could not ensure configuration: {e}"))?;
        }
        let secret = self
            .base
            .get("", "secrets", &self.ns, WEBHOOK_CERTS)
            .map_err(|e| format!("could not ensure certs: {e}"))?;
        let ca = match secret["data"]["ca-cert.pem"]
            .as_str()
            .filter(|s| !s.is_empty())
        {
            Some(ca) => ca.to_string(),
            None => {
                let key = base64_of(&pki::key_pem(&pki::new_key()));
                let fill = |o: &mut Value| {
                    for k in [
                        "ca-key.pem",
                        "ca-cert.pem",
                        "key.pem",
                        "tls.key",
                        "cert.pem",
                        "tls.crt",
                    ] {
                        o["data"][k] = json!(key);
                    }
                    true
                };
                self.base
                    .update("", "secrets", &self.ns, WEBHOOK_CERTS, &fill)
                    .map_err(|e| format!("could not ensure certs: {e}"))?;
                key
            }
        };
        for (resource, name, kind) in [
            (
                "mutatingwebhookconfigurations",
                MUTATING,
                "MutatingWebhookConfiguration",
            ),
            (
                "validatingwebhookconfigurations",
                VALIDATING,
                "ValidatingWebhookConfiguration",
            ),
        ] {
            let not_found = || format!("could not ensure configuration: not found {kind} {name}");
            self.base
                .get("admissionregistration.k8s.io", resource, "", name)
                .map_err(|_| not_found())?;
            let ns = self.ns.clone();
            let ca = ca.clone();
            let rewrite = move |o: &mut Value| {
                let template = match o["metadata"]["annotations"][TEMPLATE_ANNOTATION].as_str() {
                    Some(t) => serde_json::from_str(t).unwrap_or_default(),
                    None => {
                        let t = o["webhooks"].clone();
                        o["metadata"]["annotations"][TEMPLATE_ANNOTATION] = json!(t.to_string());
                        t
                    }
                };
                let webhooks: Vec<Value> = template
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|w| {
                        w["clientConfig"]["service"]["path"]
                            .as_str()
                            .is_some_and(|p| paths.contains(p))
                    })
                    .map(|w| {
                        let mut w = w.clone();
                        w["clientConfig"]["caBundle"] = json!(ca);
                        w["clientConfig"]["service"]["namespace"] = json!(ns);
                        w["clientConfig"]["service"]["name"] = json!(WEBHOOK_SERVICE);
                        w
                    })
                    .collect();
                o["webhooks"] = json!(webhooks);
                true
            };
            self.base
                .update("admissionregistration.k8s.io", resource, "", name, &rewrite)
                .map_err(|e| format!("could not ensure configuration: {e}"))?
                .ok_or_else(not_found)?;
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
        let mut renewed = Instant::now();
        let mut panics: BTreeMap<String, u32> = BTreeMap::new();
        loop {
            if let Some(me) = &approver {
                self.approve_csrs(me);
            }
            if let Some(me) = &yss {
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

    /// One acquire-or-renew of the Lease as the base identity; Ok(true) when we hold it.
    fn try_lease(&self, name: &str, holder: &str) -> ApiResult<bool> {
        let now = util::now_micro();
        let ns = &self.ns;
        match self.base.get("coordination.k8s.io", "leases", ns, name) {
            Err(e) if e.code == 404 => {
                let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now, "leaseTransitions": 0}});
                self.base
                    .create("coordination.k8s.io", "leases", ns, body)?;
                Ok(true)
            }
            Err(e) => Err(e),
            Ok(cur) => {
                let theirs = cur["spec"]["holderIdentity"].as_str().unwrap_or("");
                let expired = cur["spec"]["renewTime"]
                    .as_str()
                    .and_then(util::parse_rfc3339)
                    .is_none_or(|t| {
                        t.elapsed().unwrap_or_default()
                            > self.env.scaled(Duration::from_secs(
                                cur["spec"]["leaseDurationSeconds"].as_u64().unwrap_or(15),
                            ))
                    });
                if theirs != holder && !theirs.is_empty() && !expired {
                    return Ok(false);
                }
                let holder = holder.to_string();
                self.base
                    .update("coordination.k8s.io", "leases", ns, name, &|o| {
                        o["spec"]["holderIdentity"] = json!(holder);
                        o["spec"]["renewTime"] = json!(now);
                        true
                    })?;
                Ok(true)
            }
        }
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
                        missing = Some((name.clone(), kind.to_string()));
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

    /// The csrapprover: approves the requests its recognizers accept (facts: behaviour
    /// csrapprover), as its own identity through the approval subresource.
    fn approve_csrs(&self, me: &Caller) {
        let Ok(csrs) = self.base.list_watch(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "",
            "",
        ) else {
            return;
        };
        for csr in csrs {
            let decided = csr["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == json!("Approved") || c["type"] == json!("Denied"));
            if decided {
                continue;
            }
            let Some(message) = recognize(&csr) else {
                continue;
            };
            let name = csr["metadata"]["name"].as_str().unwrap_or("").to_string();
            let approve = |o: &mut Value| {
                let cond = json!({"type": "Approved", "status": "True", "reason": "AutoApproved",
                    "message": message, "lastUpdateTime": util::now(), "lastTransitionTime": util::now()});
                match o["status"]["conditions"].as_array_mut() {
                    Some(c) => c.push(cond),
                    None => o["status"]["conditions"] = json!([cond]),
                }
                true
            };
            match me.update(
                "certificates.k8s.io",
                "certificatesigningrequests/approval",
                "",
                &name,
                &approve,
            ) {
                Ok(_) => self.env.log.info(
                    "csr_approver_controller.go:0",
                    &format!("successfully approve yurt-csr({name})"),
                ),
                Err(e) => self.env.log.error(
                    "csr_approver_controller.go:0",
                    &format!("could not approve yurt-csr({name}), {e}"),
                ),
            }
        }
    }

    /// One reconcile of every YurtStaticSet; returns the ones whose reconcile panicked, with
    /// the log line controller-runtime writes.
    fn reconcile_static_sets(&self, me: &Caller) -> Vec<(String, String)> {
        let mut failed = Vec::new();
        let Ok(sets) =
            self.base
                .list_watch("apps.openyurt.io", "v1alpha1", "yurtstaticsets", "", "")
        else {
            return failed;
        };
        for yss in sets {
            let ns = yss["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let name = yss["metadata"]["name"].as_str().unwrap_or("").to_string();
            if let Err(panic) = self.sync_config_map(me, &yss, &ns, &name) {
                failed.push((
                    format!("{ns}/{name}"),
                    format!(
                        "{}\tERROR\t{SETUP}\tReconciler error\t{{\"controller\": \"{YURT_STATIC_SET}\", \"namespace\": \"{ns}\", \"name\": \"{name}\", \"error\": \"panic: {panic} [recovered]\"}}",
                        util::now()
                    ),
                ));
                continue;
            }
            self.update_status(me, &yss, &ns, &name);
        }
        failed
    }

    /// ConfigMap `yurt-static-set-<name>` follows the template: created when missing, rewritten
    /// when its hash annotation differs. A ConfigMap without annotations makes the real
    /// controller panic ("assignment to entry in nil map"), every time.
    fn sync_config_map(
        &self,
        me: &Caller,
        yss: &Value,
        ns: &str,
        name: &str,
    ) -> Result<(), String> {
        let hash = template_hash(&yss["spec"]["template"]);
        let key = yss["spec"]["staticPodManifest"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let manifest = static_pod_manifest(&yss["spec"]["template"], &hash);
        let cm_name = format!("{CONFIGMAP_PREFIX}{name}");
        match self.base.cached_get("", "v1", "configmaps", ns, &cm_name) {
            Err(e) if e.code == 404 => {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": cm_name, "namespace": ns, "annotations": {STATIC_POD_HASH: hash}},
                    "data": {key.clone(): manifest}});
                if let Err(e) = me.create("", "configmaps", ns, body) {
                    self.env
                        .log
                        .error("yurt_static_set_controller.go:0", &e.message);
                }
            }
            Err(e) => self
                .env
                .log
                .error("yurt_static_set_controller.go:0", &e.message),
            Ok(cm) => {
                if cm["metadata"]["annotations"][STATIC_POD_HASH] == json!(hash) {
                    return Ok(());
                }
                if !cm["metadata"]["annotations"].is_object() {
                    return Err("assignment to entry in nil map".into());
                }
                let set = |o: &mut Value| {
                    o["metadata"]["annotations"][STATIC_POD_HASH] = json!(hash);
                    o["data"][&key] = json!(manifest);
                    true
                };
                if let Err(e) = me.update("", "configmaps", ns, &cm_name, &set) {
                    self.env
                        .log
                        .error("yurt_static_set_controller.go:0", &e.message);
                }
            }
        }
        Ok(())
    }

    /// TOTAL / READY / UPGRADED, counted from the static pods `<name>-<node>` in the namespace
    /// (facts: yurtstaticset-nodes-and-status).
    fn update_status(&self, me: &Caller, yss: &Value, ns: &str, name: &str) {
        let Ok(pods) = self.base.list_watch("", "v1", "pods", ns, "") else {
            return;
        };
        let hash = template_hash(&yss["spec"]["template"]);
        let (mut total, mut ready, mut upgraded) = (0, 0, 0);
        for p in pods {
            let node = p["spec"]["nodeName"].as_str().unwrap_or("");
            let source = p["metadata"]["annotations"]["kubernetes.io/config.source"].as_str();
            if node.is_empty()
                || p["metadata"]["deletionTimestamp"].is_string()
                || p["metadata"]["name"] != json!(format!("{name}-{node}"))
                || source.is_none_or(|s| s == "api")
            {
                continue;
            }
            total += 1;
            let is_ready = p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"));
            ready += i32::from(is_ready);
            let needs_upgrade = match p["metadata"]["annotations"][STATIC_POD_HASH].as_str() {
                Some(h) => h != hash,
                None => !template_matches(&yss["spec"]["template"], &p),
            };
            upgraded += i32::from(!needs_upgrade);
        }
        let status =
            json!({"totalNumber": total, "readyNumber": ready, "upgradedNumber": upgraded});
        if yss["status"] == status {
            return;
        }
        let write = |o: &mut Value| {
            o["status"] = status.clone();
            true
        };
        if let Err(e) = me.update(
            "apps.openyurt.io",
            "yurtstaticsets/status",
            ns,
            name,
            &write,
        ) {
            self.env
                .log
                .error("yurt_static_set_controller.go:0", &e.message);
        }
    }
}

/// The template hash: opaque, 1–10 characters of [4-9bcdf] like rand.SafeEncodeString of the
/// decimal FNV-1a sum upstream computes over a go-spew dump (which a non-Go model cannot
/// reproduce); any change of the template changes it.
pub fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    util::fnv32a(template.to_string().as_bytes())
        .to_string()
        .bytes()
        .map(|c| ALPHABET[c as usize % ALPHABET.len()] as char)
        .collect()
}

/// The manifest the controller writes: a Pod from the template with the hash annotation.
pub fn static_pod_manifest(template: &Value, hash: &str) -> String {
    let mut metadata = template["metadata"].clone();
    metadata["annotations"][STATIC_POD_HASH] = json!(hash);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"], "status": {}});
    serde_saphyr::to_string(&pod).unwrap_or_default()
}

/// upgradeinfo's match: every top-level key of the template's spec, and of its metadata but
/// name and creationTimestamp, is in the pod with the same value.
fn template_matches(template: &Value, pod: &Value) -> bool {
    let same = |part: &str, skip: &[&str]| {
        template[part]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| skip.contains(&k.as_str()) || pod[part].get(k) == Some(v))
    };
    same("spec", &[]) && same("metadata", &["name", "creationTimestamp"])
}

/// The recognizer that accepts `csr`, by its condition message (csr_approver_controller.go:
/// recognizers, in order).
fn recognize(csr: &Value) -> Option<&'static str> {
    // spec.request is the base64 of the PEM
    let pem = csr["spec"]["request"]
        .as_str()
        .and_then(|r| base64::engine::general_purpose::STANDARD.decode(r).ok())
        .and_then(|b| String::from_utf8(b).ok())?;
    let (subject, _) = pki::parse_csr(&pem)?;
    let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
    let usages: BTreeSet<&str> = csr["spec"]["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let usages_are =
        |last: &str| usages == BTreeSet::from(["digital signature", "key encipherment", last]);
    let orgs: Vec<&str> = subject.organizations.iter().map(String::as_str).collect();
    let node_cn = subject.common_name.starts_with("system:node:");
    let client = signer == "kubernetes.io/kube-apiserver-client" && usages_are("client auth");
    if client
        && node_cn
        && orgs.len() >= 2
        && orgs.iter().all(|o| {
            *o == "openyurt:yurthub" || *o == "system:nodes" || o.starts_with("openyurt:tenant:")
        })
    {
        return Some("Auto approving yurthub node client certificate");
    }
    if signer == "kubernetes.io/kubelet-serving"
        && usages_are("server auth")
        && node_cn
        && orgs == ["system:nodes"]
        && !(subject.dns_names.is_empty() && subject.ips.is_empty())
    {
        return Some("Auto approving openyurt tls server certificate");
    }
    if client && orgs == ["openyurt:yurttunnel"] {
        match subject.common_name.as_str() {
            "tunnel-proxy-client" => {
                return Some("Auto approving tunnel-server proxy client certificate");
            }
            "tunnel-agent-client" => return Some("Auto approving tunnel-agent client certificate"),
            _ => {}
        }
    }
    if client && orgs == ["openyurt:yurt-coordinator"] {
        return Some("Auto approving yurtcoordinator-apiserver client certificate");
    }
    None
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
