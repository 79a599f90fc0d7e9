fn main() -> std::process::ExitCode {
    // glibc gives each thread its own arena, and memory freed on one worker stays in that
    // arena's holes: one arena for the whole run (measured in docs/commands/convert.md).
    // SAFETY: mallopt only tunes the allocator; called before any other thread exists.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let cli = yurtctl::cli::parse_from_env();
    yurtctl::app::run(cli).into()
}
