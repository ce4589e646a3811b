//! ARCHITECTURE.md kept true: every source file is named in it, every file it names
//! exists, and the invariants it states about the crates and their imports hold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

mod modules;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The extensions of the files the document must name.
const SOURCE_EXTENSIONS: [&str; 4] = [".rs", ".proto", ".ts", ".py"];

/// Directories whose files are data, vendored or built, not source to read.
const NOT_SOURCE: [&str; 3] = ["tests/data/", "node_modules/", "target/"];

fn is_source(path: &str) -> bool {
    SOURCE_EXTENSIONS.iter().any(|e| path.ends_with(e))
        && !NOT_SOURCE
            .iter()
            .any(|d| path.starts_with(d) || path.contains(&format!("/{d}")))
}

/// The repository's source files, as git tracks them (new files once added).
fn source_files() -> BTreeSet<String> {
    let out = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(ROOT)
        .output()
        .expect("run `git ls-files` (the test reads the file list from git)");
    assert!(
        out.status.success(),
        "`git ls-files` failed in {ROOT}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("git prints paths as UTF-8")
        .lines()
        .filter(|p| is_source(p))
        // a deleted but not yet committed file is still listed by `--cached`
        .filter(|p| Path::new(ROOT).join(p).exists())
        .map(str::to_owned)
        .collect()
}

/// The code spans of a paragraph, line by line: a span may run over a line break
/// (Markdown joins the lines with a space); each is listed on the line it ends on.
#[derive(Default)]
struct Spans {
    open: Option<String>,
}

impl Spans {
    fn line(&mut self, line: &str) -> Vec<String> {
        if line.trim().is_empty() || line.starts_with('#') {
            self.open = None;
        }
        let mut done = Vec::new();
        for (i, piece) in line.split('`').enumerate() {
            if i > 0 {
                match self.open.take() {
                    Some(span) => done.push(span),
                    None => self.open = Some(String::new()),
                }
            }
            if let Some(span) = self.open.as_mut() {
                span.push_str(piece);
            }
        }
        if let Some(span) = self.open.as_mut() {
            span.push(' ');
        }
        done
    }
}

/// A span written as a path: no spaces, no glob, not an extension alone (`.proto`),
/// ending in `/` or a source extension.
fn path_span(span: &str) -> bool {
    !span.is_empty()
        && !span.starts_with('.')
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        && (span.ends_with('/') || SOURCE_EXTENSIONS.iter().any(|e| span.ends_with(e)))
}

/// Where the document names each source file and each directory entry: a path is read
/// relative to the directories its section's heading names (`### \`crates/core/src/\``),
/// then each directory above them, up to the repository's root. A bullet that opens
/// with a directory (`- \`tests/it/\`: …`) names every file under it.
struct Named {
    files: BTreeSet<String>,
    directories: BTreeSet<String>,
    /// Paths written in the document that resolve to nothing, with their line.
    missing: Vec<(usize, String)>,
}

fn bases_of(dirs: &[String]) -> Vec<String> {
    let mut bases = Vec::new();
    for dir in dirs {
        let mut d = dir.trim_end_matches('/').to_owned();
        while !d.is_empty() {
            bases.push(format!("{d}/"));
            d = d
                .rsplit_once('/')
                .map(|(a, _)| a.to_owned())
                .unwrap_or_default();
        }
    }
    bases.push(String::new());
    bases
}

fn read_named(doc: &str, files: &BTreeSet<String>) -> Named {
    let dirs: BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            f.match_indices('/')
                .map(|(i, _)| f[..=i].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut named = Named {
        files: BTreeSet::new(),
        directories: BTreeSet::new(),
        missing: Vec::new(),
    };
    let mut bases = bases_of(&[]);
    let mut spans = Spans::default();
    let mut fenced = false;
    for (n, line) in doc.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line_spans = spans.line(line);
        if line.starts_with('#') {
            let heading_dirs: Vec<String> = line_spans
                .iter()
                .filter(|s| path_span(s) && s.ends_with('/'))
                .cloned()
                .collect();
            bases = bases_of(&heading_dirs);
        }
        let opens_with_directory = line
            .strip_prefix("- `")
            .and_then(|rest| rest.split_once('`'))
            .filter(|(span, after)| span.ends_with('/') && after.starts_with(':'))
            .map(|(span, _)| span.to_owned());
        for span in line_spans.iter().filter(|s| path_span(s)) {
            let resolved = bases.iter().map(|b| format!("{b}{span}")).find(|p| {
                if span.ends_with('/') {
                    dirs.contains(p) || Path::new(ROOT).join(p).is_dir()
                } else {
                    files.contains(p) || Path::new(ROOT).join(p).is_file()
                }
            });
            match resolved {
                Some(p) if p.ends_with('/') => {
                    if opens_with_directory.as_deref() == Some(span.as_str()) {
                        named.directories.insert(p);
                    }
                }
                Some(p) => {
                    named.files.insert(p);
                }
                None => named.missing.push((n + 1, span.clone())),
            }
        }
    }
    named
}

fn architecture() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md")
}

