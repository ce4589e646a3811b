//! Central approvals, the pure part: a team's approval settings and their checks,
//! when an ASK goes to the team's approvers, who may answer, what a call is keyed by
//! for grants, and whether a grant covers a call at a given time.

use super::{Call, EntryProblem, Rule, split_internal_name};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A request waits this long when the team sets no deadline.
pub const DEFAULT_DEADLINE_SECONDS: u32 = 300;
/// The longest deadline a team may set: hooks and proxies hold a call open that long.
pub const MAX_DEADLINE_SECONDS: u32 = 3600;
/// The longest "for a duration" grant when the team sets none.
pub const DEFAULT_MAX_GRANT_SECONDS: u32 = 86_400;
/// The longest "for a duration" grant a team may allow.
pub const MAX_GRANT_SECONDS: u32 = 30 * 86_400;
/// The most users a team may name as approvers.
pub const MAX_APPROVER_USERS: usize = 100;
/// The longest webhook URL.
pub const MAX_WEBHOOK_URL_LEN: usize = 2048;

/// When an ASK goes to the team's approvers instead of back to the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Never: the client asks its own person (or refuses).
    #[default]
    Off,
    /// Only when the client says nobody there can answer.
    Headless,
    /// Every ASK of a client that can wait.
    Always,
}

/// Who may approve besides the team's admins (who always may).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApproverRole {
    /// The admins, and the users named in `approver_users`.
    #[default]
    Admin,
    /// Every member of the team.
    Member,
}

/// A team's central approvals (`AutoRunControls.approvals`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalSettings {
    pub mode: ApprovalMode,
    /// Seconds a request waits for an answer before the call is refused; 0: 300.
    #[serde(skip_serializing_if = "is_zero")]
    pub deadline_seconds: u32,
    /// Users of the team who may approve, besides its admins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approver_users: Vec<String>,
    pub approver_role: ApproverRole,
    /// Whether a requester may answer their own request.
    pub allow_self_approval: bool,
    /// Where each new request is posted (https, or http to loopback); empty: none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub webhook_url: String,
    /// The longest "for a duration" grant, in seconds; 0: a day.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_grant_seconds: u32,
}

// serde's skip_serializing_if passes a reference
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl ApprovalSettings {
    pub fn deadline(&self) -> Duration {
        Duration::from_secs(u64::from(if self.deadline_seconds == 0 {
            DEFAULT_DEADLINE_SECONDS
        } else {
            self.deadline_seconds
        }))
    }

    pub fn max_grant(&self) -> Duration {
        Duration::from_secs(u64::from(if self.max_grant_seconds == 0 {
            DEFAULT_MAX_GRANT_SECONDS
        } else {
            self.max_grant_seconds
        }))
    }

    /// Whether an ASK goes to the approvers: `interactive` is what the client said
    /// (None: it did not say, and a person is taken to be there).
    pub fn goes_central(&self, interactive: Option<bool>) -> bool {
        match self.mode {
            ApprovalMode::Off => false,
            ApprovalMode::Headless => interactive == Some(false),
            ApprovalMode::Always => true,
        }
    }

    /// Every problem, each naming the field (under `approvals.`), the value and the fix.
    pub fn problems(&self) -> Vec<EntryProblem> {
        let mut problems = Vec::new();
        let mut push = |field: &str, entry: String, rule: Rule, hint: String| {
            problems.push(EntryProblem {
                field: format!("approvals.{field}"),
                entry,
                rule,
                hint,
            });
        };
        if self.deadline_seconds > MAX_DEADLINE_SECONDS {
            push(
                "deadline_seconds",
                self.deadline_seconds.to_string(),
                Rule::Malformed,
                format!(
                    "is longer than {MAX_DEADLINE_SECONDS} seconds (an hour): a call waits that long at most; set a shorter deadline"
                ),
            );
        }
        if self.max_grant_seconds > MAX_GRANT_SECONDS {
            push(
                "max_grant_seconds",
                self.max_grant_seconds.to_string(),
                Rule::Malformed,
                format!("is longer than {MAX_GRANT_SECONDS} seconds (30 days): set a shorter one"),
            );
        }
        if self.approver_users.len() > MAX_APPROVER_USERS {
            push(
                "approver_users",
                format!("{} users", self.approver_users.len()),
                Rule::TooMany,
                format!(
                    "names more than {MAX_APPROVER_USERS} users: give them a role, or name fewer"
                ),
            );
        }
        for (i, user) in self.approver_users.iter().enumerate() {
            if let Err(e) = crate::ids::check_id("user", user) {
                push(
                    &format!("approver_users[{i}]"),
                    user.clone(),
                    Rule::Malformed,
                    e.message,
                );
            }
        }
        if let Err(hint) = check_webhook_url(&self.webhook_url) {
            push(
                "webhook_url",
                self.webhook_url.chars().take(200).collect(),
                Rule::Malformed,
                hint,
            );
        }
        problems
    }
}

