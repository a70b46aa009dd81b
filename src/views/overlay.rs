//! Popups: node detail, delete confirmation, rename.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::theme::{Role, Theme};
use super::think::pane;
use crate::store::Node;

/// A rectangle of `w`×`h` (clamped to `area`) centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(h.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    r
}

/// Full text and metadata of a node; `None` while the node is still streaming (not stored
/// with the open session yet).
pub fn node_detail(f: &mut Frame, area: Rect, node: Option<&Node>, scroll: u16, theme: &Theme) {
    let rect = centered(
        area,
        area.width.saturating_sub(8).max(40),
        area.height.saturating_sub(4).max(10),
    );
    f.render_widget(Clear, rect);
    let block = pane(" Node · Esc closes ", true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let mut lines = Vec::new();
    let kv = |k: &str, v: String| {
        Line::from(vec![
            Span::styled(format!("{k:<11}"), theme.style(Role::Dim)),
            Span::raw(v),
        ])
    };
    match node {
        Some(n) => {
            lines.push(kv("id", n.id.to_string()));
            lines.push(Line::from(vec![
                Span::styled(format!("{:<11}", "type"), theme.style(Role::Dim)),
                Span::styled(n.kind.as_str(), theme.node_style(n.kind.as_str())),
            ]));
            lines.push(kv("status", format!("{:?}", n.status).to_lowercase()));
            lines.push(kv(
                "created",
                n.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ));
            if let Some(c) = n.confidence {
                lines.push(Line::from(vec![
                    Span::styled(format!("{:<11}", "confidence"), theme.style(Role::Dim)),
                    Span::styled(format!("{:.0}%", c * 100.0), theme.confidence_style(c)),
                ]));
            }
            if let Some(m) = &n.model {
                lines.push(kv("model", m.clone()));
            }
            if let Some(u) = n.meta.get("usage") {
                lines.push(kv("usage", u.to_string()));
            }
            if let Some(s) = n.raw_stream {
                lines.push(kv("raw stream", s.to_string()));
            }
            lines.push(Line::from(""));
            lines.extend(n.text.lines().map(|l| Line::from(l.to_string())));
        }
        None => lines.push(Line::from(Span::styled(
            "this node is still streaming; its detail is available when the run ends",
            theme.style(Role::Dim),
        ))),
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        inner,
    );
}

pub fn confirm_delete(f: &mut Frame, area: Rect, title: &str, theme: &Theme) {
    let rect = centered(area, 60, 5);
    f.render_widget(Clear, rect);
    let block = pane(" Delete session ", true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let lines = vec![
        Line::from(format!("Delete \"{title}\" and all its nodes?")),
        Line::from(vec![
            Span::styled("y", theme.style(Role::Accent)),
            Span::raw(" delete   "),
            Span::styled("any other key", theme.style(Role::Accent)),
            Span::raw(" keep"),
        ]),
    ];
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
}

pub fn rename(f: &mut Frame, area: Rect, text: &str, theme: &Theme) {
    let rect = centered(area, 60, 3);
    f.render_widget(Clear, rect);
    let block = pane(" Rename session · Enter saves ", true, theme);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    f.render_widget(Paragraph::new(text.to_string()), inner);
    let x = inner.x + (text.chars().count() as u16).min(inner.width.saturating_sub(1));
    f.set_cursor_position((x, inner.y));
}
