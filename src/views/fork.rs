//! The Fork workspace: branch columns side by side (as many as fit, at least ~30 wide,
//! scrolled with h/l), the comparison panel (convergence, divergence, meta insight,
//! recommendation, debate, steering) and a small branch tree, drawn by tui-tree-widget:
//! one item per branch and per steering action, each wrapped to the pane as the paragraph
//! before it was, with the `├ └` connectors in the text.
//!
//! The view model is defined here, as plain data; the workspace
//! (`app::workspaces::fork`) keeps it up to date and hands it over as a [`ForkView`].

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::buffer::CellWidth;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, StyledGrapheme, Text};
use ratatui::widgets::{Paragraph, Wrap};
use tui_tree_widget::{Tree, TreeItem, TreeState};

use super::theme::{Role, Theme};
use super::think::{pane, tail_text};
use super::{ViewCx, hints};
use crate::engines::fork::{
    Agreement, BranchResult, Comparison, DebateEntry, ForkStyle, Significance,
};
use crate::store::NodeId;

/// Where a branch column is.
#[derive(Clone, Debug, PartialEq)]
pub enum ColStatus {
    Waiting,
    Running,
    /// Debating in this round.
    Debating(u32),
    Repairing,
    Done,
    Failed(String),
}

impl ColStatus {
    pub fn label(&self) -> String {
        match self {
            ColStatus::Waiting => "waiting".into(),
            ColStatus::Running => "running…".into(),
            ColStatus::Debating(r) => format!("debating, round {r}…"),
            ColStatus::Repairing => "repairing JSON…".into(),
            ColStatus::Done => "done".into(),
            ColStatus::Failed(_) => "failed".into(),
        }
    }

    /// Whether the branch's call is still to finish.
    fn running(&self) -> bool {
        matches!(
            self,
            ColStatus::Running | ColStatus::Repairing | ColStatus::Debating(_) | ColStatus::Waiting
        )
    }
}

/// One branch, shown as a column.
#[derive(Clone, Debug)]
pub struct Column {
    pub style: ForkStyle,
    pub status: ColStatus,
    /// Streamed answer text of the call in progress.
    pub live: String,
    /// Streamed thinking of the call in progress.
    pub thinking: String,
    pub result: Option<BranchResult>,
    pub debate: Vec<DebateEntry>,
    pub marked: bool,
    /// Lines scrolled down from the top.
    pub scroll: u16,
}

impl Column {
    /// A column waiting for its branch to start.
    pub fn new(style: ForkStyle) -> Self {
        Self {
            style,
            status: ColStatus::Waiting,
            live: String::new(),
            thinking: String::new(),
            result: None,
            debate: Vec::new(),
            marked: false,
            scroll: 0,
        }
    }

    /// A column for a finished branch.
    pub fn from_result(b: &BranchResult) -> Self {
        let mut c = Self::new(b.style);
        c.finish(b.clone());
        c
    }

    /// Takes the branch's result: done, or failed with its error.
    pub fn finish(&mut self, b: BranchResult) {
        self.status = match &b.error {
            Some(e) => ColStatus::Failed(e.clone()),
            None => ColStatus::Done,
        };
        self.result = Some(b);
    }

    /// The branch's node, once it is stored.
    pub fn node(&self) -> Option<NodeId> {
        self.result.as_ref().and_then(|r| r.node_id)
    }
}

/// A steering action or checkpoint and what it produced.
#[derive(Clone, Debug, Default)]
pub struct SteerView {
    pub label: String,
    pub running: bool,
    pub live: String,
    /// What it concluded, one paragraph per entry.
    pub lines: Vec<String>,
    pub confidence: Option<f64>,
    pub error: Option<String>,
    pub node: Option<NodeId>,
}

/// The debate's end.
#[derive(Clone, Debug, Default)]
pub struct Consensus {
    pub reached: bool,
    pub text: Option<String>,
    pub live: String,
}

