//! The program table, row by row: every option, operand and subcommand that runs a
//! program, given a blocked command, and every one that writes, given a target
//! outside the working directory or in a protected path, is never ALLOWED, however
//! the line is spelt around it (a property test) and however the program's parser
//! lets the option be spelt (a unique prefix, `=` or a separate value, bundled after
//! a flag, one dash for getopt_long_only, after an operand where options permute,
//! given twice with the target last); and the checkers of programs with a language
//! of their own.

use crate::policy::shell::checkers::sed_script;
use crate::policy::shell::programs::{Operands, Program, Programs, Script, table};
use crate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, UserSettings, decide,
};
use proptest::prelude::*;
use std::sync::LazyLock;

/// A blocked command, spelt as the line may spell it.
const BLOCKED: [&str; 6] = [
    "rm -rf x",
    "RM x",
    "/bin/rm x",
    "busybox rm x",
    "sudo rm x",
    "rmdir x",
];

/// Where no shell write auto-runs.
const TARGETS: [&str; 12] = [
    "/etc/x",
    "../x",
    "a/../../x",
    "~/x",
    "C:/x",
    "//host/share/x",
    ".git/config",
    ".git/hooks/pre-commit",
    ".bashrc",
    "sub/.ssh/authorized_keys",
    ".vscode/tasks.json",
    "/tmp/x",
];

/// Lines built from the table, each with `{RUN}` (a command the line runs) or
/// `{PATH}` (a path the line writes or deletes) to fill in.
struct Templates {
    runs: Vec<String>,
    writes: Vec<String>,
}

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The option forms of a spec taking `value`: separate, `=`-glued for a long
/// option, glued for a short one, the rest for a spec ending with `=`.
fn forms(spec: &str, value: &str) -> Vec<String> {
    if spec.is_empty() {
        return Vec::new();
    }
    if spec.ends_with('=') {
        return vec![format!("{spec}{value}")];
    }
    let mut out = vec![format!("{spec} {value}")];
    if spec.starts_with("--") {
        out.push(format!("{spec}={value}"));
    } else if spec.len() == 2 {
        out.push(format!("{spec}{value}"));
    }
    out
}

/// Every spelling of an option its program's parser accepts: the forms above, and
/// for a row with a grammar each abbreviation of a long option that resolves to it
/// and a short option bundled after a flag (`-mo FILE`).
fn spellings(program: &Program, spec: &str, value: &str) -> Vec<String> {
    let mut out = forms(spec, value);
    let Some(grammar) = &program.grammar else {
        return out;
    };
    if let Some(long) = spec.strip_prefix("--") {
        let (name, glued) = match long.split_once('=') {
            Some((n, rest)) => (n, Some(rest)),
            None => (long, None),
        };
        for len in 1..name.len() {
            let given = format!("--{}", &name[..len]);
            let probe = [format!("{given}=v")];
            let resolves = grammar.read(&probe).is_ok_and(|r| {
                r.options()
                    .next()
                    .is_some_and(|(o, _)| o == format!("--{name}"))
            });
            if resolves {
                match glued {
                    Some(rest) => out.push(format!("{given}={rest}{value}")),
                    None => {
                        out.push(format!("{given}={value}"));
                        out.push(format!("{given} {value}"));
                    }
                }
            }
        }
    } else if let Some(c) = spec.strip_prefix('-').filter(|c| c.chars().count() == 1) {
        // a flag that takes nothing (an optional value would take the letters after it)
        let flag = grammar
            .shorts()
            .filter(|(_, takes)| *takes == crate::policy::shell::grammar::Takes::No)
            .map(|(f, _)| f)
            .filter(|f| !program.effect_options().any(|o| o == format!("-{f}")))
            .find(|f| {
                grammar.read(&[format!("-{f}")]).is_ok_and(|r| {
                    r.options().count() == 1 && r.options().all(|(_, v)| v.is_none())
                })
            });
        // a bundle the parser reads as the option (getopt_long_only may read `-nx`
        // as the long option `--nx`)
        let bundles = flag.filter(|f| {
            grammar
                .read(&[format!("-{f}{c}"), value.to_owned()])
                .is_ok_and(|r| r.options().any(|(o, _)| o == spec))
        });
        if let Some(flag) = bundles {
            out.push(format!("-{flag}{c} {value}"));
            out.push(format!("-{flag}{c}{value}"));
        }
    }
    // getopt_long_only takes every long spelling after one dash too (`-ex`, `-eval=`)
    if grammar.long_only() {
        let single: Vec<String> = out
            .iter()
            .filter_map(|f| f.strip_prefix("--"))
            .filter(|rest| rest.split(['=', ' ']).next().is_some_and(|n| n.len() > 1))
            .map(|rest| format!("-{rest}"))
            .collect();
        out.extend(single);
    }
    out
}

