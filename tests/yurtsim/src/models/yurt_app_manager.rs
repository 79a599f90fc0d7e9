//! yurt-app-manager v0.4.0 (the legacy profile's `--enable-app-manager`): the custom-resource
//! gate read at package init, flags (exit 2), the webhook-controller's 5-second wait for its
//! Secret and both webhook configurations (admissionregistration.k8s.io/v1beta1, so Kubernetes
//! ≤ 1.21 only), then controller-runtime's cache sync of Pods and PersistentVolumeClaims (no
//! timeout) that gates the webhook server, and leader election on the Lease
//! `<--leader-election-namespace>/yurt-app-manager` that gates the controllers' informers.
//! Facts from `facts/yurt-app-manager-v0.4.0.yaml` (openyurtio/yurt-app-manager@8696f1c, the
//! v0.4.0 code: cmd/yurt-app-manager, pkg/yurtappmanager/webhook, pkg/yurtappmanager/util/gate;
//! kubernetes-sigs/controller-runtime@v0.7.0 pkg/manager/internal.go).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Caller, Env};
use crate::api::admission::{Review, Verdict, WebhookServer};
use crate::facts::Facts;
use crate::pki;
use crate::util;

const GROUP: &str = "apps.openyurt.io";
const SECRET: &str = "yurt-app-webhook-certs";
const SERVICE: &str = "yurt-app-webhook-service";
const MUTATING: &str = "yurt-app-mutating-webhook-configuration";
const VALIDATING: &str = "yurt-app-validating-webhook-configuration";
const ADMISSION: &str = "admissionregistration.k8s.io";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    // package init (before main): the custom-resource gate's discovery, with the in-cluster
    // identity; a kind that is not served now has no webhook handlers and no controller
    let gate: BTreeSet<&str> = [("NodePool", "nodepools"), ("UnitedDeployment", "uniteddeployments")]
        .into_iter()
        .filter(|(kind, plural)| {
            let on = env
                .shared
                .api
                .registry
                .lookup(GROUP, "v1alpha1", plural)
                .is_some();
            if !on {
                log.klog(
                    'I',
                    "custom_resource_gate.go:0",
                    &format!(
                        "custom resource gate not found groupVersionKind {GROUP}/v1alpha1, Kind={kind} in discovery: the server could not find the requested resource"
                    ),
                );
            }
            on
        })
        .map(|(kind, _)| kind)
        .collect();
    let parsed = match super::start_v0_command(env, facts, "yurtapp-manager") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let me = match env.pod_identity() {
        Ok(c) => c,
        Err(e) => {
            setup_error(env, "unable to get kubeconfig", &e);
            return 1;
        }
    };
    // no readiness probe in the Deployment: the container is Ready once it runs
    let _ = env.ready.send(true);
    let _ = env.serving.send(true);
    let cache_ns = parsed.get("namespace").unwrap_or("").to_string();
    // setup-controllers: only for the kinds the gate let through
    let mut controllers = Vec::new();
    for (kind, name) in [
        ("UnitedDeployment", "uniteddeployment-controller"),
        ("NodePool", "nodepool-controller"),
    ] {
        if gate.contains(kind) {
            controllers.push(name);
        } else {
            log.error(
                "controllers.go:0",
                &format!(
                    "CRD {GROUP}/v1alpha1, Kind={kind} is not installed, its controller will perform noops!"
                ),
            );
        }
    }
    // webhook.Initialize: the webhook-controller must sync once within 5 s
    let am = AppManager {
        env,
        me,
        ns: "kube-system".into(),
        gate,
    };
    if let Err(e) = am.initialize_webhooks().await {
        setup_error(env, "unable to initialize webhook", &e);
        return 1;
    }
    // mgr.Start: the webhook server is registered now and answers once the cache has synced
    let server = Arc::new(Handlers {
        listening: std::sync::atomic::AtomicBool::new(false),
        gate: am.gate.iter().map(|s| s.to_string()).collect(),
        pod: env.container.pod.clone(),
    });
    let _guard = super::WebhookServing::register(env, server.clone());
    let elect = parsed.get("enable-leader-election") != Some("false");
    let lease_ns = parsed
        .get("leader-election-namespace")
        .unwrap_or("kube-system")
        .to_string();
    let holder = format!("{}_{}", env.container.pod, util::new_uid());
    let mut synced = false;
    let mut leading = !elect;
    let mut renewed = Instant::now();
    let mut controllers_synced = false;
    let mut failures = 0u32;
    loop {
        if !synced {
            // the field indexes' informers: Pods and PersistentVolumeClaims
            match ["pods", "persistentvolumeclaims"]
                .iter()
                .map(|r| {
                    am.me
                        .list_watch("", "v1", r, &cache_ns, "")
                        .map_err(|e| (r, e))
                })
                .find_map(Result::err)
            {
                None => {
                    synced = true;
                    server
                        .listening
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                    log.info("server.go:0", "serving webhook server");
                }
                Some((r, e)) => am.reflector_error(&mut failures, "v1", r, &e.to_string()),
            }
        }
        if elect {
            match am.try_lease(&lease_ns, &holder) {
                Ok(true) => {
                    if !leading {
                        log.info(
                            "leaderelection.go:0",
                            &format!("successfully acquired lease {lease_ns}/yurt-app-manager"),
                        );
                    }
                    leading = true;
                    renewed = Instant::now();
                }
                Ok(false) => {}
                Err(e) => {
                    if leading && renewed.elapsed() > env.scaled(Duration::from_secs(10)) {
                        setup_error(env, "problem running manager", "leader election lost");
                        return 1;
                    }
                    if !leading {
                        log.error(
                            "leaderelection.go:0",
                            &format!(
                                "error retrieving resource lock {lease_ns}/yurt-app-manager: {e}"
                            ),
                        );
                    }
                }
            }
        }
        // the controllers start on the leader once the manager's cache has synced; each Kind
        // source blocks until its informer syncs
        if leading && synced && !controllers_synced {
            let mut ok = true;
            for c in &controllers {
                let watches: &[(&str, &str, &str)] = match *c {
                    "nodepool-controller" => {
                        &[(GROUP, "v1alpha1", "nodepools"), ("", "v1", "nodes")]
                    }
                    _ => &[
                        (GROUP, "v1alpha1", "uniteddeployments"),
                        ("apps", "v1", "statefulsets"),
                        ("apps", "v1", "deployments"),
                    ],
                };
                for (g, v, r) in watches {
                    let scope = if *r == "nodes" || *r == "nodepools" {
                        ""
                    } else {
                        cache_ns.as_str()
                    };
                    if let Err(e) = am.me.list_watch(g, v, r, scope, "") {
                        ok = false;
                        am.reflector_error(&mut failures, v, r, &e.to_string());
                    }
                }
            }
            if ok {
                controllers_synced = true;
                for c in &controllers {
                    log.info(
                        "controller.go:0",
                        &format!("Starting workers controller={c}"),
                    );
                }
            }
        }
        env.sleep(Duration::from_secs(2)).await;
    }
}