/// What the workspace draws.
#[derive(Clone, Copy, Debug)]
pub struct ForkView<'a> {
    pub question: &'a str,
    /// "fork", "debate", "refork", "fork from step".
    pub kind: &'a str,
    pub columns: &'a [Column],
    /// The focused column.
    pub focus: usize,
    /// The first column drawn, before the focused one is brought into view.
    pub first: usize,
    pub comparison: Option<&'a Comparison>,
    /// Streamed text of the comparison call in progress.
    pub comparison_live: &'a str,
    pub rounds: u32,
    pub consensus: Option<&'a Consensus>,
    pub steers: &'a [SteerView],
    /// What the running job does ("forking 4 ways"), while one runs.
    pub busy: Option<&'a str>,
    /// The session's newest fork is being read.
    pub loading: bool,
    /// Lines scrolled in the comparison panel.
    pub panel_scroll: u16,
}

/// Narrowest a branch column gets.
pub const MIN_COLUMN: u16 = 30;

/// How many columns fit in `width`.
pub fn columns_that_fit(width: u16, n: usize) -> usize {
    ((width / MIN_COLUMN).max(1) as usize).min(n.max(1))
}

/// The first column to draw so the focused one is in view.
pub fn first_visible(v: &ForkView<'_>, fit: usize) -> usize {
    let mut first = v.first.min(v.columns.len().saturating_sub(fit));
    if v.focus < first {
        first = v.focus;
    } else if v.focus >= first + fit {
        first = v.focus + 1 - fit;
    }
    first
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, ws: &ForkView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    if ws.columns.is_empty() {
        hint(f, area, ws, v);
        return;
    }
    let bottom = (area.height * 2 / 5)
        .max(8)
        .min(area.height.saturating_sub(6));
    let [top, low] = Layout::vertical([Constraint::Min(6), Constraint::Length(bottom)]).areas(area);
    render_columns(f, top, ws, theme);
    let tree_w = (area.width / 4).clamp(28, 44);
    let [panel, tree] =
        Layout::horizontal([Constraint::Min(30), Constraint::Length(tree_w)]).areas(low);
    render_panel(f, panel, ws, theme);
    render_tree(f, tree, ws, theme);
}

fn hint(f: &mut Frame, area: Rect, ws: &ForkView<'_>, v: &ViewCx<'_>) {
    let text = if ws.loading {
        "Loading the session's latest fork…".to_string()
    } else {
        let mut rows = hints::rows(
            v.keys,
            &[
                (
                    &["new_fork"],
                    "fork a new question (question, then Tab to pick 2–4 styles)",
                ),
                (
                    &["debate"],
                    "debate the branches (a new question when none is loaded)",
                ),
                (&["expand_branch"], "expand the focused branch"),
                (&["challenge_branch"], "challenge the focused branch"),
                (
                    &["toggle_mark", "merge_branches"],
                    "mark branches, merge them",
                ),
                (&["refork"], "refork every branch with new context"),
                (
                    &["checkpoint"],
                    "checkpoint the focused branch: verified / questionable / disagree",
                ),
                (&["prev_column", "next_column"], "previous / next column"),
            ],
        );
        // Forking from a node happens in Think; second in the table, after `new_fork`.
        let think = hints::rows(
            v.keys,
            &[(
                &["fork_here"],
                "in Think: fork the selected question, or a thinking step inside the trace",
            )],
        );
        rows.splice(1..1, think);
        let mut lines = vec!["No fork yet.".to_string(), String::new()];
        lines.extend(hints::pad(rows));
        lines.push(hints::line(
            v.keys,
            &[
                (&["move_down", "move_up"], "scroll"),
                (&["select"], "details"),
                (&["cancel_run"], "cancel"),
            ],
        ));
        lines.join("\n")
    };
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .style(v.theme.style(Role::Dim))
            .block(pane(" Fork ", true, v.theme)),
        area,
    );
}

