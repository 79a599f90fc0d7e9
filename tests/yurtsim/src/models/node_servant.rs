//! node-servant's `static-pod-upgrade` command, as yurt-manager's YurtStaticSet upgrade
//! workers run it (facts `node-servant-v1.7.0.yaml`, behaviour `static-pod-upgrade`;
//! openyurtio/openyurt@v1.7.0, unchanged since v1.6.1: cmd/yurt-node-servant/static-pod-upgrade/
//! upgrade.go, pkg/node-servant/static-pod-upgrade/{options,upgrade}.go, util/{util,pods}.go).
//!
//! AdvancedRollingUpdate: the ConfigMap's manifest (`/data/<manifest>`) is staged in the
//! container's own `/tmp/manifests`, the node's `/etc/kubernetes/manifests/<manifest>.yaml` is
//! backed up there too and then overwritten; the command then polls YurtHub's `/pods` on the
//! node every 5 s until the static pod runs with the new hash (success), is Failed or the
//! timeout (2 m) passes (both: the backup is written back, exit 255). Other node-servant
//! commands are not modelled: they fail.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use rand::Rng;
use serde_json::Value;

use super::Env;
use crate::facts::{self, Facts};

const CMD: &str = "static-pod-upgrade";
const HASH: &str = "openyurt.io/static-pod-hash";

pub async fn run(env: &Env, facts: &'static Facts) -> i32 {
    let args = &env.container.args;
    let log = &env.log;
    if args.first().map(String::as_str) != Some(CMD) {
        log.line(&format!(
            "yurtsim: node-servant {} is not modelled (only {CMD} is)",
            args.first().map(String::as_str).unwrap_or("")
        ));
        return 1;
    }
    let flags = facts.flags();
    let parsed = match facts::parse_args(&flags, &args[1..]) {
        Ok(p) => p,
        Err(e) => {
            // cobra: the error and the usage, exit 1
            log.line(&format!("Error: {e}"));
            log.line(&format!("Usage:\n  node-servant {CMD} [flags]"));
            return 1;
        }
    };
    let get = |k: &str| parsed.get(k).unwrap_or("").to_string();
    for name in flags.keys() {
        let v = parsed
            .get(name)
            .map(str::to_string)
            .or_else(|| {
                facts.doc["flags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|f| f["name"] == name.as_str())
                    .and_then(|f| f["default"].as_str().map(str::to_string))
            })
            .unwrap_or_default();
        log.info("upgrade.go:0", &format!("FLAG: --{name}={v:?}"));
    }
    let (name, namespace, manifest, hash, mode) = (
        get("name"),
        get("namespace"),
        get("manifest"),
        get("hash"),
        get("mode"),
    );
    let fatal = |msg: String| {
        // klog.Fatalf: the message at severity F, then os.Exit(255)
        log.klog('F', "upgrade.go:0", &msg);
        255
    };
    if [&name, &namespace, &manifest, &hash, &mode]
        .iter()
        .any(|s| s.is_empty())
    {
        return fatal(format!(
            "could not validate static pod upgrade args, args can not be empty, name is {name}, namespace is {namespace},manifest is {manifest}, hash is {hash},mode is {mode}"
        ));
    }
    let timeout = match parsed.get("timeout") {
        Some(t) => match parse_duration(t) {
            Some(d) => d,
            None => {
                log.line(&format!(
                    "Error: invalid argument \"{t}\" for \"--timeout\" flag: time: invalid duration \"{t}\""
                ));
                return 1;
            }
        },
        None => Duration::from_secs(120),
    };
    let up = Upgrade {
        env,
        name,
        namespace,
        manifest_path: format!("/etc/kubernetes/manifests/{manifest}.yaml"),
        data_path: format!("/data/{manifest}"),
        upgrade_path: format!("/tmp/manifests/{manifest}.upgrade"),
        hash,
        timeout,
    };
    log.info("upgrade.go:0", "Create upgrade space success");
    let result = match mode.to_lowercase().as_str() {
        "advancedrollingupdate" => up.auto().await,
        "ota" => up.ota(),
        _ => Ok(()),
    };
    match result {
        Ok(()) => {
            log.info("upgrade.go:0", "Static pod upgrade Success");
            0
        }
        Err(e) => fatal(format!("could not upgrade static pod, {e}")),
    }
}

struct Upgrade<'a> {
    env: &'a Env,
    name: String,
    namespace: String,
    manifest_path: String,
    data_path: String,
    upgrade_path: String,
    hash: String,
    timeout: Duration,
}

