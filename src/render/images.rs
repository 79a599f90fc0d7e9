//! The images a conversion makes nodes pull, read from what the profile renders rather than
//! from its declaration, so `yurtctl images list` cannot name an image nothing runs or miss one
//! a template hands on (yurt-manager's `--node-servant-image`). PURE.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::{
    BootstrapTokenRef, Profile, RenderContext, Result, TokenSecret, WorkingMode, YurtHubDecl,
    render_cluster_objects, yurthub_manifest,
};

/// The image key of yurtctl's own image, which every node Job runs.
pub const SERVANT_IMAGE_KEY: &str = "servant";

/// One image a conversion pulls, by the profile's image key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PulledImage {
    /// The profile's image key (what `--image KEY=IMAGE` names).
    pub component: String,
    pub image: String,
    /// The feature flag without which no node pulls it (`deploy-yurttunnel`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
}

/// Every image of `images` (the profile's keys, overrides applied) that a conversion with every
/// feature on pulls: what its objects run or pass on, YurtHub's (its static pod's, or the one
/// its binary is copied from) and the servant's (every node Job), in key order.
pub fn pulled_images(
    profile: &Profile,
    images: &BTreeMap<String, String>,
) -> Result<Vec<PulledImage>> {
    // what the objects say does not depend on the cluster: any valid context renders it
    let token = BootstrapTokenRef::new("abcdef", "2000-01-01T00:00:00Z")?;
    let secret = TokenSecret::new("0123456789abcdef")?;
    let mut ctx = RenderContext::new(profile, "https://192.0.2.1:6443", "", token, secret);
    ctx.ca_cert_hash = Some(format!("sha256:{}", "0".repeat(64)));
    ctx.use_images(images);
    ctx.features = profile.flags().into_iter().map(str::to_owned).collect();
    // every string the rendered objects hold, with the feature of the component they come from
    let mut strings: Vec<(String, Option<String>)> = Vec::new();
    for o in render_cluster_objects(profile, &ctx)? {
        let feature = profile
            .components
            .iter()
            .find(|c| c.templates.contains(&o.template))
            .and_then(|c| c.flag.clone());
        let mut found = Vec::new();
        strings_of(&o.to_value(), &mut found);
        strings.extend(found.into_iter().map(|s| (s, feature.clone())));
    }
    let mut node_side: BTreeSet<&str> = BTreeSet::from([SERVANT_IMAGE_KEY]);
    match &profile.yurthub {
        YurtHubDecl::Systemd(s) => {
            node_side.insert(&s.binary_image);
        }
        YurtHubDecl::StaticPod(_) | YurtHubDecl::YurtStaticSet(_) => {
            for mode in [WorkingMode::Edge, WorkingMode::Cloud] {
                strings.push((yurthub_manifest(profile, &ctx, mode)?, None));
            }
        }
    }
    let runs = |image: &str, s: &str| {
        s == image
            || s.strip_suffix(image)
                .is_some_and(|head| head.ends_with('='))
            || s.lines().any(|l| {
                l.trim()
                    .trim_start_matches("image:")
                    .trim()
                    .trim_matches('"')
                    == image
            })
    };
    let mut out = Vec::new();
    for (key, image) in images {
        let features: Vec<&Option<String>> = strings
            .iter()
            .filter(|(s, _)| runs(image, s))
            .map(|(_, f)| f)
            .collect();
        // pulled by every conversion, by one with a feature on, or by none
        let feature = if node_side.contains(key.as_str()) || features.contains(&&None) {
            None
        } else if let Some(f) = features.first() {
            (*f).clone()
        } else {
            continue;
        };
        out.push(PulledImage {
            component: key.clone(),
            image: image.clone(),
            feature,
        });
    }
    Ok(out)
}

fn strings_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

/// What a node Job checks it can pull (`images pull`, `convert --pull-images`): every image of
/// `images` but the servant's, which the Job pulls by running, and those of optional components
/// not in `features`.
pub fn node_pulls(images: &[PulledImage], features: &BTreeSet<String>) -> Vec<String> {
    images
        .iter()
        .filter(|i| i.feature.as_ref().is_none_or(|f| features.contains(f)))
        .filter(|i| i.component != SERVANT_IMAGE_KEY)
        .map(|i| i.image.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(profile: &str) -> Vec<(String, Option<String>)> {
        let p = Profile::load(profile).unwrap();
        pulled_images(&p, &p.images)
            .unwrap()
            .into_iter()
            .map(|i| (i.component, i.feature))
            .collect()
    }

    #[test]
    fn every_profile_lists_what_its_objects_and_nodes_run_and_nothing_else() {
        let always = |k: &str| (k.to_owned(), None);
        let with = |k: &str, f: &str| (k.to_owned(), Some(f.to_owned()));
        assert_eq!(
            listed("openyurt-v1.7"),
            [
                always("node-servant"),
                always("servant"),
                always("yurt-manager"),
                always("yurthub")
            ]
        );
        assert_eq!(
            listed("openyurt-v1.6"),
            [
                always("node-servant"),
                always("servant"),
                always("yurt-manager"),
                always("yurthub")
            ]
        );
        // v0.6's own node-servant is declared but nothing of the profile runs it: our servant
        // does its node work
        assert_eq!(
            listed("legacy-v0.6"),
            [
                always("servant"),
                with("yurt-app-manager", "enable-app-manager"),
                always("yurt-controller-manager"),
                with("yurt-tunnel-agent", "deploy-yurttunnel"),
                with("yurt-tunnel-server", "deploy-yurttunnel"),
                always("yurthub"),
            ]
        );
    }
}
