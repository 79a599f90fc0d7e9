//! Real X.509 for the certificate flow YurtHub depends on: PKCS#10 requests with the subject a
//! component really sends (several `O=` values, SANs), parsed back the way an approver reads
//! them, and certificates issued by the sim's cluster CA with the request's subject, as
//! kube-controller-manager's signers do. ECDSA P-256 throughout.
//!
//! A leaf (docs/yurtsim.md#layers): the API server publishes the cluster CA
//! (`kube-root-ca.crt`, `cluster-info`), the controllers sign with it, the models request and
//! read certificates.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509CertificationRequest};
use yasna::models::ObjectIdentifier;

const OID_CN: &[u64] = &[2, 5, 4, 3];
const OID_O: &[u64] = &[2, 5, 4, 10];
const OID_EC_PUBLIC_KEY: &[u64] = &[1, 2, 840, 10045, 2, 1];
const OID_P256: &[u64] = &[1, 2, 840, 10045, 3, 1, 7];
const OID_ECDSA_SHA256: &[u64] = &[1, 2, 840, 10045, 4, 3, 2];
const OID_EXTENSION_REQUEST: &[u64] = &[1, 2, 840, 113549, 1, 9, 14];
const OID_SAN: &[u64] = &[2, 5, 29, 17];

/// Who a request or certificate names: CN and every O, and its SANs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub ips: Vec<std::net::IpAddr>,
}

fn oid(parts: &[u64]) -> ObjectIdentifier {
    ObjectIdentifier::from_slice(parts)
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The DER of the first PEM block labelled `label`.
pub fn pem_block(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let body: String = text[start..stop].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// A new private key, as PKCS#8 DER.
pub fn new_key() -> Vec<u8> {
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
        .expect("P-256 key generation")
        .as_ref()
        .to_vec()
}

fn key_pair(pkcs8: &[u8]) -> EcdsaKeyPair {
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &SystemRandom::new())
        .expect("a key made by new_key")
}

pub fn key_pem(pkcs8: &[u8]) -> String {
    pem("PRIVATE KEY", pkcs8)
}

fn write_name(w: yasna::DERWriter, cn: &str, orgs: &[String]) {
    w.write_sequence(|w| {
        for o in orgs {
            w.next().write_set(|w| {
                w.next().write_sequence(|w| {
                    w.next().write_oid(&oid(OID_O));
                    w.next().write_utf8_string(o);
                })
            });
        }
        w.next().write_set(|w| {
            w.next().write_sequence(|w| {
                w.next().write_oid(&oid(OID_CN));
                w.next().write_utf8_string(cn);
            })
        });
    });
}

fn write_spki(w: yasna::DERWriter, public_key: &[u8]) {
    w.write_sequence(|w| {
        w.next().write_sequence(|w| {
            w.next().write_oid(&oid(OID_EC_PUBLIC_KEY));
            w.next().write_oid(&oid(OID_P256));
        });
        w.next()
            .write_bitvec_bytes(public_key, public_key.len() * 8);
    });
}

fn write_sig_alg(w: yasna::DERWriter) {
    w.write_sequence(|w| w.next().write_oid(&oid(OID_ECDSA_SHA256)));
}

fn signed(body: Vec<u8>, key: &EcdsaKeyPair) -> Vec<u8> {
    let sig = key
        .sign(&SystemRandom::new(), &body)
        .expect("ECDSA signing");
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&body);
            write_sig_alg(w.next());
            w.next()
                .write_bitvec_bytes(sig.as_ref(), sig.as_ref().len() * 8);
        })
    })
}

/// A PKCS#10 request for `subject`, signed with `pkcs8`, as PEM (`CERTIFICATE REQUEST`).
pub fn csr_pem(subject: &Subject, pkcs8: &[u8]) -> String {
    let key = key_pair(pkcs8);
    let sans = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            for d in &subject.dns_names {
                w.next()
                    .write_tagged_implicit(yasna::Tag::context(2), |w| w.write_ia5_string(d));
            }
            for ip in &subject.ips {
                let bytes = match ip {
                    std::net::IpAddr::V4(v) => v.octets().to_vec(),
                    std::net::IpAddr::V6(v) => v.octets().to_vec(),
                };
                w.next()
                    .write_tagged_implicit(yasna::Tag::context(7), |w| w.write_bytes(&bytes));
            }
        })
    });
    let info = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_u8(0);
            write_name(w.next(), &subject.common_name, &subject.organizations);
            write_spki(w.next(), key.public_key().as_ref());
            w.next().write_tagged_implicit(yasna::Tag::context(0), |w| {
                w.write_set(|w| {
                    if subject.dns_names.is_empty() && subject.ips.is_empty() {
                        return;
                    }
                    w.next().write_sequence(|w| {
                        w.next().write_oid(&oid(OID_EXTENSION_REQUEST));
                        w.next().write_set(|w| {
                            w.next().write_sequence(|w| {
                                w.next().write_sequence(|w| {
                                    w.next().write_oid(&oid(OID_SAN));
                                    w.next().write_bytes(&sans);
                                })
                            })
                        });
                    });
                })
            });
        })
    });
    pem("CERTIFICATE REQUEST", &signed(info, &key))
}

