//! One way to print: a command's result is a value with a JSON form (its `Serialize`)
//! and a human form ([`Render::human`]); [`Printer`] picks one by `--output`. The human
//! form reaches a terminal, so no control character in it does ([`for_terminal`]).

use super::connection::Output;
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a character would act on a terminal or hide text rather than show: C0
/// controls, DEL, C1 controls (ESC's single-character forms), and the invisible and
/// bidirectional formatting characters (a right-to-left override reorders what
/// follows it).
fn is_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `text` for a terminal: every control character written out (`\x1b`, `\u{202e}`)
/// instead of sent. Newlines are kept when `keep_newlines` (a printer's own lines),
/// escaped otherwise (a field that must stay on its line). Text without one is
/// borrowed as it is.
pub fn for_terminal(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let escape = |c: char| is_control(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// A command's result, printable both ways.
pub trait Render: Serialize {
    /// The rendering for people; every line ends in a newline.
    fn human(&self) -> String;
}

/// Prints results in the format the command line asked for.
#[derive(Debug, Clone, Copy)]
pub struct Printer(pub Output);

impl Printer {
    /// What [`Printer::print`] writes: one compact JSON line, or the human lines.
    pub fn render<R: Render>(&self, result: &R) -> String {
        match self.0 {
            // a value built from strings, numbers and JSON values always serialises
            Output::Json => serde_json::to_string(result).unwrap_or_default() + "\n",
            // the human form holds what others wrote (commands, tool names, reasons)
            Output::Human => for_terminal(&result.human(), true).into_owned(),
        }
    }

    pub fn print<R: Render>(&self, result: &R) {
        print!("{}", self.render(result));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Greeting {
        name: &'static str,
    }

    impl Render for Greeting {
        fn human(&self) -> String {
            format!("hello {}\n", self.name)
        }
    }

    /// Each escape class an attacker would plant in a command, a tool name or a
    /// reason, printed as text; JSON keeps the exact characters.
    #[test]
    fn control_characters_are_printed_as_text() {
        let table: &[(&str, &str, &str)] = &[
            ("clear screen", "ls\u{1b}[2J\u{1b}[H", "ls\\x1b[2J\\x1b[H"),
            (
                "cursor up and erase, a forged line",
                "rm -rf ~\u{1b}[1A\u{1b}[2KALLOW git status",
                "rm -rf ~\\x1b[1A\\x1b[2KALLOW git status",
            ),
            (
                "window title (OSC, BEL)",
                "\u{1b}]0;owned\u{7}x",
                "\\x1b]0;owned\\x07x",
            ),
            (
                "clipboard write (OSC 52, ST)",
                "\u{1b}]52;c;cm0gLXJmIH4=\u{1b}\\",
                "\\x1b]52;c;cm0gLXJmIH4=\\x1b\\",
            ),
            ("C1 CSI", "a\u{9b}2Jb", "a\\u{9b}2Jb"),
            (
                "bidi override",
                "safe\u{202e}txt.exe",
                "safe\\u{202e}txt.exe",
            ),
            ("isolate", "a\u{2066}b\u{2069}", "a\\u{2066}b\\u{2069}"),
            ("zero width", "dele\u{200b}te", "dele\\u{200b}te"),
            ("carriage return", "ok\rDENY", "ok\\x0dDENY"),
            ("DEL and NUL", "a\u{7f}\u{0}", "a\\x7f\\x00"),
            (
                "plain text is kept",
                "git status -s — ok ü",
                "git status -s — ok ü",
            ),
        ];
        for (name, raw, shown) in table {
            assert_eq!(for_terminal(raw, true), *shown, "{name}");
            let g = Greeting { name: raw };
            assert_eq!(
                Printer(Output::Human).render(&g),
                format!("hello {shown}\n"),
                "{name}"
            );
            let json: serde_json::Value =
                serde_json::from_str(&Printer(Output::Json).render(&g)).unwrap();
            assert_eq!(json["name"], *raw, "{name}: JSON stays exact");
        }
        assert_eq!(for_terminal("a\nb", true), "a\nb");
        assert_eq!(for_terminal("a\nb", false), "a\\x0ab");
        assert!(matches!(for_terminal("plain", false), Cow::Borrowed(_)));
    }

    #[test]
    fn one_value_renders_as_json_or_for_people() {
        let g = Greeting { name: "ann" };
        assert_eq!(Printer(Output::Json).render(&g), "{\"name\":\"ann\"}\n");
        assert_eq!(Printer(Output::Human).render(&g), "hello ann\n");
    }
}
