//! The Memory workspace's tasks: every memory call blocks (store commits, embedding), so
//! each runs on the blocking pool and sends its answer back as a [`MemoryMsg`].

use super::{MemoryEffect, MemoryMsg, SEARCH_LIMIT, Snapshot};
use crate::app::runtime::Services;
use crate::app::state::Level;
use crate::app::workspaces::Outbox;
use crate::engines::memory::{Inserted, Memory, MemoryError, NewMemory, SearchMode};
use crate::store::{MemoryEntry, MemoryTier, Provenance};

/// Carries out an effect off the UI thread; searches go through the latest-wins queue.
pub(super) fn run(e: MemoryEffect, svc: &Services, out: Outbox<MemoryMsg>) {
    let memory = match &svc.memory {
        Ok(m) => m.clone(),
        Err(why) => return out.send(unavailable(e, why.clone())),
    };
    match e {
        MemoryEffect::Load => out.blocking(move || MemoryMsg::Loaded {
            result: load(&memory).map(Box::new).map_err(|e| e.to_string()),
            warnings: memory.take_warnings(),
        }),
        MemoryEffect::Search { seq, query } => {
            svc.memory_search.submit(Box::new(move || {
                let hits = memory
                    .find(
                        &query,
                        &[],
                        SEARCH_LIMIT,
                        SearchMode::Hybrid,
                        Default::default(),
                    )
                    .map(|hits| hits.into_iter().map(|h| (h.entry, h.score)).collect())
                    .map_err(|e| e.to_string());
                out.send(MemoryMsg::Found {
                    seq,
                    query,
                    hits,
                    warnings: memory.take_warnings(),
                });
            }));
        }
        MemoryEffect::Assoc { id, query } => out.blocking(move || MemoryMsg::Assoc {
            result: super::assoc::read(&memory, id, query.as_deref()).map(Box::new),
            id,
            query,
        }),
        MemoryEffect::Source { session, node } => {
            let store = svc.store.clone();
            out.blocking(move || match store.node(node) {
                Ok(Some(n)) => match store.session(n.session) {
                    Ok(Some(_)) => MemoryMsg::Open {
                        session: session.unwrap_or(n.session),
                        node,
                    },
                    Ok(None) => MemoryMsg::Failed(format!(
                        "the session of node {} is no longer stored",
                        node.short()
                    )),
                    Err(e) => MemoryMsg::Failed(e.to_string()),
                },
                Ok(None) => MemoryMsg::Failed(format!(
                    "node {} is no longer stored (its session was deleted?)",
                    node.short()
                )),
                Err(e) => MemoryMsg::Failed(e.to_string()),
            });
        }
        op => out.blocking(move || {
            let result = operate(&memory, op);
            let warnings = memory.take_warnings();
            match result {
                Ok((mut notice, follow)) => {
                    let level = if warnings.is_empty() {
                        Level::Info
                    } else {
                        notice = format!("{notice} ({})", warnings.join("; "));
                        Level::Warn
                    };
                    MemoryMsg::Done {
                        notice,
                        level,
                        follow,
                    }
                }
                Err(e) => MemoryMsg::Failed(e.to_string()),
            }
        }),
    }
}

/// The answer to an effect when there is no memory to work on.
fn unavailable(e: MemoryEffect, why: String) -> MemoryMsg {
    match e {
        MemoryEffect::Load => MemoryMsg::Loaded {
            result: Err(why),
            warnings: Vec::new(),
        },
        MemoryEffect::Search { seq, query } => MemoryMsg::Found {
            seq,
            query,
            hits: Err(why),
            warnings: Vec::new(),
        },
        _ => MemoryMsg::Failed(why),
    }
}

/// Reads what the workspace shows.
pub fn load(m: &Memory) -> Result<Snapshot, MemoryError> {
    let stats = m.stats()?;
    let mut working = m.entries(MemoryTier::Working)?;
    working.sort_by(|a, b| {
        b.importance
            .total_cmp(&a.importance)
            .then(b.created_at.cmp(&a.created_at))
    });
    let scope = m
        .visible()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" + ");
    Ok(Snapshot {
        stats,
        scope,
        evict_to: m.params().evict_to,
        default_importance: m.params().default_importance,
        relevant: m.params().context_min_score,
        core: m.entries(MemoryTier::Core)?,
        working,
        recall: m.entries(MemoryTier::Recall)?,
        archival: m.entries(MemoryTier::Archival)?,
    })
}

fn evicted(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "; 1 working entry evicted to archival to make room".into(),
        n => format!("; {n} working entries evicted to archival to make room"),
    }
}

/// One change to memory; returns the notice and the entry to select afterwards.
pub(super) fn operate(
    m: &Memory,
    op: MemoryEffect,
) -> Result<(String, Option<crate::store::MemoryId>), MemoryError> {
    Ok(match op {
        MemoryEffect::Insert {
            text,
            importance,
            tags,
            tier,
        } => {
            let Inserted { ids, evicted: out } = m.insert(NewMemory {
                content: text,
                tags,
                importance: Some(importance),
                tier,
                provenance: Provenance {
                    origin: "tui".into(),
                    ..Default::default()
                },
                created_at: None,
            })?;
            let first = ids.first().copied();
            let what = match (ids.len(), first) {
                (1, Some(id)) => format!("memory {}", id.short()),
                (n, _) => format!("{n} chunks"),
            };
            (
                format!("inserted {what} into {tier}{}", evicted(out.len())),
                first,
            )
        }
        MemoryEffect::Edit {
            id,
            text,
            importance,
            tags,
        } => {
            let e: MemoryEntry = m.edit(id, text.as_deref(), tags, importance)?;
            let what = if e.id == id {
                format!("memory {} saved", e.id.short())
            } else {
                // A learning's new text is a new learning; the old one stays in the history.
                format!("memory {} saved as {}", id.short(), e.id.short())
            };
            (what, Some(e.id))
        }
        MemoryEffect::Evict(id) => {
            m.evict(&[id])?;
            (
                format!(
                    "memory {} evicted from working memory to archival",
                    id.short()
                ),
                Some(id),
            )
        }
        MemoryEffect::Promote(id) => {
            let Inserted { evicted: out, .. } = m.promote(&[id])?;
            (
                format!(
                    "memory {} promoted to working memory{}",
                    id.short(),
                    evicted(out.len())
                ),
                Some(id),
            )
        }
        MemoryEffect::Delete(id) => {
            let n = m.remove(&[id])?;
            let text = if n == 0 {
                format!("memory {} was already gone", id.short())
            } else {
                format!("memory {} deleted", id.short())
            };
            (text, None)
        }
        MemoryEffect::Load
        | MemoryEffect::Search { .. }
        | MemoryEffect::Source { .. }
        | MemoryEffect::Assoc { .. } => {
            return Err(MemoryError::Invalid("not a change to memory".into()));
        }
    })
}
