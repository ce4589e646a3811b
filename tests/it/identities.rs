//! Who a credential makes the caller: client certificates (one CN at most, SANs
//! matched by type) and the configuration's rules for every credential (no name in
//! the JWT principals' namespace, no reserved team). JWTs are in `jwt.rs`.

use crate::support;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
    SanType,
};
use std::path::PathBuf;
use support::*;
use toolgate::auth::{Authenticator, Role};
use toolgate::config::{AnonymousConfig, CertificateConfig, Config, TokenConfig};

struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "toolgate test clients");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        Self(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// A client certificate (DER) whose subject holds `cns` in order and whose
    /// subject alternative names are `sans`.
    fn issue(&self, cns: &[&str], sans: Vec<SanType>) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        for (i, cn) in cns.iter().enumerate() {
            // rcgen keeps one value per attribute type: a second CN goes in under
            // the CN's OID spelled as a custom type, as a forger would write it
            let ty = if i == 0 {
                DnType::CommonName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 3])
            };
            params.distinguished_name.push(ty, *cn);
        }
        params.subject_alt_names = sans;
        let key = KeyPair::generate().unwrap();
        params.signed_by(&key, &*self.0).unwrap().der().to_vec()
    }
}

fn dns(name: &str) -> SanType {
    SanType::DnsName(name.try_into().unwrap())
}

fn uri(name: &str) -> SanType {
    SanType::URI(name.try_into().unwrap())
}

fn email(name: &str) -> SanType {
    SanType::Rfc822Name(name.try_into().unwrap())
}

fn mapping(name: &str, cn: Option<&str>, san: Option<&str>, role: Role) -> CertificateConfig {
    CertificateConfig {
        groups: Vec::new(),
        name: name.into(),
        subject_cn: cn.map(Into::into),
        san: san.map(Into::into),
        role,
        team: Some(TEAM.into()),
        user: None,
    }
}

/// A configuration with client certificates on (the files are only named: these
/// tests read the configuration, they start no listener).
fn mtls_config() -> Config {
    let mut config = test_config(&PathBuf::from("/nonexistent/data"));
    config.tls.cert = Some("/etc/toolgate/server.pem".into());
    config.tls.key = Some("/etc/toolgate/server.key".into());
    config.tls.client_ca = Some("/etc/toolgate/clients.pem".into());
    config.auth.certificates = vec![
        mapping("ops", Some("ops"), None, Role::Admin),
        mapping(
            "acme-proxy",
            None,
            Some("uri:spiffe://acme/proxy"),
            Role::Service,
        ),
        mapping(
            "alice-cert",
            None,
            Some("dns:alice.acme.example"),
            Role::Member,
        ),
        mapping(
            "bob-cert",
            None,
            Some("email:bob@acme.example"),
            Role::Member,
        ),
    ];
    config
}

