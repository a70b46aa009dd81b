//! Claude Code hooks. SessionStart hands the project's best learnings back as
//! `additionalContext`: from the injection cache when it is current, else ranked now (the
//! associative score without embeddings: no model runs inside a hook) and cached. Stop only
//! queues the transcript for ingestion.

use std::path::Path;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::LearnParams;
use crate::engines::memory::index::{Filter, SearchMode};
use crate::engines::memory::{Memory, Result};
use crate::store::learning::{CachedInjection, project_of};
use crate::store::{MemoryId, MemoryTier};

/// What Claude Code sends a hook on standard input (the fields glassbox reads).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct HookInput {
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
}

/// The SessionStart answer: `{"hookSpecificOutput":{"hookEventName":"SessionStart",
/// "additionalContext":"…"}}`.
pub fn session_start_output(context: &str) -> serde_json::Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    })
}

/// The words a session start is about: the project folder's name and the git branch.
pub fn fingerprint(cwd: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(name) = cwd.file_name().and_then(|n| n.to_str()) {
        out.push(name.to_lowercase());
    }
    let root = crate::engines::memory::project_root(cwd);
    if let Ok(head) = std::fs::read_to_string(root.join(".git").join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: refs/heads/")
    {
        out.push(branch.to_lowercase());
    }
    out
}

/// What the SessionStart context holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Injection {
    pub text: String,
    pub ids: Vec<MemoryId>,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// Formats learnings as the context text, best first, within `max_chars`.
fn format(lines: &[(MemoryId, String, Vec<String>)], max_chars: usize) -> (String, Vec<MemoryId>) {
    if lines.is_empty() {
        return (String::new(), Vec::new());
    }
    let mut text =
        String::from("Learnings glassbox remembers about this project (most relevant first):\n");
    let mut ids = Vec::new();
    for (id, content, concepts) in lines {
        let line = format!(
            "- {}{}\n",
            crate::engines::llm::wire::one_line(content, 400),
            if concepts.is_empty() {
                String::new()
            } else {
                format!(" [{}]", concepts.join(", "))
            }
        );
        if text.chars().count() + line.chars().count() > max_chars {
            break;
        }
        text.push_str(&line);
        ids.push(*id);
    }
    if ids.is_empty() {
        return (String::new(), Vec::new());
    }
    (text, ids)
}

impl Memory {
    /// Ranks the project's learnings for a session start now and stores the result in the
    /// injection cache.
    pub fn refresh_injection(&self, fingerprint: &[String], p: &LearnParams) -> Result<Injection> {
        let checkpoint = self.store.learning_checkpoint()?;
        let filter = Filter {
            as_at: Some(Utc::now()),
            concepts: fingerprint.to_vec(),
            browse: true,
            ..Filter::default()
        };
        let scored = self.rank(
            &fingerprint.join(" "),
            None,
            &[MemoryTier::Working, MemoryTier::Archival],
            p.hook_top_k,
            SearchMode::Associative,
            filter,
        )?;
        let ids: Vec<MemoryId> = scored.iter().map(|s| s.id).collect();
        let lines: Vec<_> = self
            .store
            .learnings_of(&ids)?
            .into_iter()
            .flatten()
            .map(|l| (l.id, l.content, l.concepts))
            .collect();
        let (text, ids) = format(&lines, p.hook_chars);
        let project = project_of(&self.scope);
        let cache = CachedInjection {
            text: text.clone(),
            ids: ids.clone(),
            built_at: Utc::now(),
            checkpoint,
        };
        self.store
            .write(|w| w.put_injection_cache(&project, &cache))?;
        Ok(Injection {
            text,
            ids,
            cached: false,
        })
    }

    /// The SessionStart context for `session`, and whether the cache it came from is stale.
    /// The cache is served when there is one (`fresh` = false): current, or stale — learning
    /// events came since it was built — in which case the caller refreshes it out of band
    /// ([`Memory::refresh_injection`]). Without a cache (or with `fresh`), the learnings are
    /// ranked now. The learnings handed over are logged as accessed by the session (their
    /// clocks then flow into what it teaches).
    pub fn session_start(
        &self,
        session: &str,
        fingerprint: &[String],
        fresh: bool,
        p: &LearnParams,
    ) -> Result<(Injection, bool)> {
        let project = project_of(&self.scope);
        let checkpoint = self.store.learning_checkpoint()?;
        let (mut out, stale) = match self.store.injection_cache(&project)? {
            Some(c) if !fresh && !c.ids.is_empty() => {
                let stale = c.checkpoint != checkpoint;
                let out = Injection {
                    text: c.text,
                    ids: c.ids,
                    cached: true,
                };
                (out, stale)
            }
            _ => (self.refresh_injection(fingerprint, p)?, false),
        };
        if !out.ids.is_empty() && !session.is_empty() {
            self.store
                .write(|w| w.log_access(&out.ids, session, "hook"))?;
        }
        out.text = out.text.trim_end().to_string();
        Ok((out, stale))
    }
}
