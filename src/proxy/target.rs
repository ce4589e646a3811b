//! Where the proxied MCP server is (a command run as a child, or a Streamable HTTP
//! URL) and one MCP client connection to it, which both the shared upstream
//! (`upstream.rs`) and each session's own (`relay.rs`) open.

use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};

/// Where the upstream server is.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command and its arguments, run as a child speaking MCP on stdio.
    Command(Vec<String>),
    /// A Streamable HTTP endpoint.
    Url(String),
}

/// One MCP client connection to `target`, its server-to-client traffic handled by
/// `handler`: the shared connection that follows the tool list, or a downstream
/// session's own.
pub async fn connect<H: ClientHandler>(
    target: &Target,
    handler: H,
) -> Result<RunningService<RoleClient, H>, String> {
    let running = match target {
        Target::Command(argv) => {
            let (program, args) = argv.split_first().ok_or("no upstream command given")?;
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            let transport = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| format!("spawn {program:?}: {e}"))?
                .0;
            handler.serve(transport).await.map_err(|e| e.to_string())?
        }
        Target::Url(url) => {
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            handler.serve(transport).await.map_err(|e| e.to_string())?
        }
    };
    // the proxy refilters on every list change: never serve a cached list
    running
        .peer()
        .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    Ok(running)
}