#[test]
fn client_certificates_map_by_one_cn_or_by_a_san_of_the_mapped_type() {
    let config = mtls_config();
    config
        .validate()
        .expect("the honest configuration is valid");
    let auth =
        Authenticator::new(Vec::new(), None).with_certificates(config.certificate_principals());
    let ca = Ca::new();
    // (case, subject CNs, SANs, the principal, or a part of the refusal)
    type Row = (
        &'static str,
        &'static [&'static str],
        Vec<SanType>,
        Result<&'static str, &'static str>,
    );
    let table: Vec<Row> = vec![
        // honest identities
        ("the mapped CN", &["ops"], vec![], Ok("ops")),
        (
            "the URI SAN",
            &["whoever"],
            vec![uri("spiffe://acme/proxy")],
            Ok("acme-proxy"),
        ),
        (
            "the DNS SAN",
            &["alice"],
            vec![dns("alice.acme.example")],
            Ok("alice-cert"),
        ),
        (
            "a DNS SAN in other case",
            &[],
            vec![dns("Alice.ACME.example")],
            Ok("alice-cert"),
        ),
        (
            "the email SAN",
            &[],
            vec![email("bob@acme.example")],
            Ok("bob-cert"),
        ),
        (
            "the URI SAN among others",
            &[],
            vec![dns("proxy.acme.example"), uri("spiffe://acme/proxy")],
            Ok("acme-proxy"),
        ),
        // the issue's attacks: two CNs, either order
        (
            "/CN=mallory/CN=ops",
            &["mallory", "ops"],
            vec![],
            Err("several common names"),
        ),
        (
            "/CN=ops/CN=mallory",
            &["ops", "mallory"],
            vec![],
            Err("several common names"),
        ),
        (
            "/CN=ops/CN=ops",
            &["ops", "ops"],
            vec![],
            Err("several common names"),
        ),
        (
            "two CNs and an honest SAN",
            &["mallory", "ops"],
            vec![uri("spiffe://acme/proxy")],
            Err("several common names"),
        ),
        // a SAN of another type holding the mapped text
        (
            "a DNS SAN holding the spiffe URI",
            &[],
            vec![dns("spiffe://acme/proxy")],
            Err("not mapped"),
        ),
        (
            "an email SAN holding the spiffe URI",
            &[],
            vec![email("spiffe://acme/proxy")],
            Err("not mapped"),
        ),
        (
            "a URI SAN holding the DNS name",
            &[],
            vec![uri("alice.acme.example")],
            Err("not mapped"),
        ),
        (
            "a DNS SAN holding the email",
            &[],
            vec![dns("bob@acme.example")],
            Err("not mapped"),
        ),
        (
            "a URI SAN holding the email",
            &[],
            vec![uri("bob@acme.example")],
            Err("not mapped"),
        ),
        // near misses
        (
            "a longer DNS name",
            &[],
            vec![dns("alice.acme.example.evil.test")],
            Err("not mapped"),
        ),
        (
            "a longer URI",
            &[],
            vec![uri("spiffe://acme/proxy/../admin")],
            Err("not mapped"),
        ),
        ("a CN in other case", &["OPS"], vec![], Err("not mapped")),
        (
            "the CN as a DNS SAN",
            &[],
            vec![dns("ops")],
            Err("not mapped"),
        ),
        ("nothing", &[], vec![], Err("not mapped")),
    ];
    for (case, cns, sans, want) in table {
        let der = ca.issue(cns, sans);
        let got = auth.authenticate_certificate(&der);
        match (want, got) {
            (Ok(name), Ok(p)) => assert_eq!(p.name, name, "{case}"),
            (Err(why), Err(e)) => assert!(e.to_string().contains(why), "{case}: {e}"),
            (want, got) => panic!("{case}: wanted {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn credentials_may_not_name_a_reserved_team_or_a_jwt_principal() {
    type Edit = Box<dyn Fn(&mut Config)>;
    let token = |name: &str, team: Option<&str>, role: Role| TokenConfig {
        groups: Vec::new(),
        name: name.into(),
        sha256: toolgate::auth::hash_token(name),
        role,
        team: team.map(Into::into),
        user: None,
    };
    // (case, the change to an honest configuration, a part of the problem or None)
    let table: Vec<(&str, Edit, Option<&str>)> = vec![
        (
            "a static token named jwt:bob",
            Box::new(move |c| {
                c.auth
                    .tokens
                    .push(token("jwt:bob", Some(TEAM), Role::Member))
            }),
            Some(
                "auth.tokens[6] (\"jwt:bob\").name: \"jwt:bob\" starts with \"jwt:\", which is reserved",
            ),
        ),
        (
            "a static token named JWT:bob",
            Box::new(move |c| {
                c.auth
                    .tokens
                    .push(token("JWT:bob", Some(TEAM), Role::Member))
            }),
            Some("reserved for principals from JWTs"),
        ),
        (
            "a certificate named jwt:acme/alice@https://idp.test",
            Box::new(|c| c.auth.certificates[0].name = "jwt:acme/alice@https://idp.test".into()),
            Some("reserved for principals from JWTs"),
        ),
        (
            "a token named like the policy file's audit actor",
            Box::new(move |c| {
                c.auth.tokens.push(token(
                    "file:/etc/toolgate/policy.yaml",
                    Some(TEAM),
                    Role::Admin,
                ))
            }),
            Some("reserved for the policy file's changes in the audit trail"),
        ),
        (
            "a token named anonymous",
            Box::new(move |c| {
                c.auth
                    .tokens
                    .push(token("anonymous", Some(TEAM), Role::Member))
            }),
            Some("\"anonymous\" is reserved for calls without a token"),
        ),
        (
            "a certificate named bootstrap-operator",
            Box::new(|c| c.auth.certificates[0].name = "bootstrap-operator".into()),
            Some("reserved for the token written when none is configured"),
        ),
        (
            "a token of team *",
            Box::new(move |c| c.auth.tokens.push(token("star", Some("*"), Role::Admin))),
            Some("auth.tokens[6] (\"star\").team: \"*\" is reserved"),
        ),
        (
            "a token of team acme*",
            Box::new(move |c| {
                c.auth
                    .tokens
                    .push(token("glob", Some("acme*"), Role::Member))
            }),
            Some("\"acme*\" is reserved"),
        ),
        (
            "a certificate of team *",
            Box::new(|c| c.auth.certificates[1].team = Some("*".into())),
            Some("auth.certificates[1] (\"acme-proxy\").team: \"*\" is reserved"),
        ),
        (
            "the anonymous principal of team *",
            Box::new(|c| {
                c.auth.anonymous = Some(AnonymousConfig {
                    role: Role::Service,
                    team: Some("*".into()),
                    user: None,
                })
            }),
            Some("auth.anonymous.team: \"*\" is reserved"),
        ),
        (
            "an untyped SAN",
            Box::new(|c| c.auth.certificates[1].san = Some("spiffe://acme/proxy".into())),
            Some("does not say which type of name it is: write uri:spiffe://acme/proxy"),
        ),
        (
            "a SAN of an unknown type",
            Box::new(|c| c.auth.certificates[1].san = Some("ip:10.0.0.1".into())),
            Some("does not say which type"),
        ),
        (
            "a typed SAN with no value",
            Box::new(|c| c.auth.certificates[1].san = Some("dns:".into())),
            Some("names no value"),
        ),
        // honest ones stay valid
        (
            "a token named like jwt but not in its namespace",
            Box::new(move |c| {
                c.auth
                    .tokens
                    .push(token("jwt-bob", Some(TEAM), Role::Member))
            }),
            None,
        ),
        (
            "an operator without a team",
            Box::new(move |c| c.auth.tokens.push(token("root", None, Role::Operator))),
            None,
        ),
        (
            "a SAN type in capitals",
            Box::new(|c| c.auth.certificates[1].san = Some("URI:spiffe://acme/proxy".into())),
            None,
        ),
    ];
    for (case, edit, want) in table {
        let mut config = mtls_config();
        edit(&mut config);
        match (config.validate(), want) {
            (Ok(()), None) => {}
            (Err(e), Some(why)) => assert!(e.to_string().contains(why), "{case}: {e}"),
            (got, want) => panic!("{case}: wanted {want:?}, got {got:?}"),
        }
    }
}

proptest::proptest! {
    /// JWT principal names are one per (team, user) however the ids use the
    /// separators, and none of them is a name a token or certificate may take.
    #[test]
    fn jwt_principal_names_are_one_per_team_and_user(
        a in ("[a/@%2F]{1,5}", "[a/@%2F]{1,5}"),
        b in ("[a/@%2F]{1,5}", "[a/@%2F]{1,5}"),
    ) {
        let name = |(team, user): &(String, String)| {
            toolgate::jwt::principal_name("https://idp.test", Some(team), user)
        };
        proptest::prop_assert_eq!(name(&a) == name(&b), a == b);
        proptest::prop_assert!(toolgate::auth::check_principal_name(&name(&a)).is_err());
    }
}

/// The proxy's own member tokens follow the same rules as the server's.
#[test]
fn proxy_member_tokens_may_not_name_a_reserved_team_or_a_jwt_principal() {
    let token = |name: &str, team: &str| TokenConfig {
        groups: Vec::new(),
        name: name.into(),
        sha256: toolgate::auth::hash_token(name),
        role: Role::Member,
        team: Some(team.into()),
        user: None,
    };
    let table = [
        ("member of acme", token("alice", TEAM), None),
        ("team *", token("alice", "*"), Some("\"*\" is reserved")),
        (
            "team acme*",
            token("alice", "acme*"),
            Some("\"acme*\" is reserved"),
        ),
        (
            "named jwt:bob",
            token("jwt:bob", TEAM),
            Some("reserved for principals from JWTs"),
        ),
    ];
    for (case, config, want) in table {
        match (
            toolgate::proxy::ClientTokens::from_configs(vec![config]),
            want,
        ) {
            (Ok(_), None) => {}
            (Err(e), Some(why)) => assert!(e.to_string().contains(why), "{case}: {e}"),
            (got, want) => panic!("{case}: wanted {want:?}, got {:?}", got.map(drop)),
        }
    }
}
