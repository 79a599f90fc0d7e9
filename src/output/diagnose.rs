//! `yurtctl diagnose`: the `kind: DiagnoseResult` object and its text, one block per finding.

use serde::Serialize;

use crate::plan::diagnose::{Diagnosis, Severity};

/// `-o json|yaml` of `yurtctl diagnose` (fields are only ever added).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseResult {
    #[serde(flatten)]
    pub header: crate::naming::ResultHeader,
    /// The journal's profile (None: yurtctl did not convert this cluster).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The nodes the node checks looked at (empty: every node).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// The checks that ran.
    pub checks: Vec<&'static str>,
    /// Worst first.
    pub findings: Vec<Diagnosis>,
    pub message: String,
}

impl DiagnoseResult {
    pub fn new(
        profile: Option<String>,
        nodes: Vec<String>,
        checks: Vec<&'static str>,
        findings: Vec<Diagnosis>,
    ) -> Self {
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
        let message = if findings.is_empty() {
            format!("no problem found ({} checks)", checks.len())
        } else {
            format!(
                "{errors} error(s), {warnings} warning(s), {} note(s) ({} checks)",
                findings.len() - errors - warnings,
                checks.len()
            )
        };
        DiagnoseResult {
            header: crate::naming::ResultHeader::of("DiagnoseResult"),
            profile,
            nodes,
            checks,
            findings,
            message,
        }
    }

    /// Whether anything above a warning was found.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// The text on stdout without `-o`: a block per finding, then the count.
pub fn diagnose_text(r: &DiagnoseResult) -> String {
    let mut out = String::new();
    for f in &r.findings {
        out.push_str(&format!(
            "{:<8}{:<21}{}\n        seen: {}\n        fix:  {}\n",
            f.severity.to_string(),
            f.check,
            f.subject,
            f.evidence,
            f.fix
        ));
    }
    out.push_str(&r.message);
    out.push('\n');
    out
}
