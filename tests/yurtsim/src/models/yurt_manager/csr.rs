use super::*;

impl YurtManager<'_> {
    /// (name, message) of each recognizer, in the order the tag tries them.
    fn recognizers(&self) -> Vec<(String, String)> {
        self.behaviour("csrapprover")["facts"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|f| f["recognizers"].as_array().into_iter().flatten())
            .filter_map(|r| Some((r["name"].as_str()?.into(), r["message"].as_str()?.into())))
            .collect()
    }

    /// The csrapprover: approves the requests its recognizers accept (facts: behaviour
    /// csrapprover), as its own identity through the approval subresource.
    pub(super) fn approve_csrs(&self, me: &Caller) {
        let Ok(csrs) = self.base.list_watch(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "",
            "",
        ) else {
            return;
        };
        let recognizers = self.recognizers();
        for csr in csrs {
            let decided = csr["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == json!("Approved") || c["type"] == json!("Denied"));
            if decided {
                continue;
            }
            let Some(message) = recognize(&csr, &recognizers) else {
                continue;
            };
            let name = csr["metadata"]["name"].as_str().unwrap_or("").to_string();
            match me.approve_csr(&name, &message, true) {
                Ok(_) => self.env.log.info(
                    "csr_approver_controller.go:0",
                    &format!("successfully approve yurt-csr({name})"),
                ),
                Err(e) => self.env.log.error(
                    "csr_approver_controller.go:0",
                    &format!("could not approve yurt-csr({name}), {e}"),
                ),
            }
        }
    }
}
/// The recognizer that accepts `csr`, by its condition message: the tag's recognizers in
/// order (facts: behaviour csrapprover; csr_approver_controller.go `recognizers` — v1.7.0
/// dropped v1.6.1's yurt-coordinator client recognizer).
fn recognize(csr: &Value, recognizers: &[(String, String)]) -> Option<String> {
    // spec.request is the base64 of the PEM
    let pem = csr["spec"]["request"]
        .as_str()
        .and_then(|r| base64::engine::general_purpose::STANDARD.decode(r).ok())
        .and_then(|b| String::from_utf8(b).ok())?;
    let (subject, _) = pki::parse_csr(&pem)?;
    let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
    let usages: BTreeSet<&str> = csr["spec"]["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let usages_are =
        |last: &str| usages == BTreeSet::from(["digital signature", "key encipherment", last]);
    let orgs: Vec<&str> = subject.organizations.iter().map(String::as_str).collect();
    let node_cn = subject.common_name.starts_with("system:node:");
    let client = signer == "kubernetes.io/kube-apiserver-client" && usages_are("client auth");
    let tunnel = |cn: &str| client && orgs == ["openyurt:yurttunnel"] && subject.common_name == cn;
    recognizers
        .iter()
        .find(|(name, _)| match name.as_str() {
            "yurthub-node-client" => {
                client
                    && node_cn
                    && orgs.len() >= 2
                    && orgs.iter().all(|o| {
                        *o == "openyurt:yurthub"
                            || *o == "system:nodes"
                            || o.starts_with("openyurt:tenant:")
                    })
            }
            "openyurt-tls-server" => {
                signer == "kubernetes.io/kubelet-serving"
                    && usages_are("server auth")
                    && node_cn
                    && orgs == ["system:nodes"]
                    && !(subject.dns_names.is_empty() && subject.ips.is_empty())
            }
            "tunnel-server-proxy-client" => tunnel("tunnel-proxy-client"),
            "tunnel-agent-client" => tunnel("tunnel-agent-client"),
            "yurt-coordinator-client" => client && orgs == ["openyurt:yurt-coordinator"],
            _ => false,
        })
        .map(|(_, message)| message.clone())
}
