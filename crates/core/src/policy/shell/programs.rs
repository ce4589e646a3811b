//! The program table (`programs.toml`): what programs do with their arguments, kept
//! as data so it is reviewed like code and each row is tested. Read once, at first
//! use; the file is part of the binary, so a malformed table fails every test.

use super::grammar::{Grammar, Style};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Shells whose `-c` string is read as a command line.
pub(super) const SHELLS: [&str; 8] = ["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox"];

/// Commands that run other commands from their arguments: any later word may be the
/// command that really runs.
pub(super) const WRAPPERS: [&str; 30] = [
    "env",
    "command",
    "builtin",
    "exec",
    "nohup",
    "time",
    "nice",
    "ionice",
    "timeout",
    "sudo",
    "doas",
    "su",
    "runuser",
    "xargs",
    "find",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "flock",
    "watch",
    "strace",
    "ltrace",
    "taskset",
    "chrt",
    "caffeinate",
    "parallel",
    "ssh",
    "systemd-run",
];

/// The table as written in `programs.toml` (its head comment documents the fields).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    environment: Environment,
    program: Vec<Program>,
    readonly: Readonly,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Readonly {
    #[allow(dead_code)]
    about: String,
    commands: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Environment {
    #[allow(dead_code)]
    about: String,
    runs: Vec<String>,
}

/// One row: a program, or a subcommand of one.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Program {
    pub names: Vec<String>,
    pub about: String,
    pub value_options: Vec<String>,
    pub wrapper: Option<Wrapper>,
    pub run_options: Vec<String>,
    pub exec_until: Vec<String>,
    pub run_operands: bool,
    pub opaque_options: Vec<String>,
    pub opaque: bool,
    pub inline_code: Vec<String>,
    pub code_runner: bool,
    pub write_options: Vec<String>,
    pub write_prefixes: Vec<String>,
    pub operands: Operands,
    pub operands_when: Vec<String>,
    pub expression: bool,
    pub network: Network,
    pub downloads: bool,
    pub script: Option<Script>,
    pub equivalent: Option<String>,
    pub subcommands: BTreeMap<String, Program>,
    /// With one of these options, its file operands are deleted (tar
    /// --remove-files).
    pub deletes_when: Vec<String>,
    /// With one of these options, it makes links (cp -l/-s): every operand is
    /// written (the link, and its target through it).
    pub links_when: Vec<String>,
    /// Without one of these options, it is opaque (unzip writes the names the
    /// archive holds unless it lists or tests).
    pub opaque_unless: Vec<String>,
    /// Whose rules read its options: with one, the row is the program's whole
    /// command line (an option it does not know makes the command opaque).
    pub parser: Option<Parser>,
    /// getopt's short spec (`+` first: options end at the first operand).
    pub short: String,
    /// getopt's long spec (`name`, `name:`, `name::`; git rows: `!name` has no
    /// `--no-` form).
    pub long: Vec<String>,
    /// `-NUM` is an option (`head -5`, `git log -3`).
    pub digits: bool,
    /// Options after which every word is an operand (python3's `-c CODE` and
    /// `-m MODULE`: the rest are the code's arguments).
    pub stops: Vec<String>,
    /// How other builds of the program differ (BSD, macOS, busybox): their
    /// options are read with this grammar, so one only they have is opaque.
    #[allow(dead_code)]
    pub dialect: String,
    /// Where the grammar was written from (the program and version whose `--help`,
    /// `-h` or manual it follows).
    pub source: String,
    /// The options that keep it read-only under `@readonly` (`*`: every option of
    /// its grammar); any other makes the command not read-only.
    pub readonly_options: Vec<String>,
    /// Operands holding `=` are code it runs (make's variables: `make CC='sh -c …'`,
    /// `make SHELL=./x`): inline code, never read-only.
    pub code_assignments: bool,
    /// An operand starting with one of these makes it opaque (less's `+cmd` is a
    /// command it runs; the empty prefix: any operand, bun's and deno's scripts).
    pub opaque_operands: Vec<String>,
    /// Under `@readonly`, a subcommand row: at most this many operands (git
    /// branch lists with none and creates with one).
    pub readonly_max_operands: Option<usize>,
    /// With no operand it writes this file in the working directory (script's
    /// `typescript`), whatever its options say: one write too many when an option
    /// names another file, never one too few.
    pub default_write: Option<String>,
    /// More operands than this make it opaque (BSD script runs the operands after
    /// its file as a command, which util-linux's grammar cannot see).
    pub max_operands: Option<usize>,
    #[serde(skip)]
    pub grammar: Option<Grammar>,
}

/// Whose rules resolve a row's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Parser {
    /// glibc's getopt_long (GNU programs, util-linux).
    Getopt,
    /// glibc's getopt_long_only (gdb: `-ex` is `--ex`).
    GetoptLongOnly,
    /// git's parse-options.
    Git,
    /// git's revision and diff options: parse-options without abbreviations.
    GitExact,
    /// Go's pflag (docker, kubectl): whole names only.
    Pflag,
    /// tree's parser: whole long names, short options' values never attached.
    Separate,
}

