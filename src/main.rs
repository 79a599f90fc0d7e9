use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = yurtctl::cli::Cli::parse();
    yurtctl::app::run(cli).into()
}
