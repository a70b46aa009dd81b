//! Workspace tabs along the top and the status bar along the bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::{Role, Theme};
use super::think::RunPhase;
use crate::engines::llm::Effort;
use crate::engines::orchestrator::Route;

/// Severity of a status-line notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// The tab line: every workspace by id and title, in order, and the one on screen.
#[derive(Clone, Copy, Debug)]
pub struct TabsView<'a> {
    pub tabs: &'a [(&'a str, String)],
    /// The id of the workspace on screen.
    pub selected: &'a str,
    /// What the workspace on screen shows (a session's title), after the tabs.
    pub title: Option<&'a str>,
}

/// What the status bar tells.
#[derive(Clone, Copy, Debug)]
pub struct StatusView<'a> {
    pub phase: &'a RunPhase,
    /// The workspaces' jobs under way besides the Think run ("fork running…").
    pub jobs: &'a [String],
    pub provider: &'a str,
    pub model: &'a str,
    pub effort_override: Option<Effort>,
    pub route_override: Option<Route>,
    /// What the router made of the question being typed.
    pub route_preview: Route,
    /// Output tokens the session has used, the run in progress included.
    pub tokens_used: u64,
    /// The session's budget; 0 for none.
    pub token_budget: u64,
    /// The keys of a chord waiting for its next key.
    pub chord: Option<&'a str>,
    pub notice: Option<(&'a str, Level)>,
}

/// A tab's label: its number key (1…9, then 0) for the first ten, the title alone after.
pub fn tab_label(i: usize, title: &str) -> String {
    if i < 10 {
        format!(" {} {title} ", (i + 1) % 10)
    } else {
        format!(" {title} ")
    }
}

pub fn render_tabs(f: &mut Frame, area: Rect, view: &TabsView<'_>, theme: &Theme) {
    let mut spans = vec![Span::styled(" glassbox ", theme.style(Role::Accent))];
    for (i, (id, title)) in view.tabs.iter().enumerate() {
        let style = if *id == view.selected {
            theme.style(Role::Selection)
        } else {
            theme.style(Role::Dim)
        };
        spans.push(Span::styled(tab_label(i, title), style));
    }
    if let Some(title) = view.title {
        spans.push(Span::styled(format!("  {title}"), theme.style(Role::Title)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// provider/model · effort (route) · tokens used / budget · run state · notice
pub fn render_status(f: &mut Frame, area: Rect, view: &StatusView<'_>, theme: &Theme) {
    let base = theme
        .style(Role::StatusFg)
        .patch(theme.style(Role::StatusBg));
    let effort = match (view.effort_override, view.route_override) {
        (Some(e), _) => format!("effort {} (set)", e.as_str()),
        (None, Some(r)) => format!("route {} (set)", r.as_str()),
        (None, None) => format!("effort auto ({})", view.route_preview.as_str()),
    };
    let used = view.tokens_used;
    let tokens = if view.token_budget > 0 {
        format!("{used}/{} tok", view.token_budget)
    } else {
        format!("{used} tok")
    };
    let phase_role = match view.phase {
        RunPhase::Failed(_) => Role::Error,
        RunPhase::Interrupted => Role::Warning,
        p if p.is_running() => Role::Accent,
        _ => Role::StatusFg,
    };
    // The run state leads so it survives narrow terminals; long model names are cut.
    let model = view.model.strip_suffix(".gguf").unwrap_or(view.model);
    let max_model = if area.width >= 140 { 48 } else { 18 };
    let model: String = if model.chars().count() > max_model {
        let mut m: String = model.chars().take(max_model - 1).collect();
        m.push('…');
        m
    } else {
        model.to_string()
    };
    let mut spans = vec![Span::styled(
        format!(" {} ", view.phase.label()),
        theme.style(phase_role),
    )];
    // Fork, GoT, verify and insights jobs run beside the Think run: name them too.
    if !view.jobs.is_empty() {
        spans.push(Span::raw("│ "));
        spans.push(Span::styled(
            format!("{} ", view.jobs.join(", ")),
            theme.style(Role::Accent),
        ));
    }
    spans.extend([
        Span::raw("│ "),
        Span::raw(format!("{}:{model} ", view.provider)),
        Span::raw("│ "),
        Span::raw(format!("{effort} ")),
        Span::raw("│ "),
        Span::raw(format!("{tokens} ")),
    ]);
    if let Some(prefix) = view.chord {
        spans.push(Span::styled(
            format!("│ {prefix}… "),
            theme.style(Role::Accent),
        ));
    }
    if let Some((text, level)) = view.notice {
        let role = match level {
            Level::Info => Role::StatusFg,
            Level::Warn => Role::Warning,
            Level::Error => Role::Error,
        };
        spans.push(Span::raw("│ "));
        spans.push(Span::styled(text.to_string(), theme.style(role)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(base), area);
}