/// A webhook URL must be https, or http to a loopback address (a local relay): a
/// request's details never cross a network in clear text.
pub fn check_webhook_url(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    if text.len() > MAX_WEBHOOK_URL_LEN {
        return Err(format!(
            "is longer than {MAX_WEBHOOK_URL_LEN} bytes: use a shorter URL"
        ));
    }
    crate::secure_url::check_secure_url(text, "https://hooks.example.com/toolgate")
}

/// What a grant is bound to: the same call, spelt one way whatever the client wrote,
/// in the same working directory. An MCP call by its resolved `server:tool` (and
/// action), a command line by its exact text, a deletion by its path; then the
/// directory the client said it works in (none is a directory of its own: a call
/// that names none matches only a grant made for one that named none).
pub fn call_key(call: &Call, cwd: Option<&str>) -> String {
    let call = call_spelling(call);
    // the spelling's length first: no line and directory can spell another pair
    match cwd {
        Some(cwd) => format!("{}:{call}\ncwd:{cwd}", call.len()),
        None => format!("{}:{call}\nno cwd", call.len()),
    }
}

/// What a session grant's session is: the session id the client sent, bound to the
/// principal that authenticated the request and the client it said it is. The server
/// sees no session begin or end, so the id alone is the caller's to choose; with the
/// principal, a grant made for one token's session is never another token's.
pub fn session_binding(principal: &str, client: &str, session: &str) -> String {
    format!("{principal}\u{1f}{client}\u{1f}{session}")
}

fn call_spelling(call: &Call) -> String {
    match call {
        Call::Mcp { server, tool } => format!("mcp:{server}:{tool}"),
        Call::McpAction {
            server,
            tool,
            action,
        } => format!("mcp:{server}:{tool}.{action}"),
        Call::McpInternal {
            name,
            fallback_server,
        } => {
            let (server, tool) = split_internal_name(name, fallback_server);
            format!("mcp:{server}:{tool}")
        }
        Call::Shell(line) => format!("shell:{line}"),
        Call::DeleteFile(path) => format!("delete_file:{path}"),
    }
}

/// One line for people saying what the call does, at most `max` characters.
pub fn call_summary(call: &Call, max: usize) -> String {
    let text = match call {
        Call::Mcp { server, tool } => format!("{server}:{tool}"),
        Call::McpAction {
            server,
            tool,
            action,
        } => format!("{server}:{tool} (action {action})"),
        Call::McpInternal {
            name,
            fallback_server,
        } => {
            let (server, tool) = split_internal_name(name, fallback_server);
            format!("{server}:{tool}")
        }
        Call::Shell(line) => format!("shell: {line}"),
        Call::DeleteFile(path) => format!("delete: {path}"),
    };
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// A standing "yes" an approver gave beyond one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub user_id: String,
    /// Set for a session grant: only calls of this session.
    pub session_id: Option<String>,
    pub call_key: String,
    /// Unix milliseconds; the grant covers calls strictly before it.
    pub expires_at_ms: i64,
}

