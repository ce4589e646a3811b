//! The fast path checks (`allowedDirectories` looked up by ancestors, `forbiddenFiles`
//! by hash or one glob set) against a reference model that places every path the
//! simple way and tries every rule one by one.

use super::{Agent, RoleCall, RoleVerdict, Touches, compile_roles, evaluate};
use crate::policy::Reason;
use globset::GlobBuilder;
use proptest::prelude::*;

/// `place` before it learnt to borrow, kept verbatim as the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Absolute(String),
    Relative(String),
    Escapes,
    Unknown,
}

fn reference_place(path: &str, cwd: Option<&str>) -> Place {
    if path.starts_with('~') {
        return Place::Unknown;
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
                    return Place::Escapes;
                }
            }
            p => parts.push(p),
        }
    }
    if absolute {
        Place::Absolute(format!("/{}", parts.join("/")))
    } else if parts.is_empty() {
        Place::Relative(".".to_owned())
    } else {
        Place::Relative(parts.join("/"))
    }
}

fn parts(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|p| !p.is_empty() && *p != ".")
}

/// Whether normalised `path` is `dir` or below it.
fn within(path: &str, dir: &str) -> bool {
    path == dir
        || dir == "/"
        || dir == "."
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn glob_matches(pattern: &str, text: &str) -> bool {
    GlobBuilder::new(pattern.trim_start_matches("./"))
        .case_insensitive(true)
        .literal_separator(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(text))
}

fn deny(restriction: &str, message: String) -> RoleVerdict {
    RoleVerdict::Deny {
        reason: Reason::Restricted,
        entry: Some(restriction.into()),
        message,
    }
}

/// The verdict on one path, rule by rule.
fn reference(
    dirs: &[&str],
    forbidden: &[&str],
    path: &str,
    cwd: Option<&str>,
) -> Option<RoleVerdict> {
    let placed = reference_place(path, cwd);
    let shown = match &placed {
        Place::Absolute(p) | Place::Relative(p) => p.clone(),
        Place::Escapes | Place::Unknown => path.to_owned(),
    };
    let cwd_placed = match cwd.map(|c| reference_place(c, None)) {
        Some(Place::Absolute(c)) => Some(c),
        _ => None,
    };
    let below_cwd = cwd_placed.as_deref().and_then(|c| {
        if shown == c {
            Some(".".to_owned())
        } else if c == "/" {
            shown.strip_prefix('/').map(str::to_owned)
        } else {
            shown
                .strip_prefix(c)
                .and_then(|r| r.strip_prefix('/'))
                .map(str::to_owned)
        }
    });
    let by_name = parts(&shown).chain(parts(path)).find_map(|part| {
        forbidden
            .iter()
            .position(|f| !f.contains('/') && glob_matches(f, part))
    });
    let by_path = [Some(shown.clone()), below_cwd.clone()]
        .into_iter()
        .flatten()
        .find_map(|p| {
            forbidden
                .iter()
                .position(|f| f.contains('/') && glob_matches(f, &p))
        });
    if let Some(i) = by_name.or(by_path) {
        return Some(deny(
            "forbiddenFiles",
            format!("File {path} matches forbiddenFiles {}", forbidden[i]),
        ));
    }
    let rules: Vec<Place> = dirs
        .iter()
        .map(|d| reference_place(d.strip_suffix("/**").unwrap_or(d), None))
        .collect();
    let has_relative = rules.iter().any(|r| matches!(r, Place::Relative(_)));
    let has_absolute = rules.iter().any(|r| matches!(r, Place::Absolute(_)));
    let (inside, unsure) = match &placed {
        Place::Escapes => {
            return Some(deny(
                "allowedDirectories",
                format!("Path {path} escapes its directory (allowedDirectories)"),
            ));
        }
        Place::Unknown => {
            return Some(RoleVerdict::Ask {
                entry: Some("allowedDirectories".into()),
                message: format!(
                    "Path {path} cannot be placed with certainty (`~`, or a `\\` that is a separator on Windows only)"
                ),
            });
        }
        Place::Absolute(p) => {
            let inside = rules.iter().any(|rule| match (rule, &cwd_placed) {
                (Place::Absolute(d), _) => within(p, d),
                (Place::Relative(r), Some(c)) => {
                    let dir = match (r.as_str(), c.as_str()) {
                        (".", c) => c.to_owned(),
                        (r, "/") => format!("/{r}"),
                        (r, c) => format!("{c}/{r}"),
                    };
                    within(p, &dir)
                }
                _ => false,
            });
            (inside, cwd.is_none() && has_relative)
        }
        Place::Relative(p) => (
            rules.iter().any(|rule| match rule {
                Place::Relative(r) => within(p, r),
                _ => false,
            }),
            has_absolute,
        ),
    };
    if inside {
        None
    } else if unsure {
        Some(RoleVerdict::Ask {
            entry: Some("allowedDirectories".into()),
            message: format!(
                "Path {path} cannot be placed against allowedDirectories without the working directory"
            ),
        })
    } else {
        Some(deny(
            "allowedDirectories",
            format!("Path {shown} is outside allowedDirectories"),
        ))
    }
}

/// The fast verdict: `evaluate` on one call touching `path`.
fn fast(dirs: &[&str], forbidden: &[&str], path: &str, cwd: Option<&str>) -> Option<RoleVerdict> {
    let doc = serde_json::json!({
        "toolCategories": {"FILES": {"tools": ["FILE_READ"]}},
        "allowLists": {"a": {"agentId": "A", "contexts": {"DEV": {
            "allowedTools": {"FILES": ["FILE_READ"]},
            "restrictions": {"allowedDirectories": dirs, "forbiddenFiles": forbidden}
        }}}}
    });
    let roles = compile_roles(&serde_json::from_value(doc).unwrap()).unwrap();
    let touches = Touches {
        paths: vec![path.to_owned()],
        ..Touches::default()
    };
    let call = RoleCall {
        agent: Agent {
            id: Some("A"),
            context: Some("DEV"),
            ..Agent::default()
        },
        operation: "FILE_READ",
        cwd,
        touches: &touches,
    };
    match evaluate(&roles, &call) {
        RoleVerdict::Allow { .. } => None,
        other => Some(other),
    }
}

const PARTS: [&str; 14] = [
    "", ".", "..", "a", "b", "src", "home", "dev", "x.pem", "Id_RSA", "k.TAR.gz", ".env", "~u",
    "é.PeM",
];
const DIRS: [&str; 12] = [
    "src/",
    "src/**",
    "/a",
    "/a/b/",
    ".",
    "/",
    "a/b",
    "./src",
    "b",
    "/home/dev/",
    "dev//a/",
    "/x/./y",
];
const FORBIDDEN: [&str; 14] = [
    "*.pem",
    "id_rsa",
    "*.tar.gz",
    "ID_RSA",
    "*.PEM",
    "a/*",
    "src/**",
    "[ab]",
    "..",
    ".env*",
    "*.",
    "é.pem",
    "secret?",
    "home/dev/*.env",
];
const CWDS: [Option<&str>; 7] = [
    None,
    Some("/"),
    Some("/home/dev"),
    Some("/home//dev/./"),
    Some("/home/dev/../a"),
    Some("rel/cwd"),
    Some("/a/b"),
];

fn a_path() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(&PARTS[..]), 0..6),
        any::<bool>(),
    )
        .prop_map(|(absolute, parts, trailing)| {
            let mut p = parts.join("/");
            if absolute {
                p.insert(0, '/');
            }
            if trailing {
                p.push('/');
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn fast_path_checks_agree_with_rule_by_rule(
        dirs in prop::sample::subsequence(&DIRS[..], 0..5),
        forbidden in prop::sample::subsequence(&FORBIDDEN[..], 0..5),
        path in a_path(),
        cwd in prop::sample::select(&CWDS[..]),
    ) {
        prop_assert_eq!(
            fast(&dirs, &forbidden, &path, cwd),
            reference(&dirs, &forbidden, &path, cwd),
            "path {:?} in {:?}", path, cwd
        );
    }

    #[test]
    fn place_agrees_with_the_reference(path in a_path(), cwd in prop::sample::select(&CWDS[..])) {
        let want = match reference_place(&path, cwd) {
            Place::Absolute(p) => super::Placed::Absolute(p),
            Place::Relative(p) => super::Placed::Relative(p),
            Place::Escapes => super::Placed::Escapes,
            Place::Unknown => super::Placed::Unknown,
        };
        prop_assert_eq!(super::place(&path, cwd), want);
    }
}
