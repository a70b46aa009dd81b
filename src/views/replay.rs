//! The Replay workspace: what the replayed events add up to so far — the question, the
//! thinking and the answer of the current turn, drawn like the Think workspace — beside the
//! list of events, with a progress line under them.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::hints;
use super::markdown;
use super::think::{pane, tail_text};
use crate::app::action::{Action, Section};
use crate::app::highlight::HighlightCache;
use crate::app::keymap::{Keymap, Mode};
use crate::app::replay_ws::{ReplayWs, event_label, event_text};
use crate::app::state::State;
use crate::app::theme::{Role, Theme};
use crate::store::NodeType;

/// `m:ss.s`
pub fn clock(d: Duration) -> String {
    let tenths = d.as_millis() / 100;
    format!("{}:{:02}.{}", tenths / 600, (tenths / 10) % 60, tenths % 10)
}

/// `2×`, `0.5×`, `0.25×`
pub fn speed_label(speed: f64) -> String {
    let s = format!("{speed:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}×")
}

/// The progress line: state, position, recorded time, speed, what the last event was.
fn progress(ws: &ReplayWs, theme: &Theme) -> Line<'static> {
    let (mark, what) = if ws.playing {
        ("▶", "playing")
    } else if ws.at_end() && !ws.events.is_empty() {
        ("■", "at the end")
    } else {
        ("⏸", "paused")
    };
    let kind = ws
        .current()
        .map_or_else(|| "start".to_string(), |e| e.kind.as_str().to_string());
    let dim = theme.style(Role::Dim);
    let mut spans = vec![
        Span::styled(format!(" {mark} {what}"), theme.style(Role::Accent)),
        Span::styled(" · ", dim),
        Span::raw(format!("event {}/{}", ws.pos, ws.events.len())),
        Span::styled(" · ", dim),
        Span::raw(format!("{} / {}", clock(ws.elapsed()), clock(ws.total()))),
        Span::styled(" · ", dim),
        Span::raw(speed_label(ws.speed)),
        Span::styled(" · ", dim),
        Span::styled(kind.clone(), theme.node_style(&kind)),
    ];
    if !ws.title.is_empty() {
        spans.push(Span::styled(" · ", dim));
        let source = ws.source.map(|s| s.as_str()).unwrap_or_default();
        spans.push(Span::styled(format!("{} ({source})", ws.title), dim));
    }
    Line::from(spans)
}

/// The events around the current one, one line each.
fn event_list(f: &mut Frame, area: Rect, ws: &ReplayWs, theme: &Theme) {
    let block = pane(" Events ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let height = inner.height as usize;
    if height == 0 || ws.events.is_empty() {
        return;
    }
    // Keep the current event about a third of the way down.
    let current = ws.pos.saturating_sub(1);
    let start = current
        .saturating_sub(height / 3)
        .min(ws.events.len().saturating_sub(height));
    let width = inner.width as usize;
    let lines: Vec<Line> = ws
        .events
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, e)| {
            let label = event_label(e);
            let excerpt: String = event_text(e)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(width)
                .collect();
            let head = format!("{:>4} {label} ", i + 1);
            let style = if i + 1 == ws.pos {
                theme.style(Role::Selection)
            } else if i >= ws.pos {
                theme.style(Role::Dim)
            } else {
                theme.node_style(e.kind.as_str())
            };
            let mut spans = vec![Span::styled(head, style)];
            spans.push(Span::styled(
                excerpt.trim().to_string(),
                if i + 1 == ws.pos {
                    style
                } else {
                    theme.style(Role::Dim)
                },
            ));
            Line::from(spans)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, state: &State, theme: &Theme, keymap: &Keymap) {
    let ws = &state.replay;
    if ws.session.is_none() {
        let hint = if ws.loading {
            "loading the session…"
        } else {
            "Nothing to replay yet. Open a session in Think and press P, or run `glassbox replay SESSION`."
        };
        f.render_widget(
            Paragraph::new(hint)
                .wrap(Wrap { trim: true })
                .style(theme.style(Role::Dim))
                .block(pane(" Replay ", true, theme)),
            area,
        );
        return;
    }
    let [top, status, keys] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(progress(ws, theme)), status);
    f.render_widget(
        Paragraph::new(format!(
            " {}",
            hints::line(
                keymap,
                Mode::Workspace(Section::Replay),
                &[
                    (&[Action::PlayPause], "play/pause"),
                    (&[Action::StepBack, Action::StepForward], "step"),
                    (&[Action::SpeedUp, Action::SpeedDown], "speed"),
                    (&[Action::Top, Action::Bottom], "start/end"),
                    (&[Action::Select], "open the node"),
                ],
            )
        ))
        .style(theme.style(Role::Dim)),
        keys,
    );
    let (main, list) = if top.width >= 100 {
        let [m, l] = Layout::horizontal([Constraint::Min(40), Constraint::Length(40)]).areas(top);
        (m, Some(l))
    } else {
        (top, None)
    };
    if let Some(l) = list {
        event_list(f, l, ws, theme);
    }
    let shown = &ws.shown;
    let current = ws.current().map(|e| e.kind);
    let q_lines = shown.question.lines().count().clamp(1, 3) as u16;
    let [question, thinking, answer] = Layout::vertical([
        Constraint::Length(q_lines + 2),
        Constraint::Percentage(50),
        Constraint::Percentage(50),
    ])
    .areas(main);
    let marker = |kind: NodeType| {
        if current == Some(kind) { " ◂" } else { "" }
    };
    {
        let block = pane(
            format!(
                " Question · turn {}{} ",
                shown.turn,
                marker(NodeType::Query)
            ),
            false,
            theme,
        );
        let inner = block.inner(question);
        f.render_widget(block, question);
        f.render_widget(
            Paragraph::new(shown.question.clone())
                .style(theme.style(Role::Query))
                .wrap(Wrap { trim: false }),
            inner,
        );
    }
    {
        let block = pane(
            format!(" Thinking{} ", marker(NodeType::Thinking)),
            current == Some(NodeType::Thinking),
            theme,
        );
        let inner = block.inner(thinking);
        f.render_widget(block, thinking);
        if !shown.thinking.is_empty() {
            let (p, _) = tail_text(
                &shown.thinking,
                inner.width,
                inner.height,
                0,
                theme.style(Role::Thinking),
            );
            f.render_widget(p, inner);
        }
    }
    {
        let focused = matches!(current, Some(NodeType::Response | NodeType::ToolCall));
        let block = pane(
            format!(" Answer{} ", if focused { " ◂" } else { "" }),
            focused,
            theme,
        );
        let inner = block.inner(answer);
        f.render_widget(block, answer);
        if !shown.answer.is_empty() {
            let cache = HighlightCache::new(1);
            let rendered =
                markdown::render(&shown.answer, &super::think::markdown_styles(theme), &cache);
            let para = Paragraph::new(rendered.lines).wrap(Wrap { trim: false });
            // Follow the end, like a stream.
            let total = para.line_count(inner.width) as u16;
            let top = total.saturating_sub(inner.height);
            f.render_widget(para.scroll((top, 0)), inner);
        }
    }
}
