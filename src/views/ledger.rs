//! The Ledger workspace: an MCP session's thoughts as a tree (branches under the thought they
//! branch from, revisions marked), and the selected thought in full below it.
//!
//! The tree is drawn by tui-tree-widget, fed only the rows in view: `window_tree` turns a
//! window of a flattened tree into `TreeItem`s (zero-height stand-ins take the place of the
//! ancestors above the window, so the first row keeps its indentation), and the widget draws
//! the indentation and the fold markers. Selection, folding and scrolling stay in
//! [`LedgerModel`] and [`super::tree::TreeCursor`]; the widget keeps no state between frames.
//! The GoT search tree uses the same window.

use std::io;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tui_tree_widget::{Tree, TreeItem, TreeState};

use super::graph::visible_offset;
use super::ledger_model::{LedgerModel, Row, RowKey, RowKind};
use super::theme::{Role, Theme};
use super::think::pane;

/// Below this many inner rows the detail pane is left out.
const DETAIL_MIN_HEIGHT: u16 = 12;

fn verdict_look(verdict: &str, theme: &Theme) -> (&'static str, Style) {
    match verdict {
        "verified" => ("✓", theme.style(Role::Success)),
        "questionable" => ("?", theme.style(Role::Warning)),
        "disagree" => ("✗", theme.style(Role::Error)),
        "critique" => ("✎", theme.node_style("human_annotation")),
        _ => ("•", theme.node_style("human_annotation")),
    }
}

/// How a row of a flattened tree stands towards its children, for its fold marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fold {
    /// Nothing to show or hide.
    Leaf,
    /// Its children follow it.
    Open,
    /// Its children are hidden.
    Closed,
}

/// One row of a flattened tree as handed to the tree widget.
pub(super) struct WindowRow<'a> {
    pub depth: usize,
    pub fold: Fold,
    pub text: Text<'a>,
}

/// A row being built, with the children gathered for it so far.
struct Pending<'a> {
    id: usize,
    fold: Fold,
    text: Text<'a>,
    children: Vec<TreeItem<'a, usize>>,
}

/// Identifiers of the zero-height stand-ins, one per level (rows are numbered from 0).
const STAND_IN: usize = usize::MAX / 2;
/// Identifier of the child a row needs for the widget to draw its fold marker.
const FOLD_CHILD: usize = usize::MAX;

/// Turns consecutive rows of a flattened tree (the window on screen, top first) into the
/// widget's items, nested by depth, and the state that opens them. Rows are identified by
/// their place in the window. When a row is deeper than the one before it (the window's first
/// row, below ancestors scrolled away), the missing levels are filled with stand-ins of
/// zero height: the widget lays them out but they take no row, and the row after them
/// overwrites the marker they leave. A closed row gets a hidden child so the widget draws it
/// closed, and an open row without children in the window an empty one, so it is drawn open.
pub(super) fn window_tree<'a>(
    rows: impl IntoIterator<Item = WindowRow<'a>>,
) -> io::Result<(Vec<TreeItem<'a, usize>>, TreeState<usize>)> {
    let mut state = TreeState::default();
    let mut top: Vec<TreeItem<'a, usize>> = Vec::new();
    let mut stack: Vec<Pending<'a>> = Vec::new();
    let mut rows = rows.into_iter().enumerate().peekable();
    while let Some((id, row)) = rows.next() {
        while stack.len() > row.depth {
            close(&mut stack, &mut top, &mut state, false)?;
        }
        while stack.len() < row.depth {
            stack.push(Pending {
                id: STAND_IN + stack.len(),
                fold: Fold::Open,
                text: Text::default(),
                children: Vec::new(),
            });
        }
        stack.push(Pending {
            id,
            fold: row.fold,
            text: row.text,
            children: Vec::new(),
        });
        if rows.peek().is_none() {
            close(&mut stack, &mut top, &mut state, true)?;
        }
    }
    while !stack.is_empty() {
        close(&mut stack, &mut top, &mut state, false)?;
    }
    Ok((top, state))
}

/// Finishes the innermost pending row and hands it to its parent (or the top level).
fn close<'a>(
    stack: &mut Vec<Pending<'a>>,
    top: &mut Vec<TreeItem<'a, usize>>,
    state: &mut TreeState<usize>,
    last: bool,
) -> io::Result<()> {
    let path: Vec<usize> = stack.iter().map(|p| p.id).collect();
    let Some(mut row) = stack.pop() else {
        return Ok(());
    };
    if row.children.is_empty() {
        match row.fold {
            Fold::Closed => row
                .children
                .push(TreeItem::new_leaf(FOLD_CHILD, Text::default())),
            Fold::Open => {
                // Below the window's last row a blank row, which the full window has no room
                // for; elsewhere one of no height, drawn over by the row that follows.
                let text = if last {
                    Text::from(Line::default())
                } else {
                    Text::default()
                };
                row.children.push(TreeItem::new_leaf(FOLD_CHILD, text));
                state.open(path);
            }
            Fold::Leaf => {}
        }
    } else {
        state.open(path);
    }
    let item = TreeItem::new(row.id, row.text, row.children)?;
    match stack.last_mut() {
        Some(parent) => parent.children.push(item),
        None => top.push(item),
    }
    Ok(())
}

