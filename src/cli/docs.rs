//! `yurtctl completion` and `yurtctl man`: flags only; the generators are in `app::docs`.

use std::path::PathBuf;

use clap::Args;

pub use clap_complete::Shell;

/// Flags of `yurtctl completion`.
#[derive(Debug, Clone, Args)]
pub struct CompletionCmd {
    /// The shell to complete for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// Flags of `yurtctl man`.
#[derive(Debug, Clone, Args)]
pub struct ManCmd {
    /// Write every page (yurtctl.1, yurtctl-convert.1, …) into this directory instead of
    /// printing yurtctl(1) on stdout
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
