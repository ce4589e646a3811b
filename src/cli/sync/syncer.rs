//! The agent's loop: the policy followed (`WatchPolicy`, resumed with backoff), the
//! files written when a policy changes them, checked for tampering on a tick (a file
//! someone else changed is restored), and tampering reported to the server, a bounded
//! few held while it cannot be reached. Each event is one JSON line on stdout.

use super::files::{SyncedFile, Target, merged, read, render, same_json, sha256, write};
use crate::cli::agent::with_hint;
use crate::cli::hook_config::Reconciled;
use crate::grpc::client::{Client, ClientConfig, ClientError, PolicyNotice, RemotePolicy};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate_core::backoff::Backoff;

/// Tampering reports held while the server cannot be reached; past it the oldest go
/// (each still in the local log).
const MAX_PENDING_REPORTS: usize = 32;

/// The agent's state: what it keeps, for whom, and the reports not yet sent.
pub(super) struct Syncer {
    settings: Reconciled,
    targets: Vec<Target>,
    /// What each file was last written as (or found to be): the content to restore.
    kept: BTreeMap<PathBuf, Vec<u8>>,
    timeout: Duration,
    /// Tampering not yet reported to the server, oldest first.
    pending: VecDeque<crate::proto::v1::ReportTamperingRequest>,
    host: String,
    /// The team and user the files are kept for, once known.
    subject: Option<(String, String)>,
}

impl Syncer {
    /// Keeps `targets` for the settings' team and user, each read within `timeout`.
    pub(super) fn new(settings: Reconciled, targets: Vec<Target>, timeout: Duration) -> Self {
        Self {
            settings,
            targets,
            kept: BTreeMap::new(),
            timeout,
            pending: VecDeque::new(),
            host: host_name(),
            subject: None,
        }
    }

