//! `yurtctl upgrade`'s result.

use std::collections::BTreeMap;

use serde::Serialize;

use super::NodeResult;
use crate::plan::upgrade::Release;

/// `-o json` result of `yurtctl upgrade` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    /// Where the cluster came from and goes to (`profile`, `openyurtVersion`).
    pub from: Release,
    pub to: Release,
    /// `ok`, `partial`, `timeout`, … ([`crate::exit::Exit::reason`]).
    pub result: String,
    pub exit_code: u8,
    pub message: String,
    pub nodes: Vec<NodeResult>,
    /// Objects deleted because the target has no use for them (`Kind ns/name`).
    pub deleted_objects: Vec<String>,
    /// CRDs whose objects were written again at a new storage version, with how many.
    pub migrated: BTreeMap<String, usize>,
    /// Every phase ran: the cluster is at `to`.
    pub finished: bool,
    /// `upgrade --rollback`: `to` is the release the upgrade came from.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rollback: bool,
}

impl UpgradeResult {
    pub fn new(from: Release, to: Release) -> Self {
        UpgradeResult {
            header: crate::naming::ResultHeader::of("UpgradeResult"),
            from,
            to,
            result: crate::exit::Exit::Ok.reason().into(),
            exit_code: 0,
            message: String::new(),
            nodes: Vec::new(),
            deleted_objects: Vec::new(),
            migrated: BTreeMap::new(),
            finished: false,
            rollback: false,
        }
    }
}
