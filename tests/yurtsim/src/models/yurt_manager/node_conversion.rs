//! yurt-node-conversion-controller (new at v1.7.0): turns the NodePool label on a Node into a
//! node-servant convert Job, and its removal into a revert Job, cordoning the node meanwhile
//! and reporting progress in the node condition `YurtNodeConversionFailed`.
//!
//! Facts (behaviour `yurtnodeconversion` in facts/yurt-manager-controllers-v1.7.0.yaml), read at
//! openyurtio/openyurt@v1.7.0: pkg/yurtmanager/controller/yurtnodeconversion/
//! yurt_node_conversion_controller.go (Reconcile and helpers), pkg/node-servant/constant.go
//! (ServantJobTemplate, names, limits), pkg/node-servant/job.go (RenderNodeServantJob).
//! Reads go through the manager's cache (the base identity lists and watches Nodes, Jobs and
//! v1beta2 NodePools); writes are made as the controller's own ServiceAccount.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

pub(super) const NODE_CONVERSION: &str = "yurt-node-conversion-controller";
const CONDITION: &str = "YurtNodeConversionFailed";
const JOB_PREFIX: &str = "node-servant-conversion";
const NODE_LABEL: &str = "openyurt.io/conversion-node";
const POOL_LABEL: &str = "apps.openyurt.io/nodepool";
const EDGE_LABEL: &str = "openyurt.io/is-edge-worker";
const FILE: &str = "yurt_node_conversion_controller.go:0";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    None,
    Convert,
    Revert,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Convert => "convert",
            Action::Revert => "revert",
            Action::None => "",
        }
    }
    fn in_progress(self) -> &'static str {
        if self == Action::Convert {
            "Converting"
        } else {
            "Reverting"
        }
    }
    fn succeeded(self) -> &'static str {
        if self == Action::Convert {
            "Converted"
        } else {
            "Reverted"
        }
    }
    fn failed(self) -> &'static str {
        if self == Action::Convert {
            "ConvertFailed"
        } else {
            "RevertFailed"
        }
    }
    fn of_reason(reason: &str) -> Action {
        match reason {
            "Converting" | "Converted" | "ConvertFailed" => Action::Convert,
            "Reverting" | "Reverted" | "RevertFailed" => Action::Revert,
            _ => Action::None,
        }
    }
}

/// The controller's work queue, fed by the event filters upstream registers: a Node is queued
/// when it appears with the pool or edge label, or when the pool label appears/disappears or
/// the edge label flips; a labelled Job is queued (as its node) on any change or deletion.
#[derive(Default)]
pub(super) struct Conversion {
    nodes: BTreeMap<String, (bool, bool)>,
    jobs: BTreeMap<String, (String, String)>,
    queue: BTreeSet<String>,
}

fn labels(o: &Value) -> &Value {
    &o["metadata"]["labels"]
}

fn pool_and_edge(node: &Value) -> (bool, bool) {
    let l = labels(node);
    (
        l[POOL_LABEL].as_str().is_some_and(|p| !p.is_empty()),
        l[EDGE_LABEL] == json!("true"),
    )
}

fn desired(node: &Value) -> (Action, String) {
    let pool = labels(node)[POOL_LABEL].as_str().unwrap_or("").to_string();
    let edge = labels(node)[EDGE_LABEL] == json!("true");
    match (pool.is_empty(), edge) {
        (false, false) => (Action::Convert, pool),
        (true, true) => (Action::Revert, pool),
        _ => (Action::None, pool),
    }
}

fn condition(node: &Value) -> Option<&Value> {
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == json!(CONDITION))
}

fn job_done(job: &Value, kind: &str) -> bool {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == json!(kind) && c["status"] == json!("True"))
}

fn succeeded(job: &Value) -> bool {
    job_done(job, "Complete") || job["status"]["succeeded"].as_i64().unwrap_or(0) > 0
}

fn failed(job: &Value) -> bool {
    job_done(job, "Failed")
}

/// The direction a Job was made for, from its command (jobAction).
fn job_action(job: &Value) -> Result<Action, String> {
    let name = job["metadata"]["name"].as_str().unwrap_or("unknown");
    let Some(arg) = job["spec"]["template"]["spec"]["containers"][0]["args"][0].as_str() else {
        return Err(format!("conversion job {name} has empty command args"));
    };
    let cmd = arg.trim();
    if cmd.starts_with("/usr/local/bin/entry.sh convert") {
        Ok(Action::Convert)
    } else if cmd.starts_with("/usr/local/bin/entry.sh revert") {
        Ok(Action::Revert)
    } else {
        Err(format!(
            "conversion job {name} has unsupported command {cmd:?}"
        ))
    }
}

