//! The rules of a simple command, shared by the grammar's walk and the plain fast
//! path: wrappers, evaluators, git's global options, shells' command strings.

use super::effects::{Run, effects};
use super::programs::{SHELLS, WRAPPERS};
use super::read::{MAX_NESTED_READS, MAX_NESTING, Reader};
use super::{CommandOrigin, Effects, SimpleCommand, base_name};

/// Commands that run text as shell code, define what names mean, or run code later:
/// what they run cannot be read from the line.
const EVALUATORS: [&str; 10] = [
    "eval", "source", ".", "alias", "trap", "fc", "enable", "bind", "complete", "coproc",
];

/// git's global options that take a separate value (before the subcommand).
const GIT_VALUE_OPTIONS: [&str; 6] = [
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
];

impl Reader {
    /// The rules shared by both ways of reading a simple command (the grammar's and
    /// the plain fast path's): wrappers, evaluators, git's options, shells' command
    /// strings, then the redirections (checked by `redirects`, given whether the
    /// command is a shell), then the command strings it hands to a shell, read in turn.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &mut self,
        command_text: &str,
        words: Vec<String>,
        globs: &[bool],
        assignments: usize,
        redirects: &dyn Fn(bool) -> Result<Vec<(String, bool)>, String>,
        depth: usize,
        (origin, unknown_args): (CommandOrigin, bool),
    ) {
        let fail = |why: String| {
            let mut c = SimpleCommand::opaque(command_text, why);
            c.origin = origin;
            c
        };
        let command_at = assignments;
        let Some(command_word) = words.get(command_at) else {
            self.out.push(fail(
                "assignments or redirections without a command".to_owned(),
            ));
            return;
        };
        let name = base_name(command_word);
        let candidates = command_words(&words, command_at);
        let wrapper_runs_builtins = matches!(name, "command" | "builtin");
        let mut nested: Vec<String> = Vec::new();
        for &i in &candidates {
            let w = base_name(&words[i]);
            if globs[i] {
                self.out.push(fail(format!(
                    "the command word {:?} is a file name pattern",
                    words[i]
                )));
                return;
            }
            // a wrapper runs programs, not builtins: `find . -name x` names no `.`
            if EVALUATORS.contains(&w) && (i == command_at || w != "." || wrapper_runs_builtins) {
                self.out
                    .push(fail(format!("{w} runs code that is not on the line")));
                // `eval 'reboot'`: the line it runs is known, so a denied or blocked
                // command in it is seen (the eval itself stays opaque, so it never
                // auto-runs: reading it only makes the answer stricter)
                let args = &words[i + 1..];
                if w == "eval"
                    && !args.is_empty()
                    && !args.iter().any(|a| a.contains(super::words::UNKNOWN))
                {
                    self.nested_reads += 1;
                    if depth < MAX_NESTING && self.nested_reads <= MAX_NESTED_READS {
                        self.read_as(&args.join(" "), depth + 1, origin);
                    }
                }
                return;
            }
            if w == "git"
                && let Some(why) = git_opaque(&words[i + 1..])
            {
                self.out.push(fail(why));
                return;
            }
            if SHELLS.contains(&w) {
                match shell_string(&words[i + 1..]) {
                    ShellInput::String(s) => nested.push(s.to_owned()),
                    ShellInput::Script => {}
                    ShellInput::Input => {
                        self.out.push(fail(format!(
                            "{w} reads the commands it runs from its input"
                        )));
                        return;
                    }
                }
            } else if i > command_at && words[i].contains([' ', ';', '&', '|', '\n']) {
                // `watch 'rm -rf x'`, `su -c '…'`, `ssh host '…'`: run through a shell
                nested.push(words[i].clone());
            }
        }
        let redirects = match redirects(SHELLS.contains(&name)) {
            Ok(targets) => targets,
            Err(why) => {
                self.out.push(fail(why));
                return;
            }
        };
        let found = effects(&words, command_at, unknown_args);
        if let Some(why) = found.opaque {
            // opaque, so it never auto-runs; its words stay for the denied and blocked
            // prefixes, which an option the reader does not know must not soften
            // (`rm -rf -Z /` is denied under a denied `rm -rf`, not asked)
            let mut c = fail(why);
            c.words = words;
            c.command_at = command_at;
            c.command_words = candidates;
            c.globs = globs.to_vec();
            self.out.push(c);
            return;
        }
        let deletes = name == "find" && words.iter().any(|w| w == "-delete");
        let mut writes: Vec<String> = redirects
            .iter()
            .filter(|(_, writes)| *writes)
            .map(|(path, _)| path.clone())
            .collect();
        writes.extend(found.writes);
        self.out.push(SimpleCommand {
            text: command_text.to_owned(),
            words,
            command_at,
            command_words: candidates,
            deletes,
            opaque: None,
            globs: globs.to_vec(),
            redirects: redirects.into_iter().map(|(path, _)| path).collect(),
            effects: Effects {
                writes,
                deletes: found.deletes,
                cd: found.cd,
                hosts: found.hosts,
                inline_code: found.inline_code,
                read_only: found.read_only,
            },
            origin,
            run_by: None,
        });
        let parent = self.out.len() - 1;
        for words in found.equivalents {
            let text = format!("{command_text} (as {})", words.join(" "));
            let globs = vec![false; words.len()];
            let candidates = command_words(&words, 0);
            self.out.push(SimpleCommand {
                text,
                command_words: candidates,
                globs,
                words,
                command_at: 0,
                deletes: false,
                opaque: None,
                redirects: Vec::new(),
                effects: Effects::default(),
                origin: CommandOrigin::Equivalent,
                run_by: None,
            });
        }
        // what it runs is a command of the line in its own right
        let run_origin = if origin == CommandOrigin::Substitution {
            origin
        } else {
            CommandOrigin::Run
        };
        for run in found.runs {
            self.nested_reads += 1;
            if depth + 1 > MAX_NESTING || self.nested_reads > MAX_NESTED_READS {
                let mut c = SimpleCommand::opaque(command_text, "commands nested too deep to read");
                c.origin = run_origin;
                self.out.push(c);
                continue;
            }
            match run {
                Run::Line(line) => self.read_as(&line, depth + 1, run_origin),
                Run::Words {
                    words,
                    unknown_args: more,
                } => {
                    let text = words.join(" ");
                    let globs = vec![false; words.len()];
                    // where the words stand in the command that runs them
                    let outer = &self.out[parent].words;
                    let offset = (0..=outer.len().saturating_sub(words.len()))
                        .rev()
                        .find(|&at| outer[at..].starts_with(&words));
                    let first = self.out.len();
                    self.finish(
                        &text,
                        words,
                        &globs,
                        0,
                        &|_| Ok(Vec::new()),
                        depth + 1,
                        (run_origin, unknown_args || more),
                    );
                    if let (Some(offset), Some(command)) = (offset, self.out.get_mut(first)) {
                        command.run_by = Some((parent, offset));
                    }
                }
            }
        }
        for inner in nested {
            self.nested_reads += 1;
            if depth + 1 > MAX_NESTING || self.nested_reads > MAX_NESTED_READS {
                self.out.push(SimpleCommand::opaque(
                    &inner,
                    "command strings nested too deep to read",
                ));
                continue;
            }
            self.read_as(&inner, depth + 1, origin);
        }
    }
}

