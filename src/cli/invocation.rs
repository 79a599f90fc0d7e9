//! How the binary was invoked: as `yurtctl`, or as the kubectl plugin `kubectl-yurt` (then
//! help, usage and errors read `kubectl yurt …`).

use std::ffi::OsStr;
use std::path::Path;

use clap::{CommandFactory, FromArgMatches};

use super::Cli;

/// The command name users typed, from `argv[0]`.
pub fn bin_name_for(argv0: &OsStr) -> &'static str {
    let file = Path::new(argv0)
        .file_stem()
        .and_then(OsStr::to_str)
        .unwrap_or_default();
    // kubectl runs `kubectl-yurt` (or a copy `kubectl-yurt.exe` on Windows)
    if file == "kubectl-yurt" {
        "kubectl yurt"
    } else {
        "yurtctl"
    }
}

/// Parses the process arguments with the name it was invoked by; exits on usage errors (2),
/// `--help` and `--version` (0), as clap does.
pub fn parse_from_env() -> Cli {
    let args: Vec<_> = std::env::args_os().collect();
    let bin = args.first().map_or("yurtctl", |a| bin_name_for(a));
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || args.iter().skip(1).any(|a| a == "--no-color");
    let mut cmd = Cli::command().bin_name(bin);
    if no_color {
        cmd = cmd.color(clap::ColorChoice::Never);
    }
    let matches = cmd.get_matches_from(args);
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_read_kubectl_yurt() {
        for (argv0, want) in [
            ("yurtctl", "yurtctl"),
            ("/usr/local/bin/yurtctl", "yurtctl"),
            ("/usr/local/bin/kubectl-yurt", "kubectl yurt"),
            ("kubectl-yurt", "kubectl yurt"),
            ("kubectl-yurt.exe", "kubectl yurt"),
            ("kubectl-yurtish", "yurtctl"),
            ("", "yurtctl"),
        ] {
            assert_eq!(bin_name_for(OsStr::new(argv0)), want, "{argv0}");
        }
    }
}
