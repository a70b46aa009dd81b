//! Keeping a session within its context and budget: the `[budget]` parameters, the
//! summary of older turns the orchestrator makes before a turn, and the compaction a
//! provider makes while it answers.

use chrono::Utc;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::collections::HashSet;

use super::history::{session_history, superseded_in};
use super::live::Live;
use super::{Orchestrator, TurnEvent};
use crate::engines::llm::{CallCtx, ChatRequest, Compaction, Message, Role, StreamEvent, Usage};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, Session, StoreError};

/// Meta flag of a compaction node whose summary the provider wrote (server-side
/// compaction); such a summary is sent back as the provider's own block.
pub const SERVER_SIDE: &str = "server_side";

/// Session meta key counting the compactions of its history.
pub const COMPACTIONS: &str = "compactions";

/// True for a compaction node the provider produced (see [`SERVER_SIDE`]).
pub fn is_server_side_compaction(n: &Node) -> bool {
    n.kind == NodeType::Compaction
        && n.meta.get(SERVER_SIDE).and_then(serde_json::Value::as_bool) == Some(true)
}

/// What goes back to the provider for a compaction node it produced.
pub(super) fn server_side_block(n: &Node) -> Compaction {
    Compaction {
        summary: n.text.clone(),
        encrypted_content: n
            .meta
            .get("encrypted_content")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
    }
}

/// Adds one to the session's compaction count.
pub(super) fn count_compaction(session: &mut Session) {
    let n = session
        .meta
        .get(COMPACTIONS)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    session.meta.insert(COMPACTIONS.into(), json!(n + 1));
}

/// `[budget]`: per-session token budget and history compaction (seed 000 Orchestrator:
/// cumulative output tokens per session, a warning at a configurable percentage).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetParams {
    /// Output tokens one session may use; 0 for no limit (seed 000 leaves the number to
    /// config; 200,000 is glassbox's).
    pub session_tokens: u64,
    /// Share of `session_tokens` at which a warning shows (seed 000: configurable; glassbox
    /// warns at 80%).
    pub warn_percent: u8,
    /// The model's context in tokens; 0 leaves it to the provider.
    pub context_tokens: u32,
    /// Share of the context the history may fill before older turns are compacted
    /// (glassbox's own; seed 000 lets the provider compact near its limit).
    pub compact_at_percent: u8,
    /// Newest turns a compaction keeps verbatim (glassbox's own).
    pub keep_recent_turns: usize,
}

impl Default for BudgetParams {
    fn default() -> Self {
        Self {
            session_tokens: 200_000,
            warn_percent: 80,
            context_tokens: 0,
            compact_at_percent: 75,
            keep_recent_turns: 2,
        }
    }
}

/// Characters per token of the rough count that decides when to compact.
const CHARS_PER_TOKEN: u64 = 4;
/// Tokens counted for each message on top of its text (role and framing).
const TOKENS_PER_MESSAGE: u64 = 4;
/// Answer tokens of the summary of older turns: a few sentences.
const SUMMARY_TOKENS: u32 = 512;
/// The summary is sampled greedily, so the same history summarises the same way.
const SUMMARY_TEMPERATURE: f32 = 0.0;

/// A rough token count, enough to decide when to compact.
fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let summary = m
                .compaction
                .as_ref()
                .map_or(0, |c| c.summary.chars().count());
            (m.content.chars().count() + summary) as u64 / CHARS_PER_TOKEN + TOKENS_PER_MESSAGE
        })
        .sum()
}

/// What a continued session sends: its history, the nodes that history stands for (what a
/// compaction by the provider would supersede), and whether older turns were just compacted.
pub(super) struct Prepared {
    pub(super) history: Vec<Message>,
    pub(super) live: Vec<NodeId>,
    pub(super) compacted: bool,
}