impl Grant {
    /// Whether the grant lets `call_key` by `user` in `session` run at `now_ms`. A
    /// grant ends exactly at its expiry: a call at that millisecond asks again.
    pub fn covers(&self, user: &str, session: Option<&str>, call_key: &str, now_ms: i64) -> bool {
        self.user_id == user
            && self.call_key == call_key
            && now_ms < self.expires_at_ms
            && match &self.session_id {
                Some(bound) => session == Some(bound.as_str()),
                None => true,
            }
    }
}

/// Who may answer a request, given the answering principal's standing in the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answerer<'a> {
    /// An admin of the team (or an operator).
    pub admin: bool,
    /// A member of the team acting as this user; None for services.
    pub user: Option<&'a str>,
}

/// Why an answerer may not answer a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefusal {
    #[error(
        "you are not an approver of this team: its admins approve, and the users or role its approval settings name"
    )]
    NotApprover,
    #[error(
        "you made this request: another approver must answer it (the team does not allow requesters to approve their own)"
    )]
    OwnRequest,
}

/// Whether `who` may answer a request made for `requester` under `settings`.
pub fn may_answer(
    settings: &ApprovalSettings,
    who: Answerer<'_>,
    requester: &str,
) -> Result<(), AnswerRefusal> {
    let approver = who.admin
        || who.user.is_some_and(|u| {
            settings.approver_role == ApproverRole::Member
                || settings.approver_users.iter().any(|a| a == u)
        });
    if !approver {
        return Err(AnswerRefusal::NotApprover);
    }
    if who.user == Some(requester) && !settings.allow_self_approval {
        return Err(AnswerRefusal::OwnRequest);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_send_an_ask_central_only_when_they_say() {
        let s = |mode| ApprovalSettings {
            mode,
            ..Default::default()
        };
        for interactive in [None, Some(true), Some(false)] {
            assert!(!s(ApprovalMode::Off).goes_central(interactive));
            assert!(s(ApprovalMode::Always).goes_central(interactive));
        }
        assert!(s(ApprovalMode::Headless).goes_central(Some(false)));
        assert!(!s(ApprovalMode::Headless).goes_central(Some(true)));
        // a client that does not say is taken to have a person there
        assert!(!s(ApprovalMode::Headless).goes_central(None));
    }

    #[test]
    fn webhook_urls_are_https_or_loopback_http() {
        for ok in [
            "",
            "https://hooks.slack.com/services/T/B/x",
            "http://127.0.0.1:9000/hook",
            "http://[::1]:80/",
            "http://localhost:8080/x",
        ] {
            assert_eq!(check_webhook_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://example.com/hook",
            "http://10.0.0.1/",
            "ftp://example.com/",
            "file:///etc/passwd",
            "not a url",
            "https://user:pw@example.com/",
            "http://127.0.0.1.example.com/",
            "javascript:alert(1)",
        ] {
            assert!(check_webhook_url(bad).is_err(), "{bad}");
        }
        assert!(check_webhook_url(&format!("https://e.com/{}", "a".repeat(3000))).is_err());
    }

    #[test]
    fn bounds_are_reported_with_their_field() {
        let s = ApprovalSettings {
            deadline_seconds: MAX_DEADLINE_SECONDS + 1,
            max_grant_seconds: MAX_GRANT_SECONDS + 1,
            approver_users: vec!["ok".into(), "bad\u{200b}".into()],
            webhook_url: "http://example.com".into(),
            ..Default::default()
        };
        let fields: Vec<String> = s.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "approvals.deadline_seconds",
                "approvals.max_grant_seconds",
                "approvals.approver_users[1]",
                "approvals.webhook_url"
            ]
        );
        assert_eq!(
            ApprovalSettings::default().deadline(),
            Duration::from_secs(300)
        );
    }

    #[test]
    fn grants_end_exactly_and_stay_in_their_session() {
        let g = Grant {
            user_id: "alice".into(),
            session_id: Some("s1".into()),
            call_key: "shell:make".into(),
            expires_at_ms: 1_000,
        };
        assert!(g.covers("alice", Some("s1"), "shell:make", 999));
        assert!(!g.covers("alice", Some("s1"), "shell:make", 1_000));
        assert!(!g.covers("alice", Some("s2"), "shell:make", 0));
        assert!(!g.covers("alice", None, "shell:make", 0));
        assert!(!g.covers("bob", Some("s1"), "shell:make", 0));
        assert!(!g.covers("alice", Some("s1"), "shell:make x", 0));
        let any_session = Grant {
            session_id: None,
            ..g
        };
        assert!(any_session.covers("alice", None, "shell:make", 0));
        assert!(any_session.covers("alice", Some("s9"), "shell:make", 0));
    }

    #[test]
    fn internal_names_key_as_their_server_and_tool() {
        let a = call_key(
            &Call::McpInternal {
                name: "mcp__github__create_issue".into(),
                fallback_server: "x".into(),
            },
            None,
        );
        let b = call_key(
            &Call::Mcp {
                server: "github".into(),
                tool: "create_issue".into(),
            },
            None,
        );
        assert_eq!(a, b);
        assert_ne!(
            call_key(&Call::Shell("a".into()), None),
            call_key(&Call::DeleteFile("a".into()), None)
        );
    }

    #[test]
    fn keys_hold_the_directory_and_sessions_the_principal() {
        let build = Call::Shell("python3 build.py".into());
        let a = call_key(&build, Some("/home/u/projA"));
        assert_ne!(a, call_key(&build, Some("/home/u/projB")));
        assert_ne!(a, call_key(&build, None));
        assert_ne!(a, call_key(&build, Some("/home/u/projA/")));
        // a line cannot spell another directory into its key
        let sneaky = Call::Shell("python3 build.py\ncwd:/home/u/projA".into());
        assert_ne!(call_key(&sneaky, None), a);
        let split = Call::Shell("python3".into());
        assert_ne!(call_key(&split, Some(" build.py\ncwd:/home/u/projA")), a);
        assert_ne!(
            session_binding("alice", "claude-code", "s1"),
            session_binding("alice-ci", "claude-code", "s1")
        );
        assert_ne!(
            session_binding("alice", "codex", "s1"),
            session_binding("alice", "claude-code", "s1")
        );
    }

    #[test]
    fn who_may_answer() {
        let admins = ApprovalSettings::default();
        let admin = Answerer {
            admin: true,
            user: Some("root"),
        };
        let bob = Answerer {
            admin: false,
            user: Some("bob"),
        };
        let service = Answerer {
            admin: false,
            user: None,
        };
        assert_eq!(may_answer(&admins, admin, "alice"), Ok(()));
        assert_eq!(
            may_answer(&admins, bob, "alice"),
            Err(AnswerRefusal::NotApprover)
        );
        assert_eq!(
            may_answer(&admins, service, "alice"),
            Err(AnswerRefusal::NotApprover)
        );
        let named = ApprovalSettings {
            approver_users: vec!["bob".into()],
            ..Default::default()
        };
        assert_eq!(may_answer(&named, bob, "alice"), Ok(()));
        assert_eq!(
            may_answer(&named, bob, "bob"),
            Err(AnswerRefusal::OwnRequest)
        );
        let members = ApprovalSettings {
            approver_role: ApproverRole::Member,
            allow_self_approval: true,
            ..Default::default()
        };
        assert_eq!(may_answer(&members, bob, "bob"), Ok(()));
        assert_eq!(
            may_answer(&admins, admin, "root"),
            Err(AnswerRefusal::OwnRequest)
        );
    }

    #[test]
    fn summaries_are_one_bounded_line() {
        let s = call_summary(&Call::Shell("echo a\nrm -rf /".into()), 12);
        assert_eq!(s, "shell: echo…");
        assert!(!s.contains('\n'));
    }
}