/// klogr (klog v1.0.0) error line of the `setup` logger.
fn setup_error(env: &Env, msg: &str, err: &str) {
    env.log.error(
        "core.go:0",
        &format!("setup \"msg\"={} \"error\"={}", json!(msg), json!(err)),
    );
}

struct AppManager<'a> {
    env: &'a Env,
    me: Caller,
    /// POD_NAMESPACE (the model does not read the container's env: its default)
    ns: String,
    gate: BTreeSet<&'static str>,
}

impl AppManager<'_> {
    fn reflector_error(&self, failures: &mut u32, version: &str, resource: &str, e: &str) {
        *failures += 1;
        if *failures <= 4 || failures.is_power_of_two() {
            let kind = match resource {
                "pods" => "Pod",
                "persistentvolumeclaims" => "PersistentVolumeClaim",
                "nodes" => "Node",
                "nodepools" => "NodePool",
                "uniteddeployments" => "UnitedDeployment",
                "statefulsets" => "StatefulSet",
                "deployments" => "Deployment",
                _ => "Object",
            };
            self.env.log.error(
                "reflector.go:0",
                &format!(
                    "Failed to watch *{version}.{kind}: failed to list *{version}.{kind}: {e}"
                ),
            );
        }
    }

    /// The webhook-controller's informers (Secrets in POD_NAMESPACE, both v1beta1 webhook
    /// configuration kinds) and one successful sync, within 5 seconds of Initialize.
    async fn initialize_webhooks(&self) -> Result<(), String> {
        let log = &self.env.log;
        let deadline = Instant::now() + self.env.scaled(Duration::from_secs(5));
        log.info("webhook_controller.go:0", "Starting webhook-controller");
        log.info(
            "shared_informer.go:0",
            "Waiting for caches to sync for webhook-controller",
        );
        let mut synced = false;
        let mut failures = 0u32;
        loop {
            if !synced {
                let lists = [
                    ("", "v1", "secrets", self.ns.as_str()),
                    (ADMISSION, "v1beta1", "mutatingwebhookconfigurations", ""),
                    (ADMISSION, "v1beta1", "validatingwebhookconfigurations", ""),
                ];
                let mut ok = true;
                for (g, v, r, ns) in lists {
                    if let Err(e) = self.me.list_watch(g, v, r, ns, "") {
                        ok = false;
                        failures += 1;
                        if failures <= 4 {
                            log.error(
                                "reflector.go:0",
                                &format!("Failed to watch {r}.{v}.{g}: failed to list: {e}"),
                            );
                        }
                    }
                }
                if ok {
                    synced = true;
                    log.info(
                        "shared_informer.go:0",
                        "Caches are synced for webhook-controller ",
                    );
                    log.info("webhook_controller.go:0", "Started webhook-controller");
                }
            }
            if synced && self.triggered() {
                match self.sync() {
                    Ok(()) => {
                        log.info(
                            "webhook_controller.go:0",
                            "Finished to sync webhook certs and configurations",
                        );
                        return Ok(());
                    }
                    Err(e) => log.error(
                        "webhook_controller.go:0",
                        &format!("sync \"\" failed with {e}"),
                    ),
                }
            }
            if Instant::now() >= deadline {
                return Err("failed to start webhook controller for waiting more than 5s".into());
            }
            self.env.sleep(Duration::from_millis(500)).await;
        }
    }

    /// Whether an Add event was ever queued: only the Secret or a configuration of the
    /// expected names enqueues the sync key.
    fn triggered(&self) -> bool {
        let api = &self.env.shared.api;
        api.get_opt("", "secrets", &self.ns, SECRET).is_some()
            || api
                .get_opt(ADMISSION, "mutatingwebhookconfigurations", "", MUTATING)
                .is_some()
            || api
                .get_opt(ADMISSION, "validatingwebhookconfigurations", "", VALIDATING)
                .is_some()
    }

    /// One sync: the certificate Secret (created, or filled when empty), then both
    /// configurations' service client configs and CA bundle, handlers the gate dropped removed.
    fn sync(&self) -> Result<(), String> {
        let log = &self.env.log;
        log.info(
            "webhook_controller.go:0",
            "Starting to sync webhook certs and configurations",
        );
        let pem = pki::key_pem(&pki::new_key());
        let b64 = |s: &str| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(s)
        };
        let keys = [
            "ca-key.pem",
            "ca-cert.pem",
            "key.pem",
            "tls.key",
            "cert.pem",
            "tls.crt",
        ];
        match self.me.get("", "secrets", &self.ns, SECRET) {
            Err(e) if e.code == 404 => {
                let data: serde_json::Map<String, Value> = keys
                    .iter()
                    .map(|k| (k.to_string(), json!(b64(&pem))))
                    .collect();
                let body = json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": SECRET, "namespace": self.ns}, "data": data});
                self.me
                    .create("", "secrets", &self.ns, body)
                    .map_err(|e| format!("failed to create secret: {e}"))?;
            }
            Err(e) => return Err(format!("failed to get secret: {e}")),
            Ok(s) => {
                let empty = keys
                    .iter()
                    .any(|k| s["data"][*k].as_str().is_none_or(str::is_empty));
                if empty {
                    self.me
                        .update("", "secrets", &self.ns, SECRET, &|o| {
                            for k in keys {
                                o["data"][k] = json!(b64(&pem));
                            }
                            true
                        })
                        .map_err(|e| format!("failed to update secret: {e}"))?;
                }
            }
        }
        log.info("webhook_controller.go:0", "Use Secret Cert Writer");
        let ca = self
            .env
            .shared
            .api
            .get_opt("", "secrets", &self.ns, SECRET)
            .and_then(|s| s["data"]["ca-cert.pem"].as_str().map(str::to_string))
            .unwrap_or_default();
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
            if self.me.get(ADMISSION, resource, "", name).is_err() {
                return Err(format!("not found {kind} {name}"));
            }
            let gate = self.gate.clone();
            let ns = self.ns.clone();
            let ca = ca.clone();
            self.me
                .update(ADMISSION, resource, "", name, &|o| {
                    let Some(whs) = o["webhooks"].as_array_mut() else {
                        return false;
                    };
                    // handlers exist only for the kinds the gate let through
                    whs.retain(|w| {
                        let path = w["clientConfig"]["service"]["path"].as_str().unwrap_or("");
                        (path.ends_with("-nodepool") && gate.contains("NodePool"))
                            || (path.ends_with("-uniteddeployment")
                                && gate.contains("UnitedDeployment"))
                    });
                    for w in whs.iter_mut() {
                        w["clientConfig"]["caBundle"] = json!(ca);
                        w["clientConfig"]["service"]["name"] = json!(SERVICE);
                        w["clientConfig"]["service"]["namespace"] = json!(ns);
                    }
                    true
                })
                .map_err(|e| format!("failed to update {kind} {name}: {e}"))?;
        }
        Ok(())
    }

    /// One acquire-or-renew of the Lease (controller-runtime's 15 s).
    fn try_lease(&self, ns: &str, holder: &str) -> crate::api::error::ApiResult<bool> {
        let fifteen = Duration::from_secs(15);
        self.me
            .try_acquire_or_renew(self.env, ns, "yurt-app-manager", holder, fifteen)
    }
}

