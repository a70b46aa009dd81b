//! The sessions list (sidebar in Think, full screen in the Sessions workspace).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::{Role, Theme};
use super::think::pane;
use super::{ViewCx, hints};
use crate::engines::transcript::SessionStats;
use crate::engines::transcript::export::UNFINISHED_MARK;
use crate::store::SessionId;

/// A row of the sessions list.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub title: String,
    /// A killed import left it partway (some nodes missing until it is imported again).
    pub unfinished: bool,
    pub created: String,
    pub source: &'static str,
    /// The project it belongs to (its git repository or folder), if it has one.
    pub project: Option<String>,
}

/// A row of the list as shown: a project's header (when sessions span several projects) or a
/// session (an index into the sessions).
#[derive(Clone, Debug, PartialEq)]
pub enum ListRow {
    Group {
        /// `None` for the sessions without a project.
        project: Option<String>,
        sessions: usize,
        /// Folded: its sessions are hidden.
        collapsed: bool,
    },
    Session(usize),
}

/// What the details pane knows of the selected session beyond its row.
#[derive(Clone, Copy, Debug)]
pub enum Details<'a> {
    /// Still being counted.
    Loading,
    Stats(&'a SessionStats),
    Failed(&'a str),
}

/// The sessions list as drawn.
#[derive(Clone, Copy, Debug)]
pub struct SessionsView<'a> {
    pub sessions: &'a [SessionRow],
    /// The list was read: an empty one means there are no sessions (until then the store
    /// is still being read, which takes a moment on a large one).
    pub listed: bool,
    /// The rows shown: the sessions that pass the filter, grouped, in display order.
    pub filtered: &'a [ListRow],
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
        match self.filtered.get(self.selected)? {
            ListRow::Session(i) => self.sessions.get(*i),
            ListRow::Group { .. } => None,
        }
    }

    /// How many sessions pass the filter.
    fn matching(&self) -> usize {
        self.filtered
            .iter()
            .filter(|r| matches!(r, ListRow::Session(_)))
            .count()
            + self
                .filtered
                .iter()
                .map(|r| match r {
                    ListRow::Group {
                        sessions,
                        collapsed: true,
                        ..
                    } => *sessions,
                    _ => 0,
                })
                .sum::<usize>()
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
    let title = if !view.listed {
        " Sessions ".to_string()
    } else if view.filter.is_empty() {
        format!(" Sessions · {} ", view.sessions.len())
    } else {
        format!(" Sessions · {}/{} ", view.matching(), view.sessions.len())
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
        let note = if view.listed {
            "no sessions yet"
        } else {
            "reading sessions…"
        };
        f.render_widget(
            Paragraph::new(note).style(theme.style(Role::Dim)),
            list_area,
        );
        return;
    }
    let height = list_area.height as usize;
    let offset = super::graph::visible_offset(view.selected, 0, height, view.filtered.len());
    let grouped = view
        .filtered
        .iter()
        .any(|r| matches!(r, ListRow::Group { .. }));
    let lines: Vec<Line> = view
        .filtered
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(pos, row)| {
            let line = match row {
                ListRow::Group {
                    project,
                    sessions,
                    collapsed,
                } => Line::from(vec![
                    Span::styled(
                        if *collapsed { "▸ " } else { "▾ " },
                        theme.style(Role::Accent),
                    ),
                    Span::styled(
                        project.clone().unwrap_or_else(|| "no project".into()),
                        theme.style(Role::Title),
                    ),
                    Span::styled(format!(" · {sessions}"), theme.style(Role::Dim)),
                ]),
                ListRow::Session(i) => {
                    let s = view.sessions.get(*i)?;
                    let marker = if Some(s.id) == view.open {
                        "● "
                    } else {
                        "  "
                    };
                    let mut spans = vec![
                        Span::raw(if grouped { "  " } else { "" }),
                        Span::styled(marker, theme.style(Role::Accent)),
                        Span::styled(format!("{} ", s.created), theme.style(Role::Dim)),
                    ];
                    if s.unfinished {
                        spans.push(Span::styled(UNFINISHED_MARK, theme.style(Role::Warning)));
                    }
                    spans.push(Span::styled(s.title.clone(), theme.style(Role::Fg)));
                    Line::from(spans)
                }
            };
            Some(
                if pos == view.selected && (focused || view.sidebar_focused) {
                    line.style(theme.style(Role::Selection))
                } else {
                    line
                },
            )
        })
        .collect();
    f.render_widget(Paragraph::new(lines), list_area);
}

