//! The docs cannot drift: README.md's and docs/'s `console` sessions are run as
//! transcripts against the real binary, every command block is either run or marked
//! `illustrative`, every relative link and anchor resolves, and the configuration
//! reference lists exactly the keys the configuration types have.
//!
//! A transcript is a fenced block whose info string is `console`: `$ command` lines
//! (a trailing `\` continues one), each followed by the output it must print (stdout
//! and stderr together). In the output, `[..]` stands for any text within a line and
//! a line `...` for any number of lines; `[exit: N]` as the last line says the command
//! exits N (0 otherwise). A command ending in `&` is started in the background and
//! waited for until every address it names accepts connections (a `toolgate serve`
//! until its health says SERVING).
//!
//! Each file runs from a fresh working directory and a fresh HOME, its blocks in
//! order. The ports the docs show (127.0.0.1:7070 and :7071) are free ones in the
//! run, mapped both ways, and the home directory is shown as `~`: the commands run
//! as written otherwise (through bash, with the toolgate binary first on PATH).

use crate::claude_code::{FakeModel, claude_binary};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The ports the docs show, mapped to free ones in the run.
const DOC_PORTS: [u16; 2] = [7070, 7071];
/// How long one command may take.
const COMMAND_DEADLINE: Duration = Duration::from_secs(60);
/// How long reads of what is written in the background (the decision log, the audit
/// trail) are read again until they match.
const SETTLE_DEADLINE: Duration = Duration::from_secs(15);

/// README.md and every page of docs/, README first.
fn markdown_files() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut files = vec![Path::new(ROOT).join("README.md")];
    files.extend(pages);
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A fenced code block: its first line's number, its info string, its lines.
struct Fence {
    line: usize,
    info: String,
    body: Vec<String>,
}

fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut open: Option<Fence> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Fence {
                    line: i + 1,
                    info: info.trim().to_owned(),
                    body: Vec::new(),
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(f), _) => f.body.push(line.to_owned()),
            (None, None) => {}
        }
    }
    out
}

const SHELL_LANGUAGES: [&str; 6] = ["sh", "bash", "shell", "zsh", "console", "shell-session"];

