//! What convert shows on stderr in each surrounding
//! (docs/architecture.md#progress-and-output): bars under a terminal
//! (`script` gives it a pseudo-terminal), plain lines with no control characters in a pipe,
//! no colours with NO_COLOR / --no-color, and a refusal instead of a prompt without a terminal.
//! Each test converts its own small simulated cluster.

mod support;

use std::process::Stdio;

use yurtsim::Layout;

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

async fn sim() -> support::SimEnv {
    // yurtsim's own Kubernetes version, which the default profile supports
    support::start_sim(3, Layout::Kubeadm, |_| {}).await
}

use support::Run;
use support::terminal::{control_chars, has_sgr, in_terminal, redraws};

/// yurtctl with stdin, stdout and stderr all pipes (no terminal anywhere).
async fn piped(env: &support::SimEnv, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = support::yurtctl_command(&env.sim);
    cmd.args(args)
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .envs(envs.iter().copied());
    support::run(cmd, &format!("{args:?}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_refuses_without_yes_then_prints_plain_lines_and_json() {
    let env = sim().await;

    let refused = piped(&env, &["convert"], &[]).await;
    assert_eq!(refused.code, 10, "declined: exit 10");
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert!(refused.stdout.is_empty());

    let run = piped(&env, &["convert", "-y", "-o", "json"], &[]).await;
    assert_eq!(run.code, 0);
    assert_eq!(
        control_chars(&run.stderr),
        Vec::<char>::new(),
        "plain lines only"
    );
    assert_eq!(control_chars(&run.stdout), Vec::<char>::new());
    for phase in ["[lock] done", "[nodes/edge] node worker-1", "[verify] done"] {
        assert!(run.stderr.contains(phase), "stderr shows {phase}");
    }
    // data on stdout, progress on stderr
    assert!(!run.stdout.contains("[lock]"));
    let result: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    insta::with_settings!({filters => vec![(r"in \d+\.\ds", "in [elapsed]")]}, {
        insta::assert_json_snapshot!("convert_result_e2e", result);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_gets_coloured_bars() {
    let env = sim().await;
    let (code, text) = in_terminal(&env.sim, "convert -y", &[]).await;
    assert_eq!(code, 0);
    assert!(redraws(&text), "bars are redrawn in place");
    assert!(has_sgr(&text), "colours on a colour terminal");
    assert!(
        text.contains("[nodes/edge] done"),
        "each phase ends with a line"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_env_keeps_bars_but_drops_colours() {
    let env = sim().await;
    let (code, text) = in_terminal(&env.sim, "convert -y", &[("NO_COLOR", "1")]).await;
    assert_eq!(code, 0);
    assert!(redraws(&text), "still bars");
    assert!(!has_sgr(&text), "no colour sequences with NO_COLOR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_flag_and_plain_progress_in_a_terminal() {
    let env = sim().await;
    let (code, text) = in_terminal(&env.sim, "convert -y --no-color --progress=plain", &[]).await;
    assert_eq!(code, 0);
    // a pseudo-terminal turns \n into \r\n; nothing else
    let text = text.replace("\r\n", "\n");
    assert_eq!(
        control_chars(&text),
        Vec::<char>::new(),
        "plain lines, no colours"
    );
    assert!(text.contains("[nodes/edge] node worker-1"));
}

/// `convert` in a pseudo-terminal (`script`), run by a shell that records the terminal's
/// settings (`stty -g`) before and after it, stopped at its prompt.
struct AtThePrompt {
    script: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    seen: Vec<u8>,
    at_prompt: usize,
    dir: tempfile::TempDir,
}

async fn at_the_prompt(env: &support::SimEnv) -> AtThePrompt {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cmd = format!(
        "stty -g > {d}/before; {BIN} --kubeconfig {} convert; code=$?; stty -g > {d}/after; \
         exit $code",
        env.sim.kubeconfig_path().display()
    );
    // stdin stays open (a pipe we type into), so the prompt waits for a key
    let mut script = tokio::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env_remove("KUBECONFIG")
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("`script` (util-linux) is installed");
    let stdin = script.stdin.take().unwrap();
    let mut stdout = script.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let prompt = "Convert this cluster?";
    let asked = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while !String::from_utf8_lossy(&seen).contains(prompt) {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "ended before asking:\n{}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(
        asked.is_ok(),
        "no prompt:\n{}",
        String::from_utf8_lossy(&seen)
    );
    let at_prompt = seen.len();
    AtThePrompt {
        script,
        stdin,
        stdout,
        seen,
        at_prompt,
        dir,
    }
}

impl AtThePrompt {
    /// Reads to the end (at most 60 s: a run that hangs at its prompt fails here) and returns
    /// convert's exit code, what the terminal showed after the prompt, and whether the
    /// terminal's settings are what they were before convert.
    async fn end(mut self) -> (Option<i32>, String, bool) {
        use tokio::io::AsyncReadExt;
        let ended = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.stdout.read_to_end(&mut self.seen),
        )
        .await;
        let after = String::from_utf8_lossy(&self.seen[self.at_prompt..]).into_owned();
        assert!(ended.is_ok(), "still running 60 s after the stop:\n{after}");
        let status = self.script.wait().await.unwrap();
        eprintln!("--- after the prompt: {after:?}");
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap();
        (status.code(), after, read("before") == read("after"))
    }

    /// convert itself (the shell's child, `script`'s grandchild).
    fn yurtctl_pid(&self) -> i32 {
        let children = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default()
        };
        let shell: u32 = children(self.script.id().unwrap())
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("script runs a shell");
        let yurtctl = children(shell);
        yurtctl
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the shell runs yurtctl")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_prompt_restores_the_cursor_and_exits_130() {
    use tokio::io::AsyncWriteExt;
    let env = sim().await;
    let mut run = at_the_prompt(&env).await;
    // the user presses Ctrl-C: a key if the prompt reads already, else SIGINT from the terminal
    run.stdin.write_all(b"\x03").await.unwrap();
    run.stdin.flush().await.unwrap();
    let (code, after, terminal_as_before) = run.end().await;
    assert_eq!(code, Some(130), "interrupted");
    assert!(after.contains("\x1b[?25h"), "the cursor is shown again");
    assert!(terminal_as_before, "the terminal's settings are given back");
    support::lease_gone(&env.sim, "kube-system", "yurtctl-lock").await;
}

/// SIGTERM while the prompt reads its key in raw mode (a CI job cancelled, `timeout`): the run
/// ends at once with nothing changed, its lock released and the terminal as it was. The kernel
/// may hand a process's signal to any of its threads, and a read on the terminal that the
/// signal does not interrupt waits on for a key; so the signal goes to the thread that listens
/// for stops, not to the one reading (where it would only interrupt the read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_at_the_prompt_gives_the_terminal_back_and_releases_the_lock() {
    let env = sim().await;
    let run = at_the_prompt(&env).await;
    support::lease_taken(&env.sim, "kube-system", "yurtctl-lock").await;
    // the prompt reads in raw mode once it is drawn: let it get there
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let pid = run.yurtctl_pid();
    let listener = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|c| c.trim() == "stop-listener")
        })
        .expect("yurtctl has a thread that listens for stops");
    // SAFETY: tgkill sends a signal to a thread of a process of this test's own
    let sent = unsafe { libc::syscall(libc::SYS_tgkill, pid, listener, libc::SIGTERM) };
    assert_eq!(sent, 0);
    let (code, after, terminal_as_before) = run.end().await;
    assert_eq!(code, Some(130), "stopped: {after}");
    assert!(after.contains("nothing"), "says nothing changed: {after}");
    assert!(after.contains("\x1b[?25h"), "the cursor is shown again");
    assert!(terminal_as_before, "the terminal's settings are given back");
    support::lease_gone(&env.sim, "kube-system", "yurtctl-lock").await;
}

/// Plain mode (CI) keeps a line per event and adds a count line per running phase of node
/// Jobs every `YURTCTL_PROGRESS_PERIOD`; the snapshot (count lines and timings normalized) is
/// what a CI log shows for a small cluster converted one node at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_mode_prints_a_line_per_event_and_periodic_counts() {
    let env = sim().await;
    let run = piped(
        &env,
        &["convert", "-y", "--concurrency", "1"],
        &[("YURTCTL_PROGRESS_PERIOD", "100ms")],
    )
    .await;
    assert_eq!(run.code, 0);
    let counts: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains(" done, ") && l.ends_with("/s"))
        .collect();
    assert!(!counts.is_empty(), "count lines every 100ms");
    for l in &counts {
        let (phase, rest) = l.split_once("] ").expect("[phase] …");
        assert!(
            ["[preflight/nodes", "[kcm", "[nodes/edge", "[nodes/cloud"].contains(&phase),
            "only phases of node Jobs are counted: {l}"
        );
        let done = rest.split(' ').next().unwrap();
        let (n, total) = done.split_once('/').expect("done/total");
        assert!(n.parse::<usize>().unwrap() <= total.parse().unwrap(), "{l}");
    }
    let without_counts: String = run
        .stderr
        .lines()
        .filter(|l| !(l.contains(" done, ") && l.ends_with("/s")))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::with_settings!({filters => vec![
        (r"in \d+\.\ds", "in [elapsed]"),
        (r"Kubernetes v\d+\.\d+\.\d+", "Kubernetes [version]"),
        (r"bootstrap-token-[a-z0-9]{6}", "bootstrap-token-[id]"),
    ]}, {
        insta::assert_snapshot!("convert_plain_progress", without_counts);
    });
}

/// A second Ctrl-C on a terminal while convert saves its journal after the first stopped it:
/// the save finishes, the lock is released, and the run exits 130; the next run resumes
/// without finding the lock held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_the_final_journal_save_saves_it_and_releases_the_lock() {
    use std::time::{Duration, Instant};

    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::Api;
    use yurtsim::faults::RequestFault;
    const DELAY: Duration = Duration::from_secs(3);
    let env = sim().await;
    let sim = &env.sim;
    let client = support::kube_client(sim).await;
    // from the components on every journal write takes 3 s; a Ctrl-C while one is on its way
    // stops the run with records still to save, and the final save begins at once; the second
    // Ctrl-C comes while it is under way
    let written = || sim.metrics().configmap_bytes("yurtctl", "yurtctl-state");
    let mut delayed_from = None;
    let mut first = None;
    let mut pressed = 0;
    let (code, text) = support::terminal::ctrl_c_in_terminal(sim, "convert -y", |text| {
        if delayed_from.is_none() && text.contains("[components] done") {
            sim.faults().add(RequestFault {
                delay_ms: DELAY.as_millis() as u64,
                ..RequestFault::fail("write", "configmaps", 100, 0)
            });
            delayed_from = Some(written());
        }
        let press = match (delayed_from, first) {
            (Some(before), None) => written() > before,
            (_, Some(t)) => pressed == 1 && Instant::elapsed(&t) > Duration::from_millis(500),
            _ => false,
        };
        if press {
            pressed += 1;
            first.get_or_insert_with(Instant::now);
        }
        press
    })
    .await;
    let journal = support::journal_state(&client).await;
    let lease = Api::<Lease>::namespaced(client.clone(), "kube-system")
        .get_opt("yurtctl-lock")
        .await
        .unwrap();
    // a write still on its way would land by now
    tokio::time::sleep(DELAY + Duration::from_millis(500)).await;
    let later = support::journal_state(&client).await;
    sim.faults().clear();
    assert_eq!(code, 130, "interrupted:\n{text}");
    assert!(lease.is_none(), "the lock is released: {lease:?}");
    assert_eq!(pressed, 2, "the save took the second Ctrl-C in its stride");
    let journal = journal.expect("the journal is saved");
    assert!(
        journal["nodes"]["worker-1"]["nodes/edge"]["state"].is_string(),
        "the journal records where the edge nodes are: {journal}"
    );
    assert_eq!(
        Some(journal),
        later,
        "the save was done before the run ended"
    );
    let again = piped(&env, &["convert", "-y"], &[]).await;
    assert_eq!(again.code, 0, "the re-run resumes:\n{}", again.stderr);
}
