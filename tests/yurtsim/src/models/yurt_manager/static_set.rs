use std::sync::Arc;

use super::*;

/// What the static-pod watch has seen: every pod's resourceVersion, and the YurtStaticSet name
/// of each static one (a delete event carries the last state).
#[derive(Default)]
pub(super) struct StaticPodWatch {
    seen: BTreeMap<String, String>,
    static_pods: BTreeMap<String, (String, String)>,
}

impl YurtManager<'_> {
    /// One reconcile of every YurtStaticSet; returns the ones whose reconcile panicked, with
    /// the log line controller-runtime writes.
    pub(super) fn reconcile_static_sets(&self, me: &Caller) -> Vec<(String, String)> {
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

    /// The static-pod watch: every add, change or delete of a pod whose
    /// `kubernetes.io/config.source` is not `api` reconciles the YurtStaticSet named as the
    /// pod without its `-<node>` suffix, and a reconcile that finds no such set deletes
    /// ConfigMap `yurt-static-set-<name>` (openyurtio/openyurt@v1.7.0, same at v1.5.0 and
    /// v1.6.1: pkg/yurtmanager/controller/yurtstaticset/yurt_static_set_controller.go `add`
    /// step 4 and `Reconcile`'s NotFound branch; pkg/yurtmanager/controller/util/pod/pod_util.go
    /// `IsStaticPod`). The informer's first list is an add of every pod.
    pub(super) fn reconcile_static_pods(&self, me: &Caller, watch: &mut StaticPodWatch) {
        let Ok(pods) = self.base.list_watch("", "v1", "pods", "", "") else {
            return;
        };
        let mut now: BTreeMap<String, String> = BTreeMap::new();
        let mut touched: BTreeSet<(String, String)> = BTreeSet::new();
        let static_set_of = |pod: &Value| -> Option<(String, String)> {
            let source = pod["metadata"]["annotations"]["kubernetes.io/config.source"].as_str()?;
            if source == "api" {
                return None;
            }
            let name = pod["metadata"]["name"].as_str()?;
            let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
            let set = name.strip_suffix(&format!("-{node}")).unwrap_or(name);
            let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
            Some((ns.to_owned(), set.to_owned()))
        };
        let mut was: BTreeMap<String, (String, String)> = BTreeMap::new();
        for pod in &pods {
            let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_owned();
            let rv = pod["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if let Some(key) = static_set_of(pod) {
                if watch.seen.get(&uid) != Some(&rv) {
                    touched.insert(key.clone());
                }
                was.insert(uid.clone(), key);
            }
            now.insert(uid, rv);
        }
        // deleted since the last look: their delete events reconcile too
        for uid in watch.seen.keys().filter(|u| !now.contains_key(*u)) {
            if let Some(key) = watch.static_pods.remove(uid) {
                touched.insert(key);
            }
        }
        watch.static_pods.extend(was);
        watch.seen = now;
        for (ns, name) in touched {
            let set =
                self.base
                    .cached_get("apps.openyurt.io", "v1alpha1", "yurtstaticsets", &ns, &name);
            if !matches!(&set, Err(e) if e.code == 404) {
                continue;
            }
            let cm = format!("{CONFIGMAP_PREFIX}{name}");
            match me.delete_background("", "configmaps", &ns, &cm) {
                Ok(()) => self.env.log.info(
                    "yurt_static_set_controller.go:560",
                    &format!("Delete ConfigMap {cm} from YurtStaticSet {name}"),
                ),
                Err(e) if e.code == 404 => {}
                Err(e) => self
                    .env
                    .log
                    .error("yurt_static_set_controller.go:0", &e.message),
            }
        }
    }

    /// ConfigMap `yurt-static-set-<name>` follows the template: created when missing, rewritten
    /// when its hash annotation differs. A ConfigMap without annotations makes the real
    /// controller panic ("assignment to entry in nil map"), every time.
    pub(super) fn sync_config_map(
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

    /// The rest of one reconcile after the ConfigMap sync (openyurtio/openyurt@v1.6.1, same at
    /// v1.7.0: pkg/yurtmanager/controller/yurtstaticset/yurt_static_set_controller.go
    /// Reconcile; facts yurtstaticset-nodes-and-status, -advanced-rolling-update, -ota):
    /// per-node info from the pods, finished or stale workers deleted, then by strategy type
    /// AdvancedRollingUpdate worker pods (at most maxUnavailable, one round at a time) or OTA
    /// PodNeedUpgrade conditions, and the status.
    pub(super) fn update_status(&self, me: &Caller, yss: &Value, ns: &str, name: &str) {
        let hash = template_hash(&yss["spec"]["template"]);
        let infos = match self.upgrade_infos(yss, ns, name, &hash) {
            Ok(i) => i,
            Err(e) => {
                self.env.log.error(
                    "yurt_static_set_controller.go:0",
                    &format!("{YURT_STATIC_SET}: could not get static pod and worker pod upgrade info for nodes of YurtStaticSet {ns}/{name}, {e}"),
                );
                return;
            }
        };
        let total = infos.len() as i64;
        if total == 0 {
            self.env.log.info(
                "yurt_static_set_controller.go:0",
                &format!("{YURT_STATIC_SET}: No static pods need to be upgraded of YurtStaticSet {ns}/{name}"),
            );
            self.write_status(me, yss, ns, name, (0, 0, 0));
            return;
        }
        // upgradeinfo.CalculateOperateInfoFromUpgradeInfoMap
        let mut upgraded = 0;
        let mut ready = 0;
        let mut all_succeeded = true;
        for info in infos.values() {
            if info.static_pod.is_some() {
                ready += i64::from(info.static_ready);
                upgraded += i64::from(!info.upgrade_needed);
            }
            if let Some(w) = &info.worker {
                let phase = w["status"]["phase"].as_str().unwrap_or("");
                if phase != "Failed" && phase != "Succeeded" {
                    all_succeeded = false;
                }
            }
        }
        // removeUnusedPods: the first failed delete ends the reconcile
        for info in infos.values().filter(|i| i.worker_delete) {
            let Some(w) = &info.worker else { continue };
            let wname = w["metadata"]["name"].as_str().unwrap_or("");
            if let Err(e) = me.delete_background("", "pods", ns, wname) {
                self.env.log.error(
                    "yurt_static_set_controller.go:0",
                    &format!("{YURT_STATIC_SET}: could not remove unused pods of YurtStaticSet {ns}/{name}, {}", e.message),
                );
                return;
            }
            self.env.log.info(
                "yurt_static_set_controller.go:0",
                &format!("{YURT_STATIC_SET}: Delete upgrade worker pod {wname}"),
            );
        }
        let counts = (total, ready, upgraded);
        if total == upgraded {
            self.env.log.info(
                "yurt_static_set_controller.go:0",
                &format!("{YURT_STATIC_SET}: All static pods have been upgraded of YurtStaticSet {ns}/{name}"),
            );
            self.write_status(me, yss, ns, name, counts);
            return;
        }
        let strategy = &yss["spec"]["upgradeStrategy"];
        match strategy["type"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .as_str()
        {
            "advancedrollingupdate" => {
                // while a worker of the last round runs, only the status is written
                if all_succeeded
                    && let Err(e) = self.advanced_rolling_update(me, yss, ns, name, &infos, &hash)
                {
                    self.env.log.error(
                        "yurt_static_set_controller.go:0",
                        &format!("{YURT_STATIC_SET}: could not AdvancedRollingUpdate upgrade of YurtStaticSet {ns}/{name}, {e}"),
                    );
                    return;
                }
                self.write_status(me, yss, ns, name, counts);
            }
            "ota" => {
                for info in infos.values() {
                    let Some(pod) = &info.static_pod else {
                        continue;
                    };
                    let status = if info.upgrade_needed { "True" } else { "False" };
                    if let Err(e) = set_pod_upgrade_condition(me, pod, status) {
                        self.env.log.error(
                            "yurt_static_set_controller.go:0",
                            &format!("{YURT_STATIC_SET}: could not OTA upgrade of YurtStaticSet {ns}/{name}, {e}"),
                        );
                        return;
                    }
                }
                self.write_status(me, yss, ns, name, counts);
            }
            // any other type: the reconcile ends without a status write
            _ => {}
        }
    }

    /// upgradeinfo.New: every pod of the namespace (from the cache) that is the node's mirror
    /// pod `<name>-<node>` or whose name contains `yss-upgrade-worker-<name>` (a substring,
    /// so a set named `yurt-hub` also claims `yurt-hub-cloud`'s workers). A Failed worker is an
    /// error that stops the reconcile before any write.
    fn upgrade_infos(
        &self,
        yss: &Value,
        ns: &str,
        name: &str,
        hash: &str,
    ) -> Result<BTreeMap<String, UpgradeInfo>, String> {
        let pods = self
            .base
            .list_watch("", "v1", "pods", ns, "")
            .map_err(|e| e.message)?;
        let mut infos: BTreeMap<String, UpgradeInfo> = BTreeMap::new();
        let worker_prefix = format!("{WORKER_PREFIX}{name}");
        for p in pods {
            let node = p["spec"]["nodeName"].as_str().unwrap_or("");
            if node.is_empty() || p["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            let pname = p["metadata"]["name"].as_str().unwrap_or("");
            let source = p["metadata"]["annotations"]["kubernetes.io/config.source"].as_str();
            if pname == format!("{name}-{node}") && source.is_some_and(|s| s != "api") {
                let info = infos.entry(node.to_string()).or_default();
                info.upgrade_needed = match p["metadata"]["annotations"][STATIC_POD_HASH].as_str() {
                    Some(h) => h != hash,
                    None => !template_matches(&yss["spec"]["template"], &p),
                };
                info.static_ready = p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"));
                // util.NodeReadyByName: a cache Get of the node; its error ends the reconcile
                let n = self
                    .base
                    .cached_get("", "v1", "nodes", "", node)
                    .map_err(|e| e.message)?;
                info.node_ready = n["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == json!("Ready") && c["status"] == json!("True"));
                info.static_pod = Some(p.clone());
            }
            if pname.contains(&worker_prefix) {
                let info = infos.entry(node.to_string()).or_default();
                match p["status"]["phase"].as_str().unwrap_or("") {
                    "Failed" => {
                        return Err(format!(
                            "fail to init worker pod info, cause worker pod {pname} failed"
                        ));
                    }
                    "Succeeded" => info.worker_delete = true,
                    _ => info.worker_running = true,
                }
                if p["metadata"]["annotations"][STATIC_POD_HASH].as_str() != Some(hash) {
                    info.worker_delete = true;
                }
                info.worker = Some(p.clone());
            }
        }
        Ok(infos)
    }

    /// advancedRollingUpdate: nodes that need the upgrade, have no running worker and are
    /// Ready, in Go's random map order, the first maxUnavailable of them (scaled against every
    /// node in the info map, percentages rounded up) get a worker pod.
    fn advanced_rolling_update(
        &self,
        me: &Caller,
        yss: &Value,
        ns: &str,
        name: &str,
        infos: &BTreeMap<String, UpgradeInfo>,
        hash: &str,
    ) -> Result<(), String> {
        use rand::seq::SliceRandom;
        let mut waiting: Vec<&String> = infos
            .iter()
            .filter(|(_, i)| i.upgrade_needed && !i.worker_running && i.node_ready)
            .map(|(n, _)| n)
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        waiting.shuffle(&mut rand::rng());
        let max = unavailable_count(
            &yss["spec"]["upgradeStrategy"]["maxUnavailable"],
            infos.len(),
        )?;
        waiting.truncate(max);
        for node in waiting {
            let pod = upgrade_worker(yss, ns, name, node, hash, &self.node_servant_image);
            let wname = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
            me.create("", "pods", ns, pod).map_err(|e| e.message)?;
            self.env.log.info(
                "yurt_static_set_controller.go:0",
                &format!("{YURT_STATIC_SET}: Create static pod upgrade worker {wname} of YurtStaticSet {name}"),
            );
        }
        Ok(())
    }

    /// updateYurtStaticSetStatus: PUT of the status subresource with the three numbers.
    fn write_status(
        &self,
        me: &Caller,
        yss: &Value,
        ns: &str,
        name: &str,
        (total, ready, upgraded): (i64, i64, i64),
    ) {
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

/// What upgradeinfo keeps per node.
#[derive(Default)]
struct UpgradeInfo {
    static_pod: Option<Arc<Value>>,
    worker: Option<Arc<Value>>,
    static_ready: bool,
    upgrade_needed: bool,
    worker_running: bool,
    worker_delete: bool,
    node_ready: bool,
}

/// The worker pods' name prefix (UpgradeWorkerPodPrefix).
const WORKER_PREFIX: &str = "yss-upgrade-worker-";

/// util.UnavailableCount → intstr.GetScaledValueFromIntOrPercent(maxUnavailable, total,
/// roundUp): an integer as is, "N%" of the total rounded up, anything else an error.
fn unavailable_count(max: &Value, total: usize) -> Result<usize, String> {
    match max {
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0).max(0) as usize),
        Value::String(s) => {
            let pct = s
                .strip_suffix('%')
                .ok_or_else(|| "invalid type: string is not a percentage".to_string())?;
            let v: i64 = pct
                .parse()
                .map_err(|e| format!("invalid value for IntOrString: {e}"))?;
            Ok(((v as f64) * (total as f64) / 100.0).ceil().max(0.0) as usize)
        }
        _ => Err("nil value for IntOrString".into()),
    }
}

/// The upgrade worker pod (upgradeWorker, ArgTmpl, createUpgradeWorker): no labels, the hash
/// annotation, a controller reference to the set, privileged node-servant on the node's host
/// network and PID namespace with the manifests directory and the set's ConfigMap mounted.
pub fn upgrade_worker(
    yss: &Value,
    ns: &str,
    name: &str,
    node: &str,
    hash: &str,
    image: &str,
) -> Value {
    let manifest = yss["spec"]["staticPodManifest"].as_str().unwrap_or("");
    let args = format!(
        "/usr/local/bin/node-servant static-pod-upgrade --name={name}-{node} --namespace={ns} --manifest={manifest} --hash={hash} --mode=AdvancedRollingUpdate"
    );
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{WORKER_PREFIX}{name}-{node}-{hash}"), "namespace": ns,
            "annotations": {STATIC_POD_HASH: hash},
            "ownerReferences": [{"apiVersion": yss["apiVersion"], "kind": "YurtStaticSet", "name": name,
                "uid": yss["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": node, "hostPID": true, "hostNetwork": true, "restartPolicy": "Never",
            "containers": [{"name": "upgrade-worker", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c"], "args": [args],
                "volumeMounts": [{"name": "hostpath", "mountPath": "/etc/kubernetes/manifests/"},
                    {"name": "configmap", "mountPath": "/data"}],
                "securityContext": {"privileged": true}}],
            "volumes": [{"name": "hostpath", "hostPath": {"path": "/etc/kubernetes/manifests/"}},
                {"name": "configmap", "configMap": {"name": format!("{CONFIGMAP_PREFIX}{name}")}}]}})
}

/// util.SetPodUpgradeCondition with podutil.UpdatePodCondition: condition PodNeedUpgrade
/// (no reason or message; lastTransitionTime kept while the status is unchanged), written
/// with a status update only when it changed.
fn set_pod_upgrade_condition(me: &Caller, pod: &Value, status: &str) -> Result<(), String> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let f = |o: &mut Value| {
        let conds = o["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut cond = json!({"type": "PodNeedUpgrade", "status": status, "lastProbeTime": null,
            "lastTransitionTime": util::now()});
        match conds
            .iter()
            .position(|c| c["type"] == json!("PodNeedUpgrade"))
        {
            None => {
                o["status"]["conditions"] = json!([conds, vec![cond]].concat());
                true
            }
            Some(i) => {
                let old = &conds[i];
                if old["status"] == json!(status) {
                    cond["lastTransitionTime"] = old["lastTransitionTime"].clone();
                }
                let same = old["status"] == cond["status"]
                    && old["reason"].as_str().unwrap_or("").is_empty()
                    && old["message"].as_str().unwrap_or("").is_empty()
                    && old["lastProbeTime"].is_null()
                    && old["lastTransitionTime"] == cond["lastTransitionTime"];
                if same {
                    return false;
                }
                o["status"]["conditions"][i] = cond;
                true
            }
        }
    };
    me.update("", "pods/status", ns, name, &f)
        .map(|_| ())
        .map_err(|e| e.message)
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
