//! Where a line's writes and deletions land: the working directory followed through
//! `cd`/`pushd`/`popd`, and the paths outside it or protected inside it, where no
//! write auto-runs (hooks and configuration there run code later).

use super::{Cd, CommandOrigin, SimpleCommand};

/// Names that run code or hold credentials when written: a path with one of them as
/// a part is protected wherever it stands (compared without case, as macOS and
/// Windows file systems do).
const PROTECTED: [&str; 40] = [
    ".git",
    ".hg",
    ".svn",
    ".husky",
    ".claude",
    ".cursor",
    ".codex",
    ".gemini",
    ".vscode",
    ".idea",
    ".mcp.json",
    ".ssh",
    ".gnupg",
    ".aws",
    ".gitconfig",
    ".npmrc",
    ".envrc",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    // run on commit or push: hooks and CI definitions (a Makefile runs only when
    // someone runs make, a code runner the admin allows by name)
    ".pre-commit-config.yaml",
    ".gitlab-ci.yml",
    ".circleci",
    ".travis.yml",
    "jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".buildkite",
    ".drone.yml",
];

/// A directory and a name inside it that run code or hold configuration that does:
/// protected as a pair (`.github/workflows/`, not `.github/CODEOWNERS`).
const PROTECTED_PAIRS: [(&str, &str); 5] = [
    (".github", "workflows"),
    (".github", "actions"),
    (".cargo", "config.toml"),
    (".cargo", "config"),
    (".config", "git"),
];

/// Where one path lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Inside the working directory: the path relative to it, normalised.
    Inside(String),
    /// Outside it, or in a directory the reader cannot know: why.
    Outside(String),
    /// Inside it, in a protected place: which.
    Protected(String),
}

/// One path a command of the line writes or deletes.
#[derive(Debug, Clone)]
pub struct Touch<'a> {
    pub command: &'a SimpleCommand,
    pub path: &'a str,
    pub delete: bool,
    pub place: Place,
}

/// The working directory as the line goes: its parts below the starting directory,
/// or unknown.
#[derive(Debug, Clone)]
enum Dir {
    Known(Vec<String>),
    Unknown(String),
}

/// Every write and deletion of the line, in order, placed against the directory
/// the line is in at that point. `cwd` is the client's working directory (absolute),
/// when it said.
pub fn touches<'a>(commands: &'a [SimpleCommand], cwd: Option<&str>) -> Vec<Touch<'a>> {
    let cwd = cwd.filter(|c| c.starts_with('/')).map(parts);
    let mut dir = Dir::Known(Vec::new());
    let mut out = Vec::new();
    for command in commands {
        if matches!(
            command.origin,
            CommandOrigin::Equivalent | CommandOrigin::Argument
        ) {
            continue;
        }
        let effects = &command.effects;
        let paths = effects
            .writes
            .iter()
            .map(|p| (p, false))
            .chain(effects.deletes.iter().map(|p| (p, true)));
        for (path, delete) in paths {
            if matches!(
                path.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr" | "-"
            ) {
                continue;
            }
            out.push(Touch {
                command,
                path,
                delete,
                place: place(path, &dir, cwd.as_deref()),
            });
        }
        if let Some(cd) = &effects.cd {
            dir = change(&dir, cd, cwd.as_deref());
        }
    }
    out
}

/// Where one written path lands, for a write made without a command line (the
/// agent's own write tools): the same places as a shell write, from `cwd`.
pub fn place_of(path: &str, cwd: Option<&str>) -> Place {
    let cwd = cwd.filter(|c| c.starts_with('/')).map(parts);
    place(path, &Dir::Known(Vec::new()), cwd.as_deref())
}

fn parts(path: &str) -> Vec<String> {
    path.split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_owned)
        .collect()
}

/// Why a path is outside before any directory is looked at, or `None`.
fn outside(path: &str) -> Option<&'static str> {
    let b = path.as_bytes();
    if path.is_empty() {
        Some("an empty path")
    } else if path.starts_with('~') {
        Some("in a home directory")
    } else if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        Some("on a drive letter")
    } else if path.starts_with("\\\\") || path.starts_with("//") {
        Some("a network (UNC) path")
    } else if path.starts_with('\\') {
        Some("an absolute Windows path")
    } else if path.split(['/', '\\']).any(|p| p == "..") {
        Some("climbs out with ..")
    } else {
        None
    }
}

