//! The ledger server's settings: the `[mcp]` parameters, the tunables built from them, and
//! the transports it answers on.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engines::prompts::Prompts;

/// `[mcp]`: the critiques the reasoning ledger asks the client's model for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpParams {
    /// `maxTokens` of a critique request (seed 004 Thoughtbox sampling: 500).
    pub critique_max_tokens: u32,
    /// Recent thoughts a critique request shows (seed 004 Thoughtbox sampling: 5).
    pub critique_context: usize,
    /// Seconds to wait for a critique on request-based connections (glassbox's own; seed 004
    /// gives no timeout).
    pub sampling_timeout_secs: u64,
    /// Seconds a tool call keeps trying while the store cannot be reached (a lost
    /// connection, a full disk) before it answers with the error (glassbox's own).
    pub store_retry_secs: u64,
}

impl Default for McpParams {
    fn default() -> Self {
        Self {
            critique_max_tokens: 500,
            critique_context: 5,
            sampling_timeout_secs: 180,
            store_retry_secs: 30,
        }
    }
}

/// Tunables of the ledger server.
#[derive(Clone, Debug)]
pub struct LedgerSettings {
    /// System prompt of critique requests.
    pub critique_prompt: String,
    /// `maxTokens` of a critique request.
    pub critique_max_tokens: u32,
    /// How many recent thoughts a critique request shows.
    pub critique_context: usize,
    /// How long to wait for a critique on request-based connections.
    pub sampling_timeout: Duration,
    /// How long a tool call keeps trying while the store cannot be reached.
    pub store_retry: Duration,
}

impl LedgerSettings {
    /// The settings of `[mcp]` with the `mcp/critique` prompt of `prompts`.
    pub fn from_config(config: &McpParams, prompts: &Prompts) -> Self {
        Self {
            critique_prompt: prompts.get("mcp/critique").to_string(),
            critique_max_tokens: config.critique_max_tokens,
            critique_context: config.critique_context,
            sampling_timeout: Duration::from_secs(config.sampling_timeout_secs),
            store_retry: Duration::from_secs(config.store_retry_secs),
        }
    }
}

impl Default for LedgerSettings {
    /// The built-in `[mcp]` values and critique prompt.
    fn default() -> Self {
        Self::from_config(&McpParams::default(), &Prompts::builtin())
    }
}

/// The transport a server instance answers on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    Stdio,
    Http,
}

impl TransportKind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
        }
    }
}
