//! Why a plan is refused: preflight findings, each with its check, and the planner's errors.

use super::*;

/// A cluster preflight check, named as `--ignore-preflight-errors` takes it. kubeadm's rules:
/// CamelCase names matched case-insensitively, `all` only alone (kubernetes/kubernetes
/// cmd/kubeadm/app/apis/kubeadm/validation/validation.go `ValidateIgnorePreflightErrors`,
/// current source). Unlike kubeadm, a name we do not know is refused rather than ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Check {
    /// The server's Kubernetes minor is outside the profile's supported range.
    KubernetesVersion,
    /// The nodes say the cluster is another kind than `--provider`.
    Provider,
    /// A node named on the command line does not exist.
    NodeExists,
    /// A selected node is NotReady and `--require-all-ready` is set.
    NodeReady,
    /// `--autonomous-nodes` names a node that is not an edge node in this run.
    AutonomousNodes,
    /// nodelifecycle is to be disabled but no kube-controller-manager static pod exists.
    KubeControllerManager,
    /// The caller lacks a permission the command needs.
    Permissions,
    /// A node cannot join the NodePool this run puts it in.
    NodePool,
    /// The journal names a profile this yurtctl does not know, or another than the run's.
    JournalProfile,
    /// A Secret `--image-pull-secret` names is missing or of a type the kubelet cannot pull
    /// with.
    ImagePullSecret,
    /// `yurtctl upgrade` has no way from the cluster's release to the one asked for, or the
    /// cluster is not in a state an upgrade can start from.
    Upgrade,
}

impl Check {
    /// The checks a user may turn into warnings: the cluster looks different from what the
    /// profile was made for, and the user may know better. The others mean the run cannot do
    /// what was asked (a named node is missing, a permission is denied).
    pub const IGNORABLE: [Check; 2] = [Check::KubernetesVersion, Check::Provider];

    pub fn name(self) -> &'static str {
        match self {
            Check::KubernetesVersion => "KubernetesVersion",
            Check::Provider => "Provider",
            Check::NodeExists => "NodeExists",
            Check::NodeReady => "NodeReady",
            Check::AutonomousNodes => "AutonomousNodes",
            Check::KubeControllerManager => "KubeControllerManager",
            Check::Permissions => "Permissions",
            Check::NodePool => "NodePool",
            Check::JournalProfile => "JournalProfile",
            Check::ImagePullSecret => "ImagePullSecret",
            Check::Upgrade => "Upgrade",
        }
    }

    /// One `--ignore-preflight-errors` value: a check name in any case (`Some`), or `all`
    /// (`None`).
    pub fn parse_ignorable(v: &str) -> Result<Option<Check>, String> {
        if v.eq_ignore_ascii_case("all") {
            return Ok(None);
        }
        Check::IGNORABLE
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(v))
            .map(Some)
            .ok_or_else(|| {
                let names: Vec<&str> = Check::IGNORABLE.iter().map(|c| c.name()).collect();
                format!(
                    "{v:?} is not a check that can be ignored; the checks are {}, or all",
                    names.join(", ")
                )
            })
    }

    /// The checks `--ignore-preflight-errors` names (`None` = all); `all` must come alone,
    /// as in kubeadm.
    pub fn ignored(values: &[Option<Check>]) -> Result<BTreeSet<Check>, String> {
        if values.contains(&None) {
            if values.len() > 1 {
                return Err(
                    "--ignore-preflight-errors: all already names every check; leave \
                            the others out"
                        .into(),
                );
            }
            return Ok(Check::IGNORABLE.into_iter().collect());
        }
        Ok(values.iter().flatten().copied().collect())
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one preflight check found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: Check,
    pub message: String,
}

impl Finding {
    pub fn new(check: Check, message: impl Into<String>) -> Self {
        Finding {
            check,
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.check, self.message)
    }
}

/// Why no plan could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Bad options (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The cluster does not allow the conversion (exit 3); every finding, not just the first.
    #[error("{}", preflight_failed(.0))]
    Preflight(Vec<Finding>),
}

pub(super) fn preflight_failed(findings: &[Finding]) -> String {
    let mut s = String::from("preflight failed:");
    for f in findings {
        s.push_str(&format!("\n  - {f}"));
    }
    let ignorable: BTreeSet<Check> = findings
        .iter()
        .map(|f| f.check)
        .filter(|c| Check::IGNORABLE.contains(c))
        .collect();
    if !ignorable.is_empty() {
        let names: Vec<&str> = ignorable.iter().map(|c| c.name()).collect();
        s.push_str(&format!(
            "\n  if you know the cluster is fine, turn these into warnings with \
             --ignore-preflight-errors={}",
            names.join(",")
        ));
    }
    s
}

/// What is wrong with Secret `ns/name`, which `--image-pull-secret` names, found with type
/// `found` (None: it does not exist); None when the kubelet can pull with it (a
/// `kubernetes.io/dockerconfigjson` or `dockercfg` Secret in the pod's namespace).
pub fn pull_secret_problem(ns: &str, name: &str, found: Option<&str>) -> Option<String> {
    const PULLABLE: [&str; 2] = ["kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"];
    let problem = match found {
        None => "does not exist".to_owned(),
        Some(t) if !PULLABLE.contains(&t) => format!("is of type {t}"),
        Some(_) => return None,
    };
    Some(format!(
        "Secret {ns}/{name} (--image-pull-secret) {problem}; the kubelet pulls only with a {} \
         Secret in the pod's namespace: create one with `kubectl create secret docker-registry \
         {name} -n {ns} --docker-server=REGISTRY --docker-username=USER \
         --docker-password=PASSWORD`",
        PULLABLE[0]
    ))
}
