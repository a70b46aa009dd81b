//! The shared form popup: choices (one, or several marked) and/or a line of text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::overlay::centered;
use super::think::pane;
use crate::app::form::Form;
use crate::app::theme::{Role, Theme};

/// Draws `form` centred over `area`.
pub fn render(f: &mut Frame, area: Rect, form: &Form, theme: &Theme) {
    let mut lines: Vec<Line> = Vec::new();
    for (i, choice) in form.choices.iter().enumerate() {
        let here = i == form.cursor && !form.on_text;
        let mark = if form.multi {
            if form.checked.get(i).copied().unwrap_or(false) {
                "[x] "
            } else {
                "[ ] "
            }
        } else if i == form.cursor {
            "(•) "
        } else {
            "( ) "
        };
        let style = if here {
            theme.style(Role::Selection)
        } else {
            theme.base()
        };
        lines.push(Line::from(vec![
            Span::styled(format!(" {} ", i + 1), theme.style(Role::Accent)),
            Span::styled(format!("{mark}{choice}"), style),
        ]));
    }
    if let Some(label) = &form.text_label {
        if !lines.is_empty() {
            lines.push(Line::default());
        }
        let req = if form.text_required {
            ""
        } else {
            " (optional)"
        };
        lines.push(Line::styled(
            format!(" {label}{req}"),
            theme.style(Role::Dim),
        ));
        let caret = if form.on_text { "▏" } else { "" };
        let style = if form.on_text {
            theme.style(Role::BorderFocused)
        } else {
            theme.base()
        };
        lines.push(Line::from(vec![
            Span::styled(" › ", theme.style(Role::Accent)),
            Span::styled(format!("{}{caret}", form.input.text()), style),
        ]));
    }
    if let Some(e) = &form.error {
        lines.push(Line::styled(format!(" {e}"), theme.style(Role::Error)));
    }
    let mut hint = String::from(" Enter ok · Esc cancel");
    if form.multi {
        hint.push_str(" · space/1-9 mark");
    } else if !form.choices.is_empty() {
        hint.push_str(" · 1-9 pick");
    }
    if form.text_label.is_some() && !form.choices.is_empty() {
        hint.push_str(" · Tab text");
    }
    lines.push(Line::default());
    lines.push(Line::styled(hint, theme.style(Role::Dim)));
    let width = area.width.saturating_sub(8).clamp(30, 72);
    let text_rows = (form.input.text().chars().count() as u16 / width.saturating_sub(6).max(1)) + 1;
    let height = lines.len() as u16 + text_rows + 2;
    let rect = centered(area, width, height);
    f.render_widget(Clear, rect);
    let block = pane(format!(" {} ", form.title), true, theme);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .style(theme.base())
            .block(block),
        rect,
    );
}
