//! The Think workspace: sessions sidebar, thinking pane, answer pane, graph pane and question
//! box. Pure: reads its view model, draws, nothing else.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, BorderType, Borders, Paragraph, Wrap};

use super::ViewCx;
use super::graph_model::GraphModel;
use super::input::InputBox;
use super::markdown::MarkdownStyles;
use super::sessions::SessionsView;
use super::theme::{Role, Theme};
use crate::engines::orchestrator::Route;
use crate::store::{NodeId, NodeStatus};

/// Which pane keys go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Input,
    Thinking,
    Response,
    Graph,
    Sidebar,
}

/// How the thinking pane is shown (`t` cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingView {
    Streaming,
    Collapsed,
    Hidden,
}

impl ThinkingView {
    pub fn next(self) -> Self {
        match self {
            ThinkingView::Streaming => ThinkingView::Collapsed,
            ThinkingView::Collapsed => ThinkingView::Hidden,
            ThinkingView::Hidden => ThinkingView::Streaming,
        }
    }
}

/// Where the current run is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunPhase {
    Idle,
    Starting,
    Thinking,
    Answering,
    Done,
    Interrupted,
    Failed(String),
}

impl RunPhase {
    pub fn label(&self) -> String {
        match self {
            RunPhase::Idle => "idle".into(),
            RunPhase::Starting => "starting…".into(),
            RunPhase::Thinking => "thinking…".into(),
            RunPhase::Answering => "answering…".into(),
            RunPhase::Done => "done".into(),
            RunPhase::Interrupted => "interrupted".into(),
            RunPhase::Failed(e) => format!("failed: {e}"),
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(
            self,
            RunPhase::Starting | RunPhase::Thinking | RunPhase::Answering
        )
    }
}

/// The thinking and answer shown in the panes: the turn of the selected graph node, or the
/// live run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shown {
    pub question: String,
    pub thinking: String,
    pub response: String,
    pub thinking_status: Option<NodeStatus>,
    pub response_status: Option<NodeStatus>,
    pub steps: usize,
    pub decisions: usize,
}

/// What the Think workspace draws.
#[derive(Clone, Debug)]
pub struct ThinkView<'a> {
    /// The sessions sidebar, when it is shown.
    pub sidebar: Option<SessionsView<'a>>,
    pub focus: Focus,
    pub thinking_view: ThinkingView,
    pub phase: &'a RunPhase,
    /// The thinking pane's text: the live run's, else the selected turn's.
    pub thinking: &'a str,
    /// The answer pane's text, likewise.
    pub response: &'a str,
    pub thinking_status: Option<NodeStatus>,
    pub response_status: Option<NodeStatus>,
    /// Lines scrolled up from the bottom; 0 follows new text.
    pub thinking_scroll: u16,
    pub response_scroll: u16,
    /// No session is open and nothing runs: the answer pane says how to start.
    pub welcome: bool,
    pub graph: &'a GraphModel,
    /// The route the next question takes (set, or what the router made of the text).
    pub route: Route,
    /// The next question branches from this node.
    pub branch_from: Option<NodeId>,
    pub input: &'a InputBox,
    /// A popup is open (the question box's cursor then stays hidden).
    pub overlay: bool,
}

/// Where each pane goes for a given terminal size and view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    pub sidebar: Option<Rect>,
    pub thinking: Option<Rect>,
    pub response: Rect,
    pub graph: Rect,
    pub input: Rect,
}

