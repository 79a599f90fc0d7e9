//! A pod's app containers after its init containers: each one is started, registered with the
//! node's container runtime (cri/), and restarted on its own when it exits — by itself or
//! because the runtime stopped it (`crictl stop`) — as the kubelet does for the pod's
//! restartPolicy (kubernetes/kubernetes@v1.33.0 pkg/kubelet/kuberuntime/kuberuntime_manager.go
//! `computePodActions`: per container, Always restarts, OnFailure restarts non-zero exits,
//! Never does not). Restarts wait the crash back-off, doubling per restart of that container
//! (pkg/kubelet/kubelet.go backOffPeriod 10s, MaxContainerBackOff 300s), meanwhile the
//! container is Waiting/CrashLoopBackOff. The pod ends once no container runs or will restart.
//! Each running container's probes (`prober`) decide its `started` and `ready`; a failed
//! liveness or startup probe has it killed and restarted like a crash.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::nodes::Cluster;
use crate::nodes::containers::{Started, Volumes};
use crate::nodes::kubelet::{
    NodeKubelet, log_path, pod_event, pod_status, set_pod_status, start_failed,
};
use crate::nodes::prober::{self, ContainerProbes, Kind, Outcome};
use crate::util;

pub(crate) enum End {
    Exited(i32, &'static str),
    Stopped,
}

enum Handle {
    Process(Box<crate::nodes::runtime::Running>),
    Model(crate::nodes::programs::Run),
    /// No real program: runs until stopped, or completes (exit 0) at the instant given.
    Simulated(Option<Instant>),
}

struct Slot {
    c: Value,
    name: String,
    run: Option<Handle>,
    id: String,
    cri_stop: watch::Receiver<bool>,
    restarts: u32,
    last_state: Value,
    started: String,
    /// Terminated for good: (exit code, reason, finishedAt).
    done: Option<(i32, &'static str, String)>,
    /// Waiting for the back-off: (restart at, CrashLoopBackOff message).
    backoff: Option<(Instant, String)>,
    /// The running instance's probes (none for a simulated container: nothing to probe).
    probes: Option<ContainerProbes>,
}

/// A probe's run, reported back to the pod worker: the container instance, which probe,
/// and what it found.
type Probed = (String, Kind, Outcome);

enum Event {
    PodStop,
    Tick,
    /// A container ended: its exit code, or None when the runtime stopped it.
    Exit(usize, Option<i32>),
    Probed(Probed),
}

async fn flagged(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await.map(|_| ());
}

/// Waits for the next thing the pod worker must react to.
async fn next_event(
    slots: &mut [Slot],
    stop: &mut watch::Receiver<bool>,
    tick: Option<Duration>,
    probed: &mut tokio::sync::mpsc::UnboundedReceiver<Probed>,
) -> Event {
    type Fut<'a> = Pin<Box<dyn Future<Output = Event> + Send + 'a>>;
    let mut futs: Vec<Fut<'_>> = vec![
        Box::pin(async move {
            flagged(stop).await;
            Event::PodStop
        }),
        Box::pin(async move {
            match probed.recv().await {
                Some(p) => Event::Probed(p),
                None => std::future::pending().await,
            }
        }),
    ];
    if let Some(t) = tick {
        futs.push(Box::pin(async move {
            tokio::time::sleep(t).await;
            Event::Tick
        }));
    }
    for (i, s) in slots.iter_mut().enumerate() {
        let Some(h) = s.run.as_mut() else { continue };
        let rx = &mut s.cri_stop;
        futs.push(Box::pin(async move {
            let exit = async {
                match h {
                    Handle::Process(r) => Some(r.wait().await.map(|x| x.exit_code).unwrap_or(128)),
                    Handle::Model(m) => Some((&mut m.exit).await.unwrap_or(128)),
                    Handle::Simulated(Some(t)) => {
                        tokio::time::sleep_until(*t).await;
                        Some(0)
                    }
                    Handle::Simulated(None) => std::future::pending().await,
                }
            };
            tokio::select! {
                code = exit => Event::Exit(i, code),
                _ = flagged(rx) => Event::Exit(i, None),
            }
        }));
    }
    futures::future::select_all(futs).await.0
}

/// Starts (or restarts) one container and registers it with the runtime.
fn start_slot(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    p: &Value,
    s: &mut Slot,
    volumes: &Volumes,
    restart_policy: &str,
) -> Result<(), String> {
    let lp = log_path(shared, p, &s.name);
    let _ = std::fs::create_dir_all(lp.parent().unwrap());
    if s.restarts > 0 {
        // `kubectl logs` shows the current instance; the last one is kept beside it.
        let _ = std::fs::rename(&lp, lp.with_extension("previous.log"));
    }
    let env = crate::nodes::kubelet::container_env(
        shared,
        k,
        p,
        &s.c,
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
    let started = crate::nodes::containers::start(shared, k, p, &s.c, volumes, restart_policy, &lp)
        .inspect_err(|msg| start_failed(shared, p, &lp, msg))?;
    // a model's probe timings run at the model's pace; a real process's in real time
    let mut probe_scale = Some(1.0);
    let (handle, pgid) = match started {
        Started::Process(r) => {
            let pid = r.pid();
            (Handle::Process(r), Some(pid))
        }
        Started::Model(m) => {
            probe_scale = Some(shared.cfg.model_time_scale);
            (Handle::Model(m), None)
        }
        Started::Simulated if restart_policy == "Always" => {
            probe_scale = None;
            (Handle::Simulated(None), None)
        }
        Started::Simulated => {
            probe_scale = None;
            (
                Handle::Simulated(Some(Instant::now() + shared.cfg.pod_ready_delay)),
                None,
            )
        }
    };
    s.probes = probe_scale.map(|scale| ContainerProbes::new(&s.c, scale, Instant::now()));
    let uid = p["metadata"]["uid"].as_str().unwrap_or_default();
    let (id, rx) = k.cri.create(crate::nodes::cri::Create {
        pod: p,
        pod_uid: uid,
        container: &s.c,
        attempt: s.restarts,
        env,
        pgid,
        log_path: lp,
    });
    s.id = id;
    s.cri_stop = rx;
    s.run = Some(handle);
    s.started = util::now();
    s.backoff = None;
    pod_event(
        shared,
        p,
        "Normal",
        "Started",
        &format!("Started container {}", s.name),
    );
    Ok(())
}

async fn stop_all(slots: &mut [Slot], k: &NodeKubelet, grace: Duration) {
    for s in slots.iter_mut() {
        match s.run.take() {
            Some(Handle::Process(mut r)) => {
                let _ = r.stop(grace).await;
            }
            Some(Handle::Model(m)) => m.exit.abort(),
            _ => {}
        }
        k.cri.exited(&s.id, 137, "Error");
    }
}

/// The grace of the pod's deletion (`kubectl delete --grace-period`), which the API server
/// sets as `deletionGracePeriodSeconds` and the kubelet takes over the spec's
/// (kubernetes v1.37.2 pkg/kubelet/pod_workers.go `calculateEffectiveGracePeriod`).
fn deletion_grace(shared: &Cluster, k: &NodeKubelet, p: &Value) -> Option<Duration> {
    let ns = p["metadata"]["namespace"].as_str()?;
    let name = p["metadata"]["name"].as_str()?;
    let now = k.read(shared, "pods", ns, name)?;
    (now["metadata"]["uid"] == p["metadata"]["uid"])
        .then(|| now["metadata"]["deletionGracePeriodSeconds"].as_u64())
        .flatten()
        .map(Duration::from_secs)
}

/// Runs the app containers until the pod ends or is stopped.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    shared: &Arc<Cluster>,
    k: &Arc<NodeKubelet>,
    p: &Value,
    volumes: &Volumes,
    restart_policy: &str,
    stop: &mut watch::Receiver<bool>,
    first_start: &str,
    never_ready: bool,
) -> End {
    let (_, idle) = watch::channel(false);
    let mut slots: Vec<Slot> = p["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Slot {
            c: c.clone(),
            name: c["name"].as_str().unwrap_or("main").to_string(),
            run: None,
            id: String::new(),
            cri_stop: idle.clone(),
            restarts: 0,
            last_state: Value::Null,
            started: String::new(),
            done: None,
            backoff: None,
            probes: None,
        })
        .collect();
    let (probe_tx, mut probed) = tokio::sync::mpsc::unbounded_channel();
    let grace = Duration::from_secs(
        p["spec"]["terminationGracePeriodSeconds"]
            .as_u64()
            .unwrap_or(30)
            .min(30),
    );
    for i in 0..slots.len() {
        if start_slot(shared, k, p, &mut slots[i], volumes, restart_policy).is_err() {
            stop_all(&mut slots, k, Duration::from_secs(1)).await;
            return End::Exited(128, "StartError");
        }
    }
    let mut written = None;
    loop {
        let sig = write_status(
            shared,
            k,
            p,
            &slots,
            first_start,
            never_ready,
            written.as_ref(),
        );
        let posted = sig.is_some();
        if let Some(sig) = sig {
            written = Some(sig);
        }
        if slots.iter().all(|s| s.done.is_some()) {
            let worst = slots
                .iter()
                .filter_map(|s| s.done.as_ref())
                .map(|d| d.0)
                .find(|c| *c != 0)
                .unwrap_or(0);
            return if worst == 0 {
                End::Exited(0, "Completed")
            } else {
                End::Exited(worst, "Error")
            };
        }
        let now = Instant::now();
        let mut tick = slots
            .iter()
            .filter_map(|s| {
                s.backoff
                    .as_ref()
                    .map(|b| b.0.saturating_duration_since(now))
            })
            .min();
        if !k.active() {
            // a stopped kubelet restarts nothing: look again for it running
            tick = Some(Duration::from_millis(200));
        } else if !posted {
            // a cut-off kubelet: post again once it can
            tick = Some(tick.map_or(Duration::from_millis(200), |t| {
                t.min(Duration::from_millis(200))
            }));
        }
        if slots
            .iter()
            .any(|s| matches!(s.run, Some(Handle::Model(_))))
        {
            // A model's readiness decides the Ready condition: look again soon.
            tick = Some(tick.map_or(Duration::from_millis(50), |t| {
                t.min(Duration::from_millis(50))
            }));
        }
        for s in slots.iter_mut() {
            start_probes(shared, k, p, s, &probe_tx);
        }
        if let Some(due) = slots
            .iter()
            .filter_map(|s| s.probes.as_ref()?.next_due())
            .min()
        {
            let t = due.saturating_duration_since(Instant::now());
            tick = Some(tick.map_or(t, |x| x.min(t)));
        }
        match next_event(&mut slots, stop, tick, &mut probed).await {
            Event::PodStop => {
                stop_all(&mut slots, k, deletion_grace(shared, k, p).unwrap_or(grace)).await;
                return End::Stopped;
            }
            Event::Tick => {}
            Event::Exit(i, code) => exited(shared, k, p, &mut slots[i], code, restart_policy).await,
            Event::Probed((id, kind, outcome)) => {
                if let Some(s) = slots.iter_mut().find(|s| s.id == id && s.run.is_some()) {
                    probed_once(shared, k, p, s, kind, &outcome, grace, restart_policy).await;
                }
            }
        }
        // restarts are the kubelet's: a stopped one restarts nothing
        let kubelet_runs = k.active();
        for s in slots.iter_mut() {
            if kubelet_runs
                && s.backoff.as_ref().is_some_and(|b| Instant::now() >= b.0)
                && start_slot(shared, k, p, s, volumes, restart_policy).is_err()
            {
                stop_all(&mut slots, k, Duration::from_secs(1)).await;
                return End::Exited(128, "StartError");
            }
        }
    }
}

