//! The reader: tree-sitter-bash's tree walked iteratively into simple commands of
//! plain words, with everything the grammar cannot prove plain marked opaque.
//!
//! The walk is here; what makes a word plain is in `words`, the rules of a simple
//! command (wrappers, evaluators, shells' command strings) in `rules`, and those of
//! redirections in `redirects`.

use super::redirects::{check_redirect, redirect_target};
use super::words::{UNKNOWN, assignment, plain_word, text, word};
use super::{CommandLine, CommandOrigin, SimpleCommand, closed, plain};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

/// How deep `bash -c '…'` (and a wrapper's quoted command) is read into; deeper is
/// opaque.
pub const MAX_NESTING: usize = 4;

/// How many nested command strings one line may hold before the rest is opaque, so a
/// line of many `sh -c` words costs linear time.
pub(super) const MAX_NESTED_READS: usize = 64;

thread_local! {
    // creating a parser and loading the grammar costs more than reading a short line
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Reads a shell command line as bash would, into its simple commands: the public
/// entry point of the reader (fuzz targets call it too). Never panics; whatever it
/// cannot read is returned as an opaque command.
pub fn parse_command_line(line: &str) -> CommandLine {
    read_line(line, true)
}

/// The reader with the plain fast path on or off (tests hold the two to the same
/// result).
pub(super) fn read_line(line: &str, plain_path: bool) -> CommandLine {
    let mut reader = Reader {
        out: Vec::new(),
        nested_reads: 0,
        plain_path,
        origin: CommandOrigin::Line,
    };
    reader.read(line, 0);
    let mut commands = reader.out;
    // what bash does before a program runs (builtins that assign or evaluate,
    // environment assignments) is read here, for every command however it was found
    for command in &mut commands {
        if command.opaque.is_none()
            && command.origin != CommandOrigin::Equivalent
            && let Some(why) = closed::opaque(&command.words, command.command_at)
        {
            command.opaque = Some(why);
        }
        let hosts = closed::redirect_hosts(command);
        command.effects.hosts.extend(hosts);
    }
    let arguments = closed::argument_commands(&commands);
    commands.extend(arguments);
    CommandLine { commands }
}

/// What the walk has left to read: a node, or a statement's body with the
/// redirections bash gives it.
enum Item<'t> {
    Node(Node<'t>),
    Redirected {
        /// Where the statement's text starts and ends (its redirections included).
        span: (usize, usize),
        body: Node<'t>,
        redirects: Vec<Node<'t>>,
    },
}

pub(super) struct Reader {
    pub(super) out: Vec<SimpleCommand>,
    pub(super) nested_reads: usize,
    /// Whether plain lines skip the grammar (always, but in the tests that compare).
    pub(super) plain_path: bool,
    /// Why the commands being read are part of the line.
    pub(super) origin: CommandOrigin,
}

fn parse_tree(line: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(line, None)
    })
}

impl Reader {
    /// [`Reader::read`] for commands of `origin` (run by another command, inside a
    /// substitution).
    pub(super) fn read_as(&mut self, line: &str, depth: usize, origin: CommandOrigin) {
        let outer = std::mem::replace(&mut self.origin, origin);
        self.read(line, depth);
        self.origin = outer;
    }

