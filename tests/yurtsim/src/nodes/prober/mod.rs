//! The kubelet's container probes: startup, readiness and liveness, as
//! kubernetes/kubernetes@v1.37.2 pkg/kubelet/prober runs them.
//!
//! - `worker.go` `doProbe`: no probe before `initialDelaySeconds` (whole seconds since the
//!   container started); readiness and liveness wait for the startup probe; a verdict changes
//!   only after `failureThreshold` failures or `successThreshold` successes in a row; a
//!   liveness or startup verdict that calls for a kill puts the worker on hold until the next
//!   instance. Initial verdicts (`newWorker`): readiness Failure, liveness Success, startup
//!   Unknown. A worker probes at once, then every `periodSeconds` (`run`).
//! - `prober_manager.go` `UpdatePodStatus`: a running container is started when its startup
//!   probe succeeded or it has none; it is ready when started and its readiness probe
//!   succeeded, or it has none.
//! - `prober.go` `probe`/`runProbe`: the handlers (exec, httpGet, tcpSocket, grpc) and the
//!   `Unhealthy` / `ProbeWarning` events ("Readiness probe failed: …").
//! - pkg/probe/http/http.go `DoHTTPProbe`, request.go: GET with `User-Agent: kube-probe/1.37`
//!   and `Accept: */*`; 200–399 succeeds, 3xx with a warning (redirects are not followed
//!   here); otherwise "HTTP probe failed with statuscode: N"; a transport error is the
//!   failure's output. pkg/probe/tcp/tcp.go: a connect. pkg/probe/exec/exec.go: exit 0.
//! - `apis/core/v1/defaults.go` `SetDefaults_Probe`: timeout 1 s, period 10 s, thresholds 1
//!   and 3.
//!
//! Timings of a modelled container's probes are scaled by the sim's `model_time_scale`, as
//! its model's own durations are; a real process is probed in real time.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

mod handlers;
pub(crate) use handlers::{Target, run};

/// The three probes, in the order the kubelet consults them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Startup,
    Readiness,
    Liveness,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Startup, Kind::Readiness, Kind::Liveness];

    fn field(self) -> &'static str {
        match self {
            Kind::Startup => "startupProbe",
            Kind::Readiness => "readinessProbe",
            Kind::Liveness => "livenessProbe",
        }
    }

    /// `probeType.String()` (prober_manager.go), as events print it.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Kind::Startup => "Startup",
            Kind::Readiness => "Readiness",
            Kind::Liveness => "Liveness",
        }
    }
}

/// A probe's port: a number or the name of one of the container's ports.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Port {
    Number(i64),
    Name(String),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Action {
    Http {
        scheme: String,
        host: Option<String>,
        port: Port,
        path: String,
        headers: Vec<(String, String)>,
    },
    Tcp {
        host: Option<String>,
        port: Port,
    },
    Exec(Vec<String>),
    Grpc(i64),
    /// No handler: `runProbe`'s "missing probe handler".
    Missing,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    pub kind: Kind,
    pub action: Action,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
    /// `terminationGracePeriodSeconds` of a liveness or startup probe.
    pub termination_grace: Option<Duration>,
}

fn port_of(v: &Value) -> Port {
    match v {
        Value::String(s) => s
            .parse()
            .map_or_else(|_| Port::Name(s.clone()), Port::Number),
        v => Port::Number(v.as_i64().unwrap_or(0)),
    }
}