/// The webhook server on :9876: connection refused until it listens (after the manager's cache
/// sync); then the NodePool mutating handler sets the pool's selector
/// (pkg/yurtappmanager/webhook/nodepool/mutating/nodepool_create_update_handler.go); the other
/// handlers allow (their checks are not modelled). Paths the gate dropped answer 404.
struct Handlers {
    listening: std::sync::atomic::AtomicBool,
    gate: BTreeSet<String>,
    pod: String,
}

impl WebhookServer for Handlers {
    fn review(&self, path: &str, review: &Review) -> Option<Verdict> {
        if !self.listening.load(std::sync::atomic::Ordering::SeqCst) {
            return Some(Verdict::CallFailed(format!(
                "failed to call webhook: Post \"https://{SERVICE}:443{path}\": dial tcp {}:9876: connect: connection refused",
                self.pod
            )));
        }
        let kind = if path.ends_with("-nodepool") {
            "NodePool"
        } else if path.ends_with("-uniteddeployment") {
            "UnitedDeployment"
        } else {
            return None;
        };
        if !self.gate.contains(kind) {
            return None;
        }
        if path == "/mutate-apps-openyurt-io-v1alpha1-nodepool"
            && let Some(obj) = review.new
        {
            let name = obj["metadata"]["name"].as_str().unwrap_or("");
            return Some(Verdict::Allowed(vec![(
                "/spec/selector".into(),
                json!({"matchLabels": {"apps.openyurt.io/nodepool": name}}),
            )]));
        }
        Some(Verdict::Allowed(vec![]))
    }
}
