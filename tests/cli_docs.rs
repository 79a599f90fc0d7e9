//! The generated files committed to the repository (completions/, docs/man/) and the `--help`
//! of every visible command stay in step with the clap definition. After changing the CLI
//! (or merging a new command), regenerate everything with
//!
//!     YURTCTL_BLESS=1 INSTA_UPDATE=always cargo test --test cli_docs
//!
//! and review the diff.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");
const REGENERATE: &str = "YURTCTL_BLESS=1 INSTA_UPDATE=always cargo test --test cli_docs";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn bless() -> bool {
    std::env::var_os("YURTCTL_BLESS").is_some()
}

fn yurtctl(args: &[&str]) -> Vec<u8> {
    let o = Command::new(BIN)
        .args(args)
        .env("COLUMNS", "100")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "yurtctl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Compares (or, when blessing, writes) the files of `dir` against `want`; files in `dir`
/// that nothing generates any more are stale.
fn check_dir(dir: &Path, want: &[(String, Vec<u8>)]) {
    if bless() {
        std::fs::create_dir_all(dir).unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if !want.iter().any(|(n, _)| *n == name) {
                std::fs::remove_file(&p).unwrap();
            }
        }
        for (name, content) in want {
            std::fs::write(dir.join(name), content).unwrap();
        }
        return;
    }
    let mut problems = Vec::new();
    for (name, content) in want {
        match std::fs::read(dir.join(name)) {
            Ok(have) if have == *content => {}
            Ok(_) => problems.push(format!("{name} differs from what the CLI generates")),
            Err(_) => problems.push(format!("{name} is missing")),
        }
    }
    let have: BTreeSet<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for name in have {
        if !want.iter().any(|(n, _)| *n == name) {
            problems.push(format!("{name} is stale (no command generates it)"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} is out of date:\n  {}\nregenerate with: {REGENERATE}",
        dir.display(),
        problems.join("\n  ")
    );
}

#[test]
fn completions_match_the_cli() {
    let want: Vec<(String, Vec<u8>)> = yurtctl::app::docs::SHELLS
        .iter()
        .map(|&shell| {
            let name = shell.to_string();
            (
                yurtctl::app::docs::completion_file_name(shell),
                yurtctl(&["completion", &name]),
            )
        })
        .collect();
    // every visible command is completed
    let bash = String::from_utf8_lossy(&want[0].1).into_owned();
    for cmd in visible_commands() {
        let last = cmd.last().unwrap();
        assert!(bash.contains(last.as_str()), "bash completion lacks {last}");
    }
    assert!(
        !bash.contains("node-servant"),
        "hidden commands are not completed"
    );
    check_dir(&repo("completions"), &want);
}

#[test]
fn man_pages_match_the_cli() {
    let out = tempfile::tempdir().unwrap();
    yurtctl(&["man", "--dir", out.path().to_str().unwrap()]);
    let mut want: Vec<(String, Vec<u8>)> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    want.sort();
    let names: BTreeSet<&str> = want.iter().map(|(n, _)| n.as_str()).collect();
    // one page per visible command, none for hidden ones
    for cmd in visible_commands() {
        let page = format!("yurtctl-{}.1", cmd.join("-"));
        assert!(
            names.contains(page.as_str()),
            "no man page {page}: {names:?}"
        );
    }
    assert!(names.contains("yurtctl.1"));
    assert!(
        !names.iter().any(|n| n.contains("node-servant")),
        "{names:?}"
    );
    // without --dir: yurtctl(1) on stdout
    let root = yurtctl(&["man"]);
    assert_eq!(
        root,
        want.iter().find(|(n, _)| n == "yurtctl.1").unwrap().1,
        "`yurtctl man` prints yurtctl.1"
    );
    check_dir(&repo("docs/man"), &want);
}

/// Every visible command path (`["convert"]`, `["staticpod", "upgrade"]`, …).
fn visible_commands() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&yurtctl::cli::Cli::command(), &mut Vec::new(), &mut out);
    out
}

#[test]
fn help_of_every_visible_command() {
    let commands = visible_commands();
    assert!(commands.iter().any(|c| c == &["convert"]), "{commands:?}");
    let mut names = vec![Vec::new()];
    names.extend(commands);
    for path in names {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = String::from_utf8(yurtctl(&args)).unwrap();
        assert!(
            !help.contains('\x1b'),
            "help on a pipe has no escape sequences"
        );
        let name = if path.is_empty() {
            "yurtctl".to_owned()
        } else {
            format!("yurtctl-{}", path.join("-"))
        };
        insta::assert_snapshot!(format!("help__{name}"), help);
    }
}
