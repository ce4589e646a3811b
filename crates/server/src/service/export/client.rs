//! The OTLP collector's client: a batch of log records sent over gRPC or
//! HTTP/protobuf, with the configured headers.

use crate::config::{OtlpExportConfig, OtlpProtocol};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use std::time::Duration;
use tracing::warn;

/// The collector's client.
pub(super) enum Client {
    Grpc {
        client: LogsServiceClient<tonic::transport::Channel>,
        metadata: tonic::metadata::MetadataMap,
    },
    Http {
        client: reqwest::Client,
        url: String,
        headers: reqwest::header::HeaderMap,
    },
}

impl Client {
    pub(super) fn new(endpoint: &str, config: &OtlpExportConfig) -> Result<Self, String> {
        let timeout = Duration::from_secs(config.timeout_secs);
        let bad_header =
            |name: &str| format!("otlp_export.headers.{name}: not a valid header name and value");
        match config.protocol {
            OtlpProtocol::Grpc => {
                let mut channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
                    .map_err(|e| format!("otlp_export.endpoint: {e}"))?
                    .timeout(timeout)
                    .connect_timeout(timeout);
                if endpoint.starts_with("https://") {
                    channel = channel
                        .tls_config(tonic::transport::ClientTlsConfig::new().with_native_roots())
                        .map_err(|e| format!("otlp_export.endpoint: TLS: {e}"))?;
                }
                let mut metadata = tonic::metadata::MetadataMap::new();
                for (name, value) in &config.headers {
                    let key = tonic::metadata::MetadataKey::from_bytes(name.as_bytes())
                        .map_err(|_| bad_header(name))?;
                    metadata.insert(key, value.parse().map_err(|_| bad_header(name))?);
                }
                Ok(Self::Grpc {
                    client: LogsServiceClient::new(channel.connect_lazy()),
                    metadata,
                })
            }
            OtlpProtocol::HttpProtobuf => {
                let mut url =
                    url::Url::parse(endpoint).map_err(|e| format!("otlp_export.endpoint: {e}"))?;
                if url.path().is_empty() || url.path() == "/" {
                    url.set_path("/v1/logs");
                }
                let mut headers = reqwest::header::HeaderMap::new();
                for (name, value) in &config.headers {
                    headers.insert(
                        reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| bad_header(name))?,
                        value.parse().map_err(|_| bad_header(name))?,
                    );
                }
                let client = reqwest::Client::builder()
                    .timeout(timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("otlp_export: cannot build the HTTP client: {e}"))?;
                Ok(Self::Http {
                    client,
                    url: url.into(),
                    headers,
                })
            }
        }
    }

    /// Sends one batch; an error says why it was not taken.
    pub(super) async fn send(
        &mut self,
        resource: &Resource,
        records: Vec<LogRecord>,
    ) -> Result<(), String> {
        let request = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(resource.clone()),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "toolgate".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    log_records: records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        match self {
            Self::Grpc { client, metadata } => {
                let mut req = tonic::Request::new(request);
                *req.metadata_mut() = metadata.clone();
                let answer = client
                    .export(req)
                    .await
                    .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?;
                if let Some(partial) = answer.into_inner().partial_success
                    && partial.rejected_log_records > 0
                {
                    // refused for what they are: sending them again would not help
                    warn!(rejected = partial.rejected_log_records, message = %partial.error_message, "OTLP export: the collector refused some records");
                }
                Ok(())
            }
            Self::Http {
                client,
                url,
                headers,
            } => {
                let answer = client
                    .post(url.as_str())
                    .headers(headers.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
                    .body(request.encode_to_vec())
                    .send()
                    .await
                    .map_err(|e| e.without_url().to_string())?;
                if answer.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("HTTP {}", answer.status()))
                }
            }
        }
    }
}
