//! The full-text search popup: the query, then the ranked hits — node type and session title
//! on one line, the snippet with the matched words highlighted under it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::input::InputBox;
use super::overlay::centered;
use super::theme::{Role, Theme};
use super::think::pane;
use crate::store::{NodeId, NodeType, SessionId};

/// One ranked hit, ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct HitRow {
    pub node: NodeId,
    pub session: SessionId,
    pub session_title: String,
    pub kind: NodeType,
    pub score: f64,
    /// The text around the first match, on one line.
    pub snippet: String,
    /// Byte ranges of the query's words inside `snippet`.
    pub highlights: Vec<(usize, usize)>,
}

/// The search popup.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchOverlay {
    pub input: InputBox,
    /// Number of the latest search sent; answers to older ones are dropped.
    pub seq: u64,
    /// The query `hits` answer.
    pub answered: String,
    pub hits: Vec<HitRow>,
    pub selected: usize,
    /// A search is under way for the text in `input`.
    pub searching: bool,
    pub error: Option<String>,
}

impl SearchOverlay {
    /// Whether the query has a word the index can look up.
    pub fn searchable(&self) -> bool {
        crate::store::search::tokenize(self.input.text())
            .next()
            .is_some()
    }
}

/// The snippet as spans, the highlighted byte ranges in `accent`.
pub fn snippet_spans(hit: &HitRow, width: usize, base: Style, accent: Style) -> Vec<Span<'static>> {
    let s = &hit.snippet;
    let mut spans = Vec::new();
    let mut at = 0;
    for &(start, end) in &hit.highlights {
        if start < at || end > s.len() || !s.is_char_boundary(start) || !s.is_char_boundary(end) {
            continue;
        }
        if start > at {
            spans.push(Span::styled(s[at..start].to_string(), base));
        }
        spans.push(Span::styled(s[start..end].to_string(), accent));
        at = end;
    }
    if at < s.len() {
        spans.push(Span::styled(s[at..].to_string(), base));
    }
    // Cut to the width: a snippet is one line.
    let mut left = width;
    let mut out = Vec::with_capacity(spans.len());
    for sp in spans {
        if left == 0 {
            break;
        }
        let n = sp.content.chars().count();
        if n <= left {
            left -= n;
            out.push(sp);
        } else {
            let cut: String = sp.content.chars().take(left).collect();
            out.push(Span::styled(cut, sp.style));
            left = 0;
        }
    }
    out
}

/// Draws the popup over `area`.
pub fn render(f: &mut Frame, area: Rect, search: &SearchOverlay, theme: &Theme) {
    let rect = centered(
        area,
        area.width.saturating_sub(8).clamp(20, 110),
        area.height.saturating_sub(4).clamp(6, 32),
    );
    f.render_widget(Clear, rect);
    let block = pane(
        " Search thinking, answers, tools · Enter opens · Esc closes ",
        true,
        theme,
    );
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    if inner.height < 3 {
        return;
    }
    let dim = theme.style(Role::Dim);
    let width = inner.width as usize;
    let mut lines = Vec::with_capacity(inner.height as usize);
    lines.push(Line::from(vec![
        Span::styled("/ ", theme.style(Role::Accent)),
        Span::styled(search.input.text().to_string(), theme.style(Role::Query)),
    ]));
    let status = if let Some(e) = &search.error {
        Span::styled(e.clone(), theme.style(Role::Error))
    } else if search.input.text().trim().is_empty() {
        Span::styled("type words to find in every session (2+ letters each)", dim)
    } else if !search.searchable() {
        Span::styled("words need at least 2 letters or digits", dim)
    } else if search.searching && search.hits.is_empty() {
        Span::styled("searching…", dim)
    } else if search.hits.is_empty() {
        Span::styled(format!("no matches for '{}'", search.answered), dim)
    } else {
        let n = search.hits.len();
        Span::styled(
            format!(
                "{n} {}{} · ↑/↓ select",
                if n == 1 { "hit" } else { "hits" },
                if search.searching {
                    " · searching…"
                } else {
                    ""
                }
            ),
            dim,
        )
    };
    lines.push(Line::from(status));
    // Two lines a hit; keep the selected one in view.
    let room = (inner.height as usize).saturating_sub(2) / 2;
    let first = (search.selected + 1).saturating_sub(room);
    for (i, hit) in search.hits.iter().enumerate().skip(first).take(room) {
        let selected = i == search.selected;
        let pick = |s: Style| {
            if selected {
                s.patch(theme.style(Role::Selection))
            } else {
                s
            }
        };
        let kind = hit.kind.as_str();
        let title: String = if hit.session_title.is_empty() {
            "untitled".into()
        } else {
            hit.session_title
                .chars()
                .take(width.saturating_sub(16))
                .collect()
        };
        lines.push(Line::from(vec![
            Span::styled(
                if selected { "▸ " } else { "  " },
                pick(theme.style(Role::Accent)),
            ),
            Span::styled(format!("{kind:<10}"), pick(theme.node_style(kind))),
            Span::styled(" ", pick(Style::default())),
            Span::styled(title, pick(theme.style(Role::Fg))),
        ]));
        let mut snippet = vec![Span::styled("    ", pick(Style::default()))];
        snippet.extend(snippet_spans(
            hit,
            width.saturating_sub(4),
            pick(dim),
            pick(dim)
                .patch(theme.style(Role::Accent))
                .add_modifier(Modifier::BOLD),
        ));
        lines.push(Line::from(snippet));
    }
    f.render_widget(Paragraph::new(lines), inner);
    // The cursor sits in the query line.
    let (_, col) = search.input.cursor_position();
    let x = inner.x + 2 + (col as u16).min(inner.width.saturating_sub(3));
    f.set_cursor_position((x, inner.y));
}
