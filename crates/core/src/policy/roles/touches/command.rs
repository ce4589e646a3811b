//! What a shell line touches: its commands' path and host arguments, redirections,
//! and the effects the program table knows, relative paths joined to a `cd`.

use super::{FILE_COMMANDS, FILE_OPTIONS, NET_COMMANDS, Touches, add};
use crate::policy::shell::{Cd, CommandLine, CommandOrigin, base_name, parse_command_line};

/// Reads the paths and hosts a shell line touches. An opaque command (one the shell
/// reader cannot prove plain) or a file-name pattern makes the line unreadable.
pub fn touches_of_command(line: &str) -> Touches {
    touches_of_line(&parse_command_line(line))
}

pub(super) fn touches_of_line(line: &CommandLine) -> Touches {
    let mut t = Touches::default();
    // the directory the line is in, below the starting one (`None`: the starting
    // one), or why it cannot be known
    let mut dir: Result<Option<String>, String> = Ok(None);
    for command in &line.commands {
        if let Some(why) = &command.opaque {
            t.unreadable.get_or_insert_with(|| why.clone());
            continue;
        }
        if matches!(
            command.origin,
            CommandOrigin::Equivalent | CommandOrigin::Argument
        ) {
            continue;
        }
        let mut paths = Vec::new();
        let mut names = Vec::new();
        for target in &command.redirects {
            if !matches!(target.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
                paths.push(target.clone());
            }
        }

        let words = &command.words;
        if words
            .iter()
            .any(|w| w.contains(crate::policy::shell::UNKNOWN))
        {
            t.unreadable
                .get_or_insert_with(|| "a word is what a substitution yields".to_owned());
            continue;
        }
        // which words are files or URLs, by the command (or wrapped command) that reads them
        let mut kind = vec![Kind::Unknown; words.len()];
        for &at in &command.command_words {
            let name = base_name(&words[at]);
            let role = if FILE_COMMANDS.contains(&name) {
                Kind::File
            } else if NET_COMMANDS.contains(&name) {
                Kind::Url
            } else {
                continue;
            };
            let mut i = at + 1;
            while i < words.len() {
                let w = &words[i];
                if FILE_OPTIONS.contains(&w.as_str()) && role == Kind::Url {
                    if i + 1 < words.len() {
                        kind[i + 1] = Kind::File;
                    }
                    i += 2;
                    continue;
                }
                if !w.starts_with('-') && kind[i] == Kind::Unknown {
                    kind[i] = role;
                }
                i += 1;
            }
        }
        for (i, w) in words.iter().enumerate().skip(command.command_at + 1) {
            let value = match w.split_once('=') {
                // `--output=/x`, `of=/dev/sda`
                Some((option, value)) if option.starts_with('-') || option.len() <= 3 => value,
                _ => w.as_str(),
            };
            // a short option glued to its value: `-o/etc/x`, `-C/etc`, `-f~/.env`
            if let Some(glued) = glued_path(w) {
                paths.push(glued.to_owned());
                continue;
            }
            let kind = match kind[i] {
                Kind::Unknown if value.contains("://") => Kind::Url,
                // any word that looks like a path counts, whatever reads it
                Kind::Unknown
                    if !w.starts_with('-')
                        && (value.contains('/') || value.starts_with('~') || value == "..") =>
                {
                    Kind::File
                }
                Kind::Unknown if value != w && value.contains('/') => Kind::File,
                k => k,
            };
            match kind {
                Kind::File if command.globs.get(i).copied().unwrap_or(false) => {
                    t.unreadable
                        .get_or_insert_with(|| format!("{w:?} is a file name pattern"));
                }
                Kind::File => paths.push(value.to_owned()),
                Kind::Url => {
                    // curl reads a bare host as http
                    if value.contains("://") {
                        add(&mut t.targets, value, &mut t.unreadable);
                    } else {
                        add(
                            &mut t.targets,
                            &format!("http://{value}"),
                            &mut t.unreadable,
                        );
                    }
                }
                // any other word may name a file in the directory: forbiddenFiles
                // sees it (`base64 server.key`)
                Kind::Unknown if !value.is_empty() && !value.starts_with('-') => {
                    names.push(value.to_owned());
                }
                Kind::Unknown => {}
            }
        }
        // hosts the program table knows (nc, ssh, scp, rsync, git remotes), where no
        // URL named them already
        for host in &command.effects.hosts {
            if !t
                .targets
                .iter()
                .any(|u| u.to_lowercase().contains(host.as_str()))
            {
                add(&mut t.targets, host, &mut t.unreadable);
            }
        }
        // what the program table says it writes (`-o/etc/x`, `-C/etc`) and deletes
        for target in command
            .effects
            .writes
            .iter()
            .chain(&command.effects.deletes)
        {
            if !matches!(target.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
                paths.push(target.clone());
            }
        }
        for path in paths {
            let joined = match (&dir, path.starts_with(['/', '~'])) {
                (_, true) | (Ok(None), false) => path,
                (Ok(Some(d)), false) => format!("{d}/{path}"),
                (Err(why), false) => {
                    t.unreadable.get_or_insert_with(|| why.clone());
                    continue;
                }
            };
            add(&mut t.paths, &joined, &mut t.unreadable);
        }
        for name in names {
            // a name seen from an unknown directory is still matched by its own parts
            let joined = match &dir {
                Ok(Some(d)) => format!("{d}/{name}"),
                _ => name,
            };
            add(&mut t.names, &joined, &mut t.unreadable);
        }
        dir = match (&command.effects.cd, dir) {
            (None, dir) => dir,
            (Some(Cd::Unknown), _) => Err(format!(
                "{:?} changes to a directory the reader cannot know",
                command.text
            )),
            (Some(Cd::To(to)), _) if to.starts_with(['/', '~']) => Ok(Some(to.clone())),
            (Some(Cd::To(to)), Ok(Some(d))) => Ok(Some(format!("{d}/{to}"))),
            (Some(Cd::To(to)), Ok(None)) => Ok(Some(to.clone())),
            (Some(Cd::To(_)), Err(why)) => Err(why),
        };
    }
    t
}

/// The value of a short option glued to it when the value is a path (`-o/etc/x`,
/// `-C/etc`, `-f~/.env`, `-I../include`): one dash, one letter, then a value that
/// starts or goes on like a path.
pub(super) fn glued_path(word: &str) -> Option<&str> {
    let rest = word.strip_prefix('-')?;
    let mut chars = rest.chars();
    if !chars.next()?.is_ascii_alphabetic() {
        return None;
    }
    let value = chars.as_str();
    let pathy = value.starts_with(['/', '~', '.']) && value.len() > 1 || value.contains('/');
    (pathy && !value.contains('=') && !value.contains("://")).then_some(value)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Unknown,
    File,
    Url,
}