/// A container ended (`code` None: the runtime stopped it, SIGKILL → 137).
async fn exited(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    s: &mut Slot,
    code: Option<i32>,
    restart_policy: &str,
) {
    s.probes = None;
    let code = match (s.run.take(), code) {
        (_, Some(c)) => c,
        (Some(Handle::Process(mut r)), None) => r
            .stop(Duration::ZERO)
            .await
            .map(|x| x.exit_code)
            .unwrap_or(137),
        (Some(Handle::Model(m)), None) => {
            m.exit.abort();
            137
        }
        (_, None) => 137,
    };
    // A non-zero exit without a runtime reason is "Error" (containerd
    // internal/cri/server/container_status.go), also for a kill by signal.
    let reason: &'static str = if code == 0 { "Completed" } else { "Error" };
    k.cri.exited(&s.id, code, reason);
    let finished = util::now();
    let restart = restart_policy == "Always" || (restart_policy == "OnFailure" && code != 0);
    if !restart {
        s.done = Some((code, reason, finished));
        return;
    }
    let cid = format!("{}{}", k.cri.flavor.id_prefix(), s.id);
    s.last_state = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": s.started, "finishedAt": finished, "containerID": cid}});
    let backoff = shared
        .cfg
        .crash_backoff
        .saturating_mul(1 << s.restarts.min(16))
        .min(shared.cfg.crash_backoff_max);
    s.restarts += 1;
    let (ns, name) = crate::api::store::key_of(p);
    let uid = p["metadata"]["uid"].as_str().unwrap_or("");
    let msg = format!(
        "back-off {} restarting failed container={} pod={name}_{ns}({uid})",
        util::go_duration(backoff),
        s.name
    );
    s.backoff = Some((Instant::now() + backoff, msg));
    pod_event(
        shared,
        p,
        "Warning",
        "BackOff",
        &format!(
            "Back-off restarting failed container {} in pod {name}_{ns}({uid})",
            s.name
        ),
    );
}