fn status_span(c: &Column, theme: &Theme) -> Span<'static> {
    let role = match c.status {
        ColStatus::Done => Role::Success,
        ColStatus::Failed(_) => Role::Error,
        ColStatus::Waiting => Role::Dim,
        _ => Role::Warning,
    };
    Span::styled(c.status.label(), theme.style(role))
}

fn render_columns(f: &mut Frame, area: Rect, ws: &ForkView<'_>, theme: &Theme) {
    let n = ws.columns.len();
    let fit = columns_that_fit(area.width, n);
    let first = first_visible(ws, fit);
    let shown: Vec<usize> = (first..(first + fit).min(n)).collect();
    let areas =
        Layout::horizontal(vec![Constraint::Ratio(1, shown.len() as u32); shown.len()]).split(area);
    for (slot, i) in shown.iter().enumerate() {
        let c = &ws.columns[*i];
        let focused = *i == ws.focus;
        let mut title = vec![Span::raw(" ")];
        if c.marked {
            title.push(Span::styled("● ", theme.style(Role::Accent)));
        }
        title.push(Span::styled(
            c.style.as_str(),
            theme.style(Role::ForkBranch).add_modifier(Modifier::BOLD),
        ));
        title.push(Span::raw(" · "));
        title.push(status_span(c, theme));
        if let Some(r) = c.result.as_ref().filter(|r| r.ok()) {
            title.push(Span::styled(
                format!(" {:.0}%", r.body.confidence * 100.0),
                theme.confidence_style(r.body.confidence),
            ));
        }
        title.push(Span::raw(" "));
        if slot == 0 && first > 0 {
            title.insert(0, Span::styled("◀", theme.style(Role::Accent)));
        }
        if slot + 1 == shown.len() && first + fit < n {
            title.push(Span::styled("▶", theme.style(Role::Accent)));
        }
        let block = pane(Line::from(title), focused, theme);
        let inner = block.inner(areas[slot]);
        f.render_widget(block, areas[slot]);
        render_column_body(f, inner, c, theme);
    }
}

fn render_column_body(f: &mut Frame, inner: Rect, c: &Column, theme: &Theme) {
    let running = c.status.running();
    // A call in progress with nothing parsed yet: follow the stream.
    if running && c.result.is_none() {
        let text = if c.live.is_empty() {
            &c.thinking
        } else {
            &c.live
        };
        let style = theme.style(if c.live.is_empty() {
            Role::Thinking
        } else {
            Role::Response
        });
        let (p, _) = tail_text(text, inner.width, inner.height, 0, style);
        f.render_widget(p, inner);
        return;
    }
    let mut lines: Vec<Line> = Vec::new();
    let head = |s: &str| Line::styled(s.to_string(), theme.style(Role::Title));
    if let ColStatus::Failed(e) = &c.status {
        lines.push(Line::styled(e.clone(), theme.style(Role::Error)));
    }
    if let Some(r) = c.result.as_ref().filter(|r| r.ok()) {
        lines.push(Line::styled(
            r.body.conclusion.clone(),
            theme.style(Role::Response),
        ));
        for (name, list, role) in [
            ("Key insights", &r.body.key_insights, Role::Success),
            ("Risks", &r.body.risks, Role::Warning),
        ] {
            if !list.is_empty() {
                lines.push(Line::default());
                lines.push(head(name));
                for item in list {
                    lines.push(Line::from(vec![
                        Span::styled("• ", theme.style(role)),
                        Span::styled(item.clone(), theme.style(Role::Fg)),
                    ]));
                }
            }
        }
    }
    for e in &c.debate {
        lines.push(Line::default());
        let mut h = vec![Span::styled(
            format!("Round {}", e.round),
            theme.style(Role::Title),
        )];
        match &e.error {
            Some(err) => h.push(Span::styled(
                format!(" failed: {err}"),
                theme.style(Role::Error),
            )),
            None => {
                h.push(Span::styled(
                    format!(" {:.0}%", e.confidence * 100.0),
                    theme.confidence_style(e.confidence),
                ));
                if e.position_changed {
                    h.push(Span::styled(" position changed", theme.style(Role::Accent)));
                }
            }
        }
        lines.push(Line::from(h));
        if e.error.is_none() {
            lines.push(Line::styled(e.response.clone(), theme.style(Role::Fg)));
        }
    }
    if running && !c.live.is_empty() {
        lines.push(Line::default());
        lines.push(Line::styled(c.live.clone(), theme.style(Role::Dim)));
    }
    let p = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = p.line_count(inner.width) as u16;
    let scroll = c.scroll.min(total.saturating_sub(inner.height));
    f.render_widget(p.scroll((scroll, 0)), inner);
}

