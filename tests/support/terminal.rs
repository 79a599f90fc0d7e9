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

/// yurtctl on a pseudo-terminal whose user presses Ctrl-C each time `press` says so, until
/// it ends. `press` sees the visible text so far, as output comes and every 20 ms (it may
/// look at or change the sim first). Returns the exit code and the visible text of the run.
pub async fn ctrl_c_in_terminal(
    sim: &Sim,
    args: &str,
    mut press: impl FnMut(&str) -> bool,
) -> (i32, String) {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let cmd = format!(
        "exec {} --kubeconfig {} {args}",
        env!("CARGO_BIN_EXE_yurtctl"),
        sim.kubeconfig_path().display()
    );
    // stdin is a pipe into the terminal: a 0x03 written to it is the user's Ctrl-C
    let mut script = tokio::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "120")
        .env_remove("KUBECONFIG")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("`script` (util-linux) is installed");
    let mut stdin = script.stdin.take().unwrap();
    let mut stdout = script.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    let ran = tokio::time::timeout(Duration::from_secs(180), async {
        loop {
            // a Ctrl-C after the end goes nowhere
            if press(&visible(&String::from_utf8_lossy(&seen))) {
                let _ = stdin.write_all(b"\x03").await;
                let _ = stdin.flush().await;
            }
            tokio::select! {
                n = stdout.read(&mut buf) => match n {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                },
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    })
    .await;
    let text = visible(&String::from_utf8_lossy(&seen));
    assert!(ran.is_ok(), "no end within 180 s:\n{text}");
    let status = script.wait().await.unwrap();
    eprintln!("--- script {args} (Ctrl-C): {status:?}\n{text}");
    (status.code().unwrap_or(-1), text)
}