impl Spec {
    /// The container's probe of `kind`, with the API's defaults, its durations times `scale`.
    pub(crate) fn of(container: &Value, kind: Kind, scale: f64) -> Option<Spec> {
        let p = container.get(kind.field()).filter(|p| p.is_object())?;
        let secs = |field: &str, default: u64| {
            let n = p[field].as_u64().filter(|n| *n > 0).unwrap_or(default);
            Duration::from_secs(n).mul_f64(scale)
        };
        let count = |field: &str, default: u32| {
            p[field]
                .as_u64()
                .filter(|n| *n > 0)
                .map_or(default, |n| n as u32)
        };
        let host = |h: &Value| h.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let action = if let Some(h) = p.get("httpGet").filter(|h| h.is_object()) {
            Action::Http {
                scheme: h["scheme"].as_str().unwrap_or("HTTP").to_lowercase(),
                host: host(&h["host"]),
                port: port_of(&h["port"]),
                path: h["path"].as_str().unwrap_or("").to_string(),
                headers: h["httpHeaders"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| Some((x["name"].as_str()?.into(), x["value"].as_str()?.into())))
                    .collect(),
            }
        } else if let Some(t) = p.get("tcpSocket").filter(|t| t.is_object()) {
            Action::Tcp {
                host: host(&t["host"]),
                port: port_of(&t["port"]),
            }
        } else if let Some(e) = p.get("exec").filter(|e| e.is_object()) {
            Action::Exec(
                e["command"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect(),
            )
        } else if let Some(g) = p.get("grpc").filter(|g| g.is_object()) {
            Action::Grpc(g["port"].as_i64().unwrap_or(0))
        } else {
            Action::Missing
        };
        // a success threshold other than 1 is refused by validation for liveness and startup
        let success_threshold = match kind {
            Kind::Readiness => count("successThreshold", 1),
            _ => 1,
        };
        Some(Spec {
            kind,
            action,
            initial_delay: Duration::from_secs(p["initialDelaySeconds"].as_u64().unwrap_or(0))
                .mul_f64(scale),
            period: secs("periodSeconds", 10),
            timeout: secs("timeoutSeconds", 1),
            success_threshold,
            failure_threshold: count("failureThreshold", 3),
            termination_grace: p["terminationGracePeriodSeconds"]
                .as_u64()
                .map(Duration::from_secs),
        })
    }
}

/// A verdict as the kubelet's results managers hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Unknown,
    Success,
    Failure,
}

/// What one probe run found: success (maybe with a warning), failure, or an error (the probe
/// could not be made; `probe` turns it into a failure).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    Success,
    Warning(String),
    Failure(String),
    Error(String),
}

impl Outcome {
    fn passed(&self) -> bool {
        matches!(self, Outcome::Success | Outcome::Warning(_))
    }

    /// The event the prober records for it (type, reason, message), if any.
    pub(crate) fn event(&self, kind: Kind) -> Option<(&'static str, &'static str, String)> {
        let t = kind.title();
        match self {
            Outcome::Success => None,
            Outcome::Warning(out) => Some((
                "Warning",
                "ProbeWarning",
                format!("{t} probe warning: {out}"),
            )),
            Outcome::Failure(out) => {
                Some(("Warning", "Unhealthy", format!("{t} probe failed: {out}")))
            }
            // probe.Result's String() of Unknown is "unknown"
            Outcome::Error(err) => Some((
                "Warning",
                "Unhealthy",
                format!("{t} probe errored and resulted in unknown state: {err}"),
            )),
        }
    }
}

/// One probe of one container instance (`worker.go`).
#[derive(Debug)]
struct Worker {
    spec: Spec,
    verdict: Verdict,
    last: Option<bool>,
    run: u32,
    on_hold: bool,
    /// The next tick.
    due: Instant,
}

impl Worker {
    fn new(spec: Spec, now: Instant) -> Worker {
        let verdict = match spec.kind {
            Kind::Readiness => Verdict::Failure,
            Kind::Liveness => Verdict::Success,
            Kind::Startup => Verdict::Unknown,
        };
        Worker {
            spec,
            verdict,
            last: None,
            run: 0,
            on_hold: false,
            due: now,
        }
    }

    /// Counts one run; the verdict moves once a threshold is reached.
    fn record(&mut self, passed: bool) {
        if self.last == Some(passed) {
            self.run += 1;
        } else {
            self.last = Some(passed);
            self.run = 1;
        }
        let threshold = if passed {
            self.spec.success_threshold
        } else {
            self.spec.failure_threshold
        };
        if self.run < threshold {
            return;
        }
        self.verdict = if passed {
            Verdict::Success
        } else {
            Verdict::Failure
        };
        if self.spec.kind == Kind::Startup || (self.spec.kind == Kind::Liveness && !passed) {
            self.on_hold = true;
            self.run = 0;
        }
    }
}

