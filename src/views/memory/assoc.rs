//! The Memory workspace's associative view of the selected learning: its score broken down,
//! its concept neighbours as a tree, its event history as a timeline, and its contradictions
//! side by side.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::clip;
use crate::engines::memory::Dims;
use crate::store::MemoryId;
use crate::views::ViewCx;
use crate::views::theme::Role;
use crate::views::think::pane;
use crate::views::verify::wrap;

/// One event on the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub id: u64,
    pub at: String,
    pub kind: String,
    pub detail: String,
}

/// Another learning sharing a concept.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbour {
    pub id: MemoryId,
    pub text: String,
}

/// A contradiction of the selected learning.
#[derive(Clone, Debug, PartialEq)]
pub struct Contradiction {
    pub other: MemoryId,
    pub other_text: String,
    /// The NLI label and confidence, and the model that judged.
    pub verdict: String,
}

/// What the associative view shows of one learning (built off the UI thread).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Associations {
    pub id: Option<MemoryId>,
    pub text: String,
    /// `active`, `superseded`, `archived`.
    pub status: String,
    /// Score now (after decay) and before decay.
    pub score: f64,
    pub reinforcement: f64,
    pub recurrence: u32,
    pub useful: u32,
    pub wrong: u32,
    /// `2026-01-05 → open (high)`.
    pub validity: String,
    /// The seven dimensions against the shown search, when there is one.
    pub dims: Option<Dims>,
    pub query: Option<String>,
    /// Each concept with the other live learnings tagged with it.
    pub concepts: Vec<(String, Vec<Neighbour>)>,
    pub events: Vec<EventRow>,
    pub contradictions: Vec<Contradiction>,
    /// Why there is nothing to show (a core fact is no learning).
    pub note: Option<String>,
}

/// What the view draws.
pub struct AssocView<'a> {
    pub data: Option<&'a Associations>,
    pub loading: bool,
}

/// Draws the associative view into `area`.
pub fn render(f: &mut Frame, area: Rect, a: &AssocView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let fg = theme.style(Role::Fg);
    let title = match a.data.and_then(|d| d.id) {
        Some(id) => format!(" Associations {} ", id.short()),
        None => " Associations ".to_string(),
    };
    let block = pane(title, false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(d) = a.data else {
        let msg = if a.loading {
            "⟳ reading associations…"
        } else {
            "select a memory"
        };
        f.render_widget(Paragraph::new(Line::styled(msg, dim)), inner);
        return;
    };
    if let Some(note) = &d.note {
        f.render_widget(Paragraph::new(Line::styled(note.clone(), dim)), inner);
        return;
    }
    let width = inner.width as usize;
    let head = |s: &str| Line::styled(s.to_string(), theme.style(Role::Title));
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{:<11}", "score"), dim),
            Span::styled(
                format!(
                    "{:.2} now ({:.2} before decay) · {}",
                    d.score, d.reinforcement, d.status
                ),
                theme.confidence_style(d.score),
            ),
        ]),
        Line::from(vec![
            Span::styled(format!("{:<11}", ""), dim),
            Span::styled(
                format!(
                    "learned {}× · feedback +{}/−{}",
                    d.recurrence, d.useful, d.wrong
                ),
                fg,
            ),
        ]),
    ];
    lines.push(Line::from(vec![
        Span::styled(format!("{:<11}", "valid"), dim),
        Span::styled(d.validity.clone(), fg),
    ]));
    if let Some(x) = &d.dims {
        let q = d.query.as_deref().unwrap_or("");
        lines.push(Line::styled(
            clip(&format!("for '{q}':"), width, false),
            dim,
        ));
        let parts = [
            ("text", x.text),
            ("concept", x.concept),
            ("vector", x.vector),
            ("graph", x.graph),
            ("reinforce", x.reinforcement),
            ("temporal", x.temporal),
            ("recency", x.recency),
        ];
        for (row, chunk) in parts.chunks(4).enumerate() {
            let mut spans = vec![Span::raw("  ")];
            for (name, value) in chunk {
                spans.push(Span::styled(format!("{name} "), dim));
                spans.push(Span::styled(
                    format!("{value:.2}  "),
                    theme.confidence_style(f64::from(*value)),
                ));
            }
            if row == 1 {
                spans.push(Span::styled(
                    format!("= {:.3}", x.total),
                    theme.style(Role::Matched),
                ));
            }
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::raw(""));
    lines.push(head("concepts"));
    if d.concepts.is_empty() {
        lines.push(Line::styled("  none", dim));
    }
    for (ci, (concept, near)) in d.concepts.iter().enumerate() {
        let last_c = ci + 1 == d.concepts.len();
        lines.push(Line::from(vec![
            Span::styled(if last_c { "└─ " } else { "├─ " }, dim),
            Span::styled(concept.clone(), theme.style(Role::Link)),
            Span::styled(
                format!(
                    "  {} other{}",
                    near.len(),
                    if near.len() == 1 { "" } else { "s" }
                ),
                dim,
            ),
        ]));
        for (ni, n) in near.iter().enumerate() {
            let stem = if last_c { "   " } else { "│  " };
            let branch = if ni + 1 == near.len() {
                "└─ "
            } else {
                "├─ "
            };
            let text = format!("{} {}", n.id.short(), n.text);
            lines.push(Line::from(vec![
                Span::styled(format!("{stem}{branch}"), dim),
                Span::styled(clip(&text, width.saturating_sub(6), false), fg),
            ]));
        }
    }
    lines.push(Line::raw(""));
    lines.push(head("events"));
    for e in &d.events {
        lines.push(Line::from(vec![
            Span::styled(format!("#{:<5} {} ", e.id, e.at), dim),
            Span::styled(format!("{:<12} ", e.kind), theme.style(Role::Link)),
            Span::styled(clip(&e.detail, width.saturating_sub(36), false), fg),
        ]));
    }
    let pair_rows = if d.contradictions.is_empty() {
        0
    } else {
        2 + 4 * d.contradictions.len() as u16
    };
    let [top, bottom] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(pair_rows.min(inner.height / 2)),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(lines), top);
    if d.contradictions.is_empty() {
        return;
    }
    let mut y = bottom.y;
    f.render_widget(
        Paragraph::new(head("contradictions")),
        Rect {
            height: 1,
            ..bottom
        },
    );
    y += 1;
    for c in &d.contradictions {
        if y >= bottom.bottom() {
            break;
        }
        let row = Rect {
            y,
            height: (bottom.bottom() - y).min(4),
            ..bottom
        };
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(row);
        let side = |id: Option<MemoryId>, text: &str, w: u16| {
            let mut l = vec![Line::styled(id.map(|i| i.short()).unwrap_or_default(), dim)];
            l.extend(
                wrap(text, w.saturating_sub(2) as usize)
                    .into_iter()
                    .take(2)
                    .map(|s| Line::styled(s, fg)),
            );
            l
        };
        f.render_widget(Paragraph::new(side(d.id, &d.text, left.width)), left);
        let mut r = side(Some(c.other), &c.other_text, right.width);
        r[0] = Line::from(vec![
            Span::styled(c.other.short(), dim),
            Span::styled(format!("  {}", c.verdict), theme.style(Role::Error)),
        ]);
        f.render_widget(Paragraph::new(r), right);
        y += 4;
    }
}
