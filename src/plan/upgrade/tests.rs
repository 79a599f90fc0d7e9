use std::collections::{BTreeMap, BTreeSet};

use super::objects::storage_of;
use super::*;
use crate::cluster::journal::ObjectRef;
use crate::render::{
    BootstrapTokenRef, RenderContext, RenderedObject, TokenSecret, render_cluster_objects,
};

fn load(name: &str) -> Profile {
    Profile::load(name).unwrap()
}

/// `profile`'s objects as convert renders them, at `version` (its own when None), with every
/// feature on, for any cluster (what differs between two releases does not depend
/// on the cluster's address or token).
pub(super) fn rendered(profile: &Profile, version: Option<&str>) -> Vec<RenderedObject> {
    let token = BootstrapTokenRef::new("abcdef", "2000-01-01T00:00:00Z").unwrap();
    let secret = TokenSecret::new("0123456789abcdef").unwrap();
    let mut ctx = RenderContext::new(profile, "https://192.0.2.1:6443", "", token, secret);
    ctx.ca_cert_hash = Some(format!("sha256:{}", "0".repeat(64)));
    let mut images = profile.images.clone();
    if let Some(v) = version {
        for image in images.values_mut() {
            *image = image.replace(&profile.openyurt_version, v);
        }
        ctx.openyurt_version = v.to_owned();
    }
    ctx.use_images(&images);
    ctx.features = profile.flags().into_iter().map(str::to_owned).collect();
    ctx.edge_nodes = vec!["edge-1".into()];
    ctx.cloud_nodes = vec!["cloud-1".into()];
    render_cluster_objects(profile, &ctx).unwrap()
}

pub(super) fn refs(objects: &[RenderedObject]) -> Vec<ObjectRef> {
    objects
        .iter()
        .map(|o| ObjectRef {
            api_version: o.gvk.api_version(),
            kind: o.gvk.kind.clone(),
            namespace: o.namespace().map(str::to_owned),
            name: o.name().to_owned(),
        })
        .collect()
}

fn shown(keys: &[ObjectKey]) -> Vec<String> {
    keys.iter().map(ObjectKey::to_string).collect()
}

#[test]
fn versions_parse_and_order_as_numbers() {
    let v = |s: &str| s.parse::<OpenYurtVersion>();
    assert!(v("v1.7.10").unwrap() > v("v1.7.9").unwrap());
    assert_eq!(v("v1.7.0").unwrap().to_string(), "v1.7.0");
    for bad in ["1.7.0", "v1.7", "v1.7.0.1", "v1.x.0", "v1.7.0-rc1"] {
        assert!(v(bad).unwrap_err().contains("like v1.7.0"), "{bad}");
    }
}

/// (from, from version, to, to version) → the route's kind, or words of the refusal.
type RouteCase<'a> = (
    &'a Profile,
    Option<&'a str>,
    &'a Profile,
    Option<&'a str>,
    Result<RouteKind, &'a str>,
);

#[test]
fn a_route_moves_forward_within_a_profile_or_to_a_profile_that_upgrades_from_it() {
    let (legacy, v16, v17) = (
        load("legacy-v0.6"),
        load("openyurt-v1.6"),
        load("openyurt-v1.7"),
    );
    let table: [RouteCase; 8] = [
        (&v16, None, &v17, None, Ok(RouteKind::Profile)),
        (&legacy, None, &v16, None, Ok(RouteKind::Profile)),
        (&v17, None, &v17, Some("v1.7.1"), Ok(RouteKind::Patch)),
        (
            &v17,
            None,
            &v17,
            None,
            Err("already runs openyurt-v1.7 (OpenYurt v1.7.0)"),
        ),
        (
            &v17,
            Some("v1.7.1"),
            &v17,
            None,
            Err("older than the openyurt-v1.7 (OpenYurt v1.7.1)"),
        ),
        (
            &legacy,
            None,
            &v17,
            None,
            Err(
                "does not upgrade from legacy-v0.6; it upgrades from openyurt-v1.6: upgrade to one of those first",
            ),
        ),
        (
            &v17,
            None,
            &v16,
            None,
            Err("profile openyurt-v1.6 does not upgrade from openyurt-v1.7"),
        ),
        (
            &v17,
            None,
            &v17,
            Some("v1.7"),
            Err("\"v1.7\" is not an OpenYurt release"),
        ),
    ];
    for (from, fv, to, tv, want) in table {
        let got = route(from, fv, to, tv);
        match (want, got) {
            (Ok(kind), Ok(r)) => {
                assert_eq!(r.kind, kind);
                assert_eq!(r.from, Release::of(from, fv));
                assert_eq!(r.to, Release::of(to, tv));
            }
            (Err(words), Err(e)) => {
                assert!(e.to_string().contains(words), "{e}\nshould say: {words}")
            }
            (want, got) => panic!("{} → {}: want {want:?}, got {got:?}", from.name, to.name),
        }
    }
}