    pub(super) async fn run(&mut self, check_every: Duration, once: bool) -> i32 {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
        let mut check = tokio::time::interval(check_every);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let ended = self.follow(&mut check, once).await;
            match ended {
                Ok(()) => return 0,
                Err(e) => {
                    // a refusal is retried too: a revoked token may be replaced
                    report(&serde_json::json!({"event": "unreachable", "detail": e}));
                    if once {
                        eprintln!("error: {}", crate::cli::for_terminal(&e, true));
                        return 1;
                    }
                }
            }
            // the last files stay, still guarded, while the server is away
            let wait = tokio::time::sleep(backoff.next_wait());
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    () = &mut wait => break,
                    _ = check.tick() => self.guard(),
                }
            }
        }
    }

    /// Follows the watch stream until it ends (an error to report) or, with `once`,
    /// until the files are written.
    async fn follow(
        &mut self,
        check: &mut tokio::time::Interval,
        once: bool,
    ) -> Result<(), String> {
        let conn = self.settings.conn.clone();
        let address = conn.server.clone();
        let hinted = |e: ClientError| with_hint(&e, &address);
        let mut conn = conn;
        crate::cli::login_refresh::refresh_if_needed(&mut conn).await?;
        let client = Client::connect(ClientConfig {
            server: conn.server,
            token: conn.token,
            token_file: conn.token_file,
            tls: conn.tls,
            team: self.settings.team.clone(),
            user: self.settings.user.clone(),
            deadline: self.timeout,
            client_kind: String::new(),
            bearer: None,
        })
        .await
        .map_err(hinted)?;
        // the stream needs the team and user named: a token's own are asked for once
        let (mut team, mut user) = (self.settings.team.clone(), self.settings.user.clone());
        if team.is_empty() || user.is_empty() {
            let policy = client
                .policy_service()
                .get_effective_policy(crate::proto::v1::GetEffectivePolicyRequest {
                    team_id: team.clone(),
                    user_id: user.clone(),
                })
                .await
                .map_err(|s| {
                    let message = s.message();
                    if s.code() == tonic::Code::InvalidArgument
                        && (message.starts_with("user_id") || message.starts_with("team_id"))
                    {
                        // a service's token speaks for a team, not for a user
                        return format!(
                            "the token names no {}: give --team and --user",
                            if message.starts_with("user_id") {
                                "user"
                            } else {
                                "team"
                            }
                        );
                    }
                    hinted(ClientError::Refused {
                        code: s.code(),
                        message: message.to_owned(),
                    })
                })?
                .into_inner();
            let named = policy.policy.and_then(|p| p.user).unwrap_or_default();
            if team.is_empty() {
                team = named.team_id;
            }
            if user.is_empty() {
                user = named.user_id;
            }
            if team.is_empty() || user.is_empty() {
                return Err(
                    "the policy's team and user are not known from the token: give --team and --user"
                        .into(),
                );
            }
        }
        self.subject = Some((team.clone(), user.clone()));
        let mut watch = client
            .watch_policy(&team, &user, None)
            .await
            .map_err(hinted)?;
        loop {
            tokio::select! {
                notice = watch.next() => match notice.map_err(hinted)? {
                    Some(PolicyNotice::Changed { .. }) => {
                        let policy = client.effective_policy().await.map_err(hinted)?;
                        self.apply(&policy);
                        self.report_pending(&client).await;
                        if once {
                            return Ok(());
                        }
                    }
                    Some(PolicyNotice::Heartbeat) => {}
                    None => return Err(format!("toolgate server {address} ended the watch stream")),
                },
                _ = check.tick() => {
                    self.guard();
                    self.report_pending(&client).await;
                }
            }
        }
    }

    /// Writes every file whose content `policy` changes.
    fn apply(&mut self, policy: &RemotePolicy) {
        let mut tampered = Vec::new();
        for target in &self.targets {
            if target.file.shared() {
                continue;
            }
            let (text, warnings) = match render(target, policy) {
                Ok(r) => r,
                Err(e) => {
                    // the file stays as it was: a policy that does not render is not guessed at
                    report(
                        &serde_json::json!({"event": "failed", "client": target.file.name(),
                        "path": target.path, "revision": policy.revision, "detail": e}),
                    );
                    continue;
                }
            };
            let found = read(&target.path);
            let event = match (&found, self.kept.get(&target.path)) {
                (Some(now), _) if now.as_slice() == text.as_bytes() => None,
                (now, Some(kept)) if now.as_deref() != Some(kept.as_slice()) => Some("restored"),
                _ => Some("wrote"),
            };
            let path = target.path.clone();
            let name = target.file.name();
            if let Some(event) = event {
                let outcome = write(&path, text.as_bytes());
                if event == "restored" {
                    tampered.push((target.file, path.clone(), found.clone(), outcome.is_ok()));
                }
                match outcome {
                    Ok(()) => report(&serde_json::json!({"event": event, "client": name,
                        "path": path, "revision": policy.revision, "tampering": event == "restored",
                        "found_sha256": found.as_deref().map(sha256), "warnings": warnings})),
                    Err(e) => {
                        report(&serde_json::json!({"event": "failed", "client": name,
                            "path": path, "revision": policy.revision, "detail": e}));
                        continue;
                    }
                }
            }
            self.kept.insert(path, text.into_bytes());
        }
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
        self.keep_shared(Some(policy.revision));
    }

    /// Puts the toolgate hook back into each shared file that lacks it (a first
    /// write, or tampering once written), keeping the file's other keys as found; a
    /// file that no longer reads is restored as last kept.
    fn keep_shared(&mut self, revision: Option<u64>) {
        let mut tampered = Vec::new();
        for target in self.targets.iter().filter(|t| t.file.shared()) {
            let kept = self.kept.get(&target.path);
            // the guard (no revision) looks only at files a policy was applied to
            if kept.is_none() && revision.is_none() {
                continue;
            }
            let found = read(&target.path);
            if kept.is_some() && found.as_deref() == kept.map(Vec::as_slice) {
                continue;
            }
            let text = match (merged(target, found.as_deref()), kept) {
                (Ok(text), _) => text.into_bytes(),
                (Err(_), Some(kept)) => kept.clone(),
                (Err(e), None) => {
                    // someone else's file toolgate never wrote: not overwritten, and
                    // reported once (until it changes)
                    report(&serde_json::json!({"event": "failed",
                        "client": target.file.name(), "path": target.path,
                        "detail": format!("{e}: make it a JSON object (no comments) for the toolgate hook to be added")}));
                    if let Some(found) = found {
                        self.kept.insert(target.path.clone(), found);
                    }
                    continue;
                }
            };
            if let Some(found) = found.as_deref().filter(|f| same_json(f, &text)) {
                // current: someone else's keys (or spacing) changed, the hook is as it was
                self.kept.insert(target.path.clone(), found.to_vec());
                continue;
            }
            let tampering = kept.is_some();
            let outcome = write(&target.path, &text);
            let event = match (&outcome, tampering) {
                (Err(_), _) => "failed",
                (Ok(()), true) => "restored",
                (Ok(()), false) => "wrote",
            };
            if tampering {
                tampered.push((
                    target.file,
                    target.path.clone(),
                    found.clone(),
                    outcome.is_ok(),
                ));
            }
            report(
                &serde_json::json!({"event": event, "client": target.file.name(),
                "path": target.path, "revision": revision, "tampering": tampering,
                "found_sha256": found.as_deref().map(sha256), "detail": outcome.as_ref().err()}),
            );
            if outcome.is_ok() {
                self.kept.insert(target.path.clone(), text);
            }
        }
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
    }

    /// Restores every kept file someone else changed or removed.
    fn guard(&mut self) {
        self.keep_shared(None);
        let mut tampered = Vec::new();
        for target in self.targets.iter().filter(|t| !t.file.shared()) {
            let Some(kept) = self.kept.get(&target.path) else {
                continue;
            };
            let found = read(&target.path);
            if found.as_deref() == Some(kept.as_slice()) {
                continue;
            }
            let outcome = write(&target.path, kept);
            let event = if outcome.is_ok() {
                "restored"
            } else {
                "failed"
            };
            tampered.push((
                target.file,
                target.path.clone(),
                found.clone(),
                outcome.is_ok(),
            ));
            report(&serde_json::json!({"event": event,
                "client": target.file.name(), "path": target.path, "tampering": true,
                "found_sha256": found.as_deref().map(sha256), "detail": outcome.err()}));
        }
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
    }

    /// Queues a tampering report for the server (the oldest dropped past the bound).
    fn note_tampering(
        &mut self,
        file: SyncedFile,
        path: &Path,
        found: Option<&[u8]>,
        restored: bool,
    ) {
        if self.pending.len() >= MAX_PENDING_REPORTS
            && let Some(lost) = self.pending.pop_front()
        {
            report(
                &serde_json::json!({"event": "report_dropped", "path": lost.path,
                "detail": format!("more than {MAX_PENDING_REPORTS} tampering reports wait for the server")}),
            );
        }
        // the path as the server reads it: absolute, so a relative --root is resolved
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.pending
            .push_back(crate::proto::v1::ReportTamperingRequest {
                team_id: String::new(),
                user_id: String::new(),
                file: file.managed_file() as i32,
                path: path.display().to_string(),
                host: self.host.clone(),
                found_sha256: found.map(sha256).unwrap_or_default(),
                restored,
            });
    }

    /// Sends the reports waiting, oldest first, until one cannot reach the server
    /// (it waits for the next try); a report the server refuses is dropped, logged.
    async fn report_pending(&mut self, client: &Client) {
        let Some((team, user)) = self.subject.clone() else {
            return;
        };
        while let Some(mut request) = self.pending.pop_front() {
            request.team_id.clone_from(&team);
            request.user_id.clone_from(&user);
            let path = request.path.clone();
            match client.report_tampering(request.clone()).await {
                Ok(recorded) => report(&serde_json::json!({"event": "tampering_reported",
                    "path": path, "recorded": recorded})),
                Err(ClientError::Refused { code, message })
                    if !matches!(
                        code,
                        tonic::Code::Unavailable | tonic::Code::Unauthenticated
                    ) =>
                {
                    report(&serde_json::json!({"event": "report_refused", "path": path,
                        "detail": format!("{code:?}: {message}")}));
                }
                Err(e) => {
                    report(&serde_json::json!({"event": "report_failed", "path": path,
                        "detail": e.to_string()}));
                    self.pending.push_front(request);
                    return;
                }
            }
        }
    }
}

/// This machine's name as a tampering report carries it: letters, digits, `.`, `-`
/// and `_` only, at most 253 bytes (empty when unknown).
fn host_name() -> String {
    #[cfg(unix)]
    let name = nix::unistd::gethostname()
        .ok()
        .and_then(|n| n.into_string().ok())
        .unwrap_or_default();
    #[cfg(not(unix))]
    let name = std::env::var("COMPUTERNAME").unwrap_or_default();
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(253)
        .collect()
}

/// One event, one JSON line on stdout (the journal, under systemd); tampering also on
/// stderr.
fn report(event: &serde_json::Value) {
    use std::io::Write as _;
    if event["tampering"] == true {
        eprintln!(
            "toolgate sync: {} was changed by someone else and is restored",
            event["path"]
        );
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}
