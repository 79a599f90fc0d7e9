//! `yurtctl convert` at the command-line edge: help text and usage errors (no cluster needed).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .args(args)
        .env("COLUMNS", "100")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn convert_help_is_stable() {
    let (code, top, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(top.contains("convert"), "{top}");
    let (code, help, _) = run(&["convert", "--help"]);
    assert_eq!(code, 0);
    for phase in yurtctl::plan::CONVERT_PHASES {
        assert!(help.contains(phase), "--help names phase {phase}");
    }
    insta::assert_snapshot!("convert_help", help);
}

#[test]
fn usage_errors_exit_2_before_any_connection() {
    for args in [
        &["convert", "--skip-phases", "nodes"][..],
        &["convert", "--edge-nodes", "a,B"],
        &["convert", "--cloud-nodes", "a", "--edge-nodes", "a"],
        &["convert", "--all-edge", "--edge-nodes", "a"],
        &["convert", "--concurrency", "0"],
        &["convert", "--job-timeout", "soon"],
        &["convert", "--profile", "openyurt-v9"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!err.is_empty(), "{args:?}");
    }
    // what the options and the profile alone decide is refused before the kubeconfig is
    // even read (a missing one would be another error)
    for (args, names) in [
        (&["--image", "nope=img:1"][..], "--image nope"),
        (
            &["--openyurt-version", "v1.2.3"],
            "--openyurt-version v1.2.3",
        ),
        (&["--autonomous-nodes", "a", "--cloud-nodes", "a"], "node a"),
        (&["--token-ttl", "1m"], "--token-ttl 60s"),
        (&["--deploy-yurttunnel"], "--deploy-yurttunnel"),
    ] {
        let mut all = vec!["convert", "--kubeconfig", "/nonexistent/kubeconfig"];
        all.extend_from_slice(args);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert!(!err.contains("/nonexistent"), "{args:?}: {err}");
    }
}
