//! `yurtctl status`: the `kind: Status` object and its kubectl-style table.

use serde::Serialize;

use crate::cluster::journal::ObjectRef;
use crate::cluster::lock::LockHolder;

/// One node as `status` sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    pub name: String,
    /// `edge`, `cloud`, or empty when convert never chose one.
    pub role: String,
    /// The journal records the node converted (its node phase done).
    pub converted: bool,
    /// The node's NodePool (its pool label), for profiles with NodePools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// A YurtHub mirror pod (`yurt-hub-<node>`) exists.
    pub yurthub: bool,
    pub yurthub_ready: bool,
    /// YurtHub runs on the converted node as a systemd service, which the API does not show
    /// (READY tells whether the kubelet reaches the API server through it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub yurthub_service: bool,
    /// The OpenYurt release the converted node runs (during an upgrade, the old one until its
    /// Job moved it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openyurt_version: Option<String>,
    /// How YurtHub runs on the converted node: `static-pod` or `service`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yurthub_mode: Option<String>,
    pub ready: bool,
    /// The state of the node's latest journal entry: `done`, `failed`, `running`, … or empty.
    pub last_result: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A convert or revert holding the run lock (`status.run`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInProgress {
    /// `convert`, `revert`, or empty when the holder did not record it.
    pub command: String,
    pub holder: String,
    /// When it took the lock, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Its lease has expired: the run is gone (dead or killed) and the next run takes over.
    pub expired: bool,
    /// `a convert run by …, since …`.
    #[serde(skip)]
    pub description: String,
}

impl RunInProgress {
    /// The run holding the lock, as status and dry runs show it.
    pub fn of(h: &LockHolder) -> Self {
        RunInProgress {
            command: h.command.clone().unwrap_or_default(),
            holder: h.identity.clone(),
            since: h.acquire_time.map(|t| format!("{t:.0}")),
            expired: !h.is_live(),
            description: h.describe(),
        }
    }

    /// The line status and dry runs print about it.
    pub fn line(&self) -> String {
        if self.expired {
            format!(
                "{} stopped renewing the lock (it died or was killed); the next convert or \
                 revert takes the lock over and goes on from the journal",
                self.description
            )
        } else {
            format!(
                "{} is in progress: what follows may be half-way through that run",
                self.description
            )
        }
    }
}

/// `-o json|yaml` of `yurtctl status` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    /// A journal exists: the cluster was converted (at least in part) by yurtctl.
    pub converted: bool,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The command that last wrote the journal (`convert`, `revert`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub options: serde_json::Map<String, serde_json::Value>,
    pub created_objects: Vec<ObjectRef>,
    pub adopted_objects: Vec<ObjectRef>,
    /// Who converts and reverts nodes, when the profile switches an upstream converter off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_conversion: Option<String>,
    /// Holder of the lock, when a run is active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_by: Option<String>,
    /// The run holding the lock: what this status shows may be half-way through it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInProgress>,
    pub nodes: Vec<NodeStatus>,
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The table printed on stdout without `-o`.
pub fn status_table(s: &Status) -> String {
    let mut out = String::new();
    if let Some(r) = &s.run {
        out.push_str(&format!("Run:      {}\n", r.line()));
    }
    if !s.converted {
        out.push_str(&s.message);
        out.push('\n');
        return out;
    }
    out.push_str(&format!(
        "Profile:  {}\nCommand:  {} (updated {})\nObjects:  {} created, {} adopted\n",
        s.profile.as_deref().unwrap_or(""),
        s.last_command.as_deref().unwrap_or(""),
        s.updated_at.as_deref().unwrap_or(""),
        s.created_objects.len(),
        s.adopted_objects.len()
    ));
    if let Some(c) = &s.node_conversion {
        out.push_str(&format!("Nodes:    {c}\n"));
    }
    out.push_str(&format!(
        "\n{:<30} {:<6} {:<16} {:<10} {:<9} {:<8} {:<6} {:<8} {}\n",
        "NODE", "ROLE", "POOL", "CONVERTED", "OPENYURT", "YURTHUB", "READY", "LAST", "ERROR"
    ));
    for n in &s.nodes {
        let hub = match (n.yurthub, n.yurthub_ready, n.yurthub_service) {
            (false, _, true) => "service",
            (false, _, false) => "-",
            (true, true, _) => "Ready",
            (true, false, _) => "NotReady",
        };
        out.push_str(&format!(
            "{:<30} {:<6} {:<16} {:<10} {:<9} {:<8} {:<6} {:<8} {}\n",
            n.name,
            if n.role.is_empty() { "-" } else { &n.role },
            n.pool.as_deref().unwrap_or("-"),
            yes_no(n.converted),
            n.openyurt_version.as_deref().unwrap_or("-"),
            hub,
            yes_no(n.ready),
            if n.last_result.is_empty() {
                "-"
            } else {
                &n.last_result
            },
            n.last_error.as_deref().unwrap_or("")
        ));
    }
    out
}
