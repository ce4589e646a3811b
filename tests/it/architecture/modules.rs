//! The crates' module trees read from their source: which file each module lives in,
//! which lines are test code, and which module files each file's `crate::`, `super::`
//! and `self::` paths reach. A small lexer, not a Rust parser: enough for the
//! layout checks, and its rules are unit-tested below.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One token of Rust source: comments and whitespace dropped, a literal's text kept
/// (a `#[path = "…"]` attribute needs it).
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn lex(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let ident_start = |ch: char| ch == '_' || ch.is_alphabetic();
    let ident_char = |ch: char| ch == '_' || ch.is_alphanumeric();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(hashes_at) = raw_string_start(&c, i) {
            // r"…", r#"…"#, br"…": no escapes, closed by the quote and as many hashes
            let hashes = (hashes_at..).take_while(|&j| at(j) == '#').count();
            let start = hashes_at + hashes + 1;
            let mut j = start;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#')) {
                j += 1;
            }
            let s: String = c[start..j.min(c.len())].iter().collect();
            line += s.matches('\n').count();
            out.push(Token {
                tok: Tok::Str(s),
                line,
            });
            i = j + 1 + hashes;
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && at(i + 1) == '"') {
            let start_line = line;
            let mut j = if ch == '"' { i + 1 } else { i + 2 };
            let mut s = String::new();
            while j < c.len() && c[j] != '"' {
                if c[j] == '\\' {
                    s.push(c[j]);
                    j += 1;
                }
                if j < c.len() {
                    line += usize::from(c[j] == '\n');
                    s.push(c[j]);
                }
                j += 1;
            }
            out.push(Token {
                tok: Tok::Str(s),
                line: start_line,
            });
            i = j + 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            let q = if ch == '\'' { i } else { i + 1 };
            if at(q + 1) == '\\' {
                // an escaped character: '\n', '\'', '\u{1F600}'
                let mut j = q + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if at(q + 2) == '\'' {
                i = q + 3;
            } else {
                // a lifetime or a label: the quote alone, its name lexed next
                out.push(Token {
                    tok: Tok::Punct('\''),
                    line,
                });
                i = q + 1;
            }
        } else if ch == 'r' && at(i + 1) == '#' && ident_start(at(i + 2)) {
            let start = i + 2;
            let mut j = start;
            while j < c.len() && ident_char(c[j]) {
                j += 1;
            }
            out.push(Token {
                tok: Tok::Ident(c[start..j].iter().collect()),
                line,
            });
            i = j;
        } else if ident_start(ch) {
            let mut j = i;
            while j < c.len() && ident_char(c[j]) {
                j += 1;
            }
            out.push(Token {
                tok: Tok::Ident(c[i..j].iter().collect()),
                line,
            });
            i = j;
        } else if ch.is_ascii_digit() {
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Where a raw string's hashes start when one begins at `i` (`r"`, `r#"`, `br#"`).
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let after_r = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => i + 1,
        (Some('b' | 'c'), Some('r')) => i + 2,
        _ => return None,
    };
    // an identifier ending in r (`bar"`) is not a raw string
    if i > 0
        && c.get(i - 1)
            .is_some_and(|p| p.is_alphanumeric() || *p == '_')
    {
        return None;
    }
    let quote = (after_r..).find(|&j| c.get(j) != Some(&'#'))?;
    (c.get(quote) == Some(&'"')).then_some(after_r)
}

/// A source file as a module of its crate.
#[derive(Debug, Clone)]
pub struct ModuleFile {
    /// Declared under `#[cfg(test)]`, itself or through a parent.
    pub test_only: bool,
    /// Lines outside `#[cfg(test)]` inline modules.
    pub counted_lines: usize,
    /// The absolute module paths (from the crate root) its non-test code names
    /// through `crate::`, `super::` and `self::`.
    paths: Vec<Vec<String>>,
}

/// One crate: its module files by path, and where each module (inline ones too) lives.
#[derive(Debug, Default)]
pub struct Crate {
    pub files: BTreeMap<String, ModuleFile>,
    modules: BTreeMap<Vec<String>, String>,
}

/// An inline `mod name { … }` being read: its name, the brace depth inside it, and
/// whether it is test code.
struct Inline {
    name: String,
    depth: usize,
    test: bool,
    attr_line: usize,
}

/// What one file declares and names, read from its tokens.
struct Read {
    /// `(module path relative to the file, file path, whether its children live in
    /// its own directory, test only)` of each `mod x;`.
    children: Vec<(Vec<String>, String, bool, bool)>,
    /// Inline modules' paths relative to the file.
    inline: Vec<Vec<String>>,
    paths: Vec<Vec<String>>,
    test_lines: usize,
}

