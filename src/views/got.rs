//! The Graph-of-Thoughts workspace: a header with the run state and counts, the search
//! tree (scores coloured, pruned thoughts dimmed, the frontier highlighted, the best
//! marked), and beside it the selected thought and, once the search ended, its answer.
//!
//! The tree is drawn by tui-tree-widget from the rows in view only, through the Ledger's
//! window ([`super::ledger`]): the widget indents, the thought's glyph takes the place of a
//! fold marker (the search tree folds nothing), and the workspace keeps the selection and
//! the scroll.

use std::collections::{HashMap, HashSet};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::ledger::{Fold, WindowRow, mark_lead, tree_widget, window_tree};
use super::overlay::centered;
use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::engines::got::{GotParams, GotStats, Thought, ThoughtState};
use crate::store::NodeId;
use crate::store::excerpt;

/// Where the search shown is.
pub use super::JobPhase as Phase;

/// The outcome shown once a search has ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub answer: String,
    pub confidence: f64,
    pub summary: String,
    pub stats: GotStats,
}

/// One row of the tree: a thought and how far it is indented.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub id: NodeId,
    pub indent: usize,
}

/// The search as drawn: its thoughts and tree, where the reader is, and how far it got.
#[derive(Clone, Debug, Default)]
pub struct SearchView {
    pub problem: String,
    pub params: Option<GotParams>,
    /// Every thought, in creation order (change them through [`SearchView::upsert`] and
    /// [`SearchView::set_thoughts`], which keep the lookup by id in step).
    pub thoughts: Vec<Thought>,
    index: HashMap<NodeId, usize>,
    /// Thoughts already expanded.
    pub expanded: HashSet<NodeId>,
    /// The thought being expanded right now.
    pub expanding: Option<NodeId>,
    /// The tree in display order.
    pub rows: Vec<Row>,
    pub selected: usize,
    /// First visible row, as the workspace last scrolled it.
    pub offset: usize,
    pub phase: Phase,
    /// The user asked to pause (the engine confirms with `paused`).
    pub pause_requested: bool,
    /// The engine is waiting.
    pub paused: bool,
    /// A step was asked for and the engine has not paused again yet.
    pub stepping: bool,
    pub tokens: u64,
    /// The budget of the running search, or for the next one.
    pub budget: Option<u64>,
    /// The best thought as the engine will pick it (verified, highest score).
    pub best: Option<NodeId>,
    pub outcome: Option<Outcome>,
    /// Steering sent but not yet applied by the engine, per thought.
    pub pending: HashMap<NodeId, &'static str>,
    /// The full-text popup of a thought, and how far it is scrolled.
    pub detail: Option<(NodeId, u16)>,
}

impl SearchView {
    pub fn thought(&self, id: NodeId) -> Option<&Thought> {
        self.index.get(&id).and_then(|&i| self.thoughts.get(i))
    }

    pub fn selected_id(&self) -> Option<NodeId> {
        self.rows.get(self.selected).map(|r| r.id)
    }

    /// Whether a search is running in this TUI.
    pub fn running(&self) -> bool {
        self.phase == Phase::Running
    }

    /// The search's depth limit, if known.
    fn max_depth(&self) -> u32 {
        self.params.as_ref().map_or(u32::MAX, |p| p.max_depth)
    }

    /// A verified thought not expanded yet, shallow enough to be expanded: the frontier.
    pub fn is_frontier(&self, t: &Thought) -> bool {
        t.state == ThoughtState::Verified
            && !self.expanded.contains(&t.id)
            && t.depth < self.max_depth()
    }

