//! Names and `server:tool` entries: validation (seed 001 `ihe`), parsing (`vOh`),
//! formatting (`d4c`), matching (`f4c` plus globs), internal names (`h4c`).

use super::Rule;
use super::builtin;

/// The separator between server and tool (seed 001 `UJt`).
pub const SEPARATOR: char = ':';
/// The wildcard (seed 001 `bY`).
pub const WILDCARD: &str = "*";
/// Longest server or tool name (seed 001 `ihe`).
pub const MAX_NAME_LEN: usize = 256;

/// More than [`MAX_NAME_LEN`] UTF-16 code units, JavaScript's `.length` (an emoji
/// counts two). A string has at least as many UTF-8 bytes as UTF-16 units, so the
/// count is only needed past that many bytes.
fn too_long(name: &str) -> bool {
    name.len() > MAX_NAME_LEN && name.encode_utf16().count() > MAX_NAME_LEN
}

/// Whitespace as JavaScript's `trim` removes it: Unicode's White_Space without
/// U+0085, plus U+FEFF.
fn js_whitespace(c: char) -> bool {
    c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace())
}

/// Nothing left after JavaScript's `trim`.
fn js_blank(name: &str) -> bool {
    name.chars().all(js_whitespace)
}

/// Validates a server or tool name. Seed 001's `ihe`, as its JavaScript reads: not
/// empty, at most 256 UTF-16 code units, not only whitespace, and no `:` or `*`
/// unless the name is the wildcard itself.
pub fn validate_name(name: &str) -> Result<(), Rule> {
    if name.is_empty() {
        return Err(Rule::Empty);
    }
    if too_long(name) {
        return Err(Rule::TooLong);
    }
    if js_blank(name) {
        return Err(Rule::Whitespace);
    }
    if name != WILDCARD && name.contains([':', '*']) {
        return Err(Rule::ReservedCharacter);
    }
    Ok(())
}

/// Like [`validate_name`] for a name in a call: the wildcard is not a name there.
pub fn validate_call_name(name: &str) -> Result<(), Rule> {
    if name == WILDCARD {
        return Err(Rule::ReservedCharacter);
    }
    validate_name(name)
}

/// The checks of `ihe` that apply to an entry side, where `*` may also form a glob.
fn validate_side(side: &str) -> Result<(), Rule> {
    if side.is_empty() {
        return Err(Rule::Empty);
    }
    if too_long(side) {
        return Err(Rule::TooLong);
    }
    if js_blank(side) {
        return Err(Rule::Whitespace);
    }
    if side.contains(':') {
        return Err(Rule::ReservedCharacter);
    }
    Ok(())
}

/// The entry string for a server and a tool. Seed 001's `d4c`.
pub fn format_entry(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// One side of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Side {
    /// `*`: anything.
    Any,
    /// A plain name, matched exactly and case-sensitively.
    Exact(String),
    /// A name with `*` inside (the glob extension), e.g. `get_*`.
    Glob(Glob),
}

impl Side {
    fn parse(side: &str) -> Result<Self, Rule> {
        validate_side(side)?;
        Ok(if side == WILDCARD {
            Self::Any
        } else if side.contains('*') {
            Self::Glob(Glob::new(side))
        } else {
            Self::Exact(side.to_owned())
        })
    }

    /// Whether `name` (a valid call name) is matched by this side.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(s) => s == name,
            Self::Glob(glob) => glob.matches(name),
        }
    }
}

/// A glob, split at its `*`s once when the list is compiled rather than at every
/// match: `*` matches any run of characters (also none); everything else matches
/// itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Glob {
    pattern: String,
    /// Before the first `*`.
    prefix: String,
    /// Between `*`s, in order.
    middle: Vec<String>,
    /// After the last `*`.
    suffix: String,
    /// False for a pattern without `*`, which matches only itself.
    star: bool,
}

