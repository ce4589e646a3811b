//! The internal-name splitter (`mcp__server__tool`, `mcp_server_tool`): never
//! panics, and its halves are slices of the name (or the fallback) in order.

use toolgate::policy::split_internal_name;

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let (server, tool) = split_internal_name(name, "fallback");
    if server == "fallback" && tool == name {
        return;
    }
    assert!(
        name.starts_with("mcp_"),
        "{name:?} split without the prefix"
    );
    assert!(
        name.ends_with(tool),
        "{name:?}: tool {tool:?} is not its tail"
    );
    assert!(
        name.contains(server),
        "{name:?}: server {server:?} not in it"
    );
    assert!(server.len() + tool.len() < name.len());
}
