//! Option grammars: a program's arguments read the way its own parser reads them
//! (glibc's getopt_long, git's parse-options), so `sort --out=X` is `sort -o X`
//! and an option the grammar does not know, or a prefix of two, is an error the
//! caller turns into an opaque command.

use rustc_hash::FxHashMap;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    No,
    /// Attached (`-ofile`, `--output=file`) or the next word.
    Required,
    /// Attached only (`-i.bak`, `--in-place=.bak`).
    Optional,
}

/// Whose rules resolve the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// glibc getopt_long: a unique prefix of a long option is that option.
    Getopt,
    /// glibc getopt_long_only: `-name` is a long option too (gdb's `-ex`).
    LongOnly,
    /// git's parse-options: as getopt_long, and every long option not marked `!`
    /// has a `--no-` form (a `no-x` option's negation is `--x`).
    Git,
    /// git's revision and diff options (`git log`, `git diff`): as `Git`, but a
    /// long option is only its whole name (they are parsed with
    /// `PARSE_OPT_KEEP_UNKNOWN_OPT`, which takes no abbreviation).
    GitExact,
    /// Go's pflag (cobra: docker, kubectl): whole names only, no `--no-` forms.
    Pflag,
    /// tree's own parser: long options by their whole name only, and a short
    /// option's value is never attached: each letter of a bundle that takes one
    /// takes the next word in turn (`tree -oL out 1` writes `out`).
    Separate,
}

#[derive(Debug, Clone)]
struct Long {
    name: String,
    takes: Takes,
    /// git: the `--no-` form exists.
    negatable: bool,
}

/// A program's options, from the table's `short` and `long` specs (getopt's own
/// notation: `o:` takes a value, `i::` takes one attached only; a leading `+` ends
/// options at the first operand; in git rows a long name starting with `!` has no
/// `--no-` form).
#[derive(Debug, Clone)]
pub(crate) struct Grammar {
    style: Style,
    in_order: bool,
    short: FxHashMap<char, Takes>,
    long: Vec<Long>,
    /// Every long spelling (git's `--no-` forms too), sorted, with the index of
    /// its canonical name in `canonical` and what it takes: a prefix is a range.
    spellings: Vec<(String, usize, Takes)>,
    canonical: Vec<String>,
    /// `-NUM` is an option (`head -5`, `git log -3`).
    digits: bool,
    /// Options after which every word is an operand (`python3 -c CODE ARGS…`).
    stops: Vec<String>,
}

/// One word (or two, with a separate value) of an argument list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// An option by its canonical spelling (`-o`, `--output`, git's `--no-verify`),
    /// with its value.
    Option {
        name: String,
        value: Option<&'a str>,
    },
    Operand(&'a str),
}

/// An argument list as read: its items in order (options and operands), and, when
/// options end at the first operand, where that operand is.
#[derive(Debug, Default)]
pub(crate) struct Reading<'a> {
    pub items: Vec<Item<'a>>,
    /// The index of the first word after the options when they stop at an operand
    /// (`+` grammars, or `--`): the rest are operands, unread.
    pub rest: Option<usize>,
}

impl<'a> Reading<'a> {
    pub fn options(&self) -> impl Iterator<Item = (&str, Option<&'a str>)> {
        self.items.iter().filter_map(|i| match i {
            Item::Option { name, value } => Some((name.as_str(), *value)),
            Item::Operand(_) => None,
        })
    }

