//! TLS for the listener (rustls): the certificate chain, its key and, for mTLS, the
//! client CA are read from files and followed by the server's one file poller
//! ([`toolgate_files::poll`]), so a renewed certificate is served without a restart.
//! A file that no longer makes a valid configuration is reported and the one in
//! force stays.

use crate::config::TlsConfig;
use crate::connections::Connection;
use futures::{Stream, StreamExt};
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::{Connected, TcpConnectInfo};
use toolgate_files::{ReadError, poll};
use tracing::{debug, error, info};

/// How long a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest certificate, key or CA file read: a bundle of every public root CA is
/// about 250 KB.
pub const MAX_PEM_BYTES: usize = 1024 * 1024;
/// The files' fields, in the poller's order (`client_ca` only with mTLS).
const FIELDS: [&str; 3] = ["cert", "key", "client_ca"];

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("tls.{field}: cannot read {path}: {source}: {}", source.fix())]
    Read {
        field: &'static str,
        path: String,
        source: ReadError,
    },
    #[error("tls.{field}: {path}: {message}")]
    Invalid {
        field: &'static str,
        path: String,
        message: String,
    },
}

/// What a connection's calls learn about their peer: its address, and its verified
/// certificate chain under mTLS.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub tcp: TcpConnectInfo,
    pub certs: Option<Arc<Vec<CertificateDer<'static>>>>,
}

/// An accepted connection, plaintext or TLS.
#[derive(Debug)]
pub enum Conn {
    Plain(Connection),
    Tls(Box<TlsStream<Connection>>),
}

