//! The tour the playground takes: its steps in one table, and what the steps that are not
//! yurtctl commands do (the example static pod on the workers).

use std::time::Duration;

use yurtsim::Sim;

use crate::app::common::connect_from;
use crate::cli::GlobalArgs;
use crate::cluster::snapshot::{SnapshotOptions, snapshot};
use crate::render::Profile;

/// When a step of the tour runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// The profile runs YurtHub as a static pod (the yurt-hub rollout steps).
    StaticPodHub,
    /// A profile upgrades from this one (`{upgrade_to}` names it).
    Upgradable,
}

/// What a step of the tour does.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// `yurtctl --kubeconfig <sim> ARGS…`: `{profile}` is `--profile`, `{upgrade_to}` the
    /// profile that upgrades from it, `{workers}` one `--node NAME` per worker.
    Yurtctl(&'static [&'static str]),
    /// Puts the example static pod (nginx 1.19.1, container `web`) into every worker's
    /// static-pod directory, as a user would, and waits for its mirror pods to be Ready.
    InstallExample,
}

/// One step of the tour.
pub struct Step {
    pub title: &'static str,
    pub action: Action,
    pub when: When,
}

impl Step {
    /// Why `profile` skips this step, if it does.
    pub fn skipped_by(&self, profile: &Profile) -> Option<String> {
        match self.when {
            When::Always => None,
            When::StaticPodHub => profile.yurthub.static_pod().is_none().then(|| {
                format!(
                    "skipped: profile {} runs YurtHub as a systemd service, not as a static pod",
                    profile.name
                )
            }),
            When::Upgradable => upgrade_target(profile).is_none().then(|| {
                format!(
                    "skipped: no profile upgrades from {} (`yurtctl playground --profile \
                     openyurt-v1.6` shows an upgrade to {})",
                    profile.name,
                    Profile::DEFAULT
                )
            }),
        }
    }
}

/// The profile that upgrades from `profile`, if one does.
pub fn upgrade_target(profile: &Profile) -> Option<String> {
    Profile::names()
        .into_iter()
        .find(|n| Profile::load(n).is_ok_and(|p| p.upgrade_from.contains(&profile.name)))
}

/// The example static pod of the tour: the one staticpod's docs and tests use.
pub const EXAMPLE_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nginx\nspec:\n  \
                               containers:\n  - name: web\n    image: nginx:1.19.1\n";

/// The tour, in order.
pub const STEPS: &[Step] = &[
    Step {
        title: "convert the cluster to OpenYurt",
        action: Action::Yurtctl(&["convert", "-y", "--profile", "{profile}"]),
        when: When::Always,
    },
    Step {
        title: "what convert did, node by node",
        action: Action::Yurtctl(&["status"]),
        when: When::Always,
    },
    Step {
        title: "a static pod of the user's on every worker: nginx 1.19.1",
        action: Action::InstallExample,
        when: When::Always,
    },
    Step {
        title: "hand nginx to a YurtStaticSet, which yurt-manager renders",
        action: Action::Yurtctl(&["staticpod", "adopt", "nginx", "-n", "default", "-y"]),
        when: When::Always,
    },
    Step {
        title: "roll nginx 1.19.2 out to the workers, a sliding window at a time",
        action: Action::Yurtctl(&[
            "staticpod",
            "upgrade",
            "nginx",
            "-n",
            "default",
            "--image",
            "web=nginx:1.19.2",
            "--strategy",
            "advanced-rolling-update",
            "-y",
        ]),
        when: When::Always,
    },
    Step {
        title: "where the nginx rollout stands",
        action: Action::Yurtctl(&[
            "staticpod",
            "status",
            "nginx",
            "-n",
            "default",
            "-o",
            "wide",
        ]),
        when: When::Always,
    },
    Step {
        title: "roll nginx back to the revision before",
        action: Action::Yurtctl(&["staticpod", "rollback", "nginx", "-n", "default", "-y"]),
        when: When::Always,
    },
    Step {
        title: "offer nginx 1.19.2 over the air: each mirror pod gets PodNeedUpgrade",
        action: Action::Yurtctl(&[
            "staticpod",
            "upgrade",
            "nginx",
            "-n",
            "default",
            "--image",
            "web=nginx:1.19.2",
            "--strategy",
            "ota",
            "-y",
        ]),
        when: When::Always,
    },
    Step {
        title: "take the offer on each worker, through its YurtHub's upgrade endpoint",
        action: Action::Yurtctl(&[
            "staticpod",
            "ota",
            "apply",
            "nginx",
            "-n",
            "default",
            "{workers}",
            "-y",
        ]),
        when: When::Always,
    },
    Step {
        title: "every worker runs nginx 1.19.2",
        action: Action::Yurtctl(&[
            "staticpod",
            "status",
            "nginx",
            "-n",
            "default",
            "-o",
            "wide",
        ]),
        when: When::Always,
    },
    Step {
        title: "roll a new YurtHub out to the edge nodes, a sliding window at a time",
        action: Action::Yurtctl(&[
            "staticpod",
            "upgrade",
            "yurt-hub",
            "-n",
            "kube-system",
            "--image",
            "yurt-hub=openyurt/yurthub:v1.6.2",
            "--strategy",
            "advanced-rolling-update",
            "-y",
        ]),
        when: When::StaticPodHub,
    },
    Step {
        title: "where the YurtHub rollout stands",
        action: Action::Yurtctl(&[
            "staticpod",
            "status",
            "yurt-hub",
            "-n",
            "kube-system",
            "-o",
            "wide",
        ]),
        when: When::StaticPodHub,
    },
    Step {
        title: "upgrade OpenYurt itself, node by node",
        action: Action::Yurtctl(&["upgrade", "--profile", "{upgrade_to}", "-y"]),
        when: When::Upgradable,
    },
    Step {
        title: "each node's OpenYurt release and YurtHub after the upgrade",
        action: Action::Yurtctl(&["status"]),
        when: When::Upgradable,
    },
    Step {
        title: "revert: back to the original cluster",
        action: Action::Yurtctl(&["revert", "-y"]),
        when: When::Always,
    },
    Step {
        title: "nothing of yurtctl's is left",
        action: Action::Yurtctl(&["status"]),
        when: When::Always,
    },
];

