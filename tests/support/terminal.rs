//! yurtctl in a terminal: `script` (util-linux) gives it a pseudo-terminal, and what the
//! terminal shows is read back with and without escape sequences.

use std::process::Stdio;

use yurtsim::Sim;

/// yurtctl under `script` (util-linux): stdout and stderr are one pseudo-terminal, whose
/// bytes come back here.
pub async fn in_terminal(sim: &Sim, args: &str, envs: &[(&str, &str)]) -> (i32, String) {
    let cmd = format!(
        "{} --kubeconfig {} {args}",
        env!("CARGO_BIN_EXE_yurtctl"),
        sim.kubeconfig_path().display()
    );
    let out = tokio::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "120")
        .env_remove("KUBECONFIG")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .await
        .expect("`script` (util-linux) is installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("--- script {args}: {:?}\n{text}", out.status);
    (out.status.code().unwrap_or(-1), text)
}

/// Control characters other than newline and tab (escape sequences, carriage returns).
pub fn control_chars(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

/// SGR sequences (`ESC [ … m`): colours and bold.
pub fn has_sgr(s: &str) -> bool {
    s.split('\x1b').skip(1).any(|rest| {
        rest.strip_prefix('[').is_some_and(|r| {
            r.chars()
                .find(|c| !(c.is_ascii_digit() || *c == ';'))
                .is_some_and(|c| c == 'm')
        })
    })
}

/// Cursor movement or line erasing (what redrawing bars does).
pub fn redraws(s: &str) -> bool {
    s.contains("\x1b[2K") || s.contains("\x1b[1A") || s.contains('\r')
}

/// The text a terminal shows, less escape sequences (colours, cursor moves) and carriage
/// returns: what the tests read.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ parameters final-byte (@ to ~)
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
