//! The settings a run resolves once from its options and the profile.

use super::tests::{opts, profile};
use super::*;

#[test]
fn image_repository_moves_every_image_and_the_named_ones_still_win() {
    let p = profile();
    let mut o = opts();
    o.image_repository = Some("registry.example.com/mirror".into());
    o.openyurt_version = Some("v1.7.1".into());
    let all = ConvertSettings::resolve(&o, &p);
    assert_eq!(
        all.images["yurt-manager"],
        "registry.example.com/mirror/yurt-manager:v1.7.1"
    );
    assert_eq!(
        all.images["yurthub"],
        "registry.example.com/mirror/yurthub:v1.7.1"
    );
    assert!(
        all.images
            .values()
            .all(|i| i.starts_with("registry.example.com/mirror/")),
        "{:?}",
        all.images
    );
    assert_eq!(all.servant_image, all.images["servant"]);
    // --image and --servant-image name an image in full
    o.images
        .insert("yurthub".into(), "other.example.com/hub:1".into());
    o.servant_image = Some("other.example.com/servant:2".into());
    let named = ConvertSettings::resolve(&o, &p);
    assert_eq!(named.images["yurthub"], "other.example.com/hub:1");
    assert_eq!(named.servant_image, "other.example.com/servant:2");
    assert_eq!(
        named.images["node-servant"],
        "registry.example.com/mirror/node-servant:v1.7.1"
    );
}
