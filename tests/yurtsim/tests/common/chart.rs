//! The objects upstream's yurt-manager Helm chart renders with default values, built from
//! the facts files (`facts/yurt-manager-V.yaml`: crds, webhooks, chartDeployment;
//! `facts/yurt-manager-controllers-V.yaml`: chartRbac), with the release namespace filled in.
//! Tests install this to hold a model to what a real chart install gives it.

use serde_json::{Value, json};

/// The doc of the facts file of `component@version` that has `key`.
pub fn facts_with(component: &str, version: &str, key: &str) -> &'static Value {
    yurtsim::facts::all()
        .iter()
        .filter(|f| f.component == component && f.version == version)
        .map(|f| &f.doc)
        .find(|d| !d[key].is_null())
        .unwrap_or_else(|| panic!("no {component} {version} facts with {key}"))
}

fn fill(v: &Value, ns: &str) -> Value {
    let text = v
        .to_string()
        .replace("{{ .Release.Namespace }}", ns)
        .replace("RELEASE_NS", ns)
        .replace("<release-namespace>", ns)
        .replace("<release name>", "yurt-manager");
    serde_json::from_str(&text).unwrap()
}

fn rules(r: &Value) -> Value {
    Value::Array(
        r.as_array()
            .into_iter()
            .flatten()
            .map(|rule| {
                let mut o = serde_json::Map::new();
                for k in ["apiGroups", "resources", "resourceNames", "verbs"] {
                    if !rule[k].is_null() {
                        o.insert(k.into(), rule[k].clone());
                    }
                }
                Value::Object(o)
            })
            .collect(),
    )
}

fn subjects(s: &Value) -> Value {
    Value::Array(
        s.as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let mut s = s.clone();
                if s["kind"] == "Group" {
                    s["apiGroup"] = json!("rbac.authorization.k8s.io");
                }
                s
            })
            .collect(),
    )
}

/// CRDs, RBAC, ServiceAccounts, the webhook Secret, Service and configurations: everything
/// but the Deployment, in the order Helm installs them.
pub fn yurt_manager_objects(version: &str, ns: &str) -> Vec<Value> {
    let start = facts_with("yurt-manager", version, "crds");
    let ctl = facts_with("yurt-manager", version, "chartRbac");
    let mut out = Vec::new();
    for crd in start["crds"].as_array().unwrap() {
        let versions: Vec<Value> = crd["versions"].as_array().unwrap().iter().map(|v| {
            json!({"name": v["name"], "served": v["served"], "storage": v["storage"],
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        }).collect();
        let kind = crd["kind"].as_str().unwrap();
        // as the chart's crds/ ship it (not templated: the Service's namespace is literal)
        let c = &crd["conversion"];
        let conversion = match c["strategy"].as_str() {
            Some("Webhook") => {
                let (svc_ns, svc) = c["service"].as_str().unwrap().split_once('/').unwrap();
                json!({"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": c["conversionReviewVersions"],
                    "clientConfig": {"service": {"namespace": svc_ns, "name": svc, "path": c["path"]}}}})
            }
            _ => json!({"strategy": "None"}),
        };
        out.push(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd["name"]},
            "spec": {"group": crd["group"], "scope": crd["scope"],
                "names": {"plural": crd["plural"], "singular": kind.to_lowercase(), "kind": kind,
                    "listKind": format!("{kind}List"), "shortNames": crd["shortNames"]},
                "conversion": conversion,
                "versions": versions}}),
        );
    }
    let rbac = fill(&ctl["chartRbac"], ns);
    for sa in rbac["serviceAccounts"].as_array().unwrap() {
        out.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa["name"], "namespace": sa["namespace"]}}));
    }
    for s in rbac["secrets"].as_array().unwrap() {
        out.push(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": s["name"], "namespace": s["namespace"]}}));
    }
    for r in rbac["roles"].as_array().unwrap() {
        out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": r["name"], "namespace": r["namespace"]}, "rules": rules(&r["rules"])}));
    }
    for r in rbac["clusterRoles"].as_array().unwrap() {
        out.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": r["name"]}, "rules": rules(&r["rules"])}),
        );
    }
    let role_ref = |r: &Value| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": r["kind"], "name": r["name"]});
    for b in rbac["roleBindings"].as_array().unwrap() {
        out.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": b["name"], "namespace": b["namespace"]},
            "roleRef": role_ref(&b["roleRef"]), "subjects": subjects(&b["subjects"])}),
        );
    }
    for b in rbac["clusterRoleBindings"].as_array().unwrap() {
        out.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": b["name"]},
            "roleRef": role_ref(&b["roleRef"]), "subjects": subjects(&b["subjects"])}),
        );
    }
    let dep = &start["chartDeployment"]["deployment"];
    out.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "yurt-manager-webhook-service", "namespace": ns},
        "spec": {"selector": fill(&dep["selectorLabels"], ns),
            "ports": [{"name": "https", "port": 443, "targetPort": 10273, "protocol": "TCP"},
                {"name": "metrics", "port": 10271, "targetPort": 10271, "protocol": "TCP"}]}}));
    for cfg in start["webhooks"].as_array().unwrap() {
        let cfg = fill(cfg, ns);
        let (kind, name) = cfg["configuration"]
            .as_str()
            .unwrap()
            .split_once('/')
            .unwrap();
        let hooks: Vec<Value> = cfg["webhooks"].as_array().unwrap().iter().map(|w| {
            let (svc_ns, svc) = w["service"].as_str().unwrap().split_once('/').unwrap();
            json!({"name": w["name"], "admissionReviewVersions": w["admissionReviewVersions"],
                "sideEffects": w["sideEffects"], "failurePolicy": w["failurePolicy"], "rules": w["rules"],
                "clientConfig": {"service": {"name": svc, "namespace": svc_ns, "path": w["path"]}}})
        }).collect();
        out.push(
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks}),
        );
    }
    out
}

