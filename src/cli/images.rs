//! The image flags convert and `yurtctl images list` share, and `yurtctl images`.

use clap::{Args, Subcommand};

use super::values::image_ref;

/// `COMPONENT=IMAGE`; which components exist is the profile's to say (`plan::check_images`).
fn component_image(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((c, i)) if !c.is_empty() && !i.is_empty() => Ok((c.to_owned(), image_ref(i)?)),
        _ => Err(format!(
            "{s:?} is not COMPONENT=IMAGE (for example yurthub=registry.example.com/openyurt/yurthub:v1.6.1)"
        )),
    }
}

/// `vMAJOR.MINOR.PATCH`.
fn openyurt_version(s: &str) -> Result<String, String> {
    let ok = s
        .strip_prefix('v')
        .map(|v| v.split('.').collect::<Vec<_>>())
        .is_some_and(|p| {
            p.len() == 3
                && p.iter()
                    .all(|x| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit()))
        });
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:?} is not an OpenYurt release like v1.6.1"))
    }
}

fn image_repository(s: &str) -> Result<String, String> {
    crate::reference::check_repository(s).map(|()| s.to_owned())
}

/// Which images a run uses, on top of the profile's.
#[derive(Debug, Clone, Args)]
pub struct ImageFlags {
    /// Image of the node Jobs (yurtctl's own image) [default: the profile's]
    #[arg(long, value_name = "IMAGE", value_parser = image_ref)]
    pub servant_image: Option<String>,

    /// Another patch release of the profile's OpenYurt version (sets the OpenYurt image tags)
    #[arg(long, value_name = "VERSION", value_parser = openyurt_version)]
    pub openyurt_version: Option<String>,

    /// Pull every image from this registry (and path) instead, keeping its name and tag, as
    /// kubeadm's flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0
    /// (--image and --servant-image still name one image in full)
    #[arg(long, value_name = "REPOSITORY", value_parser = image_repository)]
    pub image_repository: Option<String>,

    /// Use IMAGE for COMPONENT (repeatable; components are the profile's image keys)
    #[arg(long = "image", value_name = "COMPONENT=IMAGE", value_parser = component_image)]
    pub images: Vec<(String, String)>,
}

impl ImageFlags {
    /// These flags in the planner's options.
    pub fn apply(&self, o: &mut crate::plan::ConvertOptions) {
        o.servant_image = self.servant_image.clone();
        o.openyurt_version = self.openyurt_version.clone();
        o.image_repository = self.image_repository.clone();
        o.images = self.images.iter().cloned().collect();
    }
}

#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Print every image a conversion makes nodes pull, one per line (read-only; no cluster)
    ///
    /// What convert's components run or hand on, YurtHub's image and the servant's (every node
    /// Job), with the same --profile, --openyurt-version, --image-repository, --image and
    /// --servant-image as convert; images of optional components (--deploy-yurttunnel,
    /// --enable-app-manager) included. Mirror these into a private registry, then convert with
    /// --image-repository. -o json|yaml print a `kind: ImageList` with each image's component.
    List(ImagesListCmd),
    /// Pull those images on the nodes, without running them, to check each node can
    ///
    /// A read-only node Job on each node (every Ready node, or the NODEs named) pulls with the
    /// node's container runtime (`crictl pull`) every image convert would make it pull: the
    /// servant's image by running the Job, the others through it; images of optional
    /// components are left out. The Jobs are deleted afterwards. Run it before convert in an
    /// air-gapped cluster; exit 7 (`problems`) when a node cannot pull an image, each with
    /// what its runtime said. -o json|yaml print a `kind: ImagePullResult`.
    Pull(ImagesPullCmd),
}

#[derive(Debug, Args)]
pub struct ImagesPullCmd {
    /// Nodes to pull on (default: every Ready node)
    #[arg(value_name = "NODE", value_parser = super::values::node_name)]
    pub nodes: Vec<String>,

    /// Component set whose images to pull
    #[arg(long, value_name = "PROFILE", default_value = crate::render::Profile::DEFAULT)]
    pub profile: String,

    #[command(flatten)]
    pub images: ImageFlags,

    /// A Secret in kube-system the node Jobs pull with (repeatable); the nodes' runtime pulls
    /// the other images with its own credentials, as the kubelet's pulls for pods without
    /// pull Secrets do
    #[arg(long = "image-pull-secret", value_name = "NAME", value_parser = super::values::secret_name)]
    pub image_pull_secrets: Vec<String>,

    /// How long each node's Job may take, its pulls included
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = super::duration::parse_duration)]
    pub job_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ImagesListCmd {
    /// Component set whose images to list
    #[arg(long, value_name = "PROFILE", default_value = crate::render::Profile::DEFAULT)]
    pub profile: String,

    #[command(flatten)]
    pub images: ImageFlags,
}