    /// Counts as shown in the header; the engine's own once the search has ended.
    pub fn stats(&self) -> GotStats {
        if let Some(o) = &self.outcome {
            return o.stats.clone();
        }
        GotStats {
            total_thoughts: self.thoughts.len() as u64,
            thoughts_explored: self.expanded.len() as u64,
            thoughts_pruned: self
                .thoughts
                .iter()
                .filter(|t| t.state == ThoughtState::Rejected)
                .count() as u64,
            aggregations_made: self
                .thoughts
                .iter()
                .filter(|t| !t.sources.is_empty())
                .count() as u64,
            max_depth_reached: self.thoughts.iter().map(|t| t.depth).max().unwrap_or(0),
            total_tokens: self.tokens,
            total_duration_ms: 0,
        }
    }

    /// The run state as the header shows it.
    pub fn state_label(&self) -> String {
        match &self.phase {
            Phase::Empty => "no search".into(),
            Phase::Loading => "loading…".into(),
            Phase::Running if self.pause_requested && self.stepping => "stepping…".into(),
            Phase::Running if self.pause_requested && self.paused => "paused".into(),
            Phase::Running if self.pause_requested => "pausing…".into(),
            Phase::Running => "running".into(),
            Phase::Done => "done".into(),
            Phase::Interrupted => "interrupted".into(),
            Phase::Failed(e) => format!("failed: {e}"),
            Phase::Elsewhere => "unfinished (stored)".into(),
        }
    }

    /// Adds a thought, or replaces the one with its id; its queued steering has landed.
    pub fn upsert(&mut self, t: Thought) {
        self.pending.remove(&t.id);
        match self.index.get(&t.id) {
            Some(&i) => self.thoughts[i] = t,
            None => {
                self.index.insert(t.id, self.thoughts.len());
                self.thoughts.push(t);
            }
        }
    }

    /// Replaces every thought.
    pub fn set_thoughts(&mut self, thoughts: Vec<Thought>) {
        self.index = thoughts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id, i))
            .collect();
        self.thoughts = thoughts;
    }
}

/// Rows of the header pane, borders included.
const HEADER: u16 = 4;

/// How many tree rows fit a terminal of `size` (tabs and status bar included).
pub fn tree_height(size: (u16, u16)) -> usize {
    size.1.saturating_sub(2 + HEADER + 2) as usize
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &SearchView, v: &ViewCx<'_>) {
    let theme = v.theme;
    let [header, main] =
        Layout::vertical([Constraint::Length(HEADER), Constraint::Min(3)]).areas(area);
    render_header(f, header, ws, theme);
    if ws.thoughts.is_empty() {
        let text = match ws.phase {
            Phase::Loading => "Reading the last search of this session…".to_string(),
            Phase::Running => "Starting the search…".to_string(),
            Phase::Failed(ref e) => format!("The search failed: {e}"),
            _ => {
                let mut lines = vec![
                    "No Graph of Thoughts search in this session yet.".to_string(),
                    String::new(),
                ];
                lines.extend(hints::table(
                    v.keys,
                    &[(
                        &["new_search"],
                        "starts one: type the problem, Tab to pick bfs / dfs / best_first, Enter",
                    )],
                ));
                lines.push(String::new());
                lines.push("While it runs:".to_string());
                lines.extend(hints::table(
                    v.keys,
                    &[
                        (&["pause_resume"], "pause / resume"),
                        (&["step_search"], "expand one thought while paused"),
                        (&["pin_thought"], "pin the selected thought (never pruned)"),
                        (&["prune_thought"], "prune it"),
                        (
                            &["boost_thought", "lower_thought"],
                            "raise / lower its priority",
                        ),
                        (&["set_budget"], "set a token budget"),
                        (&["cancel_run"], "cancel"),
                        (&["select"], "open a thought"),
                    ],
                ));
                lines.join("\n")
            }
        };
        f.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .style(theme.style(Role::Dim))
                .block(pane(" Search tree ", true, theme)),
            main,
        );
        return;
    }
    let (tree, side) = if main.width >= 100 {
        let [t, s] =
            Layout::horizontal([Constraint::Min(50), Constraint::Percentage(38)]).areas(main);
        (t, Some(s))
    } else {
        (main, None)
    };
    render_tree(f, tree, ws, theme);
    if let Some(side) = side {
        render_side(f, side, ws, theme);
    }
    if let Some((id, scroll)) = ws.detail
        && let Some(t) = ws.thought(id)
    {
        render_detail(f, area, ws, t, scroll, theme);
    }
}