fn pct(c: f64) -> String {
    format!("{:.0}%", c * 100.0)
}

fn steer_lines<'a>(s: &'a SteerView, theme: &Theme, out: &mut Vec<Line<'a>>) {
    let mut h = vec![
        Span::styled("↳ ", theme.style(Role::Accent)),
        Span::styled(s.label.clone(), theme.style(Role::Title)),
    ];
    if s.running {
        h.push(Span::styled(" running…", theme.style(Role::Warning)));
    }
    if let Some(c) = s.confidence {
        h.push(Span::styled(
            format!(" {}", pct(c)),
            theme.confidence_style(c),
        ));
    }
    out.push(Line::from(h));
    if let Some(e) = &s.error {
        out.push(Line::styled(format!("  {e}"), theme.style(Role::Error)));
    }
    if s.running && !s.live.is_empty() {
        let tail: String = {
            let chars: Vec<char> = s.live.chars().collect();
            chars[chars.len().saturating_sub(400)..].iter().collect()
        };
        out.push(Line::styled(format!("  {tail}"), theme.style(Role::Dim)));
    }
    for l in &s.lines {
        out.push(Line::styled(format!("  {l}"), theme.style(Role::Fg)));
    }
}

fn render_panel(f: &mut Frame, area: Rect, ws: &ForkView<'_>, theme: &Theme) {
    let mut lines: Vec<Line> = Vec::new();
    lines.push(Line::from(vec![
        Span::styled("Q ", theme.style(Role::Accent)),
        Span::styled(ws.question.to_string(), theme.style(Role::Query)),
    ]));
    match ws.comparison {
        None if !ws.comparison_live.is_empty() => {
            lines.push(Line::styled("comparing…", theme.style(Role::Warning)));
        }
        None => lines.push(Line::styled(
            "the comparison follows when the branches finish",
            theme.style(Role::Dim),
        )),
        Some(c) => {
            if let Some(e) = &c.comparison_error {
                lines.push(Line::styled(
                    format!("no comparison: {e}"),
                    theme.style(Role::Warning),
                ));
            }
            for p in &c.convergence_points {
                let level = match p.agreement_level {
                    Agreement::Full => "full",
                    Agreement::Partial => "partial",
                    Agreement::None => "none",
                };
                let styles: Vec<&str> = p.styles.iter().map(|s| s.as_str()).collect();
                lines.push(Line::from(vec![
                    Span::styled("≈ converge ", theme.style(Role::Success)),
                    Span::styled(p.topic.clone(), theme.style(Role::Title)),
                    Span::styled(
                        format!(" ({level} agreement: {})", styles.join(", ")),
                        theme.style(Role::Dim),
                    ),
                    Span::styled(format!(" {}", p.summary), theme.style(Role::Fg)),
                ]));
            }
            for p in &c.divergence_points {
                let sig = match p.significance {
                    Significance::High => "high",
                    Significance::Medium => "medium",
                    Significance::Low => "low",
                };
                lines.push(Line::from(vec![
                    Span::styled("≠ diverge ", theme.style(Role::Warning)),
                    Span::styled(p.topic.clone(), theme.style(Role::Title)),
                    Span::styled(format!(" ({sig})"), theme.style(Role::Dim)),
                ]));
                for pos in &p.positions {
                    lines.push(Line::from(vec![
                        Span::styled(format!("    {} ", pos.style), theme.style(Role::ForkBranch)),
                        Span::styled(pct(pos.confidence), theme.confidence_style(pos.confidence)),
                        Span::styled(format!(" {}", pos.position), theme.style(Role::Fg)),
                    ]));
                }
                if let Some(r) = &p.recommendation {
                    lines.push(Line::styled(format!("    → {r}"), theme.style(Role::Dim)));
                }
            }
            if !c.meta_insight.is_empty() {
                lines.push(Line::from(vec![
                    Span::styled("Meta insight ", theme.style(Role::Accent)),
                    Span::styled(c.meta_insight.clone(), theme.style(Role::Fg)),
                ]));
            }
            if let Some(r) = &c.recommended_approach {
                lines.push(Line::from(vec![
                    Span::styled("Recommended ", theme.style(Role::Accent)),
                    Span::styled(r.style.as_str(), theme.style(Role::ForkBranch)),
                    Span::styled(
                        format!(" {} ", pct(r.confidence)),
                        theme.confidence_style(r.confidence),
                    ),
                    Span::styled(r.rationale.clone(), theme.style(Role::Fg)),
                ]));
            }
        }
    }
    if let Some(c) = ws.consensus {
        let (label, role) = if c.reached {
            ("Consensus", Role::Success)
        } else {
            ("No consensus", Role::Warning)
        };
        let mut h = vec![Span::styled(
            format!("{label} after {} rounds", ws.rounds),
            theme.style(role),
        )];
        if let Some(t) = &c.text {
            h.push(Span::styled(format!(": {t}"), theme.style(Role::Fg)));
        } else if !c.live.is_empty() {
            h.push(Span::styled(": synthesising…", theme.style(Role::Dim)));
        }
        lines.push(Line::from(h));
    }
    for s in ws.steers {
        steer_lines(s, theme, &mut lines);
    }
    let title = match ws.busy {
        Some(what) => format!(" Comparison · {what}… "),
        None => " Comparison ".to_string(),
    };
    let block = pane(title, false, theme);
    let inner = block.inner(area);
    let p = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = p.line_count(inner.width) as u16;
    let scroll = ws.panel_scroll.min(total.saturating_sub(inner.height));
    f.render_widget(p.scroll((scroll, 0)).block(block), area);
}

