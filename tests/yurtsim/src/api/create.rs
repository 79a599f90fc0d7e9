//! Create: service-account admission of pods, the create verb, and what follows a create.

use serde_json::{Value, json};

use crate::api::error::{ApiError, ApiResult};
use crate::api::registry::ResourceInfo;
use crate::api::store::WriteOp;
use crate::util;

use super::*;

impl Api {
    /// Service-account admission: pods run as an existing SA and get its token unless opted out.
    /// Mirror pods are left as the kubelet sent them and are only validated
    /// (kubernetes/kubernetes plugin/pkg/admission/serviceaccount/admission.go, Admit: "Don't
    /// modify the spec of mirror pods"; Validate: no ServiceAccount, no Secret, no
    /// ServiceAccountToken projection).
    fn admit_pod(&self, ns: &str, pod: &mut Value) -> ApiResult<()> {
        if pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
            return mirror_pod_refusal(pod).map_or(Ok(()), |why| {
                Err(ApiError::forbidden(format!(
                    "pods \"{}\" is forbidden: {why}",
                    meta_str(pod, "name").unwrap_or("")
                )))
            });
        }
        let sa_name = pod["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let sa = self.get_opt("", "serviceaccounts", ns, &sa_name).ok_or_else(|| {
            ApiError::forbidden(format!(
                "pods \"{}\" is forbidden: error looking up service account {ns}/{sa_name}: serviceaccount \"{sa_name}\" not found",
                meta_str(pod, "name").or(meta_str(pod, "generateName")).unwrap_or("")
            ))
        })?;
        pod["spec"]["serviceAccountName"] = json!(sa_name);
        pod["spec"]["serviceAccount"] = json!(sa_name);
        let automount = pod["spec"]["automountServiceAccountToken"]
            .as_bool()
            .or(sa["automountServiceAccountToken"].as_bool())
            .unwrap_or(true);
        if automount {
            let vol = format!("kube-api-access-{}", util::random_suffix(5));
            let vols = pod["spec"]["volumes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut vols = vols;
            vols.push(json!({"name": vol, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}));
            pod["spec"]["volumes"] = json!(vols);
            for f in ["containers", "initContainers"] {
                if let Some(cs) = pod["spec"].get_mut(f).and_then(Value::as_array_mut) {
                    for c in cs {
                        let mut mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
                        mounts.push(json!({"name": vol, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}));
                        c["volumeMounts"] = json!(mounts);
                    }
                }
            }
        }
        Ok(())
    }

    pub fn create(
        &self,
        res: &ResourceInfo,
        ns: &str,
        body: Value,
        ctx: &Ctx,
    ) -> ApiResult<Outcome> {
        self.create_owned(res, ns, body, ctx, false)
    }

    /// A create; `applied`: the body carries the managedFields of a server-side apply that
    /// creates the object (patch.go: the field manager's Apply, then admission).
    pub(super) fn create_owned(
        &self,
        res: &ResourceInfo,
        ns: &str,
        mut body: Value,
        ctx: &Ctx,
        applied: bool,
    ) -> ApiResult<Outcome> {
        if res.resource == "selfsubjectaccessreviews" || res.resource == "selfsubjectrulesreviews" {
            return Err(ApiError::internal(
                "reviews are answered by the server layer",
            ));
        }
        self.check_type_meta(res, &mut body)?;
        let body_ns = meta_str(&body, "namespace").unwrap_or("").to_string();
        if res.namespaced {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            body["metadata"]["namespace"] = json!(ns);
        } else if let Some(m) = body["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        let mut name = meta_str(&body, "name").unwrap_or("").to_string();
        if name.is_empty() {
            match meta_str(&body, "generateName") {
                Some(g) if !g.is_empty() => {
                    name = format!("{g}{}", util::random_suffix(5));
                    body["metadata"]["name"] = json!(name);
                }
                _ => {
                    return Err(ApiError::invalid(
                        res,
                        "",
                        &[(
                            "metadata.name".into(),
                            "Required value: name or generateName is required".into(),
                        )],
                    ));
                }
            }
        }
        self.check_namespace(res, ns)?;
        let m = body["metadata"].as_object_mut().unwrap();
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            m.remove(f);
        }
        if !applied {
            m.remove("managedFields");
        }
        m.insert("uid".into(), json!(util::new_uid()));
        m.insert("creationTimestamp".into(), json!(util::now()));
        if kinds::tracks_generation(res) {
            m.insert("generation".into(), json!(1));
        }
        if res.has_status()
            && res.resource != "nodes"
            && let Some(o) = body.as_object_mut()
        {
            o.remove("status");
        }
        kinds::default_on_create(res, &mut body);
        // managedFields are computed before mutating admission, so what admission adds is
        // nobody's (kubernetes/kubernetes@v1.37.2 staging/src/k8s.io/apiserver/pkg/endpoints/
        // handlers/create.go: FieldManager.UpdateNoErrors, then mutatingAdmission.Admit; the
        // same at v1.34.4)
        let schema = schema_for(res);
        if !applied {
            body = record_write(None, body, &ctx.manager, None, schema.as_ref());
        }
        if res.group == "certificates.k8s.io" && res.resource == "certificatesigningrequests" {
            // the requester's identity, whatever the client sent (kubernetes/kubernetes@v1.33.0
            // pkg/registry/certificates/certificates/strategy.go PrepareForCreate); the sim's
            // identities carry no UID or extra, so those stay empty
            let spec = &mut body["spec"];
            if let Some(m) = spec.as_object_mut() {
                m.remove("uid");
                m.remove("extra");
                m.remove("username");
                m.remove("groups");
            }
            if !ctx.user.is_empty() {
                spec["username"] = json!(ctx.user);
            }
            if !ctx.groups.is_empty() {
                spec["groups"] = json!(ctx.groups);
            }
        }
        if res.resource == "pods" && res.group.is_empty() {
            self.admit_pod(ns, &mut body)?;
        }
        // mutating admission, object validation, validating admission (kube-apiserver's order)
        fn review<'a>(user: &'a str, body: &'a Value) -> crate::api::admission::Review<'a> {
            crate::api::admission::Review {
                operation: "CREATE",
                user,
                old: None,
                new: Some(body),
            }
        }
        for (ptr, v) in crate::api::admission::admit(
            self,
            res,
            "CREATE",
            None,
            ns,
            &review(&ctx.user, &body),
            true,
        )? {
            crate::api::admission::apply_patch(&mut body, &ptr, &v);
        }
        let mut causes = kinds::validate(res, &body, None);
        if res.group == "apiextensions.k8s.io" && res.resource == "customresourcedefinitions" {
            crate::api::crd::validate_stored_versions(&body, &mut causes);
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(res, &name, &causes));
        }
        crate::api::admission::admit(
            self,
            res,
            "CREATE",
            None,
            ns,
            &review(&ctx.user, &body),
            false,
        )?;
        // stored in the CRD's storage version (a dry run encodes nothing)
        let body = match self.conversion(res) {
            Some(c) if !ctx.dry_run => c.convert(&body, &c.storage)?,
            _ => body,
        };
        let stored = self
            .store
            .write(
                &res.key(),
                if res.namespaced { ns } else { "" },
                &name,
                ctx.dry_run,
                |cur| {
                    if cur.is_some() {
                        return Err(ApiError::already_exists(res, &name));
                    }
                    Ok(WriteOp::Put(body))
                },
            )?
            .expect("put returns the object");
        if !ctx.dry_run {
            self.after_create(res, &stored);
        }
        Ok(Outcome {
            body: (*stored).clone(),
            code: 201,
            warnings: vec![],
        })
    }

    fn after_create(&self, res: &ResourceInfo, obj: &Value) {
        match (res.group.as_str(), res.resource.as_str()) {
            ("", "namespaces") => {
                // What the serviceaccount and root-CA publisher controllers do for every namespace.
                let ns = meta_str(obj, "name").unwrap_or_default();
                let ctx = Ctx::system("kube-controller-manager");
                let _ = self.create(
                    &self.info("", "serviceaccounts"),
                    ns,
                    json!({"metadata": {"name": "default"}}),
                    &ctx,
                );
                let _ = self.create(
                    &self.info("", "configmaps"),
                    ns,
                    json!({"metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                        "data": {"ca.crt": crate::pki::cluster_ca_pem()}}),
                    &ctx,
                );
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                self.registry.register_crd(obj);
            }
            _ => {}
        }
    }
}