fn render_header(f: &mut Frame, area: Rect, ws: &SearchView, theme: &Theme) {
    let dim = theme.style(Role::Dim);
    let title = match ws.problem.lines().next() {
        Some(p) if !p.trim().is_empty() => format!(" GoT · {} ", excerpt(p, 90)),
        _ => " Graph of Thoughts ".to_string(),
    };
    let state_style = match &ws.phase {
        Phase::Running if ws.pause_requested => theme.style(Role::Warning),
        Phase::Running => theme.style(Role::Accent),
        Phase::Done => theme.style(Role::Success),
        Phase::Failed(_) => theme.style(Role::Error),
        Phase::Interrupted | Phase::Elsewhere => theme.style(Role::Warning),
        Phase::Empty | Phase::Loading => dim,
    };
    let strategy = ws
        .params
        .as_ref()
        .map_or("—", |p| p.strategy.as_str())
        .to_string();
    let budget = match ws
        .budget
        .or(ws.params.as_ref().and_then(|p| p.token_budget))
    {
        Some(b) => format!("{b}"),
        None => "no limit".into(),
    };
    let s = ws.stats();
    let kv = |k: &str, v: String| {
        vec![
            Span::styled(format!("{k} "), dim),
            Span::raw(v),
            Span::styled("  ", dim),
        ]
    };
    let mut first = vec![Span::styled(
        ws.state_label(),
        state_style.add_modifier(Modifier::BOLD),
    )];
    first.push(Span::styled("  ·  ", dim));
    first.extend(kv("strategy", strategy));
    if let Some(p) = &ws.params {
        first.extend(kv(
            "limits",
            format!(
                "depth {} · k {} · {} thoughts",
                p.max_depth, p.branching_factor, p.max_thoughts
            ),
        ));
    }
    first.extend(kv("tokens", format!("{} / {budget}", s.total_tokens)));
    let mut second = Vec::new();
    second.extend(kv("thoughts", s.total_thoughts.to_string()));
    second.extend(kv("explored", s.thoughts_explored.to_string()));
    second.extend(kv("pruned", s.thoughts_pruned.to_string()));
    second.extend(kv("aggregations", s.aggregations_made.to_string()));
    second.extend(kv("max depth", s.max_depth_reached.to_string()));
    if let Some(t) = ws.expanding.and_then(|id| ws.thought(id))
        && ws.running()
    {
        second.push(Span::styled("expanding ", dim));
        second.push(Span::styled(
            excerpt(&t.content, 50),
            theme.style(Role::Accent),
        ));
    }
    f.render_widget(
        Paragraph::new(vec![Line::from(first), Line::from(second)])
            .block(pane(title, false, theme)),
        area,
    );
}

/// The marker at the start of a thought's row and its style.
fn glyph(ws: &SearchView, t: &Thought, is_root: bool, theme: &Theme) -> (&'static str, Style) {
    if ws.running() && ws.expanding == Some(t.id) {
        ("◆", theme.style(Role::Accent).add_modifier(Modifier::BOLD))
    } else if is_root {
        ("◉", theme.style(Role::GotThought))
    } else if !t.sources.is_empty() && t.state != ThoughtState::Rejected {
        ("⊕", theme.style(Role::Synthesis))
    } else if ws.is_frontier(t) {
        ("○", theme.style(Role::Accent))
    } else {
        match t.state {
            ThoughtState::Rejected => ("✕", theme.style(Role::Dim)),
            ThoughtState::Aggregated => ("◇", theme.style(Role::Dim)),
            ThoughtState::Verified => ("●", theme.style(Role::GotThought)),
            ThoughtState::Generated | ThoughtState::Evaluated => ("·", theme.style(Role::Dim)),
        }
    }
}