fn render_tree(f: &mut Frame, area: Rect, ws: &ForkView<'_>, theme: &Theme) {
    let dim = theme.style(Role::Dim);
    let header = Line::from(vec![
        Span::styled(ws.kind.to_string(), theme.style(Role::Title)),
        Span::styled(format!(" · {} branches", ws.columns.len()), dim),
    ]);
    let mut rows: Vec<Line> = Vec::new();
    let n = ws.columns.len();
    let has_steers = !ws.steers.is_empty();
    for (i, c) in ws.columns.iter().enumerate() {
        let last = i + 1 == n && !has_steers;
        let mut spans = vec![
            Span::styled(if last { "└ " } else { "├ " }, dim),
            Span::styled(
                c.style.as_str(),
                if i == ws.focus {
                    theme
                        .style(Role::ForkBranch)
                        .add_modifier(Modifier::REVERSED)
                } else {
                    theme.style(Role::ForkBranch)
                },
            ),
            Span::raw(" "),
            status_span(c, theme),
        ];
        if let Some(r) = c.result.as_ref().filter(|r| r.ok()) {
            spans.push(Span::styled(
                format!(" {}", pct(r.body.confidence)),
                theme.confidence_style(r.body.confidence),
            ));
        }
        if c.marked {
            spans.push(Span::styled(" ●", theme.style(Role::Accent)));
        }
        rows.push(Line::from(spans));
    }
    if has_steers {
        rows.push(Line::from(vec![
            Span::styled("└ ", dim),
            Span::styled("steering", theme.style(Role::Title)),
        ]));
        let m = ws.steers.len();
        for (i, s) in ws.steers.iter().enumerate() {
            let mut spans = vec![
                Span::styled(if i + 1 == m { "  └ " } else { "  ├ " }, dim),
                Span::styled(s.label.clone(), theme.style(Role::Fg)),
            ];
            if s.running {
                spans.push(Span::styled(" …", theme.style(Role::Warning)));
            } else if s.error.is_some() {
                spans.push(Span::styled(" failed", theme.style(Role::Error)));
            } else if let Some(c) = s.confidence {
                spans.push(Span::styled(
                    format!(" {}", pct(c)),
                    theme.confidence_style(c),
                ));
            }
            rows.push(Line::from(spans));
        }
    }
    let marked = ws.columns.iter().filter(|c| c.marked).count();
    let mut footer = vec![Line::default()];
    if marked > 0 {
        footer.push(Line::styled(format!("{marked} marked · M merges"), dim));
    }
    footer.push(Line::styled(
        "N new · D debate · x expand · C challenge · space mark · M merge · F refork · v checkpoint · ? help",
        dim,
    ));

    let block = pane(" Branches ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    // The header, the branches and the footer follow each other as in one wrapped paragraph.
    let header_height = (wrap_line(&header, inner.width).len() as u16).min(inner.height);
    f.render_widget(
        Paragraph::new(header).wrap(Wrap { trim: false }),
        Rect {
            height: header_height,
            ..inner
        },
    );
    let room = inner.height - header_height;
    let mut items = Vec::with_capacity(rows.len());
    let mut used = 0u16;
    for (i, row) in rows.iter().enumerate() {
        if used == room {
            break;
        }
        let mut lines = wrap_line(row, inner.width);
        lines.truncate(usize::from(room - used));
        used += lines.len() as u16;
        items.push(TreeItem::new_leaf(i, Text::from(lines)));
    }
    let tree_area = Rect {
        y: inner.y + header_height,
        height: used,
        ..inner
    };
    // The connectors are part of each row's text: a steering row wrapped by the widget's
    // indentation would hang its second line two columns in, which the paragraph did not.
    if let Ok(tree) = Tree::new(&items) {
        let tree = tree
            .node_open_symbol("")
            .node_closed_symbol("")
            .node_no_children_symbol("");
        f.render_stateful_widget(tree, tree_area, &mut TreeState::default());
    }
    f.render_widget(
        Paragraph::new(footer).wrap(Wrap { trim: false }),
        Rect {
            y: tree_area.bottom(),
            height: room - used,
            ..inner
        },
    );
}

/// `line` wrapped at `width` columns into the lines `Paragraph` with `Wrap { trim: false }`
/// draws: words move to the next line whole, longer ones break where the line ends, and the
/// spaces a line breaks at are dropped. The tree widget draws a row's lines as they are, so a
/// row that does not fit is wrapped here first.
fn wrap_line(line: &Line<'_>, width: u16) -> Vec<Line<'static>> {
    let max = width;
    let mut out: Vec<Vec<StyledGrapheme>> = Vec::new();
    if max == 0 {
        return Vec::new();
    }
    let mut pending_line: Vec<StyledGrapheme> = Vec::new();
    let mut pending_word: Vec<StyledGrapheme> = Vec::new();
    let mut pending_space: VecDeque<StyledGrapheme> = VecDeque::new();
    let (mut line_width, mut word_width, mut space_width) = (0u16, 0u16, 0u16);
    let mut after_word = false;
    for g in line.styled_graphemes(Style::default()) {
        let is_space = g.is_whitespace();
        let w = g.symbol.cell_width();
        if w > max {
            continue;
        }
        // A word ended, or the first one would not fit even alone: it joins the line.
        if (after_word && is_space)
            || (pending_line.is_empty() && word_width + space_width + w > max)
        {
            pending_line.extend(pending_space.drain(..));
            line_width += space_width;
            pending_line.append(&mut pending_word);
            line_width += word_width;
            space_width = 0;
            word_width = 0;
        }
        if line_width >= max || (w > 0 && line_width + space_width + word_width >= max) {
            let mut remaining = max.saturating_sub(line_width);
            out.push(std::mem::take(&mut pending_line));
            line_width = 0;
            // The spaces that still fit the line just ended go with it.
            while let Some(front) = pending_space.front() {
                let fw = front.symbol.cell_width();
                if fw > remaining {
                    break;
                }
                space_width -= fw;
                remaining -= fw;
                pending_space.pop_front();
            }
            if is_space && pending_space.is_empty() {
                continue;
            }
        }
        if is_space {
            space_width += w;
            pending_space.push_back(g);
        } else {
            word_width += w;
            pending_word.push(g);
        }
        after_word = !is_space;
    }
    pending_line.extend(pending_space.drain(..));
    pending_line.append(&mut pending_word);
    if !pending_line.is_empty() {
        out.push(pending_line);
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    out.into_iter()
        .map(|graphemes| {
            Line::from(
                graphemes
                    .into_iter()
                    .map(|g| Span::styled(g.symbol.to_string(), g.style))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::style::Color;
    use ratatui::widgets::Widget;

    use super::*;

    /// `line` drawn by a wrapping paragraph, and its wrapped lines drawn one per row.
    fn both(line: &Line<'_>, width: u16) -> (Buffer, Buffer) {
        let area = Rect::new(0, 0, width, 24);
        let mut paragraph = Buffer::empty(area);
        Paragraph::new(line.clone())
            .wrap(Wrap { trim: false })
            .render(area, &mut paragraph);
        let mut rows = Buffer::empty(area);
        for (y, l) in wrap_line(line, width).iter().enumerate().take(24) {
            l.render(Rect::new(0, y as u16, width, 1), &mut rows);
        }
        (paragraph, rows)
    }

    #[test]
    fn rows_wrap_as_the_paragraph_wrapped_them() {
        let texts = [
            "├ conservative debating, round 3… 80% ●",
            "  ├ checkpoint disagree → corrected branch on conservative 70%",
            "  └ expand balanced   with  spaces failed",
            "averyveryveryverylongwordthatmustbebroken and more",
            "   leading spaces and trailing   ",
            "wide 漢字 characters 漢字漢字 漢字漢字漢字漢字",
            "",
            " ",
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        let mut lines: Vec<Line> = texts
            .iter()
            .map(|t| {
                // Styles change inside words and spaces alike.
                let mut spans = Vec::new();
                let chars: Vec<char> = t.chars().collect();
                for chunk in chars.chunks(5) {
                    let color = Color::Indexed(rng.u8(..));
                    spans.push(Span::styled(
                        chunk.iter().collect::<String>(),
                        Style::default().fg(color),
                    ));
                }
                Line::from(spans)
            })
            .collect();
        for _ in 0..100 {
            let words: Vec<String> = (0..rng.usize(1..12))
                .map(|_| {
                    let word: String = (0..rng.usize(1..15)).map(|_| rng.lowercase()).collect();
                    word + &" ".repeat(rng.usize(0..4))
                })
                .collect();
            lines.push(Line::raw(words.concat()));
        }
        for line in &lines {
            for width in 1..48 {
                let (paragraph, mut rows) = both(line, width);
                // Where a wrapped line ends in a wide character one column past the area,
                // the paragraph draws it in the last column and a line leaves that blank.
                for y in 0..24 {
                    let last = (width - 1, y);
                    if paragraph[last].symbol().cell_width() == 2 && rows[last].symbol() == " " {
                        rows[last] = paragraph[last].clone();
                    }
                }
                assert_eq!(paragraph, rows, "{line:?} at {width}");
            }
        }
    }
}
