//! Properties of the shell reader: it never panics, whatever the bytes, and a blocked
//! command word spelled, quoted, wrapped and joined at random is never auto-run; the
//! order of `allowed` never changes a decision; and the agent's own write tools
//! never auto-write a protected place or outside the working directory.

use proptest::prelude::*;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, Site, ToolActionLists, UserSettings,
    decide, decide_at, parse_command_line,
};

/// Spellings bash reads as `rm`.
const RM: &[&str] = &[
    "rm",
    "'rm'",
    "\"rm\"",
    "r''m",
    "r\"\"m",
    "\\rm",
    "r\\m",
    "/bin/rm",
    "/usr/bin/rm",
    "'r'm",
    "r'm'",
    "$'rm'",
    "{rm,}",
    "r${x}m",
    "\"r\"'m'",
];
/// Commands that run their arguments, with whatever options they need.
const WRAPPERS: &[&str] = &[
    "sudo",
    "sudo -u root",
    "env",
    "env X=1",
    "nohup",
    "timeout 5",
    "nice -n 1",
    "command",
    "exec",
    "time",
    "xargs",
    "xargs -n 1",
    "stdbuf -o0",
    "setsid",
    "find . -exec",
];
/// A comment runs to the end of its line, quotes in it included.
const SEPARATORS: &[&str] = &[
    " && ",
    " || ",
    "; ",
    " | ",
    "\n",
    " & ",
    " |& ",
    " # it's\n",
];
const OTHERS: &[&str] = &["ls", "git status", "echo hi", "npm test", "ls -la"];

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `rm -rf x` under random spelling and wrappers, maybe inside `bash -c`, between
/// random other commands.
fn blocked_line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(RM),
        prop::collection::vec(prop::sample::select(WRAPPERS), 0..3),
        0usize..3,
        prop::collection::vec(
            (
                prop::sample::select(OTHERS),
                prop::sample::select(SEPARATORS),
            ),
            0..3,
        ),
        prop::collection::vec(
            (
                prop::sample::select(SEPARATORS),
                prop::sample::select(OTHERS),
            ),
            0..3,
        ),
    )
        .prop_map(|(rm, wrappers, shells, before, after)| {
            let mut command = format!("{rm} -rf x");
            for w in wrappers.iter().rev() {
                command = format!("{w} {command}");
            }
            for shell in ["bash", "sh"].iter().cycle().take(shells) {
                command = format!("{shell} -c {}", single_quoted(&command));
            }
            let mut line = String::new();
            for (other, sep) in before {
                line.push_str(other);
                line.push_str(sep);
            }
            line.push_str(&command);
            for (sep, other) in after {
                line.push_str(sep);
                line.push_str(other);
            }
            line
        })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_blocked_command_is_never_allowed(line in blocked_line()) {
        // run-everything with rm denied; and admin control allowing every other word
        let everything = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            command_denylist: strings(&["rm"]),
            ..UserSettings::default()
        })
        .unwrap();
        let no_admin = CompiledAdmin::compile(&AdminControls::default()).unwrap();
        let mut allowed = strings(&["ls", "git", "echo", "npm", "bash", "sh", "find", "/bin/rm"]);
        allowed.extend(WRAPPERS.iter().map(|w| w.split(' ').next().unwrap().to_owned()));
        let admin = CompiledAdmin::compile(&AdminControls {
            enabled: true,
            allowed,
            blocked: strings(&["rm"]),
            ..AdminControls::default()
        })
        .unwrap();
        let user = CompiledUser::compile(&UserSettings { use_yolo_mode: true, ..UserSettings::default() }).unwrap();
        let call = Call::Shell(line.clone());
        for d in [decide(&no_admin, &everything, &call), decide(&admin, &user, &call)] {
            prop_assert_ne!(d.outcome, Outcome::Allow, "{:?}: {:?}", line, d);
        }
    }

    #[test]
    fn the_reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let line = String::from_utf8_lossy(&bytes);
        let _ = parse_command_line(&line);
    }

    #[test]
    fn the_reader_never_panics_on_shell_text(line in r#"[a-z $'"\\`(){}\[\];&|<>#=*?~!\n\t-]{0,80}"#) {
        let read = parse_command_line(&line);
        // whatever it read, a decision on it is made
        let user = CompiledUser::compile(&UserSettings { use_yolo_mode: true, command_allowlist: strings(&["a"]), ..UserSettings::default() }).unwrap();
        let d = decide(&CompiledAdmin::compile(&AdminControls::default()).unwrap(), &user, &Call::Shell(line.clone()));
        if read.opaque().is_some() {
            prop_assert_ne!(d.outcome, Outcome::Allow, "{:?}", line);
        }
    }
}

/// Entries of an allowed list whose order must not matter: `@readonly` and explicit
/// prefixes of the same programs (one allows writes, the other does not).
const ALLOWED_POOL: &[&str] = &[
    "@readonly",
    "echo",
    "ls",
    "git",
    "git status",
    "cat",
    "sed",
    "cp",
    "tee",
    "sort",
    "LANG=C ls",
];
const ORDER_LINES: &[&str] = &[
    "echo x > out.txt",
    "echo x >> notes.txt && ls",
    "ls",
    "LANG=C ls",
    "git status > status.txt",
    "git log -1",
    "sed -i s/a/b/ notes.txt",
    "cat notes.txt | tee copy.txt",
    "cp notes.txt copy.txt",
    "sort -o sorted.txt notes.txt",
    "bash -lc 'echo x > out.txt'",
    "bash -lc 'ls'",
    "echo x > .git/config",
    "cat </dev/tcp/example.com/80",
];

