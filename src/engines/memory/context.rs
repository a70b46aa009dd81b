//! Memory in a think turn: what the model is shown before the conversation (core facts,
//! working memory and the most relevant archival and recall entries, within a token
//! budget) and what the turn leaves behind (its query and answer in recall, FIFO).

use chrono::Utc;
use serde::Serialize;

use super::index::SearchMode;
use super::{Memory, Result, tokens};
use crate::engines::llm::wire::one_line;
use crate::engines::orchestrator::FinishedTurn;
use crate::store::{CoreSection, MemoryEntry, MemoryId, MemoryTier, NodeId, Provenance};

/// The memory shown to the model for one question.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ContextBlock {
    pub text: String,
    /// Every entry the text includes, in order.
    pub used: Vec<MemoryId>,
}

impl Memory {
    /// Core facts, then working memory (most important first), then the best archival and
    /// recall entries for `question` that score at least `context_min_score`, as long as
    /// the whole stays within `context_tokens`. `None` when memory holds nothing to show.
    pub fn context_for(&self, question: &str) -> Result<Option<ContextBlock>> {
        let budget = self.params.context_tokens as u64;
        let mut used_tokens = 0u64;
        let mut block = ContextBlock::default();
        let mut take = |e: &MemoryEntry, line: String, block: &mut ContextBlock| -> bool {
            let t = tokens(&line) + 1;
            if used_tokens + t > budget {
                return false;
            }
            used_tokens += t;
            block.text.push_str(&line);
            block.text.push('\n');
            block.used.push(e.id);
            true
        };
        let core = self.entries(MemoryTier::Core)?;
        for (section, heading) in [
            (CoreSection::Human, "About the person you are talking with:"),
            (CoreSection::Agent, "About yourself:"),
        ] {
            let facts: Vec<&MemoryEntry> = core
                .iter()
                .rev()
                .filter(|e| e.section == Some(section))
                .collect();
            if facts.is_empty() {
                continue;
            }
            block.text.push_str(heading);
            block.text.push('\n');
            for e in facts {
                take(
                    e,
                    format!("- {}", one_line(&e.content, usize::MAX)),
                    &mut block,
                );
            }
        }
        let mut working = self.entries(MemoryTier::Working)?;
        working.sort_by(|a, b| b.importance.total_cmp(&a.importance));
        if !working.is_empty() {
            block.text.push_str("Working memory:\n");
            for e in &working {
                if !take(
                    e,
                    format!("- {}", one_line(&e.content, usize::MAX)),
                    &mut block,
                ) {
                    break;
                }
            }
        }
        let hits = self.find(
            question,
            &[MemoryTier::Archival, MemoryTier::Recall],
            self.params.context_top_k,
            SearchMode::Hybrid,
            Default::default(),
        )?;
        let relevant: Vec<_> = hits
            .into_iter()
            .filter(|h| h.score >= self.params.context_min_score)
            .collect();
        if !relevant.is_empty() {
            block.text.push_str("Memories that may be relevant:\n");
            for h in &relevant {
                let line = format!(
                    "- [{}] {}",
                    h.entry.created_at.format("%Y-%m-%d"),
                    one_line(&h.entry.content, usize::MAX)
                );
                take(&h.entry, line, &mut block);
            }
        }
        Ok((!block.used.is_empty()).then_some(block))
    }

    /// Adds a finished turn's question and answer to recall, then moves what falls out of
    /// the recall window to archival (importance above the threshold) or drops it.
    pub fn record_turn(&self, turn: &FinishedTurn) -> Result<()> {
        let now = Utc::now();
        let make = |node: NodeId, text: &str, role: &str| MemoryEntry {
            id: MemoryId::new(),
            tier: MemoryTier::Recall,
            scope: self.scope.clone(),
            section: None,
            content: text.to_string(),
            tags: vec![role.to_string()],
            importance: self.params.default_importance,
            created_at: now,
            updated_at: now,
            provenance: Provenance {
                origin: "think".into(),
                session: Some(turn.session),
                node: Some(node),
                ..Default::default()
            },
            meta: Default::default(),
        };
        let mut entries = Vec::new();
        if !turn.question.trim().is_empty() {
            entries.push(make(turn.query, &turn.question, "question"));
        }
        if let Some((node, text)) = &turn.response
            && !text.trim().is_empty()
        {
            entries.push(make(*node, text, "answer"));
        }
        if entries.is_empty() {
            return Ok(());
        }
        self.put_new(entries, false)?;
        self.trim_recall()
    }

