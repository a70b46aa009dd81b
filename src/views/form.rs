//! The shared form popup: choices (one, or several marked) and/or a line of text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::overlay::centered;
use super::theme::{Role, Theme};
use super::think::pane;

/// An open form as drawn.
#[derive(Clone, Copy, Debug)]
pub struct FormView<'a> {
    pub title: &'a str,
    pub choices: &'a [String],
    /// Marks, for a form where several choices can be taken.
    pub checked: &'a [bool],
    pub multi: bool,
    pub cursor: usize,
    /// The text field's label; none for a form without text.
    pub text_label: Option<&'a str>,
    pub text_required: bool,
    /// The text typed so far.
    pub text: &'a str,
    /// Whether keys go to the text field (else to the choices).
    pub on_text: bool,
    /// Why the last submit was refused.
    pub error: Option<&'a str>,
}

/// Draws `form` centred over `area`.
pub fn render(f: &mut Frame, area: Rect, form: &FormView<'_>, theme: &Theme) {
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
    if let Some(label) = form.text_label {
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
            Span::styled(format!("{}{caret}", form.text), style),
        ]));
    }
    if let Some(e) = form.error {
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
    let text_rows = (form.text.chars().count() as u16 / width.saturating_sub(6).max(1)) + 1;
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