/// The chart's Deployment, its args as rendered (with `extra_args` appended as values.extraArgs
/// would, and `replace` swapping an arg by its flag name).
pub fn yurt_manager_deployment(version: &str, ns: &str, replace: &[&str]) -> Value {
    let start = facts_with("yurt-manager", version, "chartDeployment");
    let dep = fill(&start["chartDeployment"]["deployment"], ns);
    let c = &dep["container"];
    let mut args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    for r in replace {
        let flag = r.split('=').next().unwrap();
        match args.iter().position(|a| a.split('=').next() == Some(flag)) {
            Some(i) => args[i] = r.to_string(),
            None => args.push(r.to_string()),
        }
    }
    let labels = dep["selectorLabels"].clone();
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": dep["name"], "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                "spec": {"serviceAccountName": dep["serviceAccountName"], "tolerations": dep["tolerations"],
                    "affinity": dep["affinity"],
                    "containers": [{"name": c["name"], "image": c["image"], "command": c["command"], "args": args,
                        "ports": c["ports"]}]}}}})
}

/// The v1.7.0 chart installed with default values (`edit` applied to the objects first and
/// `args` replacing the Deployment's arguments of the same flags), then its pod Ready.
pub async fn install_v17(c: &super::TestCluster, edit: impl Fn(&mut Vec<Value>), args: &[&str]) {
    let mut objects = yurt_manager_objects("v1.7.0", "kube-system");
    edit(&mut objects);
    objects.push(yurt_manager_deployment("v1.7.0", "kube-system", args));
    super::apply(&c.client, &objects).await;
}

/// The chart's yurt-manager pod once it is Ready.
pub async fn manager_ready(client: &kube::Client) -> k8s_openapi::api::core::v1::Pod {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    super::eventually(
        std::time::Duration::from_secs(30),
        "yurt-manager Ready",
        || {
            let pods = pods.clone();
            async move {
                let l = pods
                    .list(&ListParams::default().labels("app.kubernetes.io/name=yurt-manager"))
                    .await
                    .ok()?;
                l.items.into_iter().find(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                })
            }
        },
    )
    .await
}

/// The log of the chart's yurt-manager pod.
pub async fn manager_log(client: &kube::Client) -> String {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams, LogParams};
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let l = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=yurt-manager"))
        .await
        .unwrap();
    let name = l.items[0].metadata.name.clone().unwrap();
    pods.logs(&name, &LogParams::default()).await.unwrap()
}