/// A program that runs the command its operands name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Wrapper {
    /// Operands before the command (timeout's duration).
    pub skip: usize,
    /// It appends words read from its input (xargs).
    pub stdin_args: bool,
    /// `NAME=value` operands come before the command (env).
    pub assignments: bool,
    /// Where the command would start, one of these options gives a command line
    /// instead (`flock FILE -c LINE`).
    pub line_options: Vec<String>,
    /// With one of these options its operands are names it only looks up and
    /// prints (`command -v ls`): it runs nothing.
    pub reads_when: Vec<String>,
    /// The command it runs must be a program with a row of the table (or a shell):
    /// busybox's applets are its own builds, so an applet without a row is opaque.
    pub known_only: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operands {
    #[default]
    None,
    Writes,
    Deletes,
    WritesLast,
    Moves,
    WritesAfterFirst,
    /// zip: the first operand is the archive it writes.
    WritesFirst,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Network {
    #[default]
    None,
    Urls,
    Host,
    RemotePaths,
}

/// A program whose arguments are a language of their own, read by a checker in
/// `effects/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Script {
    Sed,
    Awk,
    Tar,
    GitConfig,
    Cd,
    Split,
    Gdb,
    Cc,
    /// find's expression: a closed list of primaries (`checkers/find.rs`).
    Find,
    /// ssh: options, the host, options again, then the remote command.
    Ssh,
}

impl Program {
    /// Every option an effect field names.
    pub fn effect_options(&self) -> impl Iterator<Item = &str> {
        [
            &self.value_options,
            &self.run_options,
            &self.opaque_options,
            &self.inline_code,
            &self.write_options,
            &self.operands_when,
            &self.deletes_when,
            &self.links_when,
            &self.opaque_unless,
        ]
        .into_iter()
        .flatten()
        .map(String::as_str)
    }

    /// Whether some argument can make it run, write or delete something: such a
    /// program given words the reader cannot see (from `xargs`'s input, a
    /// substitution) is opaque.
    pub fn acts(&self) -> bool {
        self.wrapper.is_some()
            || !self.run_options.is_empty()
            || !self.exec_until.is_empty()
            || self.run_operands
            || !self.opaque_options.is_empty()
            || self.opaque
            || !self.inline_code.is_empty()
            || self.code_runner
            || !self.write_options.is_empty()
            || !self.write_prefixes.is_empty()
            || self.operands != Operands::None
            || self.downloads
            || self.script.is_some()
            || !self.deletes_when.is_empty()
            || !self.links_when.is_empty()
            || !self.opaque_unless.is_empty()
            || !self.opaque_operands.is_empty()
            || self.code_assignments
            || self.default_write.is_some()
            || self.max_operands.is_some()
            || self.subcommands.values().any(Program::acts)
    }
}

/// The table, indexed by program name.
pub(crate) struct Programs {
    programs: Vec<Program>,
    by_name: FxHashMap<String, usize>,
    /// Environment variable patterns (`GIT_CONFIG_*`, `*_PAGER`, `EDITOR`).
    env_runs: Vec<String>,
    /// The prefixes `@readonly` stands for.
    pub readonly: Vec<String>,
}

static TABLE: LazyLock<Programs> = LazyLock::new(|| {
    Programs::parse(include_str!("programs.toml")).unwrap_or_else(|e| {
        // the table is compiled in: the unit tests read it, so this never ships
        panic!("programs.toml is not a valid program table: {e}")
    })
});

/// The program table.
pub(crate) fn table() -> &'static Programs {
    &TABLE
}

impl Programs {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        for program in &mut file.program {
            let name = program.names.first().cloned().unwrap_or_default();
            compile(program, &name)?;
        }
        let mut by_name = FxHashMap::default();
        for (i, program) in file.program.iter().enumerate() {
            if program.about.trim().is_empty() {
                return Err(format!("{:?} has no `about`", program.names));
            }
            for name in &program.names {
                if by_name.insert(name.to_lowercase(), i).is_some() {
                    return Err(format!("{name:?} is named by two rows"));
                }
            }
        }
        Ok(Self {
            programs: file.program,
            by_name,
            env_runs: file.environment.runs,
            readonly: file.readonly.commands,
        })
    }

    /// The row of a command word: by file name, without case, `.exe` dropped
    /// (`/usr/bin/RM` and `rm.exe` are `rm`).
    pub fn get(&self, command_word: &str) -> Option<&Program> {
        self.named(&program_name(command_word))
    }

    /// The row of a name already read by [`program_name`].
    pub fn named(&self, name: &str) -> Option<&Program> {
        self.by_name.get(name).map(|&i| &self.programs[i])
    }

    #[cfg(test)]
    pub fn programs(&self) -> &[Program] {
        &self.programs
    }

    /// Whether setting `name` in a command's environment can make it run something
    /// the line does not show.
    pub fn env_runs(&self, name: &str) -> bool {
        self.env_runs.iter().any(|pattern| {
            match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
                (Some(suffix), _) => name.ends_with(suffix),
                (_, Some(prefix)) => name.starts_with(prefix),
                _ => name == pattern,
            }
        })
    }
}

