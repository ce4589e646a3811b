//! The quoting each byte of a line is read in, as bash reads quotes and escapes, in
//! one pass: where a secret's value ends depends on it. Expansions are not followed
//! (a value holding one is not masked), so `$(…)` and `${…}` need no nesting here.

/// The quotes a byte is read inside. An opening quote is read outside (it starts
/// them), a closing one inside (it ends them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quote {
    None,
    Single,
    Double,
}

pub(super) struct Quotes {
    /// Per byte: 0 none, 1 single, 2 double; bit 4 marks a closing quote.
    states: Vec<u8>,
}

const CLOSING: u8 = 4;

impl Quotes {
    pub(super) fn read(text: &str) -> Self {
        let b = text.as_bytes();
        let mut states = vec![0u8; b.len()];
        let mut quote = Quote::None;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match quote {
                Quote::None => match c {
                    b'\\' => {
                        // the escaped byte is literal, read outside quotes too
                        i += 2;
                        continue;
                    }
                    b'\'' => quote = Quote::Single,
                    b'"' => quote = Quote::Double,
                    _ => {}
                },
                Quote::Single => {
                    states[i] = 1;
                    if c == b'\'' {
                        states[i] |= CLOSING;
                        quote = Quote::None;
                    }
                }
                Quote::Double => {
                    states[i] = 2;
                    if c == b'\\' && i + 1 < b.len() {
                        states[i + 1] = 2;
                        i += 2;
                        continue;
                    }
                    if c == b'"' {
                        states[i] |= CLOSING;
                        quote = Quote::None;
                    }
                }
            }
            i += 1;
        }
        Self { states }
    }

    pub(super) fn at(&self, i: usize) -> Quote {
        match self.states.get(i).map(|s| s & !CLOSING) {
            Some(1) => Quote::Single,
            Some(2) => Quote::Double,
            _ => Quote::None,
        }
    }

    pub(super) fn closes(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s & CLOSING != 0)
    }
}