impl Glob {
    pub fn new(pattern: &str) -> Self {
        let mut parts: Vec<String> = pattern.split('*').map(str::to_owned).collect();
        // no `*` at all: the pattern is its own prefix and must match whole
        let suffix = if parts.len() > 1 {
            parts.pop().unwrap_or_default()
        } else {
            String::new()
        };
        let prefix = parts.remove(0);
        Self {
            pattern: pattern.to_owned(),
            prefix,
            middle: parts,
            suffix,
            star: pattern.contains('*'),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    pub fn matches(&self, name: &str) -> bool {
        if !self.star {
            return self.pattern == name;
        }
        // prefix and suffix may not overlap; the middle parts fit between them
        // an empty side is skipped, not compared: comparing an empty slice costs a
        // libc memcmp call that was measured at ~80 ns here
        let (bytes, prefix, suffix) = (
            name.as_bytes(),
            self.prefix.as_bytes(),
            self.suffix.as_bytes(),
        );
        if bytes.len() < prefix.len() + suffix.len()
            || (!prefix.is_empty() && !bytes.starts_with(prefix))
            || (!suffix.is_empty() && !bytes.ends_with(suffix))
        {
            return false;
        }
        let mut rest = &name[self.prefix.len()..name.len() - self.suffix.len()];
        for part in &self.middle {
            match rest.find(part.as_str()) {
                Some(i) => rest = &rest[i + part.len()..],
                None => return false,
            }
        }
        true
    }
}

impl From<&str> for Glob {
    fn from(pattern: &str) -> Self {
        Self::new(pattern)
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// `*` matches any run of characters (also none); everything else matches itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    Glob::new(pattern).matches(name)
}

/// A parsed entry of an MCP list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// `server:tool` in any of its wildcard and glob forms. A built-in tool's
    /// alias (`builtin:Read`) is stored under its canonical name.
    Pair { server: Side, tool: Side },
    /// `@name`: a named set of built-in tools (seed 002 presets).
    Preset(&'static str),
}

impl Entry {
    /// Parses an entry: exactly one `:`, each side valid; or `@preset` (an `@` name
    /// without `:`; `@acme:deploy` is server `@acme`). Seed 001's `vOh`, with the glob
    /// and preset extensions.
    pub fn parse(entry: &str) -> Result<Self, Rule> {
        if !entry.contains(SEPARATOR)
            && let Some(name) = entry.strip_prefix('@')
        {
            return builtin::preset(name)
                .map(|(name, _)| Self::Preset(name))
                .ok_or(Rule::UnknownPreset);
        }
        let mut sides = entry.split(SEPARATOR);
        let (Some(server), Some(tool), None) = (sides.next(), sides.next(), sides.next()) else {
            return Err(Rule::Separator);
        };
        let server = Side::parse(server)?;
        let mut tool = Side::parse(tool)?;
        if server == Side::Exact(builtin::SERVER.to_owned())
            && let Side::Exact(name) = &tool
        {
            tool = Side::Exact(builtin::canonical(name).to_owned());
        }
        Ok(Self::Pair { server, tool })
    }

    /// Whether the entry matches one spelling of a call, literally. Seed 001's `f4c`,
    /// generalised to globs and presets.
    pub fn matches(&self, server: &str, tool: &str) -> bool {
        match self {
            Self::Pair { server: s, tool: t } => s.matches(server) && t.matches(tool),
            Self::Preset(name) => {
                server == builtin::SERVER
                    && builtin::preset(name).is_some_and(|(_, tools)| tools.contains(&tool))
            }
        }
    }

    /// Whether the entry matches a call under any spelling of its tool: a built-in
    /// tool is matched as `read_file` and as `Read`, whatever the entry's form.
    pub fn matches_call(&self, server: &str, tool: &str) -> bool {
        builtin::spellings(server, tool)
            .into_iter()
            .flatten()
            .any(|t| self.matches(server, t))
    }
}

/// The problem with an entry, for people: what rule it breaks and how to fix it.
pub fn hint(rule: Rule) -> &'static str {
    match rule {
        Rule::Empty => "a server or tool name is empty: write server:tool, with * for any",
        Rule::TooLong => {
            "a server or tool name is longer than 256 characters: shorten it or use a glob"
        }
        Rule::Whitespace => "a server or tool name is only whitespace: write the name",
        Rule::ReservedCharacter => {
            "`:` and `*` are reserved: `:` separates server from tool, `*` alone means any"
        }
        Rule::Separator => {
            "an entry is server:tool with exactly one `:` (e.g. github:create_issue, github:*)"
        }
        Rule::UnknownPreset => {
            "no such preset: the presets are @readonly (a tool category, @CATEGORY, is an entry of the team admin's mcp_tool_allowlist and mcp_access_allowlist only)"
        }
        Rule::EmptyCommand => {
            "a command prefix is empty: write the command words, e.g. `git status`"
        }
        Rule::TooMany => "the list is longer than the limit: use wildcards or globs",
        Rule::Duplicate => "named twice: keep one",
        Rule::UnknownName => "no such name in the document: define it or fix the spelling",
        Rule::Malformed => "the value cannot be read: see the field's description",
    }
}

/// Splits an internal tool name into server and tool: `mcp__server__tool` (double
/// underscores), then `mcp_server_tool` split at the first `_` after the prefix;
/// anything else is a tool of `fallback_server`. Seed 001's `h4c`, extended.
pub fn split_internal_name<'a>(name: &'a str, fallback_server: &'a str) -> (&'a str, &'a str) {
    if let Some(rest) = name.strip_prefix("mcp__")
        && let Some((server, tool)) = rest.split_once("__")
    {
        return (server, tool);
    }
    if let Some(rest) = name.strip_prefix("mcp_")
        && let Some((server, tool)) = rest.split_once('_')
    {
        return (server, tool);
    }
    (fallback_server, name)
}

#[cfg(test)]
mod tests;