/// The directory a file's `mod x;` children live in: its own for a crate root, a
/// `mod.rs` or a file loaded through `#[path]`, else one named after it.
fn child_dir(file: &str, mod_rs: bool) -> String {
    let p = Path::new(file);
    let dir = p.parent().map(|d| d.to_string_lossy().into_owned());
    let dir = dir.unwrap_or_default();
    if mod_rs {
        dir
    } else {
        let stem = p.file_stem().unwrap_or_default().to_string_lossy();
        if dir.is_empty() {
            stem.into_owned()
        } else {
            format!("{dir}/{stem}")
        }
    }
}

fn join(dir: &str, rest: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for piece in rest.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn read_file(
    text: &str,
    file: &str,
    module: &[String],
    mod_rs: bool,
    exists: &dyn Fn(&str) -> bool,
) -> Read {
    let toks = lex(text);
    let ident = |i: usize| match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: Tok| toks.get(i).map(|x| &x.tok) == Some(&t);
    let mut read = Read {
        children: Vec::new(),
        inline: Vec::new(),
        paths: Vec::new(),
        test_lines: 0,
    };
    let mut stack: Vec<Inline> = Vec::new();
    let mut depth = 0usize;
    // attributes seen since the last item boundary
    let mut cfg_test: Option<usize> = None;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let in_test = stack.iter().any(|m| m.test);
        match &toks[i].tok {
            Tok::Punct('#') if is(i + 1, Tok::Punct('[')) || is(i + 2, Tok::Punct('[')) => {
                let open = if is(i + 1, Tok::Punct('[')) {
                    i + 1
                } else {
                    i + 2
                };
                let mut j = open;
                let mut brackets = 0;
                loop {
                    match toks.get(j).map(|t| &t.tok) {
                        Some(Tok::Punct('[')) => brackets += 1,
                        Some(Tok::Punct(']')) => {
                            brackets -= 1;
                            if brackets == 0 {
                                break;
                            }
                        }
                        None => break,
                        _ => {}
                    }
                    j += 1;
                }
                let body: Vec<&Tok> = toks[open + 1..j.min(toks.len())]
                    .iter()
                    .map(|t| &t.tok)
                    .collect();
                let cfg = Tok::Ident("cfg".into());
                let test = Tok::Ident("test".into());
                if body.len() == 4 && *body[0] == cfg && *body[2] == test {
                    cfg_test = Some(toks[i].line);
                }
                if let [Tok::Ident(p), Tok::Punct('='), Tok::Str(s)] = body.as_slice()
                    && p == "path"
                {
                    path_attr = Some(s.clone());
                }
                i = j + 1;
                continue;
            }
            Tok::Punct('{') => {
                depth += 1;
                cfg_test = None;
                path_attr = None;
            }
            Tok::Punct('}') => {
                if stack.last().is_some_and(|m| m.depth == depth) {
                    let m = stack.pop().expect("checked");
                    if m.test && !stack.iter().any(|o| o.test) {
                        read.test_lines += toks[i].line + 1 - m.attr_line;
                    }
                }
                depth = depth.saturating_sub(1);
                cfg_test = None;
                path_attr = None;
            }
            Tok::Punct(';') => {
                cfg_test = None;
                path_attr = None;
            }
            Tok::Ident(kw) if kw == "mod" && ident(i + 1).is_some() => {
                let name = ident(i + 1).expect("checked").to_owned();
                let mut inner: Vec<String> = stack.iter().map(|m| m.name.clone()).collect();
                inner.push(name.clone());
                let test = in_test || cfg_test.is_some();
                if is(i + 2, Tok::Punct(';')) {
                    let base = stack
                        .iter()
                        .fold(child_dir(file, mod_rs), |d, m| join(&d, &m.name));
                    // a file loaded through `#[path]` keeps its children beside it, as a
                    // `mod.rs` does
                    let (target, mod_rs) = match &path_attr {
                        Some(p) if stack.is_empty() => (join(&child_dir(file, true), p), true),
                        Some(p) => (join(&base, p), true),
                        None => {
                            let flat = join(&base, &format!("{name}.rs"));
                            if exists(&flat) {
                                (flat, false)
                            } else {
                                (join(&base, &format!("{name}/mod.rs")), true)
                            }
                        }
                    };
                    read.children.push((inner, target, mod_rs, test));
                    cfg_test = None;
                    path_attr = None;
                    i += 3;
                    continue;
                }
                if is(i + 2, Tok::Punct('{')) {
                    depth += 1;
                    stack.push(Inline {
                        name,
                        depth,
                        test,
                        attr_line: cfg_test.unwrap_or(toks[i].line),
                    });
                    read.inline.push(inner);
                    cfg_test = None;
                    path_attr = None;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(kw)
                if matches!(kw.as_str(), "crate" | "super" | "self")
                    && is(i + 1, Tok::PathSep)
                    && !(i > 0 && is(i - 1, Tok::PathSep)) =>
            {
                let mut here: Vec<String> = module.to_vec();
                here.extend(stack.iter().map(|m| m.name.clone()));
                let (end, found) = path_tree(&toks, i, &here);
                if !in_test {
                    read.paths.extend(found);
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    read
}

/// The module paths a path starting at `start` (`crate::a::b`, `super::{x, y::z}`)
/// names, made absolute from `here`, and the index after it.
fn path_tree(toks: &[Token], start: usize, here: &[String]) -> (usize, Vec<Vec<String>>) {
    let mut base: Vec<String> = Vec::new();
    let mut i = start;
    // 0 before the first segment, 1 while every segment so far is `super`, 2 after
    let mut leading = 0;
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                match (leading, s.as_str()) {
                    (0, "crate") => base.clear(),
                    (0, "self") => base = here.to_vec(),
                    (0, "super") => {
                        base = here.to_vec();
                        base.pop();
                    }
                    (1, "super") => {
                        base.pop();
                    }
                    _ => base.push(s.clone()),
                }
                leading = if leading < 2 && s == "super" { 1 } else { 2 };
                i += 1;
            }
            _ => return (i, vec![base]),
        }
        if toks.get(i).map(|t| &t.tok) != Some(&Tok::PathSep) {
            return (i, vec![base]);
        }
        i += 1;
        if toks.get(i).map(|t| &t.tok) == Some(&Tok::Punct('{')) {
            return group(toks, i + 1, &base);
        }
    }
}

/// The paths of a `{ … }` group (its tokens from `start`, after the `{`), each
/// relative to `base` (`self` is `base` itself); ends after the `}`.
fn group(toks: &[Token], start: usize, base: &[String]) -> (usize, Vec<Vec<String>>) {
    let mut found = Vec::new();
    let mut i = start;
    while i < toks.len() && toks[i].tok != Tok::Punct('}') {
        match &toks[i].tok {
            Tok::Ident(s) if s == "self" => {
                found.push(base.to_vec());
                i += 1;
            }
            Tok::Ident(_) => {
                let (end, sub) = subtree(toks, i, base);
                found.extend(sub);
                i = end;
            }
            _ => i += 1,
        }
    }
    (i + 1, found)
}

fn subtree(toks: &[Token], start: usize, base: &[String]) -> (usize, Vec<Vec<String>>) {
    let mut path = base.to_vec();
    let mut i = start;
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                i += 1;
            }
            _ => return (i, vec![path]),
        }
        // `x as y`: the name after `as` is no module
        if toks.get(i).map(|t| &t.tok) != Some(&Tok::PathSep) {
            let mut j = i;
            while j < toks.len() && !matches!(toks[j].tok, Tok::Punct(',' | '}')) {
                j += 1;
            }
            return (j, vec![path]);
        }
        i += 1;
        if toks.get(i).map(|t| &t.tok) == Some(&Tok::Punct('{')) {
            return group(toks, i + 1, &path);
        }
    }
}

