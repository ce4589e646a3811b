//! awk's programs: no commands run (`system`, pipes) and no files written.

use crate::policy::shell::effects::found::Found;
use crate::policy::shell::grammar::Reading;

/// awk: the program (the first operand) must not run commands (`system`, pipes)
/// nor write files (`print > f`); answers the file operands.
pub(in crate::policy::shell) fn awk<'a>(
    name: &str,
    mut files: Vec<&'a str>,
    out: &mut Found,
) -> Vec<&'a str> {
    if files.is_empty() {
        return files;
    }
    let program = files.remove(0);
    let why = if program.contains("system") {
        Some("calls system()")
    } else if program.contains('|') {
        Some("pipes to or from a command")
    } else if program.contains('>') && program.contains("print") {
        Some("may print into a file")
    } else if program.contains('@') {
        Some("loads an extension or a file")
    } else {
        None
    };
    if let Some(why) = why {
        out.opaque(format!("{name}'s program {program:?} {why}"));
    }
    files
}

/// mawk's `-W` values that only change how it reads or prints; any other (`exec`,
/// a future one) is opaque.
const AWK_HARMLESS_W: [&str; 6] = [
    "version",
    "usage",
    "help",
    "posix_space",
    "interactive",
    "sprintf",
];

/// awk with a grammar: the program is the first operand unless `-f` gave one.
pub(in crate::policy::shell) fn awk_read<'a>(
    name: &str,
    reading: &Reading<'a>,
    files: Vec<&'a str>,
    out: &mut Found,
) -> Vec<&'a str> {
    for (option, value) in reading.options() {
        if option == "-W" {
            let value = value.unwrap_or_default();
            let known = value.split(',').all(|v| {
                AWK_HARMLESS_W
                    .iter()
                    .any(|h| h.starts_with(v.split('=').next().unwrap_or(v)) && !v.is_empty())
            });
            if !known {
                out.opaque(format!("{name} -W {value}: an implementation option that may run a file (mawk's -W exec)"));
            }
        }
    }
    awk(name, files, out)
}