/// The probes of one running container instance.
#[derive(Debug)]
pub(crate) struct ContainerProbes {
    started_at: Instant,
    workers: Vec<Worker>,
}

impl ContainerProbes {
    /// The probes `container` declares, for an instance started at `now`.
    pub(crate) fn new(container: &Value, scale: f64, now: Instant) -> ContainerProbes {
        ContainerProbes {
            started_at: now,
            workers: Kind::ALL
                .iter()
                .filter_map(|k| Spec::of(container, *k, scale))
                .map(|s| Worker::new(s, now))
                .collect(),
        }
    }

    fn verdict(&self, kind: Kind) -> Option<Verdict> {
        self.workers
            .iter()
            .find(|w| w.spec.kind == kind)
            .map(|w| w.verdict)
    }

    pub(crate) fn has(&self, kind: Kind) -> bool {
        self.verdict(kind).is_some()
    }

    /// `UpdatePodStatus`: started once the startup probe succeeded, or without one.
    pub(crate) fn started(&self) -> bool {
        self.verdict(Kind::Startup)
            .is_none_or(|v| v == Verdict::Success)
    }

    /// Ready once started and the readiness probe succeeded, or without one.
    pub(crate) fn ready(&self) -> bool {
        self.started()
            && self
                .verdict(Kind::Readiness)
                .is_none_or(|v| v == Verdict::Success)
    }

    /// The probe whose verdict has the kubelet kill the container (`computePodActions`:
    /// liveness first, then startup).
    pub(crate) fn kill(&self) -> Option<&Spec> {
        [Kind::Liveness, Kind::Startup].into_iter().find_map(|k| {
            self.workers
                .iter()
                .find(|w| w.spec.kind == k && w.verdict == Verdict::Failure)
                .map(|w| &w.spec)
        })
    }

