//! The rules of redirections: a plain target, writes only inside the working
//! directory, here-documents that hold no expansion and feed no shell.

use super::words::plain_word;
use tree_sitter::Node;

/// A redirection is plain when its target is a plain word (where a write may go is
/// the decision's: `decide/command_line.rs`). A here-document or here-string must hold
/// no expansion and must not feed a shell.
pub(super) fn check_redirect(line: &str, node: Node<'_>, feeds_shell: bool) -> Result<(), String> {
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
                    plain_word(line, child)?;
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
                    destination = Some(plain_word(line, child)?);
                }
            }
            if feeds_shell && operator.starts_with('<') {
                return Err("a shell reads commands from a file".to_owned());
            }
            let Some(destination) = destination else {
                // `>&-` closes a descriptor
                return Ok(());
            };
            if destination.glob && operator.contains('>') {
                return Err(format!(
                    "writes to {:?}, a file name pattern",
                    destination.value
                ));
            }
            Ok(())
        }
        other => Err(format!("a {other} is not read")),
    }
}

/// The file a plain file redirection reads or writes, and whether it writes; `None`
/// for a descriptor (`2>&1`, `>&-`), a standard stream (`/dev/null`) or a
/// here-document. Only called once [`check_redirect`] passed.
pub(super) fn redirect_target(line: &str, node: Node<'_>) -> Option<(String, bool)> {
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
            destination = plain_word(line, child).ok();
        }
    }
    let path = destination?.value;
    let descriptor =
        operator.ends_with('&') && path.chars().all(|c| c.is_ascii_digit() || c == '-');
    // the standard streams are no file touched (and the fast path names none either)
    let stream = matches!(path.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr");
    let writes = operator.contains('>');
    (!descriptor && !stream).then_some((path, writes))
}