#[test]
fn from_v1_6_to_v1_7_yurt_manager_changes_the_hub_static_sets_go_and_the_service_units_come() {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let (before, after) = (rendered(&v16, None), rendered(&v17, None));
    let none = BTreeMap::new();
    let c = object_changes(&before, &after, &refs(&before), &[], &none);
    let update = |name: &str| {
        c.update
            .iter()
            .find(|u| u.key.to_string() == name)
            .unwrap_or_else(|| panic!("{name} not updated: {:#?}", c.update))
    };
    let deploy = update("deployment.apps/kube-system/yurt-manager");
    assert!(
        deploy
            .fields
            .contains(&"spec.template.spec.containers".to_owned()),
        "{deploy:?}"
    );
    assert!(
        update("customresourcedefinition.apiextensions.k8s.io/nodepools.apps.openyurt.io")
            .fields
            .contains(&"spec.versions".to_owned())
    );
    let deleted = shown(&c.delete);
    for gone in [
        "yurtstaticset.apps.openyurt.io/kube-system/yurt-hub",
        "yurtstaticset.apps.openyurt.io/kube-system/yurt-hub-cloud",
        // v1.7 no longer installs YurtAppOverriders; none exist here
        "customresourcedefinition.apiextensions.k8s.io/yurtappoverriders.apps.openyurt.io",
    ] {
        assert!(
            deleted.contains(&gone.to_owned()),
            "{gone} not in {deleted:#?}"
        );
    }
    let created = shown(&c.create);
    for new in [
        "configmap/kube-system/yurtctl-yurthub-service",
        "configmap/kube-system/yurtctl-yurthub-service-cloud",
    ] {
        assert!(
            created.contains(&new.to_owned()),
            "{new} not in {created:#?}"
        );
    }
    assert!(c.keep.is_empty() && c.release.is_empty());
    // every object is accounted for once
    let keys: BTreeSet<ObjectKey> = after.iter().map(ObjectKey::of_rendered).collect();
    assert_eq!(c.create.len() + c.update.len() + c.unchanged, keys.len());
}

#[test]
fn a_crd_the_target_drops_is_kept_while_objects_of_it_exist_and_adopted_objects_are_released() {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let (before, after) = (rendered(&v16, None), rendered(&v17, None));
    let overriders = "yurtappoverriders.apps.openyurt.io";
    let counts = BTreeMap::from([(overriders.to_owned(), 2)]);
    let mut created = refs(&before);
    // convert found the yurt-hub YurtStaticSet there already (the user's own): adopted
    let pos = created
        .iter()
        .position(|r| r.kind == "YurtStaticSet" && r.name == "yurt-hub")
        .unwrap();
    let adopted = vec![created.remove(pos)];
    let c = object_changes(&before, &after, &created, &adopted, &counts);
    assert_eq!(
        c.keep
            .iter()
            .map(|k| (k.key.name.as_str(), k.objects))
            .collect::<Vec<_>>(),
        [(overriders, 2)]
    );
    assert!(!shown(&c.delete).iter().any(|d| d.contains(overriders)));
    assert_eq!(
        shown(&c.release),
        ["yurtstaticset.apps.openyurt.io/kube-system/yurt-hub"]
    );
    assert!(!c.delete.iter().any(|k| k.name == "yurt-hub"));
}

#[test]
fn from_legacy_to_v1_6_the_old_controllers_give_way_to_yurt_manager() {
    let (legacy, v16) = (load("legacy-v0.6"), load("openyurt-v1.6"));
    let (before, after) = (rendered(&legacy, None), rendered(&v16, None));
    let c = object_changes(&before, &after, &refs(&before), &[], &BTreeMap::new());
    let deleted = shown(&c.delete);
    for gone in [
        "deployment.apps/kube-system/yurt-controller-manager",
        "deployment.apps/kube-system/yurt-app-manager",
    ] {
        assert!(
            deleted.contains(&gone.to_owned()),
            "{gone} not in {deleted:#?}"
        );
    }
    assert!(shown(&c.create).contains(&"deployment.apps/kube-system/yurt-manager".to_owned()));
    assert_eq!(KcmChange::of(&legacy, &v16), Some(KcmChange::Enable));
    assert_eq!(KcmChange::of(&v16, &load("openyurt-v1.7")), None);
}

#[test]
fn a_patch_release_changes_images_only() {
    let v17 = load("openyurt-v1.7");
    let (before, after) = (rendered(&v17, None), rendered(&v17, Some("v1.7.1")));
    let c = object_changes(&before, &after, &refs(&before), &[], &BTreeMap::new());
    assert!(c.create.is_empty() && c.delete.is_empty(), "{c:#?}");
    let updated = shown(&c.update.iter().map(|u| u.key.clone()).collect::<Vec<_>>());
    assert_eq!(
        updated,
        ["deployment.apps/kube-system/yurt-manager"],
        "{c:#?}"
    );
    assert!(crd_changes(&before, &after, &BTreeMap::new()).is_empty());
}