/// The Job ServantJobTemplate renders for one round (pkg/node-servant/constant.go, job.go).
fn render_job(ns: &str, node: &str, pool: &str, action: Action, image: &str) -> Value {
    let command = match action {
        Action::Convert => format!("convert --node-name={node} --nodepool-name={pool}"),
        _ => format!("revert --node-name={node}"),
    };
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("{JOB_PREFIX}-{node}"), "namespace": ns, "labels": {NODE_LABEL: node}},
        "spec": {"backoffLimit": 3, "ttlSecondsAfterFinished": 7200,
            "template": {"metadata": {"labels": {NODE_LABEL: node}},
                "spec": {"hostPID": true, "hostNetwork": true, "restartPolicy": "Never", "nodeName": node,
                    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists", "effect": "NoExecute"}],
                    "volumes": [{"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}}],
                    "containers": [{"name": "node-servant", "image": image, "imagePullPolicy": "IfNotPresent",
                        "command": ["/bin/sh", "-c"],
                        "args": [format!("/usr/local/bin/entry.sh {command}")],
                        "securityContext": {"privileged": true},
                        "volumeMounts": [{"mountPath": "/openyurt", "name": "host-root"}],
                        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}}}})
}

fn say(msg: &str) -> String {
    format!("{NODE_CONVERSION}: {msg}")
}

impl YurtManager<'_> {
    /// One pass: queue what the event filters would, then reconcile the queue. A reconcile
    /// that fails stays queued (upstream requeues it with back-off) and is logged as
    /// controller-runtime logs it.
    pub(super) fn convert_nodes(&self, me: &Caller, st: &mut Conversion) {
        if let Ok(nodes) = self.base.list_watch("", "v1", "nodes", "", "") {
            let mut now = BTreeMap::new();
            for n in &nodes {
                let name = n["metadata"]["name"].as_str().unwrap_or("").to_string();
                let (pool, edge) = pool_and_edge(n);
                let queue = match st.nodes.get(&name) {
                    None => pool || edge,
                    Some(&(p, e)) => p != pool || e != edge,
                };
                if queue {
                    st.queue.insert(name.clone());
                }
                now.insert(name, (pool, edge));
            }
            st.nodes = now;
        }
        if let Ok(jobs) = self.base.list_watch("batch", "v1", "jobs", "", "") {
            let mut now = BTreeMap::new();
            for j in &jobs {
                let Some(node) = labels(j)[NODE_LABEL].as_str().filter(|n| !n.is_empty()) else {
                    continue;
                };
                let key = format!(
                    "{}/{}",
                    j["metadata"]["namespace"].as_str().unwrap_or(""),
                    j["metadata"]["name"].as_str().unwrap_or("")
                );
                let rv = j["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                if st.jobs.get(&key).is_none_or(|(r, _)| *r != rv) {
                    st.queue.insert(node.to_string());
                }
                now.insert(key, (rv, node.to_string()));
            }
            for (key, (_, node)) in &st.jobs {
                if !now.contains_key(key) {
                    st.queue.insert(node.clone());
                }
            }
            st.jobs = now;
        }
        for node in std::mem::take(&mut st.queue) {
            match self.reconcile_node(me, &node) {
                Ok(false) => {}
                Ok(true) => {
                    st.queue.insert(node);
                }
                Err(e) => {
                    self.env.log.line(&format!(
                        "{}\tERROR\t{SETUP}\tReconciler error\t{{\"controller\": \"{NODE_CONVERSION}\", \"namespace\": \"\", \"name\": \"{node}\", \"error\": {}}}",
                        util::now(),
                        Value::String(e)
                    ));
                    st.queue.insert(node);
                }
            }
        }
    }

    fn cached(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> Result<Option<Value>, String> {
        match self.base.cached_get(group, version, resource, ns, name) {
            Ok(o) => Ok(Some((*o).clone())),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e.message),
        }
    }

    /// Reconcile; Ok(true) asks for a requeue.
    fn reconcile_node(&self, me: &Caller, name: &str) -> Result<bool, String> {
        self.env
            .log
            .info(FILE, &say(&format!("reconcile node {name}")));
        let Some(node) = self.cached("", "v1", "nodes", "", name)? else {
            return Ok(false);
        };
        if node["metadata"]["deletionTimestamp"].is_string() {
            return Ok(false);
        }
        let job_name = format!("{JOB_PREFIX}-{name}");
        let job = self
            .cached("batch", "v1", "jobs", &self.ns, &job_name)
            .map_err(|e| format!("get conversion job for node {name}: {e}"))?;
        let (want, pool) = desired(&node);
        let cond = condition(&node).cloned();
        let current = match &job {
            Some(j) => job_action(j).map_err(|e| {
                format!("determine action from conversion job for node {name}: {e}")
            })?,
            None => Action::None,
        };
        if let Some(job) = job {
            return self.existing_job(me, name, &job, want, current);
        }
        // a round whose host work is done but whose finalisation was interrupted
        if let Some(c) = &cond {
            let action = Action::of_reason(c["reason"].as_str().unwrap_or(""));
            let in_progress =
                c["status"] == json!("False") && c["reason"] == json!(action.in_progress());
            let (has_pool, edge) = pool_and_edge(&node);
            let applied = match action {
                Action::Convert => has_pool && edge,
                Action::Revert => !has_pool && !edge,
                Action::None => false,
            };
            let stable = applied
                && node["spec"]["unschedulable"] != json!(true)
                && c["status"] == json!("False")
                && c["reason"] == json!(action.succeeded());
            if action != Action::None && in_progress && applied && !stable {
                self.finish(me, name, action)?;
                return Ok(false);
            }
        }
        if want == Action::None {
            return Ok(false);
        }
        self.start_round(me, name, &pool, want)
    }

    fn existing_job(
        &self,
        me: &Caller,
        node: &str,
        job: &Value,
        want: Action,
        current: Action,
    ) -> Result<bool, String> {
        let job_name = job["metadata"]["name"]
            .as_str()
            .unwrap_or("unknown")
            .to_string();
        if current != Action::None && want != Action::None && current != want {
            // a Job of the other direction: deleted once finished, else left to finish
            if succeeded(job) || failed(job) {
                match me.delete_background("batch", "jobs", &self.ns, &job_name) {
                    Err(e) if e.code != 404 => {
                        return Err(format!(
                            "delete stale conversion job {job_name} for node {node}: {}",
                            e.message
                        ));
                    }
                    _ => return Ok(true),
                }
            }
            return Ok(false);
        }
        if failed(job) {
            self.env.log.info(
                FILE,
                &say(&format!(
                    "node({node}) observed failed {} job {job_name}",
                    current.word()
                )),
            );
            self.cordon(me, node, true).map_err(|e| {
                format!(
                    "keep node {node} cordoned after failed {} job: {e}",
                    current.word()
                )
            })?;
            let message = job["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| {
                    c["type"] == json!("Failed")
                        && c["status"] == json!("True")
                        && c["message"].as_str().is_some_and(|m| !m.is_empty())
                })
                .and_then(|c| c["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| match current {
                    Action::Convert => format!("conversion Job {job_name} failed"),
                    _ => format!("revert Job {job_name} failed"),
                });
            self.set_condition(me, node, current.failed(), &message)
                .map_err(|e| format!("set failed conversion condition for node {node}: {e}"))?;
            return Ok(false);
        }
        if succeeded(job) {
            self.env.log.info(
                FILE,
                &say(&format!(
                    "node({node}) observed succeeded {} job {job_name}",
                    current.word()
                )),
            );
            self.finish(me, node, current)?;
            return Ok(false);
        }
        self.cordon(me, node, true).map_err(|e| {
            format!(
                "cordon node {node} while {} job is running: {e}",
                current.word()
            )
        })?;
        self.set_condition(
            me,
            node,
            current.in_progress(),
            &running_message(node, current),
        )
        .map_err(|e| format!("set in-progress conversion condition for node {node}: {e}"))?;
        Ok(false)
    }

    fn start_round(
        &self,
        me: &Caller,
        node: &str,
        pool: &str,
        action: Action,
    ) -> Result<bool, String> {
        if action == Action::Convert {
            let np = self
                .cached("apps.openyurt.io", "v1beta2", "nodepools", "", pool)
                .map_err(|e| format!("check nodepool type for node {node}: {e}"))?
                .ok_or_else(|| {
                    format!("check nodepool type for node {node}: nodepools.apps.openyurt.io \"{pool}\" not found")
                })?;
            if np["spec"]["type"] != json!("Edge") {
                self.env.log.info(
                    FILE,
                    &say(&format!(
                        "node({node}) skips conversion: nodepool {pool:?} is not Edge type"
                    )),
                );
                return Ok(false);
            }
        }
        self.cordon(me, node, true)
            .map_err(|e| format!("cordon node {node} before starting {}: {e}", action.word()))?;
        self.set_condition(
            me,
            node,
            action.in_progress(),
            &running_message(node, action),
        )
        .map_err(|e| {
            format!(
                "set in-progress conversion condition for node {node} before starting {}: {e}",
                action.word()
            )
        })?;
        self.env.log.info(
            FILE,
            &say(&format!("node({node}) starts {} round", action.word())),
        );
        let job = render_job(&self.ns, node, pool, action, &self.node_servant_image);
        self.env.log.info(
            FILE,
            &say(&format!(
                "create {} job {JOB_PREFIX}-{node} for node {node}",
                action.word()
            )),
        );
        match me.create("batch", "jobs", &self.ns, job) {
            Ok(_) => Ok(false),
            Err(e) if e.code == 409 => Ok(false),
            Err(e) => Err(format!(
                "create {} job for node {node}: {}",
                action.word(),
                e.message
            )),
        }
    }

    /// handleSuccessfulAction: the edge label, the succeeded condition, uncordon.
    fn finish(&self, me: &Caller, node: &str, action: Action) -> Result<(), String> {
        let cur = self
            .cached("", "v1", "nodes", "", node)?
            .ok_or_else(|| format!("nodes \"{node}\" not found"))?;
        let edge = action == Action::Convert;
        let label = &labels(&cur)[EDGE_LABEL];
        if (edge && *label != json!("true")) || (!edge && !label.is_null()) {
            let value = if edge { json!("true") } else { Value::Null };
            me.merge_patch(
                "",
                "nodes",
                "",
                node,
                json!({"metadata": {"labels": {EDGE_LABEL: value}}}),
            )
            .map_err(|e| e.message)?;
        }
        let done = condition(&cur).is_some_and(|c| {
            c["status"] == json!("False") && c["reason"] == json!(action.succeeded())
        });
        if !done {
            let message = if edge {
                "YurtHub installed and node converted successfully"
            } else {
                "YurtHub uninstalled and node reverted successfully"
            };
            self.set_condition(me, node, action.succeeded(), message)?;
        }
        self.cordon(me, node, false)
    }

    fn cordon(&self, me: &Caller, node: &str, on: bool) -> Result<(), String> {
        let cur = self
            .cached("", "v1", "nodes", "", node)?
            .ok_or_else(|| format!("nodes \"{node}\" not found"))?;
        if (cur["spec"]["unschedulable"] == json!(true)) == on {
            return Ok(());
        }
        let value = if on { json!(true) } else { Value::Null };
        me.merge_patch(
            "",
            "nodes",
            "",
            node,
            json!({"spec": {"unschedulable": value}}),
        )
        .map(|_| ())
        .map_err(|e| e.message)
    }

    /// ensureNodeConversionCondition: upsert by type, keeping lastTransitionTime while the
    /// status stays; written with an update of nodes/status.
    fn set_condition(
        &self,
        me: &Caller,
        node: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), String> {
        let cur = self
            .cached("", "v1", "nodes", "", node)?
            .ok_or_else(|| format!("nodes \"{node}\" not found"))?;
        let status = if reason.ends_with("Failed") {
            "True"
        } else {
            "False"
        };
        let now = util::now();
        let mut new = json!({"type": CONDITION, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now});
        let mut node_obj = cur.clone();
        let conds = node_obj["status"]["conditions"].as_array_mut();
        match conds.and_then(|c| c.iter_mut().find(|c| c["type"] == json!(CONDITION))) {
            Some(c) => {
                if c["status"] == new["status"]
                    && c["reason"] == new["reason"]
                    && c["message"] == new["message"]
                {
                    return Ok(());
                }
                if c["status"] == new["status"] {
                    new["lastTransitionTime"] = c["lastTransitionTime"].clone();
                }
                *c = new;
            }
            None => match node_obj["status"]["conditions"].as_array_mut() {
                Some(c) => c.push(new),
                None => node_obj["status"]["conditions"] = json!([new]),
            },
        }
        me.update("", "nodes/status", "", node, &|o| {
            o["status"] = node_obj["status"].clone();
            true
        })
        .map_err(|e| e.message)?;
        Ok(())
    }
}

fn running_message(node: &str, action: Action) -> String {
    match action {
        Action::Convert => format!("conversion Job {JOB_PREFIX}-{node} is running"),
        _ => format!("revert Job {JOB_PREFIX}-{node} is running"),
    }
}
