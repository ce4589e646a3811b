//! `toolgate hook otel-headers`: the `Authorization` header Claude Code's own
//! telemetry sends to toolgate, printed from the hook's settings so the token never
//! goes into a settings file.

use super::hook::HookArgs;
use crate::cli::connection::Connection;
use crate::cli::hook_config::{settings_of, toolgate_env};
use crate::grpc::client::ClientConfig;

/// `toolgate hook otel-headers`: `{"Authorization": "Bearer TOKEN"}` from the hook's
/// own settings (managed configuration, flags, profile), for Claude Code's
/// `otelHeadersHelper`; exit 1, saying why on stderr, without a token.
pub(super) fn otel_headers(args: &HookArgs, conn: &Connection) -> i32 {
    let (settings, trouble) = settings_of(&args.flags(conn), &toolgate_env());
    if let Some(e) = trouble {
        eprintln!("error: {e}");
        return 1;
    }
    let config = ClientConfig {
        token: settings.conn.token.clone(),
        token_file: settings.conn.token_file.clone(),
        ..ClientConfig::default()
    };
    match config.read_token() {
        Ok(Some(token)) => {
            println!(
                "{}",
                serde_json::json!({ "Authorization": format!("Bearer {}", token.trim()) })
            );
            0
        }
        Ok(None) => {
            eprintln!(
                "error: no token for the telemetry: give --token-file, or run `toolgate login`"
            );
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
