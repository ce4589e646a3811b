//! Signing in with the organisation's identity provider: OpenID discovery, the OAuth
//! 2.0 device authorisation grant (RFC 8628), the authorisation code with PKCE on a
//! loopback redirect (RFC 8252), and refreshing. The protocol is the `oauth2`
//! crate's; its HTTP goes through one reqwest client that follows no redirect and
//! reads at most [`MAX_BODY_BYTES`] of any answer, so a hostile provider can neither
//! send us elsewhere nor make us buffer without bound.

use crate::error_chain;
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AsyncHttpClient, AuthUrl, AuthorizationCode, ClientId, CsrfToken, DeviceAuthorizationUrl,
    EndpointNotSet, EndpointSet, ExtraTokenFields, HttpRequest, HttpResponse, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, StandardDeviceAuthorizationResponse,
    StandardRevocableToken, StandardTokenResponse, TokenResponse as _, TokenUrl,
};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest answer read from the identity provider (discovery, tokens).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Largest token kept (an ID token with many groups is a few KiB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a device code is waited for at most, whatever the provider says.
const MAX_DEVICE_WAIT: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The server's or the provider's configuration cannot be used as it is.
    #[error("{0}")]
    Config(String),
    /// The provider cannot be reached or answered something unreadable.
    #[error("the identity provider {issuer}: {detail}")]
    Unreachable { issuer: String, detail: String },
    /// The provider refused: the sign-in is over (expired, revoked, denied).
    #[error(
        "the identity provider refused ({code}{}): run `toolgate login --sso` to sign in again",
        description.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
    )]
    Refused {
        code: String,
        description: Option<String>,
    },
}

/// Which of the provider's tokens toolgate is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bearer {
    #[default]
    IdToken,
    AccessToken,
}

/// The provider as discovery found it, and how we sign in there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    pub issuer: String,
    pub client_id: String,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_endpoint: Option<String>,
    #[serde(default)]
    pub bearer: Bearer,
    /// The issuer may be plain http on this machine (a test provider).
    #[serde(default)]
    pub allow_loopback_http: bool,
}

/// What a sign-in or a refresh gives: the token sent to toolgate, when it expires,
/// and the refresh token (when the provider gave one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    pub bearer: String,
    pub expires_at: u64,
    pub refresh_token: Option<String>,
}

/// The ID token beside the access token in an OpenID token response.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IdTokenField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}
impl ExtraTokenFields for IdTokenField {}

type OidcTokenResponse = StandardTokenResponse<IdTokenField, BasicTokenType>;
type OidcClient<HasAuth, HasDevice> = oauth2::Client<
    BasicErrorResponse,
    OidcTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    HasAuth,
    HasDevice,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// Checks `text` is a URL we may talk to: https, or plain http to this machine when
/// `loopback_http` allows it; `what` names it in the error.
pub fn check_url(what: &str, text: &str, loopback_http: bool) -> Result<url::Url, OidcError> {
    let url = url::Url::parse(text)
        .map_err(|e| OidcError::Config(format!("{what} {text:?} is not a URL ({e})")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OidcError::Config(format!(
            "{what} {text:?} carries a user name or password"
        )));
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if loopback_http && toolgate_core::secure_url::is_loopback(&url) => Ok(url),
        "http" if toolgate_core::secure_url::is_loopback(&url) => Err(OidcError::Config(format!(
            "{what} {text:?} is plain http: only a test provider may be, when the server's auth.jwt.sign_in.allow_loopback_http says so"
        ))),
        _ => Err(OidcError::Config(format!(
            "{what} {text:?} is not https: the identity provider must be reached over https"
        ))),
    }
}

/// The HTTP client every request to the provider goes through.
#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    issuer: String,
}