/// Every block of commands is run by a test or says it is only an illustration.
#[test]
fn every_command_block_is_run_or_marked_illustrative() {
    let mut problems = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for f in fences(&text) {
            let mut words = f.info.split_whitespace();
            let language = words.next().unwrap_or("");
            let marks: Vec<&str> = words.collect();
            let run = language == "console" || marks.contains(&"illustrative");
            if SHELL_LANGUAGES.contains(&language) && !run {
                problems.push(format!(
                    "{}:{}: a ```{} block is neither a `console` transcript the tests run nor marked `illustrative`",
                    shown(&file),
                    f.line,
                    f.info
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A heading's anchor as GitHub and mdBook make it.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one gets `-1`, `-2`, …).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of `[text](target)` links outside code, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // inline code holds no links
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((i + 1, rest[..end].to_owned()));
                rest = &rest[end..];
            }
        }
    }
    out
}

/// Every relative link of README.md and docs/ names a file that exists, and every
/// anchor a heading of its page.
#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let at = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let place = format!("{}:{line}: {target}", shown(&file));
            if !at.exists() {
                problems.push(format!("{place}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                let page = std::fs::read_to_string(&at).unwrap_or_default();
                if !anchors(&page).iter().any(|a| a == anchor) {
                    problems.push(format!("{place}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the scan broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every page of docs/ is in SUMMARY.md, so the book shows it.
#[test]
fn every_page_is_in_the_summary() {
    let summary = std::fs::read_to_string(Path::new(ROOT).join("docs/SUMMARY.md")).unwrap();
    let listed: Vec<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    for file in markdown_files().iter().skip(1) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name == "SUMMARY.md" || listed.contains(&name),
            "docs/{name} is not in docs/SUMMARY.md"
        );
    }
}

/// The configuration keys with their defaults, as docs/configuration.md lists them:
/// generated from the configuration types.
fn configuration_reference() -> String {
    fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            other => out.push((prefix.to_owned(), other.to_string())),
        }
    }
    let defaults = serde_json::to_value(toolgate::config::Config::default()).unwrap();
    let mut keys = Vec::new();
    walk("", &defaults, &mut keys);
    let mut table = String::from("| key | environment variable | default |\n| --- | --- | --- |\n");
    for (key, default) in keys {
        let var = format!("TOOLGATE_{}", key.replace('.', "__").to_uppercase());
        table.push_str(&format!("| `{key}` | `{var}` | `{default}` |\n"));
    }
    table
}

const GENERATED_START: &str = "<!-- generated from the configuration types: UPDATE_DOCS=1 cargo test --test it docs:: rewrites it -->\n";
const GENERATED_END: &str = "<!-- end of the generated table -->";

/// docs/configuration.md's table of keys is the configuration types' own
/// (`UPDATE_DOCS=1` rewrites it), and each top-level key is explained in its sample.
#[test]
fn the_configuration_reference_matches_the_configuration_types() {
    let path = Path::new(ROOT).join("docs/configuration.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let start = page
        .find(GENERATED_START)
        .expect("docs/configuration.md holds the generated table's start marker")
        + GENERATED_START.len();
    let end = page[start..]
        .find(GENERATED_END)
        .expect("and its end marker")
        + start;
    let want = configuration_reference();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{want}{}", &page[..start], &page[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &page[start..end],
        want,
        "docs/configuration.md's key table differs from the configuration types: run UPDATE_DOCS=1 cargo test --test it docs:: and review the diff"
    );
    for key in toolgate::config::Config::keys() {
        assert!(
            page[..start].contains(&format!("\n{key}:")),
            "docs/configuration.md's sample does not explain the top-level key {key}"
        );
    }
}

/// One `$ command` of a transcript and the output it must print.
struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
    exit: i32,
}

fn steps(fence: &Fence) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut lines = fence.body.iter().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        if let Some(first) = line.strip_prefix("$ ") {
            let mut command = first.to_owned();
            // kept as written: bash joins a `\` and its newline itself
            while command.ends_with('\\') {
                match lines.next() {
                    Some((_, more)) => command.push_str(&format!("\n{more}")),
                    None => break,
                }
            }
            // a here-document's lines are the command's, up to its terminator
            if let Some(word) = here_document_end(&command) {
                for (_, more) in lines.by_ref() {
                    command.push_str(&format!("\n{more}"));
                    if more.trim() == word {
                        break;
                    }
                }
            }
            out.push(Step {
                line: fence.line + 1 + i,
                command,
                expected: Vec::new(),
                exit: 0,
            });
        } else if let Some(step) = out.last_mut() {
            match line
                .strip_prefix("[exit: ")
                .and_then(|r| r.strip_suffix(']'))
            {
                Some(code) => step.exit = code.parse().expect("[exit: N] holds a number"),
                None => step.expected.push(line.clone()),
            }
        }
    }
    out
}