/// Reads the crate whose root file is `root`, following its `mod` declarations;
/// `read` gives a file's text, or `None` when it does not exist.
pub fn read_crate(root: &str, read: &dyn Fn(&str) -> Option<String>) -> Crate {
    let mut krate = Crate::default();
    let exists = |p: &str| read(p).is_some();
    // (file, module path, its children in its own directory, test only)
    let mut todo = vec![(root.to_owned(), Vec::<String>::new(), true, false)];
    while let Some((file, module, mod_rs, test_only)) = todo.pop() {
        let Some(text) = read(&file) else { continue };
        if krate.files.contains_key(&file) {
            continue;
        }
        let r = read_file(&text, &file, &module, mod_rs, &exists);
        for inline in &r.inline {
            let mut m = module.clone();
            m.extend(inline.iter().cloned());
            krate.modules.insert(m, file.clone());
        }
        for (inner, target, target_mod_rs, test) in r.children {
            let mut m = module.clone();
            m.extend(inner);
            todo.push((target, m, target_mod_rs, test_only || test));
        }
        krate.modules.insert(module, file.clone());
        krate.files.insert(
            file,
            ModuleFile {
                test_only,
                counted_lines: text.lines().count() - r.test_lines,
                paths: r.paths,
            },
        );
    }
    krate
}

impl Crate {
    /// Which module files each non-test file's paths reach (itself left out).
    pub fn imports(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.files
            .iter()
            .filter(|(_, f)| !f.test_only)
            .map(|(name, f)| {
                let reached = f
                    .paths
                    .iter()
                    .filter_map(|p| (0..=p.len()).rev().find_map(|n| self.modules.get(&p[..n])))
                    .filter(|target| *target != name && !self.files[*target].test_only)
                    .cloned()
                    .collect();
                (name.clone(), reached)
            })
            .collect()
    }
}