/// Writes the pod's Running status when something visible changed; returns what was written
/// (None when the kubelet could not post it).
fn write_status(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    slots: &[Slot],
    first_start: &str,
    never_ready: bool,
    last: Option<&Value>,
) -> Option<Value> {
    let slot_ready = |s: &Slot| match (&s.run, &s.probes) {
        // a model without a readiness probe is ready when it says so
        (Some(Handle::Model(m)), Some(pr)) if !pr.has(Kind::Readiness) => {
            pr.started() && *m.ready.borrow()
        }
        (Some(_), Some(pr)) => pr.ready(),
        (Some(_), None) => true,
        (None, _) => false,
    };
    let slot_started = |s: &Slot| s.probes.as_ref().is_none_or(ContainerProbes::started);
    let ready = !never_ready && slots.iter().all(slot_ready);
    let sig = json!([
        ready,
        slots
            .iter()
            .map(|s| json!([
                s.id,
                s.restarts,
                s.backoff.is_some(),
                s.done.is_some(),
                slot_ready(s),
                slot_started(s)
            ]))
            .collect::<Vec<_>>()
    ]);
    if last == Some(&sig) {
        return Some(sig);
    }
    let cur = crate::nodes::kubelet::current_pod(shared, p);
    let pod = cur.as_deref().unwrap_or(p);
    let mut status = pod_status(
        k,
        pod,
        "Running",
        ready,
        &pod["spec"]["containers"],
        None,
        first_start.to_string(),
    );
    for cs in status["containerStatuses"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let Some(s) = slots.iter().find(|s| cs["name"] == json!(s.name)) else {
            continue;
        };
        let cid = format!("{}{}", k.cri.flavor.id_prefix(), s.id);
        cs["restartCount"] = json!(s.restarts);
        if !s.last_state.is_null() {
            cs["lastState"] = s.last_state.clone();
        }
        cs["containerID"] = json!(cid);
        cs["ready"] = json!(!never_ready && slot_ready(s));
        if let Some((_, msg)) = &s.backoff {
            cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": msg}});
            cs["started"] = json!(false);
        } else if let Some((code, reason, finished)) = &s.done {
            cs["state"] = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": s.started, "finishedAt": finished, "containerID": cid}});
            cs["started"] = json!(false);
        } else {
            cs["state"] = json!({"running": {"startedAt": s.started}});
            cs["started"] = json!(slot_started(s));
        }
    }
    set_pod_status(shared, pod, status).ok().map(|_| sig)
}

