//! `toolgate hook <client>`: an agent client's pre-tool hook payload in, toolgate's
//! decision out in the client's own words. Pure: reading stdin, asking the server and
//! writing the answer are the binary's; everything here is a function of its inputs.
//!
//! Fail closed: the clients run the tool when a hook crashes or prints garbage, so
//! every failure becomes a [`Reply`] that blocks in the way the client honours.

pub mod claude;
pub mod codex;
pub mod cursor;
pub mod gemini;
pub mod install;
mod mapping;
pub mod powershell;
mod writes;

pub use writes::written_paths;

pub use cursor::{McpDirectory, Trust};
pub use mapping::{CLAUDE, CODEX, GEMINI, ToolTable, shell_line, tool_call};

use crate::policy::roles::{AgentSpec, CallArgs};
use crate::policy::{Call, Outcome};

/// The most a payload may weigh; a larger one is refused (and blocks).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// The agent clients toolgate answers.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Client {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
}

impl Client {
    pub const ALL: &'static [Client] = <Self as strum::VariantArray>::VARIANTS;

    /// The name on the command line, e.g. `claude-code`.
    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn from_name(name: &str) -> Option<Self> {
        name.parse().ok()
    }

    /// How ASK is answered unless configured: where the client cannot ask (Codex
    /// honours only deny), the safe way.
    pub fn default_ask(self) -> AskAs {
        match self {
            Self::Codex => AskAs::Deny,
            Self::ClaudeCode | Self::Cursor | Self::Gemini => AskAs::Ask,
        }
    }
}

/// How an ASK decision is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskAs {
    /// The client asks its user (where it can; Codex cannot, so this is deny there).
    Ask,
    /// Blocked, with "needs approval" in the reason.
    Deny,
    /// No opinion: the client's own rules decide.
    Defer,
}

/// How the hook answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// ALLOW is answered with no opinion, so the client's own rules still apply.
    pub no_grant: bool,
    /// None: the client's [`Client::default_ask`].
    pub ask: Option<AskAs>,
    /// A failure lets the call run (with a warning) instead of blocking it.
    pub fail_open: bool,
}

/// A payload read: the call to decide and, when the hook had to guess, why.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub call: Call,
    /// Said with the decision (e.g. an MCP server the hook could not name).
    pub note: Option<String>,
    /// Other readings of the same call (a Cursor server two configurations name
    /// differently): each is decided too, and the strictest answer stands.
    pub also: Vec<Call>,
    /// The agent making the call, where the client says (a Claude Code subagent);
    /// unnamed otherwise, and then the roles do not decide.
    pub agent: AgentSpec,
    /// What the call touches: its working directory and arguments.
    pub args: CallArgs,
    /// The client's session (`session_id`; Cursor's `conversation_id`), which a
    /// central approval "for the session" is bound to.
    pub session: Option<String>,
    /// The client's own id for the call (`tool_use_id`), sent with the call so the
    /// client's telemetry about it joins toolgate's record; `None` when the payload
    /// has none, or one that is not printable ASCII of at most 256 bytes.
    pub tool_use_id: Option<String>,
    /// Why the call never auto-runs whatever the server answers (an agent's own write
    /// tool writing a protected place): [`held`] turns an ALLOW into ASK saying so.
    pub hold: Option<String>,
}

impl Parsed {
    fn new(call: Call, note: Option<String>) -> Self {
        Self {
            call,
            note,
            also: Vec::new(),
            agent: AgentSpec::default(),
            args: CallArgs::default(),
            session: None,
            tool_use_id: None,
            hold: None,
        }
    }
}

/// The server's verdict, held where the hook, which sees the call's own files,
/// knows it must not auto-run: an ALLOW becomes ASK naming why.
pub fn held(parsed: &Parsed, verdict: Verdict) -> Verdict {
    match (&parsed.hold, verdict.outcome) {
        (Some(why), Outcome::Allow) => Verdict {
            outcome: Outcome::Ask,
            reason: "COMMAND_BLOCKED".to_owned(),
            message: format!(
                "{why}, where no write auto-runs (the server alone would allow it: {})",
                verdict.message.trim()
            ),
            revision: verdict.revision,
        },
        _ => verdict,
    }
}

/// Why a payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("the hook input is larger than {MAX_INPUT_BYTES} bytes")]
    TooLarge,
    #[error("the hook input is not JSON: {0}")]
    NotJson(String),
    #[error("the hook input has no usable {field}: {detail}")]
    Field { field: &'static str, detail: String },
}

impl HookError {
    fn field(field: &'static str, detail: impl Into<String>) -> Self {
        Self::Field {
            field,
            detail: detail.into(),
        }
    }
}

/// The server's decision, as the hook passes it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub outcome: Outcome,
    /// The stable reason name, e.g. `BLOCKED_BY_ADMIN`.
    pub reason: String,
    /// The server's sentence.
    pub message: String,
    pub revision: u64,
}