/// Whether a row's options may come after its operands (getopt_long permutes the
/// arguments unless its spec starts with `+`; git's parse-options reads them too).
fn permutes(program: &Program) -> bool {
    program.grammar.as_ref().is_some_and(|g| !g.in_order())
}

fn templates_of(program: &Program, head: &str, out: &mut Templates) {
    let quoted_run = single_quoted("{RUN}");
    for spec in &program.run_options {
        for f in spellings(program, spec, &quoted_run) {
            out.runs.push(format!("{head} {f}"));
            // after an operand, where the parser still reads it as an option
            if permutes(program) {
                out.runs.push(format!("{head} x {f}"));
            }
        }
    }
    for spec in &program.exec_until {
        out.runs.push(format!("{head} . {spec} {{RUN}} \\;"));
    }
    if let Some(wrapper) = &program.wrapper {
        let skip = vec!["5"; wrapper.skip].join(" ");
        out.runs.push(format!("{head} {skip} {{RUN}}"));
    }
    if program.run_operands {
        out.runs.push(format!("{head} {{RUN}}"));
    }
    for spec in &program.inline_code {
        out.runs.extend(
            forms(spec, "'x'")
                .into_iter()
                .map(|f| format!("{head} {f}")),
        );
    }
    for spec in program.opaque_options.iter().filter(|s| !s.ends_with('=')) {
        out.runs.push(format!("{head} {spec} x"));
        // every other spelling, where the row knows how its parser reads them
        if program.grammar.as_ref().is_some_and(|g| g.knows(spec)) {
            out.runs.extend(
                spellings(program, spec, "x")
                    .into_iter()
                    .map(|f| format!("{head} {f}")),
            );
        }
    }
    if program.opaque {
        out.runs.push(format!("{head} x"));
    }
    for spec in &program.write_options {
        // the same option given first with a harmless value: the last one counts
        let harmless = forms(spec, "ok.txt").into_iter().next();
        for f in spellings(program, spec, "{PATH}") {
            out.writes.push(format!("{head} {f} in"));
            if permutes(program) {
                out.writes.push(format!("{head} in {f}"));
            }
            if let Some(first) = &harmless {
                out.writes.push(format!("{head} {first} {f} in"));
            }
        }
    }
    for prefix in &program.write_prefixes {
        out.writes.push(format!("{head} {prefix}{{PATH}}"));
    }
    let when = program.operands_when.first().map_or("", String::as_str);
    let operands = match program.operands {
        Operands::None => None,
        Operands::Writes | Operands::Deletes => Some("{PATH}"),
        Operands::WritesLast | Operands::Moves => Some("a {PATH}"),
        Operands::WritesAfterFirst => Some("a {PATH}"),
        Operands::WritesFirst => Some("{PATH} a"),
    };
    if let Some(operands) = operands {
        let line = match (program.expression, program.script) {
            (true, _) => format!("{head} {operands} {when}"),
            (_, Some(Script::Sed)) => format!("{head} {when} s/a/b/ {operands}"),
            _ => format!("{head} {when} {operands}"),
        };
        out.writes.push(line);
    }
    for (name, sub) in &program.subcommands {
        templates_of(sub, &format!("{head} {name}"), out);
    }
}

static TEMPLATES: LazyLock<Templates> = LazyLock::new(|| {
    let mut out = Templates {
        runs: Vec::new(),
        writes: Vec::new(),
    };
    for program in table().programs() {
        for name in &program.names {
            templates_of(program, name, &mut out);
        }
    }
    out
});

/// Every program of the table allowed (by its name alone, so its subcommands too),
/// `rm` blocked, file writes allowed to auto-run: only the effects can stop a line.
static POLICY: LazyLock<(CompiledAdmin, CompiledUser, CompiledAdmin, CompiledUser)> =
    LazyLock::new(|| {
        let allowed: Vec<String> = table()
            .programs()
            .iter()
            .flat_map(|p| p.names.clone())
            .filter(|n| n != "rm")
            .chain(["grep", "ls", "wc", "cat", "echo"].map(str::to_owned))
            .collect();
        let admin = CompiledAdmin::compile(&AdminControls {
            enabled: true,
            allowed,
            blocked: vec!["rm".into()],
            mcp_tool_allowlist: vec!["builtin:write_file".into()],
            ..AdminControls::default()
        })
        .unwrap();
        let user = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            ..UserSettings::default()
        })
        .unwrap();
        let no_admin = CompiledAdmin::compile(&AdminControls::default()).unwrap();
        let everything = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            command_denylist: vec!["rm".into()],
            mcp_allowed_tools: vec!["builtin:write_file".into()],
            ..UserSettings::default()
        })
        .unwrap();
        (admin, user, no_admin, everything)
    });

