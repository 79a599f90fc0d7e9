//! Static pod manifests (kubeadm's rendering: keys sorted, volumes sorted by name).

use super::*;

struct Vol {
    name: &'static str,
    path: String,
    ty: &'static str,
    read_only: bool,
}

fn vol(name: &'static str, path: &str, ty: &'static str, read_only: bool) -> Vol {
    Vol {
        name,
        path: path.to_owned(),
        ty,
        read_only,
    }
}

struct Probe {
    kind: &'static str,
    failure: u32,
    host: String,
    path: &'static str,
    port: u16,
    scheme: &'static str,
    initial_delay: Option<u32>,
    period: u32,
}

fn render_probe(p: &Probe) -> String {
    let mut s = format!(
        "    {}:\n      failureThreshold: {}\n      httpGet:\n        host: {}\n        path: {}\n        port: {}\n        scheme: {}\n",
        p.kind, p.failure, p.host, p.path, p.port, p.scheme
    );
    if let Some(d) = p.initial_delay {
        s.push_str(&format!("      initialDelaySeconds: {d}\n"));
    }
    s.push_str(&format!(
        "      periodSeconds: {}\n      timeoutSeconds: 15\n",
        p.period
    ));
    s
}

struct PodSpec<'a> {
    component: &'static str,
    annotation: Option<(&'static str, String)>,
    command: Vec<String>,
    image: String,
    probes: Vec<Probe>,
    resources: &'a str,
    volumes: Vec<Vol>,
}

/// A static pod's manifest, and the host directories its `Directory` and `DirectoryOrCreate`
/// volumes mount (a node that ran it has them: the kubelet creates a `DirectoryOrCreate` one,
/// kubernetes/kubernetes@v1.37.2 pkg/volume/hostpath/host_path.go `checkType`).
pub(super) struct Manifest {
    pub file: &'static str,
    pub text: String,
    pub dirs: Vec<String>,
}

fn render_pod(p: PodSpec<'_>) -> (String, Vec<String>) {
    let mut s = String::from("apiVersion: v1\nkind: Pod\nmetadata:\n");
    if let Some((k, v)) = &p.annotation {
        s.push_str(&format!("  annotations:\n    {k}: {v}\n"));
    }
    s.push_str(&format!(
        "  creationTimestamp: null\n  labels:\n    component: {c}\n    tier: control-plane\n  name: {c}\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n",
        c = p.component
    ));
    for a in &p.command {
        s.push_str(&format!("    - {a}\n"));
    }
    s.push_str(&format!(
        "    image: {}\n    imagePullPolicy: IfNotPresent\n",
        p.image
    ));
    let mut probes = p.probes;
    probes.sort_by_key(|x| x.kind);
    let (before, after): (Vec<_>, Vec<_>) = probes.iter().partition(|x| x.kind < "name");
    for pr in before {
        s.push_str(&render_probe(pr));
    }
    s.push_str(&format!("    name: {}\n", p.component));
    for pr in after.iter().filter(|x| x.kind < "resources") {
        s.push_str(&render_probe(pr));
    }
    s.push_str(&format!("    resources:\n      requests:\n{}", p.resources));
    for pr in after.iter().filter(|x| x.kind > "resources") {
        s.push_str(&render_probe(pr));
    }
    let mut vols = p.volumes;
    vols.sort_by_key(|v| v.name);
    s.push_str("    volumeMounts:\n");
    for v in &vols {
        s.push_str(&format!(
            "    - mountPath: {}\n      name: {}\n",
            v.path, v.name
        ));
        if v.read_only {
            s.push_str("      readOnly: true\n");
        }
    }
    s.push_str(
        "  hostNetwork: true\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  securityContext:\n    seccompProfile:\n      type: RuntimeDefault\n  volumes:\n",
    );
    for v in &vols {
        s.push_str(&format!(
            "  - hostPath:\n      path: {}\n      type: {}\n    name: {}\n",
            v.path, v.ty, v.name
        ));
    }
    s.push_str("status: {}\n");
    let dirs = vols
        .iter()
        .filter(|v| matches!(v.ty, "Directory" | "DirectoryOrCreate"))
        .map(|v| v.path.clone())
        .collect();
    (s, dirs)
}

