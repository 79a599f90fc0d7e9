//! `yurtctl diagnose NODE…`'s node checks: what each named node's read-only Job read of its
//! files, its processes and YurtHub's port, turned into findings. PURE.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::Role;
use super::diagnose::{Diagnosis, Severity};
use crate::servant::facts::{CertFacts, NodeFacts};
use crate::servant::runtime::ContainerApi;

/// The node checks, in order (the result lists them when nodes are named).
pub const NODE_CHECKS: [&str; 4] = [
    "YurtHubOnNode",
    "KubeletThroughYurtHub",
    "NodeTrust",
    "WorkloadsThroughYurtHub",
];

/// What the node checks compare a node's facts with, read from the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSide {
    /// The pin of the cluster's CA (`kube-root-ca.crt`), or why it could not be read.
    pub ca_pin: Result<String, String>,
    /// The ClusterIP of Service `default/kubernetes`: the address a pod started without
    /// YurtHub's masterservice rewrite was given.
    pub api_service_ip: Option<String>,
}

/// What the kubelet's kubeconfig names once it goes through YurtHub (convert writes it:
/// `servant::kubeconfig::render_yurthub_kubeconfig`).
pub const YURTHUB_SERVER: &str = "http://127.0.0.1:10261";

/// A YurtHub client certificate this close to its end is a warning: YurtHub renews it well
/// before (client-go's certificate manager, at 70–90 % of its life), so one this close means
/// renewal is failing.
pub const CERT_EXPIRES_SOON: SignedDuration = SignedDuration::from_hours(24);

/// One node's facts as its Job reported them, or why they could not be read.
pub type NodeRead = Result<NodeFacts, String>;

/// The findings of the node checks on `node` (`converted`: the role the journal records it
/// converted as, if any), against what the cluster says.
pub fn node_findings(
    node: &str,
    converted: Option<Role>,
    read: &NodeRead,
    cluster: &ClusterSide,
    now: Timestamp,
) -> Vec<Diagnosis> {
    let subject = format!("node/{node}");
    let d = |severity, check, evidence: String, fix: String| Diagnosis {
        severity,
        check,
        subject: subject.clone(),
        evidence,
        fix,
    };
    let f = match read {
        Ok(f) => f,
        Err(why) => {
            return vec![d(
                Severity::Warning,
                "YurtHubOnNode",
                format!("the node's files could not be read: {why}"),
                "the node checks need a privileged Job on the node (hostPID, the host's / \
                 mounted): see why it failed above, then run diagnose again"
                    .into(),
            )];
        }
    };
    let mut out = Vec::new();
    let hub_logs = match f.yurthub_mode.as_str() {
        "service" => "journalctl -u yurthub on the node shows why; systemctl restart yurthub",
        _ => "crictl ps -a --name yurt-hub and crictl logs on the node show why",
    };
    match (f.yurthub_mode.as_str(), &f.yurthub_not_ready) {
        ("none", _) if converted.is_some() => out.push(d(
            Severity::Error,
            "YurtHubOnNode",
            "no YurtHub on the node: neither yurthub.service nor a yurthub static pod, though \
             yurtctl converted it"
                .into(),
            "something removed it: run `yurtctl revert --nodes NODE` and `yurtctl convert` \
             again for this node"
                .into(),
        )),
        ("none", _) => {}
        (mode, Some(why)) => out.push(d(
            Severity::Error,
            "YurtHubOnNode",
            format!("YurtHub ({mode}) is not ready: {why}"),
            format!(
                "the kubelet reaches the API server only through YurtHub: {hub_logs} (a \
                 certificate it waits for shows in `yurtctl diagnose`'s YurtHubCertificates)"
            ),
        )),
        (_, None) => {}
    }
    if converted.is_some() {
        kubelet(f, &d, &mut out);
    }
    // only an edge node's workloads are restarted by convert, as upstream's node conversion
    // converts (and restarts the containers of) only nodes of Edge pools
    // (openyurtio/openyurt@v1.7.0 pkg/yurtmanager/controller/yurtnodeconversion
    // yurt_node_conversion_controller.go: "skips conversion: nodepool %q is not Edge type";
    // pkg/node-servant/convert/convert.go restartContainers): a cloud node's pods talk to the
    // API server directly by design, and a cloud node is not cut off from it
    if converted == Some(Role::Edge)
        && let (Some(ip), Some(w)) = (&cluster.api_service_ip, &f.workloads)
    {
        workloads(ip, w, &d, &mut out);
    }
    if let Some(c) = &f.yurthub_client_cert {
        client_cert(c, now, &d, &mut out);
    }
    if let (Some(ca), Ok(cluster)) = (&f.yurthub_ca, &cluster.ca_pin)
        && let Some(pin) = &ca.public_key_pin
        && pin != cluster
    {
        out.push(d(
            Severity::Error,
            "NodeTrust",
            format!(
                "YurtHub trusts the CA {pin} ({}), but the cluster's CA is {cluster}: its \
                 requests fail with `x509: certificate signed by unknown authority`",
                ca.path
            ),
            "the cluster's CA changed after convert, and YurtHub keeps the CA it saved first: \
             run `yurtctl revert --nodes NODE` and `yurtctl convert` again for this node (its \
             bootstrap file gets the new CA), or on the node remove /var/lib/yurthub/pki and \
             /var/lib/yurthub/yurthub.conf once its bootstrap file has the new CA, and restart \
             YurtHub"
                .into(),
        ));
    }
    if let (Some(ca), Ok(cluster)) = (&f.kubelet_client_ca, &cluster.ca_pin)
        && let Some(pin) = &ca.public_key_pin
        && pin != cluster
    {
        // kubeadm, kind and minikube sign the API server's kubelet client certificate with the
        // cluster's CA; a cluster that uses another CA for it sees this warning by design
        out.push(d(
            Severity::Warning,
            "NodeTrust",
            format!(
                "the kubelet checks client certificates against the CA {pin} ({}), but the \
                 cluster's CA is {cluster}: the API server's requests to the kubelet (kubectl \
                 logs, exec, port-forward) are refused if it is signed by the cluster's CA",
                ca.path
            ),
            format!(
                "if the cluster's CA changed, copy it to the node (kubectl -n kube-system get \
                 configmap kube-root-ca.crt -o jsonpath='{{.data.ca\\.crt}}' > {}) and restart \
                 the kubelet; if the API server's kubelet client certificate has a CA of its \
                 own, this is expected",
                ca.path
            ),
        ));
    }
    out
}

