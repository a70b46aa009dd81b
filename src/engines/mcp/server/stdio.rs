//! The stdio transport: one connection on stdin/stdout, served on a runtime of its own.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;

use super::super::LedgerError;
use super::LedgerServer;

/// Serves one MCP connection on stdin/stdout until the client closes it. It runs on a
/// runtime of its own with one thread, so requests a client pipelines start — and their
/// thoughts are recorded — in the order they arrived.
pub async fn serve_stdio(server: LedgerServer) -> Result<(), LedgerError> {
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("mcp-stdio".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => {
                    let outcome = rt.block_on(serve_stdio_here(server));
                    rt.shutdown_timeout(Duration::from_secs(1));
                    outcome
                }
                Err(e) => Err(LedgerError::Transport(format!(
                    "cannot start the stdio runtime: {e}"
                ))),
            };
            let _ = done.send(outcome);
        })
        .map_err(|e| LedgerError::Transport(format!("cannot start the stdio thread: {e}")))?;
    result
        .await
        .map_err(|_| LedgerError::Task("the stdio server thread stopped".into()))?
}

async fn serve_stdio_here(server: LedgerServer) -> Result<(), LedgerError> {
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            running
                .waiting()
                .await
                .map_err(|e| LedgerError::Transport(e.to_string()))?;
            Ok(())
        }
        // The client went away before saying anything: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(e) => Err(LedgerError::Transport(e.to_string())),
    }
}
