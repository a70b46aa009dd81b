//! The graph pane: the session's turns, nodes, thinking steps and decision points as a tree.
//! Only the rows in view are turned into lines, so a huge session draws as fast as a small one.
//!
//! Why not tui-tree-widget: its `Tree` takes the whole item forest every frame and flattens
//! it to find what is open; at 100k nodes that alone was 17.6 ms a frame. The Ledger and GoT
//! views feed it only the visible window (`ledger::window_tree`, with zero-height stand-ins
//! for the ancestors above the window so the first row keeps its indentation): a
//! 100,000-thought ledger 200 levels deep draws in 0.78 ms at 200×50. This pane keeps its own
//! drawing of the visible slice, which is cheaper still: 0.41 ms at 100k nodes
//! (`cargo bench --bench render -- --quick`). `GraphModel` keeps the flattened rows, folding
//! and selection either way.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::graph_model::{GraphModel, Row, RowKind};
use super::theme::{Role, Theme};

fn row_line<'a>(row: &'a Row, theme: &Theme, selected: bool, width: usize) -> Line<'a> {
    let mut spans = Vec::with_capacity(6);
    spans.push(Span::raw("  ".repeat(row.depth as usize)));
    let marker = match (row.expandable, row.expanded) {
        (true, true) => "▾ ",
        (true, false) => "▸ ",
        (false, _) => "  ",
    };
    spans.push(Span::styled(marker, theme.style(Role::Dim)));
    let (tag, style) = match &row.kind {
        RowKind::Node(t) => (t.as_str().to_string(), theme.node_style(t.as_str())),
        RowKind::Step(k) => (k.clone(), theme.step_style(k)),
        RowKind::Decision => ("◆ decision".to_string(), theme.style(Role::Decision)),
    };
    spans.push(Span::styled(tag, style.add_modifier(Modifier::BOLD)));
    if let Some(c) = row.confidence {
        spans.push(Span::styled(
            format!(" {:.0}%", c * 100.0),
            theme.confidence_style(c),
        ));
    }
    if let Some(s) = row.status {
        let role = if s == "failed" {
            Role::Error
        } else {
            Role::Warning
        };
        spans.push(Span::styled(format!(" [{s}]"), theme.style(role)));
    }
    if row.memory > 0 {
        let plural = if row.memory == 1 {
            "memory"
        } else {
            "memories"
        };
        spans.push(Span::styled(
            format!(" +{} {plural}", row.memory),
            theme.style(Role::Dim),
        ));
    }
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let room = width.saturating_sub(used + 1);
    if room > 3 && !row.label.is_empty() {
        let label: String = if row.label.chars().count() > room {
            let mut l: String = row.label.chars().take(room.saturating_sub(1)).collect();
            l.push('…');
            l
        } else {
            row.label.clone()
        };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(label, theme.style(Role::Fg)));
    }
    let line = Line::from(spans);
    if selected {
        line.style(theme.style(Role::Selection))
    } else {
        line
    }
}

/// Draws the tree into `area` inside `block`. `graph.offset` is the first row shown (the
/// Think workspace keeps it so the selection stays in view).
pub fn render(
    f: &mut Frame,
    area: Rect,
    block: Block<'_>,
    graph: &GraphModel,
    theme: &Theme,
    focused: bool,
) {
    let inner = block.inner(area);
    f.render_widget(block, area);
    let height = inner.height as usize;
    let rows = graph.rows();
    if rows.is_empty() {
        f.render_widget(
            Paragraph::new("no nodes yet").style(theme.style(Role::Dim)),
            inner,
        );
        return;
    }
    let offset = visible_offset(graph.selected, graph.offset, height, rows.len());
    let width = inner.width as usize;
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, r)| {
            let line = row_line(r, theme, focused && i == graph.selected, width);
            // Without focus the selection is still marked, more quietly.
            if !focused && i == graph.selected {
                line.style(Style::default().add_modifier(Modifier::UNDERLINED))
            } else {
                line
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// The first row to show so that `selected` is inside a window of `height` rows starting as
/// close to `offset` as possible.
pub fn visible_offset(selected: usize, offset: usize, height: usize, len: usize) -> usize {
    if height == 0 {
        return 0;
    }
    let mut off = offset.min(len.saturating_sub(1));
    if selected < off {
        off = selected;
    } else if selected >= off + height {
        off = selected + 1 - height;
    }
    off
}
