//! The sessions list (sidebar in Think, full screen in the Sessions workspace).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::store::SessionId;

/// A row of the sessions list.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub title: String,
    pub created: String,
    pub source: &'static str,
}

/// The sessions list as drawn.
#[derive(Clone, Copy, Debug)]
pub struct SessionsView<'a> {
    pub sessions: &'a [SessionRow],
    /// Indexes into `sessions` that pass the filter, in display order.
    pub filtered: &'a [usize],
    /// Index into `filtered`.
    pub selected: usize,
    /// The filter text.
    pub filter: &'a str,
    /// The filter line takes keys.
    pub filtering: bool,
    /// The session open in Think, marked in the list.
    pub open: Option<SessionId>,
    /// The list has the keyboard focus (as the Think sidebar).
    pub sidebar_focused: bool,
    /// A popup is over the list (the filter's cursor then stays hidden).
    pub overlay: bool,
}

impl SessionsView<'_> {
    /// The selected session row.
    pub fn selected_session(&self) -> Option<&SessionRow> {
        self.filtered
            .get(self.selected)
            .and_then(|i| self.sessions.get(*i))
    }
}

/// The list of sessions with the filter line when filtering.
pub fn render_list(
    f: &mut Frame,
    area: Rect,
    view: &SessionsView<'_>,
    theme: &Theme,
    focused: bool,
) {
    let title = if view.filter.is_empty() {
        format!(" Sessions · {} ", view.sessions.len())
    } else {
        format!(
            " Sessions · {}/{} ",
            view.filtered.len(),
            view.sessions.len()
        )
    };
    let block = pane(title, focused, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (filter_area, list_area) = if view.filtering || !view.filter.is_empty() {
        let [a, b] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
        (Some(a), b)
    } else {
        (None, inner)
    };
    if let Some(a) = filter_area {
        let line = Line::from(vec![
            Span::styled("/", theme.style(Role::Accent)),
            Span::styled(view.filter.to_string(), theme.style(Role::Fg)),
        ]);
        f.render_widget(Paragraph::new(line), a);
        if view.filtering && !view.overlay {
            let x = a.x + 1 + view.filter.chars().count() as u16;
            f.set_cursor_position((x.min(a.right().saturating_sub(1)), a.y));
        }
    }
    if view.sessions.is_empty() {
        f.render_widget(
            Paragraph::new("no sessions yet").style(theme.style(Role::Dim)),
            list_area,
        );
        return;
    }
    let height = list_area.height as usize;
    let offset = super::graph::visible_offset(view.selected, 0, height, view.filtered.len());
    let lines: Vec<Line> = view
        .filtered
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(pos, i)| view.sessions.get(*i).map(|s| (pos, s)))
        .map(|(pos, s)| {
            let marker = if Some(s.id) == view.open {
                "● "
            } else {
                "  "
            };
            let line = Line::from(vec![
                Span::styled(marker, theme.style(Role::Accent)),
                Span::styled(format!("{} ", s.created), theme.style(Role::Dim)),
                Span::styled(s.title.clone(), theme.style(Role::Fg)),
            ]);
            if pos == view.selected && (focused || view.sidebar_focused) {
                line.style(theme.style(Role::Selection))
            } else {
                line
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), list_area);
}

/// The Sessions workspace: the list, and the selected session's details.
pub fn render(f: &mut Frame, body: Rect, view: &SessionsView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let [list, detail] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    render_list(f, list, view, theme, true);
    let block = pane(" Session ", false, theme);
    let inner = block.inner(detail);
    f.render_widget(block, detail);
    let Some(s) = view.selected_session() else {
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
                v.keys,
                &[
                    (&["select"], "opens it in Think"),
                    (&["rename_session"], "renames"),
                    (&["delete_session"], "deletes"),
                ],
            ),
            theme.style(Role::Dim),
        )),
    ];
    f.render_widget(Paragraph::new(lines), inner);
}
