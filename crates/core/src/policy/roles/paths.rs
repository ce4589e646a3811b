//! Paths as a restriction sees them: normalised lexically (`.`, `..`, `//`) against
//! the call's working directory, Node's `path.extname`, and directory containment.
//!
//! Lexical only: a symlink inside an allowed directory that points outside it is not
//! seen (the server never touches the file system).
//!
//! The agent may run on Windows: a drive-letter (`C:\x`, `C:/x`) or UNC
//! (`\\server\share\x`) path is absolute there, and outside every relative directory
//! and every POSIX one. Any other path holding a `\` is a separator on Windows and a
//! name on POSIX: it cannot be placed with certainty.

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
    /// An absolute Windows path, `\` written `/`, `.` and `..` resolved: `C:/Users/x`,
    /// `//server/share/x` (a drive-relative `C:x` or a device path `\\?\…` is
    /// [`Placed::Unknown`]).
    Windows(String),
    /// Nothing can say where it is: `~user/x` (the home directory is not known here),
    /// `a\..\b` (`\` is a separator on Windows only).
    Unknown,
}

/// Normalises `path` lexically; a relative path is first joined to `cwd` when `cwd`
/// is absolute. `/..` is `/`, as the kernel reads it.
pub fn place(path: &str, cwd: Option<&str>) -> Placed {
    match locate(path, cwd) {
        Located::Absolute(p, _) => Placed::Absolute(p.into_owned()),
        Located::Relative(p, _) => Placed::Relative(p.into_owned()),
        Located::Windows(p) => Placed::Windows(p),
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
    Windows(String),
    Escapes,
    Unknown,
}

/// [`place`] without allocating when `path` is normal already.
pub(super) fn locate<'a>(path: &'a str, cwd: Option<&str>) -> Located<'a> {
    if path.starts_with('~') {
        return Located::Unknown;
    }
    if let Some(windows) = windows_absolute(path) {
        return windows.map_or(Located::Unknown, Located::Windows);
    }
    if path.contains('\\') {
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

/// A Windows absolute path, normalised (`C:\\a\\..\\b` is `C:/b`, `\\\\srv\\share\\x`
/// is `//srv/share/x`): `None` when `path` is not one; `Some(None)` when it is a
/// Windows path that cannot be placed (drive-relative `C:x`, device `\\\\?\\…`, a UNC
/// path without its share).
pub(super) fn windows_absolute(path: &str) -> Option<Option<String>> {
    let bytes = path.as_bytes();
    let sep = |b: u8| b == b'/' || b == b'\\';
    let (root, rest) = if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        if bytes.len() == 2 || !sep(bytes[2]) {
            return Some(None);
        }
        (
            format!("{}:/", char::from(bytes[0].to_ascii_uppercase())),
            &path[3..],
        )
    } else if bytes.len() >= 2 && sep(bytes[0]) && sep(bytes[1]) && bytes[..2].contains(&b'\\') {
        let mut parts = path[2..].splitn(3, ['/', '\\']);
        let (Some(server), Some(share)) = (parts.next(), parts.next()) else {
            return Some(None);
        };
        // a device path (`\\?\`, `\\.\`) or a `.`/`..` share cannot be placed (found by
        // the url_path fuzz target: `\\x\.\y` kept its `.`)
        if server.is_empty()
            || share.is_empty()
            || matches!(server, "?" | "." | "..")
            || matches!(share, "." | "..")
        {
            return Some(None);
        }
        (format!("//{server}/{share}"), parts.next().unwrap_or(""))
    } else {
        return None;
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split(['/', '\\']) {
        match part {
            "" | "." => {}
            // Windows stops `..` at the root, as POSIX does at `/`
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = root;
    if !parts.is_empty() {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(&parts.join("/"));
    }
    Some(Some(out))
}

/// How long the root of a normalised Windows path is: `C:/` or `//srv/share`.
fn windows_root_len(placed: &str) -> usize {
    match placed.strip_prefix("//") {
        Some(rest) => {
            let server = rest.find('/').map_or(rest.len(), |i| i + 1);
            let share = rest[server..].find('/').map_or(rest.len(), |i| server + i);
            2 + share
        }
        None => 3.min(placed.len()),
    }
}

/// [`ancestors`] of a normalised Windows path, down to its root: `C:/a/b`, `C:/a`,
/// `C:/`.
pub fn windows_ancestors(placed: &str) -> impl Iterator<Item = &str> {
    let root = windows_root_len(placed);
    let mut next = Some(placed);
    std::iter::from_fn(move || {
        let current = next?;
        next = if current.len() <= root {
            None
        } else {
            match current.rfind('/') {
                Some(i) if i >= root => Some(&current[..i]),
                _ => Some(&placed[..root]),
            }
        };
        Some(current)
    })
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

/// The parts of a path (no empty ones), split at `/` and at `\\`, which is a
/// separator on Windows: a forbidden name is found under either reading.
pub fn components(placed: &str) -> impl Iterator<Item = &str> {
    placed
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
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
            (
                r"C:\Users\x\secret.txt",
                Some("/home/dev"),
                Placed::Windows("C:/Users/x/secret.txt".into()),
            ),
            ("c:/a/../../b", None, Placed::Windows("C:/b".into())),
            (
                r"\\server\share\x",
                None,
                Placed::Windows("//server/share/x".into()),
            ),
            (
                r"\\server\share",
                None,
                Placed::Windows("//server/share".into()),
            ),
            (r"\\?\C:\x", None, Placed::Unknown),
            (r"\\server", None, Placed::Unknown),
            ("C:x", None, Placed::Unknown),
            (r"src\..\..\etc", Some("/home/dev"), Placed::Unknown),
            (
                "//server/share",
                None,
                Placed::Absolute("/server/share".into()),
            ),
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
        let w = |p| windows_ancestors(p).collect::<Vec<_>>();
        assert_eq!(w("C:/a/b"), ["C:/a/b", "C:/a", "C:/"]);
        assert_eq!(w("C:/"), ["C:/"]);
        assert_eq!(w("//s/sh/a"), ["//s/sh/a", "//s/sh"]);
        assert_eq!(w("//s/sh"), ["//s/sh"]);
    }
}
