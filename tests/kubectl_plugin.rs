//! yurtctl as a kubectl plugin: kubectl finds `kubectl-yurt` on PATH and runs it; help, usage
//! and errors then read `kubectl yurt …`. Runs the real kubectl (.ci/run installs it).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_yurtctl");

fn kubectl_yurt(plugin_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("kubectl")
        .arg("yurt")
        .args(args)
        .env("PATH", path)
        .env("COLUMNS", "100")
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl is installed (.ci/run installs it)");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn kubectl_runs_the_plugin_and_its_help_reads_kubectl_yurt() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl-yurt")).unwrap();

    let (code, help, err) = kubectl_yurt(dir.path(), &["convert", "--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        help.contains("Usage: kubectl yurt convert [OPTIONS]"),
        "{help}"
    );
    assert!(!help.contains("yurtctl convert"), "{help}");

    let (code, top, _) = kubectl_yurt(dir.path(), &["--help"]);
    assert_eq!(code, 0);
    assert!(
        top.contains("Usage: kubectl yurt [OPTIONS] <COMMAND>"),
        "{top}"
    );

    // usage errors name the plugin too, and exit 2 (kubectl passes the code through)
    let (code, _, err) = kubectl_yurt(dir.path(), &["convert", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Usage: kubectl yurt convert"), "{err}");

    // kubectl lists it among its plugins
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let list = Command::new("kubectl")
        .args(["plugin", "list"])
        .env("PATH", path)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains("kubectl-yurt"), "{listed}");
}

#[test]
fn called_yurtctl_it_reads_yurtctl() {
    let o = Command::new(BIN)
        .args(["convert", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("Usage: yurtctl convert [OPTIONS]"), "{help}");
}
