//! `yurtctl images pull`: on each node, a read-only node Job pulls the images convert would
//! make it pull, with the node's container runtime, and says which it could not.

use serde::Serialize;

use crate::app::common::{block_on, connect_and_snapshot, print_structured};
use crate::app::error::CommandError;
use crate::app::node_servant::ImagePull;
use crate::cli::{GlobalArgs, ImagesPullCmd};
use crate::exec::servant_job::{read_on_nodes, result_field, servant_job};
use crate::exit::Exit;

/// The node Jobs' action label (`yurtctl-pull-images-NODE`).
const PULL_ACTION: &str = "pull-images";

/// `-o json|yaml` of `yurtctl images pull`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    pub profile: String,
    pub openyurt_version: String,
    pub result: String,
    pub exit_code: u8,
    pub message: String,
    pub nodes: Vec<NodePulls>,
}

/// One node's pulls.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePulls {
    pub name: String,
    /// `pulled` (every image), `failed` (some image, or the Job itself) or `skipped` (NotReady).
    pub result: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    pub images: Vec<ImagePull>,
}

pub fn run(g: &GlobalArgs, cmd: &ImagesPullCmd) -> Exit {
    // what the flags alone show wrong, before the cluster is contacted
    let list = match super::images::images_of(&cmd.profile, &cmd.images) {
        Ok(l) => l,
        Err(e) => return e.report(),
    };
    block_on(async {
        let (cluster, snap) = match connect_and_snapshot(g).await {
            Ok(x) => x,
            Err(exit) => return exit,
        };
        let missing: Vec<&String> = cmd
            .nodes
            .iter()
            .filter(|n| !snap.nodes.iter().any(|s| &s.name == *n))
            .collect();
        if !missing.is_empty() {
            return CommandError::Usage(format!(
                "no node named {}: `kubectl get nodes` lists the nodes",
                missing
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .report();
        }
        let chosen = |n: &str| cmd.nodes.is_empty() || cmd.nodes.iter().any(|c| c == n);
        let servant = list
            .images
            .iter()
            .find(|i| i.component == crate::render::SERVANT_IMAGE_KEY)
            .map(|i| i.image.clone())
            .unwrap_or_else(|| crate::cli::DEFAULT_SERVANT_IMAGE.to_owned());
        let pulled = crate::render::node_pulls(&list.images, &Default::default());
        let mut args = Vec::new();
        for i in &pulled {
            args.extend(["--image", i]);
        }
        let mut nodes = Vec::new();
        let mut specs = Vec::new();
        for n in snap.nodes.iter().filter(|n| chosen(&n.name)) {
            if !n.ready {
                nodes.push(NodePulls {
                    name: n.name.clone(),
                    result: "skipped".into(),
                    message: "NotReady: no Job can run there".into(),
                    images: Vec::new(),
                });
                continue;
            }
            specs.push(
                servant_job(
                    PULL_ACTION,
                    &n.name,
                    &servant,
                    "pull-images",
                    &args,
                    cmd.job_timeout,
                    &[],
                )
                .pulling_with(&cmd.image_pull_secrets),
            );
        }
        for (name, log) in read_on_nodes(&cluster, specs, cmd.job_timeout, 200).await {
            let read = log.and_then(|log| {
                result_field(&log, "imagePulls")
                    .and_then(|v| serde_json::from_value::<Vec<ImagePull>>(v).ok())
                    .ok_or_else(|| format!("the Job on {name} printed no pulls"))
            });
            nodes.push(match read {
                Ok(images) => {
                    let failed = images.iter().filter(|i| !i.pulled).count();
                    NodePulls {
                        name,
                        result: if failed == 0 { "pulled" } else { "failed" }.into(),
                        message: if failed == 0 {
                            String::new()
                        } else {
                            format!("cannot pull {failed} of {} image(s)", images.len())
                        },
                        images,
                    }
                }
                // the Job's own image is the servant's: a pod that cannot pull it says so here
                Err(why) => NodePulls {
                    name,
                    result: "failed".into(),
                    message: format!("{why} (the node Job runs the servant image {servant})"),
                    images: Vec::new(),
                },
            });
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let failed = nodes.iter().filter(|n| n.result == "failed").count();
        let exit = if failed == 0 {
            Exit::Ok
        } else {
            Exit::Problems
        };
        let result = ImagePullResult {
            header: crate::naming::ResultHeader::of("ImagePullResult"),
            profile: list.profile.clone(),
            openyurt_version: list.openyurt_version.clone(),
            result: exit.reason().into(),
            exit_code: exit.code(),
            message: format!(
                "{} of {} node(s) pulled every image ({} image(s) each, the servant's included)",
                nodes.iter().filter(|n| n.result == "pulled").count(),
                nodes.len(),
                pulled.len() + 1
            ),
            nodes,
        };
        if !print_structured(g, &result) {
            print!("{}", table(&result));
        }
        eprintln!("{}", result.message);
        exit
    })
}

/// One line per node, and one per image a node could not pull.
fn table(r: &ImagePullResult) -> String {
    let mut out = String::new();
    for n in &r.nodes {
        out.push_str(&format!("{:<8} {}", n.result, n.name));
        if !n.message.is_empty() {
            out.push_str(&format!(": {}", n.message));
        }
        out.push('\n');
        for i in n.images.iter().filter(|i| !i.pulled) {
            out.push_str(&format!("  cannot pull {}: {}\n", i.image, i.message));
        }
    }
    out
}
