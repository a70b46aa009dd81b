//! What the news of the workspace's tasks does: a search read back from the store, the
//! events of a search running here, and its end.

use std::collections::{HashMap, HashSet};

use super::{Got, GotMsg, Outcome, Phase, Row};
use crate::app::state::Level;
use crate::app::update::Effect;
use crate::app::workspaces::Cx;
use crate::engines::got::{GotEvent, Thought, ThoughtState};
use crate::store::{NodeId, RunStatus};

impl Got {
    /// Applies one message from a task.
    pub(super) fn apply(&mut self, m: GotMsg, cx: &mut Cx<'_, Self>) {
        match m {
            GotMsg::Defaults(d) => self.defaults = Some(d),
            GotMsg::Loaded(stored) => self.loaded(*stored),
            GotMsg::LoadFailed(e) => {
                if self.view.phase == Phase::Loading {
                    self.view.phase = Phase::Empty;
                }
                cx.notice(format!("cannot read the last search: {e}"), Level::Error);
            }
            GotMsg::Event { search, event } => {
                if search == self.search {
                    self.event(event, cx);
                }
            }
            GotMsg::Finished { search, outcome } => {
                if search == self.search {
                    self.finished(outcome, cx);
                }
            }
        }
    }

    /// The last search of a session, read from the store: shown unless a search runs here.
    fn loaded(&mut self, s: super::Stored) {
        if self.view.running() {
            return;
        }
        if s.run.is_none() {
            // Another session without a search: do not keep showing the old one.
            if self.session != s.session {
                self.clear_search();
            }
            if self.view.phase == Phase::Loading || self.view.thoughts.is_empty() {
                self.view.phase = Phase::Empty;
            }
            return;
        }
        let keep = self.view.selected_id();
        self.clear_search();
        self.session = s.session;
        self.run = s.run;
        let v = &mut self.view;
        v.problem = s.problem;
        v.params = s.params;
        v.expanded = s.expanded.into_iter().collect();
        v.set_thoughts(s.thoughts);
        v.phase = match s.status {
            Some(RunStatus::Running) => Phase::Elsewhere,
            Some(RunStatus::Interrupted) => Phase::Interrupted,
            Some(RunStatus::Failed { error }) => Phase::Failed(error),
            Some(RunStatus::Done) | None => Phase::Done,
        };
        if let Some(o) = s.outcome {
            v.tokens = o.stats.total_tokens;
            v.outcome = Some(o);
        }
        v.best = s.best;
        self.refresh();
        // The reader's place if it is still there, else the best thought.
        let v = &mut self.view;
        if let Some(pos) = keep
            .or(v.best)
            .and_then(|id| v.rows.iter().position(|r| r.id == id))
        {
            v.selected = pos;
        }
    }

    /// One event of the search running here.
    fn event(&mut self, event: GotEvent, cx: &mut Cx<'_, Self>) {
        match event {
            GotEvent::Started { session, run, .. } => {
                self.session = Some(session);
                self.run = Some(run);
            }
            GotEvent::Thought(t) => {
                let first = self.view.thoughts.is_empty();
                self.view.upsert(t);
                self.refresh();
                if first {
                    self.view.selected = 0;
                }
            }
            GotEvent::Expanding(id) => {
                self.view.expanded.insert(id);
                self.view.expanding = Some(id);
            }
            GotEvent::Paused => {
                self.view.paused = true;
                self.view.expanding = None;
                self.view.stepping = false;
            }
            GotEvent::Resumed => {
                self.view.paused = false;
                self.view.stepping = false;
            }
            GotEvent::Tokens(n) => self.view.tokens = n,
            GotEvent::BudgetExhausted { used, limit } => cx.notice(
                format!("the token budget is spent ({used} of {limit}); the search stops"),
                Level::Warn,
            ),
        }
    }

    /// The search running here ended: show the engine's result and reload the sessions.
    fn finished(
        &mut self,
        outcome: Result<Box<crate::engines::got::GotResult>, String>,
        cx: &mut Cx<'_, Self>,
    ) {
        self.controls = None;
        self.job = None;
        let v = &mut self.view;
        v.expanding = None;
        v.paused = false;
        v.stepping = false;
        v.pause_requested = false;
        v.pending.clear();
        match outcome {
            Ok(r) => {
                let r = *r;
                self.session = Some(r.session);
                self.run = Some(r.run);
                v.expanded = r.expanded.iter().copied().collect();
                v.set_thoughts(r.thoughts);
                v.best = r.best;
                v.tokens = r.stats.total_tokens;
                v.outcome = Some(Outcome {
                    answer: r.answer,
                    confidence: r.confidence,
                    summary: r.reasoning_summary,
                    stats: r.stats,
                });
                v.phase = if r.interrupted {
                    Phase::Interrupted
                } else {
                    Phase::Done
                };
                self.refresh();
                let v = &mut self.view;
                let best = v.best;
                let (text, level) = if best.is_some() {
                    (
                        "search finished — the best thought is marked ★ (enter opens it)",
                        Level::Info,
                    )
                } else {
                    ("search finished without a verified thought", Level::Warn)
                };
                if let Some(pos) = best.and_then(|b| v.rows.iter().position(|r| r.id == b)) {
                    v.selected = pos;
                }
                cx.notice(text, level);
                cx.effect(Effect::LoadSessions);
                let open = cx.state.loaded.id();
                if open.is_none() || open == Some(r.session) {
                    cx.effect(Effect::LoadSession(r.session));
                }
            }
            Err(e) => {
                v.phase = Phase::Failed(e.clone());
                cx.notice(format!("the search failed: {e}"), Level::Error);
                cx.effect(Effect::LoadSessions);
            }
        }
    }

