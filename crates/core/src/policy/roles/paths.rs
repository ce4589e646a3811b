//! Paths as a restriction sees them: normalised lexically (`.`, `..`, `//`) against
//! the call's working directory, Node's `path.extname`, and directory containment.
//!
//! Lexical only: a symlink inside an allowed directory that points outside it is not
//! seen (the server never touches the file system).

use std::borrow::Cow;

/// Where a path lies once normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// An absolute path with no `.`, `..` or empty parts: `/home/dev/proj/src/a.rs`.
    Absolute(String),
    /// A relative path that stays inside its starting directory: `src/a.rs` (never
    /// empty: the directory itself is `.`).
    Relative(String),
    /// A relative path whose `..` climbs above where it started (`src/../../etc`).
    Escapes,
    /// Nothing can say where it is: `~user/x` (the home directory is not known here).
    Unknown,
}

/// Normalises `path` lexically; a relative path is first joined to `cwd` when `cwd`
/// is absolute. `/..` is `/`, as the kernel reads it.
pub fn place(path: &str, cwd: Option<&str>) -> Placed {
    match locate(path, cwd) {
        Located::Absolute(p, _) => Placed::Absolute(p.into_owned()),
        Located::Relative(p, _) => Placed::Relative(p.into_owned()),
        Located::Escapes => Placed::Escapes,
        Located::Unknown => Placed::Unknown,
    }
}

/// Whether a located path was written in normal form already (joined to the working
/// directory at most): its parts are then among the normalised path's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    Normal,
    Rewritten,
}

/// [`Placed`], borrowing the path when it is normal already: a decision normalises
/// each path once and allocates at most for the join to the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Located<'a> {
    Absolute(Cow<'a, str>, Written),
    Relative(Cow<'a, str>, Written),
    Escapes,
    Unknown,
}

/// [`place`] without allocating when `path` is normal already.
pub(super) fn locate<'a>(path: &'a str, cwd: Option<&str>) -> Located<'a> {
    if path.starts_with('~') {
        return Located::Unknown;
    }
    let cwd = cwd.filter(|c| c.starts_with('/'));
    if path.starts_with('/') {
        if is_normal_absolute(path) {
            return Located::Absolute(Cow::Borrowed(path), Written::Normal);
        }
    } else if is_normal_relative(path) {
        match cwd {
            None => return Located::Relative(Cow::Borrowed(path), Written::Normal),
            Some(c) if is_normal_absolute(c) => {
                let mut joined = String::with_capacity(c.len() + 1 + path.len());
                joined.push_str(c);
                if c != "/" {
                    joined.push('/');
                }
                joined.push_str(path);
                return Located::Absolute(Cow::Owned(joined), Written::Normal);
            }
            Some(_) => {}
        }
    }
    normalise(path, cwd)
}

/// `/a/b`: absolute, no empty, `.` or `..` part, no trailing slash (`/` itself is).
fn is_normal_absolute(path: &str) -> bool {
    match path.strip_prefix('/') {
        Some("") => true,
        Some(rest) => is_normal_relative(rest),
        None => false,
    }
}

/// `a/b`: relative, no empty, `.` or `..` part, no trailing slash.
fn is_normal_relative(path: &str) -> bool {
    !path.starts_with('/') && path.split('/').all(|part| !matches!(part, "" | "." | ".."))
}

/// The general case of [`locate`]: `cwd` is absolute or absent.
fn normalise<'a>(path: &str, cwd: Option<&str>) -> Located<'a> {
    let absolute = path.starts_with('/') || cwd.is_some();
    let mut parts: Vec<&str> = Vec::new();
    let joined = match cwd {
        Some(c) if !path.starts_with('/') => [c, path],
        _ => [path, ""],
    };
    for part in joined.iter().flat_map(|s| s.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !absolute {
                    return Located::Escapes;
                }
            }
            p => parts.push(p),
        }
    }
    if absolute {
        Located::Absolute(
            Cow::Owned(format!("/{}", parts.join("/"))),
            Written::Rewritten,
        )
    } else if parts.is_empty() {
        Located::Relative(Cow::Borrowed("."), Written::Rewritten)
    } else {
        Located::Relative(Cow::Owned(parts.join("/")), Written::Rewritten)
    }
}

