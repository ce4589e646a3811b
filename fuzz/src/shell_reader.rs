//! The shell reader and the shell decision: never panic on any line, and a line
//! whose command word is a blocked `rm` (by file name) is never ALLOWED.

use std::sync::LazyLock;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, UserSettings, decide,
    parse_command_line,
};

/// Run-everything on, `rm` blocked: only the shell rules stand between a line and ALLOW.
static POLICY: LazyLock<(CompiledAdmin, CompiledUser)> = LazyLock::new(|| {
    let user = UserSettings {
        use_yolo_mode: true,
        yolo_enable_run_everything: true,
        command_denylist: vec!["rm".to_owned()],
        ..UserSettings::default()
    };
    (
        CompiledAdmin::compile(&AdminControls::default()).expect("valid admin"),
        CompiledUser::compile(&user).expect("valid user"),
    )
});

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let read = parse_command_line(line);
    let (admin, user) = &*POLICY;
    let d = decide(admin, user, &Call::Shell(line.to_owned()));
    let names_rm = read
        .commands
        .iter()
        .any(|c| c.words.get(c.command_at).and_then(|w| w.rsplit('/').next()) == Some("rm"));
    if names_rm {
        assert_ne!(
            d.outcome,
            Outcome::Allow,
            "{line:?} names rm and was allowed"
        );
    }
}
