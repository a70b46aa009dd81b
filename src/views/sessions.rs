//! The sessions list (sidebar in Think, full screen in the Sessions workspace).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::hints;
use super::think::pane;
use crate::app::action::Action;
use crate::app::keymap::{Keymap, Mode};
use crate::app::state::{Focus, State};
use crate::app::theme::{Role, Theme};

/// The list of sessions with the filter line when filtering.
pub fn render_list(f: &mut Frame, area: Rect, state: &State, theme: &Theme, focused: bool) {
    let title = if state.filter.text().is_empty() {
        format!(" Sessions · {} ", state.sessions.len())
    } else {
        format!(
            " Sessions · {}/{} ",
            state.filtered.len(),
            state.sessions.len()
        )
    };
    let block = pane(title, focused, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (filter_area, list_area) = if state.filtering || !state.filter.text().is_empty() {
        let [a, b] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
        (Some(a), b)
    } else {
        (None, inner)
    };
    if let Some(a) = filter_area {
        let line = Line::from(vec![
            Span::styled("/", theme.style(Role::Accent)),
            Span::styled(state.filter.text().to_string(), theme.style(Role::Fg)),
        ]);
        f.render_widget(Paragraph::new(line), a);
        if state.filtering && state.overlay.is_none() {
            let x = a.x + 1 + state.filter.text().chars().count() as u16;
            f.set_cursor_position((x.min(a.right().saturating_sub(1)), a.y));
        }
    }
    if state.sessions.is_empty() {
        f.render_widget(
            Paragraph::new("no sessions yet").style(theme.style(Role::Dim)),
            list_area,
        );
        return;
    }
    let height = list_area.height as usize;
    let offset =
        super::graph::visible_offset(state.sidebar_selected, 0, height, state.filtered.len());
    let open = state.loaded.id();
    let lines: Vec<Line> = state
        .filtered
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(pos, i)| state.sessions.get(*i).map(|s| (pos, s)))
        .map(|(pos, s)| {
            let marker = if Some(s.id) == open { "● " } else { "  " };
            let line = Line::from(vec![
                Span::styled(marker, theme.style(Role::Accent)),
                Span::styled(format!("{} ", s.created), theme.style(Role::Dim)),
                Span::styled(s.title.clone(), theme.style(Role::Fg)),
            ]);
            if pos == state.sidebar_selected && (focused || state.focus == Focus::Sidebar) {
                line.style(theme.style(Role::Selection))
            } else {
                line
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), list_area);
}

/// The Sessions workspace: the list, and the selected session's details.
pub fn render(f: &mut Frame, body: Rect, state: &State, theme: &Theme, keymap: &Keymap) {
    let [list, detail] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    render_list(f, list, state, theme, true);
    let block = pane(" Session ", false, theme);
    let inner = block.inner(detail);
    f.render_widget(block, detail);
    let Some(s) = state.selected_session() else {
        return;
    };
    let lines = vec![
        Line::from(Span::styled(s.title.clone(), theme.style(Role::Title))),
        Line::from(""),
        Line::from(vec![
            Span::styled("id       ", theme.style(Role::Dim)),
            Span::raw(s.id.to_string()),
        ]),
        Line::from(vec![
            Span::styled("created  ", theme.style(Role::Dim)),
            Span::raw(s.created.clone()),
        ]),
        Line::from(vec![
            Span::styled("source   ", theme.style(Role::Dim)),
            Span::raw(s.source),
        ]),
        Line::from(""),
        Line::from(Span::styled(
            hints::line(
                keymap,
                Mode::Normal,
                &[
                    (&[Action::Select], "opens it in Think"),
                    (&[Action::RenameSession], "renames"),
                    (&[Action::DeleteSession], "deletes"),
                ],
            ),
            theme.style(Role::Dim),
        )),
    ];
    f.render_widget(Paragraph::new(lines), inner);
}