    /// Logs the learnings a finished turn was given (its query node's `memory_used`) as
    /// accessed by its session.
    fn log_turn_access(&self, turn: &FinishedTurn) -> Result<()> {
        let Some(q) = self.store.node(turn.query)? else {
            return Ok(());
        };
        let ids: Vec<MemoryId> = q
            .meta
            .get("memory_used")
            .and_then(serde_json::Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
            .unwrap_or_default();
        if ids.is_empty() {
            return Ok(());
        }
        let session = turn.session.to_string();
        self.store
            .write(|w| w.log_access(&ids, &session, "context"))?;
        Ok(())
    }

    /// Keeps at most `recall_window` recall entries in the write scope.
    fn trim_recall(&self) -> Result<()> {
        // Recall is part of the scope: while the whole scope fits the window, so does recall,
        // and no entry (an answer may be hundreds of kilobytes) needs decoding to know it.
        if self.store.scope_memory_count(&self.scope)? <= self.params.recall_window {
            return Ok(());
        }
        // Otherwise the index says which entries are recall and how old, and only those
        // that leave are read (the scope may hold thousands of archival entries).
        let mut recall: Vec<(chrono::DateTime<Utc>, MemoryId)> = self.with_index(|ix| {
            ix.scope_docs(&self.scope)
                .filter(|d| d.tier == MemoryTier::Recall)
                .map(|d| (d.created, d.id))
                .collect()
        })?;
        if recall.len() <= self.params.recall_window {
            return Ok(());
        }
        recall.sort_unstable();
        let over = recall.len() - self.params.recall_window;
        let mut leaving = Vec::with_capacity(over);
        for (_, id) in recall.into_iter().take(over) {
            if let Some(e) = self.store.memory(id)?
                && e.tier == MemoryTier::Recall
            {
                leaving.push(e);
            }
        }
        let threshold = self.params.recall_archive_importance;
        let now = Utc::now();
        self.store.write(|w| {
            for mut e in leaving {
                if e.importance > threshold {
                    e.tier = MemoryTier::Archival;
                    e.updated_at = now;
                    w.put_memory(&e)?;
                } else if !w.archive_learning(
                    e.id,
                    "left recall",
                    &format!("recall-out:{}", e.id),
                )? {
                    w.delete_memory(e.id)?;
                }
            }
            Ok(())
        })?;
        Ok(())
    }
}

/// Memory as the orchestrator's knowledge source: every turn gets the context above, and
/// every answered turn goes to recall (when `record_turns` is on). Failures are logged and
/// kept as warnings; they never fail the turn.
impl crate::engines::orchestrator::KnowledgeContext for Memory {
    fn context_for(&self, question: &str) -> Option<crate::engines::orchestrator::Knowledge> {
        match Memory::context_for(self, question) {
            Ok(block) => block.map(|b| crate::engines::orchestrator::Knowledge {
                text: b.text,
                used: b.used.iter().map(ToString::to_string).collect(),
            }),
            Err(e) => {
                self.warn(format!("memory context skipped: {e}"));
                None
            }
        }
    }

    /// The answer will go to recall with its vector: its head is embedded as soon as it is
    /// fixed, beside the stream, so that `remember` does not run the model after the answer
    /// ends (a long answer's head is a quarter of a second of the local model on two cores).
    fn anticipate(&self, answer_so_far: &str) -> bool {
        match &self.embedder {
            Some(e) if self.params.record_turns => {
                e.embed_ahead(&super::index::embedding_text_of(Utc::now(), answer_so_far))
            }
            _ => true,
        }
    }

    fn remember(&self, turn: &crate::engines::orchestrator::FinishedTurn) {
        if let Err(e) = self.log_turn_access(turn) {
            self.warn(format!("the turn's memory accesses were not logged: {e}"));
        }
        if !self.params.record_turns {
            return;
        }
        if let Err(e) = self.record_turn(turn) {
            self.warn(format!("the turn was not added to recall: {e}"));
        }
    }

    // The memory tools live in `tools.rs`.
    fn tools(&self) -> Vec<crate::engines::llm::ToolSpec> {
        self.tool_specs()
    }

    fn call_tool(
        &self,
        name: &str,
        input: &serde_json::Value,
        session: crate::store::SessionId,
        node: NodeId,
    ) -> Option<std::result::Result<String, String>> {
        self.knowledge_tool_call(name, input, session, node)
    }

    fn max_tool_rounds(&self) -> u32 {
        self.params.max_tool_rounds
    }
}
