//! The rmcp server handler: tool calls, one ledger session per MCP connection, and critiques
//! from the client's own model through MCP sampling.
//!
//! This file holds the server, its connections and sessions, and the tool dispatch; the
//! tools live by concern: `thoughts` (recording thoughts and their critiques), `ledger_tools`
//! (sessions, checkpoints, search), with `output` shaping results, `params` the settings and
//! `stdio` the stdio transport. Store work runs through `LedgerServer::store_call`, which
//! waits out a store that cannot be reached.
// Sampling is deprecated by the 2026-07-28 spec (SEP-2577), yet it is still the way a server
// asks the client's model for text — as a request on older connections and as an
// input-required round trip on newer ones — so its (deprecated) types are used here.
#![allow(deprecated)]

mod ledger_tools;
mod output;
mod params;
mod stdio;
#[cfg(test)]
mod tests;
mod thoughts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use super::args::{self, ThoughtArgs};
use super::ledger::{self, Recorded, SessionTarget};
use super::{LedgerError, tools};
use crate::store::{NodeId, Session, SessionId, SessionSource, Store, StoreError};
use output::json_or_error;

pub use params::{LedgerSettings, McpParams, TransportKind};
pub use stdio::serve_stdio;

/// The first wait before a store call is tried again; each later wait doubles, up to
/// `STORE_RETRY_LONGEST`.
const STORE_RETRY_FIRST: Duration = Duration::from_millis(250);
const STORE_RETRY_LONGEST: Duration = Duration::from_secs(5);

/// How long an input-required critique waits for the client's retry.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The key of the critique request inside an input-required result.
const CRITIQUE_KEY: &str = "critique";

const INSTRUCTIONS: &str = "glassbox keeps every thought you send in its reasoning ledger. Use \
sequentialthinking exactly like the reference server, or `thought` for the ledger extras \
(session ids, thought types, critiques). Thoughts are grouped into one session per connection; \
session_start begins a new one.";

/// A thought stored while its critique is out with the client (input-required round trip).
struct PendingCritique {
    thought: NodeId,
    output: Map<String, Value>,
    created: Instant,
}

/// The current session of a client that talks statelessly (2026-07-28 over HTTP).
struct StatelessSession {
    session: Session,
    thoughts: usize,
}

/// State every connection of one server process shares.
struct Shared {
    store: Store,
    settings: LedgerSettings,
    tools: Vec<Tool>,
    pending: Mutex<HashMap<String, PendingCritique>>,
    stateless: Mutex<HashMap<String, StatelessSession>>,
    /// Thoughts are recorded one at a time (FIFO), so calls a client pipelines are stored in
    /// the order they started and each sees the history before it. (Two processes writing
    /// one named session can still interleave; each commit stays whole.)
    record_gate: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The MCP server: one value per connection, sharing the store and settings.
#[derive(Clone)]
pub struct LedgerServer {
    shared: Arc<Shared>,
    /// This connection's session (created in the store with its first thought).
    conn: Arc<Mutex<Option<Session>>>,
    transport: TransportKind,
}

/// What a request says about its client.
struct Caller {
    /// No connection exists (2026-07-28 over HTTP): sessions are kept per client name.
    stateless: bool,
    /// The request-based sampling of older protocol versions is forbidden.
    modern: bool,
    sampling: bool,
    client: Option<Implementation>,
    protocol: Option<String>,
}

impl Caller {
    fn key(&self) -> String {
        self.client
            .as_ref()
            .map_or_else(|| "unknown client".to_string(), |c| c.name.clone())
    }
}

impl LedgerServer {
    /// A server on `store`; `transport` decides how sessions map to connections.
    pub fn new(store: Store, settings: LedgerSettings, transport: TransportKind) -> Self {
        let shared = Shared {
            store,
            settings,
            tools: tools::all(),
            pending: Mutex::new(HashMap::new()),
            stateless: Mutex::new(HashMap::new()),
            record_gate: tokio::sync::Mutex::new(()),
        };
        Self {
            shared: Arc::new(shared),
            conn: Arc::new(Mutex::new(None)),
            transport,
        }
    }

    /// A new connection sharing this server's store and state (the HTTP service factory).
    pub fn connection(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            conn: Arc::new(Mutex::new(None)),
            transport: self.transport,
        }
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        let protocol = ctx.protocol_version();
        let modern = protocol
            .as_ref()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let sampling = ctx
            .client_capabilities()
            .is_some_and(|c| c.sampling.is_some());
        Caller {
            stateless: modern && self.transport == TransportKind::Http,
            modern,
            sampling,
            client: ctx.client_info(),
            protocol: protocol.map(|p| p.as_str().to_string()),
        }
    }

    fn new_session(&self, caller: &Caller, title: &str) -> Session {
        let mut s = Session::new(title, SessionSource::Mcp);
        s.meta
            .insert("transport".into(), json!(self.transport.as_str()));
        if let Some(c) = &caller.client {
            s.meta.insert("client".into(), json!(c.name));
            s.meta.insert("clientVersion".into(), json!(c.version));
        }
        if let Some(p) = &caller.protocol {
            s.meta.insert("protocolVersion".into(), json!(p));
        }
        s
    }