/// The strongly connected components of more than one file (Tarjan's algorithm):
/// each is a set of files that import each other in a ring.
pub fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

#[cfg(test)]
mod tests {
    use super::{Tok, cycles, lex, read_crate};
    use std::collections::{BTreeMap, BTreeSet};

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(a, bs)| (a.to_string(), bs.iter().map(|b| b.to_string()).collect()))
            .collect()
    }

    fn set(files: &[&str]) -> BTreeSet<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    /// A graph as `(file, the files it imports)`, and the cycles expected in it.
    type Case<'a> = (&'a [(&'a str, &'a [&'a str])], &'a [&'a [&'a str]]);

    #[test]
    fn the_cycle_finder_reports_each_ring_once_and_nothing_else() {
        let table: &[Case] = &[
            (&[], &[]),
            // a chain and a diamond are no cycles
            (&[("a", &["b"]), ("b", &["c"]), ("c", &[])], &[]),
            (&[("a", &["b", "c"]), ("b", &["d"]), ("c", &["d"])], &[]),
            (&[("a", &["b"]), ("b", &["a"])], &[&["a", "b"]]),
            // a ring of three with a tail, and a second ring beside it
            (
                &[
                    ("a", &["b"]),
                    ("b", &["c"]),
                    ("c", &["a", "d"]),
                    ("d", &["e"]),
                    ("e", &["d"]),
                    ("f", &["a"]),
                ],
                &[&["a", "b", "c"], &["d", "e"]],
            ),
            // two rings through one file are one component
            (
                &[("a", &["b", "c"]), ("b", &["a"]), ("c", &["a"])],
                &[&["a", "b", "c"]],
            ),
            // an edge to a file with no entry of its own
            (&[("a", &["z"])], &[]),
        ];
        for (edges, want) in table {
            let want: Vec<BTreeSet<String>> = want.iter().map(|c| set(c)).collect();
            assert_eq!(cycles(&graph(edges)), want, "for {edges:?}");
        }
    }

    #[test]
    fn the_lexer_skips_comments_strings_and_characters() {
        let toks: Vec<Tok> = lex(
            "a // crate::x\n/* super::y /* nested */ */ \"self::z\" r#\"crate::w\"# '\\'' 'q' 'life b",
        )
        .into_iter()
        .map(|t| t.tok)
        .collect();
        assert_eq!(
            toks,
            [
                Tok::Ident("a".into()),
                Tok::Str("self::z".into()),
                Tok::Str("crate::w".into()),
                Tok::Punct('\''),
                Tok::Ident("life".into()),
                Tok::Ident("b".into()),
            ]
        );
    }

    #[test]
    fn paths_resolve_to_the_module_files_they_name() {
        let files: BTreeMap<&str, &str> = [
            (
                "src/lib.rs",
                "mod a;\npub mod b;\n#[cfg(test)]\nmod t;\n#[path = \"other/c.rs\"]\nmod c;\n",
            ),
            (
                "src/a.rs",
                "use crate::b::{self, x::{Y, Z as W}};\nmod x;\nfn f() { super::c::g(); }\n\
                 #[cfg(test)]\nmod tests {\n    use crate::c::*;\n}\n",
            ),
            ("src/a/x.rs", "pub fn h() { self::inner::k(); crate::a::f() }\nmod inner { pub fn k() { super::super::super::b::q() } }\n"),
            ("src/b.rs", "pub mod x { pub struct Y; }\n"),
            ("src/other/c.rs", "fn g() { crate::a::x::h() }\n"),
            ("src/t.rs", "use crate::a::*;\n"),
        ]
        .into();
        let krate = read_crate("src/lib.rs", &|p| files.get(p).map(|t| t.to_string()));
        assert_eq!(
            krate.files.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "src/a.rs",
                "src/a/x.rs",
                "src/b.rs",
                "src/lib.rs",
                "src/other/c.rs",
                "src/t.rs"
            ]
        );
        assert!(krate.files["src/t.rs"].test_only);
        assert_eq!(
            krate.files["src/a.rs"].counted_lines, 3,
            "the test module is not counted"
        );
        let imports = krate.imports();
        let want = graph(&[
            ("src/a.rs", &["src/b.rs", "src/other/c.rs"]),
            ("src/a/x.rs", &["src/a.rs", "src/b.rs"]),
            ("src/b.rs", &[]),
            ("src/lib.rs", &[]),
            ("src/other/c.rs", &["src/a/x.rs"]),
        ]);
        assert_eq!(imports, want);
        assert_eq!(
            cycles(&imports),
            vec![set(&["src/a.rs", "src/a/x.rs", "src/other/c.rs"])]
        );
    }
}