type Finding<'a> = dyn Fn(Severity, &'static str, String, String) -> Diagnosis + 'a;

/// A converted node's kubelet: running, on the kubeconfig its files give, through YurtHub.
fn kubelet(f: &NodeFacts, d: &Finding<'_>, out: &mut Vec<Diagnosis>) {
    let check = "KubeletThroughYurtHub";
    match &f.running_kubelet_kubeconfig {
        None => out.push(d(
            Severity::Error,
            check,
            "no kubelet process runs on the node".into(),
            "systemctl status kubelet and journalctl -u kubelet on the node show why".into(),
        )),
        Some(running) if running != &f.kubelet_kubeconfig => out.push(d(
            Severity::Warning,
            check,
            format!(
                "the kubelet runs with --kubeconfig={}, but its unit files now give {}",
                running.as_deref().unwrap_or("(none)"),
                f.kubelet_kubeconfig.as_deref().unwrap_or("(none)")
            ),
            "it was not restarted since its files changed: systemctl daemon-reload && \
             systemctl restart kubelet on the node"
                .into(),
        )),
        Some(_) => {}
    }
    let kubeconfig = f.kubelet_kubeconfig.as_deref().unwrap_or("(none)");
    match (&f.kubelet_server, &f.kubelet_server_problem) {
        (Some(s), _) if s.trim_end_matches('/') != YURTHUB_SERVER => out.push(d(
            Severity::Error,
            check,
            format!(
                "the kubelet's kubeconfig {kubeconfig} names {s}, not YurtHub's \
                 {YURTHUB_SERVER}: the node goes around YurtHub and loses its autonomy"
            ),
            "something rewrote the kubelet's kubeconfig or flags after convert: run `yurtctl \
             revert --nodes NODE` and `yurtctl convert` again for this node"
                .into(),
        )),
        (None, Some(why)) => out.push(d(
            Severity::Error,
            check,
            format!("the kubelet's kubeconfig cannot be read: {why}"),
            "the kubelet cannot start without it: run `yurtctl revert --nodes NODE` and \
             `yurtctl convert` again for this node"
                .into(),
        )),
        _ => {}
    }
}

