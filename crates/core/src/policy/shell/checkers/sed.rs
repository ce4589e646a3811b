//! sed's scripts: what runs or writes (`e`, `s///e`, `w`), read from `-e`'s values
//! or the first operand.

use crate::policy::shell::effects::found::Found;
use crate::policy::shell::grammar::Reading;

/// Why a sed script runs or writes something (`e`, `s///e`, `w`, `W`, or a command
/// the checker does not know), or `None`.
pub(in crate::policy::shell) fn sed_script(script: &str) -> Option<&'static str> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_to_end = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
    };
    let regex = |i: &mut usize, delim: char| -> bool {
        while *i < b.len() {
            match b[*i] {
                '\\' => *i += 2,
                c if c == delim => {
                    *i += 1;
                    return true;
                }
                _ => *i += 1,
            }
        }
        false
    };
    loop {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        // addresses: numbers, `$`, `first~step`, `/re/`, `\cREc`, `+N`, a second after `,`
        for _ in 0..2 {
            while i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], '$' | '~' | '+')) {
                i += 1;
            }
            if i < b.len() && (b[i] == '/' || b[i] == '\\') {
                let delim = if b[i] == '\\' {
                    i += 1;
                    *b.get(i)?
                } else {
                    '/'
                };
                i += 1;
                if !regex(&mut i, delim) {
                    return Some("does not parse");
                }
                while i < b.len() && matches!(b[i], 'I' | 'M') {
                    i += 1;
                }
            }
            if i < b.len() && b[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        while i < b.len() && (b[i].is_whitespace() || b[i] == '!') {
            i += 1;
        }
        let &c = b.get(i)?;
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' | 'l' | 'q' | 'Q' => {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' => skip_to_end(&mut i),
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < b.len() && b[i] != '\n' && b[i] != ';' {
                    i += 1;
                }
            }
            'e' => return Some("runs a command (the e command)"),
            'w' | 'W' => return Some("writes a file (the w command)"),
            's' | 'y' => {
                let delim = *b.get(i)?;
                if delim == '\\' || delim == '\n' {
                    return Some("does not parse");
                }
                i += 1;
                if !regex(&mut i, delim) || !regex(&mut i, delim) {
                    return Some("does not parse");
                }
                if c == 's' {
                    while i < b.len() && !matches!(b[i], ';' | '\n' | '}') {
                        match b[i] {
                            'e' => return Some("runs a command (the s///e flag)"),
                            'w' | 'W' => return Some("writes a file (the s///w flag)"),
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' | '\t' => {}
                            d if d.is_ascii_digit() => {}
                            _ => return Some("holds a flag the checker does not know"),
                        }
                        i += 1;
                    }
                }
            }
            _ => return Some("holds a command the checker does not know"),
        }
    }
}

/// sed with a grammar: the scripts are `-e`/`--expression`'s values, else the first
/// operand; answers the file operands.
pub(in crate::policy::shell) fn sed_read<'a>(
    name: &str,
    reading: &Reading<'a>,
    mut files: Vec<&'a str>,
    out: &mut Found,
) -> Vec<&'a str> {
    let mut scripts: Vec<&str> = reading
        .options()
        .filter(|(o, _)| matches!(*o, "-e" | "--expression"))
        .filter_map(|(_, v)| v)
        .collect();
    if scripts.is_empty() && !files.is_empty() {
        let script = files.remove(0);
        if script.is_empty() {
            // BSD sed's `-i ''`: its script is the next word, which GNU would write
            out.opaque(format!(
                "{name}'s script is empty: BSD sed reads `-i ''` as a suffix and the next word as the script"
            ));
        }
        scripts.push(script);
    }
    // `@readonly` takes only what Codex's known-safe model takes: line ranges printed
    if !reading.has("-n") && !reading.has("--quiet") && !reading.has("--silent")
        || !scripts.iter().all(|s| prints_lines(s))
    {
        out.read_only = false;
    }
    for script in scripts {
        if let Some(why) = sed_script(script) {
            out.opaque(format!("{name}'s script {script:?} {why}"));
        }
    }
    files
}

/// `N p` or `N,M p`: a script that prints lines by number.
fn prints_lines(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    match range.split_once(',') {
        Some((a, b)) => number(a) && number(b),
        None => number(range),
    }
}
