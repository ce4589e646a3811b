//! Tampering reports: a managed file `toolgate sync` keeps on a machine was found
//! changed or removed by someone else. Each report is checked field by field, bounded
//! per principal (a member cannot flood the audit trail) and written to the trail as a
//! `tampering_detected` record.

use super::{Service, ServiceError, check_id, own_subject};
use crate::auth::{Action, Principal, authorize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// The audit kind of a tampering report.
pub const AUDIT_TAMPERING_DETECTED: &str = "tampering_detected";

/// Reports a principal may have recorded at once; refilled at this many a minute.
pub const TAMPER_REPORTS_PER_MINUTE: u32 = 10;
/// Principals whose report counts are held; past it, idle ones are forgotten first.
const MAX_TRACKED: usize = 10_000;
const MAX_PATH_BYTES: usize = 1024;
const MAX_HOST_BYTES: usize = 253;

/// The managed file a report names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagedFile {
    CodexRequirements,
    GeminiPolicy,
    CursorHooks,
    GeminiSettings,
}

impl ManagedFile {
    /// Its name in the audit record.
    pub fn name(self) -> &'static str {
        match self {
            ManagedFile::CodexRequirements => "codex_requirements",
            ManagedFile::GeminiPolicy => "gemini_policy",
            ManagedFile::CursorHooks => "cursor_hooks",
            ManagedFile::GeminiSettings => "gemini_settings",
        }
    }
}

/// What a machine found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TamperReport {
    pub file: ManagedFile,
    pub path: String,
    pub host: String,
    /// Hex SHA-256 of what was found; empty when the file was gone.
    pub found_sha256: String,
    pub restored: bool,
}

/// Checks every field: a field past its rule is refused, naming the rule.
fn check_report(r: &TamperReport) -> Result<(), ServiceError> {
    let path = &r.path;
    if path.is_empty() || path.len() > MAX_PATH_BYTES {
        return Err(ServiceError::invalid(
            "path",
            format!(
                "{} bytes: give the file's absolute path, 1 to {MAX_PATH_BYTES} bytes",
                path.len()
            ),
        ));
    }
    if path.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            "path",
            "holds a control character: give the path as the file system names it",
        ));
    }
    let bytes = path.as_bytes();
    let windows = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    if !path.starts_with('/') && !path.starts_with("\\\\") && !windows {
        return Err(ServiceError::invalid(
            "path",
            format!("{path:?} is not absolute: give the file's absolute path"),
        ));
    }
    if r.host.len() > MAX_HOST_BYTES
        || !r
            .host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(ServiceError::invalid(
            "host",
            format!(
                "{:?} is not a host name: at most {MAX_HOST_BYTES} bytes of letters, digits, `.`, `-` and `_` (or empty)",
                r.host.chars().take(64).collect::<String>()
            ),
        ));
    }
    let sha = &r.found_sha256;
    if !sha.is_empty()
        && (sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    {
        return Err(ServiceError::invalid(
            "found_sha256",
            "not a SHA-256: give 64 lowercase hex digits, or nothing when the file was gone",
        ));
    }
    Ok(())
}

/// Each principal's reports, a token bucket of [`TAMPER_REPORTS_PER_MINUTE`], and
/// what it had refused since its last recorded report. Per replica.
#[derive(Debug, Default)]
pub(super) struct TamperLimits {
    principals: Mutex<HashMap<(String, String), Allowance>>,
}

#[derive(Debug, Clone, Copy)]
struct Allowance {
    tokens: f64,
    at: Instant,
    suppressed: u64,
}

impl Allowance {
    fn refilled(mut self, now: Instant) -> Self {
        let per_minute = f64::from(TAMPER_REPORTS_PER_MINUTE);
        let minutes = now.saturating_duration_since(self.at).as_secs_f64() / 60.0;
        self.tokens = (self.tokens + minutes * per_minute).min(per_minute);
        self.at = now;
        self
    }

    fn idle(self) -> bool {
        self.suppressed == 0 && self.tokens >= f64::from(TAMPER_REPORTS_PER_MINUTE)
    }
}

impl TamperLimits {
    /// Whether `who` may have a report recorded now, and if so how many of its
    /// reports were refused since its last one. A refused report is counted.
    pub(super) fn admit(&self, team: &str, who: &str, now: Instant) -> Option<u64> {
        let mut map = self.principals.lock().unwrap_or_else(|e| e.into_inner());
        let key = (team.to_owned(), who.to_owned());
        if !map.contains_key(&key) && map.len() >= MAX_TRACKED {
            map.retain(|_, a| !a.refilled(now).idle());
        }
        if !map.contains_key(&key) && map.len() >= MAX_TRACKED {
            // every slot holds a principal past its bound: refuse rather than forget one
            return None;
        }
        let allowance = map.entry(key).or_insert(Allowance {
            tokens: f64::from(TAMPER_REPORTS_PER_MINUTE),
            at: now,
            suppressed: 0,
        });
        *allowance = allowance.refilled(now);
        if allowance.tokens >= 1.0 {
            allowance.tokens -= 1.0;
            Some(std::mem::take(&mut allowance.suppressed))
        } else {
            allowance.suppressed += 1;
            None
        }
    }
}