/// Starts the probes of `s` that come due: a model's are answered by its readiness at once
/// (the model stands for what its endpoints say); a process's run on a blocking thread from
/// inside its network and report back on `tx`.
fn start_probes(
    shared: &Arc<Cluster>,
    k: &NodeKubelet,
    p: &Value,
    s: &mut Slot,
    tx: &tokio::sync::mpsc::UnboundedSender<Probed>,
) {
    let Some(probes) = s.probes.as_mut() else {
        return;
    };
    let due = probes.due(Instant::now());
    if due.is_empty() {
        return;
    }
    match &s.run {
        Some(Handle::Model(m)) => {
            let serving = *m.ready.borrow();
            for spec in due {
                let outcome = if serving || spec.kind == Kind::Liveness {
                    Outcome::Success
                } else {
                    Outcome::Failure(format!(
                        "yurtsim: the model of {} does not serve yet",
                        s.c["image"].as_str().unwrap_or("")
                    ))
                };
                let _ = tx.send((s.id.clone(), spec.kind, outcome));
            }
        }
        Some(Handle::Process(r)) => {
            let pod_ip = crate::nodes::kubelet::pod_ip(k, p);
            // the sim tier's pods have no routable address: their own loopback stands in
            let real = shared.cfg.apiserver == crate::nodes::real_api::ApiServerKind::Real;
            let target = prober::Target {
                pid: r.pid(),
                pod_ip_inside: if real {
                    pod_ip.clone()
                } else {
                    "127.0.0.1".into()
                },
                pod_ip,
                container: s.c.clone(),
                user_agent: {
                    let v = crate::version::Version::kubernetes(&shared.cfg.kubernetes_version);
                    format!("kube-probe/{}.{}", v.major, v.minor)
                },
            };
            for spec in due {
                let (tx, id, target) = (tx.clone(), s.id.clone(), target.clone());
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send((id, spec.kind, prober::run(&spec, &target)));
                });
            }
        }
        _ => {}
    }
}

