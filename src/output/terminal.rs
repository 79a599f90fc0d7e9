//! Terminal decisions made once per run: which reporter shows progress, whether colours are on,
//! and the terminal given back as it was when the user presses Ctrl-C.

/// How progress reaches stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    /// indicatif spinners and bars.
    Bars,
    /// One plain line per event.
    Lines,
    /// Nothing.
    Silent,
}

/// What the run's surroundings say; passed in rather than queried so every row of the table
/// is testable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Surroundings {
    pub stderr_is_terminal: bool,
    /// `CI` is set (many CI systems give jobs a pseudo-terminal).
    pub ci: bool,
    /// `TERM=dumb`.
    pub dumb: bool,
}

impl Surroundings {
    pub fn of_process() -> Self {
        use std::io::IsTerminal;
        Surroundings {
            stderr_is_terminal: std::io::stderr().is_terminal(),
            ci: std::env::var_os("CI").is_some_and(|v| !v.is_empty()),
            dumb: std::env::var_os("TERM").is_some_and(|t| t == "dumb"),
        }
    }
}

/// `--progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Progress {
    // bars on a terminal (stderr), plain lines in CI (`CI` set) and pipes
    #[default]
    Auto,
    // spinners and bars
    Bars,
    // one line per event
    Plain,
    // no progress (results and errors only)
    None,
}

/// `--progress` and `-q` against the surroundings.
///
/// | --progress | -q | terminal, no CI | CI or pipe or TERM=dumb |
/// |---|---|---|---|
/// | auto  | no  | bars  | lines |
/// | bars  | no  | bars  | bars  |
/// | plain | no  | lines | lines |
/// | none  | any | —     | —     |
/// | any   | yes | —     | —     |
pub fn resolve(progress: Progress, quiet: bool, s: Surroundings) -> Display {
    if quiet {
        return Display::Silent;
    }
    match progress {
        Progress::None => Display::Silent,
        Progress::Plain => Display::Lines,
        Progress::Bars => Display::Bars,
        Progress::Auto if s.stderr_is_terminal && !s.ci && !s.dumb => Display::Bars,
        Progress::Auto => Display::Lines,
    }
}

/// Whether colours are allowed: not with `--no-color`, nor with `NO_COLOR` set to anything
/// non-empty (<https://no-color.org>).
pub fn colors_allowed(no_color_flag: bool) -> bool {
    !no_color_flag && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Turns colours off for everything drawn through `console` (indicatif, dialoguer, our styles).
pub fn apply_color_choice(allowed: bool) {
    if !allowed {
        console::set_colors_enabled(false);
        console::set_colors_enabled_stderr(false);
    }
}

/// On a terminal a stop (Ctrl-C, SIGTERM) must not leave the cursor hidden (a prompt or a bar
/// may have hidden it) nor the terminal in the raw mode a prompt reads its key in. Called on
/// each stop (`exec::stop::listen`), before the run ends its own way, and when the run ends.
pub fn give_back() {
    restore_what_a_prompt_found();
    let _ = console::Term::stderr().show_cursor();
}

/// The terminal's settings back as a prompt that never answered found them (nothing else).
pub fn restore_what_a_prompt_found() {
    #[cfg(unix)]
    if let Some(settings) = *prompt_found() {
        // SAFETY: tcsetattr reads a termios that tcgetattr filled
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &settings) };
    }
}

/// The terminal's settings as the prompt being shown found them (stdin is a terminal).
#[cfg(unix)]
fn prompt_found() -> std::sync::MutexGuard<'static, Option<libc::termios>> {
    static FOUND: std::sync::Mutex<Option<libc::termios>> = std::sync::Mutex::new(None);
    FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Held while a prompt reads its answer from the terminal on stdin. The prompt puts the
/// terminal in raw mode and reads on a thread that a stop cannot wake, so a run that stops
/// there leaves before the prompt does: [`give_back`] then restores what the prompt found.
/// Dropped once the prompt has answered.
pub struct Prompting(());

pub fn prompting() -> Prompting {
    #[cfg(unix)]
    {
        let mut settings = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills the termios when it returns 0
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, settings.as_mut_ptr()) } == 0 {
            *prompt_found() = Some(unsafe { settings.assume_init() });
        }
    }
    Prompting(())
}

impl Prompting {
    /// The prompt answered and restored the terminal itself.
    pub fn answered(self) {
        #[cfg(unix)]
        prompt_found().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_table() {
        let tty = Surroundings {
            stderr_is_terminal: true,
            ci: false,
            dumb: false,
        };
        let ci_tty = Surroundings { ci: true, ..tty };
        let pipe = Surroundings {
            stderr_is_terminal: false,
            ..tty
        };
        let dumb = Surroundings { dumb: true, ..tty };
        use Display::*;
        use Progress as P;
        for (progress, quiet, s, want) in [
            (P::Auto, false, tty, Bars),
            (P::Auto, false, ci_tty, Lines),
            (P::Auto, false, pipe, Lines),
            (P::Auto, false, dumb, Lines),
            (P::Bars, false, pipe, Bars),
            (P::Bars, false, ci_tty, Bars),
            (P::Plain, false, tty, Lines),
            (P::None, false, tty, Silent),
            (P::None, false, pipe, Silent),
            (P::Auto, true, tty, Silent),
            (P::Bars, true, tty, Silent),
            (P::Plain, true, pipe, Silent),
        ] {
            assert_eq!(
                resolve(progress, quiet, s),
                want,
                "{progress:?} -q={quiet} {s:?}"
            );
        }
    }
}