/// Compiles a row's grammar (and its subcommands'), and checks that every option
/// its effects name is one the grammar knows.
fn compile(program: &mut Program, name: &str) -> Result<(), String> {
    if let Some(parser) = program.parser {
        let style = match parser {
            Parser::Getopt => Style::Getopt,
            Parser::GetoptLongOnly => Style::LongOnly,
            Parser::Git => Style::Git,
            Parser::GitExact => Style::GitExact,
            Parser::Pflag => Style::Pflag,
            Parser::Separate => Style::Separate,
        };
        let grammar = Grammar::new(style, &program.short, &program.long, program.digits)
            .and_then(|g| g.stop_after(&program.stops))
            .map_err(|e| format!("{name}: {e}"))?;
        if program.source.trim().is_empty() {
            return Err(format!("{name} has a grammar but no `source`"));
        }
        // value_options only say where operands are, which the grammar knows better
        for spec in program
            .effect_options()
            .filter(|s| !program.value_options.iter().any(|v| v == s))
        {
            let option = spec.split_once('=').map_or(spec, |(o, _)| o);
            if !grammar.knows(option) {
                return Err(format!(
                    "{name}: {spec:?} is named by an effect but is no option of its grammar"
                ));
            }
        }
        let reads_when = program.wrapper.iter().flat_map(|w| &w.reads_when);
        if let Some(spec) = reads_when.into_iter().find(|s| !grammar.knows(s)) {
            return Err(format!(
                "{name}: reads_when {spec:?} is no option of its grammar"
            ));
        }
        for spec in &program.readonly_options {
            if spec != "*" && !grammar.knows(spec) {
                return Err(format!(
                    "{name}: readonly option {spec:?} is no option of its grammar"
                ));
            }
        }
        program.grammar = Some(grammar);
    }
    // these checkers read the resolved options, which only a grammar gives
    if matches!(
        program.script,
        Some(Script::Sed | Script::Awk | Script::Tar | Script::Split | Script::Gdb | Script::Ssh)
    ) && program.grammar.is_none()
    {
        return Err(format!(
            "{name}: its script checker needs a grammar (`parser`)"
        ));
    }
    for (sub, row) in &mut program.subcommands {
        compile(row, &format!("{name} {sub}"))?;
    }
    Ok(())
}

/// Whether an allowed prefix lets code run that the line does not show: its program
/// (or the subcommand it names, or one of its subcommands when it names none) is a
/// code runner of the table (`python`, `node`, `make`, `npm run`, `npx`, `cargo run`,
/// `docker run`), or a shell given a script (`bash`).
pub fn runs_unseen_code(prefix: &str) -> bool {
    let mut words = prefix.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    if SHELLS.contains(&program_name(first).as_str()) {
        return true;
    }
    let Some(row) = table().get(first) else {
        return false;
    };
    if row.code_runner {
        return true;
    }
    match words.next() {
        Some(sub) => row.subcommands.get(sub).is_some_and(|sub| sub.code_runner),
        // the program alone allows every subcommand (`docker` allows `docker run`)
        None => row.subcommands.values().any(|sub| sub.code_runner),
    }
}

/// The narrowest prefix worth allowing for a command written as `text`: its program
/// word and the subcommands the table knows (`git push` for `git push --force origin
/// main`, `rm` for `rm -rf build`), never an option or an operand; leading `VAR=value`
/// assignments are left out. A wrapper (`sudo`), a shell or a code runner keeps every
/// word: its name alone would allow anything, and which of its words name the program
/// it runs is not known from the text. `None` for a line with no command word.
pub fn narrowest_prefix(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split_whitespace()
        .skip_while(|w| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
            })
        })
        .collect();
    let first = *words.first()?;
    if runs_unseen_code(first) || WRAPPERS.contains(&program_name(first).as_str()) {
        return Some(words.join(" "));
    }
    let mut prefix = first.to_owned();
    let mut row = table().get(first);
    for word in &words[1..] {
        let Some(program) = row else { break };
        row = program.subcommands.get(*word);
        if row.is_some() {
            prefix.push(' ');
            prefix.push_str(word);
        }
    }
    Some(prefix)
}

/// The program a command word runs, as blocked and denied prefixes compare it: the
/// file name (either slash), lowercased (`RM` runs `rm` on macOS and Windows file
/// systems), without a trailing `.exe`.
pub fn program_name(word: &str) -> String {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
    let lower = base.to_lowercase();
    match lower.strip_suffix(".exe") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => lower,
    }
}
