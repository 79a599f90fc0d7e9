//! The plan summary printed before the confirmation prompt: at 10,000 nodes the full plan is
//! tens of thousands of lines, so the steps of a phase that do the same to many targets are
//! one line with their count and the first few names. `--dry-run` and `-o wide` print the
//! full plan ([`super::render_phases`]). PURE.

use std::collections::HashMap;

use super::Phase;

/// How many names a line of the summary lists before `… and N more`.
pub const SUMMARY_NAMES: usize = 3;

/// Phases as text like [`super::render_phases`], except that steps with the same action, the
/// same kind of target (`node/…`, `job/…`) and the same [`gist`](super::Step::gist) are one
/// line with their count, followed by a line of their first names:
///
/// ```text
///   job    200 nodes     a Job each: node-servant convert …
///          cp-1, w-1, w-2, … and 197 more
/// ```
///
/// A step that shares nothing is printed as it is.
pub fn summarize_phases(phases: &[Phase], action_width: usize, target_width: usize) -> String {
    let mut out = String::new();
    for p in phases {
        out.push_str(&super::phase_line(p));
        // groups in the order of their first step; a target without a kind is never grouped
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut index: HashMap<(&str, &str, std::borrow::Cow<'_, str>), usize> = HashMap::new();
        for (i, s) in p.steps.iter().enumerate() {
            match s.target.split_once('/') {
                Some((kind, _)) => {
                    let key = (s.action.as_str(), kind, s.gist());
                    let g = *index.entry(key).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    });
                    groups[g].push(i);
                }
                None => groups.push(vec![i]),
            }
        }
        for g in groups {
            let first = &p.steps[g[0]];
            if let [_] = g.as_slice() {
                out.push_str(&format!(
                    "  {:<action_width$} {:<target_width$} {}\n",
                    first.action, first.target, first.detail
                ));
                continue;
            }
            let kind = first.target.split_once('/').map_or("", |(k, _)| k);
            let names: Vec<&str> = g
                .iter()
                .map(|&i| p.steps[i].target.split_once('/').map_or("", |(_, n)| n))
                .collect();
            // the names on a line of their own: a detail may hold ':' and ',' itself
            out.push_str(&format!(
                "  {:<action_width$} {:<target_width$} {}\n  {:<action_width$} {}\n",
                first.action,
                format!("{} {kind}s", g.len()),
                first.gist(),
                "",
                first_names(&names, SUMMARY_NAMES)
            ));
        }
    }
    out
}

/// `a, b, c, … and 7 more` (all of them when there are at most `shown`).
pub fn first_names(names: &[&str], shown: usize) -> String {
    if names.len() <= shown {
        return names.join(", ");
    }
    format!(
        "{}, … and {} more",
        names[..shown].join(", "),
        names.len() - shown
    )
}

#[cfg(test)]
mod tests {
    use super::super::Step;
    use super::*;

    fn phase(id: &str, steps: Vec<Step>) -> Phase {
        Phase {
            id: id.into(),
            skipped: false,
            steps,
        }
    }

    #[test]
    fn first_names_table() {
        let names = ["a", "b", "c", "d", "e"];
        for (n, shown, want) in [
            (0, 3, ""),
            (1, 3, "a"),
            (3, 3, "a, b, c"),
            (4, 3, "a, b, c, … and 1 more"),
            (5, 2, "a, b, … and 3 more"),
        ] {
            assert_eq!(
                first_names(&names[..n], shown),
                want,
                "{n} names, {shown} shown"
            );
        }
    }

    #[test]
    fn steps_of_many_targets_are_one_line() {
        let nodes = |role: &str, n: usize| -> Vec<Step> {
            (1..=n)
                .map(|i| {
                    Step::new(
                        "check",
                        format!("node/{role}-{i}"),
                        format!("convert as {role}"),
                    )
                })
                .collect()
        };
        // (phase, its lines after the `phase …` line)
        let cases: Vec<(Phase, Vec<&str>)> = vec![
            (phase("empty", vec![]), vec![]),
            (
                phase("lock", vec![Step::new("lock", "lease/ns/l", "taken")]),
                vec!["  lock  lease/ns/l taken"],
            ),
            (
                phase("one", nodes("edge", 1)),
                vec!["  check node/edge-1 convert as edge"],
            ),
            (
                phase("three", nodes("edge", 3)),
                vec![
                    "  check 3 nodes    convert as edge",
                    "        edge-1, edge-2, edge-3",
                ],
            ),
            (
                phase("roles", {
                    let mut s = vec![Step::new("check", "cluster", "v1.33 supported")];
                    s.extend(nodes("edge", 200));
                    s.extend(nodes("cloud", 2));
                    s
                }),
                vec![
                    "  check cluster    v1.33 supported",
                    "  check 200 nodes  convert as edge",
                    "        edge-1, edge-2, edge-3, … and 197 more",
                    "  check 2 nodes    convert as cloud",
                    "        cloud-1, cloud-2",
                ],
            ),
            (
                // a Job's name differs per node; its gist does not
                phase(
                    "nodes/edge",
                    (1..=5)
                        .flat_map(|i| {
                            let n = format!("w{i}");
                            [
                                Step::job(&n, &format!("yurtctl-convert-{n}"), "convert"),
                                Step::new("files", format!("node/{n}"), "+ /a"),
                            ]
                        })
                        .collect(),
                ),
                vec![
                    "  job   5 nodes    a Job each: convert",
                    "        w1, w2, w3, … and 2 more",
                    "  files 5 nodes    + /a",
                    "        w1, w2, w3, … and 2 more",
                ],
            ),
            (
                // names without a kind are never grouped
                phase(
                    "components",
                    vec![
                        Step::new("apply", "crds", "x"),
                        Step::new("apply", "hub", "x"),
                    ],
                ),
                vec!["  apply crds       x", "  apply hub        x"],
            ),
        ];
        for (p, want) in cases {
            let text = summarize_phases(std::slice::from_ref(&p), 5, 10);
            let mut lines: Vec<&str> = text.lines().collect();
            let head = lines.remove(0);
            assert!(head.starts_with(&format!("phase {}", p.id)), "{head}");
            assert_eq!(lines, want, "phase {}", p.id);
        }
    }

    #[test]
    fn a_single_step_reads_as_in_the_full_plan() {
        let p = phase("verify", vec![Step::new("wait", "node/w1", "Ready")]);
        assert_eq!(
            summarize_phases(std::slice::from_ref(&p), 6, 28),
            super::super::render_phases(std::slice::from_ref(&p), 6, 28)
        );
    }
}