impl Http {
    pub fn new(issuer: &str) -> Result<Self, OidcError> {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            // a token endpoint that redirects would take our refresh token elsewhere
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OidcError::Config(format!("starting the HTTP client: {e}")))?;
        Ok(Self {
            client,
            issuer: issuer.to_owned(),
        })
    }

    fn unreachable(&self, detail: String) -> OidcError {
        OidcError::Unreachable {
            issuer: self.issuer.clone(),
            detail,
        }
    }

    /// One request, its answer read up to [`MAX_BODY_BYTES`].
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, OidcError> {
        let request = reqwest::Request::try_from(request)
            .map_err(|e| self.unreachable(format!("building the request: {e}")))?;
        let mut answer = self
            .client
            .execute(request)
            .await
            .map_err(|e| self.unreachable(error_chain(&e)))?;
        if answer.content_length().unwrap_or(0) > MAX_BODY_BYTES as u64 {
            return Err(self.unreachable(format!("answered more than {MAX_BODY_BYTES} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = answer
            .chunk()
            .await
            .map_err(|e| self.unreachable(error_chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(self.unreachable(format!("answered more than {MAX_BODY_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        let mut response = http::Response::builder().status(answer.status());
        if let Some(headers) = response.headers_mut() {
            *headers = answer.headers().clone();
        }
        response
            .body(body)
            .map_err(|e| self.unreachable(e.to_string()))
    }

    /// The provider's OpenID configuration, checked: the issuer it names is ours and
    /// every endpoint may be talked to.
    pub async fn discover(
        &self,
        issuer: &str,
        client_id: &str,
        bearer: Bearer,
        allow_loopback_http: bool,
    ) -> Result<Provider, OidcError> {
        check_url("the issuer", issuer, allow_loopback_http)?;
        let at = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let request = http::Request::get(&at)
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| self.unreachable(e.to_string()))?;
        let answer = self.send(request).await?;
        if !answer.status().is_success() {
            return Err(self.unreachable(format!(
                "{at} answered {}: is auth.jwt.issuer the provider's issuer?",
                answer.status()
            )));
        }
        #[derive(Deserialize)]
        struct Discovery {
            issuer: String,
            token_endpoint: String,
            #[serde(default)]
            authorization_endpoint: Option<String>,
            #[serde(default)]
            device_authorization_endpoint: Option<String>,
        }
        let found: Discovery = serde_json::from_slice(answer.body())
            .map_err(|e| self.unreachable(format!("{at} is not an OpenID configuration: {e}")))?;
        // OpenID discovery: the document must name the issuer it was fetched for
        if found.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(self.unreachable(format!(
                "{at} names the issuer {:?}, not {issuer:?}: it is not this provider's configuration",
                found.issuer
            )));
        }
        let endpoint = |what: &str, url: Option<String>| -> Result<Option<String>, OidcError> {
            url.map(|u| check_url(what, &u, allow_loopback_http).map(|_| u))
                .transpose()
        };
        Ok(Provider {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            token_endpoint: endpoint("the token endpoint", Some(found.token_endpoint))?
                .unwrap_or_default(),
            authorization_endpoint: endpoint(
                "the authorization endpoint",
                found.authorization_endpoint,
            )?,
            device_authorization_endpoint: endpoint(
                "the device authorization endpoint",
                found.device_authorization_endpoint,
            )?,
            bearer,
            allow_loopback_http,
        })
    }
}

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move { self.send(request).await.map_err(HttpError) })
    }
}

/// [`OidcError`] as the `oauth2` crate carries it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(OidcError);

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `exp` of a JWT, read without verifying it (the server verifies): only to know
/// when to refresh.
pub fn jwt_expiry(token: &str) -> Option<u64> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    #[derive(Deserialize)]
    struct Exp {
        exp: u64,
    }
    serde_json::from_slice::<Exp>(&bytes).ok().map(|e| e.exp)
}

/// A request's failure: the provider's refusal (over) or anything else (retry).
fn token_error(
    http: &Http,
    e: RequestTokenError<
        HttpError,
        oauth2::StandardErrorResponse<impl oauth2::ErrorResponseType + std::fmt::Display + 'static>,
    >,
) -> OidcError {
    match e {
        RequestTokenError::ServerResponse(answer) => OidcError::Refused {
            code: bounded(&answer.error().to_string(), 100),
            description: answer.error_description().map(|d| bounded(d, 300)),
        },
        RequestTokenError::Request(HttpError(inner)) => inner,
        RequestTokenError::Parse(e, _) => {
            http.unreachable(format!("answered an unreadable token response: {e}"))
        }
        RequestTokenError::Other(text) => http.unreachable(bounded(&text, 300)),
    }
}

/// `text` cut to `max` characters, control characters dropped: the provider's words
/// reach a terminal.
fn bounded(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

impl Provider {
    fn client(&self) -> Result<OidcClient<EndpointNotSet, EndpointNotSet>, OidcError> {
        let token = TokenUrl::new(self.token_endpoint.clone())
            .map_err(|e| OidcError::Config(format!("the token endpoint: {e}")))?;
        Ok(oauth2::Client::new(ClientId::new(self.client_id.clone()))
            .set_auth_type(oauth2::AuthType::RequestBody)
            .set_token_uri(token))
    }

    /// The tokens of a token response, checked.
    fn tokens(&self, answer: &OidcTokenResponse, keep: Option<&str>) -> Result<Tokens, OidcError> {
        let bearer =
            match self.bearer {
                Bearer::IdToken => answer.extra_fields().id_token.clone().ok_or_else(|| {
                    OidcError::Unreachable {
                        issuer: self.issuer.clone(),
                        detail: "gave no ID token: is `openid` among auth.jwt.sign_in.scopes?"
                            .into(),
                    }
                })?,
                Bearer::AccessToken => answer.access_token().secret().clone(),
            };
        let refresh_token = answer
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| keep.map(str::to_owned));
        if bearer.len() > MAX_TOKEN_BYTES
            || refresh_token
                .as_ref()
                .is_some_and(|r| r.len() > MAX_TOKEN_BYTES)
        {
            return Err(OidcError::Unreachable {
                issuer: self.issuer.clone(),
                detail: format!("gave a token longer than {MAX_TOKEN_BYTES} bytes"),
            });
        }
        let expires_at = jwt_expiry(&bearer)
            .or_else(|| answer.expires_in().map(|d| now() + d.as_secs()))
            .unwrap_or_else(now);
        Ok(Tokens {
            bearer,
            expires_at,
            refresh_token,
        })
    }

    /// The device grant: `show` is told the code and where to enter it, then the
    /// provider is polled as it asks until the user approves, refuses, or the code
    /// expires.
    pub async fn device_sign_in(
        &self,
        http: &Http,
        scopes: &[String],
        show: impl FnOnce(&str, &str, Option<&str>),
    ) -> Result<Tokens, OidcError> {
        let url = self.device_authorization_endpoint.clone().ok_or_else(|| {
            OidcError::Config(format!(
                "the identity provider {} offers no device sign-in (no device_authorization_endpoint): use --browser",
                self.issuer
            ))
        })?;
        let url = DeviceAuthorizationUrl::new(url)
            .map_err(|e| OidcError::Config(format!("the device authorization endpoint: {e}")))?;
        let client = self.client()?.set_device_authorization_url(url);
        let details: StandardDeviceAuthorizationResponse = client
            .exchange_device_code()
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .request_async(http)
            .await
            .map_err(|e| token_error(http, e))?;
        show(
            &bounded(details.user_code().secret(), 64),
            &bounded(details.verification_uri().as_str(), 2048),
            details
                .verification_uri_complete()
                .map(|u| bounded(u.secret(), 2048))
                .as_deref(),
        );
        let wait = details.expires_in().min(MAX_DEVICE_WAIT);
        let answer = client
            .exchange_device_access_token(&details)
            .request_async(http, tokio::time::sleep, Some(wait))
            .await
            .map_err(|e| token_error(http, e))?;
        self.tokens(&answer, None)
    }

    /// The authorisation code with PKCE: `open` is given the URL to visit; the code
    /// comes back to `listener` (a loopback socket) as the redirect.
    pub async fn browser_sign_in(
        &self,
        http: &Http,
        scopes: &[String],
        listener: tokio::net::TcpListener,
        open: impl FnOnce(&str),
    ) -> Result<Tokens, OidcError> {
        let auth = self.authorization_endpoint.clone().ok_or_else(|| {
            OidcError::Config(format!(
                "the identity provider {} offers no browser sign-in (no authorization_endpoint): leave out --browser",
                self.issuer
            ))
        })?;
        let auth = AuthUrl::new(auth)
            .map_err(|e| OidcError::Config(format!("the authorization endpoint: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| OidcError::Config(format!("the loopback redirect: {e}")))?
            .port();
        let redirect = RedirectUrl::new(format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| OidcError::Config(e.to_string()))?;
        let client = self.client()?.set_auth_uri(auth).set_redirect_uri(redirect);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge)
            .url();
        open(url.as_str());
        let code = tokio::time::timeout(MAX_DEVICE_WAIT, redirected_code(listener, state.secret()))
            .await
            .map_err(|_| OidcError::Refused {
                code: "timeout".into(),
                description: Some("no answer came back from the browser within 15 minutes".into()),
            })??;
        let answer = client
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .request_async(http)
            .await
            .map_err(|e| token_error(http, e))?;
        self.tokens(&answer, None)
    }

    /// New tokens for a refresh token; a refusal means signing in again.
    pub async fn refresh(&self, http: &Http, refresh_token: &str) -> Result<Tokens, OidcError> {
        let answer = self
            .client()?
            .exchange_refresh_token(&RefreshToken::new(refresh_token.to_owned()))
            .request_async(http)
            .await
            .map_err(|e| token_error(http, e))?;
        self.tokens(&answer, Some(refresh_token))
    }
}

/// Waits for the browser's redirect to `/callback` and answers it; the code, once
/// the state is ours. Requests for anything else (a favicon) are answered 404.
async fn redirected_code(
    listener: tokio::net::TcpListener,
    state: &str,
) -> Result<String, OidcError> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        let mut head = vec![0u8; 8192];
        let mut len = 0;
        // the request line is all we read, within 8 KiB
        while len < head.len() && !head[..len].windows(2).any(|w| w == b"\r\n") {
            match conn.read(&mut head[len..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => len += n,
            }
        }
        let line = String::from_utf8_lossy(&head[..len]);
        let target = line
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
            continue;
        };
        if url.path() != "/callback" {
            let _ = conn
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let (said, result) = if param("state").as_deref() != Some(state) {
            // another page's request: not ours to take
            ("this sign-in was not started here", None)
        } else if let Some(error) = param("error") {
            (
                "the sign-in was refused: see the terminal",
                Some(Err(OidcError::Refused {
                    code: bounded(&error, 100),
                    description: param("error_description").map(|d| bounded(&d, 300)),
                })),
            )
        } else if let Some(code) = param("code").filter(|c| c.len() <= 4096) {
            ("signed in: you may close this page", Some(Ok(code)))
        } else {
            ("no code came back", None)
        };
        let page = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{said}\n",
            said.len() + 1
        );
        let _ = conn.write_all(page.as_bytes()).await;
        if let Some(result) = result {
            return result;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_allowed_loopback_http() {
        // (url, loopback http allowed, accepted)
        let table = [
            ("https://idp.example", false, true),
            ("http://127.0.0.1:4000", true, true),
            ("http://localhost:4000", true, true),
            ("http://127.0.0.1:4000", false, false),
            ("http://idp.example", true, false),
            ("https://u:p@idp.example", false, false),
            ("ftp://idp.example", true, false),
            ("idp.example", false, false),
        ];
        for (url, loopback, ok) in table {
            assert_eq!(
                check_url("x", url, loopback).is_ok(),
                ok,
                "{url} {loopback}"
            );
        }
    }

    /// Serves what `answer` makes of its own address (a whole HTTP response) to every
    /// connection; the address as an issuer URL.
    async fn canned(answer: &dyn Fn(&str) -> Vec<u8>) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let answer = answer(&issuer);
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = conn.read(&mut request).await;
                    let _ = conn.write_all(&answer).await;
                });
            }
        });
        issuer
    }

    fn json_answer(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// Hostile discovery documents: each refused with what is wrong, nothing followed.
    #[tokio::test]
    async fn discovery_refuses_what_it_cannot_trust() {
        let config = |issuer: &str, token: &str| {
            serde_json::json!({
                "issuer": issuer,
                "token_endpoint": token,
                "device_authorization_endpoint": format!("{issuer}/device"),
            })
            .to_string()
        };
        let huge = "x".repeat(MAX_BODY_BYTES + 1);
        // (case, the answer given the issuer, a part of the refusal or None)
        type Answer = Box<dyn Fn(&str) -> Vec<u8>>;
        let table: Vec<(&str, Answer, Option<&str>)> = vec![
            (
                "a good one",
                Box::new(move |i| json_answer(&config(i, &format!("{i}/token")))),
                None,
            ),
            (
                "another issuer's",
                Box::new(move |i| {
                    json_answer(&config("https://evil.example", &format!("{i}/token")))
                }),
                Some("names the issuer"),
            ),
            (
                "a token endpoint in clear elsewhere",
                Box::new(move |i| json_answer(&config(i, "http://evil.example/token"))),
                Some("is not https"),
            ),
            (
                "a token endpoint with credentials",
                Box::new(move |i| json_answer(&config(i, "https://u:p@idp.example/token"))),
                Some("user name or password"),
            ),
            (
                "not JSON",
                Box::new(|_| json_answer("<html>")),
                Some("not an OpenID configuration"),
            ),
            (
                "too large, said so",
                Box::new(move |_| json_answer(&huge)),
                Some("more than"),
            ),
            (
                "too large, without a length",
                Box::new(|_| {
                    let mut a = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n".to_vec();
                    a.extend(std::iter::repeat_n(b' ', MAX_BODY_BYTES + 10));
                    a
                }),
                Some("more than"),
            ),
            (
                "a redirect",
                Box::new(|_| {
                    b"HTTP/1.1 302 Found\r\nlocation: https://evil.example/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
                }),
                Some("answered 302"),
            ),
        ];
        for (case, answer, want) in table {
            let issuer = canned(&*answer).await;
            let http = Http::new(&issuer).unwrap();
            let got = http.discover(&issuer, "cli", Bearer::IdToken, true).await;
            match (got, want) {
                (Ok(p), None) => assert_eq!(p.token_endpoint, format!("{issuer}/token"), "{case}"),
                (Err(e), Some(part)) => {
                    let text = e.to_string();
                    assert!(text.contains(part), "{case}: {text}")
                }
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_expiry_of_a_jwt_is_read_and_anything_else_is_none() {
        use base64::Engine as _;
        let part = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let jwt = format!("{}.{}.sig", part("{}"), part(r#"{"exp": 1700000000}"#));
        assert_eq!(jwt_expiry(&jwt), Some(1_700_000_000));
        for bad in [
            "opaque".to_owned(),
            format!("a.{}.b", part(r#"{"exp": "soon"}"#)),
            format!("a.{}.b", part("[")),
            "a.!!!.b".to_owned(),
        ] {
            assert_eq!(jwt_expiry(&bad), None, "{bad}");
        }
    }
}