impl Connected for Conn {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        match self {
            Conn::Plain(c) => PeerInfo {
                tcp: c.connect_info(),
                certs: None,
            },
            Conn::Tls(s) => {
                let (tcp, session) = s.get_ref();
                PeerInfo {
                    tcp: tcp.connect_info(),
                    certs: session
                        .peer_certificates()
                        .map(|c| Arc::new(c.iter().map(|c| c.clone().into_owned()).collect())),
                }
            }
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(c) => Pin::new(c).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(c) => Pin::new(c).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(c) => Pin::new(c).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(c) => Pin::new(c).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

fn invalid(field: &'static str, path: &Path, message: impl Into<String>) -> TlsError {
    TlsError::Invalid {
        field,
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// The poller of the files, in [`FIELDS`] order.
fn poller(config: &TlsConfig, stop: CancellationToken) -> poll::Poller {
    let (cert, key) = config.files().expect("validated: cert and key are set");
    let mut paths: Vec<PathBuf> = vec![cert.to_owned(), key.to_owned()];
    paths.extend(config.client_ca.clone());
    let options = poll::Options {
        settle: 1,
        max_bytes: MAX_PEM_BYTES,
    };
    let every = Duration::from_secs(config.reload_secs);
    poll::Poller::new(paths, options, poll::Schedule::new(every, stop))
}

fn read_error(index: usize, path: &Path, source: ReadError) -> TlsError {
    TlsError::Read {
        field: FIELDS[index],
        path: path.display().to_string(),
        source,
    }
}

/// The files' contents as last read, in [`FIELDS`] order, so what is built is what
/// was read.
struct Files(Vec<poll::Content>);

impl Files {
    /// Reads every file, as a start does.
    fn read(poller: &mut poll::Poller) -> Result<Self, TlsError> {
        let reads = poller.read_all();
        let parts = reads
            .into_iter()
            .enumerate()
            .map(|(i, read)| read.map_err(|e| read_error(i, &poller.paths()[i], e)))
            .collect::<Result<_, _>>()?;
        Ok(Self(parts))
    }

    fn cert(&self) -> &[u8] {
        &self.0[0].bytes
    }

    fn key(&self) -> &[u8] {
        &self.0[1].bytes
    }

    fn client_ca(&self) -> Option<&[u8]> {
        self.0.get(2).map(|c| c.bytes.as_slice())
    }

    fn digests(&self) -> Vec<poll::Digest> {
        self.0.iter().map(|c| c.digest).collect()
    }
}

fn certs(
    field: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            invalid(
                field,
                path,
                format!("not PEM certificates ({e}): give a PEM file of BEGIN CERTIFICATE blocks"),
            )
        })?;
    if certs.is_empty() {
        return Err(invalid(
            field,
            path,
            "holds no certificate: give a PEM file of BEGIN CERTIFICATE blocks",
        ));
    }
    Ok(certs)
}

/// A rustls server configuration from the files' contents.
fn build(config: &TlsConfig, files: &Files) -> Result<Arc<ServerConfig>, TlsError> {
    let (cert_path, key_path) = config.files().expect("validated: cert and key are set");
    let chain = certs("cert", cert_path, files.cert())?;
    let key = PrivateKeyDer::from_pem_slice(files.key()).map_err(|e| {
        invalid(
            "key",
            key_path,
            format!(
                "no private key ({e}): give the PEM key (PKCS#8, PKCS#1 or SEC1) of the certificate"
            ),
        )
    })?;
    // aws-lc-rs, the one crypto provider of the build (tonic's, reqwest's and the JWT
    // checks'), named rather than taken from the process default
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("cert", cert_path, e.to_string()))?;
    let builder = match (&config.client_ca, files.client_ca()) {
        (Some(ca_path), Some(pem)) => {
            let mut roots = RootCertStore::empty();
            for cert in certs("client_ca", ca_path, pem)? {
                roots.add(cert).map_err(|e| {
                    invalid("client_ca", ca_path, format!("not a CA certificate: {e}"))
                })?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let verifier = if config.require_client_cert {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            let verifier = verifier
                .build()
                .map_err(|e| invalid("client_ca", ca_path, e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut server = builder.with_single_cert(chain, key).map_err(|e| {
        invalid("key", key_path, format!("does not go with the certificate ({e}): give the key the certificate was issued for"))
    })?;
    // h2 for gRPC; http/1.1 for curl and browsers on the HTTP API (refused when
    // http.enabled is false, as on plaintext)
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(server))
}

/// Reads and checks the files as a start would, serving nothing (`check-config`).
pub fn check(config: &TlsConfig) -> Result<(), TlsError> {
    let files = Files::read(&mut poller(config, CancellationToken::new()))?;
    build(config, &files).map(|_| ())
}

/// The server configuration in force, swapped when the files change.
#[derive(Debug)]
pub struct Acceptor {
    current: RwLock<Arc<ServerConfig>>,
}

impl Acceptor {
    /// Reads the files (a problem stops the start) and follows them every
    /// `tls.reload_secs` until `stop`.
    pub fn start(config: &TlsConfig, stop: CancellationToken) -> Result<Arc<Self>, TlsError> {
        let mut poller = poller(config, stop);
        let files = Files::read(&mut poller)?;
        let acceptor = Arc::new(Self {
            current: RwLock::new(build(config, &files)?),
        });
        tokio::spawn(follow(acceptor.clone(), config.clone(), files, poller));
        Ok(acceptor)
    }

    fn current(&self) -> Arc<ServerConfig> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Rebuilds the configuration when the files' contents change; a failure is logged
/// once per distinct content and the configuration in force stays.
async fn follow(
    acceptor: Arc<Acceptor>,
    config: TlsConfig,
    mut files: Files,
    mut poller: poll::Poller,
) {
    let mut tried = files.digests();
    while let Some(reports) = poller.next().await {
        let mut unreadable = None;
        for report in reports {
            match report.read {
                Ok(content) => files.0[report.index] = content,
                Err(e) => {
                    unreadable = Some(read_error(report.index, &poller.paths()[report.index], e))
                }
            }
        }
        if let Some(e) = unreadable {
            debug!(error = %e, "tls files not readable: keeping the certificate in force");
            continue;
        }
        // a file back after a failed read with the content already tried is no change
        let digests = files.digests();
        if digests == tried {
            continue;
        }
        tried = digests;
        match build(&config, &files) {
            Ok(server) => {
                *acceptor.current.write().unwrap_or_else(|e| e.into_inner()) = server;
                info!("tls files changed: new connections use the new certificate");
            }
            Err(e) => {
                error!(error = %e, "tls files changed but are not valid: keeping the certificate in force")
            }
        }
    }
}

/// Connections as the server takes them: plaintext, or after a TLS handshake done
/// beside the accept loop (a slow client holds up no one else).
pub fn incoming(
    connections: impl Stream<Item = io::Result<Connection>> + Send + 'static,
    tls: Option<Arc<Acceptor>>,
) -> Pin<Box<dyn Stream<Item = io::Result<Conn>> + Send>> {
    let Some(acceptor) = tls else {
        return Box::pin(connections.map(|c| c.map(Conn::Plain)));
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Conn>(64);
    tokio::spawn(async move {
        let mut connections = std::pin::pin!(connections);
        loop {
            let next = tokio::select! {
                next = connections.next() => next,
                // the server is gone: stop accepting, which closes the listener
                () = tx.closed() => return,
            };
            let conn = match next {
                Some(Ok(conn)) => conn,
                Some(Err(e)) => {
                    debug!(error = %e, "accept failed");
                    continue;
                }
                None => return,
            };
            let accept = tokio_rustls::TlsAcceptor::from(acceptor.current()).accept(conn);
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
                    Ok(Ok(stream)) => {
                        let _ = tx.send(Conn::Tls(Box::new(stream))).await;
                    }
                    Ok(Err(e)) => debug!(error = %e, "tls handshake failed"),
                    Err(_) => debug!("tls handshake not finished in time"),
                }
            });
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok))
}
