//! Shell command lines: split into simple commands, matched against prefixes token by
//! token, with substitutions and subshells flagged (they never auto-run).

/// One simple command of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command as written, trimmed.
    pub text: String,
    /// Its words with quotes removed. Leading `VAR=value` assignments stay: an allowed
    /// prefix does not cover `LD_PRELOAD=x.so git status`.
    pub words: Vec<String>,
    /// Holds `$(…)`, backticks, `<(…)`, `>(…)` or a `(`/`{` group: what runs cannot be
    /// known from the text.
    pub opaque: bool,
}

/// Splits a line on `&&`, `||`, `;`, `|`, `&` and newlines outside quotes. Redirections
/// such as `2>&1` and `&>` are not separators.
pub fn split(line: &str) -> Vec<SimpleCommand> {
    let chars: Vec<char> = line.chars().collect();
    let mut parts = Vec::new();
    let mut current = String::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if escaped {
            current.push(c);
            escaped = false;
            i += 1;
            continue;
        }
        match c {
            '\\' if !single => {
                escaped = true;
                current.push(c);
            }
            '\'' if !double => {
                single = !single;
                current.push(c);
            }
            '"' if !single => {
                double = !double;
                current.push(c);
            }
            ';' | '\n' | '|' if !single && !double => {
                parts.push(std::mem::take(&mut current));
                // `||` and `|&` are one separator
                if c == '|' && matches!(chars.get(i + 1), Some('|' | '&')) {
                    i += 1;
                }
            }
            '&' if !single && !double => {
                let prev = current.chars().last();
                let redirect = matches!(prev, Some('>' | '<')) || chars.get(i + 1) == Some(&'>');
                if redirect {
                    current.push(c);
                } else {
                    parts.push(std::mem::take(&mut current));
                    if chars.get(i + 1) == Some(&'&') {
                        i += 1;
                    }
                }
            }
            _ => current.push(c),
        }
        i += 1;
    }
    parts.push(current);
    parts
        .into_iter()
        .filter_map(|p| parse_simple(p.trim()))
        .collect()
}

fn parse_simple(text: &str) -> Option<SimpleCommand> {
    if text.is_empty() {
        return None;
    }
    Some(SimpleCommand {
        text: text.to_owned(),
        words: words(text),
        opaque: is_opaque(text),
    })
}

/// Whether the shell would run something the text does not show: `$(…)`, backticks,
/// process substitution (not inside single quotes, where they are plain text), a
/// group or subshell, or an unclosed quote (the line does not end where it seems to).
fn is_opaque(text: &str) -> bool {
    if text.starts_with('(') || text.starts_with('{') {
        return true;
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if !single => i += 1,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '`' if !single => return true,
            '$' | '<' | '>' if !single && chars.get(i + 1) == Some(&'(') => return true,
            _ => {}
        }
        i += 1;
    }
    single || double
}

/// Words with quotes removed (no expansion).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let (mut single, mut double) = (false, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => {
                single = !single;
                in_word = true;
            }
            '"' if !single => {
                double = !double;
                in_word = true;
            }
            '\\' if !single => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            c if c.is_whitespace() && !single && !double => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// A configured prefix, as words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    pub raw: String,
    pub words: Vec<String>,
}

impl Prefix {
    /// `None` for a prefix with no words.
    pub fn parse(raw: &str) -> Option<Self> {
        let words = words(raw);
        (!words.is_empty()).then(|| Self {
            raw: raw.to_owned(),
            words,
        })
    }

    /// Token by token: `git status` matches `git status -s`, not `git statusx`.
    pub fn matches(&self, command: &SimpleCommand) -> bool {
        command.words.len() >= self.words.len()
            && self.words.iter().zip(&command.words).all(|(p, w)| p == w)
    }

    /// Like [`Prefix::matches`], but anywhere in the command and on a word's file
    /// name, so a blocked `rm` also catches `sudo rm`, `env X=1 /bin/rm`,
    /// `xargs rm` and `find . -exec rm`. It errs towards blocking (`echo rm` is
    /// caught too): a blocked command asks, and asking is safe.
    pub fn occurs_in(&self, command: &SimpleCommand) -> bool {
        let Some((first, rest)) = self.words.split_first() else {
            return false;
        };
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
        command.words.iter().enumerate().any(|(i, w)| {
            base(w) == *first
                && command.words.len() > i + rest.len()
                && rest
                    .iter()
                    .zip(&command.words[i + 1..])
                    .all(|(p, w)| p == w)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        split(line).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn splitting() {
        let table: &[(&str, &[&str])] = &[
            ("git status", &["git status"]),
            ("npm test && rm -rf /", &["npm test", "rm -rf /"]),
            ("a || b; c | d & e\nf", &["a", "b", "c", "d", "e", "f"]),
            ("echo 'a && b' && c", &["echo 'a && b'", "c"]),
            ("echo \"x; y\"", &["echo \"x; y\""]),
            ("make 2>&1 | tee log", &["make 2>&1", "tee log"]),
            ("cmd &> out", &["cmd &> out"]),
            ("a |& b", &["a", "b"]),
            ("echo a\\;b", &["echo a\\;b"]),
            ("", &[]),
            (" ; ", &[]),
        ];
        for (line, want) in table {
            assert_eq!(texts(line), *want, "{line:?}");
        }
    }

    #[test]
    fn substitutions_are_opaque() {
        for line in [
            "echo $(rm -rf /)",
            "echo `id`",
            "diff <(a) b",
            "(cd x && rm y)",
            "{ rm x; }",
        ] {
            assert!(split(line).iter().any(|c| c.opaque), "{line}");
        }
        assert!(!split("echo ${HOME}").iter().any(|c| c.opaque));
        // single quotes make it text; double quotes do not
        assert!(!split("echo '$(not run)' '`x`'").iter().any(|c| c.opaque));
        assert!(split(r#"echo "$(run)""#).iter().any(|c| c.opaque));
        // an unclosed quote hides where the command ends
        assert!(split("echo 'unclosed; rm -rf /").iter().any(|c| c.opaque));
    }

    #[test]
    fn prefixes_match_whole_words() {
        let p = Prefix::parse("git status").unwrap();
        let cmd = |s: &str| split(s).remove(0);
        assert!(p.matches(&cmd("git status")));
        assert!(p.matches(&cmd("git status -s")));
        assert!(p.matches(&cmd("git  'status' -s")));
        assert!(!p.matches(&cmd("git statusx")));
        assert!(!p.matches(&cmd("git")));
        let rm = Prefix::parse("rm").unwrap();
        assert!(
            rm.occurs_in(&cmd("FOO=1 rm -rf /")),
            "assignments do not hide a blocked command"
        );
        let status = Prefix::parse("git status").unwrap();
        assert!(
            !status.matches(&cmd("LD_PRELOAD=x.so git status")),
            "nor make an allowed one"
        );
        for hidden in [
            "sudo rm -rf /",
            "env X=1 /bin/rm x",
            "find . -exec rm {} ;",
            "xargs rm",
            "sudo -u root rm x",
        ] {
            assert!(rm.occurs_in(&cmd(hidden)), "{hidden}");
        }
        assert!(!rm.occurs_in(&cmd("rmdir x")));
        let push = Prefix::parse("git push").unwrap();
        assert!(push.occurs_in(&cmd("sudo git push origin")));
        assert!(!push.occurs_in(&cmd("git status")));
        assert!(!push.occurs_in(&cmd("echo git")));
        assert!(Prefix::parse("   ").is_none());
    }
}
