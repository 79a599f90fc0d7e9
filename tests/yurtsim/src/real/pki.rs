//! The real tier's cluster PKI, laid out as kubeadm writes `/etc/kubernetes/pki`
//! (kubernetes/kubernetes@v1.37.2 cmd/kubeadm/app/phases/certs/certlist.go): the cluster CA, the
//! API server's serving certificate, its kubelet client, the front-proxy CA and client, and the
//! service-account key pair; plus client certificates for kubeconfigs
//! (cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go) and for nodes. ECDSA P-256 throughout
//! (kubeadm's `EncryptionAlgorithmType` ECDSA-P256).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// A certificate and its key, as PEM.
pub struct Pair {
    pub cert: String,
    pub key: String,
}

/// A certificate authority that can issue.
pub struct Ca {
    pub pair: Pair,
    issuer: Issuer<'static, KeyPair>,
}

fn name(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for o in organizations {
        dn.push(DnType::OrganizationName, *o);
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

impl Ca {
    pub fn new(common_name: &str) -> anyhow::Result<Ca> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name, &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        let cert = params.self_signed(&key)?;
        let pair = Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        };
        Ok(Ca {
            pair,
            issuer: Issuer::new(params, key),
        })
    }

    fn issue(
        &self,
        common_name: &str,
        organizations: &[&str],
        usage: ExtendedKeyUsagePurpose,
        dns_names: &[&str],
        ips: &[IpAddr],
    ) -> anyhow::Result<Pair> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name, organizations);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        params.subject_alt_names = dns_names
            .iter()
            .map(|d| Ok(SanType::DnsName((*d).try_into()?)))
            .chain(ips.iter().map(|ip| Ok(SanType::IpAddress(*ip))))
            .collect::<Result<_, rcgen::Error>>()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    /// A client certificate: the API server names the user by CN and its groups by O.
    pub fn client(&self, common_name: &str, organizations: &[&str]) -> anyhow::Result<Pair> {
        self.issue(
            common_name,
            organizations,
            ExtendedKeyUsagePurpose::ClientAuth,
            &[],
            &[],
        )
    }

    pub fn server(&self, common_name: &str, dns: &[&str], ips: &[IpAddr]) -> anyhow::Result<Pair> {
        self.issue(
            common_name,
            &[],
            ExtendedKeyUsagePurpose::ServerAuth,
            dns,
            ips,
        )
    }
}

/// The serving certificate a kubelet makes for itself when none is configured
/// (kubernetes/kubernetes@v1.37.2 cmd/kubelet/app/server.go `InitializeTLS` →
/// kubernetes/client-go@v0.37.2 util/cert/cert.go `GenerateSelfSignedCertKeyWithOptions`): a
/// CA `HOST-ca@UNIX` and, signed by it, a server certificate `HOST@UNIX` for `HOST` (an IP SAN
/// when it is an address, else a DNS SAN), both valid from an hour ago for a year; the
/// certificate file holds the certificate, then the CA. ECDSA P-256 where client-go makes RSA
/// 2048 keys (ring, rcgen's signer here, cannot generate RSA keys).
pub fn kubelet_self_signed(host: &str) -> anyhow::Result<Pair> {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let now = SystemTime::now();
    let unix = now.duration_since(UNIX_EPOCH)?.as_secs();
    let from = now - Duration::from_secs(3600);
    let until = from + Duration::from_secs(365 * 24 * 3600);
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = name(&format!("{host}-ca@{unix}"), &[]);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    ca_params.not_before = from.into();
    ca_params.not_after = until.into();
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&format!("{host}@{unix}"), &[]);
    params.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = from.into();
    params.not_after = until.into();
    params.subject_alt_names = vec![match host.parse::<IpAddr>() {
        Ok(ip) => SanType::IpAddress(ip),
        Err(_) => SanType::DnsName(host.try_into()?),
    }];
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Pair {
        cert: format!("{}{}", cert.pem(), ca_cert.pem()),
        key: key.serialize_pem(),
    })
}

/// What the control plane's flags point at, under `STATE_DIR/pki`.
pub struct ClusterPki {
    pub dir: PathBuf,
    pub ca: Ca,
}

impl ClusterPki {
    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }
}

fn write(dir: &Path, base: &str, pair: &Pair) -> anyhow::Result<()> {
    std::fs::write(dir.join(format!("{base}.crt")), &pair.cert)?;
    write_private(&dir.join(format!("{base}.key")), &pair.key)
}

pub fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// Writes kubeadm's `pki/` for an API server reachable as `service_ip` (the `kubernetes`
/// Service), `advertise` (the control-plane node's address), loopback, and `hosts` (the
/// layout's control-plane endpoint names).
pub fn generate(
    dir: &Path,
    service_ip: IpAddr,
    advertise: IpAddr,
    hosts: &[&str],
) -> anyhow::Result<ClusterPki> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ca = Ca::new("kubernetes")?;
    write(dir, "ca", &ca.pair)?;
    // certlist.go KubeadmCertAPIServer: the Service's names and IP, the advertise address, the
    // control-plane endpoint.
    let mut dns = vec![
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "localhost",
    ];
    dns.extend_from_slice(hosts);
    let loopback: IpAddr = "127.0.0.1".parse().expect("literal");
    write(
        dir,
        "apiserver",
        &ca.server("kube-apiserver", &dns, &[service_ip, advertise, loopback])?,
    )?;
    // certlist.go KubeadmCertKubeletClient: O=kubeadm:cluster-admins since v1.29.
    write(
        dir,
        "apiserver-kubelet-client",
        &ca.client("kube-apiserver-kubelet-client", &["kubeadm:cluster-admins"])?,
    )?;
    let front = Ca::new("front-proxy-ca")?;
    write(dir, "front-proxy-ca", &front.pair)?;
    write(
        dir,
        "front-proxy-client",
        &front.client("front-proxy-client", &[])?,
    )?;
    let sa = KeyPair::generate()?;
    write_private(&dir.join("sa.key"), &sa.serialize_pem())?;
    std::fs::write(dir.join("sa.pub"), sa.public_key_pem())?;
    Ok(ClusterPki {
        dir: dir.to_path_buf(),
        ca,
    })
}

/// A kubeconfig as kubeadm writes it (`name@cluster` context), credentials embedded.
pub fn kubeconfig(cluster: &str, server: &str, ca_pem: &str, user: &str, client: &Pair) -> String {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    crate::nodes::layout::kubeconfig(
        cluster,
        server,
        &b64(ca_pem),
        user,
        &format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&client.cert),
            b64(&client.key)
        ),
    )
}
