//! One function per command; logging set-up. Below this layer nothing prints.

pub mod common;
pub mod convert;
pub mod node;
pub mod node_servant;
pub mod staticpod;

use std::io::IsTerminal;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::exit::Exit;

/// Human log lines on stderr: info by default, `-v` debug, `-vv` trace, `-q` warnings only.
/// `RUST_LOG` overrides.
pub fn init_logging(g: &GlobalArgs) {
    let level = match (g.quiet, g.verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false)
        .without_time()
        .with_ansi(color)
        .try_init();
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Exit {
    init_logging(&cli.global);
    match cli.command {
        Command::Convert(cmd) => convert::run(&cli.global, &cmd),
        Command::NodeServant { command } => node_servant::run(&cli.global, command),
        Command::Staticpod(command) => staticpod::run(&cli.global, command),
    }
}