    /// Recomputes the best thought (while the engine has not named it) and the rows,
    /// keeping the selected thought selected.
    pub(super) fn refresh(&mut self) {
        let v = &mut self.view;
        let keep = v.selected_id();
        if v.outcome.is_none() {
            let root = v.thoughts.first().map(|t| t.id);
            v.best = v
                .thoughts
                .iter()
                .filter(|t| Some(t.id) != root && t.state == ThoughtState::Verified)
                .filter_map(|t| t.score.map(|s| (s, t.id)))
                // The first of equal scores wins, as in the engine's stable sort.
                .fold(None, |best: Option<(f64, NodeId)>, (s, id)| match best {
                    Some((b, _)) if b >= s => best,
                    _ => Some((s, id)),
                })
                .map(|(_, id)| id);
        }
        v.rows = tree_rows(&v.thoughts);
        v.selected = keep
            .and_then(|id| v.rows.iter().position(|r| r.id == id))
            .unwrap_or(v.selected)
            .min(v.rows.len().saturating_sub(1));
    }
}

/// The thoughts as a tree: children under their parent in creation order; a synthesis
/// (no parent) next to the first of the thoughts it merges; anything unplaced at the end.
pub fn tree_rows(thoughts: &[Thought]) -> Vec<Row> {
    let known: HashSet<NodeId> = thoughts.iter().map(|t| t.id).collect();
    let mut children: HashMap<Option<NodeId>, Vec<NodeId>> = HashMap::new();
    let parent_of: HashMap<NodeId, Option<NodeId>> =
        thoughts.iter().map(|t| (t.id, t.parent)).collect();
    let mut roots = Vec::new();
    for t in thoughts {
        let anchor = match t.parent {
            Some(p) if known.contains(&p) => Some(p),
            Some(_) => None,
            None => t
                .sources
                .iter()
                .find(|s| known.contains(s))
                .and_then(|s| parent_of.get(s).copied().flatten()),
        };
        match anchor {
            Some(p) => children.entry(Some(p)).or_default().push(t.id),
            None => roots.push(t.id),
        }
    }
    let mut rows = Vec::with_capacity(thoughts.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(NodeId, usize)> = roots.iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, indent)) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        rows.push(Row { id, indent });
        if let Some(kids) = children.get(&Some(id)) {
            stack.extend(kids.iter().rev().map(|&k| (k, indent + 1)));
        }
    }
    // Cycles cannot come from the engine, but a damaged store should not hide thoughts.
    for t in thoughts {
        if !seen.contains(&t.id) {
            rows.push(Row {
                id: t.id,
                indent: 0,
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn thought(parent: Option<NodeId>, sources: Vec<NodeId>, content: &str) -> Thought {
        Thought {
            id: NodeId::new(),
            parent,
            sources,
            content: content.to_string(),
            score: None,
            state: ThoughtState::Generated,
            depth: 0,
            pinned: false,
            boost: 0.0,
            reasoning: None,
        }
    }

    #[test]
    fn tree_rows_nest_children_place_syntheses_and_keep_orphans() {
        let root = thought(None, vec![], "root");
        let a = thought(Some(root.id), vec![], "A");
        let b = thought(Some(root.id), vec![], "B");
        let a1 = thought(Some(a.id), vec![], "A1");
        // A synthesis of A1 and B sits under A1's parent, after A's children so far.
        let s = thought(None, vec![a1.id, b.id], "S");
        // A thought whose parent is not among them goes to the top level.
        let lost = thought(Some(NodeId::new()), vec![], "lost");
        let thoughts = vec![root, a, b, a1, s, lost];
        let rows = tree_rows(&thoughts);
        let shown: Vec<(&str, usize)> = rows
            .iter()
            .map(|r| {
                let t = thoughts.iter().find(|t| t.id == r.id).unwrap();
                (t.content.as_str(), r.indent)
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("root", 0),
                ("A", 1),
                ("A1", 2),
                ("S", 2),
                ("B", 1),
                ("lost", 0)
            ]
        );
    }
}
