//! ssh's arguments as ssh reads them, up to the remote command.

use crate::policy::shell::grammar::{Grammar, Item, Reading};

/// ssh's arguments as ssh reads them: its options (BSD getopt, which stops at the
/// first operand), the host, its options again up to the next operand (unless `--`
/// ended the first ones), and then the remote command, which runs on the host and
/// is never read as options (`ssh host git log --oneline`, but `ssh host -o …`).
pub(in crate::policy::shell) fn ssh_read<'a>(
    grammar: &Grammar,
    args: &'a [String],
) -> Result<Reading<'a>, String> {
    let first = grammar.read(args)?;
    let Some(host_at) = first.rest.filter(|&at| at < args.len()) else {
        return Ok(first);
    };
    if host_at > 0 && args[host_at - 1] == "--" {
        return Ok(first);
    }
    let again = grammar.read(&args[host_at + 1..])?;
    let mut items: Vec<Item<'a>> = first
        .items
        .into_iter()
        .filter(|i| matches!(i, Item::Option { .. }))
        .collect();
    items.push(Item::Operand(args[host_at].as_str()));
    items.extend(again.items);
    Ok(Reading {
        items,
        rest: Some(host_at),
    })
}