/// What an approver reads from `spec.request`: None when it is not a PEM `CERTIFICATE
/// REQUEST` block holding a request that parses.
pub fn parse_csr(spec_request_pem: &str) -> Option<(Subject, Vec<u8>)> {
    let der = pem_block(spec_request_pem, "CERTIFICATE REQUEST")?;
    let (_, req) = X509CertificationRequest::from_der(&der).ok()?;
    let info = &req.certification_request_info;
    let mut s = Subject {
        common_name: info
            .subject
            .iter_common_name()
            .filter_map(|a| a.as_str().ok())
            .next()
            .unwrap_or_default()
            .to_string(),
        organizations: info
            .subject
            .iter_organization()
            .filter_map(|a| a.as_str().ok().map(str::to_string))
            .collect(),
        ..Default::default()
    };
    for ext in req.requested_extensions().into_iter().flatten() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext {
            for n in &san.general_names {
                match n {
                    GeneralName::DNSName(d) => s.dns_names.push(d.to_string()),
                    GeneralName::IPAddress(b) => match b.len() {
                        4 => s.ips.push(<[u8; 4]>::try_from(*b).unwrap().into()),
                        16 => s.ips.push(<[u8; 16]>::try_from(*b).unwrap().into()),
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
    }
    Some((s, info.subject.as_raw().to_vec()))
}

/// The subject (CN, O) of a PEM certificate: how the API server names a client certificate.
pub fn certificate_subject(cert_pem: &str) -> Option<Subject> {
    let der = pem_block(cert_pem, "CERTIFICATE")?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    let s = cert.subject();
    Some(Subject {
        common_name: s
            .iter_common_name()
            .filter_map(|a| a.as_str().ok())
            .next()
            .unwrap_or_default()
            .to_string(),
        organizations: s
            .iter_organization()
            .filter_map(|a| a.as_str().ok().map(str::to_string))
            .collect(),
        ..Default::default()
    })
}

struct Ca {
    key: Vec<u8>,
    name: Vec<u8>,
}

fn cluster_ca() -> &'static Ca {
    static CA: OnceLock<Ca> = OnceLock::new();
    CA.get_or_init(|| Ca {
        key: new_key(),
        name: yasna::construct_der(|w| write_name(w, "kubernetes", &[])),
    })
}

/// The sim's cluster CA certificate (self-signed, `CN=kubernetes`, for the key [`sign`] signs
/// with), as PEM: what `kube-public/cluster-info` publishes.
pub fn cluster_ca_pem() -> &'static str {
    static PEM: OnceLock<String> = OnceLock::new();
    PEM.get_or_init(|| {
        let key = rcgen::KeyPair::try_from(cluster_ca().key.as_slice())
            .expect("the sim's CA key is PKCS#8 ECDSA P-256");
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "kubernetes");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::DigitalSignature,
            rcgen::KeyUsagePurpose::KeyEncipherment,
            rcgen::KeyUsagePurpose::KeyCertSign,
        ];
        params
            .self_signed(&key)
            .expect("self-signing the sim's CA")
            .pem()
    })
}

/// A certificate for the request in `spec_request_pem`, issued by the cluster CA with the
/// request's subject and key, valid for `ttl` (the csrsigning controller's behaviour).
pub fn sign(spec_request_pem: &str, ttl: Duration) -> Option<String> {
    let der = pem_block(spec_request_pem, "CERTIFICATE REQUEST")?;
    let (_, req) = X509CertificationRequest::from_der(&der).ok()?;
    let info = &req.certification_request_info;
    let ca = cluster_ca();
    let ca_key = key_pair(&ca.key);
    let now = SystemTime::now();
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs() as i64
    };
    let validity = |t: SystemTime| {
        // "2026-11-24T10:00:00Z" → UTCTime "261124100000Z"
        let t = crate::util::format_unix(secs(t), None);
        let digits: String = t[2..].chars().filter(char::is_ascii_digit).collect();
        format!("{digits}Z")
    };
    let write_time = |w: yasna::DERWriter, t: String| {
        w.write_tagged_implicit(yasna::tags::TAG_UTCTIME, |w| w.write_bytes(t.as_bytes()))
    };
    let serial = crate::util::fnv32a(&der) as u64;
    let tbs = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next()
                .write_tagged(yasna::Tag::context(0), |w| w.write_u8(2));
            w.next().write_u64(serial);
            write_sig_alg(w.next());
            w.next().write_der(&ca.name);
            w.next().write_sequence(|w| {
                write_time(w.next(), validity(now - Duration::from_secs(60)));
                write_time(w.next(), validity(now + ttl));
            });
            w.next().write_der(info.subject.as_raw());
            w.next().write_der(info.subject_pki.raw);
        })
    });
    Some(pem("CERTIFICATE", &signed(tbs, &ca_key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_keeps_every_organization_and_san_through_signing() {
        let subject = Subject {
            common_name: "system:node:edge-1".into(),
            organizations: vec!["openyurt:yurthub".into(), "system:nodes".into()],
            dns_names: vec!["kubernetes".into()],
            ips: vec!["127.0.0.1".parse().unwrap()],
        };
        let req = csr_pem(&subject, &new_key());
        let (parsed, _) = parse_csr(&req).expect("parses");
        assert_eq!(parsed, subject);
        let cert = sign(&req, Duration::from_secs(3600)).unwrap();
        let named = certificate_subject(&cert).unwrap();
        assert_eq!(named.common_name, "system:node:edge-1");
        assert_eq!(named.organizations, subject.organizations);
        assert!(
            parse_csr(
                "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
            )
            .is_none()
        );
    }
}
