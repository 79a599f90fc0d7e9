//! `yurtctl completion` and `yurtctl man`: generated from the clap definition, so every
//! command (also ones added later) is covered. The committed copies under `completions/` and
//! `docs/man/` are checked against these by `tests/cli_docs.rs`.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::{Generator, Shell};

use crate::app::error::CommandError;
use crate::cli::{Cli, CompletionCmd, ManCmd};
use crate::exit::Exit;

/// The shells `completions/` holds a script for.
pub const SHELLS: [Shell; 5] = [
    Shell::Bash,
    Shell::Zsh,
    Shell::Fish,
    Shell::PowerShell,
    Shell::Elvish,
];

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut cmd = without_hidden_commands(Cli::command());
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "yurtctl", &mut out);
    out
}

/// Some generators (bash) complete hidden commands too; node-servant is not for people.
fn without_hidden_commands(full: clap::Command) -> clap::Command {
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut cmd = clap::Command::new("yurtctl")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(visible);
    if let Some(a) = full.get_about() {
        cmd = cmd.about(a.clone());
    }
    cmd
}

/// The file name a script is committed and installed under (`yurtctl.bash`, `_yurtctl`, …).
pub fn completion_file_name(shell: Shell) -> String {
    shell.file_name("yurtctl")
}

/// Every man page: `yurtctl.1` and one per visible command and subcommand
/// (`yurtctl-convert.1`, …); hidden commands (node-servant) are left out.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    fn walk(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            walk(sub, out);
        }
        let man = clap_mangen::Man::new(cmd);
        let mut page = Vec::new();
        man.render(&mut page).expect("rendering into memory");
        out.push((man.get_filename(), page));
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, &mut out);
    out.sort();
    out
}

pub fn run_completion(c: &CompletionCmd) -> Exit {
    let mut out = std::io::stdout().lock();
    match out
        .write_all(&completion_script(c.shell))
        .and_then(|()| out.flush())
    {
        Ok(()) => Exit::Ok,
        Err(e) => CommandError::Local(format!("writing the completion script: {e}")).report(),
    }
}

pub fn run_man(m: &ManCmd) -> Exit {
    let pages = man_pages();
    let written = match &m.dir {
        Some(dir) => write_pages(dir, &pages),
        None => {
            let root = pages.iter().find(|(name, _)| name == "yurtctl.1");
            let mut out = std::io::stdout().lock();
            root.map_or(Ok(()), |(_, page)| out.write_all(page))
                .and_then(|()| out.flush())
        }
    };
    match written {
        Ok(()) => Exit::Ok,
        Err(e) => CommandError::Local(format!("writing man pages: {e}")).report(),
    }
}

fn write_pages(dir: &Path, pages: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, page) in pages {
        std::fs::write(dir.join(name), page)?;
    }
    Ok(())
}
