//! The approval modal (the plan and the audit, with the keys that decide) and the overlay
//! that shows a citation's source.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::content::{self, clip, hang, source_lines};
use super::{ModalMode, ModalView, SourceView};
use crate::engines::research::ResearchState;
use crate::views::ViewCx;
use crate::views::overlay::centered;
use crate::views::theme::{Role, Theme};
use crate::views::think::pane;

pub(super) fn modal(
    f: &mut Frame,
    area: Rect,
    st: &ResearchState,
    m: &ModalView<'_>,
    v: &ViewCx<'_>,
) {
    let theme = v.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(8).max(40),
        area.height.saturating_sub(4).max(12),
    );
    f.render_widget(Clear, rect);
    let rev = st.plan.as_ref().map_or(0, |p| p.revision);
    let title = format!(" Approve this plan? · revision {rev} · nothing has run yet ");
    let block = pane(title, true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let width = inner.width as usize;
    let dim = theme.style(Role::Dim);
    let accent = theme.style(Role::Accent);

    let mut lines: Vec<Line<'static>> = Vec::new();
    if let Some(p) = &st.plan {
        lines.extend(hang(
            "Objective  ",
            &p.objective,
            width,
            theme.style(Role::Title),
            theme.style(Role::Fg),
        ));
        lines.push(Line::styled(
            format!(
                "{} step(s) · estimated budget {} tokens",
                p.steps.len(),
                p.estimated_token_budget
            ),
            dim,
        ));
        lines.push(Line::raw(""));
        for (i, s) in p.steps.iter().enumerate() {
            let sel = i == m.step;
            let (tool, input) = match (m.mode, sel) {
                (ModalMode::Edit { tool }, true) => (*tool, m.input.text().to_string()),
                _ => (s.tool, s.input.clone()),
            };
            let mark = if sel { "▶" } else { " " };
            let mut head = Line::from(vec![
                Span::styled(format!("{mark}{:>2}. ", i + 1), accent),
                Span::styled(
                    format!("{tool} "),
                    theme.style(Role::ToolCall).add_modifier(Modifier::BOLD),
                ),
                Span::styled(
                    clip(&format!("{input:?}"), width.saturating_sub(24)),
                    theme.style(Role::Query),
                ),
            ]);
            if sel {
                head = head.patch_style(theme.style(Role::Selection));
            }
            lines.push(head);
            if !s.rationale.is_empty() {
                lines.extend(hang("     ", &s.rationale, width, dim, dim));
            }
        }
    }
    lines.push(Line::raw(""));
    if let Some(a) = &st.audit_result {
        lines.extend(content::audit_body(a, width, theme));
    } else {
        lines.push(Line::styled("no audit yet", dim));
    }
    // The key line or the form, always at the bottom.
    let foot_h: u16 = if matches!(m.mode, ModalMode::Review) {
        1
    } else {
        2
    };
    let [body, foot] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(foot_h)]).areas(inner);
    let h = body.height as usize;
    let skip = m.scroll.min(lines.len().saturating_sub(h));
    let shown: Vec<Line> = lines.into_iter().skip(skip).take(h).collect();
    f.render_widget(Paragraph::new(shown), body);
    let key = |k: &str, what: &str| {
        vec![
            Span::styled(k.to_string(), accent.add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {what}  "), dim),
        ]
    };
    match m.mode {
        ModalMode::Review => {
            let mut spans = Vec::new();
            for (k, what) in [
                ("a", "approve"),
                ("r", "reject with a note"),
                ("e", "edit the step"),
                ("t", "change its tool"),
                ("j/k", "step"),
                ("esc", "later"),
            ] {
                spans.extend(key(k, what));
            }
            f.render_widget(Paragraph::new(Line::from(spans)), foot);
        }
        ModalMode::Reject | ModalMode::Edit { .. } => {
            let [label, line] = Layout::vertical([Constraint::Length(1); 2]).areas(foot);
            let (what, keys) = match m.mode {
                ModalMode::Reject => (
                    "Why reject it? (the note goes to the planner)".to_string(),
                    "enter rejects · esc back",
                ),
                ModalMode::Edit { tool } => (
                    format!("Step {} input · tool {tool}", m.step + 1),
                    "tab cycles the tool · enter sends it to the audit again · esc back",
                ),
                ModalMode::Review => (String::new(), ""),
            };
            f.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled(what, theme.style(Role::Title)),
                    Span::styled(format!("   {keys}"), dim),
                ])),
                label,
            );
            let room = (line.width as usize).saturating_sub(3);
            let text = m.input.text().replace('\n', " ");
            let (_, col) = m.input.cursor_position();
            let start = col.saturating_sub(room);
            let shown: String = text.chars().skip(start).take(room).collect();
            f.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled("▏", accent),
                    Span::styled(shown, theme.style(Role::Query)),
                ])),
                line,
            );
            let x = line.x + (1 + col - start).min(line.width.saturating_sub(1) as usize) as u16;
            f.set_cursor_position((x, line.y));
        }
    }
}

pub(super) fn source(f: &mut Frame, area: Rect, s: &SourceView, theme: &Theme) {
    let rect = centered(
        area,
        area.width.saturating_sub(12).max(40),
        area.height.saturating_sub(6).max(10),
    );
    f.render_widget(Clear, rect);
    let block = pane(format!(" {} · Esc closes ", s.title), true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let lines = source_lines(s, inner.width as usize, theme);
    let h = inner.height as usize;
    let skip = s.scroll.min(lines.len().saturating_sub(h));
    let shown: Vec<Line> = lines.into_iter().skip(skip).take(h).collect();
    f.render_widget(Paragraph::new(shown), inner);
}
