//! The binary's build script: embeds the commit the binary is built from (which
//! `toolgate --version` prints and `ServerInfoService` reports), and refuses to build
//! when the committed `console/dist/` was not built from `console/`'s current sources
//! (the server embeds `console/dist/`; Node is not needed to build toolgate, so a
//! stale build would otherwise ship silently).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the console's build writes the hashes of the sources it was built from
/// (`console/hash-sources.mjs`), in `sha256sum`'s format.
const SOURCES_HASH: &str = "console/dist/sources.sha256";

/// The console's inputs besides the files under `console/src/`, relative to `console/`.
const CONSOLE_INPUTS: [&str; 3] = ["package.json", "package-lock.json", "tsconfig.json"];

/// The longest commit name taken from `TOOLGATE_COMMIT` (a full SHA-256 object name).
const COMMIT_MAX: usize = 64;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    match commit(&root) {
        Ok(commit) => println!("cargo:rustc-env=TOOLGATE_COMMIT={commit}"),
        Err(e) => fail(&e),
    }
    if let Err(e) = check_console_dist(&root) {
        fail(&e);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// `TOOLGATE_COMMIT` when set (an image built without `.git`), else git's short hash
/// of HEAD, else "unknown" (a tarball).
fn commit(root: &Path) -> Result<String, String> {
    println!("cargo:rerun-if-env-changed=TOOLGATE_COMMIT");
    if let Ok(given) = std::env::var("TOOLGATE_COMMIT")
        && !given.is_empty()
    {
        let valid = given.len() <= COMMIT_MAX
            && given
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_');
        if !valid {
            return Err(format!(
                "TOOLGATE_COMMIT must be at most {COMMIT_MAX} letters, digits, '.', '-' \
                 or '_' (a commit name such as `git rev-parse --short HEAD` prints); \
                 unset it to take the commit from git"
            ));
        }
        return Ok(given);
    }
    // sources unpacked inside some other checkout are not that checkout's commit
    let top = git(root, &["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let ours = top.and_then(|t| t.canonicalize().ok()) == root.canonicalize().ok();
    let head = git(root, &["rev-parse", "--short", "HEAD"]);
    let (true, Some(head)) = (ours, head) else {
        return Ok("unknown".to_owned());
    };
    // a new commit moves the branch's ref, a checkout moves HEAD; the ref may also be
    // packed (a file that exists: cargo reruns every build for a missing one)
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(root, &["rev-parse", "--git-path", &name]) {
            let path = root.join(path);
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Ok(head)
}

/// One line of git's answer, or None when git is absent or this is no checkout.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}

/// Compares the hashes the console's build recorded with its sources' hashes now.
fn check_console_dist(root: &Path) -> Result<(), String> {
    let console = root.join("console");
    println!("cargo:rerun-if-changed={}", console.join("src").display());
    for input in CONSOLE_INPUTS {
        println!("cargo:rerun-if-changed={}", console.join(input).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join(SOURCES_HASH).display()
    );
    const FIX: &str = "run `npm --prefix console ci && npm --prefix console run build` \
                       and commit console/dist/";
    let recorded = std::fs::read_to_string(root.join(SOURCES_HASH))
        .map_err(|e| format!("{SOURCES_HASH} cannot be read ({e}): {FIX}"))?;
    let now = source_hashes(&console)?;
    if recorded == now {
        return Ok(());
    }
    let lines = |text: &str| {
        text.lines()
            .map(str::to_owned)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (recorded, now) = (lines(&recorded), lines(&now));
    let changed: Vec<String> = recorded
        .symmetric_difference(&now)
        .filter_map(|line| {
            line.split_once("  ")
                .map(|(_, path)| format!("console/{path}"))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Err(format!(
        "console/dist/ is stale: it was not built from the console's current sources \
         (changed since: {}); {FIX}",
        changed.join(", ")
    ))
}

/// `sha256sum`'s lines (`<hex>  <path>`, paths relative to `console/`, sorted) for
/// the console's inputs: what `console/hash-sources.mjs` writes.
fn source_hashes(console: &Path) -> Result<String, String> {
    let mut files: Vec<String> = CONSOLE_INPUTS.iter().map(|f| (*f).to_owned()).collect();
    let mut pending = vec![PathBuf::from("src")];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(console.join(&dir))
            .map_err(|e| format!("console/{} cannot be read: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("console/{}: {e}", dir.display()))?;
            let path = dir.join(entry.file_name());
            if entry.path().is_dir() {
                pending.push(path);
            } else {
                let name = path
                    .to_str()
                    .ok_or_else(|| format!("console/{} is not named in UTF-8", path.display()))?;
                files.push(name.replace('\\', "/"));
            }
        }
    }
    files.sort();
    let mut out = String::new();
    for file in files {
        let bytes = std::fs::read(console.join(&file))
            .map_err(|e| format!("console/{file} cannot be read: {e}"))?;
        out.push_str(&format!("{}  {file}\n", hex(&Sha256::digest(&bytes))));
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