/// The widget for a window built by [`window_tree`], with the fold markers the Think graph
/// uses.
pub(super) fn tree_widget<'a>(items: &'a [TreeItem<'a, usize>]) -> io::Result<Tree<'a, usize>> {
    Ok(Tree::new(items)?
        .node_open_symbol("▾ ")
        .node_closed_symbol("▸ ")
        .node_no_children_symbol("  "))
}

/// Patches `style` over the first `width` cells of row `y` of `area` (the cells the widget
/// fills with indentation and markers, which a selection also covers).
pub(super) fn mark_lead(f: &mut Frame, area: Rect, y: u16, width: usize, style: Style) {
    let width = u16::try_from(width).unwrap_or(u16::MAX).min(area.width);
    if y < area.bottom() && width > 0 {
        f.buffer_mut()
            .set_style(Rect::new(area.x, y, width, 1), style);
    }
}

fn fold(row: &Row) -> Fold {
    match (row.expandable, row.expanded) {
        (true, true) => Fold::Open,
        (true, false) => Fold::Closed,
        (false, _) => Fold::Leaf,
    }
}

/// Columns the widget puts before a row's text: its indentation and fold marker.
fn lead_width(row: &Row) -> usize {
    2 * row.depth as usize + 2
}

/// The text of a row after its indentation and fold marker, cut to `width` in all.
fn row_line(row: &Row, theme: &Theme, width: usize) -> Line<'static> {
    let mut spans = Vec::with_capacity(8);
    match &row.kind {
        RowKind::Thought {
            number,
            total,
            revises,
            revised,
            thought_type,
            last,
        } => {
            spans.push(Span::styled(
                format!("#{number}"),
                theme
                    .node_style("ledger_thought")
                    .add_modifier(Modifier::BOLD),
            ));
            spans.push(Span::styled(format!("/{total}"), theme.style(Role::Dim)));
            if let Some(r) = revises {
                spans.push(Span::styled(
                    format!(" ↻#{r}"),
                    theme.style(Role::Warning).add_modifier(Modifier::BOLD),
                ));
            }
            if let Some(t) = thought_type {
                spans.push(Span::styled(format!(" {t}"), theme.step_style(t)));
            }
            if *revised {
                spans.push(Span::styled(
                    " (revised)",
                    theme.style(Role::Dim).add_modifier(Modifier::ITALIC),
                ));
            }
            if *last {
                spans.push(Span::styled(" ■", theme.style(Role::Success)));
            }
        }
        RowKind::Branch {
            name,
            from,
            thoughts,
        } => {
            spans.push(Span::styled(
                format!("⎇ {name}"),
                theme.node_style("fork_branch").add_modifier(Modifier::BOLD),
            ));
            let from = from.map_or(String::new(), |n| format!(" from #{n}"));
            let s = if *thoughts == 1 { "" } else { "s" };
            spans.push(Span::styled(
                format!("{from} · {thoughts} thought{s}"),
                theme.style(Role::Dim),
            ));
        }
        RowKind::Annotation { verdict, .. } => {
            let (mark, style) = verdict_look(verdict, theme);
            spans.push(Span::styled(
                format!("{mark} {verdict}"),
                style.add_modifier(Modifier::BOLD),
            ));
        }
    }
    let used: usize = lead_width(row)
        + spans
            .iter()
            .map(|s| s.content.chars().count())
            .sum::<usize>();
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
    Line::from(spans)
}