/// Deepest indentation drawn; deeper thoughts line up at this depth.
const MAX_INDENT: usize = 12;

fn render_tree(f: &mut Frame, area: Rect, ws: &SearchView, theme: &Theme) {
    let block = pane(
        " Search tree · ★ best  ○ frontier  ✕ pruned  ^ pinned ",
        true,
        theme,
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let height = inner.height as usize;
    // Keep the selection visible even if the stored offset is behind.
    let mut offset = ws.offset.min(ws.rows.len().saturating_sub(height));
    if ws.selected < offset {
        offset = ws.selected;
    } else if height > 0 && ws.selected >= offset + height {
        offset = ws.selected + 1 - height;
    }
    let selection = theme.style(Role::Selection);
    // Only the rows in view become tree items; a row whose thought is missing is left out.
    let shown: Vec<(usize, usize, &Thought)> = ws
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(i, row)| Some((i, row.indent.min(MAX_INDENT), ws.thought(row.id)?)))
        .collect();
    let items = window_tree(shown.iter().map(|&(i, depth, t)| {
        let mut line = row_line(ws, t, depth, inner.width as usize, theme);
        if i == ws.selected {
            for span in &mut line.spans {
                span.style = selection.patch(span.style);
            }
        }
        WindowRow {
            depth,
            fold: Fold::Leaf,
            text: Text::from(line),
        }
    }));
    let Ok((items, mut state)) = items else {
        return;
    };
    // The glyph of a thought says more than a fold marker would: the search tree has none.
    let Ok(tree) = tree_widget(&items).map(|t| {
        t.node_open_symbol("")
            .node_closed_symbol("")
            .node_no_children_symbol("")
    }) else {
        return;
    };
    f.render_stateful_widget(tree, inner, &mut state);
    // The selection covers the indentation too.
    if let Some((at, &(_, depth, _))) = shown
        .iter()
        .enumerate()
        .find(|(_, (i, _, _))| *i == ws.selected)
    {
        mark_lead(f, inner, inner.y + at as u16, 2 * depth, selection);
    }
}

/// A thought's row after its indentation, `depth` levels deep in a pane `width` wide.
fn row_line(
    ws: &SearchView,
    t: &Thought,
    depth: usize,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let root = ws.thoughts.first().map(|t| t.id);
    let dim = theme.style(Role::Dim);
    let is_root = Some(t.id) == root;
    let faded = matches!(t.state, ThoughtState::Rejected | ThoughtState::Aggregated);
    let frontier = ws.is_frontier(t) && !is_root;
    let (g, gs) = glyph(ws, t, is_root, theme);
    let mut spans = vec![Span::styled(g, gs), Span::raw(" ")];
    spans.push(match t.score {
        Some(s) if faded => Span::styled(format!("{s:.2}"), dim),
        Some(s) => Span::styled(format!("{s:.2}"), theme.confidence_style(s)),
        None => Span::styled(" …  ", dim),
    });
    spans.push(Span::styled(format!(" {:<10} ", t.state.as_str()), dim));
    if ws.best == Some(t.id) {
        spans.push(Span::styled(
            "★ ",
            theme.style(Role::Success).add_modifier(Modifier::BOLD),
        ));
    }
    if t.pinned && !is_root {
        spans.push(Span::styled("^pin ", theme.style(Role::Accent)));
    }
    if t.boost.abs() > 1e-9 {
        spans.push(Span::styled(
            format!("{:+.1} ", t.boost),
            theme.style(Role::Accent),
        ));
    }
    if let Some(p) = ws.pending.get(&t.id) {
        spans.push(Span::styled(format!("({p}) "), theme.style(Role::Warning)));
    }
    let text_style = if faded {
        dim.add_modifier(Modifier::CROSSED_OUT)
    } else if frontier {
        theme.base().add_modifier(Modifier::BOLD)
    } else if is_root {
        theme.style(Role::Query)
    } else {
        theme.base()
    };
    let used: usize = 2 * depth + spans.iter().map(|s| s.width()).sum::<usize>();
    let room = width.saturating_sub(used).max(8);
    spans.push(Span::styled(excerpt(&t.content, room), text_style));
    Line::from(spans)
}

