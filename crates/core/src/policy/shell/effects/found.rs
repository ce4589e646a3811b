//! What a simple command's effects are gathered into: the commands it runs, what it
//! writes, deletes and contacts, and the options and operands its arguments hold.

use crate::policy::shell::Cd;

/// A command another command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::policy::shell) enum Run {
    /// A command line (`bash -c`, `git rebase -x`, `env -S`), read in turn.
    Line(String),
    /// A command's words (after a wrapper, in `find -exec`); `unknown_args` when
    /// words the reader cannot see are added (`xargs`).
    Words {
        words: Vec<String>,
        unknown_args: bool,
    },
}

/// What [`effects`] found.
#[derive(Debug, Default)]
pub(in crate::policy::shell) struct Found {
    pub runs: Vec<Run>,
    pub writes: Vec<String>,
    pub deletes: Vec<String>,
    pub hosts: Vec<String>,
    pub cd: Option<Cd>,
    pub inline_code: bool,
    pub opaque: Option<String>,
    /// Every option and subcommand is in its row's read-only set.
    pub read_only: bool,
    /// The words a blocked or denied prefix is matched as, too (`git send-pack` as
    /// `git push`).
    pub equivalents: Vec<Vec<String>>,
}

impl Found {
    pub(in crate::policy::shell) fn opaque(&mut self, why: String) {
        self.opaque.get_or_insert(why);
    }
}

/// The options an argument list holds and its operands.
#[derive(Default)]
pub(in crate::policy::shell) struct Parsed<'a> {
    pub(super) operands: Vec<&'a str>,
    /// Whether an option of `operands_when` was given.
    pub(super) when: bool,
    /// A write option was given (`-o`, `-t`): the operands are not the output.
    pub(super) wrote: bool,
    /// An option of `deletes_when` was given (tar --remove-files).
    pub(super) deletes: bool,
    /// An option of `links_when` was given (cp -l/-s): every operand is written.
    pub(super) links: bool,
}
