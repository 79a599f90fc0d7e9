//! A modelled binary started through a shell, as the legacy YurtHub manifest does
//! (`/bin/sh -c "exec yurthub ... --join-token=$(cat FILE)"`): the one command line a POSIX
//! shell would `exec`, with its words split and quoted as sh does and `$(cat FILE)` replaced
//! by the file's content without trailing newlines. Anything else a script could do (several
//! commands, pipes, variables) is not modelled: the caller runs the command line unchanged.

/// The arguments after the binary when `argv` is `sh -c "[exec] <binary> ARGS"`; `read`
/// gives a file's content as the container sees it. None when `argv` is not such a shell
/// line.
pub fn exec_line(
    argv: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, Vec<String>)> {
    let (sh, rest) = argv.split_first()?;
    let base = sh.rsplit('/').next().unwrap_or(sh);
    if !matches!(base, "sh" | "bash" | "ash" | "dash") || rest.first()? != "-c" {
        return None;
    }
    let mut words = split(rest.get(1)?, read)?;
    if words.first().is_some_and(|w| w == "exec") {
        words.remove(0);
    }
    if words.is_empty() {
        return None;
    }
    let bin = words.remove(0);
    Some((bin, words))
}

/// sh's word splitting of one simple command (quotes, backslashes, `$(cat FILE)`); None on
/// anything beyond it.
fn split(script: &str, read: &dyn Fn(&str) -> Option<String>) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            ';' | '|' | '&' | '<' | '>' | '`' => return None,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        x => cur.push(x),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            x @ ('"' | '\\' | '$' | '`') => cur.push(x),
                            x => {
                                cur.push('\\');
                                cur.push(x);
                            }
                        },
                        '$' => cur.push_str(&substitution(&mut chars, read)?),
                        x => cur.push(x),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            '$' => {
                in_word = true;
                // unquoted: the result is split into fields
                let text = substitution(&mut chars, read)?;
                let mut fields = text.split_whitespace();
                if let Some(first) = fields.next() {
                    cur.push_str(first);
                }
                for f in fields {
                    words.push(std::mem::take(&mut cur));
                    cur.push_str(f);
                }
            }
            x => {
                in_word = true;
                cur.push(x);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// `$(cat FILE)` after the `$`: the file's content without trailing newlines, "" when it
/// cannot be read (cat's error goes to stderr, the substitution is empty).
fn substitution(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    chars.next_if_eq(&'(')?;
    let mut inner = String::new();
    loop {
        match chars.next()? {
            ')' => break,
            x => inner.push(x),
        }
    }
    let mut w = inner.split_whitespace();
    if w.next()? != "cat" {
        return None;
    }
    let file = w.next()?;
    if w.next().is_some() {
        return None;
    }
    Some(
        read(file)
            .map(|t| t.trim_end_matches('\n').to_string())
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_exec_line_of_a_shell_wrapper_is_the_binarys_command_line() {
        let read = |p: &str| (p == "/t").then(|| "abcdef.0123456789abcdef\n".to_string());
        let (bin, args) = exec_line(
            &argv(&[
                "/bin/sh",
                "-c",
                "exec yurthub --v=2 --node-name=n1 --join-token=$(cat /t) --x='a b' \"--y=$(cat /t)\"",
            ]),
            &read,
        )
        .unwrap();
        assert_eq!(bin, "yurthub");
        assert_eq!(
            args,
            [
                "--v=2",
                "--node-name=n1",
                "--join-token=abcdef.0123456789abcdef",
                "--x=a b",
                "--y=abcdef.0123456789abcdef"
            ]
        );
        // a missing file: cat fails, the substitution is empty
        let (_, args) = exec_line(
            &argv(&["sh", "-c", "yurthub --join-token=$(cat /missing)"]),
            &read,
        )
        .unwrap();
        assert_eq!(args, ["--join-token="]);
        assert!(exec_line(&argv(&["sh", "-c", "a; b"]), &read).is_none());
        assert!(exec_line(&argv(&["yurthub", "--v=2"]), &read).is_none());
    }
}
