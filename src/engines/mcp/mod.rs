//! The MCP reasoning ledger: `glassbox mcp` serves the `sequentialthinking` tool and the
//! ledger tools over stdio or streamable HTTP, and keeps every thought in the store.

pub mod args;
pub mod http;
pub mod ledger;
pub mod server;
pub mod token;
mod tools;

use std::path::PathBuf;

use crate::store::StoreError;

pub use server::{LedgerServer, LedgerSettings, McpParams, serve_stdio};

/// What can go wrong running the ledger server.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("token file {} is malformed; delete it to generate a new token", path.display())]
    BadToken { path: PathBuf },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("MCP transport failed: {0}")]
    Transport(String),
    #[error("a store task failed: {0}")]
    Task(String),
}

impl LedgerError {
    /// A bad-input error with a message fit for a tool result.
    pub fn invalid(msg: impl Into<String>) -> Self {
        LedgerError::Invalid(msg.into())
    }
}
