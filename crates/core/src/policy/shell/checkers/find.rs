//! find's expression: its primaries, what they run, write and delete.

use crate::policy::shell::effects::found::{Found, Run};
use crate::policy::shell::programs::Program;

/// find's primaries that take no value (GNU findutils 4.9.0, find(1)); with the
/// operators, the leading options and the effect primaries of its row, the whole
/// language: a primary not listed (BSD's `-E`, `-x`, `-Bmin`, `-flags`) is opaque.
const FIND_FLAGS: &[&str] = &[
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-daystart",
    "-follow",
    "-warn",
    "-nowarn",
    "-true",
    "-false",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-prune",
    "-quit",
    "-print",
    "-print0",
    "-ls",
    "-help",
    "--help",
    "-version",
    "--version",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "(",
    ")",
    "!",
    ",",
];

/// find's primaries that take one value (a name, a number, a format, a file it reads).
const FIND_VALUES: &[&str] = &[
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-files0-from",
    "-amin",
    "-anewer",
    "-atime",
    "-cmin",
    "-cnewer",
    "-ctime",
    "-mmin",
    "-mtime",
    "-newer",
    "-fstype",
    "-gid",
    "-group",
    "-ilname",
    "-iname",
    "-inum",
    "-ipath",
    "-iregex",
    "-iwholename",
    "-links",
    "-lname",
    "-name",
    "-path",
    "-perm",
    "-regex",
    "-samefile",
    "-size",
    "-type",
    "-uid",
    "-used",
    "-user",
    "-wholename",
    "-xtype",
    "-context",
    "-printf",
];

/// find's command line: leading options, start points, then the expression read
/// against the closed list of primaries. The row names the effect primaries
/// (`exec_until` run a command up to `;` or `+`, `write_options` write their file,
/// `-fprintf` its file then a format, `operands_when` delete the start points).
pub(in crate::policy::shell) fn find_read(
    program: &Program,
    name: &str,
    args: &[String],
    out: &mut Found,
) {
    let mut i = 0;
    while let Some(word) = args.get(i).map(String::as_str) {
        match word {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if word.len() > 2 && word.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let starts: Vec<&str> = args[i.min(args.len())..]
        .iter()
        .map(String::as_str)
        .take_while(|w| !w.starts_with('-') && !matches!(*w, "(" | "!" | ","))
        .collect();
    i += starts.len();
    let (mut deletes, mut starts_unknown) = (false, false);
    while let Some(word) = args.get(i).map(String::as_str) {
        let value = args.get(i + 1);
        let newer_xy = word.len() == 8
            && word.starts_with("-newer")
            && word[6..].chars().all(|c| "aBcmt".contains(c));
        if program.exec_until.iter().any(|s| s == word) {
            let Some(end) = args[i + 1..].iter().position(|w| w == ";" || w == "+") else {
                out.opaque(format!("{name} {word}: no `;` or `+` ends its command"));
                return;
            };
            if end == 0 {
                out.opaque(format!("{name} {word} without a command"));
                return;
            }
            out.runs.push(Run::Words {
                words: args[i + 1..i + 1 + end].to_vec(),
                unknown_args: false,
            });
            // what it runs is decided as a command of the line in its own right
            i += end + 2;
        } else if program.write_options.iter().any(|s| s == word) {
            let Some(path) = value else {
                out.opaque(format!("{name} {word} without its file"));
                return;
            };
            out.writes.push(path.clone());
            out.read_only = false;
            // -fprintf FILE FORMAT
            i += if word == "-fprintf" { 3 } else { 2 };
        } else if program.operands_when.iter().any(|s| s == word) {
            deletes = true;
            out.read_only = false;
            i += 1;
        } else if FIND_FLAGS.contains(&word) {
            i += 1;
        } else if FIND_VALUES.contains(&word) || newer_xy {
            if value.is_none() {
                out.opaque(format!("{name} {word} without its value"));
                return;
            }
            starts_unknown |= word == "-files0-from";
            i += 2;
        } else {
            out.opaque(format!(
                "{name} {word}: a primary the reader does not know (another find's, or none)"
            ));
            return;
        }
    }
    if deletes {
        if starts_unknown {
            out.opaque(format!("{name} -delete deletes names read from a file"));
            return;
        }
        let deleted: Vec<String> = if starts.is_empty() {
            // the start point defaults to the working directory
            vec![".".to_owned()]
        } else {
            starts.iter().map(|w| (*w).to_owned()).collect()
        };
        if let Some(equivalent) = &program.equivalent {
            let mut words: Vec<String> = equivalent.split_whitespace().map(str::to_owned).collect();
            words.extend(deleted.iter().cloned());
            out.equivalents.push(words);
        }
        out.deletes.extend(deleted);
    }
}
