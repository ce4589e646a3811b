//! Shell command lines, read with bash's grammar (tree-sitter-bash) into the simple
//! commands they run, and the prefix lists (allowed, blocked) matched against them.
//!
//! The reader never guesses: a word is plain only when the grammar shows it holds
//! nothing but literal text and quotes; anything else makes its command opaque, and
//! an opaque command never auto-runs.

mod plain;
mod prefixes;
mod read;
mod redirects;
mod rules;
mod words;

pub use prefixes::{Prefix, PrefixList};
pub use read::{MAX_NESTING, parse_command_line};

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