    pub fn operands(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.items.iter().filter_map(|i| match i {
            Item::Operand(w) => Some(*w),
            Item::Option { .. } => None,
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.options().any(|(n, _)| n == name)
    }
}

impl Grammar {
    /// The grammar of a row's specs; `Err` names what is wrong with them.
    pub fn new(style: Style, short: &str, long: &[String], digits: bool) -> Result<Self, String> {
        let (in_order, short_spec) = match short.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, short),
        };
        let mut shorts = FxHashMap::default();
        let chars: Vec<char> = short_spec.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == ':' || c == '-' || c.is_whitespace() {
                return Err(format!(
                    "short spec {short:?}: {c:?} is not an option letter"
                ));
            }
            let takes = match (chars.get(i + 1), chars.get(i + 2)) {
                (Some(':'), Some(':')) => Takes::Optional,
                (Some(':'), _) => Takes::Required,
                _ => Takes::No,
            };
            if shorts.insert(c, takes).is_some() {
                return Err(format!("short spec {short:?} names -{c} twice"));
            }
            i += match takes {
                Takes::No => 1,
                Takes::Required => 2,
                Takes::Optional => 3,
            };
        }
        let mut longs: Vec<Long> = Vec::with_capacity(long.len());
        for spec in long {
            let (negatable, spec_rest) = match spec.strip_prefix('!') {
                Some(rest) => (false, rest),
                None => (matches!(style, Style::Git | Style::GitExact), spec.as_str()),
            };
            let (name, takes) = if let Some(n) = spec_rest.strip_suffix("::") {
                (n, Takes::Optional)
            } else if let Some(n) = spec_rest.strip_suffix(':') {
                (n, Takes::Required)
            } else {
                (spec_rest, Takes::No)
            };
            if name.is_empty() || name.starts_with('-') || name.contains(['=', ':', ' ']) {
                return Err(format!("long spec {spec:?} is not an option name"));
            }
            if longs.iter().any(|l| l.name == name) {
                return Err(format!("long spec names --{name} twice"));
            }
            longs.push(Long {
                name: name.to_owned(),
                takes,
                negatable,
            });
        }
        let mut grammar = Self {
            style,
            in_order,
            short: shorts,
            long: longs,
            spellings: Vec::new(),
            canonical: Vec::new(),
            digits,
            stops: Vec::new(),
        };
        let mut spellings = Vec::new();
        let all: Vec<_> = grammar.long_spellings().collect();
        for (spelling, canonical, takes) in all {
            let at = match grammar.canonical.iter().position(|c| *c == canonical) {
                Some(at) => at,
                None => {
                    grammar.canonical.push(canonical);
                    grammar.canonical.len() - 1
                }
            };
            spellings.push((spelling, at, takes));
        }
        spellings.sort_by(|a, b| a.0.cmp(&b.0));
        grammar.spellings = spellings;
        Ok(grammar)
    }

    /// Makes these options (by their canonical spelling, each one the grammar
    /// knows) end the options: the words after them are operands.
    pub fn stop_after(mut self, options: &[String]) -> Result<Self, String> {
        if let Some(unknown) = options.iter().find(|o| !self.knows(o)) {
            return Err(format!(
                "stop option {unknown:?} is no option of its grammar"
            ));
        }
        self.stops = options.to_vec();
        Ok(self)
    }

    /// Whether `name` (`-o`, `--output`, `--no-verify`) is an option of the grammar.
    pub fn knows(&self, name: &str) -> bool {
        if let Some(long) = name.strip_prefix("--") {
            return self.long_spellings().any(|(s, _, _)| s == long);
        }
        let mut chars = name.chars();
        matches!((chars.next(), chars.next(), chars.next()), (Some('-'), Some(c), None) if self.short.contains_key(&c))
            || (self.digits && name == "-NUM")
    }

    /// Every long spelling, with the option's canonical name and what it takes
    /// (a `--no-` form takes nothing).
    fn long_spellings(&self) -> impl Iterator<Item = (String, String, Takes)> + '_ {
        self.long.iter().flat_map(|l| {
            let mut out = vec![(l.name.clone(), l.name.clone(), l.takes)];
            if l.negatable {
                match l.name.strip_prefix("no-") {
                    Some(positive) => {
                        out.push((positive.to_owned(), positive.to_owned(), Takes::No))
                    }
                    None => out.push((
                        format!("no-{}", l.name),
                        format!("no-{}", l.name),
                        Takes::No,
                    )),
                }
            }
            out
        })
    }

    /// The short options and long names, for tests that enumerate them.
    pub fn shorts(&self) -> impl Iterator<Item = (char, Takes)> + '_ {
        self.short.iter().map(|(c, t)| (*c, *t))
    }

    #[cfg(test)]
    pub fn longs(&self) -> impl Iterator<Item = (&str, Takes)> + '_ {
        self.long.iter().map(|l| (l.name.as_str(), l.takes))
    }

    #[cfg(test)]
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// getopt_long_only: `-name` is a long option too.
    #[cfg(test)]
    pub fn long_only(&self) -> bool {
        self.style == Style::LongOnly
    }

    /// Resolves a long option's name as the parser does: the exact name, else the
    /// one option it is a prefix of.
    fn resolve_long(&self, given: &str) -> Result<(String, Takes), String> {
        let from = self
            .spellings
            .partition_point(|(s, _, _)| s.as_str() < given);
        let matching = self.spellings[from..]
            .iter()
            .take_while(|(s, _, _)| s.starts_with(given));
        let mut found: Vec<&(String, usize, Takes)> = Vec::new();
        for spelling in matching {
            if spelling.0 == given {
                return Ok((self.canonical[spelling.1].clone(), spelling.2));
            }
            if matches!(self.style, Style::GitExact | Style::Pflag | Style::Separate) {
                continue;
            }
            if !found.iter().any(|f| f.1 == spelling.1) {
                found.push(spelling);
            }
        }
        match found.as_slice() {
            [] => Err(format!("--{given} is an option the reader does not know")),
            [(_, canonical, takes)] => Ok((self.canonical[*canonical].clone(), *takes)),
            many => Err(format!(
                "--{given} is ambiguous ({})",
                many.iter()
                    .map(|(s, _, _)| format!("--{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Reads an argument list; `Err` says which word the parser would not take, or
    /// would take in a way the reader cannot be sure of.
    pub fn read<'a>(&self, args: &'a [String]) -> Result<Reading<'a>, String> {
        let mut out = Reading::default();
        let mut i = 0;
        while i < args.len() {
            if let Some(Item::Option { name, .. }) = out.items.last()
                && self.stops.contains(name)
            {
                out.rest = Some(i);
                out.items
                    .extend(args[i..].iter().map(|w| Item::Operand(w.as_str())));
                return Ok(out);
            }
            let word = args[i].as_str();
            if word == "--" {
                out.rest = Some(i + 1);
                out.items
                    .extend(args[i + 1..].iter().map(|w| Item::Operand(w.as_str())));
                return Ok(out);
            }
            if !word.starts_with('-') || word == "-" {
                if self.in_order {
                    out.rest = Some(i);
                    out.items
                        .extend(args[i..].iter().map(|w| Item::Operand(w.as_str())));
                    return Ok(out);
                }
                out.items.push(Item::Operand(word));
                i += 1;
                continue;
            }
            if let Some(long) = word.strip_prefix("--") {
                let (given, attached) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let (name, takes) = self.resolve_long(given)?;
                let value = long_value(takes, attached, args, &mut i, ("--", &name, word))?;
                out.items.push(Item::Option {
                    name: format!("--{name}"),
                    value,
                });
                i += 1;
                continue;
            }
            let letters = &word[1..];
            let single_short = letters.chars().count() == 1
                && self
                    .short
                    .contains_key(&letters.chars().next().unwrap_or(' '));
            if self.style == Style::LongOnly && !single_short {
                let (given, attached) = match letters.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (letters, None),
                };
                match self.resolve_long(given) {
                    Ok((name, takes)) => {
                        let value = long_value(takes, attached, args, &mut i, ("-", &name, word))?;
                        out.items.push(Item::Option {
                            name: format!("--{name}"),
                            value,
                        });
                        i += 1;
                        continue;
                    }
                    Err(why)
                        if !self
                            .short
                            .contains_key(&letters.chars().next().unwrap_or(' ')) =>
                    {
                        return Err(why);
                    }
                    Err(_) => {}
                }
            }
            if self.digits && letters.bytes().all(|b| b.is_ascii_digit()) {
                out.items.push(Item::Option {
                    name: "-NUM".to_owned(),
                    value: Some(letters),
                });
                i += 1;
                continue;
            }
            if self.style == Style::Separate {
                i = self.separate_bundle(word, args, i, &mut out.items)?;
                continue;
            }
            for (k, c) in letters.char_indices() {
                let takes = *self.short.get(&c).ok_or_else(|| {
                    format!("-{c} (in {word:?}) is an option the reader does not know")
                })?;
                let rest = &letters[k + c.len_utf8()..];
                let name = format!("-{c}");
                match takes {
                    Takes::No => out.items.push(Item::Option { name, value: None }),
                    Takes::Optional => {
                        let value = (!rest.is_empty()).then_some(rest);
                        out.items.push(Item::Option { name, value });
                        break;
                    }
                    Takes::Required => {
                        let value = if rest.is_empty() {
                            i += 1;
                            args.get(i)
                                .map(String::as_str)
                                .ok_or_else(|| format!("{name} without its value"))?
                        } else {
                            rest
                        };
                        out.items.push(Item::Option {
                            name,
                            value: Some(value),
                        });
                        break;
                    }
                }
            }
            i += 1;
        }
        Ok(out)
    }
}

impl Grammar {
    /// A bundle of short options as tree reads it: each letter that takes a value
    /// takes the next unused word. Answers the index of the word after the last
    /// one taken.
    fn separate_bundle<'a>(
        &self,
        word: &str,
        args: &'a [String],
        at: usize,
        items: &mut Vec<Item<'a>>,
    ) -> Result<usize, String> {
        let mut next = at + 1;
        for c in word[1..].chars() {
            let takes = *self.short.get(&c).ok_or_else(|| {
                format!("-{c} (in {word:?}) is an option the reader does not know")
            })?;
            let name = format!("-{c}");
            let value = match takes {
                Takes::No => None,
                Takes::Required | Takes::Optional => {
                    let value = args
                        .get(next)
                        .map(String::as_str)
                        .ok_or_else(|| format!("{name} without its value"))?;
                    next += 1;
                    Some(value)
                }
            };
            items.push(Item::Option { name, value });
        }
        Ok(next)
    }
}

/// A resolved long option's value: the attached one, or the next word when it takes
/// one (`i` moved past it). `spelled` is the dash it was written with, its name and
/// the word, for the error.
fn long_value<'a>(
    takes: Takes,
    attached: Option<&'a str>,
    args: &'a [String],
    i: &mut usize,
    (dash, name, word): (&str, &str, &str),
) -> Result<Option<&'a str>, String> {
    match (takes, attached) {
        (Takes::No, Some(_)) => Err(format!(
            "{dash}{name} takes no value, and {word:?} gives one"
        )),
        (Takes::No, None) | (Takes::Optional, None) => Ok(None),
        (_, Some(v)) => Ok(Some(v)),
        (Takes::Required, None) => {
            *i += 1;
            args.get(*i)
                .map(|v| Some(v.as_str()))
                .ok_or_else(|| format!("{dash}{name} without its value"))
        }
    }
}