/// The line's outcomes under admin control and in run-everything mode.
fn outcomes(line: &str) -> [Outcome; 2] {
    let (admin, user, no_admin, everything) = &*POLICY;
    let call = Call::Shell(line.to_owned());
    [
        decide(admin, user, &call).outcome,
        decide(no_admin, everything, &call).outcome,
    ]
}

#[test]
fn the_table_parses_and_names_each_program_once() {
    let programs = table();
    assert!(programs.programs().len() >= 50);
    for name in [
        "find", "xargs", "env", "sudo", "git", "make", "tar", "rg", "sed", "awk", "base64", "sort",
        "tee", "cp", "mv", "install", "ln", "dd", "touch", "mkdir", "rm", "chmod", "curl", "wget",
        "ssh", "scp", "rsync", "nc", "busybox", "toybox", "python", "node", "perl", "ruby", "npm",
        "npx", "cargo",
    ] {
        assert!(programs.get(name).is_some(), "{name} is not in the table");
    }
    assert!(
        programs.get("/USR/BIN/GIT").is_some(),
        "by file name, without case"
    );
    assert!(programs.get("git.exe").is_some(), "without .exe");
    assert!(Programs::parse("[environment]\nabout='x'\nruns=[]\n[readonly]\nabout='x'\ncommands=[]\n[[program]]\nnames=['a']\nabout=''").is_err(), "a row without about");
    assert!(Programs::parse("[environment]\nabout='x'\nruns=[]\n[readonly]\nabout='x'\ncommands=[]\n[[program]]\nnames=['a']\nabout='x'\n[[program]]\nnames=['A']\nabout='y'").is_err(), "a name twice");
    assert!(Programs::parse("[environment]\nabout='x'\nruns=[]\n[readonly]\nabout='x'\ncommands=[]\n[[program]]\nnames=['a']\nabout='x'\nrun_opts=[]").is_err(), "an unknown field");
}

/// Every row that runs, writes or is opaque produces at least one template, and
/// every template is caught, for every blocked spelling and every target.
#[test]
fn every_row_is_caught() {
    let t = &*TEMPLATES;
    assert!(t.runs.len() >= 80, "{} run templates", t.runs.len());
    assert!(t.writes.len() >= 40, "{} write templates", t.writes.len());
    for spelling in [
        "sort --out={PATH}",
        "cp --targ {PATH}",
        "tar --index={PATH}",
        "sort in -o {PATH}",
        "sort -o ok.txt -o {PATH}",
    ] {
        assert!(
            t.writes.iter().any(|w| w.starts_with(spelling)),
            "no template spells {spelling}"
        );
    }
    for spelling in [
        "sort --compress-p=",
        "git grep --open=",
        "tar --checkpoint-act=exec=",
        "sort x --compress-program=",
        "gdb -command x",
        "gdb -comm=x",
    ] {
        assert!(
            t.runs.iter().any(|w| w.starts_with(spelling)),
            "no template spells {spelling}"
        );
    }
    let mut escaped = Vec::new();
    for template in &t.runs {
        for run in BLOCKED {
            let line = template.replace("{RUN}", run);
            if outcomes(&line).contains(&Outcome::Allow) {
                escaped.push(line);
            }
        }
    }
    for template in &t.writes {
        for target in TARGETS {
            let line = template.replace("{PATH}", target);
            if outcomes(&line).contains(&Outcome::Allow) {
                escaped.push(line);
            }
        }
    }
    assert!(escaped.is_empty(), "ALLOWED:\n  {}", escaped.join("\n  "));
}

/// What a line may be wrapped in and joined with: none of it can hide an effect.
const BEFORE: [&str; 6] = [
    "",
    "sudo ",
    "env X=1 ",
    "timeout 5 ",
    "nice -n 1 ",
    "command ",
];
const JOINED: [&str; 5] = ["", "ls && ", "cd src && ", "git status; ", "echo hi | "];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A blocked word in a position the table says runs, under any wrapper and
    /// after any allowed command, is never ALLOWED.
    #[test]
    fn a_blocked_word_where_a_program_runs_is_never_allowed(
        template in prop::sample::select(TEMPLATES.runs.clone()),
        run in prop::sample::select(BLOCKED.to_vec()),
        before in prop::sample::select(BEFORE.to_vec()),
        joined in prop::sample::select(JOINED.to_vec()),
        shell in any::<bool>(),
    ) {
        let line = format!("{before}{}", template.replace("{RUN}", run));
        let line = if shell { format!("bash -c {}", single_quoted(&line)) } else { line };
        let line = format!("{joined}{line}");
        prop_assert!(!outcomes(&line).contains(&Outcome::Allow), "ALLOWED: {line}");
    }

    /// A write option or operand with a target outside the working directory or in
    /// a protected path is never ALLOWED, wherever the line has changed directory to.
    #[test]
    fn a_write_outside_or_into_a_protected_path_is_never_allowed(
        template in prop::sample::select(TEMPLATES.writes.clone()),
        target in prop::sample::select(TARGETS.to_vec()),
        before in prop::sample::select(BEFORE.to_vec()),
        joined in prop::sample::select(JOINED.to_vec()),
    ) {
        let line = format!("{joined}{before}{}", template.replace("{PATH}", target));
        prop_assert!(!outcomes(&line).contains(&Outcome::Allow), "ALLOWED: {line}");
    }
}

