//! Shell command lines, read with bash's grammar (tree-sitter-bash) into the simple
//! commands they run, and the prefix lists (allowed, blocked) matched against them.
//!
//! The reader never guesses: a word is plain only when the grammar shows it holds
//! nothing but literal text and quotes; anything else makes its command opaque, and
//! an opaque command never auto-runs.

mod checkers;
mod closed;
mod effects;
mod grammar;
mod places;
mod plain;
mod prefixes;
mod programs;
mod read;
mod redirects;
mod rules;
mod words;

pub use closed::{
    checked_beyond_prefix, literal_script, unchecked_program, unknown_prefix_program,
};
pub use places::{Place, Touch, place_of, touches};
pub use prefixes::{Prefix, PrefixList};
pub use programs::{narrowest_prefix, program_name, runs_unseen_code};

/// The entry of a command list that stands for the curated read-only commands.
pub const READONLY: &str = "@readonly";

/// The prefixes `@readonly` stands for, each written `@readonly` (the decision
/// holds what they allow to no writes or deletions).
pub fn readonly_prefixes() -> Vec<Prefix> {
    programs::table()
        .readonly
        .iter()
        .filter_map(|raw| {
            Prefix::parse(raw).map(|p| Prefix {
                raw: READONLY.to_owned(),
                words: p.words,
            })
        })
        .collect()
}
pub use read::{MAX_NESTING, parse_command_line};
pub use words::UNKNOWN;

/// A directory change (`cd`, `pushd`, `popd`) for the commands after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cd {
    /// A literal directory, relative or absolute, followed lexically.
    To(String),
    /// `cd`, `cd ~`, `cd -`, `popd`: a directory the reader cannot know.
    Unknown,
}

/// Why a command is part of the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandOrigin {
    /// Written on the line (or in a `bash -c` string on it).
    #[default]
    Line,
    /// Run by another command of the line (a wrapper's command, `find -exec`'s,
    /// `git rebase -x`'s): decided as a command in its own right.
    Run,
    /// Inside a command or process substitution: it may auto-run only when an
    /// allowed prefix allows it.
    Substitution,
    /// The same action spelled as the table's equivalent (`git send-pack` as
    /// `git push`): matched by blocked and denied prefixes only.
    Equivalent,
    /// The words inside the arguments of a program not known to run nothing
    /// (`fakeroot rm -rf /`, `gdb -ex 'shell rm -rf /'`): matched by blocked and
    /// denied prefixes only.
    Argument,
}

/// What a simple command does beyond running its program, from the program table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Effects {
    /// Paths it writes (redirections included), as written.
    pub writes: Vec<String>,
    /// Paths it deletes.
    pub deletes: Vec<String>,
    /// The directory it changes to.
    pub cd: Option<Cd>,
    /// Hosts it contacts.
    pub hosts: Vec<String>,
    /// It runs code given on the line in another language (`python -c`).
    pub inline_code: bool,
    /// Every option and subcommand it was given is in its program's read-only
    /// set (`@readonly` allows only such commands).
    pub read_only: bool,
}

/// One simple command of a line, after the line and every `bash -c '…'` in it were
/// read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command as written.
    pub text: String,
    /// Its words as bash reads them (quotes removed, escapes applied, line
    /// continuations joined). Leading `VAR=value` assignments stay: an allowed prefix
    /// does not cover `LD_PRELOAD=x.so git status`.
    pub words: Vec<String>,
    /// The index of the command word (after the assignments); `words.len()` when
    /// there is none.
    pub command_at: usize,
    /// The indexes of the words that may be the command that really runs: the
    /// command word, and after a wrapper (`sudo`, `env`, `xargs`, `timeout`…) every
    /// later word (for `find`, the word after `-exec`). Blocked prefixes are tried at
    /// each.
    pub command_words: Vec<usize>,
    /// `find … -delete`: deletes like `rm`, so a blocked `rm` covers it.
    pub deletes: bool,
    /// Why what runs cannot be known from the text (a substitution, an expansion, a
    /// line that does not parse…); such a command never auto-runs.
    pub opaque: Option<String>,
    /// For each word, whether it holds an unquoted `*`, `?` or `[` (bash replaces it
    /// by file names).
    pub globs: Vec<bool>,
    /// The files its redirections read or write (`< in`, `> out`), as written;
    /// descriptors (`2>&1`) left out.
    pub redirects: Vec<String>,
    /// What it writes, deletes, changes to, contacts.
    pub effects: Effects,
    pub origin: CommandOrigin,
    /// For a command another runs (`sudo apt install x`'s `apt install x`): that
    /// command's index in the line and where these words start among its words, so
    /// an allowed prefix that reaches into them (`sudo apt`) covers them.
    pub run_by: Option<(usize, usize)>,
}

impl SimpleCommand {
    /// An opaque stand-in for `text`.
    pub(crate) fn opaque(text: &str, why: impl Into<String>) -> Self {
        Self {
            text: text.trim().to_owned(),
            words: Vec::new(),
            command_at: 0,
            command_words: Vec::new(),
            deletes: false,
            opaque: Some(why.into()),
            globs: Vec::new(),
            redirects: Vec::new(),
            effects: Effects::default(),
            origin: CommandOrigin::Line,
            run_by: None,
        }
    }
}

/// A command line as read: its simple commands in order, those of every nested
/// `bash -c '…'` included.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandLine {
    pub commands: Vec<SimpleCommand>,
}

impl CommandLine {
    /// The first reason some command of the line is opaque.
    pub fn opaque(&self) -> Option<&str> {
        self.commands.iter().find_map(|c| c.opaque.as_deref())
    }
}

/// The file name of a command word: `/usr/bin/rm` is `rm`.
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests;
