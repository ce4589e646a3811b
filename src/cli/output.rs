//! One way to print: a command's result is a value with a JSON form (its `Serialize`)
//! and a human form ([`Render::human`]); [`Printer`] picks one by `--output`.

use super::args::Output;
use serde::Serialize;

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
            Output::Human => result.human(),
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

    #[test]
    fn one_value_renders_as_json_or_for_people() {
        let g = Greeting { name: "ann" };
        assert_eq!(Printer(Output::Json).render(&g), "{\"name\":\"ann\"}\n");
        assert_eq!(Printer(Output::Human).render(&g), "hello ann\n");
    }
}