#[test]
fn nodepools_move_to_storage_version_v1beta2_and_are_migrated_when_there_are_any() {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let (before, after) = (rendered(&v16, None), rendered(&v17, None));
    let pools = "nodepools.apps.openyurt.io";
    let none = crd_changes(&before, &after, &BTreeMap::new());
    let np = none.iter().find(|c| c.name == pools).unwrap();
    assert_eq!(storage_of(&np.before), Some("v1beta1"));
    assert_eq!(storage_of(&np.after), Some("v1beta2"));
    assert!(!np.migrate, "no NodePool exists: nothing to migrate");
    let some = crd_changes(&before, &after, &BTreeMap::from([(pools.to_owned(), 3)]));
    let np = some.iter().find(|c| c.name == pools).unwrap();
    assert!(np.migrate && np.objects == 3);
    assert_eq!(
        np.after.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "v1alpha1 (served)",
            "v1beta1 (served)",
            "v1beta2 (served, storage)"
        ]
    );
}

#[test]
fn a_rollback_bridges_nodepools_back_to_v1beta1_and_an_upgrade_needs_no_bridge() {
    let (v16, v17) = (load("openyurt-v1.6"), load("openyurt-v1.7"));
    let (old, new) = (rendered(&v16, None), rendered(&v17, None));
    let pools = "nodepools.apps.openyurt.io";
    // no NodePool exists: the rollback still needs v1beta2 out of status.storedVersions
    let back = crd_changes(&new, &old, &BTreeMap::new());
    let bridges = storage_bridges(&new, &back);
    let names: Vec<&str> = bridges.iter().map(|b| b.crd.name()).collect();
    assert_eq!(names, [pools]);
    let b = &bridges[0];
    assert_eq!(b.version, "v1beta1");
    let versions: Vec<(String, bool, bool)> = b.crd.to_value()["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_owned(),
                v["served"] == true,
                v["storage"] == true,
            )
        })
        .collect();
    // v1.7's CRD, every version still served, v1beta1 the storage version again
    assert_eq!(
        versions,
        [
            ("v1alpha1".to_owned(), true, false),
            ("v1beta1".to_owned(), true, true),
            ("v1beta2".to_owned(), true, false)
        ]
    );
    // forwards, v1.6's CRD does not serve v1beta2: the upgrade migrates after applying
    let forward = crd_changes(&old, &new, &BTreeMap::from([(pools.to_owned(), 3)]));
    assert!(storage_bridges(&old, &forward).is_empty());
}

#[test]
fn each_route_names_the_node_files_it_changes_and_keeps() {
    let (legacy, v16, v17) = (
        load("legacy-v0.6"),
        load("openyurt-v1.6"),
        load("openyurt-v1.7"),
    );
    let files = |a: &Profile, b: &Profile, v: Option<&str>| {
        let r = route(a, None, b, v).unwrap();
        node_files(a, b, &r)
            .into_iter()
            .map(|f| format!("{} {}", f.action.mark(), f.path))
            .collect::<Vec<_>>()
    };
    let kept = [
        "= /var/lib/yurthub",
        "= /etc/kubernetes/cache",
        "= /var/lib/openyurt/kubelet.conf",
    ];
    let with_kept = |head: &[&str]| {
        head.iter()
            .chain(kept.iter())
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        files(&v16, &v17, None),
        with_kept(&[
            "- <static-pod dir>/yurthub.yaml",
            "+ /usr/local/bin/yurthub",
            "+ /etc/systemd/system/yurthub.service",
            "+ /etc/systemd/system/yurthub.service.d/10-yurthub.conf",
        ])
    );
    assert_eq!(
        files(&legacy, &v16, None),
        with_kept(&[
            "- <static-pod dir>/yurt-hub.yaml",
            "+ <static-pod dir>/yurthub.yaml",
            "- /var/lib/yurtctl/yurthub/join-token",
            "+ /var/lib/yurthub/bootstrap-hub.conf",
        ])
    );
    assert_eq!(
        files(&v17, &v17, Some("v1.7.1")),
        with_kept(&[
            "~ /usr/local/bin/yurthub",
            "~ /etc/systemd/system/yurthub.service",
            "~ /etc/systemd/system/yurthub.service.d/10-yurthub.conf",
        ])
    );
}

#[test]
fn changed_fields_name_the_paths_that_differ_down_to_four_levels() {
    let a = serde_json::json!({"apiVersion": "v1", "data": {"a": "1", "b": "2"},
        "spec": {"template": {"spec": {"containers": [{"image": "x:1"}], "x": 1}}}});
    let b = serde_json::json!({"apiVersion": "v2", "data": {"a": "1", "c": "3"},
        "spec": {"template": {"spec": {"containers": [{"image": "x:2"}], "x": 1}}}});
    assert_eq!(
        changed_fields(&a, &b),
        ["data.b", "data.c", "spec.template.spec.containers"]
    );
    assert!(changed_fields(&a, &a).is_empty());
}
