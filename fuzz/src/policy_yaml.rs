//! The policy YAML loaders (the server's policy file and a team's policy): never
//! panic, and any input within the size limit is answered quickly (libFuzzer's
//! `-timeout` catches a slow one), deep nesting included.

use toolgate::policy_file::{
    MAX_POLICY_BYTES, nesting_depth, parse_managed_policy, parse_team_policy,
};

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() > MAX_POLICY_BYTES {
        return;
    }
    let _ = nesting_depth(text);
    if let Ok(policy) = parse_team_policy("t.yaml", text) {
        // what `admin get` prints reads back as the same policy
        let yaml = toolgate::policy_file::to_yaml(&policy);
        let again = parse_team_policy("t.yaml", &yaml).expect("to_yaml output parses");
        assert_eq!(again, policy);
    }
    let _ = parse_managed_policy("p.yaml", text);
}
