//! The browser console: its assets, built into the binary from `console/dist/`, served
//! on `console.listen` beside the HTTP API they call, so both share one origin and
//! CORS stays off.

mod assets;

use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use assets::{ASSETS, Asset};

/// The content security policy of every answer on the console's listener: scripts,
/// styles and calls from this origin only, nothing inline, no `eval`, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every answer on the console's listener carries, API answers included.
pub const SECURITY_HEADERS: [(&str, &str); 6] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// The console's router: its assets at `/`, and `api` (the HTTP API, whose paths are
/// `/toolgate.v1.<Service>/<Method>`) for everything else, every answer with
/// [`SECURITY_HEADERS`].
pub fn router(api: axum::Router) -> axum::Router {
    let mut router = axum::Router::new();
    for asset in ASSETS {
        router = router.route(
            asset.path,
            axum::routing::get(move || async move { serve_asset(asset) }),
        );
    }
    router
        .merge(api)
        .fallback(not_found)
        .layer(axum::middleware::map_response(with_security_headers))
}

fn serve_asset(asset: &'static Asset) -> Response {
    (
        [
            (header::CONTENT_TYPE, asset.content_type),
            // the assets change with the binary: always revalidate
            (header::CACHE_CONTROL, "no-cache"),
        ],
        asset.body,
    )
        .into_response()
}

async fn not_found(method: Method) -> Response {
    let status = if method == Method::GET || method == Method::HEAD {
        StatusCode::NOT_FOUND
    } else {
        StatusCode::METHOD_NOT_ALLOWED
    };
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "not found\n",
    )
        .into_response()
}

async fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

/// Serves `router` on `listener` until `stop` is cancelled. The address is logged
/// (`console` with `addr`), so a server started on port 0 can be found.
pub async fn serve(listener: TcpListener, router: axum::Router, stop: CancellationToken) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, url = %format!("http://{addr}/"), "console");
    }
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await;
    if let Err(e) = served {
        tracing::warn!(error = %e, "console stopped");
    }
}
