//! `glassbox mcp --http`: the ledger over MCP streamable HTTP at `/mcp`, every request
//! checked against the bearer token first.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{LedgerError, LedgerServer, token};

/// The port `--http` uses when none is given.
pub const DEFAULT_PORT: u16 = 7341;
/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";
/// How much of a rejected request's body is read before answering 401.
const DRAIN_LIMIT: usize = 64 * 1024;

/// Parses `PORT`, `HOST:PORT`, `IP:PORT` or `[IPv6]:PORT`; a host name must resolve.
pub fn parse_addr(text: &str) -> Result<SocketAddr, LedgerError> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad = || {
        LedgerError::invalid(format!(
            "--http: '{text}' is not PORT, HOST:PORT or IP:PORT"
        ))
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| LedgerError::invalid(format!("--http: cannot resolve '{host}': {e}")))?
        .next()
        .ok_or_else(bad)
}

/// Binds the listener (port 0 picks a free port; ask the listener which).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, LedgerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| LedgerError::Bind { addr, source })
}

/// Answers 401 unless the request carries `Authorization: Bearer <token>`.
async fn require_token(State(expected): State<Arc<str>>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    let why = match presented {
        Some(t) if token::matches(&expected, t) => return next.run(req).await,
        Some(_) => "wrong bearer token",
        None => {
            "missing bearer token (Authorization: Bearer <token>; see `glassbox mcp --print-token`)"
        }
    };
    // Read what the client sent before answering: closing a socket with unread data resets
    // the connection, and the client might lose the 401 with it.
    let _ = axum::body::to_bytes(req.into_body(), DRAIN_LIMIT).await;
    unauthorized(why)
}

fn unauthorized(why: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer realm=\"glassbox\"")],
        format!("401 unauthorized: {why}\n"),
    )
        .into_response()
}

/// Serves MCP at `/mcp` on `listener` until `shutdown` is cancelled. Each MCP session (and
/// each stateless request) gets its own connection of `server`. Unless `allow_remote`, the
/// `Host` header must name a loopback host (DNS-rebinding protection).
pub async fn serve(
    listener: TcpListener,
    server: LedgerServer,
    bearer: String,
    allow_remote: bool,
    shutdown: CancellationToken,
) -> Result<(), LedgerError> {
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    if allow_remote {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.connection()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = Router::new()
        .route_service(ENDPOINT, service)
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                format!("not found; the MCP endpoint is {ENDPOINT}\n"),
            )
        })
        .layer(middleware::from_fn_with_state(
            Arc::<str>::from(bearer),
            require_token,
        ));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|e| LedgerError::Transport(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr("8000").unwrap(),
            "127.0.0.1:8000".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:9").unwrap(),
            "0.0.0.0:9".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:9").unwrap(), "[::1]:9".parse().unwrap());
        assert_eq!(
            parse_addr("localhost:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(parse_addr("nope").is_err());
        assert!(parse_addr("host:99999").is_err());
    }
}
