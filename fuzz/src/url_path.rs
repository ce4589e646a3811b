//! URL and path extraction: a network target is read (or refused) without panicking,
//! and what is read is stable (its host normalises to itself); a path is placed
//! without panicking and a Windows one keeps no `\`; a tool's arguments give at most
//! the bounded number of paths and hosts.

use toolgate::policy::roles::{MAX_TOUCHES, Placed, Target, place, touches_of_tool_input};

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(target) = Target::read(text) {
        assert!(!target.host.is_empty());
        let again = Target::read(&format!("http://{}/", shown(&target.host)));
        if let Ok(again) = again {
            assert_eq!(again.host, target.host, "{text:?}");
        }
    }
    for cwd in [None, Some("/home/dev/proj")] {
        if let Placed::Windows(p) = place(text, cwd) {
            assert!(!p.contains('\\'), "{text:?} placed as {p:?}");
            assert!(
                !p.split('/').any(|part| part == ".." || part == "."),
                "{p:?}"
            );
        }
    }
    let input = serde_json::from_str(text)
        .unwrap_or_else(|_| serde_json::json!({"url": text, "path": text, "x": text}));
    for tool in ["glob", "read_file", "copy"] {
        let t = touches_of_tool_input(tool, &input);
        assert!(t.paths.len() <= MAX_TOUCHES && t.targets.len() <= MAX_TOUCHES);
        assert!(t.loose_paths.len() <= MAX_TOUCHES);
    }
}

/// A host as a URL writes it.
fn shown(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}