fn place(path: &str, dir: &Dir, cwd: Option<&[String]>) -> Place {
    if let Some(why) = outside(path) {
        return Place::Outside(format!("{why}, outside the working directory"));
    }
    let mut full = if path.starts_with('/') {
        let abs = parts(path);
        match cwd {
            Some(cwd) if abs.len() >= cwd.len() && abs[..cwd.len()] == *cwd => {
                abs[cwd.len()..].to_vec()
            }
            _ => {
                return Place::Outside("an absolute path outside the working directory".to_owned());
            }
        }
    } else {
        match dir {
            Dir::Known(parts) => parts.clone(),
            Dir::Unknown(why) => return Place::Outside(why.clone()),
        }
    };
    if !path.starts_with('/') {
        full.extend(parts(path));
    }
    // the working directory is a place too: a write in `~/.ssh` or `.git/hooks` as
    // the client's (or the model's) directory lands in a protected place
    let mut whole = cwd.map(<[String]>::to_vec).unwrap_or_default();
    whole.extend(full.iter().cloned());
    if let Some(name) = protected_in(&whole) {
        return Place::Protected(name);
    }
    if full.is_empty() {
        return Place::Protected(
            "the working directory itself (it holds .git/ and agent configuration)".to_owned(),
        );
    }
    Place::Inside(full.join("/"))
}

/// The protected name or pair of names some part of a path is.
fn protected_in(parts: &[String]) -> Option<String> {
    if let Some(name) = parts.iter().find_map(|p| protected(p)) {
        return Some(name);
    }
    let bare = |p: &String| p.trim_end_matches(['.', ' ']).to_lowercase();
    parts.windows(2).find_map(|pair| {
        let (dir, name) = (bare(&pair[0]), bare(&pair[1]));
        PROTECTED_PAIRS
            .contains(&(dir.as_str(), name.as_str()))
            .then(|| format!("{}/{}", pair[0], pair[1]))
    })
}

/// The protected name a path part is, or may be: Windows drops trailing dots and
/// blanks (`.git.`) and has short names (`GIT~1`); a pattern starting with `.`
/// may match one.
fn protected(part: &str) -> Option<String> {
    let trimmed = part.trim_end_matches(['.', ' ']);
    let lower = trimmed.to_lowercase();
    if PROTECTED.contains(&lower.as_str()) {
        return Some(trimmed.to_owned());
    }
    let short_name = part.split_once('~').is_some_and(|(_, n)| {
        !n.is_empty() && n.chars().next().is_some_and(|c| c.is_ascii_digit())
    });
    let dot_pattern = part.starts_with('.') && part.contains(['*', '?', '[']);
    (short_name || dot_pattern).then(|| format!("{part} (may name a protected file)"))
}

fn change(dir: &Dir, cd: &Cd, cwd: Option<&[String]>) -> Dir {
    let to = match cd {
        Cd::Unknown => {
            return Dir::Unknown(
                "after a cd to a directory the reader cannot know (cd, cd ~, cd -, popd)"
                    .to_owned(),
            );
        }
        Cd::To(to) => to,
    };
    if let Some(why) = outside(to) {
        return Dir::Unknown(format!("after cd {to:?}: {why}"));
    }
    let mut now = if to.starts_with('/') {
        let abs = parts(to);
        match cwd {
            Some(cwd) if abs.len() >= cwd.len() && abs[..cwd.len()] == *cwd => {
                abs[cwd.len()..].to_vec()
            }
            _ => return Dir::Unknown(format!("after cd {to:?}, outside the working directory")),
        }
    } else {
        match dir {
            Dir::Known(parts) => parts.clone(),
            Dir::Unknown(why) => return Dir::Unknown(why.clone()),
        }
    };
    if !to.starts_with('/') {
        now.extend(parts(to));
    }
    Dir::Known(now)
}
