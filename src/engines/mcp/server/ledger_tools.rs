//! The ledger tools: starting, listing, exporting and importing sessions, human
//! checkpoints on thoughts, and full-text search.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::super::ledger::Verdict;
use super::LedgerError;
use super::output::tool_error;
use super::{Caller, LedgerServer, args, ledger};
use crate::store::NodeId;

/// Sessions `session_list` shows when no limit is given, and the most it shows (the tool's
/// schema states both).
const LIST_DEFAULT: u32 = 20;
const LIST_MAX: u32 = 500;
/// Hits `search` returns when no limit is given, and the most it returns (as its schema
/// states).
const SEARCH_DEFAULT: u32 = 20;
const SEARCH_MAX: u32 = 200;

impl LedgerServer {
    pub(super) async fn session_start(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, LedgerError> {
        let title = args::optional_label(args, "title").map_err(|e| LedgerError::invalid(e.0))?;
        let session = self.new_session(caller, title.as_deref().unwrap_or(""));
        let s = session.clone();
        let stored = self
            .store_call(move |store| ledger::start_session(store, s.clone()))
            .await?;
        self.set_current(caller, session);
        Ok(json!({"sessionId": stored.id, "title": stored.title}))
    }

    pub(super) async fn session_list(
        &self,
        args: &Map<String, Value>,
    ) -> Result<Value, LedgerError> {
        let all = args::optional_bool(args, "all")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(false);
        let limit = args::optional_count(args, "limit")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(LIST_DEFAULT)
            .min(LIST_MAX);
        let sessions = self
            .store_call(move |store| ledger::list_sessions(store, all, limit as usize))
            .await?;
        Ok(json!({"sessions": sessions}))
    }

    pub(super) async fn session_export(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> CallToolResult {
        let id = match self.session_arg(args, caller).await {
            Ok(id) => id,
            Err(e) => return tool_error(e.to_string()),
        };
        let exported = self
            .store_call(move |store| ledger::export_session(store, id))
            .await;
        match exported {
            Ok((text, value)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(value);
                r
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    pub(super) async fn session_import(
        &self,
        args: &Map<String, Value>,
    ) -> Result<Value, LedgerError> {
        let Some(data) = args.get("data").filter(|v| !v.is_null()).cloned() else {
            return Err(LedgerError::invalid("data is required (a session export)"));
        };
        let replace = args::optional_bool(args, "replace")
            .map_err(|e| LedgerError::invalid(e.0))?
            .unwrap_or(false);
        let report = self
            .shared
            .store
            .run_blocking(move |store| ledger::import_session(store, &data, replace))
            .await?;
        serde_json::to_value(report).map_err(|e| LedgerError::invalid(e.to_string()))
    }

    pub(super) async fn checkpoint(
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
        let thought = match (
            args::optional_label(args, "thoughtId").map_err(invalid)?,
            args::optional_count(args, "thoughtNumber").map_err(invalid)?,
        ) {
            (Some(id), _) => {
                self.store_call(move |store| Ok(store.resolve_node(&id)?))
                    .await?
            }
            (None, Some(n)) => {
                let session = self.session_arg(args, caller).await?;
                self.store_call(move |store| ledger::thought_by_number(store, session, n))
                    .await?
            }
            (None, None) => {
                return Err(LedgerError::invalid(
                    "give thoughtId, or thoughtNumber (with sessionId if needed)",
                ));
            }
        };
        let id = NodeId::new();
        let node = self
            .store_call(move |store| {
                ledger::checkpoint(store, thought, id, verdict, correction.as_deref())
            })
            .await?;
        Ok(json!({
            "annotationId": node.id,
            "thoughtId": thought,
            "verdict": verdict.as_str(),
            "edge": verdict.edge().as_str(),
        }))
    }

    pub(super) async fn search(&self, args: &Map<String, Value>) -> Result<Value, LedgerError> {
        let invalid = |e: args::ArgError| LedgerError::invalid(e.0);
        let query = args::required_string(args, "query").map_err(invalid)?;
        let limit = args::optional_count(args, "limit")
            .map_err(invalid)?
            .unwrap_or(SEARCH_DEFAULT)
            .min(SEARCH_MAX);
        let session = match args::optional_label(args, "sessionId").map_err(invalid)? {
            Some(s) => Some(self.resolve_session(&s).await?),
            None => None,
        };
        let q = query.clone();
        let hits = self
            .store_call(move |store| ledger::search(store, &q, session, limit as usize))
            .await?;
        Ok(json!({"query": query, "hits": hits}))
    }
}
