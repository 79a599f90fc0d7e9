//! yurt-controller-manager v0.6.1 (the legacy profile's control-plane component): flags and
//! validation of the real binary, its leader election on the hard-coded Lease
//! kube-system/yurt-controller-manager, the API server health wait, the CSR approver's
//! start-up LIST, the informers both controllers wait on (forever, when RBAC denies one), the
//! approval of every pending request whose subject names `openyurt:yurthub` or
//! `openyurt:yurttunnel`, and its nodelifecycle controller (silent nodes go `Unknown`).
//! Facts from `facts/yurt-controller-manager-v0.6.1.yaml` (openyurtio/openyurt@v0.6.1:
//! cmd/yurt-controller-manager, pkg/controller).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::{Caller, Env};
use crate::api::error::ApiResult;
use crate::facts::{self, Facts};
use crate::pki;
use crate::util;

const NODE_LIFECYCLE: &str = "nodelifecycle";
const CSR_APPROVER: &str = "yurtcsrapprover";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let log = &env.log;
    let parsed = match facts::parse_args(&facts.flags(), &env.container.args) {
        Ok(p) => p,
        Err(e) => {
            // cobra v1.1.3: "Error: <err>" and the usage on stderr; main exits 1
            let (code, lines) = facts.unknown_flag();
            log.line(&format!("Error: {e}"));
            for l in lines.iter().skip(1) {
                log.line(l);
            }
            return code;
        }
    };
    if parsed.get("help") == Some("true") {
        log.line("Usage:");
        log.line("  yurt-controller-manager [flags]");
        return 0;
    }
    // cobra's Args validator: empty strings are tolerated (facts: validation)
    if let Some(arg) = parsed.positional.iter().find(|a| !a.is_empty()) {
        log.line(&format!(
            "Error: \"yurt-controller-manager\" does not take any arguments, got [\"{arg}\"]"
        ));
        return 1;
    }
    let info = format!(
        "projectinfo.Info{{GitVersion:\"{}\", GitCommit:\"yurtsim\"}}",
        facts.version
    );
    if parsed.get("version") == Some("true") {
        log.line(&format!("yurtcontroller-manager: {info}"));
        return 0;
    }
    log.line(&format!("yurtcontroller-manager version: {info}"));
    let enabled = match enabled_controllers(facts, &parsed) {
        Ok(e) => e,
        Err(msg) => {
            // fmt.Fprintf(os.Stderr, "%v\n", err); os.Exit(1)
            log.line(&msg);
            return 1;
        }
    };
    for c in known(facts) {
        if !enabled.contains(&c) {
            log.klog(
                'W',
                "controllermanager.go:0",
                &format!("\"{c}\" is disabled"),
            );
        }
    }
    let me = match env.pod_identity() {
        Ok(c) => c,
        Err(e) => {
            log.line(&format!("unable to load in-cluster configuration: {e}"));
            return 1;
        }
    };
    // the HTTP server (healthz, metrics, pprof) is up before leader election, on every
    // replica; the Deployment has no readiness probe, so the container is ready once running
    let _ = env.serving.send(true);
    let _ = env.ready.send(true);

    let step = |id: &str| {
        facts.doc["startup"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["step"] == json!(id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let lock = step("leader-election")["lock"].clone();
    let lock_ns = lock["namespace"]
        .as_str()
        .unwrap_or("kube-system")
        .to_string();
    let lock_name = lock["name"]
        .as_str()
        .unwrap_or("yurt-controller-manager")
        .to_string();
    let elect = parsed.get("leader-elect") != Some("false");
    let lock_type = parsed.get("leader-elect-resource-lock").unwrap_or("leases");
    let ycm = Ycm {
        env,
        me,
        lock_ns,
        lock_name,
        holder: format!("{}_{}", env.container.node, util::new_uid()),
        lease_duration: go_duration(parsed.get("leader-elect-lease-duration").unwrap_or("15s")),
        renew_deadline: go_duration(parsed.get("leader-elect-renew-deadline").unwrap_or("10s")),
        retry: go_duration(parsed.get("leader-elect-retry-period").unwrap_or("2s")),
    };
    if elect {
        if lock_type != "leases" {
            // only the Lease lock is modelled (the profile and upstream's Deployment use it)
            log.klog(
                'F',
                "controllermanager.go:0",
                &format!("error creating lock: lock type {lock_type} is not modelled by yurtsim"),
            );
            return 255;
        }
        log.info(
            "leaderelection.go:0",
            &format!(
                "attempting to acquire leader lease {}/{}...",
                ycm.lock_ns, ycm.lock_name
            ),
        );
        loop {
            match ycm.try_lease() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => log.error(
                    "leaderelection.go:0",
                    &format!(
                        "error retrieving resource lock {}/{}: {e}",
                        ycm.lock_ns, ycm.lock_name
                    ),
                ),
            }
            env.sleep(ycm.retry).await;
        }
        log.info(
            "leaderelection.go:0",
            &format!(
                "successfully acquired lease {}/{}",
                ycm.lock_ns, ycm.lock_name
            ),
        );
    }
    match ycm.lead(facts, &enabled, elect).await {
        Ok(()) => 0,
        Err((code, lines)) => {
            for l in lines {
                log.klog('F', "controllermanager.go:0", &l);
            }
            code
        }
    }
}

fn known(facts: &Facts) -> Vec<String> {
    facts.doc["flags"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"] == json!("controllers"))
        .and_then(|f| f["known"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// `--controllers` validated and resolved as k8s.io/controller-manager v0.20 does (Validate,
/// IsControllerEnabled: the first explicit entry wins, else `*` enables all on-by-default).
fn enabled_controllers(facts: &Facts, parsed: &facts::Parsed) -> Result<BTreeSet<String>, String> {
    let known = known(facts);
    let entries: Vec<String> = match parsed.values.get("controllers") {
        Some(v) => v
            .iter()
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None => vec!["*".into()],
    };
    let mut errors = Vec::new();
    for e in &entries {
        let bare = e.strip_prefix('-').unwrap_or(e);
        if bare != "*" && !known.iter().any(|k| k == bare) {
            errors.push(format!(
                "\"{bare}\" is not in the list of known controllers"
            ));
        }
    }
    super::aggregate(errors)?;
    Ok(known
        .into_iter()
        .filter(|c| {
            for e in &entries {
                if e.strip_prefix('-') == Some(c.as_str()) {
                    return false;
                }
                if e == c {
                    return true;
                }
            }
            entries.iter().any(|e| e == "*")
        })
        .collect())
}

struct Ycm<'a> {
    env: &'a Env,
    me: Caller,
    lock_ns: String,
    lock_name: String,
    holder: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry: Duration,
}

/// Counts this process among the sim's running node lifecycle controllers while it lives.
struct LifecycleRunning<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for LifecycleRunning<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

type Fatal = (i32, Vec<String>);

impl Ycm<'_> {
    /// client-go's tryAcquireOrRenew on the Lease; Ok(true) while we hold it.
    fn try_lease(&self) -> ApiResult<bool> {
        let (ns, name) = (&self.lock_ns, &self.lock_name);
        self.me
            .try_acquire_or_renew(self.env, ns, name, &self.holder, self.lease_duration)
    }

    /// Run (OnStartedLeading): the API server health wait, the controllers, their informers,
    /// then the controllers' work while the lease is renewed.
    async fn lead(
        &self,
        facts: &Facts,
        enabled: &BTreeSet<String>,
        elect: bool,
    ) -> Result<(), Fatal> {
        let log = &self.env.log;
        // WaitForAPIServer: GET /healthz every second for up to 10 s
        let deadline = Instant::now() + self.env.scaled(Duration::from_secs(10));
        loop {
            match self.me.authorize_path("get", "/healthz") {
                Ok(()) => break,
                Err(e) if Instant::now() >= deadline => {
                    return Err((
                        255,
                        vec![format!(
                            "error building controller context: failed to wait for apiserver being healthy: timed out waiting for the condition: {e}"
                        )],
                    ));
                }
                Err(_) => self.env.sleep(Duration::from_secs(1)).await,
            }
        }
        // the CSR approver's constructor lists v1 CSRs directly: NotFound falls back to
        // v1beta1, any other error fails the controller and the process
        let mut csr_version = "v1";
        if enabled.contains(CSR_APPROVER) {
            match self.me.list_watch(
                "certificates.k8s.io",
                "v1",
                "certificatesigningrequests",
                "",
                "",
            ) {
                Ok(_) => log.info(
                    "csrapprover.go:0",
                    "v1.CertificateSigningRequest is supported.",
                ),
                Err(e) if e.code == 404 => {
                    log.info(
                        "csrapprover.go:0",
                        "fall back to v1beta1.CertificateSigningRequest.",
                    );
                    csr_version = "v1beta1";
                }
                Err(e) => {
                    log.error(
                        "controllermanager.go:0",
                        &format!("Error starting \"{CSR_APPROVER}\""),
                    );
                    return Err((255, vec![format!("error starting controllers: {e}")]));
                }
            }
        }
        for c in enabled {
            log.info("controllermanager.go:0", &format!("Started \"{c}\""));
        }
        let informers: Vec<(String, String, String, String)> = facts.doc["startup"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["step"] == json!("informers-start"))
            .flat_map(|s| s["informers"].as_array().cloned().unwrap_or_default())
            .filter_map(|i| {
                let by = i["by"].as_str()?.to_string();
                let version = i["version"]
                    .as_str()?
                    .split_whitespace()
                    .next()?
                    .to_string();
                Some((
                    by,
                    i["group"].as_str()?.to_string(),
                    version,
                    i["resource"].as_str()?.to_string(),
                ))
            })
            .filter(|(by, ..)| enabled.contains(by))
            .collect();
        let mut synced: BTreeSet<String> = BTreeSet::new();
        let mut lifecycle: Option<LifecycleRunning> = None;
        let mut renewed = Instant::now();
        let mut failures = 0u32;
        if enabled.contains(NODE_LIFECYCLE) {
            log.info("node_lifecycle_controller.go:0", "Starting node controller");
            log.info(
                "shared_informer.go:0",
                "Waiting for caches to sync for taint",
            );
        }
        loop {
            // the controllers whose informers have all listed and watched
            for c in enabled {
                if synced.contains(c) {
                    continue;
                }
                let mut ok = true;
                for (_, g, v, r) in informers.iter().filter(|(by, ..)| by == c) {
                    let v = if r == "certificatesigningrequests" {
                        csr_version
                    } else {
                        v.as_str()
                    };
                    if let Err(e) = self.me.list_watch(g, v, r, "", "") {
                        ok = false;
                        failures += 1;
                        // the reflector's back-off: log the first failures, then rarely
                        if failures <= 4 || failures.is_power_of_two() {
                            let kind = kind_of(r);
                            log.error(
                                "reflector.go:0",
                                &format!(
                                    "Failed to watch *{v}.{kind}: failed to list *{v}.{kind}: {e}"
                                ),
                            );
                        }
                    }
                }
                if ok {
                    synced.insert(c.clone());
                    if c == NODE_LIFECYCLE {
                        log.info("shared_informer.go:0", "Caches are synced for taint ");
                        self.env
                            .shared
                            .model_node_lifecycles
                            .fetch_add(1, Ordering::SeqCst);
                        lifecycle = Some(LifecycleRunning(&self.env.shared.model_node_lifecycles));
                    } else {
                        log.info("csrapprover.go:0", "starting the crsapprover");
                    }
                }
            }
            if synced.contains(CSR_APPROVER) {
                self.approve_csrs(facts, csr_version);
            }
            self.env.sleep(self.retry).await;
            if elect {
                match self.try_lease() {
                    Ok(true) => renewed = Instant::now(),
                    Ok(false) | Err(_)
                        if renewed.elapsed() > self.env.scaled(self.renew_deadline) =>
                    {
                        drop(lifecycle);
                        return Err((255, vec!["leaderelection lost".into()]));
                    }
                    _ => {}
                }
            }
        }
    }

    /// The yurtcsrapprover: every request neither approved nor denied whose PEM subject's
    /// organizations name `openyurt:yurthub` or `openyurt:yurttunnel` is approved through
    /// the approval subresource (v1, v1beta1 when v1 is not served); signer, user and usages
    /// are not looked at.
    fn approve_csrs(&self, facts: &Facts, version: &str) {
        let approver = facts.doc["controllers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == json!(CSR_APPROVER))
            .cloned()
            .unwrap_or(Value::Null);
        let orgs: Vec<&str> = approver["approvesOrganizations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let Ok(csrs) = self.me.list_watch(
            "certificates.k8s.io",
            version,
            "certificatesigningrequests",
            "",
            "",
        ) else {
            return;
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        for csr in csrs {
            let decided = csr["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == json!("Approved") || c["type"] == json!("Denied"));
            if decided {
                continue;
            }
            let name = csr["metadata"]["name"].as_str().unwrap_or("").to_string();
            let subject = csr["spec"]["request"]
                .as_str()
                .and_then(|r| b64.decode(r).ok())
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|pem| pki::parse_csr(&pem));
            let yurt = subject
                .is_some_and(|(s, _)| s.organizations.iter().any(|o| orgs.contains(&o.as_str())));
            if !yurt {
                continue;
            }
            match self.me.approve_csr(&name, "self-approving yurt-csr", false) {
                Ok(_) => self.env.log.info(
                    "csrapprover.go:0",
                    &format!("successfully approve yurt-csr({name})"),
                ),
                Err(e) => self.env.log.error(
                    "csrapprover.go:0",
                    &format!("failed to approve yurt-csr({name}), {e}"),
                ),
            }
        }
    }
}

fn kind_of(resource: &str) -> &'static str {
    match resource {
        "leases" => "Lease",
        "pods" => "Pod",
        "nodes" => "Node",
        "daemonsets" => "DaemonSet",
        "certificatesigningrequests" => "CertificateSigningRequest",
        _ => "Object",
    }
}

/// "15s", "1m0s", "500ms" → Duration (flag values already accepted by time.ParseDuration).
pub(super) fn go_duration(s: &str) -> Duration {
    let mut total = 0f64;
    let mut rest = s.trim_start_matches('+');
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().unwrap_or(0.0);
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..u] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => 0.0,
        };
        total += value * scale;
        rest = &rest[u..];
    }
    Duration::from_secs_f64(total)
}
