//! The Ledger workspace: an MCP session's thoughts as a tree (branches under the thought they
//! branch from, revisions marked), and the selected thought in full below it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

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

fn row_line(row: &Row, theme: &Theme, width: usize) -> Line<'static> {
    let mut spans = Vec::with_capacity(8);
    spans.push(Span::raw("  ".repeat(row.depth as usize)));
    let marker = match (row.expandable, row.expanded) {
        (true, true) => "▾ ",
        (true, false) => "▸ ",
        (false, _) => "  ",
    };
    spans.push(Span::styled(marker, theme.style(Role::Dim)));
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
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, r)| {
            let line = row_line(r, theme, width);
            match (i == model.selected, focused) {
                (true, true) => line.style(theme.style(Role::Selection)),
                // Without focus the selection is still marked, more quietly.
                (true, false) => line.style(Style::default().add_modifier(Modifier::UNDERLINED)),
                _ => line,
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), area);
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