impl Orchestrator {
    /// The history to send for `question`; when it would fill more than the configured share
    /// of the context, older turns are first summarised by the model into a compaction node
    /// that supersedes them. `superseded` holds what earlier compactions superseded.
    pub(super) async fn compact_if_needed(
        &self,
        session: &Session,
        nodes: &[Node],
        superseded: HashSet<NodeId>,
        question: &str,
        events: &mpsc::UnboundedSender<TurnEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Prepared> {
        let history = session_history(nodes, &superseded);
        let unchanged = |history| Prepared {
            history,
            live: nodes
                .iter()
                .filter(|n| !superseded.contains(&n.id))
                .map(|n| n.id)
                .collect(),
            compacted: false,
        };
        let limit =
            u64::from(self.context_tokens) * u64::from(self.budget.compact_at_percent) / 100;
        let needed = estimate_tokens(&history) + question.chars().count() as u64 / CHARS_PER_TOKEN;
        if limit == 0 || needed <= limit {
            return Ok(unchanged(history));
        }
        // Keep the newest turns verbatim; everything older (and any earlier summary) goes.
        let live: Vec<&Node> = nodes
            .iter()
            .filter(|n| !superseded.contains(&n.id))
            .collect();
        let query_positions: Vec<usize> = live
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeType::Query)
            .map(|(i, _)| i)
            .collect();
        let keep_from = query_positions
            .len()
            .checked_sub(self.budget.keep_recent_turns)
            .and_then(|i| query_positions.get(i).copied())
            .unwrap_or(0);
        let old: Vec<&Node> = live[..keep_from].to_vec();
        if old.is_empty() {
            return Ok(unchanged(history));
        }
        let old_nodes: Vec<Node> = old.iter().map(|n| (*n).clone()).collect();
        let mut transcript = String::new();
        for m in session_history(&old_nodes, &HashSet::new()) {
            let who = if m.role == Role::User {
                "User"
            } else {
                "Assistant"
            };
            if let Some(c) = &m.compaction {
                transcript.push_str(&format!(
                    "Summary of the conversation before: {}\n\n",
                    c.summary
                ));
            }
            if !m.content.is_empty() {
                transcript.push_str(&format!("{who}: {}\n\n", m.content));
            }
        }
        let mut req = ChatRequest::new(
            self.model.clone(),
            vec![Message::user(format!(
                "{}\n\n{transcript}",
                self.compaction_prompt
            ))],
        );
        req.max_tokens = SUMMARY_TOKENS;
        req.temperature = Some(SUMMARY_TEMPERATURE);
        let mut stream = self.provider.stream(
            req,
            CallCtx {
                cancel: cancel.clone(),
                raw: None,
            },
        );
        let mut summary = String::new();
        let mut usage = Usage::default();
        while let Some(ev) = stream.next().await {
            match ev {
                StreamEvent::TextDelta { text } => summary.push_str(&text),
                StreamEvent::Usage { usage: u } => usage = u,
                StreamEvent::Error { error } => {
                    anyhow::bail!("compacting the history failed: {error}")
                }
                _ => {}
            }
        }
        if summary.trim().is_empty() {
            return Ok(unchanged(history));
        }
        let mut node = Node::new(session.id, NodeType::Compaction, summary.trim().to_string());
        node.model = Some(self.model.clone());
        node.meta.insert("usage".into(), json!(usage));
        node.meta.insert("superseded".into(), json!(old.len()));
        let stored = node.clone();
        let old_ids: Vec<NodeId> = old.iter().map(|n| n.id).collect();
        self.store
            .write_async(move |w| {
                w.put_node(&stored)?;
                for id in old_ids {
                    w.put_edge(&Edge::new(stored.id, EdgeType::Supersedes, id))?;
                }
                Ok(())
            })
            .await?;
        let _ = events.send(TurnEvent::Compacted {
            node: node.id,
            superseded: old.len(),
        });
        let mut all = nodes.to_vec();
        all.push(node);
        let superseded = superseded_in(&self.store, &all).await?;
        Ok(Prepared {
            history: session_history(&all, &superseded),
            live: all
                .iter()
                .filter(|n| !superseded.contains(&n.id))
                .map(|n| n.id)
                .collect(),
            compacted: true,
        })
    }

    /// Records a compaction the provider made while answering: one compaction node per turn
    /// holding its summary, superseding every node this turn's history stood for, and one
    /// more compaction on the session. A later summary in the same response covers the
    /// earlier one, so it replaces that node's text.
    pub(super) async fn provider_compaction(
        &self,
        live: &mut Live,
        session: &mut Session,
        prior: &[NodeId],
        summary: String,
        encrypted_content: Option<String>,
        events: &mpsc::UnboundedSender<TurnEvent>,
    ) -> Result<(), StoreError> {
        let set_encrypted = |node: &mut Node| match &encrypted_content {
            Some(e) => {
                node.meta.insert("encrypted_content".into(), json!(e));
            }
            None => {
                node.meta.remove("encrypted_content");
            }
        };
        if let Some(node) = live.compaction.as_mut() {
            node.text = summary;
            set_encrypted(node);
            let node = node.clone();
            return self.store.write_async(move |w| w.put_node(&node)).await;
        }
        let mut node = Node::new(session.id, NodeType::Compaction, summary);
        set_encrypted(&mut node);
        node.model = Some(self.model.clone());
        node.raw_stream = Some(live.stream);
        node.meta.insert(SERVER_SIDE.into(), json!(true));
        node.meta
            .insert("provider".into(), json!(self.provider.name()));
        node.meta.insert("superseded".into(), json!(prior.len()));
        count_compaction(session);
        session.updated_at = Utc::now();
        let (stored, s, prior_ids) = (node.clone(), session.clone(), prior.to_vec());
        self.store
            .write_async(move |w| {
                w.put_node(&stored)?;
                for id in prior_ids {
                    w.put_edge(&Edge::new(stored.id, EdgeType::Supersedes, id))?;
                }
                w.put_session(&s)
            })
            .await?;
        let _ = events.send(TurnEvent::Compacted {
            node: node.id,
            superseded: prior.len(),
        });
        live.compaction = Some(node);
        // The next flush lists it among the raw stream's nodes.
        live.dirty = true;
        Ok(())
    }
}
