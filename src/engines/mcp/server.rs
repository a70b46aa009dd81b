//! The rmcp server handler: tool calls, one ledger session per MCP connection, and critiques
//! from the client's own model through MCP sampling.
// Sampling is deprecated by the 2026-07-28 spec (SEP-2577), yet it is still the way a server
// asks the client's model for text — as a request on older connections and as an
// input-required round trip on newer ones — so its (deprecated) types are used here.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest,
    CreateMessageRequestParams, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListToolsResult, PaginatedRequestParams, ProtocolVersion, SamplingMessage,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::args::{self, ThoughtArgs};
use super::ledger::{self, Recorded, SessionTarget, Verdict};
use super::{LedgerError, tools};
use crate::engines::prompts::Prompts;
use crate::store::{NodeId, Session, SessionId, SessionSource, Store, StoreError};

/// How long an input-required critique waits for the client's retry.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The key of the critique request inside an input-required result.
const CRITIQUE_KEY: &str = "critique";

const INSTRUCTIONS: &str = "glassbox keeps every thought you send in its reasoning ledger. Use \
sequentialthinking exactly like the reference server, or `thought` for the ledger extras \
(session ids, thought types, critiques). Thoughts are grouped into one session per connection; \
session_start begins a new one.";

/// `[mcp]`: the critiques the reasoning ledger asks the client's model for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpParams {
    /// `maxTokens` of a critique request (seed 004 Thoughtbox sampling: 500).
    pub critique_max_tokens: u32,
    /// Recent thoughts a critique request shows (seed 004 Thoughtbox sampling: 5).
    pub critique_context: usize,
    /// Seconds to wait for a critique on request-based connections.
    pub sampling_timeout_secs: u64,
}

impl Default for McpParams {
    fn default() -> Self {
        Self {
            critique_max_tokens: 500,
            critique_context: 5,
            sampling_timeout_secs: 180,
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
}

impl LedgerSettings {
    /// The settings of `[mcp]` with the `mcp/critique` prompt of `prompts`.
    pub fn from_config(config: &McpParams, prompts: &Prompts) -> Self {
        Self {
            critique_prompt: prompts.get("mcp/critique").to_string(),
            critique_max_tokens: config.critique_max_tokens,
            critique_context: config.critique_context,
            sampling_timeout: Duration::from_secs(config.sampling_timeout_secs),
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
    fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
        }
    }
}

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

/// Runs store work on the blocking pool (a commit is an fsync).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, LedgerError> + Send + 'static,
) -> Result<T, LedgerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| LedgerError::Task(e.to_string()))?
}