impl Service {
    /// Records a machine's tampering report for `team`'s `user` (a member's own);
    /// `false` when the caller is past its bound (the report is counted instead).
    pub async fn report_tampering(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        report: &TamperReport,
    ) -> Result<bool, ServiceError> {
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::Evaluate(user))?;
        check_report(report)?;
        let Some(suppressed) = self.tampering.admit(team, &p.name, Instant::now()) else {
            return Ok(false);
        };
        let detail = serde_json::json!({
            "user": user,
            "file": report.file.name(),
            "path": report.path,
            "host": report.host,
            "found_sha256": Some(&report.found_sha256).filter(|s| !s.is_empty()),
            "restored": report.restored,
            "reports_suppressed": suppressed,
        });
        tracing::warn!(team, user, actor = %p.name, file = report.file.name(),
            path = %report.path, host = %report.host, "a managed file was tampered with");
        // through the writer, so the OTLP export sees it too; journaled, as it is
        // bounded per principal above and must not be shed
        self.audit
            .record_journaled(crate::store::NewAuditEvent {
                team_id: team.to_owned(),
                revision: 0,
                actor: p.name.clone(),
                kind: AUDIT_TAMPERING_DETECTED.to_owned(),
                detail,
            })
            .await;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report(path: &str, host: &str, sha: &str) -> TamperReport {
        TamperReport {
            file: ManagedFile::CodexRequirements,
            path: path.into(),
            host: host.into(),
            found_sha256: sha.into(),
            restored: true,
        }
    }

    #[test]
    fn hostile_reports_are_refused_naming_the_field() {
        let sha = "a".repeat(64);
        let long_host = "h".repeat(254);
        let long_path = format!("/{}", "p".repeat(1024));
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            ("/etc/codex/requirements.toml", "box-1.example", &sha, None),
            ("/etc/codex/requirements.toml", "", "", None),
            ("C:\\ProgramData\\codex\\requirements.toml", "win", "", None),
            ("\\\\share\\codex\\requirements.toml", "win", "", None),
            ("", "h", "", Some("path")),
            ("etc/codex/requirements.toml", "h", "", Some("path")),
            ("../../etc/passwd", "h", "", Some("path")),
            (&long_path, "h", "", Some("path")),
            ("/etc/x\u{1b}[2J", "h", "", Some("path")),
            ("/etc/x\nforged line", "h", "", Some("path")),
            ("/etc/x", "host name", "", Some("host")),
            ("/etc/x", "h\u{202e}", "", Some("host")),
            ("/etc/x", &long_host, "", Some("host")),
            ("/etc/x", "h", "abc", Some("found_sha256")),
            ("/etc/x", "h", &"A".repeat(64), Some("found_sha256")),
            ("/etc/x", "h", &"g".repeat(64), Some("found_sha256")),
        ];
        for (path, host, sha, want) in cases {
            let got = check_report(&report(path, host, sha));
            match (want, got) {
                (None, Ok(())) => {}
                (Some(field), Err(ServiceError::InvalidArgument { field: f, .. })) => {
                    assert_eq!(&f, field, "{path:?} {host:?} {sha:?}");
                }
                (want, got) => panic!("{path:?} {host:?} {sha:?}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn a_flood_is_bounded_and_counted_into_the_next_report() {
        let limits = TamperLimits::default();
        let t0 = Instant::now();
        for _ in 0..TAMPER_REPORTS_PER_MINUTE {
            assert_eq!(limits.admit("acme", "alice", t0), Some(0));
        }
        for _ in 0..500 {
            assert_eq!(limits.admit("acme", "alice", t0), None);
        }
        // another principal has its own allowance
        assert_eq!(limits.admit("acme", "bob", t0), Some(0));
        // one report's worth of refill later, the next carries the count
        let later = t0 + Duration::from_secs(60 / u64::from(TAMPER_REPORTS_PER_MINUTE));
        assert_eq!(limits.admit("acme", "alice", later), Some(500));
        assert_eq!(limits.admit("acme", "alice", later), None);
    }

    #[test]
    fn the_principals_held_are_bounded() {
        let limits = TamperLimits::default();
        let t0 = Instant::now();
        for i in 0..MAX_TRACKED {
            assert_eq!(limits.admit("acme", &format!("p{i}"), t0), Some(0));
        }
        // none is idle yet: a new one is refused rather than another forgotten
        assert_eq!(limits.admit("acme", "new", t0), None);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(limits.admit("acme", "new", later), Some(0));
        assert!(limits.principals.lock().unwrap().len() <= MAX_TRACKED);
    }
}
