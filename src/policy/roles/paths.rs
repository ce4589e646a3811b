//! Paths as a restriction sees them: normalised lexically (`.`, `..`, `//`) against
//! the call's working directory, Node's `path.extname`, and directory containment.
//!
//! Lexical only: a symlink inside an allowed directory that points outside it is not
//! seen (the server never touches the file system).

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
    if path.starts_with('~') {
        return Placed::Unknown;
    }
    let cwd = cwd.filter(|c| c.starts_with('/'));
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
                    return Placed::Escapes;
                }
            }
            p => parts.push(p),
        }
    }
    if absolute {
        Placed::Absolute(format!("/{}", parts.join("/")))
    } else if parts.is_empty() {
        Placed::Relative(".".to_owned())
    } else {
        Placed::Relative(parts.join("/"))
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