/// A converted node's workload containers started with the API server's Service address: they
/// talk to the API server directly and lose their autonomy when the node goes offline
/// (openyurtio/openyurt FAQ, #846; YurtHub's masterservice filter gives a pod started
/// through it YurtHub's own address, openyurtio/openyurt@v1.7.0
/// pkg/yurthub/filter/masterservice/filter.go).
fn workloads(ip: &str, w: &[ContainerApi], d: &Finding<'_>, out: &mut Vec<Diagnosis>) {
    let direct: Vec<&str> = w
        .iter()
        .filter(|c| c.host.as_deref() == Some(ip))
        .map(|c| c.container.as_str())
        .collect();
    if direct.is_empty() {
        return;
    }
    let shown = match direct.len() {
        n if n > 5 => format!("{}, … and {} more", direct[..5].join(", "), n - 5),
        _ => direct.join(", "),
    };
    out.push(d(
        Severity::Warning,
        "WorkloadsThroughYurtHub",
        format!(
            "{} container(s) started with KUBERNETES_SERVICE_HOST={ip}, the API server's \
             Service, not YurtHub's address: {shown}",
            direct.len()
        ),
        "they were started before convert (or convert ran with --skip-workload-restart): \
         delete their pods, or `crictl stop` the containers on the node, so the kubelet \
         starts them again through YurtHub"
            .into(),
    ));
}