fn allowed_and_permuted() -> impl Strategy<Value = (Vec<String>, Vec<String>)> {
    prop::sample::subsequence(ALLOWED_POOL.to_vec(), 1..=ALLOWED_POOL.len()).prop_flat_map(|v| {
        let v: Vec<String> = v.into_iter().map(str::to_owned).collect();
        (Just(v.clone()), Just(v).prop_shuffle())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `[@readonly, echo]` and `[echo, @readonly]` decide every line the same
    /// (issue 36): the reference is the list in one order, the model any other.
    #[test]
    fn the_order_of_allowed_never_changes_a_decision(
        (allowed, permuted) in allowed_and_permuted(),
        line in prop::sample::select(ORDER_LINES.to_vec()),
    ) {
        let user = CompiledUser::compile(&UserSettings { use_yolo_mode: true, ..UserSettings::default() }).unwrap();
        let admin = |allowed: Vec<String>| CompiledAdmin::compile(&AdminControls {
            enabled: true,
            allowed,
            mcp_tool_allowlist: strings(&["builtin:write_file"]),
            ..AdminControls::default()
        })
        .unwrap();
        let call = Call::Shell(line.to_owned());
        let one = decide(&admin(allowed.clone()), &user, &call);
        let other = decide(&admin(permuted.clone()), &user, &call);
        prop_assert_eq!(
            (one.outcome, one.reason),
            (other.outcome, other.reason),
            "{:?} under {:?} and {:?}", line, allowed, permuted
        );
    }
}

/// The agent's write tools as the server is sent them, and the key naming the file.
const WRITE_TOOLS: &[(&str, &str)] = &[
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("edit_file", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
    ("write_file", "file_path"),
    ("write_file", "path"),
    ("replace", "file_path"),
    ("apply_patch", "input"),
];
/// Where no write auto-runs, relative to the working directory `/p`.
const HELD_TARGETS: &[&str] = &[
    ".git/config",
    ".git/hooks/pre-commit",
    ".GIT/HOOKS/x",
    ".git./config",
    "GIT~1/config",
    ".github/workflows/ci.yml",
    ".cargo/config.toml",
    ".claude/settings.json",
    ".bashrc",
    ".ssh/authorized_keys",
    "../outside",
    "/etc/passwd",
    "~/.profile",
    "C:/x",
    "\\\\host\\share\\x",
    "sub/../../x",
];
/// Ways to write a path inside `/p` that lead to the same place.
const PATH_FORMS: &[&str] = &["", "./", "/p/", "sub/../", "./sub/../", "/p/./"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The agent's own write tool writing a protected place or outside the working
    /// directory, named any way, is never ALLOWED by the server, however allowed
    /// the tool is; the same file inside is, and its ALLOW names the file.
    #[test]
    fn a_write_tool_never_writes_a_protected_place_or_outside(
        (tool, key) in prop::sample::select(WRITE_TOOLS.to_vec()),
        target in prop::sample::select(HELD_TARGETS.to_vec()),
        form in prop::sample::select(PATH_FORMS.to_vec()),
        backslashes in any::<bool>(),
    ) {
        let everything = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            ..UserSettings::default()
        })
        .unwrap();
        let admin = CompiledAdmin::compile(&AdminControls::default()).unwrap();
        let relative = !(target.starts_with('/') || target.starts_with('~') || target.contains(':') || target.starts_with('\\'));
        let mut path = if relative { format!("{form}{target}") } else { target.to_owned() };
        if backslashes && relative && !form.starts_with('/') {
            path = path.replace('/', "\\");
        }
        let input = |path: &str| if key == "input" {
            serde_json::json!({ "input": format!("*** Begin Patch\n*** Update File: {path}\n*** End Patch") })
        } else {
            serde_json::json!({ key: path })
        };
        let call = Call::Mcp { server: "builtin".into(), tool: tool.into() };
        let files = ToolActionLists::default();
        let held = input(&path);
        let site = Site { cwd: Some("/p"), tool_input: Some(&held) };
        let d = decide_at(&files, &admin, &everything, &call, site);
        prop_assert_ne!(d.outcome, Outcome::Allow, "{} {:?}: {}", tool, path, d.message(&call));
        // the reference: a plain file inside is allowed, on the condition it stays
        // (a path that climbs with `..` is outside, wherever it ends)
        let form = if form.contains("..") { "" } else { form };
        let fine = input(&format!("{form}src/lib.rs"));
        let site = Site { cwd: Some("/p"), tool_input: Some(&fine) };
        let d = decide_at(&files, &admin, &everything, &call, site);
        prop_assert_eq!(d.outcome, Outcome::Allow, "{} {}src/lib.rs: {}", tool, form, d.message(&call));
        prop_assert_eq!(d.unchecked.stays_inside, vec!["/p/src/lib.rs".to_owned()]);
    }
}