/// The words that may be the command that runs: the command word, any word after a
/// wrapper (when in doubt, match), and for `find` the word after each `-exec`,
/// `-execdir`, `-ok` or `-okdir`.
fn command_words(words: &[String], command_at: usize) -> Vec<usize> {
    let mut out = vec![command_at];
    let name = base_name(&words[command_at]);
    if name == "find" {
        for i in command_at + 2..words.len() {
            if matches!(
                words[i - 1].as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                out.push(i);
                if WRAPPERS.contains(&base_name(&words[i])) {
                    out.extend(i + 1..words.len());
                    break;
                }
            }
        }
    } else if WRAPPERS.contains(&name) {
        out.extend(command_at + 1..words.len());
    }
    out
}

/// What follows a shell's name: a `-c` command string, a script file, or neither
/// (the shell reads its commands from its input).
enum ShellInput<'a> {
    String(&'a str),
    Script,
    Input,
}

fn shell_string(args: &[String]) -> ShellInput<'_> {
    let mut has_c = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            i += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if arg.len() > 1 && (arg.starts_with('-') || arg.starts_with('+')) {
            has_c |= arg[1..].contains('c');
            // `-o pipefail` and `-O extglob` take a value
            i += if arg[1..].contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    match (has_c, args.get(i)) {
        (true, Some(s)) => ShellInput::String(s),
        (true, None) | (false, None) => ShellInput::Input,
        (false, Some(s)) if s == "-" || s == "-s" => ShellInput::Input,
        (false, Some(_)) => ShellInput::Script,
    }
}

/// git's global options before the subcommand: `-c` and `--config-env` set
/// configuration that can define commands git runs (`alias.x=!rm -rf /`, pagers,
/// editors), and `--exec-path=` where git finds its subcommands.
fn git_opaque(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if !arg.starts_with('-') || arg == "--" {
            return None;
        }
        if arg.starts_with("-c") || arg.starts_with("--config-env") {
            return Some(format!(
                "git {arg} sets configuration that can run commands (aliases, pagers)"
            ));
        }
        if arg.starts_with("--exec-path=") {
            return Some(format!("git {arg} changes which programs git runs"));
        }
        i += if GIT_VALUE_OPTIONS.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    None
}
