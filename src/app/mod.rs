//! One function per command; logging set-up. Below this layer nothing prints.

pub mod common;
pub mod convert;
pub mod diagnose;
pub mod docs;
pub mod error;
pub mod images;
mod images_pull;
pub mod node;
pub mod node_servant;
#[cfg(feature = "playground")]
pub mod playground;
pub mod revert;
pub mod staticpod;
pub mod status;
pub mod upgrade;

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
    // kube-client logs every 5xx answer and refused connection at ERROR; yurtctl retries those
    // and reports what stays failed with its own context, so they show from -vv on
    let requests = if g.verbose >= 2 { "trace" } else { "off" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "{level},kube_client::client::builder={requests}"
        ))
    });
    let color =
        std::io::stderr().is_terminal() && crate::output::terminal::colors_allowed(g.no_color);
    let _ = tracing_subscriber::fmt()
        .with_writer(|| crate::output::tty::LogWriter)
        .with_env_filter(filter)
        .with_target(false)
        .without_time()
        .with_ansi(color)
        .try_init();
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Exit {
    init_logging(&cli.global);
    crate::output::terminal::apply_color_choice(crate::output::terminal::colors_allowed(
        cli.global.no_color,
    ));
    // a node's servant keeps the default signal handling: its Job's end is its stop
    if !matches!(cli.command, Command::NodeServant { .. }) {
        let on_stop = if std::io::stderr().is_terminal() {
            crate::output::terminal::give_back
        } else {
            || {}
        };
        crate::exec::stop::listen(on_stop);
    }
    let exit = match cli.command {
        Command::Convert(cmd) => convert::run(&cli.global, &cmd),
        Command::Revert(cmd) => revert::run(&cli.global, &cmd),
        Command::Upgrade(cmd) => upgrade::run(&cli.global, &cmd),
        Command::Status(cmd) => status::run(&cli.global, &cmd),
        Command::Diagnose(cmd) => diagnose::run(&cli.global, &cmd),
        Command::Images(cmd) => images::run(&cli.global, &cmd),
        Command::Completion(c) => docs::run_completion(&c),
        Command::Man(m) => docs::run_man(&m),
        #[cfg(feature = "playground")]
        Command::Playground(p) => playground::run(&cli.global, &p),
        Command::NodeServant { command } => node_servant::run(&cli.global, command),
        Command::Staticpod(command) => staticpod::run(&cli.global, command),
    };
    // a prompt a stop left behind may have put the terminal in raw mode since
    crate::output::terminal::restore_what_a_prompt_found();
    exit
}
