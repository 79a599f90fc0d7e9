use super::*;

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

    /// TOTAL / READY / UPGRADED, counted from the static pods `<name>-<node>` in the namespace
    /// (facts: yurtstaticset-nodes-and-status).
    pub(super) fn update_status(&self, me: &Caller, yss: &Value, ns: &str, name: &str) {
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
