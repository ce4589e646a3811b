//! The effects of a command's operands by its row's fields (what it writes, runs,
//! downloads, the hosts it contacts, `cd`'s directory).

use super::found::{Found, Parsed, Run};
use crate::policy::shell::Cd;
use crate::policy::shell::checkers::{cc, git_config};
use crate::policy::shell::programs::{Network, Operands, Program, Script};

pub(super) fn operands(
    program: &Program,
    name: &str,
    args: &[String],
    parsed: &Parsed<'_>,
    out: &mut Found,
) {
    let parsed = Parsed {
        operands: parsed.operands.clone(),
        ..*parsed
    };
    match program.script {
        Some(Script::GitConfig) => git_config(args, &parsed.operands, out),
        Some(Script::Cc) => cc(name, args, out),
        Some(_) | None => {}
    }
    let script = program.script.filter(|s| matches!(s, Script::Cd));
    operands_of(program, name, script, &parsed, out);
}

/// The operands' effects by the row's fields (`operands`, `network`, `downloads`,
/// `write_prefixes`, `run_operands`, `equivalent`), and `cd`'s directory.
pub(super) fn operands_of(
    program: &Program,
    name: &str,
    script: Option<Script>,
    parsed: &Parsed<'_>,
    out: &mut Found,
) {
    let files: Vec<&str> = parsed.operands.clone();
    if program.code_assignments && files.iter().any(|w| w.contains('=')) {
        // `make CC='sh -c …'`, `make SHELL=./x`: a variable of the Makefile's code
        out.inline_code = true;
    }
    if let Some(word) = files.iter().find(|w| {
        program
            .opaque_operands
            .iter()
            .any(|p| w.starts_with(p.as_str()))
    }) {
        out.opaque(format!("{name} {word:?}: {}", program.about));
    }
    if script == Some(Script::Cd) {
        out.cd = Some(cd(name, &files));
    }
    if let Some(max) = program.max_operands
        && files.len() > max
    {
        out.opaque(format!(
            "{name}: {} operands, more than its {max}: {}",
            files.len(),
            program.about
        ));
    }
    if let Some(default) = &program.default_write
        && files.is_empty()
    {
        out.writes.push(default.clone());
    }
    for word in &files {
        for prefix in &program.write_prefixes {
            if let Some(path) = word.strip_prefix(prefix.as_str()) {
                out.writes.push(path.to_owned());
            }
        }
    }
    if program.run_operands {
        if files.is_empty() {
            out.opaque(format!("{name} without a command"));
        } else {
            out.runs.push(Run::Line(files.join(" ")));
        }
    }
    match program.network {
        Network::None => {}
        Network::Urls => files.iter().for_each(|w| host_of_url(w, out)),
        Network::Host => {
            if let Some(host) = files.first() {
                out.hosts.push(strip_user(host).to_owned());
            }
        }
        Network::RemotePaths => {
            for w in &files {
                if let Some(host) = remote_host(w) {
                    out.hosts.push(host.to_owned());
                }
            }
        }
    }
    if program.downloads && !parsed.wrote {
        for w in &files {
            if let Some((_, rest)) = w.split_once("://") {
                let path = rest.split(['?', '#']).next().unwrap_or_default();
                let name = match path.split_once('/') {
                    Some((_, p)) => p.rsplit('/').next().unwrap_or_default(),
                    None => "",
                };
                out.writes.push(if name.is_empty() {
                    "index.html".to_owned()
                } else {
                    name.to_owned()
                });
            }
        }
    }
    let applies = program.operands_when.is_empty() || parsed.when;
    if applies && let Some(equivalent) = &program.equivalent {
        let mut words: Vec<String> = equivalent.split_whitespace().map(str::to_owned).collect();
        words.extend(files.iter().map(|w| (*w).to_owned()));
        out.equivalents.push(words);
    }
    if !applies {
        return;
    }
    // remote paths (host:path) are not written here
    let local: Vec<&str> = if program.network == Network::RemotePaths {
        files
            .iter()
            .copied()
            .filter(|w| remote_host(w).is_none())
            .collect()
    } else {
        files.clone()
    };
    let paths = |ws: &[&str]| ws.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    match program.operands {
        Operands::None => {}
        Operands::Writes => out.writes.extend(paths(&local)),
        Operands::Deletes => {
            if local.is_empty() && program.expression {
                // find's start point defaults to the working directory
                out.deletes.push(".".to_owned());
            }
            out.deletes.extend(paths(&local));
        }
        Operands::WritesLast => {
            if !parsed.wrote
                && let Some(last) = local.last().filter(|_| files.len() > 1)
            {
                out.writes.push((*last).to_owned());
            }
        }
        Operands::Moves => {
            let (sources, dest) = if parsed.wrote {
                (&local[..], None)
            } else {
                match local.split_last() {
                    Some((last, rest)) => (rest, Some(*last)),
                    None => (&local[..], None),
                }
            };
            out.deletes.extend(paths(sources));
            out.writes.extend(dest.map(str::to_owned));
        }
        Operands::WritesAfterFirst => out.writes.extend(paths(local.get(1..).unwrap_or_default())),
        Operands::WritesFirst => out.writes.extend(local.first().map(|w| (*w).to_owned())),
    }
}

/// `user@host` → `host`.
fn strip_user(w: &str) -> &str {
    w.rsplit('@').next().unwrap_or(w)
}

/// `[user@]host:path` (scp, rsync, git's scp-like remotes): the host. A word with a
/// slash before the colon is a local path.
fn remote_host(w: &str) -> Option<&str> {
    if w.contains("://") {
        return None;
    }
    let (host, _) = w.split_once(':')?;
    let host = strip_user(host);
    (!host.is_empty() && !host.contains('/') && host.len() > 1).then_some(host)
}

pub(super) fn host_of_url(w: &str, out: &mut Found) {
    if let Some((scheme, rest)) = w.split_once("://") {
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        {
            return;
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = strip_user(authority);
        let host = if host.starts_with('[') {
            host.split(']')
                .next()
                .map(|h| h.trim_start_matches('['))
                .unwrap_or(host)
        } else {
            host.split(':').next().unwrap_or(host)
        };
        if !host.is_empty() {
            out.hosts.push(host.to_lowercase());
        }
    } else if let Some(host) = remote_host(w).filter(|_| w.contains('@')) {
        out.hosts.push(host.to_lowercase());
    }
}

/// `cd DIR`, `pushd DIR`: the directory; `cd`, `cd ~`, `cd -`, `popd`: unknown.
fn cd(name: &str, operands: &[&str]) -> Cd {
    match (name, operands) {
        ("popd", _) | (_, []) => Cd::Unknown,
        (_, [dir]) if *dir != "-" && !dir.starts_with('~') && !dir.starts_with('+') => {
            Cd::To((*dir).to_owned())
        }
        _ => Cd::Unknown,
    }
}
