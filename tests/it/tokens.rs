//! Tokens issued through the API: created, shown once, listed without secrets,
//! revoked with effect on the next call, audited; who may issue which role; and on
//! PostgreSQL, a token made on one replica authenticates on another, and a
//! revocation there refuses it.

use crate::support;

use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;

fn create(team: &str, user: &str, role: pb::TokenRole) -> pb::CreateTokenRequest {
    pb::CreateTokenRequest {
        team_id: team.into(),
        user_id: user.into(),
        role: role.into(),
        expires_in_seconds: 0,
        groups: Vec::new(),
    }
}

async fn issue(
    server: &TestServer,
    by: &str,
    req: pb::CreateTokenRequest,
) -> pb::CreateTokenResponse {
    server
        .tokens(by)
        .create_token(req)
        .await
        .unwrap_or_else(|e| panic!("{by} issues a token: {e}"))
        .into_inner()
}

/// What `token` may do: read its own user's settings (a member's own call).
async fn reads_as(server: &TestServer, token: &str, user: &str) -> Result<(), tonic::Status> {
    server
        .users(token)
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: TEAM.into(),
            user_id: user.into(),
        })
        .await
        .map(drop)
}

#[tokio::test]
async fn an_issued_token_works_at_once_and_stops_at_once_when_revoked() {
    let (server, _dir) = start().await;
    let created = issue(
        &server,
        "admin-token",
        create(TEAM, "carol", pb::TokenRole::Member),
    )
    .await;
    let token = created.token.clone().unwrap();
    assert!(created.secret.starts_with("tg_"), "{}", created.secret);
    assert!(token.token_id.starts_with("tok_"));
    assert_eq!(token.created_by, "admin");
    // the default expiry: 90 days
    let lifetime = token.expires_at.unwrap().seconds - token.created_at.unwrap().seconds;
    assert_eq!(lifetime, 90 * 24 * 3600);

    // at once, no restart: carol reads her own settings, not bob's
    reads_as(&server, &created.secret, "carol").await.unwrap();
    let e = reads_as(&server, &created.secret, "bob").await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    // an evaluation as carol, with no ids (the token names them)
    let d = server
        .policy(&created.secret)
        .evaluate(pb::EvaluateRequest {
            approval: None,
            call: Some(mcp("github", "get_issue")),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.outcome(), pb::Outcome::Ask);

    // listed, never with its secret
    let listed = server
        .tokens("admin-token")
        .list_tokens(pb::ListTokensRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.tokens.len(), 1);
    assert_eq!(listed.tokens[0].token_id, token.token_id);
    assert!(!format!("{listed:?}").contains(&created.secret));

    let revoked = server
        .tokens("admin-token")
        .revoke_token(pb::RevokeTokenRequest {
            token_id: token.token_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(revoked.revoked);
    let e = reads_as(&server, &created.secret, "carol")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    // a second revocation changes nothing
    let again = server
        .tokens("admin-token")
        .revoke_token(pb::RevokeTokenRequest {
            token_id: token.token_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!again.revoked);
    // only active tokens are listed unless asked
    let listed = server
        .tokens("admin-token")
        .list_tokens(pb::ListTokensRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.tokens.is_empty());

    // audited: who, which token, never the secret
    let audit = server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: TEAM.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .events;
    let kinds: Vec<(i32, &str)> = audit.iter().map(|e| (e.kind, e.actor.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (audit_kind("token_created"), "admin"),
            (audit_kind("token_revoked"), "admin")
        ]
    );
    for e in &audit {
        let detail = crate::support::detail(e).to_string();
        assert!(detail.contains(&token.token_id), "{detail}");
        assert!(!detail.contains(&created.secret[3..10]));
    }
    server.stop().await;
}

#[tokio::test]
async fn issued_tokens_survive_a_restart_and_static_tokens_keep_working() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    let created = issue(
        &server,
        "operator-token",
        create(TEAM, "dave", pb::TokenRole::Member),
    )
    .await;
    server.stop().await;
    let server = TestServer::start(test_config(dir.path())).await;
    reads_as(&server, &created.secret, "dave").await.unwrap();
    reads_as(&server, "alice-token", "alice").await.unwrap();
    server.stop().await;
}

/// Who may issue what: operators anything for any team; a team's admins up to their
/// own role, for their own team; members and services nothing; operator tokens never
/// through the API. A token issued as admin may itself issue; one issued as member
/// may not.
#[tokio::test]
async fn the_matrix_of_who_may_issue_which_role() {
    use pb::TokenRole::{Admin, Member, Service};
    let (server, _dir) = start().await;
    let table: &[(&str, &str, pb::TokenRole, Option<Code>)] = &[
        ("operator-token", TEAM, Admin, None),
        ("operator-token", OTHER_TEAM, Member, None),
        ("admin-token", TEAM, Member, None),
        ("admin-token", TEAM, Service, None),
        ("admin-token", TEAM, Admin, None),
        (
            "admin-token",
            OTHER_TEAM,
            Member,
            Some(Code::PermissionDenied),
        ),
        (
            "other-admin-token",
            TEAM,
            Member,
            Some(Code::PermissionDenied),
        ),
        ("alice-token", TEAM, Member, Some(Code::PermissionDenied)),
        ("service-token", TEAM, Member, Some(Code::PermissionDenied)),
        ("", TEAM, Member, Some(Code::Unauthenticated)),
    ];
    for (by, team, role, want) in table {
        let got = server
            .tokens(by)
            .create_token(create(team, "x", *role))
            .await
            .err()
            .map(|e| e.code());
        assert_eq!(got, *want, "{by} issuing {role:?} for {team}");
    }
    // a user id the server gives its own principals is refused, by any issuer
    for user in [
        "bootstrap-operator",
        "Bootstrap-Operator",
        "anonymous",
        "jwt:acme/alice@https://idp",
        "JWT:x",
        "file:/etc/toolgate/policy.yaml",
        " bootstrap-operator",
    ] {
        let e = server
            .tokens("operator-token")
            .create_token(create(TEAM, user, Member))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{user}");
        assert!(
            e.message().contains("user_id") && e.message().contains("reserved"),
            "{user}: {}",
            e.message()
        );
    }
    // an unknown role number is refused by name
    let e = server
        .tokens("operator-token")
        .create_token(pb::CreateTokenRequest {
            role: 99,
            ..create(TEAM, "x", Member)
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("role"), "{}", e.message());
    // past the longest expiry
    let e = server
        .tokens("operator-token")
        .create_token(pb::CreateTokenRequest {
            expires_in_seconds: 400 * 24 * 3600,
            ..create(TEAM, "x", Member)
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("expires_in_seconds"),
        "{}",
        e.message()
    );

    // issued tokens issue as their role allows
    let admin = issue(&server, "operator-token", create(TEAM, "erin", Admin))
        .await
        .secret;
    issue(&server, &admin, create(TEAM, "frank", Member)).await;
    let member = issue(&server, &admin, create(TEAM, "gina", Member))
        .await
        .secret;
    let e = server
        .tokens(&member)
        .create_token(create(TEAM, "x", Member))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);

    // revocation: not by members, not across teams (reported as unknown)
    let listed = server
        .tokens("admin-token")
        .list_tokens(pb::ListTokensRequest::default())
        .await
        .unwrap()
        .into_inner()
        .tokens;
    let some_id = listed[0].token_id.clone();
    for (by, code) in [
        ("alice-token", Code::InvalidArgument),
        ("other-admin-token", Code::InvalidArgument),
    ] {
        let e = server
            .tokens(by)
            .revoke_token(pb::RevokeTokenRequest {
                token_id: some_id.clone(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "{by}: {e:?}");
    }
    // the other team's admin does not see this team's tokens
    let e = server
        .tokens("other-admin-token")
        .list_tokens(pb::ListTokensRequest {
            team_id: TEAM.into(),
            include_inactive: true,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    server.stop().await;
}

#[tokio::test]
async fn postgres_a_token_issued_on_one_replica_works_on_another_until_revoked_there() {
    let Some(url) = support::pg::fresh_database("postgres issued tokens across replicas").await
    else {
        return;
    };
    let replica = |url: String| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        config.store.url = Some(url);
        (TestServer::start(config).await, dir)
    };
    let (a, _da) = replica(url.clone()).await;
    let (b, _db) = replica(url).await;
    let created = issue(
        &a,
        "admin-token",
        create(TEAM, "hana", pb::TokenRole::Member),
    )
    .await;
    reads_as(&a, &created.secret, "hana").await.unwrap();
    eventually(EVENTUALLY, "B accepts the token A issued", || {
        let (b, secret) = (&b, created.secret.clone());
        async move { reads_as(b, &secret, "hana").await.is_ok() }
    })
    .await;
    b.tokens("admin-token")
        .revoke_token(pb::RevokeTokenRequest {
            token_id: created.token.unwrap().token_id,
        })
        .await
        .unwrap();
    let e = reads_as(&b, &created.secret, "hana").await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    eventually(EVENTUALLY, "A refuses the token B revoked", || {
        let (a, secret) = (&a, created.secret.clone());
        async move {
            matches!(reads_as(a, &secret, "hana").await, Err(e) if e.code() == Code::Unauthenticated)
        }
    })
    .await;
    a.stop().await;
    b.stop().await;
}

/// Hostile input to the token service: each refused naming its field, nothing issued.
#[tokio::test]
async fn hostile_token_requests_are_refused_by_field() {
    let (server, _dir) = start().await;
    let long = "x".repeat(300);
    let table: &[(&str, pb::CreateTokenRequest, &str)] = &[
        (
            "empty team",
            create("", "u", pb::TokenRole::Member),
            "team_id",
        ),
        (
            "the every-team team",
            create("*", "u", pb::TokenRole::Member),
            "team_id",
        ),
        (
            "a team holding *",
            create("acme*", "u", pb::TokenRole::Admin),
            "team_id",
        ),
        (
            "empty user",
            create(TEAM, " ", pb::TokenRole::Member),
            "user_id",
        ),
        (
            "zero-width user",
            create(TEAM, "ali\u{200b}ce", pb::TokenRole::Member),
            "user_id",
        ),
        (
            "bidi user",
            create(TEAM, "\u{202e}ecila", pb::TokenRole::Member),
            "user_id",
        ),
        (
            "long user",
            create(TEAM, &long, pb::TokenRole::Member),
            "user_id",
        ),
        (
            "expiry past a year",
            pb::CreateTokenRequest {
                expires_in_seconds: u64::MAX,
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "expires_in_seconds",
        ),
        (
            "negative role",
            pb::CreateTokenRequest {
                role: -1,
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "role",
        ),
        (
            "a group that is no group name",
            pb::CreateTokenRequest {
                groups: vec!["contractors".into(), "pii team".into()],
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "groups",
        ),
        (
            "an empty group",
            pb::CreateTokenRequest {
                groups: vec![String::new()],
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "groups",
        ),
        (
            "a long group",
            pb::CreateTokenRequest {
                groups: vec!["g".repeat(65)],
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "groups",
        ),
        (
            "a control character in a group",
            pb::CreateTokenRequest {
                groups: vec!["a\u{0}b".into()],
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "groups",
        ),
        (
            "too many groups",
            pb::CreateTokenRequest {
                groups: (0..65).map(|i| format!("g{i}")).collect(),
                ..create(TEAM, "u", pb::TokenRole::Member)
            },
            "groups",
        ),
    ];
    for (case, req, field) in table {
        let e = server
            .tokens("operator-token")
            .create_token(req.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{case}: {e:?}");
        assert!(e.message().contains(field), "{case}: {}", e.message());
    }
    for id in ["", &long, "tok_\u{0}", "tok_é"] {
        let e = server
            .tokens("operator-token")
            .revoke_token(pb::RevokeTokenRequest {
                token_id: id.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{id:?}: {e:?}");
        assert!(e.message().contains("token_id"), "{}", e.message());
    }
    let listed = server
        .tokens("operator-token")
        .list_tokens(pb::ListTokensRequest {
            include_inactive: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(listed.tokens.is_empty(), "{listed:?}");
    // a token-shaped guess is just unknown
    let e = reads_as(&server, &format!("tg_{}", "0".repeat(64)), "alice")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    server.stop().await;
}
