//! The secrets table against `tests/data/secrets.json`, hostile inputs, and a
//! proptest that a secret never survives whatever words surround it.

use super::*;
use proptest::prelude::*;
use serde_json::Value;

fn table() -> Value {
    serde_json::from_str(include_str!("../../../../tests/data/secrets.json")).unwrap()
}

#[test]
fn every_row_of_the_table_masks_as_written() {
    let data = table();
    let mut failures = Vec::new();
    for case in data["cases"].as_array().unwrap() {
        let line = case["line"].as_str().unwrap();
        let secret = case["secret"].as_str().unwrap();
        let want = case["masked"].as_str().unwrap();
        assert!(line.contains(secret), "{line:?} holds its secret");
        let got = mask(line);
        if got != want {
            failures.push(format!("{line:?}\n    got  {got:?}\n    want {want:?}"));
        }
        if got.contains(secret) {
            failures.push(format!("{line:?} keeps {secret:?}"));
        }
        // masking twice changes nothing more
        if mask(&got) != got {
            failures.push(format!("{got:?} is masked again"));
        }
        let kind = case["kind"].as_str().unwrap();
        if !got.contains(&marker(kind)) {
            failures.push(format!("{line:?} has no {kind} marker"));
        }
    }
    for line in data["not_masked"].as_array().unwrap() {
        let line = line.as_str().unwrap();
        if let Cow::Owned(got) = mask(line) {
            failures.push(format!("{line:?} was masked: {got:?}"));
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
}

#[test]
fn every_kind_has_a_row_in_the_table() {
    let data = table();
    let rows: Vec<&str> = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    for kind in kinds() {
        assert!(rows.contains(&kind), "no row of secrets.json masks {kind}");
    }
}

#[test]
fn masked_lines_read_as_the_same_words() {
    for case in table()["cases"].as_array().unwrap() {
        let line = case["line"].as_str().unwrap();
        let call = Call::Shell(line.to_owned());
        let masked = mask_call(&call);
        assert!(masked.masked(), "{line:?}");
        let expected = case["redecidable"].as_bool().unwrap_or(true);
        assert_eq!(masked.redecidable, expected, "{line:?}: redecidable");
    }
    // a secret spread over words (a PEM block outside quotes) is masked all the same,
    // but the line is not decided again
    let line = "echo -----BEGIN PRIVATE KEY----- abc def -----END PRIVATE KEY----- x";
    let call = Call::Shell(line.to_owned());
    let masked = mask_call(&call);
    assert!(!masked.redecidable);
    assert!(!format!("{:?}", masked.call).contains("abc def"));
    // a free-form value an unknown program's arguments read as a program (found by
    // the fuzzer: with `curl` denied, the masked line would no longer ask)
    for line in [
        "foo GH_TOKEN=curl",
        "GH_ENTERPRISE_TOKEN=curl https://api.example.com",
        "GH_TOKEN=curl",
    ] {
        let call = Call::Shell(line.to_owned());
        let masked = mask_call(&call);
        assert!(masked.masked(), "{line:?}");
        assert!(!masked.redecidable, "{line:?} would decide again");
    }
    // a token's shape names no program, so it may stand there
    let line = "foo 'ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; curl'";
    let call = Call::Shell(line.to_owned());
    assert!(mask_call(&call).redecidable, "{line:?}");
}

#[test]
fn decisions_show_their_candidates_and_detail_masked() {
    let d = Decision {
        outcome: crate::policy::Outcome::Ask,
        reason: crate::policy::Reason::CommandNotAllowlisted,
        matched_entry: None,
        explanation: Vec::new(),
        allowed_tools: None,
        obligations: None,
        scope: crate::policy::Scope::default(),
        unchecked: crate::policy::Unchecked::default(),
        origin: None,
        detail: Some(Arc::from("\"mysql -pTr0ub4dor app\" is not allowed")),
        candidates: vec![
            Candidate::Command("mysql -pTr0ub4dor app".into()),
            Candidate::Command("ls".into()),
        ],
    };
    let masked = mask_decision(&d);
    let text = format!("{masked:?}");
    assert!(!text.contains("Tr0ub4dor"), "{text}");
    assert!(text.contains("\"ls\""));
    let plain = Decision {
        detail: None,
        candidates: vec![Candidate::Command("ls".into())],
        ..d.clone()
    };
    assert!(matches!(mask_decision(&plain), Cow::Borrowed(_)));
}

#[test]
fn hostile_texts_are_read_once_and_bounded() {
    // every rule's start over and over, none completed: each is read in one pass
    let starts = "mysql -h x ; Authorization ghp_ xoxb- eyJ --password https://a:b ".repeat(5000);
    let _ = mask(&starts);
    let quotes = "\"'".repeat(100_000);
    let _ = mask(&format!("--token={quotes}"));
    // past the bound the rest is one marker, never kept
    let long = format!(
        "echo {} ghp_{}",
        "a".repeat(MAX_MASKED_BYTES),
        "x".repeat(36)
    );
    let got = mask(&long);
    assert!(got.ends_with(&marker("too-long")));
    assert!(!got.contains("ghp_"));
    assert!(got.len() <= MAX_MASKED_BYTES + 32);
    // a token the bound cuts short is not kept in part, whichever byte it falls on
    let key = format!("AIza{}", "k".repeat(35));
    for before in [
        MAX_MASKED_BYTES - 20,
        MAX_MASKED_BYTES - key.len(),
        MAX_MASKED_BYTES - 1,
    ] {
        let text = format!("{} {key} tail", "a".repeat(before - 1));
        let got = mask(&text);
        assert!(got.ends_with(&marker("too-long")), "cut {before}");
        assert!(
            !got.contains("AIza") && !got.contains("kkk"),
            "cut {before}"
        );
    }
    // a key that ends at the bound is read whole, and masked
    let text = format!(
        "{} {key} tail",
        "a".repeat(MAX_MASKED_BYTES - key.len() - 1)
    );
    let got = mask(&text);
    let tail = &got[got.len() - 60..];
    assert!(got.contains(&marker("google-api-key")), "{tail}");
    assert!(!got.contains("AIza"), "{tail}");
    // one word past the bound keeps nothing of it
    assert_eq!(mask(&"b".repeat(MAX_MASKED_BYTES + 1)), marker("too-long"));
    // found by the fuzzer: a marker put in, or typed, made a new match around it
    for text in [
        "git push https://x-access-token;github_pat_11ABCDEFG0xxxxxxxxxxxxxxxxxxxx_YYYY@github.com/a main",
        "git push https://x-a;github_pat_11ABCDEFG0xxxxxxxxxxxxxxxxx__masked:secret-assignment__YY@github.com/a",
    ] {
        let once = mask(text);
        assert_eq!(mask(&once), once, "{text:?}");
        assert!(!once.contains("github_pat_"), "{once:?}");
    }
    // multi-byte text around values never splits a character
    for text in [
        "TOKEN=é€x y",
        "--password=\"é\\\"€\" z",
        "mysql -p'€",
        "Authorization: \"€",
    ] {
        let _ = mask(text);
    }
}

#[test]
fn the_table_rejects_bad_rows() {
    assert!(
        Rules::parse("[[rule]]\nkind = \"Bad Kind\"\npattern = 'x'\nsecret = \"token\"").is_err()
    );
    assert!(Rules::parse("[[rule]]\nkind = \"k\"\npattern = '('\nsecret = \"token\"").is_err());
    assert!(Rules::parse("[[rule]]\nkind = \"k\"\npattern = 'x'\nsecret = \"all\"").is_err());
}

proptest! {
    /// Whatever plain words surround a secret of the table, it never survives.
    #[test]
    fn a_secret_never_survives_its_neighbours(
        before in prop::collection::vec("[a-z0-9./=:-]{1,12}", 0..6),
        after in prop::collection::vec("[a-z0-9./=:-]{1,12}", 0..6),
        sep in prop::sample::select(vec![" ", " && ", " | ", "; ", "\n"]),
        row in 0usize..36,
    ) {
        let data = table();
        let cases = data["cases"].as_array().unwrap();
        let case = &cases[row % cases.len()];
        let line = case["line"].as_str().unwrap();
        let secret = case["secret"].as_str().unwrap();
        let text = format!("{}{sep}{line}{sep}{}", before.join(" "), after.join(" "));
        let got = mask(&text);
        prop_assert!(!got.contains(secret), "{:?} keeps {:?}", got, secret);
    }

    /// Secrets, markers and the characters that join them, in any order: a masked
    /// text masks as itself (a marker's `:` or kind never makes a new secret stay).
    #[test]
    fn a_masked_text_masks_as_itself(
        parts in prop::collection::vec(prop::sample::select(vec![
            "https://", "user", ":", "@", ";", " ", "=", "x-access-token", "TOKEN",
            "__masked:github-token__", "__masked:", "__", "--password ", "mysql -p",
            "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "github_pat_11ABCDEFG0xxxxxxxxxxxxxxx",
            "Authorization: ", "'", "\"", "secret-assignment", "$",
        ]), 0..16),
    ) {
        let text = parts.concat();
        let once = mask(&text);
        prop_assert_eq!(mask(&once), once.clone(), "{:?}", text);
    }

    /// Any text at all: no panic, and a text without a marker's start stays whole
    /// where nothing matched.
    #[test]
    fn any_text_masks_without_panicking(text in "\\PC{0,200}") {
        let _ = mask(&text);
        let _ = mask_call(&Call::Shell(text.clone()));
    }
}