/// A step's arguments with its placeholders filled in.
pub(super) fn step_args(
    template: &[&str],
    profile: &str,
    upgrade_to: Option<String>,
    workers: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for a in template {
        match *a {
            "{workers}" => {
                for w in workers {
                    out.extend(["--node".to_owned(), w.clone()]);
                }
            }
            "{upgrade_to}" => out.extend(upgrade_to.clone()),
            a => out.push(a.replace("{profile}", profile)),
        }
    }
    out
}

/// The sim's cluster, as yurtctl's own steps reach it.
async fn sim_cluster(g: &GlobalArgs, sim: &Sim) -> Result<crate::cluster::Cluster, String> {
    let mut globals = g.clone();
    globals.kubeconfig = Some(sim.kubeconfig_path());
    connect_from(&globals)
        .await
        .map_err(|_| "cannot connect to the simulated cluster".to_owned())
}

/// The nodes without the control-plane role, by name.
pub(super) async fn workers(g: &GlobalArgs, sim: &Sim) -> Result<Vec<String>, String> {
    let cluster = sim_cluster(g, sim).await?;
    let s = snapshot(&cluster, &SnapshotOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(s.nodes
        .iter()
        .filter(|n| !n.is_control_plane())
        .map(|n| n.name.clone())
        .collect())
}

/// [`Action::InstallExample`]: the manifest in each worker's static-pod directory (as its
/// kubelet's configuration names it), then its mirror pods Ready.
pub(super) async fn install_example(
    g: &GlobalArgs,
    sim: &Sim,
    workers: &[String],
) -> Result<(), String> {
    for w in workers {
        let root = sim.node_root(w);
        let dir = yurtsim::nodes::systemd::load_unit(&root, "kubelet.service")
            .ok()
            .and_then(|u| yurtsim::nodes::kubelet_config::kubelet_view(&root, &u).ok())
            .and_then(|v| v.static_pod_path)
            .ok_or_else(|| format!("node {w}'s kubelet names no static-pod directory"))?;
        let path = root.join(dir.trim_start_matches('/')).join("nginx.yaml");
        std::fs::write(&path, EXAMPLE_POD)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let cluster = sim_cluster(g, sim).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mirrors = crate::cluster::staticset::mirror_pods(&cluster, "default", "nginx")
            .await
            .map_err(|e| e.to_string())?;
        let ready = workers
            .iter()
            .filter(|w| mirrors.by_node.get(*w).is_some_and(|m| m.ready))
            .count();
        if ready == workers.len() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "{ready} of {} nginx mirror pods were Ready within 60 s",
                workers.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