/// The same lines with a harmless command and a path inside are allowed: the table
/// is not uselessly strict.
#[test]
fn writes_inside_are_allowed_where_file_writes_are() {
    for line in [
        "tee out.txt",
        "cp a b",
        "mv a b",
        "touch notes.md",
        "mkdir -p build/x",
        "sort -o sorted.txt in",
        "sed -i s/a/b/ src/lib.rs",
        "git log --output=log.txt",
        "dd if=/dev/zero of=blob bs=1 count=1",
        "find . -exec grep -l x {} \\;",
        "xargs grep x",
        "sudo ls",
        "cd src && touch x",
    ] {
        assert_eq!(outcomes(line), [Outcome::Allow; 2], "{line}");
    }
}

#[test]
fn sed_scripts_that_run_or_write() {
    for script in [
        "e",
        "1e id",
        "s/a/b/e",
        "s/a/b/w out",
        "s|a|b|gw out",
        "w out",
        "/x/W out",
        "1,3{e id\n}",
        "$!{s/a/b/e;}",
        "s/a/b/k",
        "Z",
        "s/a",
    ] {
        assert!(sed_script(script).is_some(), "{script:?}");
    }
    for script in [
        "p",
        "1,5p",
        "s/hello/world/g",
        "s/e/w/2",
        "/start/,/end/d",
        "y/abc/xyz/",
        "$d",
        "1~2p",
        "s/a\\/b/c/",
        "/x/!d",
        "a\\\nappended e w",
        "r in.txt",
        ":a;N;ba",
    ] {
        assert_eq!(sed_script(script), None, "{script:?}");
    }
}

/// BSD (macOS), busybox and toybox spellings, read with the GNU grammars: an option
/// only another dialect has is opaque, and where the dialects read a word apart
/// (BSD sed's `-i ''`) the command is never allowed; what both read alike still is.
#[test]
fn bsd_macos_and_busybox_spellings() {
    // (line, what it does where it comes from)
    let never_allowed = [
        (
            "sed -i '' 's/a/b/' .git/config",
            "BSD sed: edits .git/config in place",
        ),
        (
            "sed -i '' 's/a/b/' notes.txt",
            "BSD sed: '' is the suffix, GNU reads it as the script",
        ),
        (
            "sed -i.bak 's/a/b/' .git/config",
            "both: edits .git/config, keeps a .bak",
        ),
        (
            "sed -E -i '' 's/a/b/' .git/hooks/pre-commit",
            "BSD sed: edits a hook",
        ),
        (
            "sed -I '' 's/a/b/' notes.txt",
            "BSD sed -I: in place across files",
        ),
        ("find -E . -regex '.*'", "BSD find -E: extended regexps"),
        ("find -x . -name y", "BSD find -x: one file system"),
        ("find -s . -name y", "BSD find -s: sorted"),
        ("find -f dir . -name y", "BSD find -f: a start point"),
        ("find . -depth 2 -name y", "BSD find -depth N"),
        ("find . -Bnewer f", "macOS find -Bnewer"),
        ("find . -flags uchg", "BSD find -flags"),
        ("ls -@ .", "macOS ls -@: extended attributes"),
        ("ls -O .", "BSD ls -O: file flags"),
        ("xargs -J % cp % /tmp", "BSD xargs -J: the replace string"),
        ("cp -c a b", "macOS cp -c: clonefile"),
        (
            "tar --newer-mtime-than f -cf o.tar .",
            "bsdtar --newer-mtime-than",
        ),
        ("busybox sed -i s/a/b/ .git/config", "busybox sed in place"),
        ("toybox sed -i s/a/b/ .bashrc", "toybox sed in place"),
        ("busybox find . -exec rm {} \\;", "busybox find runs rm"),
    ];
    for (line, what) in never_allowed {
        assert!(
            !outcomes(line).contains(&Outcome::Allow),
            "ALLOWED: {line} ({what})"
        );
    }
    for line in [
        "sed -E 's/a/b/' notes.txt",
        "sed -n '1,5p' notes.txt",
        "find . -name '*.c' -type f",
        "ls -la",
        "tar -czf out.tar.gz src",
        "xargs -0 grep x",
        "sort -r notes.txt",
    ] {
        assert_eq!(outcomes(line), [Outcome::Allow; 2], "{line}");
    }
}
