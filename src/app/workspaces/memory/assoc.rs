//! The associative view of the selected learning: toggled with `memory_associations`, read
//! off the UI thread whenever the selection (or the search it is scored against) changes.

use chrono::Utc;
use serde_json::Value;

use crate::engines::memory::learn::{decayed, view};
use crate::engines::memory::{Filter, Memory, SearchMode};
use crate::store::MemoryId;
use crate::store::learning::LearningEvent;
use crate::views::memory::assoc::{Associations, Contradiction, EventRow, Neighbour};

/// Neighbours listed per concept at most.
const NEIGHBOURS: usize = 4;
/// How deep into the search results the score breakdown looks for the entry.
const SCORED: usize = 500;

/// The panel's state.
#[derive(Debug, Default)]
pub struct AssocPanel {
    pub on: bool,
    /// The entry (and query) the shown data is for, or is being read for.
    pub wanted: Option<(MemoryId, Option<String>)>,
    pub data: Option<Associations>,
    pub loading: bool,
}

impl AssocPanel {
    /// Whether `(id, query)` needs reading (the panel is on and shows something else).
    pub fn needs(&self, id: MemoryId, query: Option<&str>) -> bool {
        self.on && self.wanted.as_ref().map(|(i, q)| (*i, q.as_deref())) != Some((id, query))
    }
}

fn event_row(e: &LearningEvent) -> EventRow {
    let p = &e.payload;
    let short = |k: &str| {
        p.get(k)
            .and_then(Value::as_str)
            .map(|s| s[s.len().saturating_sub(8)..].to_string())
    };
    let detail = match e.event_type.as_str() {
        "LearningExtracted" => p
            .get("extractor_version")
            .and_then(Value::as_str)
            .map(|v| format!("by {v} ({})", e.source.as_str())),
        "LearningReinforced" | "LearningWeakened" => p
            .get("reinforcement_delta")
            .and_then(Value::as_f64)
            .map(|d| {
                let why = p
                    .get("feedback")
                    .or_else(|| p.get("relearned"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                format!("{d:+.2} {why}")
            }),
        "LearningContradicted" => short("contradicted_with").map(|s| format!("with {s}")),
        "LearningSuperseded" => short("superseded_by").map(|s| format!("by {s}")),
        "LearningArchived" => p.get("reason").and_then(Value::as_str).map(str::to_string),
        _ => short("relearning_of").map(|s| format!("re-learned as {s}")),
    };
    EventRow {
        id: e.event_id,
        at: e.transaction_time.format("%m-%d %H:%M").to_string(),
        kind: e
            .event_type
            .as_str()
            .trim_start_matches("Learning")
            .to_string(),
        detail: detail.unwrap_or_default(),
    }
}

/// Reads the associations of `id` (blocking), scored against `query` when given.
pub fn read(memory: &Memory, id: MemoryId, query: Option<&str>) -> Result<Associations, String> {
    let store = memory.store();
    let p = memory.learn_params();
    let Some(v) = view(store, id, p).map_err(|e| e.to_string())? else {
        return Ok(Associations {
            id: Some(id),
            note: Some(
                "a core fact: part of the profile, not a learning (no events or concepts)".into(),
            ),
            ..Default::default()
        });
    };
    let l = &v.learning;
    let mut concepts = Vec::new();
    for c in &l.concepts {
        let mut near = Vec::new();
        for other in store.concept_members(c).map_err(|e| e.to_string())? {
            if other == id {
                continue;
            }
            if near.len() == NEIGHBOURS {
                break;
            }
            if let Some(o) = store.learning(other).map_err(|e| e.to_string())? {
                near.push(Neighbour {
                    id: other,
                    text: o.content,
                });
            }
        }
        concepts.push((c.clone(), near));
    }
    let mut contradictions = Vec::new();
    for (other, r) in &v.contradictions {
        let text = store
            .learning(*other)
            .map_err(|e| e.to_string())?
            .map(|o| o.content)
            .unwrap_or_default();
        contradictions.push(Contradiction {
            other: *other,
            other_text: text,
            verdict: format!("{} {:.2} ({})", r.label, r.confidence, r.model_version),
        });
    }
    let dims = match query.filter(|q| !q.trim().is_empty()) {
        Some(q) => memory
            .find(q, &[], SCORED, SearchMode::Associative, Filter::default())
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|h| h.entry.id == id)
            .and_then(|h| h.dims),
        None => None,
    };
    let when = |t: Option<chrono::DateTime<Utc>>| {
        t.map_or("open".to_string(), |t| t.format("%Y-%m-%d").to_string())
    };
    Ok(Associations {
        id: Some(id),
        text: l.content.clone(),
        status: l.status.as_str().to_string(),
        score: decayed(l, Utc::now(), p.decay_half_life_days),
        reinforcement: l.reinforcement,
        recurrence: l.recurrence,
        useful: l.useful,
        wrong: l.wrong,
        validity: format!(
            "{} → {} ({} confidence)",
            when(l.valid_from),
            when(l.valid_until),
            l.temporal_confidence.as_str()
        ),
        dims,
        query: query.map(str::to_string),
        concepts,
        events: v.events.iter().rev().map(event_row).collect(),
        contradictions,
        note: None,
    })
}
