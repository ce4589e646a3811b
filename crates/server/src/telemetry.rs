//! Telemetry: logs to stderr (text or JSON) and, when an OTLP endpoint is configured,
//! one span per RPC exported over OTLP/gRPC in batches; [`Telemetry::shutdown`]
//! flushes what is still buffered.

use crate::config::{Config, LogFormat};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry.otlp_endpoint: cannot build the exporter: {0}")]
    Exporter(String),
    #[error("cannot install the log subscriber: {0}")]
    Install(String),
}

/// Holds the span exporter until shutdown.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// `telemetry.otlp_headers` as gRPC metadata; the error names the header, never its value.
fn otlp_metadata(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<tonic::metadata::MetadataMap, TelemetryError> {
    let mut metadata = tonic::metadata::MetadataMap::new();
    for (name, value) in headers {
        let bad = || {
            TelemetryError::Exporter(format!(
                "telemetry.otlp_headers.{name}: not a valid gRPC header name and value"
            ))
        };
        let key = tonic::metadata::MetadataKey::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        metadata.insert(key, value.parse().map_err(|_| bad())?);
    }
    Ok(metadata)
}

/// Installs the global subscriber. Call once, from `main`, inside the runtime.
pub fn init(config: &Config) -> Result<Telemetry, TelemetryError> {
    let filter = EnvFilter::try_new(&config.log.level).unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (text, json) = match config.log.format {
        LogFormat::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(ansi),
            ),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    let provider = match &config.telemetry.otlp_endpoint {
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint)
                .with_metadata(otlp_metadata(&config.telemetry.otlp_headers)?)
                .build()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            let resource = opentelemetry_sdk::Resource::builder()
                .with_service_name(config.telemetry.service_name.clone())
                .build();
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource)
                    .build(),
            )
        }
        None => None,
    };
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("toolgate")));
    tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .with(otel)
        .try_init()
        .map_err(|e| TelemetryError::Install(e.to_string()))?;
    Ok(Telemetry { provider })
}

impl Telemetry {
    /// Exports every buffered span, then stops the exporter.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            eprintln!("telemetry shutdown: {e}");
        }
    }
}
