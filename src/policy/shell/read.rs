//! The reader: tree-sitter-bash's tree walked iteratively into simple commands of
//! plain words, with everything the grammar cannot prove plain marked opaque.

use super::{CommandLine, SimpleCommand, base_name, plain};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

/// How deep `bash -c '…'` (and a wrapper's quoted command) is read into; deeper is
/// opaque.
pub const MAX_NESTING: usize = 4;

/// How many nested command strings one line may hold before the rest is opaque, so a
/// line of many `sh -c` words costs linear time.
const MAX_NESTED_READS: usize = 64;

/// Shells whose `-c` string is read as a command line.
const SHELLS: [&str; 8] = ["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox"];

/// Commands that run other commands from their arguments: any later word may be the
/// command that really runs.
const WRAPPERS: [&str; 31] = [
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
    "script",
    "ssh",
    "systemd-run",
];

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
    };
    reader.read(line, 0);
    CommandLine {
        commands: reader.out,
    }
}

struct Reader {
    out: Vec<SimpleCommand>,
    nested_reads: usize,
    /// Whether plain lines skip the grammar (always, but in the tests that compare).
    plain_path: bool,
}

/// A word as bash reads it, or why it cannot be known.
struct Word {
    value: String,
    /// Holds an unquoted `*`, `?` or `[`: bash replaces it by file names.
    glob: bool,
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
    fn read(&mut self, line: &str, depth: usize) {
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
                    |_| Ok(Vec::new()),
                    depth,
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
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "program" | "list" | "pipeline" | "negated_command" => {
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
                        }
                    }
                    stack.extend(children.into_iter().rev());
                }
                "comment" => {}
                "command" => self.command(line, node, node, &[], depth),
                "redirected_statement" => {
                    let body = node.child_by_field_name("body");
                    let mut cursor = node.walk();
                    let redirects: Vec<Node> = node
                        .children(&mut cursor)
                        .filter(|c| Some(*c) != body)
                        .collect();
                    match body {
                        Some(body) if body.kind() == "command" => {
                            self.command(line, node, body, &redirects, depth);
                        }
                        _ => self.out.push(SimpleCommand::opaque(
                            text(line, node),
                            "a redirected group or compound command",
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

    /// One simple command: its words, then the rules that make it opaque, then the
    /// command strings it hands to a shell, read in turn.
    fn command(
        &mut self,
        line: &str,
        statement: Node<'_>,
        node: Node<'_>,
        redirects: &[Node<'_>],
        depth: usize,
    ) {
        let command_text = text(line, statement);
        let mut words = Vec::new();
        let mut globs = Vec::new();
        let mut assignments = 0;
        let mut all_redirects: Vec<Node> = redirects.to_vec();
        let mut previous_word_end: Option<usize> = None;
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
                    Some(name) if child.named_child_count() == 1 => word(line, name),
                    _ => Err("an unreadable command name".to_owned()),
                },
                _ => word(line, child),
            };
            match word {
                Ok(w) => {
                    words.push(w.value);
                    globs.push(w.glob);
                }
                Err(why) => {
                    self.out.push(fail(why));
                    return;
                }
            }
        }
        self.finish(
            command_text,
            words,
            &globs,
            assignments,
            |shell_input| {
                let mut targets = Vec::new();
                for r in &all_redirects {
                    check_redirect(line, *r, shell_input)?;
                    targets.extend(redirect_target(line, *r));
                }
                Ok(targets)
            },
            depth,
        );
    }

    /// The rules shared by both ways of reading a simple command (the grammar's and
    /// the plain fast path's): wrappers, evaluators, git's options, shells' command
    /// strings, then the redirections (checked by `redirects`, given whether the
    /// command is a shell), then the command strings it hands to a shell, read in turn.
    fn finish(
        &mut self,
        command_text: &str,
        words: Vec<String>,
        globs: &[bool],
        assignments: usize,
        redirects: impl FnOnce(bool) -> Result<Vec<String>, String>,
        depth: usize,
    ) {
        let fail = |why: String| SimpleCommand::opaque(command_text, why);
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
        let deletes = name == "find" && words.iter().any(|w| w == "-delete");
        self.out.push(SimpleCommand {
            text: command_text.to_owned(),
            words,
            command_at,
            command_words: candidates,
            deletes,
            opaque: None,
            globs: globs.to_vec(),
            redirects,
        });
        for inner in nested {
            self.nested_reads += 1;
            if depth + 1 > MAX_NESTING || self.nested_reads > MAX_NESTED_READS {
                self.out.push(SimpleCommand::opaque(
                    &inner,
                    "command strings nested too deep to read",
                ));
                continue;
            }
            self.read(&inner, depth + 1);
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

fn text<'a>(line: &'a str, node: Node<'_>) -> &'a str {
    &line[node.byte_range()]
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

/// `NAME=value`: the value must be plain, as any word.
fn assignment(line: &str, node: Node<'_>) -> Result<Word, String> {
    match node.child_by_field_name("value") {
        None => Ok(Word {
            value: text(line, node).to_owned(),
            glob: false,
        }),
        Some(value) => {
            let head = &line[node.start_byte()..value.start_byte()];
            let value = word(line, value)?;
            Ok(Word {
                value: format!("{head}{}", value.value),
                glob: false,
            })
        }
    }
}

/// A word as bash reads it: literal text, single quotes, double quotes holding no
/// expansion, and concatenations of those. Anything else is an error naming it.
fn word(line: &str, node: Node<'_>) -> Result<Word, String> {
    // `shape` keeps unquoted text and stands `x` for quoted parts, to see brace
    // expansion across parts (`{push,}`, `{"push",}`)
    let mut value = String::new();
    let mut shape = String::new();
    let mut glob = false;
    let mut parts = vec![node];
    let mut i = 0;
    while i < parts.len() {
        let part = parts[i];
        i += 1;
        match part.kind() {
            "concatenation" if part == node => {
                let mut cursor = part.walk();
                for child in part.children(&mut cursor) {
                    if !child.is_named() {
                        return Err(format!("{:?} inside a word", child.kind()));
                    }
                    parts.push(child);
                }
            }
            "word" | "number" if part.child_count() == 0 => {
                let raw = text(line, part);
                if raw.contains(['$', '`']) {
                    return Err(format!("{raw:?} holds an expansion"));
                }
                glob |= unescape_unquoted(raw, &mut value);
                shape.push_str(raw);
            }
            "raw_string" => {
                let raw = text(line, part);
                value.push_str(&raw[1..raw.len() - 1]);
                shape.push('x');
            }
            "string" => {
                let mut cursor = part.walk();
                for child in part.children(&mut cursor) {
                    match child.kind() {
                        "\"" => {}
                        "string_content" => unescape_double(text(line, child), &mut value),
                        other => return Err(expansion_name(other)),
                    }
                }
                shape.push('x');
            }
            other => return Err(expansion_name(other)),
        }
    }
    if brace_expansion(&shape) {
        return Err(format!("{:?} is a brace expansion", text(line, node)));
    }
    Ok(Word { value, glob })
}

fn expansion_name(kind: &str) -> String {
    match kind {
        "simple_expansion" | "expansion" => "a parameter expansion".to_owned(),
        "command_substitution" => "a command substitution".to_owned(),
        "process_substitution" => "a process substitution".to_owned(),
        "arithmetic_expansion" => "an arithmetic expansion".to_owned(),
        "ansi_c_string" => "$'…' quoting".to_owned(),
        "translated_string" => "$\"…\" quoting".to_owned(),
        "brace_expression" => "a brace expansion".to_owned(),
        other => format!("a {other} in a word"),
    }
}

/// Removes quoting backslashes from unquoted text (`r\m` is `rm`, `\<newline>`
/// vanishes); answers whether an unescaped glob character is left.
fn unescape_unquoted(raw: &str, out: &mut String) -> bool {
    let mut glob = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            '*' | '?' | '[' => {
                glob = true;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    glob
}

/// Inside double quotes a backslash quotes only `$`, `` ` ``, `"`, `\` and a newline.
fn unescape_double(raw: &str, out: &mut String) {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '"' | '\\' | '\n')
        {
            chars.next();
            if next != '\n' {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
}

/// An unquoted `{…}` holding a `,` or `..`: bash expands it into several words.
fn brace_expansion(shape: &str) -> bool {
    let Some(open) = shape.find('{') else {
        return false;
    };
    let rest = &shape[open + 1..];
    rest.find('}')
        .is_some_and(|close| rest[..close].contains(',') || rest[..close].contains(".."))
        || rest.contains('{')
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

/// A redirection is plain when its target is a plain word; one that writes may write
/// only inside the working directory (a relative path without `..`), to
/// `/dev/null`, or to another descriptor. A here-document or here-string must hold
/// no expansion and must not feed a shell.
fn check_redirect(line: &str, node: Node<'_>, feeds_shell: bool) -> Result<(), String> {
    match node.kind() {
        "heredoc_redirect" => {
            if feeds_shell {
                return Err("a here-document feeds a shell".to_owned());
            }
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "<<" | "<<-" | "heredoc_start" | "heredoc_end" | "file_descriptor" => {}
                    "heredoc_body" => {
                        if child
                            .named_children(&mut child.walk())
                            .any(|c| c.kind() != "heredoc_content")
                        {
                            return Err("a here-document holds an expansion".to_owned());
                        }
                    }
                    other => return Err(format!("a {other} after a here-document")),
                }
            }
            Ok(())
        }
        "herestring_redirect" => {
            if feeds_shell {
                return Err("a here-string feeds a shell".to_owned());
            }
            let mut cursor = node.walk();
            let mut targets = 0;
            for child in node.named_children(&mut cursor) {
                if child.kind() != "file_descriptor" {
                    targets += 1;
                    if targets > 1 {
                        return Err("words after a here-string are not read".to_owned());
                    }
                    word(line, child)?;
                }
            }
            Ok(())
        }
        "file_redirect" => {
            let mut operator = "";
            let mut destination = None;
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                if !child.is_named() {
                    operator = child.kind();
                } else if child.kind() != "file_descriptor" {
                    // the grammar takes the words after the target (`git 2>log push`)
                    // into the redirection; bash passes them to the command
                    if destination.is_some() {
                        return Err("words after a redirection's target are not read".to_owned());
                    }
                    destination = Some(word(line, child)?);
                }
            }
            if feeds_shell && operator.starts_with('<') {
                return Err("a shell reads commands from a file".to_owned());
            }
            let Some(destination) = destination else {
                // `>&-` closes a descriptor
                return Ok(());
            };
            if !operator.contains('>') {
                return Ok(());
            }
            writes_inside(operator, &destination)
        }
        other => Err(format!("a {other} is not read")),
    }
}

/// The file a plain file redirection reads or writes; `None` for a descriptor
/// (`2>&1`, `>&-`), a standard stream (`/dev/null`) or a here-document. Only called once [`check_redirect`] passed.
fn redirect_target(line: &str, node: Node<'_>) -> Option<String> {
    if node.kind() != "file_redirect" {
        return None;
    }
    let mut operator = "";
    let mut destination = None;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if !child.is_named() {
            operator = child.kind();
        } else if child.kind() != "file_descriptor" {
            destination = word(line, child).ok();
        }
    }
    let path = destination?.value;
    let descriptor =
        operator.ends_with('&') && path.chars().all(|c| c.is_ascii_digit() || c == '-');
    // the standard streams are no file touched (and the fast path names none either)
    let stream = matches!(path.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr");
    (!descriptor && !stream).then_some(path)
}

fn writes_inside(operator: &str, destination: &Word) -> Result<(), String> {
    let path = destination.value.as_str();
    let descriptor =
        operator.ends_with('&') && path.chars().all(|c| c.is_ascii_digit() || c == '-');
    if descriptor || matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr") {
        return Ok(());
    }
    if destination.glob
        || path.is_empty()
        || path.starts_with('/')
        || path.starts_with('~')
        || path.split('/').any(|part| part == "..")
    {
        return Err(format!("writes to {path:?}, outside the working directory"));
    }
    Ok(())
}
