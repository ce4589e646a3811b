//! split's output names and gdb's `-ex` commands.

use crate::policy::shell::effects::found::{Found, Run};
use crate::policy::shell::grammar::Reading;

/// split: writes files named PREFIX + a suffix (the second operand, `x` by default);
/// a suffix of its letters can complete a protected name (`.bas` + `h` + `rc`), so a
/// prefix whose file name starts with a dot, or an extra suffix, is opaque.
pub(in crate::policy::shell) fn split_read(
    name: &str,
    reading: &Reading<'_>,
    operands: &[&str],
    out: &mut Found,
) {
    let prefix = operands.get(1).copied().unwrap_or("x");
    let base = prefix.rsplit('/').next().unwrap_or(prefix);
    if base.starts_with('.') || base.is_empty() || reading.has("--additional-suffix") {
        out.opaque(format!(
            "{name} writes files named {prefix:?} and a suffix, which may complete a protected name"
        ));
        return;
    }
    out.writes.push(prefix.to_owned());
}

/// gdb's `-ex`/`-iex` values are gdb commands: `shell CMD` and `!CMD` run a command
/// line; any other may run code in gdb's languages (python, pipes), so it is code.
pub(in crate::policy::shell) fn gdb_read(_name: &str, reading: &Reading<'_>, out: &mut Found) {
    for (option, value) in reading.options() {
        if !matches!(
            option,
            "--eval-command" | "--init-eval-command" | "--ex" | "--iex"
        ) {
            continue;
        }
        let command = value.unwrap_or_default().trim_start();
        let line = command.strip_prefix('!').or_else(|| {
            command
                .strip_prefix("shell ")
                .or_else(|| command.strip_prefix("she "))
        });
        match line {
            Some(line) => out.runs.push(Run::Line(line.to_owned())),
            None => out.inline_code = true,
        }
    }
}