fn render_tree(f: &mut Frame, area: Rect, model: &LedgerModel, theme: &Theme, focused: bool) {
    let rows = model.rows();
    if rows.is_empty() {
        let hint = "no ledger thoughts yet — point an agent at `glassbox mcp`";
        f.render_widget(
            Paragraph::new(hint)
                .style(theme.style(Role::Dim))
                .wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let height = area.height as usize;
    let offset = visible_offset(model.selected, model.offset, height, rows.len());
    let width = area.width as usize;
    let dim = theme.style(Role::Dim);
    // Without focus the selection is still marked, more quietly.
    let selection = if focused {
        theme.style(Role::Selection)
    } else {
        Style::default().add_modifier(Modifier::UNDERLINED)
    };
    let window = rows.iter().enumerate().skip(offset).take(height);
    let items = window_tree(window.clone().map(|(i, r)| {
        let mut line = row_line(r, theme, width);
        if i == model.selected {
            for span in &mut line.spans {
                span.style = selection.patch(span.style);
            }
        }
        WindowRow {
            depth: r.depth as usize,
            fold: fold(r),
            text: Text::from(line),
        }
    }));
    let Ok((items, mut state)) = items else {
        return;
    };
    let Ok(tree) = tree_widget(&items) else {
        return;
    };
    f.render_stateful_widget(tree, area, &mut state);
    // The widget draws the indentation and the marker in the row's base style, which also
    // covers the rest of the row; they are styled here instead: the marker dim, and the
    // selection over both.
    for (y, (i, row)) in (area.y..).zip(window) {
        let indent = lead_width(row) - 2;
        let mut marker = dim;
        if i == model.selected {
            mark_lead(f, area, y, indent, selection);
            marker = selection.patch(dim);
        }
        let after = area.x.saturating_add(indent as u16);
        let rest = Rect {
            x: after.min(area.right()),
            width: area.right().saturating_sub(after),
            ..area
        };
        mark_lead(f, rest, y, 2, marker);
    }
}

/// The header and text of the selected row, for the detail pane.
fn detail(model: &LedgerModel, theme: &Theme) -> Option<(Line<'static>, String)> {
    let dim = theme.style(Role::Dim);
    match model.selected_key()? {
        RowKey::Thought(id) => {
            let t = model.thought(id)?;
            let mut spans = vec![Span::styled(
                format!("Thought {}/{}", t.number, t.total),
                theme
                    .node_style("ledger_thought")
                    .add_modifier(Modifier::BOLD),
            )];
            let mut facts = Vec::new();
            if let Some(kind) = &t.thought_type {
                facts.push(kind.clone());
            }
            if let Some(b) = &t.branch_id {
                let from = t.origin.and_then(|o| model.number(o)).or(t.branch_from);
                facts.push(from.map_or(format!("branch {b}"), |n| format!("branch {b} from #{n}")));
            }
            if let Some(r) = t
                .revises
                .and_then(|r| model.number(r))
                .or(t.revises_number.filter(|_| t.is_revision))
            {
                facts.push(format!("revises #{r}"));
            }
            if !t.revised_by.is_empty() {
                let by: Vec<String> = t
                    .revised_by
                    .iter()
                    .filter_map(|r| model.number(*r))
                    .map(|n| format!("#{n}"))
                    .collect();
                facts.push(format!("revised by {}", by.join(", ")));
            }
            facts.push(if t.next_needed {
                "more to come".into()
            } else {
                "final".into()
            });
            facts.push(t.created_at.format("%H:%M:%S").to_string());
            spans.push(Span::styled(format!(" · {}", facts.join(" · ")), dim));
            Some((Line::from(spans), t.text.clone()))
        }
        RowKey::Annotation(id) => {
            let a = model.annotation(id)?;
            let (mark, style) = verdict_look(&a.verdict, theme);
            let on = model
                .number(a.target)
                .map_or(String::new(), |n| format!(" on #{n}"));
            let by = a
                .model
                .as_ref()
                .map_or(String::new(), |m| format!(" · by {m}"));
            let header = Line::from(vec![
                Span::styled(
                    format!("{mark} {}", a.verdict),
                    style.add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("{on} · {}{by}", a.edge.as_str()), dim),
            ]);
            Some((header, a.text.clone()))
        }
        RowKey::Branch(first) => {
            let b = model.branches().iter().find(|b| b.first == first)?;
            let from = b
                .origin
                .and_then(|o| model.number(o))
                .map_or(String::new(), |n| format!(" from #{n}"));
            let numbers: Vec<String> = b
                .members
                .iter()
                .map(|&i| format!("#{}", model.thoughts()[i].number))
                .collect();
            let header = Line::from(vec![
                Span::styled(
                    format!("⎇ {}", b.name),
                    theme.node_style("fork_branch").add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("{from} · thoughts {}", numbers.join(" ")), dim),
            ]);
            Some((header, String::new()))
        }
    }
}

/// Draws the Ledger workspace into `area`: the tree, and below it (when there is room) the
/// selected thought or annotation in full. `model.offset` is the first row shown (the Ledger
/// workspace keeps it so the selection stays in view).
pub fn render(f: &mut Frame, area: Rect, model: &LedgerModel, theme: &Theme, focused: bool) {
    let title = if model.title().is_empty() {
        " Ledger ".to_string()
    } else {
        format!(" Ledger · {} ", model.title())
    };
    let t = model.thoughts().len();
    let b = model.branches().len();
    let r = model.revision_count();
    let counts = format!(
        " {t} thought{} · {b} branch{} · {r} revision{} ",
        if t == 1 { "" } else { "s" },
        if b == 1 { "" } else { "es" },
        if r == 1 { "" } else { "s" }
    );
    let mut block = pane(title.clone(), focused, theme);
    // The counts go when they would crowd the title.
    if title.chars().count() + counts.chars().count() + 4 <= area.width as usize {
        block = block
            .title_top(Line::from(Span::styled(counts, theme.style(Role::Dim))).right_aligned());
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    let shown = if inner.height >= DETAIL_MIN_HEIGHT {
        detail(model, theme)
    } else {
        None
    };
    let Some((header, text)) = shown else {
        render_tree(f, inner, model, theme, focused);
        return;
    };
    let detail_height = (inner.height * 2 / 5).max(4);
    let [tree, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(detail_height)]).areas(inner);
    render_tree(f, tree, model, theme, focused);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(header);
    let body = block.inner(bottom);
    f.render_widget(block, bottom);
    // Only as much text as can show is handed to the wrapper.
    let budget = (body.width as usize + 1) * body.height as usize;
    let cut: String = text.chars().take(budget).collect();
    f.render_widget(
        Paragraph::new(cut)
            .style(theme.style(Role::Fg))
            .wrap(Wrap { trim: false }),
        body,
    );
}

/// Draws the Ledger workspace before any MCP session exists: how to connect a client.
pub fn render_no_session(f: &mut Frame, area: Rect, theme: &Theme) {
    let hint = "No MCP thoughts yet. Connect a client — `claude mcp add glassbox -- glassbox mcp` — and its thoughts appear here as they arrive.";
    f.render_widget(
        Paragraph::new(hint)
            .wrap(Wrap { trim: true })
            .style(theme.style(Role::Dim))
            .block(pane(" Ledger ", true, theme)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::widgets::StatefulWidget;

    use super::*;

    /// Draws rows given as (depth, fold, text) through the window into a buffer `width` wide.
    fn draw(rows: &[(usize, Fold, &'static str)], width: u16, height: u16) -> Vec<String> {
        let (items, mut state) = window_tree(rows.iter().map(|&(depth, fold, text)| WindowRow {
            depth,
            fold,
            text: Text::raw(text),
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let tree = tree_widget(&items).unwrap_or_else(|e| panic!("{e}"));
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        tree.render(area, &mut buf, &mut state);
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn a_window_below_its_ancestors_keeps_their_indentation() {
        // The first row is three levels down; its ancestors are scrolled away.
        let shown = draw(
            &[
                (3, Fold::Leaf, "deep"),
                (2, Fold::Closed, "folded"),
                (2, Fold::Open, "open"),
                (3, Fold::Leaf, "child"),
                (0, Fold::Open, "top"),
            ],
            20,
            6,
        );
        assert_eq!(
            shown,
            [
                "        deep",
                "    ▸ folded",
                "    ▾ open",
                "        child",
                "▾ top",
                "",
            ]
        );
    }

    #[test]
    fn an_open_row_keeps_its_marker_when_its_children_are_cut_off() {
        // Cut off below the window, and (a model out of step) followed by a sibling.
        let shown = draw(
            &[
                (0, Fold::Open, "a"),
                (0, Fold::Open, "b"),
                (1, Fold::Open, "c"),
            ],
            10,
            3,
        );
        assert_eq!(shown, ["▾ a", "▾ b", "  ▾ c"]);
    }

    #[test]
    fn any_depth_sequence_draws_each_row_at_its_depth() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..300 {
            let n = rng.usize(1..30);
            let depths: Vec<usize> = (0..n).map(|_| rng.usize(0..8)).collect();
            // A row with a deeper one after it is open, as the models flatten them.
            let rows: Vec<(usize, Fold, &'static str)> = (0..n)
                .map(|i| {
                    let fold = if depths.get(i + 1).is_some_and(|&d| d > depths[i]) {
                        Fold::Open
                    } else {
                        [Fold::Leaf, Fold::Open, Fold::Closed][rng.usize(0..3)]
                    };
                    (depths[i], fold, "x")
                })
                .collect();
            let shown = draw(&rows, 40, n as u16);
            for (line, (depth, fold, _)) in shown.iter().zip(&rows) {
                let marker = match fold {
                    Fold::Leaf => "  ",
                    Fold::Open => "▾ ",
                    Fold::Closed => "▸ ",
                };
                assert_eq!(
                    *line,
                    format!("{}{marker}x", " ".repeat(2 * depth)),
                    "{rows:?}"
                );
            }
        }
    }
}