/// The terminator of a here-document the command opens (`<<'YAML'`, `<<EOF`).
fn here_document_end(command: &str) -> Option<String> {
    let after = command.split("<<").nth(1)?;
    let word: String = after
        .trim_start_matches('-')
        .trim_start()
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// Whether `line` matches `pattern`, where `[..]` stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (k, part) in parts.iter().enumerate() {
        if k + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `lines` match `patterns`, where a line `...` stands for any lines.
fn lines_match(patterns: &[String], lines: &[&str]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((p, rest)) if p == "..." => {
            (0..=lines.len()).any(|skip| lines_match(rest, &lines[skip..]))
        }
        Some((p, rest)) => {
            !lines.is_empty() && line_matches(p, lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// A fresh working directory and HOME, the ports mapped, the background commands.
pub(crate) struct Session {
    _root: tempfile::TempDir,
    pub(crate) work: PathBuf,
    pub(crate) home: PathBuf,
    ports: Vec<(u16, u16)>,
    background: Vec<tokio::process::Child>,
    /// What `export NAME=…` steps set, for the steps after them.
    exported: BTreeMap<String, String>,
}

impl Session {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let home = root.path().join("home");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let ports = DOC_PORTS.iter().map(|&p| (p, free_port())).collect();
        Self {
            _root: root,
            work,
            home,
            ports,
            background: Vec::new(),
            exported: BTreeMap::new(),
        }
    }

    /// The command as run: the docs' ports mapped to the run's.
    fn command_of(&self, shown: &str) -> String {
        self.ports.iter().fold(shown.to_owned(), |c, (doc, run)| {
            c.replace(&format!("127.0.0.1:{doc}"), &format!("127.0.0.1:{run}"))
        })
    }

    /// The output as the docs show it: the run's ports and home mapped back.
    fn output_of(&self, raw: &str) -> String {
        let home = self.home.display().to_string();
        let out = self
            .ports
            .iter()
            .fold(raw.replace(&home, "~"), |o, (doc, run)| {
                o.replace(&format!("127.0.0.1:{run}"), &format!("127.0.0.1:{doc}"))
            });
        out.lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_owned()
    }

    pub(crate) fn server_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports[0].1)
    }

    fn bash(&self, command: &str) -> tokio::process::Command {
        let bin = Path::new(env!("CARGO_BIN_EXE_toolgate")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            // the default address (127.0.0.1:7070) is the run's port: the server's
            // and the client's
            .env("TOOLGATE_LISTEN", format!("127.0.0.1:{}", self.ports[0].1))
            .env("TOOLGATE_SERVER", self.server_url())
            .envs(&self.exported)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs one transcript step; the error says where and what differed.
    async fn run(&mut self, file: &str, step: &Step) -> Result<(), String> {
        let place = format!("{file}:{}: $ {}", step.line, step.command);
        let command = self.command_of(&step.command);
        if let Some(background) = command.trim_end().strip_suffix('&') {
            let child = self
                .bash(&format!("exec {background}"))
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| format!("{place}: {e}"))?;
            self.background.push(child);
            for (_, port) in self.ports.clone() {
                if command.contains(&format!("127.0.0.1:{port}"))
                    || (port == self.ports[0].1 && command.contains("toolgate serve"))
                {
                    self.wait_for(port, &place).await?;
                }
            }
            if command.contains("toolgate serve") {
                self.wait_serving(&place).await?;
            }
            return Ok(());
        }
        // a shell's exports last: kept for the steps after this one
        if let Some(assignments) = command.strip_prefix("export ") {
            let names: Vec<&str> = assignments
                .split_whitespace()
                .filter_map(|a| a.split_once('=').map(|(n, _)| n))
                .collect();
            let show: String = names.iter().map(|n| format!(" \"${n}\"")).collect();
            let out = self
                .bash(&format!("{command} && printf '%s\\0'{show}"))
                .output()
                .await
                .map_err(|e| format!("{place}: {e}"))?;
            if !out.status.success() {
                return Err(format!("{place}: {}", String::from_utf8_lossy(&out.stderr)));
            }
            let values = String::from_utf8_lossy(&out.stdout).into_owned();
            for (name, value) in names.iter().zip(values.split('\0')) {
                self.exported.insert((*name).to_owned(), value.to_owned());
            }
            return Ok(());
        }
        // a read of what the server writes in the background (the logs, a reloaded
        // policy file) may be read again
        let settles = [
            "toolgate decisions list",
            "toolgate audit list",
            "toolgate admin get",
            "toolgate evaluate",
            "toolgate approvals list",
            // a file a background command writes
            "cat ",
        ]
        .iter()
        .any(|c| step.command.starts_with(c));
        let give_up = tokio::time::Instant::now() + SETTLE_DEADLINE;
        loop {
            let out = tokio::time::timeout(
                COMMAND_DEADLINE,
                self.bash(&format!("exec 2>&1\n{command}")).output(),
            )
            .await
            .map_err(|_| format!("{place}: still running after {COMMAND_DEADLINE:?}"))?
            .map_err(|e| format!("{place}: {e}"))?;
            let got = self.output_of(&String::from_utf8_lossy(&out.stdout));
            let lines: Vec<&str> = if got.is_empty() {
                Vec::new()
            } else {
                got.lines().collect()
            };
            let mut want = step.expected.clone();
            while want.last().is_some_and(|l| l.trim().is_empty()) {
                want.pop();
            }
            let code = out.status.code().unwrap_or(-1);
            if lines_match(&want, &lines) && code == step.exit {
                return Ok(());
            }
            if !settles || tokio::time::Instant::now() >= give_up {
                return Err(format!(
                    "{place}\nexited {code} (the docs say {})\nprinted:\n{got}\nthe docs show:\n{}",
                    step.exit,
                    want.join("\n")
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until `port` accepts connections, or a background command ends.
    async fn wait_for(&mut self, port: u16, place: &str) -> Result<(), String> {
        let give_up = tokio::time::Instant::now() + COMMAND_DEADLINE;
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(());
            }
            for child in &mut self.background {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("{place}: ended ({status}) before it listened"));
                }
            }
            if tokio::time::Instant::now() >= give_up {
                return Err(format!(
                    "{place}: nothing listened on the port within {COMMAND_DEADLINE:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the server says it is SERVING: its port accepts connections (for
    /// health alone) before it has opened its store and written its bootstrap token.
    async fn wait_serving(&mut self, place: &str) -> Result<(), String> {
        let give_up = tokio::time::Instant::now() + COMMAND_DEADLINE;
        let serving = tonic_health::ServingStatus::Serving as i32;
        loop {
            let status = async {
                let channel = tonic::transport::Endpoint::from_shared(self.server_url())
                    .ok()?
                    .connect()
                    .await
                    .ok()?;
                let request = tonic_health::pb::HealthCheckRequest {
                    service: String::new(),
                };
                tonic_health::pb::health_client::HealthClient::new(channel)
                    .check(request)
                    .await
                    .ok()
                    .map(|r| r.into_inner().status)
            };
            if status.await == Some(serving) {
                return Ok(());
            }
            for child in &mut self.background {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("{place}: ended ({status}) before it was serving"));
                }
            }
            if tokio::time::Instant::now() >= give_up {
                return Err(format!(
                    "{place}: health was not SERVING within {COMMAND_DEADLINE:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Runs every transcript of `file` in order; every problem at once is not useful
    /// here (a later step depends on an earlier one), so the first ends it.
    async fn run_file(&mut self, file: &Path) -> Result<usize, String> {
        let text = std::fs::read_to_string(file).unwrap();
        let name = shown(file);
        let mut ran = 0;
        for fence in fences(&text).iter().filter(|f| f.info == "console") {
            for step in steps(fence) {
                self.run(&name, &step).await?;
                ran += 1;
            }
        }
        Ok(ran)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Every page of docs/ with a transcript runs as written, each from a fresh
/// directory and HOME.
#[tokio::test]
async fn the_docs_sessions_run_as_written() {
    let mut ran = 0;
    for file in markdown_files().iter().skip(1) {
        let mut session = Session::new();
        ran += session
            .run_file(file)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!("{ran} commands of docs/ ran as written");
}

/// A new user's first hour: README's quickstart as written, from a fresh directory
/// and HOME, ends with the real Claude Code running an allowed `Read` and `git
/// status` through the hook it installed, and refused the denied `rm -rf`.
#[tokio::test]
async fn the_quickstart_runs_as_written_and_ends_in_claude_code() {
    let mut session = Session::new();
    let ran = session
        .run_file(&Path::new(ROOT).join("README.md"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(ran >= 8, "README.md's quickstart ran only {ran} commands");
    let Some(claude) = claude_binary() else {
        return;
    };
    let work = session.work.clone();
    std::fs::write(work.join("notes.txt"), "the quickstart's notes\n").unwrap();
    std::fs::create_dir_all(work.join("build")).unwrap();
    let read = json!({"name": "Read", "input": {"file_path": work.join("notes.txt").display().to_string()}});
    let s = claude_in(&claude, &session, read).await;
    assert_eq!(s["permission_denials"], json!([]), "Read ran: {s}");
    let results = &s["tool_results"];
    assert!(
        results.to_string().contains("the quickstart's notes"),
        "the model read the file: {results}"
    );

    let status =
        json!({"name": "Bash", "input": {"command": "git status", "description": "status"}});
    let s = claude_in(&claude, &session, status).await;
    assert_eq!(s["permission_denials"], json!([]), "git status ran: {s}");
    assert!(
        !s["tool_results"].to_string().contains("toolgate"),
        "git status was not refused: {}",
        s["tool_results"]
    );

    let remove =
        json!({"name": "Bash", "input": {"command": "rm -rf build", "description": "clean"}});
    let s = claude_in(&claude, &session, remove).await;
    assert!(work.join("build").is_dir(), "rm -rf did not run");
    assert!(
        s["tool_results"]
            .to_string()
            .contains("toolgate DENY (COMMAND_DENIED)"),
        "the model was told why: {}",
        s["tool_results"]
    );
}

/// One `claude -p` run in the session's directory and HOME (its settings are the
/// ones `hook install` wrote there), whose model makes `call`; its JSON result with
/// the tool results the model was sent.
async fn claude_in(claude: &Path, session: &Session, call: Value) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let model = FakeModel::start(scratch.path(), &json!([call]));
    let mut cmd = tokio::process::Command::new(claude);
    let run = cmd
        .args(["-p", "make the call", "--output-format", "json"])
        .current_dir(&session.work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &session.home)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-fake")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("claude finished within 120 s")
        .expect("claude runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON result ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    result["tool_results"] = Value::Array(model.tool_results());
    result
}

#[test]
fn the_transcript_matcher() {
    let p = |s: &[&str]| s.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>();
    assert!(line_matches("tok_[..]  acme", "tok_12ab  acme"));
    assert!(!line_matches("tok_[..]  acme", "tok_12ab  acmee"));
    assert!(line_matches("[..]x[..]", "abxcd"));
    assert!(line_matches("a[..]", "a"));
    assert!(!line_matches("a", "ab"));
    assert!(lines_match(&p(&["a", "...", "z"]), &["a", "b", "c", "z"]));
    assert!(lines_match(&p(&["a", "...", "z"]), &["a", "z"]));
    assert!(!lines_match(&p(&["a", "...", "z"]), &["a", "b"]));
    assert!(lines_match(&p(&[]), &[]));
    assert_eq!(
        slug("Exporting the policy to a client's own format"),
        "exporting-the-policy-to-a-clients-own-format"
    );
    assert_eq!(
        slug("The MCP proxy: `toolgate proxy`"),
        "the-mcp-proxy-toolgate-proxy"
    );
}

/// Every file under `dir` (recursively) whose extension is one of `extensions`.
fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The help of `toolgate` and of every subcommand under it, as `(command, text)`.
fn every_help() -> Vec<(String, String)> {
    let mut helps = Vec::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(words) = pending.pop() {
        let out = std::process::Command::new(crate::support::toolgate_binary())
            .args(&words)
            .arg("--help")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let commands = text
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect::<Vec<_>>();
        for command in commands {
            let mut deeper = words.clone();
            deeper.push(command);
            pending.push(deeper);
        }
        helps.push((format!("toolgate {}", words.join(" ")), text));
    }
    helps
}

/// Users do not have the documents toolgate was specified from, so nothing they read
/// names them: the docs, the protos and the schemas generated from them, the console,
/// every command's help, and the strings in the code (errors and hints).
#[test]
fn user_facing_text_never_names_the_source_documents() {
    // "seed 001", "source document", and the documents' own short names for things
    let names = |line: &str| {
        let line = line.to_lowercase();
        line.contains("seed 0")
            || line.contains("seed0")
            || line.contains("source document")
            || [
                "`ihe`", "`yro`", "`dxe`", "`voh`", "`d4c`", "`f4c`", "`h4c`",
            ]
            .iter()
            .any(|n| line.contains(n))
    };
    let root = Path::new(ROOT);
    let mut texts: Vec<(String, String)> = Vec::new();
    let mut files = markdown_files();
    files.extend(files_under(&root.join("proto"), &["proto"]));
    files.extend(files_under(&root.join("schemas"), &["json"]));
    files.extend(files_under(&root.join("console/src"), &["ts", "html"]));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        texts.push((shown(&file), text));
    }
    // in Rust sources, only what a string literal says (comments are for developers,
    // who have the documents); unit tests are left out
    for dir in [
        "src",
        "crates/core/src",
        "crates/server/src",
        "crates/client/src",
    ] {
        for file in files_under(&root.join(dir), &["rs"]) {
            let path = shown(&file);
            if path.contains("/tests/") || path.ends_with("tests.rs") {
                continue;
            }
            let strings: String = std::fs::read_to_string(&file)
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .filter_map(|l| l.split_once('"').map(|(_, rest)| rest))
                .collect::<Vec<_>>()
                .join("\n");
            texts.push((path, strings));
        }
    }
    texts.extend(every_help());
    let named: Vec<String> = texts
        .iter()
        .flat_map(|(source, text)| {
            text.lines()
                .filter(|l| names(l))
                .map(move |l| format!("{source}: {}", l.trim()))
        })
        .collect();
    assert!(
        named.is_empty(),
        "user-facing text names the documents toolgate was specified from (say it in toolgate's own words):\n{}",
        named.join("\n")
    );
}
