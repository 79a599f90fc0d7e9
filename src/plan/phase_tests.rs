//! The phase tables of convert and revert (`phases.rs`, `convert_phases.rs`,
//! `revert_phases.rs`): every row complete, the walks over them, the pages that document them.

use std::collections::BTreeSet;

use super::ConvertPhase;
use super::phases::*;
use super::revert::RevertPhase;

const NS: Option<&str> = Some(crate::cluster::SYSTEM_NAMESPACE);

/// Every row of a table has an id of its own, a description, permissions, and a place in
/// `ALL` that matches its enum order.
fn check_table<P: PhaseId + Ord>() {
    let mut ids = BTreeSet::new();
    for (i, p) in P::all().iter().enumerate() {
        let row = p.row();
        assert!(!row.id.is_empty(), "{p:?}: no id");
        assert!(ids.insert(row.id), "{p:?}: id {} twice", row.id);
        assert!(!row.about.trim().is_empty(), "{p:?}: no description");
        assert!(
            row.needs.iter().any(|g| !g.is_empty()),
            "{p:?}: no permissions"
        );
        if i > 0 {
            assert!(P::all()[i - 1] < *p, "{p:?}: ALL is not in enum order");
        }
    }
}

#[test]
fn every_phase_row_is_complete() {
    check_table::<ConvertPhase>();
    check_table::<RevertPhase>();
}

#[test]
fn ids_parse_back_and_unknown_ones_name_every_phase() {
    for p in ConvertPhase::ALL {
        assert_eq!(parse::<ConvertPhase>(p.id()), Ok(p));
    }
    for p in RevertPhase::ALL {
        assert_eq!(parse::<RevertPhase>(p.id()), Ok(p));
    }
    assert_eq!(
        parse::<RevertPhase>("nope"),
        Err(
            "unknown phase \"nope\"; phases are lock, preflight, cleanup-jobs, \
             nodes/cloud, nodes/edge, kcm, components, label-nodes, verify"
                .to_string()
        )
    );
}

/// The ids in the first column of a command page's phase table, in order.
fn documented(page: &str) -> Vec<&str> {
    let table = page.split("## Phases").nth(1).expect("a ## Phases section");
    table
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .flat_map(|l| l.split('|').nth(1).unwrap_or("").split(','))
        .map(|id| id.trim().trim_matches('`'))
        .collect()
}

#[test]
fn the_command_pages_document_every_phase_in_run_order() {
    let convert = include_str!("../../docs/commands/convert.md");
    assert_eq!(documented(convert), ConvertPhase::IDS);
    let revert = include_str!("../../docs/commands/revert.md");
    assert_eq!(documented(revert), RevertPhase::IDS);
}

#[test]
fn the_access_check_asks_each_permission_once() {
    for all in [needs::<ConvertPhase>(), needs::<RevertPhase>()] {
        let set: BTreeSet<_> = all.iter().collect();
        assert_eq!(set.len(), all.len());
    }
    // what revert needs beyond convert's runs: deleting the journal and YurtHub's
    // certificate requests
    let convert: BTreeSet<_> = needs::<ConvertPhase>().into_iter().collect();
    let revert: BTreeSet<_> = needs::<RevertPhase>().into_iter().collect();
    assert_eq!(
        revert.difference(&convert).collect::<Vec<_>>(),
        [
            &("delete", "", "configmaps", NS),
            &(
                "delete",
                "certificates.k8s.io",
                "certificatesigningrequests",
                None
            ),
            &(
                "list",
                "certificates.k8s.io",
                "certificatesigningrequests",
                None
            ),
        ]
    );
}

/// Revert mirrors convert: a phase of both has the same id (the journal keys node
/// progress by convert's ids, which revert reads).
#[test]
fn mirrored_phases_keep_converts_ids() {
    let pairs = [
        (RevertPhase::Lock, ConvertPhase::Lock),
        (RevertPhase::Preflight, ConvertPhase::Preflight),
        (RevertPhase::NodesCloud, ConvertPhase::NodesCloud),
        (RevertPhase::NodesEdge, ConvertPhase::NodesEdge),
        (RevertPhase::Kcm, ConvertPhase::Kcm),
        (RevertPhase::Components, ConvertPhase::Components),
        (RevertPhase::LabelNodes, ConvertPhase::LabelNodes),
        (RevertPhase::Verify, ConvertPhase::Verify),
    ];
    for (r, c) in pairs {
        assert_eq!(r.id(), c.id());
    }
}
