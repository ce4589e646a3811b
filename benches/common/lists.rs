//! The allowlist the decision benches share: its entries and where each kind of
//! entry last stands.

/// The allowlist of `n` entries, in a fixed order: per ten entries, seven exact
/// `srv{i/10}:tool{i}`, one `srvX{i}:*`, one `*:toolY{i}`, one `srvG{i}:get_*`.
/// Each glob sits under its own server, so toolgate's grouping of globs by literal
/// server leaves one glob to try; many globs under one server would be tried in turn.
pub fn allowlist(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 10 {
            0..=6 => format!("srv{}:tool{i}", i / 10),
            7 => format!("srvX{i}:*"),
            8 => format!("*:toolY{i}"),
            _ => format!("srvG{i}:get_*"),
        })
        .collect()
}

/// The last index below `n` of the given kind (`i % 10 == kind`, or `<= 6` for exact).
pub fn last_of(n: usize, exact: bool, kind: usize) -> usize {
    (0..n)
        .rev()
        .find(|i| if exact { i % 10 <= 6 } else { i % 10 == kind })
        .expect("every size holds every kind")
}
