//! `node-servant pull-images`: each image pulled with the node's container runtime, as the
//! kubelet pulls one before it starts it (kubeadm's preflight pulls its images the same way,
//! `crictl pull`); nothing runs. A pull that fails is a result, not a failure of the servant.

use serde::{Deserialize, Serialize};

use super::*;

/// One image and whether the node could pull it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePull {
    pub image: String,
    pub pulled: bool,
    /// Why not, in the runtime's words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

pub(super) fn pull_images(
    r: &mut ServantResult,
    root: &Path,
    images: &[String],
    timeout: Duration,
) -> Result<()> {
    r.image_pulls = pulled(root, images, timeout)?;
    let pulled = r.image_pulls.iter().filter(|p| p.pulled).count();
    r.message = format!("{pulled} of {} image(s) pulled", images.len());
    Ok(())
}

/// Each of `images` pulled with the runtime the node's kubelet uses, or why not.
pub(super) fn pulled(root: &Path, images: &[String], timeout: Duration) -> Result<Vec<ImagePull>> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    let fs = plan(HostFs::new(root))?;
    let argv = plan(servant::kubelet::effective_argv(&fs))?;
    let endpoint = plan(servant::runtime::cri_endpoint(&fs, &argv))?;
    Ok(images
        .iter()
        .map(|image| {
            let pull = match node::host_crictl(&endpoint, &["pull", image], timeout) {
                Ok(_) => ImagePull {
                    image: image.clone(),
                    pulled: true,
                    message: String::new(),
                },
                Err(e) => ImagePull {
                    image: image.clone(),
                    pulled: false,
                    message: crictl_message(&e),
                },
            };
            if pull.pulled {
                tracing::info!("pulled {image}");
            } else {
                tracing::warn!("cannot pull {image}: {}", pull.message);
            }
            pull
        })
        .collect())
}

/// What a failed `crictl` said: the `msg` of its fatal log line (logrus' text format), else
/// the whole error.
fn crictl_message(e: &HostCommandError) -> String {
    let HostCommandError::Failed { stderr, .. } = e else {
        return e.to_string();
    };
    stderr
        .lines()
        .rev()
        .find_map(logrus_msg)
        .unwrap_or_else(|| stderr.trim().to_owned())
}

/// The `msg="…"` value of a logrus line, unquoted (Go's `%q`).
fn logrus_msg(line: &str) -> Option<String> {
    let rest = &line[line.find("msg=\"")? + 5..];
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_pull_says_what_the_runtime_said() {
        let stderr = "time=\"2026-11-29T14:00:00Z\" level=fatal msg=\"pulling image: rpc error: \
                      code = Unknown desc = failed to pull and unpack image \\\"registry.example/\
                      yurthub:v1.7.0\\\": dial tcp: lookup registry.example: no such host\"\n";
        let e = HostCommandError::Failed {
            argv: "crictl pull".into(),
            status: "exit status: 1".into(),
            stderr: stderr.into(),
        };
        assert_eq!(
            crictl_message(&e),
            "pulling image: rpc error: code = Unknown desc = failed to pull and unpack image \
             \"registry.example/yurthub:v1.7.0\": dial tcp: lookup registry.example: no such host"
        );
        let plain = HostCommandError::Failed {
            argv: "crictl pull".into(),
            status: "exit status: 1".into(),
            stderr: "something else\n".into(),
        };
        assert_eq!(crictl_message(&plain), "something else");
    }
}