/// Records one probe run: its event, its verdict, and the kill a failed liveness or startup
/// verdict calls for (`computePodActions`, then `killContainer` with the probe's grace).
#[allow(clippy::too_many_arguments)]
async fn probed_once(
    shared: &Cluster,
    k: &NodeKubelet,
    p: &Value,
    s: &mut Slot,
    kind: Kind,
    outcome: &Outcome,
    grace: Duration,
    restart_policy: &str,
) {
    let Some(probes) = s.probes.as_mut() else {
        return;
    };
    if let Some((typ, reason, msg)) = outcome.event(kind) {
        pod_event(shared, p, typ, reason, &msg);
    }
    probes.record(kind, outcome);
    let Some(spec) = probes.kill() else { return };
    let mut msg = format!(
        "Container {} failed {} probe",
        s.name,
        spec.kind.title().to_lowercase()
    );
    if restart_policy != "Never" {
        msg.push_str(", will be restarted");
    }
    let grace = spec.termination_grace.unwrap_or(grace);
    pod_event(shared, p, "Normal", "Killing", &msg);
    let code = match s.run.as_mut() {
        Some(Handle::Process(r)) => r.stop(grace).await.map(|x| x.exit_code).unwrap_or(137),
        Some(Handle::Model(m)) => {
            m.exit.abort();
            137
        }
        _ => 137,
    };
    exited(shared, k, p, s, Some(code), restart_policy).await;
}
