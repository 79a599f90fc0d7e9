//! Preflight findings and `--ignore-preflight-errors`.

use std::collections::BTreeSet;

use crate::cluster::journal::Journal;

use super::tests::{names, opts, profile, three};
use super::*;

#[test]
fn preflight_reports_every_finding() {
    let mut s = three();
    s.server_version = "v1.38.0".into();
    s.server_minor = "38".into();
    let mut o = opts();
    o.edge_nodes = names(&["ghost"]);
    let Err(PlanError::Preflight(f)) = plan_convert(&s, &o, &profile()) else {
        panic!("expected preflight findings")
    };
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0].check, Check::KubernetesVersion);
    assert!(f[0].message.contains("not supported"), "{f:?}");
    assert_eq!(f[1].check, Check::NodeExists);
    assert!(f[1].message.contains("ghost"), "{f:?}");
    let text = PlanError::Preflight(f).to_string();
    assert!(
        text.contains("  - [KubernetesVersion] Kubernetes v1.38.0 (1.38) is not supported"),
        "{text}"
    );
    assert!(
        text.ends_with("turn these into warnings with --ignore-preflight-errors=KubernetesVersion"),
        "the hint names only the checks that may be ignored: {text}"
    );
}

#[test]
fn releases_newer_than_upstream_certifies_convert_with_a_warning_naming_what_it_certifies() {
    // (server minor, warning expected): the default profile converts 1.31-1.37 and upstream
    // certifies 1.31-1.34
    for (minor, warned) in [(31, false), (34, false), (35, true), (36, true), (37, true)] {
        let mut s = three();
        s.server_version = format!("v1.{minor}.2");
        s.server_minor = minor.to_string();
        let p = plan_convert(&s, &opts(), &profile())
            .unwrap_or_else(|e| panic!("1.{minor} converts by default: {e}"));
        let pre = p.phase(PREFLIGHT).unwrap();
        if !warned {
            assert!(p.warnings.is_empty(), "1.{minor}: {:?}", p.warnings);
            assert!(
                pre.steps[0]
                    .detail
                    .contains("is supported by profile openyurt-v1.7")
            );
            continue;
        }
        assert_eq!(p.warnings.len(), 1, "1.{minor}");
        assert_eq!(p.warnings[0].check, Check::KubernetesVersion);
        assert_eq!(
            pre.steps[0].detail,
            format!(
                "[KubernetesVersion] Kubernetes v1.{minor}.2 (1.{minor}) is newer than OpenYurt \
                 v1.7.0 certifies (1.31-1.34); upstream expects newer releases to work but has \
                 not verified them"
            ),
            "a warning of its own, not an ignored error"
        );
        assert_eq!(pre.steps[0].action, "warn");
    }
    // outside what the profile knows, the refusal and its override stay
    let mut s = three();
    s.server_version = "v1.30.9".into();
    s.server_minor = "30".into();
    let Err(PlanError::Preflight(f)) = plan_convert(&s, &opts(), &profile()) else {
        panic!("1.30 is refused")
    };
    assert!(f[0].message.contains("(1.31-1.37)"), "{f:?}");
}

#[test]
fn an_ignored_version_check_is_a_warning_in_the_plan_and_the_other_checks_still_refuse() {
    let mut s = three();
    s.server_version = "v1.38.0".into();
    s.server_minor = "38".into();
    let mut o = opts();
    o.ignore_preflight_errors = [Check::KubernetesVersion].into();
    let p = plan_convert(&s, &o, &profile()).expect("the version finding is only a warning");
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].check, Check::KubernetesVersion);
    let pre = p.phase(PREFLIGHT).unwrap();
    assert_eq!(pre.steps[0].action, "warn");
    assert!(
        pre.steps[0]
            .detail
            .starts_with("[KubernetesVersion] Kubernetes v1.38.0 (1.38) is not supported"),
        "{:?}",
        pre.steps[0]
    );
    assert!(
        !pre.steps
            .iter()
            .any(|s| s.detail.contains("is supported by")),
        "the plan must not claim the version is supported: {pre:?}"
    );
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["warnings"][0]["check"], "KubernetesVersion");
    // the same run with a node that does not exist still refuses, naming only that node
    o.edge_nodes = names(&["ghost"]);
    let Err(PlanError::Preflight(f)) = plan_convert(&s, &o, &profile()) else {
        panic!("a missing node is still an error")
    };
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].check, Check::NodeExists);
    // a supported version carries no warning, and JSON leaves the field out
    let p = plan_convert(&three(), &opts(), &profile()).unwrap();
    assert!(p.warnings.is_empty());
    assert!(serde_json::to_value(&p).unwrap().get("warnings").is_none());
}

