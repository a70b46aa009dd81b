//! The Replay workspace: what the replayed events add up to so far — the question, the
//! thinking and the answer of the current turn, drawn like the Think workspace — beside the
//! list of events, with a progress line under them.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::ViewCx;
use super::hints;
use super::theme::{Role, Theme};
use super::think::{pane, tail_text};
use crate::store::NodeType;

/// One line of the event list: what the event is and the start of what it adds.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    /// `"user"`, `"thinking"`, `"tool call: Read"`, `"anthropic stream"`, …
    pub label: String,
    /// The first non-blank line of the event's text (empty when it adds none).
    pub excerpt: String,
    /// The type of the node the event belongs to (its colour).
    pub kind: NodeType,
}

/// Everything the Replay view draws.
#[derive(Clone, Copy, Debug)]
pub struct ReplayView<'a> {
    /// Whether a session is loaded; before that only a hint is drawn.
    pub loaded: bool,
    /// A session is being read.
    pub loading: bool,
    pub playing: bool,
    /// The replayed session's title (left out of the progress line when empty) and where it
    /// came from (`"glassbox"`, `"claude_code"`).
    pub title: &'a str,
    pub source: &'a str,
    /// Every event of the replay, in order.
    pub events: &'a [EventRow],
    /// Events shown so far (`0..=events.len()`).
    pub pos: usize,
    /// Recorded time up to `pos`, and of the whole replay.
    pub elapsed: Duration,
    pub total: Duration,
    pub speed: f64,
    /// What the events so far add up to for the current turn, and which turn it is.
    pub question: &'a str,
    pub thinking: &'a str,
    pub answer: &'a str,
    pub turn: usize,
}

impl ReplayView<'_> {
    /// The kind of the last event shown.
    fn current(&self) -> Option<NodeType> {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.events.get(i))
            .map(|e| e.kind)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.events.len()
    }
}

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
fn progress(r: &ReplayView<'_>, theme: &Theme) -> Line<'static> {
    let (mark, what) = if r.playing {
        ("▶", "playing")
    } else if r.at_end() && !r.events.is_empty() {
        ("■", "at the end")
    } else {
        ("⏸", "paused")
    };
    let kind = r.current().map_or("start", |k| k.as_str());
    let dim = theme.style(Role::Dim);
    let mut spans = vec![
        Span::styled(format!(" {mark} {what}"), theme.style(Role::Accent)),
        Span::styled(" · ", dim),
        Span::raw(format!("event {}/{}", r.pos, r.events.len())),
        Span::styled(" · ", dim),
        Span::raw(format!("{} / {}", clock(r.elapsed), clock(r.total))),
        Span::styled(" · ", dim),
        Span::raw(speed_label(r.speed)),
        Span::styled(" · ", dim),
        Span::styled(kind.to_string(), theme.node_style(kind)),
    ];
    if !r.title.is_empty() {
        spans.push(Span::styled(" · ", dim));
        spans.push(Span::styled(format!("{} ({})", r.title, r.source), dim));
    }
    Line::from(spans)
}

/// The events around the current one, one line each.
fn event_list(f: &mut Frame, area: Rect, r: &ReplayView<'_>, theme: &Theme) {
    let block = pane(" Events ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let height = inner.height as usize;
    if height == 0 || r.events.is_empty() {
        return;
    }
    // Keep the current event about a third of the way down.
    let current = r.pos.saturating_sub(1);
    let start = current
        .saturating_sub(height / 3)
        .min(r.events.len().saturating_sub(height));
    let width = inner.width as usize;
    let lines: Vec<Line> = r
        .events
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, e)| {
            let excerpt: String = e.excerpt.chars().take(width).collect();
            let head = format!("{:>4} {} ", i + 1, e.label);
            let style = if i + 1 == r.pos {
                theme.style(Role::Selection)
            } else if i >= r.pos {
                theme.style(Role::Dim)
            } else {
                theme.node_style(e.kind.as_str())
            };
            let excerpt_style = if i + 1 == r.pos {
                style
            } else {
                theme.style(Role::Dim)
            };
            Line::from(vec![
                Span::styled(head, style),
                Span::styled(excerpt.trim().to_string(), excerpt_style),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, r: &ReplayView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    if !r.loaded {
        let hint = if r.loading {
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
    f.render_widget(Paragraph::new(progress(r, theme)), status);
    f.render_widget(
        Paragraph::new(format!(
            " {}",
            hints::line(
                v.keys,
                &[
                    (&["play_pause"], "play/pause"),
                    (&["step_back", "step_forward"], "step"),
                    (&["speed_up", "speed_down"], "speed"),
                    (&["top", "bottom"], "start/end"),
                    (&["select"], "open the node"),
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
        event_list(f, l, r, theme);
    }
    let current = r.current();
    let q_lines = r.question.lines().count().clamp(1, 3) as u16;
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
            format!(" Question · turn {}{} ", r.turn, marker(NodeType::Query)),
            false,
            theme,
        );
        let inner = block.inner(question);
        f.render_widget(block, question);
        f.render_widget(
            Paragraph::new(r.question.to_string())
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
        if !r.thinking.is_empty() {
            let (p, _) = tail_text(
                r.thinking,
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
        if !r.answer.is_empty() {
            // Follow the end, like a stream.
            v.markdown.draw(
                f,
                inner,
                r.answer,
                &super::think::markdown_styles(theme),
                v.highlights,
                0,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_speed_labels() {
        assert_eq!(clock(Duration::from_millis(0)), "0:00.0");
        assert_eq!(clock(Duration::from_millis(65_432)), "1:05.4");
        assert_eq!(speed_label(2.0), "2×");
        assert_eq!(speed_label(0.5), "0.5×");
        assert_eq!(speed_label(0.25), "0.25×");
    }
}
