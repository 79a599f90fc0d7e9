//! Service environment variables the kubelet gives a container when it creates it, from the
//! Services as the kubelet sees them — directly from the API server, or through YurtHub, whose
//! filters rewrite what the kubelet receives.

use serde_json::Value;

/// What YurtHub's response filters do to the kubelet's view (set by the running hub).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubFilters {
    /// The address both filters write: host and YurtHub's HTTPS proxy port.
    pub rewrite: (String, i64),
    /// masterservice: `default/kubernetes` gets `rewrite` as ClusterIP and `https` port
    /// (openyurtio/openyurt@v1.7.0 pkg/yurthub/filter/masterservice/filter.go; same
    /// rewrite at v1.6.1).
    pub master: bool,
    /// serviceenvupdater: explicit `KUBERNETES_SERVICE_HOST`/`_PORT` env entries of a pod's
    /// (non-init) containers get the same host/port (pkg/yurthub/filter/serviceenvupdater,
    /// v1.6.1 and v1.7.0; disabled in cloud mode, cmd/yurthub/app/options/filters.go).
    pub env_updater: bool,
}

impl HubFilters {
    /// From YurtHub's flags (openyurtio/openyurt@v1.7.0 cmd/yurthub/app/options/options.go and
    /// pkg/yurthub/filter/manager/manager.go): filters on unless `--enable-resource-filter=false`;
    /// `--disabled-resource-filters` names filters to skip; cloud mode adds serviceenvupdater to
    /// them; host = `--dummy-if-ip` (169.254.2.1) with `--enable-dummy-if` (default true), else
    /// `--bind-proxy-address` (127.0.0.1); port = `--proxy-secure-port` (10268).
    pub fn from_flags(get: &dyn Fn(&str) -> Option<String>, disabled: &[String]) -> HubFilters {
        let on = get("enable-resource-filter").as_deref() != Some("false");
        let cloud = get("working-mode").as_deref() == Some("cloud");
        let off = |f: &str| !on || disabled.iter().any(|d| d == f);
        let host = if get("enable-dummy-if").as_deref() != Some("false") {
            get("dummy-if-ip").unwrap_or_else(|| "169.254.2.1".into())
        } else {
            get("bind-proxy-address").unwrap_or_else(|| "127.0.0.1".into())
        };
        let port = get("proxy-secure-port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(10268);
        HubFilters {
            rewrite: (host, port),
            master: !off("masterservice"),
            env_updater: !cloud && !off("serviceenvupdater"),
        }
    }

    /// A hub whose flags the sim does not know: the defaults of an edge-mode hub.
    pub fn defaults() -> HubFilters {
        HubFilters::from_flags(&|_| None, &[])
    }
}

/// How the kubelet sees the API at container creation.
#[derive(Clone, Debug)]
pub enum ServiceView {
    Direct,
    Hub(HubFilters),
}

/// The Services' env vars for a pod in `ns` (kubernetes/kubernetes@v1.33.0
/// pkg/kubelet/kubelet_pods.go `getServiceEnvVarMap`: `default/kubernetes` always, the pod
/// namespace's Services when `enableServiceLinks` is not false; headless/IP-less skipped;
/// pkg/kubelet/envvars/envvars.go `FromServices` for the names).
pub fn service_env(
    services: &[Value],
    ns: &str,
    service_links: bool,
    view: &ServiceView,
) -> Vec<(String, String)> {
    let mut picked: std::collections::BTreeMap<String, Value> = Default::default();
    for s in services {
        let (sns, name) = (
            s["metadata"]["namespace"].as_str().unwrap_or(""),
            s["metadata"]["name"].as_str().unwrap_or(""),
        );
        let ip = s["spec"]["clusterIP"].as_str().unwrap_or("");
        if ip.is_empty() || ip == "None" {
            continue;
        }
        if sns == "default" && name == "kubernetes" {
            let mut s = s.clone();
            if let ServiceView::Hub(HubFilters {
                master: true,
                rewrite: (host, port),
                ..
            }) = view
            {
                s["spec"]["clusterIP"] = Value::from(host.as_str());
                if let Some(p) = s["spec"]["ports"]
                    .as_array_mut()
                    .and_then(|ps| ps.iter_mut().find(|p| p["name"] == "https"))
                {
                    p["port"] = Value::from(*port);
                }
            }
            picked.entry(name.to_string()).or_insert(s);
        } else if sns == ns && service_links {
            picked.insert(name.to_string(), s.clone());
        }
    }
    let mut env = Vec::new();
    for s in picked.values() {
        env.extend(from_service(s));
    }
    env
}

/// serviceenvupdater's value for an explicit env entry `name` of a pod's app container, when
/// the hub rewrites it.
pub fn explicit_override(view: &ServiceView, app_container: bool, name: &str) -> Option<String> {
    let ServiceView::Hub(f) = view else {
        return None;
    };
    if !f.env_updater || !app_container {
        return None;
    }
    match name {
        "KUBERNETES_SERVICE_HOST" => Some(f.rewrite.0.clone()),
        "KUBERNETES_SERVICE_PORT" => Some(f.rewrite.1.to_string()),
        _ => None,
    }
}

fn env_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

fn from_service(s: &Value) -> Vec<(String, String)> {
    let prefix = env_name(s["metadata"]["name"].as_str().unwrap_or(""));
    let ip = s["spec"]["clusterIP"].as_str().unwrap_or("");
    let ports: Vec<&Value> = s["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let Some(first) = ports.first() else {
        return Vec::new();
    };
    let port = |p: &Value| p["port"].as_i64().unwrap_or(0).to_string();
    let mut out = vec![
        (format!("{prefix}_SERVICE_HOST"), ip.to_string()),
        (format!("{prefix}_SERVICE_PORT"), port(first)),
    ];
    for p in &ports {
        if let Some(n) = p["name"].as_str().filter(|n| !n.is_empty()) {
            out.push((format!("{prefix}_SERVICE_PORT_{}", env_name(n)), port(p)));
        }
    }
    let host_port = |p: &Value| {
        if ip.contains(':') {
            format!("[{ip}]:{}", port(p))
        } else {
            format!("{ip}:{}", port(p))
        }
    };
    for (i, p) in ports.iter().enumerate() {
        let proto = p["protocol"].as_str().unwrap_or("TCP");
        let lower = proto.to_lowercase();
        if i == 0 {
            out.push((
                format!("{prefix}_PORT"),
                format!("{lower}://{}", host_port(p)),
            ));
        }
        let pp = format!("{prefix}_PORT_{}_{}", port(p), proto.to_uppercase());
        out.push((pp.clone(), format!("{lower}://{}", host_port(p))));
        out.push((format!("{pp}_PROTO"), lower.clone()));
        out.push((format!("{pp}_PORT"), port(p)));
        out.push((format!("{pp}_ADDR"), ip.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kubernetes() -> Value {
        json!({"metadata": {"namespace": "default", "name": "kubernetes"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}})
    }

    #[test]
    fn master_service_direct_and_through_the_hub() {
        let other = json!({"metadata": {"namespace": "apps", "name": "web-svc"},
            "spec": {"clusterIP": "10.96.7.7", "ports": [{"port": 80}]}});
        let headless = json!({"metadata": {"namespace": "apps", "name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}});
        let all = [kubernetes(), other, headless];
        let direct = service_env(&all, "apps", true, &ServiceView::Direct);
        let get = |env: &[(String, String)], k: &str| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        assert_eq!(
            get(&direct, "KUBERNETES_SERVICE_HOST").as_deref(),
            Some("10.96.0.1")
        );
        assert_eq!(
            get(&direct, "KUBERNETES_PORT_443_TCP_ADDR").as_deref(),
            Some("10.96.0.1")
        );
        assert_eq!(
            get(&direct, "WEB_SVC_PORT").as_deref(),
            Some("tcp://10.96.7.7:80")
        );
        assert!(get(&direct, "H_SERVICE_HOST").is_none());
        let no_links = service_env(&all, "apps", false, &ServiceView::Direct);
        assert!(get(&no_links, "WEB_SVC_SERVICE_HOST").is_none());

        let hub = ServiceView::Hub(HubFilters::defaults());
        let via = service_env(&all, "apps", true, &hub);
        assert_eq!(
            get(&via, "KUBERNETES_SERVICE_HOST").as_deref(),
            Some("169.254.2.1")
        );
        assert_eq!(
            get(&via, "KUBERNETES_SERVICE_PORT").as_deref(),
            Some("10268")
        );
        assert_eq!(
            get(&via, "KUBERNETES_SERVICE_PORT_HTTPS").as_deref(),
            Some("10268")
        );
        assert_eq!(
            get(&via, "KUBERNETES_PORT").as_deref(),
            Some("tcp://169.254.2.1:10268")
        );
        assert_eq!(
            get(&via, "KUBERNETES_PORT_10268_TCP").as_deref(),
            Some("tcp://169.254.2.1:10268")
        );
        let off = HubFilters::from_flags(
            &|k| (k == "working-mode").then(|| "cloud".to_string()),
            &["masterservice".to_string()],
        );
        assert!(!off.master && !off.env_updater, "{off:?}");
        let via = service_env(&all, "apps", true, &ServiceView::Hub(off));
        assert_eq!(
            get(&via, "KUBERNETES_SERVICE_HOST").as_deref(),
            Some("10.96.0.1")
        );
    }
}