impl Verdict {
    /// One line for both the model and the user: outcome, reason, the server's
    /// sentence and the revision it saw.
    pub fn line(&self, note: Option<&str>) -> String {
        let outcome = self.outcome.as_str();
        let mut line = format!(
            "toolgate {outcome} ({}): {} [policy revision {}]",
            self.reason,
            self.message.trim(),
            self.revision
        );
        if let Some(note) = note {
            line.push_str(" (");
            line.push_str(note);
            line.push(')');
        }
        one_line(&line)
    }
}

/// What the hook prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub exit: i32,
}

/// The client-neutral answer, before it is put in the client's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Allow(String),
    Ask(String),
    Deny(String),
    /// The client's own rules decide.
    NoOpinion,
}

/// Reads a payload of `client`. `mcp` names Cursor's MCP servers (it sends only their
/// URL or command).
pub fn parse(client: Client, input: &[u8], mcp: &McpDirectory) -> Result<Parsed, HookError> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(HookError::TooLarge);
    }
    let value: serde_json::Value =
        serde_json::from_slice(input).map_err(|e| HookError::NotJson(e.to_string()))?;
    if !value.is_object() {
        return Err(HookError::NotJson("expected an object".into()));
    }
    let mut parsed = match client {
        Client::ClaudeCode => claude::parse(&value),
        Client::Codex => codex::parse(&value),
        Client::Cursor => cursor::parse(&value, mcp),
        Client::Gemini => gemini::parse(&value),
    }?;
    let key = if client == Client::Cursor {
        "conversation_id"
    } else {
        "session_id"
    };
    parsed.session = value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 256)
        .map(str::to_owned);
    // only an annotation of the record: one the server would refuse is left out
    // rather than failing the call
    parsed.tool_use_id = value
        .get("tool_use_id")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 256 && s.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned);
    Ok(parsed)
}

/// What to answer for `verdict` under `options`.
pub fn answer(client: Client, verdict: &Verdict, note: Option<&str>, options: &Options) -> Answer {
    let line = verdict.line(note);
    match verdict.outcome {
        Outcome::Allow if options.no_grant => Answer::NoOpinion,
        Outcome::Allow => Answer::Allow(line),
        Outcome::Ask => match options.ask.unwrap_or(client.default_ask()) {
            AskAs::Ask => Answer::Ask(line),
            AskAs::Deny => Answer::Deny(format!("needs approval: {line}")),
            AskAs::Defer => Answer::NoOpinion,
        },
        Outcome::Deny => Answer::Deny(line),
    }
}

/// The reply for a decision.
pub fn reply(client: Client, verdict: &Verdict, note: Option<&str>, options: &Options) -> Reply {
    let answer = answer(client, verdict, note, options);
    render(client, &answer)
}

/// The reply when no decision could be made: blocks (or, with `fail_open`, lets the
/// call run), and says why.
pub fn failure(client: Client, why: &str, options: &Options) -> Reply {
    let why = one_line(why);
    if options.fail_open {
        let mut r = render(client, &Answer::NoOpinion);
        r.stderr = format!("toolgate: no decision ({why}); --fail-open lets the call run\n");
        return r;
    }
    let reason = format!("toolgate could not decide, so the call is blocked: {why}");
    let stdout = match client {
        // exit 2 is what they honour, with stderr as the reason; stdout is not read
        Client::ClaudeCode | Client::Codex => String::new(),
        Client::Cursor | Client::Gemini => render(client, &Answer::Deny(reason.clone())).stdout,
    };
    Reply {
        stdout,
        stderr: format!("{reason}\n"),
        exit: 2,
    }
}

/// Puts an answer in the client's words.
pub fn render(client: Client, answer: &Answer) -> Reply {
    let stdout = match client {
        Client::ClaudeCode => claude::render(answer),
        Client::Codex => codex::render(answer),
        Client::Cursor => cursor::render(answer),
        Client::Gemini => gemini::render(answer),
    };
    Reply {
        stdout: stdout.map(|v| format!("{v}\n")).unwrap_or_default(),
        stderr: String::new(),
        exit: 0,
    }
}

/// Collapses line breaks and control characters, so a reason is one line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's id for the call is read from every client's payload that has one;
    /// one the server would refuse is left out, and the call is still decided.
    #[test]
    fn a_payloads_tool_use_id_is_kept_when_printable_and_short() {
        let payload = |id: &str| {
            serde_json::json!({"session_id": "s", "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": id})
            .to_string()
        };
        let read = |client, id: &str| {
            parse(client, payload(id).as_bytes(), &McpDirectory::default())
                .unwrap()
                .tool_use_id
        };
        assert_eq!(
            read(Client::ClaudeCode, "toolu_01A"),
            Some("toolu_01A".into())
        );
        assert_eq!(read(Client::Codex, "call_9"), Some("call_9".into()));
        for bad in ["", "a b", "tab\there", "\u{1b}[2J", "é", &"x".repeat(257)] {
            assert_eq!(read(Client::ClaudeCode, bad), None, "{bad:?}");
        }
    }
}