    pub(super) fn read(&mut self, line: &str, depth: usize) {
        // bash keeps `\r` and other control characters inside words; the grammar
        // treats some as blanks, so a line holding one is not read at all
        if line
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            self.out.push(SimpleCommand::opaque(
                line,
                "the line holds a control character",
            ));
            return;
        }
        // a plain line (most of what agents run) costs a scan, not a parse
        if self.plain_path
            && let Some(commands) = plain::split(line)
        {
            for command in commands {
                let globs = vec![false; command.words.len()];
                // the fast path takes only descriptor and /dev/null redirections: no file named
                self.finish(
                    command.text,
                    command.words,
                    &globs,
                    0,
                    &|_| Ok(Vec::new()),
                    depth,
                    (self.origin, false),
                );
            }
            return;
        }
        let Some(tree) = parse_tree(line) else {
            self.out
                .push(SimpleCommand::opaque(line, "the line could not be parsed"));
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.out.push(SimpleCommand::opaque(
                line,
                "the line does not parse as bash (a syntax error or an unclosed quote)",
            ));
            return;
        }
        // iterative, so nesting depth in the line costs no stack
        let mut stack = vec![Item::Node(root)];
        while let Some(item) = stack.pop() {
            let node = match item {
                Item::Node(node) => node,
                Item::Redirected {
                    span,
                    body,
                    redirects,
                } => {
                    self.redirected(line, (span, body, redirects), &mut stack, depth);
                    continue;
                }
            };
            match node.kind() {
                "program" | "list" | "pipeline" | "negated_command" => {
                    match self.children(line, node) {
                        Some(children) => {
                            stack.extend(children.into_iter().rev().map(Item::Node));
                        }
                        None => return,
                    }
                }
                "comment" => {}
                "command" => self.command(text(line, node), line, node, &[], depth),
                "redirected_statement" => {
                    let body = node.child_by_field_name("body");
                    let mut cursor = node.walk();
                    let redirects: Vec<Node> = node
                        .children(&mut cursor)
                        .filter(|c| Some(*c) != body)
                        .collect();
                    match body {
                        Some(body) => stack.push(Item::Redirected {
                            span: (node.start_byte(), node.end_byte()),
                            body,
                            redirects,
                        }),
                        None => self.out.push(SimpleCommand::opaque(
                            text(line, node),
                            "a redirection without a command",
                        )),
                    }
                }
                kind => self.out.push(SimpleCommand::opaque(
                    text(line, node),
                    opaque_statement(kind),
                )),
            }
        }
    }

    /// The named children of a list or pipeline; `None` (after an opaque stand-in)
    /// when an operator between them is not read.
    fn children<'t>(&mut self, line: &str, node: Node<'t>) -> Option<Vec<Node<'t>>> {
        let mut cursor = node.walk();
        let mut children = Vec::with_capacity(node.child_count() as usize);
        for child in node.children(&mut cursor) {
            if child.is_named() {
                children.push(child);
            } else if !is_separator(child.kind()) {
                self.out.push(SimpleCommand::opaque(
                    text(line, node),
                    format!("the operator {:?} is not read", child.kind()),
                ));
                return None;
            }
        }
        Some(children)
    }

    /// A redirected statement. The grammar hangs `a && b > f`'s and `a | b > f`'s
    /// redirections on the whole list; bash gives them to the last command, `b`.
    fn redirected<'t>(
        &mut self,
        line: &str,
        ((start, end), body, redirects): ((usize, usize), Node<'t>, Vec<Node<'t>>),
        stack: &mut Vec<Item<'t>>,
        depth: usize,
    ) {
        match body.kind() {
            "command" => self.command(&line[start..end], line, body, &redirects, depth),
            "list" | "pipeline" => {
                let Some(mut children) = self.children(line, body) else {
                    return;
                };
                let Some(last) = children.pop() else {
                    return;
                };
                stack.push(Item::Redirected {
                    span: (last.start_byte(), end),
                    body: last,
                    redirects,
                });
                stack.extend(children.into_iter().rev().map(Item::Node));
            }
            _ => self.out.push(SimpleCommand::opaque(
                &line[start..end],
                "a redirected group or compound command",
            )),
        }
    }

    /// One simple command: its words, then the rules that make it opaque, then the
    /// command strings it hands to a shell, read in turn.
    fn command(
        &mut self,
        command_text: &str,
        line: &str,
        node: Node<'_>,
        redirects: &[Node<'_>],
        depth: usize,
    ) {
        let mut words = Vec::new();
        let mut globs = Vec::new();
        let mut assignments = 0;
        let mut all_redirects: Vec<Node> = redirects.to_vec();
        let mut previous_word_end: Option<usize> = None;
        let mut substitutions = Vec::new();
        let mut cursor = node.walk();
        let fail = |why: String| SimpleCommand::opaque(command_text, why);
        for child in node.children(&mut cursor) {
            let kind = child.kind();
            if matches!(
                kind,
                "file_redirect" | "herestring_redirect" | "heredoc_redirect"
            ) {
                all_redirects.push(child);
                previous_word_end = None;
                continue;
            }
            // two words with nothing but line continuations between them are one
            // word to bash; the grammar splits them
            if let Some(end) = previous_word_end {
                let gap = line[end..child.start_byte()].replace("\\\n", "");
                if !gap.contains([' ', '\t', '\n']) {
                    self.out
                        .push(fail("a line continuation inside a word".to_owned()));
                    return;
                }
            }
            previous_word_end = Some(child.end_byte());
            let word = match kind {
                "variable_assignment" if words.len() == assignments => {
                    assignments += 1;
                    assignment(line, child)
                }
                "command_name" => match child.named_child(0) {
                    Some(name) if child.named_child_count() == 1 => plain_word(line, name),
                    _ => Err("an unreadable command name".to_owned()),
                },
                _ => word(line, child),
            };
            match word {
                Ok(w) => {
                    words.push(w.value);
                    globs.push(w.glob);
                    substitutions.extend(w.substitutions);
                }
                Err(why) => {
                    self.out.push(fail(why));
                    return;
                }
            }
        }
        let words_unknown = words.iter().any(|w| w.contains(UNKNOWN));
        self.finish(
            command_text,
            words,
            &globs,
            assignments,
            &|shell_input| {
                let mut targets = Vec::new();
                for r in &all_redirects {
                    check_redirect(line, *r, shell_input)?;
                    targets.extend(redirect_target(line, *r));
                }
                Ok(targets)
            },
            depth,
            (self.origin, words_unknown),
        );
        // a substitution's commands are commands of the line too; they may auto-run
        // only where an allowed prefix allows them
        for inner in substitutions {
            self.nested_reads += 1;
            if depth + 1 > MAX_NESTING || self.nested_reads > MAX_NESTED_READS {
                self.out.push(SimpleCommand::opaque(
                    &inner,
                    "substitutions nested too deep to read",
                ));
                continue;
            }
            self.read_as(&inner, depth + 1, CommandOrigin::Substitution);
        }
    }
}

fn is_separator(kind: &str) -> bool {
    matches!(kind, "&&" | "||" | "|" | "|&" | ";" | "&" | "!" | "\n")
}

/// Why a statement that is not a simple command is opaque.
fn opaque_statement(kind: &str) -> String {
    let what = match kind {
        "subshell" => "a subshell",
        "compound_statement" => "a command group",
        "function_definition" => "a function definition",
        "variable_assignment" | "variable_assignments" => {
            "an assignment that changes the commands after it"
        }
        "declaration_command" | "unset_command" => "a declaration that changes the shell",
        "if_statement"
        | "while_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "case_statement" => "a control structure",
        "test_command" => "a test expression",
        _ => return format!("a {kind} is not read"),
    };
    format!("{what} is not read")
}