/// Splits the workspace body (everything but tabs and status bar).
pub fn layout(body: Rect, view: &ThinkView<'_>) -> Areas {
    let (sidebar, main) = if view.sidebar.is_some() {
        let [s, m] = Layout::horizontal([Constraint::Length(30), Constraint::Min(40)]).areas(body);
        (Some(s), m)
    } else {
        (None, body)
    };
    let input_lines = view.input.text().lines().count().max(1) as u16
        + u16::from(view.input.text().ends_with('\n'));
    let input_h = (input_lines + 2).clamp(3, 8);
    let [top, input] =
        Layout::vertical([Constraint::Min(6), Constraint::Length(input_h)]).areas(main);
    let graph_w = if top.width >= 120 {
        45
    } else {
        (top.width / 3).max(24)
    };
    let [texts, graph] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(graph_w)]).areas(top);
    let (thinking, response) = match view.thinking_view {
        ThinkingView::Hidden => (None, texts),
        ThinkingView::Collapsed => {
            let [t, r] = Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(texts);
            (Some(t), r)
        }
        ThinkingView::Streaming => {
            let [t, r] = Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(texts);
            (Some(t), r)
        }
    };
    Areas {
        sidebar,
        thinking,
        response,
        graph,
        input,
    }
}

/// A workspace with nothing to show yet: its state line, then dim lines saying what it is
/// for and which keys work there.
pub fn empty_workspace(
    f: &mut Frame,
    area: Rect,
    title: &str,
    status: String,
    about: &[&str],
    theme: &Theme,
) {
    let mut lines = vec![
        Line::styled(status, theme.style(Role::Accent)),
        Line::raw(""),
    ];
    lines.extend(
        about
            .iter()
            .map(|l| Line::styled(l.to_string(), theme.style(Role::Dim))),
    );
    f.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: true }).block(pane(
            format!(" {title} "),
            true,
            theme,
        )),
        area,
    );
}

/// A pane's block: rounded border, title, highlighted when focused.
pub fn pane<'a>(title: impl Into<Line<'a>>, focused: bool, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.style(if focused {
            Role::BorderFocused
        } else {
            Role::Border
        }))
        .title(title.into().style(theme.style(Role::Title)))
}

/// The last lines of `text` that fit `height` rows of `width` columns, `up` rows scrolled back
/// from the end. Only the tail is wrapped, so long reasoning costs no more than short.
pub fn tail_text(
    text: &str,
    width: u16,
    height: u16,
    up: u16,
    style: Style,
) -> (Paragraph<'static>, u16) {
    let want = (height as usize + up as usize).max(1);
    // Logical lines from the end until they surely fill `want` rows.
    let mut taken: Vec<&str> = Vec::new();
    let mut rows = 0usize;
    let w = width.max(1) as usize;
    for line in text.rsplit('\n') {
        rows += line.chars().count() / w + 1;
        taken.push(line);
        if rows >= want + 2 && taken.len() > 1 {
            break;
        }
    }
    taken.reverse();
    let para = Paragraph::new(Text::from(
        taken
            .into_iter()
            .map(|l| Line::from(l.to_string()))
            .collect::<Vec<_>>(),
    ))
    .style(style)
    .wrap(Wrap { trim: false });
    let total = para.line_count(width) as u16;
    let up = up.min(total.saturating_sub(height));
    let top = total.saturating_sub(height).saturating_sub(up);
    (para.scroll((top, 0)), up)
}

fn status_marker(status: &Option<NodeStatus>) -> &'static str {
    match status {
        Some(NodeStatus::Streaming) => " · streaming",
        Some(NodeStatus::Interrupted) => " · interrupted",
        Some(NodeStatus::Failed { .. }) => " · failed",
        _ => "",
    }
}

/// How the answer's markdown is styled in `theme` (Think and Replay alike).
pub(super) fn markdown_styles(theme: &Theme) -> MarkdownStyles {
    MarkdownStyles {
        text: theme.style(Role::Response),
        heading: theme.style(Role::Heading).add_modifier(Modifier::BOLD),
        emphasis: theme.style(Role::Response).add_modifier(Modifier::ITALIC),
        strong: theme.style(Role::Response).add_modifier(Modifier::BOLD),
        code_inline: theme.style(Role::Accent),
        code_block: theme.style(Role::Fg).patch(theme.style(Role::CodeBg)),
        link: theme.style(Role::Link),
        quote: theme.style(Role::Dim),
        list_marker: theme.style(Role::Accent),
        rule: theme.style(Role::Dim),
    }
}

