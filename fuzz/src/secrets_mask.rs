//! The secrets masking rules: never panic on any text, masking a masked text changes
//! nothing, and a masked line that reads as the same words decides as the original
//! (the impact preview decides stored, masked lines again).

use std::sync::LazyLock;
use toolgate::policy::{AdminControls, Call, CompiledAdmin, CompiledUser, UserSettings, decide};
use toolgate::secrets::{mask, mask_call};

/// Two policies a line is decided under: an admin's allowed and blocked prefixes,
/// and run-everything with `rm` and `curl` blocked.
static POLICIES: LazyLock<[(CompiledAdmin, CompiledUser); 2]> = LazyLock::new(|| {
    let admin = AdminControls {
        enabled: true,
        allowed: [
            "git status",
            "ls",
            "npm test",
            "echo",
            "mysql -u root",
            "curl",
        ]
        .map(String::from)
        .to_vec(),
        blocked: ["rm", "git push"].map(String::from).to_vec(),
        ..AdminControls::default()
    };
    let yolo = UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    };
    let everything = UserSettings {
        use_yolo_mode: true,
        yolo_enable_run_everything: true,
        command_denylist: vec!["rm".to_owned(), "curl".to_owned()],
        ..UserSettings::default()
    };
    [
        (
            CompiledAdmin::compile(&admin).expect("valid admin"),
            CompiledUser::compile(&yolo).expect("valid user"),
        ),
        (
            CompiledAdmin::compile(&AdminControls::default()).expect("valid admin"),
            CompiledUser::compile(&everything).expect("valid user"),
        ),
    ]
});

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let once = mask(text);
    assert_eq!(mask(&once), once, "{text:?} masks again");
    let call = Call::Shell(text.to_owned());
    let masked = mask_call(&call);
    if masked.masked() && masked.redecidable {
        for (admin, user) in POLICIES.iter() {
            let a = decide(admin, user, &call);
            let b = decide(admin, user, &masked.call);
            assert_eq!(
                (a.outcome, a.reason, &a.matched_entry),
                (b.outcome, b.reason, &b.matched_entry),
                "{text:?} decides otherwise masked: {:?}",
                masked.call
            );
        }
    }
}
