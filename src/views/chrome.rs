//! Workspace tabs along the top and the status bar along the bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::state::{Level, State, Workspace};
use crate::app::theme::{Role, Theme};

pub fn render_tabs(f: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let mut spans = vec![Span::styled(" glassbox ", theme.style(Role::Accent))];
    for (i, w) in Workspace::ALL.iter().enumerate() {
        let style = if *w == state.workspace {
            theme.style(Role::Selection)
        } else {
            theme.style(Role::Dim)
        };
        spans.push(Span::styled(format!(" {} {} ", i + 1, w.title()), style));
    }
    // The session the workspace shows: Replay plays one of its own.
    let title = match state.workspace {
        Workspace::Replay if state.replay.session.is_some() => Some(state.replay.title.as_str()),
        _ => state.loaded.session.as_ref().map(|s| s.title.as_str()),
    };
    if let Some(title) = title {
        spans.push(Span::styled(format!("  {title}"), theme.style(Role::Title)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// provider/model · effort (route) · tokens used / budget · run state · notice
pub fn render_status(f: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let base = theme
        .style(Role::StatusFg)
        .patch(theme.style(Role::StatusBg));
    let effort = match (state.effort_override, state.route_override) {
        (Some(e), _) => format!("effort {} (set)", e.as_str()),
        (None, Some(r)) => format!("route {} (set)", r.as_str()),
        (None, None) => format!("effort auto ({})", state.route_preview.as_str()),
    };
    let used = state.session_tokens + state.run.as_ref().map_or(0, |r| r.usage.output_tokens);
    let tokens = if state.token_budget > 0 {
        format!("{used}/{} tok", state.token_budget)
    } else {
        format!("{used} tok")
    };
    let phase_role = match &state.phase {
        crate::app::state::RunPhase::Failed(_) => Role::Error,
        crate::app::state::RunPhase::Interrupted => Role::Warning,
        p if p.is_running() => Role::Accent,
        _ => Role::StatusFg,
    };
    // The run state leads so it survives narrow terminals; long model names are cut.
    let model = state.model.strip_suffix(".gguf").unwrap_or(&state.model);
    let max_model = if area.width >= 140 { 48 } else { 18 };
    let model: String = if model.chars().count() > max_model {
        let mut m: String = model.chars().take(max_model - 1).collect();
        m.push('…');
        m
    } else {
        model.to_string()
    };
    let mut spans = vec![Span::styled(
        format!(" {} ", state.phase.label()),
        theme.style(phase_role),
    )];
    // Fork, GoT, verify and insights jobs run beside the Think run: name them too.
    let jobs = state.background_jobs();
    if !jobs.is_empty() {
        spans.push(Span::raw("│ "));
        spans.push(Span::styled(
            format!("{} ", jobs.join(", ")),
            theme.style(Role::Accent),
        ));
    }
    spans.extend([
        Span::raw("│ "),
        Span::raw(format!("{}:{model} ", state.provider)),
        Span::raw("│ "),
        Span::raw(format!("{effort} ")),
        Span::raw("│ "),
        Span::raw(format!("{tokens} ")),
    ]);
    if let Some((prefix, _)) = &state.pending_chord {
        spans.push(Span::styled(
            format!("│ {prefix}… "),
            theme.style(Role::Accent),
        ));
    }
    if let Some((text, level)) = &state.notice {
        let role = match level {
            Level::Info => Role::StatusFg,
            Level::Warn => Role::Warning,
            Level::Error => Role::Error,
        };
        spans.push(Span::raw("│ "));
        spans.push(Span::styled(text.clone(), theme.style(role)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(base), area);
}
