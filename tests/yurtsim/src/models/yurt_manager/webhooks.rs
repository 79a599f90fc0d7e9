use super::*;

impl YurtManager<'_> {
    /// The admission paths this process registers: the independent webhooks not disabled, and
    /// those of the enabled controllers.
    pub(super) fn admission_paths(&self, parsed: &facts::Parsed) -> BTreeSet<String> {
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
    pub(super) async fn prepare_webhooks(
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

    pub(super) fn sync_webhooks(&self, paths: &BTreeSet<String>) -> Result<(), String> {
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
}