/// The width of the details' labels.
const FIELD: usize = 12;

/// The Sessions workspace: the list, and the selected session's details (or the selected
/// project's).
pub fn render(
    f: &mut Frame,
    body: Rect,
    view: &SessionsView<'_>,
    details: Details<'_>,
    v: &ViewCx<'_>,
) {
    let theme = v.theme;
    let [list, detail] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    render_list(f, list, view, theme, true);
    let block = pane(" Session ", false, theme);
    let inner = block.inner(detail);
    f.render_widget(block, detail);
    // Label, then the value wrapped under itself.
    let width = (inner.width as usize).saturating_sub(FIELD + 1);
    let field = |name: &str, value: String| -> Vec<Line<'static>> {
        super::verify::wrap(&value, width)
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let label = if i == 0 { name } else { "" };
                Line::from(vec![
                    Span::styled(format!("{label:<FIELD$} "), theme.style(Role::Dim)),
                    Span::raw(part),
                ])
            })
            .collect()
    };
    if let Some(ListRow::Group {
        project,
        sessions,
        collapsed,
    }) = view.filtered.get(view.selected)
    {
        let mut lines = vec![
            Line::from(Span::styled(
                project.clone().unwrap_or_else(|| "no project".into()),
                theme.style(Role::Title),
            )),
            Line::from(""),
        ];
        lines.extend(field("sessions", sessions.to_string()));
        lines.extend([
            Line::from(""),
            Line::from(Span::styled(
                hints::line(
                    v.keys,
                    &[
                        (&["select"], if *collapsed { "unfolds" } else { "folds" }),
                        (&["expand"], "unfolds"),
                        (&["collapse"], "folds"),
                    ],
                ),
                theme.style(Role::Dim),
            )),
        ]);
        f.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let Some(s) = view.selected_session() else {
        return;
    };
    let mut lines = vec![
        Line::from(Span::styled(s.title.clone(), theme.style(Role::Title))),
        Line::from(""),
    ];
    if s.unfinished {
        lines.splice(
            1..1,
            [Line::from(Span::styled(
                "partial: its import was stopped; import the file again",
                theme.style(Role::Warning),
            ))],
        );
    }
    lines.extend(field("id", s.id.to_string()));
    lines.extend(field("created", s.created.clone()));
    lines.extend(field("source", s.source.to_string()));
    match details {
        Details::Loading => lines.push(Line::from(Span::styled(
            "counting…",
            theme.style(Role::Dim),
        ))),
        Details::Failed(e) => lines.push(Line::from(Span::styled(
            format!("cannot read its details: {e}"),
            theme.style(Role::Error),
        ))),
        Details::Stats(st) => {
            let mut push = |name: &str, value: Option<String>| {
                if let Some(v) = value.filter(|v| !v.is_empty()) {
                    lines.extend(field(name, v));
                }
            };
            push("project", st.project.clone());
            push("cwd", st.cwd.clone());
            push("branch", st.git_branch.clone());
            push("models", Some(st.models.join(", ")));
            push("claude code", Some(st.versions.join(", ")));
            push("active", st.active_line());
            push("counts", Some(st.counts_line()));
            push("tools", st.tools_line());
            push("tokens", st.tokens_line());
            // The project folder and the file: the rest is the Claude Code folder.
            for (i, f) in st.files.iter().enumerate() {
                let path = std::path::Path::new(f);
                let tail: Vec<_> = path.iter().rev().take(2).collect();
                let short = match tail.as_slice() {
                    [file, dir] if path.iter().count() > 2 => {
                        format!("…/{}/{}", dir.to_string_lossy(), file.to_string_lossy())
                    }
                    _ => f.clone(),
                };
                lines.extend(field(if i == 0 { "files" } else { "" }, short));
            }
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        hints::line(
            v.keys,
            &[
                (&["select"], "opens it in Think"),
                (&["rename_session"], "renames"),
                (&["delete_session"], "deletes"),
            ],
        ),
        theme.style(Role::Dim),
    )));
    f.render_widget(Paragraph::new(lines), inner);
}