    /// When the next tick of any probe is.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.workers
            .iter()
            .filter(|w| !w.on_hold)
            .map(|w| w.due)
            .min()
    }

    /// The probes to run now (their ticks come due), each tick moved on by its period. A
    /// probe inside its initial delay, or waiting for the startup probe, lets its tick pass.
    pub(crate) fn due(&mut self, now: Instant) -> Vec<Spec> {
        let started = self.started();
        let since = now.saturating_duration_since(self.started_at);
        let mut out = Vec::new();
        for w in self
            .workers
            .iter_mut()
            .filter(|w| !w.on_hold && w.due <= now)
        {
            while w.due <= now {
                w.due += w.spec.period.max(Duration::from_millis(1));
            }
            // whole seconds, as `int32(time.Since(…).Seconds()) < InitialDelaySeconds`
            if since < w.spec.initial_delay {
                continue;
            }
            if (w.spec.kind == Kind::Startup) == started {
                continue;
            }
            out.push(w.spec.clone());
        }
        out
    }

    /// Records a run of `kind`'s probe.
    pub(crate) fn record(&mut self, kind: Kind, outcome: &Outcome) {
        if let Some(w) = self
            .workers
            .iter_mut()
            .find(|w| w.spec.kind == kind && !w.on_hold)
        {
            w.record(outcome.passed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn probes(c: Value) -> (ContainerProbes, Instant) {
        let now = Instant::now();
        (ContainerProbes::new(&c, 1.0, now), now)
    }

    #[test]
    fn specs_take_the_apis_defaults_and_name_their_handler() {
        let c = json!({"name": "m", "ports": [{"name": "health", "containerPort": 10272}],
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, "initialDelaySeconds": 60, "failureThreshold": 2},
            "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
            "startupProbe": {"exec": {"command": ["true"]}}});
        let r = Spec::of(&c, Kind::Readiness, 1.0).unwrap();
        assert_eq!(r.initial_delay, Duration::from_secs(60));
        assert_eq!(
            (r.period, r.timeout),
            (Duration::from_secs(10), Duration::from_secs(1))
        );
        assert_eq!((r.success_threshold, r.failure_threshold), (1, 2));
        assert_eq!(
            handlers::resolve_port(&Port::Name("health".into()), &c),
            Ok(10272)
        );
        assert!(
            handlers::resolve_port(&Port::Name("nope".into()), &c)
                .unwrap_err()
                .contains("couldn't find port: nope")
        );
        let l = Spec::of(&c, Kind::Liveness, 0.5).unwrap();
        assert_eq!(l.period, Duration::from_millis(2500));
        assert!(matches!(
            l.action,
            Action::Tcp {
                port: Port::Number(8080),
                ..
            }
        ));
        assert_eq!(
            Spec::of(&c, Kind::Startup, 1.0).unwrap().action,
            Action::Exec(vec!["true".into()])
        );
        assert!(Spec::of(&json!({"name": "x"}), Kind::Readiness, 1.0).is_none());
    }

    #[test]
    fn readiness_waits_for_its_initial_delay_and_a_success() {
        let (mut p, t0) = probes(
            json!({"readinessProbe": {"tcpSocket": {"port": 1}, "initialDelaySeconds": 15}}),
        );
        assert!(!p.ready(), "readiness starts as Failure");
        // ticks at 0 s and 10 s fall inside the delay; the one at 20 s probes
        assert!(p.due(t0).is_empty());
        assert!(p.due(t0 + Duration::from_secs(10)).is_empty());
        assert_eq!(p.next_due(), Some(t0 + Duration::from_secs(20)));
        let due = p.due(t0 + Duration::from_secs(20));
        assert_eq!(due.len(), 1);
        p.record(Kind::Readiness, &Outcome::Success);
        assert!(p.ready());
        // failureThreshold (3) failures in a row take readiness away, fewer do not
        for _ in 0..2 {
            p.record(Kind::Readiness, &Outcome::Failure("x".into()));
        }
        assert!(p.ready());
        p.record(Kind::Readiness, &Outcome::Failure("x".into()));
        assert!(!p.ready());
        assert!(p.kill().is_none(), "readiness never kills");
    }

    #[test]
    fn a_startup_probe_holds_the_others_and_a_failed_liveness_kills_once() {
        let (mut p, t0) = probes(json!({
            "startupProbe": {"tcpSocket": {"port": 1}, "periodSeconds": 1, "failureThreshold": 2},
            "livenessProbe": {"tcpSocket": {"port": 1}, "periodSeconds": 1, "failureThreshold": 1}}));
        assert!(
            !p.started() && !p.ready(),
            "not started before the startup probe succeeds"
        );
        let kinds = |v: Vec<Spec>| v.into_iter().map(|s| s.kind).collect::<Vec<_>>();
        assert_eq!(kinds(p.due(t0)), [Kind::Startup]);
        p.record(Kind::Startup, &Outcome::Success);
        assert!(
            p.started() && p.ready(),
            "no readiness probe: ready once started"
        );
        assert_eq!(kinds(p.due(t0 + Duration::from_secs(1))), [Kind::Liveness]);
        p.record(Kind::Liveness, &Outcome::Failure("refused".into()));
        assert_eq!(p.kill().map(|s| s.kind), Some(Kind::Liveness));
        // on hold until the next instance: no more liveness runs
        assert!(p.due(t0 + Duration::from_secs(5)).is_empty());
    }

    #[test]
    fn a_startup_probe_that_fails_its_threshold_kills() {
        let (mut p, _) =
            probes(json!({"startupProbe": {"tcpSocket": {"port": 1}, "failureThreshold": 2}}));
        p.record(Kind::Startup, &Outcome::Failure("a".into()));
        assert!(p.kill().is_none());
        p.record(Kind::Startup, &Outcome::Error("b".into()));
        assert_eq!(p.kill().map(|s| s.kind), Some(Kind::Startup));
    }

    #[test]
    fn events_read_as_the_kubelets() {
        let e = Outcome::Failure("HTTP probe failed with statuscode: 500".into())
            .event(Kind::Readiness);
        assert_eq!(
            e,
            Some((
                "Warning",
                "Unhealthy",
                "Readiness probe failed: HTTP probe failed with statuscode: 500".into()
            ))
        );
        assert_eq!(Outcome::Success.event(Kind::Liveness), None);
        assert_eq!(
            Outcome::Warning("w".into())
                .event(Kind::Liveness)
                .unwrap()
                .1,
            "ProbeWarning"
        );
    }
}