/// Draws the Think workspace into `body`.
pub fn render(f: &mut Frame, body: Rect, view: &ThinkView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let areas = layout(body, view);
    if let (Some(area), Some(sidebar)) = (areas.sidebar, &view.sidebar) {
        super::sessions::render_list(f, area, sidebar, theme, view.focus == Focus::Sidebar);
    }
    let (thinking, response) = (view.thinking, view.response);
    let (t_status, r_status) = (&view.thinking_status, &view.response_status);
    if let Some(area) = areas.thinking {
        let focused = view.focus == Focus::Thinking;
        let title = format!(" Thinking{} ", status_marker(t_status));
        let block = pane(title, focused, theme);
        let inner = block.inner(area);
        f.render_widget(block, area);
        if view.thinking_view == ThinkingView::Collapsed {
            let words = thinking.split_whitespace().count();
            let last = thinking
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let summary = if thinking.is_empty() {
                "no thinking".to_string()
            } else {
                format!("{words} words · {last}")
            };
            f.render_widget(Paragraph::new(summary).style(theme.style(Role::Dim)), inner);
        } else if thinking.is_empty() {
            let hint = if *view.phase == RunPhase::Starting {
                "waiting for the model…"
            } else {
                ""
            };
            f.render_widget(Paragraph::new(hint).style(theme.style(Role::Dim)), inner);
        } else {
            let (p, _) = tail_text(
                thinking,
                inner.width,
                inner.height,
                view.thinking_scroll,
                theme.style(Role::Thinking),
            );
            f.render_widget(p, inner);
        }
    }
    {
        let focused = view.focus == Focus::Response;
        let title = format!(" Answer{} ", status_marker(r_status));
        let block = pane(title, focused, theme);
        let inner = block.inner(areas.response);
        f.render_widget(block, areas.response);
        if response.is_empty() {
            let hint = if view.welcome {
                "Ask a question below and press Enter. ? lists every key."
            } else {
                ""
            };
            f.render_widget(Paragraph::new(hint).style(theme.style(Role::Dim)), inner);
        } else {
            v.markdown.draw(
                f,
                inner,
                response,
                &markdown_styles(theme),
                v.highlights,
                view.response_scroll,
            );
        }
    }
    {
        let focused = view.focus == Focus::Graph;
        let title = format!(" Graph · {} nodes ", view.graph.node_count());
        super::graph::render(
            f,
            areas.graph,
            pane(title, focused, theme),
            view.graph,
            theme,
            focused,
        );
    }
    {
        let focused = view.focus == Focus::Input;
        let route = view.route;
        let mut title = vec![
            Span::raw(" Ask "),
            Span::styled(format!("· {} ", route.as_str()), theme.style(Role::Dim)),
        ];
        if let Some(from) = view.branch_from {
            title.push(Span::styled(
                format!(
                    "· branching from {} (Enter alone continues, Esc cancels) ",
                    from.short()
                ),
                theme.style(Role::Accent),
            ));
        }
        let title = Line::from(title);
        let block = pane(title, focused, theme);
        let inner = block.inner(areas.input);
        f.render_widget(block, areas.input);
        let text = view.input.text();
        let (line, col) = view.input.cursor_position();
        let scroll = (line as u16).saturating_sub(inner.height.saturating_sub(1));
        if text.is_empty() && !focused {
            f.render_widget(
                Paragraph::new("i to type a question").style(theme.style(Role::Dim)),
                inner,
            );
        } else {
            f.render_widget(
                Paragraph::new(text.to_string())
                    .style(theme.style(Role::Query))
                    .scroll((scroll, 0)),
                inner,
            );
        }
        if focused && !view.overlay {
            let x = inner.x + (col as u16).min(inner.width.saturating_sub(1));
            let y = inner.y
                + (line as u16)
                    .saturating_sub(scroll)
                    .min(inner.height.saturating_sub(1));
            f.set_cursor_position((x, y));
        }
    }
}
