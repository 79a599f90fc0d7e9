//! What a node knows of the programs the sim runs in process instead of binaries it does not
//! have (the models of models/): which component and version an image or a binary is
//! ([`for_image`], [`for_binary`], from the facts files alone), the container one is started
//! as ([`Container`]), the handle of one running ([`Run`], also for a real process a service
//! runs), and the kubelet's `$(VAR)` expansion of its arguments ([`expand_args`]).
//!
//! Starting a model is the models' own business: the node is handed `models::start` in
//! `Cluster::start_model` (nodes/cluster.rs; sim.rs sets it), so the nodes layer does not
//! import the models above it.

use std::path::PathBuf;

use tokio::sync::watch;

use crate::facts::{self, Facts};
use crate::version::Version;

/// The components the sim models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    YurtManager,
    YurtHub,
    /// yurt-controller-manager v0.6.1 (legacy profile)
    YurtControllerManager,
    /// yurt-app-manager v0.4.0 (legacy profile)
    YurtAppManager,
    /// yurt-tunnel-server v0.6.1 (legacy profile)
    YurtTunnelServer,
    /// yurt-tunnel-agent v0.6.1 (legacy profile)
    YurtTunnelAgent,
    /// YurtHub v0.6.1 (legacy profile)
    YurtHubV06,
    /// node-servant (only its static-pod-upgrade command, which yurt-manager's upgrade
    /// workers run)
    NodeServant,
}

#[derive(Clone, Copy, Debug)]
pub struct Model {
    pub component: Component,
    pub facts: &'static Facts,
}

/// The model that runs `image`, when the sim has one for that component and version. Other
/// images keep the plain simulated behaviour.
pub fn for_image(image: &str) -> Option<Model> {
    facts::for_image(image).into_iter().find_map(model_of)
}

/// The model of a binary by component and version (a modelled file's first line names them).
pub fn for_binary(component: &str, version: &str) -> Option<Model> {
    facts::all()
        .iter()
        .filter(|f| f.component == component && f.version == version)
        .find_map(model_of)
}

fn model_of(f: &'static Facts) -> Option<Model> {
    const V0_4_0: Version = Version::new(0, 4, 0);
    const V0_6_1: Version = Version::new(0, 6, 1);
    const V1_6_0: Version = Version::new(1, 6, 0);
    const V1_6_1: Version = Version::new(1, 6, 1);
    const V1_7_0: Version = Version::new(1, 7, 0);
    let v = f.release;
    let component = match f.component.as_str() {
        "yurt-manager" if (V1_6_0..=V1_7_0).contains(&v) => Component::YurtManager,
        "yurthub" if (V1_6_0..=V1_7_0).contains(&v) => Component::YurtHub,
        "yurt-controller-manager" if v == V0_6_1 => Component::YurtControllerManager,
        "yurt-app-manager" if v == V0_4_0 => Component::YurtAppManager,
        "yurt-tunnel-server" if v == V0_6_1 => Component::YurtTunnelServer,
        "yurt-tunnel-agent" if v == V0_6_1 => Component::YurtTunnelAgent,
        "yurthub" if v == V0_6_1 => Component::YurtHubV06,
        "node-servant" if v == V1_6_1 || v == V1_7_0 => Component::NodeServant,
        _ => return None,
    };
    f.doc["flags"].is_array().then_some(Model {
        component,
        facts: f,
    })
}

/// The container a model runs as.
#[derive(Clone, Debug)]
pub struct Container {
    pub node: String,
    pub namespace: String,
    pub pod: String,
    /// The pod's ServiceAccount (`None` for static pods, which have no API identity).
    pub service_account: Option<String>,
    /// The command line after the binary, `$(VAR)` references expanded as the kubelet does.
    pub args: Vec<String>,
    pub log: PathBuf,
    /// Append to `log` (a service's journal) instead of starting it afresh (a container's log).
    pub append_log: bool,
    /// The container's environment (literal values and resolved `fieldRef`s).
    pub env: Vec<(String, String)>,
    /// (path in the container, real path) of its hostPath and volume mounts; a service (no
    /// pod) sees the node's root instead.
    pub mounts: Vec<(String, PathBuf)>,
}

impl Container {
    /// An environment variable of the container.
    pub fn env_var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running model: its exit code once it ends, and whether its readiness endpoint answers OK.
pub struct Run {
    pub exit: tokio::task::JoinHandle<i32>,
    /// The exit code once the process has ended.
    pub exited: watch::Receiver<Option<i32>>,
    pub ready: watch::Receiver<bool>,
    pub serving: watch::Receiver<bool>,
}

/// `$(VAR)` references in a container's command and args, expanded as the kubelet does with
/// the container's env (`fieldRef: spec.nodeName` and literal values): `$$` is an escaped `$`,
/// unknown references stay as written (kubernetes/kubernetes
/// third_party/forked/golang/expansion/expand.go, Expand).
pub fn expand_args(args: &[String], env: &[(String, String)]) -> Vec<String> {
    args.iter().map(|a| expand(a, env)).collect()
}

fn expand(input: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = input;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('(')
            && let Some(end) = r.find(')')
        {
            let name = &r[..end];
            match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_expanded_as_the_kubelet_does() {
        let env = vec![("NODE_NAME".to_string(), "edge-1".to_string())];
        let args = [
            "--node-name=$(NODE_NAME)",
            "--join-token=$$(cat /t)",
            "$(UNKNOWN)",
            "a$b",
        ]
        .map(String::from);
        assert_eq!(
            expand_args(&args, &env),
            [
                "--node-name=edge-1",
                "--join-token=$(cat /t)",
                "$(UNKNOWN)",
                "a$b"
            ]
        );
    }
}