    /// Where a thought without a session id goes: this connection's session, or for a
    /// stateless client its current one — a new one when a fresh chain (thought 1, neither
    /// a revision nor a branch) starts after earlier thoughts.
    fn connection_target(&self, caller: &Caller, fresh_chain: bool) -> SessionTarget {
        if caller.stateless {
            let mut map = lock(&self.shared.stateless);
            let key = caller.key();
            let roll = map.get(&key).is_none_or(|e| fresh_chain && e.thoughts > 0);
            if roll {
                map.insert(
                    key.clone(),
                    StatelessSession {
                        session: self.new_session(caller, ""),
                        thoughts: 0,
                    },
                );
            }
            match map.get(&key) {
                Some(e) => SessionTarget::Create(e.session.clone()),
                None => SessionTarget::Create(self.new_session(caller, "")),
            }
        } else {
            let mut conn = lock(&self.conn);
            SessionTarget::Create(
                conn.get_or_insert_with(|| self.new_session(caller, ""))
                    .clone(),
            )
        }
    }

    fn current_session(&self, caller: &Caller) -> Option<SessionId> {
        if caller.stateless {
            lock(&self.shared.stateless)
                .get(&caller.key())
                .map(|e| e.session.id)
        } else {
            lock(&self.conn).as_ref().map(|s| s.id)
        }
    }

    fn set_current(&self, caller: &Caller, session: Session) {
        if caller.stateless {
            lock(&self.shared.stateless).insert(
                caller.key(),
                StatelessSession {
                    session,
                    thoughts: 0,
                },
            );
        } else {
            *lock(&self.conn) = Some(session);
        }
    }

    /// A session named in the arguments, which must exist.
    async fn resolve_session(&self, text: &str) -> Result<SessionId, LedgerError> {
        let text = text.to_string();
        self.store_call(move |store| {
            let id = store.resolve_session(&text)?;
            match store.session(id)? {
                Some(_) => Ok(id),
                None => Err(StoreError::NotFound(format!("session '{text}'")).into()),
            }
        })
        .await
    }

    /// The session named by `sessionId`, else this connection's.
    async fn session_arg(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<SessionId, LedgerError> {
        match args::optional_label(args, "sessionId").map_err(|e| LedgerError::invalid(e.0))? {
            Some(s) => self.resolve_session(&s).await,
            None => self.current_session(caller).ok_or_else(|| {
                LedgerError::invalid(
                    "this connection has no session yet; pass sessionId (see session_list)",
                )
            }),
        }
    }

    /// Runs `f` on the store (on tokio's blocking pool). While the store cannot be reached
    /// (a lost connection, a full disk) it waits, 250 ms doubling up to 5 s, and runs `f`
    /// again, for up to `store_retry` in all; then the error is the answer. `f` must be safe
    /// to run twice: a read, or a write whose ids were chosen before the first try.
    async fn store_call<T, F>(&self, f: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: Fn(&Store) -> Result<T, LedgerError> + Clone + Send + 'static,
    {
        let until = Instant::now() + self.shared.settings.store_retry;
        let mut wait = STORE_RETRY_FIRST;
        loop {
            match self.shared.store.run_blocking(f.clone()).await {
                Err(LedgerError::Store(StoreError::Io(e))) if Instant::now() + wait <= until => {
                    tracing::warn!(error = %e, wait_ms = wait.as_millis() as u64, "the store cannot be reached; trying again");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(STORE_RETRY_LONGEST);
                }
                done => return done,
            }
        }
    }

    async fn record(
        &self,
        args: &ThoughtArgs,
        caller: &Caller,
        tool: &'static str,
    ) -> Result<Recorded, LedgerError> {
        let fresh_chain = args.thought_number == 1
            && args.revises().is_none()
            && args.branch_from_thought.is_none();
        let _turn = self.shared.record_gate.lock().await;
        let target = match &args.session_id {
            Some(s) => SessionTarget::Existing(self.resolve_session(s).await?),
            None => self.connection_target(caller, fresh_chain),
        };
        let (a, id) = (args.clone(), NodeId::new());
        let rec = self
            .store_call(move |store| ledger::record_thought(store, &target, &a, tool, id))
            .await?;
        if caller.stateless
            && args.session_id.is_none()
            && let Some(e) = lock(&self.shared.stateless).get_mut(&caller.key())
            && e.session.id == rec.session
        {
            e.thoughts += 1;
        }
        tracing::info!(session = %rec.session, node = %rec.node.id, number = args.thought_number, tool, "thought stored");
        Ok(rec)
    }
}

impl ServerHandler for LedgerServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("glassbox", env!("CARGO_PKG_VERSION"))
                    .with_title("glassbox reasoning ledger"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context);
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            tools::SEQUENTIAL_THINKING => self.sequential_thinking(&args, &caller).await,
            tools::THOUGHT => {
                return Ok(self
                    .thought(
                        &args,
                        request.request_state,
                        request.input_responses,
                        &caller,
                        &context,
                    )
                    .await);
            }
            tools::SESSION_START => json_or_error(self.session_start(&args, &caller).await),
            tools::SESSION_LIST => json_or_error(self.session_list(&args).await),
            tools::SESSION_EXPORT => self.session_export(&args, &caller).await,
            tools::SESSION_IMPORT => json_or_error(self.session_import(&args).await),
            tools::CHECKPOINT => json_or_error(self.checkpoint(&args, &caller).await),
            tools::SEARCH => json_or_error(self.search(&args).await),
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool '{other}'; this server has {}",
                        tools::NAMES.join(", ")
                    ),
                    None,
                ));
            }
        };
        if result.is_error == Some(true) {
            tracing::info!(tool = %request.name, "tool call failed");
        }
        Ok(result.into())
    }
}
