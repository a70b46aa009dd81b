//! The Merge pane: the claims of a merge, each with the steps it came from.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{DiffView, Focus, flat};
use crate::engines::diff::{Claim, Merged};
use crate::views::JobPhase;
use crate::views::text::clip;
use crate::views::theme::{Role, Theme};
use crate::views::think::pane;
use crate::views::verify::wrap;

/// A claim as listed: `1. text` wrapped under itself, then `← A2 B1`.
pub(super) fn claim_lines(m: &Merged, i: usize, c: &Claim, width: usize) -> Vec<String> {
    let n = format!("{}. ", i + 1);
    let indent = " ".repeat(n.chars().count());
    let mut out: Vec<String> = wrap(&c.text, width.saturating_sub(2 + indent.len()))
        .into_iter()
        .enumerate()
        .map(|(k, l)| format!("{}{l}", if k == 0 { &n } else { &indent }))
        .collect();
    out.push(format!("{indent}← {}", m.refs(c)));
    out
}

pub(super) fn render_claims(f: &mut Frame, area: Rect, view: &DiffView<'_>, theme: &Theme) {
    let focused = view.focus == Focus::Claims;
    let title = match (view.merge, view.merged) {
        (JobPhase::Done, Some(m)) => format!(
            " Merge · synthesis {} · {} claims ",
            m.node.short(),
            m.claims.len()
        ),
        _ => " Merge ".into(),
    };
    let block = pane(title, focused, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let lines: Vec<Line<'static>> = match (view.merge, view.merged) {
        (JobPhase::Running, _) => vec![Line::styled(
            "⟳ merging A and B into claims…",
            theme.style(Role::Accent),
        )],
        (JobPhase::Failed(e), _) => vec![Line::styled(
            clip(&format!("✗ the merge failed: {}", flat(e)), width),
            theme.style(Role::Error),
        )],
        (JobPhase::Interrupted, _) => {
            vec![Line::styled("merge cancelled", theme.style(Role::Warning))]
        }
        (_, Some(m)) => claims_in_view(m, view, inner, theme),
        _ => Vec::new(),
    };
    f.render_widget(Paragraph::new(lines), inner);
}

/// The claims' lines from the first that keeps the selected claim in view.
fn claims_in_view(
    m: &Merged,
    view: &DiffView<'_>,
    inner: Rect,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let width = inner.width as usize;
    let height = inner.height as usize;
    let all: Vec<Vec<String>> = m
        .claims
        .iter()
        .enumerate()
        .map(|(i, c)| claim_lines(m, i, c, width))
        .collect();
    let sel = view.claim.min(m.claims.len().saturating_sub(1));
    let mut first = sel;
    let mut used = all.get(sel).map_or(0, Vec::len);
    while first > 0 && used + all[first - 1].len() <= height {
        first -= 1;
        used += all[first].len();
    }
    let mut out = Vec::new();
    for (i, lines) in all.iter().enumerate().skip(first) {
        let selected = i == sel && view.focus == Focus::Claims;
        let last = lines.len() - 1;
        for (k, l) in lines.iter().enumerate() {
            let mark = if selected && k == 0 { "▶ " } else { "  " };
            let style = if k == last {
                theme.style(Role::Dim)
            } else if selected {
                theme.style(Role::Selection)
            } else {
                theme.style(Role::Fg)
            };
            out.push(Line::from(vec![
                Span::styled(mark, theme.style(Role::Accent)),
                Span::styled(l.clone(), style),
            ]));
        }
    }
    out.truncate(height);
    out
}