#[test]
fn every_source_file_is_named_in_architecture_md() {
    let files = source_files();
    assert!(
        files.contains("src/main.rs"),
        "the file list should hold src/main.rs: {files:?}"
    );
    let named = read_named(&architecture(), &files);
    let unnamed: Vec<&String> = files
        .iter()
        .filter(|f| !named.files.contains(*f))
        .filter(|f| !named.directories.iter().any(|d| f.starts_with(d.as_str())))
        .collect();
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md names none of these {} source files; name each in its area's \
         section (a path relative to the section heading's directory or the repository's \
         root), or, for a directory of uniform files, open a bullet with the directory \
         (`- `dir/`: what its files hold`):\n  {}",
        unnamed.len(),
        unnamed
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn every_path_architecture_md_names_exists() {
    let named = read_named(&architecture(), &source_files());
    assert!(
        named.missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist (relative to the section heading's \
         directories, the directories above them and the root); rename or remove them:\n  {}",
        named
            .missing
            .iter()
            .map(|(n, p)| format!("line {n}: {p}"))
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_reading_of_names_follows_headings_and_directory_bullets() {
    let files: BTreeSet<String> = ["a/b/c.rs", "a/b/d.rs", "a/e.rs", "t/x/y.rs"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let doc = "### `a/b/`\n`c.rs` and `e.rs`, `--a\nb` `e.rs`\n## Tests\n- `t/x/`: the files\n`nothing.rs`\n```\n`d.rs`\n```\n";
    let named = read_named(doc, &files);
    assert_eq!(
        named.files,
        ["a/b/c.rs", "a/e.rs"].map(str::to_owned).into(),
        "a name resolves under the heading's directory, then above it"
    );
    assert_eq!(named.directories, ["t/x/".to_owned()].into());
    assert_eq!(named.missing, vec![(6, "nothing.rs".to_owned())]);
}

/// The toolgate crates each crate's Cargo.toml depends on, build and normal
/// dependencies, followed transitively.
fn toolgate_dependencies() -> BTreeMap<&'static str, BTreeSet<String>> {
    let manifests = [
        ("toolgate-core", "crates/core/Cargo.toml"),
        ("toolgate-files", "crates/files/Cargo.toml"),
        ("toolgate-proto", "crates/proto/Cargo.toml"),
        ("toolgate-server", "crates/server/Cargo.toml"),
        ("toolgate-client", "crates/client/Cargo.toml"),
        ("toolgate", "Cargo.toml"),
    ];
    let direct: BTreeMap<&str, BTreeSet<String>> = manifests
        .iter()
        .map(|(name, path)| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(path)).expect("read manifest");
            let doc: toml::Table = text.parse().expect("manifest is TOML");
            let mut deps = BTreeSet::new();
            let mut tables: Vec<&toml::Table> = ["dependencies", "build-dependencies"]
                .iter()
                .filter_map(|k| doc.get(*k).and_then(|t| t.as_table()))
                .collect();
            // platform-specific dependencies count too
            if let Some(targets) = doc.get("target").and_then(|t| t.as_table()) {
                for t in targets.values().filter_map(|t| t.as_table()) {
                    tables.extend(
                        ["dependencies", "build-dependencies"]
                            .iter()
                            .filter_map(|k| t.get(*k).and_then(|t| t.as_table())),
                    );
                }
            }
            for t in tables {
                deps.extend(t.keys().filter(|k| k.starts_with("toolgate")).cloned());
            }
            (*name, deps)
        })
        .collect();
    direct
        .keys()
        .map(|name| {
            let mut seen = BTreeSet::new();
            let mut todo: Vec<String> = direct[name].iter().cloned().collect();
            while let Some(d) = todo.pop() {
                if seen.insert(d.clone())
                    && let Some(next) = direct.get(d.as_str())
                {
                    todo.extend(next.iter().cloned());
                }
            }
            (*name, seen)
        })
        .collect()
}

#[test]
fn the_crates_depend_only_on_the_layers_before_them() {
    let deps = toolgate_dependencies();
    let expect = |name: &str, allowed: &[&str]| {
        let extra: Vec<&String> = deps[name]
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "ARCHITECTURE.md's crate invariant: {name} may depend on {allowed:?} only, \
             but its Cargo.toml reaches {extra:?}"
        );
    };
    expect("toolgate-core", &[]);
    // the files both sides keep: never the server, so a hook need not link it for them
    expect("toolgate-files", &["toolgate-core"]);
    expect("toolgate-proto", &["toolgate-core"]);
    expect(
        "toolgate-server",
        &["toolgate-core", "toolgate-files", "toolgate-proto"],
    );
    // the client is what hooks, the proxy and the CLI talk to a server through
    expect(
        "toolgate-client",
        &["toolgate-core", "toolgate-files", "toolgate-proto"],
    );
}

/// Every `.rs` file under `dir` (or `dir` itself when it is a file).
fn rust_files(dir: &str) -> Vec<String> {
    source_files()
        .into_iter()
        .filter(|f| f.ends_with(".rs") && (f == dir || f.starts_with(&format!("{dir}/"))))
        .collect()
}

#[test]
fn hooks_and_the_proxy_never_reach_the_store() {
    // The binary links the server crate (it is also `toolgate serve`); what a hook or
    // the proxy must never do is open a store, a hub or a server of its own.
    let forbidden = ["store", "hub", "server", "service::Service"];
    let mut found = Vec::new();
    for file in ["src/proxy", "src/cli/agent", "src/cli/hook_config"]
        .iter()
        .flat_map(|d| rust_files(d))
    {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).expect("read source");
        for (n, line) in text.lines().enumerate() {
            for prefix in ["crate::", "toolgate_server::", "toolgate::"] {
                for f in forbidden {
                    if line.contains(&format!("{prefix}{f}")) {
                        found.push(format!("{file}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md's invariant: a hook or the proxy never reaches the store, the hub \
         or a server; these lines do:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn module_docs_cite_only_documents_the_repository_has() {
    // Documents from the project's specification are not in the repository.
    let mut found = Vec::new();
    for file in source_files()
        .into_iter()
        .filter(|f| f != "tests/it/architecture.rs")
    {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).expect("read source");
        for (n, line) in text.lines().enumerate() {
            for doc in ["DESIGN.md", "STYLE.md"] {
                if line.contains(doc) && !Path::new(ROOT).join(doc).exists() {
                    found.push(format!("{file}:{}: {doc}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines cite a document the repository does not have; cite ARCHITECTURE.md \
         or docs/ instead:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_policy_core_performs_no_io() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("crates/core/Cargo.toml"))
        .expect("read the core's manifest");
    let manifest: toml::Table = text.parse().expect("manifest is TOML");
    let deps = manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .expect("the core has dependencies");
    let io_crates = [
        "tokio", "futures", "tonic", "prost", "sqlx", "reqwest", "hyper",
    ];
    let found: Vec<&String> = deps
        .keys()
        .filter(|k| io_crates.iter().any(|c| k.starts_with(c)))
        .collect();
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md's invariant: the policy core knows nothing async, RPC or storage, \
         but crates/core/Cargo.toml depends on {found:?}"
    );
    // Unit tests may run real programs (the option grammars against util-linux getopt).
    let io = [
        "std::fs",
        "std::process",
        "std::net::Tcp",
        "async fn",
        ".await",
        "File::",
    ];
    let mut lines = Vec::new();
    for file in rust_files("crates/core/src/policy")
        .into_iter()
        .filter(|f| !f.contains("/tests/") && !f.ends_with("/tests.rs"))
    {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).expect("read source");
        for (n, line) in text.lines().enumerate() {
            if io.iter().any(|p| line.contains(p)) {
                lines.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        lines.is_empty(),
        "ARCHITECTURE.md's invariant: crates/core/src/policy/ performs no I/O and never \
         awaits; these lines do:\n  {}",
        lines.join("\n  ")
    );
}

/// The longest a source file may be, its `#[cfg(test)]` modules not counted.
const MAX_LINES: usize = 600;

/// Files allowed over `MAX_LINES` while being split: none today. A file put here must
/// be split (the test fails once it is no longer too long, so the list only shrinks).
const KNOWN_LONG_FILES: &[&str] = &[];

/// Import cycles allowed while being broken, each as its files: none today (the list
/// only shrinks).
const KNOWN_IMPORT_CYCLES: &[&[&str]] = &[];

/// The files each crate's compiler starts from: the libraries and binaries, build
/// scripts, each bench and each fuzz target.
fn crate_roots(files: &BTreeSet<String>) -> Vec<&String> {
    files
        .iter()
        .filter(|f| {
            let parts: Vec<&str> = f.split('/').collect();
            matches!(
                parts.as_slice(),
                ["src", "lib.rs" | "main.rs"]
                    | ["build.rs"]
                    | ["crates", _, "src", "lib.rs" | "main.rs"]
                    | ["crates", _, "build.rs"]
                    | ["fuzz", "src", "lib.rs"]
                    | ["fuzz", "fuzz_targets", _]
            ) || (parts.len() == 2 && parts[0] == "benches")
        })
        .collect()
}

/// Every crate of the workspace, its module tree read from its root.
fn crates() -> Vec<modules::Crate> {
    let files = source_files();
    crate_roots(&files)
        .into_iter()
        .map(|root| {
            modules::read_crate(root, &|p| {
                std::fs::read_to_string(Path::new(ROOT).join(p)).ok()
            })
        })
        .collect()
}

#[test]
fn no_source_file_is_over_600_lines() {
    let crates = crates();
    let files = source_files();
    // the tests are not held to it, nor a bench's shared set-up borrowed from them
    let in_scope = |f: &str| {
        f.ends_with(".rs")
            && ["src/", "crates/", "benches/", "fuzz/"]
                .iter()
                .any(|d| f.starts_with(d))
    };
    let reached: BTreeSet<&String> = crates.iter().flat_map(|c| c.files.keys()).collect();
    let unreached: Vec<&String> = files
        .iter()
        .filter(|f| in_scope(f) && !reached.contains(f))
        .collect();
    assert!(
        unreached.is_empty(),
        "no crate's `mod` declarations reach these files, so the layout checks cannot \
         read them; declare them in their crate or delete them:\n  {unreached:?}"
    );
    let mut long: BTreeMap<&str, usize> = BTreeMap::new();
    for krate in &crates {
        for (file, m) in &krate.files {
            if in_scope(file) && !m.test_only && m.counted_lines > MAX_LINES {
                long.insert(file, m.counted_lines);
            }
        }
    }
    let new: Vec<String> = long
        .iter()
        .filter(|(f, _)| !KNOWN_LONG_FILES.contains(f))
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(
        new.is_empty(),
        "no source file may be over {MAX_LINES} lines (its `#[cfg(test)]` modules not \
         counted); split these along their concerns, or move their tests into a \
         sibling `tests.rs`:\n  {}",
        new.join("\n  ")
    );
    let fixed: Vec<&&str> = KNOWN_LONG_FILES
        .iter()
        .filter(|f| !long.contains_key(**f))
        .collect();
    assert!(
        fixed.is_empty(),
        "these files are on KNOWN_LONG_FILES in tests/it/architecture.rs but are no \
         longer over {MAX_LINES} lines; remove them from the list: {fixed:?}"
    );
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for krate in crates() {
        found.extend(modules::cycles(&krate.imports()));
    }
    found.sort();
    found.dedup();
    let known: Vec<BTreeSet<String>> = KNOWN_IMPORT_CYCLES
        .iter()
        .map(|c| c.iter().map(|f| f.to_string()).collect())
        .collect();
    let new: Vec<String> = found
        .iter()
        .filter(|c| !known.contains(c))
        .map(|c| c.iter().cloned().collect::<Vec<_>>().join(" ↔ "))
        .collect();
    assert!(
        new.is_empty(),
        "these module files reach each other through `crate::`, `super::` or `self::` \
         paths (test code not counted), a cycle within their crate; move what both \
         use into one of them or a module both import, so imports run one way:\n  {}",
        new.join("\n  ")
    );
    let gone: Vec<&BTreeSet<String>> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        gone.is_empty(),
        "these cycles are on KNOWN_IMPORT_CYCLES in tests/it/architecture.rs but no \
         longer exist as listed; remove them (or list what remains of them): {gone:?}"
    );
}

/// Glob imports allowed outside tests: a library's prelude, meant to be taken whole.
const ALLOWED_GLOBS: &[&str] = &["use rmcp::model::*;"];

#[test]
fn library_code_names_what_it_imports() {
    let mut globs = Vec::new();
    for krate in crates() {
        for (file, m) in &krate.files {
            let library = ["src/", "crates/"].iter().any(|d| file.starts_with(d));
            if !library || m.test_only {
                continue;
            }
            let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
            // a module's own imports start at the line's start; an inline test
            // module's are indented; a `pub use` of a whole module is a facade's
            // re-export, not an import
            for (i, line) in text.lines().enumerate() {
                if line.starts_with("use ")
                    && line.ends_with("::*;")
                    && !ALLOWED_GLOBS.contains(&line)
                {
                    globs.push(format!("{file}:{}: {line}", i + 1));
                }
            }
        }
    }
    assert!(
        globs.is_empty(),
        "library code imports these by glob, so a reader cannot see where a name comes \
         from and a name added upstream can shadow one here; name the items instead \
         (tests may use `use super::*;`):\n  {}",
        globs.join("\n  ")
    );
}
