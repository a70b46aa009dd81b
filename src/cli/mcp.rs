//! `glassbox mcp`: the reasoning ledger as an MCP server, over stdio (default) or streamable
//! HTTP with a bearer token.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::engines::mcp::server::TransportKind;
use crate::engines::mcp::{LedgerServer, LedgerSettings, http, serve_stdio, token};

/// Options of `glassbox mcp`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  claude mcp add glassbox -- glassbox mcp\n  glassbox mcp --http\n  glassbox mcp --http 127.0.0.1:8931\n  glassbox mcp --print-token"
)]
pub struct McpArgs {
    /// Serve MCP streamable HTTP at http://ADDR/mcp instead of stdio (ADDR: PORT or HOST:PORT;
    /// default 127.0.0.1:7341). Every request needs the bearer token.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7341")]
    pub http: Option<String>,
    /// Allow --http to bind an address other machines can reach.
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Print the HTTP bearer token (generating it on first use) and exit.
    #[arg(long, conflicts_with_all = ["http", "allow_remote"])]
    pub print_token: bool,
}

/// `[mcp]` and the critique prompt (`<config dir>/prompts/mcp/critique.md` overrides it).
fn settings(ctx: &Ctx) -> LedgerSettings {
    LedgerSettings::from_config(&ctx.loaded.config.mcp, &ctx.prompts())
}

/// Runs `glassbox mcp`. Nothing but MCP messages ever goes to stdout in stdio mode.
pub async fn run(ctx: &Ctx, args: McpArgs) -> Result<ExitCode> {
    if args.print_token {
        let t = token::load_or_create(&ctx.paths.config_dir)?;
        if t.created {
            note(&format!("created {}", t.path.display()));
        }
        println!("{}", t.value);
        return Ok(ExitCode::SUCCESS);
    }
    let store = ctx.open_store()?;
    let Some(addr_text) = args.http else {
        tracing::info!(store = %store.path().display(), "mcp: serving stdio");
        serve_stdio(LedgerServer::new(
            store,
            settings(ctx),
            TransportKind::Stdio,
        ))
        .await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = http::parse_addr(&addr_text)?;
    if !addr.ip().is_loopback() && !args.allow_remote {
        bail!(
            "--http {addr} would let other machines reach the ledger; pass --allow-remote to do that, or bind 127.0.0.1"
        );
    }
    let bearer = token::load_or_create(&ctx.paths.config_dir)?;
    let listener = http::bind(addr).await?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    // Signals are caught from here on, before anyone is told the server is up.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot catch SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot catch SIGTERM")?;
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        on_signal.cancel();
    });
    if !addr.ip().is_loopback() {
        note(&format!(
            "warning: listening on {bound}, reachable from other machines; anyone with the token can read and write the ledger. Put TLS in front of it for untrusted networks."
        ));
    }
    note(&format!(
        "send `Authorization: Bearer <token>`; the token is in {} (glassbox mcp --print-token)",
        bearer.path.display()
    ));
    note(&format!(
        "MCP ledger listening on http://{bound}{}",
        http::ENDPOINT
    ));
    tracing::info!(%bound, "mcp: serving http");
    let server = LedgerServer::new(store, settings(ctx), TransportKind::Http);
    http::serve(listener, server, bearer.value, args.allow_remote, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// A status line on stderr. A server whose stderr nobody reads any more keeps serving.
fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "glassbox: {line}");
}