fn render_side(f: &mut Frame, area: Rect, ws: &SearchView, theme: &Theme) {
    let dim = theme.style(Role::Dim);
    let (answer_area, thought_area) = match &ws.outcome {
        Some(_) => {
            let [a, t] =
                Layout::vertical([Constraint::Percentage(45), Constraint::Min(5)]).areas(area);
            (Some(a), t)
        }
        None => (None, area),
    };
    if let (Some(a), Some(o)) = (answer_area, &ws.outcome) {
        let mut lines = vec![Line::from(vec![
            Span::styled("confidence ", dim),
            Span::styled(
                format!("{:.0}%", o.confidence * 100.0),
                theme.confidence_style(o.confidence),
            ),
        ])];
        lines.push(Line::from(""));
        if o.answer.is_empty() {
            lines.push(Line::styled("(no verified thought)", dim));
        } else {
            lines.extend(
                o.answer
                    .lines()
                    .map(|l| Line::styled(l.to_string(), theme.style(Role::Response))),
            );
        }
        lines.push(Line::from(""));
        lines.push(Line::styled(o.summary.clone(), dim));
        f.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(pane(" Answer ", false, theme)),
            a,
        );
    }
    let Some(t) = ws.selected_id().and_then(|id| ws.thought(id)) else {
        f.render_widget(pane(" Thought ", false, theme), thought_area);
        return;
    };
    f.render_widget(
        Paragraph::new(thought_lines(ws, t, theme))
            .wrap(Wrap { trim: false })
            .block(pane(" Thought · enter opens ", false, theme)),
        thought_area,
    );
}

/// A thought's facts and full text.
fn thought_lines(ws: &SearchView, t: &Thought, theme: &Theme) -> Vec<Line<'static>> {
    let dim = theme.style(Role::Dim);
    let kv = |k: &str, v: Span<'static>| Line::from(vec![Span::styled(format!("{k:<10}"), dim), v]);
    let mut lines = Vec::new();
    let mut state = t.state.as_str().to_string();
    if ws.is_frontier(t) {
        state.push_str(" · frontier");
    }
    if ws.expanded.contains(&t.id) {
        state.push_str(" · expanded");
    }
    if ws.best == Some(t.id) {
        state.push_str(" · ★ best");
    }
    lines.push(kv("state", Span::raw(state)));
    lines.push(kv(
        "score",
        match t.score {
            Some(s) => Span::styled(format!("{s:.2}"), theme.confidence_style(s)),
            None => Span::styled("not scored yet", dim),
        },
    ));
    let mut place = format!("depth {}", t.depth);
    if t.pinned {
        place.push_str(" · pinned");
    }
    if t.boost.abs() > 1e-9 {
        place.push_str(&format!(" · boost {:+.2}", t.boost));
    }
    if !t.sources.is_empty() {
        place.push_str(&format!(" · merges {}", t.sources.len()));
    }
    lines.push(kv("place", Span::raw(place)));
    if let Some(r) = &t.reasoning {
        lines.push(kv("reason", Span::styled(r.clone(), dim)));
    }
    lines.push(Line::from(""));
    lines.extend(t.content.lines().map(|l| Line::from(l.to_string())));
    lines
}

fn render_detail(
    f: &mut Frame,
    area: Rect,
    ws: &SearchView,
    t: &Thought,
    scroll: u16,
    theme: &Theme,
) {
    let rect = centered(
        area,
        area.width.saturating_sub(16).max(40),
        area.height.saturating_sub(6).max(10),
    );
    f.render_widget(Clear, rect);
    let block = pane(" Thought · j/k scroll · Esc closes ", true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    f.render_widget(
        Paragraph::new(thought_lines(ws, t, theme))
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .style(theme.base()),
        inner,
    );
}