/// Node's `path.extname` (posix), character for character: the last `.` of the last
/// part and what follows, `""` for none or a leading dot (`.bashrc`), `"."` for a
/// trailing one (`a.`). Trailing slashes are ignored (`a.json/` is `.json`).
pub fn extname(path: &str) -> &str {
    let bytes = path.as_bytes();
    let mut start_dot: Option<usize> = None;
    let mut start_part = 0;
    let mut end: Option<usize> = None;
    let mut matched_slash = true;
    // 0: nothing before the first dot seen yet, 1: only dots, -1: a non-dot
    let mut pre_dot_state = 0i8;
    for i in (0..bytes.len()).rev() {
        let c = bytes[i];
        if c == b'/' {
            if !matched_slash {
                start_part = i + 1;
                break;
            }
            continue;
        }
        if end.is_none() {
            matched_slash = false;
            end = Some(i + 1);
        }
        if c == b'.' {
            if start_dot.is_none() {
                start_dot = Some(i);
            } else if pre_dot_state != 1 {
                pre_dot_state = 1;
            }
        } else if start_dot.is_some() {
            pre_dot_state = -1;
        }
    }
    match (start_dot, end) {
        (Some(dot), Some(end))
            if pre_dot_state != 0
                && !(pre_dot_state == 1 && dot == end - 1 && dot == start_part + 1) =>
        {
            &path[dot..end]
        }
        _ => "",
    }
}

/// The parent directories of a normalised path, nearest first, the path itself
/// included: `/a/b` gives `/a/b`, `/a`, `/`; `a/b` gives `a/b`, `a`, `.`.
pub fn ancestors(placed: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(placed);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            Some(0) if current.len() > 1 => Some("/"),
            Some(0) => None,
            Some(i) => Some(&current[..i]),
            None if current != "." => Some("."),
            None => None,
        };
        Some(current)
    })
}

/// The parts of a normalised path (no empty ones).
pub fn components(placed: &str) -> impl Iterator<Item = &str> {
    placed.split('/').filter(|p| !p.is_empty() && *p != ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_paths_lexically() {
        let cases = [
            ("src/../../etc/passwd", None, Placed::Escapes),
            (
                "src/../../etc/passwd",
                Some("/home/dev/proj"),
                Placed::Absolute("/home/dev/etc/passwd".into()),
            ),
            ("/a//b/./c/", None, Placed::Absolute("/a/b/c".into())),
            ("/../..", None, Placed::Absolute("/".into())),
            ("./design/", None, Placed::Relative("design".into())),
            ("a/..", None, Placed::Relative(".".into())),
            ("~/.ssh/id_rsa", Some("/x"), Placed::Unknown),
            ("x", Some("relative/cwd"), Placed::Relative("x".into())),
        ];
        for (path, cwd, want) in cases {
            assert_eq!(place(path, cwd), want, "{path:?} in {cwd:?}");
        }
    }

    #[test]
    fn extname_is_nodes() {
        // each checked against node's path.extname
        let cases = [
            ("a.json", ".json"),
            ("a.", "."),
            ("a", ""),
            ("/.b", ""),
            (".b.md", ".md"),
            ("..", ""),
            ("...", "."),
            ("a.json/", ".json"),
            ("a.b/", ".b"),
            (".", ""),
            ("a..", "."),
            ("/x/.../", "."),
            ("x/.a.", "."),
            ("design/x.JSON", ".JSON"),
            ("", ""),
            ("dir.d/file", ""),
        ];
        for (path, want) in cases {
            assert_eq!(extname(path), want, "{path:?}");
        }
    }

    #[test]
    fn ancestors_reach_the_root() {
        assert_eq!(ancestors("/a/b").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/").collect::<Vec<_>>(), ["/"]);
        assert_eq!(ancestors("a/b").collect::<Vec<_>>(), ["a/b", "a", "."]);
        assert_eq!(ancestors(".").collect::<Vec<_>>(), ["."]);
    }
}