impl Upgrade<'_> {
    /// AutoUpgrade: prepare, back up, replace, verify (rolling back on a failed verify).
    async fn auto(&self) -> Result<(), String> {
        let log = &self.env.log;
        let staged = self.read(&self.data_path)?;
        log.info("upgrade.go:0", "Auto prepare upgrade manifest success");
        let backup = self.read(&self.manifest_path)?;
        log.info("upgrade.go:0", "Auto upgrade backupManifest success");
        self.write(&self.manifest_path, &staged)?;
        log.info("upgrade.go:0", "Auto upgrade replaceManifest success");
        let verified = self.wait_for_pod_running().await;
        let rollback = || {
            if let Err(e) = self.write(&self.manifest_path, &backup) {
                log.error(
                    "upgrade.go:0",
                    &format!("could not rollback manifest when upgrade failed, {e}"),
                );
            }
        };
        match verified {
            Ok(true) => {
                log.info("upgrade.go:0", "Auto upgrade verify success");
                Ok(())
            }
            Ok(false) => {
                rollback();
                Err("the latest static pod is not running".into())
            }
            Err(e) => {
                rollback();
                Err(e)
            }
        }
    }

    /// OTAUpgrade: back up, then replace from the staged file — which this mode never
    /// prepares, so in a fresh container the copy fails.
    fn ota(&self) -> Result<(), String> {
        self.read(&self.manifest_path)?;
        self.env
            .log
            .info("upgrade.go:0", "OTA upgrade backupManifest success");
        Err(format!(
            "open {}: no such file or directory",
            self.upgrade_path
        ))
    }

    /// util.WaitForPodRunning: every 5 s (after a random pause under 1 s) YurtHub's /pods on
    /// the node; Running with the new hash → true, Failed → false, errors are retried until
    /// the timeout.
    async fn wait_for_pod_running(&self) -> Result<bool, String> {
        let (ns, name) = (&self.namespace, &self.name);
        self.env.log.info(
            "util.go:0",
            &format!("WaitForPodRunning namespace is {ns}, name is {name}"),
        );
        let deadline = Instant::now() + self.env.scaled(self.timeout);
        loop {
            let tick = Instant::now() + self.env.scaled(Duration::from_secs(5));
            if tick >= deadline {
                tokio::time::sleep_until(deadline.into()).await;
                return Err(format!(
                    "timeout waiting for static pod {ns}/{name} to be running"
                ));
            }
            tokio::time::sleep_until(tick.into()).await;
            let pause = rand::rng().random_range(0..1000);
            self.env.sleep(Duration::from_millis(pause)).await;
            if let Some(pod) = self.pod_from_yurthub().await {
                let phase = pod["status"]["phase"].as_str().unwrap_or("");
                if phase == "Running" && pod["metadata"]["annotations"][HASH] == self.hash.as_str()
                {
                    return Ok(true);
                }
                if phase == "Failed" {
                    return Ok(false);
                }
            }
        }
    }

    /// GET http://127.0.0.1:10267/pods (the worker runs on the node's network) and the pod
    /// named there; None on any error.
    async fn pod_from_yurthub(&self) -> Option<Value> {
        let resp = crate::nodes::kubelet::yurthub_endpoint(
            &self.env.shared,
            &self.env.container.node,
            &hyper::Method::GET,
            "/pods",
        );
        if resp.status() != 200 {
            return None;
        }
        let bytes = resp.into_body().collect().await.ok()?.to_bytes();
        let list: Value = serde_json::from_slice(&bytes).ok()?;
        list["items"]
            .as_array()?
            .iter()
            .find(|p| {
                p["metadata"]["namespace"] == self.namespace.as_str()
                    && p["metadata"]["name"] == self.name.as_str()
            })
            .cloned()
    }

    fn read(&self, path: &str) -> Result<String, String> {
        self.env
            .container_path(path)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .ok_or_else(|| format!("open {path}: no such file or directory"))
    }

    fn write(&self, path: &str, content: &str) -> Result<(), String> {
        let real = self
            .env
            .container_path(path)
            .ok_or_else(|| format!("open {path}: no such file or directory"))?;
        std::fs::write(&real, content).map_err(|e| format!("open {path}: {e}"))
    }
}

/// A Go duration of one or more `<number><unit>` parts (ns, us, ms, s, m, h).
fn parse_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|n| *n > 0)?;
        let num: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let (unit, len) = [
            ("ns", 1e-9),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("ms", 1e-3),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ]
        .iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, f)| (*f, u.len()))?;
        total += num * unit;
        rest = &rest[len..];
    }
    Some(Duration::from_secs_f64(total))
}