#[test]
fn ignore_preflight_errors_takes_kubeadm_spellings() {
    let parse = |v: &[&str]| -> Result<BTreeSet<Check>, String> {
        let parsed: Result<Vec<_>, _> = v.iter().map(|x| Check::parse_ignorable(x)).collect();
        Check::ignored(&parsed?)
    };
    let all: BTreeSet<Check> = Check::IGNORABLE.into_iter().collect();
    type Want = Result<BTreeSet<Check>, &'static str>;
    let table: &[(&[&str], Want)] = &[
        (
            &["KubernetesVersion"],
            Ok([Check::KubernetesVersion].into()),
        ),
        (
            &["kubernetesversion"],
            Ok([Check::KubernetesVersion].into()),
        ),
        (&["Provider", "KUBERNETESVERSION"], Ok(all.clone())),
        (&["all"], Ok(all.clone())),
        (&["ALL"], Ok(all.clone())),
        (&[], Ok(BTreeSet::new())),
        (&["all", "Provider"], Err("all already names every check")),
        (
            &["NodeExists"],
            Err("\"NodeExists\" is not a check that can be ignored"),
        ),
        (
            &["Swap"],
            Err("the checks are KubernetesVersion, Provider, or all"),
        ),
    ];
    for (input, want) in table {
        match (parse(input), want) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{input:?}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{input:?}: {got}"),
            (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_cluster_converted_with_another_profile_is_refused_and_told_which_one() {
    let mut s = three();
    let mut j = Journal::new("convert", "openyurt-v1.6");
    j.set_phase("worker-1", NODES_EDGE, PhaseState::Done, None);
    s.journal = Some(j);
    s.server_version = "v1.31.2".into();
    s.server_minor = "31".into();
    let mut o = opts();
    // not a check a user may wave through
    o.ignore_preflight_errors = Check::IGNORABLE.into_iter().collect();
    let Err(PlanError::Preflight(f)) = plan_convert(&s, &o, &profile()) else {
        panic!("a v1.6 cluster is not converted again with openyurt-v1.7")
    };
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].check, Check::JournalProfile);
    assert_eq!(
        f[0].message,
        "this cluster was converted with profile openyurt-v1.6 (journal \
         kube-system/yurtctl-state, last written by convert), not openyurt-v1.7: re-run with \
         --profile openyurt-v1.6 to go on with that conversion, or run `yurtctl revert` first \
         and then convert with --profile openyurt-v1.7"
    );
    // the same profile goes on
    s.journal.as_mut().unwrap().profile = Profile::DEFAULT.into();
    assert!(plan_convert(&s, &opts(), &profile()).is_ok());
}

#[test]
fn the_two_openyurt_profiles_meet_on_1_31_to_1_37() {
    // minor → what each profile does with it: refuse, convert, or convert with a warning
    let verdict = |profile: &Profile, minor: u32| {
        let mut s = three();
        s.server_version = format!("v1.{minor}.0");
        s.server_minor = minor.to_string();
        match plan_convert(&s, &opts(), profile) {
            Err(_) => "refused",
            Ok(p) if p.warnings.is_empty() => "converts",
            Ok(_) => "warns",
        }
    };
    let (v16, v17) = (Profile::load("openyurt-v1.6").unwrap(), profile());
    for (minor, want16, want17) in [
        (20, "refused", "refused"),
        (21, "converts", "refused"),
        (30, "converts", "refused"),
        (31, "warns", "converts"),
        (34, "warns", "converts"),
        (35, "warns", "warns"),
        (37, "warns", "warns"),
        (38, "refused", "refused"),
    ] {
        assert_eq!(
            (verdict(&v16, minor), verdict(&v17, minor)),
            (want16, want17),
            "1.{minor}: (openyurt-v1.6, openyurt-v1.7)"
        );
    }
}

#[test]
fn an_image_pull_secret_must_exist_and_be_one_the_kubelet_pulls_with() {
    let mut o = opts();
    o.image_pull_secrets = vec!["regcred".into(), "opaque".into(), "gone".into()];
    let mut s = three();
    s.pull_secrets = [
        (
            "regcred".to_owned(),
            Some("kubernetes.io/dockerconfigjson".to_owned()),
        ),
        ("opaque".to_owned(), Some("Opaque".to_owned())),
        ("gone".to_owned(), None),
    ]
    .into();
    let Err(PlanError::Preflight(f)) = plan_convert(&s, &o, &profile()) else {
        panic!("a missing or unusable pull secret is refused before anything changes")
    };
    let found: Vec<(Check, &str)> = f.iter().map(|f| (f.check, f.message.as_str())).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0]
            .1
            .starts_with("Secret kube-system/opaque (--image-pull-secret) is of type Opaque;")
    );
    assert!(
        found[1]
            .1
            .starts_with("Secret kube-system/gone (--image-pull-secret) does not exist;")
    );
    assert!(found[1].1.ends_with(
        "`kubectl create secret docker-registry gone -n kube-system --docker-server=REGISTRY \
         --docker-username=USER --docker-password=PASSWORD`"
    ));
    assert!(found.iter().all(|(c, _)| *c == Check::ImagePullSecret));
    // the settings carry the ones the kubelet can use
    o.image_pull_secrets = vec!["regcred".into()];
    let p = plan_convert(&s, &o, &profile()).unwrap();
    assert_eq!(p.settings.pull_secrets, ["regcred"]);
}