/// A tool error the caller's model can read.
fn tool_error(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

/// The reference server's error shape: `{"error": …, "status": "failed"}`.
fn sequential_error(msg: &str) -> CallToolResult {
    let text = serde_json::to_string_pretty(&json!({"error": msg, "status": "failed"}))
        .unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A JSON result as pretty text and as structured content.
fn json_result(value: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

fn json_or_error(r: Result<Value, LedgerError>) -> CallToolResult {
    r.map_or_else(|e| tool_error(e.to_string()), json_result)
}

/// The reference server's output, fields in its order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SequentialOutput<'a> {
    thought_number: u32,
    total_thoughts: u32,
    next_thought_needed: bool,
    branches: &'a [String],
    thought_history_length: usize,
}

impl<'a> SequentialOutput<'a> {
    fn new(args: &ThoughtArgs, rec: &'a Recorded) -> Self {
        Self {
            thought_number: args.thought_number,
            total_thoughts: rec.total_thoughts,
            next_thought_needed: args.next_thought_needed,
            branches: &rec.branches,
            thought_history_length: rec.history_len,
        }
    }
}

/// The `thought` tool's output: the reference fields plus ids and warnings.
fn thought_output(args: &ThoughtArgs, rec: &Recorded) -> Map<String, Value> {
    let mut out = match serde_json::to_value(SequentialOutput::new(args, rec)) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    out.insert("sessionId".into(), json!(rec.session));
    out.insert("thoughtId".into(), json!(rec.node.id));
    if let Some(id) = rec.revises {
        out.insert("revisesThoughtId".into(), json!(id));
    }
    if let Some(id) = rec.branches_from {
        out.insert("branchesFromThoughtId".into(), json!(id));
    }
    if !rec.warnings.is_empty() {
        out.insert("warnings".into(), json!(rec.warnings));
    }
    out
}

/// A critique the client's model wrote.
#[derive(Debug)]
struct Critique {
    text: String,
    model: Option<String>,
    stop_reason: Option<String>,
}

/// Reads a sampling result (`CreateMessageResult` JSON); text blocks are joined. An error
/// object or an empty text is an error naming what came back.
fn critique_from_value(v: &Value) -> Result<Critique, String> {
    if v.get("code").is_some() && v.get("message").is_some() {
        let msg = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(format!("the client's model declined: {msg}"));
    }
    let blocks: Vec<&Value> = match v.get("content") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(item @ Value::Object(_)) => vec![item],
        _ => Vec::new(),
    };
    let text = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return Err("the client's model returned no text".into());
    }
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Critique {
        text,
        model: field("model"),
        stop_reason: field("stopReason"),
    })
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
        let store = self.shared.store.clone();
        let text = text.to_string();
        blocking(move || {
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
        let store = self.shared.store.clone();
        let a = args.clone();
        let rec = blocking(move || ledger::record_thought(&store, &target, &a, tool)).await?;
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

    async fn sequential_thinking(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> CallToolResult {
        let parsed = match ThoughtArgs::parse(args) {
            Ok(t) => t,
            Err(e) => return sequential_error(&e.0),
        };
        match self
            .record(&parsed, caller, tools::SEQUENTIAL_THINKING)
            .await
        {
            Ok(rec) => {
                let out = SequentialOutput::new(&parsed, &rec);
                let text = serde_json::to_string_pretty(&out).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = serde_json::to_value(&out).ok();
                r
            }
            Err(e) => sequential_error(&e.to_string()),
        }
    }

    async fn thought(
        &self,
        args: &Map<String, Value>,
        request_state: Option<String>,
        responses: Option<InputResponses>,
        caller: &Caller,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if let Some(state) = request_state {
            return self.finish_critique(&state, responses).await.into();
        }
        let parsed = match ThoughtArgs::parse_ledger(args) {
            Ok(t) => t,
            Err(e) => return tool_error(e.0).into(),
        };
        let rec = match self.record(&parsed, caller, tools::THOUGHT).await {
            Ok(r) => r,
            Err(e) => return tool_error(e.to_string()).into(),
        };
        let mut out = thought_output(&parsed, &rec);
        if !parsed.critique {
            return json_result(Value::Object(out)).into();
        }
        if !caller.sampling {
            out.insert(
                "critique".into(),
                json!({"status": "unavailable", "reason": "this client does not offer sampling, so no critique could be requested; the thought is stored"}),
            );
            return json_result(Value::Object(out)).into();
        }
        let params = match self.critique_params(&rec).await {
            Ok(p) => p,
            Err(e) => {
                out.insert(
                    "critique".into(),
                    json!({"status": "failed", "reason": e.to_string()}),
                );
                return json_result(Value::Object(out)).into();
            }
        };
        if caller.modern {
            // Newer protocol: hand the request to the client and finish when it retries.
            let token = uuid::Uuid::now_v7().simple().to_string();
            {
                let mut pending = lock(&self.shared.pending);
                pending.retain(|_, p| p.created.elapsed() < PENDING_TTL);
                pending.insert(
                    token.clone(),
                    PendingCritique {
                        thought: rec.node.id,
                        output: out,
                        created: Instant::now(),
                    },
                );
            }
            let mut requests = InputRequests::new();
            requests.insert(
                CRITIQUE_KEY.into(),
                InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            );
            return CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(token),
            ));
        }
        let reply = tokio::time::timeout(
            self.shared.settings.sampling_timeout,
            ctx.peer.create_message(params),
        )
        .await;
        let critique = match reply {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| e.to_string())
                .and_then(|v| critique_from_value(&v)),
            Ok(Err(e)) => Err(format!("the sampling request failed: {e}")),
            Err(_) => Err(format!(
                "the client's model did not answer within {} s",
                self.shared.settings.sampling_timeout.as_secs()
            )),
        };
        out.insert(
            "critique".into(),
            self.store_critique(rec.node.id, critique).await,
        );
        json_result(Value::Object(out)).into()
    }

    async fn critique_params(
        &self,
        rec: &Recorded,
    ) -> Result<CreateMessageRequestParams, LedgerError> {
        let store = self.shared.store.clone();
        let (session, node, n) = (
            rec.session,
            rec.node.id,
            self.shared.settings.critique_context,
        );
        let context = blocking(move || ledger::critique_context(&store, session, node, n)).await?;
        let s = &self.shared.settings;
        Ok(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text(context)],
            s.critique_max_tokens,
        )
        .with_system_prompt(s.critique_prompt.clone()))
    }

    /// Stores a critique (or reports why there is none) and returns the `critique` field.
    async fn store_critique(&self, thought: NodeId, critique: Result<Critique, String>) -> Value {
        let c = match critique {
            Ok(c) => c,
            Err(reason) => return json!({"status": "failed", "reason": reason}),
        };
        let store = self.shared.store.clone();
        let (text, model, stop) = (c.text.clone(), c.model.clone(), c.stop_reason.clone());
        let stored = blocking(move || {
            ledger::store_critique(&store, thought, &text, model.as_deref(), stop.as_deref())
        })
        .await;
        match stored {
            Ok(node) => {
                json!({"status": "stored", "annotationId": node.id, "model": c.model, "text": c.text})
            }
            Err(e) => json!({"status": "failed", "reason": e.to_string()}),
        }
    }

    /// The retry of an input-required `thought` call: store the critique the client sent.
    async fn finish_critique(
        &self,
        state: &str,
        responses: Option<InputResponses>,
    ) -> CallToolResult {
        let Some(pending) = lock(&self.shared.pending).remove(state) else {
            return tool_error(
                "unknown or expired critique request; the thought was stored when first sent — call again without requestState",
            );
        };
        let critique = match responses.as_ref().and_then(|r| r.get(CRITIQUE_KEY)) {
            Some(v) => critique_from_value(v),
            None => Err("the client sent no critique back".to_string()),
        };
        let mut out = pending.output;
        out.insert(
            "critique".into(),
            self.store_critique(pending.thought, critique).await,
        );
        json_result(Value::Object(out))
    }

    async fn session_start(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, LedgerError> {
        let title = args::optional_label(args, "title").map_err(|e| LedgerError::invalid(e.0))?;
        let session = self.new_session(caller, title.as_deref().unwrap_or(""));
        let store = self.shared.store.clone();
        let s = session.clone();
        let stored = blocking(move || ledger::start_session(&store, s)).await?;
        self.set_current(caller, session);
        Ok(json!({"sessionId": stored.id, "title": stored.title}))
    }

    async fn session_list(&self, args: &Map<String, Value>) -> Result<Value, LedgerError> {
        let all = args::optional_bool(args, "all")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(false);
        let limit = args::optional_count(args, "limit")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(20)
            .min(500);
        let store = self.shared.store.clone();
        let sessions = blocking(move || ledger::list_sessions(&store, all, limit as usize)).await?;
        Ok(json!({"sessions": sessions}))
    }

    async fn session_export(&self, args: &Map<String, Value>, caller: &Caller) -> CallToolResult {
        let id = match self.session_arg(args, caller).await {
            Ok(id) => id,
            Err(e) => return tool_error(e.to_string()),
        };
        let store = self.shared.store.clone();
        match blocking(move || ledger::export_session(&store, id)).await {
            Ok((text, value)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(value);
                r
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    async fn session_import(&self, args: &Map<String, Value>) -> Result<Value, LedgerError> {
        let Some(data) = args.get("data").filter(|v| !v.is_null()).cloned() else {
            return Err(LedgerError::invalid("data is required (a session export)"));
        };
        let replace = args::optional_bool(args, "replace")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(false);
        let store = self.shared.store.clone();
        let report = blocking(move || ledger::import_session(&store, &data, replace)).await?;
        serde_json::to_value(report).map_err(|e| LedgerError::invalid(e.to_string()))
    }

    async fn checkpoint(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, LedgerError> {
        let invalid = |e: args::ArgError| LedgerError::invalid(e.0);
        let verdict_text = args::required_string(args, "verdict").map_err(invalid)?;
        let verdict = Verdict::parse(&verdict_text).ok_or_else(|| {
            LedgerError::invalid(format!(
                "verdict must be verified, questionable or disagree, not \"{verdict_text}\""
            ))
        })?;
        let correction = args::optional_string(args, "correction").map_err(invalid)?;
        if let Some(c) = &correction
            && c.chars().count() > args::MAX_CORRECTION_CHARS
        {
            return Err(LedgerError::invalid(format!(
                "correction is longer than {} characters",
                args::MAX_CORRECTION_CHARS
            )));
        }
        let store = self.shared.store.clone();
        let thought = match (
            args::optional_label(args, "thoughtId").map_err(invalid)?,
            args::optional_count(args, "thoughtNumber").map_err(invalid)?,
        ) {
            (Some(id), _) => {
                let s = store.clone();
                blocking(move || Ok(s.resolve_node(&id)?)).await?
            }
            (None, Some(n)) => {
                let session = self.session_arg(args, caller).await?;
                let s = store.clone();
                blocking(move || ledger::thought_by_number(&s, session, n)).await?
            }
            (None, None) => {
                return Err(LedgerError::invalid(
                    "give thoughtId, or thoughtNumber (with sessionId if needed)",
                ));
            }
        };
        let node =
            blocking(move || ledger::checkpoint(&store, thought, verdict, correction.as_deref()))
                .await?;
        Ok(json!({
            "annotationId": node.id,
            "thoughtId": thought,
            "verdict": verdict.as_str(),
            "edge": verdict.edge().as_str(),
        }))
    }

    async fn search(&self, args: &Map<String, Value>) -> Result<Value, LedgerError> {
        let invalid = |e: args::ArgError| LedgerError::invalid(e.0);
        let query = args::required_string(args, "query").map_err(invalid)?;
        let limit = args::optional_count(args, "limit")
            .map_err(invalid)?
            .unwrap_or(20)
            .min(200);
        let session = match args::optional_label(args, "sessionId").map_err(invalid)? {
            Some(s) => Some(self.resolve_session(&s).await?),
            None => None,
        };
        let store = self.shared.store.clone();
        let q = query.clone();
        let hits = blocking(move || ledger::search(&store, &q, session, limit as usize)).await?;
        Ok(json!({"query": query, "hits": hits}))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critiques_are_read_from_single_or_many_blocks() {
        let c = critique_from_value(
            &json!({"role": "assistant", "content": {"type": "text", "text": "gap"}, "model": "m"}),
        )
        .unwrap();
        assert_eq!((c.text.as_str(), c.model.as_deref()), ("gap", Some("m")));
        let c = critique_from_value(&json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}))
            .unwrap();
        assert_eq!(c.text, "a\nb");
        assert!(
            critique_from_value(&json!({"code": -1, "message": "no"}))
                .unwrap_err()
                .contains("declined: no")
        );
        assert!(critique_from_value(&json!({"content": {"type": "text", "text": " "}})).is_err());
    }

    #[test]
    fn the_reference_output_keeps_its_field_order() {
        let args = ThoughtArgs {
            thought: "t".into(),
            thought_number: 3,
            total_thoughts: 2,
            ..Default::default()
        };
        let rec = Recorded {
            node: crate::store::Node::new(
                SessionId::new(),
                crate::store::NodeType::LedgerThought,
                "t",
            ),
            session: SessionId::new(),
            total_thoughts: 3,
            history_len: 3,
            branches: vec!["b".into()],
            revises: None,
            branches_from: None,
            warnings: vec![],
        };
        let text = serde_json::to_string_pretty(&SequentialOutput::new(&args, &rec)).unwrap();
        assert_eq!(
            text,
            "{\n  \"thoughtNumber\": 3,\n  \"totalThoughts\": 3,\n  \"nextThoughtNeeded\": false,\n  \"branches\": [\n    \"b\"\n  ],\n  \"thoughtHistoryLength\": 3\n}"
        );
    }
}
