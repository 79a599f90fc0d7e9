fn main() -> std::process::ExitCode {
    let cli = yurtctl::cli::parse_from_env();
    yurtctl::app::run(cli).into()
}