fn ca_volumes(cert_dir: &str) -> Vec<Vol> {
    vec![
        vol("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate", true),
        vol(
            "etc-ca-certificates",
            "/etc/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
        vol("k8s-certs", cert_dir, "DirectoryOrCreate", true),
        vol(
            "usr-local-share-ca-certificates",
            "/usr/local/share/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
        vol(
            "usr-share-ca-certificates",
            "/usr/share/ca-certificates",
            "DirectoryOrCreate",
            true,
        ),
    ]
}

fn https_probe(
    kind: &'static str,
    failure: u32,
    host: &str,
    path: &'static str,
    port: u16,
    delay: Option<u32>,
    period: u32,
) -> Probe {
    Probe {
        kind,
        failure,
        host: host.to_owned(),
        path,
        port,
        scheme: "HTTPS",
        initial_delay: delay,
        period,
    }
}

pub(super) fn args(bin: &str, mut flags: Vec<String>) -> Vec<String> {
    flags.sort();
    std::iter::once(bin.to_owned()).chain(flags).collect()
}

pub(super) fn manifests(layout: Layout, node: &NodeSeed) -> Vec<Manifest> {
    let cd = layout.cert_dir();
    let ip = &node.internal_ip;
    let port = layout.api_port();
    let v = &node.kubernetes_version;
    let etcd_dir = if layout == Layout::Minikube {
        "/var/lib/minikube/etcd"
    } else {
        "/var/lib/etcd"
    };

    // kube-apiserver
    let admission = if layout == Layout::Minikube {
        "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"
    } else {
        "NodeRestriction"
    };
    let mut apiserver = vec![
        format!("--advertise-address={ip}"),
        "--allow-privileged=true".into(),
        "--authorization-mode=Node,RBAC".into(),
        format!("--client-ca-file={cd}/ca.crt"),
        format!("--enable-admission-plugins={admission}"),
        "--enable-bootstrap-token-auth=true".into(),
        format!("--etcd-cafile={cd}/etcd/ca.crt"),
        format!("--etcd-certfile={cd}/apiserver-etcd-client.crt"),
        format!("--etcd-keyfile={cd}/apiserver-etcd-client.key"),
        "--etcd-servers=https://127.0.0.1:2379".into(),
        format!("--kubelet-client-certificate={cd}/apiserver-kubelet-client.crt"),
        format!("--kubelet-client-key={cd}/apiserver-kubelet-client.key"),
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname".into(),
        format!("--proxy-client-cert-file={cd}/front-proxy-client.crt"),
        format!("--proxy-client-key-file={cd}/front-proxy-client.key"),
        "--requestheader-allowed-names=front-proxy-client".into(),
        format!("--requestheader-client-ca-file={cd}/front-proxy-ca.crt"),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        format!("--secure-port={port}"),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={cd}/sa.pub"),
        format!("--service-account-signing-key-file={cd}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".into(),
        format!("--tls-cert-file={cd}/apiserver.crt"),
        format!("--tls-private-key-file={cd}/apiserver.key"),
    ];
    if layout == Layout::Kind {
        apiserver.push("--runtime-config=".into());
    }
    let apiserver = render_pod(PodSpec {
        component: "kube-apiserver",
        annotation: Some((
            "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
            format!("{ip}:{port}"),
        )),
        command: args("kube-apiserver", apiserver),
        image: format!("registry.k8s.io/kube-apiserver:{v}"),
        probes: vec![
            https_probe("livenessProbe", 8, ip, "/livez", port, Some(10), 10),
            https_probe("readinessProbe", 3, ip, "/readyz", port, None, 1),
            https_probe("startupProbe", 24, ip, "/livez", port, Some(10), 10),
        ],
        resources: "        cpu: 250m\n",
        volumes: ca_volumes(cd),
    });

    // kube-controller-manager
    let mut kcm = vec![
        "--allocate-node-cidrs=true".into(),
        "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--client-ca-file={cd}/ca.crt"),
        "--cluster-cidr=10.244.0.0/16".into(),
        format!("--cluster-name={}", node.cluster_name),
        format!("--cluster-signing-cert-file={cd}/ca.crt"),
        format!("--cluster-signing-key-file={cd}/ca.key"),
        "--controllers=*,bootstrapsigner,tokencleaner".into(),
        "--kubeconfig=/etc/kubernetes/controller-manager.conf".into(),
        format!("--leader-elect={}", layout != Layout::Minikube),
        format!("--requestheader-client-ca-file={cd}/front-proxy-ca.crt"),
        format!("--root-ca-file={cd}/ca.crt"),
        format!("--service-account-private-key-file={cd}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".into(),
        "--use-service-account-credentials=true".into(),
    ];
    if layout == Layout::Kind {
        kcm.push("--enable-hostpath-provisioner=true".into());
    }
    let mut kcm_vols = ca_volumes(cd);
    kcm_vols.push(vol(
        "flexvolume-dir",
        "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
        "DirectoryOrCreate",
        false,
    ));
    kcm_vols.push(vol(
        "kubeconfig",
        "/etc/kubernetes/controller-manager.conf",
        "FileOrCreate",
        true,
    ));
    let kcm = render_pod(PodSpec {
        component: "kube-controller-manager",
        annotation: None,
        command: args("kube-controller-manager", kcm),
        image: format!("registry.k8s.io/kube-controller-manager:{v}"),
        probes: vec![
            https_probe(
                "livenessProbe",
                8,
                "127.0.0.1",
                "/healthz",
                10257,
                Some(10),
                10,
            ),
            https_probe(
                "startupProbe",
                24,
                "127.0.0.1",
                "/healthz",
                10257,
                Some(10),
                10,
            ),
        ],
        resources: "        cpu: 200m\n",
        volumes: kcm_vols,
    });

    // kube-scheduler
    let sched = render_pod(PodSpec {
        component: "kube-scheduler",
        annotation: None,
        command: args(
            "kube-scheduler",
            vec![
                "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                "--bind-address=127.0.0.1".into(),
                "--kubeconfig=/etc/kubernetes/scheduler.conf".into(),
                format!("--leader-elect={}", layout != Layout::Minikube),
            ],
        ),
        image: format!("registry.k8s.io/kube-scheduler:{v}"),
        probes: vec![
            https_probe(
                "livenessProbe",
                8,
                "127.0.0.1",
                "/livez",
                10259,
                Some(10),
                10,
            ),
            https_probe("readinessProbe", 3, "127.0.0.1", "/readyz", 10259, None, 1),
            https_probe(
                "startupProbe",
                24,
                "127.0.0.1",
                "/livez",
                10259,
                Some(10),
                10,
            ),
        ],
        resources: "        cpu: 100m\n",
        volumes: vec![vol(
            "kubeconfig",
            "/etc/kubernetes/scheduler.conf",
            "FileOrCreate",
            true,
        )],
    });

    // etcd (single member, as on the node where kubeadm init ran)
    let n = &node.name;
    let etcd_flags = vec![
        format!("--advertise-client-urls=https://{ip}:2379"),
        format!("--cert-file={cd}/etcd/server.crt"),
        "--client-cert-auth=true".into(),
        format!("--data-dir={etcd_dir}"),
        "--experimental-initial-corrupt-check=true".into(),
        "--experimental-watch-progress-notify-interval=5s".into(),
        format!("--initial-advertise-peer-urls=https://{ip}:2380"),
        format!("--initial-cluster={n}=https://{ip}:2380"),
        format!("--key-file={cd}/etcd/server.key"),
        format!("--listen-client-urls=https://127.0.0.1:2379,https://{ip}:2379"),
        "--listen-metrics-urls=http://127.0.0.1:2381".into(),
        format!("--listen-peer-urls=https://{ip}:2380"),
        format!("--name={n}"),
        format!("--peer-cert-file={cd}/etcd/peer.crt"),
        "--peer-client-cert-auth=true".into(),
        format!("--peer-key-file={cd}/etcd/peer.key"),
        format!("--peer-trusted-ca-file={cd}/etcd/ca.crt"),
        "--snapshot-count=10000".into(),
        format!("--trusted-ca-file={cd}/etcd/ca.crt"),
    ];
    let http = |kind, failure, path, delay, period| Probe {
        kind,
        failure,
        host: "127.0.0.1".into(),
        path,
        port: 2381,
        scheme: "HTTP",
        initial_delay: delay,
        period,
    };
    let etcd = render_pod(PodSpec {
        component: "etcd",
        annotation: Some((
            "kubeadm.kubernetes.io/etcd.advertise-client-urls",
            format!("https://{ip}:2379"),
        )),
        command: args("etcd", etcd_flags),
        image: etcd_image(v).into(),
        probes: vec![
            http("livenessProbe", 8, "/livez", Some(10), 10),
            http("readinessProbe", 3, "/readyz", None, 1),
            http("startupProbe", 24, "/readyz", Some(10), 10),
        ],
        resources: "        cpu: 100m\n        memory: 100Mi\n",
        volumes: vec![
            vol(
                "etcd-certs",
                &format!("{cd}/etcd"),
                "DirectoryOrCreate",
                false,
            ),
            vol("etcd-data", etcd_dir, "DirectoryOrCreate", false),
        ],
    });
    [
        ("etcd.yaml", etcd),
        ("kube-apiserver.yaml", apiserver),
        ("kube-controller-manager.yaml", kcm),
        ("kube-scheduler.yaml", sched),
    ]
    .into_iter()
    .map(|(file, (text, dirs))| Manifest { file, text, dirs })
    .collect()
}