/// YurtHub's client certificate: there, and not at (or near) its end.
fn client_cert(c: &CertFacts, now: Timestamp, d: &Finding<'_>, out: &mut Vec<Diagnosis>) {
    let check = "NodeTrust";
    let renew = "YurtHub renews it through a CertificateSigningRequest that yurt-manager \
                 approves: see YurtHubCertificates and YurtManager above; if it cannot renew, \
                 remove it on the node and restart YurtHub to bootstrap again (the bootstrap \
                 token must be valid)";
    let end = c
        .not_after
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok());
    match (end, &c.problem) {
        (_, Some(why)) => out.push(d(
            Severity::Warning,
            check,
            format!("YurtHub's client certificate {}: {why}", c.path),
            "YurtHub has not been issued one yet, or it was removed: see YurtHubCertificates \
             above"
                .into(),
        )),
        (Some(end), None) if end <= now => out.push(d(
            Severity::Error,
            check,
            format!("YurtHub's client certificate {} expired at {end}", c.path),
            renew.into(),
        )),
        (Some(end), None) if end <= now + CERT_EXPIRES_SOON => out.push(d(
            Severity::Warning,
            check,
            format!(
                "YurtHub's client certificate {} expires at {end}, within a day",
                c.path
            ),
            renew.into(),
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> NodeFacts {
        NodeFacts {
            yurthub_mode: "service".into(),
            kubelet_kubeconfig: Some("/var/lib/openyurt/kubelet.conf".into()),
            kubelet_server: Some("http://127.0.0.1:10261".into()),
            running_kubelet_kubeconfig: Some(Some("/var/lib/openyurt/kubelet.conf".into())),
            yurthub_client_cert: Some(CertFacts {
                path: "/var/lib/yurthub/pki/yurthub-current.pem".into(),
                not_after: Some("2027-01-01T00:00:00Z".into()),
                public_key_pin: Some("sha256:aa".into()),
                problem: None,
            }),
            yurthub_ca: Some(CertFacts {
                path: "/var/lib/yurthub/pki/ca.crt".into(),
                not_after: Some("2035-01-01T00:00:00Z".into()),
                public_key_pin: Some("sha256:ca".into()),
                problem: None,
            }),
            kubelet_client_ca: Some(CertFacts {
                path: "/etc/kubernetes/pki/ca.crt".into(),
                not_after: Some("2035-01-01T00:00:00Z".into()),
                public_key_pin: Some("sha256:ca".into()),
                problem: None,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn each_broken_fact_is_one_finding_with_its_severity() {
        let now: Timestamp = "2026-11-29T00:00:00Z".parse().unwrap();
        let ca = ClusterSide {
            ca_pin: Ok("sha256:ca".to_owned()),
            api_service_ip: Some("10.96.0.1".into()),
        };
        type Change = Box<dyn Fn(&mut NodeFacts)>;
        type Want = Option<(Severity, &'static str, &'static str)>;
        let cases: Vec<(&str, Change, Want)> = vec![
            ("healthy", Box::new(|_| {}), None),
            (
                "no yurthub",
                Box::new(|f| f.yurthub_mode = "none".into()),
                Some((Severity::Error, "YurtHubOnNode", "no YurtHub on the node")),
            ),
            (
                "yurthub not ready",
                Box::new(|f| f.yurthub_not_ready = Some("connection refused".into())),
                Some((Severity::Error, "YurtHubOnNode", "connection refused")),
            ),
            (
                "kubelet around yurthub",
                Box::new(|f| f.kubelet_server = Some("https://10.0.0.1:6443".into())),
                Some((
                    Severity::Error,
                    "KubeletThroughYurtHub",
                    "names https://10.0.0.1:6443",
                )),
            ),
            (
                "no kubelet process",
                Box::new(|f| f.running_kubelet_kubeconfig = None),
                Some((
                    Severity::Error,
                    "KubeletThroughYurtHub",
                    "no kubelet process",
                )),
            ),
            (
                "kubelet not restarted",
                Box::new(|f| {
                    f.running_kubelet_kubeconfig = Some(Some("/etc/kubernetes/kubelet.conf".into()))
                }),
                Some((Severity::Warning, "KubeletThroughYurtHub", "not restarted")),
            ),
            (
                "certificate expired",
                Box::new(|f| {
                    f.yurthub_client_cert.as_mut().unwrap().not_after =
                        Some("2026-11-28T00:00:00Z".into())
                }),
                Some((Severity::Error, "NodeTrust", "expired at")),
            ),
            (
                "certificate expiring",
                Box::new(|f| {
                    f.yurthub_client_cert.as_mut().unwrap().not_after =
                        Some("2026-11-29T12:00:00Z".into())
                }),
                Some((Severity::Warning, "NodeTrust", "within a day")),
            ),
            (
                "a pod started around yurthub",
                Box::new(|f| {
                    f.workloads = Some(vec![
                        ContainerApi {
                            container: "default/web/nginx".into(),
                            host: Some("10.96.0.1".into()),
                            port: Some("443".into()),
                        },
                        ContainerApi {
                            container: "default/api/app".into(),
                            host: Some("169.254.2.1".into()),
                            port: Some("10268".into()),
                        },
                    ])
                }),
                Some((
                    Severity::Warning,
                    "WorkloadsThroughYurtHub",
                    "default/web/nginx",
                )),
            ),
            (
                "another CA",
                Box::new(|f| {
                    f.yurthub_ca.as_mut().unwrap().public_key_pin = Some("sha256:old".into())
                }),
                Some((Severity::Error, "NodeTrust", "unknown authority")),
            ),
            (
                "the kubelet checks clients against another CA",
                Box::new(|f| {
                    f.kubelet_client_ca.as_mut().unwrap().public_key_pin = Some("sha256:old".into())
                }),
                Some((Severity::Warning, "NodeTrust", "kubectl logs")),
            ),
        ];
        for (name, change, want) in cases {
            let mut f = healthy();
            change(&mut f);
            let got = node_findings("w1", Some(Role::Edge), &Ok(f), &ca, now);
            match want {
                None => assert!(got.is_empty(), "{name}: {got:?}"),
                Some((severity, check, text)) => {
                    assert_eq!(got.len(), 1, "{name}: {got:?}");
                    let g = &got[0];
                    assert_eq!((g.severity, g.check), (severity, check), "{name}");
                    assert!(
                        g.evidence.contains(text) || g.fix.contains(text),
                        "{name}: {g:?}"
                    );
                    assert_eq!(g.subject, "node/w1");
                }
            }
        }
        // a node yurtctl did not convert: no YurtHub and a direct kubelet are how it should be
        let mut plain = healthy();
        plain.yurthub_mode = "none".into();
        plain.kubelet_server = Some("https://10.0.0.1:6443".into());
        plain.yurthub_client_cert = None;
        plain.yurthub_ca = None;
        assert!(node_findings("w1", None, &Ok(plain), &ca, now).is_empty());
        // a cloud node's workloads keep the API server's address: convert restarts only an
        // edge node's
        let mut cloud = healthy();
        cloud.workloads = Some(vec![ContainerApi {
            container: "kube-system/yurt-manager-x/yurt-manager".into(),
            host: Some("10.96.0.1".into()),
            port: Some("443".into()),
        }]);
        assert!(node_findings("c1", Some(Role::Cloud), &Ok(cloud.clone()), &ca, now).is_empty());
        assert_eq!(
            node_findings("w1", Some(Role::Edge), &Ok(cloud), &ca, now)[0].check,
            "WorkloadsThroughYurtHub"
        );
    }
}
